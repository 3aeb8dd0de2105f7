//! The eight quickstart / transcript-replay scenarios of reference §8.1 (5 happy paths, 3
//! fail-safes) against the real registry, native tools and session.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::atomic::Ordering;

use serde_json::json;
use toolgate_core::TokenCounter;
use toolgate_core::flow::Answer;
use toolgate_core::telemetry::{Confirmation, Validation, schema_problems};
use toolgate_plot::debrief::{LIST_TOOLS, RUN_TOOL, SEARCH, SUMMARIZE};

use common::{PLOT, Scripted, harness, hash_tree, parse};

#[tokio::test]
async fn happy_paths_h1_to_h5() {
    let h = harness().await;
    let disk_before = hash_tree(h.dir.path());
    let never = Scripted::new(vec![]);

    // H1: "open the Exercise Alpha day-1 plot"
    let reply = parse(
        &h.debrief
            .call(SEARCH, &json!({"text": "Alpha", "open": true}), &never)
            .await
            .unwrap()
            .text,
    );
    assert_eq!(reply["opened"], PLOT, "{reply}");
    assert_eq!(h.debrief.session().active_id(), Some(PLOT));

    // H2: "what's in this plot?"
    let text = h
        .debrief
        .call(SUMMARIZE, &json!({}), &never)
        .await
        .unwrap()
        .text;
    let reply = parse(&text);
    assert_eq!(reply["total"], 2);
    assert_eq!(
        reply["tokens"].as_u64().unwrap() as usize,
        TokenCounter::default().count(&text),
        "tokens is the real count of exactly the reply"
    );
    assert!(
        reply.get("plotId").is_none() && reply.get("openPlots").is_none(),
        "one plot open: every tool defaults to it, so its id is not repeated: {reply}"
    );
    let features = reply["features"].as_str().unwrap();
    assert!(
        features.starts_with(
            "TRACK id|name (all: platform NELSON, span 00:00-06:00, points 3, where SW local)\ntrack-1|HMS Nelson\nPOINT "
        ),
        "{features}"
    );
    assert!(features.contains("\npoint-1|Datum A"), "{reply}");

    // H3: "colour the submarine track red": listTools → runTool on the selection
    let tools = parse(
        &h.debrief
            .call(LIST_TOOLS, &json!({}), &never)
            .await
            .unwrap()
            .text,
    );
    let stc = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == "set-track-color")
        .unwrap();
    assert_eq!(stc["mutating"], true);
    h.debrief
        .session()
        .select(PLOT, vec!["track-1".into()])
        .unwrap();
    let doc_before = h.debrief.session().plot(PLOT).unwrap().doc.to_bytes();
    let approve = Scripted::new(vec![Answer::Approve]);
    let reply = h
        .debrief
        .call(RUN_TOOL, &json!({"toolId": "set-track-color", "params": {"color": "red"}, "utterance": "colour the submarine track red"}), &approve)
        .await
        .unwrap().text;
    assert!(
        reply.contains("dirty") && reply.contains("unsaved"),
        "{reply}"
    );
    let asked = approve.asked();
    assert_eq!(asked.len(), 1);
    assert_eq!(
        asked[0].title,
        "Run Set Track Color on Exercise Alpha — Day 1"
    );
    assert!(
        asked[0].body.contains("- Target: HMS Nelson") && asked[0].body.contains("- color: red"),
        "{}",
        asked[0].body
    );
    {
        let s = h.debrief.session();
        let plot = s.plot(PLOT).unwrap();
        assert!(plot.doc.is_dirty());
        assert_eq!(
            plot.doc.feature("track-1").unwrap()["properties"]["style"]["line"]["color"],
            "red"
        );
    }
    assert_eq!(
        hash_tree(h.dir.path()),
        disk_before,
        "no disk write before save"
    );
    h.debrief.session().undo(PLOT).unwrap();
    {
        let s = h.debrief.session();
        let plot = s.plot(PLOT).unwrap();
        assert_eq!(
            plot.doc.to_bytes(),
            doc_before,
            "one undo restores the document byte-identically"
        );
        assert!(!plot.doc.is_dirty());
    }

    // H4: "run speed-filter below 5 kts on the selection" → analytical, Results panel, no question
    let reply = h
        .debrief
        .call(
            RUN_TOOL,
            &json!({"toolId": "speed-filter", "params": {"max_knots": 5}, "scope": "selection"}),
            &never,
        )
        .await
        .unwrap()
        .text;
    assert!(reply.contains("Results panel"), "{reply}");
    assert!(
        never.asked().is_empty(),
        "analytical tools are not confirmed"
    );
    let datasets = h.debrief.datasets();
    assert_eq!(datasets.len(), 1);
    assert!(datasets[0].kind.starts_with("dataset/"));
    assert!(!h.debrief.session().plot(PLOT).unwrap().doc.is_dirty());

    // H5: "summarise the selection"
    let reply = parse(
        &h.debrief
            .call(SUMMARIZE, &json!({"selectionOnly": true}), &never)
            .await
            .unwrap()
            .text,
    );
    assert_eq!(reply["selectionOnly"], true);
    assert_eq!(
        reply["total"], 1,
        "the inventory holds the selected features only"
    );

    assert_eq!(
        hash_tree(h.dir.path()),
        disk_before,
        "the whole session wrote nothing"
    );
    // Telemetry: one record per call (H3 emits two), all valid against the shipped schema.
    let records = h.sink.records();
    assert_eq!(records.len(), 6);
    for r in &records {
        let problems = schema_problems(&serde_json::to_value(r).unwrap());
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(r.active_model, "test-model");
    }
    assert_eq!(records[3].tool, RUN_TOOL);
    assert_eq!(records[3].confirmation, Confirmation::Approved);
    assert_eq!(records[4].confirmation, Confirmation::NotRequired);
}

