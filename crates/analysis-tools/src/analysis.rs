//! `track/analysis`: manoeuvre detection, time-series plots and TMA (target motion analysis)
//! solution builders.

use serde_json::{Map, Value, json};

use crate::sensor::{json_artifact, plural};
use toolgate_tool_catalogue::common::multi;
use toolgate_tool_catalogue::model::{
    self, fixes, format_time, haversine_m, id_of, parse_time, positions_raw, prop, prop_str,
    py_num, py_value, round_to,
};
use toolgate_tool_catalogue::{Body, CalcInput, Entry, Item, ToolError};

pub(crate) const TOOLS: &[Entry] = &[
    Entry {
        id: "zig-detector",
        spec_category: "track/analysis",
        spec_version: "1.0",
        description: "Detect zigs (course changes of at least course_change_threshold_deg, default 30) in each target track, with their times, courses and the mean interval between zigs. Needs an ownship track (is_ownship: true) and one or more target tracks.",
        output_kind: "analysis/zig_detection",
        requirements: tracks,
        params: zig_params,
        required: &[],
        run: zig_detector,
    },
    Entry {
        id: "range-time-plot",
        spec_category: "track/analysis",
        spec_version: "1.0",
        description: "Range between exactly two tracks at every time step of their overlap (sampled at the union of both tracks' times, or either's), in `units`: nm, yds, km or m (toolgate passes the analyst's unit setting, nautical miles unless changed; Debrief's default is yds), with min/max/mean/std-dev and the CPA time and range. Use it to see how a separation changes over time.",
        output_kind: "artifact/dataset/range_time_series",
        requirements: two_tracks,
        params: range_time_params,
        required: &[],
        run: range_time_plot,
    },
    Entry {
        id: "xy-plot-generator",
        spec_category: "track/analysis",
        spec_version: "1.0",
        description: "An x/y plot dataset (e.g. speed vs time) from track positions or sensor contacts: one series per track or sensor, with axis labels and units.",
        output_kind: "artifact/analysis/xy_plot",
        requirements: tracks_or_sensors,
        params: xy_params,
        required: &["plot_type"],
        run: xy_plot_generator,
    },
    Entry {
        id: "show-time-variable-plot",
        spec_category: "track/analysis",
        spec_version: "1.0",
        description: "A time plot of one track variable (speed, course, bearing, range, depth or frequency) for each track, with per-series min/max/mean/std-dev and shared axis bounds.",
        output_kind: "artifact/analysis/time_variable_plot",
        requirements: tracks,
        params: time_variable_params,
        required: &["variable"],
        run: show_time_variable_plot,
    },
    Entry {
        id: "generate-tma-from-infill",
        spec_category: "track/analysis",
        spec_version: "1.0",
        description: "Turn each INFILL track segment (kind TRACK_SEGMENT) into a TMA_SEGMENT with the segment's average course and speed, flagging a high course spread as unreliable.",
        output_kind: "addition/analysis/tma_segment",
        requirements: segments,
        params: no_params,
        required: &[],
        run: generate_tma_from_infill,
    },
    Entry {
        id: "generate-tma-from-ownship",
        spec_category: "track/analysis",
        spec_version: "1.0",
        description: "Start a TMA solution from the ownship track (is_ownship: true): a target TMA_SEGMENT starting range_offset_nm away on bearing_offset_deg from ownship's first fix in the window, then running at initial_course / initial_speed, one fix per ownship fix between start_time and end_time (clamped to the track).",
        output_kind: "addition/analysis/tma_segment",
        requirements: tracks,
        params: tma_ownship_params,
        required: &[
            "range_offset_nm",
            "bearing_offset_deg",
            "initial_course",
            "initial_speed",
        ],
        run: generate_tma_from_ownship,
    },
    Entry {
        id: "generate-tma-segment-from-cuts",
        spec_category: "track/analysis",
        spec_version: "1.0",
        description: "Start a TMA solution from bearing-only cuts: the target's start is where the first and last bearing lines of the SENSOR's contacts cross, and it then runs at initial_course_estimate / initial_speed_estimate; each cut's bearing residual and the RMS error show how well that fits. Needs an ownship track (is_ownship: true) and bearings spread over at least 5 degrees.",
        output_kind: "addition/analysis/tma_segment",
        requirements: ownship_and_sensor,
        params: tma_cuts_params,
        required: &["initial_course_estimate", "initial_speed_estimate"],
        run: generate_tma_segment_from_cuts,
    },
    Entry {
        id: "generate-track-from-active-cuts",
        spec_category: "track/analysis",
        spec_version: "1.0",
        description: "A target TRACK from active sensor cuts (bearing and range_nm from each contact's origin), with course and speed derived between successive positions and temporal gaps flagged.",
        output_kind: "addition/track/from_cuts",
        requirements: ownship_and_sensor,
        params: no_params,
        required: &[],
        run: generate_track_from_active_cuts,
    },
    Entry {
        id: "generate-tuas-solution",
        spec_category: "track/analysis",
        spec_version: "1.0",
        description: "A TUAS (target under analysis) solution from passive bearings: given a range estimate at an aimpoint time, search the constant course and speed that best fit all the SENSOR's bearings (least squares), and return the solution track with its residuals and RMS error. Needs an ownship track (is_ownship: true) and at least 3 bearings.",
        output_kind: "addition/analysis/tuas_solution",
        requirements: ownship_and_sensor,
        params: tuas_params,
        required: &["range_estimate_nm", "aimpoint_time"],
        run: generate_tuas_solution,
    },
];

fn tracks() -> Value {
    multi(&["TRACK"])
}

fn two_tracks() -> Value {
    json!([{"kind": "TRACK", "min": 2, "max": 2}])
}

fn tracks_or_sensors() -> Value {
    json!([{"kind": "TRACK", "min": 0}, {"kind": "SENSOR", "min": 0}])
}

fn ownship_and_sensor() -> Value {
    json!([{"kind": "TRACK", "min": 1}, {"kind": "SENSOR", "min": 1}])
}

fn segments() -> Value {
    multi(&["TRACK_SEGMENT"])
}

fn no_params() -> Value {
    json!({})
}

fn required_features(input: &CalcInput) -> Result<(), ToolError> {
    if input.features.is_empty() {
        Err(ToolError::invalid("Input features required"))
    } else {
        Ok(())
    }
}

fn platform_name(f: &Value) -> String {
    prop_str(f, "platform_name")
        .map(str::to_owned)
        .unwrap_or_else(|| model::track_name(f))
}

fn is_ownship(f: &Value) -> bool {
    model::is_track(f) && prop(f, "is_ownship").and_then(Value::as_bool) == Some(true)
}

