//! `toolgate mcp` and `toolgate serve` driven by real MCP clients: the official Python SDK (PyPI
//! `mcp`, both `mode="legacy"` and `mode="auto"`) and the MCP Inspector CLI (npm), with a proxied
//! upstream server (npm `@modelcontextprotocol/server-everything`).
//!
//! The clients are installed by `.ci/install-test-clients` into `.tools/`. Without them these
//! tests say so and pass, unless `TOOLGATE_REQUIRE_TEST_CLIENTS=1` (CI), where they fail.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]
#![allow(clippy::disallowed_methods)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use toolgate_test_support::tools_dir;

const BIN: &str = env!("CARGO_BIN_EXE_toolgate");

/// These tests start real servers and clients; run them one at a time so a loaded 2-core
/// machine does not turn into timeouts.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

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
    eprintln!("SKIPPED: {msg}");
    false
}

fn python() -> PathBuf {
    tools_dir().join("venv/bin/python")
}

fn everything_js() -> PathBuf {
    tools_dir()
        .join("mcp-clients/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
}

fn inspector() -> PathBuf {
    tools_dir().join("mcp-clients/node_modules/.bin/mcp-inspector")
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_clients/py_scenarios.py")
}

/// The access token every `toolgate serve` here answers to (the clients read it from
/// `TOOLGATE_TOKEN` too).
const TOKEN: &str = "mcp-clients-test-token-0123456789";
const AUTH_HEADER: &str = "Authorization: Bearer mcp-clients-test-token-0123456789";

/// A data dir with the demo store created, a workspace for run_code, and an upstream config
/// for server-everything.
struct Env {
    data: tempfile::TempDir,
    upstream: PathBuf,
    workspace: String,
}

impl Env {
    fn new() -> Self {
        let data = tempfile::tempdir().unwrap();
        toolgate_test_support::succeeded(
            Command::new(BIN)
                .args(["catalog", "search"])
                .env("TOOLGATE_DATA_DIR", data.path()),
            "toolgate catalog search",
        );
        let upstream = data.path().join("upstream.mcp.json");
        std::fs::write(
            &upstream,
            serde_json::json!({"mcpServers": {"everything": {
                "command": "node",
                "args": [everything_js(), "stdio"],
                "toolgate": {"readOnly": ["get-sum"], "startupTimeoutSecs": 60}
            }}})
            .to_string(),
        )
        .unwrap();
        let workspace = data.path().join("ws");
        std::fs::create_dir_all(&workspace).unwrap();
        let workspace = workspace.display().to_string();
        Self {
            data,
            upstream,
            workspace,
        }
    }

    fn store(&self) -> PathBuf {
        self.data.path().join("demo-store")
    }

    fn cmd(&self, program: &Path) -> Command {
        let mut c = Command::new(program);
        c.env("TOOLGATE_DATA_DIR", self.data.path())
            .env("TOOLGATE_TOKEN", TOKEN)
            .env_remove("TOOLGATE_STORE")
            .env_remove("TOOLGATE_MCP_SERVERS");
        c
    }
}

fn run_script(env: &Env, mode: &str, confirm: &str, target: &[String]) {
    let mut c = env.cmd(&python());
    c.arg(script())
        .args([
            "--mode",
            mode,
            "--confirm",
            confirm,
            "--upstream",
            "--store",
        ])
        .arg(env.store())
        .args(target);
    let out = c.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("\"done\": true"),
        "python SDK ({mode}, {confirm}) failed:\n{stdout}\n{stderr}"
    );
    // Closing a legacy HTTP session is a DELETE the SDK expects to see answered 200 or 204.
    assert!(
        !stderr.contains("Session termination failed"),
        "python SDK ({mode}, {confirm}): {stderr}"
    );
    println!(
        "python SDK {mode}/{confirm}: {} checks passed",
        stdout.matches("\"ok\": true").count()
    );
}

