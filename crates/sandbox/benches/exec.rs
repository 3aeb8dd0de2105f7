//! `exec`: the sandbox's per-program and per-tool-call costs.
//! Goals (issue "CodeAct: toolgate exec"): trivial program in process ≤ 50 µs median; 1,000 host
//! tool calls in process ≤ 5 ms; the same through a worker process ≤ 30 ms.

use std::hint::black_box;

use async_trait::async_trait;
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Map, Value};
use toolgate_sandbox::{
    ExecRequest, HostError, PoolConfig, PyExc, ToolHost, WorkerCommand, WorkerPool, run,
};

const TRIVIAL: &str = "x = 1 + 2\nx";
const THOUSAND_CALLS: &str = "total = 0\nfor i in range(1000):\n    total += echo(x=i)\ntotal";

/// `echo(x)` returns `x`.
struct Echo;

#[async_trait]
impl ToolHost for Echo {
    fn tool_names(&self) -> Vec<String> {
        vec!["echo".to_owned()]
    }

    fn param_names(&self, _tool: &str) -> Option<Vec<String>> {
        Some(vec!["x".to_owned()])
    }

    async fn call(&self, _name: &str, mut args: Map<String, Value>) -> Result<Value, HostError> {
        args.remove("x")
            .ok_or_else(|| HostError::new(PyExc::ValueError, "x is required"))
    }
}

fn bench(c: &mut Criterion) {
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    let host = Echo;

    // Sanity: the programs do what the benchmark claims.
    let env = rt.block_on(run(ExecRequest::new(THOUSAND_CALLS), &host));
    assert!(env.success && env.tool_calls == 1000, "{env:?}");

    c.bench_function("trivial program, in process", |b| {
        b.iter(|| black_box(rt.block_on(run(ExecRequest::new(TRIVIAL), &host))));
    });

    c.bench_function("1000 tool calls, in process", |b| {
        b.iter(|| black_box(rt.block_on(run(ExecRequest::new(THOUSAND_CALLS), &host))));
    });

    let pool = WorkerPool::new(
        PoolConfig::new(WorkerCommand::program(env!(
            "CARGO_BIN_EXE_toolgate-sandbox-worker"
        )))
        .with_size(1),
    );
    let warmed = rt.block_on(pool.warm());
    assert!(warmed.is_ok(), "worker did not start: {warmed:?}");
    let env = rt.block_on(pool.run(ExecRequest::new(THOUSAND_CALLS), &host));
    assert!(env.success && env.tool_calls == 1000, "{env:?}");

    c.bench_function("trivial program, worker", |b| {
        b.iter(|| black_box(rt.block_on(pool.run(ExecRequest::new(TRIVIAL), &host))));
    });

    c.bench_function("1000 tool calls, worker", |b| {
        b.iter(|| black_box(rt.block_on(pool.run(ExecRequest::new(THOUSAND_CALLS), &host))));
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
