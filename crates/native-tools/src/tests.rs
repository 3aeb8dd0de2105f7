//! Tests across every tool (their fixtures: `toolgate_tool_catalogue::testing`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use toolgate_core::{CallError, Edit, Effect, ParamValidator, Provider, Registry, ToolCall};

use toolgate_tool_catalogue::testing::{boat1, call, circle, point, track};

use super::{NativeTools, PROVIDER_NAME, run};

/// toolgate's own (legacy) tools: those the catalogue does not define. The catalogue's tools
/// are checked against Debrief's golden fixtures (crates/calc/tests/conformance.rs) and by
/// `catalogue_entries_are_sound` below.
fn specs() -> Vec<toolgate_core::ToolSpec> {
    super::specs()
        .into_iter()
        .filter(|s| super::catalogue::entry(&s.id).is_none())
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Specs

const EXPECTED: &[(&str, &str, &str)] = &[
    ("track-stats", "track/statistics", "analysis"),
    ("range-bearing", "dataset/range_bearing_series", "analysis"),
    ("area-summary", "region/statistics", "analysis"),
    (
        "speed-filter",
        "dataset/speed_filtered_positions",
        "analysis",
    ),
];

#[test]
fn specs_are_complete_and_classified() {
    let specs = specs();
    let got: Vec<(&str, &str, &str)> = specs
        .iter()
        .map(|s| {
            (
                s.id.as_str(),
                s.output_kind.as_ref().unwrap().as_str(),
                s.category.as_str(),
            )
        })
        .collect();
    assert_eq!(got, EXPECTED);
    for s in &specs {
        let read = s.id == "track-stats"
            || s.id == "range-bearing"
            || s.id == "area-summary"
            || s.id == "speed-filter";
        let want = if read { Effect::Read } else { Effect::Mutating };
        assert_eq!(s.effect(), want, "{}", s.id);
        assert_eq!(s.input_schema["type"], "object", "{}", s.id);
        assert_eq!(s.input_schema["additionalProperties"], false, "{}", s.id);
        assert!(s.title.chars().next().unwrap().is_uppercase(), "{}", s.id);
        assert!(!s.title.contains('-'), "{}", s.id);
        assert!(
            s.description.ends_with('.') && s.description.len() > 40,
            "{}",
            s.id
        );
        assert!(
            s.annotations["debrief:selectionRequirements"].is_array(),
            "{}",
            s.id
        );
        assert_eq!(s.annotations["debrief:version"], "1.0.0");
        // every property has a description a model can read
        for p in s.params() {
            assert!(!p.description.is_empty(), "{}.{}", s.id, p.name);
        }
    }
    let all = super::specs();
    let titles: Vec<&str> = all.iter().map(|s| s.title.as_str()).collect();
    assert!(titles.contains(&"Set Track Color"));
    assert!(titles.contains(&"Trim Track"));
}

#[test]
fn every_schema_compiles_and_defaults_validate() {
    for s in specs() {
        let v = ParamValidator::compile(&s.id, &s.input_schema)
            .unwrap_or_else(|e| panic!("{}: {e}", s.id));
        for p in s.params() {
            if let Some(d) = p.default_value {
                let mut m = Map::new();
                m.insert(p.name.clone(), d.clone());
                for r in s.input_schema["required"].as_array().into_iter().flatten() {
                    let r = r.as_str().unwrap();
                    if r != p.name {
                        m.insert(r.to_owned(), sample_for(&s.id, r));
                    }
                }
                v.validate(&m)
                    .unwrap_or_else(|e| panic!("{}.{} default {d}: {e:?}", s.id, p.name));
            }
        }
        let mut unknown = Map::new();
        unknown.insert("no_such_param".into(), json!(1));
        let errs = v.validate(&unknown).unwrap_err();
        assert!(
            errs.iter()
                .any(|e| e == "unknown parameter \"no_such_param\""),
            "{}: {errs:?}",
            s.id
        );
    }
}

fn sample_for(tool: &str, param: &str) -> Value {
    match (tool, param) {
        (_, "color") => json!("red"),
        (_, "start_time") => json!("1995-12-12T06:00:00Z"),
        (_, "end_time") => json!("1995-12-12T07:00:00Z"),
        (_, "pattern") => json!("grid"),
        _ => json!(null),
    }
}

/// The validator of any tool, legacy or catalogue.
fn validator(id: &str) -> ParamValidator {
    let s = super::specs().into_iter().find(|s| s.id == id).unwrap();
    ParamValidator::compile(&s.id, &s.input_schema).unwrap()
}

fn params(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap()
}

#[test]
fn schema_choices() {
    let enlarge = validator("enlarge-shape");
    assert!(
        enlarge
            .validate(&params(json!({"scale_factor": 1.5})))
            .is_ok()
    );
    assert!(
        enlarge
            .validate(&params(json!({"scale_factor": 2})))
            .is_ok()
    );
    assert!(
        enlarge
            .validate(&params(json!({"scale_factor": 1.0})))
            .is_ok(),
        "1.0 is the spec's identity"
    );
    let errs = enlarge
        .validate(&params(json!({"scale_factor": 4})))
        .unwrap_err();
    assert_eq!(
        errs,
        ["parameter \"scale_factor\" must be one of: 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 5.0"]
    );
    assert!(
        enlarge
            .validate(&params(json!({"origin": [1.0, 2.0]})))
            .is_ok()
    );
    assert!(
        enlarge
            .validate(&params(json!({"origin": "[1, 2]"})))
            .is_ok()
    );
    assert!(enlarge.validate(&params(json!({"origin": [1.0]}))).is_err());

    let refs = validator("generate-reference-points");
    assert!(
        refs.validate(&params(json!({"pattern": "grid", "count": 10000})))
            .is_ok()
    );
    assert!(
        refs.validate(&params(json!({"pattern": "grid", "count": 10001})))
            .is_err()
    );
    assert!(
        refs.validate(&params(json!({"pattern": "grid", "count": 0})))
            .is_err()
    );
    assert!(
        refs.validate(&params(json!({"pattern": "grid", "count": 2.5})))
            .is_err()
    );
    assert!(
        refs.validate(&params(json!({"pattern": "spiral"})))
            .is_err()
    );
    let spec = super::specs()
        .into_iter()
        .find(|s| s.id == "generate-reference-points")
        .unwrap();
    let count = spec
        .params()
        .into_iter()
        .find(|p| p.name == "count")
        .unwrap();
    assert_eq!(count.value_type, "integer");
    assert!(count.choices.is_empty(), "no 10000-item enum");

    let trim = validator("trim-track");
    let errs = trim.validate(&params(json!({}))).unwrap_err();
    assert_eq!(
        errs,
        [
            "missing required parameter \"start_time\"",
            "missing required parameter \"end_time\""
        ]
    );

    // every declared parameter is visible to a listing
    let buffer = super::specs()
        .into_iter()
        .find(|s| s.id == "buffer-zone-generator")
        .unwrap();
    assert_eq!(buffer.params().len(), 4);
}

#[tokio::test]
async fn registers_in_a_registry() {
    let mut registry = Registry::new();
    let added = registry.register(Arc::new(NativeTools)).await.unwrap();
    assert_eq!(added, EXPECTED.len() + super::catalogue::entries().count());
    let listing = registry.listing();
    let mut mutating: Vec<&str> = listing
        .iter()
        .filter(|l| l.mutating)
        .map(|l| l.id.as_str())
        .collect();
    // The legacy mutating tools, plus every catalogue tool whose result type is a mutation or
    // an addition (the registry must classify each by its declared kind).
    let mut expected: Vec<&str> = super::catalogue::entries()
        .filter(|e| toolgate_core::OutputKind::new(e.output_kind).is_mutation())
        .map(|e| e.id)
        .collect();
    for id in [
        "set-track-color",
        "apply-symbol-style",
        "label-interval",
        "symbol-interval",
        "generate-courses-speeds",
        "trim-track",
        "move-shape",
        "enlarge-shape",
        "buffer-zone-generator",
        "generate-reference-points",
    ] {
        if !expected.contains(&id) {
            expected.push(id);
        }
    }
    mutating.sort_unstable();
    expected.sort_unstable();
    assert_eq!(mutating, expected);
    // registering twice is a duplicate, named by provider
    let err = registry
        .register(Arc::new(NativeTools))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains(PROVIDER_NAME), "{err}");

    let resolved = registry.resolve("track-stats").unwrap();
    let out = resolved
        .call(&call("track-stats", json!({}), &boat1()))
        .await
        .unwrap();
    assert_eq!(out.data["point_count"], 402);
    assert_eq!(NativeTools.name(), "debrief-native");
}

