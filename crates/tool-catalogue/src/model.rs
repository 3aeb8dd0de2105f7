//! Reading catalogue features, and the catalogue's own geodesy.
//!
//! Debrief's fixtures name properties two ways: the tote calculations use `debrief:kind:
//! "track"` / `debrief:positions`, everything else (and toolgate's REP import) `kind: "TRACK"` /
//! `positions`. Every accessor here reads both, so a tool works on either and on the plot's own
//! features; a tool that writes a feature back keeps the naming it was given.
//!
//! The geodesy is the specs' own: a spherical earth on which one degree of great circle is
//! 60 nautical miles (legacy Debrief's `WorldLocation.rangeFrom`), with haversine distances and
//! initial great-circle bearings. The goldens were computed that way; `geo`'s Haversine uses a
//! different radius (6 371 008.8 m), so these few lines are written here on purpose.

use chrono::{DateTime, NaiveDateTime, SecondsFormat};
use serde_json::{Map, Value};

pub const YARDS_PER_NM: f64 = 2025.372;
pub const KM_PER_NM: f64 = 1.852;
pub const METRES_PER_NM: f64 = 1852.0;

/// The feature's id: top-level `id` (string or number), else `properties.id`.
pub fn id_of(f: &Value) -> Option<String> {
    fn of(v: Option<&Value>) -> Option<String> {
        match v? {
            Value::String(s) if !s.is_empty() => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        }
    }
    of(f.get("id")).or_else(|| of(f.pointer("/properties/id")))
}

/// The ids of these features, skipping those without one.
pub fn ids_of<'a>(features: impl IntoIterator<Item = &'a Value>) -> Vec<String> {
    features.into_iter().filter_map(id_of).collect()
}

pub fn properties(f: &Value) -> Option<&Map<String, Value>> {
    f.get("properties").and_then(Value::as_object)
}

/// `properties[key]`, else `properties["debrief:" + key]`; `null` reads as absent.
pub fn prop<'a>(f: &'a Value, key: &str) -> Option<&'a Value> {
    let p = properties(f)?;
    p.get(key)
        .or_else(|| p.get(&format!("debrief:{key}")))
        .filter(|v| !v.is_null())
}

pub fn prop_str<'a>(f: &'a Value, key: &str) -> Option<&'a str> {
    prop(f, key).and_then(Value::as_str)
}

pub fn prop_f64(f: &Value, key: &str) -> Option<f64> {
    prop(f, key).and_then(Value::as_f64)
}

/// Whether the fixture's feature uses the `debrief:`-prefixed naming.
pub fn uses_prefixed_names(f: &Value) -> bool {
    properties(f).is_some_and(|p| p.contains_key("debrief:kind"))
}

/// The property key a tool should write, in the naming the feature already uses.
pub fn key_for(f: &Value, key: &str) -> String {
    if uses_prefixed_names(f) {
        format!("debrief:{key}")
    } else {
        key.to_owned()
    }
}

/// `kind` in upper case (`TRACK`, `SENSOR`, `CIRCLE`, …), "" when absent.
pub fn kind_of(f: &Value) -> String {
    prop_str(f, "kind").unwrap_or_default().to_ascii_uppercase()
}

pub fn is_kind(f: &Value, kind: &str) -> bool {
    kind_of(f).eq_ignore_ascii_case(kind)
}

pub fn is_track(f: &Value) -> bool {
    is_kind(f, "TRACK")
}

/// The features of one kind, in input order.
pub fn of_kind<'a>(features: &'a [Value], kind: &str) -> Vec<&'a Value> {
    features.iter().filter(|f| is_kind(f, kind)).collect()
}

/// A track's display name: `platform_name`, else `platform_id`, else `name`, else the id.
pub fn track_name(f: &Value) -> String {
    ["platform_name", "platform_id", "name"]
        .iter()
        .find_map(|k| prop_str(f, k))
        .map(str::to_owned)
        .or_else(|| id_of(f))
        .unwrap_or_else(|| "(unnamed)".to_owned())
}

