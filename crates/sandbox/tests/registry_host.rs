//! `RegistryHost`: sandbox tool calls through a real core `Registry`, the gate and the policy.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use serde_json::{Map, Value, json};
use toolgate_core::flow::{Answer, Confirmer};
use toolgate_core::policy::Confirmation;
use toolgate_core::telemetry::MemorySink;
use toolgate_core::{
    CallError, ChangeSet, Edit, OutputKind, Preview, Provider, ProviderError, Registry, ToolCall,
    ToolOutcome, ToolSpec,
};
use toolgate_sandbox::{Envelope, ExecRequest, RegistryHost, ToolHost, run};

/// A provider with one read tool and one mutating tool. `view(path, fail)` fails with the
/// `CallError` named by `fail`.
struct Fake {
    name: &'static str,
    calls: AtomicUsize,
}

fn spec(id: &str, kind: &str, schema: Value) -> ToolSpec {
    ToolSpec {
        id: id.into(),
        title: id.into(),
        description: format!("The {id} tool."),
        input_schema: schema,
        output_kind: Some(OutputKind::new(kind)),
        category: "test".into(),
        annotations: Map::new(),
    }
}

#[async_trait]
impl Provider for Fake {
    fn name(&self) -> &str {
        self.name
    }

    async fn list_tools(&self) -> Result<Vec<ToolSpec>, ProviderError> {
        Ok(match self.name {
            "workspace" => vec![
                spec(
                    "view",
                    "read/file",
                    json!({"type": "object", "properties": {
                        "path": {"type": "string"},
                        "fail": {"type": "string"}
                    }, "required": ["path"], "additionalProperties": false}),
                ),
                spec(
                    "create-file",
                    "mutation/file/created",
                    json!({"type": "object", "properties": {
                        "path": {"type": "string"},
                        "file_text": {"type": "string"}
                    }, "required": ["path", "file_text"], "additionalProperties": false}),
                ),
            ],
            _ => vec![
                spec(
                    "post-message",
                    "mutation/message/posted",
                    json!({"type": "object", "properties": {
                        "text": {"type": "string"},
                        "with_changes": {"type": "boolean"}
                    }, "required": ["text"], "additionalProperties": false}),
                ),
                spec(
                    "lookup",
                    "search/result",
                    json!({"type": "object", "properties": {"q": {"type": "string"}}}),
                ),
            ],
        })
    }

    async fn call(&self, call: &ToolCall) -> Result<ToolOutcome, CallError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let p = &call.params;
        let message = |m: &str| m.to_owned();
        match p.get("fail").and_then(Value::as_str) {
            Some("not_found") => {
                return Err(CallError::NotFound {
                    message: message("no such file: a.txt"),
                });
            }
            Some("denied") => {
                return Err(CallError::PermissionDenied {
                    message: message("outside the workspace"),
                });
            }
            Some("invalid") => return Err(CallError::invalid("not a text file")),
            Some("timeout") => {
                return Err(CallError::Timeout {
                    tool: call.tool_id.clone(),
                    seconds: 1.0,
                });
            }
            Some(other) => return Err(CallError::failed(format!("crashed: {other}"))),
            None => {}
        }
        let change_set = p
            .get("with_changes")
            .and_then(Value::as_bool)
            .unwrap_or(false)
            .then(|| ChangeSet {
                label: "posted".into(),
                edits: vec![Edit::Remove { id: "m1".into() }],
            });
        Ok(ToolOutcome {
            kind: OutputKind::new(match call.tool_id.as_str() {
                "view" => "read/file",
                "create-file" => "mutation/file/created",
                "lookup" => "search/result",
                _ => "mutation/message/posted",
            }),
            summary: format!("{} ran", call.tool_id),
            data: match call.tool_id.as_str() {
                "view" => json!({"path": p["path"], "text": "line1\nline2\n"}),
                "lookup" => Value::Null,
                _ => json!({"ok": true, "params": p}),
            },
            change_set,
        })
    }
}

struct Asking {
    answer: Answer,
    asked: AtomicUsize,
}

