//! `track/measurement`: the tote calculations and other point measurements between tracks.
//!
//! Two families share this module. The tote calculations (range, bearing, course, speed, depth,
//! time, Doppler, delta rate, averages, track length) answer one `debrief:`-prefixed
//! measurement feature without geometry; the TMA measurements (relative bearing, ATB, bearing
//! rate, course/speed rates and rate-rates) answer a `kind: MEASUREMENT` feature, most with the
//! point they were measured at. Both read tracks in either naming (see [`model`]).

use std::f64::consts::PI;

use serde_json::{Map, Value, json};

use toolgate_tool_catalogue::common::multi;
use toolgate_tool_catalogue::model::{
    self, Fix, angle_diff, bearing_deg, convert_nm, fix_at, fixes, format_time, gc_degrees, id_of,
    is_track, parse_time, positions_raw, prop_str, range_nm, round_to,
};
use toolgate_tool_catalogue::{Body, CalcInput, Entry, Item, ToolError};

const TRACK: &[&str] = &["TRACK"];

fn tracks() -> Value {
    multi(TRACK)
}

/// Tools that measure between two tracks say so, so a listing for one track leaves them out
/// (Debrief's specs declare them `multi`; their run fails with one track).
fn two_tracks() -> Value {
    json!([{"kind": "TRACK", "min": 2}])
}

const CAT: &str = "track/measurement";
const V1: &str = "1.0";

pub(crate) const TOOLS: &[Entry] = &[
    Entry {
        id: "range-calc",
        spec_category: CAT,
        spec_version: V1,
        description: "Range (great-circle distance) between two tracks at a given time, in `units`: nm, yds, km or m (toolgate passes the analyst's unit setting, nautical miles unless changed; Debrief's own default is yds). Use it for the separation of two vessels at one moment.",
        output_kind: "artifact/measurement/range",
        requirements: two_tracks,
        params: range_params,
        required: &[],
        run: range_calc,
    },
    Entry {
        id: "swt-range-calc",
        spec_category: CAT,
        spec_version: V1,
        description: "Range between two tracks at a given time as the SWT tote shows it (same as range-calc, in `units`: toolgate passes the unit setting, nautical miles unless changed; Debrief's default is yds). Use it where a workflow names the SWT range.",
        output_kind: "artifact/measurement/range",
        requirements: two_tracks,
        params: range_params,
        required: &[],
        run: swt_range_calc,
    },
    Entry {
        id: "bearing-calc",
        spec_category: CAT,
        spec_version: V1,
        description: "True bearing (degrees, 0-360) from the first track to the second at a given time. Use it for the line of sight from ownship to a contact.",
        output_kind: "artifact/measurement/bearing",
        requirements: two_tracks,
        params: time_params,
        required: &[],
        run: bearing_calc,
    },
    Entry {
        id: "course-calc",
        spec_category: CAT,
        spec_version: V1,
        description: "Course (degrees true) of a track at a given time, interpolated between fixes.",
        output_kind: "artifact/measurement/course",
        requirements: tracks,
        params: time_params,
        required: &[],
        run: course_calc,
    },
    Entry {
        id: "speed-calc",
        spec_category: CAT,
        spec_version: V1,
        description: "Speed (knots) of a track at a given time, interpolated between fixes.",
        output_kind: "artifact/measurement/speed",
        requirements: tracks,
        params: time_params,
        required: &[],
        run: speed_calc,
    },
    Entry {
        id: "depth-calc",
        spec_category: CAT,
        spec_version: V1,
        description: "Depth (metres) of a track at a given time; a track without depth reads 0 (surface).",
        output_kind: "artifact/measurement/depth",
        requirements: tracks,
        params: time_params,
        required: &[],
        run: depth_calc,
    },
    Entry {
        id: "time-calc",
        spec_category: CAT,
        spec_version: V1,
        description: "The time of a track's position at a given time, formatted as ISO8601 (default), HHmmss (HH:mm:ss) or ddHHmmss (dd HH:mm:ss).",
        output_kind: "artifact/measurement/time",
        requirements: tracks,
        params: time_calc_params,
        required: &[],
        run: time_calc,
    },
    Entry {
        id: "doppler-calc",
        spec_category: CAT,
        spec_version: V1,
        description: "Predicted received frequency (Hz) at the first track (receiver) of a tone of base frequency fNought radiated by the second track (source), from both tracks' course and speed. Use it to check a Doppler curve against the geometry.",
        output_kind: "artifact/measurement/doppler",
        requirements: two_tracks,
        params: doppler_params,
        required: &[],
        run: doppler_calc,
    },
    Entry {
        id: "delta-rate-calc",
        spec_category: CAT,
        spec_version: V1,
        description: "Range rate between two tracks from the given time to the first track's next fix, in `units`: kts, m/s or yds/s (toolgate passes the speed setting, knots unless changed; Debrief's default is yds/s); negative = closing, positive = opening.",
        output_kind: "artifact/measurement/delta_range_rate",
        requirements: two_tracks,
        params: delta_rate_params,
        required: &[],
        run: delta_rate_calc,
    },
    Entry {
        id: "course-delta-average-calc",
        spec_category: CAT,
        spec_version: V1,
        description: "Average absolute course change (degrees) between consecutive positions of a track, the shorter way round. Use it to judge how much a track manoeuvres.",
        output_kind: "artifact/measurement/course_delta_average",
        requirements: tracks,
        params: time_params,
        required: &[],
        run: course_delta_average_calc,
    },
    Entry {
        id: "speed-delta-average-calc",
        spec_category: CAT,
        spec_version: V1,
        description: "Average absolute speed change (knots) between consecutive positions of a track.",
        output_kind: "artifact/measurement/speed_delta_average",
        requirements: tracks,
        params: time_params,
        required: &[],
        run: speed_delta_average_calc,
    },
    Entry {
        id: "calculate-track-length",
        spec_category: CAT,
        spec_version: V1,
        description: "Total length of a track along its visible positions, in `units`: nm (default), yds, km or m (toolgate passes the analyst's unit setting).",
        output_kind: "artifact/measurement/track_length",
        requirements: tracks,
        params: track_length_params,
        required: &[],
        run: calculate_track_length,
    },
    Entry {
        id: "rel-bearing-calc",
        spec_category: CAT,
        spec_version: V1,
        description: "Relative bearing of the target (second track) from ownship's bow (first track) at a given time: UK format -180..+180 (default, negative = port) or US format 0..360.",
        output_kind: "artifact/measurement/relative_bearing",
        requirements: two_tracks,
        params: bearing_format_params,
        required: &[],
        run: rel_bearing_calc,
    },
    Entry {
        id: "atb-calc",
        spec_category: CAT,
        spec_version: V1,
        description: "Angle to bow: the bearing of ownship (first track) from the target's bow (second track) at a given time, UK format -180..+180 (default) or US format 0..360. Use it for the aspect of the target that ownship sees.",
        output_kind: "artifact/measurement/angle_to_bow",
        requirements: two_tracks,
        params: bearing_format_params,
        required: &[],
        run: atb_calc,
    },
    Entry {
        id: "bearing-rate-calc",
        spec_category: CAT,
        spec_version: V1,
        description: "Bearing rate (deg/min, with direction Left/Right) of the target (second track) from ownship (first track) at a given time, from both tracks' course, speed and the range. Use it for TMA (e.g. to spot a constant-bearing, decreasing-range contact).",
        output_kind: "artifact/measurement/bearing_rate",
        requirements: two_tracks,
        params: time_params,
        required: &[],
        run: bearing_rate_calc,
    },
    Entry {
        id: "course-rate-calc",
        spec_category: CAT,
        spec_version: V1,
        description: "Rate of turn (deg/sec) between each pair of consecutive positions of a track and their mean; a one-position track answers its course.",
        output_kind: "artifact/measurement/course_rate",
        requirements: tracks,
        params: time_params,
        required: &[],
        run: course_rate_calc,
    },
    Entry {
        id: "speed-rate-calc",
        spec_category: CAT,
        spec_version: V1,
        description: "Acceleration (kts/sec) between each pair of consecutive positions of a track and their mean; a one-position track answers its speed.",
        output_kind: "artifact/measurement/speed_rate",
        requirements: tracks,
        params: time_params,
        required: &[],
        run: speed_rate_calc,
    },
    Entry {
        id: "course-delta-rate-rate-calc",
        spec_category: CAT,
        spec_version: V1,
        description: "Second derivative of course (deg/s^2) at each interior position of a track with at least 4 positions; adds a measurement feature to the plot.",
        output_kind: "addition/measurement/course_delta_rate_rate",
        requirements: tracks,
        params: no_params,
        required: &[],
        run: course_delta_rate_rate_calc,
    },
    Entry {
        id: "speed-rate-rate-calc",
        spec_category: CAT,
        spec_version: V1,
        description: "Second derivative of speed (kn/s^2) at each interior position of a track with at least 4 positions; adds a measurement feature to the plot.",
        output_kind: "addition/measurement/speed_rate_rate",
        requirements: tracks,
        params: no_params,
        required: &[],
        run: speed_rate_rate_calc,
    },
    Entry {
        id: "position-range-bearing",
        spec_category: CAT,
        spec_version: V1,
        description: "Range (nm) and bearing (degrees true) from one position of the first track (selected_position_index) to the second track's position closest in time to it.",
        output_kind: "artifact/measurement/position_range_bearing",
        requirements: two_tracks,
        params: position_range_bearing_params,
        required: &["selected_position_index"],
        run: position_range_bearing,
    },
];

