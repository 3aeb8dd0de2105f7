//! Test support: a scripted mock model server speaking OpenAI chat completions (and Anthropic
//! Messages), over real HTTP on 127.0.0.1.
//!
//! A [`MockModel`] answers `POST /v1/chat/completions` (non-streaming, and `stream: true` as
//! server-sent events) and `POST /v1/messages` with replies taken from a [`Script`]: tool calls,
//! prose instead of a call, malformed JSON arguments, calls to tools that do not exist, hangs and
//! HTTP errors. Every request it receives is recorded so tests can assert what a client sent.
//!
//! Two kinds of script:
//! - [`Script::Sequence`]: replies in order, one per request, whatever the request says.
//! - [`Script::ByUtterance`]: keyed by the first user message of the conversation; the reply is
//!   chosen by the number of assistant turns already in the request, so the same script can be
//!   replayed any number of times (repeats, priming on/off) and in any order.

pub mod pg;
pub mod race;

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

/// One scripted reply.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// Plain assistant text (a final answer, or prose where a call was wanted).
    Text(String),
    /// One or more tool calls. `arguments` is the raw argument text, so it can be malformed.
    ToolCalls(Vec<ScriptedCall>),
    /// An HTTP error status with a body.
    Status(u16, String),
    /// Sleep, then answer with the inner reply (a hang when the client's timeout is shorter).
    Delay(Duration, Box<Reply>),
}

/// A scripted tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptedCall {
    pub name: String,
    pub arguments: String,
}

impl Reply {
    pub fn text(s: impl Into<String>) -> Self {
        Reply::Text(s.into())
    }

    /// One tool call with well-formed JSON arguments.
    pub fn tool(name: &str, arguments: Value) -> Self {
        Reply::ToolCalls(vec![ScriptedCall {
            name: name.to_owned(),
            arguments: arguments.to_string(),
        }])
    }

    /// One tool call whose argument text is given verbatim (e.g. malformed JSON).
    pub fn tool_raw(name: &str, arguments: &str) -> Self {
        Reply::ToolCalls(vec![ScriptedCall {
            name: name.to_owned(),
            arguments: arguments.to_owned(),
        }])
    }

    pub fn status(code: u16) -> Self {
        Reply::Status(
            code,
            format!("{{\"error\":{{\"message\":\"scripted {code}\"}}}}"),
        )
    }

    pub fn hang(d: Duration) -> Self {
        Reply::Delay(d, Box::new(Reply::text("(too late)")))
    }

    pub fn delayed(d: Duration, inner: Reply) -> Self {
        Reply::Delay(d, Box::new(inner))
    }
}

/// What the server replays.
#[derive(Debug, Clone)]
pub enum Script {
    Sequence(Vec<Reply>),
    ByUtterance(HashMap<String, Vec<Reply>>),
}

/// One request the server received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub path: String,
    /// Header names lower-cased.
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// The text returned when a script has no reply left for a request.
pub const EXHAUSTED: &str = "[mock model: script exhausted]";

struct Shared {
    sequence: Mutex<VecDeque<Reply>>,
    by_utterance: HashMap<String, Vec<Reply>>,
    requests: Mutex<Vec<Recorded>>,
    model: String,
}

/// A running mock model server; it stops when dropped.
pub struct MockModel {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
}

impl MockModel {
    /// Start on 127.0.0.1 with an ephemeral port. Must be called inside a tokio runtime.
    pub async fn start(script: Script) -> std::io::Result<Self> {
        let (sequence, by_utterance) = match script {
            Script::Sequence(v) => (v.into_iter().collect(), HashMap::new()),
            Script::ByUtterance(m) => (VecDeque::new(), m),
        };
        let shared = Arc::new(Shared {
            sequence: Mutex::new(sequence),
            by_utterance,
            requests: Mutex::new(Vec::new()),
            model: "mock-model".to_owned(),
        });
        let app = Router::new()
            .route("/v1/chat/completions", post(openai))
            .route("/chat/completions", post(openai))
            .route("/v1/messages", post(anthropic))
            .route("/props", axum::routing::get(props))
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            let served = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = rx.await;
                })
                .await;
            if let Err(e) = served {
                tracing::warn!("mock model server stopped: {e}");
            }
        });
        Ok(Self {
            addr,
            shared,
            shutdown: Some(tx),
        })
    }

    /// Shorthand for a [`Script::Sequence`].
    pub async fn sequence(replies: Vec<Reply>) -> std::io::Result<Self> {
        Self::start(Script::Sequence(replies)).await
    }

    /// The OpenAI-style base URL, e.g. `http://127.0.0.1:PORT/v1`.
    pub fn url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The bare origin, e.g. `http://127.0.0.1:PORT` (Anthropic clients add `/v1/messages`).
    pub fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The chat requests only (`/v1/chat/completions`, `/v1/messages`): without the server
    /// probes (`GET /props`, `GET /v1/models`) a client makes to learn what it talks to.
    pub fn chat_requests(&self) -> Vec<Recorded> {
        self.requests()
            .into_iter()
            .filter(|r| r.path != "/props" && r.path != "/v1/models")
            .collect()
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.shared
            .requests
            .lock()
            .map(|r| r.clone())
            .unwrap_or_default()
    }

    /// Append replies to the sequence script.
    pub fn push(&self, reply: Reply) {
        if let Ok(mut q) = self.shared.sequence.lock() {
            q.push_back(reply);
        }
    }
}

