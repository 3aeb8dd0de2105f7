//! toolgate's MCP server: one handler type for stdio and streamable HTTP.
//!
//! Which session a call drives:
//! - stdio, and HTTP clients on the legacy protocol (≤ 2025-11-25, one MCP session per client):
//!   the handler instance's own session, created on first use — sessions never share state;
//! - HTTP requests that carry an `x-toolgate-session: NAME` header: that named session (how a
//!   stateless 2026-07-28 client keeps its open plot between requests);
//! - other stateless (2026-07-28) HTTP requests: the server's shared session — under `toolgate
//!   serve` that is the workbench's, so a person sees the agent's edits live and saves them.
//!
//! Under `toolgate serve` every session made here is listed in the workbench's
//! [`SessionDirectory`] (`McpShared::directory`), so the person sees, saves or reverts what a
//! legacy client did in its own session too; each `debrief_runTool` call runs
//! [`acting_as`] the client, so the activity log names it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ElicitRequest,
    ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema, ErrorData,
    Implementation, InputRequest, InputRequests, InputRequiredResult, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{Peer, RequestContext, RoleServer};
use serde_json::{Map, Value, json};
use toolgate_core::flow::Fixed;
use toolgate_core::policy::Mode;
use toolgate_core::telemetry::{NullSink, Outcome, TelemetryRecord, TelemetrySink};
use toolgate_core::{
    Answer, Confirmer, Failure, FailureKind, ParamValidator, Preview, Refusal, RefusalKind, Reply,
    Status,
};
use toolgate_plot::activity::{SessionDirectory, acting_as};
use toolgate_plot::debrief::{self, Debrief};
use toolgate_plot::session::Session;
use toolgate_plot::transaction::{Commit, CommitGate, Committed, PlotTransaction, attach_report};

use crate::confirm::{ApprovedDigest, ConfirmRejected, ConfirmState, Recording, TokenConfirmer};
use crate::paused::{
    CodeProgress, PAUSED_LIMITS, PausedCode, PausedRun, owner_number, pause_digest,
};
use crate::pending::{Pending, PendingLimits, Taken, TooLarge, json_size};
use crate::sessions::SessionLimits;
use crate::surface::{CONFIRM_ARG, DECLINE_ARG, RUN_CODE, surface_specs, to_mcp_tool};
use toolgate_core::ToolSet;

/// The header a stateless HTTP client names its session with.
pub const SESSION_HEADER: &str = "x-toolgate-session";

/// The elicitation key used in MRTR input requests.
const CONFIRM_KEY: &str = "confirm";

/// Runs a CodeAct program for `run_code` (the CLI binds it to the sandbox and the registry).
#[async_trait]
pub trait CodeRunner: Send + Sync {
    /// Run `code`; the result is the sandbox envelope as JSON. `confirmer` answers for the
    /// program's mutating calls. With `plot`, the program's plot functions edit the
    /// transaction's scratch copy; the server commits the net change afterwards.
    async fn run(
        &self,
        code: &str,
        timeout: Option<Duration>,
        confirmer: Arc<dyn Confirmer>,
        plot: Option<Arc<PlotTransaction>>,
    ) -> Value;

    /// Start `code`; a call that needs a person pauses it there ([`CodeProgress::Paused`]) and
    /// the server asks the way the client can. The default runs it to the end with every such
    /// call refused as unasked (runners that cannot pause).
    async fn start(
        &self,
        code: &str,
        timeout: Option<Duration>,
        plot: Option<Arc<PlotTransaction>>,
    ) -> CodeProgress {
        CodeProgress::Done(
            self.run(code, timeout, Arc::new(Fixed(Answer::Unasked)), plot)
                .await,
        )
    }
}

/// Tools served directly in `tools/list` next to `run_code` (the workspace tools, when the
/// server was started with them). The CLI binds them to the CodeAct registry.
#[async_trait]
pub trait DirectTools: Send + Sync {
    fn specs(&self) -> Vec<toolgate_core::ToolSpec>;
    /// Run one tool through the registry and policy; `Err` says how it ended and why.
    async fn call(
        &self,
        tool: &str,
        args: Map<String, Value>,
        confirmer: Arc<dyn Confirmer>,
    ) -> Result<Value, DirectError>;
}

/// A direct tool call that did not succeed: the message for the model and, when the gate ended
/// the call, its typed status and reason — reported in `_meta` ([`STATUS_META`]) and `isError`
/// as for the Debrief tools, so a person's decline is an answer and a refusal an error.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct DirectError {
    pub message: String,
    /// `None`: the call failed before or outside the gate (reported as an error).
    pub status: Option<Status>,
    pub reason: Option<String>,
}

/// A program's plot change waiting for an out-of-band confirmation (MRTR or token), kept so the
/// confirmation applies exactly what was previewed without running the program again.
struct PendingCommit {
    commit: Commit,
    /// The session it was previewed on: only that session's client can confirm it.
    session: Arc<Mutex<Session>>,
    /// The program (a confirming call must name the same one).
    code: String,
    /// The program's envelope, returned again with the commit's outcome.
    envelope: Value,
    expires: Instant,
}

/// The surface name telemetry records of a `run_code` commit carry.
const RUN_CODE_SURFACE: &str = "mcp:run_code";

/// Makes a private Debrief session; the argument is the client's identity (for telemetry).
pub type SessionFactory = dyn Fn(&str) -> Arc<Debrief> + Send + Sync;

/// Makes the Debrief session a stateless client names (`x-toolgate-session`): (name, identity).
/// Under `serve --state` it is journaled under the name, so every instance serves it.
pub type NamedSessionFactory = dyn Fn(&str, &str) -> Arc<Debrief> + Send + Sync;