#[test]
fn unknown_tool_is_not_found() {
    let err = run(&call("make-it-pretty", json!({}), &json!([]))).unwrap_err();
    assert!(matches!(err, CallError::NotFound { .. }));
    assert!(err.to_string().contains("set-track-color"), "{err}");
}

// ---------------------------------------------------------------------------------------------
// Every tool: outcome shape, input untouched

/// A subject and parameters every tool accepts.
fn happy_call(id: &str) -> ToolCall {
    let t = track("t1", "NELSON", 5);
    let (params, subject) = match id {
        "range-bearing" => (json!({}), json!([t, point("p", "Datum A")])),
        "area-summary" => (json!({}), json!([t, point("p", "Datum A")])),
        "speed-filter" => (json!({"max_knots": 50}), json!([t])),
        _ => (json!({}), json!([t])),
    };
    call(id, params, &subject)
}

#[test]
fn every_tool_runs_leaves_input_alone_and_reports_its_kind() {
    for s in specs() {
        let c = happy_call(&s.id);
        let before = c.clone();
        let out = run(&c).unwrap_or_else(|e| panic!("{}: {e}", s.id));
        assert_eq!(
            c, before,
            "{}: the call (and its subject) is unchanged",
            s.id
        );
        assert_eq!(
            Some(&out.kind),
            s.output_kind.as_ref(),
            "{}: reports its declared kind",
            s.id
        );
        assert!(!out.summary.is_empty(), "{}", s.id);
        match s.effect() {
            Effect::Mutating => {
                let cs = out
                    .change_set
                    .as_ref()
                    .unwrap_or_else(|| panic!("{}", s.id));
                assert!(!cs.label.is_empty(), "{}", s.id);
                assert!(!cs.edits.is_empty(), "{}: changes something", s.id);
                for e in &cs.edits {
                    let Edit::Upsert { id, item } = e else {
                        panic!("{}: only upserts", s.id)
                    };
                    assert_eq!(item["id"].as_str(), Some(id.as_str()), "{}", s.id);
                }
            }
            Effect::Read => {
                assert!(out.change_set.is_none(), "{}", s.id);
                assert!(out.data.is_object(), "{}", s.id);
            }
        }
    }
}