/// Lower-case words joined by hyphens: `Vessel Alpha` → `vessel-alpha`.
pub(super) fn slugify(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if c.is_alphanumeric() {
            out.extend(c.to_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    out.trim_end_matches('-').to_owned()
}

/// Population mean and standard deviation.
fn mean_sd(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
    (mean, var.sqrt())
}

fn min_max(v: &[f64]) -> (f64, f64) {
    (
        v.iter().copied().fold(f64::INFINITY, f64::min),
        v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    )
}

/// The id's suffix after leading descriptive words (`ownship-001` → `001`).
fn derive_suffix(id: &str, words: &[&str]) -> String {
    let mut rest = id;
    loop {
        let before = rest;
        for w in words {
            if let Some(r) = rest.strip_prefix(&format!("{w}-"))
                && !r.is_empty()
            {
                rest = r;
            }
        }
        if rest == before {
            break;
        }
    }
    rest.to_owned()
}

fn time_text(f: &Value, key: &str) -> Value {
    prop(f, key).cloned().unwrap_or(Value::Null)
}

// ---------------------------------------------------------------- zig-detector

fn zig_params() -> Value {
    json!({
        "course_change_threshold_deg": {"type": "number", "exclusiveMinimum": 0, "default": 30.0, "description": "Smallest course change between consecutive fixes that counts as a zig, degrees (default 30)."},
    })
}

fn zig_detector(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    required_features(input)?;
    let threshold = input
        .f64_param("course_change_threshold_deg")
        .unwrap_or(30.0);
    if threshold <= 0.0 || !threshold.is_finite() {
        return Err(ToolError::invalid(
            "course_change_threshold_deg must be positive",
        ));
    }
    let threshold_value = input
        .param("course_change_threshold_deg")
        .cloned()
        .unwrap_or(json!(30.0));
    let threshold_text = py_num(threshold);
    let tracks = model::of_kind(input.features, "TRACK");
    let ownship = tracks
        .iter()
        .find(|t| is_ownship(t))
        .copied()
        .ok_or_else(|| ToolError::invalid("No ownship track found (is_ownship=true required)"))?;
    let oid = id_of(ownship).unwrap_or_default();
    let targets: Vec<&Value> = tracks
        .iter()
        .filter(|t| !std::ptr::eq(**t, ownship))
        .copied()
        .collect();
    if targets.is_empty() {
        return Err(
            ToolError::invalid("No target tracks found for zig analysis").affecting(vec![oid]),
        );
    }
    let mut items = Vec::new();
    for target in targets {
        let tid = id_of(target).unwrap_or_default();
        let name = platform_name(target);
        let fx = fixes(target);
        let period = json!({
            "start": prop(target, "start_time").cloned().unwrap_or_else(|| fx.first().map(|f| json!(format_time(f.time))).unwrap_or(Value::Null)),
            "end": prop(target, "end_time").cloned().unwrap_or_else(|| fx.last().map(|f| json!(format_time(f.time))).unwrap_or(Value::Null)),
        });
        let uri = format!("analysis://zig-detection-{tid}");
        let sources = vec![tid.clone(), oid.clone()];
        let mut result = json!({
            "track_id": tid,
            "platform_name": name,
            "course_change_threshold_deg": threshold_value,
            "zig_events": [],
            "total_zigs": 0,
            "mean_zig_interval_seconds": null,
            "analysis_period": period,
        });
        let label;
        if fx.len() < 3 {
            result["note"] = json!(format!(
                "Insufficient positions ({}) for zig detection; minimum 3 required",
                fx.len()
            ));
            label = format!(
                "Insufficient data for zig detection in {name} ({})",
                plural(fx.len(), "position", "positions")
            );
        } else {
            let mut events = Vec::new();
            let mut starts = Vec::new();
            for w in fx.windows(2) {
                let (Some(a), Some(b)) = (w[0].course, w[1].course) else {
                    continue;
                };
                let change = model::angle_diff(a, b);
                if change.abs() >= threshold {
                    starts.push(w[0].time);
                    events.push(json!({
                        "zig_index": events.len() + 1,
                        "start_time": format_time(w[0].time),
                        "end_time": format_time(w[1].time),
                        "course_before": a,
                        "course_after": b,
                        "course_change_deg": change,
                        "position_at_zig": w[0].coord,
                    }));
                }
            }
            let mean = (starts.len() >= 2).then(|| {
                let gaps: Vec<f64> = starts
                    .windows(2)
                    .map(|w| (w[1] - w[0]) as f64 / 1000.0)
                    .collect();
                (gaps.iter().sum::<f64>() / gaps.len() as f64).round() as i64
            });
            label = if events.is_empty() {
                format!("No zig events detected in {name} (threshold={threshold_text} deg)")
            } else {
                format!(
                    "Detected {} zig events in {name} (threshold={threshold_text} deg, mean interval={}s)",
                    events.len(),
                    mean.map_or_else(|| "None".to_owned(), |m| m.to_string())
                )
            };
            result["total_zigs"] = json!(events.len());
            result["zig_events"] = Value::Array(events);
            result["mean_zig_interval_seconds"] = json!(mean);
        }
        items.push(Item::resource(
            uri,
            "application/json",
            Body::Json(result),
            "analysis/zig_detection",
            sources,
            label,
        ));
    }
    Ok(items)
}

// ---------------------------------------------------------------- range-time-plot

fn range_time_params() -> Value {
    json!({
        "units": {"type": "string", "enum": ["yds", "km", "nm", "m"], "default": "yds", "description": "Distance units of the ranges (default yds)."},
        "sample_strategy": {"type": "string", "enum": ["union", "primary", "secondary"], "default": "union", "description": "Sample at the fix times of both tracks (union, default), or of the first (primary) or second (secondary) track only."},
    })
}

/// Metres in `units` with the spec's own factors (1 m = 1.09361 yd).
fn metres_in(m: f64, units: &str) -> Option<f64> {
    match units {
        "m" => Some(m),
        "yds" => Some(m * 1.09361),
        "km" => Some(m / 1000.0),
        "nm" => Some(m / 1852.0),
        _ => None,
    }
}

fn range_time_plot(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    required_features(input)?;
    let tracks = model::of_kind(input.features, "TRACK");
    if tracks.len() < 2 {
        return Err(ToolError::invalid(
            "Two track features required for range-time calculation",
        ));
    }
    if tracks.len() > 2 {
        return Err(ToolError::invalid(format!(
            "Exactly two track features required; received {}",
            tracks.len()
        )));
    }
    let units = input.str_param("units").unwrap_or("yds");
    if metres_in(0.0, units).is_none() {
        return Err(ToolError::invalid(format!(
            "Unsupported distance unit: {units}; must be one of yds, km, nm, m"
        )));
    }
    let strategy = input.str_param("sample_strategy").unwrap_or("union");
    let (primary, secondary) = (tracks[0], tracks[1]);
    let ids = vec![
        id_of(primary).unwrap_or_default(),
        id_of(secondary).unwrap_or_default(),
    ];
    let (pf, sf) = (fixes(primary), fixes(secondary));
    let span = |f: &[model::Fix]| {
        Some((
            f.iter().map(|x| x.time).min()?,
            f.iter().map(|x| x.time).max()?,
        ))
    };
    let (Some((p0, p1)), Some((s0, s1))) = (span(&pf), span(&sf)) else {
        return Err(ToolError::invalid(
            "Both tracks need at least one position with a time and coordinates",
        )
        .affecting(ids));
    };
    let (start, end) = (p0.max(s0), p1.min(s1));
    if start > end {
        return Err(ToolError::not_found(format!(
            "Tracks have no time overlap; primary covers {} to {}, secondary covers {} to {}",
            format_time(p0),
            format_time(p1),
            format_time(s0),
            format_time(s1)
        ))
        .affecting(ids));
    }
    let source: Vec<&model::Fix> = match strategy {
        "primary" => pf.iter().collect(),
        "secondary" => sf.iter().collect(),
        "union" => pf.iter().chain(&sf).collect(),
        other => {
            return Err(ToolError::invalid(format!(
                "Unknown sample_strategy \"{other}\"; use union, primary or secondary"
            )));
        }
    };
    let mut times: Vec<i64> = source
        .iter()
        .map(|f| f.time)
        .filter(|t| (start..=end).contains(t))
        .collect();
    times.sort_unstable();
    times.dedup();
    let mut points = Vec::new();
    let mut ranges = Vec::new();
    let mut cpa: Option<(i64, f64)> = None;
    for t in times {
        let (Some(a), Some(b)) = (model::fix_at(&pf, t), model::fix_at(&sf, t)) else {
            continue;
        };
        let r = metres_in(haversine_m(a.coord, b.coord), units).unwrap_or_default();
        points.push(json!({"time": format_time(t), "range": round_to(r, 2)}));
        ranges.push(round_to(r, 2));
        if cpa.is_none_or(|(_, m)| r < m) {
            cpa = Some((t, r));
        }
    }
    let Some((cpa_time, cpa_range)) = cpa else {
        return Err(
            ToolError::not_found("No range data could be computed; check position data")
                .affecting(ids),
        );
    };
    let (min, max) = min_max(&ranges);
    let (mean, sd) = mean_sd(&ranges);
    let stats = json!({
        "min_range": round_to(min, 2),
        "max_range": round_to(max, 2),
        "mean_range": round_to(mean, 2),
        "std_dev": round_to(sd, 2),
        "cpa_time": format_time(cpa_time),
        "cpa_range": round_to(cpa_range, 2),
        "data_points": points.len(),
    });
    let (pn, sn) = (platform_name(primary), platform_name(secondary));
    let first = points
        .first()
        .map(|p| p["time"].clone())
        .unwrap_or_default();
    let last = points.last().map(|p| p["time"].clone()).unwrap_or_default();
    let n = points.len();
    let data = json!({
        "plot_type": "range_time",
        "title": format!("Range vs Time: {pn} to {sn}"),
        "units": units,
        "x_axis": {"label": "Time", "type": "datetime", "min": first, "max": last},
        "y_axis": {"label": format!("Range ({units})"), "type": "numeric", "min": stats["min_range"], "max": stats["max_range"]},
        "series": {
            "primary_track_id": ids[0],
            "secondary_track_id": ids[1],
            "primary_name": pn,
            "secondary_name": sn,
            "color": "#3388ff",
            "data_points": points,
            "statistics": stats,
        },
    });
    let href = format!("{}-vs-{}-range-time.json", slugify(&pn), slugify(&sn));
    let label = format!(
        "Range vs Time: {pn} to {sn} ({n} points, CPA {} {units} at {})",
        cpa_range.round(),
        format_time(cpa_time)
    );
    Ok(vec![json_artifact(
        "range-time-plot",
        &href,
        data,
        "artifact/dataset/range_time_series",
        ids,
        label,
    )])
}

// ---------------------------------------------------------------- xy-plot-generator

const PLOT_TYPES: &[&str] = &[
    "speed_time",
    "course_time",
    "bearing_time",
    "range_time",
    "depth_time",
    "frequency_time",
];
const VARIABLES: &[&str] = &[
    "time",
    "speed",
    "course",
    "depth",
    "bearing",
    "range",
    "frequency",
];

fn xy_params() -> Value {
    json!({
        "plot_type": {"type": "string", "enum": PLOT_TYPES, "description": "Kind of plot."},
        "x_variable": {"type": "string", "enum": VARIABLES, "default": "time", "description": "X-axis variable (default time)."},
        "y_variable": {"type": "string", "enum": VARIABLES, "description": "Y-axis variable (default: the plot type's, e.g. speed for speed_time)."},
        "source_type": {"type": "string", "enum": ["track", "sensor"], "default": "track", "description": "Plot track positions (default) or sensor contacts."},
    })
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| {
            f.to_uppercase()
                .chain(c.flat_map(char::to_lowercase))
                .collect()
        })
        .unwrap_or_default()
}

fn xy_unit(v: &str) -> &'static str {
    match v {
        "time" => "ISO8601",
        "speed" => "kts",
        "course" | "bearing" => "degrees",
        "depth" | "range" => "metres",
        "frequency" => "Hz",
        _ => "",
    }
}