/// Process-wide state every handler instance shares.
pub struct McpShared {
    pub surface: ToolSet,
    pub new_session: Arc<SessionFactory>,
    /// The session stateless HTTP requests drive (the workbench's under `serve`).
    pub shared_session: OnceLock<Arc<Debrief>>,
    /// Cap and idle expiry of legacy HTTP sessions (defaults when unset).
    pub session_limits: OnceLock<SessionLimits>,
    /// Where every session this server makes is listed, so the workbench's person sees, saves
    /// or reverts what each client did (set under `toolgate serve`).
    pub directory: OnceLock<Arc<SessionDirectory>>,
    /// Named sessions of stateless clients, with when each was last used (bounded like the
    /// legacy HTTP sessions: [`SessionLimits`]).
    named: Mutex<HashMap<String, (Arc<Debrief>, Instant)>>,
    /// How a named session is made when it is not [`SessionFactory`] (set under `serve
    /// --state`: a session made again after it expired here replays its journal).
    pub named_factory: OnceLock<Arc<NamedSessionFactory>>,
    pub code: Option<Arc<dyn CodeRunner>>,
    direct: Option<Arc<dyn DirectTools>>,
    direct_ids: Vec<String>,
    pub confirm: ConfirmState,
    /// Program commits waiting for their MRTR answer or token, by call digest; capped per
    /// session and per server by count and bytes, oldest evicted first ([`PendingLimits`]).
    pending: Mutex<Pending<PendingCommit>>,
    /// Programs paused at a call until their MRTR answer or token, by pause digest
    /// ([`crate::paused`]; [`PAUSED_LIMITS`]).
    paused: Mutex<Pending<PausedRun>>,
    pub sink: Arc<dyn TelemetrySink>,
    /// One line per function `run_code` programs can call (in its description).
    pub run_code_functions: String,
    /// How long a legacy elicitation may wait for the person.
    pub elicit_timeout: Duration,
    tools: Vec<Tool>,
    validators: Vec<(String, ParamValidator)>,
}

impl McpShared {
    pub fn new(
        surface: ToolSet,
        new_session: Arc<SessionFactory>,
        code: Option<Arc<dyn CodeRunner>>,
        sink: Arc<dyn TelemetrySink>,
        run_code_functions: impl Into<String>,
    ) -> Self {
        let run_code_functions = run_code_functions.into();
        let specs = surface_specs(surface, &run_code_functions);
        let tools = specs.iter().map(to_mcp_tool).collect();
        // The advertised schemas are checked here too, so a malformed call is an error result
        // (isError) the model can read, whichever tool it was.
        let validators = specs
            .iter()
            .filter_map(|s| {
                ParamValidator::compile(&s.id, &s.input_schema)
                    .ok()
                    .map(|v| (s.id.clone(), v))
            })
            .collect();
        Self {
            surface,
            new_session,
            shared_session: OnceLock::new(),
            session_limits: OnceLock::new(),
            directory: OnceLock::new(),
            named: Mutex::new(HashMap::new()),
            named_factory: OnceLock::new(),
            code,
            direct: None,
            direct_ids: Vec::new(),
            confirm: ConfirmState::new(),
            pending: Mutex::new(Pending::new(PendingLimits::default())),
            paused: Mutex::new(Pending::new(PAUSED_LIMITS)),
            sink,
            run_code_functions,
            elicit_timeout: Duration::from_secs(600),
            tools,
            validators,
        }
    }

    /// Use this session for stateless requests (the workbench's, under `serve`).
    pub fn with_shared_session(self, session: Arc<Debrief>) -> Self {
        let _ = self.shared_session.set(session);
        self
    }

    /// Also serve these tools directly (after the surface's own).
    pub fn with_direct_tools(mut self, direct: Arc<dyn DirectTools>) -> Self {
        for spec in direct.specs() {
            if self.tools.iter().any(|t| t.name == spec.id.as_str()) {
                continue;
            }
            if let Ok(v) = ParamValidator::compile(&spec.id, &spec.input_schema) {
                self.validators.push((spec.id.clone(), v));
            }
            self.tools.push(to_mcp_tool(&spec));
            self.direct_ids.push(spec.id);
        }
        self.direct = Some(direct);
        self
    }

    /// Hold at most this much waiting for confirmations (defaults: [`PendingLimits`]).
    pub fn with_pending_limits(self, limits: PendingLimits) -> Self {
        self.pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .set_limits(limits);
        self
    }

    /// Hold at most this many paused programs (defaults: [`PAUSED_LIMITS`]).
    pub fn with_paused_limits(self, limits: PendingLimits) -> Self {
        self.paused
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .set_limits(limits);
        self
    }

    /// How many programs are paused waiting for an answer (tests, diagnostics).
    pub fn paused_programs(&self) -> usize {
        let mut paused = self
            .paused
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        paused.sweep();
        paused.len()
    }

    fn keep_paused(&self, key: &str, run: PausedRun, bytes: usize) -> Result<(), TooLarge> {
        let owner = owner_number(&run.owner);
        self.paused
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(key, owner, bytes, Instant::now() + self.confirm.ttl(), run)
    }

    fn take_paused(&self, key: &str) -> Taken<PausedRun> {
        self.paused
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take(key)
    }

    pub fn with_elicit_timeout(mut self, timeout: Duration) -> Self {
        self.elicit_timeout = timeout;
        self
    }

    /// The HTTP session limits in force.
    pub fn session_limits(&self) -> SessionLimits {
        self.session_limits.get().copied().unwrap_or_default()
    }

    /// The advertised tools (fixed for the process).
    pub fn tools(&self) -> &[Tool] {
        &self.tools
    }

    fn named_session(&self, name: &str, identity: &str) -> Arc<Debrief> {
        let limits = self.session_limits();
        let now = Instant::now();
        let mut named = self
            .named
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // A session no request holds (strong count 1) expires when idle, and the least recently
        // used one makes room at the cap; one in use is never dropped under its request.
        named.retain(|_, (d, last)| {
            Arc::strong_count(d) > 1 || now.duration_since(*last) < limits.idle_timeout
        });
        if !named.contains_key(name) && named.len() >= limits.max_sessions {
            let victim = named
                .iter()
                .filter(|(_, (d, _))| Arc::strong_count(d) == 1)
                .min_by_key(|(_, (_, last))| *last)
                .map(|(k, _)| k.clone());
            if let Some(victim) = victim {
                tracing::info!(session = %victim, "named MCP session cap reached; dropping the least recently used");
                named.remove(&victim);
            }
        }
        let entry = named.entry(name.to_owned()).or_insert_with(|| {
            let via = format!("MCP over HTTP, session \"{name}\"");
            let debrief = match self.named_factory.get() {
                Some(make) => self.list_session(make(name, identity), identity, &via),
                None => self.make_session(identity, &via),
            };
            (debrief, now)
        });
        entry.1 = now;
        entry.0.clone()
    }

    /// How many named (stateless) sessions are held.
    pub fn named_sessions(&self) -> usize {
        self.named
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .len()
    }

