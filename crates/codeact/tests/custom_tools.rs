//! Custom Python tools run as nested sandbox programs on the host that called them, under the
//! same registry, policy and confirmer; tools the filter hides raise a `NameError` that says so.
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(clippy::disallowed_methods)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Map, Value, json};
use toolgate_codeact::{CUSTOM_TOOLS_PROVIDER, PythonTools};
use toolgate_core::flow::{Answer, Confirmer};
use toolgate_core::{
    CallError, OutputKind, Preview, Provider, ProviderError, Registry, ToolCall, ToolFilter,
    ToolOutcome, ToolSpec,
};
use toolgate_sandbox::{Envelope, ExecRequest, Limits, RegistryHost, ToolHost, run};

/// `echo(text)` (a read) and `post(text)` (a mutation that needs a confirmation).
struct Chat {
    posts: AtomicUsize,
}

fn spec(id: &str, kind: &str) -> ToolSpec {
    ToolSpec {
        id: id.into(),
        title: id.into(),
        description: format!("The {id} tool."),
        input_schema: json!({"type": "object", "properties": {"text": {"type": "string"}},
            "required": ["text"], "additionalProperties": false}),
        output_kind: Some(OutputKind::new(kind)),
        category: "test".into(),
        annotations: Map::new(),
    }
}

#[async_trait]
impl Provider for Chat {
    fn name(&self) -> &str {
        "chat"
    }

    async fn list_tools(&self) -> Result<Vec<ToolSpec>, ProviderError> {
        Ok(vec![
            spec("echo", "read/echo"),
            spec("post", "mutation/message/posted"),
        ])
    }

    async fn call(&self, call: &ToolCall) -> Result<ToolOutcome, CallError> {
        if call.tool_id == "post" {
            self.posts.fetch_add(1, Ordering::SeqCst);
        }
        Ok(ToolOutcome {
            kind: OutputKind::new(if call.tool_id == "post" {
                "mutation/message/posted"
            } else {
                "read/echo"
            }),
            summary: String::new(),
            data: json!({"echo": call.params["text"]}),
            change_set: None,
        })
    }
}

struct Asking(Answer, AtomicUsize);

#[async_trait]
impl Confirmer for Asking {
    async fn confirm(&self, _preview: &Preview) -> Answer {
        self.1.fetch_add(1, Ordering::SeqCst);
        self.0
    }
}

struct Setup {
    host: Arc<RegistryHost>,
    chat: Arc<Chat>,
    asked: Arc<Asking>,
    _dir: tempfile::TempDir,
}

async fn setup(files: &[(&str, &str)], answer: Answer, filter: ToolFilter) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let (tools, warnings) = PythonTools::load_dirs(&[dir.path().to_owned()]).await;
    assert!(warnings.is_empty(), "{warnings:?}");
    let limits = Limits {
        timeout: Duration::from_secs(5),
        ..Limits::default()
    };
    let chat = Arc::new(Chat {
        posts: AtomicUsize::new(0),
    });
    let mut reg = Registry::new().with_filter(filter);
    reg.register(chat.clone()).await.unwrap();
    reg.register(Arc::new(PythonTools::new(tools, limits)))
        .await
        .unwrap();
    let asked = Arc::new(Asking(answer, AtomicUsize::new(0)));
    let host = RegistryHost::new(Arc::new(reg), asked.clone())
        .unwrap()
        .auto_approve_provider(CUSTOM_TOOLS_PROVIDER)
        .with_call_timeout(Duration::from_secs(5))
        .shared();
    Setup {
        host,
        chat,
        asked,
        _dir: dir,
    }
}

async fn exec(host: &RegistryHost, code: &str) -> Envelope {
    run(ExecRequest::new(code), host).await
}

const RELAY: &str =
    "TOOL = {'name': 'relay', 'parameters': {'text': {'type': 'string', 'required': True}}}

def relay(text):
    first = echo(text=text)['echo']
    post(text=first)
    return 'relayed ' + first
";