#[tokio::test]
async fn f1_no_plot_open_refuses_without_asking_or_running() {
    let h = harness().await;
    let ask = Scripted::new(vec![Answer::Approve]);
    let reply = h
        .debrief
        .call(
            RUN_TOOL,
            &json!({"toolId": "set-track-color", "params": {"color": "red"}}),
            &ask,
        )
        .await
        .unwrap()
        .text;
    assert_eq!(
        reply,
        "No plot is open, so there is nothing to run a tool against. Search the catalog and open a plot first."
    );
    assert!(
        ask.asked().is_empty(),
        "a person is never asked about a call that cannot run"
    );
    assert_eq!(h.provider.calls.load(Ordering::SeqCst), 0);
    let rec = &h.sink.records()[0];
    assert_eq!(rec.confirmation, Confirmation::NotRequired);
}

#[tokio::test]
async fn f2_nothing_selected_is_refused() {
    let h = harness().await;
    h.debrief.session().open(PLOT).unwrap();
    let before = h.debrief.session().plot(PLOT).unwrap().doc.to_bytes();
    let ask = Scripted::new(vec![Answer::Approve]);
    let reply = h
        .debrief
        .call(
            RUN_TOOL,
            &json!({"toolId": "set-track-color", "params": {"color": "red"}, "scope": "selection"}),
            &ask,
        )
        .await
        .unwrap()
        .text;
    assert!(
        reply.starts_with("Nothing is selected.") && reply.ends_with("I will not guess."),
        "{reply}"
    );
    assert!(ask.asked().is_empty());
    assert_eq!(h.provider.calls.load(Ordering::SeqCst), 0);
    assert_eq!(
        h.debrief.session().plot(PLOT).unwrap().doc.to_bytes(),
        before
    );
}

#[tokio::test]
async fn f3_invented_tool_id_is_corrected() {
    let h = harness().await;
    h.debrief.session().open(PLOT).unwrap();
    let ask = Scripted::new(vec![Answer::Approve]);
    let reply = h
        .debrief
        .call(
            RUN_TOOL,
            &json!({"toolId": "make-it-pretty", "params": {}}),
            &ask,
        )
        .await
        .unwrap()
        .text;
    // The listing starts with the catalogue's tools (track/measurement first).
    assert!(reply.starts_with("Unknown tool id \"make-it-pretty\". Call debrief_listTools first. Available: range-calc, "), "{reply}");
    assert_eq!(
        h.provider.calls.load(Ordering::SeqCst),
        0,
        "nothing ran for an invented id"
    );
    let rec = &h.sink.records()[0];
    assert!(matches!(rec.validation, Validation::Rejected { .. }));
    assert_eq!(rec.input["toolId"], "make-it-pretty");
}

#[tokio::test]
async fn invalid_params_and_names_are_refused_before_asking() {
    let h = harness().await;
    h.debrief.session().open(PLOT).unwrap();
    let ask = Scripted::new(vec![Answer::Approve]);
    let reply = h.debrief.call(RUN_TOOL, &json!({"toolId": "enlarge-shape", "params": {"scale_factor": 4, "radius": 2}, "scope": "all"}), &ask).await.unwrap().text;
    assert_eq!(
        reply,
        "Invalid parameters for \"enlarge-shape\": unknown parameter \"radius\"; parameter \"scale_factor\" must be one of: 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 5.0"
    );
    let reply = h.debrief.call(RUN_TOOL, &json!({"toolId": "set-track-color", "params": {"color": "red"}, "featureNames": ["Nelsen"]}), &ask).await.unwrap().text;
    assert!(reply.starts_with("Could not resolve the target features: no feature named \"Nelsen\". Features in this plot: HMS Nelson (track-1), Datum A (point-1)."), "{reply}");
    // Named targeting without a selection works (the "buffer the Contact track" variant).
    let reply = h.debrief.call(RUN_TOOL, &json!({"toolId": "set-track-color", "params": {"color": "green"}, "featureNames": ["nelson"]}), &ask).await.unwrap().text;
    assert!(
        reply.starts_with("Applied Set Track Color to 1 feature(s)"),
        "{reply}"
    );
    assert_eq!(
        ask.asked().len(),
        1,
        "only the valid call was put to the analyst"
    );
    assert_eq!(h.provider.calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_decline_changes_nothing_and_is_recorded() {
    let h = harness().await;
    h.debrief.session().open(PLOT).unwrap();
    let before = h.debrief.session().plot(PLOT).unwrap().doc.to_bytes();
    let disk = hash_tree(h.dir.path());
    let decline = Scripted::new(vec![Answer::Decline]);
    let reply = h
        .debrief
        .call(
            RUN_TOOL,
            &json!({"toolId": "set-track-color", "params": {"color": "red"}, "scope": "all"}),
            &decline,
        )
        .await
        .unwrap()
        .text;
    assert!(reply.contains("declined"), "{reply}");
    assert_eq!(h.provider.calls.load(Ordering::SeqCst), 0);
    let s = h.debrief.session();
    assert_eq!(s.plot(PLOT).unwrap().doc.to_bytes(), before);
    assert!(!s.plot(PLOT).unwrap().doc.is_dirty());
    assert_eq!(hash_tree(h.dir.path()), disk);
    assert_eq!(h.sink.records()[0].confirmation, Confirmation::Declined);
}
