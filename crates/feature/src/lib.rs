//! Reading the plot feature model (reference §11.1) from GeoJSON values.
//!
//! Features stay `serde_json::Value`s: plots carry many optional, evolving properties (sensors,
//! TUAs, overrides) and a session must save exactly what it loaded, so a lossy typed model would
//! be the wrong tool. [`Feature`] is a borrowed view that reads the few fields the domain needs,
//! with one rule for each — the summary, targeting, confirmations and the analysis tools all
//! name a feature through [`Feature::display_name`], so the name a model reads in one place is
//! the name it can use in another.

#![warn(unreachable_pub)]
use serde_json::{Map, Value};

/// A borrowed view of one GeoJSON feature. It never fails: a field that is missing, blank or of
/// the wrong type reads as absent.
#[derive(Debug, Clone, Copy)]
pub struct Feature<'a>(pub &'a Value);

impl<'a> Feature<'a> {
    /// The `properties` object, when there is one.
    pub fn properties(self) -> Option<&'a Map<String, Value>> {
        self.0.get("properties").and_then(Value::as_object)
    }

    /// A string property, trimmed; `None` when absent, not a string, or blank.
    pub fn text(self, key: &str) -> Option<&'a str> {
        self.properties()
            .and_then(|p| p.get(key))
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
    }

    /// `properties.kind` (`TRACK`, `POINT`, `NARRATIVE`, …), or "" when absent.
    pub fn kind(self) -> &'a str {
        self.text("kind").unwrap_or_default()
    }

    /// The feature's id: the top-level `id` (a non-empty string, or a number stringified), else
    /// `properties.id`.
    pub fn id(self) -> Option<String> {
        fn of(v: Option<&Value>) -> Option<String> {
            match v? {
                Value::String(s) if !s.trim().is_empty() => Some(s.clone()),
                Value::Number(n) => Some(n.to_string()),
                _ => None,
            }
        }
        of(self.0.get("id")).or_else(|| of(self.0.pointer("/properties/id")))
    }

    /// The name a feature carries, by Debrief's rule (the spike's `featureDisplayName`, shared
    /// by summary, targeting and confirmation), trimmed:
    ///
    /// * TRACK: `display_name` (the schema's override of the registry's platform metadata),
    ///   then `platform_name`, then `platform_id` — REP tracks carry the platform's name in both.
    ///   A track's `name`, which the schema does not define, is not its name.
    /// * POINT (a reference location): `name` (required by the schema), then `label`.
    /// * Anything else: `label`, then `name`. A narrative's or text annotation's `text` is
    ///   content, not a name: a sentence would make a poor target and a worse list entry.
    pub fn name(self) -> Option<&'a str> {
        let keys: &[&str] = match self.kind() {
            "TRACK" => &["display_name", "platform_name", "platform_id"],
            "POINT" => &["name", "label"],
            _ => &["label", "name"],
        };
        keys.iter().find_map(|k| self.text(k))
    }

    /// The name people and models use for the feature: [`Feature::name`], else the id, else
    /// `(unnamed)`.
    pub fn display_name(self) -> String {
        self.name()
            .map(str::to_owned)
            .or_else(|| self.id())
            .unwrap_or_else(|| "(unnamed)".to_owned())
    }

    /// The platform of a track (`platform_name`, else `platform_id`); `None` for other kinds.
    pub fn platform(self) -> Option<&'a str> {
        if self.kind() != "TRACK" {
            return None;
        }
        self.text("platform_name")
            .or_else(|| self.text("platform_id"))
    }

    /// `(start, end)` ISO strings of a track; a narrative gives its single `time` twice.
    pub fn time_span(self) -> Option<(&'a str, &'a str)> {
        match self.kind() {
            "TRACK" => Some((self.text("start_time")?, self.text("end_time")?)),
            "NARRATIVE" => self.text("time").map(|t| (t, t)),
            _ => None,
        }
    }

    /// How many points a feature has: track positions, multi-geometry members, 1 for a point.
    pub fn point_count(self) -> Option<usize> {
        match self.kind() {
            "TRACK" => self
                .0
                .pointer("/properties/positions")
                .and_then(Value::as_array)
                .map(Vec::len),
            "MULTI_POINT" | "MULTI_POLYGON" => self
                .0
                .pointer("/geometry/coordinates")
                .and_then(Value::as_array)
                .map(Vec::len),
            "POINT" => Some(1),
            _ => None,
        }
    }

    /// `[west, south, east, north]` of the feature's geometry.
    pub fn bbox(self) -> Option<[f64; 4]> {
        geometry_bbox(self.0.get("geometry")?)
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

    fn name(v: &Value) -> String {
        Feature(v).display_name()
    }

    #[test]
    fn names_follow_the_rules() {
        let t = json!({"id": "t1", "properties": {"kind": "TRACK", "platform_name": "", "platform_id": "NELSON"}});
        assert_eq!(name(&t), "NELSON");
        let p = json!({"id": 7, "properties": {"kind": "POINT", "name": "Datum A"}});
        assert_eq!(name(&p), "Datum A");
        assert_eq!(Feature(&p).id().as_deref(), Some("7"));
        let c = json!({"id": "c1", "properties": {"kind": "CIRCLE"}});
        assert_eq!(name(&c), "c1");
    }

    #[test]
    fn a_track_is_its_platform_unless_display_name_overrides_it() {
        let t = json!({"id": "t", "properties": {"kind": "TRACK", "name": "leg 2",
            "platform_id": "NELSON", "platform_name": " HMS Nelson "}});
        assert_eq!(name(&t), "HMS Nelson");
        assert_eq!(Feature(&t).platform(), Some("HMS Nelson"));
        let mut o = t;
        o["properties"]["display_name"] = json!("Nelson (exercise)");
        assert_eq!(name(&o), "Nelson (exercise)");
    }

    #[test]
    fn content_is_not_a_name_and_labels_come_before_names() {
        let n = json!({"id": "narrative-1", "properties": {"kind": "NARRATIVE", "text": "Contact gained"}});
        assert_eq!(name(&n), "narrative-1");
        let c =
            json!({"id": "c", "properties": {"kind": "CIRCLE", "label": "Box", "name": "other"}});
        assert_eq!(name(&c), "Box");
        let p = json!({"id": "p", "properties": {"kind": "POINT", "label": "L", "name": "N"}});
        assert_eq!(name(&p), "N");
    }

    #[test]
    fn ids_fall_back_to_properties_and_then_to_unnamed() {
        let f = json!({"id": "", "properties": {"kind": "TEXT", "id": 12}});
        assert_eq!(Feature(&f).id().as_deref(), Some("12"));
        assert_eq!(name(&f), "12");
        assert_eq!(name(&json!({"properties": {}})), "(unnamed)");
        assert_eq!(Feature(&json!({"properties": {}})).kind(), "");
    }

    #[test]
    fn spans_counts_and_boxes() {
        let t = json!({"id": "t", "geometry": {"type": "LineString", "coordinates": [[1.0, 2.0], [3.0, -1.0]]},
            "properties": {"kind": "TRACK", "start_time": "a", "end_time": "b", "positions": [{}, {}]}});
        assert_eq!(Feature(&t).time_span(), Some(("a", "b")));
        assert_eq!(Feature(&t).point_count(), Some(2));
        assert_eq!(Feature(&t).bbox(), Some([1.0, -1.0, 3.0, 2.0]));
        let n = json!({"properties": {"kind": "NARRATIVE", "time": "t0"}});
        assert_eq!(Feature(&n).time_span(), Some(("t0", "t0")));
        assert_eq!(Feature(&n).platform(), None);
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
