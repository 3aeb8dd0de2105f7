//! Upstream MCP servers as a toolgate provider.
//!
//! Reads a `.mcp.json`-style file (`mcpServers`: stdio `command`/`args`/`env`, or `type: "http"`
//! with `url`/`headers`; `${VAR}` and `${VAR:-default}` interpolated from toolgate's environment),
//! connects once and keeps the connection for the process's lifetime. Children start with a
//! cleared environment plus an allow-list and the server's own `env`, in their own process
//! group, and are killed (the whole group) when the provider is dropped.
//!
//! Their tools join the registry as `server__tool` (identifier-safe, at most 64 characters, the
//! reverse map kept). The model never sees their schemas in `tools/list`: it finds them through
//! `debrief_listTools` or calls them inside `run_code`. An upstream tool is treated as mutating
//! (confirmed) unless toolgate's own config for that server lists it as read-only — the server's
//! `readOnlyHint` is a hint from an untrusted party and is not trusted.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use toolgate_core::{
    CallError, OutputKind, Provider, ProviderError, ToolCall, ToolOrigin, ToolOutcome, ToolSpec,
};

/// Longest tool name hosts accept.
pub const MAX_TOOL_NAME: usize = 64;

/// Environment variables a stdio upstream server inherits (everything else is cleared).
pub const ENV_ALLOW_LIST: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "TMPDIR",
    "TERM",
    "SYSTEMROOT",
    "NODE_PATH",
    "NPM_CONFIG_CACHE",
];

/// Cap on the text of one upstream result kept in a reply.
const MAX_RESULT_CHARS: usize = 20_000;

#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    #[error("cannot read the MCP server config {path}: {message}")]
    Read { path: String, message: String },
    #[error("{path}: {message}")]
    Config { path: String, message: String },
    #[error("upstream MCP server \"{server}\" did not start: {message}")]
    Start { server: String, message: String },
}

/// One `mcpServers` entry.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ServerEntry {
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    #[serde(default)]
    pub command: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub url: Option<String>,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// toolgate's own settings for this server.
    #[serde(default)]
    pub toolgate: ToolgateServerSettings,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ToolgateServerSettings {
    /// Upstream tool names (as the server names them) that only read.
    #[serde(default)]
    pub read_only: Vec<String>,
    /// Start-up (connect + initialize + list) limit in seconds.
    #[serde(default)]
    pub startup_timeout_secs: Option<f64>,
    /// Per-call limit in seconds.
    #[serde(default)]
    pub call_timeout_secs: Option<f64>,
    /// Start this server without OS confinement (it needs files outside its own install, its
    /// `cwd` and a private home). The file naming upstream servers is one the user passes on
    /// the command line, so this is the user's own choice.
    #[serde(default)]
    pub unconfined: bool,
    /// Send this server's `headers` over plain `http://` to a host other than this machine (a
    /// network the user trusts). Without it such a server is refused: its credentials would
    /// cross the network in clear.
    #[serde(default)]
    pub allow_plain_http: bool,
}

#[derive(Debug, Clone, Deserialize)]
struct ConfigFile {
    #[serde(rename = "mcpServers", default)]
    mcp_servers: BTreeMap<String, Value>,
}

/// Where a server is reached, after interpolation.
#[derive(Debug, Clone, PartialEq)]
pub enum Endpoint {
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
        cwd: Option<String>,
    },
    Http {
        url: String,
        headers: BTreeMap<String, String>,
    },
}

/// One configured server.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    pub name: String,
    pub endpoint: Endpoint,
    pub settings: ToolgateServerSettings,
}

/// Why a `${VAR}` reference in an MCP server's configuration cannot be filled in.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InterpolateError {
    #[error("unclosed \"${{\" in \"{text}\"")]
    Unclosed { text: String },
    #[error("\"${{{expr}}}\" is not a variable reference")]
    NotAReference { expr: String },
    #[error("environment variable {name} is not set (use ${{{name}:-default}} for a default)")]
    Unset { name: String },
}

