//! The model-client abstraction and the HTTP client behind it (OpenAI-compatible chat
//! completions and Anthropic Messages), with timeouts, bounded retries and streaming.
//!
//! HTTP is `ureq` (blocking, rustls) run on tokio's blocking pool: the workspace already builds it,
//! so no second HTTP stack is compiled. Streaming replies are read as server-sent events line by
//! line on the blocking thread and forwarded to the async side over a channel.

use std::io::{BufRead, BufReader, Read};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::constrain::{self, ServerInfo};
use crate::{anthropic, openai};

/// Who speaks a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

/// A tool call as the model emitted it; `arguments` is the raw text (it may be malformed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCallRequest {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// One conversation message, provider-neutral.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    #[serde(default)]
    pub content: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCallRequest>,
    /// For `Role::Tool`: which call this answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// For `Role::Tool`: the tool's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl Message {
    pub fn system(text: impl Into<String>) -> Self {
        Self::plain(Role::System, text)
    }
    pub fn user(text: impl Into<String>) -> Self {
        Self::plain(Role::User, text)
    }
    pub fn assistant(text: impl Into<String>, tool_calls: Vec<ToolCallRequest>) -> Self {
        Self {
            tool_calls,
            ..Self::plain(Role::Assistant, text)
        }
    }
    pub fn tool(call: &ToolCallRequest, result: impl Into<String>) -> Self {
        Self {
            tool_call_id: Some(call.id.clone()),
            name: Some(call.name.clone()),
            ..Self::plain(Role::Tool, result)
        }
    }
    fn plain(role: Role, text: impl Into<String>) -> Self {
        Self {
            role,
            content: text.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            name: None,
        }
    }
}

/// A tool as advertised to a model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDef {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

impl ToolDef {
    pub fn from_spec(spec: &toolgate_core::ToolSpec) -> Self {
        Self {
            name: spec.id.clone(),
            description: spec.description.clone(),
            parameters: spec.input_schema.clone(),
        }
    }
}

/// What one model request carries.
#[derive(Debug, Clone, Copy)]
pub struct ChatRequest<'a> {
    pub messages: &'a [Message],
    pub tools: &'a [ToolDef],
    /// An OpenAI `response_format` (a JSON schema the server decodes under); `None` sends none.
    pub response_format: Option<&'a Value>,
}

/// Token usage of one or more model requests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

impl Usage {
    pub fn add(&mut self, other: Usage) {
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
    }
}

/// One model reply.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
    pub text: String,
    pub tool_calls: Vec<ToolCallRequest>,
    /// As reported by the server; `None` when it reported nothing.
    pub usage: Option<Usage>,
    /// The model id the server says answered (else the configured one).
    pub model: String,
    pub finish_reason: Option<String>,
}

/// Why a model request failed. Messages never contain credentials.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    #[error(
        "the model at {url} did not answer within {secs} s; check the server is running and not overloaded, or raise the timeout"
    )]
    Timeout { url: String, secs: u64 },
    #[error(
        "could not reach the model at {url}: {detail}. Check that the server is running and that the model URL is right"
    )]
    Connect { url: String, detail: String },
    #[error("the model at {url} answered HTTP {status}: {body}")]
    Status {
        url: String,
        status: u16,
        body: String,
    },
    #[error("the model's reply could not be read: {0}")]
    Protocol(String),
    #[error(
        "the environment variable {0}, named in the model configuration as holding the API key, is not set"
    )]
    MissingKey(String),
    #[error("the model request was cancelled")]
    Cancelled,
}

impl ModelError {
    /// Worth another attempt: rate limits, server errors, connection failures.
    pub fn is_retryable(&self) -> bool {
        match self {
            ModelError::Status { status, .. } => *status == 429 || (500..=599).contains(status),
            ModelError::Connect { .. } => true,
            _ => false,
        }
    }
}

/// A failed read of a reply body. A timeout — ureq's own (`ureq::Error::Timeout`, which its
/// body reader wraps in the `io::Error`) or the socket's — becomes [`ModelError::Timeout`] here,
/// where it happens; the request that read the body fills in the URL and the limit.
pub(crate) fn read_error(e: std::io::Error, what: &str) -> ModelError {
    let ureq_timeout = e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<ureq::Error>())
        .is_some_and(|u| matches!(u, ureq::Error::Timeout(_)));
    if ureq_timeout || e.kind() == std::io::ErrorKind::TimedOut {
        ModelError::Timeout {
            url: String::new(),
            secs: 0,
        }
    } else {
        ModelError::Protocol(format!("{what}: {e}"))
    }
}

