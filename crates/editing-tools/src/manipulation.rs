//! `track/manipulation`: trimming, resampling, merging, grouping, splitting, converting and
//! repairing tracks. Every tool clones the features it changes (the input is never touched) and
//! keeps the property naming the feature already uses (`positions` or `debrief:positions`).

use serde_json::{Map, Value, json};

use toolgate_tool_catalogue::common::multi;
use toolgate_tool_catalogue::model::{
    self, bearing_deg, fix_at, fixes, format_time, id_of, ids_of, is_kind, is_track, key_for,
    line_coords, parse_time, positions_raw, prop, prop_str, range_nm, round_to, track_name,
};
use toolgate_tool_catalogue::{CalcInput, Entry, Item, ToolError};

const TRACK: &[&str] = &["TRACK"];
const NO_TRACKS: &str = "No track features found in input";
const INPUT_REQUIRED: &str = "Input features required";
/// Mean earth radius in nautical miles of the courses-and-speeds spec's haversine.
const EARTH_RADIUS_NM: f64 = 3440.065;
/// The most positions one resampling may produce.
const MAX_INTERPOLATED: i64 = 100_000;

fn tracks() -> Value {
    multi(TRACK)
}

fn lightweight() -> Value {
    multi(&["LIGHTWEIGHT_TRACK"])
}

fn segments() -> Value {
    multi(&["TRACK_SEGMENT"])
}

fn tma() -> Value {
    multi(&["TMA_SEGMENT", "TRACK"])
}

fn no_params() -> Value {
    json!({})
}

pub(crate) const TOOLS: &[Entry] = &[
    Entry {
        id: "trim-track",
        spec_category: "track/manipulation",
        spec_version: "1.0",
        description: "Trim one or more TRACK features to a time window, permanently removing positions before start_time or after end_time (both inclusive ISO-8601 times).",
        output_kind: "mutation/track/trimmed",
        requirements: tracks,
        params: trim_params,
        required: &["start_time", "end_time"],
        run: trim_track,
    },
    Entry {
        id: "generate-courses-speeds",
        spec_category: "track/manipulation",
        spec_version: "1.0",
        description: "Recompute every position's course (great-circle bearing, degrees true) and speed (knots) of one or more TRACK features from consecutive positions and times, overwriting recorded values.",
        output_kind: "mutation/track/courses_speeds",
        requirements: tracks,
        params: no_params,
        required: &[],
        run: generate_courses_speeds,
    },
    Entry {
        id: "set-time-zero",
        spec_category: "track/manipulation",
        spec_version: "1.0",
        description: "Set a reference time (time zero) on one or more TRACK features and give every position its offset from it in seconds (relative_time_seconds; negative before time zero).",
        output_kind: "mutation/track/time_referenced",
        requirements: tracks,
        params: time_zero_params,
        required: &["time_zero"],
        run: set_time_zero,
    },
    Entry {
        id: "interpolate-track",
        spec_category: "track/manipulation",
        spec_version: "1.0",
        description: "Resample one TRACK at a regular interval in seconds from its first to its last time, replacing its positions with linearly interpolated ones (position, course, speed); original fixes that fall on the interval are kept as they are.",
        output_kind: "mutation/track/interpolated",
        requirements: tracks,
        params: interpolate_params,
        required: &["interval_seconds"],
        run: interpolate_track,
    },
    Entry {
        id: "merge-tracks",
        spec_category: "track/manipulation",
        spec_version: "1.0",
        description: "Merge two or more TRACK features into one track with all positions in time order (duplicate times kept once): standard adds a new track, in_place rewrites the first track, convert_tma rewrites the TMA track as a SURFACE track.",
        output_kind: "addition/track/merged",
        requirements: tracks,
        params: merge_params,
        required: &[],
        run: merge_tracks,
    },
    Entry {
        id: "group-tracks",
        spec_category: "track/manipulation",
        spec_version: "1.0",
        description: "Group two or more TRACK features whose times do not overlap into the earliest one, each source becoming a segment of it.",
        output_kind: "mutation/track/grouped",
        requirements: tracks,
        params: no_params,
        required: &[],
        run: group_tracks,
    },
    Entry {
        id: "group-lightweight-tracks",
        spec_category: "track/manipulation",
        spec_version: "1.0",
        description: "Group two or more LIGHTWEIGHT_TRACK features into the earliest one, appending the others' positions and coordinates.",
        output_kind: "mutation/track/grouped",
        requirements: lightweight,
        params: no_params,
        required: &[],
        run: group_lightweight_tracks,
    },
    Entry {
        id: "convert-lightweight-to-track",
        spec_category: "track/manipulation",
        spec_version: "1.0",
        description: "Convert LIGHTWEIGHT_TRACK features into full TRACK features (SURFACE type, full track styling in the lightweight track's colour, gold when it has none).",
        output_kind: "mutation/track/converted",
        requirements: lightweight,
        params: no_params,
        required: &[],
        run: convert_lightweight_to_track,
    },
    Entry {
        id: "convert-track-to-lightweight",
        spec_category: "track/manipulation",
        spec_version: "1.0",
        description: "Convert TRACK features into LIGHTWEIGHT_TRACK features: positions keep only time, coordinates, course and speed; platform_id, track_type, sensors and point styling are dropped.",
        output_kind: "mutation/track/converted",
        requirements: tracks,
        params: no_params,
        required: &[],
        run: convert_track_to_lightweight,
    },
    Entry {
        id: "split-tracks-into-legs",
        spec_category: "track/manipulation",
        spec_version: "1.0",
        description: "Split one TRACK into TRACK_SEGMENT legs wherever consecutive positions are more than max_gap_seconds apart; adds one segment per leg (<track id>-leg-<n>).",
        output_kind: "addition/track/split_legs",
        requirements: tracks,
        params: split_params,
        required: &["max_gap_seconds"],
        run: split_tracks_into_legs,
    },
    Entry {
        id: "remove-track-jumps",
        spec_category: "track/manipulation",
        spec_version: "1.0",
        description: "Find positions of one TRACK where the speed jumps above speed_threshold_multiplier times the previous leg's speed and pull them back onto the track extrapolated from before the jump, fading the correction out by the time the track is back on course.",
        output_kind: "mutation/track/smoothed",
        requirements: tracks,
        params: jump_params,
        required: &[],
        run: remove_track_jumps,
    },
    Entry {
        id: "smooth-track-jumps",
        spec_category: "track/manipulation",
        spec_version: "1.0",
        description: "Replace positions of one TRACK_SEGMENT that imply more than speed_threshold_multiplier times its nominal_speed_kn with positions interpolated in time between the nearest good fixes either side, flagging them smoothed.",
        output_kind: "mutation/track/smoothed",
        requirements: segments,
        params: jump_params,
        required: &[],
        run: smooth_track_jumps,
    },
    Entry {
        id: "convert-absolute-tma-to-relative",
        spec_category: "track/manipulation",
        spec_version: "1.0",
        description: "Convert an ABSOLUTE TMA_SEGMENT into a RELATIVE one referenced to the ownship TRACK (is_ownship true): every position gains its bearing (degrees true) and range (nm) from ownship at that time.",
        output_kind: "mutation/track/tma_converted",
        requirements: tma,
        params: no_params,
        required: &[],
        run: convert_absolute_tma_to_relative,
    },
];

fn trim_params() -> Value {
    json!({
        "start_time": {"type": "string", "format": "date-time", "description": "Start of the window to keep (inclusive), ISO-8601 with offset, e.g. 1995-12-12T06:00:00Z."},
        "end_time": {"type": "string", "format": "date-time", "description": "End of the window to keep (inclusive), ISO-8601 with offset, e.g. 1995-12-12T08:30:00Z."},
    })
}

fn time_zero_params() -> Value {
    json!({
        "time_zero": {"type": "string", "format": "date-time", "description": "The reference time, ISO-8601 with offset, e.g. 2024-01-15T10:00:00Z."},
    })
}

fn interpolate_params() -> Value {
    json!({
        "interval_seconds": {"type": "integer", "description": "Seconds between resampled positions (a positive whole number, e.g. 60, 300, 600)."},
    })
}

fn merge_params() -> Value {
    json!({
        "merge_mode": {"type": "string", "enum": ["standard", "in_place", "convert_tma"], "default": "standard", "description": "standard: add a new merged track; in_place: rewrite the first track; convert_tma: rewrite the TMA track (or the first) as a SURFACE track."},
    })
}

fn split_params() -> Value {
    json!({
        "max_gap_seconds": {"type": "number", "description": "Longest time gap in seconds allowed inside one leg; a longer gap starts a new leg (e.g. 3600)."},
    })
}

