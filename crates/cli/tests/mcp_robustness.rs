//! `toolgate mcp` under bad input: malformed frames, unknown methods, oversized bodies, a client
//! that disconnects mid-call, upstream servers that hang or die. Errors, no panic, no leaked
//! child process.
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(clippy::disallowed_methods)]

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod support;

const BIN: &str = env!("CARGO_BIN_EXE_toolgate");

struct Peer {
    child: Child,
    stdin: Option<ChildStdin>,
    rx: mpsc::Receiver<String>,
    _data: tempfile::TempDir,
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn bad_upstream_config(dir: &Path, servers: &[(&str, &str)]) -> std::path::PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_clients/bad_upstream.py");
    let mut map = serde_json::Map::new();
    for (name, mode) in servers {
        map.insert(
            (*name).to_owned(),
            json!({"command": "python3", "args": [script, mode],
                   "toolgate": {"startupTimeoutSecs": 1.5, "callTimeoutSecs": 1.5}}),
        );
    }
    let path = dir.join("bad.mcp.json");
    std::fs::write(&path, json!({ "mcpServers": map }).to_string()).unwrap();
    path
}

fn start(args: &[&str], upstream: &[(&str, &str)]) -> Peer {
    let data = tempfile::tempdir().unwrap();
    let config = (!upstream.is_empty()).then(|| bad_upstream_config(data.path(), upstream));
    start_in(data, args, config.as_deref())
}

/// `toolgate mcp` with `data` as its data dir and workspace, and `upstream` as its `--upstream`.
fn start_in(data: tempfile::TempDir, args: &[&str], upstream: Option<&Path>) -> Peer {
    let mut cmd = Command::new(BIN);
    // run_code gets a workspace only when one is named.
    cmd.arg("mcp")
        .arg("--workspace")
        .arg(data.path())
        .args(args);
    if let Some(config) = upstream {
        cmd.arg("--upstream").arg(config);
    }
    let mut child = cmd
        .env("TOOLGATE_DATA_DIR", data.path())
        .env("TOOLGATE_WORKSPACE", data.path())
        .current_dir(data.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    Peer {
        child,
        stdin,
        rx,
        _data: data,
    }
}

impl Peer {
    fn send_raw(&mut self, text: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(text.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    fn send(&mut self, v: &Value) {
        self.send_raw(&v.to_string());
    }

    /// The next message with this id (other lines are skipped); every line must be JSON.
    fn reply(&mut self, id: i64, within: Duration) -> Value {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .rx
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no reply to request {id} within {within:?}"));
            let v: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout carried a non-JSON line ({e}): {line}"));
            if v["id"] == json!(id) {
                return v;
            }
        }
    }

    fn initialize(&mut self) {
        self.send(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "robustness-test", "version": "1"}}}),
        );
        let r = self.reply(1, Duration::from_secs(30));
        assert_eq!(r["result"]["serverInfo"]["name"], "toolgate", "{r}");
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    }

    fn call(&mut self, id: i64, name: &str, args: Value) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": name, "arguments": args}}));
        self.reply(id, Duration::from_secs(60))
    }

    fn still_running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }
}

/// User + system CPU time of a process, in clock ticks (`/proc/PID/stat` fields 14 and 15).
fn cpu_ticks(pid: u32) -> u64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0;
    };
    let after = stat.rsplit(')').next().unwrap_or_default();
    let f: Vec<&str> = after.split_whitespace().collect();
    // After the name: state is field 3, so utime (14) and stime (15) are at 11 and 12 here.
    let n = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    n(11) + n(12)
}

fn descendants(root: u32) -> Vec<u32> {
    let mut all: Vec<(u32, u32)> = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
            continue;
        };
        let after = stat.rsplit(')').next().unwrap_or_default().to_owned();
        let mut f = after.split_whitespace();
        let state = f.next().unwrap_or("");
        let ppid: u32 = f.next().and_then(|s| s.parse().ok()).unwrap_or(0);
        if state != "Z" {
            all.push((p, ppid));
        }
    }
    let mut out = vec![root];
    let mut i = 0;
    while i < out.len() {
        let parent = out[i];
        out.extend(all.iter().filter(|(_, pp)| *pp == parent).map(|(p, _)| *p));
        i += 1;
    }
    out.remove(0);
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
fn malformed_frames_and_unknown_methods_get_errors_and_the_server_lives_on() {
    let mut p = start(&["--surface", "debrief"], &[]);
    p.initialize();
    p.send_raw("{this is not json");
    p.send_raw("[1, 2, 3]");
    p.send(&json!({"jsonrpc": "2.0", "id": 7, "method": "no/such/method", "params": {}}));
    let r = p.reply(7, Duration::from_secs(10));
    assert!(r["error"]["code"].is_i64(), "{r}");
    // unknown tool: a protocol error naming the tools that exist
    p.send(&json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "rm_rf", "arguments": {}}}));
    let r = p.reply(8, Duration::from_secs(10));
    let msg = r["error"]["message"].as_str().unwrap_or_default();
    assert!(
        msg.contains("Unknown tool") && msg.contains("debrief_runTool"),
        "{r}"
    );
    // arguments of the wrong shape: a tool error the model can read
    let r = p.call(9, "debrief_searchPlots", json!({"open": "yes please"}));
    assert_eq!(r["result"]["isError"], true, "{r}");
    // and the server still answers properly
    let r = p.call(10, "debrief_listTools", json!({}));
    assert!(
        r["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("set-track-color"),
        "{r}"
    );
    assert!(p.still_running());
}