/// `toolgate serve` on a free port; killed on drop.
struct Server {
    child: Child,
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(env: &Env, extra: &[&str]) -> Server {
    let mut cmd = env.cmd(Path::new(BIN));
    cmd.args([
        "serve",
        "--port",
        "0",
        "--workspace",
        &env.workspace,
        "--upstream",
    ])
    .arg(&env.upstream)
    .args(extra);
    spawn_serve(cmd)
}

/// Start `cmd` (a `toolgate serve --port 0 …`) and wait for the MCP URL its banner prints.
fn spawn_serve(mut cmd: Command) -> Server {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    let line = lines
        .find_map(|l| l.ok().filter(|l| l.contains("/mcp")))
        .expect("serve printed its MCP URL");
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap()
        .to_owned();
    Server { child, url }
}

#[test]
fn python_sdk_over_stdio_both_protocol_generations_all_confirmation_paths() {
    let _serial = serial();
    if !require_or_skip("the MCP Python SDK", &python())
        || !require_or_skip("server-everything", &everything_js())
    {
        return;
    }
    let env = Env::new();
    let stdio = vec![
        "--".to_owned(),
        BIN.to_owned(),
        "mcp".to_owned(),
        "--workspace".to_owned(),
        env.workspace.clone(),
        "--upstream".to_owned(),
        env.upstream.display().to_string(),
    ];
    for mode in ["legacy", "auto"] {
        for confirm in ["approve", "decline", "token"] {
            run_script(&env, mode, confirm, &stdio);
        }
    }
}

#[test]
fn python_sdk_over_streamable_http() {
    let _serial = serial();
    if !require_or_skip("the MCP Python SDK", &python())
        || !require_or_skip("server-everything", &everything_js())
    {
        return;
    }
    let env = Env::new();
    // Stateless (2026-07-28) clients share the server's session: one server per such run.
    for (mode, confirm) in [
        ("legacy", "approve"),
        ("legacy", "token"),
        ("auto", "approve"),
        ("auto", "token"),
    ] {
        let server = serve(&env, &[]);
        run_script(
            &env,
            mode,
            confirm,
            &["--url".to_owned(), server.url.clone()],
        );
    }
}

fn inspect(env: &Env, target: &[&str], method_args: &[&str]) -> (i32, serde_json::Value, String) {
    let out = env
        .cmd(&inspector())
        .arg("--cli")
        .args(target)
        .args(method_args)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let value = serde_json::from_str(&stdout).unwrap_or(serde_json::Value::Null);
    (
        out.status.code().unwrap_or(-1),
        value,
        format!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr)),
    )
}