/// Receives text as it streams in.
pub type DeltaSink<'a> = &'a (dyn Fn(&str) + Send + Sync);

/// A chat model that can call tools.
#[async_trait]
pub trait ModelClient: Send + Sync {
    /// The configured model id (recorded in telemetry and transcripts).
    fn model_id(&self) -> &str;
    /// One request. Streaming clients call `deltas` with text as it arrives.
    async fn complete(
        &self,
        request: &ChatRequest<'_>,
        deltas: DeltaSink<'_>,
    ) -> Result<ChatResponse, ModelError>;
    /// What the server says about itself (kind, context window). Asked only by the small
    /// profile; the default knows nothing.
    async fn server_info(&self) -> ServerInfo {
        ServerInfo::default()
    }
}

/// Which wire protocol the server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    /// `/v1/chat/completions` (llama.cpp server, Ollama, vLLM, LM Studio, OpenAI, …).
    #[default]
    OpenAi,
    /// Anthropic Messages `/v1/messages`.
    Anthropic,
}

/// How to reach a model. Holds the *name* of the environment variable with the API key, never
/// the key itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelConfig {
    pub provider: Provider,
    /// Base URL, e.g. `http://127.0.0.1:8080/v1` (OpenAI) or `https://api.anthropic.com`.
    pub base_url: String,
    pub model: String,
    /// Environment variable that holds the API key (read at request time).
    pub api_key_env: Option<String>,
    /// Limit for one attempt (connect, send, answer and body).
    pub timeout: Duration,
    /// Further attempts after a retryable failure (429, 5xx, connection error).
    pub max_retries: u32,
    /// First backoff; doubled per attempt, capped at `max_backoff`.
    pub backoff: Duration,
    pub max_backoff: Duration,
    pub stream: bool,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u32>,
}

impl ModelConfig {
    pub fn new(provider: Provider, base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            provider,
            base_url: base_url.into(),
            model: model.into(),
            api_key_env: None,
            timeout: Duration::from_secs(120),
            max_retries: 3,
            backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
            stream: false,
            temperature: Some(0.0),
            max_tokens: None,
        }
    }

    /// The backoff before attempt `attempt + 1` (0-based), honouring a server's Retry-After.
    pub fn backoff_for(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        let exp = self
            .backoff
            .saturating_mul(2u32.saturating_pow(attempt.min(16)));
        retry_after.unwrap_or(exp).min(self.max_backoff)
    }

    fn endpoint(&self) -> String {
        let base = self.base_url.trim_end_matches('/');
        let versioned = base.ends_with("/v1") || base.contains("/v1/");
        match (self.provider, versioned) {
            (Provider::OpenAi, true) => format!("{base}/chat/completions"),
            (Provider::OpenAi, false) => format!("{base}/v1/chat/completions"),
            (Provider::Anthropic, true) => format!("{base}/messages"),
            (Provider::Anthropic, false) => format!("{base}/v1/messages"),
        }
    }

    /// `GET /props` (llama.cpp, at the server's root) and `GET /v1/models`.
    fn info_urls(&self) -> (String, String) {
        let base = self.base_url.trim_end_matches('/');
        let root = base.find("/v1").map_or(base, |i| &base[..i]);
        (format!("{root}/props"), format!("{root}/v1/models"))
    }

    fn api_key(&self) -> Result<Option<String>, ModelError> {
        match &self.api_key_env {
            None => Ok(None),
            Some(var) => std::env::var(var)
                .map(Some)
                .map_err(|_| ModelError::MissingKey(var.clone())),
        }
    }
}

/// The HTTP model client for both protocols.
pub struct HttpModel {
    config: ModelConfig,
    agent: ureq::Agent,
    info: tokio::sync::OnceCell<ServerInfo>,
}

impl std::fmt::Debug for HttpModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpModel")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// Cap on a non-streaming body (and on an error body kept for the message).
const MAX_BODY: u64 = 16 * 1024 * 1024;

/// Most tool calls one model reply may carry. Stream chunks name the call they continue by an
/// index the server chooses; without a bound an `"index": 4000000000` would make the reader
/// allocate billions of slots.
pub const MAX_TOOL_CALLS_PER_REPLY: usize = 128;

/// The error for a reply that names more tool calls (or a higher index) than the bound.
pub(crate) fn too_many_tool_calls(what: &str, index: u64) -> ModelError {
    ModelError::Protocol(format!(
        "the model's stream named {what} {index}, but at most {MAX_TOOL_CALLS_PER_REPLY} tool calls per reply are accepted; ask for fewer calls per turn or check the model server"
    ))
}

fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_owned()
    } else {
        format!("{}…", s.chars().take(n).collect::<String>())
    }
}

impl HttpModel {
    pub fn new(config: ModelConfig) -> Self {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(config.timeout))
            .build()
            .into();
        Self {
            config,
            agent,
            info: tokio::sync::OnceCell::new(),
        }
    }

    pub fn config(&self) -> &ModelConfig {
        &self.config
    }

    fn body(&self, request: &ChatRequest<'_>) -> Value {
        match self.config.provider {
            Provider::OpenAi => openai::request_body(&self.config, request),
            Provider::Anthropic => anthropic::request_body(&self.config, request),
        }
    }

    /// One attempt, on the calling (blocking) thread.
    fn attempt(
        &self,
        url: &str,
        key: Option<&str>,
        body: &str,
        deltas: &tokio::sync::mpsc::UnboundedSender<String>,
    ) -> Result<ChatResponse, (ModelError, Option<Duration>)> {
        let mut req = self
            .agent
            .post(url)
            .header("content-type", "application/json");
        match (self.config.provider, key) {
            (Provider::OpenAi, Some(k)) => {
                req = req.header("authorization", &format!("Bearer {k}"));
            }
            (Provider::Anthropic, Some(k)) => req = req.header("x-api-key", k),
            (_, None) => {}
        }
        if self.config.provider == Provider::Anthropic {
            req = req.header("anthropic-version", "2023-06-01");
        }
        let mut response = req
            .send(body)
            .map_err(|e| (self.transport_error(url, &e), None))?;
        let status = response.status().as_u16();
        if status >= 400 {
            let retry_after = response
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map(Duration::from_secs);
            let text = response
                .body_mut()
                .with_config()
                .limit(64 * 1024)
                .read_to_string()
                .unwrap_or_default();
            return Err((
                ModelError::Status {
                    url: url.to_owned(),
                    status,
                    body: clip(text.trim(), 300),
                },
                retry_after,
            ));
        }
        let streamed = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        let mut reader = response.body_mut().with_config().limit(MAX_BODY).reader();
        let result = if streamed {
            let lines = BufReader::new(&mut reader);
            let send = |d: &str| {
                let _ = deltas.send(d.to_owned());
            };
            match self.config.provider {
                Provider::OpenAi => openai::read_stream(lines, &send),
                Provider::Anthropic => anthropic::read_stream(lines, &send),
            }
        } else {
            let mut text = String::new();
            reader
                .read_to_string(&mut text)
                .map_err(|e| read_error(e, "reading the body"))
                .and_then(|_| {
                    let v: Value = serde_json::from_str(&text).map_err(|e| {
                        ModelError::Protocol(format!(
                            "the body is not JSON ({e}): {}",
                            clip(&text, 200)
                        ))
                    })?;
                    match self.config.provider {
                        Provider::OpenAi => openai::parse_response(&v),
                        Provider::Anthropic => anthropic::parse_response(&v),
                    }
                })
        };
        result
            .map(|mut r| {
                if r.model.is_empty() {
                    r.model.clone_from(&self.config.model);
                }
                r
            })
            .map_err(|e| match e {
                // Set by `read_error` without the URL and limit, which are known here.
                ModelError::Timeout { .. } => (self.timeout_error(url), None),
                other => (other, None),
            })
    }

    fn timeout_error(&self, url: &str) -> ModelError {
        ModelError::Timeout {
            url: url.to_owned(),
            secs: self.config.timeout.as_secs().max(1),
        }
    }

    fn transport_error(&self, url: &str, e: &ureq::Error) -> ModelError {
        match e {
            ureq::Error::Timeout(_) => self.timeout_error(url),
            ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::TimedOut => {
                self.timeout_error(url)
            }
            ureq::Error::Io(_) | ureq::Error::ConnectionFailed | ureq::Error::HostNotFound => {
                ModelError::Connect {
                    url: url.to_owned(),
                    detail: e.to_string(),
                }
            }
            other => ModelError::Protocol(other.to_string()),
        }
    }
}

#[async_trait]
impl ModelClient for HttpModel {
    fn model_id(&self) -> &str {
        &self.config.model
    }

