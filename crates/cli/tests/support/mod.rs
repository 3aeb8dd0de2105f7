//! Helpers shared by the CLI's integration tests (`mod support;` in each test file): the host
//! process table seen by marker, and upstream MCP server configs. Each test binary uses some.
#![allow(dead_code, clippy::unwrap_used)]
#![allow(clippy::disallowed_methods)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;

/// A command-line marker unique to this test process and moment, for `exec -a MARKER …`.
pub fn marker(tag: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("tgm-{tag}-{}-{nanos}", std::process::id())
}

/// Processes (from the host's /proc) whose command line starts with `marker`.
pub fn running(marker: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.starts_with(marker))
        .collect()
}

/// The processes marked `marker` still running after waiting up to 3 s for them to go.
pub fn survivors(marker: &str) -> Vec<String> {
    let start = Instant::now();
    loop {
        let left = running(marker);
        if left.is_empty() || start.elapsed() > Duration::from_secs(3) {
            return left;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// Wait until `ready` holds, checking every 10 ms; panics naming `what` after `within`. Tests
/// wait for a signal this way — never for a fixed time, which passes on a slow machine without
/// testing anything.
pub fn wait_until(what: &str, within: Duration, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !ready() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// An upstream MCP server whose one tool (`stalls__boom`) never answers; toolgate gives up on it
/// after `call_timeout` seconds — a request that is reliably slow. Returns the config's path.
pub fn stalling_upstream(dir: &Path, call_timeout: f64) -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_clients/bad_upstream.py");
    // Its working directory is `dir`: it writes `calls.log` there when a call reaches it
    // ([`stalled_calls`]), the signal a test waits for.
    let config = json!({"mcpServers": {"stalls": {
        "command": "python3", "args": [script, "slow"], "cwd": dir,
        "toolgate": {"startupTimeoutSecs": 10, "callTimeoutSecs": call_timeout}}}});
    let path = dir.join("stalls.mcp.json");
    std::fs::write(&path, config.to_string()).unwrap();
    path
}

/// How many calls reached the stalling upstream made by [`stalling_upstream`] in `dir`.
pub fn stalled_calls(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("calls.log"))
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

/// `toolgate ARGS` run to the end with `data` as its data directory (telemetry there too), a
/// user config that does not exist, none of the caller's store or tool-list switches, and stdin
/// null.
pub fn toolgate_with_data(data: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(args)
        .env("TOOLGATE_DATA_DIR", data)
        .env("TOOLGATE_TELEMETRY", data.join("telemetry.jsonl"))
        .env_remove("TOOLGATE_STORE")
        .env_remove("TOOLGATE_TOOLS")
        .env_remove("TOOLGATE_DISABLE")
        .env_remove("TOOLGATE_UNITS")
        .env("TOOLGATE_CONFIG", data.join("no-config.toml"))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

/// `toolgate` with everything it reads from the user's machine moved under `dir`: `HOME`,
/// the user config (`dir/config/toolgate/config.toml`), the data dir, telemetry; and none of
/// the caller's backend, tool-list or confinement switches. stdin is null.
pub fn isolated_toolgate(dir: &Path) -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_toolgate"));
    cmd.env("HOME", dir)
        .env("TOOLGATE_CONFIG", dir.join("config/toolgate/config.toml"))
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("TOOLGATE_DATA_DIR", dir.join("data"))
        .env("TOOLGATE_TELEMETRY", dir.join("telemetry.jsonl"))
        .stdin(std::process::Stdio::null());
    for k in [
        "TOOLGATE_BACKEND",
        "CODEACT_BACKEND",
        "TOOLGATE_TOOLS",
        "TOOLGATE_DISABLE",
        "CODEACT_TOOLS",
        "CODEACT_DISABLE",
        "TOOLGATE_CONFINEMENT",
        "TOOLGATE_UNITS",
    ] {
        cmd.env_remove(k);
    }
    cmd
}

/// One HTTP/1.1 answer read off a socket: the status, the head and the (de-chunked) body.
#[derive(Debug)]
pub struct HttpReply {
    pub status: u16,
    pub head: String,
    pub body: String,
}

impl HttpReply {
    /// Parse a whole answer; `None` when the head is incomplete or has no status.
    pub fn parse(raw: &str) -> Option<Self> {
        let (head, body) = raw.split_once("\r\n\r\n")?;
        let status = head.split_whitespace().nth(1)?.parse().ok()?;
        let chunked = head
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked");
        Some(Self {
            status,
            head: head.to_owned(),
            body: if chunked {
                dechunk(body)
            } else {
                body.to_owned()
            },
        })
    }

    pub fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
        })
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}\n{}", self.head, self.body))
    }

    /// The JSON-RPC message in the body (plain JSON, or the first `data:` event of an SSE body).
    pub fn message(&self) -> serde_json::Value {
        if let Ok(v) = serde_json::from_str(&self.body) {
            return v;
        }
        self.body
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .find_map(|d| serde_json::from_str::<serde_json::Value>(d.trim()).ok())
            .unwrap_or_else(|| panic!("no JSON-RPC message in {} {}", self.head, self.body))
    }

    /// The text of the tool result in the JSON-RPC message.
    pub fn tool_text(&self) -> String {
        let m = self.message();
        m["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("no tool result in {m}"))
            .to_owned()
    }
}