    /// Hold a previewed commit for its confirmation, within [`PendingLimits`]: the oldest of
    /// its session, then of the server, is evicted to make room.
    fn keep_pending(&self, digest: &str, pending: PendingCommit) -> Result<(), TooLarge> {
        // The session's address identifies it while anything of it is held (an entry holds
        // the Arc, so the address cannot be reused meanwhile).
        let owner = Arc::as_ptr(&pending.session) as *const () as usize;
        // Estimated once: the change set dominates (a bulk edit carries every feature it
        // touches); the program, its envelope and the edit lines are counted too.
        let c = &pending.commit;
        let bytes = json_size(&c.change)
            + json_size(&pending.envelope)
            + pending.code.len()
            + c.edits
                .iter()
                .chain(&c.features)
                .map(String::len)
                .sum::<usize>();
        let expires = pending.expires;
        self.pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(digest, owner, bytes, expires, pending)
    }

    fn take_pending(&self, digest: &str) -> Taken<PendingCommit> {
        self.pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take(digest)
    }

    /// How many program commits wait for a confirmation (tests, diagnostics).
    pub fn pending_commits(&self) -> usize {
        self.pending.lock().map(|p| p.len()).unwrap_or(0)
    }

    /// The estimated bytes of the program commits waiting for a confirmation.
    pub fn pending_bytes(&self) -> usize {
        self.pending.lock().map(|p| p.bytes()).unwrap_or(0)
    }

    fn shared(&self, identity: &str) -> Arc<Debrief> {
        self.shared_session
            .get_or_init(|| self.make_session(identity, "MCP over HTTP (shared)"))
            .clone()
    }

    /// A new private session for `identity`, listed in the directory when there is one.
    fn make_session(&self, identity: &str, via: &str) -> Arc<Debrief> {
        self.list_session((self.new_session)(identity), identity, via)
    }

    fn list_session(&self, debrief: Arc<Debrief>, identity: &str, via: &str) -> Arc<Debrief> {
        if let Some(dir) = self.directory.get() {
            dir.register(None, identity, via, identity, debrief.clone());
        }
        debrief
    }
}

/// One MCP handler (per stdio connection, per legacy HTTP session, per stateless request).
#[derive(Clone)]
pub struct ToolgateServer {
    shared: Arc<McpShared>,
    own: Arc<OnceLock<Arc<Debrief>>>,
}

impl ToolgateServer {
    pub fn new(shared: Arc<McpShared>) -> Self {
        Self {
            shared,
            own: Arc::new(OnceLock::new()),
        }
    }

    fn identity(ctx: &RequestContext<RoleServer>) -> String {
        ctx.client_info()
            .map(|i| format!("{}/{}", i.name, i.version))
            .unwrap_or_else(|| "unknown".to_owned())
    }

    fn is_modern(ctx: &RequestContext<RoleServer>) -> bool {
        ctx.protocol_version()
            .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
    }

    fn session_for(&self, ctx: &RequestContext<RoleServer>) -> Arc<Debrief> {
        let identity = Self::identity(ctx);
        if let Some(parts) = ctx.extensions.get::<axum::http::request::Parts>() {
            if let Some(name) = parts
                .headers
                .get(SESSION_HEADER)
                .and_then(|v| v.to_str().ok())
                .map(str::trim)
                .filter(|n| !n.is_empty() && n.len() <= 128)
            {
                return self.shared.named_session(name, &identity);
            }
            if Self::is_modern(ctx) {
                return self.shared.shared(&identity);
            }
        }
        let via = match ctx.protocol_version() {
            Some(v) if ctx.extensions.get::<axum::http::request::Parts>().is_some() => {
                format!("MCP over HTTP ({})", v.as_str())
            }
            Some(v) => format!("MCP over stdio ({})", v.as_str()),
            None => "MCP".to_owned(),
        };
        self.own
            .get_or_init(|| self.shared.make_session(&identity, &via))
            .clone()
    }

    fn can_elicit(ctx: &RequestContext<RoleServer>) -> bool {
        if Self::is_modern(ctx) {
            ctx.client_capabilities()
                .is_some_and(|c| c.elicitation.is_some())
        } else {
            ctx.peer
                .supported_elicitation_modes()
                .contains(&rmcp::service::ElicitationMode::Form)
        }
    }

    fn record(
        &self,
        ctx: &RequestContext<RoleServer>,
        tool: &str,
        input: &Map<String, Value>,
        outcome: Outcome,
        started: Instant,
    ) {
        let mut rec = TelemetryRecord::now("mcp", tool, Value::Object(input.clone()));
        rec.active_model = Self::identity(ctx);
        rec.outcome = outcome;
        rec.latency_ms.total = started.elapsed().as_secs_f64() * 1000.0;
        self.shared.sink.record(&rec);
    }

    async fn run_tool(
        &self,
        debrief: &Debrief,
        mut args: Map<String, Value>,
        request_state: Option<String>,
        responses: Option<&rmcp::model::InputResponses>,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let token = args
            .remove(CONFIRM_ARG)
            .and_then(|v| v.as_str().map(str::to_owned));
        let input = Value::Object(args);
        let confirm = &self.shared.confirm;

        // MRTR retry: the sealed state says which call was previewed; the response says what
        // the person answered.
        if let Some(sealed) = request_state {
            let state = match confirm.open(&sealed) {
                Ok(s) => s,
                Err(e) => return Ok(text_result(e.to_string(), true)),
            };
            let answer = responses
                .and_then(|r| r.get(CONFIRM_KEY))
                .and_then(|v| serde_json::from_value::<ElicitResult>(v.clone()).ok());
            if !confirm.consume(&state) {
                return Ok(text_result(
                    crate::confirm::ConfirmRejected::Replayed.to_string(),
                    true,
                ));
            }
            let approved = answer.as_ref().is_some_and(accepted);
            if !approved {
                let reply = debrief.run_tool(&input, &Fixed(Answer::Decline)).await;
                return Ok(reply_result(reply));
            }
            let confirmer = ApprovedDigest::new(state.digest);
            let reply = debrief.run_tool(&input, &confirmer).await;
            if confirmer.mismatch.take().is_some() {
                return Ok(text_result(
                    crate::confirm::ConfirmRejected::Mismatch.to_string(),
                    true,
                ));
            }
            return Ok(reply_result(reply));
        }

        // Token fallback, second step.
        if let Some(token) = token {
            let confirmer = TokenConfirmer::new(confirm, token);
            let reply = debrief.run_tool(&input, &confirmer).await;
            if let Some(rejected) = confirmer.rejection() {
                let mut msg = rejected.to_string();
                if let Some(asked) = confirmer.asked.take() {
                    let token = confirm.mint_token(&asked.digest);
                    msg = format!("{msg}.\n\n{}", token_request(&asked.preview, &token));
                }
                return Ok(text_result(msg, true));
            }
            return Ok(reply_result(reply));
        }

        if Self::can_elicit(ctx) {
            if Self::is_modern(ctx) {
                let recording = Recording::default();
                let reply = debrief.run_tool(&input, &recording).await;
                let Some(asked) = recording.take() else {
                    return Ok(reply_result(reply));
                };
                let sealed = confirm
                    .seal(&asked.digest)
                    .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                let mut requests = InputRequests::new();
                requests.insert(
                    CONFIRM_KEY.to_owned(),
                    InputRequest::Elicitation(ElicitRequest::new(elicit_params(&asked.preview)?)),
                );
                return Ok(InputRequiredResult::new(Some(requests), Some(sealed)).into());
            }
            let confirmer = Elicit {
                peer: ctx.peer.clone(),
                timeout: self.shared.elicit_timeout,
            };
            let reply = debrief.run_tool(&input, &confirmer).await;
            return Ok(reply_result(reply));
        }

        // No way to ask: fail closed with a preview and a single-use token.
        let recording = Recording::default();
        let reply = debrief.run_tool(&input, &recording).await;
        match recording.take() {
            Some(asked) => {
                let token = confirm.mint_token(&asked.digest);
                Ok(text_result(token_request(&asked.preview, &token), false))
            }
            None => Ok(reply_result(reply)),
        }
    }

