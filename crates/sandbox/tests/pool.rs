//! The worker pool: programs in child processes, tool calls back over the pipe, a watchdog that
//! kills stuck or oversized workers, and a pool that keeps serving.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::FakeHost;
use serde_json::json;
use toolgate_sandbox::{
    Envelope, ExecRequest, Limits, PoolConfig, TRUNCATION_MARKER, WorkerCommand, WorkerPool,
};

fn pool(size: usize) -> WorkerPool {
    let cmd = WorkerCommand::program(env!("CARGO_BIN_EXE_toolgate-sandbox-worker"));
    WorkerPool::new(
        PoolConfig::new(cmd)
            .with_size(size)
            .with_grace(Duration::from_millis(500)),
    )
}

fn error_type(env: &Envelope) -> &str {
    env.error.as_ref().map_or("<none>", |e| e.type_.as_str())
}

#[tokio::test]
async fn programs_run_in_a_worker_and_call_tools_in_the_host() {
    let pool = pool(1);
    let host = FakeHost::new();
    let env = pool
        .run(
            ExecRequest::new("print('from the worker')\n[ident(value=i) for i in range(10)]"),
            &host,
        )
        .await;
    assert!(env.success, "{env:?}");
    assert_eq!(env.stdout, "from the worker\n");
    assert_eq!(env.return_value, json!([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]));
    assert_eq!(env.tool_calls, 10);
    assert_eq!(host.calls(), 10);
    // tool errors cross as catchable exceptions; the same worker serves the next program
    let env = pool
        .run(
            ExecRequest::new("try:\n    fail(kind='PermissionError', message='no')\nexcept PermissionError:\n    r = 'ok'\nr"),
            &host,
        )
        .await;
    assert_eq!(env.return_value, json!("ok"), "{env:?}");
    assert_eq!(pool.idle_count(), 1);
    // the worker has no environment of its own either
    let env = pool
        .run(ExecRequest::new("import os\nos.getenv('HOME')"), &host)
        .await;
    assert_eq!(error_type(&env), "PermissionError");
}

#[tokio::test]
async fn a_stuck_worker_is_killed_by_the_watchdog_and_the_pool_keeps_serving() {
    let pool = pool(1);
    let host = FakeHost::new();
    let limits = Limits {
        timeout: Duration::from_secs(1),
        ..Limits::default()
    };
    // A single native operation monty does not interrupt: only the watchdog can stop it.
    let started = Instant::now();
    let env = pool
        .run(
            ExecRequest::new("print('start')\nx = 7 ** 30000000\n'never'")
                .with_limits(limits.clone()),
            &host,
        )
        .await;
    let took = started.elapsed();
    assert_eq!(error_type(&env), "TimeoutError", "{env:?}");
    assert!(
        env.error
            .as_ref()
            .unwrap()
            .message
            .contains("worker was stopped"),
        "{env:?}"
    );
    assert!(
        took < Duration::from_secs(5),
        "killed at timeout + grace, took {took:?}"
    );
    assert_eq!(pool.idle_count(), 1, "the killed worker was replaced");

    let env = pool
        .run(ExecRequest::new("ident(value='next')"), &host)
        .await;
    assert!(
        env.success,
        "the next program in the same pool succeeds: {env:?}"
    );
    assert_eq!(env.return_value, json!("next"));

    // a plain infinite loop is stopped by the worker's own limit, the worker survives
    let env = pool
        .run(
            ExecRequest::new("while True:\n    pass").with_limits(limits),
            &host,
        )
        .await;
    assert_eq!(error_type(&env), "TimeoutError", "{env:?}");
    let env = pool.run(ExecRequest::new("1 + 1"), &host).await;
    assert_eq!(env.return_value, json!(2));
}

