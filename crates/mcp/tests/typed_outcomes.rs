//! The same refusal arrives typed over MCP: an in-process rmcp client calls the Debrief tools
//! and every refusal is `isError: true` with its kind in `_meta` (the text stays corrective);
//! successes and a person's decline are not errors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation,
};
use serde_json::{Map, Value, json};
use toolgate_core::Registry;
use toolgate_core::telemetry::{MemorySink, TelemetrySink};
use toolgate_mcp::{McpShared, STATUS_META, ToolSet, ToolgateServer};
use toolgate_plot::debrief::{Debrief, Settings};
use toolgate_plot::session::Session;

async fn registry() -> Arc<Registry> {
    let mut r = Registry::new().with_discovery_hint("Call debrief_listTools first.");
    r.register(Arc::new(toolgate_plot::tools::NativeTools))
        .await
        .unwrap();
    Arc::new(r)
}

struct Client {
    peer: rmcp::service::RunningService<rmcp::RoleClient, ClientConfig>,
    _dir: tempfile::TempDir,
}

impl Client {
    async fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store = toolgate_plot::demo::spike_replay_store(dir.path()).unwrap();
        let registry = registry().await;
        let sink: Arc<dyn TelemetrySink> = Arc::new(MemorySink::default());
        let session_sink = sink.clone();
        let factory: Arc<toolgate_mcp::SessionFactory> = Arc::new(move |_id: &str| {
            Arc::new(Debrief::new(
                Arc::new(Mutex::new(Session::new(vec![store.clone()]))),
                registry.clone(),
                session_sink.clone(),
                Settings {
                    surface: "mcp".to_owned(),
                    ..Settings::default()
                },
            ))
        });
        let shared = Arc::new(McpShared::new(ToolSet::Debrief, factory, None, sink, ""));
        let (server_io, client_io) = tokio::io::duplex(1 << 20);
        tokio::spawn(async move {
            if let Ok(running) = ToolgateServer::new(shared).serve(server_io).await {
                let _ = running.waiting().await;
            }
        });
        let peer = ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("typed-outcomes-test", "1"),
        )
        .serve(client_io)
        .await
        .unwrap();
        Self { peer, _dir: dir }
    }

    async fn call(&self, tool: &str, args: Value) -> CallToolResult {
        let Value::Object(map) = args else {
            panic!("arguments must be an object")
        };
        self.peer
            .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(map))
            .await
            .unwrap()
    }
}