fn jump_params() -> Value {
    json!({
        "speed_threshold_multiplier": {"type": "number", "default": 3.0, "description": "How many times the reference speed a position must imply to count as a jump (default 3)."},
    })
}

// ---------------------------------------------------------------------------------------------
// Shared plumbing

fn props_mut(f: &mut Value) -> Result<&mut Map<String, Value>, ToolError> {
    f.get_mut("properties")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| ToolError::invalid("Feature has no properties object"))
}

/// Set a property in the naming the feature already uses.
fn set_prop(f: &mut Value, key: &str, value: Value) -> Result<(), ToolError> {
    let k = key_for(f, key);
    props_mut(f)?.insert(k, value);
    Ok(())
}

/// Remove a property in either naming.
fn remove_prop(f: &mut Value, key: &str) -> Result<(), ToolError> {
    let p = props_mut(f)?;
    p.remove(key);
    p.remove(&format!("debrief:{key}"));
    Ok(())
}

/// Replace the geometry with a LineString of these coordinates.
fn set_line(f: &mut Value, coords: &[[f64; 2]]) {
    if let Some(o) = f.as_object_mut() {
        o.insert(
            "geometry".into(),
            json!({"type": "LineString", "coordinates": coords}),
        );
    }
}

fn id_or_empty(f: &Value) -> String {
    id_of(f).unwrap_or_default()
}

/// Position `i`'s time in epoch ms.
fn pos_time(p: &Value) -> Option<i64> {
    p.get("time").and_then(Value::as_str).and_then(parse_time)
}

fn coord_of(v: &Value) -> Option<[f64; 2]> {
    let a = v.as_array()?;
    let c = [a.first()?.as_f64()?, a.get(1)?.as_f64()?];
    (c[0].is_finite() && c[1].is_finite()).then_some(c)
}

/// One position with its time and location resolved (own coordinates, else the geometry's).
#[derive(Debug, Clone)]
struct Pos {
    raw: Value,
    time: i64,
    coord: [f64; 2],
}

/// The geometry's vertices by index (`None` where a vertex is unreadable), so that position `i`
/// pairs with vertex `i` even when an earlier vertex is bad.
fn vertices(f: &Value) -> Vec<Option<[f64; 2]>> {
    let Some(g) = f.get("geometry") else {
        return Vec::new();
    };
    let coords = g.get("coordinates").and_then(Value::as_array);
    match g.get("type").and_then(Value::as_str) {
        Some("LineString") | Some("MultiPoint") => coords
            .map(|a| a.iter().map(coord_of).collect())
            .unwrap_or_default(),
        Some("MultiLineString") => coords
            .map(|lines| {
                lines
                    .iter()
                    .filter_map(Value::as_array)
                    .flat_map(|l| l.iter().map(coord_of))
                    .collect()
            })
            .unwrap_or_default(),
        Some("Point") => vec![g.get("coordinates").and_then(coord_of)],
        _ => Vec::new(),
    }
}

/// Every position of a track, resolved; an unreadable time or location is an error naming it.
fn resolved(f: &Value) -> Result<Vec<Pos>, ToolError> {
    let line = vertices(f);
    let id = id_or_empty(f);
    positions_raw(f)
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let time = pos_time(p).ok_or_else(|| {
                ToolError::invalid(format!(
                    "Track {id}: position {i} has no readable ISO-8601 time (e.g. 2024-01-15T10:00:00Z)"
                ))
                .affecting(vec![id.clone()])
            })?;
            let coord = p
                .get("coordinates")
                .and_then(coord_of)
                .or_else(|| line.get(i).copied().flatten())
                .ok_or_else(|| {
                    ToolError::invalid(format!(
                        "Track {id}: position {i} has no coordinates (in the position or the geometry)"
                    ))
                    .affecting(vec![id.clone()])
                })?;
            Ok(Pos {
                raw: p.clone(),
                time,
                coord,
            })
        })
        .collect()
}

/// Write positions back: `positions` (either naming) and a LineString of their coordinates.
fn write_positions(f: &mut Value, positions: &[Pos]) -> Result<(), ToolError> {
    let coords: Vec<[f64; 2]> = positions.iter().map(|p| p.coord).collect();
    set_line(f, &coords);
    set_prop(
        f,
        "positions",
        Value::Array(positions.iter().map(|p| p.raw.clone()).collect()),
    )
}

fn time_param(input: &CalcInput, name: &str) -> Result<Option<(i64, String)>, ToolError> {
    match input.str_param(name) {
        None => Ok(None),
        Some(t) => parse_time(t).map(|ms| Some((ms, t.to_owned()))).ok_or_else(|| {
            ToolError::invalid(format!(
                "Parameter \"{name}\" must be an ISO-8601 date-time such as 2024-01-15T10:00:00Z; got \"{t}\""
            ))
        }),
    }
}