#[tokio::test]
async fn a_slow_tool_ends_the_program_at_the_timeout_with_its_output() {
    let pool = pool(1);
    let host = FakeHost::new();
    let limits = Limits {
        timeout: Duration::from_secs(1),
        ..Limits::default()
    };
    let started = Instant::now();
    let env = pool
        .run(
            ExecRequest::new("print('before')\nsleep(ms=5000)\n'never'").with_limits(limits),
            &host,
        )
        .await;
    assert_eq!(error_type(&env), "TimeoutError", "{env:?}");
    assert_eq!(env.stdout, "before\n", "output so far is kept");
    assert_eq!(env.error.as_ref().unwrap().line, Some(2), "{env:?}");
    assert!(
        started.elapsed() < Duration::from_millis(1400),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        pool.run(ExecRequest::new("3"), &host).await.return_value,
        json!(3)
    );
}

#[tokio::test]
async fn a_worker_over_its_memory_limit_is_stopped_with_memory_error() {
    let pool = pool(1);
    let host = FakeHost::new();
    let limits = Limits {
        max_memory_bytes: 64 << 20,
        timeout: Duration::from_secs(30),
        ..Limits::default()
    };
    // Many small allocations: invisible to monty's pre-checks, stopped by RLIMIT_AS (or the RSS
    // watchdog).
    let env = pool
        .run(
            ExecRequest::new("x = []\nwhile True:\n    x.append('a' * 1000 + str(len(x)))")
                .with_limits(limits.clone()),
            &host,
        )
        .await;
    assert_eq!(error_type(&env), "MemoryError", "{env:?}");
    let env = pool.run(ExecRequest::new("'alive'"), &host).await;
    assert_eq!(env.return_value, json!("alive"), "{env:?}");
    // a single huge allocation is refused inside the worker, which survives
    let env = pool
        .run(ExecRequest::new("'a' * 10**10").with_limits(limits), &host)
        .await;
    assert_eq!(error_type(&env), "MemoryError", "{env:?}");
}