/// Replace `${VAR}` and `${VAR:-default}` from `lookup`. An unset variable without a default is
/// an error naming it (a silent empty string would send a request without its credentials).
pub fn interpolate(
    text: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<String, InterpolateError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err(InterpolateError::Unclosed {
                text: text.to_owned(),
            });
        };
        let expr = &after[..end];
        let (name, default) = match expr.split_once(":-") {
            Some((n, d)) => (n, Some(d)),
            None => (expr, None),
        };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(InterpolateError::NotAReference {
                expr: expr.to_owned(),
            });
        }
        match (lookup(name), default) {
            (Some(v), _) => out.push_str(&v),
            (None, Some(d)) => out.push_str(d),
            (None, None) => {
                return Err(InterpolateError::Unset {
                    name: name.to_owned(),
                });
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Why an HTTP server's URL is refused.
#[derive(Debug, thiserror::Error)]
enum HttpUrlError {
    #[error("\"url\" {url:?} is not a URL ({reason}); write it as https://host/path")]
    NotAUrl {
        url: String,
        reason: url::ParseError,
    },
    #[error(
        "\"url\" has the scheme \"{scheme}\"; an http server's url starts with https:// (or http://)"
    )]
    Scheme { scheme: String },
    #[error(
        "its headers would cross the network unencrypted to {host} over http://; use https://, or set \"toolgate\": {{\"allowPlainHttp\": true}} if that network is trusted"
    )]
    PlainHttp { host: String },
}

/// An HTTP server's URL: `http` or `https`, and — when the entry carries headers (tokens, keys) —
/// `https` unless the host is this machine or the user allowed plain HTTP for it.
fn check_http_url(
    url: &str,
    has_headers: bool,
    settings: &ToolgateServerSettings,
) -> Result<(), HttpUrlError> {
    let parsed = url::Url::parse(url).map_err(|reason| HttpUrlError::NotAUrl {
        url: url.to_owned(),
        reason,
    })?;
    match parsed.scheme() {
        "https" => Ok(()),
        "http" => {
            let local = match parsed.host() {
                Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
                Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
                Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
                None => false,
            };
            if has_headers && !local && !settings.allow_plain_http {
                Err(HttpUrlError::PlainHttp {
                    host: parsed.host_str().unwrap_or_default().to_owned(),
                })
            } else {
                Ok(())
            }
        }
        other => Err(HttpUrlError::Scheme {
            scheme: other.to_owned(),
        }),
    }
}

