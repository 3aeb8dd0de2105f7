//! `toolgate calc` through the real binary: every golden input of every implemented catalogue
//! tool gives the same ToolResponse the library gives (the conformance test compares those with
//! the goldens), the stdio protocol answers Debrief's request shape, and usage errors exit 2.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_toolgate")
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../calc/tests/catalogue/tools")
}

fn inputs(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            inputs(&p, out);
        } else if p.to_string_lossy().ends_with(".input.json") {
            out.push(p);
        }
    }
}

#[test]
fn every_golden_input_runs_through_the_binary_like_the_library() {
    let mut files = Vec::new();
    inputs(&fixtures(), &mut files);
    files.sort();
    let implemented = toolgate_calc::tool_ids();
    let mut ran = 0;
    for f in files {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let tool = name.split('.').next().unwrap();
        if !implemented.contains(&tool) {
            continue;
        }
        let out = Command::new(bin())
            .args(["calc", tool])
            .arg(&f)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let got: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let input: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
        let want = toolgate_calc::calc(tool, &input, &[]).unwrap();
        assert_eq!(got, want, "{name}");
        assert!(
            got.get("content").is_some() || got.get("error").is_some(),
            "{name}"
        );
        ran += 1;
    }
    assert!(ran > 0, "no implemented tool has a golden input");
}

#[test]
fn stdio_speaks_the_debrief_calc_protocol() {
    let f = fixtures().join("track/measurement/range-calc.basic.input.json");
    let input: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
    let request = serde_json::json!({
        "tool": "range-calc",
        "features": input["features"],
        "params": {"time": "2024-01-15T10:30:00Z", "units": "m"},
    });
    let mut child = Command::new(bin())
        .args(["calc", "--stdio"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(request.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let got: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let item = &got["content"][0];
    assert_eq!(item["resource"]["uri"], "feature://measurement-range-001");
    assert_eq!(
        item["annotations"]["debrief:resultType"],
        "artifact/measurement/range"
    );
    let feature: serde_json::Value =
        serde_json::from_str(item["resource"]["text"].as_str().unwrap()).unwrap();
    assert_eq!(feature["properties"]["debrief:units"], "m");
    assert!(got["duration_ms"].as_f64().unwrap() >= 0.0);
}

#[test]
fn usage_errors_exit_2_and_tool_errors_exit_0() {
    let out = Command::new(bin())
        .args(["calc", "no-such-tool", "missing.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--list"));
    let out = Command::new(bin())
        .args(["calc", "range-calc", "/nonexistent/in.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let mut child = Command::new(bin())
        .args(["calc", "range-calc", "-p", "units=furlongs"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"{\"type\":\"FeatureCollection\",\"features\":[]}")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "a tool's own error is a response"
    );
    let got: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        got["error"]["data"]["debrief:errorCategory"],
        "invalid_input"
    );
}
