//! Property: over MCP, a `run_code` program's plot edits reach the session only when the client
//! comes back with the token minted for exactly that previewed change — never on a decline (no
//! second call), a forged token, a replayed token, or a token sent with another program; and
//! what is applied is exactly what was previewed, without running the program again.
//!
//! An in-process rmcp client without elicitation (so the token path) talks to the real server;
//! the program runner is a stand-in that performs the program's plot edits on the scratch copy
//! through the scratch tools, as the sandbox does (the sandbox path itself is covered by
//! `toolgate-codeact`'s property test and the Python SDK test).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use proptest::prelude::*;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation};
use serde_json::{Map, Value, json};
use toolgate_core::telemetry::MemorySink;
use toolgate_core::{Confirmer, Provider, Registry, ToolCall};
use toolgate_mcp::{CodeRunner, McpShared, ToolSet};
use toolgate_plot::debrief::{Debrief, Settings};
use toolgate_plot::session::Session;
use toolgate_plot::transaction::{COMMIT_TOOL, PlotTransaction};

const PLOT: &str = "stac://demo/alpha-day1/item.json";
const TRACKS: [&str; 3] = ["HMS Nelson", "HMS Collingwood", "Contact"];
const COLORS: [&str; 3] = ["red", "blue", "#00ff00"];

/// Runs a "program" given as JSON — `[[tool, params], …]` — through the scratch tools.
struct ScriptedRunner {
    runs: AtomicUsize,
}