#[async_trait]
impl Confirmer for Asking {
    async fn confirm(&self, _preview: &Preview) -> Answer {
        self.asked.fetch_add(1, Ordering::SeqCst);
        self.answer
    }
}

struct Setup {
    host: RegistryHost,
    workspace: Arc<Fake>,
    other: Arc<Fake>,
    confirmer: Arc<Asking>,
    sink: Arc<MemorySink>,
}

async fn setup(answer: Answer) -> Setup {
    let workspace = Arc::new(Fake {
        name: "workspace",
        calls: AtomicUsize::new(0),
    });
    let other = Arc::new(Fake {
        name: "chat",
        calls: AtomicUsize::new(0),
    });
    let mut reg = Registry::new();
    reg.register(workspace.clone()).await.unwrap();
    reg.register(other.clone()).await.unwrap();
    let confirmer = Arc::new(Asking {
        answer,
        asked: AtomicUsize::new(0),
    });
    let sink = Arc::new(MemorySink::default());
    let host = RegistryHost::new(Arc::new(reg), confirmer.clone())
        .unwrap()
        .with_sink(sink.clone());
    Setup {
        host,
        workspace,
        other,
        confirmer,
        sink,
    }
}

async fn exec(host: &RegistryHost, code: &str) -> Envelope {
    run(ExecRequest::new(code), host).await
}

fn err(env: &Envelope) -> (String, String) {
    let e = env.error.as_ref().expect("an error");
    (e.type_.clone(), e.message.clone())
}

#[tokio::test]
async fn tools_get_python_names_and_reads_run() {
    let s = setup(Answer::Decline).await;
    let mut names = s.host.tool_names();
    names.sort();
    assert_eq!(names, ["create_file", "lookup", "post_message", "view"]);
    assert_eq!(
        s.host.param_names("view"),
        Some(vec!["path".to_owned(), "fail".to_owned()])
    );
    let env = exec(
        &s.host,
        "r = view(path='a.txt')\n[r['text'].count('\\n'), view('b.txt')['path'], lookup(q='x')]",
    )
    .await;
    assert!(env.success, "{env:?}");
    assert_eq!(
        env.return_value,
        json!([2, "b.txt", "lookup ran"]),
        "null data → summary"
    );
    assert_eq!(s.workspace.calls.load(Ordering::SeqCst), 2);
    assert_eq!(s.confirmer.asked.load(Ordering::SeqCst), 0);
    let records = s.sink.records();
    assert_eq!(records.len(), 3);
    assert!(records.iter().all(|r| r.surface == "sandbox"));
    assert_eq!(records[0].tool, "view");
    assert_eq!(records[0].confirmation, Confirmation::NotRequired);
}

#[tokio::test]
async fn provider_errors_become_the_matching_python_exceptions() {
    let s = setup(Answer::Decline).await;
    for (fail, expected, text) in [
        ("not_found", "FileNotFoundError", "no such file: a.txt"),
        ("denied", "PermissionError", "outside the workspace"),
        ("invalid", "ValueError", "not a text file"),
        ("timeout", "TimeoutError", "timed out"),
        ("boom", "RuntimeError", "crashed: boom"),
    ] {
        let code = format!(
            "try:\n    view(path='a.txt', fail='{fail}')\n    r = 'no error'\nexcept {expected} as e:\n    r = 'caught ' + str(e)\nr"
        );
        let env = exec(&s.host, &code).await;
        assert!(env.success, "{fail}: {env:?}");
        let r = env.return_value.as_str().unwrap();
        assert!(r.starts_with("caught ") && r.contains(text), "{fail}: {r}");
    }
    let env = exec(&s.host, "view(path='a.txt', fail='not_found')").await;
    assert_eq!(err(&env).0, "FileNotFoundError");
    // each failure is still recorded once
    assert_eq!(s.sink.records().len(), 6);
}

