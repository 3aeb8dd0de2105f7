//! Issue 14 item 9: two in-flight JSON-RPC requests with the same id on one connection both ran
//! and one response was lost (rmcp keys in-flight requests by id). The second is now answered
//! at once with a JSON-RPC error; the first runs to its own answer.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod support;
use support::stalling_upstream;

const BIN: &str = env!("CARGO_BIN_EXE_toolgate");

struct Peer {
    child: Child,
    stdin: ChildStdin,
    rx: mpsc::Receiver<Value>,
    _data: tempfile::TempDir,
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(call_timeout: f64) -> Peer {
    let data = tempfile::tempdir().unwrap();
    let upstream = stalling_upstream(data.path(), call_timeout);
    let mut child = Command::new(BIN)
        .args(["mcp", "--surface", "debrief", "--upstream"])
        .arg(upstream)
        .env("TOOLGATE_DATA_DIR", data.path())
        .env("TOOLGATE_CONFIG", data.path().join("config.toml"))
        .current_dir(data.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let v: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout carried a non-JSON line ({e}): {line}"));
            if tx.send(v).is_err() {
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
    fn send(&mut self, v: &Value) {
        self.stdin.write_all(v.to_string().as_bytes()).unwrap();
        self.stdin.write_all(b"\n").unwrap();
        self.stdin.flush().unwrap();
    }

    /// The next message with this id, or `None` when none came within `within`.
    fn reply(&mut self, id: i64, within: Duration) -> Option<Value> {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let v = self.rx.recv_timeout(left).ok()?;
            if v["id"] == json!(id) {
                return Some(v);
            }
        }
    }

    fn call(&mut self, id: i64, name: &str, args: Value) {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": name, "arguments": args}}));
    }
}

#[test]
fn a_second_request_with_the_id_of_one_in_flight_gets_an_error_and_the_first_its_answer() {
    let mut p = start(3.0);
    p.send(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "request-ids-test", "version": "1"}}}),
    );
    let init = p
        .reply(1, Duration::from_secs(30))
        .expect("initialize answered");
    assert_eq!(init["result"]["serverInfo"]["name"], "toolgate", "{init}");
    p.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));

    // The upstream tool is mutating (unknown effect): the first round hands out a token.
    p.call(2, "debrief_runTool", json!({"toolId": "stalls__boom"}));
    let asked = p
        .reply(2, Duration::from_secs(30))
        .expect("token round answered");
    let text = asked["result"]["content"][0]["text"].as_str().unwrap();
    let token = text
        .split("\"confirm\": \"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap_or_else(|| panic!("no confirmation token in {text}"))
        .to_owned();

    // id 3 runs the stalling tool (about 3 s); a second id 3 follows at once.
    let started = Instant::now();
    p.call(
        3,
        "debrief_runTool",
        json!({"toolId": "stalls__boom", "confirm": token}),
    );
    // The first id 3 is in flight: its call has reached the upstream.
    support::wait_until(
        "the stalled call to reach the upstream",
        Duration::from_secs(20),
        || support::stalled_calls(p._data.path()) == 1,
    );
    p.call(3, "debrief_listTools", json!({}));

    let first = p
        .reply(3, Duration::from_secs(20))
        .expect("an answer for id 3");
    assert_eq!(
        first["error"]["code"], -32600,
        "the duplicate is refused, not run: {first}"
    );
    let message = first["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("duplicate request id in flight"),
        "{message}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "refused at once, not after the first finished"
    );

    // The first request still gets its own answer (the upstream's time-out), not the listing.
    let second = p
        .reply(3, Duration::from_secs(20))
        .expect("the running request is answered too");
    let text = second["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(second["result"].is_object(), "{second}");
    assert!(
        !text.trim_start().starts_with('['),
        "the running request's answer, not the listing: {text}"
    );

    // The id is free again once answered.
    p.call(3, "debrief_listTools", json!({}));
    let again = p.reply(3, Duration::from_secs(20)).expect("id 3 reusable");
    assert!(again["result"]["content"][0]["text"].is_string(), "{again}");
}