#[test]
fn an_oversized_stdio_message_is_dropped_and_the_server_lives_on() {
    let mut p = start(&["--surface", "debrief"], &[]);
    p.initialize();
    // over the 4 MiB line cap: dropped (never buffered whole), the connection stays open
    let huge = "x".repeat(6 * 1024 * 1024);
    p.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "debrief_searchPlots", "arguments": {"text": huge}}}));
    let r = p.call(3, "debrief_listTools", json!({}));
    assert!(r["result"].is_object(), "{r}");
    assert!(p.still_running());
}

#[test]
fn an_oversized_http_body_gets_413() {
    let data = tempfile::tempdir().unwrap();
    let mut child = Command::new(BIN)
        .args(["serve", "--surface", "debrief", "--port", "0"])
        .env("TOOLGATE_DATA_DIR", data.path())
        .env("TOOLGATE_TOKEN", "robustness-test-token-0123456789")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let line = BufReader::new(stdout)
        .lines()
        .find_map(|l| l.ok().filter(|l| l.contains("/mcp")))
        .unwrap();
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap();
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"pad":"{}"}}}}"#,
        "x".repeat(5 * 1024 * 1024)
    );
    let mut s = std::net::TcpStream::connect(&addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer robustness-test-token-0123456789\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).unwrap();
    let _ = s.write_all(body.as_bytes());
    let mut reply = String::new();
    let _ = std::io::Read::read_to_string(&mut s, &mut reply);
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        reply.starts_with("HTTP/1.1 413"),
        "{}",
        &reply[..reply.len().min(300)]
    );
}

#[test]
fn a_client_that_disconnects_mid_call_leaves_no_process_behind() {
    let mut p = start(&["--surface", "codeact"], &[]);
    p.initialize();
    p.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "run_code", "arguments": {"code": "n = 0\nwhile True:\n    n += 1", "timeoutSeconds": 120}}}));
    let pid = p.child.id();
    // The program is running: a process below the server has spent CPU time on it.
    support::wait_until(
        "the program to run in its worker",
        Duration::from_secs(30),
        || {
            descendants(pid)
                .into_iter()
                .filter(|k| *k != pid)
                .any(|k| cpu_ticks(k) > 10)
        },
    );
    let kids = descendants(pid);
    // close stdin: the client is gone
    drop(p.stdin.take());
    let deadline = Instant::now() + Duration::from_secs(15);
    while Instant::now() < deadline && p.still_running() {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        !p.still_running(),
        "toolgate mcp should exit when its client disconnects"
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline && kids.iter().any(|k| alive(*k)) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let leaked: Vec<u32> = kids.iter().copied().filter(|k| alive(*k)).collect();
    assert!(
        leaked.is_empty(),
        "leaked processes after disconnect: {leaked:?}"
    );
}