/// Parse a `.mcp.json` text. Every problem names the server and what would work.
pub fn parse_config(
    path: &str,
    text: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<ServerConfig>, UpstreamError> {
    let err = |message: String| UpstreamError::Config {
        path: path.to_owned(),
        message,
    };
    let file: ConfigFile =
        serde_json::from_str(text).map_err(|e| err(format!("not valid JSON: {e}")))?;
    let mut servers = Vec::new();
    for (name, raw) in file.mcp_servers {
        if sanitize(&name).is_empty() {
            return Err(err(format!(
                "server name \"{name}\" has no letters or digits"
            )));
        }
        let entry: ServerEntry =
            serde_json::from_value(raw).map_err(|e| err(format!("server \"{name}\": {e}")))?;
        let interp =
            |s: &str| interpolate(s, lookup).map_err(|m| err(format!("server \"{name}\": {m}")));
        let kind =
            entry
                .kind
                .as_deref()
                .unwrap_or(if entry.url.is_some() { "http" } else { "stdio" });
        let endpoint = match kind {
            "stdio" => {
                let command = entry.command.as_deref().ok_or_else(|| {
                    err(format!(
                        "server \"{name}\": a stdio server needs \"command\" (or set \"type\": \"http\" and \"url\")"
                    ))
                })?;
                Endpoint::Stdio {
                    command: interp(command)?,
                    args: entry
                        .args
                        .iter()
                        .map(|a| interp(a))
                        .collect::<Result<_, _>>()?,
                    env: entry
                        .env
                        .iter()
                        .map(|(k, v)| Ok((k.clone(), interp(v)?)))
                        .collect::<Result<_, UpstreamError>>()?,
                    cwd: entry.cwd.as_deref().map(interp).transpose()?,
                }
            }
            "http" | "streamable-http" | "streamableHttp" => {
                let url = entry.url.as_deref().ok_or_else(|| {
                    err(format!("server \"{name}\": an http server needs \"url\""))
                })?;
                let url = interp(url)?;
                let headers: BTreeMap<String, String> = entry
                    .headers
                    .iter()
                    .map(|(k, v)| Ok((k.clone(), interp(v)?)))
                    .collect::<Result<_, UpstreamError>>()?;
                check_http_url(&url, !headers.is_empty(), &entry.toolgate)
                    .map_err(|m| err(format!("server \"{name}\": {m}")))?;
                Endpoint::Http { url, headers }
            }
            "sse" => {
                return Err(err(format!(
                    "server \"{name}\": the legacy HTTP+SSE transport is not supported; use \"type\": \"http\" (streamable HTTP)"
                )));
            }
            other => {
                return Err(err(format!(
                    "server \"{name}\": unknown type \"{other}\" (use \"stdio\" or \"http\")"
                )));
            }
        };
        servers.push(ServerConfig {
            name,
            endpoint,
            settings: entry.toolgate,
        });
    }
    Ok(servers)
}

/// Read and parse a config file with the process environment.
pub fn read_config(path: &Path) -> Result<Vec<ServerConfig>, UpstreamError> {
    let text = std::fs::read_to_string(path).map_err(|e| UpstreamError::Read {
        path: path.display().to_string(),
        message: e.to_string(),
    })?;
    parse_config(&path.display().to_string(), &text, &|k| {
        std::env::var(k).ok()
    })
}

/// Lowercase-insensitive identifier-safe name: ASCII letters, digits and `_`.
pub fn sanitize(name: &str) -> String {
    let mut s: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    while s.contains("___") {
        s = s.replace("___", "__");
    }
    s.trim_matches('_').to_owned()
}

/// `server__tool`, sanitised and at most [`MAX_TOOL_NAME`] characters. When truncation is needed
/// the tail is a short hash of the full name, so two long names stay distinct.
pub fn namespaced(server: &str, tool: &str) -> String {
    let full = format!("{}__{}", sanitize(server), sanitize(tool));
    if full.len() <= MAX_TOOL_NAME {
        return full;
    }
    use sha2::Digest;
    let hash = sha2::Sha256::digest(format!("{server}\0{tool}").as_bytes());
    let tag: String = hash.iter().take(4).map(|b| format!("{b:02x}")).collect();
    let keep = MAX_TOOL_NAME - tag.len() - 1;
    let mut cut = full[..keep].to_owned();
    while cut.ends_with('_') {
        cut.pop();
    }
    format!("{cut}_{tag}")
}

/// A connected upstream server.
pub struct Upstream {
    name: String,
    provider_name: String,
    client: RunningService<RoleClient, ClientConfig>,
    specs: Vec<ToolSpec>,
    /// namespaced id → upstream tool name.
    reverse: HashMap<String, String>,
    call_timeout: Duration,
    child_group: Option<i32>,
    /// The confined server's private home and tmp; removed after the server is killed (fields
    /// drop after `Drop::drop`).
    _private: Option<toolgate_confine::PrivateDirs>,
}

impl Drop for Upstream {
    fn drop(&mut self) {
        // Kill the whole process group (an npx wrapper's node child would outlive its parent).
        if let Some(pgid) = self.child_group
            && let Some(pid) = rustix::process::Pid::from_raw(pgid)
        {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
    }
}

fn client_config() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("toolgate", env!("CARGO_PKG_VERSION")),
    )
}