// ---------------------------------------------------------------- parameter schemas

fn time_schema() -> Value {
    json!({"type": "string", "format": "date-time", "description": "Time at which to measure, ISO-8601 (default: the first track's first time)."})
}

fn no_params() -> Value {
    json!({})
}

fn time_params() -> Value {
    json!({ "time": time_schema() })
}

fn range_params() -> Value {
    json!({
        "time": time_schema(),
        "units": {"type": "string", "enum": ["yds", "km", "nm", "m"], "default": "yds", "description": "Distance units of the result."},
    })
}

fn time_calc_params() -> Value {
    json!({
        "time": time_schema(),
        "format": {"type": "string", "enum": ["ISO8601", "HHmmss", "ddHHmmss"], "default": "ISO8601", "description": "How to write the time: ISO8601 (2024-01-15T10:30:00Z), HHmmss (10:30:00) or ddHHmmss (15 10:30:00)."},
    })
}

fn doppler_params() -> Value {
    json!({
        "time": time_schema(),
        "fNought": {"type": "number", "default": 150.0, "description": "Base (radiated) frequency in Hz; must be positive."},
        "speedOfSound": {"type": "number", "default": 3032.0, "description": "Speed of sound in water in knots; must be positive."},
    })
}

fn delta_rate_params() -> Value {
    json!({
        "time": time_schema(),
        "units": {"type": "string", "enum": ["yds/s", "m/s", "kts"], "default": "yds/s", "description": "Units of the range rate."},
    })
}

fn track_length_params() -> Value {
    json!({
        "time": {"type": "string", "format": "date-time", "description": "Ignored (the length covers the whole track); accepted for tote-style callers."},
        "units": {"type": "string", "enum": ["yds", "km", "nm", "m"], "default": "nm", "description": "Distance units of the result."},
    })
}

fn bearing_format_params() -> Value {
    json!({
        "time": time_schema(),
        "format": {"type": "string", "enum": ["UK", "US"], "default": "UK", "description": "UK: -180..+180 (negative = port); US: 0..360."},
    })
}

fn position_range_bearing_params() -> Value {
    json!({
        "selected_position_index": {"type": "integer", "description": "Index of the selected position in the first track's coordinates/times (0 = first)."},
    })
}

// ---------------------------------------------------------------- shared helpers

/// A number as Debrief's Python reference writes it in labels: `12.0`, `7.8641`, `-12.3`.
pub(crate) fn py_num(x: f64) -> String {
    if x.is_finite() && x == x.trunc() && x.abs() < 1e16 {
        format!("{x:.1}")
    } else {
        format!("{x}")
    }
}

/// `T10:30`: the short time the TMA labels use.
fn short_time(ms: i64) -> String {
    let full = format_time(ms);
    full.get(10..16).map(str::to_owned).unwrap_or(full)
}

fn bad_time(t: &str) -> ToolError {
    ToolError::invalid(format!(
        "Time \"{t}\" is not an ISO-8601 time; use e.g. 2024-01-15T10:30:00Z"
    ))
}

/// The measurement time: the `time` parameter, else the first fix of `primary`.
fn measurement_time(
    input: &CalcInput,
    primary: &[Fix],
    missing: &str,
    affected: Vec<String>,
) -> Result<i64, ToolError> {
    match input.str_param("time") {
        Some(t) => parse_time(t).ok_or_else(|| bad_time(t)),
        None => primary
            .first()
            .map(|f| f.time)
            .ok_or_else(|| ToolError::invalid(missing).affecting(affected)),
    }
}

fn unit_error(units: &str, allowed: &str) -> ToolError {
    ToolError::invalid(format!(
        "Unsupported distance unit \"{units}\"; use one of {allowed}"
    ))
}

fn id(f: &Value) -> String {
    id_of(f).unwrap_or_default()
}

/// A tote measurement feature: `debrief:`-prefixed properties, no geometry.
fn tote_feature(id: &str, props: Vec<(&str, Value)>) -> Value {
    let mut p = Map::new();
    p.insert("debrief:kind".into(), json!("measurement"));
    for (k, v) in props {
        p.insert(format!("debrief:{k}"), v);
    }
    json!({"type": "Feature", "id": id, "geometry": null, "properties": p})
}

/// A TMA measurement feature: `kind: MEASUREMENT`, plain property names.
fn tma_feature(id: &str, geometry: Value, props: Vec<(&str, Value)>) -> Value {
    let mut p = Map::new();
    p.insert("kind".into(), json!("MEASUREMENT"));
    for (k, v) in props {
        p.insert(k.to_owned(), v);
    }
    json!({"type": "Feature", "id": id, "geometry": geometry, "properties": p})
}

fn point(c: [f64; 2]) -> Value {
    json!({"type": "Point", "coordinates": c})
}

/// The coordinates of raw position `i`: its own `coordinates`, else the geometry's `i`th.
fn raw_coord(f: &Value, line: &[[f64; 2]], i: usize) -> Option<[f64; 2]> {
    positions_raw(f)
        .get(i)
        .and_then(|p| p.get("coordinates"))
        .and_then(Value::as_array)
        .and_then(|a| Some([a.first()?.as_f64()?, a.get(1)?.as_f64()?]))
        .filter(|c| c[0].is_finite() && c[1].is_finite())
        .or_else(|| line.get(i).copied())
}

fn raw_num(p: &Value, key: &str) -> Option<f64> {
    p.get(key).and_then(Value::as_f64).filter(|x| x.is_finite())
}

fn raw_time(p: &Value) -> Option<&str> {
    p.get("time").and_then(Value::as_str)
}

/// The two tracks of a two-track tote calculation.
fn two<'a>(input: &CalcInput<'a>, too_few: &str) -> Result<(&'a Value, &'a Value), ToolError> {
    match input.features {
        [] => Err(ToolError::invalid("Input features required")),
        [_] => Err(ToolError::invalid(too_few)),
        [a, b, ..] => Ok((a, b)),
    }
}

/// The first feature of a one-track tote calculation, which must be a track.
fn one_track<'a>(input: &CalcInput<'a>) -> Result<&'a Value, ToolError> {
    let primary = input
        .features
        .first()
        .ok_or_else(|| ToolError::invalid("Input features required"))?;
    if !is_track(primary) {
        return Err(ToolError::invalid("Feature must be a track").affecting(vec![id(primary)]));
    }
    Ok(primary)
}

/// Both tracks' fixes at the measurement time (the tote calculations' shared first step).
fn fixes_at_time(
    input: &CalcInput,
    primary: &Value,
    secondary: &Value,
    missing: &str,
) -> Result<(i64, Fix, Fix), ToolError> {
    let (pf, sf) = (fixes(primary), fixes(secondary));
    let time = measurement_time(input, &pf, missing, Vec::new())?;
    match (fix_at(&pf, time), fix_at(&sf, time)) {
        (Some(p), Some(s)) => Ok((time, p, s)),
        _ => Err(ToolError::invalid(missing)),
    }
}

const NO_POSITION: &str = "No position available at specified time";

/// One track's fix at the measurement time.
fn fix_at_time(input: &CalcInput, primary: &Value) -> Result<(i64, Fix), ToolError> {
    let pf = fixes(primary);
    let affected = vec![id(primary)];
    let time = measurement_time(input, &pf, NO_POSITION, affected.clone())?;
    fix_at(&pf, time)
        .map(|f| (time, f))
        .ok_or_else(|| ToolError::invalid(NO_POSITION).affecting(affected))
}

// ---------------------------------------------------------------- range, bearing