fn threshold(input: &CalcInput) -> Result<f64, ToolError> {
    let k = input.f64_param("speed_threshold_multiplier").unwrap_or(3.0);
    if k.is_nan() || k < 0.0 {
        return Err(ToolError::invalid(format!(
            "speed_threshold_multiplier must be positive (e.g. 3.0); got {k}"
        )));
    }
    Ok(k)
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Haversine distance in nautical miles on the courses-and-speeds spec's 3440.065 nm sphere.
fn haversine_nm(a: [f64; 2], b: [f64; 2]) -> f64 {
    let (lat1, lat2) = (a[1].to_radians(), b[1].to_radians());
    let dlat = lat2 - lat1;
    let dlon = (b[0] - a[0]).to_radians();
    let h = (dlat / 2.0).sin().powi(2) + lat1.cos() * lat2.cos() * (dlon / 2.0).sin().powi(2);
    2.0 * h.sqrt().min(1.0).asin() * EARTH_RADIUS_NM
}

/// Speed in knots between two positions (60 nm per degree); 0 when no time passes.
fn speed_kn(a: &Pos, b: &Pos) -> f64 {
    let hours = (b.time - a.time) as f64 / 3_600_000.0;
    if hours <= 0.0 {
        0.0
    } else {
        range_nm(a.coord, b.coord) / hours
    }
}

// ---------------------------------------------------------------------------------------------
// trim-track

fn trim_track(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    if input.features.is_empty() {
        return Err(ToolError::invalid(NO_TRACKS));
    }
    let (Some((start, start_text)), Some((end, end_text))) = (
        time_param(input, "start_time")?,
        time_param(input, "end_time")?,
    ) else {
        return Err(ToolError::invalid(
            "start_time and end_time are required (ISO-8601, e.g. 2024-01-15T10:00:00Z)",
        ));
    };
    if start >= end {
        return Err(ToolError::invalid(format!(
            "start_time must be before end_time (got {start_text} - {end_text})"
        )));
    }
    let mut items = Vec::new();
    let mut outside = Vec::new();
    for f in input.features.iter().filter(|f| is_track(f)) {
        let id = id_or_empty(f);
        let positions = positions_raw(f);
        if positions.is_empty() {
            continue;
        }
        let mut keep = Vec::with_capacity(positions.len());
        for (i, p) in positions.iter().enumerate() {
            let t = pos_time(p).ok_or_else(|| {
                ToolError::invalid(format!(
                    "Cannot trim track {id}: position {i} has no readable ISO-8601 time"
                ))
                .affecting(vec![id.clone()])
            })?;
            keep.push(t >= start && t <= end);
        }
        let retained = keep.iter().filter(|k| **k).count();
        if retained == 0 {
            outside.push(id);
            continue;
        }
        let removed = positions.len() - retained;
        let feature = trimmed(f, &keep)?;
        items.push(Item::feature(
            feature,
            "mutation/track/trimmed",
            vec![id.clone()],
            format!(
                "Trimmed {id} to {start_text} - {end_text} ({retained} positions retained, {removed} removed)"
            ),
        ));
    }
    if items.is_empty() {
        if outside.is_empty() {
            return Err(ToolError::invalid(NO_TRACKS));
        }
        return Err(ToolError::invalid(format!(
            "No positions of {} lie within {start_text} - {end_text}; choose a window that overlaps the track",
            outside.join(", ")
        ))
        .affecting(outside));
    }
    Ok(items)
}

fn retain<T: Clone>(items: &[T], keep: &[bool]) -> Vec<T> {
    items
        .iter()
        .zip(keep)
        .filter(|(_, k)| **k)
        .map(|(v, _)| v.clone())
        .collect()
}

/// The track with only the kept positions: a LineString keeps the kept vertices, a
/// MultiLineString keeps them line by line (dropping emptied lines), per-position style
/// overrides and the bbox follow, start/end times become the kept positions' times.
fn trimmed(f: &Value, keep: &[bool]) -> Result<Value, ToolError> {
    let mut feature = f.clone();
    let line = line_coords(f);
    if let Some(g) = feature.get_mut("geometry").and_then(Value::as_object_mut) {
        match g.get("type").and_then(Value::as_str) {
            Some("LineString") => {
                if let Some(Value::Array(pts)) = g.get("coordinates") {
                    let kept = retain(pts, keep);
                    g.insert("coordinates".into(), Value::Array(kept));
                }
            }
            Some("MultiLineString") => {
                if let Some(Value::Array(lines)) = g.get("coordinates") {
                    let mut offset = 0;
                    let mut kept_lines = Vec::with_capacity(lines.len());
                    for l in lines {
                        let pts = l.as_array().map_or(&[][..], Vec::as_slice);
                        let slice = keep.get(offset..offset + pts.len()).unwrap_or(&[]);
                        offset += pts.len();
                        let kept = retain(pts, slice);
                        if !kept.is_empty() {
                            kept_lines.push(Value::Array(kept));
                        }
                    }
                    g.insert("coordinates".into(), Value::Array(kept_lines));
                }
            }
            _ => {}
        }
    }
    if feature.get("bbox").is_some_and(Value::is_array) {
        let kept: Vec<[f64; 2]> = retain(&line, keep);
        if let Some(b) = toolgate_tool_catalogue::common::bbox(&kept)
            && let Some(o) = feature.as_object_mut()
        {
            o.insert("bbox".into(), json!(b));
        }
    }
    let kept_positions = retain(positions_raw(f), keep);
    let first = kept_positions.first().and_then(|p| p.get("time")).cloned();
    let last = kept_positions.last().and_then(|p| p.get("time")).cloned();
    {
        let props = props_mut(&mut feature)?;
        if let Some(Value::Array(o)) = props.get("position_style_overrides")
            && o.len() == keep.len()
        {
            let kept = retain(o, keep);
            props.insert("position_style_overrides".into(), Value::Array(kept));
        }
    }
    set_prop(&mut feature, "positions", Value::Array(kept_positions))?;
    if let Some(t) = first {
        set_prop(&mut feature, "start_time", t)?;
    }
    if let Some(t) = last {
        set_prop(&mut feature, "end_time", t)?;
    }
    Ok(feature)
}

// ---------------------------------------------------------------------------------------------
// generate-courses-speeds

fn generate_courses_speeds(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    let tracks: Vec<&Value> = input.features.iter().filter(|f| is_track(f)).collect();
    if tracks.is_empty() {
        return Err(ToolError::invalid(NO_TRACKS));
    }
    let mut changed = Vec::with_capacity(tracks.len());
    let mut total = 0usize;
    for f in tracks {
        let id = id_or_empty(f);
        let n = positions_raw(f).len();
        total += n;
        let mut feature = f.clone();
        if n > 1 {
            // Coordinates come from the geometry (the schema's contract), else the positions.
            let positions = resolved(f)?;
            let line = line_coords(f);
            let coord = |i: usize| line.get(i).copied().unwrap_or(positions[i].coord);
            let mut legs = Vec::with_capacity(n);
            for i in 0..n - 1 {
                let (a, b) = (coord(i), coord(i + 1));
                let distance = haversine_nm(a, b);
                let secs = (positions[i + 1].time - positions[i].time) as f64 / 1000.0;
                let leg = if distance == 0.0 {
                    (0.0, 0.0)
                } else if secs <= 0.0 {
                    (bearing_deg(a, b), 0.0)
                } else {
                    (bearing_deg(a, b), distance / (secs / 3600.0))
                };
                legs.push((round_to(leg.0, 2), round_to(leg.1, 2)));
            }
            if let Some(last) = legs.last().copied() {
                legs.push(last);
            }
            let key = key_for(f, "positions");
            let Some(raw) = props_mut(&mut feature)?
                .get_mut(&key)
                .and_then(Value::as_array_mut)
            else {
                return Err(ToolError::failure("positions vanished while cloning"));
            };
            for (i, (course, speed)) in legs.into_iter().enumerate() {
                let Some(p) = raw.get_mut(i).and_then(Value::as_object_mut) else {
                    return Err(ToolError::invalid(format!(
                        "Track {id}: position {i} is not an object"
                    ))
                    .affecting(vec![id]));
                };
                p.insert("course".into(), json!(course));
                p.insert("speed".into(), json!(speed));
            }
        }
        changed.push((feature, id));
    }
    let label = format!("Generated courses and speeds for {total} position(s)");
    Ok(changed
        .into_iter()
        .map(|(f, id)| Item::feature(f, "mutation/track/courses_speeds", vec![id], label.clone()))
        .collect())
}

// ---------------------------------------------------------------------------------------------
// set-time-zero

fn set_time_zero(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    if input.features.is_empty() {
        return Err(ToolError::invalid(NO_TRACKS));
    }
    let Some((zero, zero_text)) = time_param(input, "time_zero")? else {
        return Err(ToolError::invalid(
            "time_zero is required (ISO-8601, e.g. 2024-01-15T10:00:00Z)",
        ));
    };
    let mut changed = Vec::new();
    for f in input.features.iter().filter(|f| is_track(f)) {
        let id = id_or_empty(f);
        let mut positions = positions_raw(f).to_vec();
        for (i, p) in positions.iter_mut().enumerate() {
            let t = pos_time(p).ok_or_else(|| {
                ToolError::invalid(format!(
                    "Track {id}: position {i} has no readable ISO-8601 time"
                ))
                .affecting(vec![id.clone()])
            })?;
            let ms = t - zero;
            let offset = if ms % 1000 == 0 {
                json!(ms / 1000)
            } else {
                json!(ms as f64 / 1000.0)
            };
            if let Some(o) = p.as_object_mut() {
                o.insert("relative_time_seconds".into(), offset);
            }
        }
        let mut feature = f.clone();
        set_prop(&mut feature, "time_zero", json!(zero_text))?;
        set_prop(&mut feature, "positions", Value::Array(positions))?;
        changed.push((feature, id));
    }
    if changed.is_empty() {
        return Err(ToolError::invalid(NO_TRACKS));
    }
    let label = format!(
        "Set time zero to {zero_text} for {} track(s)",
        changed.len()
    );
    Ok(changed
        .into_iter()
        .map(|(f, id)| Item::feature(f, "mutation/track/time_referenced", vec![id], label.clone()))
        .collect())
}

// ---------------------------------------------------------------------------------------------
// interpolate-track

/// The track's positions resampled every `interval_ms` from its first to its last time (the
/// last time always included). A sample that falls on an original fix is that fix, unchanged;
/// any other is interpolated linearly between the fixes either side (course the shorter way
/// round) and marked visible.
fn resample(positions: &[Pos], interval_ms: i64) -> Vec<Pos> {
    let (Some(first), Some(last)) = (positions.first(), positions.last()) else {
        return Vec::new();
    };
    let fx: Vec<model::Fix> = positions
        .iter()
        .enumerate()
        .map(|(index, p)| model::Fix {
            index,
            time: p.time,
            coord: p.coord,
            course: p.raw.get("course").and_then(Value::as_f64),
            speed: p.raw.get("speed").and_then(Value::as_f64),
            depth: p.raw.get("depth").and_then(Value::as_f64),
        })
        .collect();
    let sample = |t: i64| -> Option<Pos> {
        if let Some(p) = positions.iter().find(|p| p.time == t) {
            return Some(p.clone());
        }
        let f = fix_at(&fx, t)?;
        let mut raw = Map::new();
        raw.insert("time".into(), json!(format_time(t)));
        raw.insert("coordinates".into(), json!(f.coord));
        if let Some(c) = f.course {
            raw.insert("course".into(), json!(c));
        }
        if let Some(s) = f.speed {
            raw.insert("speed".into(), json!(s));
        }
        if let Some(d) = f.depth {
            raw.insert("depth".into(), json!(d));
        }
        raw.insert("visible".into(), json!(true));
        Some(Pos {
            raw: Value::Object(raw),
            time: t,
            coord: f.coord,
        })
    };
    let (start, end) = (first.time, last.time);
    let mut out = Vec::new();
    let mut t = start;
    while t <= end {
        if let Some(p) = sample(t) {
            out.push(p);
        }
        t += interval_ms;
    }
    if out.last().map(|p| p.time) != Some(end)
        && let Some(p) = sample(end)
    {
        out.push(p);
    }
    out
}

fn interpolate_track(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    if input.features.is_empty() {
        return Err(ToolError::invalid(NO_TRACKS));
    }
    let interval = input
        .param("interval_seconds")
        .and_then(Value::as_i64)
        .filter(|i| *i > 0)
        .ok_or_else(|| {
            ToolError::invalid("interval_seconds must be a positive integer (e.g. 60, 300, 600)")
        })?;
    let Some(track) = input.features.iter().find(|f| is_track(f)) else {
        return Err(ToolError::invalid(NO_TRACKS));
    };
    let id = id_or_empty(track);
    let original = positions_raw(track).len();
    if original < 2 {
        return Err(ToolError::invalid(format!(
            "Track {id} has fewer than 2 positions; interpolation requires at least 2"
        ))
        .affecting(vec![id]));
    }
    let mut positions = resolved(track)?;
    positions.sort_by_key(|p| p.time);
    let span = positions.last().map_or(0, |p| p.time) - positions.first().map_or(0, |p| p.time);
    if span / (interval * 1000) > MAX_INTERPOLATED {
        return Err(ToolError::invalid(format!(
            "Interpolating {id} every {interval}s would give more than {MAX_INTERPOLATED} positions; choose an interval of at least {}s",
            span / 1000 / MAX_INTERPOLATED + 1
        ))
        .affecting(vec![id]));
    }
    let new = resample(&positions, interval * 1000);
    let mut feature = track.clone();
    write_positions(&mut feature, &new)?;
    Ok(vec![Item::feature(
        feature,
        "mutation/track/interpolated",
        vec![id.clone()],
        format!(
            "Interpolated {id} at {interval}s intervals ({} positions from original {original})",
            new.len()
        ),
    )])
}

// ---------------------------------------------------------------------------------------------
// merge-tracks

fn merge_tracks(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    if input.features.is_empty() {
        return Err(ToolError::invalid(NO_TRACKS));
    }
    let tracks: Vec<&Value> = input.features.iter().filter(|f| is_track(f)).collect();
    let source_ids = ids_of(tracks.iter().copied());
    if tracks.len() < 2 {
        return Err(ToolError::invalid(format!(
            "Merge requires at least 2 track features; only {} provided",
            tracks.len()
        ))
        .affecting(source_ids));
    }
    let mode = input.str_param("merge_mode").unwrap_or("standard");
    let mut all = Vec::new();
    for t in &tracks {
        all.extend(resolved(t)?);
    }
    all.sort_by_key(|p| p.time);
    all.dedup_by_key(|p| p.time);
    let (Some(first), Some(last)) = (all.first(), all.last()) else {
        return Err(ToolError::invalid(format!(
            "Tracks {} have no positions to merge",
            source_ids.join(", ")
        ))
        .affecting(source_ids));
    };
    let (start, end) = (
        first.raw.get("time").cloned(),
        last.raw.get("time").cloned(),
    );
    let base = tracks[0];
    let (mut merged, result_type) = match mode {
        "standard" => {
            let mut props = Map::new();
            let k = |key: &str| key_for(base, key);
            props.insert(k("kind"), json!("TRACK"));
            if let Some(v) = prop(base, "platform_id") {
                props.insert(k("platform_id"), v.clone());
            }
            props.insert(k("platform_name"), json!("Merged track"));
            if let Some(v) = prop(base, "track_type") {
                props.insert(k("track_type"), v.clone());
            }
            props.insert(k("start_time"), Value::Null);
            props.insert(k("end_time"), Value::Null);
            props.insert(k("positions"), json!([]));
            if let Some(v) = prop(base, "style") {
                props.insert(k("style"), v.clone());
            }
            (
                // Derived from the first source (as `<id>-buffer`): merging other tracks never
                // overwrites an earlier merge, and re-running this one replaces it.
                json!({"type": "Feature", "id": format!("{}-merged", id_or_empty(base)), "geometry": null, "properties": props}),
                "addition/track/merged",
            )
        }
        "in_place" => (base.clone(), "mutation/track/merged"),
        "convert_tma" => {
            let target = tracks
                .iter()
                .find(|t| prop_str(t, "track_type") == Some("TMA"))
                .copied()
                .unwrap_or(base);
            let mut t = target.clone();
            set_prop(&mut t, "track_type", json!("SURFACE"))?;
            (t, "mutation/track/merged")
        }
        other => {
            return Err(ToolError::invalid(format!(
                "Unknown merge_mode: {other}; use standard, in_place or convert_tma"
            ))
            .affecting(source_ids));
        }
    };
    write_positions(&mut merged, &all)?;
    if let Some(t) = start {
        set_prop(&mut merged, "start_time", t)?;
    }
    if let Some(t) = end {
        set_prop(&mut merged, "end_time", t)?;
    }
    let merged_id = id_or_empty(&merged);
    let how = if result_type.starts_with("addition") {
        "into"
    } else {
        "in-place into"
    };
    let label = format!(
        "Merged {} tracks {how} {merged_id} ({} positions)",
        tracks.len(),
        all.len()
    );
    Ok(vec![Item::feature(merged, result_type, source_ids, label)])
}

// ---------------------------------------------------------------------------------------------
// group-tracks, group-lightweight-tracks

/// A track's start time: its `start_time`, else its first position's time.
fn start_of(f: &Value) -> Result<i64, ToolError> {
    prop_str(f, "start_time")
        .and_then(parse_time)
        .or_else(|| positions_raw(f).first().and_then(pos_time))
        .ok_or_else(|| {
            ToolError::invalid(format!(
                "Track missing start_time: {} has neither a start_time nor a timed first position",
                id_or_empty(f)
            ))
            .affecting(vec![id_or_empty(f)])
        })
}

fn end_of(f: &Value) -> Option<i64> {
    prop_str(f, "end_time")
        .and_then(parse_time)
        .or_else(|| positions_raw(f).last().and_then(pos_time))
}

/// The features of `kind`, sorted (stably) by start time.
fn sorted_by_start<'a>(features: &'a [Value], kind: &str) -> Result<Vec<&'a Value>, ToolError> {
    let mut keyed = Vec::new();
    for f in features.iter().filter(|f| is_kind(f, kind)) {
        keyed.push((start_of(f)?, f));
    }
    keyed.sort_by_key(|(t, _)| *t);
    Ok(keyed.into_iter().map(|(_, f)| f).collect())
}