/// One timed position of a track.
#[derive(Debug, Clone, PartialEq)]
pub struct Fix {
    /// Index in `positions`.
    pub index: usize,
    /// Milliseconds since the epoch.
    pub time: i64,
    /// `[lon, lat]`.
    pub coord: [f64; 2],
    pub course: Option<f64>,
    pub speed: Option<f64>,
    pub depth: Option<f64>,
}

fn coord_of(v: &Value) -> Option<[f64; 2]> {
    let a = v.as_array()?;
    let lon = a.first()?.as_f64()?;
    let lat = a.get(1)?.as_f64()?;
    (lon.is_finite() && lat.is_finite()).then_some([lon, lat])
}

/// The coordinates of the geometry's line (LineString; MultiLineString flattened).
pub fn line_coords(f: &Value) -> Vec<[f64; 2]> {
    let Some(g) = f.get("geometry") else {
        return Vec::new();
    };
    let coords = g.get("coordinates");
    match g.get("type").and_then(Value::as_str) {
        Some("LineString") | Some("MultiPoint") => coords
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(coord_of).collect())
            .unwrap_or_default(),
        Some("MultiLineString") => coords
            .and_then(Value::as_array)
            .map(|lines| {
                lines
                    .iter()
                    .filter_map(Value::as_array)
                    .flat_map(|l| l.iter().filter_map(coord_of))
                    .collect()
            })
            .unwrap_or_default(),
        Some("Point") => coords.and_then(coord_of).into_iter().collect(),
        _ => Vec::new(),
    }
}