    async fn run_code(
        &self,
        mut args: Map<String, Value>,
        request_state: Option<String>,
        responses: Option<&rmcp::model::InputResponses>,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(runner) = &self.shared.code else {
            return Ok(text_result(
                "run_code is not available on this server (start it with --surface codeact or all).",
                true,
            ));
        };
        let mut take_str = |key: &str| args.remove(key).and_then(|v| v.as_str().map(str::to_owned));
        let (confirm_token, decline_token) = (take_str(CONFIRM_ARG), take_str(DECLINE_ARG));
        let Some(code) = args.get("code").and_then(Value::as_str).map(str::to_owned) else {
            return Ok(text_result(
                "\"code\" is required: the Python program to run, as a string.",
                true,
            ));
        };
        let debrief = self
            .shared
            .surface
            .has_debrief()
            .then(|| self.session_for(ctx));
        let owner = self.owner_key(ctx, debrief.as_deref());
        // A later round answers: it resumes a paused program, or applies a finished program's
        // kept plot change; the program does not run again.
        if let Some(sealed) = request_state {
            return Ok(self
                .confirm_by_mrtr(&sealed, responses, &code, &owner, debrief.as_deref(), ctx)
                .await);
        }
        match (confirm_token, decline_token) {
            (Some(_), Some(_)) => {
                return Ok(text_result(
                    "give either \"confirm\" (the user approved) or \"decline\" (the user declined), not both; nothing ran",
                    true,
                ));
            }
            (Some(token), None) => {
                return Ok(self
                    .confirm_by_token(
                        &token,
                        Answer::Approve,
                        &code,
                        &owner,
                        debrief.as_deref(),
                        ctx,
                    )
                    .await);
            }
            (None, Some(token)) => {
                return Ok(self
                    .confirm_by_token(
                        &token,
                        Answer::Decline,
                        &code,
                        &owner,
                        debrief.as_deref(),
                        ctx,
                    )
                    .await);
            }
            (None, None) => {}
        }
        let timeout = args
            .get("timeoutSeconds")
            .and_then(Value::as_f64)
            .filter(|t| t.is_finite() && *t > 0.0)
            .map(|t| Duration::from_secs_f64(t.min(600.0)));
        // A program's own calls that need a person pause it there (legacy elicitation asks at
        // once; otherwise the client gets a token or an MRTR round). Its plot edits are
        // confirmed once, at the end.
        let tx = debrief.as_ref().and_then(|d| {
            let plot_id = d.session().active_id().map(str::to_owned)?;
            let tx = PlotTransaction::begin(d.session_handle(), &plot_id).ok()?;
            tx.set_units(d.units());
            Some(tx)
        });
        let progress = runner.start(&code, timeout, tx.clone()).await;
        Ok(self
            .continue_program(progress, code, tx, owner, debrief.as_deref(), ctx)
            .await)
    }

    /// Who may answer a paused program: its plot session, the named session, or this
    /// connection (stdio, a legacy HTTP session); stateless requests without a name share one.
    fn owner_key(&self, ctx: &RequestContext<RoleServer>, debrief: Option<&Debrief>) -> String {
        if let Some(d) = debrief {
            return format!("session:{:p}", Arc::as_ptr(&d.session_handle()));
        }
        if let Some(parts) = ctx.extensions.get::<axum::http::request::Parts>() {
            if let Some(name) = parts
                .headers
                .get(SESSION_HEADER)
                .and_then(|v| v.to_str().ok())
                .map(str::trim)
                .filter(|n| !n.is_empty() && n.len() <= 128)
            {
                return format!("named:{name}");
            }
            if Self::is_modern(ctx) {
                return "shared".to_owned();
            }
        }
        format!("connection:{:p}", Arc::as_ptr(&self.own))
    }

    /// Ask over the open legacy session now; `None` when the person dismissed the question or
    /// it could not be asked (then nothing was decided).
    async fn elicit_now(
        &self,
        ctx: &RequestContext<RoleServer>,
        preview: &Preview,
    ) -> Option<Answer> {
        let params = elicit_params(preview).ok()?;
        match ctx
            .peer
            .create_elicitation_with_timeout(params, Some(self.shared.elicit_timeout))
            .await
        {
            Ok(result) => answer_of(&result),
            Err(e) => {
                tracing::warn!(error = %e, "elicitation failed; the program stays paused for a token");
                None
            }
        }
    }