fn range_item(input: &CalcInput, measurement_id: &str) -> Result<Vec<Item>, ToolError> {
    let (primary, secondary) = two(input, "Two track features required for range calculation")?;
    let units = input.str_param("units").unwrap_or("yds");
    let (time, p, s) = fixes_at_time(input, primary, secondary, NO_POSITION)?;
    let value = convert_nm(range_nm(p.coord, s.coord), units)
        .ok_or_else(|| unit_error(units, "yds, km, nm, m"))?;
    let (pid, sid) = (id(primary), id(secondary));
    let feature = tote_feature(
        measurement_id,
        vec![
            ("measurement_type", json!("range")),
            ("value", json!(value)),
            ("units", json!(units)),
            ("time", json!(format_time(time))),
            ("primary_track", json!(pid)),
            ("secondary_track", json!(sid)),
            ("primary_position", json!(p.coord)),
            ("secondary_position", json!(s.coord)),
        ],
    );
    Ok(vec![Item::feature(
        feature,
        "artifact/measurement/range",
        vec![pid, sid],
        format!("Calculated range: {} {units}", value.round()),
    )])
}

fn range_calc(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    range_item(input, "measurement-range-001")
}

fn swt_range_calc(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    range_item(input, "measurement-swt-range-001")
}

fn bearing_calc(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    let (primary, secondary) = two(input, "Two track features required for bearing calculation")?;
    let (time, p, s) = fixes_at_time(input, primary, secondary, NO_POSITION)?;
    let value = round_to(bearing_deg(p.coord, s.coord), 1) % 360.0;
    let (pid, sid) = (id(primary), id(secondary));
    let feature = tote_feature(
        "measurement-bearing-001",
        vec![
            ("measurement_type", json!("bearing")),
            ("value", json!(value)),
            ("units", json!("degs")),
            ("time", json!(format_time(time))),
            ("primary_track", json!(pid)),
            ("secondary_track", json!(sid)),
            ("primary_position", json!(p.coord)),
            ("secondary_position", json!(s.coord)),
        ],
    );
    Ok(vec![Item::feature(
        feature,
        "artifact/measurement/bearing",
        vec![pid, sid],
        format!("Calculated bearing: {} degs", py_num(value)),
    )])
}

// ---------------------------------------------------------------- course, speed, depth, time

/// A one-track tote reading: `read` picks the value (or an error message) from the fix.
fn one_value(
    input: &CalcInput,
    kind: &str,
    units: &str,
    read: fn(&Fix) -> Result<f64, &'static str>,
) -> Result<Vec<Item>, ToolError> {
    let primary = one_track(input)?;
    let (time, fix) = fix_at_time(input, primary)?;
    let pid = id(primary);
    let value = read(&fix).map_err(|m| ToolError::invalid(m).affecting(vec![pid.clone()]))?;
    let feature = tote_feature(
        &format!("measurement-{kind}-001"),
        vec![
            ("measurement_type", json!(kind)),
            ("value", json!(value)),
            ("units", json!(units)),
            ("time", json!(format_time(time))),
            ("primary_track", json!(pid)),
            ("primary_position", json!(fix.coord)),
        ],
    );
    Ok(vec![Item::feature(
        feature,
        &format!("artifact/measurement/{kind}"),
        vec![pid],
        format!("Calculated {kind}: {} {units}", py_num(value)),
    )])
}

fn course_calc(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    one_value(input, "course", "degs", |f| {
        f.course
            .filter(|c| c.is_finite())
            .map(|c| c.rem_euclid(360.0))
            .ok_or("No course data available at specified time")
    })
}

fn speed_calc(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    one_value(input, "speed", "kts", |f| {
        f.speed
            .filter(|s| s.is_finite())
            .ok_or("No speed data available at specified time")
    })
}

fn depth_calc(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    // Legacy Debrief reads a missing or NaN depth as the surface.
    one_value(input, "depth", "m", |f| {
        Ok(f.depth.filter(|d| d.is_finite()).unwrap_or(0.0))
    })
}

fn time_calc(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    let primary = one_track(input)?;
    let (time, fix) = fix_at_time(input, primary)?;
    let format = input.str_param("format").unwrap_or("ISO8601");
    let iso = format_time(time);
    let formatted = match format {
        "HHmmss" => iso.get(11..19).unwrap_or(&iso).to_owned(),
        "ddHHmmss" => format!(
            "{} {}",
            iso.get(8..10).unwrap_or_default(),
            iso.get(11..19).unwrap_or_default()
        ),
        _ => iso.clone(),
    };
    let pid = id(primary);
    let feature = tote_feature(
        "measurement-time-001",
        vec![
            ("measurement_type", json!("time")),
            ("value", json!(formatted)),
            ("units", json!(format)),
            ("time", json!(iso)),
            ("primary_track", json!(pid)),
            ("primary_position", json!(fix.coord)),
        ],
    );
    Ok(vec![Item::feature(
        feature,
        "artifact/measurement/time",
        vec![pid],
        format!("Current time: {formatted}"),
    )])
}

// ---------------------------------------------------------------- Doppler, delta rate

/// Received frequency of a tone `f0` (legacy `FrequencyCalcs.getPredictedFreq`): speeds in
/// knots, courses and the receiver→source bearing in radians, `c` the speed of sound in knots.
pub(crate) fn predicted_freq(
    f0: f64,
    c: f64,
    (rx_speed, rx_course): (f64, f64),
    (tx_speed, tx_course): (f64, f64),
    bearing: f64,
) -> f64 {
    let v_rx = rx_speed * (bearing - rx_course).cos();
    let v_tx = tx_speed * (bearing + PI - tx_course).cos();
    f0 * (c + v_rx) / (c - v_tx)
}

fn doppler_calc(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    let (primary, secondary) = two(input, "Two track features required for Doppler calculation")?;
    let f0 = input.f64_param("fNought").unwrap_or(150.0);
    let c = input.f64_param("speedOfSound").unwrap_or(3032.0);
    if f0.is_nan() || f0 <= 0.0 {
        return Err(ToolError::invalid(format!(
            "Base frequency must be positive (fNought is {f0}); give it in Hz, e.g. 150"
        )));
    }
    if c.is_nan() || c <= 0.0 {
        return Err(ToolError::invalid(format!(
            "Speed of sound must be positive (speedOfSound is {c}); give it in knots, e.g. 3032"
        )));
    }
    let (time, rx, tx) = fixes_at_time(input, primary, secondary, NO_POSITION)?;
    let motion = |f: &Fix| Some((f.speed?, f.course?.to_radians()));
    let (Some(rx_motion), Some(tx_motion)) = (motion(&rx), motion(&tx)) else {
        return Err(
            ToolError::invalid("Speed and course data required for Doppler calculation")
                .affecting(vec![id(primary), id(secondary)]),
        );
    };
    let bearing = bearing_deg(rx.coord, tx.coord);
    let freq = round_to(
        predicted_freq(f0, c, rx_motion, tx_motion, bearing.to_radians()),
        2,
    );
    let (pid, sid) = (id(primary), id(secondary));
    let feature = tote_feature(
        "measurement-doppler-001",
        vec![
            ("measurement_type", json!("doppler")),
            ("value", json!(freq)),
            ("units", json!("Hz")),
            ("time", json!(format_time(time))),
            ("primary_track", json!(pid)),
            ("secondary_track", json!(sid)),
            ("fNought", json!(f0)),
            ("speedOfSound", json!(c)),
            ("bearing", json!(bearing)),
            ("primary_position", json!(rx.coord)),
            ("secondary_position", json!(tx.coord)),
        ],
    );
    Ok(vec![Item::feature(
        feature,
        "artifact/measurement/doppler",
        vec![pid, sid],
        format!("Calculated Doppler frequency: {} Hz", py_num(freq)),
    )])
}

/// Yards per metre as the delta-rate spec writes it.
const YDS_PER_M: f64 = 1.09361;

fn delta_rate_calc(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    let (primary, secondary) = two(
        input,
        "Two track features required for delta rate calculation",
    )?;
    let units = input.str_param("units").unwrap_or("yds/s");
    let scale = match units {
        "yds/s" => YDS_PER_M,
        "m/s" => 1.0,
        "kts" => 1.0 / 0.51444,
        other => {
            return Err(ToolError::invalid(format!(
                "Unsupported rate unit \"{other}\"; use one of yds/s, m/s, kts"
            )));
        }
    };
    let (pf, sf) = (fixes(primary), fixes(secondary));
    let time = measurement_time(input, &pf, NO_POSITION, Vec::new())?;
    let (Some(p1), Some(s1)) = (fix_at(&pf, time), fix_at(&sf, time)) else {
        return Err(ToolError::invalid(NO_POSITION));
    };
    // T2 is the primary's next fix; the secondary is taken at that same time (interpolated
    // when its fixes fall elsewhere), so both ranges are simultaneous.
    let insufficient = || ToolError::invalid("Insufficient positions to calculate rate of change");
    let t2 = pf
        .iter()
        .find(|f| f.time > time)
        .map(|f| f.time)
        .ok_or_else(insufficient)?;
    let (Some(p2), Some(s2)) = (fix_at(&pf, t2), fix_at(&sf, t2)) else {
        return Err(insufficient());
    };
    let range_m = |a: &Fix, b: &Fix| range_nm(a.coord, b.coord) * model::METRES_PER_NM;
    let (r1, r2) = (range_m(&p1, &s1), range_m(&p2, &s2));
    let dt = (t2 - time) as f64 / 1000.0;
    let rate = round_to((r2 - r1) / dt * scale, 1);
    let (pid, sid) = (id(primary), id(secondary));
    let feature = tote_feature(
        "measurement-delta-rate-001",
        vec![
            ("measurement_type", json!("delta_range_rate")),
            ("value", json!(rate)),
            ("units", json!(units)),
            ("time", json!(format_time(time))),
            ("primary_track", json!(pid)),
            ("secondary_track", json!(sid)),
            ("range_at_t1", json!((r1 * YDS_PER_M).round())),
            ("range_at_t2", json!((r2 * YDS_PER_M).round())),
            ("time_interval_secs", json!(dt)),
        ],
    );
    Ok(vec![Item::feature(
        feature,
        "artifact/measurement/delta_range_rate",
        vec![pid, sid],
        format!("Calculated delta range rate: {} {units}", py_num(rate)),
    )])
}

