//! Fixtures for the tools' tests (feature `testing`): registry calls, tracks, shapes and the
//! 402-position boat1 track.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Map, Value, json};
use toolgate_core::{Edit, ToolCall, ToolOutcome};

use crate::common::{destination, format_time, parse_time};

pub fn call(id: &str, params: Value, subject: &Value) -> ToolCall {
    let params: Map<String, Value> = params.as_object().cloned().unwrap_or_default();
    ToolCall::new(id, params).with_subject(subject.clone())
}

/// The items of every upsert in the outcome's change set.
pub fn edited(out: &ToolOutcome) -> Vec<Value> {
    out.change_set
        .as_ref()
        .map(|cs| {
            cs.edits
                .iter()
                .filter_map(|e| match e {
                    Edit::Upsert { item, .. } => Some(item.clone()),
                    Edit::Remove { .. } => None,
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A TRACK through `coords`, one position every `step_s` seconds from 2026-03-01T00:00:00Z.
pub fn track_from(id: &str, name: &str, coords: &[[f64; 2]], step_s: i64) -> Value {
    let base = parse_time("2026-03-01T00:00:00Z").unwrap();
    let times: Vec<String> = (0..coords.len() as i64)
        .map(|i| format_time(base + i * step_s * 1000))
        .collect();
    let positions: Vec<Value> = times
        .iter()
        .map(|t| json!({"time": t, "depth": 0.0}))
        .collect();
    json!({
        "type": "Feature",
        "id": id,
        "geometry": {"type": "LineString", "coordinates": coords},
        "properties": {
            "kind": "TRACK",
            "platform_id": name,
            "platform_name": name,
            "track_type": "OWNSHIP",
            "start_time": times.first(),
            "end_time": times.last(),
            "positions": positions,
            "style": {
                "line": {"color": "#FF0000"},
                "point": {"shape": "circle", "radius": 3.0, "fill_color": "#FF0000", "color": "#FF0000"}
            },
            "default_position_style": {"show_symbol": false, "symbol": "circle", "show_label": false},
        }
    })
}

/// `n` positions one minute apart, 0.01 degree east each on the equator.
pub fn track(id: &str, name: &str, n: usize) -> Value {
    let coords: Vec<[f64; 2]> = (0..n).map(|i| [i as f64 * 0.01, 0.0]).collect();
    track_from(id, name, &coords, 60)
}

/// A POINT at [0.5, 0.5].
pub fn point(id: &str, name: &str) -> Value {
    json!({
        "type": "Feature",
        "id": id,
        "geometry": {"type": "Point", "coordinates": [0.5, 0.5]},
        "properties": {"kind": "POINT", "name": name, "location_type": "REFERENCE"}
    })
}

/// A CIRCLE as a 36-vertex polygon with `center` and `radius` (m) properties.
pub fn circle(id: &str, name: &str, centre: [f64; 2], radius_m: f64) -> Value {
    let mut ring: Vec<[f64; 2]> = (0..36)
        .map(|i| destination(centre, f64::from(i) * 10.0, radius_m))
        .collect();
    ring.push(ring[0]);
    json!({
        "type": "Feature",
        "id": id,
        "geometry": {"type": "Polygon", "coordinates": [ring]},
        "properties": {"kind": "CIRCLE", "label": name, "center": centre, "radius": radius_m}
    })
}

/// A RECTANGLE over `[west, south, east, north]`.
pub fn rectangle(id: &str, name: &str, b: [f64; 4]) -> Value {
    let [w, s, e, n] = b;
    json!({
        "type": "Feature",
        "id": id,
        "geometry": {"type": "Polygon", "coordinates": [[[w, s], [e, s], [e, n], [w, n], [w, s]]]},
        "properties": {"kind": "RECTANGLE", "label": name}
    })
}

/// The boat1 feature collection (Debrief's core fixture: one 402-position track).
pub const BOAT1: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/core--boat1/features.geojson"
);

/// The boat1 track (402 positions) as a subject array.
pub fn boat1() -> Value {
    let text = std::fs::read_to_string(BOAT1).unwrap();
    let fc: Value = serde_json::from_str(&text).unwrap();
    fc["features"].clone()
}