impl Upstream {
    /// Connect, initialise and list the server's tools within the start-up limit.
    ///
    /// A stdio server is started under OS confinement through `confiner` (see
    /// [`upstream_policy`]) unless its settings say `unconfined`; without a confiner (this
    /// machine cannot confine) it starts unconfined with a warning.
    pub async fn connect(
        config: &ServerConfig,
        confiner: Option<&toolgate_confine::Confiner>,
    ) -> Result<Self, UpstreamError> {
        let startup = Duration::from_secs_f64(
            config
                .settings
                .startup_timeout_secs
                .unwrap_or(30.0)
                .clamp(0.1, 600.0),
        );
        let call_timeout = Duration::from_secs_f64(
            config
                .settings
                .call_timeout_secs
                .unwrap_or(60.0)
                .clamp(0.1, 3600.0),
        );
        let start_err = |message: String| UpstreamError::Start {
            server: config.name.clone(),
            message,
        };
        let mut private = None;
        let (client, child_group) = match &config.endpoint {
            Endpoint::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let confined = confiner.filter(|_| !config.settings.unconfined);
                if confined.is_none() && !config.settings.unconfined {
                    tracing::warn!(
                        server = %config.name,
                        "starting the upstream server without OS confinement (unavailable here)"
                    );
                }
                let mut cmd = match confined {
                    Some(c) => {
                        let dirs = toolgate_confine::PrivateDirs::new()
                            .map_err(|e| start_err(format!("no private tmp dir: {e}")))?;
                        let policy = upstream_policy(command, args, cwd.as_deref(), &dirs);
                        let cmd = c.command(&policy, std::ffi::OsStr::new(command), args);
                        private = Some(dirs);
                        tokio::process::Command::from(cmd)
                    }
                    None => {
                        let mut cmd = tokio::process::Command::new(command);
                        cmd.args(args);
                        cmd
                    }
                };
                cmd.env_clear();
                for key in ENV_ALLOW_LIST {
                    if let Ok(v) = std::env::var(key) {
                        cmd.env(key, v);
                    }
                }
                cmd.envs(env);
                if let Some(dir) = cwd {
                    cmd.current_dir(dir);
                }
                cmd.process_group(0).kill_on_drop(true);
                let (transport, stderr) = TokioChildProcess::builder(cmd)
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .map_err(|e| start_err(format!("cannot run \"{command}\": {e}")))?;
                let pid = transport.id().and_then(|p| i32::try_from(p).ok());
                if let Some(stderr) = stderr {
                    let server = config.name.clone();
                    tokio::spawn(drain_stderr(server, stderr));
                }
                let connecting = client_config().serve(transport);
                let client = match tokio::time::timeout(startup, connecting).await {
                    Ok(Ok(c)) => c,
                    Ok(Err(e)) => {
                        kill_group(pid);
                        return Err(start_err(format!("initialisation failed: {e}")));
                    }
                    Err(_) => {
                        kill_group(pid);
                        return Err(start_err(format!(
                            "no answer to initialize within {:.1} s",
                            startup.as_secs_f64()
                        )));
                    }
                };
                (client, pid)
            }
            Endpoint::Http { url, headers } => {
                use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
                let mut map = HashMap::new();
                for (k, v) in headers {
                    let name = axum::http::HeaderName::try_from(k.as_str())
                        .map_err(|e| start_err(format!("header \"{k}\": {e}")))?;
                    let value = axum::http::HeaderValue::try_from(v.as_str())
                        .map_err(|e| start_err(format!("header \"{k}\": {e}")))?;
                    map.insert(name, value);
                }
                install_tls_provider();
                let transport = StreamableHttpClientTransport::from_config(
                    StreamableHttpClientTransportConfig::with_uri(url.clone()).custom_headers(map),
                );
                let client = tokio::time::timeout(startup, client_config().serve(transport))
                    .await
                    .map_err(|_| {
                        start_err(format!(
                            "no answer from {url} within {:.1} s",
                            startup.as_secs_f64()
                        ))
                    })?
                    .map_err(|e| {
                        start_err(format!("initialisation failed: {}", init_failure(&e)))
                    })?;
                (client, None)
            }
        };
        let mut this = Self {
            name: config.name.clone(),
            provider_name: format!("mcp:{}", config.name),
            client,
            specs: Vec::new(),
            reverse: HashMap::new(),
            call_timeout,
            child_group,
            _private: private,
        };
        let tools = tokio::time::timeout(startup, this.client.list_all_tools())
            .await
            .map_err(|_| start_err("tools/list did not answer in time".to_owned()))?
            .map_err(|e| start_err(format!("tools/list failed: {e}")))?;
        for tool in tools {
            let id = namespaced(&config.name, &tool.name);
            if this.reverse.contains_key(&id) {
                tracing::warn!(server = %config.name, tool = %tool.name, "two upstream tools map to the same name; keeping the first");
                continue;
            }
            let read = config
                .settings
                .read_only
                .iter()
                .any(|t| t == tool.name.as_ref());
            this.reverse.insert(id.clone(), tool.name.to_string());
            this.specs.push(ToolSpec {
                id,
                title: tool
                    .title
                    .clone()
                    .unwrap_or_else(|| format!("{} ({})", tool.name, config.name)),
                description: tool
                    .description
                    .as_deref()
                    .unwrap_or("(no description)")
                    .to_owned(),
                input_schema: Value::Object((*tool.input_schema).clone()),
                // Unknown effect ⇒ mutating: only toolgate's own config can mark a tool read-only.
                output_kind: read.then(|| OutputKind::new("read/upstream")),
                category: format!("mcp:{}", config.name),
                annotations: Map::new(),
            });
        }
        Ok(this)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn specs(&self) -> &[ToolSpec] {
        &self.specs
    }

