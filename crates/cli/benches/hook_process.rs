//! Whole-process cost of one `toolgate hook pre-tool-use` answer, as a host pays it: start the
//! binary, write the payload to stdin, read the answer, wait for exit. Goal: ≤ 20 ms per answer.
//!
//! Arms: `off` (drain stdin, say nothing), `nudge` (a read-only call: lock, read and rewrite the
//! session's counter), `exclusive` (a denied call: the full deny JSON).
//!
//! `cargo bench -p toolgate --bench hook_process --ignore-rust-version -j2 -- --warm-up-time 1 --measurement-time 5`
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use criterion::{Criterion, criterion_group, criterion_main};

const PAYLOAD: &[u8] = br#"{"sessionId":"bench","timestamp":1,"cwd":"/r","toolName":"view","toolArgs":"{\"path\":\"a.rs\"}"}"#;

fn answer(mode: &str, state: &Path) -> usize {
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["hook", "pre-tool-use", "--nudge-after", "1000000"])
        .env("TOOLGATE_MODE", mode)
        .env("TOOLGATE_HOOK_STATE_DIR", state)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(PAYLOAD).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    out.stdout.len()
}

fn bench(c: &mut Criterion) {
    let state = tempfile::tempdir().unwrap();
    assert_eq!(answer("off", state.path()), 0);
    assert_eq!(answer("nudge", state.path()), 0);
    assert!(
        answer("exclusive", state.path()) > 0,
        "exclusive denies a view"
    );
    let mut g = c.benchmark_group("hook_process");
    for mode in ["off", "nudge", "exclusive"] {
        g.bench_function(mode, |b| b.iter(|| answer(mode, state.path())));
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