fn call_text(v: &serde_json::Value) -> String {
    v["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn inspector_cli_lists_and_calls_over_stdio_and_http() {
    let _serial = serial();
    if !require_or_skip("the MCP Inspector CLI", &inspector())
        || !require_or_skip("server-everything", &everything_js())
    {
        return;
    }
    let env = Env::new();
    let upstream = env.upstream.display().to_string();
    let stdio = [
        BIN,
        "mcp",
        "--workspace",
        env.workspace.as_str(),
        "--upstream",
        upstream.as_str(),
    ];
    let (code, v, raw) = inspect(&env, &stdio, &["--method", "tools/list"]);
    assert_eq!(code, 0, "{raw}");
    let names: Vec<&str> = v["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "debrief_searchPlots",
            "debrief_summarizeCurrentPlot",
            "debrief_listTools",
            "debrief_runTool",
            "run_code"
        ],
        "{raw}"
    );
    // run_code calling the proxied upstream tool (marked read-only in toolgate's config)
    let (code, v, raw) = inspect(
        &env,
        &stdio,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "run_code",
            "--tool-args-json",
            r#"{"code": "everything__get_sum(a=20, b=22)"}"#,
        ],
    );
    assert_eq!(code, 0, "{raw}");
    let envelope: serde_json::Value = serde_json::from_str(&call_text(&v)).unwrap();
    assert_eq!(envelope["success"], true, "{raw}");
    assert!(envelope["return_value"].to_string().contains("42"), "{raw}");
    // an unknown tool: the inspector's own exit code for it
    let (code, _, raw) = inspect(
        &env,
        &stdio,
        &["--method", "tools/call", "--tool-name", "nope"],
    );
    assert_ne!(code, 0, "{raw}");

    // HTTP, one named session across separate inspector processes: search+open, then an edit
    // through the token fallback (the inspector CLI cannot answer elicitations).
    let server = serve(&env, &[]);
    let http = [server.url.as_str(), "--transport", "http"];
    let header = [
        "--header",
        "x-toolgate-session: inspector-1",
        "--header",
        AUTH_HEADER,
    ];
    let call = |args: &str| -> (i32, serde_json::Value, String) {
        let mut m = vec!["--method", "tools/call"];
        m.extend_from_slice(&header);
        let parts: Vec<&str> = args.split('\u{1}').collect();
        m.extend(parts);
        inspect(&env, &http, &m)
    };
    let (code, v, raw) = call(
        "--tool-name\u{1}debrief_searchPlots\u{1}--tool-args-json\u{1}{\"text\": \"Alpha — Day 1\", \"open\": true}",
    );
    assert_eq!(code, 0, "{raw}");
    assert!(call_text(&v).contains("\"opened\""), "{raw}");
    let edit = r#"{"toolId": "set-track-color", "params": {"color": "red"}, "featureNames": ["HMS Nelson"]}"#;
    let (code, v, raw) = call(&format!(
        "--tool-name\u{1}debrief_runTool\u{1}--tool-args-json\u{1}{edit}"
    ));
    assert_eq!(code, 0, "{raw}");
    let text = call_text(&v);
    assert!(text.contains("Confirmation needed"), "{raw}");
    let token = text
        .split("\"confirm\": \"")
        .nth(1)
        .and_then(|t| t.split('"').next())
        .unwrap()
        .to_owned();
    let mut confirmed: serde_json::Value = serde_json::from_str(edit).unwrap();
    confirmed["confirm"] = serde_json::Value::String(token);
    let (code, v, raw) = call(&format!(
        "--tool-name\u{1}debrief_runTool\u{1}--tool-args-json\u{1}{confirmed}"
    ));
    assert_eq!(code, 0, "{raw}");
    assert!(call_text(&v).contains("dirty"), "{raw}");
    // another session does not see that plot open
    let (_, v, raw) = inspect(
        &env,
        &http,
        &[
            "--method",
            "tools/call",
            "--header",
            "x-toolgate-session: inspector-2",
            "--header",
            AUTH_HEADER,
            "--tool-name",
            "debrief_summarizeCurrentPlot",
        ],
    );
    assert!(
        call_text(&v).to_lowercase().contains("no plot is open"),
        "{raw}"
    );
}

/// Child processes of `pid` (from /proc), to check nothing leaks.
fn children_of(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
            continue;
        };
        let after = stat.rsplit(')').next().unwrap_or_default();
        let ppid: u32 = after
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        if ppid == pid {
            out.push(p);
        }
    }
    out
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            !s.rsplit(')')
                .next()
                .unwrap_or_default()
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(false)
}

#[test]
fn upstream_children_die_with_the_server() {
    let _serial = serial();
    if !require_or_skip("server-everything", &everything_js()) {
        return;
    }
    let env = Env::new();
    let server = serve(&env, &[]);
    let pid = server.child.id();
    // the upstream server was started before the URL was printed
    let kids = children_of(pid);
    assert!(!kids.is_empty(), "serve should have an upstream child");
    // SIGTERM: a graceful shutdown kills the upstream process group
    let _ = Command::new("kill").arg(pid.to_string()).status();
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline && kids.iter().any(|k| alive(*k)) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let leaked: Vec<u32> = kids.iter().copied().filter(|k| alive(*k)).collect();
    drop(server);
    assert!(leaked.is_empty(), "leaked upstream processes: {leaked:?}");
}

#[test]
fn twenty_concurrent_http_sessions_for_thirty_seconds_share_nothing() {
    let _serial = serial();
    if !require_or_skip("the MCP Python SDK", &python()) {
        return;
    }
    let env = Env::new();
    let server = serve(&env, &["--surface", "debrief"]);
    let seconds = std::env::var("TOOLGATE_CONCURRENCY_SECONDS").unwrap_or_else(|_| "30".into());
    let out = env
        .cmd(&python())
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_clients/py_concurrency.py"))
        .args([server.url.as_str(), "20", seconds.as_str()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    println!("concurrency: {stdout}");
}

#[test]
fn tools_list_includes_upstream_tools_namespaced_and_mutating_unless_configured() {
    let _serial = serial();
    if !require_or_skip("server-everything", &everything_js()) {
        return;
    }
    let env = Env::new();
    let out = env
        .cmd(Path::new(BIN))
        .args([
            "tools",
            "list",
            "--json",
            "--surface",
            "debrief",
            "--upstream",
        ])
        .arg(&env.upstream)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let manifest: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let find = |name: &str| {
        manifest
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} missing from {manifest}"))
    };
    assert_eq!(find("everything__echo")["effect"], "mutating");
    assert_eq!(find("everything__get_sum")["effect"], "read");
    assert!(find("set-track-color").is_object());
}

/// The `codeact-commit` records of a telemetry file.
fn commit_records(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|r| r["tool"] == "codeact-commit")
        .collect()
}

