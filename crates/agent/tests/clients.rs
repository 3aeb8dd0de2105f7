//! The model clients against the scripted mock server over real HTTP: both protocols, streaming,
//! retries with backoff, timeouts, connection failures, and credentials that never reach a log.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use toolgate_agent::{
    ChatRequest, HttpModel, Message, ModelClient, ModelConfig, ModelError, Provider, ToolDef,
};
use toolgate_test_support::{MockModel, Reply};

fn tools() -> Vec<ToolDef> {
    toolgate_plot::debrief::agent_tool_specs()
        .iter()
        .map(ToolDef::from_spec)
        .collect()
}

fn fast(mut c: ModelConfig) -> ModelConfig {
    c.backoff = Duration::from_millis(10);
    c.max_backoff = Duration::from_millis(40);
    c.timeout = Duration::from_secs(10);
    c
}

async fn ask(
    client: &dyn ModelClient,
    msgs: &[Message],
) -> (Result<toolgate_agent::ChatResponse, ModelError>, String) {
    let seen = Mutex::new(String::new());
    let t = tools();
    let r = client
        .complete(
            &ChatRequest {
                messages: msgs,
                tools: &t,
                response_format: None,
            },
            &|d: &str| seen.lock().unwrap().push_str(d),
        )
        .await;
    (r, seen.into_inner().unwrap())
}

#[tokio::test]
async fn openai_plain_and_streamed() {
    let mock = MockModel::sequence(vec![
        Reply::tool(
            "debrief_searchPlots",
            json!({"text": "Alpha", "open": true}),
        ),
        Reply::text("Two tracks and a datum."),
        Reply::tool("debrief_listTools", json!({})),
    ])
    .await
    .unwrap();
    let mut cfg = fast(ModelConfig::new(Provider::OpenAi, mock.url(), "qwen-local"));
    let plain = HttpModel::new(cfg.clone());
    let msgs = [Message::user("open the Exercise Alpha day-1 plot")];
    let (r, _) = ask(&plain, &msgs).await;
    let r = r.unwrap();
    assert_eq!(r.tool_calls[0].name, "debrief_searchPlots");
    assert_eq!(r.model, "qwen-local");
    assert!(r.usage.unwrap().prompt_tokens > 0);
    cfg.stream = true;
    let streamed = HttpModel::new(cfg);
    let (r, seen) = ask(&streamed, &msgs).await;
    let r = r.unwrap();
    assert_eq!(r.text, "Two tracks and a datum.");
    assert_eq!(seen, r.text, "every delta reached the caller, in order");
    let (r, _) = ask(&streamed, &msgs).await;
    assert_eq!(r.unwrap().tool_calls[0].arguments, "{}");
    let reqs = mock.requests();
    assert_eq!(reqs[0].body["model"], "qwen-local");
    assert_eq!(reqs[0].body["tools"].as_array().unwrap().len(), 4);
    assert_eq!(reqs[0].body["tool_choice"], "auto");
    assert!(reqs[0].body.get("stream").is_none());
    assert_eq!(reqs[1].body["stream"], true);
    assert!(
        reqs[0].header("authorization").is_none(),
        "no key configured, none sent"
    );
}

#[tokio::test]
async fn retries_rate_limits_and_server_errors_then_succeeds() {
    let mock = MockModel::sequence(vec![
        Reply::status(429),
        Reply::status(503),
        Reply::text("ok"),
    ])
    .await
    .unwrap();
    let client = HttpModel::new(fast(ModelConfig::new(Provider::OpenAi, mock.url(), "m")));
    let (r, _) = ask(&client, &[Message::user("hi")]).await;
    assert_eq!(r.unwrap().text, "ok");
    assert_eq!(mock.requests().len(), 3);
}

