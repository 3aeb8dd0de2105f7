//! Debrief's tool catalogue, implemented natively: the category tables of
//! `toolgate-analysis-tools` and `toolgate-editing-tools` chained in one listing order, with the
//! types a caller of a catalogue tool needs (`toolgate calc`, the conformance test).

use toolgate_analysis_tools as analysis;
use toolgate_editing_tools as editing;
pub use toolgate_tool_catalogue::{CalcInput, Entry, Item, ToolError};

/// Every catalogue tool, category by category in the order of value.
pub fn entries() -> impl Iterator<Item = &'static Entry> {
    analysis::MEASUREMENT
        .iter()
        .chain(editing::MANIPULATION)
        .chain(editing::STYLING)
        .chain(analysis::SENSOR)
        .chain(analysis::DETECTION)
        .chain(editing::SHAPE)
        .chain(editing::REFERENCE)
        .chain(analysis::ANALYSIS)
        .chain(editing::EXPORT)
}

/// The catalogue tool with this id.
pub fn entry(id: &str) -> Option<&'static Entry> {
    entries().find(|e| e.id == id)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::outcome;
    use serde_json::{Map, json};

    use super::*;

    #[test]
    fn the_registry_outcome_of_a_rate_tool_is_a_chartable_series() {
        let track = json!({"type": "Feature", "id": "t", "geometry": {"type": "LineString",
            "coordinates": [[0.0, 50.0], [0.01, 50.0], [0.02, 50.01], [0.03, 50.03]]},
            "properties": {"kind": "TRACK", "positions": [
                {"time": "2024-01-15T10:00:00Z", "course": 90.0, "speed": 10.0},
                {"time": "2024-01-15T10:01:00Z", "course": 80.0, "speed": 11.0},
                {"time": "2024-01-15T10:02:00Z", "course": 60.0, "speed": 12.0},
                {"time": "2024-01-15T10:03:00Z", "course": 30.0, "speed": 14.0}]}});
        let features = vec![track];
        let params = Map::new();
        for id in ["course-rate-calc", "speed-rate-calc"] {
            let e = entry(id).unwrap();
            let out = outcome(e, (e.run)(&CalcInput::new(&features, &params))).unwrap();
            let series = out.data["series"]
                .as_array()
                .unwrap_or_else(|| panic!("{id}: {}", out.data));
            assert!(series.len() >= 2, "{id}");
            assert!(series.iter().all(|r| r["time"].is_string()), "{id}");
        }
    }
}
