//! `track/analysis`: manoeuvre detection, time-series plots and TMA (target motion analysis)
//! solution builders.

use serde_json::{Map, Value, json};

use super::model::{
    self, fixes, format_time, haversine_m, id_of, parse_time, positions_raw, prop, prop_str,
    py_num, py_value, round_to,
};
use super::sensor::{json_artifact, plural};
use super::{Body, CalcInput, Entry, Item, ToolError};
use crate::common::multi;

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
        description: "Range between exactly two tracks at every time step of their overlap (sampled at the union of both tracks' times, or either's), in yds, km, nm or m (default yds), with min/max/mean/std-dev and the CPA time and range. Use it to see how a separation changes over time.",
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