    /// `GET /props` (llama.cpp) and `GET /v1/models`, once per client, 5 s each; a server that
    /// answers neither is [`ServerInfo::default`].
    async fn server_info(&self) -> ServerInfo {
        *self
            .info
            .get_or_init(|| async {
                if self.config.provider != Provider::OpenAi {
                    return ServerInfo::default();
                }
                let (props, models) = self.config.info_urls();
                let agent: ureq::Agent = ureq::Agent::config_builder()
                    .http_status_as_error(false)
                    .timeout_global(Some(Duration::from_secs(5)))
                    .build()
                    .into();
                let key = self.config.api_key().ok().flatten();
                tokio::task::spawn_blocking(move || {
                    let get = |url: &str| -> Option<Value> {
                        let mut req = agent.get(url);
                        if let Some(k) = &key {
                            req = req.header("authorization", &format!("Bearer {k}"));
                        }
                        let mut r = req.call().ok()?;
                        if r.status().as_u16() != 200 {
                            return None;
                        }
                        let text = r
                            .body_mut()
                            .with_config()
                            .limit(1024 * 1024)
                            .read_to_string()
                            .ok()?;
                        serde_json::from_str(&text).ok()
                    };
                    let info = constrain::detect(get(&props).as_ref(), get(&models).as_ref());
                    tracing::debug!(?info, "model server");
                    info
                })
                .await
                .unwrap_or_default()
            })
            .await
    }

    async fn complete(
        &self,
        request: &ChatRequest<'_>,
        deltas: DeltaSink<'_>,
    ) -> Result<ChatResponse, ModelError> {
        let url = self.config.endpoint();
        let key = self.config.api_key()?;
        let body = Arc::new(self.body(request).to_string());
        let mut attempt = 0u32;
        loop {
            tracing::debug!(url = %url, model = %self.config.model, attempt, "model request");
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
            let this = HttpModel {
                config: self.config.clone(),
                agent: self.agent.clone(),
                info: tokio::sync::OnceCell::new(),
            };
            let (u, k, b) = (url.clone(), key.clone(), body.clone());
            let mut handle =
                tokio::task::spawn_blocking(move || this.attempt(&u, k.as_deref(), &b, &tx));
            // Backstop over ureq's own global timeout.
            let deadline = tokio::time::sleep(self.config.timeout + Duration::from_secs(2));
            tokio::pin!(deadline);
            let result = loop {
                tokio::select! {
                    Some(d) = rx.recv() => deltas(&d),
                    joined = &mut handle => {
                        while let Ok(d) = rx.try_recv() {
                            deltas(&d);
                        }
                        break joined.unwrap_or_else(|e| Err((ModelError::Protocol(format!("the request thread failed: {e}")), None)));
                    }
                    () = &mut deadline => break Err((self.timeout_error(&url), None)),
                }
            };
            match result {
                Ok(r) => return Ok(r),
                Err((e, retry_after)) if e.is_retryable() && attempt < self.config.max_retries => {
                    let wait = self.config.backoff_for(attempt, retry_after);
                    tracing::warn!(url = %url, attempt, error = %e, wait_ms = wait.as_millis() as u64, "model request failed; retrying");
                    tokio::time::sleep(wait).await;
                    attempt += 1;
                }
                Err((e, _)) => return Err(e),
            }
        }
    }
}