fn end_time_value(f: &Value) -> Option<Value> {
    prop(f, "end_time")
        .cloned()
        .or_else(|| positions_raw(f).last().and_then(|p| p.get("time")).cloned())
}

fn group_tracks(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    if input.features.is_empty() {
        return Err(ToolError::invalid(INPUT_REQUIRED));
    }
    let tracks = sorted_by_start(input.features, "TRACK")?;
    if tracks.len() < 2 {
        return Err(ToolError::invalid(format!(
            "At least 2 track features required for grouping; got {}",
            tracks.len()
        )));
    }
    for pair in tracks.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        if let (Some(end), Ok(start)) = (end_of(a), start_of(b))
            && end > start
        {
            return Err(ToolError::invalid(format!(
                "Track segments overlap: {} ends after {} starts; group tracks whose times do not overlap (merge-tracks combines overlapping ones)",
                track_name(a),
                track_name(b)
            ))
            .affecting(vec![id_or_empty(a), id_or_empty(b)]));
        }
    }
    let mut segments = Vec::new();
    let mut coords = Vec::new();
    for t in &tracks {
        coords.extend(line_coords(t));
        match prop(t, "segments").and_then(Value::as_array) {
            Some(existing) if !existing.is_empty() => segments.extend(existing.iter().cloned()),
            _ => segments.push(json!({
                "name": track_name(t),
                "start_time": prop(t, "start_time").cloned().unwrap_or(Value::Null),
                "end_time": end_time_value(t).unwrap_or(Value::Null),
                "positions": positions_raw(t),
            })),
        }
    }
    let target_src = tracks[0];
    let mut target = target_src.clone();
    remove_prop(&mut target, "positions")?;
    set_prop(&mut target, "segments", Value::Array(segments))?;
    if let Some(e) = tracks.last().and_then(|t| end_time_value(t)) {
        set_prop(&mut target, "end_time", e)?;
    }
    set_line(&mut target, &coords);
    let label = format!(
        "Grouped {} tracks into {}",
        tracks.len(),
        track_name(target_src)
    );
    Ok(vec![Item::feature(
        target,
        "mutation/track/grouped",
        ids_of(tracks.iter().copied()),
        label,
    )])
}

