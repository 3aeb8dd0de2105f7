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
    ] {
        cmd.env_remove(k);
    }
    cmd
}