impl Drop for MockModel {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

/// Text of a message's `content` (a string, or an array of text blocks).
fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

impl Shared {
    fn next_reply(&self, body: &Value) -> Reply {
        if !self.by_utterance.is_empty() {
            let messages = body["messages"].as_array().cloned().unwrap_or_default();
            let first_user = messages
                .iter()
                .position(|m| m["role"] == "user")
                .unwrap_or(messages.len());
            let utterance = messages
                .get(first_user)
                .map(|m| content_text(&m["content"]))
                .unwrap_or_default();
            let turn = messages
                .iter()
                .skip(first_user)
                .filter(|m| m["role"] == "assistant")
                .count();
            return self
                .by_utterance
                .get(utterance.trim())
                .and_then(|r| r.get(turn).cloned())
                .unwrap_or_else(|| Reply::text(EXHAUSTED));
        }
        self.sequence
            .lock()
            .ok()
            .and_then(|mut q| q.pop_front())
            .unwrap_or_else(|| Reply::text(EXHAUSTED))
    }

    fn record(&self, path: &str, headers: &HeaderMap, body: &Value) {
        let headers = headers
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_ascii_lowercase(),
                    v.to_str().unwrap_or_default().to_owned(),
                )
            })
            .collect();
        if let Ok(mut r) = self.requests.lock() {
            r.push(Recorded {
                path: path.to_owned(),
                headers,
                body: body.clone(),
            });
        }
    }
}

/// Resolve delays; return the reply to send.
async fn settle(mut reply: Reply) -> Reply {
    while let Reply::Delay(d, inner) = reply {
        tokio::time::sleep(d).await;
        reply = *inner;
    }
    reply
}

/// A deterministic token estimate (about 4 characters a token).
fn estimate(s: &str) -> u64 {
    (s.chars().count() as u64).div_ceil(4)
}

fn parse_body(raw: &str) -> Result<Value, Box<Response>> {
    serde_json::from_str(raw).map_err(|e| {
        (
            StatusCode::BAD_REQUEST,
            format!("{{\"error\":{{\"message\":\"request body is not JSON: {e}\"}}}}"),
        )
            .into_response()
            .into()
    })
}

