//! MCP stdio lines that are dropped unread — longer than the 4 MiB line cap, or nested deeper
//! than the depth cap — are answered with a JSON-RPC error (issue 30, "smaller"): before, the
//! client waited forever for an answer to a request that never ran. The answer carries the
//! request's `id` when it can be found cheaply at the top level of the line, and no id (MCP
//! 2026-07-28 §Error Responses) when it cannot. The server stays up and answers what follows.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_toolgate");

struct Peer {
    child: Child,
    stdin: ChildStdin,
    rx: mpsc::Receiver<String>,
    _data: tempfile::TempDir,
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start() -> Peer {
    let data = tempfile::tempdir().unwrap();
    let mut child = Command::new(BIN)
        .args(["mcp", "--surface", "debrief"])
        .env("TOOLGATE_DATA_DIR", data.path())
        .env("TOOLGATE_CONFIG", data.path().join("no-config.toml"))
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
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut p = Peer {
        child,
        stdin,
        rx,
        _data: data,
    };
    p.send(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "stdio-limits-test", "version": "1"}}}),
    );
    let r = p.next(Duration::from_secs(30));
    assert_eq!(r["result"]["serverInfo"]["name"], "toolgate", "{r}");
    p.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    p
}

impl Peer {
    fn send_raw(&mut self, bytes: &[u8]) {
        self.stdin.write_all(bytes).unwrap();
        self.stdin.write_all(b"\n").unwrap();
        self.stdin.flush().unwrap();
    }

    fn send(&mut self, v: &Value) {
        self.send_raw(v.to_string().as_bytes());
    }

    /// The next message the server writes.
    fn next(&mut self, within: Duration) -> Value {
        let line = self
            .rx
            .recv_timeout(within)
            .unwrap_or_else(|_| panic!("no answer within {within:?}"));
        serde_json::from_str(&line).unwrap()
    }

    /// The next message, which must be an error answering a dropped line; its message.
    fn dropped_answer(&mut self, id: &Value) -> String {
        let r = self.next(Duration::from_secs(30));
        assert_eq!(r["error"]["code"], -32600, "{r}");
        assert_eq!(r.get("id").unwrap_or(&Value::Null), id, "{r}");
        r["error"]["message"].as_str().unwrap().to_owned()
    }

    fn still_answers(&mut self, id: i64) {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": "ping"}));
        let r = self.next(Duration::from_secs(30));
        assert_eq!(r["id"], id, "{r}");
        assert!(r["result"].is_object(), "{r}");
    }
}

const LIMIT: usize = 4 * 1024 * 1024;

#[test]
fn an_oversized_line_is_answered_with_its_id_and_sizes() {
    let mut p = start();
    let started = Instant::now();
    // id first
    let huge = "x".repeat(LIMIT + 100);
    let line = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "debrief_searchPlots", "arguments": {"text": huge}}})
    .to_string();
    p.send_raw(line.as_bytes());
    let msg = p.dropped_answer(&json!(2));
    assert!(
        msg.contains("too long")
            && msg.contains(&format!("{} bytes", line.len()))
            && msg.contains(&format!("limit {LIMIT}")),
        "{msg}"
    );
    // id last, as a string
    let line = format!(
        r#"{{"jsonrpc":"2.0","method":"tools/call","params":{{"name":"x","arguments":{{"text":"{huge}"}}}},"id":"late-id"}}"#
    );
    p.send_raw(line.as_bytes());
    p.dropped_answer(&json!("late-id"));
    // nothing to recover: answered without an id
    p.send_raw(&vec![b'z'; LIMIT + 1]);
    p.dropped_answer(&Value::Null);
    p.still_answers(3);
    assert!(started.elapsed() < Duration::from_secs(60));
}

#[test]
fn a_too_deeply_nested_line_is_answered_with_its_id() {
    let mut p = start();
    let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
    let line = format!(
        r#"{{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{{"name":"debrief_searchPlots","arguments":{{"text":{deep}}}}}}}"#
    );
    p.send_raw(line.as_bytes());
    let msg = p.dropped_answer(&json!(4));
    assert!(msg.contains("too deeply nested"), "{msg}");
    p.still_answers(5);
}