    /// Drive a started program on: legacy elicitation answers each pause at once; otherwise the
    /// first pause is kept and the client asked (token or MRTR). At the end, its plot change
    /// is confirmed as before.
    async fn continue_program(
        &self,
        mut progress: CodeProgress,
        code: String,
        tx: Option<Arc<PlotTransaction>>,
        owner: String,
        debrief: Option<&Debrief>,
        ctx: &RequestContext<RoleServer>,
    ) -> CallToolResponse {
        loop {
            match progress {
                CodeProgress::Done(envelope) => {
                    return self.finish_program(envelope, code, tx, debrief, ctx).await;
                }
                CodeProgress::Paused(paused) => {
                    if Self::can_elicit(ctx) && !Self::is_modern(ctx) {
                        let preview = with_already(paused.preview(), &paused.already());
                        // A dismissed question (or a failed one) is no answer: the program
                        // stays paused and the client gets the token instead.
                        if let Some(answer) = self.elicit_now(ctx, &preview).await {
                            progress = paused.resume(answer).await;
                            continue;
                        }
                        return self.park(paused, code, tx, owner, ctx, false);
                    }
                    let by_mrtr = Self::can_elicit(ctx);
                    return self.park(paused, code, tx, owner, ctx, by_mrtr);
                }
            }
        }
    }

    /// Keep a paused program for its answering round and ask the client: an MRTR input request
    /// (2026-07-28 with elicitation) or a single-use token.
    fn park(
        &self,
        paused: Box<dyn PausedCode>,
        code: String,
        tx: Option<Arc<PlotTransaction>>,
        owner: String,
        ctx: &RequestContext<RoleServer>,
        by_mrtr: bool,
    ) -> CallToolResponse {
        let digest = pause_digest(paused.digest(), &owner, &code);
        let preview = with_already(paused.preview(), &paused.already());
        let bytes = code.len() + preview.title.len() + preview.body.len();
        let run = PausedRun {
            paused,
            owner,
            code,
            tx,
        };
        if let Err(too_large) = self.shared.keep_paused(digest.as_str(), run, bytes) {
            return status_result(
                format!(
                    "The program paused at a call that needs the user's confirmation, but it cannot be kept: {too_large}. It was stopped; nothing of that call ran."
                ),
                true,
                "refused",
                Some("too_large"),
            );
        }
        // Stop it at its time even if nothing else touches the table.
        let shared = self.shared.clone();
        tokio::spawn(async move {
            tokio::time::sleep(shared.confirm.ttl() + Duration::from_millis(100)).await;
            let _ = shared.paused_programs();
        });
        let _ = ctx;
        let confirm = &self.shared.confirm;
        if by_mrtr {
            let sealed = match confirm.seal(&digest) {
                Ok(s) => s,
                Err(e) => return text_result(format!("internal: {e}"), true),
            };
            let params = match elicit_params(&preview) {
                Ok(p) => p,
                Err(e) => return text_result(e.message.to_string(), true),
            };
            let mut requests = InputRequests::new();
            requests.insert(
                CONFIRM_KEY.to_owned(),
                InputRequest::Elicitation(ElicitRequest::new(params)),
            );
            return InputRequiredResult::new(Some(requests), Some(sealed)).into();
        }
        let token = confirm.mint_token(&digest);
        let minutes = (confirm.ttl().as_secs() / 60).max(1);
        let body = json!({
            "status": "waiting",
            "preview": preview_text(&preview),
            "confirm": token,
            "message": format!(
                "The program is paused at a call that needs the user's confirmation; that call has not run. Show the preview to the user. If they approve, call run_code again with exactly the same code plus \"confirm\": \"{token}\"; if they decline, with \"decline\": \"{token}\". The program then goes on from this call (declined: the call raises PermissionError there); the calls before it are not made again. Single use, valid for {minutes} minutes; after that the program is stopped."
            ),
        });
        status_result(
            serde_json::to_string_pretty(&body).unwrap_or_default(),
            false,
            "waiting",
            Some("confirmation_needed"),
        )
    }

    /// A kept paused program for this answering round: same owner, same program. A mismatch
    /// stops it (its token is spent).
    fn paused_for(
        &self,
        run: PausedRun,
        code: &str,
        owner: &str,
    ) -> Result<PausedRun, ConfirmRejected> {
        if run.code != code || run.owner != owner {
            return Err(ConfirmRejected::Mismatch);
        }
        Ok(run)
    }

    /// A program ended: its plot change (if any) is confirmed the way this client can.
    async fn finish_program(
        &self,
        envelope: Value,
        code: String,
        tx: Option<Arc<PlotTransaction>>,
        debrief: Option<&Debrief>,
        ctx: &RequestContext<RoleServer>,
    ) -> CallToolResponse {
        let succeeded = envelope.get("success").and_then(Value::as_bool) == Some(true);
        let commit = tx.as_ref().filter(|_| succeeded).and_then(|t| t.finish());
        let (Some(commit), Some(tx)) = (commit, tx) else {
            return envelope_result(envelope);
        };
        self.commit_program(commit, tx.session().clone(), code, envelope, debrief, ctx)
            .await
    }

    fn commit_gate<'a>(&self, sink: &'a dyn TelemetrySink, identity: &'a str) -> CommitGate<'a> {
        CommitGate {
            sink,
            surface: RUN_CODE_SURFACE,
            active_model: identity,
            mode: Mode::Strict,
        }
    }

    /// Preview a finished program's net change once and have it confirmed the way this client
    /// can: legacy elicitation now; otherwise keep the change and ask by MRTR or token.
    async fn commit_program(
        &self,
        commit: Commit,
        session: Arc<Mutex<Session>>,
        code: String,
        envelope: Value,
        debrief: Option<&Debrief>,
        ctx: &RequestContext<RoleServer>,
    ) -> CallToolResponse {
        let identity = Self::identity(ctx);
        if Self::can_elicit(ctx) && !Self::is_modern(ctx) {
            let confirmer = Elicit {
                peer: ctx.peer.clone(),
                timeout: self.shared.elicit_timeout,
            };
            let gate = self.commit_gate(self.shared.sink.as_ref(), &identity);
            let committed = commit.invoke(&session, &gate, &confirmer).await;
            return commit_result(envelope, &commit, &committed, debrief);
        }
        // Out of band: the first round only previews (it is not the commit's record; the
        // round that answers is).
        let recording = Recording::default();
        let committed = commit
            .invoke(
                &session,
                &self.commit_gate(&NullSink, &identity),
                &recording,
            )
            .await;
        let Some(asked) = recording.take() else {
            return commit_result(envelope, &commit, &committed, debrief);
        };
        let confirm = &self.shared.confirm;
        let plot_id = commit.plot_id.clone();
        if let Err(too_large) = self.shared.keep_pending(
            asked.digest.as_str(),
            PendingCommit {
                commit,
                session,
                code,
                envelope: envelope.clone(),
                expires: Instant::now() + crate::confirm::CONFIRM_TTL,
            },
        ) {
            let mut envelope = envelope;
            attach_report(
                &mut envelope,
                json!({"status": "not_applied", "plot": plot_id, "message": too_large.to_string()}),
            );
            let text = serde_json::to_string_pretty(&envelope).unwrap_or_default();
            return reply_result(Reply::refused(Refusal::new(
                RefusalKind::Confirmation,
                text,
            )));
        }
        if Self::can_elicit(ctx) {
            let sealed = match confirm.seal(&asked.digest) {
                Ok(s) => s,
                Err(e) => return text_result(format!("internal: {e}"), true),
            };
            let params = match elicit_params(&asked.preview) {
                Ok(p) => p,
                Err(e) => return text_result(e.message.to_string(), true),
            };
            let mut requests = InputRequests::new();
            requests.insert(
                CONFIRM_KEY.to_owned(),
                InputRequest::Elicitation(ElicitRequest::new(params)),
            );
            return InputRequiredResult::new(Some(requests), Some(sealed)).into();
        }
        let token = confirm.mint_token(&asked.digest);
        let mut envelope = envelope;
        attach_report(
            &mut envelope,
            json!({
                "status": "confirmation_needed",
                "plot": plot_id,
                "preview": preview_text(&asked.preview),
                "confirm": token,
                "message": format!(
                    "Confirmation needed — the program ran, but its plot edits have not been applied yet. Show the preview to the user. Only if they approve, call run_code again with exactly the same code plus \"confirm\": \"{token}\" (single use, valid for {} minutes; the program does not run again — the previewed change is applied). If they decline, do nothing.",
                    crate::confirm::CONFIRM_TTL.as_secs() / 60
                ),
            }),
        );
        envelope_result(envelope)
    }