// ---------------------------------------------------------------- averages, length

fn delta_average(
    input: &CalcInput,
    what: &str,
    units: &str,
    delta: fn(f64, f64) -> f64,
) -> Result<Vec<Item>, ToolError> {
    let primary = one_track(input)?;
    let pid = id(primary);
    let positions = positions_raw(primary);
    if positions.len() < 2 {
        return Err(ToolError::invalid(format!(
            "At least two positions required for {what} delta average"
        ))
        .affecting(vec![pid]));
    }
    let values: Vec<Option<f64>> = positions.iter().map(|p| raw_num(p, what)).collect();
    let deltas: Vec<f64> = values
        .windows(2)
        .filter_map(|w| Some(delta(w[0]?, w[1]?).abs()))
        .collect();
    if deltas.is_empty() {
        return Err(
            ToolError::invalid(format!("No valid {what} data for delta calculation"))
                .affecting(vec![pid]),
        );
    }
    let average = round_to(deltas.iter().sum::<f64>() / deltas.len() as f64, 1);
    let first_time = positions.first().and_then(raw_time);
    let time = match input.str_param("time") {
        Some(t) => format_time(parse_time(t).ok_or_else(|| bad_time(t))?),
        None => first_time.unwrap_or_default().to_owned(),
    };
    let feature = tote_feature(
        &format!("measurement-{what}-delta-avg-001"),
        vec![
            ("measurement_type", json!(format!("{what}_delta_average"))),
            ("value", json!(average)),
            ("units", json!(units)),
            ("time", json!(time)),
            ("primary_track", json!(pid)),
            ("num_positions", json!(positions.len())),
            ("period_start", json!(first_time)),
            ("period_end", json!(positions.last().and_then(raw_time))),
        ],
    );
    Ok(vec![Item::feature(
        feature,
        &format!("artifact/measurement/{what}_delta_average"),
        vec![pid],
        format!(
            "Calculated average {what} change: {} {units}",
            py_num(average)
        ),
    )])
}

fn course_delta_average_calc(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    delta_average(input, "course", "degs", angle_diff)
}

fn speed_delta_average_calc(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    delta_average(input, "speed", "kts", |a, b| b - a)
}

fn calculate_track_length(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    let primary = one_track(input)?;
    let pid = id(primary);
    let units = input.str_param("units").unwrap_or("nm");
    let positions = positions_raw(primary);
    if positions.len() < 2 {
        return Err(
            ToolError::invalid("At least two positions required for track length")
                .affecting(vec![pid]),
        );
    }
    let line = model::line_coords(primary);
    let visible: Vec<[f64; 2]> = positions
        .iter()
        .enumerate()
        .filter(|(_, p)| p.get("visible").and_then(Value::as_bool).unwrap_or(true))
        .filter_map(|(i, _)| raw_coord(primary, &line, i))
        .collect();
    if visible.len() < 2 {
        return Err(
            ToolError::invalid("At least two visible positions required").affecting(vec![pid]),
        );
    }
    let total_nm: f64 = visible.windows(2).map(|w| range_nm(w[0], w[1])).sum();
    let value = round_to(
        convert_nm(total_nm, units).ok_or_else(|| unit_error(units, "yds, km, nm, m"))?,
        2,
    );
    let feature = tote_feature(
        "measurement-track-length-001",
        vec![
            ("measurement_type", json!("track_length")),
            ("value", json!(value)),
            ("units", json!(units)),
            ("time", json!(positions.first().and_then(raw_time))),
            ("primary_track", json!(pid)),
            ("num_segments", json!(visible.len() - 1)),
            ("num_visible_positions", json!(visible.len())),
        ],
    );
    Ok(vec![Item::feature(
        feature,
        "artifact/measurement/track_length",
        vec![pid],
        format!("Calculated track length: {} {units}", py_num(value)),
    )])
}

// ---------------------------------------------------------------- TMA: relative bearing, ATB, bearing rate

const NEED_TWO: &str = "Input requires at least two track features (ownship and target)";
const NO_COVER: &str = "Track does not cover requested time";

/// Ownship and target at the measurement time, for the TMA measurements.
fn tma_pair(input: &CalcInput) -> Result<(String, String, i64, Fix, Fix), ToolError> {
    let [own, tgt, ..] = input.features else {
        return Err(ToolError::invalid(NEED_TWO));
    };
    let (oid, tid) = (id(own), id(tgt));
    if !is_track(own) || !is_track(tgt) {
        return Err(
            ToolError::invalid("Both features must be track features").affecting(vec![oid, tid])
        );
    }
    let (of, tf) = (fixes(own), fixes(tgt));
    let time = measurement_time(input, &of, NO_COVER, Vec::new())?;
    let (Some(o), Some(t)) = (fix_at(&of, time), fix_at(&tf, time)) else {
        return Err(ToolError::invalid(NO_COVER));
    };
    Ok((oid, tid, time, o, t))
}

fn co_located(oid: &str, tid: &str) -> ToolError {
    // Debrief's goldens call this `computation_error`, which is not one of spec 041's
    // categories; an algorithm that cannot answer is spec 041's `algorithm_failure`.
    ToolError::failure("Tracks are co-located at requested time; bearing is undefined")
        .affecting(vec![oid.to_owned(), tid.to_owned()])
}

/// An angle in the UK (-180, 180] or US [0, 360) convention.
fn in_format(angle: f64, format: &str) -> f64 {
    if format == "US" {
        angle.rem_euclid(360.0)
    } else {
        let a = angle.rem_euclid(360.0);
        if a > 180.0 { a - 360.0 } else { a }
    }
}

fn format_param<'a>(input: &CalcInput<'a>) -> &'a str {
    input.str_param("format").unwrap_or("UK")
}

fn need_course(f: &Fix, track: &str) -> Result<f64, ToolError> {
    f.course.filter(|c| c.is_finite()).ok_or_else(|| {
        ToolError::invalid(format!(
            "Track {track} has no course at the requested time; give its positions a course"
        ))
        .affecting(vec![track.to_owned()])
    })
}

/// What a bearing-minus-course tool (relative bearing, ATB) measures.
struct RelativeAngle {
    /// Feature id, e.g. `measurement-atb-001`.
    feature_id: &'static str,
    /// `relative_bearing` or `angle_to_bow`.
    kind: &'static str,
    /// Measured from the target (ATB: the target's course and the bearing target→ownship)
    /// rather than from ownship.
    from_target: bool,
    /// Property names of the bearing and of the course used.
    bearing_key: &'static str,
    course_key: &'static str,
    /// Label start and end around the angle and format.
    title: &'static str,
    perspective: &'static str,
}

const REL_BEARING: RelativeAngle = RelativeAngle {
    feature_id: "measurement-rel-bearing-001",
    kind: "relative_bearing",
    from_target: false,
    bearing_key: "absolute_bearing",
    course_key: "ownship_course",
    title: "Relative bearing",
    perspective: "from ownship to target",
};

const ATB: RelativeAngle = RelativeAngle {
    feature_id: "measurement-atb-001",
    kind: "angle_to_bow",
    from_target: true,
    bearing_key: "bearing_target_to_ownship",
    course_key: "target_course",
    title: "Angle to bow",
    perspective: "from target perspective",
};