fn group_lightweight_tracks(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    if input.features.is_empty() {
        return Err(ToolError::invalid(INPUT_REQUIRED));
    }
    let tracks = sorted_by_start(input.features, "LIGHTWEIGHT_TRACK")?;
    if tracks.len() < 2 {
        return Err(ToolError::invalid(format!(
            "At least 2 lightweight track features required for grouping; got {} (group-tracks groups full TRACK features)",
            tracks.len()
        )));
    }
    let mut positions = Vec::new();
    let mut coords = Vec::new();
    for t in &tracks {
        positions.extend(positions_raw(t).iter().cloned());
        coords.extend(line_coords(t));
    }
    let target_src = tracks[0];
    let mut target = target_src.clone();
    set_prop(&mut target, "positions", Value::Array(positions))?;
    set_line(&mut target, &coords);
    if let Some(e) = tracks.last().and_then(|t| end_time_value(t)) {
        set_prop(&mut target, "end_time", e)?;
    }
    let label = format!(
        "Grouped {} lightweight tracks into {}",
        tracks.len(),
        track_name(target_src)
    );
    Ok(vec![Item::feature(
        target,
        "mutation/track/grouped",
        ids_of(tracks.iter().copied()),
        label,
    )])
}

// ---------------------------------------------------------------------------------------------
// convert-lightweight-to-track, convert-track-to-lightweight

const GOLD: &str = "#FFD700";

/// Positions reduced to time, coordinates, course and speed (coordinates from the geometry
/// when the position has none).
fn core_positions(f: &Value) -> Vec<Value> {
    let line = line_coords(f);
    positions_raw(f)
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let mut o = Map::new();
            if let Some(t) = p.get("time") {
                o.insert("time".into(), t.clone());
            }
            match p.get("coordinates") {
                Some(c) => {
                    o.insert("coordinates".into(), c.clone());
                }
                None => {
                    if let Some(c) = line.get(i) {
                        o.insert("coordinates".into(), json!(c));
                    }
                }
            }
            for k in ["course", "speed"] {
                if let Some(v) = p.get(k) {
                    o.insert(k.into(), v.clone());
                }
            }
            Value::Object(o)
        })
        .collect()
}

fn line_colour(f: &Value) -> String {
    prop(f, "style")
        .and_then(|s| s.pointer("/line/color"))
        .and_then(Value::as_str)
        .unwrap_or(GOLD)
        .to_owned()
}

fn converted(f: &Value, id: String, kind: &str, extra: &[(&str, Value)], style: Value) -> Value {
    let k = |key: &str| key_for(f, key);
    let mut props = Map::new();
    props.insert(k("kind"), json!(kind));
    props.insert(
        k("platform_name"),
        prop(f, "platform_name")
            .cloned()
            .unwrap_or_else(|| json!(track_name(f))),
    );
    for (key, v) in extra {
        props.insert(k(key), v.clone());
    }
    for key in ["start_time", "end_time"] {
        if let Some(v) = prop(f, key) {
            props.insert(k(key), v.clone());
        }
    }
    props.insert(k("positions"), Value::Array(core_positions(f)));
    props.insert(k("style"), style);
    json!({
        "type": "Feature",
        "id": id,
        "geometry": f.get("geometry").cloned().unwrap_or(Value::Null),
        "properties": props,
    })
}

fn convert_lightweight_to_track(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    if input.features.is_empty() {
        return Err(ToolError::invalid(INPUT_REQUIRED));
    }
    let lw: Vec<&Value> = input
        .features
        .iter()
        .filter(|f| is_kind(f, "LIGHTWEIGHT_TRACK"))
        .collect();
    let Some(first) = lw.first() else {
        return Err(ToolError::invalid(
            "No lightweight track features found in input (kind LIGHTWEIGHT_TRACK)",
        ));
    };
    let label = format!(
        "Converted lightweight track {} to full track",
        track_name(first)
    );
    Ok(lw
        .iter()
        .map(|f| {
            let src = id_or_empty(f);
            let id = match src.strip_prefix("lw-") {
                Some(rest) => format!("{rest}-converted"),
                None => format!("{src}-converted"),
            };
            let c = line_colour(f);
            let style = json!({
                "line": {"stroke": true, "color": c, "weight": 3, "opacity": 1.0},
                "point": {"shape": "circle", "radius": 4, "fill": true, "fill_color": c, "fill_opacity": 0.8,
                          "stroke": true, "color": "#ffffff", "weight": 1, "opacity": 1.0},
            });
            let feature = converted(
                f,
                id,
                "TRACK",
                &[("track_type", json!("SURFACE"))],
                style,
            );
            Item::feature(feature, "mutation/track/converted", vec![src], label.clone())
        })
        .collect())
}

fn convert_track_to_lightweight(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    if input.features.is_empty() {
        return Err(ToolError::invalid(INPUT_REQUIRED));
    }
    let tracks: Vec<&Value> = input.features.iter().filter(|f| is_track(f)).collect();
    let Some(first) = tracks.first() else {
        return Err(ToolError::invalid(NO_TRACKS));
    };
    let label = format!("Converted track {} to lightweight track", track_name(first));
    Ok(tracks
        .iter()
        .map(|f| {
            let src = id_or_empty(f);
            let id = format!("lw-{src}-converted");
            let style = json!({"line": {"stroke": true, "color": line_colour(f), "weight": 2, "opacity": 1.0}});
            let mut feature = converted(f, id, "LIGHTWEIGHT_TRACK", &[], style);
            // A grouped track's segments flatten into one positions array.
            if let Some(segs) = prop(f, "segments").and_then(Value::as_array)
                && positions_raw(f).is_empty()
            {
                let flat: Vec<Value> = segs
                    .iter()
                    .filter_map(|s| s.get("positions").and_then(Value::as_array))
                    .flatten()
                    .cloned()
                    .collect();
                let k = key_for(f, "positions");
                if let Some(p) = feature
                    .get_mut("properties")
                    .and_then(Value::as_object_mut)
                {
                    p.insert(k, Value::Array(flat));
                }
            }
            Item::feature(feature, "mutation/track/converted", vec![src], label.clone())
        })
        .collect())
}

// ---------------------------------------------------------------------------------------------
// split-tracks-into-legs

fn clock(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.format("%H:%M:%SZ").to_string())
        .unwrap_or_else(|| format_time(ms))
}

fn split_tracks_into_legs(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    if input.features.is_empty() {
        return Err(ToolError::invalid(INPUT_REQUIRED));
    }
    let gap = input
        .f64_param("max_gap_seconds")
        .filter(|g| *g > 0.0)
        .ok_or_else(|| {
            ToolError::invalid("max_gap_seconds must be a positive number (e.g. 3600)")
        })?;
    let Some(track) = input.features.iter().find(|f| is_track(f)) else {
        return Err(ToolError::invalid("No track feature found in input"));
    };
    let id = id_or_empty(track);
    if positions_raw(track).len() < 2 {
        return Err(ToolError::invalid("Track must have at least 2 positions").affecting(vec![id]));
    }
    let positions = resolved(track)?;
    let mut legs: Vec<Vec<Pos>> = Vec::new();
    let mut current: Vec<Pos> = Vec::new();
    for p in positions {
        if let Some(prev) = current.last()
            && (p.time - prev.time) as f64 / 1000.0 > gap
        {
            legs.push(std::mem::take(&mut current));
        }
        current.push(p);
    }
    legs.push(current);
    let name = track_name(track);
    let k = |key: &str| key_for(track, key);
    let mut items = Vec::with_capacity(legs.len());
    for (n, leg) in legs.iter().enumerate() {
        let (Some(first), Some(last)) = (leg.first(), leg.last()) else {
            continue;
        };
        let number = n + 1;
        let geometry = if leg.len() == 1 {
            json!({"type": "Point", "coordinates": first.coord})
        } else {
            json!({"type": "LineString", "coordinates": leg.iter().map(|p| p.coord).collect::<Vec<_>>()})
        };
        let mut props = Map::new();
        props.insert(k("kind"), json!("TRACK_SEGMENT"));
        for key in ["platform_id", "platform_name", "track_type"] {
            if let Some(v) = prop(track, key) {
                props.insert(k(key), v.clone());
            }
        }
        props.insert(k("parent_track_id"), json!(id));
        props.insert(k("leg_number"), json!(number));
        props.insert(
            k("start_time"),
            first.raw.get("time").cloned().unwrap_or(Value::Null),
        );
        props.insert(
            k("end_time"),
            last.raw.get("time").cloned().unwrap_or(Value::Null),
        );
        props.insert(
            k("positions"),
            Value::Array(leg.iter().map(|p| p.raw.clone()).collect()),
        );
        let feature = json!({"type": "Feature", "id": format!("{id}-leg-{number}"), "geometry": geometry, "properties": props});
        items.push(Item::feature(
            feature,
            "addition/track/split_legs",
            vec![id.clone()],
            format!(
                "Leg {number} of {name} ({}, {} - {})",
                plural(leg.len(), "position", "positions"),
                clock(first.time),
                clock(last.time)
            ),
        ));
    }
    Ok(items)
}

// ---------------------------------------------------------------------------------------------
// remove-track-jumps