    /// A kept commit for this confirming call: same program, same session.
    fn pending_for(
        &self,
        digest: &str,
        code: &str,
        debrief: Option<&Debrief>,
    ) -> Result<PendingCommit, crate::confirm::ConfirmRejected> {
        let pending = match self.shared.take_pending(digest) {
            Taken::Found(p) => p,
            Taken::Evicted => return Err(crate::confirm::ConfirmRejected::Evicted),
            Taken::Gone => return Err(crate::confirm::ConfirmRejected::Expired),
        };
        let same_session =
            debrief.is_some_and(|d| Arc::ptr_eq(&d.session_handle(), &pending.session));
        if pending.code != code || !same_session {
            return Err(crate::confirm::ConfirmRejected::Mismatch);
        }
        Ok(pending)
    }

    async fn confirm_by_mrtr(
        &self,
        sealed: &str,
        responses: Option<&rmcp::model::InputResponses>,
        code: &str,
        owner: &str,
        debrief: Option<&Debrief>,
        ctx: &RequestContext<RoleServer>,
    ) -> CallToolResponse {
        let confirm = &self.shared.confirm;
        let state = match confirm.open(sealed) {
            Ok(s) => s,
            Err(e) => return rejected(&e),
        };
        if !confirm.consume(&state) {
            return rejected(&ConfirmRejected::Replayed);
        }
        let response = responses
            .and_then(|r| r.get(CONFIRM_KEY))
            .and_then(|v| serde_json::from_value::<ElicitResult>(v.clone()).ok());
        let approved = response.as_ref().is_some_and(accepted);
        match self.shared.take_paused(&state.digest) {
            Taken::Found(run) => {
                let run = match self.paused_for(run, code, owner) {
                    Ok(r) => r,
                    Err(e) => return rejected(&e),
                };
                // Dismissed (`cancel`) or unanswered: nobody decided, so nothing is declined —
                // the program stays paused and the client gets a token to answer later.
                let Some(answer) = response.as_ref().and_then(answer_of) else {
                    return self.park(run.paused, run.code, run.tx, run.owner, ctx, false);
                };
                let progress = run.paused.resume(answer).await;
                return self
                    .continue_program(progress, run.code, run.tx, run.owner, debrief, ctx)
                    .await;
            }
            Taken::Evicted => return rejected(&ConfirmRejected::Evicted),
            Taken::Gone => {}
        }
        let pending = match self.pending_for(&state.digest, code, debrief) {
            Ok(p) => p,
            Err(e) => return rejected(&e),
        };
        let identity = Self::identity(ctx);
        let gate = self.commit_gate(self.shared.sink.as_ref(), &identity);
        let committed = if approved {
            let confirmer = ApprovedDigest::new(state.digest);
            pending
                .commit
                .invoke(&pending.session, &gate, &confirmer)
                .await
        } else {
            pending
                .commit
                .invoke(&pending.session, &gate, &Fixed(Answer::Decline))
                .await
        };
        commit_result(pending.envelope, &pending.commit, &committed, debrief)
    }

    async fn confirm_by_token(
        &self,
        token: &str,
        answer: Answer,
        code: &str,
        owner: &str,
        debrief: Option<&Debrief>,
        ctx: &RequestContext<RoleServer>,
    ) -> CallToolResponse {
        let confirm = &self.shared.confirm;
        let digest = match confirm.token_digest(token) {
            Ok(d) => d,
            Err(e) => return rejected(&e),
        };
        match self.shared.take_paused(&digest) {
            Taken::Found(run) => {
                // Single use, whatever follows.
                confirm.revoke_token(token);
                let run = match self.paused_for(run, code, owner) {
                    Ok(r) => r,
                    Err(e) => return rejected(&e),
                };
                let progress = run.paused.resume(answer).await;
                return self
                    .continue_program(progress, run.code, run.tx, run.owner, debrief, ctx)
                    .await;
            }
            Taken::Evicted => {
                confirm.revoke_token(token);
                return rejected(&ConfirmRejected::Evicted);
            }
            Taken::Gone => {}
        }
        let pending = match self.pending_for(&digest, code, debrief) {
            Ok(p) => p,
            Err(e) => {
                // The token is single-use: a wrong attempt consumes it.
                confirm.revoke_token(token);
                return rejected(&e);
            }
        };
        let identity = Self::identity(ctx);
        let gate = self.commit_gate(self.shared.sink.as_ref(), &identity);
        if answer != Answer::Approve {
            confirm.revoke_token(token);
            let committed = pending
                .commit
                .invoke(&pending.session, &gate, &Fixed(Answer::Decline))
                .await;
            return commit_result(pending.envelope, &pending.commit, &committed, debrief);
        }
        let confirmer = TokenConfirmer::new(confirm, token);
        let committed = pending
            .commit
            .invoke(&pending.session, &gate, &confirmer)
            .await;
        if let Some(e) = confirmer.rejection() {
            return rejected(&e);
        }
        commit_result(pending.envelope, &pending.commit, &committed, debrief)
    }
}