fn xy_plot_generator(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    required_features(input)?;
    let plot_type = input
        .str_param("plot_type")
        .filter(|p| PLOT_TYPES.contains(p))
        .ok_or_else(|| {
            ToolError::invalid("plot_type must be one of: speed_time, course_time, bearing_time, range_time, depth_time, frequency_time")
        })?;
    let x = input.str_param("x_variable").unwrap_or("time");
    let y = input
        .str_param("y_variable")
        .unwrap_or_else(|| plot_type.split('_').next().unwrap_or("speed"));
    let source_type = input.str_param("source_type").unwrap_or("track");
    let (kind, list_key) = match source_type {
        "sensor" => ("SENSOR", "contacts"),
        _ => ("TRACK", "positions"),
    };
    let mut series = Vec::new();
    let mut names = Vec::new();
    let mut sources = Vec::new();
    let mut total = 0;
    for f in model::of_kind(input.features, kind) {
        let fid = id_of(f).unwrap_or_default();
        sources.push(fid.clone());
        let records = prop(f, list_key)
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let points: Vec<Value> = records
            .iter()
            .filter_map(|r| {
                let yv = r.get(y).filter(|v| !v.is_null())?;
                Some(json!({"x": r.get(x).cloned().unwrap_or(Value::Null), "y": yv}))
            })
            .collect();
        if points.is_empty() {
            continue;
        }
        total += points.len();
        let s = if kind == "SENSOR" {
            let name = prop_str(f, "sensor_name")
                .map(str::to_owned)
                .unwrap_or_else(|| fid.clone());
            names.push(name.clone());
            json!({"sensor_id": fid, "sensor_name": name, "data_points": points})
        } else {
            let name = platform_name(f);
            names.push(name.clone());
            json!({"track_id": fid, "track_name": name, "data_points": points})
        };
        series.push(s);
    }
    if series.is_empty() {
        return Err(
            ToolError::invalid("No data found for the requested plot variables").affecting(sources),
        );
    }
    let plot_name = names.join(", ");
    let data = json!({
        "plot_type": plot_type,
        "title": format!("{} vs {} - {plot_name}", capitalise(y), capitalise(x)),
        "x_axis": {"label": capitalise(x), "variable": x, "unit": xy_unit(x)},
        "y_axis": {"label": capitalise(y), "variable": y, "unit": xy_unit(y)},
        "series": series,
    });
    let href = format!("{}-{y}-{x}.json", slugify(&plot_name));
    let label = format!(
        "Generated {y} vs {x} plot for {} {source_type}(s) with {total} data points",
        names.len()
    );
    Ok(vec![json_artifact(
        "xy-plot-generator",
        &href,
        data,
        "artifact/analysis/xy_plot",
        sources,
        label,
    )])
}

// ---------------------------------------------------------------- show-time-variable-plot

const TIME_VARIABLES: &[&str] = &["speed", "course", "bearing", "range", "depth", "frequency"];
const COLOURS: &[&str] = &[
    "#3388ff", "#FF0000", "#00FF00", "#FF8800", "#8800FF", "#00FFFF",
];

fn time_variable_params() -> Value {
    json!({
        "variable": {"type": "string", "enum": TIME_VARIABLES, "description": "Position variable to plot against time."},
        "title": {"type": "string", "description": "Plot title (default \"{Variable} vs Time\")."},
    })
}

fn tv_unit(v: &str) -> &'static str {
    match v {
        "speed" => "kts",
        "course" | "bearing" => "deg",
        "range" | "depth" => "m",
        "frequency" => "Hz",
        _ => "",
    }
}

fn show_time_variable_plot(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    required_features(input)?;
    let variable = input
        .str_param("variable")
        .filter(|v| TIME_VARIABLES.contains(v))
        .ok_or_else(|| {
            ToolError::invalid(
                "Variable must be one of: speed, course, bearing, range, depth, frequency",
            )
        })?;
    let title = input
        .str_param("title")
        .map(str::to_owned)
        .unwrap_or_else(|| format!("{} vs Time", capitalise(variable)));
    let tracks = model::of_kind(input.features, "TRACK");
    if tracks.is_empty() {
        return Err(ToolError::invalid("No track features found in input"));
    }
    let sources = model::ids_of(tracks.iter().copied());
    let has = |p: &Value| p.get(variable).is_some_and(|v| !v.is_null());
    if !tracks.iter().any(|t| positions_raw(t).iter().any(has)) {
        return Err(ToolError::invalid(format!(
            "Variable '{variable}' is not available in any of the selected track positions"
        ))
        .affecting(sources));
    }
    let mut series = Vec::new();
    let (mut y_min, mut y_max) = (f64::INFINITY, f64::NEG_INFINITY);
    let (mut t_min, mut t_max): (Option<i64>, Option<i64>) = (None, None);
    for t in &tracks {
        let mut points = Vec::new();
        let mut values = Vec::new();
        for p in positions_raw(t) {
            let time = p.get("time").and_then(Value::as_str);
            if let Some(ms) = time.and_then(parse_time) {
                t_min = Some(t_min.map_or(ms, |m| m.min(ms)));
                t_max = Some(t_max.map_or(ms, |m| m.max(ms)));
            }
            if let (Some(v), Some(time)) = (p.get(variable).and_then(Value::as_f64), time) {
                points.push(json!({"time": time, "value": v}));
                values.push(v);
                y_min = y_min.min(v);
                y_max = y_max.max(v);
            }
        }
        if values.is_empty() {
            continue;
        }
        let (lo, hi) = min_max(&values);
        let (mean, sd) = mean_sd(&values);
        series.push(json!({
            "track_id": id_of(t),
            "platform_name": platform_name(t),
            "color": COLOURS[series.len() % COLOURS.len()],
            "data_points": points,
            "statistics": {"min": lo, "max": hi, "mean": round_to(mean, 2), "std_dev": round_to(sd, 2)},
        }));
    }
    if series.is_empty() {
        return Err(
            ToolError::invalid(format!("No data found for variable '{variable}'"))
                .affecting(sources),
        );
    }
    if variable == "course" {
        (y_min, y_max) = (0.0, 360.0);
    }
    let count = |s: &Value| s["data_points"].as_array().map_or(0, Vec::len);
    let label = if series.len() == 1 {
        let n = count(&series[0]);
        format!(
            "{title} plot for {} ({}{})",
            series[0]["platform_name"].as_str().unwrap_or_default(),
            plural(n, "data point", "data points"),
            if n == 1 {
                " - single position track"
            } else {
                ""
            }
        )
    } else {
        let names: Vec<&str> = series
            .iter()
            .filter_map(|s| s["platform_name"].as_str())
            .collect();
        format!(
            "{title} plot for {} tracks ({}) - {} data points each",
            series.len(),
            names.join(", "),
            count(&series[0])
        )
    };
    // Plot id: "multi" for a comparison, "single" for a one-fix track, else the first plot.
    let plot_id = if series.len() > 1 {
        "multi"
    } else if count(&series[0]) == 1 {
        "single"
    } else {
        "001"
    };
    let data = json!({
        "plot_type": "time_variable",
        "title": title,
        "variable": variable,
        "x_axis": {"label": "Time", "type": "datetime", "min": t_min.map(format_time), "max": t_max.map(format_time)},
        "y_axis": {"label": format!("{} ({})", capitalise(variable), tv_unit(variable)), "type": "numeric", "min": y_min, "max": y_max},
        "series": series,
    });
    Ok(vec![
        Item::resource(
            format!("artifact://time-variable-plot-{plot_id}"),
            "application/json",
            Body::Json(data),
            "artifact/analysis/time_variable_plot",
            sources,
            label,
        )
        .with_annotation(
            "debrief:href",
            json!(format!("plots/time-variable-plot-{plot_id}.json")),
        ),
    ])
}

// ---------------------------------------------------------------- TMA segments

fn tma_style(opacity: f64) -> Value {
    json!({"line": {"stroke": true, "color": "#FF6600", "weight": 2, "opacity": opacity, "dashArray": "5,5"}})
}

