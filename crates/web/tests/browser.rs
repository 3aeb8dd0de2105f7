//! The workbench in a real browser: starts two workbenches on 127.0.0.1:0 over a temporary demo
//! store (one with the scripted chat backend, one without) and runs `e2e/workbench.e2e.js`
//! (playwright-core driving Debian's headless Chromium) against them.
//!
//! Needs `node`, `crates/web/e2e/node_modules/playwright-core` (`npm ci` in crates/web/e2e) and
//! `/usr/bin/chromium` (`apt-get install -y chromium`; another binary via `TOOLGATE_CHROMIUM`).
//! When one is missing the test says so loudly and passes, unless
//! `TOOLGATE_REQUIRE_TEST_CLIENTS=1`, when it fails.
//!
//! Screenshots and `metrics.json` are left in `<target>/tmp/web-e2e/`.
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(clippy::disallowed_methods)]

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{Value, json};
use toolgate_core::flow::{Answer, Fixed};
use toolgate_plot::debrief::{self, Debrief};

fn missing(what: &str) {
    let required = std::env::var("TOOLGATE_REQUIRE_TEST_CLIENTS").is_ok_and(|v| v == "1");
    let msg = format!(
        "\n\n!!!!!!!! SKIPPING the workbench browser test: {what}.\n!!!!!!!! Install: `apt-get install -y chromium` and `npm ci --prefix crates/web/e2e`.\n"
    );
    if required {
        panic!("{msg}TOOLGATE_REQUIRE_TEST_CLIENTS=1, so this is a failure.");
    }
    eprintln!("{msg}");
}

/// Stands in for another MCP client editing the same session: the agent tool call an MCP
/// server makes for `tools/call debrief_runTool`, approved on that client's side.
async fn external_edit(State(debrief): State<Arc<Debrief>>, Json(body): Json<Value>) -> String {
    let input = json!({
        "toolId": "set-track-color",
        "params": {"color": body["color"]},
        "featureIds": [body["featureId"]],
        "utterance": "external MCP client",
    });
    match debrief
        .call(debrief::RUN_TOOL, &input, &Fixed(Answer::Approve))
        .await
    {
        Ok(reply) => reply.text,
        Err(refusal) => refusal.message,
    }
}

/// Features the analyst's checks need in the no-chat workbench's Exercise Alpha, as the REP
/// importer writes them: a CIRCLE as a Point with its radius in metres (drawn to scale, not as a
/// dot), a dynamic circle shown only 06:00–08:00, and a sensor contact on HMS Nelson at 03:00
/// (bearing 090, 5 nm).
fn add_analyst_features(dir: &Path) {
    let path = dir.join("alpha-day1").join("features.geojson");
    let mut fc: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let features = fc["features"].as_array_mut().unwrap();
    for f in features.iter_mut() {
        if f["id"] == "track-nelson" {
            f["properties"]["sensors"] = json!([{"name": "Sonar 2087", "color": "#FF00FF", "contacts": [
                {"time": "2026-03-01T03:00:00+00:00", "bearing": 90.0, "range": 9260.0}
            ]}]);
        }
    }
    features.push(json!({"type": "Feature", "id": "circle-rep",
        "geometry": {"type": "Point", "coordinates": [-3.3, 50.0]},
        "properties": {"kind": "CIRCLE", "label": "Datum circle", "center": [-3.3, 50.0], "radius": 5000.0,
            "style": {"color": "#FF00FF", "weight": 2, "fill": false}}}));
    features.push(json!({"type": "Feature", "id": "circle-dynamic",
        "geometry": {"type": "Point", "coordinates": [-3.3, 50.5]},
        "properties": {"kind": "CIRCLE", "label": "Dynamic circle", "center": [-3.3, 50.5], "radius": 3000.0,
            "start_time": "2026-03-01T06:00:00+00:00", "end_time": "2026-03-01T08:00:00+00:00",
            "style": {"color": "#FF00FF", "weight": 2, "fill": false}}}));
    std::fs::write(&path, serde_json::to_vec_pretty(&fc).unwrap()).unwrap();
}

