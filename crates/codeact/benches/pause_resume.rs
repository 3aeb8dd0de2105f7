//! Pausing a program at a call that needs a person and resuming it (issue 33: "a criterion
//! bench of pause + resume of a program with 100 completed calls before the pause, reported
//! beside a plain call (goal ≤ 5 ms on this machine)").
//!
//! Three programs through the real runtime (workspace tools, policy, telemetry to memory):
//! - one plain `view` call;
//! - 100 `view` calls, then a `create` that runs pre-approved (`[tools] confirm` unset);
//! - the same 100 calls, then a `create` that pauses (`[tools] confirm = ["create"]`) and is
//!   resumed at once with an approval.
//!
//! The difference between the last two is what a pause and a resume cost. In process always;
//! through a sandbox worker too when `TOOLGATE_WORKER_BIN` names a toolgate binary (build the
//! release one for numbers worth reporting).
#![allow(clippy::disallowed_methods)]

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use toolgate_codeact::paused::Progress;
use toolgate_codeact::{Executor, Host, Runtime, Surface, Tools};
use toolgate_core::flow::{Answer, Fixed};
use toolgate_core::telemetry::NullSink;
use toolgate_sandbox::{ExecRequest, PoolConfig, WorkerCommand, WorkerPool};

const PLAIN: &str = "view(path='notes.txt')";
const HUNDRED_THEN_CREATE: &str = "for i in range(100):\n    view(path='notes.txt')\ncreate(path=f'out-{N}.txt', file_text='x')\n";

fn worker_binary() -> Option<PathBuf> {
    std::env::var_os("TOOLGATE_WORKER_BIN")
        .map(PathBuf::from)
        .filter(|p| p.exists())
}

fn runtime(rt: &tokio::runtime::Runtime, ws: &Path, confirm: bool, workers: bool) -> Runtime {
    let dir = ws.join(if confirm {
        ".cfg-confirm"
    } else {
        ".cfg-plain"
    });
    let _ = std::fs::create_dir_all(&dir);
    let user_config = dir.join("config.toml");
    let text = if confirm {
        "[tools]\nconfirm = [\"create\"]\n"
    } else {
        ""
    };
    let _ = std::fs::write(&user_config, text);
    let host = Host {
        user_config,
        warn: |_| {},
    };
    let Ok(tools) = rt.block_on(Tools::open(ws, &host)) else {
        panic!("the workspace tools did not open");
    };
    let executor = match (workers, worker_binary()) {
        (true, Some(bin)) => Executor::Workers(WorkerPool::new(
            PoolConfig::new(WorkerCommand {
                program: bin,
                args: vec![toolgate_sandbox::WORKER_SUBCOMMAND.into()],
            })
            .with_size(1),
        )),
        _ => Executor::InProcess,
    };
    tools.runtime(
        Surface::RunCode {
            auto_approve_commands: false,
        },
        Arc::new(NullSink),
        executor,
    )
}

fn bench(c: &mut Criterion) {
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    let Ok(ws) = tempfile::tempdir() else { return };
    let _ = std::fs::write(ws.path().join("notes.txt"), "a note\n");
    let mut n = 0u64;
    let mut program = || {
        n += 1;
        HUNDRED_THEN_CREATE.replace("{N}", &n.to_string())
    };

    let mut modes = vec![("in process", false)];
    if worker_binary().is_some() {
        modes.push(("worker", true));
    }
    for (label, workers) in modes {
        let plain = runtime(&rt, ws.path(), false, workers);
        let asking = runtime(&rt, ws.path(), true, workers);
        // Sanity: the paused program pauses once, after its 100 calls, and ends on resume.
        let first = ExecRequest::new(program());
        match rt.block_on(async { asking.start(first, None).next().await }) {
            Progress::Paused(p) => {
                assert_eq!(p.asked().already.count, 100);
                match rt.block_on(p.resume(Answer::Approve)) {
                    Progress::Done(env) => assert!(env.success, "{env:?}"),
                    Progress::Paused(_) => panic!("paused twice"),
                }
            }
            Progress::Done(env) => panic!("did not pause: {env:?}"),
        }

        c.bench_function(&format!("one plain call ({label})"), |b| {
            b.iter(|| {
                black_box(rt.block_on(plain.run(
                    ExecRequest::new(PLAIN),
                    Arc::new(Fixed(Answer::Decline)),
                    None,
                )))
            });
        });
        c.bench_function(&format!("100 calls + create, no pause ({label})"), |b| {
            b.iter(|| {
                black_box(rt.block_on(plain.run(
                    ExecRequest::new(program()),
                    Arc::new(Fixed(Answer::Decline)),
                    None,
                )))
            });
        });
        c.bench_function(
            &format!("100 calls + create, paused and resumed ({label})"),
            |b| {
                b.iter(|| {
                    let req = ExecRequest::new(program());
                    black_box(rt.block_on(async {
                        let Progress::Paused(p) = asking.start(req, None).next().await else {
                            panic!("did not pause");
                        };
                        p.resume(Answer::Approve).await
                    }))
                });
            },
        );
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30);
    targets = bench
}
criterion_main!(benches);
