//! A program that needs a person's answer pauses at that call and resumes from exactly there:
//! the calls before the pause are never made again, a decline raises `PermissionError` the
//! program can handle, and time spent waiting does not count against the wall clock.

#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(clippy::disallowed_methods)]

use std::sync::Arc;
use std::time::Duration;

use toolgate_codeact::paused::{Paused, Progress};
use toolgate_codeact::{Executor, Host, Runtime, Surface, Tools};
use toolgate_core::flow::Answer;
use toolgate_core::telemetry::MemorySink;
use toolgate_sandbox::{Envelope, ExecRequest};

struct World {
    runtime: Runtime,
    sink: Arc<MemorySink>,
    ws: tempfile::TempDir,
    _dir: tempfile::TempDir,
}

async fn world(config: &str) -> World {
    let dir = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let user_config = dir.path().join("config.toml");
    std::fs::write(&user_config, config).unwrap();
    let host = Host {
        user_config,
        warn: |_| {},
    };
    let tools = Tools::open(ws.path(), &host).await.unwrap();
    let sink = Arc::new(MemorySink::default());
    let runtime = tools.runtime(
        Surface::RunCode {
            auto_approve_commands: false,
        },
        sink.clone(),
        Executor::InProcess,
    );
    World {
        runtime,
        sink,
        ws,
        _dir: dir,
    }
}

fn paused(p: Progress) -> Paused {
    match p {
        Progress::Paused(p) => p,
        Progress::Done(env) => panic!("expected a pause, the program ended: {env:#?}"),
    }
}

fn done(p: Progress) -> Envelope {
    match p {
        Progress::Done(env) => env,
        Progress::Paused(p) => panic!("expected the end, it paused: {:#?}", p.asked()),
    }
}

const PROGRAM: &str = r#"
create(path="a.txt", file_text="hello from a")
bash(command="echo hi > b.txt")
print(view(path="a.txt"))
"#;

#[tokio::test]
async fn a_program_pauses_twice_and_each_call_runs_exactly_once() {
    let w = world("[tools]\nconfirm = [\"create\"]\n").await;
    let run = w.runtime.start(ExecRequest::new(PROGRAM), None);

    let first = paused(run.next().await);
    let asked = first.asked();
    assert!(
        asked.preview.body.contains("a.txt") && asked.preview.title.contains("Create"),
        "{:#?}",
        asked.preview
    );
    assert_eq!(asked.already.count, 0);
    assert!(
        !w.ws.path().join("a.txt").exists(),
        "nothing runs before the answer"
    );

    let second = paused(first.resume(Answer::Approve).await);
    let asked = second.asked();
    assert!(
        asked.preview.body.contains("echo hi > b.txt"),
        "{:#?}",
        asked.preview
    );
    assert_eq!(asked.already.count, 1);
    assert!(
        asked.already.describe().contains("create(a.txt) ok"),
        "{}",
        asked.already.describe()
    );
    assert!(w.ws.path().join("a.txt").exists());
    assert!(!w.ws.path().join("b.txt").exists());

    let env = done(second.resume(Answer::Approve).await);
    assert!(env.success, "{env:#?}");
    assert!(env.stdout.contains("hello from a"), "{env:#?}");
    // (`bash` itself needs the toolgate binary as its confinement launcher: the real-binary
    // test, crates/cli/tests/mcp_clients.rs, checks b.txt.)
    let creates = w
        .sink
        .records()
        .into_iter()
        .filter(|r| r.tool == "create")
        .count();
    assert_eq!(creates, 1, "create ran once: {:#?}", w.sink.records());
    assert_eq!(env.tool_calls, 3);
}

#[tokio::test]
async fn a_declined_call_raises_permission_error_that_the_program_handles() {
    let w = world("").await;
    let code = r#"
try:
    bash(command="echo x > c.txt")
    r = "ran"
except PermissionError as e:
    r = "declined: " + str(e)
create(path="after.txt", file_text="went on")
r
"#;
    let run = w.runtime.start(ExecRequest::new(code), None);
    let p = paused(run.next().await);
    let env = done(p.resume(Answer::Decline).await);
    assert!(env.success, "{env:#?}");
    let r = env.return_value.as_str().unwrap_or_default().to_owned();
    assert!(r.starts_with("declined: "), "{r}");
    assert!(
        r.contains("declined by the user"),
        "a person did decline: {r}"
    );
    assert!(!w.ws.path().join("c.txt").exists());
    assert_eq!(
        std::fs::read_to_string(w.ws.path().join("after.txt")).unwrap(),
        "went on"
    );
}

#[tokio::test]
async fn waiting_for_a_person_does_not_count_against_the_wall_clock() {
    let w = world("").await;
    let mut limits = w.runtime.limits();
    limits.timeout = Duration::from_millis(800);
    let req = ExecRequest::new("bash(command=\"echo ok\")\n'done'").with_limits(limits);
    let run = w.runtime.start(req, None);
    let p = paused(run.next().await);
    // The person takes longer than the program's whole limit to answer.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let env = done(p.resume(Answer::Approve).await);
    assert!(env.success, "{env:#?}");
    assert_eq!(env.return_value, serde_json::json!("done"));
}

#[tokio::test]
async fn a_program_still_stops_at_its_own_limit_after_a_pause() {
    let w = world("").await;
    let mut limits = w.runtime.limits();
    limits.timeout = Duration::from_millis(500);
    let req =
        ExecRequest::new("bash(command=\"echo ok\")\nwhile True:\n    pass\n").with_limits(limits);
    let run = w.runtime.start(req, None);
    let p = paused(run.next().await);
    let env = done(p.resume(Answer::Approve).await);
    assert!(!env.success);
    let e = env.error.unwrap();
    assert_eq!(e.type_, "TimeoutError", "{e:#?}");
}