#[test]
fn wrong_kind_and_empty_subject_are_invalid_input() {
    let circle_only = json!([circle("c1", "Zone", [0.0, 0.0], 1000.0)]);
    let track_only = json!([track("t1", "NELSON", 3)]);
    for s in specs() {
        let good = happy_call(&s.id);
        for subject in [json!([]), json!(null)] {
            let c = ToolCall {
                subject,
                ..good.clone()
            };
            let err = run(&c).unwrap_err();
            assert!(
                matches!(&err, CallError::InvalidInput { message } if message.contains("needs")),
                "{}: {err}",
                s.id
            );
        }
        let wrong = if s.id.contains("shape") || s.id == "generate-reference-points" {
            &track_only
        } else if s.id == "area-summary" || s.id == "range-bearing" {
            continue;
        } else {
            &circle_only
        };
        let c = ToolCall {
            subject: wrong.clone(),
            ..good.clone()
        };
        let err = run(&c).unwrap_err().to_string();
        assert!(err.contains("got "), "{}: {err}", s.id);
    }
    let err = run(&call("track-stats", json!({}), &json!("boat1"))).unwrap_err();
    assert!(
        err.to_string().contains("array of GeoJSON features"),
        "{err}"
    );
}

// ---------------------------------------------------------------------------------------------
// Never panic on odd input

fn any_coord() -> impl Strategy<Value = Value> {
    prop_oneof![
        (-200.0..200.0f64, -100.0..100.0f64).prop_map(|(x, y)| json!([x, y])),
        Just(json!([])),
        Just(json!(["a", 1])),
        Just(json!(null)),
        (-1.0..1.0f64).prop_map(|x| json!([x])),
    ]
}

fn any_geometry() -> impl Strategy<Value = Value> {
    let coords = || proptest::collection::vec(any_coord(), 0..6);
    prop_oneof![
        any_coord().prop_map(|c| json!({"type": "Point", "coordinates": c})),
        coords().prop_map(|c| json!({"type": "LineString", "coordinates": c})),
        coords().prop_map(|c| json!({"type": "Polygon", "coordinates": [c]})),
        coords().prop_map(|c| json!({"type": "MultiPolygon", "coordinates": [[c]]})),
        coords().prop_map(|c| json!({"type": "MultiPoint", "coordinates": c})),
        Just(json!(null)),
        Just(json!("nonsense")),
    ]
}