/// The shared body of rel-bearing-calc and atb-calc: the pair at the time, the co-located
/// check, bearing from the observer to the other minus the observer's course, in the format.
fn relative_angle(input: &CalcInput, m: &RelativeAngle) -> Result<Vec<Item>, ToolError> {
    let (oid, tid, time, own, tgt) = tma_pair(input)?;
    if own.coord == tgt.coord {
        return Err(co_located(&oid, &tid));
    }
    let format = format_param(input);
    let (observer, other, observer_id) = if m.from_target {
        (&tgt, &own, &tid)
    } else {
        (&own, &tgt, &oid)
    };
    let bearing = bearing_deg(observer.coord, other.coord);
    let course = need_course(observer, observer_id)?;
    let angle = in_format(bearing - course, format);
    let feature = tma_feature(
        m.feature_id,
        point(observer.coord),
        vec![
            ("measurement_type", json!(m.kind)),
            ("value", json!(angle)),
            ("units", json!("degrees")),
            ("format", json!(format)),
            (m.bearing_key, json!(bearing)),
            (m.course_key, json!(course)),
            ("time", json!(format_time(time))),
            ("source_tracks", json!([oid, tid])),
        ],
    );
    Ok(vec![Item::feature(
        feature,
        &format!("artifact/measurement/{}", m.kind),
        vec![oid, tid],
        format!(
            "{}: {} deg ({format}) {}",
            m.title,
            py_num(round_to(angle, 2)),
            m.perspective
        ),
    )])
}

fn rel_bearing_calc(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    relative_angle(input, &REL_BEARING)
}

fn atb_calc(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    relative_angle(input, &ATB)
}

/// Legacy `Degs2Yds`: 60 nm per degree, 2025.37 yds per nm.
const YDS_PER_DEG: f64 = 60.0 * 2025.37;

/// Bearing rate in deg/min (positive = right) from the speeds across the line of sight.
/// `own`/`tgt` are (course radians, speed knots), `brg` the bearing ownship→target in radians.
pub(crate) fn bearing_rate(brg: f64, range_yds: f64, own: (f64, f64), tgt: (f64, f64)) -> f64 {
    let rel = brg - own.0;
    let atb = brg - PI - tgt.0;
    let rsa = tgt.1 * atb.sin() + own.1 * rel.sin();
    (6080.0 / PI) * rsa / range_yds
}

fn bearing_rate_calc(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    let (oid, tid, time, own, tgt) = tma_pair(input)?;
    let brg = bearing_deg(own.coord, tgt.coord);
    let range_yards = gc_degrees(own.coord, tgt.coord) * YDS_PER_DEG;
    if range_yards.is_nan() || range_yards < 1.0 {
        return Err(ToolError::failure(
            "Range between tracks is zero; bearing rate is undefined (division by zero)",
        )
        .affecting(vec![oid, tid]));
    }
    let motion = |f: &Fix, track: &str| -> Result<(f64, f64), ToolError> {
        let speed = f.speed.filter(|s| s.is_finite()).ok_or_else(|| {
            ToolError::invalid(format!(
                "Track {track} has no speed at the requested time; give its positions a speed"
            ))
            .affecting(vec![track.to_owned()])
        })?;
        Ok((need_course(f, track)?.to_radians(), speed))
    };
    let b_dot = bearing_rate(
        brg.to_radians(),
        range_yards,
        motion(&own, &oid)?,
        motion(&tgt, &tid)?,
    );
    let direction = if b_dot < 0.0 { "Left" } else { "Right" };
    let feature = tma_feature(
        "measurement-bearing-rate-001",
        point(own.coord),
        vec![
            ("measurement_type", json!("bearing_rate")),
            ("value", json!(b_dot.abs())),
            ("units", json!("deg/min")),
            ("direction", json!(direction)),
            ("signed_value", json!(b_dot)),
            ("range_yards", json!(range_yards)),
            ("bearing", json!(brg)),
            ("time", json!(format_time(time))),
            ("source_tracks", json!([oid, tid])),
        ],
    );
    Ok(vec![Item::feature(
        feature,
        "artifact/measurement/bearing_rate",
        vec![oid, tid],
        format!(
            "Bearing rate: {} deg/min {direction}",
            py_num(round_to(b_dot.abs(), 4))
        ),
    )])
}

// ---------------------------------------------------------------- course and speed rates

/// What a rate tool differentiates.
struct Measure {
    /// `course` or `speed`.
    key: &'static str,
    /// The measurement type, e.g. `course_rate`.
    kind: &'static str,
    /// Units of a single reading (`degrees`, `knots`) and of a rate (`deg/sec`, `kts/sec`).
    value_units: &'static str,
    rate_units: &'static str,
    /// Label word for a single reading: `Course`, `Speed`; and its label units.
    title: &'static str,
    label_units: &'static str,
}

const COURSE: Measure = Measure {
    key: "course",
    kind: "course_rate",
    value_units: "degrees",
    rate_units: "deg/sec",
    title: "Course",
    label_units: "deg",
};

const SPEED: Measure = Measure {
    key: "speed",
    kind: "speed_rate",
    value_units: "knots",
    rate_units: "kts/sec",
    title: "Speed",
    label_units: "kts",
};

/// The raw positions' times (ms), values and time strings, erroring on a missing value.
fn measured(track: &Value, key: &str, pid: &str) -> Result<Vec<(i64, f64, String)>, ToolError> {
    positions_raw(track)
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let text = raw_time(p).unwrap_or_default();
            let time = parse_time(text).ok_or_else(|| {
                ToolError::invalid(format!(
                    "Position {i} has no readable time (\"{text}\"); use ISO-8601"
                ))
                .affecting(vec![pid.to_owned()])
            })?;
            let value = raw_num(p, key).ok_or_else(|| {
                ToolError::invalid(format!("Position missing {key} property (position {i})"))
                    .affecting(vec![pid.to_owned()])
            })?;
            if key == "speed" && value < 0.0 {
                return Err(ToolError::invalid(format!(
                    "Speed cannot be negative (position {i} has {value})"
                ))
                .affecting(vec![pid.to_owned()]));
            }
            let value = if key == "course" {
                value.rem_euclid(360.0)
            } else {
                value
            };
            Ok((time, value, text.to_owned()))
        })
        .collect()
}

fn rate_calc(input: &CalcInput, m: &Measure) -> Result<Vec<Item>, ToolError> {
    let track = input
        .features
        .first()
        .ok_or_else(|| ToolError::invalid("Input requires at least one track feature"))?;
    let pid = id(track);
    if !is_track(track) {
        return Err(ToolError::invalid("Feature must be a track feature").affecting(vec![pid]));
    }
    let values = measured(track, m.key, &pid)?;
    if values.is_empty() {
        return Err(ToolError::invalid("Track has no positions").affecting(vec![pid]));
    }
    let line = model::line_coords(track);
    let first = raw_coord(track, &line, 0);
    let time = match input.str_param("time") {
        Some(t) => parse_time(t).ok_or_else(|| bad_time(t))?,
        None => values[0].0,
    };
    let (start_key, end_key) = if m.key == "course" {
        ("course_start", "course_end")
    } else {
        ("speed_start", "speed_end")
    };
    let rates: Vec<(Value, f64)> = values
        .windows(2)
        .filter(|w| w[1].0 != w[0].0)
        .map(|w| {
            let dt = (w[1].0 - w[0].0) as f64 / 1000.0;
            let delta = if m.key == "course" {
                // The shorter way round: 359 -> 1 is +2, not -358.
                angle_diff(w[0].1, w[1].1)
            } else {
                w[1].1 - w[0].1
            };
            let rate = delta / dt;
            let mut o = Map::with_capacity(6);
            o.insert("time_start".into(), json!(w[0].2));
            o.insert("time_end".into(), json!(w[1].2));
            o.insert(start_key.into(), json!(w[0].1));
            o.insert(end_key.into(), json!(w[1].1));
            o.insert("rate".into(), json!(rate));
            o.insert("units".into(), json!(m.rate_units));
            (Value::Object(o), rate)
        })
        .collect();
    let geometry = first.map(point).unwrap_or(Value::Null);
    let id = format!("measurement-{}-001", m.kind.replace('_', "-"));
    if rates.is_empty() {
        // One position (or all at one time): the reading itself, no rate.
        let value = values[0].1;
        let feature = tma_feature(
            &id,
            geometry,
            vec![
                ("measurement_type", json!(m.kind)),
                ("value", json!(value)),
                ("units", json!(m.value_units)),
                ("mode", json!("single_point")),
                ("time", json!(format_time(time))),
                ("source_tracks", json!([pid])),
            ],
        );
        return Ok(vec![Item::feature(
            feature,
            &format!("artifact/measurement/{}", m.kind),
            vec![pid],
            format!(
                "{} at {}: {} {} (single point, no rate)",
                m.title,
                short_time(time),
                py_num(round_to(value, 1)),
                m.label_units
            ),
        )]);
    }
    let mean = rates.iter().map(|r| r.1).sum::<f64>() / rates.len() as f64;
    let feature = tma_feature(
        &id,
        geometry,
        vec![
            ("measurement_type", json!(m.kind)),
            ("mode", json!("multi_point")),
            (
                "rates",
                Value::Array(rates.into_iter().map(|r| r.0).collect()),
            ),
            ("mean_rate", json!(mean)),
            ("units", json!(m.rate_units)),
            ("time", json!(format_time(time))),
            ("source_tracks", json!([pid])),
        ],
    );
    Ok(vec![Item::feature(
        feature,
        &format!("artifact/measurement/{}", m.kind),
        vec![pid],
        format!(
            "{} rate: mean {} {} over {} positions",
            m.title,
            py_num(round_to(mean, 4)),
            m.rate_units,
            values.len()
        ),
    )])
}

