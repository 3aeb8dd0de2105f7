//! Helpers shared by the CLI's integration tests (`mod support;` in each test file): the host
//! process table seen by marker, and upstream MCP server configs. Each test binary uses some.
#![allow(dead_code, clippy::unwrap_used)]

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

/// An upstream MCP server whose one tool (`stalls__boom`) never answers; toolgate gives up on it
/// after `call_timeout` seconds — a request that is reliably slow. Returns the config's path.
pub fn stalling_upstream(dir: &Path, call_timeout: f64) -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_clients/bad_upstream.py");
    let config = json!({"mcpServers": {"stalls": {
        "command": "python3", "args": [script, "slow"],
        "toolgate": {"startupTimeoutSecs": 10, "callTimeoutSecs": call_timeout}}}});
    let path = dir.join("stalls.mcp.json");
    std::fs::write(&path, config.to_string()).unwrap();
    path
}
