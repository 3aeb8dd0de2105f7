//! Claude Code's own MCP client (npm `@anthropic-ai/claude-code`, `.ci/install-test-clients`)
//! drives `toolgate mcp --surface codeact` offline: `claude -p` talks to a scripted fake of the
//! Anthropic Messages API (`tests/mcp_clients/claude_fake_api.py`, which plays the model) and
//! runs toolgate's `run_code` for it.
//!
//! Claude Code 2.1 declares elicitation on every MCP server and speaks 2026-07-28, so a program
//! that reaches a call needing a person pauses with an MRTR input request (never the token), and
//! resumes from that call when Claude Code answers. Headless, only an Elicitation hook answers;
//! without one Claude Code answers "cancel" and the call does not run.
//!
//! A missing client skips the test loudly, unless TOOLGATE_REQUIRE_TEST_CLIENTS=1 (CI).
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(clippy::disallowed_methods)]

use std::path::{Path, PathBuf};
use std::process::Command;
use toolgate_test_support::tools_dir;

const BIN: &str = env!("CARGO_BIN_EXE_toolgate");

/// Both tests start Claude Code and toolgate; one at a time on a loaded 2-core machine.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn require_or_skip(what: &str, path: &Path) -> bool {
    if path.exists() {
        return true;
    }
    let msg = format!(
        "{what} is not installed at {} — run .ci/install-test-clients",
        path.display()
    );
    if std::env::var("TOOLGATE_REQUIRE_TEST_CLIENTS").as_deref() == Ok("1") {
        panic!("{msg}");
    }
    eprintln!("\n!!!!!!!! SKIPPED: {msg} !!!!!!!!\n");
    false
}

/// The venv's python and the `claude` CLI, or `None` (test skipped).
fn clients() -> Option<(PathBuf, PathBuf)> {
    let python = tools_dir().join("venv/bin/python");
    let claude = tools_dir().join("hosts/node_modules/.bin/claude");
    (require_or_skip("the test venv's python", &python)
        && require_or_skip("Claude Code (`claude`)", &claude))
    .then_some((python, claude))
}

/// One `claude -p` session against the fake API; what it left behind.
struct Run {
    _dir: tempfile::TempDir,
    workspace: PathBuf,
    api_log: PathBuf,
    telemetry: PathBuf,
}

fn run(answer: &str) -> Option<Run> {
    let _serial = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let (python, claude) = clients()?;
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("ws");
    let data = dir.path().join("data");
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::create_dir_all(&data).unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "[tools]\nconfirm = [\"create\"]\n").unwrap();
    let telemetry = dir.path().join("telemetry.jsonl");
    let api_log = dir.path().join("api.jsonl");
    let started = std::time::Instant::now();
    let out = Command::new(&python)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_clients/claude_fake_api.py"))
        .arg("--claude")
        .arg(&claude)
        .args(["--toolgate", BIN, "--workspace"])
        .arg(&workspace)
        .arg("--log")
        .arg(&api_log)
        .arg("--elicitations")
        .arg(dir.path().join("elicitations.jsonl"))
        .args(["--answer", answer])
        .env("TOOLGATE_CONFIG", &config)
        .env("TOOLGATE_TELEMETRY", &telemetry)
        .env("TOOLGATE_DATA_DIR", &data)
        .env_remove("TOOLGATE_STORE")
        .env_remove("TOOLGATE_MCP_SERVERS")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("\"done\": true"),
        "Claude Code against the fake API ({answer}) failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!(
        "{answer}: {:.1?}; {}",
        started.elapsed(),
        stdout.lines().last().unwrap_or("")
    );
    Some(Run {
        _dir: dir,
        workspace,
        api_log,
        telemetry,
    })
}

fn jsonl(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The run_code calls the model made, as Claude Code reported them back in its requests to the
/// fake API: the ids of the `tool_result`s (later requests repeat the history).
fn model_run_code_calls(api_log: &Path) -> usize {
    let mut ids = std::collections::BTreeSet::new();
    for request in jsonl(api_log) {
        for message in request["body"]["messages"].as_array().into_iter().flatten() {
            for block in message["content"].as_array().into_iter().flatten() {
                if block["type"] == "tool_result" {
                    ids.insert(block["tool_use_id"].as_str().unwrap_or("").to_owned());
                }
            }
        }
    }
    ids.len()
}

/// Telemetry records of `tool` on `surface` with outcome "ok".
fn ok_records(telemetry: &Path, surface: &str, tool: &str) -> Vec<serde_json::Value> {
    jsonl(telemetry)
        .into_iter()
        .filter(|r| r["surface"] == surface && r["tool"] == tool && r["outcome"] == "ok")
        .collect()
}

/// The program `create(a.txt); bash(echo hi > b.txt); print(view(a.txt))`, with `create` on the
/// user's confirm list, pauses at create and again at bash; Claude Code's Elicitation hook
/// approves each; the program resumes from the paused call each time, so create runs once.
/// The model made one run_code call; on the wire it was three tools/call rounds (the program,
/// then each answer resuming it).
#[test]
fn claude_code_answers_each_pause_and_the_program_resumes() {
    let Some(run) = run("accept") else {
        return;
    };
    assert_eq!(
        model_run_code_calls(&run.api_log),
        1,
        "one run_code call by the model"
    );
    let rounds = ok_records(&run.telemetry, "mcp", "run_code");
    assert_eq!(
        rounds.len(),
        3,
        "the program, then two resumptions: {rounds:#?}"
    );
    assert!(run.workspace.join("a.txt").is_file(), "a.txt written");
    assert!(run.workspace.join("b.txt").is_file(), "b.txt written");
    let creates = ok_records(&run.telemetry, "mcp:run_code", "create");
    assert_eq!(creates.len(), 1, "create ran exactly once: {creates:#?}");
    assert_eq!(creates[0]["confirmation"], "approved", "{}", creates[0]);
    let bashes = ok_records(&run.telemetry, "mcp:run_code", "bash");
    assert_eq!(bashes.len(), 1, "bash ran exactly once: {bashes:#?}");
    assert_eq!(bashes[0]["confirmation"], "approved", "{}", bashes[0]);
}

/// Headless with no hook, Claude Code answers toolgate's question with "cancel" (dismissed):
/// nobody decided, so the program stays paused at create and the model gets the preview and a
/// token to ask the user with — nothing of it runs, and nothing is reported as declined.
#[test]
fn claude_code_headless_without_an_answer_runs_nothing() {
    let Some(run) = run("none") else {
        return;
    };
    assert_eq!(
        model_run_code_calls(&run.api_log),
        1,
        "one run_code call by the model"
    );
    assert!(!run.workspace.join("a.txt").exists(), "a.txt not written");
    assert!(!run.workspace.join("b.txt").exists(), "b.txt not written");
    let creates = ok_records(&run.telemetry, "mcp:run_code", "create");
    assert!(creates.is_empty(), "create did not run: {creates:#?}");
}
