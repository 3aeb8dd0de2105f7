//! `toolgate serve` answers only the person who started it: every request — the workbench page,
//! its API, the live stream and `/mcp` — must carry the server's access token; run_code gets a
//! workspace only when one is named; `bash` over MCP asks before it runs.
//!
//! The first test is the reproduction of issue 14: one unauthenticated POST to `/mcp` ran
//! `bash(command="id")`.
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(clippy::disallowed_methods)]

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod support;
use support::HttpReply as Reply;

const BIN: &str = env!("CARGO_BIN_EXE_toolgate");
const TOKEN: &str = "serve-auth-test-token-0123456789";

struct Serve {
    child: Child,
    addr: String,
    /// The lines the server printed on stdout (its banner).
    banner: Vec<String>,
    stderr: PathBuf,
    data: tempfile::TempDir,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Serve {
    fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }
}

/// `toolgate serve --port 0 ARGS` in `cwd`, with `TOOLGATE_TOKEN=token` unless `None`.
fn serve(args: &[&str], cwd: &Path, token: Option<&str>, log: &str) -> Serve {
    let data = tempfile::tempdir().unwrap();
    let stderr = data.path().join("stderr.log");
    let mut cmd = Command::new(BIN);
    cmd.args(["serve", "--port", "0"])
        .args(args)
        .current_dir(cwd)
        .env("TOOLGATE_DATA_DIR", data.path())
        .env("TOOLGATE_CONFIG", data.path().join("config.toml"))
        .env_remove("TOOLGATE_TELEMETRY")
        .env("TOOLGATE_LOG", log)
        .env_remove("TOOLGATE_MODEL_URL")
        .env_remove("TOOLGATE_MODEL")
        .env_remove("TOOLGATE_SURFACE")
        .env_remove("TOOLGATE_MCP_SERVERS")
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&stderr).unwrap());
    match token {
        Some(t) => cmd.env("TOOLGATE_TOKEN", t),
        None => cmd.env_remove("TOOLGATE_TOKEN"),
    };
    let mut child = cmd.spawn().unwrap();
    // Read stdout on a thread (so the server never blocks on a full pipe) and take the banner
    // lines that arrive in time: a server that prints fewer fails the assertions, not hangs.
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut banner = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while banner.len() < 3 {
        // once the endpoint line is there, the rest of the banner follows at once
        let wait = if banner.len() >= 2 {
            Duration::from_secs(3)
        } else {
            deadline.saturating_duration_since(Instant::now())
        };
        match rx.recv_timeout(wait) {
            Ok(l) => banner.push(l),
            Err(_) if banner.len() >= 2 => break,
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "serve printed {banner:?} and stopped: {}",
                    std::fs::read_to_string(&stderr).unwrap_or_default()
                );
            }
        }
    }
    let addr = banner[0]
        .strip_prefix("Workbench: http://")
        .and_then(|r| r.split('/').next())
        .unwrap_or_else(|| panic!("unexpected banner {banner:?}"))
        .to_owned();
    Serve {
        child,
        addr,
        banner,
        stderr,
        data,
    }
}

/// One HTTP/1.1 request over a fresh connection.
fn http(addr: &str, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Reply {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    if !body.is_empty() {
        req.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = String::new();
    let _ = s.read_to_string(&mut raw);
    Reply::parse(&raw).unwrap_or(Reply {
        status: 0,
        head: raw,
        body: String::new(),
    })
}

/// The issue's curl reproduction: a stateless (2026-07-28) `tools/call` of `tool`.
fn mcp_call(addr: &str, tool: &str, arguments: &Value, authorization: Option<&str>) -> Reply {
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {
            "name": tool, "arguments": arguments,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "x", "version": "1"}
            }
        }
    })
    .to_string();
    let mut headers = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", tool),
    ];
    if let Some(a) = authorization {
        headers.push(("Authorization", a));
    }
    http(addr, "POST", "/mcp", &headers, &body)
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

fn run_code(code: &str) -> Value {
    json!({ "code": code })
}

