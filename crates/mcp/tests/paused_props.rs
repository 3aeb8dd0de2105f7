//! Property: a `run_code` program paused at a call resumes only for its own client, its own
//! program and a live token, exactly once per call — never on a forged token, a replayed one,
//! another connection's, or one sent with another program; each paused call runs at most once
//! and never before its answer. Plus the bounds: paused programs per session and per server are
//! capped (the oldest stopped, its client told it expired), and an unanswered pause expires.
//!
//! Two in-process rmcp clients without elicitation (so the token path; one connection each)
//! talk to the real server; the runner is a stand-in whose "program" is a list of calls that
//! each need a confirmation, recording every answer it is resumed with (the sandbox's own
//! pause/resume is covered by `toolgate-codeact`'s tests and the Python SDK test).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use proptest::prelude::*;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{RoleClient, RunningService};
use serde_json::{Value, json};
use toolgate_core::telemetry::NullSink;
use toolgate_core::{Answer, CallDigest, Confirmer, Preview};
use toolgate_mcp::confirm::ConfirmState;
use toolgate_mcp::{CodeProgress, CodeRunner, McpShared, PausedCode, PendingLimits, ToolSet};
use toolgate_plot::debrief::Debrief;
use toolgate_plot::transaction::PlotTransaction;

/// Every answer a paused call was resumed with: (program id, call name, answer).
type Log = Arc<Mutex<Vec<(u64, String, Answer)>>>;

/// Programs are JSON: `{"id": N, "calls": ["a", "b"]}`; each call pauses.
struct FakeRunner {
    log: Log,
}

struct FakePaused {
    id: u64,
    calls: Vec<String>,
    at: usize,
    preview: Preview,
    digest: CallDigest,
    log: Log,
}

fn pause_at(id: u64, calls: Vec<String>, at: usize, log: Log) -> CodeProgress {
    if at >= calls.len() {
        return CodeProgress::Done(
            json!({"success": true, "stdout": format!("program {id} ended"),
            "stderr": "", "return_value": null, "error": null, "tool_calls": calls.len(),
            "duration_ms": 0.0, "truncated": false}),
        );
    }
    let name = calls[at].clone();
    CodeProgress::Paused(Box::new(FakePaused {
        preview: Preview {
            title: format!("Run {name}"),
            body: format!("call {name} of program {id}"),
        },
        digest: CallDigest::of(&name, &serde_json::Map::new(), &json!({"id": id})),
        id,
        calls,
        at,
        log,
    }))
}

#[async_trait]
impl PausedCode for FakePaused {
    fn preview(&self) -> &Preview {
        &self.preview
    }
    fn digest(&self) -> &CallDigest {
        &self.digest
    }
    fn already(&self) -> String {
        format!("{} tool calls before this one", self.at)
    }
    async fn resume(self: Box<Self>, answer: Answer) -> CodeProgress {
        self.log
            .lock()
            .unwrap()
            .push((self.id, self.calls[self.at].clone(), answer));
        pause_at(self.id, self.calls, self.at + 1, self.log)
    }
}

#[async_trait]
impl CodeRunner for FakeRunner {
    async fn run(
        &self,
        _code: &str,
        _timeout: Option<Duration>,
        _confirmer: Arc<dyn Confirmer>,
        _plot: Option<Arc<PlotTransaction>>,
    ) -> Value {
        unreachable!("the server starts programs, it does not run them to the end")
    }

    async fn start(
        &self,
        code: &str,
        _timeout: Option<Duration>,
        _plot: Option<Arc<PlotTransaction>>,
    ) -> CodeProgress {
        let p: Value = serde_json::from_str(code).unwrap();
        let calls = p["calls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap().to_owned())
            .collect();
        pause_at(p["id"].as_u64().unwrap(), calls, 0, self.log.clone())
    }
}

type Client = RunningService<RoleClient, ClientConfig>;

struct World {
    shared: Arc<McpShared>,
    log: Log,
    a: Client,
    b: Client,
}

async fn connect(shared: &Arc<McpShared>) -> Client {
    let (x, y) = tokio::io::duplex(1 << 20);
    let shared = shared.clone();
    tokio::spawn(async move {
        let s = toolgate_mcp::ToolgateServer::new(shared)
            .serve(x)
            .await
            .unwrap();
        let _ = s.waiting().await;
    });
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("paused-prop", "1"),
    )
    .serve(y)
    .await
    .unwrap()
}