fn run_code_plot_script(env: &Env, mode: &str, confirm: &str, target: &[String], telemetry: &Path) {
    let out = env
        .cmd(&python())
        .env("TOOLGATE_TELEMETRY", telemetry)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_clients/py_run_code_plot.py"))
        .args(["--mode", mode, "--confirm", confirm, "--store"])
        .arg(env.store())
        .args(target)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("\"done\": true"),
        "python SDK run_code plot ({mode}, {confirm}) failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Exactly one record for the commit, with the real confirmation outcome (the preview round
    // of MRTR/token is not the commit; forged and replayed tokens never reach it).
    let records = commit_records(telemetry);
    assert_eq!(records.len(), 1, "{mode}/{confirm}: {records:#?}");
    let expected = if confirm == "decline" {
        "declined"
    } else {
        "approved"
    };
    assert_eq!(records[0]["confirmation"], expected, "{}", records[0]);
    assert_eq!(records[0]["surface"], "mcp:run_code", "{}", records[0]);
    if confirm != "decline" {
        assert_eq!(records[0]["outcome"], "ok", "{}", records[0]);
    }
}

/// A run_code program that recolours one track and trims another: one preview naming both,
/// one approval (elicitation on 2025-11-25, MRTR on 2026-07-28, or the token), both applied as
/// one undo step, dirty, disk untouched; a decline applies nothing; forged and replayed tokens
/// apply nothing; one telemetry record for the commit.
#[test]
fn python_sdk_run_code_edits_the_open_plot_with_one_confirmation() {
    let _serial = serial();
    if !require_or_skip("the MCP Python SDK", &python()) {
        return;
    }
    let env = Env::new();
    let stdio = vec![
        "--".to_owned(),
        BIN.to_owned(),
        "mcp".to_owned(),
        "--workspace".to_owned(),
        env.workspace.clone(),
    ];
    let mut n = 0;
    let mut telemetry = || {
        n += 1;
        env.data.path().join(format!("telemetry-{n}.jsonl"))
    };
    for mode in ["legacy", "auto"] {
        for confirm in ["approve", "decline", "token"] {
            run_code_plot_script(&env, mode, confirm, &stdio, &telemetry());
        }
    }
    // Stateless HTTP drives the workbench's session: the undo step is checked there.
    for confirm in ["approve", "token"] {
        let t = telemetry();
        let mut c = env.cmd(Path::new(BIN));
        c.env("TOOLGATE_TELEMETRY", &t).args([
            "serve",
            "--port",
            "0",
            "--workspace",
            &env.workspace,
        ]);
        let server = spawn_serve(c);
        let workbench = server.url.trim_end_matches("/mcp").to_owned();
        run_code_plot_script(
            &env,
            "auto",
            confirm,
            &[
                "--url".to_owned(),
                server.url.clone(),
                "--workbench".to_owned(),
                workbench,
            ],
            &t,
        );
    }
}

/// Records of the workspace tool `tool` that ran (outcome ok).
fn ran(path: &Path, tool: &str) -> usize {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|r| r["tool"] == tool && r["outcome"] == "ok")
        .count()
}