#[test]
fn the_issue_repro_an_unauthenticated_post_to_mcp_is_401_and_runs_nothing() {
    let ws = tempfile::tempdir().unwrap();
    let server = serve(
        &["--workspace", ws.path().to_str().unwrap()],
        ws.path(),
        Some(TOKEN),
        "warn",
    );
    let program = run_code(r#"bash(command="id > marker.txt")"#);
    let wrong = bearer("not-the-token-0123456789");
    for auth in [
        None,
        Some(wrong.as_str()),
        Some("Basic dXNlcjpwYXNz"),
        Some(TOKEN),
    ] {
        let r = mcp_call(&server.addr, "run_code", &program, auth);
        assert_eq!(r.status, 401, "{auth:?}: {}\n{}", r.head, r.body);
        let challenge = r.header("www-authenticate").unwrap_or_default();
        assert!(challenge.starts_with("Bearer "), "{auth:?}: {}", r.head);
        assert_eq!(
            challenge.contains("invalid_token"),
            auth.is_some(),
            "a presented credential is named invalid: {challenge}"
        );
        assert_eq!(r.json()["code"], "unauthorized", "{}", r.body);
        assert!(
            r.json()["error"]
                .as_str()
                .unwrap()
                .contains("Authorization: Bearer")
        );
    }
    // a legacy client's initialize cannot open a session either
    let r = http(
        &server.addr,
        "POST",
        "/mcp",
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ],
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "x", "version": "1"}}})
        .to_string(),
    );
    assert_eq!(r.status, 401, "{}", r.body);
    assert!(r.header("mcp-session-id").is_none());
    // The refusal is the whole answer: the request ended before any handler ran (no program
    // was queued to run later).
    assert!(
        !ws.path().join("marker.txt").exists(),
        "bash ran without the token"
    );
}

#[test]
fn with_the_token_bash_over_mcp_still_asks_and_only_a_pre_approval_lets_it_run() {
    let ws = tempfile::tempdir().unwrap();
    let ws_arg = ws.path().to_str().unwrap();
    let program = run_code(r#"bash(command="id > marker.txt")"#);
    {
        let server = serve(&["--workspace", ws_arg], ws.path(), Some(TOKEN), "warn");
        let r = mcp_call(&server.addr, "run_code", &program, Some(&bearer(TOKEN)));
        assert_eq!(r.status, 200, "{}\n{}", r.head, r.body);
        assert!(
            r.body.contains("PermissionError"),
            "a client without a confirmation dialog is refused: {}",
            r.body
        );
        assert!(
            !ws.path().join("marker.txt").exists(),
            "bash ran over MCP without a confirmation"
        );
        // file tools in the named workspace stay pre-approved
        let r = mcp_call(
            &server.addr,
            "run_code",
            &run_code(r#"create(path="made.txt", file_text="ok")"#),
            Some(&bearer(TOKEN)),
        );
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(
            std::fs::read_to_string(ws.path().join("made.txt"))
                .ok()
                .as_deref(),
            Some("ok"),
            "{}",
            r.body
        );
    }
    let server = serve(
        &["--workspace", ws_arg, "--auto-approve-commands"],
        ws.path(),
        Some(TOKEN),
        "warn",
    );
    let r = mcp_call(&server.addr, "run_code", &program, Some(&bearer(TOKEN)));
    assert_eq!(r.status, 200, "{}", r.body);
    let deadline = Instant::now() + Duration::from_secs(5);
    while !ws.path().join("marker.txt").exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        ws.path().join("marker.txt").exists(),
        "--auto-approve-commands pre-approves bash: {}",
        r.body
    );
}

#[test]
fn the_workbench_api_needs_the_token_header_or_the_cookie_the_token_url_sets() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(&["--surface", "debrief"], dir.path(), Some(TOKEN), "warn");
    assert_eq!(
        server.banner,
        [
            format!("Workbench: http://{}/?token={TOKEN}", server.addr),
            format!("MCP endpoint: http://{}/mcp", server.addr),
            format!("MCP header: Authorization: Bearer {TOKEN}"),
        ]
    );
    let addr = server.addr.as_str();
    // nothing without it: the page, the API, the live stream
    for path in ["/api/state", "/api/events", "/api/config"] {
        let r = http(addr, "GET", path, &[], "");
        assert_eq!(r.status, 401, "{path}: {}", r.body);
        assert_eq!(r.json()["code"], "unauthorized", "{path}");
    }
    // the page says, in HTML, how to get in (workbench_session.rs has the details)
    let r = http(addr, "GET", "/", &[], "");
    assert_eq!(r.status, 401, "{}", r.body);
    assert!(r.body.contains("toolgate serve"), "{}", r.body);
    let r = http(
        addr,
        "POST",
        "/api/plots/open",
        &[("Content-Type", "application/json")],
        r#"{"plotId": "stac://demo/alpha-day1/item.json"}"#,
    );
    assert_eq!(r.status, 401, "{}", r.body);
    // a wrong token in any form
    let wrong = "serve-auth-test-token-0123456780";
    for headers in [
        vec![("Authorization", format!("Bearer {wrong}"))],
        vec![("Cookie", format!("toolgate_token={wrong}"))],
    ] {
        let h: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let r = http(addr, "GET", "/api/state", &h, "");
        assert_eq!(r.status, 401, "{headers:?}");
    }
    let r = http(addr, "GET", &format!("/?token={wrong}"), &[], "");
    assert_eq!(r.status, 401);
    assert!(r.header("set-cookie").is_none());

    // the header works
    let auth = bearer(TOKEN);
    let r = http(addr, "GET", "/api/state", &[("Authorization", &auth)], "");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["activePlot"], Value::Null);

    // the printed URL sets the cookie and sends the browser on without the token
    let r = http(addr, "GET", &format!("/?token={TOKEN}"), &[], "");
    assert_eq!(r.status, 303, "{}", r.head);
    assert_eq!(r.header("location").as_deref(), Some("/"));
    let cookie = r.header("set-cookie").unwrap();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let pair = cookie.split(';').next().unwrap().to_owned();
    for path in ["/", "/api/state", "/assets/app.js"] {
        let r = http(addr, "GET", path, &[("Cookie", &pair)], "");
        assert_eq!(r.status, 200, "{path} with the cookie: {}", r.body);
    }
    let r = http(
        addr,
        "POST",
        "/api/plots/open",
        &[("Content-Type", "application/json"), ("Cookie", &pair)],
        r#"{"plotId": "stac://demo/alpha-day1/item.json"}"#,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    // the cookie is for the page; MCP clients use the header
    let r = mcp_call(addr, "debrief_listTools", &json!({}), None);
    assert_eq!(r.status, 401);
    let r = mcp_call(addr, "debrief_listTools", &json!({}), Some(&auth));
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body.contains("set-track-color"), "{}", r.body);
}