async fn world(ttl: Duration, limits: PendingLimits) -> World {
    let log: Log = Arc::default();
    let factory = Arc::new(|_: &str| -> Arc<Debrief> { unreachable!("codeact surface") });
    let mut shared = McpShared::new(
        ToolSet::Codeact,
        factory,
        Some(Arc::new(FakeRunner { log: log.clone() })),
        Arc::new(NullSink),
        "",
    )
    .with_paused_limits(limits);
    shared.confirm = ConfirmState::with_ttl(ttl);
    let shared = Arc::new(shared);
    let a = connect(&shared).await;
    let b = connect(&shared).await;
    World { shared, log, a, b }
}

struct Reply {
    is_error: bool,
    status: String,
    body: Value,
    text: String,
}

async fn call(client: &Client, args: Value) -> Reply {
    let r = client
        .call_tool(
            CallToolRequestParams::new("run_code")
                .with_arguments(args.as_object().unwrap().clone()),
        )
        .await
        .unwrap();
    let text = r
        .content
        .iter()
        .find_map(|c| c.as_text().map(|t| t.text.clone()))
        .unwrap_or_default();
    let status = r
        .meta
        .as_ref()
        .and_then(|m| m.0.get("io.toolgate/status"))
        .and_then(|s| s["status"].as_str())
        .unwrap_or("")
        .to_owned();
    Reply {
        is_error: r.is_error == Some(true),
        status,
        body: serde_json::from_str(&text).unwrap_or(Value::Null),
        text,
    }
}

fn program(id: u64, n: usize) -> String {
    let calls: Vec<String> = (0..n).map(|i| format!("call{i}")).collect();
    json!({"id": id, "calls": calls}).to_string()
}

/// What a client does at a pause.
#[derive(Debug, Clone, Copy)]
enum Act {
    Confirm,
    Decline,
    /// A made-up token (the pause stays; the real token still works).
    Forge,
    /// The previous pause's token again (already spent), then the real one.
    Replay,
    /// The other connection presents this pause's token: refused, and the program is stopped.
    OtherConnection,
    /// This token with another program: refused, and the program is stopped.
    OtherProgram,
}

fn act() -> impl Strategy<Value = Act> {
    prop_oneof![
        3 => Just(Act::Confirm),
        2 => Just(Act::Decline),
        1 => Just(Act::Forge),
        1 => Just(Act::Replay),
        1 => Just(Act::OtherConnection),
        1 => Just(Act::OtherProgram),
    ]
}

async fn case(w: &World, id: u64, acts: Vec<Act>) -> Result<(), TestCaseError> {
    let code = program(id, acts.len());
    let mut r = call(&w.a, json!({"code": code})).await;
    let mut expected: Vec<(u64, String, Answer)> = Vec::new();
    let mut previous: Option<String> = None;
    for (i, act) in acts.iter().enumerate() {
        prop_assert_eq!(&r.status, "waiting", "{}", r.text);
        prop_assert!(!r.is_error);
        let token = r.body["confirm"].as_str().unwrap().to_owned();
        let name = format!("call{i}");
        prop_assert!(r.body["preview"].as_str().unwrap().contains(&name));
        let before = w.log.lock().unwrap().len();
        let answer = |t: &str, verb: &str| json!({"code": code, verb: t});
        match act {
            Act::Confirm | Act::Decline => {}
            Act::Forge => {
                let bad = call(&w.a, answer("confirm-0123456789abcdef0000", "confirm")).await;
                prop_assert!(bad.is_error && bad.status == "refused", "{}", bad.text);
            }
            Act::Replay => {
                if let Some(old) = &previous {
                    let bad = call(&w.a, answer(old, "confirm")).await;
                    prop_assert!(bad.is_error && bad.status == "refused", "{}", bad.text);
                }
            }
            Act::OtherConnection | Act::OtherProgram => {
                let bad = if matches!(act, Act::OtherConnection) {
                    call(&w.b, answer(&token, "confirm")).await
                } else {
                    call(
                        &w.a,
                        json!({"code": program(id + 1_000_000, 1), "confirm": token}),
                    )
                    .await
                };
                prop_assert!(bad.is_error && bad.status == "refused", "{}", bad.text);
                prop_assert_eq!(
                    w.log.lock().unwrap().len(),
                    before,
                    "a refused token ran a call"
                );
                // The token is spent and the program stopped: the rightful client cannot go on.
                let late = call(&w.a, answer(&token, "confirm")).await;
                prop_assert!(late.is_error, "{}", late.text);
                prop_assert_eq!(w.log.lock().unwrap().clone(), expected);
                return Ok(());
            }
        }
        prop_assert_eq!(
            w.log.lock().unwrap().len(),
            before,
            "a call ran without its answer"
        );
        let (verb, answered) = if matches!(act, Act::Decline) {
            ("decline", Answer::Decline)
        } else {
            ("confirm", Answer::Approve)
        };
        r = call(&w.a, answer(&token, verb)).await;
        expected.push((id, format!("call{i}"), answered));
        prop_assert_eq!(w.log.lock().unwrap().clone(), expected.clone());
        previous = Some(token);
    }
    prop_assert!(!r.is_error, "{}", r.text);
    let ended = format!("program {id} ended");
    prop_assert_eq!(r.body["stdout"].as_str(), Some(ended.as_str()));
    // Every token of this program is spent now.
    if let Some(old) = previous {
        let bad = call(&w.a, json!({"code": code, "confirm": old})).await;
        prop_assert!(bad.is_error, "{}", bad.text);
    }
    prop_assert_eq!(w.log.lock().unwrap().clone(), expected);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn a_paused_call_runs_once_and_only_on_its_own_live_token(
        acts in proptest::collection::vec(act(), 1..5),
    ) {
        static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let w = world(Duration::from_secs(300), toolgate_mcp::PAUSED_LIMITS).await;
            let id = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            w.log.lock().unwrap().clear();
            case(&w, id, acts).await
        })?;
    }
}