fn sse(events: Vec<String>) -> Response {
    let stream =
        futures_util::stream::iter(events.into_iter().map(Ok::<_, std::convert::Infallible>));
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream")
        .body(Body::from_stream(stream))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// Split text into a few pieces so streaming clients see several deltas.
fn pieces(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for c in s.chars() {
        cur.push(c);
        if c == ' ' && cur.len() >= 8 {
            out.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() || out.is_empty() {
        out.push(cur);
    }
    out
}

/// The context window the mock reports at `GET /props`, as llama.cpp's server does.
pub const MOCK_N_CTX: u64 = 4096;

/// `GET /props`, answered the way llama.cpp's server answers it (recorded, with a null body).
async fn props(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    shared.record("/props", &headers, &Value::Null);
    axum::Json(
        serde_json::json!({"default_generation_settings": {"n_ctx": MOCK_N_CTX}, "total_slots": 1}),
    )
    .into_response()
}

async fn openai(State(shared): State<Arc<Shared>>, headers: HeaderMap, raw: String) -> Response {
    let body = match parse_body(&raw) {
        Ok(b) => b,
        Err(r) => return *r,
    };
    shared.record("/v1/chat/completions", &headers, &body);
    let reply = settle(shared.next_reply(&body)).await;
    let prompt_tokens = estimate(&raw);
    let stream = body["stream"] == true;
    let model = body["model"]
        .as_str()
        .map_or_else(|| shared.model.clone(), str::to_owned);
    let (text, calls) = match reply {
        Reply::Status(code, text) => {
            let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            return (status, [(header::CONTENT_TYPE, "application/json")], text).into_response();
        }
        Reply::Text(t) => (t, Vec::new()),
        Reply::ToolCalls(c) => (String::new(), c),
        Reply::Delay(..) => (String::new(), Vec::new()),
    };
    let completion_tokens = estimate(&text)
        + calls
            .iter()
            .map(|c| estimate(&c.name) + estimate(&c.arguments))
            .sum::<u64>();
    let usage = json!({"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens});
    let finish = if calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    if !stream {
        let mut message = json!({"role": "assistant", "content": if text.is_empty() && !calls.is_empty() { Value::Null } else { Value::String(text) }});
        if !calls.is_empty() {
            message["tool_calls"] = calls
                .iter()
                .enumerate()
                .map(|(i, c)| json!({"id": format!("call_{i}"), "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
                .collect();
        }
        return axum::Json(json!({
            "id": "chatcmpl-mock", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": usage,
        }))
        .into_response();
    }
    let chunk = |delta: Value, finish: Value| {
        format!(
            "data: {}\n\n",
            json!({"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 0, "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        )
    };
    let mut events = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    if !text.is_empty() {
        for p in pieces(&text) {
            events.push(chunk(json!({"content": p}), Value::Null));
        }
    }
    for (i, c) in calls.iter().enumerate() {
        events.push(chunk(
            json!({"tool_calls": [{"index": i, "id": format!("call_{i}"), "type": "function", "function": {"name": c.name, "arguments": ""}}]}),
            Value::Null,
        ));
        for p in pieces(&c.arguments) {
            events.push(chunk(
                json!({"tool_calls": [{"index": i, "function": {"arguments": p}}]}),
                Value::Null,
            ));
        }
    }
    events.push(chunk(json!({}), Value::String(finish.to_owned())));
    if body["stream_options"]["include_usage"] == true {
        events.push(format!(
            "data: {}\n\n",
            json!({"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 0, "model": model, "choices": [], "usage": usage})
        ));
    }
    events.push("data: [DONE]\n\n".to_owned());
    sse(events)
}

async fn anthropic(State(shared): State<Arc<Shared>>, headers: HeaderMap, raw: String) -> Response {
    let body = match parse_body(&raw) {
        Ok(b) => b,
        Err(r) => return *r,
    };
    shared.record("/v1/messages", &headers, &body);
    let reply = settle(shared.next_reply(&body)).await;
    let input_tokens = estimate(&raw);
    let model = body["model"]
        .as_str()
        .map_or_else(|| shared.model.clone(), str::to_owned);
    let (text, calls) = match reply {
        Reply::Status(code, text) => {
            let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            return (status, [(header::CONTENT_TYPE, "application/json")], text).into_response();
        }
        Reply::Text(t) => (t, Vec::new()),
        Reply::ToolCalls(c) => (String::new(), c),
        Reply::Delay(..) => (String::new(), Vec::new()),
    };
    let output_tokens = estimate(&text)
        + calls
            .iter()
            .map(|c| estimate(&c.name) + estimate(&c.arguments))
            .sum::<u64>();
    let stop = if calls.is_empty() {
        "end_turn"
    } else {
        "tool_use"
    };
    if body["stream"] != true {
        let mut content = Vec::new();
        if !text.is_empty() {
            content.push(json!({"type": "text", "text": text}));
        }
        for (i, c) in calls.iter().enumerate() {
            // The Messages API carries tool input as an object; malformed text is sent as a string.
            let input = serde_json::from_str::<Value>(&c.arguments)
                .unwrap_or_else(|_| Value::String(c.arguments.clone()));
            content.push(
                json!({"type": "tool_use", "id": format!("toolu_{i}"), "name": c.name, "input": input}),
            );
        }
        return axum::Json(json!({
            "id": "msg_mock", "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": stop, "stop_sequence": null,
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
        }))
        .into_response();
    }
    let ev = |name: &str, data: Value| format!("event: {name}\ndata: {data}\n\n");
    let mut events = vec![ev(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_mock", "type": "message", "role": "assistant", "model": model, "content": [], "stop_reason": null, "usage": {"input_tokens": input_tokens, "output_tokens": 1}}}),
    )];
    let mut index = 0;
    if !text.is_empty() {
        events.push(ev("content_block_start", json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}})));
        for p in pieces(&text) {
            events.push(ev("content_block_delta", json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": p}})));
        }
        events.push(ev(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    }
    for (i, c) in calls.iter().enumerate() {
        events.push(ev("content_block_start", json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": format!("toolu_{i}"), "name": c.name, "input": {}}})));
        for p in pieces(&c.arguments) {
            events.push(ev("content_block_delta", json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": p}})));
        }
        events.push(ev(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    }
    events.push(ev("message_delta", json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": output_tokens}})));
    events.push(ev("message_stop", json!({"type": "message_stop"})));
    sse(events)
}

/// Runs `cmd` with piped stdio, writes `input` to its stdin, closes it and waits: how the tests
/// drive the real binary as a host or a person at a pipe would.
pub fn run_with_input(
    cmd: &mut std::process::Command,
    input: &str,
) -> std::io::Result<std::process::Output> {
    use std::io::Write as _;
    use std::process::Stdio;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(input.as_bytes())?;
    }
    child.wait_with_output()
}

/// Runs `cmd` to its end and returns its output, failing the test with `what` and what the
/// command printed when it could not start or exited non-zero.
pub fn succeeded(cmd: &mut std::process::Command, what: &str) -> std::process::Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: could not start: {e}"));
    assert!(
        out.status.success(),
        "{what} failed ({}): {}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The feature with this id in a GeoJSON FeatureCollection (e.g. a saved `features.geojson`).
pub fn feature_by_id<'a>(collection: &'a Value, id: &str) -> Option<&'a Value> {
    collection["features"]
        .as_array()?
        .iter()
        .find(|f| f["id"] == id)
}

/// Where `.ci/install-test-clients` puts the real clients, servers and models the integration
/// tests drive: the checkout's `.tools/`, or `TOOLGATE_TOOLS_DIR`.
pub fn tools_dir() -> std::path::PathBuf {
    std::env::var_os("TOOLGATE_TOOLS_DIR").map_or_else(
        || std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.tools"),
        std::path::PathBuf::from,
    )
}

/// A free TCP port on 127.0.0.1, for a server that takes its port from a flag or the
/// environment instead of binding port 0 and saying which (the port is free when this returns;
/// another process could take it before the server binds, which a loaded test machine has not
/// shown).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("no free port on 127.0.0.1: {e}"))
}

/// A child process that is killed and reaped when dropped, however the test ends (a failed
/// assertion included), so no server outlives its test.
pub struct Killed(pub std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A client, model or server a test needs is not installed: under
/// `TOOLGATE_REQUIRE_TEST_CLIENTS=1` (CI) that fails the test; otherwise the test says why it
/// skips (and then returns early).
pub fn missing_client(what: &str) {
    assert!(
        std::env::var("TOOLGATE_REQUIRE_TEST_CLIENTS").as_deref() != Ok("1"),
        "{what} — run .ci/install-test-clients"
    );
    eprintln!("SKIPPED: {what} — run .ci/install-test-clients");
}

/// Where the real-model tests' SmolLM2-135M GGUF is (`.tools/models/`, put there by
/// `.ci/install-test-clients`, or `TOOLGATE_MODELS_DIR`); it may not exist.
pub fn smollm2_gguf() -> std::path::PathBuf {
    std::env::var_os("TOOLGATE_MODELS_DIR")
        .map_or_else(
            || std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.tools/models"),
            std::path::PathBuf::from,
        )
        .join("SmolLM2-135M-Instruct.Q4_1.gguf")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn post(url: &str, body: &Value) -> (u16, String) {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .into();
        let mut r = agent
            .post(url)
            .header("content-type", "application/json")
            .header("authorization", "Bearer sk-test")
            .send(body.to_string())
            .unwrap();
        (r.status().as_u16(), r.body_mut().read_to_string().unwrap())
    }

    async fn post_async(url: String, body: Value) -> (u16, String) {
        tokio::task::spawn_blocking(move || post(&url, &body))
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn replays_a_sequence_and_records_requests() {
        let m = MockModel::sequence(vec![
            Reply::tool("debrief_listTools", json!({})),
            Reply::tool_raw("debrief_runTool", "{\"toolId\": "),
            Reply::text("done"),
            Reply::status(500),
        ])
        .await
        .unwrap();
        let url = format!("{}/chat/completions", m.url());
        let req = json!({"model": "m1", "messages": [{"role": "user", "content": "hi"}]});
        let (s, b) = post_async(url.clone(), req.clone()).await;
        assert_eq!(s, 200);
        let v: Value = serde_json::from_str(&b).unwrap();
        assert_eq!(
            v["choices"][0]["message"]["tool_calls"][0]["function"]["name"],
            "debrief_listTools"
        );
        assert_eq!(v["choices"][0]["finish_reason"], "tool_calls");
        assert_eq!(v["model"], "m1");
        let (_, b) = post_async(url.clone(), req.clone()).await;
        let v: Value = serde_json::from_str(&b).unwrap();
        assert_eq!(
            v["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"],
            "{\"toolId\": "
        );
        let (_, b) = post_async(url.clone(), req.clone()).await;
        let v: Value = serde_json::from_str(&b).unwrap();
        assert_eq!(v["choices"][0]["message"]["content"], "done");
        assert!(v["usage"]["prompt_tokens"].as_u64().unwrap() > 0);
        let (s, _) = post_async(url.clone(), req.clone()).await;
        assert_eq!(s, 500);
        let (_, b) = post_async(url, req).await;
        assert!(b.contains(EXHAUSTED));
        let reqs = m.requests();
        assert_eq!(reqs.len(), 5);
        assert_eq!(reqs[0].body["model"], "m1");
        assert_eq!(reqs[0].header("Authorization"), Some("Bearer sk-test"));
    }

    #[tokio::test]
    async fn streams_sse_chunks_with_usage() {
        let m = MockModel::sequence(vec![
            Reply::text("hello there, this is streamed"),
            Reply::tool(
                "debrief_searchPlots",
                json!({"text": "Alpha", "open": true}),
            ),
        ])
        .await
        .unwrap();
        let url = format!("{}/chat/completions", m.url());
        let req = json!({"model": "m", "stream": true, "stream_options": {"include_usage": true}, "messages": []});
        let (_, b) = post_async(url.clone(), req.clone()).await;
        let data: Vec<Value> = b
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter(|l| *l != "[DONE]")
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let text: String = data
            .iter()
            .filter_map(|d| d["choices"][0]["delta"]["content"].as_str())
            .collect();
        assert_eq!(text, "hello there, this is streamed");
        assert!(data.len() > 3, "several deltas");
        assert!(
            data.last().unwrap()["usage"]["completion_tokens"]
                .as_u64()
                .unwrap()
                > 0
        );
        assert!(b.trim_end().ends_with("data: [DONE]"));
        let (_, b) = post_async(url, req).await;
        let args: String = b
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter(|l| *l != "[DONE]")
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter_map(|d| {
                d["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"]
                    .as_str()
                    .map(str::to_owned)
            })
            .collect();
        assert_eq!(
            serde_json::from_str::<Value>(&args).unwrap(),
            json!({"text": "Alpha", "open": true})
        );
    }

    #[tokio::test]
    async fn by_utterance_picks_the_turn_from_the_request() {
        let mut map = HashMap::new();
        map.insert(
            "colour it".to_owned(),
            vec![Reply::tool("a", json!({})), Reply::text("ok")],
        );
        let m = MockModel::start(Script::ByUtterance(map)).await.unwrap();
        let url = format!("{}/chat/completions", m.url());
        let first = json!({"messages": [{"role": "system", "content": "p"}, {"role": "user", "content": "colour it"}]});
        let second = json!({"messages": [{"role": "user", "content": "colour it"}, {"role": "assistant", "content": null}, {"role": "tool", "content": "r"}]});
        for _ in 0..2 {
            let (_, b) = post_async(url.clone(), first.clone()).await;
            assert!(b.contains("\"name\":\"a\""), "{b}");
            let (_, b) = post_async(url.clone(), second.clone()).await;
            assert!(b.contains("\"content\":\"ok\""), "{b}");
        }
        let other = json!({"messages": [{"role": "user", "content": "unknown"}]});
        let (_, b) = post_async(url, other).await;
        assert!(b.contains(EXHAUSTED));
    }

    #[tokio::test]
    async fn anthropic_shape_and_delay() {
        let m = MockModel::sequence(vec![
            Reply::tool("debrief_listTools", json!({})),
            Reply::delayed(Duration::from_millis(200), Reply::text("late")),
        ])
        .await
        .unwrap();
        let url = format!("{}/v1/messages", m.origin());
        let (_, b) = post_async(url.clone(), json!({"model": "claude-x", "messages": []})).await;
        let v: Value = serde_json::from_str(&b).unwrap();
        assert_eq!(v["content"][0]["type"], "tool_use");
        assert_eq!(v["content"][0]["input"], json!({}));
        assert_eq!(v["stop_reason"], "tool_use");
        let t = std::time::Instant::now();
        let (_, b) = post_async(
            url,
            json!({"model": "claude-x", "messages": [], "stream": true}),
        )
        .await;
        assert!(t.elapsed() >= Duration::from_millis(200));
        assert!(b.contains("event: message_stop"));
        assert!(b.contains("\"text_delta\""));
    }
}