#[tokio::test]
async fn nested_calls_take_the_same_policy() {
    let s = setup(
        &[("relay.py", RELAY)],
        Answer::Approve,
        ToolFilter::allow_all(),
    )
    .await;
    let env = exec(&s.host, "relay(text='hi')").await;
    assert!(env.success, "{env:#?}");
    assert_eq!(env.return_value, json!("relayed hi"));
    assert_eq!(env.tool_calls, 1, "the nested calls are the custom tool's");
    assert_eq!(s.asked.1.load(Ordering::SeqCst), 1, "post asked once");
    assert_eq!(s.chat.posts.load(Ordering::SeqCst), 1);

    let s = setup(
        &[("relay.py", RELAY)],
        Answer::Decline,
        ToolFilter::allow_all(),
    )
    .await;
    let env = exec(
        &s.host,
        "try:\n    relay(text='hi')\nexcept PermissionError as e:\n    print('refused:', e)\n",
    )
    .await;
    assert!(env.success, "{env:#?}");
    assert!(
        env.stdout
            .starts_with("refused: Tool \"post\" was declined by the user"),
        "{}",
        env.stdout
    );
    assert!(
        env.stdout
            .contains("(in custom tool \"relay\", relay.py, line 5)"),
        "{}",
        env.stdout
    );
    assert_eq!(s.chat.posts.load(Ordering::SeqCst), 0, "nothing posted");
}

#[tokio::test]
async fn recursion_and_runaway_tools_are_stopped() {
    let s = setup(
        &[
            ("ping.py", "TOOL = {}\ndef ping():\n    return pong()\n"),
            ("pong.py", "TOOL = {}\ndef pong():\n    return ping()\n"),
            (
                "spin.py",
                "TOOL = {}\ndef run():\n    while True:\n        pass\n",
            ),
        ],
        Answer::Approve,
        ToolFilter::allow_all(),
    )
    .await;
    let env = exec(&s.host, "ping()").await;
    let e = env.error.unwrap();
    assert_eq!(e.type_, "RuntimeError");
    assert!(
        e.message
            .contains("custom tools may call custom tools at most 4 deep"),
        "{}",
        e.message
    );
    let host = RegistryHost::new(
        Arc::new({
            let mut r = Registry::new();
            let (tools, _) = PythonTools::load_dirs(&[s._dir.path().to_owned()]).await;
            let limits = Limits {
                timeout: Duration::from_millis(300),
                ..Limits::default()
            };
            r.register(Arc::new(PythonTools::new(tools, limits)))
                .await
                .unwrap();
            r
        }),
        s.asked.clone(),
    )
    .unwrap()
    .auto_approve_provider(CUSTOM_TOOLS_PROVIDER)
    .shared();
    let started = std::time::Instant::now();
    let env = exec(&host, "spin()").await;
    assert_eq!(env.error.unwrap().type_, "TimeoutError");
    assert!(started.elapsed() < Duration::from_secs(4));

    // A host that is not shared cannot run custom tools (and says why).
    let plain = RegistryHost::new(
        Arc::new({
            let mut r = Registry::new();
            let (tools, _) = PythonTools::load_dirs(&[s._dir.path().to_owned()]).await;
            r.register(Arc::new(PythonTools::new(tools, Limits::default())))
                .await
                .unwrap();
            r
        }),
        s.asked.clone(),
    )
    .unwrap()
    .auto_approve_provider(CUSTOM_TOOLS_PROVIDER);
    let env = exec(&plain, "spin()").await;
    assert!(
        env.error.unwrap().message.contains("RegistryHost::shared"),
        "{}",
        env.stderr
    );
}

#[tokio::test]
async fn hidden_tools_raise_a_name_error_that_says_why() {
    let s = setup(
        &[("relay.py", RELAY)],
        Answer::Approve,
        ToolFilter::new(None, vec!["post".into(), "rel*".into()]),
    )
    .await;
    let mut names = s.host.tool_names();
    names.sort();
    assert_eq!(names, ["echo"]);
    let unavailable: Vec<String> = s
        .host
        .unavailable_tools()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(unavailable, ["post", "relay"]);
    let env = exec(
        &s.host,
        "try:\n    post(text='x')\nexcept NameError as e:\n    print(e)\nmissing_tool()",
    )
    .await;
    assert!(
        env.stdout
            .starts_with("name 'post' is not defined: Tool \"post\" is disabled by configuration"),
        "{}",
        env.stdout
    );
    let e = env.error.unwrap();
    assert_eq!(e.type_, "NameError");
    assert_eq!(
        e.message, "name 'missing_tool' is not defined. Available tools: echo",
        "disabled tools are not listed as available"
    );
    // Called directly (not through a program), the host says the same.
    let err = s
        .host
        .call("relay", Map::from_iter([("text".into(), Value::from("x"))]))
        .await
        .unwrap_err();
    assert!(err.message.contains("\"relay\" is disabled"), "{err}");
}