fn course_rate_calc(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    rate_calc(input, &COURSE)
}

fn speed_rate_calc(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    rate_calc(input, &SPEED)
}

// ---------------------------------------------------------------- rate-rates

/// Second derivative of `key` at each interior position (the spec's finite differences:
/// `(rate[i+1] - rate[i]) / dt[i]`), as `(time text, value)` pairs.
pub(crate) fn rate_rates(
    samples: &[(i64, f64, String)],
    angular: bool,
) -> Result<Vec<(String, f64)>, usize> {
    let mut rates = Vec::with_capacity(samples.len().saturating_sub(1));
    let mut dts = Vec::with_capacity(rates.capacity());
    for (i, w) in samples.windows(2).enumerate() {
        let dt = (w[1].0 - w[0].0) as f64 / 1000.0;
        if dt == 0.0 {
            return Err(i);
        }
        let delta = if angular {
            angle_diff(w[0].1, w[1].1)
        } else {
            w[1].1 - w[0].1
        };
        rates.push(delta / dt);
        dts.push(dt);
    }
    Ok(rates
        .windows(2)
        .enumerate()
        .map(|(i, r)| {
            (
                samples[i + 1].2.clone(),
                round_to((r[1] - r[0]) / dts[i], 6),
            )
        })
        .collect())
}

fn rate_rate_calc(
    input: &CalcInput,
    key: &str,
    kind: &str,
    unit: &str,
    title: &str,
) -> Result<Vec<Item>, ToolError> {
    if input.features.is_empty() {
        return Err(ToolError::invalid("Input features required"));
    }
    let track = input
        .features
        .iter()
        .find(|f| is_track(f))
        .ok_or_else(|| ToolError::invalid("No track feature found in input"))?;
    let pid = id(track);
    if positions_raw(track).len() < 4 {
        return Err(ToolError::invalid(
            "Track must have at least 4 positions for rate-rate calculation",
        )
        .affecting(vec![pid]));
    }
    let samples: Vec<(i64, f64, String)> = positions_raw(track)
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let text = raw_time(p).unwrap_or_default();
            let time = parse_time(text).ok_or_else(|| {
                ToolError::invalid(format!(
                    "Position {i} has no readable time (\"{text}\"); use ISO-8601"
                ))
                .affecting(vec![pid.clone()])
            })?;
            let v = raw_num(p, key).ok_or_else(|| {
                ToolError::invalid(format!("Position missing {key} value (position {i})"))
                    .affecting(vec![pid.clone()])
            })?;
            Ok((time, v, text.to_owned()))
        })
        .collect::<Result<_, ToolError>>()?;
    let values = rate_rates(&samples, key == "course").map_err(|i| {
        ToolError::invalid(format!(
            "Zero time interval between positions {i} and {}",
            i + 1
        ))
        .affecting(vec![pid.clone()])
    })?;
    let n = values.len();
    let feature = json!({
        "type": "Feature",
        "id": format!("measurement-{}-{pid}", kind.replace('_', "-")),
        "geometry": null,
        "properties": {
            "kind": "MEASUREMENT",
            "measurement_type": kind,
            "source_track_id": pid,
            "unit": unit,
            "values": values.into_iter().map(|(t, v)| json!({"time": t, "value": v})).collect::<Vec<_>>(),
        }
    });
    let name = prop_str(track, "platform_name")
        .map(str::to_owned)
        .unwrap_or_else(|| model::track_name(track));
    Ok(vec![Item::feature(
        feature,
        &format!("addition/measurement/{kind}"),
        vec![pid],
        format!("{title} for {name} ({n} values computed)"),
    )])
}

fn course_delta_rate_rate_calc(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    rate_rate_calc(
        input,
        "course",
        "course_delta_rate_rate",
        "deg/s^2",
        "Course delta rate rate",
    )
}

fn speed_rate_rate_calc(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    rate_rate_calc(
        input,
        "speed",
        "speed_rate_rate",
        "kn/s^2",
        "Speed rate rate",
    )
}

// ---------------------------------------------------------------- position range/bearing

/// The spec's earth radius for position-range-bearing, in nautical miles.
const EARTH_RADIUS_NM: f64 = 3440.065;

/// A track's times in ms: `properties.times` (epoch ms or ISO strings), else its positions'.
fn track_times(f: &Value) -> Vec<Option<i64>> {
    match model::prop(f, "times").and_then(Value::as_array) {
        Some(times) => times
            .iter()
            .map(|t| match t {
                Value::Number(n) => n.as_i64().or_else(|| n.as_f64().map(|x| x as i64)),
                Value::String(s) => parse_time(s),
                _ => None,
            })
            .collect(),
        None => positions_raw(f)
            .iter()
            .map(|p| raw_time(p).and_then(parse_time))
            .collect(),
    }
}