/// Great-circle offset on the spec's 3440.065 nm earth.
fn offset_position(origin: [f64; 2], bearing_deg: f64, distance_nm: f64) -> [f64; 2] {
    const R_NM: f64 = 3440.065;
    let d = distance_nm / R_NM;
    let brg = bearing_deg.to_radians();
    let (lat1, lon1) = (origin[1].to_radians(), origin[0].to_radians());
    let lat2 = (lat1.sin() * d.cos() + lat1.cos() * d.sin() * brg.cos()).asin();
    let lon2 = lon1 + (brg.sin() * d.sin() * lat1.cos()).atan2(d.cos() - lat1.sin() * lat2.sin());
    [lon2.to_degrees(), lat2.to_degrees()]
}

fn generate_tma_from_infill(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    required_features(input)?;
    let mut items = Vec::new();
    for f in model::of_kind(input.features, "TRACK_SEGMENT") {
        let fid = id_of(f).unwrap_or_default();
        let seg_type = prop_str(f, "segment_type").unwrap_or("(none)");
        if seg_type != "INFILL" {
            return Err(ToolError::invalid(format!(
                "Input segment must be of type INFILL, but found {seg_type}"
            ))
            .affecting(vec![fid]));
        }
        let rows: Vec<(&Value, f64, f64)> = positions_raw(f)
            .iter()
            .filter_map(|p| {
                let c = p.get("course").and_then(Value::as_f64)?;
                let s = p.get("speed").and_then(Value::as_f64)?;
                Some((p, c, s))
            })
            .collect();
        if rows.len() < 2 {
            return Err(ToolError::invalid(
                "Infill segment must contain at least 2 positions to calculate course and speed",
            )
            .affecting(vec![fid]));
        }
        let courses: Vec<f64> = rows.iter().map(|r| r.1).collect();
        let speeds: Vec<f64> = rows.iter().map(|r| r.2).collect();
        let (avg_course, course_sd) = mean_sd(&courses);
        let (avg_speed, speed_sd) = mean_sd(&speeds);
        let (avg_course, avg_speed) = (round_to(avg_course, 1), round_to(avg_speed, 1));
        let positions: Vec<Value> = rows
            .iter()
            .map(|(p, c, s)| {
                json!({"time": p.get("time"), "coordinates": p.get("coordinates"), "course": c, "speed": s})
            })
            .collect();
        let high = course_sd > 10.0;
        let mut props = Map::new();
        for (k, v) in [
            ("kind", json!("TMA_SEGMENT")),
            ("segment_type", json!("ABSOLUTE")),
            ("platform_id", json!("TMA-FROM-INFILL")),
            ("platform_name", json!("TMA from infill segment")),
            ("parent_track_id", time_text(f, "parent_track_id")),
            ("source_segment_id", json!(fid)),
            ("start_time", time_text(f, "start_time")),
            ("end_time", time_text(f, "end_time")),
            ("estimated_course", json!(avg_course)),
            ("estimated_speed", json!(avg_speed)),
        ] {
            props.insert(k.into(), v);
        }
        if high {
            props.insert("course_variance".into(), json!(round_to(course_sd, 1)));
            props.insert("speed_variance".into(), json!(round_to(speed_sd, 2)));
        }
        props.insert("positions".into(), Value::Array(positions));
        if high {
            props.insert(
                "quality_warning".into(),
                json!(format!(
                    "High course variance ({} deg) in infill segment; TMA solution may be unreliable",
                    py_num(round_to(course_sd, 1))
                )),
            );
        }
        props.insert("style".into(), tma_style(if high { 0.5 } else { 0.8 }));
        let feature = json!({
            "type": "Feature",
            "id": format!("tma-from-infill-{}", derive_suffix(&fid, &["infill", "segment"])),
            "geometry": f.get("geometry").cloned().unwrap_or(Value::Null),
            "properties": props,
        });
        let mut label = format!(
            "Converted infill segment to TMA segment ({} positions, avg course={}, avg speed={} kts)",
            rows.len(),
            py_num(avg_course),
            py_num(avg_speed)
        );
        if high {
            label.push_str(" WARNING: high course variance");
        }
        items.push(Item::feature(
            feature,
            "addition/analysis/tma_segment",
            vec![fid],
            label,
        ));
    }
    if items.is_empty() {
        return Err(ToolError::invalid("No INFILL segments found in input"));
    }
    Ok(items)
}

fn tma_ownship_params() -> Value {
    json!({
        "start_time": {"type": "string", "format": "date-time", "description": "Start of the window (default: the track's start)."},
        "end_time": {"type": "string", "format": "date-time", "description": "End of the window (default: the track's end)."},
        "range_offset_nm": {"type": "number", "minimum": 0, "description": "Range from ownship's first fix to the target's start, nautical miles."},
        "bearing_offset_deg": {"type": "number", "minimum": 0, "maximum": 360, "description": "Bearing from ownship's first fix to the target's start, degrees true."},
        "initial_course": {"type": "number", "minimum": 0, "maximum": 360, "description": "Estimated target course, degrees true."},
        "initial_speed": {"type": "number", "minimum": 0, "description": "Estimated target speed, knots."},
    })
}

fn generate_tma_from_ownship(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    let no_ownship = || ToolError::invalid("No ownship track found in input features");
    let ownship = input
        .features
        .iter()
        .find(|f| is_ownship(f))
        .ok_or_else(no_ownship)?;
    let oid = id_of(ownship).unwrap_or_default();
    let num = |k: &str| {
        input
            .f64_param(k)
            .filter(|v| v.is_finite())
            .ok_or_else(|| ToolError::invalid(format!("{k} is required and must be a number")))
    };
    let (range, bearing, course, speed) = (
        num("range_offset_nm")?,
        num("bearing_offset_deg")?,
        num("initial_course")?,
        num("initial_speed")?,
    );
    let fx = fixes(ownship);
    let track_time =
        |k: &str, fallback: Option<i64>| prop_str(ownship, k).and_then(parse_time).or(fallback);
    let (Some(track_start), Some(track_end)) = (
        track_time("start_time", fx.iter().map(|f| f.time).min()),
        track_time("end_time", fx.iter().map(|f| f.time).max()),
    ) else {
        return Err(
            ToolError::invalid("The ownship track has no timed positions").affecting(vec![oid]),
        );
    };
    let param_time = |k: &str| -> Result<Option<i64>, ToolError> {
        input
            .str_param(k)
            .map(|t| {
                parse_time(t).ok_or_else(|| {
                    ToolError::invalid(format!(
                        "{k} \"{t}\" is not an ISO-8601 time; use e.g. 2024-01-15T10:00:00Z"
                    ))
                })
            })
            .transpose()
    };
    let requested_start = param_time("start_time")?.unwrap_or(track_start);
    let requested_end = param_time("end_time")?.unwrap_or(track_end);
    let clamped = requested_start < track_start || requested_end > track_end;
    let (start, end) = (
        requested_start.max(track_start),
        requested_end.min(track_end),
    );
    let window: Vec<&model::Fix> = fx
        .iter()
        .filter(|f| f.time >= start && f.time <= end)
        .collect();
    let Some(first) = window.first() else {
        return Err(
            ToolError::invalid("No ownship positions within requested time window")
                .affecting(vec![oid]),
        );
    };
    let origin = offset_position(first.coord, bearing, range);
    let mut coords = Vec::new();
    let positions: Vec<Value> = window
        .iter()
        .map(|f| {
            let hours = (f.time - first.time) as f64 / 3_600_000.0;
            let c = if f.time == first.time {
                origin
            } else {
                offset_position(origin, course, speed * hours)
            };
            coords.push(c);
            json!({"time": format_time(f.time), "coordinates": c, "course": course, "speed": speed})
        })
        .collect();
    let n = positions.len();
    let mut props = Map::new();
    for (k, v) in [
        ("kind", json!("TMA_SEGMENT")),
        ("segment_type", json!("ABSOLUTE")),
        ("platform_id", json!("TMA-FROM-OWNSHIP")),
        ("platform_name", json!("TMA from ownship positions")),
        ("host_track_id", json!(oid)),
        ("start_time", json!(format_time(start))),
        ("end_time", json!(format_time(end))),
        ("estimated_course", json!(course)),
        ("estimated_speed", json!(speed)),
        (
            "range_offset_nm",
            input.param("range_offset_nm").cloned().unwrap_or_default(),
        ),
        (
            "bearing_offset_deg",
            input
                .param("bearing_offset_deg")
                .cloned()
                .unwrap_or_default(),
        ),
    ] {
        props.insert(k.into(), v);
    }
    if clamped {
        props.insert("time_clamped".into(), json!(true));
        props.insert(
            "requested_start".into(),
            json!(format_time(requested_start)),
        );
        props.insert("requested_end".into(), json!(format_time(requested_end)));
    }
    props.insert("positions".into(), Value::Array(positions));
    props.insert("style".into(), tma_style(0.8));
    let feature = json!({
        "type": "Feature",
        "id": format!("tma-from-ownship-{}", derive_suffix(&oid, &["ownship"])),
        "geometry": {"type": "LineString", "coordinates": coords},
        "properties": props,
    });
    let label = if clamped {
        format!(
            "Generated TMA segment from ownship positions ({n} fixes, time window clamped to track extent)"
        )
    } else {
        format!(
            "Generated TMA segment from ownship positions ({n} fixes, course={}, speed={} kts, offset={}nm at {:03})",
            py_num(course),
            py_num(speed),
            input
                .param("range_offset_nm")
                .map(py_value)
                .unwrap_or_default(),
            bearing.round() as i64
        )
    };
    Ok(vec![Item::feature(
        feature,
        "addition/analysis/tma_segment",
        vec![oid],
        label,
    )])
}