fn text(r: &CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

fn status(r: &CallToolResult) -> (String, Option<String>) {
    let meta = r
        .meta
        .as_ref()
        .unwrap_or_else(|| panic!("a Debrief result carries _meta: {r:?}"));
    let s = &meta.0[STATUS_META];
    (
        s["status"].as_str().unwrap().to_owned(),
        s["reason"].as_str().map(str::to_owned),
    )
}

const PLOT: &str = "stac://store-1/items/alpha-day1/item.json";

#[tokio::test]
async fn every_refusal_is_is_error_true_with_its_kind_and_successes_are_not() {
    let c = Client::start().await;
    let run = |args: Value| {
        let mut m = Map::new();
        m.insert("toolId".into(), args["toolId"].clone());
        for k in ["params", "featureIds", "featureNames", "scope", "plotId"] {
            if let Some(v) = args.get(k) {
                m.insert(k.into(), v.clone());
            }
        }
        Value::Object(m)
    };
    // No plot open yet.
    let cases_before_open = [
        (
            "debrief_runTool",
            run(json!({"toolId": "set-track-color", "params": {"color": "red"}, "scope": "all"})),
            "no_plot",
        ),
        ("debrief_summarizeCurrentPlot", json!({}), "no_plot"),
    ];
    for (tool, args, reason) in cases_before_open {
        let r = c.call(tool, args.clone()).await;
        assert_eq!(r.is_error, Some(true), "{tool} {args}: {}", text(&r));
        assert_eq!(
            status(&r),
            ("refused".into(), Some(reason.into())),
            "{tool} {args}"
        );
    }
    // A bad date in a search is refused, typed.
    let r = c
        .call("debrief_searchPlots", json!({"startTime": "yesterday-ish"}))
        .await;
    assert_eq!(r.is_error, Some(true), "{}", text(&r));
    assert_eq!(status(&r).0, "refused");
    // Open the plot: a success, not an error.
    let r = c
        .call(
            "debrief_searchPlots",
            json!({"text": "Alpha", "open": true}),
        )
        .await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    assert_eq!(status(&r), ("ok".into(), None));

    let cases = [
        (
            run(json!({"toolId": "make-it-pretty"})),
            "unknown_tool",
            "Unknown tool id",
        ),
        (
            run(json!({"toolId": "set-track-color", "params": {"colour": "red"}, "scope": "all"})),
            "invalid_parameters",
            "unknown parameter \"colour\"",
        ),
        (
            run(
                json!({"toolId": "set-track-color", "params": {"color": "red"}, "featureNames": ["Nelsen"]}),
            ),
            "target",
            "Could not resolve the target features",
        ),
        (
            run(
                json!({"toolId": "set-track-color", "params": {"color": "red"}, "featureIds": ["track-99"]}),
            ),
            "target",
            "no feature with id \"track-99\"",
        ),
        (
            // Nothing selected, no names, no scope: a mutation is not guessed.
            run(json!({"toolId": "set-track-color", "params": {"color": "red"}})),
            "target",
            "I will not guess",
        ),
        (
            run(
                json!({"toolId": "set-track-color", "params": {"color": "red"}, "scope": "all", "plotId": "stac://store-1/items/nope/item.json"}),
            ),
            "unknown_plot",
            "No open plot matches",
        ),
        (
            run(json!({"toolId": ""})),
            "invalid_parameters",
            "\"toolId\": \"\" is shorter than 1 character",
        ),
    ];
    for (args, reason, needle) in cases {
        let r = c.call("debrief_runTool", args.clone()).await;
        let t = text(&r);
        assert_eq!(r.is_error, Some(true), "{args}: {t}");
        assert_eq!(
            status(&r),
            ("refused".into(), Some(reason.into())),
            "{args}: {t}"
        );
        assert!(t.contains(needle), "the text stays corrective: {t}");
    }
    // The nothing-selected refusal names the candidates.
    let r = c
        .call(
            "debrief_runTool",
            run(json!({"toolId": "set-track-color", "params": {"color": "red"}})),
        )
        .await;
    assert!(text(&r).contains("HMS Nelson (track-1)"), "{}", text(&r));
    // An analytical tool runs without a confirmation, and is not an error.
    let r = c
        .call(
            "debrief_runTool",
            run(json!({"toolId": "track-stats", "plotId": PLOT, "featureIds": ["track-1"]})),
        )
        .await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    let (st, _) = status(&r);
    assert_eq!(st, "ok");
    assert_eq!(
        r.meta.as_ref().unwrap().0[STATUS_META]["dataset"],
        "result-1",
        "the kept result's id is typed too"
    );
    c.peer.cancel().await.unwrap();
}

/// Issue 32 item 1 over MCP: `debrief_runTool` refuses a time nobody can place before any
/// confirmation is asked for (no token is minted), reads a sloppy one on the plot's day, shows
/// the effect in numbers in the preview, and the token approves exactly that resolved call.
#[tokio::test]
async fn run_tool_checks_times_before_asking_and_the_preview_counts_positions() {
    let c = Client::start().await;
    let r = c
        .call(
            "debrief_searchPlots",
            json!({"text": "Alpha", "open": true}),
        )
        .await;
    assert_eq!(status(&r), ("ok".into(), None), "{}", text(&r));
    let trim = |start: &str, end: &str| {
        json!({"toolId": "trim-track", "featureIds": ["track-1"],
            "params": {"start_time": start, "end_time": end}})
    };

    let r = c
        .call("debrief_runTool", trim("yesterday", "2026-03-01 06:00"))
        .await;
    let t = text(&r);
    assert_eq!(r.is_error, Some(true), "{t}");
    assert_eq!(
        status(&r),
        ("refused".into(), Some("invalid_parameters".into())),
        "{t}"
    );
    assert!(t.contains("got \"yesterday\""), "{t}");
    assert!(
        !t.contains("\"confirm\""),
        "no token for a call that would fail: {t}"
    );

    let r = c
        .call("debrief_runTool", trim("02:00", "2026-03-01 06:00"))
        .await;
    let t = text(&r);
    assert!(t.contains("- start_time: 2026-03-01T02:00:00Z\n"), "{t}");
    assert!(
        t.contains("- Effect: remove 1 of 3 positions of HMS Nelson (keep 2)\n"),
        "{t}"
    );
    let token = t
        .split("\"confirm\": \"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .unwrap_or_else(|| panic!("a token: {t}"))
        .to_owned();
    let mut again = trim("02:00", "2026-03-01 06:00");
    again["confirm"] = json!(token);
    let r = c.call("debrief_runTool", again).await;
    assert_eq!(status(&r), ("ok".into(), None), "{}", text(&r));
    let r = c.call("debrief_summarizeCurrentPlot", json!({})).await;
    assert!(
        text(&r).contains("span 03:00-06:00, points 2"),
        "{}",
        text(&r)
    );
    c.peer.cancel().await.unwrap();
}