    /// The upstream name of a namespaced tool id.
    pub fn upstream_name(&self, id: &str) -> Option<&str> {
        self.reverse.get(id).map(String::as_str)
    }

    /// The child's process group, when it is a stdio server.
    pub fn child_pid(&self) -> Option<i32> {
        self.child_group
    }
}

/// rustls's process-wide crypto provider: ring, the one ureq already uses. reqwest is built with
/// `rustls-no-provider` and panics when building a client without one; installing it twice is
/// harmless (the second install reports the first and changes nothing).
fn install_tls_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// Why an HTTP upstream did not initialise, with the reason reqwest keeps in its sources (a
/// refused connection, an untrusted certificate) instead of rmcp's transport type name.
fn init_failure(e: &rmcp::service::ClientInitializeError) -> String {
    match e {
        rmcp::service::ClientInitializeError::TransportError { error, context } => {
            // rmcp's `StreamableHttpError::Client` does not mark reqwest's error as its source,
            // so the chain is picked up from there by hand.
            use rmcp::transport::streamable_http_client::StreamableHttpError;
            let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(error.error.as_ref());
            while let Some(c) = cur {
                if let Some(StreamableHttpError::Client(r)) =
                    c.downcast_ref::<StreamableHttpError<reqwest::Error>>()
                {
                    return format!("{context}: {}", with_causes(r));
                }
                cur = c.source();
            }
            format!("{context}: {}", with_causes(error.error.as_ref()))
        }
        other => with_causes(other),
    }
}

/// An error with its causes, outermost first: rmcp's transport errors say "error sending request"
/// and keep the reason (a refused connection, an untrusted certificate) in their sources.
fn with_causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let line = c.to_string();
        if !text.contains(&line) {
            text.push_str(": ");
            text.push_str(&line);
        }
        cause = c.source();
    }
    text
}

fn kill_group(pid: Option<i32>) {
    if let Some(p) = pid.and_then(rustix::process::Pid::from_raw) {
        let _ = rustix::process::kill_process_group(p, rustix::process::Signal::KILL);
    }
}

async fn drain_stderr(server: String, stderr: tokio::process::ChildStderr) {
    use tokio::io::AsyncBufReadExt;
    let mut lines = tokio::io::BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::debug!(server = %server, "{line}");
    }
}

#[async_trait]
impl Provider for Upstream {
    // The provider's name is `mcp:<server>` (the registry names the source of a duplicate id
    // by it); the server's own name is `Upstream::name` above.
    #[allow(clippy::misnamed_getters)]
    fn name(&self) -> &str {
        &self.provider_name
    }

    fn origin(&self) -> ToolOrigin {
        ToolOrigin::UpstreamMcp {
            server: self.name.clone(),
        }
    }

    async fn list_tools(&self) -> Result<Vec<ToolSpec>, ProviderError> {
        Ok(self.specs.clone())
    }