// ---------------------------------------------------------------- bearing-cut solutions

/// One sensor contact usable for a solution.
struct Cut<'a> {
    raw: &'a Value,
    time: i64,
    bearing: f64,
    origin: [f64; 2],
}

fn cuts_of(sensor: &Value) -> Vec<Cut<'_>> {
    prop(sensor, "contacts")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter_map(|c| {
            let o = c.get("origin")?.as_array()?;
            Some(Cut {
                raw: c,
                time: c.get("time").and_then(Value::as_str).and_then(parse_time)?,
                bearing: c.get("bearing").and_then(Value::as_f64)?,
                origin: [o.first()?.as_f64()?, o.get(1)?.as_f64()?],
            })
        })
        .collect()
}

fn contacts_len(sensor: &Value) -> usize {
    prop(sensor, "contacts")
        .and_then(Value::as_array)
        .map_or(0, Vec::len)
}

/// Where two bearing lines cross (local flat projection about `a`), if ahead of both origins.
fn intersect(a: [f64; 2], brg_a: f64, b: [f64; 2], brg_b: f64) -> Option<[f64; 2]> {
    let k = a[1].to_radians().cos();
    let (bx, by) = ((b[0] - a[0]) * k, b[1] - a[1]);
    let (da, db) = (brg_a.to_radians(), brg_b.to_radians());
    let (ax_, ay_) = (da.sin(), da.cos());
    let (bx_, by_) = (db.sin(), db.cos());
    let det = ax_ * (-by_) - ay_ * (-bx_);
    if det.abs() < 1e-12 {
        return None;
    }
    let t = (bx * (-by_) - by * (-bx_)) / det;
    let u = (ax_ * by - ay_ * bx) / det;
    (t > 0.0 && u > 0.0).then(|| [a[0] + t * ax_ / k, a[1] + t * ay_])
}

fn count_course_legs(track: &Value, threshold: Option<f64>) -> usize {
    let courses: Vec<f64> = positions_raw(track)
        .iter()
        .filter_map(|p| p.get("course").and_then(Value::as_f64))
        .collect();
    1 + courses
        .windows(2)
        .filter(|w| match threshold {
            Some(t) => (w[1] - w[0]).abs() > t,
            None => w[1] != w[0],
        })
        .count()
}

fn tma_cuts_params() -> Value {
    json!({
        "initial_course_estimate": {"type": "number", "minimum": 0, "maximum": 360, "description": "Estimated target course, degrees true."},
        "initial_speed_estimate": {"type": "number", "minimum": 0, "description": "Estimated target speed, knots."},
    })
}

fn generate_tma_segment_from_cuts(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    required_features(input)?;
    let ownship = input
        .features
        .iter()
        .find(|f| is_ownship(f))
        .ok_or_else(|| ToolError::invalid("No ownship track found in input features"))?;
    let sensor = input
        .features
        .iter()
        .rfind(|f| model::is_kind(f, "SENSOR"))
        .filter(|s| contacts_len(s) > 0)
        .ok_or_else(|| ToolError::invalid("No sensor bearing cuts found in input features"))?;
    let (oid, sid) = (
        id_of(ownship).unwrap_or_default(),
        id_of(sensor).unwrap_or_default(),
    );
    let course = input.f64_param("initial_course_estimate").unwrap_or(0.0);
    let speed = input.f64_param("initial_speed_estimate").unwrap_or(0.0);
    let cuts = cuts_of(sensor);
    if cuts.len() < 2 {
        return Err(ToolError::invalid(
            "At least 2 sensor contacts with time, bearing and origin are needed",
        )
        .affecting(vec![oid, sid]));
    }
    let bearings: Vec<f64> = cuts.iter().map(|c| c.bearing).collect();
    let (lo, hi) = min_max(&bearings);
    let spread = model::angle_diff(lo, hi).abs();
    if spread < 5.0 {
        return Err(ToolError::invalid(
            "Bearing lines are nearly parallel; cannot triangulate target position. Ownship manoeuvre required for bearing rate.",
        )
        .affecting(vec![oid, sid]));
    }
    let (first, last) = (&cuts[0], &cuts[cuts.len() - 1]);
    // The target's start: where the first bearing line crosses the later bearing line that
    // differs from it most (the widest triangulation), ahead of both origins.
    let start = cuts[1..]
        .iter()
        .filter_map(|c| {
            let at = intersect(first.origin, first.bearing, c.origin, c.bearing)?;
            Some((model::angle_diff(first.bearing, c.bearing).abs(), at))
        })
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, at)| at)
        .ok_or_else(|| {
            ToolError::failure(
                "No later bearing line crosses the first one ahead of ownship; cannot triangulate the target's start. Use generate-tma-from-ownship with a range estimate instead.",
            )
            .affecting(vec![oid.clone(), sid.clone()])
        })?;
    let mut coords = Vec::new();
    let mut residuals = Vec::new();
    let positions: Vec<Value> = cuts
        .iter()
        .map(|c| {
            let hours = (c.time - first.time) as f64 / 3_600_000.0;
            let at = if c.time == first.time {
                start
            } else {
                offset_position(start, course, speed * hours)
            };
            coords.push(at);
            residuals.push(round_to(
                model::angle_diff(c.bearing, model::bearing_deg(c.origin, at)),
                2,
            ));
            json!({"time": c.raw["time"], "coordinates": at, "course": course, "speed": speed})
        })
        .collect();
    let n = cuts.len();
    let rms = round_to(
        (residuals.iter().map(|r| r * r).sum::<f64>() / n as f64).sqrt(),
        3,
    );
    let legs = count_course_legs(ownship, Some(15.0));
    let mut props = Map::new();
    for (k, v) in [
        ("kind", json!("TMA_SEGMENT")),
        ("segment_type", json!("ABSOLUTE")),
        ("platform_id", json!("TMA-TARGET")),
        ("platform_name", json!("TMA Solution from cuts")),
        ("host_track_id", json!(oid)),
        ("sensor_id", json!(sid)),
        ("start_time", first.raw["time"].clone()),
        ("end_time", last.raw["time"].clone()),
        ("estimated_course", json!(course)),
        ("estimated_speed", json!(speed)),
        ("positions", Value::Array(positions)),
        ("bearing_residuals", json!(residuals)),
        ("rms_bearing_error", json!(rms)),
    ] {
        props.insert(k.into(), v);
    }
    if legs > 1 {
        props.insert("ownship_legs_used".into(), json!(legs));
        props.insert("bearing_spread_degrees".into(), json!(round_to(spread, 1)));
    }
    let poor = n < 3;
    if poor {
        props.insert(
            "quality_warning".into(),
            json!(format!("Only {n} cuts used; solution poorly constrained")),
        );
    }
    props.insert("style".into(), tma_style(if poor { 0.5 } else { 0.8 }));
    let feature = json!({
        "type": "Feature",
        "id": format!("tma-segment-{}", derive_suffix(&sid, &["sensor", "cuts"])),
        "geometry": {"type": "LineString", "coordinates": coords},
        "properties": props,
    });
    let mut label = format!("Generated TMA segment from {n} bearing cuts");
    if legs > 1 {
        label.push_str(&format!(" across {legs} ownship legs"));
    }
    label.push_str(&format!(
        " (course={}, speed={} kts, RMS error={rms:.3} deg)",
        py_num(course),
        py_num(speed)
    ));
    if poor {
        label.push_str(" WARNING: poorly constrained");
    }
    Ok(vec![Item::feature(
        feature,
        "addition/analysis/tma_segment",
        vec![oid, sid],
        label,
    )])
}

