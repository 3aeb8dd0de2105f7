//! External tool servers over the debrief-calc stdio protocol, with a real Python process.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use toolgate_calc::tool_server::StdioToolServer;
use toolgate_core::Registry;
use toolgate_core::flow::Answer;
use toolgate_core::telemetry::MemorySink;
use toolgate_plot::debrief::{Debrief, RUN_TOOL, Settings};
use toolgate_plot::session::Session;

use common::{PLOT, Scripted, spike_store};

fn server(log: &std::path::Path, timeout: Duration) -> StdioToolServer {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/calc_server.py");
    let s = script.to_string_lossy().into_owned();
    StdioToolServer {
        name: "python-calc".into(),
        list_command: vec!["python3".into(), s.clone(), "list".into()],
        call_command: vec!["python3".into(), s, "call".into()],
        timeout,
        env: vec![("CALC_SPAWN_LOG".into(), log.to_string_lossy().into_owned())],
        // These tests are about the protocol; confinement is tested through the real launcher
        // in crates/cli/tests/confine_exec.rs.
        confiner: None,
        network: false,
        unconfined: true,
    }
}

fn spawns(log: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

async fn setup(timeout: Duration) -> (Debrief, tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("spawns.log");
    let store = spike_store(&dir.path().join("store"));
    let mut registry = Registry::new().with_discovery_hint("Call debrief_listTools first.");
    registry
        .register(Arc::new(server(&log, timeout)))
        .await
        .unwrap();
    let d = Debrief::new(
        Arc::new(Mutex::new(Session::new(vec![store]))),
        Arc::new(registry),
        Arc::new(MemorySink::default()),
        Settings::default(),
    );
    d.session().open(PLOT).unwrap();
    (d, dir, log)
}

#[tokio::test]
async fn python_tools_plug_in_and_bad_calls_spawn_nothing() {
    let (d, _dir, log) = setup(Duration::from_secs(20)).await;
    assert_eq!(spawns(&log), vec!["list"], "listing spawns once");
    let ask = Scripted::new(vec![Answer::Approve]);
    // invented id and invalid params: refused before any process starts
    let r = d
        .call(RUN_TOOL, &json!({"toolId": "py-nope"}), &ask)
        .await
        .unwrap()
        .text;
    assert!(r.starts_with("Unknown tool id \"py-nope\""), "{r}");
    let r = d
        .call(
            RUN_TOOL,
            &json!({"toolId": "py-set-color", "params": {"colour": "red"}, "scope": "all"}),
            &ask,
        )
        .await
        .unwrap()
        .text;
    assert_eq!(
        r,
        "Invalid parameters for \"py-set-color\": unknown parameter \"colour\"; missing required parameter \"color\""
    );
    assert_eq!(
        spawns(&log).len(),
        1,
        "no process for an invalid id or invalid params"
    );
    // a real mutation through python lands as an unsaved edit
    let r = d
        .call(RUN_TOOL, &json!({"toolId": "py-set-color", "params": {"color": "red"}, "featureIds": ["track-1"]}), &ask)
        .await
        .unwrap().text;
    assert!(r.starts_with("Applied Py Set Color to 1 feature(s)"), "{r}");
    assert_eq!(ask.asked().len(), 1);
    {
        let s = d.session();
        let plot = s.plot(PLOT).unwrap();
        assert!(plot.doc.is_dirty());
        assert_eq!(
            plot.doc.feature("track-1").unwrap()["properties"]["style"]["line"]["color"],
            "red"
        );
    }
    // an analytical python tool
    let r = d
        .call(
            RUN_TOOL,
            &json!({"toolId": "py-count", "scope": "all"}),
            &ask,
        )
        .await
        .unwrap()
        .text;
    assert!(r.contains("Results panel"), "{r}");
    assert_eq!(d.datasets()[0].data["items"][0]["properties"]["count"], 2);
    assert_eq!(spawns(&log).len(), 3);
}

#[tokio::test]
async fn a_hung_process_is_killed_and_stderr_is_reported() {
    let (d, _dir, _log) = setup(Duration::from_millis(1500)).await;
    let ask = Scripted::new(vec![]);
    let started = Instant::now();
    let r = d
        .call(
            RUN_TOOL,
            &json!({"toolId": "py-hang", "scope": "all"}),
            &ask,
        )
        .await
        .unwrap()
        .text;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "killed at the timeout"
    );
    assert_eq!(r, "Tool \"py-hang\" timed out after 1.5 s and was stopped.");
    let r = d
        .call(
            RUN_TOOL,
            &json!({"toolId": "py-crash", "scope": "all"}),
            &ask,
        )
        .await
        .unwrap()
        .text;
    assert!(
        r.contains("exit status 3") && r.contains("ValueError: boom in py-crash"),
        "{r}"
    );
    // Both failures are also error entries in the Results panel, with the model's error text.
    let errors: Vec<(String, String, String)> = d
        .datasets()
        .into_iter()
        .map(|x| (x.tool_id, x.kind, x.summary))
        .collect();
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert_eq!(
        (errors[0].0.as_str(), errors[0].1.as_str()),
        ("py-hang", toolgate_plot::debrief::ERROR_KIND)
    );
    assert_eq!(
        errors[0].2,
        "Tool \"py-hang\" timed out after 1.5 s and was stopped."
    );
    assert_eq!(errors[1].0, "py-crash");
    assert_eq!(errors[1].2, r);
}

/// A tool server does not inherit toolgate's environment (here: cargo's `CARGO_*` variables
/// stand in for a token) — only the basic variables and its own `env`.
#[tokio::test]
async fn a_tool_server_gets_a_cleared_environment() {
    use toolgate_core::Provider;
    let script = r#"if [ -n "$CARGO_MANIFEST_DIR" ]; then n=leaked; else n=clean-$OWN; fi; printf '[{"name":"%s","inputSchema":{"type":"object"}}]' "$n""#;
    assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
    let s = StdioToolServer {
        name: "env-probe".into(),
        list_command: vec!["sh".into(), "-c".into(), script.into()],
        call_command: vec!["true".into()],
        timeout: Duration::from_secs(10),
        env: vec![("OWN".into(), "given".into())],
        confiner: None,
        network: false,
        unconfined: true,
    };
    let tools = s.list_tools().await.unwrap();
    assert_eq!(tools[0].id, "clean-given");
}
