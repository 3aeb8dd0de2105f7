//! Issue 32 item 1: parameters are resolved and checked before anyone is asked, and the
//! question says what the edit will do in numbers — through `debrief_runTool` (the path of the
//! CLI's `plot run`, MCP and the workbench's Tools tab) and through a CodeAct program's plot
//! functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use toolgate_core::flow::{Answer, Scripted};
use toolgate_core::telemetry::MemorySink;
use toolgate_core::{Provider, Registry, Status, ToolCall};
use toolgate_plot::debrief::{Debrief, RUN_TOOL, Settings};
use toolgate_plot::session::Session;
use toolgate_plot::tools::NativeTools;
use toolgate_plot::transaction::PlotTransaction;

const ALPHA: &str = "stac://demo/alpha-day1/item.json";

async fn workbench(dir: &std::path::Path) -> Debrief {
    let store = toolgate_plot::demo::ensure_demo_store(dir).unwrap();
    let mut registry = Registry::new();
    registry.register(Arc::new(NativeTools)).await.unwrap();
    let d = Debrief::new(
        Arc::new(Mutex::new(Session::new(vec![store]))),
        Arc::new(registry),
        Arc::new(MemorySink::default()),
        Settings::default(),
    );
    d.open_plot(ALPHA).await.unwrap();
    d
}

fn nelson(d: &Debrief) -> (u64, Vec<String>) {
    let s = d.session();
    let plot = s.plot(ALPHA).unwrap();
    let f = plot.doc.feature("track-nelson").unwrap();
    let times = f["properties"]["positions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["time"].as_str().unwrap().replace("+00:00", "Z"))
        .collect();
    (plot.doc.version(), times)
}

fn trim(start: &str, end: &str) -> Value {
    json!({"toolId": "trim-track", "featureNames": ["HMS Nelson"],
        "params": {"start_time": start, "end_time": end}})
}

#[tokio::test]
async fn a_sloppy_time_is_refused_or_corrected_before_the_question_and_the_question_counts() {
    let dir = tempfile::tempdir().unwrap();
    let d = workbench(dir.path()).await;
    let (version, times) = nelson(&d);
    assert_eq!(times.len(), 361);

    // "yesterday" is refused before anyone is asked; nothing changes.
    let ask = Scripted::new([Answer::Approve]);
    let reply = d
        .call(RUN_TOOL, &trim("yesterday", "2026-03-01 05:00"), &ask)
        .await
        .unwrap();
    assert_eq!(reply.status, Status::Refused, "{}", reply.text);
    assert_eq!(reply.reason.as_deref(), Some("invalid_parameters"));
    assert!(
        reply.text.contains("\"start_time\" must be a time")
            && reply.text.contains("got \"yesterday\"")
            && reply.text.contains("2026-03-01 00:00–12:00 UTC"),
        "{}",
        reply.text
    );
    assert!(
        ask.asked().is_empty(),
        "nobody is asked about a call that would fail"
    );
    assert_eq!(nelson(&d).0, version);

    // A window that keeps nothing fails before the question, not after it.
    let ask = Scripted::new([Answer::Approve]);
    let reply = d
        .call(RUN_TOOL, &trim("13:00", "14:00"), &ask)
        .await
        .unwrap();
    assert_eq!(reply.status, Status::Failed, "{}", reply.text);
    assert!(reply.text.contains("No positions"), "{}", reply.text);
    assert!(ask.asked().is_empty());
    assert_eq!(nelson(&d).0, version);

    // A plain time of day and a space-separated time are read on the plot's day; the question
    // shows the values the tool will get and how many positions go.
    let kept = times
        .iter()
        .filter(|t| t.as_str() >= "2026-03-01T01:00:00Z" && t.as_str() <= "2026-03-01T05:00:00Z")
        .count();
    let ask = Scripted::new([Answer::Decline]);
    let reply = d
        .call(RUN_TOOL, &trim("01:00", "2026-03-01 05:00"), &ask)
        .await
        .unwrap();
    assert_eq!(reply.status, Status::Declined, "{}", reply.text);
    let asked = ask.asked();
    assert_eq!(asked.len(), 1);
    let body = &asked[0].body;
    assert!(
        body.contains("- start_time: 2026-03-01T01:00:00Z\n"),
        "{body}"
    );
    assert!(
        body.contains("- end_time: 2026-03-01T05:00:00Z\n"),
        "{body}"
    );
    assert!(
        body.contains("start_time: \"01:00\" read as 2026-03-01T01:00:00Z (the targets' day)"),
        "{body}"
    );
    let effect = format!(
        "- Effect: remove {} of 361 positions of HMS Nelson (keep {kept})\n",
        361 - kept
    );
    assert!(body.contains(&effect), "{body}");
    assert!(
        body.find("- Note: start_time:") < body.find("- Note: end_time:"),
        "notes in the parameters' order: {body}"
    );
    assert_eq!(nelson(&d).0, version, "declined: nothing changed");

    // Approved, the change is exactly what was counted.
    let ask = Scripted::new([Answer::Approve]);
    let reply = d
        .call(RUN_TOOL, &trim("01:00", "2026-03-01 05:00"), &ask)
        .await
        .unwrap();
    assert_eq!(reply.status, Status::Ok, "{}", reply.text);
    assert!(ask.asked()[0].body.contains(&effect));
    let (after, left) = nelson(&d);
    assert_eq!(after, version + 1);
    assert_eq!(left.len(), kept);
    assert_eq!(left[0], "2026-03-01T01:00:00Z");
}

#[tokio::test]
async fn a_program_s_plot_functions_read_times_the_same_way_and_its_commit_counts() {
    let dir = tempfile::tempdir().unwrap();
    let d = workbench(dir.path()).await;
    let tx = PlotTransaction::begin(d.session_handle(), ALPHA).unwrap();
    let tools = tx.provider();
    let call = |start: &str, end: &str| {
        let mut params =
            json!({"start_time": start, "end_time": end, "feature_names": ["HMS Nelson"]})
                .as_object()
                .unwrap()
                .clone();
        params.retain(|_, v| !v.is_null());
        ToolCall::new("trim-track", params)
    };
    let e = tools.call(&call("yesterday", "05:00")).await.unwrap_err();
    assert!(e.to_string().contains("got \"yesterday\""), "{e}");
    assert!(tx.finish().is_none(), "a refused call changes nothing");
    let out = tools
        .call(&call("01:00", "2026-03-01 05:00"))
        .await
        .unwrap();
    // (the sandbox host applies each call's change to the scratch copy)
    tx.apply_to_scratch(out.change_set.as_ref().unwrap())
        .unwrap();
    let commit = tx.finish().unwrap();
    let preview = commit.preview();
    assert!(
        preview.body.contains("start_time: 2026-03-01T01:00:00Z")
            && preview.body.contains("end_time: 2026-03-01T05:00:00Z"),
        "{}",
        preview.body
    );
    assert!(
        preview
            .body
            .contains("- Effect: remove 240 of 361 positions of HMS Nelson (keep 121)\n"),
        "{}",
        preview.body
    );
}