/// Read server-sent events: calls `on_data(event, data)` for each `data:` line (`event` is the
/// last `event:` line seen, or empty). Stops at `[DONE]` or the end of the body.
///
/// Hand-written, not a crate (issue 34 item 6; measured against the cases in
/// `sse_reader_keeps_what_the_crates_drop` below): the model clients read the body through
/// ureq's blocking reader on a blocking thread, and the SSE crates on crates.io are asynchronous
/// `Stream` adapters. `eventsource-stream` 0.2.3 would need a `Read` → `Stream` shim polled with
/// a no-op waker and adds three crates to the build (itself, `nom` 7, `minimal-lexical`) for
/// what is twenty lines here; `sse-stream` 0.2.6, already built for rmcp, ends the stream with an
/// error at a line with an unknown field, a line without a colon or a second `event:` line,
/// which the SSE standard says to ignore (and `eventsource-stream` does). Both drop a last event
/// that the body ends without the blank line after, which some servers do; this reader passes
/// each `data:` line on as it arrives. It does not join multi-line `data:` fields, which no
/// model server sends (each event is one line of JSON).
pub(crate) fn for_each_sse<R: Read>(
    lines: BufReader<R>,
    mut on_data: impl FnMut(&str, &str) -> Result<(), ModelError>,
) -> Result<(), ModelError> {
    let mut event = String::new();
    for line in lines.lines() {
        let line = line.map_err(|e| read_error(e, "reading the stream"))?;
        let line = line.trim_end_matches('\r');
        if let Some(e) = line.strip_prefix("event:") {
            event = e.trim().to_owned();
        } else if let Some(d) = line.strip_prefix("data:") {
            let d = d.trim_start();
            if d == "[DONE]" {
                break;
            }
            on_data(&event, d)?;
        } else if line.is_empty() {
            event.clear();
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A timeout while reading a body is typed where it happens: ureq's own (wrapped in the
    /// `io::Error` its body reader returns) and the socket's; anything else stays a protocol error.
    #[test]
    fn a_body_read_timeout_is_a_timeout() {
        let ureq_timeout = std::io::Error::other(ureq::Error::Timeout(ureq::Timeout::Global));
        assert!(matches!(
            read_error(ureq_timeout, "reading the body"),
            ModelError::Timeout { .. }
        ));
        let socket = std::io::Error::from(std::io::ErrorKind::TimedOut);
        assert!(matches!(
            read_error(socket, "reading the stream"),
            ModelError::Timeout { .. }
        ));
        let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
        assert!(matches!(
            read_error(reset, "reading the body"),
            ModelError::Protocol(m) if m.starts_with("reading the body: ")
        ));
    }

    /// What decided against the SSE crates (see `for_each_sse`): lines they refuse or drop.
    #[test]
    fn sse_reader_keeps_what_the_crates_drop() {
        let sse = ": comment\nfoo: bar\nkeepalive\nevent: a\nevent: b\ndata: {\"n\":1}\n\n\
                   data:{\"n\":2}\r\n\r\ndata: {\"n\":3}\n";
        let mut seen = Vec::new();
        for_each_sse(BufReader::new(sse.as_bytes()), |event, data| {
            seen.push((event.to_owned(), data.to_owned()));
            Ok(())
        })
        .unwrap();
        let pair = |e: &str, d: &str| (e.to_owned(), d.to_owned());
        assert_eq!(
            seen,
            [
                pair("b", "{\"n\":1}"),
                pair("", "{\"n\":2}"),
                pair("", "{\"n\":3}")
            ]
        );
    }

    #[test]
    fn endpoints_and_backoff() {
        let c = ModelConfig::new(Provider::OpenAi, "http://h:1/v1/", "m");
        assert_eq!(c.endpoint(), "http://h:1/v1/chat/completions");
        let c = ModelConfig::new(Provider::OpenAi, "http://h:1", "m");
        assert_eq!(c.endpoint(), "http://h:1/v1/chat/completions");
        let c = ModelConfig::new(Provider::Anthropic, "https://api.anthropic.com", "m");
        assert_eq!(c.endpoint(), "https://api.anthropic.com/v1/messages");
        let mut c = ModelConfig::new(Provider::Anthropic, "http://h/v1", "m");
        assert_eq!(c.endpoint(), "http://h/v1/messages");
        c.backoff = Duration::from_millis(100);
        c.max_backoff = Duration::from_millis(350);
        assert_eq!(c.backoff_for(0, None), Duration::from_millis(100));
        assert_eq!(c.backoff_for(1, None), Duration::from_millis(200));
        assert_eq!(c.backoff_for(2, None), Duration::from_millis(350));
        assert_eq!(c.backoff_for(40, None), Duration::from_millis(350));
        assert_eq!(
            c.backoff_for(0, Some(Duration::from_secs(30))),
            Duration::from_millis(350),
            "a server's Retry-After is honoured up to the cap"
        );
    }

    #[test]
    fn retryable_classes() {
        let s = |status| ModelError::Status {
            url: String::new(),
            status,
            body: String::new(),
        };
        assert!(s(429).is_retryable());
        assert!(s(503).is_retryable());
        assert!(!s(400).is_retryable());
        assert!(!s(401).is_retryable());
        assert!(
            ModelError::Connect {
                url: String::new(),
                detail: String::new()
            }
            .is_retryable()
        );
        assert!(
            !ModelError::Timeout {
                url: String::new(),
                secs: 1
            }
            .is_retryable(),
            "a hang is not retried: the caller already waited the whole timeout"
        );
    }

    #[test]
    fn debug_of_a_config_names_the_variable_not_the_key() {
        let mut c = ModelConfig::new(Provider::OpenAi, "http://h/v1", "m");
        c.api_key_env = Some("SOME_VAR".into());
        let s = format!("{:?}", HttpModel::new(c));
        assert!(s.contains("SOME_VAR"));
    }
}
