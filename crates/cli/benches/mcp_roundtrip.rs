//! stdio `tools/call` round trip for `debrief_summarizeCurrentPlot` on the demo plot, from a
//! Rust client speaking newline-delimited JSON-RPC to `toolgate mcp` (one long-lived process,
//! as a host keeps it). Prints p50/p99 over 1,000 calls, then a criterion measurement of the
//! same round trip. Anchor for comparison: the same call made in-process on `Debrief` (no
//! protocol, no process boundary), which is the floor the MCP layer adds to.
//!
//! Also prints the token cost of the whole advertised tool list (o200k) per surface.
//!
//! `cargo bench -p toolgate --bench mcp_roundtrip --ignore-rust-version -j2 -- --warm-up-time 1 --measurement-time 5`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};

struct Mcp {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next: i64,
    _data: tempfile::TempDir,
}

impl Mcp {
    fn start() -> Self {
        let data = tempfile::tempdir().unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_toolgate"))
            .args(["mcp", "--surface", "debrief"])
            .env("TOOLGATE_DATA_DIR", data.path())
            .env("TOOLGATE_TELEMETRY", data.path().join("telemetry.jsonl"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut m = Self {
            child,
            stdin,
            stdout,
            next: 1,
            _data: data,
        };
        m.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}),
        );
        writeln!(
            m.stdin,
            r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
        )
        .unwrap();
        let r = m.call(
            "debrief_searchPlots",
            json!({"text": "Alpha — Day 1", "open": true}),
        );
        assert!(r.to_string().contains("opened"), "{r}");
        m
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(self.stdin, "{msg}").unwrap();
        self.stdin.flush().unwrap();
        let mut line = String::new();
        loop {
            line.clear();
            self.stdout.read_line(&mut line).unwrap();
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == json!(id) {
                return v;
            }
        }
    }

    fn call(&mut self, name: &str, args: Value) -> Value {
        self.request("tools/call", json!({"name": name, "arguments": args}))
    }
}

impl Drop for Mcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn bench(c: &mut Criterion) {
    // Token cost of the advertised tool lists.
    let counter = toolgate_core::TokenCounter::default();
    for surface in [
        toolgate_mcp::ToolSet::Debrief,
        toolgate_mcp::ToolSet::Codeact,
        toolgate_mcp::ToolSet::All,
    ] {
        let list = toolgate_mcp::tool_list_json(
            surface,
            "view, create, edit, glob, grep, bash, sql, web_fetch, github_api.",
        );
        println!(
            "tools/list token cost ({}): {} tokens (o200k)",
            surface.as_str(),
            counter.count(&list.to_string())
        );
    }

    let mut mcp = Mcp::start();
    let args = json!({});
    for _ in 0..50 {
        mcp.call("debrief_summarizeCurrentPlot", args.clone());
    }
    let mut samples = Vec::with_capacity(1000);
    for _ in 0..1000 {
        let t = Instant::now();
        let r = mcp.call("debrief_summarizeCurrentPlot", args.clone());
        samples.push(t.elapsed().as_secs_f64() * 1000.0);
        assert!(r["result"]["content"].is_array());
    }
    samples.sort_by(f64::total_cmp);
    println!(
        "stdio tools/call debrief_summarizeCurrentPlot over 1000 calls: p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
        percentile(&samples, 0.5),
        percentile(&samples, 0.99),
        samples[samples.len() - 1]
    );

    let mut g = c.benchmark_group("mcp");
    g.bench_function("stdio_summarize_roundtrip", |b| {
        b.iter(|| mcp.call("debrief_summarizeCurrentPlot", args.clone()));
    });
    // Anchor: the same call in-process (no JSON-RPC, no process boundary).
    let data = tempfile::tempdir().unwrap();
    let store = toolgate_plot::demo::ensure_demo_store(&data.path().join("demo-store")).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let debrief = rt.block_on(async {
        let mut registry = toolgate_core::Registry::new();
        registry
            .register(Arc::new(toolgate_plot::tools::NativeTools))
            .await
            .unwrap();
        toolgate_plot::debrief::Debrief::new(
            Arc::new(Mutex::new(toolgate_plot::session::Session::new(vec![
                store,
            ]))),
            Arc::new(registry),
            Arc::new(toolgate_core::telemetry::NullSink),
            toolgate_plot::debrief::Settings::default(),
        )
    });
    let never = toolgate_core::flow::Fixed(toolgate_core::Answer::Decline);
    rt.block_on(debrief.call(
        toolgate_plot::debrief::SEARCH,
        &json!({"text": "Alpha — Day 1", "open": true}),
        &never,
    ))
    .unwrap();
    g.bench_function("in_process_summarize_anchor", |b| {
        b.iter(|| debrief.summarize(&args));
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