/// The raw `positions` array (either naming).
pub fn positions_raw(f: &Value) -> &[Value] {
    prop(f, "positions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// A track's fixes in stored order. A position's coordinates come from its own `coordinates`,
/// else from the geometry at the same index; positions without a readable time or location
/// are skipped (the caller sees fewer fixes than positions).
pub fn fixes(f: &Value) -> Vec<Fix> {
    let line = line_coords(f);
    positions_raw(f)
        .iter()
        .enumerate()
        .filter_map(|(index, p)| {
            let time = p.get("time").and_then(Value::as_str).and_then(parse_time)?;
            let coord = p
                .get("coordinates")
                .and_then(coord_of)
                .or_else(|| line.get(index).copied())?;
            Some(Fix {
                index,
                time,
                coord,
                course: p.get("course").and_then(Value::as_f64),
                speed: p.get("speed").and_then(Value::as_f64),
                depth: p.get("depth").and_then(Value::as_f64),
            })
        })
        .collect()
}

/// The fix at `time`: the exact fix when one has that time, else a linear interpolation
/// (position, course by the shorter way round, speed, depth) between the fixes either side;
/// `None` outside the track's span.
pub fn fix_at(fixes: &[Fix], time: i64) -> Option<Fix> {
    if let Some(f) = fixes.iter().find(|f| f.time == time) {
        return Some(f.clone());
    }
    let after = fixes.iter().position(|f| f.time > time)?;
    let before = fixes[..after].iter().rev().find(|f| f.time < time)?;
    let next = &fixes[after];
    let frac = (time - before.time) as f64 / (next.time - before.time) as f64;
    let lerp = |a: f64, b: f64| a + (b - a) * frac;
    let opt = |a: Option<f64>, b: Option<f64>| Some(lerp(a?, b?));
    let course = match (before.course, next.course) {
        (Some(a), Some(b)) => {
            let d = ((b - a + 540.0) % 360.0) - 180.0;
            Some((a + d * frac).rem_euclid(360.0))
        }
        _ => None,
    };
    Some(Fix {
        index: before.index,
        time,
        coord: [
            lerp(before.coord[0], next.coord[0]),
            lerp(before.coord[1], next.coord[1]),
        ],
        course,
        speed: opt(before.speed, next.speed),
        depth: opt(before.depth, next.depth),
    })
}

/// Great-circle separation in degrees of arc (haversine).
pub fn gc_degrees(a: [f64; 2], b: [f64; 2]) -> f64 {
    let (lat1, lat2) = (a[1].to_radians(), b[1].to_radians());
    let dlat = (b[1] - a[1]).to_radians();
    let dlon = (b[0] - a[0]).to_radians();
    let h = (dlat / 2.0).sin().powi(2) + lat1.cos() * lat2.cos() * (dlon / 2.0).sin().powi(2);
    (2.0 * h.sqrt().atan2((1.0 - h).sqrt())).to_degrees()
}

/// Range in nautical miles (60 nm per degree of great circle).
pub fn range_nm(a: [f64; 2], b: [f64; 2]) -> f64 {
    gc_degrees(a, b) * 60.0
}

/// Initial great-circle bearing from `a` to `b`, degrees true in `[0, 360)`.
pub fn bearing_deg(a: [f64; 2], b: [f64; 2]) -> f64 {
    let (lat1, lat2) = (a[1].to_radians(), b[1].to_radians());
    let dlon = (b[0] - a[0]).to_radians();
    let y = dlon.sin() * lat2.cos();
    let x = lat1.cos() * lat2.sin() - lat1.sin() * lat2.cos() * dlon.cos();
    y.atan2(x).to_degrees().rem_euclid(360.0)
}

/// The point `range_nm` from `from` along `bearing` (degrees true) on the 60-nm-per-degree sphere.
pub fn destination(from: [f64; 2], bearing: f64, range_nm: f64) -> [f64; 2] {
    let d = (range_nm / 60.0).to_radians();
    let brg = bearing.to_radians();
    let lat1 = from[1].to_radians();
    let lon1 = from[0].to_radians();
    let lat2 = (lat1.sin() * d.cos() + lat1.cos() * d.sin() * brg.cos()).asin();
    let lon2 = lon1 + (brg.sin() * d.sin() * lat1.cos()).atan2(d.cos() - lat1.sin() * lat2.sin());
    [
        ((lon2.to_degrees() + 540.0) % 360.0) - 180.0,
        lat2.to_degrees(),
    ]
}

/// Nautical miles in `units` (`nm`, `yds`, `km`, `m`); `None` for an unknown unit.
pub fn convert_nm(value_nm: f64, units: &str) -> Option<f64> {
    match units {
        "nm" => Some(value_nm),
        "yds" => Some(value_nm * YARDS_PER_NM),
        "km" => Some(value_nm * KM_PER_NM),
        "m" => Some(value_nm * METRES_PER_NM),
        _ => None,
    }
}

/// Round half away from zero to `places` decimals.
pub fn round_to(x: f64, places: i32) -> f64 {
    let scale = 10f64.powi(places);
    (x * scale).round() / scale
}

/// Signed smallest difference `b - a` between two angles, in `(-180, 180]`.
pub fn angle_diff(a: f64, b: f64) -> f64 {
    let d = (b - a).rem_euclid(360.0);
    if d > 180.0 { d - 360.0 } else { d }
}

/// ISO-8601 / RFC 3339 time → epoch milliseconds (a time without an offset is UTC).
pub fn parse_time(text: &str) -> Option<i64> {
    let text = text.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Some(t.timestamp_millis());
    }
    NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f")
        .ok()
        .map(|t| t.and_utc().timestamp_millis())
}

/// Epoch milliseconds → `2024-01-15T10:30:00Z` (milliseconds shown only when non-zero).
pub fn format_time(ms: i64) -> String {
    let fmt = if ms % 1000 == 0 {
        SecondsFormat::Secs
    } else {
        SecondsFormat::Millis
    };
    DateTime::from_timestamp_millis(ms)
        .map(|t| t.to_rfc3339_opts(fmt, true))
        .unwrap_or_else(|| format!("{ms} ms"))
}

/// Haversine distance in metres on the 6 371 000 m sphere (the `geodesic_distance` of the
/// sensor and TMA specs, which work in metres rather than the 60-nm-per-degree sphere).
pub fn haversine_m(a: [f64; 2], b: [f64; 2]) -> f64 {
    gc_degrees(a, b).to_radians() * 6_371_000.0
}

/// A number as Python's `str()` writes it in the specs' labels: `150.0`, `0.087`, `12`.
pub fn py_num(x: f64) -> String {
    if x.is_finite() && x.fract() == 0.0 && x.abs() < 1e16 {
        format!("{x:.1}")
    } else {
        format!("{x}")
    }
}

/// A JSON number as Python would print it: integers stay integers (`3032`), floats keep
/// their point (`150.0`).
pub fn py_value(v: &Value) -> String {
    match v {
        Value::Number(n) if n.is_i64() || n.is_u64() => n.to_string(),
        Value::Number(n) => py_num(n.as_f64().unwrap_or_default()),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A name made safe for an artifact file name: spaces become underscores.
pub fn file_safe(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_whitespace() || c == '/' {
                '_'
            } else {
                c
            }
        })
        .collect()
}

/// A sensor's cuts (either naming), in stored order.
pub fn cuts(f: &Value) -> &[Value] {
    prop(f, "cuts")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn both_namings_read_the_same() {
        let a = json!({"id": "t", "properties": {"debrief:kind": "track", "debrief:positions": [
            {"time": "2024-01-15T10:30:00Z", "coordinates": [-1.0, 50.0], "course": 45.0}]}});
        let b = json!({"id": "t", "properties": {"kind": "TRACK", "positions": [
            {"time": "2024-01-15T10:30:00Z", "course": 45.0}]},
            "geometry": {"type": "LineString", "coordinates": [[-1.0, 50.0]]}});
        assert!(is_track(&a) && is_track(&b));
        assert_eq!(fixes(&a), fixes(&b));
        assert_eq!(key_for(&a, "value"), "debrief:value");
        assert_eq!(key_for(&b, "value"), "value");
    }

    #[test]
    fn one_degree_is_sixty_miles() {
        assert!((range_nm([0.0, 0.0], [0.0, 1.0]) - 60.0).abs() < 1e-9);
        assert!((bearing_deg([0.0, 0.0], [1.0, 0.0]) - 90.0).abs() < 1e-9);
    }

    #[test]
    fn interpolation_between_fixes() {
        let f = |t: &str, lon: f64, c: f64| Fix {
            index: 0,
            time: parse_time(t).unwrap(),
            coord: [lon, 50.0],
            course: Some(c),
            speed: Some(10.0),
            depth: None,
        };
        let fx = vec![
            f("2024-01-15T10:00:00Z", 0.0, 350.0),
            f("2024-01-15T10:10:00Z", 1.0, 10.0),
        ];
        let mid = fix_at(&fx, parse_time("2024-01-15T10:05:00Z").unwrap()).unwrap();
        assert!((mid.coord[0] - 0.5).abs() < 1e-12);
        assert!(mid.course.unwrap().abs() < 1e-9 || (mid.course.unwrap() - 360.0).abs() < 1e-9);
        assert!(fix_at(&fx, parse_time("2024-01-15T11:00:00Z").unwrap()).is_none());
    }

    fn point() -> impl Strategy<Value = [f64; 2]> {
        (-179.0f64..179.0, -80.0f64..80.0).prop_map(|(a, b)| [a, b])
    }

    proptest! {
        #[test]
        fn range_is_symmetric_and_obeys_the_triangle_inequality(a in point(), b in point(), c in point()) {
            let ab = range_nm(a, b);
            prop_assert!((ab - range_nm(b, a)).abs() < 1e-6);
            prop_assert!(ab <= range_nm(a, c) + range_nm(c, b) + 1e-6);
            prop_assert!(ab >= 0.0);
        }

        #[test]
        fn destination_inverts_range_and_bearing(a in point(), brg in 0.0f64..360.0, r in 0.1f64..500.0) {
            let b = destination(a, brg, r);
            prop_assert!((range_nm(a, b) - r).abs() < 1e-6 * r.max(1.0));
            prop_assert!(angle_diff(bearing_deg(a, b), brg).abs() < 1e-5);
        }

        #[test]
        fn interpolation_hits_the_original_fixes(lons in proptest::collection::vec(-10.0f64..10.0, 2..8)) {
            let fx: Vec<Fix> = lons.iter().enumerate().map(|(i, &lon)| Fix {
                index: i, time: i as i64 * 60_000, coord: [lon, 50.0], course: Some(0.0), speed: Some(1.0), depth: None,
            }).collect();
            for f in &fx {
                prop_assert_eq!(fix_at(&fx, f.time).map(|x| x.coord), Some(f.coord));
            }
        }
    }
}