/// The run_code result: the envelope as JSON text; `isError` (and the `_meta` status) from
/// whether the program succeeded.
fn envelope_result(envelope: Value) -> CallToolResponse {
    let ok = envelope.get("success").and_then(Value::as_bool) == Some(true);
    let text = serde_json::to_string_pretty(&envelope).unwrap_or_default();
    reply_result(if ok {
        Reply::ok(text)
    } else {
        Reply::failed(Failure::new(FailureKind::Tool, text))
    })
}

/// What the activity log says for an applied program: "run_code: " and its edits (at most three
/// named, then how many more).
fn commit_activity_label(commit: &Commit) -> String {
    let mut what = commit
        .edits
        .iter()
        .take(3)
        .cloned()
        .collect::<Vec<_>>()
        .join("; ");
    if commit.edits.len() > 3 {
        what.push_str(&format!("; and {} more", commit.edits.len() - 3));
    }
    if what.is_empty() {
        what = commit.change.label.clone();
    }
    format!("run_code: {what}")
}

/// The run_code result after the program's commit: the envelope with the commit's report under
/// `plot`; the status is the commit's (a decline is an answer, not an error; a refusal or a
/// failure to apply is).
fn commit_result(
    mut envelope: Value,
    commit: &Commit,
    committed: &Committed,
    debrief: Option<&Debrief>,
) -> CallToolResponse {
    attach_report(&mut envelope, committed.report(&commit.plot_id));
    // The activity log names the client (the call runs `acting_as` it) and the program's edits,
    // so a person sees on the page what an agent's program did, as for a single tool call.
    if let (Committed::Applied { .. }, Some(debrief)) = (committed, debrief) {
        debrief.note_activity(
            None,
            toolgate_plot::activity::Action::Edit,
            &commit.plot_id,
            &commit_activity_label(commit),
        );
    }
    let text = serde_json::to_string_pretty(&envelope).unwrap_or_default();
    reply_result(match committed {
        Committed::NoChanges | Committed::Applied { .. } => Reply::ok(text),
        Committed::Declined { .. } => Reply::declined(text),
        Committed::Refused(r) => Reply::refused(Refusal::new(r.kind, text)),
        Committed::Failed(f) => Reply::failed(Failure::new(f.kind, text)),
    })
}

/// A confirming call whose token or MRTR state was not accepted: nothing was applied.
fn rejected(e: &ConfirmRejected) -> CallToolResponse {
    if matches!(e, ConfirmRejected::Expired | ConfirmRejected::Evicted) {
        return status_result(e.to_string(), true, "refused", Some("expired"));
    }
    reply_result(Reply::refused(Refusal::new(
        RefusalKind::Confirmation,
        e.to_string(),
    )))
}

/// A result with its typed status in `_meta` ([`STATUS_META`]) spelled out: `waiting` (a
/// paused program), or a refusal whose reason the [`Status`] type does not name (`expired`).
fn status_result(
    text: impl Into<String>,
    is_error: bool,
    status: &str,
    reason: Option<&str>,
) -> CallToolResponse {
    let content = vec![ContentBlock::text(text.into())];
    let mut result = if is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    let mut meta = rmcp::model::MetaObject::new();
    meta.0.insert(
        STATUS_META.to_owned(),
        json!({"status": status, "reason": reason, "dataset": Value::Null}),
    );
    result.meta = Some(meta);
    result.into()
}

/// The preview of a paused call with what the program did before it.
fn with_already(preview: &Preview, already: &str) -> Preview {
    let mut p = preview.clone();
    p.body
        .push_str(&format!("\n\nThe program paused here; {already}."));
    p
}

/// What an elicitation answer decides: approve, decline, or nothing (`cancel`: dismissed).
fn answer_of(r: &ElicitResult) -> Option<Answer> {
    match r.action {
        ElicitationAction::Accept if accepted(r) => Some(Answer::Approve),
        ElicitationAction::Accept | ElicitationAction::Decline => Some(Answer::Decline),
        _ => None,
    }
}

fn accepted(r: &ElicitResult) -> bool {
    r.action == ElicitationAction::Accept
        && r.content
            .as_ref()
            .and_then(|c| c.get("approve"))
            .and_then(Value::as_bool)
            != Some(false)
}

/// The `_meta` key under which a Debrief tool result carries its typed status
/// (`{"status": "refused", "reason": "no_plot", "dataset": "result-1"}`), for clients that want
/// more than `isError`.
pub const STATUS_META: &str = "io.toolgate/status";