fn generate_track_from_active_cuts(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    required_features(input)?;
    let tracks = model::of_kind(input.features, "TRACK");
    let ownship = tracks
        .iter()
        .find(|t| is_ownship(t))
        .or_else(|| tracks.last())
        .copied()
        .ok_or_else(|| ToolError::invalid("No ownship track found in input features"))?;
    let sensor = input
        .features
        .iter()
        .rfind(|f| model::is_kind(f, "SENSOR"))
        .filter(|s| contacts_len(s) > 0)
        .ok_or_else(|| ToolError::invalid("No sensor contacts found in input features"))?;
    let (oid, sid) = (
        id_of(ownship).unwrap_or_default(),
        id_of(sensor).unwrap_or_default(),
    );
    let contacts = prop(sensor, "contacts")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if contacts
        .iter()
        .any(|c| c.get("range_nm").and_then(Value::as_f64).is_none())
    {
        return Err(ToolError::invalid(
            "Sensor contacts must include range data (active cuts). Passive-only contacts found without range_nm values.",
        )
        .affecting(vec![sid]));
    }
    let cuts = cuts_of(sensor);
    if cuts.len() != contacts.len() {
        return Err(ToolError::invalid(
            "Every active contact needs a time, bearing, range_nm and origin [lon, lat]",
        )
        .affecting(vec![sid]));
    }
    let n = cuts.len();
    let mut coords: Vec<[f64; 2]> = Vec::new();
    let mut derived: Vec<(f64, f64)> = Vec::new();
    let mut positions = Vec::new();
    for (i, c) in cuts.iter().enumerate() {
        let range = c.raw["range_nm"].as_f64().unwrap_or_default();
        let at = offset_position(c.origin, c.bearing, range);
        let (mut course, mut speed) = (Value::Null, Value::Null);
        if i > 0 {
            let prev = coords[i - 1];
            let crs = round_to(model::bearing_deg(prev, at), 1);
            course = json!(crs);
            let hours = (c.time - cuts[i - 1].time) as f64 / 3_600_000.0;
            if hours > 0.0 {
                let dist = model::gc_degrees(prev, at).to_radians() * 3440.065;
                let spd = round_to(dist / hours, 1);
                speed = json!(spd);
                derived.push((crs, spd));
            }
        }
        positions.push(
            json!({"time": c.raw["time"], "coordinates": at, "course": course, "speed": speed}),
        );
        coords.push(at);
    }
    let gaps_between = |limit: f64| -> Vec<Value> {
        cuts.windows(2)
            .filter_map(|w| {
                let secs = (w[1].time - w[0].time) / 1000;
                (secs as f64 > limit).then(|| {
                    json!({"start": w[0].raw["time"], "end": w[1].raw["time"], "duration_seconds": secs})
                })
            })
            .collect()
    };
    let gaps = match n {
        0 | 1 => Vec::new(),
        2 => gaps_between(60.0 * 2.0),
        _ => {
            let mut intervals: Vec<i64> = cuts
                .windows(2)
                .map(|w| (w[1].time - w[0].time) / 1000)
                .collect();
            intervals.sort_unstable();
            let m = intervals.len();
            let median = if m % 2 == 1 {
                intervals[m / 2] as f64
            } else {
                (intervals[m / 2 - 1] + intervals[m / 2]) as f64 / 2.0
            };
            gaps_between(median * 2.0)
        }
    };
    let mut props = Map::new();
    for (k, v) in [
        ("kind", json!("TRACK")),
        ("platform_id", json!("FROM-ACTIVE-CUTS")),
        ("platform_name", json!("Track from active cuts")),
        ("track_type", json!("SURFACE")),
        ("source_sensor_id", json!(sid)),
        ("source_ownship_id", json!(oid)),
        ("start_time", cuts[0].raw["time"].clone()),
        ("end_time", cuts[n - 1].raw["time"].clone()),
    ] {
        props.insert(k.into(), v);
    }
    if !gaps.is_empty() {
        props.insert("has_temporal_gaps".into(), json!(true));
        props.insert("gap_intervals".into(), json!(gaps));
    }
    let averages = (!derived.is_empty()).then(|| {
        let k = derived.len() as f64;
        (
            round_to(derived.iter().map(|d| d.0).sum::<f64>() / k, 1),
            round_to(derived.iter().map(|d| d.1).sum::<f64>() / k, 2),
        )
    });
    if let Some((c, s)) = averages {
        props.insert("derived_avg_course".into(), json!(c));
        props.insert("derived_avg_speed".into(), json!(s));
    }
    props.insert("positions".into(), Value::Array(positions));
    props.insert(
        "style".into(),
        json!({"line": {"stroke": true, "color": "#FF3300", "weight": 2, "opacity": 0.8}}),
    );
    let feature = json!({
        "type": "Feature",
        "id": format!("track-from-active-{}", derive_suffix(&sid, &["active", "sensor"])),
        "geometry": {"type": "LineString", "coordinates": coords},
        "properties": props,
    });
    let mut label = format!("Generated track from {n} active sensor cuts");
    if !gaps.is_empty() {
        label.push_str(&format!(
            " ({} temporal gap{} detected)",
            gaps.len(),
            if gaps.len() == 1 { "" } else { "s" }
        ));
    } else if let Some((c, s)) = averages {
        label.push_str(&format!(
            " (avg course={}, avg speed={} kts)",
            py_num(c),
            py_num(s)
        ));
    }
    Ok(vec![Item::feature(
        feature,
        "addition/track/from_cuts",
        vec![oid, sid],
        label,
    )])
}

fn tuas_params() -> Value {
    json!({
        "range_estimate_nm": {"type": "number", "exclusiveMinimum": 0, "description": "Estimated range from ownship to the target at the aimpoint time, nautical miles."},
        "aimpoint_time": {"type": "string", "format": "date-time", "description": "Time the range estimate applies to (within the contacts' time span)."},
    })
}

/// The spec's flat-earth projection, rounded to 3 decimals as it specifies.
fn project_position(origin: [f64; 2], bearing_deg: f64, range_nm: f64) -> [f64; 2] {
    let d = range_nm / 60.0;
    let lat = origin[1] + d * bearing_deg.to_radians().cos();
    let lon = origin[0] + d * bearing_deg.to_radians().sin() / origin[1].to_radians().cos();
    [round_to(lon, 3), round_to(lat, 3)]
}

fn flat_bearing(from: [f64; 2], to: [f64; 2]) -> f64 {
    let (dlat, dlon) = (to[1] - from[1], to[0] - from[0]);
    (dlon * from[1].to_radians().cos())
        .atan2(dlat)
        .to_degrees()
        .rem_euclid(360.0)
}

fn tuas_residuals(cuts: &[Cut], aim: [f64; 2], aim_time: i64, course: f64, speed: f64) -> Vec<f64> {
    cuts.iter()
        .map(|c| {
            let hours = (c.time - aim_time) as f64 / 3_600_000.0;
            let at = project_position(aim, course, speed * hours);
            model::angle_diff(flat_bearing(c.origin, at), c.bearing)
        })
        .collect()
}

fn rms(v: &[f64]) -> f64 {
    (v.iter().map(|r| r * r).sum::<f64>() / v.len() as f64).sqrt()
}