#[tokio::test]
async fn retries_are_bounded_and_client_errors_are_not_retried() {
    let mock = MockModel::sequence(vec![Reply::status(500); 10])
        .await
        .unwrap();
    let mut cfg = fast(ModelConfig::new(Provider::OpenAi, mock.url(), "m"));
    cfg.max_retries = 2;
    let client = HttpModel::new(cfg);
    let (r, _) = ask(&client, &[Message::user("hi")]).await;
    match r.unwrap_err() {
        ModelError::Status { status, body, .. } => {
            assert_eq!(status, 500);
            assert!(body.contains("scripted 500"), "{body}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(mock.requests().len(), 3, "one attempt plus two retries");

    let mock = MockModel::sequence(vec![Reply::status(400), Reply::text("never")])
        .await
        .unwrap();
    let client = HttpModel::new(fast(ModelConfig::new(Provider::OpenAi, mock.url(), "m")));
    let (r, _) = ask(&client, &[Message::user("hi")]).await;
    assert!(matches!(r, Err(ModelError::Status { status: 400, .. })));
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn a_hanging_model_times_out_cleanly() {
    let mock = MockModel::sequence(vec![Reply::hang(Duration::from_secs(5))])
        .await
        .unwrap();
    let mut cfg = fast(ModelConfig::new(Provider::OpenAi, mock.url(), "m"));
    cfg.timeout = Duration::from_millis(300);
    let client = HttpModel::new(cfg);
    let (r, _) = ask(&client, &[Message::user("hi")]).await;
    let e = r.unwrap_err();
    assert!(matches!(e, ModelError::Timeout { .. }), "{e:?}");
    assert!(e.to_string().contains("did not answer within"), "{e}");
    assert_eq!(mock.requests().len(), 1, "a timeout is not retried");
}

#[tokio::test]
async fn nothing_listening_is_a_connection_error_after_retries() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut cfg = fast(ModelConfig::new(
        Provider::OpenAi,
        format!("http://127.0.0.1:{port}/v1"),
        "m",
    ));
    cfg.max_retries = 1;
    let (r, _) = ask(&HttpModel::new(cfg), &[Message::user("hi")]).await;
    let e = r.unwrap_err();
    assert!(matches!(e, ModelError::Connect { .. }), "{e:?}");
    assert!(e.to_string().contains("model URL"), "{e}");
}

#[tokio::test]
async fn garbage_is_a_protocol_error() {
    let mock = MockModel::sequence(vec![Reply::Status(200, "<html>not json</html>".into())])
        .await
        .unwrap();
    let client = HttpModel::new(fast(ModelConfig::new(Provider::OpenAi, mock.url(), "m")));
    let (r, _) = ask(&client, &[Message::user("hi")]).await;
    let e = r.unwrap_err();
    assert!(matches!(e, ModelError::Protocol(_)), "{e:?}");
}

#[tokio::test]
async fn anthropic_plain_and_streamed() {
    let var = "TOOLGATE_TEST_ANTHROPIC_KEY_UNSET";
    let mock = MockModel::sequence(vec![
        Reply::tool(
            "debrief_summarizeCurrentPlot",
            json!({"selectionOnly": true}),
        ),
        Reply::text("Here it is."),
    ])
    .await
    .unwrap();
    let mut cfg = fast(ModelConfig::new(
        Provider::Anthropic,
        mock.origin(),
        "claude-haiku-4-5",
    ));
    cfg.api_key_env = Some(var.into());
    let client = HttpModel::new(cfg.clone());
    let (r, _) = ask(
        &client,
        &[
            Message::system("prime"),
            Message::user("summarise the selection"),
        ],
    )
    .await;
    assert!(
        matches!(&r, Err(ModelError::MissingKey(v)) if v == var),
        "a configured key variable that is unset is an error naming it: {r:?}"
    );
    cfg.api_key_env = None;
    let client = HttpModel::new(cfg.clone());
    let (r, _) = ask(
        &client,
        &[
            Message::system("prime"),
            Message::user("summarise the selection"),
        ],
    )
    .await;
    let r = r.unwrap();
    assert_eq!(r.tool_calls[0].name, "debrief_summarizeCurrentPlot");
    assert_eq!(r.tool_calls[0].arguments, "{\"selectionOnly\":true}");
    cfg.stream = true;
    let (r, seen) = ask(&HttpModel::new(cfg), &[Message::user("x")]).await;
    assert_eq!(r.unwrap().text, "Here it is.");
    assert_eq!(seen, "Here it is.");
    let reqs = mock.requests();
    assert_eq!(reqs[0].path, "/v1/messages");
    assert_eq!(reqs[0].header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(reqs[0].header("x-api-key"), None);
    assert_eq!(reqs[0].body["system"], "prime");
    assert_eq!(reqs[0].body["tools"][0]["name"], "debrief_searchPlots");
    assert!(reqs[0].body["tools"][0]["input_schema"].is_object());
}

const SECRET: &str = "sk-test-SECRET-5f1e2d";
const CHILD: &str = "TOOLGATE_TEST_KEY_CHILD";

/// The key is read from the named variable, sent to the server, and never written to a log or a
/// transcript — even when requests fail and are retried. Setting a variable needs `unsafe` in
/// edition 2024, so the check runs in a child process of this test binary that is given the
/// variable at spawn.
#[test]
fn the_api_key_never_reaches_logs_or_transcripts() {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_with_a_key_in_the_environment",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .env("TOOLGATE_TEST_SECRET_KEY", SECRET)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert!(text.contains("1 passed"), "the child test ran: {text}");
    assert!(text.contains("key checks done"), "{text}");
}

#[tokio::test]
async fn child_with_a_key_in_the_environment() {
    if std::env::var(CHILD).is_err() {
        return; // only meaningful when spawned by the test above
    }
    let secret = SECRET;
    let mock = MockModel::sequence(vec![
        Reply::status(500),
        Reply::tool("debrief_listTools", json!({})),
        Reply::text("done"),
    ])
    .await
    .unwrap();
    let logs = Arc::new(Mutex::new(Vec::<u8>::new()));
    let writer = {
        let logs = logs.clone();
        move || LogWriter(logs.clone())
    };
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(writer)
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let mut cfg = fast(ModelConfig::new(Provider::OpenAi, mock.url(), "m"));
    cfg.api_key_env = Some("TOOLGATE_TEST_SECRET_KEY".into());
    let h = common::harness("m", true).await;
    let agent = toolgate_agent::AgentLoop::new(
        Arc::new(HttpModel::new(cfg.clone())),
        h.debrief.clone(),
        toolgate_agent::AgentConfig::default(),
    );
    let tdir = h.dir.path().join("transcripts");
    let mut conv = toolgate_agent::Conversation::new("key-check")
        .with_transcript(&tdir)
        .unwrap();
    let never = common::Scripted::new(vec![]);
    let out = agent.run(&mut conv, "which tools?", &never, |_| {}).await;
    assert_eq!(out.final_text.as_deref(), Some("done"));
    let reqs = mock.requests();
    assert_eq!(
        reqs[1].header("authorization"),
        Some(format!("Bearer {secret}").as_str()),
        "the key was sent"
    );
    let logs = String::from_utf8(logs.lock().unwrap().clone()).unwrap();
    assert!(logs.contains("retrying"), "the retry was logged: {logs}");
    assert!(!logs.contains(secret), "{logs}");
    let transcript = std::fs::read_to_string(conv.transcript_path().unwrap()).unwrap();
    assert!(transcript.contains("debrief_listTools"));
    assert!(!transcript.contains(secret));
    assert!(!format!("{cfg:?}").contains(secret));
    // Anthropic sends it as x-api-key.
    let mock = MockModel::sequence(vec![Reply::text("hi")]).await.unwrap();
    let mut cfg = fast(ModelConfig::new(
        Provider::Anthropic,
        mock.origin(),
        "claude",
    ));
    cfg.api_key_env = Some("TOOLGATE_TEST_SECRET_KEY".into());
    let (r, _) = ask(&HttpModel::new(cfg), &[Message::user("x")]).await;
    assert_eq!(r.unwrap().text, "hi");
    assert_eq!(mock.requests()[0].header("x-api-key"), Some(secret));
    eprintln!("key checks done");
}

#[path = "common/mod.rs"]
mod common;

struct LogWriter(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