/// The MCP endpoint over `state`'s store, as `toolgate serve` mounts it: stateless clients drive
/// the workbench's session, legacy (2025-11-25) clients get sessions of their own, and every one
/// is listed in the workbench's session directory.
async fn mcp_router(state: &toolgate_web::WebState, dir: &Path) -> Router {
    use std::sync::Mutex;
    use toolgate_plot::debrief::Settings;
    let store = toolgate_plot::demo::ensure_demo_store(dir).unwrap();
    let mut registry =
        toolgate_core::Registry::new().with_discovery_hint("Call debrief_listTools first.");
    registry
        .register(Arc::new(toolgate_plot::tools::NativeTools))
        .await
        .unwrap();
    let registry = Arc::new(registry);
    let new_session = Arc::new(move |identity: &str| {
        Arc::new(Debrief::new(
            Arc::new(Mutex::new(toolgate_plot::session::Session::new(vec![
                store.clone(),
            ]))),
            registry.clone(),
            Arc::new(toolgate_core::telemetry::NullSink),
            Settings {
                surface: "mcp-http".to_owned(),
                active_model: identity.to_owned(),
                ..Settings::default()
            },
        ))
    });
    let shared = toolgate_mcp::McpShared::new(
        toolgate_mcp::ToolSet::Debrief,
        new_session,
        None,
        Arc::new(toolgate_core::telemetry::NullSink),
        "",
    )
    .with_shared_session(state.debrief().clone());
    let _ = shared.directory.set(state.directory().clone());
    toolgate_mcp::transport::http_router(
        Arc::new(shared),
        tokio_util::sync::CancellationToken::new(),
        toolgate_core::AccessToken::new(common::TOKEN).unwrap(),
    )
}