/// Pass over the track once: where a leg's speed exceeds `k` times the previous leg's, the
/// jumped fix (and any after it until the track is back on course) is pulled towards the
/// position extrapolated from the two fixes before the jump, by an offset that is whole at the
/// jump and fades linearly to nothing at the lock point. The lock point is the first later fix
/// reachable from the last good fix at no more than `k` times the pre-jump speed (the spec's
/// intent; its literal pseudocode measures the offset at the lock point, which moves the jumped
/// fix further away, and its goldens show the reading used here). A corrected fix takes the
/// recorded course and speed of the fix before the jump (it now lies on that fix's track).
/// Returns the number of jumps corrected.
fn remove_jumps(pos: &mut [Pos], k: f64) -> usize {
    let n = pos.len();
    let mut legs = 0;
    let mut previous: Option<f64> = None;
    for i in 1..n {
        let mut current = speed_kn(&pos[i - 1], &pos[i]);
        if let Some(prev) = previous
            && prev > 0.0
            && i >= 2
            && current > k * prev
        {
            let (a, b) = (pos[i - 2].coord, pos[i - 1].coord);
            let expected = [2.0 * b[0] - a[0], 2.0 * b[1] - a[1]];
            let lock = (i + 1..n)
                .find(|&j| speed_kn(&pos[i - 1], &pos[j]) <= k * prev)
                .unwrap_or(n - 1);
            let offset = [expected[0] - pos[i].coord[0], expected[1] - pos[i].coord[1]];
            let (t0, duration) = (pos[i].time, pos[lock].time - pos[i].time);
            let end = if lock > i { lock } else { i + 1 };
            let (course, speed) = (
                pos[i - 1].raw.get("course").cloned(),
                pos[i - 1].raw.get("speed").cloned(),
            );
            for p in &mut pos[i..end] {
                if let Some(o) = p.raw.as_object_mut() {
                    for (key, v) in [("course", &course), ("speed", &speed)] {
                        if let (Some(v), true) = (v, o.contains_key(key)) {
                            o.insert(key.into(), v.clone());
                        }
                    }
                }
                let proportion = if duration > 0 {
                    1.0 - (p.time - t0) as f64 / duration as f64
                } else {
                    1.0
                };
                p.coord = [
                    p.coord[0] + offset[0] * proportion,
                    p.coord[1] + offset[1] * proportion,
                ];
            }
            legs += 1;
            current = speed_kn(&pos[i - 1], &pos[i]);
        }
        previous = Some(current);
    }
    legs
}

/// Write a position's (possibly corrected) coordinates into its raw JSON.
fn with_coord(p: &Pos) -> Pos {
    let mut q = p.clone();
    if let Some(o) = q.raw.as_object_mut()
        && o.contains_key("coordinates")
    {
        o.insert("coordinates".into(), json!(p.coord));
    }
    q
}

fn remove_track_jumps(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    if input.features.is_empty() {
        return Err(ToolError::invalid(NO_TRACKS));
    }
    let k = threshold(input)?;
    let Some(track) = input.features.iter().find(|f| is_track(f)) else {
        return Err(ToolError::invalid(NO_TRACKS));
    };
    let id = id_or_empty(track);
    if positions_raw(track).len() < 3 {
        return Err(
            ToolError::invalid("Track must have at least 3 positions for jump detection")
                .affecting(vec![id]),
        );
    }
    let mut positions = resolved(track)?;
    let legs = remove_jumps(&mut positions, k);
    let mut feature = track.clone();
    let label = if legs == 0 {
        format!("No jumps detected in {id} (track returned unchanged)")
    } else {
        let updated: Vec<Pos> = positions.iter().map(with_coord).collect();
        write_positions(&mut feature, &updated)?;
        format!(
            "Removed {legs} jump(s) from {id} ({} corrected with proportional offset)",
            plural(legs, "leg", "legs")
        )
    };
    Ok(vec![Item::feature(
        feature,
        "mutation/track/smoothed",
        vec![id],
        label,
    )])
}

// ---------------------------------------------------------------------------------------------
// smooth-track-jumps

/// The indices of jumped fixes: a fix is a jump when reaching it from the last good fix implies
/// more than `threshold_kn` (consecutive jumps are all caught, and the fix after a jump is
/// judged from the fix before it, not from the jump).
fn jump_indices(pos: &[Pos], threshold_kn: f64) -> Vec<usize> {
    let mut jumps = Vec::new();
    let mut good = 0usize;
    for i in 1..pos.len() {
        let hours = (pos[i].time - pos[good].time) as f64 / 3_600_000.0;
        if hours > 0.0 && range_nm(pos[good].coord, pos[i].coord) / hours > threshold_kn {
            jumps.push(i);
        } else {
            good = i;
        }
    }
    jumps
}

fn smooth_track_jumps(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    if input.features.is_empty() {
        return Err(ToolError::invalid(INPUT_REQUIRED));
    }
    let k = input
        .f64_param("speed_threshold_multiplier")
        .filter(|k| *k > 0.0)
        .unwrap_or(3.0);
    let Some(segment) = input.features.iter().find(|f| is_kind(f, "TRACK_SEGMENT")) else {
        return Err(ToolError::invalid(
            "No track segment feature found in input (kind TRACK_SEGMENT)",
        ));
    };
    let id = id_or_empty(segment);
    if positions_raw(segment).len() < 3 {
        return Err(
            ToolError::invalid("Segment must have at least 3 positions for smoothing")
                .affecting(vec![id]),
        );
    }
    let nominal = model::prop_f64(segment, "nominal_speed_kn").filter(|s| *s > 0.0);
    let Some(nominal) = nominal else {
        return Err(
            ToolError::invalid("Segment must have a positive nominal_speed_kn property")
                .affecting(vec![id]),
        );
    };
    let positions = resolved(segment)?;
    let jumps = jump_indices(&positions, nominal * k);
    let n = positions.len();
    let mut smoothed = positions.clone();
    let mut count = 0usize;
    for &idx in &jumps {
        let pred = (0..idx).rev().find(|j| !jumps.contains(j));
        let succ = (idx + 1..n).find(|j| !jumps.contains(j));
        let (Some(pred), Some(succ)) = (pred, succ) else {
            continue;
        };
        let (a, b) = (&positions[pred], &positions[succ]);
        let total = (b.time - a.time) as f64;
        if total <= 0.0 {
            continue;
        }
        let frac = (positions[idx].time - a.time) as f64 / total;
        let coord = [
            a.coord[0] + frac * (b.coord[0] - a.coord[0]),
            a.coord[1] + frac * (b.coord[1] - a.coord[1]),
        ];
        let p = &mut smoothed[idx];
        p.coord = coord;
        if let Some(o) = p.raw.as_object_mut() {
            o.insert("coordinates".into(), json!(coord));
            o.insert("smoothed".into(), json!(true));
        }
        count += 1;
    }
    let mut feature = segment.clone();
    write_positions(&mut feature, &smoothed)?;
    set_prop(&mut feature, "smoothed_count", json!(count))?;
    let label = format!(
        "Smoothed {count} position jump(s) in {} segment",
        track_name(segment)
    );
    Ok(vec![Item::feature(
        feature,
        "mutation/track/smoothed",
        vec![id],
        label,
    )])
}

// ---------------------------------------------------------------------------------------------
// convert-absolute-tma-to-relative

