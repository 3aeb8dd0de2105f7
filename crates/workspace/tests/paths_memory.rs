//! Host memory stays bounded by the tools' caps (issue 14, item 5): `view` with a `view_range`
//! on a 1 GiB file without a newline, and a `sql` query of `randomblob` rows under a small cap.
//! Each case runs in a child process (this test binary re-run for one test) so the peak
//! resident size it reports (`VmHWM` in /proc/self/status) is the tool's alone.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]
#![allow(clippy::disallowed_methods)]

use std::io::Write;
use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};
use toolgate_core::{Provider, ToolCall, ToolOutcome};
use toolgate_workspace::{WorkspaceConfig, WorkspaceTools};

const CHILD_ENV: &str = "TOOLGATE_PATHS_MEMORY_CHILD";
const GIB: u64 = 1024 * 1024 * 1024;

fn vm_hwm_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

async fn call(t: &WorkspaceTools, tool: &str, params: Value) -> ToolOutcome {
    let Value::Object(map) = params else {
        panic!("object expected")
    };
    t.call(&ToolCall::new(tool, map)).await.unwrap()
}

/// Run `test` of this binary in a child with `CHILD_ENV` set; it prints `VMHWM_KIB=<n>`.
fn child_peak_kib(test: &str, arg: &Path) -> u64 {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, arg)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    // The harness may print "test name ... " on the same line first.
    let peak = stdout.split("VMHWM_KIB=").nth(1).and_then(|rest| {
        rest.split(|c: char| !c.is_ascii_digit())
            .next()
            .and_then(|v| v.parse::<u64>().ok())
    });
    eprintln!("{test}: peak RSS {peak:?} KiB");
    assert!(
        out.status.success(),
        "child failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    peak.unwrap_or_else(|| panic!("no VMHWM line in: {stdout}"))
}

/// A 1 GiB file: 8 KiB of text (so it is not taken for binary), then zeros to the end, all on
/// line 1 (sparse: no disk is used for the zeros), then "\nline two\nline three\n".
fn huge_one_line_file(path: &Path) {
    let mut f = std::fs::File::create(path).unwrap();
    f.write_all(&[b'a'; 8192]).unwrap();
    f.set_len(GIB).unwrap();
    use std::io::{Seek, SeekFrom};
    f.seek(SeekFrom::End(0)).unwrap();
    f.write_all(b"\nline two\nline three\n").unwrap();
}

#[tokio::test]
async fn view_range_child() {
    let Some(dir) = std::env::var_os(CHILD_ENV) else {
        return; // only meaningful as the child of the test below
    };
    let tools = WorkspaceTools::new(WorkspaceConfig::new(&dir).unwrap()).unwrap();
    let o = call(
        &tools,
        "view",
        json!({"path": "huge.txt", "view_range": [2, 3]}),
    )
    .await;
    println!("VMHWM_KIB={}", vm_hwm_kib());
    assert_eq!(o.data, json!("line two\nline three\n"));
    // Line 1 is in range here: it is cut at the read cap, not held whole.
    let o = call(
        &tools,
        "view",
        json!({"path": "huge.txt", "view_range": [1, 1]}),
    )
    .await;
    let text = o.data.as_str().unwrap();
    assert!(text.len() < 2 * 1024 * 1024, "{}", text.len());
    assert!(text.contains("…[truncated"), "the cut is marked");
    assert!(o.summary.contains("Cut at"), "{}", o.summary);
    assert!(
        vm_hwm_kib() < 128 * 1024,
        "a cut line is not held whole either"
    );
}

#[test]
fn view_range_on_a_1_gib_line_stays_small() {
    let dir = tempfile::tempdir().unwrap();
    huge_one_line_file(&dir.path().join("huge.txt"));
    let peak = child_peak_kib("view_range_child", dir.path());
    eprintln!("view_range on a 1 GiB line: peak RSS {} MiB", peak / 1024);
    assert!(
        peak < 128 * 1024,
        "view_range held the file in memory: peak {peak} KiB"
    );
}

#[tokio::test]
async fn sql_randomblob_child() {
    let Some(dir) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let mut c = WorkspaceConfig::new(&dir).unwrap();
    c.read_cap_bytes = 64 * 1024;
    // Room for the old behaviour (every row materialised) to finish and show its peak.
    c.sql_timeout = std::time::Duration::from_secs(300);
    let tools = WorkspaceTools::new(c).unwrap();
    let o = call(
        &tools,
        "sql",
        json!({"query": "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < 4000) SELECT i, randomblob(100000) AS b FROM n", "db_path": ":memory:"}),
    )
    .await;
    println!("VMHWM_KIB={}", vm_hwm_kib());
    let size = serde_json::to_string(&o.data).unwrap().len();
    assert!(size < 64 * 1024 + 4096, "result of {size} bytes");
}

#[test]
fn sql_randomblob_rows_stay_within_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    let peak = child_peak_kib("sql_randomblob_child", dir.path());
    eprintln!(
        "sql randomblob rows under a 64 KiB cap: peak RSS {} MiB",
        peak / 1024
    );
    assert!(
        peak < 128 * 1024,
        "sql held the rows in memory: peak {peak} KiB"
    );
}

#[tokio::test]
async fn sql_result_is_cut_while_produced_with_a_marker() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = WorkspaceConfig::new(dir.path()).unwrap();
    c.read_cap_bytes = 4096;
    let tools = WorkspaceTools::new(c).unwrap();
    let o = call(
        &tools,
        "sql",
        json!({"query": "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < 1000) SELECT i, randomblob(500) FROM n", "db_path": ":memory:"}),
    )
    .await;
    let size = serde_json::to_string(&o.data).unwrap().len();
    assert!(size < 4096 + 2048, "result of {size} bytes");
    let rows = o.data["rows"].as_array().unwrap();
    assert!(!rows.is_empty() && rows.len() < 1000, "{} rows", rows.len());
    let marker = o.data["truncated"].as_str().unwrap();
    assert!(marker.contains("truncated at 4096 bytes"), "{marker}");
    assert!(o.summary.contains("cut at 4096 bytes"), "{}", o.summary);
    // A small result is untouched.
    let o = call(
        &tools,
        "sql",
        json!({"query": "SELECT 1 AS a, 'x' AS b", "db_path": ":memory:"}),
    )
    .await;
    assert_eq!(o.data, json!({"columns": ["a", "b"], "rows": [[1, "x"]]}));
}

#[tokio::test]
async fn view_range_keeps_line_semantics() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = WorkspaceConfig::new(dir.path()).unwrap();
    c.read_cap_bytes = 8;
    let tools = WorkspaceTools::new(c).unwrap();
    std::fs::write(dir.path().join("t.txt"), "one\ntwo\nthree").unwrap();
    let o = call(
        &tools,
        "view",
        json!({"path": "t.txt", "view_range": [3, 3]}),
    )
    .await;
    assert_eq!(
        o.data,
        json!("three"),
        "a last line without a newline counts"
    );
    let o = call(
        &tools,
        "view",
        json!({"path": "t.txt", "view_range": [1, -1]}),
    )
    .await;
    assert_eq!(o.data, json!("one\ntwo\n…[truncated 5 bytes]"));
    let Value::Object(map) = json!({"path": "t.txt", "view_range": [4, -1]}) else {
        unreachable!()
    };
    let err = tools.call(&ToolCall::new("view", map)).await.unwrap_err();
    assert!(err.to_string().contains("only 3 lines"), "{err}");
}
