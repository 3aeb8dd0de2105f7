//! Pending `run_code` plot commits are bounded (issue 30, item 4): a client that repeats
//! `run_code` with a plot open and never confirms made the server keep every previewed change
//! for five minutes (RSS 1.2 → 2.8 GB after 40 calls). Now at most
//! `PendingLimits::DEFAULT_PER_SESSION` wait per session (and a per-server count and byte cap),
//! the oldest evicted first, and the client that presents an evicted token is told it expired
//! because it was evicted — not that it is unknown.
//!
//! An in-process rmcp client without elicitation (so the token path) talks to the real server;
//! the program runner is a stand-in that performs the program's plot edits on the scratch copy
//! through the scratch tools, as the sandbox does.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation};
use serde_json::{Map, Value, json};
use toolgate_core::telemetry::MemorySink;
use toolgate_core::{Confirmer, Provider, Registry, ToolCall};
use toolgate_mcp::{CodeRunner, McpShared, ToolSet};
use toolgate_plot::debrief::{Debrief, Settings};
use toolgate_plot::session::Session;
use toolgate_plot::transaction::PlotTransaction;

const TRACKS: [&str; 3] = ["HMS Nelson", "HMS Collingwood", "Contact"];

/// Runs a "program" given as JSON — `[[tool, params], …]` — through the scratch tools.
struct ScriptedRunner;

#[async_trait]
impl CodeRunner for ScriptedRunner {
    async fn run(
        &self,
        code: &str,
        _timeout: Option<Duration>,
        _confirmer: Arc<dyn Confirmer>,
        plot: Option<Arc<PlotTransaction>>,
    ) -> Value {
        let steps: Vec<(String, Map<String, Value>)> = serde_json::from_str(code).unwrap();
        let tx = plot.expect("a plot is open, so the program gets a transaction");
        let tools = tx.provider();
        for (tool, params) in steps {
            let outcome = tools.call(&ToolCall::new(tool, params)).await.unwrap();
            if let Some(cs) = outcome.change_set {
                tx.apply_to_scratch(&cs).unwrap();
            }
        }
        json!({"success": true, "stdout": "", "stderr": "", "return_value": null, "error": null,
               "tool_calls": 0, "duration_ms": 0.0, "truncated": false})
    }
}

/// Program `i`: a distinct change each time (a trim of one track to a distinct window), so every
/// call previews a new change and gets a new token.
fn program(i: usize) -> String {
    let track = TRACKS[i % 3];
    let minute = i / 3;
    json!([["trim-track", {
        "start_time": format!("2026-03-01T05:{minute:02}:00Z"),
        "end_time": "2026-03-01T11:00:00Z",
        "feature_names": [track]}]])
    .to_string()
}

fn text(r: &rmcp::model::CallToolResult) -> String {
    r.content
        .iter()
        .find_map(|c| c.as_text().map(|t| t.text.clone()))
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unconfirmed_run_code_commits_are_capped_and_the_oldest_token_answers_expired() {
    let dir = tempfile::tempdir().unwrap();
    let store = toolgate_plot::demo::ensure_demo_store(dir.path()).unwrap();
    let sink = Arc::new(MemorySink::default());
    let mut registry = Registry::new();
    registry
        .register(Arc::new(toolgate_plot::tools::NativeTools))
        .await
        .unwrap();
    let registry = Arc::new(registry);
    let made: Arc<Mutex<Option<Arc<Debrief>>>> = Arc::default();
    let (sink2, made2) = (sink.clone(), made.clone());
    let factory = Arc::new(move |_: &str| {
        let d = Arc::new(Debrief::new(
            Arc::new(Mutex::new(Session::new(vec![store.clone()]))),
            registry.clone(),
            sink2.clone(),
            Settings::default(),
        ));
        *made2.lock().unwrap() = Some(d.clone());
        d
    });
    let shared = Arc::new(McpShared::new(
        ToolSet::All,
        factory,
        Some(Arc::new(ScriptedRunner)),
        sink.clone(),
        "trim_track.",
    ));
    let (a, b) = tokio::io::duplex(1 << 20);
    let served = shared.clone();
    let server = tokio::spawn(async move {
        let s = toolgate_mcp::ToolgateServer::new(served)
            .serve(a)
            .await
            .unwrap();
        let _ = s.waiting().await;
    });
    let client = ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("pending-bounds", "1"),
    )
    .serve(b)
    .await
    .unwrap();
    let open = CallToolRequestParams::new("debrief_searchPlots").with_arguments(
        json!({"text": "Alpha — Day 1", "open": true})
            .as_object()
            .unwrap()
            .clone(),
    );
    let r = client.call_tool(open).await.unwrap();
    assert!(text(&r).contains("opened"), "{}", text(&r));

    let calls = 24;
    let mut tokens = Vec::new();
    for i in 0..calls {
        let params = CallToolRequestParams::new("run_code")
            .with_arguments(json!({"code": program(i)}).as_object().unwrap().clone());
        let r = client.call_tool(params).await.unwrap();
        let env: Value = serde_json::from_str(&text(&r)).unwrap();
        assert_eq!(env["plot"]["status"], "confirmation_needed", "{env}");
        tokens.push(env["plot"]["confirm"].as_str().unwrap().to_owned());
        assert!(
            shared.pending_commits() <= 16,
            "after {} calls {} commits wait (cap 16 per session)",
            i + 1,
            shared.pending_commits()
        );
    }
    assert_eq!(shared.pending_commits(), 16);

    // The oldest was evicted: its client is told it expired to bound memory (not "unknown").
    let confirm = |i: usize| {
        let params = CallToolRequestParams::new("run_code").with_arguments(
            json!({"code": program(i), "confirm": tokens[i]})
                .as_object()
                .unwrap()
                .clone(),
        );
        client.call_tool(params)
    };
    let r = confirm(0).await.unwrap();
    assert_eq!(r.is_error, Some(true), "{}", text(&r));
    let msg = text(&r);
    assert!(
        msg.contains("expired") && msg.contains("evicted") && !msg.contains("unknown"),
        "{msg}"
    );
    // The newest is still there and applies.
    let r = confirm(calls - 1).await.unwrap();
    let env: Value = serde_json::from_str(&text(&r)).unwrap();
    assert_eq!(env["plot"]["status"], "applied", "{env}");
    assert_eq!(shared.pending_commits(), 15);

    let _ = client.cancel().await;
    server.abort();
}