#[test]
fn upstream_servers_that_hang_or_die_give_errors_not_hangs() {
    let mut p = start(
        &["--surface", "all"],
        &[("hangs", "hang"), ("dies", "die"), ("stalls", "slow")],
    );
    p.initialize();
    // the hanging server was skipped at start-up; the others joined the registry
    let r = p.call(2, "debrief_listTools", json!({}));
    let text = r["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(!text.contains("hangs__"), "{text}");
    assert!(
        text.contains("dies__boom") && text.contains("stalls__boom"),
        "{text}"
    );
    // inside run_code: mutating (unknown effect) and this client cannot be asked inline → the
    // program pauses at the call (not run) and the reply carries a token (issue 33)
    let r = p.call(3, "run_code", json!({"code": "stalls__boom()"}));
    let envelope: Value =
        serde_json::from_str(r["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(envelope["status"], "waiting", "{envelope}");
    assert_eq!(r["result"]["isError"], false, "{r}");
    assert!(p.still_running());
    // the whole tree is killed when the client goes
    let pid = p.child.id();
    let kids = descendants(pid);
    assert!(!kids.is_empty());
    drop(p.stdin.take());
    let deadline = Instant::now() + Duration::from_secs(15);
    while Instant::now() < deadline && (p.still_running() || kids.iter().any(|k| alive(*k))) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let leaked: Vec<u32> = kids.iter().copied().filter(|k| alive(*k)).collect();
    assert!(leaked.is_empty(), "leaked processes: {leaked:?}");
}

#[test]
fn workspace_tools_can_be_served_directly_and_stay_confined() {
    let mut p = start(&["--surface", "codeact", "--workspace-tools"], &[]);
    std::fs::write(
        p._data.path().join("notes.txt"),
        "hello from the workspace\n",
    )
    .unwrap();
    p.initialize();
    p.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}));
    let r = p.reply(2, Duration::from_secs(10));
    let names: Vec<String> = r["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names[0], "run_code");
    assert!(
        names.iter().any(|n| n == "view") && names.iter().any(|n| n == "grep"),
        "{names:?}"
    );
    let r = p.call(3, "view", json!({"path": "notes.txt"}));
    assert!(
        r["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("hello from the workspace"),
        "{r}"
    );
    let r = p.call(4, "view", json!({"path": "../../etc/passwd"}));
    assert_eq!(r["result"]["isError"], true, "{r}");
}

/// A direct tool's end keeps its kind through to the client (issue 34): a change nobody could
/// confirm is refused (an error), one the person declines is an answer, each with its typed
/// status in `_meta`, as for the Debrief tools.
#[test]
fn direct_tools_report_a_decline_and_a_refusal_apart() {
    // `bash` asks over MCP (no --auto-approve-commands).
    let create = json!({"command": "touch new.txt"});
    // No elicitation: the change cannot be confirmed, so it is refused.
    let mut p = start(&["--surface", "codeact", "--workspace-tools"], &[]);
    p.initialize();
    let r = p.call(2, "bash", create.clone());
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert_eq!(
        r["result"]["_meta"]["io.toolgate/status"]["status"], "refused",
        "{r}"
    );
    // With elicitation, the person declines: an answer, not an error.
    let mut p = start(&["--surface", "codeact", "--workspace-tools"], &[]);
    p.send(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "decliner", "version": "1"}}}),
    );
    p.reply(1, Duration::from_secs(30));
    p.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    p.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "bash", "arguments": create}}));
    let asked = loop {
        let line =
            p.rx.recv_timeout(Duration::from_secs(60))
                .expect("the server asks the person before it runs a command");
        let v: Value = serde_json::from_str(&line).unwrap();
        if v["method"] == "elicitation/create" {
            break v;
        }
        assert_ne!(v["id"], json!(2), "answered without asking: {v}");
    };
    p.send(&json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "decline"}}));
    let r = p.reply(2, Duration::from_secs(60));
    assert_eq!(r["result"]["isError"], false, "{r}");
    assert_eq!(
        r["result"]["_meta"]["io.toolgate/status"]["status"], "declined",
        "{r}"
    );
    assert!(!p._data.path().join("new.txt").exists());
}

/// An upstream stdio server starts under the same OS confinement as bash: it cannot read a
/// secret outside its own install and cwd, write there, or read toolgate's environment.
#[test]
fn upstream_servers_run_confined() {
    let data = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.txt");
    std::fs::write(&secret, "PLANTED-UPSTREAM-SECRET").unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_clients/prying_upstream.py");
    let config = data.path().join("pry.mcp.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"prying": {"command": "python3", "args": [script],
               "toolgate": {"readOnly": ["pry"]}}}})
        .to_string(),
    )
    .unwrap();
    let mut p = start_in(data, &["--surface", "all"], Some(&config));
    p.initialize();
    let code = format!(
        "prying__pry(path={:?}, write={:?})",
        secret.display().to_string(),
        outside.path().join("w.txt").display().to_string()
    );
    let r = p.call(2, "run_code", json!({ "code": code }));
    let text = r["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        text.contains("file_error"),
        "the server did not run or read the file: {text}"
    );
    assert!(!text.contains("PLANTED-UPSTREAM-SECRET"), "{text}");
    assert!(text.contains("proc_error"), "{text}");
    assert!(text.contains("write_error"), "{text}");
    assert!(!outside.path().join("w.txt").exists());
}

/// The issue's MCP case: when a `run_code` program's wall clock fires while its `bash` call
/// runs, bash and everything it started (`yes`, `sleep`) die with it.
#[test]
fn run_code_wall_clock_kills_bash_and_its_children() {
    let mut p = start(&["--surface", "all", "--auto-approve-commands"], &[]);
    p.initialize();
    let marker = support::marker("mcp");
    let code = format!(
        "bash(timeout=200, command={:?})",
        format!(
            "touch started; (exec -a {marker}-yes yes > /dev/null) & (exec -a {marker}-sleep sleep 300) & sleep 100"
        )
    );
    let started = Instant::now();
    let r = p.call(2, "run_code", json!({"code": code, "timeoutSeconds": 1.5}));
    assert!(started.elapsed() < Duration::from_secs(30), "{r}");
    let text = r["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        text.contains("\"success\": false") || text.contains("\"success\":false"),
        "{r}"
    );
    // bash really ran (it was approved and started its children)…
    assert!(
        p._data.path().join("started").exists(),
        "bash never ran: {r}"
    );
    // …and nothing it started is left.
    let left = support::survivors(&marker);
    assert!(left.is_empty(), "survivors after the wall clock: {left:?}");
    assert!(p.still_running());
}