#[test]
fn the_random_token_is_only_in_the_banner_never_in_logs_or_telemetry() {
    let dir = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let server = serve(
        &["--workspace", ws.path().to_str().unwrap()],
        dir.path(),
        None,
        "trace",
    );
    let token = server.banner[0]
        .split_once("?token=")
        .map(|(_, t)| t.to_owned())
        .unwrap();
    assert_eq!(token.len(), 64, "a 256-bit random token: {token}");
    assert_ne!(token, TOKEN);
    assert_eq!(
        server.banner.get(2),
        Some(&format!("MCP header: Authorization: Bearer {token}"))
    );
    let addr = server.addr.as_str();
    let auth = bearer(&token);
    // exercise every path a token travels
    let r = http(addr, "GET", &format!("/?token={token}"), &[], "");
    assert_eq!(r.status, 303);
    let pair = r
        .header("set-cookie")
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    assert_eq!(
        http(addr, "GET", "/api/state", &[("Cookie", &pair)], "").status,
        200
    );
    let r = mcp_call(addr, "debrief_listTools", &json!({}), Some(&auth));
    assert_eq!(r.status, 200, "{}", r.body);
    let r = mcp_call(addr, "run_code", &run_code("print(1 + 1)"), Some(&auth));
    assert_eq!(r.status, 200, "{}", r.body);
    let r = http(
        addr,
        "POST",
        "/mcp",
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("Authorization", &auth),
        ],
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "x", "version": "1"}}})
        .to_string(),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    // one hex digit off (a fixed "0" was the token itself one start in sixteen)
    let last = if token.ends_with('0') { '1' } else { '0' };
    let almost = format!("{}{last}", &token[..63]);
    assert_eq!(
        mcp_call(
            addr,
            "debrief_listTools",
            &json!({}),
            Some(&bearer(&almost))
        )
        .status,
        401
    );
    // Everything the server logged is on disk once it has exited.
    let mut server = server;
    let _ = server.child.kill();
    let _ = server.child.wait();

    let log = server.stderr();
    assert!(
        log.lines().count() > 5,
        "trace logging is on, so the check below is not vacuous: {log}"
    );
    let leaking: Vec<&str> = log.lines().filter(|l| l.contains(&token)).collect();
    assert!(leaking.is_empty(), "the token is in the log: {leaking:?}");
    let telemetry = std::fs::read_to_string(server.data.path().join("telemetry.jsonl")).unwrap();
    assert!(
        telemetry.contains("debrief_listTools") || telemetry.contains("run_code"),
        "telemetry was written: {telemetry}"
    );
    assert!(!telemetry.contains(&token), "the token is in the telemetry");
    let shown: Vec<&String> = server
        .banner
        .iter()
        .filter(|l| l.contains(&token))
        .collect();
    assert_eq!(
        shown.len(),
        2,
        "only the workbench URL and the MCP header line"
    );
}