#[tokio::test]
async fn gathered_calls_are_concurrent_through_a_worker() {
    let pool = pool(1);
    let host = FakeHost::new();
    pool.warm().await.unwrap();
    let started = Instant::now();
    let env = pool
        .run(
            ExecRequest::new(
                "import asyncio\nawait asyncio.gather(*[sleep(ms=200) for _ in range(5)])",
            ),
            &host,
        )
        .await;
    assert_eq!(
        env.return_value,
        json!([200, 200, 200, 200, 200]),
        "{env:?}"
    );
    assert!(
        started.elapsed() < Duration::from_millis(900),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn two_workers_run_two_programs_at_once() {
    let pool = pool(2);
    let host = FakeHost::new();
    pool.warm().await.unwrap();
    assert_eq!(pool.idle_count(), 2);
    let started = Instant::now();
    let (a, b) = tokio::join!(
        pool.run(ExecRequest::new("sleep(ms=400)"), &host),
        pool.run(ExecRequest::new("sleep(ms=400)"), &host),
    );
    assert!(a.success && b.success, "{a:?} {b:?}");
    assert!(
        started.elapsed() < Duration::from_millis(750),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn limits_hold_through_a_worker() {
    let pool = pool(1);
    let host = FakeHost::new();
    let limits = Limits {
        max_tool_calls: 5,
        max_output_bytes: 100,
        ..Limits::default()
    };
    let env = pool
        .run(
            ExecRequest::new("while True:\n    count()").with_limits(limits.clone()),
            &host,
        )
        .await;
    assert_eq!(error_type(&env), "RuntimeError");
    assert_eq!(env.tool_calls, 5);
    let env = pool
        .run(
            ExecRequest::new("for i in range(1000):\n    print(i)").with_limits(limits),
            &host,
        )
        .await;
    assert!(
        env.truncated && env.stdout.ends_with(TRUNCATION_MARKER),
        "{env:?}"
    );
}

#[tokio::test]
async fn a_broken_worker_command_yields_an_error_envelope() {
    let host = FakeHost::new();
    let missing = WorkerPool::new(PoolConfig::new(WorkerCommand::program(
        "/nonexistent/toolgate-worker",
    )));
    let env = missing.run(ExecRequest::new("1"), &host).await;
    assert_eq!(error_type(&env), "RuntimeError");
    assert!(env.error.unwrap().message.contains("could not start"));

    // a "worker" that answers with garbage is treated as untrusted and stopped
    let garbage = WorkerPool::new(PoolConfig::new(WorkerCommand {
        program: "/bin/sh".into(),
        args: vec![
            "-c".into(),
            "printf 'HTTP/1.1 200 OK\\r\\n'; sleep 5".into(),
        ],
    }));
    let started = Instant::now();
    let env = garbage.run(ExecRequest::new("1"), &host).await;
    assert_eq!(error_type(&env), "RuntimeError", "{env:?}");
    assert!(env.error.unwrap().message.contains("invalid frame"));
    assert!(started.elapsed() < Duration::from_secs(4));
    assert_eq!(host.calls(), 0);
}

/// A host whose `ask()` waits for a person (timed on its pause clock) until `release` fires;
/// `ident(value)` answers at once.
struct AskHost {
    clock: std::sync::Arc<toolgate_sandbox::PauseClock>,
    release: tokio::sync::Notify,
}

#[async_trait::async_trait]
impl toolgate_sandbox::ToolHost for AskHost {
    fn tool_names(&self) -> Vec<String> {
        vec!["ask".to_owned(), "ident".to_owned()]
    }

    fn param_names(&self, tool: &str) -> Option<Vec<String>> {
        Some(if tool == "ident" {
            vec!["value".to_owned()]
        } else {
            Vec::new()
        })
    }

    fn pause_clock(&self) -> Option<std::sync::Arc<toolgate_sandbox::PauseClock>> {
        Some(self.clock.clone())
    }

    async fn call(
        &self,
        name: &str,
        mut args: serde_json::Map<String, serde_json::Value>,
    ) -> Result<serde_json::Value, toolgate_sandbox::HostError> {
        if name == "ask" {
            let _waiting = self.clock.waiting();
            self.release.notified().await;
            return Ok(json!("approved"));
        }
        Ok(args.remove("value").unwrap_or_default())
    }
}

/// A program waiting for a person at a call is not stopped by its wall clock (the wait is not
/// its work), gives its pool slot back meanwhile (another program runs on a pool of one), and
/// after the answer still stops at its own limit.
#[tokio::test]
async fn a_paused_program_keeps_its_worker_frees_its_slot_and_is_not_timed_while_waiting() {
    let pool = std::sync::Arc::new(pool(1));
    let host = std::sync::Arc::new(AskHost {
        clock: std::sync::Arc::new(toolgate_sandbox::PauseClock::new()),
        release: tokio::sync::Notify::new(),
    });
    let limits = Limits {
        timeout: Duration::from_millis(800),
        ..Limits::default()
    };
    let (p, h) = (pool.clone(), host.clone());
    let req = ExecRequest::new("a = ident(value=1)\nb = ask()\n[a, b]").with_limits(limits.clone());
    let paused = tokio::spawn(async move { p.run(req, h.as_ref()).await });
    while !host.clock.is_paused() {
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Another program runs on the pool of one while the first waits.
    let other = tokio::time::timeout(
        Duration::from_secs(10),
        pool.run(ExecRequest::new("ident(value=7)"), &FakeHost::new()),
    )
    .await
    .expect("the paused program gave its slot back");
    assert_eq!(other.return_value, json!(7), "{other:?}");
    // The person takes longer than the program's whole limit.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    host.release.notify_one();
    let env = paused.await.unwrap();
    assert!(env.success, "{env:?}");
    assert_eq!(env.return_value, json!([1, "approved"]));

    // After an answer, the program's own work is still limited.
    let (p, h) = (pool.clone(), host.clone());
    let req = ExecRequest::new("ask()\nwhile True:\n    pass").with_limits(limits);
    let looping = tokio::spawn(async move { p.run(req, h.as_ref()).await });
    while !host.clock.is_paused() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    host.release.notify_one();
    let env = tokio::time::timeout(Duration::from_secs(10), looping)
        .await
        .expect("stopped at its limit")
        .unwrap();
    assert_eq!(error_type(&env), "TimeoutError", "{env:?}");
}