    async fn call(&self, call: &ToolCall) -> Result<ToolOutcome, CallError> {
        let Some(tool) = self.reverse.get(&call.tool_id) else {
            return Err(CallError::failed(format!(
                "{} has no tool {}",
                self.name, call.tool_id
            )));
        };
        let limit = call
            .timeout
            .map_or(self.call_timeout, |t| t.min(self.call_timeout));
        let params = CallToolRequestParams::new(tool.clone()).with_arguments(call.params.clone());
        let result = match tokio::time::timeout(limit, self.client.call_tool(params)).await {
            Err(_) => {
                return Err(CallError::failed(format!(
                    "{}: {} did not answer within {:.1} s (the call was cancelled)",
                    self.name,
                    tool,
                    limit.as_secs_f64()
                )));
            }
            Ok(Err(e)) => {
                return Err(CallError::failed(format!(
                    "{}: {} failed: {e}",
                    self.name, tool
                )));
            }
            Ok(Ok(r)) => r,
        };
        let mut text: String = result
            .content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.clone()))
            .collect::<Vec<_>>()
            .join("\n");
        if text.chars().count() > MAX_RESULT_CHARS {
            text = text.chars().take(MAX_RESULT_CHARS).collect();
            text.push_str(" …(truncated)");
        }
        if result.is_error == Some(true) {
            return Err(CallError::failed(format!("{}: {text}", self.name)));
        }
        let data = result
            .structured_content
            .unwrap_or_else(|| json!({ "text": text }));
        Ok(ToolOutcome {
            kind: OutputKind::new("dataset/upstream"),
            summary: if text.is_empty() {
                "(no text)".to_owned()
            } else {
                text
            },
            data,
            change_set: None,
        })
    }
}

/// What a confined upstream server may touch: [`toolgate_confine::server_policy`] (its `cwd`,
/// a private home/tmp, read-only its program's and scripts' install) plus the network (an
/// upstream server is often a client of a remote service).
pub fn upstream_policy(
    command: &str,
    args: &[String],
    cwd: Option<&str>,
    dirs: &toolgate_confine::PrivateDirs,
) -> toolgate_confine::Policy {
    toolgate_confine::server_policy(command, args, cwd.map(std::path::Path::new), dirs)
        .with_network(true)
}

/// Connect every configured server; a server that fails is reported and skipped (the others
/// still serve). Stdio servers start confined through `confiner` (see [`Upstream::connect`]).
pub async fn connect_all(
    configs: &[ServerConfig],
    confiner: Option<&toolgate_confine::Confiner>,
) -> (Vec<Arc<Upstream>>, Vec<UpstreamError>) {
    let results = futures_join_all(
        configs
            .iter()
            .map(|c| Upstream::connect(c, confiner))
            .collect::<Vec<_>>(),
    )
    .await;
    let mut ok = Vec::new();
    let mut errors = Vec::new();
    for r in results {
        match r {
            Ok(u) => ok.push(Arc::new(u)),
            Err(e) => errors.push(e),
        }
    }
    (ok, errors)
}

