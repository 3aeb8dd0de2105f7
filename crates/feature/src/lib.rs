//! Reading the plot feature model (reference §11.1) from GeoJSON values.
//!
//! Features stay `serde_json::Value`s: plots carry many optional, evolving properties (sensors,
//! TUAs, overrides) and a session must save exactly what it loaded, so a lossy typed model would
//! be the wrong tool. These helpers read the few fields the domain needs.

use serde_json::Value;

/// `properties.kind`, or "" when absent.
pub fn kind(f: &Value) -> &str {
    f.pointer("/properties/kind")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The feature id as a string (numeric ids are stringified; a missing id falls back to
/// `properties.id`).
pub fn feature_id(f: &Value) -> String {
    match f.get("id").or_else(|| f.pointer("/properties/id")) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    }
}

fn prop_str<'a>(f: &'a Value, key: &str) -> Option<&'a str> {
    f.get("properties")
        .and_then(|p| p.get(key))
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
}

/// The name people and models use for a feature. Tracks: `display_name`, `platform_name`,
/// `platform_id`; reference points: `name` then `label` (the spike missed `name`); everything
/// else: `label` then `name`; the id when none is set.
pub fn display_name(f: &Value) -> String {
    let found = match kind(f) {
        "TRACK" => prop_str(f, "display_name")
            .or_else(|| prop_str(f, "platform_name"))
            .or_else(|| prop_str(f, "platform_id")),
        "POINT" => prop_str(f, "name").or_else(|| prop_str(f, "label")),
        _ => prop_str(f, "label").or_else(|| prop_str(f, "name")),
    };
    found.map_or_else(|| feature_id(f), str::to_owned)
}

/// The platform of a track (`platform_name`, else `platform_id`); `None` for other kinds.
pub fn platform(f: &Value) -> Option<String> {
    if kind(f) != "TRACK" {
        return None;
    }
    prop_str(f, "platform_name")
        .or_else(|| prop_str(f, "platform_id"))
        .map(str::to_owned)
}

/// `(start, end)` ISO strings of a track; narratives give their single `time` twice.
pub fn time_span(f: &Value) -> Option<(String, String)> {
    match kind(f) {
        "TRACK" => Some((
            prop_str(f, "start_time")?.to_owned(),
            prop_str(f, "end_time")?.to_owned(),
        )),
        "NARRATIVE" => {
            let t = prop_str(f, "time")?.to_owned();
            Some((t.clone(), t))
        }
        _ => None,
    }
}

/// How many points a feature has: track positions, multi-geometry members, 1 for a point.
pub fn point_count(f: &Value) -> Option<usize> {
    match kind(f) {
        "TRACK" => f
            .pointer("/properties/positions")
            .and_then(Value::as_array)
            .map(Vec::len),
        "MULTI_POINT" | "MULTI_POLYGON" => f
            .pointer("/geometry/coordinates")
            .and_then(Value::as_array)
            .map(Vec::len),
        "POINT" => Some(1),
        _ => None,
    }
}

/// `[west, south, east, north]` of any GeoJSON geometry (nested coordinate arrays).
pub fn geometry_bbox(geometry: &Value) -> Option<[f64; 4]> {
    let mut b = [
        f64::INFINITY,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NEG_INFINITY,
    ];
    fn walk(v: &Value, b: &mut [f64; 4]) {
        let Some(arr) = v.as_array() else { return };
        // A position is an array whose first member is a number; anything else nests further.
        if let (Some(Value::Number(x)), Some(Value::Number(y))) = (arr.first(), arr.get(1)) {
            let (Some(x), Some(y)) = (x.as_f64(), y.as_f64()) else {
                return;
            };
            b[0] = b[0].min(x);
            b[1] = b[1].min(y);
            b[2] = b[2].max(x);
            b[3] = b[3].max(y);
            return;
        }
        for x in arr {
            walk(x, b);
        }
    }
    if let Some(geoms) = geometry.get("geometries").and_then(Value::as_array) {
        for g in geoms {
            if let Some(c) = g.get("coordinates") {
                walk(c, &mut b);
            }
        }
    } else {
        walk(geometry.get("coordinates")?, &mut b);
    }
    b[0].is_finite().then_some(b)
}

/// The bbox of a feature's geometry.
pub fn feature_bbox(f: &Value) -> Option<[f64; 4]> {
    geometry_bbox(f.get("geometry")?)
}

/// Union of boxes.
pub fn union_bbox(a: Option<[f64; 4]>, b: Option<[f64; 4]>) -> Option<[f64; 4]> {
    match (a, b) {
        (Some(a), Some(b)) => Some([
            a[0].min(b[0]),
            a[1].min(b[1]),
            a[2].max(b[2]),
            a[3].max(b[3]),
        ]),
        (x, None) | (None, x) => x,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_follow_the_rules() {
        let t = json!({"id": "t1", "properties": {"kind": "TRACK", "platform_name": "", "platform_id": "NELSON"}});
        assert_eq!(display_name(&t), "NELSON");
        let p = json!({"id": 7, "properties": {"kind": "POINT", "name": "Datum A"}});
        assert_eq!(display_name(&p), "Datum A");
        assert_eq!(feature_id(&p), "7");
        let c = json!({"id": "c1", "properties": {"kind": "CIRCLE"}});
        assert_eq!(display_name(&c), "c1");
    }

    #[test]
    fn bbox_over_nested_coordinates() {
        let g = json!({"type": "Polygon", "coordinates": [[[0.0, 1.0], [2.0, -1.0], [1.0, 3.0]]]});
        assert_eq!(geometry_bbox(&g), Some([0.0, -1.0, 2.0, 3.0]));
        assert_eq!(
            geometry_bbox(&json!({"type": "Point", "coordinates": [5.0, 6.0]})),
            Some([5.0, 6.0, 5.0, 6.0])
        );
        assert_eq!(
            geometry_bbox(&json!({"type": "Point", "coordinates": []})),
            None
        );
    }
}