/// A Debrief reply as an MCP result: `isError` from its status (refused and failed are errors; a
/// person's decline is an answer), the status itself in `_meta`.
fn reply_result(reply: Reply) -> CallToolResponse {
    let status = serde_json::json!({
        "status": reply.status,
        "reason": reply.reason,
        "dataset": reply.dataset,
    });
    let content = vec![ContentBlock::text(reply.text)];
    let mut result = if reply.status.is_error() {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    let mut meta = rmcp::model::MetaObject::new();
    meta.0.insert(STATUS_META.to_owned(), status);
    result.meta = Some(meta);
    result.into()
}

/// The typed status a [`reply_result`] put in `_meta`.
fn typed_status(r: &CallToolResult) -> Option<(Status, Option<String>)> {
    let v = r.meta.as_ref()?.0.get(STATUS_META)?;
    let status = serde_json::from_value(v.get("status")?.clone()).ok()?;
    let reason = v.get("reason").and_then(Value::as_str).map(str::to_owned);
    Some((status, reason))
}

/// A direct tool's failure as an MCP result: with the gate's typed status in `_meta` and
/// `isError` from it when the gate ended the call, else a plain error.
fn direct_error_result(e: DirectError) -> CallToolResponse {
    let Some(status) = e.status else {
        return text_result(e.message, true);
    };
    let content = vec![ContentBlock::text(e.message)];
    let mut result = if status.is_error() {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    let mut meta = rmcp::model::MetaObject::new();
    meta.0.insert(
        STATUS_META.to_owned(),
        json!({"status": status, "reason": e.reason, "dataset": Value::Null}),
    );
    result.meta = Some(meta);
    result.into()
}

fn text_result(text: impl Into<String>, is_error: bool) -> CallToolResponse {
    let content = vec![ContentBlock::text(text.into())];
    if is_error {
        CallToolResult::error(content).into()
    } else {
        CallToolResult::success(content).into()
    }
}

fn preview_text(preview: &Preview) -> String {
    format!("{}\n\n{}", preview.title, preview.body)
}

fn token_request(preview: &Preview, token: &str) -> String {
    format!(
        "Confirmation needed — nothing has been changed yet.\n\n{}\n\nShow this preview to the user. Only if they approve, call debrief_runTool again with exactly the same arguments plus \"confirm\": \"{token}\" (single use, valid for {} minutes, only for this exact change on this version of the plot). If they decline, do nothing.",
        preview_text(preview),
        crate::confirm::CONFIRM_TTL.as_secs() / 60
    )
}

fn elicit_params(preview: &Preview) -> Result<ElicitRequestParams, ErrorData> {
    let schema: ElicitationSchema = serde_json::from_value(json!({
        "type": "object",
        "properties": {
            "approve": {"type": "boolean", "title": "Apply this change?", "default": true}
        },
        "required": ["approve"]
    }))
    .map_err(|e| ErrorData::internal_error(format!("elicitation schema: {e}"), None))?;
    Ok(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: preview_text(preview),
        requested_schema: schema,
    })
}

/// Legacy elicitation: asks over the open session and waits (bounded). Anything but an explicit
/// approval declines (fail closed).
struct Elicit {
    peer: Peer<RoleServer>,
    timeout: Duration,
}

#[async_trait]
impl Confirmer for Elicit {
    async fn confirm(&self, preview: &Preview) -> Answer {
        let Ok(params) = elicit_params(preview) else {
            return Answer::Decline;
        };
        match self
            .peer
            .create_elicitation_with_timeout(params, Some(self.timeout))
            .await
        {
            Ok(result) if accepted(&result) => Answer::Approve,
            Ok(_) => Answer::Decline,
            Err(e) => {
                tracing::warn!(error = %e, "elicitation failed; declining");
                Answer::Decline
            }
        }
    }
}

impl rmcp::ServerHandler for ToolgateServer {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("toolgate", env!("CARGO_PKG_VERSION")));
        let mut instructions = String::new();
        if self.shared.surface.has_debrief() {
            instructions.push_str("Debrief plots: search (debrief_searchPlots, open:true), summarise (debrief_summarizeCurrentPlot), list tools (debrief_listTools), then run one (debrief_runTool). Edits are previewed, need the user's confirmation and stay unsaved until the user saves. ");
        }
        if self.shared.surface.has_codeact() {
            instructions.push_str("run_code: write one Python program that calls tools as functions instead of many tool calls.");
        }
        info = info.with_instructions(instructions.trim().to_owned());
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.shared.tools.clone()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.shared.tools.iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let started = Instant::now();
        let name = request.name.to_string();
        if !self.shared.tools.iter().any(|t| t.name == name) {
            let known: Vec<&str> = self.shared.tools.iter().map(|t| t.name.as_ref()).collect();
            return Err(ErrorData::invalid_params(
                format!(
                    "Unknown tool \"{name}\". This server's tools are: {}.",
                    known.join(", ")
                ),
                None,
            ));
        }
        let args = request.arguments.clone().unwrap_or_default();
        let mut checked = args.clone();
        checked.remove(CONFIRM_ARG);
        let invalid = self
            .shared
            .validators
            .iter()
            .find(|(id, _)| *id == name)
            .and_then(|(_, v)| v.validate(&checked).err())
            .map(|problems| format!("Invalid arguments for {name}: {}", problems.join("; ")));
        let response = if let Some(message) = invalid {
            Ok(reply_result(Reply::refused(toolgate_core::Refusal::new(
                toolgate_core::RefusalKind::InvalidParameters,
                message,
            ))))
        } else if name == RUN_CODE {
            // The activity log names the client for the program's applied plot edits.
            acting_as(
                Self::identity(&context),
                self.run_code(
                    args.clone(),
                    request.request_state.clone(),
                    request.input_responses.as_ref(),
                    &context,
                ),
            )
            .await
        } else if let (Some(direct), true) =
            (&self.shared.direct, self.shared.direct_ids.contains(&name))
        {
            let confirmer: Arc<dyn Confirmer> =
                if !Self::is_modern(&context) && Self::can_elicit(&context) {
                    Arc::new(Elicit {
                        peer: context.peer.clone(),
                        timeout: self.shared.elicit_timeout,
                    })
                } else {
                    // Nobody can be asked inline: the call is refused as unasked, never
                    // reported as the user's decline (run_code pauses for a token instead).
                    Arc::new(Fixed(Answer::Unasked))
                };
            match direct.call(&name, args.clone(), confirmer).await {
                Ok(v) => Ok(text_result(
                    match v {
                        Value::String(s) => s,
                        other => serde_json::to_string_pretty(&other).unwrap_or_default(),
                    },
                    false,
                )),
                Err(e) => Ok(direct_error_result(e)),
            }
        } else {
            let debrief = self.session_for(&context);
            if name == debrief::RUN_TOOL {
                // The activity log names the client for whatever this call applies.
                let who = Self::identity(&context);
                acting_as(
                    who,
                    self.run_tool(
                        &debrief,
                        args.clone(),
                        request.request_state.clone(),
                        request.input_responses.as_ref(),
                        &context,
                    ),
                )
                .await
            } else {
                // Read tools never need a confirmation; the confirmer is never asked.
                match debrief
                    .call(&name, &Value::Object(args.clone()), &Fixed(Answer::Decline))
                    .await
                {
                    Ok(reply) => Ok(reply_result(reply)),
                    Err(refusal) => Ok(text_result(refusal.message, true)),
                }
            }
        };
        let outcome = match &response {
            Ok(CallToolResponse::Complete(r)) => match typed_status(r) {
                Some((Status::Ok, _)) => Outcome::ok(),
                Some((status, reason)) => Outcome::typed(status, reason.as_deref(), first_text(r)),
                None if r.is_error == Some(true) => Outcome::error(first_text(r)),
                None => Outcome::ok(),
            },
            Ok(_) => Outcome::ok(),
            Err(e) => Outcome::error(e.message.to_string()),
        };
        let mut logged = args;
        logged.remove(CONFIRM_ARG);
        self.record(&context, &name, &logged, outcome, started);
        response
    }
}

fn first_text(r: &CallToolResult) -> String {
    r.content
        .iter()
        .find_map(|c| c.as_text().map(|t| t.text.clone()))
        .unwrap_or_default()
}