async fn futures_join_all<F: std::future::Future>(futures: Vec<F>) -> Vec<F::Output> {
    // Sequential start keeps child stderr ordering readable and the machine's two cores calm;
    // servers are few.
    let mut out = Vec::with_capacity(futures.len());
    for f in futures {
        out.push(f.await);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(k: &str) -> Option<String> {
        match k {
            "TOKEN" => Some("s3cret".to_owned()),
            "HOME" => Some("/home/x".to_owned()),
            _ => None,
        }
    }

    #[test]
    fn interpolation() {
        assert_eq!(interpolate("a ${TOKEN} b", &env).unwrap(), "a s3cret b");
        assert_eq!(interpolate("${NOPE:-dflt}", &env).unwrap(), "dflt");
        assert!(
            interpolate("${NOPE}", &env)
                .unwrap_err()
                .to_string()
                .contains("NOPE is not set")
        );
        assert!(interpolate("${TOKEN", &env).is_err());
        assert!(interpolate("${a b}", &env).is_err());
        assert_eq!(interpolate("no vars", &env).unwrap(), "no vars");
    }

    #[test]
    fn headers_never_cross_the_network_over_plain_http_unless_allowed() {
        let parse = |entry: Value| {
            parse_config(
                "up.json",
                &json!({"mcpServers": {"s": entry}}).to_string(),
                &env,
            )
        };
        let token = json!({"Authorization": "Bearer ${TOKEN}"});
        // refused: a token to another host over http://, saying what would work
        let e =
            parse(json!({"type": "http", "url": "http://mcp.example.com/mcp", "headers": token}))
                .unwrap_err()
                .to_string();
        assert!(e.contains("server \"s\""), "{e}");
        assert!(e.contains("mcp.example.com"), "{e}");
        assert!(
            e.contains("https://") && e.contains("allowPlainHttp"),
            "{e}"
        );
        assert!(
            !e.contains("s3cret"),
            "the refusal never prints the header: {e}"
        );
        for ok in [
            json!({"type": "http", "url": "https://mcp.example.com/mcp", "headers": token}),
            json!({"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": token}),
            json!({"type": "http", "url": "http://localhost:9/mcp", "headers": token}),
            json!({"type": "http", "url": "http://[::1]:9/mcp", "headers": token}),
            json!({"type": "http", "url": "http://mcp.example.com/mcp"}),
            json!({"type": "http", "url": "http://10.0.0.5/mcp", "headers": token,
                   "toolgate": {"allowPlainHttp": true}}),
        ] {
            assert!(parse(ok.clone()).is_ok(), "{ok}");
        }
        // a look-alike host is not this machine
        assert!(
            parse(
                json!({"type": "http", "url": "http://localhost.example.com/mcp", "headers": token})
            )
            .is_err()
        );
        let e = parse(json!({"type": "http", "url": "ftp://mcp.example.com/mcp"}))
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"ftp\"") && e.contains("https://"), "{e}");
        let e = parse(json!({"type": "http", "url": "not a url"}))
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a URL"), "{e}");
    }

    #[test]
    fn names_are_namespaced_sanitised_and_bounded() {
        assert_eq!(namespaced("everything", "echo"), "everything__echo");
        assert_eq!(namespaced("my-server", "get.item"), "my_server__get_item");
        let long = namespaced("a-very-long-server-name-indeed", &"t".repeat(80));
        assert!(long.len() <= MAX_TOOL_NAME, "{long}");
        let other = namespaced(
            "a-very-long-server-name-indeed",
            &format!("{}x", "t".repeat(80)),
        );
        assert_ne!(long, other);
        assert!(long.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
    }

    #[test]
    fn config_parses_both_kinds_with_interpolation() {
        let text = r#"{"mcpServers": {
            "everything": {"command": "node", "args": ["${HOME}/x.js", "stdio"], "env": {"K": "${TOKEN}"}},
            "web": {"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}, "toolgate": {"readOnly": ["get"]}}
        }}"#;
        let servers = parse_config("x.json", text, &env).unwrap();
        assert_eq!(servers.len(), 2);
        assert_eq!(
            servers[0].endpoint,
            Endpoint::Stdio {
                command: "node".into(),
                args: vec!["/home/x/x.js".into(), "stdio".into()],
                env: [("K".to_owned(), "s3cret".to_owned())].into(),
                cwd: None
            }
        );
        match &servers[1].endpoint {
            Endpoint::Http { headers, .. } => {
                assert_eq!(headers["Authorization"], "Bearer s3cret");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(servers[1].settings.read_only, ["get"]);
    }

    #[test]
    fn config_errors_name_the_server() {
        let e = parse_config("x.json", r#"{"mcpServers": {"s": {"args": []}}}"#, &env)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("x.json") && e.contains("\"s\"") && e.contains("command"),
            "{e}"
        );
        let e = parse_config(
            "x.json",
            r#"{"mcpServers": {"s": {"type": "sse", "url": "u"}}}"#,
            &env,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("streamable"), "{e}");
        let e = parse_config(
            "x.json",
            r#"{"mcpServers": {"s": {"command": "x", "bogus": 1}}}"#,
            &env,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("bogus"), "{e}");
        let e = parse_config("x.json", "{", &env).unwrap_err().to_string();
        assert!(e.contains("not valid JSON"), "{e}");
    }
}