#[test]
fn serve_without_workspace_does_not_hand_the_current_directory_to_run_code() {
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(cwd.path().join("secret.txt"), "cwd-secret-4711\n").unwrap();
    let server = serve(&[], cwd.path(), Some(TOKEN), "warn");
    let auth = bearer(TOKEN);
    let r = mcp_call(
        &server.addr,
        "run_code",
        &run_code(r#"view(path="secret.txt")"#),
        Some(&auth),
    );
    assert!(
        !r.body.contains("cwd-secret-4711"),
        "run_code read the current directory: {}",
        r.body
    );
    assert!(
        r.body.contains("Unknown tool") && r.body.contains("run_code"),
        "run_code is not offered without --workspace: {}",
        r.body
    );
    let list = http(
        &server.addr,
        "POST",
        "/mcp",
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/list"),
            ("Authorization", &auth),
        ],
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "x", "version": "1"}}}})
        .to_string(),
    );
    assert_eq!(list.status, 200, "{}", list.body);
    assert!(list.body.contains("debrief_searchPlots"), "{}", list.body);
    assert!(!list.body.contains("\"run_code\""), "{}", list.body);
    assert!(
        server.stderr().contains("--workspace"),
        "the server says why run_code is off: {}",
        server.stderr()
    );
}

/// Run `cmd` expecting it to stop on its own within 30 s: (exited with success, stderr). One
/// that keeps running (a server that started) is killed and counts as not refused.
fn run_expecting_refusal(mut cmd: Command) -> (Option<bool>, String) {
    let dir = tempfile::tempdir().unwrap();
    let err = dir.path().join("stderr");
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status.success());
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    (status, std::fs::read_to_string(&err).unwrap_or_default())
}

#[test]
fn an_explicit_codeact_surface_without_workspace_is_refused_naming_the_flag() {
    let cwd = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    for command in ["serve", "mcp"] {
        let mut cmd = Command::new(BIN);
        cmd.args([command, "--surface", "codeact"])
            .args(if command == "serve" {
                &["--port", "0"][..]
            } else {
                &[][..]
            })
            .current_dir(cwd.path())
            .env("TOOLGATE_DATA_DIR", data.path())
            .env("TOOLGATE_TOKEN", TOKEN);
        let (success, stderr) = run_expecting_refusal(cmd);
        assert_eq!(
            success,
            Some(false),
            "{command} must refuse to start: {stderr}"
        );
        assert!(
            stderr.contains("--workspace DIR"),
            "{command}: says what would work: {stderr}"
        );
    }
}

#[test]
fn an_unusable_toolgate_token_is_refused_at_start() {
    let data = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(BIN);
    cmd.args(["serve", "--port", "0", "--surface", "debrief"])
        .env("TOOLGATE_DATA_DIR", data.path())
        .env("TOOLGATE_TOKEN", "short");
    let (success, stderr) = run_expecting_refusal(cmd);
    assert_eq!(success, Some(false), "serve must refuse to start: {stderr}");
    assert!(stderr.contains("TOOLGATE_TOKEN"), "{stderr}");
    assert!(stderr.contains("16"), "says how long it must be: {stderr}");
}
