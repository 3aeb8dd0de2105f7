//! One name per feature: the name the summary lists and targeting matches (`model`) is the name
//! the analysis tools use in their results and refusals. A model copies names from the summary
//! into `featureNames` and reads them back in tool replies; two rules made the same feature two
//! things.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Map, Value, json};
use toolgate_core::ToolCall;
use toolgate_plot::model::{self, Feature};

/// Real REP lines (a track, a narrative, a text annotation, sensor data for a platform without
/// positions) as Debrief's importer reads them.
const REP: &str = "\
951212 050000 NELSON @C 22 11 10.63 N 21 41 52.37 W 269.7 2.0 0
951212 050100 NELSON @C 22 11 10.58 N 21 42 2.98 W 269.7 2.0 0
;NARRATIVE: 951212 050000 NELSON Contact gained on the towed array
;TEXT: @A 22 12 0 N 21 40 0 W Exercise area boundary
;SENSOR: 951212 050000 GHOST @A NULL 10 NULL sonar
";

fn features() -> Vec<Value> {
    let import = toolgate_plot::rep::parse_rep("names.rep", REP).unwrap();
    let mut features = import.features();
    // A track from another tool's GeoJSON that carries a `name` beside its platform (Debrief's
    // track schema has no `name`; `display_name` is its override).
    let mut named = features[0].clone();
    named["id"] = json!("track-imported");
    named["properties"]["name"] = json!("Nelson leg 2");
    features.push(named);
    features
}

/// What `track-stats` says about one feature: its `name` when it is a track, else the refusal
/// that names it.
fn tool_text(f: &Value) -> String {
    let call = ToolCall::new("track-stats", Map::new()).with_subject(json!([f]));
    match toolgate_plot::tools::run(&call) {
        Ok(out) => out.data["name"].as_str().unwrap().to_owned(),
        Err(e) => e.to_string(),
    }
}

#[test]
fn tools_name_every_feature_as_the_summary_and_targeting_do() {
    let features = features();
    assert_eq!(
        features
            .iter()
            .map(|f| Feature(f).kind())
            .collect::<Vec<_>>(),
        ["TRACK", "NARRATIVE", "TEXT", "SENSOR", "TRACK"]
    );
    let mut disagree = Vec::new();
    for f in &features {
        let name = model::display_name(f);
        let said = tool_text(f);
        let agrees = if Feature(f).kind() == "TRACK" {
            said == name
        } else {
            said.contains(&format!("\"{name}\""))
        };
        if !agrees {
            disagree.push(format!(
                "{}: summary {name:?}, tool {said:?}",
                model::feature_id(f)
            ));
        }
    }
    assert!(disagree.is_empty(), "{}", disagree.join("\n"));
}

#[test]
fn a_track_is_named_by_its_platform_unless_display_name_overrides_it() {
    let features = features();
    assert_eq!(model::display_name(&features[0]), "NELSON");
    assert_eq!(model::display_name(&features[4]), "NELSON");
    let mut renamed = features[0].clone();
    renamed["properties"]["display_name"] = json!("  HMS Nelson ");
    assert_eq!(model::display_name(&renamed), "HMS Nelson");
    assert_eq!(tool_text(&renamed), "HMS Nelson");
}