#[tokio::test]
async fn invalid_parameters_raise_value_error_with_the_core_message() {
    let s = setup(Answer::Decline).await;
    let env = exec(&s.host, "view(path=3, colour='red')").await;
    let (t, m) = err(&env);
    assert_eq!(t, "ValueError");
    assert!(m.starts_with("Invalid parameters for \"view\""), "{m}");
    assert!(m.contains("colour"), "every problem is listed: {m}");
    let env = exec(&s.host, "create_file(path='x')").await;
    let (t, m) = err(&env);
    assert_eq!(t, "ValueError");
    assert!(m.contains("file_text"), "{m}");
    assert_eq!(s.workspace.calls.load(Ordering::SeqCst), 0, "nothing ran");
}

#[tokio::test]
async fn unknown_tools_raise_name_error_listing_the_tools() {
    let s = setup(Answer::Decline).await;
    let env = exec(&s.host, "set_colour(c='red')").await;
    let (t, m) = err(&env);
    assert_eq!(t, "NameError");
    assert!(m.contains("create_file, lookup, post_message, view"), "{m}");
    let e = s.host.call("nope", Map::new()).await.unwrap_err();
    assert!(e.message.contains("view"), "{e}");
}

#[tokio::test]
async fn workspace_side_effects_run_pre_approved() {
    let s = setup(Answer::Decline).await;
    let env = exec(&s.host, "create_file(path='n.txt', file_text='hi')['ok']").await;
    assert!(env.success, "{env:?}");
    assert_eq!(env.return_value, json!(true));
    assert_eq!(
        s.confirmer.asked.load(Ordering::SeqCst),
        0,
        "nobody was asked"
    );
    let rec = s.sink.records().pop().unwrap();
    assert_eq!(rec.tool, "create-file");
    assert_eq!(rec.confirmation, Confirmation::PreApproved);
}

#[tokio::test]
async fn other_side_effects_need_a_confirmation() {
    let s = setup(Answer::Decline).await;
    let env = exec(
        &s.host,
        "try:\n    post_message(text='hi')\nexcept PermissionError as e:\n    r = str(e)\nr",
    )
    .await;
    let r = env.return_value.as_str().unwrap_or_default().to_owned();
    assert!(r.contains("declined"), "{env:?}");
    assert_eq!(s.confirmer.asked.load(Ordering::SeqCst), 1);
    assert_eq!(
        s.other.calls.load(Ordering::SeqCst),
        0,
        "a declined call never runs"
    );
    assert_eq!(
        s.sink.records().pop().unwrap().confirmation,
        Confirmation::Declined
    );

    let s = setup(Answer::Approve).await;
    let env = exec(&s.host, "post_message(text='hi')['ok']").await;
    assert_eq!(env.return_value, json!(true), "{env:?}");
    assert_eq!(s.confirmer.asked.load(Ordering::SeqCst), 1);
    assert_eq!(
        s.sink.records().pop().unwrap().confirmation,
        Confirmation::Approved
    );
}

#[tokio::test]
async fn strict_mode_everywhere_when_auto_approval_is_off() {
    let s = setup(Answer::Decline).await;
    let host = s.host.without_auto_approval();
    let env = exec(&host, "create_file(path='n.txt', file_text='hi')").await;
    assert_eq!(err(&env).0, "PermissionError");
    assert!(err(&env).1.contains("declined"));
    assert_eq!(s.workspace.calls.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn change_sets_need_an_applier() {
    let s = setup(Answer::Approve).await;
    let env = exec(&s.host, "post_message(text='hi', with_changes=True)").await;
    let (t, m) = err(&env);
    assert_eq!(t, "RuntimeError");
    assert!(m.contains("no document"), "{m}");

    let applied = Arc::new(AtomicUsize::new(0));
    let counter = applied.clone();
    let s = setup(Answer::Approve).await;
    let host = s.host.with_applier(move |cs| {
        assert_eq!(cs.label, "posted");
        counter.fetch_add(1, Ordering::SeqCst);
        Ok(())
    });
    let env = exec(&host, "post_message(text='hi', with_changes=True)['ok']").await;
    assert_eq!(env.return_value, json!(true), "{env:?}");
    assert_eq!(applied.load(Ordering::SeqCst), 1);
}