fn any_feature() -> impl Strategy<Value = Value> {
    let kinds = prop_oneof![
        Just("TRACK"),
        Just("POINT"),
        Just("ZONE"),
        Just("CIRCLE"),
        Just("RECTANGLE"),
        Just("POLY"),
        Just("VECTOR"),
        Just("TEXT"),
        Just("LINE"),
        Just(""),
    ];
    let times = proptest::collection::vec(
        prop_oneof![
            (0i64..10).prop_map(|m| json!({"time": format!("2026-03-01T00:0{m}:00Z"), "speed": m})),
            Just(json!({"time": "garbage"})),
            Just(json!(7)),
            Just(json!({})),
        ],
        0..6,
    );
    (kinds, any_geometry(), times, any::<bool>(), any::<bool>()).prop_map(
        |(kind, geometry, positions, with_id, with_extras)| {
            let mut f = json!({
                "type": "Feature",
                "geometry": geometry,
                "properties": {"kind": kind, "positions": positions}
            });
            if with_id {
                f["id"] = json!("f");
            }
            if with_extras {
                f["properties"]["center"] = json!([0.0, 0.0]);
                f["properties"]["radius"] = json!(-5);
                f["properties"]["style"] = json!("red");
                f["properties"]["zones"] = json!([{"name": 3}]);
                f["properties"]["position_style_overrides"] = json!([null]);
            }
            f
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn tools_never_panic(features in proptest::collection::vec(any_feature(), 0..4)) {
        let subject = Value::Array(features);
        for s in specs() {
            let mut c = happy_call(&s.id);
            c.subject = subject.clone();
            let before = c.clone();
            let _ = run(&c);
            prop_assert_eq!(&c, &before);
        }
    }
}

#[test]
fn catalogue_entries_are_sound() {
    // Every catalogue tool: a schema the registry's validator compiles, a declared kind that
    // classifies it, a spec id and version, invalid_input on an empty selection, and a
    // well-formed error (never a panic) on wrong-kind and non-finite input.
    let nan_track = json!({"type": "Feature", "id": "n", "geometry": {"type": "LineString",
        "coordinates": [[0.0, 0.0], [0.1, 0.1]]}, "properties": {"kind": "TRACK",
        "positions": [{"time": "2024-01-15T10:00:00Z", "coordinates": ["NaN", 0.0]},
                      {"time": "not a time", "coordinates": [0.1, 0.1]}]}});
    let junk = [
        json!([]),
        json!([{"type": "Feature", "id": "x", "geometry": null, "properties": {"kind": "NARRATIVE"}}]),
        json!([nan_track.clone(), nan_track]),
        json!([{"no": "feature"}, 3, null]),
    ];
    for e in super::catalogue::entries() {
        let spec = e.spec();
        toolgate_core::ParamValidator::compile(e.id, &spec.input_schema)
            .unwrap_or_else(|err| panic!("{}: {err}", e.id));
        assert!(spec.annotations.contains_key("debrief:specId"), "{}", e.id);
        assert!(
            spec.annotations.contains_key("debrief:specVersion"),
            "{}",
            e.id
        );
        assert_eq!(
            spec.output_kind.as_ref().map(|k| k.as_str()),
            Some(e.output_kind)
        );
        let params = Map::new();
        // An empty selection is the spec's invalid_input, for every tool.
        let err = (e.run)(&super::catalogue::CalcInput::new(&[], &params))
            .err()
            .unwrap_or_else(|| panic!("{} accepted an empty selection", e.id));
        assert_eq!(
            err.category,
            toolgate_tool_catalogue::ErrorCategory::InvalidInput,
            "{}",
            e.id
        );
        for features in &junk {
            let features = features.as_array().unwrap().clone();
            let input = super::catalogue::CalcInput::new(&features, &params);
            // Must return (Ok or the tool's own error), not panic.
            let _ = (e.run)(&input);
        }
    }
}

#[test]
fn one_spec_alone_is_the_listed_spec() {
    let all = super::specs();
    assert_eq!(all.len(), super::ids().len());
    for spec in &all {
        let alone = super::spec(&spec.id).unwrap();
        assert_eq!(
            serde_json::to_value(&alone).unwrap(),
            serde_json::to_value(spec).unwrap(),
            "{}",
            spec.id
        );
    }
    assert!(super::spec("no-such-tool").is_none());
}

#[test]
fn every_builtin_schema_passes_the_registration_checks() {
    // The registry defers these checks for built-in providers to a tool's first call; the
    // schemas are fixed in the code, so they are checked here instead.
    for spec in super::specs() {
        ParamValidator::compile(&spec.id, &spec.input_schema)
            .unwrap_or_else(|e| panic!("{e}"))
            .compiled()
            .unwrap_or_else(|e| panic!("{e}"));
    }
}