async fn start(state: toolgate_web::WebState, extra: Option<Router>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut app = toolgate_web::router(state);
    if let Some(extra) = extra {
        app = app.merge(extra);
    }
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://127.0.0.1:{}", addr.port())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_workbench_in_headless_chromium() {
    let e2e = Path::new(env!("CARGO_MANIFEST_DIR")).join("e2e");
    let chromium =
        std::env::var("TOOLGATE_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".to_owned());
    if !Path::new(&chromium).exists() {
        return missing(&format!("no Chromium at {chromium}"));
    }
    if !e2e
        .join("node_modules/playwright-core/package.json")
        .exists()
    {
        return missing("crates/web/e2e/node_modules/playwright-core is not installed");
    }
    if std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_err()
    {
        return missing("node is not on PATH");
    }

    let dir = tempfile::tempdir().unwrap();
    let other = tempfile::tempdir().unwrap();
    let state = common::state(dir.path(), true).await;
    let hook = Router::new()
        .route("/test/external-edit", post(external_edit))
        .with_state(state.debrief().clone());
    let url = start(state.clone(), Some(hook)).await;
    let no_chat = common::state(other.path(), false).await;
    add_analyst_features(other.path());
    let mcp = mcp_router(&no_chat, other.path()).await;
    let url_no_chat = start(no_chat.clone(), Some(mcp)).await;
    // The MCP Python SDK (2025-11-25 over HTTP) for the session-list check.
    let python = std::env::var("TOOLGATE_MCP_PYTHON").unwrap_or_else(|_| {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../.tools/venv/bin/python")
            .to_string_lossy()
            .into_owned()
    });
    let python_ok = std::process::Command::new(&python)
        .args(["-c", "import mcp"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !python_ok {
        missing(&format!(
            "the MCP Python SDK is not importable with {python} (the HTTP MCP client check)"
        ));
        return;
    }

    let artifacts = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("web-e2e");
    let _ = std::fs::remove_dir_all(&artifacts);
    std::fs::create_dir_all(&artifacts).unwrap();

    let run = tokio::process::Command::new("node")
        .arg(e2e.join("workbench.e2e.js"))
        .current_dir(&e2e)
        .env("WORKBENCH_URL", &url)
        .env("WORKBENCH_URL_NO_CHAT", &url_no_chat)
        .env("WORKBENCH_TOKEN", common::TOKEN)
        .env("STORE_DIR", dir.path())
        .env("STORE_DIR_NO_CHAT", other.path())
        .env("MCP_PYTHON", &python)
        .env("ARTIFACTS", &artifacts)
        .env("CHROMIUM", &chromium)
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(300), run)
        .await
        .expect("the browser test ran over 5 minutes")
        .expect("node could not be started");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stdout}\n{stderr}");
    assert!(
        out.status.success(),
        "the browser checks failed:\n{stdout}\n{stderr}"
    );

    let metrics: Value = stdout
        .lines()
        .find_map(|l| l.strip_prefix("E2E-METRICS "))
        .map(|m| serde_json::from_str(m).unwrap())
        .expect("the browser test printed its metrics");
    eprintln!(
        "workbench metrics: {}\nartifacts: {}",
        serde_json::to_string_pretty(&metrics).unwrap(),
        artifacts.display()
    );
    assert!(metrics["bulkFeatures"].as_u64().unwrap() >= 250);
    // The 260-feature plot drawn over its coastline within 300 ms of the page's load event
    // (issue 32; E2E_FIRST_RENDER_MS raises the bar on a machine known to be overloaded).
    let first_bound: u64 = std::env::var("E2E_FIRST_RENDER_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    assert!(
        metrics["firstRenderAfterLoadEventMs"].as_u64().unwrap() <= first_bound,
        "{metrics}"
    );
    assert!(
        metrics["firstRenderWithCoastAfterLoadEventMs"]
            .as_u64()
            .unwrap()
            <= first_bound,
        "{metrics}"
    );
    // Issue 32 item 6: plain `chromium --headless --screenshot --virtual-time-budget` finishes.
    assert!(
        metrics["plainScreenshotMs"].as_u64().unwrap() < 30_000,
        "{metrics}"
    );
    assert_eq!(metrics["externalRequests"], 0);
    assert_eq!(metrics["consoleErrors"], 0);
    // The time controller while playing on the 260-feature plot: at least 55 frames a second
    // (E2E_MIN_PLAY_FPS lowers the bar on a machine known to be overloaded; the number is
    // printed either way).
    let min_fps: f64 = std::env::var("E2E_MIN_PLAY_FPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(55.0);
    assert!(
        metrics["playFps"].as_f64().unwrap() >= min_fps,
        "playing at {} fps < {min_fps}: {metrics}",
        metrics["playFps"]
    );
    for name in [
        "bulk-1280x800",
        "bulk-1920x1080",
        "confirm-dialog",
        "approved-red-dirty",
        "live-update",
        "alpha-1920x1080",
        "palette-confirm",
        "palette-undo-named",
        "palette-results-track-stats",
        "time-0300-sensor",
        "narrative-highlight",
        "circle-zoom-1",
        "circle-zoom-2",
        "mcp-session-listed",
        "mcp-session-saved",
        "play-bulk",
        "chart-alpha-fitted",
        "chart-zoomed-graticule",
        "readout-two-tracks",
        "units-yards",
        "speed-filter-highlighted",
        "plain-headless-screenshot",
    ] {
        let found = std::fs::read_dir(&artifacts)
            .unwrap()
            .any(|e| e.unwrap().file_name().to_string_lossy().contains(name));
        assert!(found, "screenshot {name} missing");
    }
    // The session the browser drove is the one the server holds: the last save is on disk.
    let session = state.debrief().session();
    let plot = session.active().unwrap();
    assert!(!plot.doc.is_dirty());
    let saved: Value = serde_json::from_slice(
        &std::fs::read(dir.path().join("alpha-day1").join("features.geojson")).unwrap(),
    )
    .unwrap();
    let contact = toolgate_test_support::feature_by_id(&saved, "track-contact").unwrap();
    assert_eq!(contact["properties"]["style"]["line"]["color"], "blue");
}