/// A chunked body joined (a body that is not chunk-framed comes back as it is).
fn dechunk(body: &str) -> String {
    let mut out = String::new();
    let mut rest = body;
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            return body.to_owned();
        };
        if n == 0 || after.len() < n {
            break;
        }
        out.push_str(&after[..n]);
        rest = after[n..].trim_start_matches("\r\n");
    }
    out
}

/// The text of one HTTP/1.1 request with a bearer token, `Connection: close`, extra `headers`
/// and an optional JSON body.
pub fn request_text(
    addr: &str,
    method: &str,
    path: &str,
    token: &str,
    headers: &[(&str, &str)],
    body: Option<&serde_json::Value>,
) -> String {
    let payload = body.map(serde_json::Value::to_string).unwrap_or_default();
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n"
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    if body.is_some() {
        req.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            payload.len()
        ));
    }
    req.push_str("\r\n");
    req.push_str(&payload);
    req
}

/// One HTTP/1.1 request with a bearer token on a fresh connection (`Connection: close`).
pub fn http_request(
    addr: &str,
    method: &str,
    path: &str,
    token: &str,
    body: Option<&serde_json::Value>,
) -> HttpReply {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.write_all(request_text(addr, method, path, token, &[], body).as_bytes())
        .unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    HttpReply::parse(&raw).unwrap_or_else(|| panic!("no HTTP answer: {raw:?}"))
}

/// The test venv's Python with the official MCP SDK; `None` (after saying so) when it is not
/// installed — a failure instead under `TOOLGATE_REQUIRE_TEST_CLIENTS=1`.
pub fn mcp_python() -> Option<PathBuf> {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.tools/venv/bin/python");
    if python.exists() {
        return Some(python);
    }
    toolgate_test_support::missing_client("the MCP Python SDK is not installed");
    None
}

/// Run `body` (Python, indented 8 spaces, with `c` the connected client and `text(result)`) in
/// a client of the official MCP Python SDK connected to `http://addr/mcp` with `token`, in the
/// named session `session` when given (`x-toolgate-session`); returns what it printed, and
/// fails the test when the program fails.
pub fn mcp_program(
    python: &Path,
    addr: &str,
    token: &str,
    session: Option<&str>,
    body: &str,
) -> String {
    let program = format!(
        r#"
import asyncio, os, sys
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
async def main():
    headers = {{"Authorization": "Bearer " + os.environ["TOOLGATE_TOKEN"]}}
    if sys.argv[2]:
        headers["x-toolgate-session"] = sys.argv[2]
    async with create_mcp_http_client(headers=headers) as http, Client(
        streamable_http_client(sys.argv[1], http_client=http), mode="auto"
    ) as c:
        def text(r): return r.content[0].text
{body}
asyncio.run(main())
"#
    );
    let out = std::process::Command::new(python)
        .args([
            "-c",
            &program,
            &format!("http://{addr}/mcp"),
            session.unwrap_or(""),
        ])
        .env("TOOLGATE_TOKEN", token)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// An MCP program body that opens Exercise Alpha — Day 1 through the search tool.
pub const OPEN_DAY1: &str = "        await c.call_tool(\"debrief_searchPlots\", {\"text\": \"Alpha — Day 1\", \"open\": True})\n";

/// An MCP program body that recolours HMS Nelson red, confirming with the token the first call
/// returns, and prints the confirmed reply.
pub const RECOLOUR_NELSON: &str = r#"
        call = {"toolId": "set-track-color", "params": {"color": "red"}, "featureNames": ["HMS Nelson"]}
        t = text(await c.call_tool("debrief_runTool", call))
        token = t.split('"confirm": "')[1].split('"')[0]
        print(text(await c.call_tool("debrief_runTool", {**call, "confirm": token})))
"#;

/// A `toolgate serve --port 0 --surface debrief` child with its own data directory, answering
/// `token`; killed when dropped.
pub struct Served {
    pub child: std::process::Child,
    /// `127.0.0.1:PORT`
    pub addr: String,
    /// The three banner lines (workbench URL, MCP endpoint, MCP header).
    pub banner: Vec<String>,
    _data: tempfile::TempDir,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Start `toolgate serve` with `args` after the defaults; returns once the banner is printed.
pub fn serve(args: &[&str], token: &str) -> Served {
    use std::io::BufRead;
    let data = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["serve", "--port", "0", "--surface", "debrief"])
        .args(args)
        .current_dir(data.path())
        .env("TOOLGATE_DATA_DIR", data.path())
        .env("TOOLGATE_CONFIG", data.path().join("config.toml"))
        .env("TOOLGATE_TOKEN", token)
        .env_remove("TOOLGATE_MODEL_URL")
        .env_remove("TOOLGATE_MODEL")
        .env_remove("TOOLGATE_MCP_SERVERS")
        .env_remove("TOOLGATE_STATE")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let banner: Vec<String> = lines.by_ref().take(3).map(Result::unwrap).collect();
    // keep reading, so the server never blocks on a full pipe
    std::thread::spawn(move || for _ in lines {});
    let addr = banner
        .first()
        .and_then(|l| l.strip_prefix("Workbench: http://"))
        .and_then(|r| r.split('/').next())
        .unwrap_or_else(|| panic!("unexpected banner {banner:?}"))
        .to_owned();
    Served {
        child,
        addr,
        banner,
        _data: data,
    }
}