fn convert_absolute_tma_to_relative(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    if input.features.is_empty() {
        return Err(ToolError::invalid(INPUT_REQUIRED));
    }
    let tma = input.features.iter().rev().find(|f| {
        is_kind(f, "TMA_SEGMENT")
            && prop_str(f, "segment_type").is_some_and(|s| s.eq_ignore_ascii_case("ABSOLUTE"))
    });
    let ownship = input
        .features
        .iter()
        .rev()
        .find(|f| is_track(f) && prop(f, "is_ownship").and_then(Value::as_bool) == Some(true));
    let Some(tma) = tma else {
        return Err(ToolError::invalid(
            "No absolute TMA segment found in input (kind TMA_SEGMENT, segment_type ABSOLUTE)",
        ));
    };
    let Some(ownship) = ownship else {
        return Err(ToolError::invalid(
            "No ownship track found in input (a TRACK with is_ownship: true)",
        ));
    };
    let tma_id = id_or_empty(tma);
    let own_id = id_or_empty(ownship);
    let tma_positions = resolved(tma)?;
    let Some(tma_start) = tma_positions.first().map(|p| p.coord) else {
        return Err(ToolError::invalid("TMA segment has no positions").affecting(vec![tma_id]));
    };
    let own = fixes(ownship);
    let Some(own_first) = own.first().map(|f| f.coord) else {
        return Err(
            ToolError::invalid("Ownship track has no timed positions").affecting(vec![own_id])
        );
    };
    let origin = prop(ownship, "sensor_array_center")
        .and_then(coord_of)
        .unwrap_or(own_first);
    let mut relative = Vec::with_capacity(tma_positions.len());
    for p in &tma_positions {
        let at = fix_at(&own, p.time)
            .map(|f| f.coord)
            .or_else(|| {
                own.iter()
                    .min_by_key(|f| (f.time - p.time).abs())
                    .map(|f| f.coord)
            })
            .unwrap_or(own_first);
        let mut raw = p.raw.clone();
        if let Some(o) = raw.as_object_mut() {
            o.insert(
                "bearing_from_ownship".into(),
                json!(round_to(bearing_deg(at, p.coord), 1)),
            );
            o.insert(
                "range_from_ownship_nm".into(),
                json!(round_to(range_nm(at, p.coord), 3)),
            );
        }
        relative.push(raw);
    }
    let suffix = tma_id.strip_prefix("tma-abs-").unwrap_or(&tma_id);
    let mut converted = tma.clone();
    if let Some(o) = converted.as_object_mut() {
        o.insert("id".into(), json!(format!("tma-rel-{suffix}")));
    }
    set_prop(&mut converted, "segment_type", json!("RELATIVE"))?;
    set_prop(&mut converted, "ownship_track_id", json!(own_id))?;
    set_prop(
        &mut converted,
        "origin_offset",
        json!({
            "range_nm": round_to(range_nm(origin, tma_start), 3),
            "bearing_deg": round_to(bearing_deg(origin, tma_start), 1),
        }),
    )?;
    set_prop(&mut converted, "positions", Value::Array(relative))?;
    let label = format!(
        "Converted {} TMA from absolute to relative (ref: {})",
        track_name(tma),
        track_name(ownship)
    );
    Ok(vec![Item::feature(
        converted,
        "mutation/track/tma_converted",
        vec![tma_id, own_id],
        label,
    )])
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn track(id: &str, fixes: &[(&str, [f64; 2])]) -> Value {
        json!({"type": "Feature", "id": id,
            "geometry": {"type": "LineString", "coordinates": fixes.iter().map(|f| f.1).collect::<Vec<_>>()},
            "properties": {"kind": "TRACK", "platform_name": id, "positions":
                fixes.iter().map(|(t, c)| json!({"time": t, "coordinates": c, "course": 45.0, "speed": 10.0})).collect::<Vec<_>>()}})
    }

    fn run(f: RunFn, features: &[Value], params: Value) -> Result<Vec<Item>, ToolError> {
        let params = params.as_object().cloned().unwrap_or_default();
        f(&CalcInput::new(features, &params))
    }

    type RunFn = fn(&CalcInput) -> Result<Vec<Item>, ToolError>;

    fn feature(item: &Item) -> &Value {
        match &item.body {
            toolgate_tool_catalogue::Body::Feature(f) => f,
            other => panic!("not a feature: {other:?}"),
        }
    }

    fn t(min: u32) -> String {
        format!("2024-01-15T10:{min:02}:00Z")
    }

    #[test]
    fn every_tool_refuses_empty_input_and_wrong_kinds() {
        let point = json!({"type": "Feature", "id": "p", "geometry": {"type": "Point", "coordinates": [0.0, 0.0]}, "properties": {"kind": "POINT"}});
        for e in TOOLS {
            let params = json!({"start_time": t(0), "end_time": t(5), "time_zero": t(0), "interval_seconds": 60, "max_gap_seconds": 60});
            let err = run(e.run, &[], params.clone()).unwrap_err();
            assert_eq!(err.category.as_str(), "invalid_input", "{}", e.id);
            let err = run(e.run, std::slice::from_ref(&point), params).unwrap_err();
            assert!(!err.message.is_empty(), "{}", e.id);
        }
    }

    #[test]
    fn unreadable_times_and_nan_are_errors_not_panics() {
        let mut bad = track(
            "b",
            &[
                (&t(0), [0.0, 50.0]),
                (&t(5), [0.1, 50.0]),
                (&t(10), [0.2, 50.0]),
            ],
        );
        bad["properties"]["positions"][1]["time"] = json!("noon");
        for e in TOOLS {
            let params = json!({"start_time": t(0), "end_time": t(5), "time_zero": t(0), "interval_seconds": 60, "max_gap_seconds": 60});
            let _ = run(e.run, std::slice::from_ref(&bad), params);
        }
        let err = run(
            interpolate_track,
            std::slice::from_ref(&bad),
            json!({"interval_seconds": 60}),
        )
        .unwrap_err();
        assert!(err.message.contains("position 1"), "{}", err.message);
        let mut nan = track(
            "n",
            &[
                (&t(0), [0.0, 50.0]),
                (&t(5), [0.1, 50.0]),
                (&t(10), [0.2, 50.0]),
            ],
        );
        nan["properties"]["positions"][1]["coordinates"] = json!([f64::NAN, 50.0]);
        nan["geometry"]["coordinates"][1] = Value::Null;
        let err = run(remove_track_jumps, &[nan], json!({})).unwrap_err();
        assert!(err.message.contains("coordinates"), "{}", err.message);
        let err = run(
            remove_track_jumps,
            &[bad],
            json!({"speed_threshold_multiplier": -1.0}),
        )
        .unwrap_err();
        assert!(err.message.contains("positive"), "{}", err.message);
    }

    #[test]
    fn trim_keeps_naming_overrides_and_reports_windows_outside() {
        let mut a = track(
            "a",
            &[
                (&t(0), [0.0, 50.0]),
                (&t(5), [0.1, 50.0]),
                (&t(10), [0.2, 50.0]),
            ],
        );
        a["properties"]["position_style_overrides"] = json!([null, {"label": "b"}, null]);
        let items = run(
            trim_track,
            std::slice::from_ref(&a),
            json!({"start_time": t(5), "end_time": t(20)}),
        )
        .unwrap();
        let f = feature(&items[0]);
        assert_eq!(f["properties"]["positions"].as_array().unwrap().len(), 2);
        assert_eq!(
            f["properties"]["position_style_overrides"],
            json!([{"label": "b"}, null])
        );
        assert_eq!(f["properties"]["start_time"], t(5));
        assert_eq!(f["geometry"]["coordinates"][0], json!([0.1, 50.0]));
        let err = run(
            trim_track,
            &[a],
            json!({"start_time": "2025-01-01T00:00:00Z", "end_time": "2025-01-02T00:00:00Z"}),
        )
        .unwrap_err();
        assert!(err.message.contains("No positions of a"), "{}", err.message);
        assert_eq!(err.affected, ["a"]);
    }

    #[test]
    fn merge_sorts_dedups_and_refuses_unknown_modes() {
        let a = track("a", &[(&t(10), [0.2, 50.0]), (&t(0), [0.0, 50.0])]);
        let b = track("b", &[(&t(5), [0.1, 50.0]), (&t(10), [9.0, 9.0])]);
        let items = run(merge_tracks, &[a.clone(), b.clone()], json!({})).unwrap();
        let f = feature(&items[0]);
        assert_eq!(items[0].result_type, "addition/track/merged");
        assert_eq!(f["id"], "a-merged");
        assert_eq!(
            f["geometry"]["coordinates"],
            json!([[0.0, 50.0], [0.1, 50.0], [0.2, 50.0]])
        );
        assert_eq!(f["properties"]["end_time"], t(10));
        let err = run(merge_tracks, &[a, b], json!({"merge_mode": "zip"})).unwrap_err();
        assert!(
            err.message.starts_with("Unknown merge_mode: zip"),
            "{}",
            err.message
        );
    }

    #[test]
    fn group_refuses_overlaps_and_keeps_segments() {
        let a = track("a", &[(&t(0), [0.0, 50.0]), (&t(5), [0.1, 50.0])]);
        let b = track("b", &[(&t(10), [0.2, 50.0]), (&t(15), [0.3, 50.0])]);
        let items = run(group_tracks, &[b, a.clone()], json!({})).unwrap();
        let f = feature(&items[0]);
        assert_eq!(f["id"], "a", "the earliest track is the target");
        assert_eq!(f["properties"]["segments"].as_array().unwrap().len(), 2);
        assert!(f["properties"].get("positions").is_none());
        assert_eq!(items[0].source_features, ["a", "b"]);
        let c = track("c", &[(&t(3), [0.2, 50.0]), (&t(15), [0.3, 50.0])]);
        let err = run(group_tracks, &[a, c], json!({})).unwrap_err();
        assert!(
            err.message
                .starts_with("Track segments overlap: a ends after c starts"),
            "{}",
            err.message
        );
        assert_eq!(err.affected, ["a", "c"]);
    }

    #[test]
    fn split_at_exactly_the_gap_does_not_split() {
        let a = track(
            "a",
            &[
                (&t(0), [0.0, 50.0]),
                (&t(10), [0.1, 50.0]),
                (&t(21), [0.2, 50.0]),
            ],
        );
        let items = run(
            split_tracks_into_legs,
            &[a],
            json!({"max_gap_seconds": 600}),
        )
        .unwrap();
        assert_eq!(items.len(), 2);
        assert_eq!(feature(&items[1])["geometry"]["type"], "Point");
        assert_eq!(
            items[1].label,
            "Leg 2 of a (1 position, 10:21:00Z - 10:21:00Z)"
        );
    }

    #[test]
    fn remove_jumps_leaves_a_steady_track_alone() {
        let steady: Vec<(String, [f64; 2])> = (0..6)
            .map(|i| (t(i * 5), [0.01 * f64::from(i), 50.0]))
            .collect();
        let fx: Vec<(&str, [f64; 2])> = steady.iter().map(|(a, c)| (a.as_str(), *c)).collect();
        let items = run(remove_track_jumps, &[track("s", &fx)], json!({})).unwrap();
        assert!(items[0].label.starts_with("No jumps detected in s"));
    }

    #[test]
    fn tma_uses_nearest_ownship_fix_outside_its_span() {
        let tma = json!({"type": "Feature", "id": "tma-abs-x", "geometry": {"type": "Point", "coordinates": [0.0, 1.0]},
            "properties": {"kind": "TMA_SEGMENT", "segment_type": "ABSOLUTE", "platform_name": "X",
                "positions": [{"time": "2024-01-15T12:00:00Z", "coordinates": [0.0, 1.0]}]}});
        let mut own = track("own", &[(&t(0), [0.0, 0.0]), (&t(5), [1.0, 0.0])]);
        own["properties"]["is_ownship"] = json!(true);
        let items = run(convert_absolute_tma_to_relative, &[tma, own], json!({})).unwrap();
        let f = feature(&items[0]);
        assert_eq!(f["id"], "tma-rel-x");
        let p = &f["properties"]["positions"][0];
        // nearest ownship fix is [1, 0] (10:05): the contact is to the north-west
        assert!(p["bearing_from_ownship"].as_f64().unwrap() > 270.0);
        assert!(
            (f["properties"]["origin_offset"]["range_nm"]
                .as_f64()
                .unwrap()
                - 60.0)
                .abs()
                < 1e-9
        );
    }

    #[test]
    fn trim_a_multilinestring_drops_emptied_lines_and_refits_the_bbox() {
        let mut a = track(
            "m",
            &[
                (&t(0), [0.0, 50.0]),
                (&t(1), [0.1, 50.0]),
                (&t(2), [0.2, 50.1]),
                (&t(3), [0.3, 50.2]),
            ],
        );
        a["geometry"] = json!({"type": "MultiLineString", "coordinates": [[[0.0, 50.0], [0.1, 50.0]], [[0.2, 50.1], [0.3, 50.2]]]});
        a["bbox"] = json!([0.0, 50.0, 0.3, 50.2]);
        let items = run(
            trim_track,
            &[a],
            json!({"start_time": t(2), "end_time": t(9)}),
        )
        .unwrap();
        let f = feature(&items[0]);
        assert_eq!(
            f["geometry"]["coordinates"],
            json!([[[0.2, 50.1], [0.3, 50.2]]])
        );
        assert_eq!(f["bbox"], json!([0.2, 50.1, 0.3, 50.2]));
        assert_eq!(
            items[0].label,
            format!(
                "Trimmed m to {} - {} (2 positions retained, 2 removed)",
                t(2),
                t(9)
            )
        );
    }

    #[test]
    fn courses_and_speeds_due_east_and_on_real_data() {
        // one nautical mile east per minute on the equator (3440.065 nm earth): 60 kn on 090
        let step = (1.0f64 / EARTH_RADIUS_NM).to_degrees();
        let fx: Vec<(String, [f64; 2])> =
            (0..4).map(|i| (t(i), [f64::from(i) * step, 0.0])).collect();
        let fixes: Vec<(&str, [f64; 2])> = fx.iter().map(|(a, c)| (a.as_str(), *c)).collect();
        let input = [track("e", &fixes)];
        let items = run(generate_courses_speeds, &input, json!({})).unwrap();
        for p in feature(&items[0])["properties"]["positions"]
            .as_array()
            .unwrap()
        {
            assert_eq!(p["course"], 90.0, "{p}");
            assert_eq!(p["speed"], 60.0, "{p}");
        }
        assert_eq!(
            input[0]["properties"]["positions"][0]["speed"], 10.0,
            "input untouched"
        );
        let boat1 = toolgate_tool_catalogue::testing::boat1();
        let items = run(
            generate_courses_speeds,
            boat1.as_array().unwrap(),
            json!({}),
        )
        .unwrap();
        let p = &feature(&items[0])["properties"]["positions"];
        assert_eq!(p.as_array().unwrap().len(), 402);
        assert!(
            p[0]["speed"].as_f64().unwrap() > 5.0,
            "recorded 2.0 overwritten"
        );
        assert_eq!(
            items[0].label,
            "Generated courses and speeds for 402 position(s)"
        );
    }

    #[test]
    fn time_zero_offsets_keep_milliseconds() {
        let a = track(
            "a",
            &[
                ("2024-01-15T10:00:00.250Z", [0.0, 50.0]),
                (&t(1), [0.1, 50.0]),
            ],
        );
        let items = run(set_time_zero, &[a], json!({"time_zero": t(0)})).unwrap();
        let p = &feature(&items[0])["properties"]["positions"];
        assert_eq!(p[0]["relative_time_seconds"], 0.25);
        assert_eq!(p[1]["relative_time_seconds"], 60);
        let err = run(
            set_time_zero,
            &[track("b", &[(&t(0), [0.0, 0.0])])],
            json!({"time_zero": "teatime"}),
        )
        .unwrap_err();
        assert!(err.message.contains("teatime"), "{}", err.message);
    }

    #[test]
    fn conversions_derive_ids_and_default_to_gold() {
        let mut lw = track("ownship", &[(&t(0), [0.0, 50.0])]);
        lw["properties"]["kind"] = json!("LIGHTWEIGHT_TRACK");
        let items = run(convert_lightweight_to_track, &[lw], json!({})).unwrap();
        let f = feature(&items[0]);
        assert_eq!(f["id"], "ownship-converted");
        assert_eq!(f["properties"]["style"]["line"]["color"], GOLD);
        assert_eq!(f["properties"]["track_type"], "SURFACE");
        let items = run(
            convert_track_to_lightweight,
            &[track("x", &[(&t(0), [0.0, 50.0])])],
            json!({}),
        )
        .unwrap();
        let f = feature(&items[0]);
        assert_eq!(f["id"], "lw-x-converted");
        assert_eq!(
            f["properties"]["positions"][0],
            json!({"time": t(0), "coordinates": [0.0, 50.0], "course": 45.0, "speed": 10.0})
        );
    }

    proptest! {
        /// The resampled track passes through every original fix that falls on the interval,
        /// and between fixes every sample lies on the segment joining the fixes either side.
        #[test]
        fn interpolation_hits_the_original_fixes_at_their_times(
            steps in proptest::collection::vec(1i64..6, 1..8),
            lons in proptest::collection::vec(-10.0f64..10.0, 8),
            interval_min in 1i64..4,
        ) {
            // fixes at whole multiples of the interval
            let mut time = 0i64;
            let mut fx = Vec::new();
            for (i, s) in std::iter::once(&0).chain(steps.iter()).enumerate() {
                time += s * interval_min * 60_000;
                fx.push((format_time(1_700_000_000_000 + time), [lons[i], 50.0 + i as f64 * 0.01]));
            }
            let fixes: Vec<(&str, [f64; 2])> = fx.iter().map(|(a, c)| (a.as_str(), *c)).collect();
            let tr = track("p", &fixes);
            let items = run(interpolate_track, std::slice::from_ref(&tr), json!({"interval_seconds": interval_min * 60})).unwrap();
            let out = feature(&items[0]);
            let positions = out["properties"]["positions"].as_array().unwrap();
            for (when, coord) in &fx {
                let hit = positions.iter().find(|p| p["time"] == json!(when));
                prop_assert!(hit.is_some(), "no sample at {}", when);
                let hit = hit.unwrap();
                prop_assert_eq!(&hit["coordinates"], &json!(coord));
            }
            prop_assert_eq!(out["geometry"]["coordinates"].as_array().unwrap().len(), positions.len());
        }
    }
}