#[async_trait]
impl CodeRunner for ScriptedRunner {
    async fn run(
        &self,
        code: &str,
        _timeout: Option<Duration>,
        _confirmer: Arc<dyn Confirmer>,
        plot: Option<Arc<PlotTransaction>>,
    ) -> Value {
        self.runs.fetch_add(1, Ordering::SeqCst);
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

#[derive(Debug, Clone)]
enum Step {
    Color(usize, usize),
    Trim(usize, u32),
}

fn program(steps: &[Step]) -> String {
    let v: Vec<Value> = steps
        .iter()
        .map(|s| match s {
            Step::Color(t, c) => json!(["set-track-color", {"color": COLORS[*c], "feature_names": [TRACKS[*t]]}]),
            Step::Trim(t, h) => json!(["trim-track", {"start_time": format!("2026-03-01T{h:02}:00:00Z"), "end_time": "2026-03-01T11:00:00Z", "feature_names": [TRACKS[*t]]}]),
        })
        .collect();
    Value::Array(v).to_string()
}

/// What the client does after the preview.
#[derive(Debug, Clone, Copy)]
enum Act {
    /// Confirm with the token (and the same program).
    Confirm,
    /// The user declined: the client does nothing.
    Decline,
    /// Confirm with a made-up token.
    Forge,
    /// Confirm with the token but another program.
    OtherProgram,
    /// Confirm, then replay the same token.
    Replay,
}

struct World {
    rt: tokio::runtime::Runtime,
    _dir: tempfile::TempDir,
    store: toolgate_plot::store::StacStore,
}

fn text(r: &rmcp::model::CallToolResult) -> String {
    r.content
        .iter()
        .find_map(|c| c.as_text().map(|t| t.text.clone()))
        .unwrap_or_default()
}

async fn case(
    store: &toolgate_plot::store::StacStore,
    steps: Vec<Step>,
    act: Act,
) -> Result<(), TestCaseError> {
    let sink = Arc::new(MemorySink::default());
    let mut registry = Registry::new();
    registry
        .register(Arc::new(toolgate_plot::tools::NativeTools))
        .await
        .unwrap();
    let registry = Arc::new(registry);
    let made: Arc<Mutex<Option<Arc<Debrief>>>> = Arc::default();
    let (store2, sink2, made2) = (store.clone(), sink.clone(), made.clone());
    let factory = Arc::new(move |_: &str| {
        let d = Arc::new(Debrief::new(
            Arc::new(Mutex::new(Session::new(vec![store2.clone()]))),
            registry.clone(),
            sink2.clone(),
            Settings::default(),
        ));
        *made2.lock().unwrap() = Some(d.clone());
        d
    });
    let runner = Arc::new(ScriptedRunner {
        runs: AtomicUsize::new(0),
    });
    let shared = Arc::new(McpShared::new(
        ToolSet::All,
        factory,
        Some(runner.clone()),
        sink.clone(),
        "set_track_color, trim_track.",
    ));
    let (a, b) = tokio::io::duplex(1 << 20);
    let server = tokio::spawn(async move {
        let s = toolgate_mcp::ToolgateServer::new(shared)
            .serve(a)
            .await
            .unwrap();
        let _ = s.waiting().await;
    });
    let client = ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("prop", "1"),
    )
    .serve(b)
    .await
    .unwrap();
    let call = |args: Value| {
        let params = CallToolRequestParams::new("run_code")
            .with_arguments(args.as_object().unwrap().clone());
        client.call_tool(params)
    };
    let open = CallToolRequestParams::new("debrief_searchPlots").with_arguments(
        json!({"text": "Alpha — Day 1", "open": true})
            .as_object()
            .unwrap()
            .clone(),
    );
    let r = client.call_tool(open).await.unwrap();
    prop_assert!(text(&r).contains("opened"), "{}", text(&r));
    let debrief = made.lock().unwrap().clone().unwrap();
    let bytes = || debrief.session().plot(PLOT).unwrap().doc.to_bytes();
    let before = bytes();
    let code = program(&steps);

    let r = call(json!({"code": code})).await.unwrap();
    let env: Value = serde_json::from_str(&text(&r)).unwrap();
    prop_assert_eq!(&bytes(), &before, "the first call applied something");
    let status = env["plot"]["status"].as_str().unwrap_or("none").to_owned();
    // What a confirmation would apply: the program's net change, computed independently.
    let tx = PlotTransaction::begin(debrief.session_handle(), PLOT).unwrap();
    let tools = tx.provider();
    for (tool, params) in serde_json::from_str::<Vec<(String, Map<String, Value>)>>(&code).unwrap()
    {
        if let Some(cs) = tools
            .call(&ToolCall::new(tool, params))
            .await
            .unwrap()
            .change_set
        {
            tx.apply_to_scratch(&cs).unwrap();
        }
    }
    let expected = tx.finish();
    let Some(expected) = expected else {
        prop_assert!(
            env.get("plot").is_none() || status == "unchanged",
            "{}",
            env
        );
        return Ok(());
    };
    prop_assert_eq!(status.as_str(), "confirmation_needed", "{}", env);
    let token = env["plot"]["confirm"].as_str().unwrap().to_owned();
    let runs = runner.runs.load(Ordering::SeqCst);
    let applied_after = match act {
        Act::Decline => false,
        Act::Forge => {
            let r = call(json!({"code": code, "confirm": "confirm-00000000000000000000"}))
                .await
                .unwrap();
            prop_assert!(r.is_error == Some(true), "{}", text(&r));
            false
        }
        Act::OtherProgram => {
            let other = program(&[Step::Color(0, 0), Step::Color(1, 1), Step::Color(2, 2)]);
            let other = if other == code {
                program(&[Step::Trim(0, 1)])
            } else {
                other
            };
            let r = call(json!({"code": other, "confirm": token}))
                .await
                .unwrap();
            prop_assert!(r.is_error == Some(true), "{}", text(&r));
            // and the token is spent
            let r = call(json!({"code": code, "confirm": token})).await.unwrap();
            prop_assert!(r.is_error == Some(true), "{}", text(&r));
            false
        }
        Act::Confirm | Act::Replay => {
            let r = call(json!({"code": code, "confirm": token})).await.unwrap();
            let env: Value = serde_json::from_str(&text(&r)).unwrap();
            prop_assert_eq!(&env["plot"]["status"], "applied", "{}", env);
            if matches!(act, Act::Replay) {
                let after = bytes();
                let r = call(json!({"code": code, "confirm": token})).await.unwrap();
                prop_assert!(r.is_error == Some(true), "{}", text(&r));
                prop_assert_eq!(&bytes(), &after, "a replayed token changed the plot");
            }
            true
        }
    };
    prop_assert_eq!(
        runner.runs.load(Ordering::SeqCst),
        runs,
        "confirming ran the program again"
    );
    {
        let s = debrief.session();
        let doc = &s.plot(PLOT).unwrap().doc;
        if applied_after {
            for edit in &expected.change.edits {
                if let toolgate_core::Edit::Upsert { id, item } = edit {
                    prop_assert_eq!(doc.feature(id), Some(item));
                }
            }
            prop_assert!(doc.is_dirty());
        } else {
            prop_assert_eq!(
                doc.to_bytes(),
                before,
                "{:?}: an unconfirmed change was applied",
                act
            );
            prop_assert!(!doc.is_dirty());
        }
        let commits: Vec<_> = sink
            .records()
            .into_iter()
            .filter(|r| r.tool == COMMIT_TOOL)
            .collect();
        prop_assert_eq!(commits.len(), usize::from(applied_after), "{:?}", commits);
    }
    let _ = client.cancel().await;
    server.abort();
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn run_code_never_applies_an_unconfirmed_change(
        steps in proptest::collection::vec(prop_oneof![
            (0..3usize, 0..3usize).prop_map(|(t, c)| Step::Color(t, c)),
            (0..3usize, 0..10u32).prop_map(|(t, h)| Step::Trim(t, h)),
        ], 1..4),
        act in prop_oneof![Just(Act::Confirm), Just(Act::Decline), Just(Act::Forge), Just(Act::OtherProgram), Just(Act::Replay)],
    ) {
        static WORLD: std::sync::OnceLock<World> = std::sync::OnceLock::new();
        let w = WORLD.get_or_init(|| {
            let dir = tempfile::tempdir().unwrap();
            let store = toolgate_plot::demo::ensure_demo_store(dir.path()).unwrap();
            World {
                rt: tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap(),
                _dir: dir,
                store,
            }
        });
        w.rt.block_on(case(&w.store, steps, act))?;
    }
}