fn generate_tuas_solution(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    required_features(input)?;
    let ownship = input
        .features
        .iter()
        .find(|f| is_ownship(f))
        .ok_or_else(|| ToolError::invalid("No ownship track found (is_ownship=true required)"))?;
    let sensor = input
        .features
        .iter()
        .rfind(|f| model::is_kind(f, "SENSOR"))
        .ok_or_else(|| ToolError::invalid("No sensor feature found"))?;
    let (oid, sid) = (
        id_of(ownship).unwrap_or_default(),
        id_of(sensor).unwrap_or_default(),
    );
    let cuts = cuts_of(sensor);
    if cuts.len() < 3 {
        return Err(ToolError::invalid(
            "Sensor has no bearing contacts; TUAS solution requires at least 3 bearings",
        )
        .affecting(vec![sid]));
    }
    let range = input
        .f64_param("range_estimate_nm")
        .filter(|r| *r > 0.0 && r.is_finite())
        .ok_or_else(|| {
            ToolError::invalid("range_estimate_nm must be a positive number of nautical miles")
        })?;
    let aim_text = input.str_param("aimpoint_time").unwrap_or_default();
    let aim_time = parse_time(aim_text).ok_or_else(|| {
        ToolError::invalid(format!(
            "aimpoint_time \"{aim_text}\" is not an ISO-8601 time; use e.g. 2024-01-15T10:02:00Z"
        ))
    })?;
    let (first, last) = (&cuts[0], &cuts[cuts.len() - 1]);
    if aim_time < first.time || aim_time > last.time {
        return Err(ToolError::invalid(format!(
            "Aimpoint time {aim_text} is outside the sensor data time range ({} - {})",
            first.raw["time"].as_str().unwrap_or_default(),
            last.raw["time"].as_str().unwrap_or_default()
        ))
        .affecting(vec![oid, sid]));
    }
    let aim_cut = cuts
        .iter()
        .min_by_key(|c| (c.time - aim_time).abs())
        .unwrap_or(first);
    let aim = project_position(aim_cut.origin, aim_cut.bearing, range);
    // Coarse grid (1 deg, 0.5 kt up to 40 kt), then a fine grid (0.1 deg, 0.05 kt) about the best.
    let search = |best: &mut (f64, f64, f64), courses: &[f64], speeds: &[f64]| {
        for &c in courses {
            for &s in speeds {
                let r = rms(&tuas_residuals(&cuts, aim, aim_time, c, s));
                if r < best.0 {
                    *best = (r, c, s);
                }
            }
        }
    };
    let mut best = (f64::INFINITY, 0.0, 0.0);
    let coarse_courses: Vec<f64> = (0..360).map(f64::from).collect();
    let coarse_speeds: Vec<f64> = (0..=80).map(|i| f64::from(i) * 0.5).collect();
    search(&mut best, &coarse_courses, &coarse_speeds);
    let (_, c0, s0) = best;
    let fine_courses: Vec<f64> = (-10..=10)
        .map(|i| (c0 + f64::from(i) * 0.1).rem_euclid(360.0))
        .collect();
    let fine_speeds: Vec<f64> = (-10..=10)
        .map(|i| s0 + f64::from(i) * 0.05)
        .filter(|s| *s >= 0.0)
        .collect();
    search(&mut best, &fine_courses, &fine_speeds);
    let (_, course, speed) = best;
    let (course, speed) = (round_to(course, 1), round_to(speed, 1));
    let residuals = tuas_residuals(&cuts, aim, aim_time, course, speed);
    let min_rms = round_to(rms(&residuals), 3);
    let mut coords = Vec::new();
    let positions: Vec<Value> = cuts
        .iter()
        .map(|c| {
            let hours = (c.time - aim_time) as f64 / 3_600_000.0;
            let at = project_position(aim, course, speed * hours);
            coords.push(at);
            json!({"time": c.raw["time"], "coordinates": at, "course": course, "speed": speed})
        })
        .collect();
    let est_range = round_to(
        model::gc_degrees(aim_cut.origin, aim).to_radians() * 3440.065,
        1,
    );
    let legs = count_course_legs(ownship, None);
    let mut props = Map::new();
    for (k, v) in [
        ("kind", json!("TUAS_SOLUTION")),
        ("platform_id", json!("TUAS-TARGET")),
        ("platform_name", json!("TUAS Solution")),
        ("host_track_id", json!(oid)),
        ("sensor_id", json!(sid)),
        ("start_time", first.raw["time"].clone()),
        ("end_time", last.raw["time"].clone()),
        ("aimpoint_time", json!(aim_text)),
        ("estimated_course", json!(course)),
        ("estimated_speed", json!(speed)),
        ("estimated_range_nm", json!(est_range)),
        ("aimpoint_position", json!(aim)),
    ] {
        props.insert(k.into(), v);
    }
    if legs > 1 {
        props.insert("ownship_legs_used".into(), json!(legs));
    }
    props.insert("positions".into(), Value::Array(positions));
    props.insert(
        "bearing_residuals".into(),
        json!(
            residuals
                .iter()
                .map(|r| round_to(*r, 2))
                .collect::<Vec<_>>()
        ),
    );
    props.insert("rms_bearing_error".into(), json!(min_rms));
    props.insert(
        "style".into(),
        json!({"line": {"stroke": true, "color": "#CC00FF", "weight": 2, "opacity": 0.8, "dashArray": "8,4"}}),
    );
    let feature = json!({
        "type": "Feature",
        "id": format!("tuas-solution-{}", derive_suffix(&sid, &["sensor", "tuas"])),
        "geometry": {"type": "LineString", "coordinates": coords},
        "properties": props,
    });
    let mut label = "Generated TUAS solution".to_owned();
    if legs > 1 {
        label.push_str(&format!(" across {legs} ownship legs"));
    }
    label.push_str(&format!(
        " (course={}, speed={} kts, range={}nm, RMS error={min_rms:.3} deg)",
        py_num(course),
        py_num(speed),
        py_num(est_range)
    ));
    Ok(vec![Item::feature(
        feature,
        "addition/analysis/tuas_solution",
        vec![oid, sid],
        label,
    )])
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const T0: i64 = 1_705_312_800_000; // 2024-01-15T10:00:00Z

    fn run(
        f: fn(&CalcInput) -> Result<Vec<Item>, ToolError>,
        features: &[Value],
        params: Value,
    ) -> Result<Vec<Item>, ToolError> {
        let params = params.as_object().cloned().unwrap_or_default();
        f(&CalcInput::new(features, &params))
    }

    fn body(item: &Item) -> Value {
        match &item.body {
            Body::Feature(v) | Body::Json(v) => v.clone(),
            Body::Text(t) => json!(t),
        }
    }

    /// A track at constant course/speed: fixes every `step_min` minutes from `start_min`.
    fn track(
        id: &str,
        start: [f64; 2],
        course: f64,
        speed: f64,
        start_min: i64,
        step_min: i64,
        n: usize,
    ) -> Value {
        let mut pos = Vec::new();
        let mut at = start;
        for i in 0..n {
            let t = T0 + (start_min + i as i64 * step_min) * 60_000;
            pos.push(json!({"time": format_time(t), "coordinates": at, "course": course, "speed": speed}));
            at = offset_position(at, course, speed * step_min as f64 / 60.0);
        }
        json!({"type": "Feature", "id": id, "geometry": null, "properties": {"kind": "TRACK", "platform_name": id, "positions": pos}})
    }

    #[test]
    fn range_time_plot_samples_the_union_of_both_tracks_in_the_overlap() {
        // Primary every 2 min from 10:00, secondary every 3 min from 10:01, both still, 1° of
        // latitude apart (111 194.9 m on the spec's 6 371 km sphere).
        let a = track("Alpha One", [0.0, 50.0], 0.0, 0.0, 0, 2, 6); // 10:00..10:10
        let b = track("Bravo", [0.0, 51.0], 0.0, 0.0, 1, 3, 5); // 10:01..10:13
        let items = run(
            range_time_plot,
            &[a.clone(), b.clone()],
            json!({"units": "m"}),
        )
        .unwrap();
        let d = body(&items[0]);
        let times: Vec<&str> = d["series"]["data_points"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["time"].as_str().unwrap())
            .collect();
        // Overlap 10:01..10:10: primary 02,04,06,08,10 and secondary 01,04,07,10.
        assert_eq!(
            times,
            [
                "2024-01-15T10:01:00Z",
                "2024-01-15T10:02:00Z",
                "2024-01-15T10:04:00Z",
                "2024-01-15T10:06:00Z",
                "2024-01-15T10:07:00Z",
                "2024-01-15T10:08:00Z",
                "2024-01-15T10:10:00Z"
            ]
        );
        let r = d["series"]["statistics"]["min_range"].as_f64().unwrap();
        assert!((r - 111_194.93).abs() < 0.01, "{r}");
        assert_eq!(d["series"]["statistics"]["std_dev"], json!(0.0));
        assert_eq!(d["y_axis"]["label"], json!("Range (m)"));
        assert_eq!(
            items[0].uri,
            "artifact://range-time-plot/alpha-one-vs-bravo-range-time.json"
        );
        assert_eq!(items[0].result_type, "artifact/dataset/range_time_series");
        // Strategies and units.
        let p = run(
            range_time_plot,
            &[a.clone(), b.clone()],
            json!({"sample_strategy": "primary", "units": "nm"}),
        )
        .unwrap();
        let d = body(&p[0]);
        assert_eq!(d["series"]["statistics"]["data_points"], json!(5));
        let nm = d["series"]["statistics"]["cpa_range"].as_f64().unwrap();
        assert!((nm - 111_194.93 / 1852.0).abs() < 0.01, "{nm}");
        let yds = run(range_time_plot, &[a, b], json!({})).unwrap();
        assert_eq!(body(&yds[0])["units"], json!("yds"));
        assert!(
            yds[0]
                .label
                .contains("(7 points, CPA 121604 yds at 2024-01-15T10:01:00Z)"),
            "{}",
            yds[0].label
        );
    }

    #[test]
    fn range_time_plot_finds_the_cpa_of_a_crossing() {
        // Target runs north past a still ownship 1 nm to its east; CPA when level at 10:30.
        let own = track("own", [0.0, 50.0], 0.0, 0.0, 0, 1, 61);
        let start = offset_position(offset_position([0.0, 50.0], 90.0, 1.0), 180.0, 5.0);
        let tgt = track("tgt", start, 0.0, 10.0, 0, 1, 61);
        let items = run(range_time_plot, &[own, tgt], json!({"units": "nm"})).unwrap();
        let s = &body(&items[0])["series"]["statistics"];
        assert_eq!(s["cpa_time"], json!("2024-01-15T10:30:00Z"));
        assert!((s["cpa_range"].as_f64().unwrap() - 1.0).abs() < 0.01);
        assert!(s["max_range"].as_f64().unwrap() > 5.0);
    }

    #[test]
    fn range_time_plot_reports_bad_input() {
        let a = track("a", [0.0, 50.0], 0.0, 0.0, 0, 1, 3);
        let b = track("b", [0.0, 51.0], 0.0, 0.0, 2, 1, 3); // overlaps a at 10:02 only
        let c = track("c", [0.0, 52.0], 0.0, 0.0, 30, 1, 3); // no overlap with a
        let one = run(range_time_plot, &[a.clone(), b.clone()], json!({})).unwrap();
        assert_eq!(
            body(&one[0])["series"]["statistics"]["data_points"],
            json!(1)
        );
        let e = run(range_time_plot, std::slice::from_ref(&a), json!({})).unwrap_err();
        assert!(e.message.starts_with("Two track features required"));
        let e = run(
            range_time_plot,
            &[a.clone(), b.clone(), c.clone()],
            json!({}),
        )
        .unwrap_err();
        assert_eq!(e.message, "Exactly two track features required; received 3");
        let e = run(range_time_plot, &[a.clone(), c], json!({})).unwrap_err();
        assert_eq!(
            e.message,
            "Tracks have no time overlap; primary covers 2024-01-15T10:00:00Z to 2024-01-15T10:02:00Z, secondary covers 2024-01-15T10:30:00Z to 2024-01-15T10:32:00Z"
        );
        assert_eq!(e.affected, ["a", "c"]);
        let e = run(range_time_plot, &[a, b], json!({"units": "furlongs"})).unwrap_err();
        assert!(e.message.starts_with("Unsupported distance unit: furlongs"));
    }

    #[test]
    fn zigs_wrap_round_north_and_count_at_the_threshold() {
        let mut own = track("own", [0.0, 50.0], 0.0, 5.0, 0, 1, 3);
        own["properties"]["is_ownship"] = json!(true);
        let mut t = track("t", [0.1, 50.0], 350.0, 5.0, 0, 1, 4);
        let courses = [350.0, 10.0, 40.0, 40.0];
        for (p, c) in t["properties"]["positions"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .zip(courses)
        {
            p["course"] = json!(c);
        }
        let items = run(
            zig_detector,
            &[own.clone(), t.clone()],
            json!({"course_change_threshold_deg": 30.0}),
        )
        .unwrap();
        let d = body(&items[0]);
        // 350 → 10 is +20 (not a zig); 10 → 40 is exactly 30 (a zig).
        assert_eq!(d["total_zigs"], json!(1));
        assert_eq!(d["zig_events"][0]["course_change_deg"], json!(30.0));
        let items = run(
            zig_detector,
            &[own.clone(), t.clone()],
            json!({"course_change_threshold_deg": 15.0}),
        )
        .unwrap();
        assert_eq!(body(&items[0])["mean_zig_interval_seconds"], json!(60));
        let e = run(zig_detector, &[t], json!({})).unwrap_err();
        assert!(e.message.contains("is_ownship"));
        let e = run(zig_detector, &[own], json!({})).unwrap_err();
        assert!(e.message.contains("No target tracks"));
    }

    #[test]
    fn active_cuts_become_the_positions_they_point_at() {
        let origin = [-1.0, 50.0];
        let target = [-0.9, 50.05];
        let contacts: Vec<Value> = (0..3)
            .map(|i| {
                let at = offset_position(target, 180.0, 0.1 * f64::from(i)); // 6 kt south
                let range = model::gc_degrees(origin, at).to_radians() * 3440.065;
                json!({"time": format_time(T0 + i64::from(i) * 60_000), "bearing": model::bearing_deg(origin, at), "range_nm": range, "origin": origin})
            })
            .collect();
        let sensor = json!({"type": "Feature", "id": "active-s1", "properties": {"kind": "SENSOR", "contacts": contacts}});
        let mut own = track("own", origin, 0.0, 0.0, 0, 1, 3);
        own["properties"]["is_ownship"] = json!(true);
        let items = run(
            generate_track_from_active_cuts,
            &[own.clone(), sensor.clone()],
            json!({}),
        )
        .unwrap();
        let f = body(&items[0]);
        let p0 = f["properties"]["positions"][0]["coordinates"].clone();
        assert!(
            (p0[0].as_f64().unwrap() - target[0]).abs() < 1e-9
                && (p0[1].as_f64().unwrap() - target[1]).abs() < 1e-9
        );
        assert_eq!(f["properties"]["derived_avg_course"], json!(180.0));
        assert_eq!(f["properties"]["derived_avg_speed"], json!(6.0));
        assert_eq!(f["id"], json!("track-from-active-s1"));
        let mut passive = sensor;
        passive["properties"]["contacts"][1]
            .as_object_mut()
            .unwrap()
            .remove("range_nm");
        let e = run(generate_track_from_active_cuts, &[own, passive], json!({})).unwrap_err();
        assert!(e.message.contains("range data"));
    }

    /// Bearings from a still ownship (two legs) to a target at `course`/`speed`.
    fn bearing_scenario(course: f64, speed: f64) -> (Value, Value) {
        let mut own = track("own", [0.0, 50.0], 0.0, 12.0, 0, 1, 21);
        own["properties"]["is_ownship"] = json!(true);
        let own_fixes = fixes(&own);
        let start = [0.15, 50.08];
        let contacts: Vec<Value> = own_fixes
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let at = project_position(start, course, speed * i as f64 / 60.0);
                json!({"time": format_time(f.time), "bearing": flat_bearing(f.coord, at), "origin": f.coord})
            })
            .collect();
        let sensor = json!({"type": "Feature", "id": "sensor-x", "properties": {"kind": "SENSOR", "contacts": contacts}});
        (own, sensor)
    }

    #[test]
    fn tuas_recovers_the_course_and_speed_behind_the_bearings() {
        let (own, sensor) = bearing_scenario(200.0, 9.0);
        // The true range at the 10:10 aimpoint.
        let own_at = fixes(&own)[10].coord;
        let tgt_at = project_position([0.15, 50.08], 200.0, 9.0 * 10.0 / 60.0);
        let range = model::gc_degrees(own_at, tgt_at).to_radians() * 3440.065;
        let items = run(
            generate_tuas_solution,
            &[own, sensor],
            json!({"range_estimate_nm": range, "aimpoint_time": "2024-01-15T10:10:00Z"}),
        )
        .unwrap();
        let p = body(&items[0])["properties"].clone();
        let course = p["estimated_course"].as_f64().unwrap();
        let speed = p["estimated_speed"].as_f64().unwrap();
        assert!(model::angle_diff(course, 200.0).abs() < 5.0, "{course}");
        assert!((speed - 9.0).abs() < 1.0, "{speed}");
        assert!(p["rms_bearing_error"].as_f64().unwrap() < 0.5);
    }

    #[test]
    fn tuas_and_cut_segments_refuse_what_they_cannot_solve() {
        let (own, sensor) = bearing_scenario(200.0, 9.0);
        let e = run(
            generate_tuas_solution,
            &[own.clone(), sensor.clone()],
            json!({"range_estimate_nm": 3.0, "aimpoint_time": "2024-01-15T12:00:00Z"}),
        )
        .unwrap_err();
        assert!(
            e.message
                .starts_with("Aimpoint time 2024-01-15T12:00:00Z is outside")
        );
        let parallel = json!({"type": "Feature", "id": "p", "properties": {"kind": "SENSOR", "contacts": [
            {"time": "2024-01-15T10:00:00Z", "bearing": 45.0, "origin": [0.0, 50.0]},
            {"time": "2024-01-15T10:01:00Z", "bearing": 46.0, "origin": [0.0, 50.01]}]}});
        let e = run(
            generate_tma_segment_from_cuts,
            &[own.clone(), parallel],
            json!({"initial_course_estimate": 0.0, "initial_speed_estimate": 5.0}),
        )
        .unwrap_err();
        assert!(e.message.starts_with("Bearing lines are nearly parallel"));
        let items = run(
            generate_tma_segment_from_cuts,
            &[own, sensor],
            json!({"initial_course_estimate": 200.0, "initial_speed_estimate": 9.0}),
        )
        .unwrap();
        let p = body(&items[0])["properties"].clone();
        assert_eq!(p["bearing_residuals"].as_array().map(Vec::len), Some(21));
        assert!(p["rms_bearing_error"].as_f64().unwrap().is_finite());
    }

    #[test]
    fn names_and_suffixes() {
        assert_eq!(slugify("Vessel  Alpha (2)"), "vessel-alpha-2");
        assert_eq!(
            derive_suffix("infill-segment-001", &["infill", "segment"]),
            "001"
        );
        assert_eq!(derive_suffix("ownship", &["ownship"]), "ownship");
    }

    proptest! {
        #[test]
        fn offset_position_travels_the_distance_asked(lon in -10.0f64..10.0, lat in -60.0f64..60.0, brg in 0.0f64..360.0, d in 0.1f64..200.0) {
            let to = offset_position([lon, lat], brg, d);
            let got = model::gc_degrees([lon, lat], to).to_radians() * 3440.065;
            prop_assert!((got - d).abs() < 1e-6 * d.max(1.0));
            prop_assert!(model::angle_diff(model::bearing_deg([lon, lat], to), brg).abs() < 1e-5);
        }

        #[test]
        fn range_time_series_stay_inside_the_overlap(a0 in 0i64..20, b0 in 0i64..20, na in 1usize..10, nb in 1usize..10) {
            let a = track("a", [0.0, 50.0], 90.0, 6.0, a0, 2, na);
            let b = track("b", [0.1, 50.1], 270.0, 6.0, b0, 3, nb);
            let (a1, b1) = (a0 + 2 * (na as i64 - 1), b0 + 3 * (nb as i64 - 1));
            match run(range_time_plot, &[a, b], json!({})) {
                Ok(items) => {
                    let d = body(&items[0]);
                    for p in d["series"]["data_points"].as_array().unwrap() {
                        let m = (parse_time(p["time"].as_str().unwrap()).unwrap() - T0) / 60_000;
                        prop_assert!(m >= a0.max(b0) && m <= a1.min(b1));
                    }
                }
                Err(e) => prop_assert!(a0.max(b0) > a1.min(b1), "{}", e.message),
            }
        }
    }
}