fn run_code_pause_script(
    env: &Env,
    vars: &[(&str, &Path)],
    mode: &str,
    confirm: &str,
    ws: &Path,
    target: &[String],
) {
    let mut cmd = env.cmd(&python());
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let out = cmd
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_clients/py_run_code_pause.py"))
        .args(["--mode", mode, "--confirm", confirm, "--workspace"])
        .arg(ws)
        .args(target)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("\"done\": true"),
        "python SDK run_code pause ({mode}, {confirm}) failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Issue 33: a program `create(a.txt); bash(echo hi > b.txt); print(view(a.txt))` pauses at
/// each call that needs a person and resumes from it — inline elicitation (2025-11-25), MRTR
/// (2026-07-28), the token (no elicitation, either protocol; and over stateless HTTP) — with
/// `create` run exactly once (counted in the telemetry); a decline raises PermissionError the
/// program handles; forged, replayed and cross-program tokens run nothing.
#[test]
fn python_sdk_run_code_pauses_at_each_confirmation_and_resumes_exactly_once() {
    let _serial = serial();
    if !require_or_skip("the MCP Python SDK", &python()) {
        return;
    }
    let env = Env::new();
    let config = env.data.path().join("config.toml");
    std::fs::write(&config, "[tools]\nconfirm = [\"create\"]\n").unwrap();
    let mut n = 0;
    for (mode, confirm) in [
        ("legacy", "approve"),
        ("legacy", "decline"),
        ("legacy", "token"),
        ("auto", "approve"),
        ("auto", "decline"),
        ("auto", "token"),
    ] {
        n += 1;
        let ws = env.data.path().join(format!("pause-ws-{n}"));
        std::fs::create_dir_all(&ws).unwrap();
        let telemetry = env.data.path().join(format!("pause-telemetry-{n}.jsonl"));
        let stdio = vec![
            "--".to_owned(),
            BIN.to_owned(),
            "mcp".to_owned(),
            "--surface".to_owned(),
            "codeact".to_owned(),
            "--workspace".to_owned(),
            ws.display().to_string(),
        ];
        let vars = [
            ("TOOLGATE_CONFIG", config.as_path()),
            ("TOOLGATE_TELEMETRY", telemetry.as_path()),
        ];
        run_code_pause_script(&env, &vars, mode, confirm, &ws, &stdio);
        let expected = usize::from(confirm != "decline");
        assert_eq!(
            ran(&telemetry, "create"),
            expected,
            "{mode}/{confirm}: create runs once per program, never again on resume"
        );
    }
    // Stateless HTTP (2026-07-28, `toolgate serve`): the token path across requests.
    let ws = env.data.path().join("pause-ws-http");
    std::fs::create_dir_all(&ws).unwrap();
    let telemetry = env.data.path().join("pause-telemetry-http.jsonl");
    let mut c = env.cmd(Path::new(BIN));
    c.env("TOOLGATE_CONFIG", &config)
        .env("TOOLGATE_TELEMETRY", &telemetry)
        .args(["serve", "--port", "0", "--workspace"])
        .arg(&ws);
    let server = spawn_serve(c);
    run_code_pause_script(
        &env,
        &[],
        "auto",
        "token",
        &ws,
        &[
            "--plot-session".to_owned(),
            "--url".to_owned(),
            server.url.clone(),
        ],
    );
    assert_eq!(ran(&telemetry, "create"), 1, "over HTTP too");
}

/// Issue 33: 1,000 programs paused by one client (real workers, token path) — the server keeps
/// at most its per-session cap of paused programs, each holding one worker, stops the oldest
/// (its client is told), and the memory of the server and its workers stays flat.
#[test]
fn a_thousand_paused_programs_from_one_client_stay_within_the_cap() {
    let _serial = serial();
    if !require_or_skip("the MCP Python SDK", &python()) {
        return;
    }
    let env = Env::new();
    let ws = env.data.path().join("pause-memory-ws");
    std::fs::create_dir_all(&ws).unwrap();
    let out = env
        .cmd(&python())
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_clients/py_pause_memory.py"))
        .arg("--workspace")
        .arg(&ws)
        .args([
            "--count",
            "1000",
            "--",
            BIN,
            "mcp",
            "--surface",
            "codeact",
            "--workspace",
        ])
        .arg(&ws)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("\"done\": true"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let done: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    println!("1,000 paused programs: {done}");
    let per_session = toolgate_mcp::PAUSED_LIMITS.per_session;
    // The paused programs' workers, plus at most one idle worker of the pool.
    assert!(
        done["workers_max"].as_u64().unwrap() <= per_session as u64 + 1,
        "{done}"
    );
    let growth = done["peak_rss_mib"].as_f64().unwrap() - done["after_50_mib"].as_f64().unwrap();
    assert!(
        growth < 64.0,
        "memory grew {growth} MiB over 1,000 pauses: {done}"
    );
}