#[tokio::test]
async fn paused_programs_are_capped_per_connection_and_the_oldest_is_told_it_expired() {
    let w = world(Duration::from_secs(300), toolgate_mcp::PAUSED_LIMITS).await;
    let per_session = toolgate_mcp::PAUSED_LIMITS.per_session;
    let mut tokens = Vec::new();
    for id in 0..(per_session as u64 + 1) {
        let r = call(&w.a, json!({"code": program(id, 1)})).await;
        assert_eq!(r.status, "waiting", "{}", r.text);
        tokens.push(r.body["confirm"].as_str().unwrap().to_owned());
    }
    assert_eq!(w.shared.paused_programs(), per_session);
    let r = call(&w.a, json!({"code": program(0, 1), "confirm": tokens[0]})).await;
    assert!(r.is_error && r.status == "refused", "{}", r.text);
    assert!(r.text.contains("evicted"), "{}", r.text);
    assert!(w.log.lock().unwrap().is_empty());
    // The newest still resumes.
    let last = per_session as u64;
    let r = call(
        &w.a,
        json!({"code": program(last, 1), "confirm": tokens[per_session]}),
    )
    .await;
    assert!(!r.is_error, "{}", r.text);
    assert_eq!(w.log.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn a_thousand_pauses_from_one_client_hold_at_most_the_server_cap() {
    let limits = toolgate_mcp::PAUSED_LIMITS;
    let w = world(Duration::from_secs(300), limits).await;
    for id in 0..1000u64 {
        let r = call(&w.a, json!({"code": program(id, 1)})).await;
        assert_eq!(r.status, "waiting", "{}", r.text);
        assert!(w.shared.paused_programs() <= limits.per_session);
    }
    // Many connections together stop at the server cap.
    let mut clients = Vec::new();
    for _ in 0..(limits.per_server / limits.per_session + 2) {
        clients.push(connect(&w.shared).await);
    }
    for (i, c) in clients.iter().enumerate() {
        for j in 0..limits.per_session as u64 {
            let r = call(c, json!({"code": program(10_000 + i as u64 * 100 + j, 1)})).await;
            assert_eq!(r.status, "waiting", "{}", r.text);
        }
    }
    assert_eq!(w.shared.paused_programs(), limits.per_server);
}

#[tokio::test]
async fn an_unanswered_pause_expires_and_its_token_is_refused() {
    let w = world(Duration::from_secs(1), toolgate_mcp::PAUSED_LIMITS).await;
    let r = call(&w.a, json!({"code": program(7, 1)})).await;
    let token = r.body["confirm"].as_str().unwrap().to_owned();
    assert_eq!(w.shared.paused_programs(), 1);
    // The token and the paused program live one second here.
    tokio::time::sleep(Duration::from_millis(1300)).await;
    assert_eq!(
        w.shared.paused_programs(),
        0,
        "the expired program was stopped"
    );
    let r = call(&w.a, json!({"code": program(7, 1), "confirm": token})).await;
    assert!(r.is_error && r.status == "refused", "{}", r.text);
    assert!(r.text.contains("expired"), "{}", r.text);
    assert!(w.log.lock().unwrap().is_empty());
}