fn position_range_bearing(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    let (primary, secondary) = two(input, "Two track features required")?;
    let (pid, sid) = (id(primary), id(secondary));
    let (pc, pt) = (model::line_coords(primary), track_times(primary));
    let (sc, st) = (model::line_coords(secondary), track_times(secondary));
    if pc.is_empty() || pt.is_empty() {
        return Err(ToolError::invalid("Primary track has no positions").affecting(vec![pid]));
    }
    if sc.is_empty() || st.is_empty() {
        return Err(ToolError::invalid("Secondary track has no positions").affecting(vec![sid]));
    }
    let index = input
        .param("selected_position_index")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let Some(i) = usize::try_from(index).ok().filter(|&i| i < pc.len()) else {
        return Err(ToolError::invalid(format!(
            "Selected position index {index} out of range [0, {}]",
            pc.len() - 1
        ))
        .affecting(vec![pid]));
    };
    let selected = pc[i];
    let Some(selected_time) = pt.get(i).copied().flatten() else {
        return Err(ToolError::invalid(format!(
            "Position {i} of {pid} has no time; give the track a time per position"
        ))
        .affecting(vec![pid]));
    };
    // Closest in time; on a tie the earlier position.
    let best = st
        .iter()
        .take(sc.len())
        .enumerate()
        .filter_map(|(j, t)| t.map(|t| (j, t, (t - selected_time).abs())))
        .min_by_key(|&(j, _, d)| (d, j));
    let Some((j, matched_time, delta)) = best else {
        return Err(ToolError::invalid("Secondary track has no positions").affecting(vec![sid]));
    };
    let matched = sc[j];
    let range = round_to(
        gc_degrees(selected, matched).to_radians() * EARTH_RADIUS_NM,
        2,
    );
    let bearing = round_to(bearing_deg(selected, matched), 1) % 360.0;
    let data = json!({
        "range_nm": range,
        "bearing_deg": bearing,
        "selected_track": pid,
        "selected_position_index": i,
        "selected_time": selected_time,
        "selected_coordinates": selected,
        "matched_track": sid,
        "matched_position_index": j,
        "matched_time": matched_time,
        "matched_coordinates": matched,
        "time_delta_ms": delta,
    });
    let label = format!(
        "Range {} nm, bearing {bearing:05.1}° from {pid}/positions/{i} to {sid}/positions/{j}",
        py_num(range)
    );
    Ok(vec![Item::resource(
        format!("feature://measurement-position-range-bearing-{pid}-{i}"),
        "application/json",
        Body::Json(data),
        "artifact/measurement/position_range_bearing",
        vec![pid, sid],
        label,
    )])
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A tote-style track: `(minute, lon, lat, course, speed)` after 2024-01-15T10:00Z.
    fn trk(id: &str, fixes: &[(i64, f64, f64, f64, f64)]) -> Value {
        let positions: Vec<Value> = fixes
            .iter()
            .map(|&(m, lon, lat, c, s)| {
                json!({"time": format_time(parse_time("2024-01-15T10:00:00Z").unwrap() + m * 60_000),
                    "coordinates": [lon, lat], "course": c, "speed": s, "depth": 5.0})
            })
            .collect();
        let coords: Vec<[f64; 2]> = fixes.iter().map(|f| [f.1, f.2]).collect();
        json!({"type": "Feature", "id": id, "geometry": {"type": "LineString", "coordinates": coords},
            "properties": {"debrief:kind": "track", "debrief:platform_name": id, "debrief:positions": positions}})
    }

    fn params(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    /// This category's tool with this id.
    fn entry(id: &str) -> &'static Entry {
        TOOLS.iter().find(|e| e.id == id).unwrap()
    }

    fn run(id: &str, features: &[Value], p: Value) -> Result<Vec<Item>, ToolError> {
        (entry(id).run)(&CalcInput::new(features, &params(p)))
    }

    fn props(items: &[Item]) -> Map<String, Value> {
        match &items[0].body {
            Body::Feature(f) => f["properties"].as_object().cloned().unwrap(),
            Body::Json(v) => v.as_object().cloned().unwrap(),
            Body::Text(_) => panic!("text"),
        }
    }

    #[test]
    fn labels_write_numbers_as_debriefs_reference_does() {
        assert_eq!(py_num(12.0), "12.0");
        assert_eq!(py_num(-12.3), "-12.3");
        assert_eq!(py_num(7.8641), "7.8641");
        assert_eq!(py_num(0.0), "0.0");
        assert_eq!(
            short_time(parse_time("2024-01-15T10:35:00Z").unwrap()),
            "T10:35"
        );
    }

    #[test]
    fn one_track_tools_report_empty_wrong_kind_and_missing_data() {
        let narrative = json!({"type": "Feature", "id": "n1", "geometry": null, "properties": {"kind": "NARRATIVE"}});
        for id in [
            "course-calc",
            "speed-calc",
            "depth-calc",
            "time-calc",
            "course-delta-average-calc",
            "speed-delta-average-calc",
            "calculate-track-length",
        ] {
            assert_eq!(
                run(id, &[], json!({})).unwrap_err().message,
                "Input features required",
                "{id}"
            );
            let err = run(id, std::slice::from_ref(&narrative), json!({})).unwrap_err();
            assert_eq!(err.message, "Feature must be a track", "{id}");
            assert_eq!(err.affected, ["n1"], "{id}");
        }
        // NaN / missing course and speed: the spec's errors; depth reads 0
        let mut t = trk(
            "t",
            &[(0, 0.0, 50.0, 10.0, 5.0), (5, 0.01, 50.0, 10.0, 5.0)],
        );
        for p in t["properties"]["debrief:positions"].as_array_mut().unwrap() {
            p["course"] = Value::Null;
            p["speed"] = json!("fast");
            p["depth"] = Value::Null;
        }
        let f = [t];
        assert_eq!(
            run("course-calc", &f, json!({})).unwrap_err().message,
            "No course data available at specified time"
        );
        assert_eq!(
            run("speed-calc", &f, json!({})).unwrap_err().message,
            "No speed data available at specified time"
        );
        assert_eq!(
            props(&run("depth-calc", &f, json!({})).unwrap())["debrief:value"],
            0.0
        );
        assert_eq!(
            run("course-delta-average-calc", &f, json!({}))
                .unwrap_err()
                .message,
            "No valid course data for delta calculation"
        );
        // outside the track's span
        let f = [trk(
            "t",
            &[(0, 0.0, 50.0, 10.0, 5.0), (5, 0.01, 50.0, 10.0, 5.0)],
        )];
        let err = run("speed-calc", &f, json!({"time": "2024-01-15T11:00:00Z"})).unwrap_err();
        assert_eq!(err.message, NO_POSITION);
        let err = run("speed-calc", &f, json!({"time": "half past ten"})).unwrap_err();
        assert!(err.message.contains("half past ten"), "{}", err.message);
    }

    #[test]
    fn course_is_interpolated_the_short_way_and_normalised() {
        let f = [trk(
            "t",
            &[(0, 0.0, 50.0, 350.0, 4.0), (10, 0.01, 50.0, 30.0, 8.0)],
        )];
        let p = props(&run("course-calc", &f, json!({"time": "2024-01-15T10:05:00Z"})).unwrap());
        assert!(
            (p["debrief:value"].as_f64().unwrap() - 10.0).abs() < 1e-9,
            "{p:?}"
        );
        let p = props(&run("speed-calc", &f, json!({"time": "2024-01-15T10:05:00Z"})).unwrap());
        assert_eq!(p["debrief:value"], 6.0);
    }

    #[test]
    fn time_formats() {
        let f = [trk(
            "t",
            &[(0, 0.0, 50.0, 0.0, 4.0), (10, 0.01, 50.0, 0.0, 4.0)],
        )];
        let at = |fmt: &str| {
            props(
                &run(
                    "time-calc",
                    &f,
                    json!({"time": "2024-01-15T10:05:00Z", "format": fmt}),
                )
                .unwrap(),
            )["debrief:value"]
                .clone()
        };
        assert_eq!(at("ISO8601"), "2024-01-15T10:05:00Z");
        assert_eq!(at("HHmmss"), "10:05:00");
        assert_eq!(at("ddHHmmss"), "15 10:05:00");
    }

    #[test]
    fn two_track_tools_need_two() {
        let one = [trk("a", &[(0, 0.0, 50.0, 0.0, 4.0)])];
        for (id, msg) in [
            (
                "range-calc",
                "Two track features required for range calculation",
            ),
            (
                "swt-range-calc",
                "Two track features required for range calculation",
            ),
            (
                "bearing-calc",
                "Two track features required for bearing calculation",
            ),
            (
                "doppler-calc",
                "Two track features required for Doppler calculation",
            ),
            (
                "delta-rate-calc",
                "Two track features required for delta rate calculation",
            ),
            ("rel-bearing-calc", NEED_TWO),
            ("atb-calc", NEED_TWO),
            ("bearing-rate-calc", NEED_TWO),
            ("position-range-bearing", "Two track features required"),
        ] {
            let p = if id == "position-range-bearing" {
                json!({"selected_position_index": 0})
            } else {
                json!({})
            };
            assert_eq!(run(id, &one, p).unwrap_err().message, msg, "{id}");
            let spec = TOOLS.iter().find(|e| e.id == id).unwrap().spec();
            assert_eq!(
                spec.annotations["debrief:selectionRequirements"],
                json!([{"kind": "TRACK", "min": 2}]),
                "{id} says it needs two tracks"
            );
        }
    }

    #[test]
    fn closing_tracks_have_a_negative_range_rate() {
        let a = trk(
            "a",
            &[(0, 0.0, 50.0, 0.0, 10.0), (5, 0.0, 50.02, 0.0, 10.0)],
        );
        let b = trk(
            "b",
            &[(0, 0.0, 50.2, 180.0, 10.0), (5, 0.0, 50.18, 180.0, 10.0)],
        );
        let p = props(
            &run(
                "delta-rate-calc",
                &[a.clone(), b.clone()],
                json!({"units": "kts"}),
            )
            .unwrap(),
        );
        // each moves 0.02 degrees (1.2 nm) towards the other in 5 minutes: closing at 28.8 kts
        let closing = 2.0 * 1.2 / (5.0 / 60.0);
        let got = p["debrief:value"].as_f64().unwrap();
        assert!((got + closing).abs() < 0.05, "{p:?}");
        let err = run(
            "delta-rate-calc",
            &[a, b],
            json!({"time": "2024-01-15T10:05:00Z"}),
        )
        .unwrap_err();
        assert_eq!(
            err.message,
            "Insufficient positions to calculate rate of change"
        );
    }

    #[test]
    fn bearings_in_uk_and_us_form() {
        // ownship heading north, target due west: relative bearing -90 (UK) / 270 (US)
        let own = trk("own", &[(0, 0.0, 0.0, 0.0, 10.0)]);
        let tgt = trk("tgt", &[(0, -0.1, 0.0, 90.0, 10.0)]);
        let f = [own.clone(), tgt.clone()];
        let uk = props(&run("rel-bearing-calc", &f, json!({})).unwrap());
        assert!(
            (uk["value"].as_f64().unwrap() + 90.0).abs() < 1e-6,
            "{uk:?}"
        );
        let us = props(&run("rel-bearing-calc", &f, json!({"format": "US"})).unwrap());
        assert!(
            (us["value"].as_f64().unwrap() - 270.0).abs() < 1e-6,
            "{us:?}"
        );
        // the target heads straight at ownship: angle to bow 0
        let atb = props(&run("atb-calc", &f, json!({})).unwrap());
        assert!(atb["value"].as_f64().unwrap().abs() < 1e-6, "{atb:?}");
        let err = run("rel-bearing-calc", &[own.clone(), own], json!({})).unwrap_err();
        assert_eq!(
            err.category,
            toolgate_tool_catalogue::ErrorCategory::AlgorithmFailure
        );
        let narrative = json!({"type": "Feature", "id": "n", "properties": {"kind": "NARRATIVE"}});
        let err = run("atb-calc", &[tgt, narrative], json!({})).unwrap_err();
        assert_eq!(err.message, "Both features must be track features");
    }

    #[test]
    fn a_target_crossing_left_to_right_draws_right() {
        // ownship stopped; target 5 nm north heading east
        let f = [
            trk("own", &[(0, 0.0, 0.0, 0.0, 0.0)]),
            trk("tgt", &[(0, 0.0, 5.0 / 60.0, 90.0, 10.0)]),
        ];
        let p = props(&run("bearing-rate-calc", &f, json!({})).unwrap());
        assert_eq!(p["direction"], "Right");
        // 10 kts across at 5 nm: 2 rad/h = 1.91 deg/min by the legacy 6080/PI formula
        let expected = 6080.0 / PI * 10.0 / (5.0 * 2025.37);
        assert!(
            (p["value"].as_f64().unwrap() - expected).abs() < 1e-6,
            "{p:?}"
        );
    }

    #[test]
    fn course_rates_unwrap_through_north() {
        let f = [trk(
            "t",
            &[
                (0, 0.0, 50.0, 350.0, 5.0),
                (1, 0.0, 50.01, 10.0, 5.0),
                (2, 0.0, 50.02, 30.0, 5.0),
            ],
        )];
        let p = props(&run("course-rate-calc", &f, json!({})).unwrap());
        let rates: Vec<f64> = p["rates"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["rate"].as_f64().unwrap())
            .collect();
        assert_eq!(rates, [20.0 / 60.0, 20.0 / 60.0]);
        // all at one time: single point
        let f = [trk(
            "t",
            &[(0, 0.0, 50.0, 350.0, 5.0), (0, 0.0, 50.01, 10.0, 5.0)],
        )];
        assert_eq!(
            props(&run("speed-rate-calc", &f, json!({})).unwrap())["mode"],
            "single_point"
        );
        let mut neg = trk("t", &[(0, 0.0, 50.0, 0.0, 5.0), (1, 0.0, 50.01, 0.0, -1.0)]);
        neg["id"] = json!("neg");
        let err = run("speed-rate-calc", &[neg], json!({})).unwrap_err();
        assert!(
            err.message.starts_with("Speed cannot be negative"),
            "{}",
            err.message
        );
    }

    #[test]
    fn rate_rates_need_four_positions_and_distinct_times() {
        let three = [trk(
            "t",
            &[
                (0, 0.0, 50.0, 0.0, 5.0),
                (1, 0.0, 50.0, 0.0, 5.0),
                (2, 0.0, 50.0, 0.0, 5.0),
            ],
        )];
        let err = run("speed-rate-rate-calc", &three, json!({})).unwrap_err();
        assert_eq!(
            err.message,
            "Track must have at least 4 positions for rate-rate calculation"
        );
        let dup = [trk(
            "t",
            &[
                (0, 0.0, 50.0, 0.0, 5.0),
                (1, 0.0, 50.0, 0.0, 5.0),
                (1, 0.0, 50.0, 0.0, 5.0),
                (2, 0.0, 50.0, 0.0, 5.0),
            ],
        )];
        let err = run("course-delta-rate-rate-calc", &dup, json!({})).unwrap_err();
        assert_eq!(err.message, "Zero time interval between positions 1 and 2");
        let narrative = json!({"type": "Feature", "id": "n", "properties": {"kind": "NARRATIVE"}});
        assert_eq!(
            run("speed-rate-rate-calc", &[narrative], json!({}))
                .unwrap_err()
                .message,
            "No track feature found in input"
        );
    }

    #[test]
    fn position_range_bearing_matches_the_closest_time_earlier_on_a_tie() {
        let a = json!({"type": "Feature", "id": "a", "geometry": {"type": "LineString", "coordinates": [[0.0, 0.0], [0.0, 0.1]]},
            "properties": {"kind": "TRACK", "times": [1000, 2000]}});
        let b = json!({"type": "Feature", "id": "b", "geometry": {"type": "LineString", "coordinates": [[0.1, 0.0], [0.2, 0.0], [0.3, 0.0]]},
            "properties": {"kind": "TRACK", "times": [500, 1500, 2500]}});
        let f = [a, b];
        let p = props(
            &run(
                "position-range-bearing",
                &f,
                json!({"selected_position_index": 0}),
            )
            .unwrap(),
        );
        assert_eq!(
            p["matched_position_index"], 0,
            "500 and 1500 are both 500 ms from 1000"
        );
        assert_eq!(p["bearing_deg"], 90.0);
        let err = run(
            "position-range-bearing",
            &f,
            json!({"selected_position_index": -1}),
        )
        .unwrap_err();
        assert_eq!(
            err.message,
            "Selected position index -1 out of range [0, 1]"
        );
        let err = run(
            "position-range-bearing",
            &f,
            json!({"selected_position_index": 2}),
        )
        .unwrap_err();
        assert_eq!(err.message, "Selected position index 2 out of range [0, 1]");
    }

    #[test]
    fn track_length_skips_hidden_positions() {
        let mut t = trk(
            "t",
            &[
                (0, 0.0, 0.0, 0.0, 5.0),
                (1, 0.0, 1.0, 0.0, 5.0),
                (2, 0.0, 2.0, 0.0, 5.0),
            ],
        );
        let f = [t.clone()];
        assert_eq!(
            props(&run("calculate-track-length", &f, json!({})).unwrap())["debrief:value"],
            120.0
        );
        t["properties"]["debrief:positions"][2]["visible"] = json!(false);
        let f = [t.clone()];
        let p = props(&run("calculate-track-length", &f, json!({"units": "km"})).unwrap());
        assert_eq!(p["debrief:value"], 111.12);
        assert_eq!(p["debrief:num_visible_positions"], 2);
        t["properties"]["debrief:positions"][1]["visible"] = json!(false);
        let err = run("calculate-track-length", &[t], json!({})).unwrap_err();
        assert_eq!(err.message, "At least two visible positions required");
    }

    #[test]
    fn doppler_checks_its_constants() {
        let f = [
            trk("a", &[(0, 0.0, 0.0, 0.0, 5.0)]),
            trk("b", &[(0, 0.0, 0.1, 0.0, 5.0)]),
        ];
        let err = run("doppler-calc", &f, json!({"fNought": 0.0})).unwrap_err();
        assert!(err.message.starts_with("Base frequency must be positive"));
        let err = run("doppler-calc", &f, json!({"speedOfSound": -1.0})).unwrap_err();
        assert!(err.message.starts_with("Speed of sound must be positive"));
        // both heading north at 5 kts, the source ahead: no closing speed, no shift
        assert_eq!(
            props(&run("doppler-calc", &f, json!({})).unwrap())["debrief:value"],
            150.0
        );
    }

    proptest! {
        #[test]
        fn uk_and_us_forms_are_the_same_angle(a in -1000.0f64..1000.0) {
            let (uk, us) = (in_format(a, "UK"), in_format(a, "US"));
            prop_assert!(uk > -180.0 && uk <= 180.0);
            prop_assert!((0.0..360.0).contains(&us));
            prop_assert!(angle_diff(uk, us).abs() < 1e-9);
            prop_assert!(angle_diff(a, us).abs() < 1e-9);
        }

        #[test]
        fn stationary_platforms_hear_the_radiated_frequency(f0 in 1.0f64..1000.0, brg in 0.0f64..std::f64::consts::TAU, c1 in 0.0f64..std::f64::consts::TAU, c2 in 0.0f64..std::f64::consts::TAU) {
            prop_assert!((predicted_freq(f0, 3032.0, (0.0, c1), (0.0, c2), brg) - f0).abs() < 1e-9);
        }

        #[test]
        fn steady_change_has_no_second_derivative(start in -50.0f64..400.0, step in -20.0f64..20.0, n in 4usize..12, dt in 1i64..600) {
            let samples: Vec<(i64, f64, String)> = (0..n)
                .map(|i| (i as i64 * dt * 1000, (start + step * i as f64).rem_euclid(360.0), String::new()))
                .collect();
            for angular in [true, false] {
                if !angular && (start + step * n as f64) >= 360.0 {
                    continue; // a wrapped speed series is not steady
                }
                let rr = rate_rates(&samples, angular).unwrap();
                prop_assert_eq!(rr.len(), n - 2);
                if angular || samples.windows(2).all(|w| (w[1].1 - w[0].1 - step).abs() < 1e-9) {
                    prop_assert!(rr.iter().all(|(_, v)| v.abs() < 1e-6), "{:?}", rr);
                }
            }
        }

        #[test]
        fn bearing_rate_reverses_with_the_target_motion(brg in 0.0f64..std::f64::consts::TAU, r in 100.0f64..50000.0, c in 0.0f64..std::f64::consts::TAU, s in 0.0f64..30.0) {
            let fwd = bearing_rate(brg, r, (0.0, 0.0), (c, s));
            let back = bearing_rate(brg, r, (0.0, 0.0), (c + PI, s));
            prop_assert!((fwd + back).abs() < 1e-9);
        }
    }
}
