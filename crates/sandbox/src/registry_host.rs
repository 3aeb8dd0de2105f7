//! A [`ToolHost`] over the core registry: every call takes the core's flow
//! (`toolgate_core::flow::Gate`: resolve → validate → policy → confirm → provider → guard →
//! telemetry).
//!
//! The gate's typed outcome (`Refusal` kind, `Failure` with the provider's `CallError`) picks
//! the Python exception type; no message text is inspected.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Map, Value, json};
use toolgate_core::flow::{Confirmer, Ended, Gate, Prepared};
use toolgate_core::policy::{Approvals, Mode};
use toolgate_core::telemetry::{NullSink, TelemetrySink};
use toolgate_core::{
    CallError, ChangeSet, Failure, FailureKind, RefusalKind, Registry, RegistryError, Status,
    ToolCall, ToolSpec,
};

use crate::host::{HostError, PyExc, ToolHost};
use crate::pause::PauseClock;
use crate::stubs::python_identifier;

/// The provider whose tools a person granted by choosing the workspace (`toolgate exec
/// --workspace DIR`); its calls run pre-approved.
pub const WORKSPACE_PROVIDER: &str = "workspace";

tokio::task_local! {
    static CALLING_HOST: Arc<dyn ToolHost>;
}

/// The host whose tool call is running on this task, when that host was made with
/// [`RegistryHost::shared`]. A provider that runs a nested program (a custom Python tool) uses
/// it so the nested program's tool calls take the same registry, policy and confirmer.
pub fn calling_host() -> Option<Arc<dyn ToolHost>> {
    CALLING_HOST.try_with(Arc::clone).ok()
}

struct Entry {
    python: String,
    id: String,
    provider: String,
    /// (Python keyword, schema property), in declared order.
    params: Vec<(String, String)>,
    target_param: Option<String>,
}

type Applier = Arc<dyn Fn(&ChangeSet) -> Result<(), Failure> + Send + Sync>;

/// Runs sandbox tool calls through the registry and the policy.
///
/// Policy: tools of the providers named by [`RegistryHost::auto_approve_provider`] (by default
/// [`WORKSPACE_PROVIDER`]) run under [`Mode::AutoApprove`] and are recorded as pre-approved;
/// every other tool runs under [`Mode::Strict`]: reads run, anything else asks the confirmer.
///
/// Errors become Python exceptions: an unknown tool → `NameError` listing the tools; invalid
/// parameters → `ValueError` with the core's message; `CallError::NotFound` →
/// `FileNotFoundError`, `AlreadyExists` → `FileExistsError`, `PermissionDenied` →
/// `PermissionError`, `InvalidInput` → `ValueError`, `Timeout` → `TimeoutError`, anything
/// else → `RuntimeError`; a declined confirmation or a policy refusal → `PermissionError`.
pub struct RegistryHost {
    registry: Arc<Registry>,
    entries: Vec<Entry>,
    by_python: HashMap<String, usize>,
    confirmer: Arc<dyn Confirmer>,
    approvals: Approvals,
    sink: Arc<dyn TelemetrySink>,
    surface: String,
    active_model: String,
    priming_enabled: bool,
    auto_approve: Vec<String>,
    /// Tool ids that ask the confirmer even when their provider is pre-approved.
    confirm_tools: Vec<String>,
    call_timeout: Option<Duration>,
    applier: Option<Applier>,
    /// (Python name, reason) of the tools the registry's filter hides.
    unavailable: Vec<(String, String)>,
    /// Set by [`RegistryHost::shared`]: lets providers reach this host ([`calling_host`]).
    this: Weak<RegistryHost>,
    /// Where waits for a person are timed ([`RegistryHost::with_pause_clock`]).
    pause_clock: Option<Arc<PauseClock>>,
    /// What the program's calls did so far, for a confirmation's "already done" lines.
    done: Mutex<CallLog>,
}

/// The calls a program made so far: how many, and the last [`CallLog::KEPT`] in words.
#[derive(Debug, Default, Clone)]
pub struct CallLog {
    pub count: usize,
    pub recent: std::collections::VecDeque<String>,
}

impl CallLog {
    pub const KEPT: usize = 10;

    fn push(&mut self, line: String) {
        self.count += 1;
        if self.recent.len() == Self::KEPT {
            self.recent.pop_front();
        }
        self.recent.push_back(line);
    }

    /// "2 calls so far: create(a.txt) ok; view(a.txt) ok", or "no calls so far".
    pub fn describe(&self) -> String {
        if self.count == 0 {
            return "no tool calls before this one".to_owned();
        }
        let earlier = self.count - self.recent.len();
        let mut s = format!(
            "{} tool call{} before this one: ",
            self.count,
            if self.count == 1 { "" } else { "s" }
        );
        if earlier > 0 {
            s.push_str(&format!("… {earlier} earlier; "));
        }
        s.push_str(&self.recent.iter().cloned().collect::<Vec<_>>().join("; "));
        s
    }
}

impl RegistryHost {
    /// A host over every tool the registry shows. `confirmer` answers for calls that need a
    /// person's approval.
    pub fn new(
        registry: Arc<Registry>,
        confirmer: Arc<dyn Confirmer>,
    ) -> Result<Self, RegistryError> {
        let mut groups: Vec<(String, Vec<ToolSpec>)> = Vec::new();
        for spec in registry.specs() {
            let provider = registry.resolve(&spec.id)?.provider_name().to_owned();
            match groups.iter_mut().find(|(p, _)| *p == provider) {
                Some((_, specs)) => specs.push(spec.clone()),
                None => groups.push((provider, vec![spec.clone()])),
            }
        }
        let mut entries = Vec::new();
        let mut by_python = HashMap::new();
        for (provider, specs) in groups {
            for spec in &specs {
                let python = python_identifier(&spec.id);
                if by_python.contains_key(&python) {
                    tracing::warn!(tool = %spec.id, python = %python, "tool hidden from the sandbox: its Python name is taken");
                    continue;
                }
                let params: Vec<(String, String)> = spec
                    .params()
                    .into_iter()
                    .map(|p| (python_identifier(&p.name), p.name))
                    .collect();
                let target_param = ["path", "file", "target", "name", "url", "command"]
                    .iter()
                    .find(|t| params.iter().any(|(_, s)| s == *t))
                    .map(|t| (*t).to_owned());
                by_python.insert(python.clone(), entries.len());
                entries.push(Entry {
                    python,
                    id: spec.id.clone(),
                    provider: provider.clone(),
                    params,
                    target_param,
                });
            }
        }
        let unavailable = registry
            .disabled_ids()
            .into_iter()
            .filter_map(|id| {
                let reason = registry.resolve(&id).err()?.to_string();
                Some((python_identifier(&id), reason))
            })
            .filter(|(python, _)| !by_python.contains_key(python))
            .collect();
        Ok(Self {
            registry,
            entries,
            by_python,
            confirmer,
            approvals: Approvals::none(),
            sink: Arc::new(NullSink),
            surface: "sandbox".to_owned(),
            active_model: "unknown".to_owned(),
            priming_enabled: false,
            auto_approve: vec![WORKSPACE_PROVIDER.to_owned()],
            confirm_tools: Vec::new(),
            call_timeout: None,
            applier: None,
            unavailable,
            this: Weak::new(),
            pause_clock: None,
            done: Mutex::new(CallLog::default()),
        })
    }

    /// This host behind an `Arc`, published to the providers it calls through
    /// [`calling_host`] (custom Python tools need it to run their nested programs).
    pub fn shared(self) -> Arc<Self> {
        Arc::new_cyclic(|this| Self {
            this: this.clone(),
            ..self
        })
    }

    /// Time this host's waits for a person on `clock`, so the program's deadlines do not count
    /// them (the confirmer that waits shares the clock; see [`PauseClock`]).
    #[must_use]
    pub fn with_pause_clock(mut self, clock: Arc<PauseClock>) -> Self {
        self.pause_clock = Some(clock);
        self
    }

    /// The calls made through this host so far.
    pub fn calls_so_far(&self) -> CallLog {
        self.done.lock().map(|d| d.clone()).unwrap_or_default()
    }

    /// Where telemetry records go (default: dropped).
    #[must_use]
    pub fn with_sink(mut self, sink: Arc<dyn TelemetrySink>) -> Self {
        self.sink = sink;
        self
    }

    /// Approvals already given (e.g. one batch approval for a program's plan).
    #[must_use]
    pub fn with_approvals(mut self, approvals: Approvals) -> Self {
        self.approvals = approvals;
        self
    }

    /// The surface telemetry records name (default `sandbox`).
    #[must_use]
    pub fn with_surface(mut self, surface: impl Into<String>) -> Self {
        self.surface = surface.into();
        self
    }

    #[must_use]
    pub fn with_active_model(mut self, model: impl Into<String>) -> Self {
        self.active_model = model.into();
        self
    }

    #[must_use]
    pub fn with_priming(mut self, enabled: bool) -> Self {
        self.priming_enabled = enabled;
        self
    }

    /// Run this provider's tools pre-approved (in addition to [`WORKSPACE_PROVIDER`]).
    #[must_use]
    pub fn auto_approve_provider(mut self, provider: impl Into<String>) -> Self {
        self.auto_approve.push(provider.into());
        self
    }

    /// Ask the confirmer for this tool (by id) even when its provider is pre-approved: over MCP
    /// the client, not the person, chose the program, so `bash` is confirmed call by call.
    #[must_use]
    pub fn confirm_tool(mut self, tool_id: impl Into<String>) -> Self {
        self.confirm_tools.push(tool_id.into());
        self
    }

    /// Run every tool under strict policy, the workspace's included.
    #[must_use]
    pub fn without_auto_approval(mut self) -> Self {
        self.auto_approve.clear();
        self
    }

    /// The per-call deadline providers receive in [`ToolCall::timeout`].
    #[must_use]
    pub fn with_call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout = Some(timeout);
        self
    }

    /// Who applies an approved change set (a document session). Without one, a tool result
    /// that carries changes fails with `RuntimeError`: the sandbox has no document to change.
    #[must_use]
    pub fn with_applier(
        mut self,
        apply: impl Fn(&ChangeSet) -> Result<(), Failure> + Send + Sync + 'static,
    ) -> Self {
        self.applier = Some(Arc::new(apply));
        self
    }

    /// Names a program cannot call on this host although a surface knows them (the plot
    /// functions when no plot is open), each with the reason its `NameError` gives.
    #[must_use]
    pub fn with_unavailable(mut self, names: impl IntoIterator<Item = (String, String)>) -> Self {
        for (name, reason) in names {
            if !self.by_python.contains_key(&name) {
                self.unavailable.push((name, reason));
            }
        }
        self
    }

    fn listed(&self) -> String {
        let mut names: Vec<&str> = self.entries.iter().map(|e| e.python.as_str()).collect();
        names.sort_unstable();
        if names.is_empty() {
            "(none)".to_owned()
        } else {
            names.join(", ")
        }
    }
}

#[async_trait]
impl ToolHost for RegistryHost {
    fn tool_names(&self) -> Vec<String> {
        self.entries.iter().map(|e| e.python.clone()).collect()
    }

    fn param_names(&self, tool: &str) -> Option<Vec<String>> {
        let entry = &self.entries[*self.by_python.get(tool)?];
        Some(entry.params.iter().map(|(py, _)| py.clone()).collect())
    }

    fn unavailable_tools(&self) -> Vec<(String, String)> {
        self.unavailable.clone()
    }

    fn pause_clock(&self) -> Option<Arc<PauseClock>> {
        self.pause_clock.clone()
    }

    async fn call(&self, name: &str, args: Map<String, Value>) -> Result<Value, HostError> {
        match self.this.upgrade() {
            Some(me) => {
                let me: Arc<dyn ToolHost> = me;
                CALLING_HOST.scope(me, self.call_inner(name, args)).await
            }
            None => self.call_inner(name, args).await,
        }
    }
}

impl RegistryHost {
    async fn call_inner(&self, name: &str, args: Map<String, Value>) -> Result<Value, HostError> {
        let Some(entry) = self.by_python.get(name).map(|&i| &self.entries[i]) else {
            if let Some((_, reason)) = self.unavailable.iter().find(|(n, _)| n == name) {
                return Err(HostError::new(
                    PyExc::NameError,
                    format!("name '{name}' is not defined: {reason}"),
                ));
            }
            return Err(HostError::new(
                PyExc::NameError,
                format!(
                    "name '{name}' is not defined. Available tools: {}",
                    self.listed()
                ),
            ));
        };
        let params: Map<String, Value> = args
            .into_iter()
            .map(|(k, v)| {
                let schema_name = entry
                    .params
                    .iter()
                    .find(|(py, _)| *py == k)
                    .map_or(k, |(_, s)| s.clone());
                (schema_name, v)
            })
            .collect();
        let mode = if self.auto_approve.contains(&entry.provider)
            && !self.confirm_tools.contains(&entry.id)
        {
            Mode::AutoApprove
        } else {
            Mode::Strict
        };
        let gate = Gate {
            registry: &self.registry,
            mode,
            approvals: &self.approvals,
            sink: self.sink.as_ref(),
            surface: &self.surface,
            active_model: &self.active_model,
            priming_enabled: self.priming_enabled,
            record_as: None,
        };
        let target = entry
            .target_param
            .as_ref()
            .and_then(|p| params.get(p))
            .map_or_else(
                || "the parameters below".to_owned(),
                |v| v.as_str().map_or_else(|| v.to_string(), str::to_owned),
            );
        let document = if entry.provider == WORKSPACE_PROVIDER {
            "the workspace".to_owned()
        } else {
            format!("\"{}\" tools", entry.provider)
        };
        let call_timeout = self.call_timeout;
        let prepare = move |tool: &toolgate_core::ResolvedTool<'_>,
                            validated: Map<String, Value>| {
            Ok(Prepared {
                call: ToolCall {
                    tool_id: tool.spec.id.clone(),
                    params: validated,
                    subject: Value::Null,
                    timeout: call_timeout,
                },
                document_title: Some(document),
                target,
                context: json!({"surface": "sandbox"}),
                consequence: Some(
                    "It runs as soon as you approve it, as one step of a CodeAct program."
                        .to_owned(),
                ),
            })
        };
        let applier = self.applier.clone();
        let apply = move |cs: &ChangeSet| match &applier {
            Some(apply) => apply(cs),
            None => Err(Failure::new(
                FailureKind::Apply,
                format!(
                    "the tool returned changes ({}) and this sandbox has no document to apply them to",
                    if cs.label.is_empty() {
                        "unlabelled"
                    } else {
                        &cs.label
                    }
                ),
            )),
        };
        let input = Value::Object(params.clone());
        let said = format!(
            "{}({})",
            entry.python,
            core_clip(&target_said(entry, &params))
        );
        let ended = gate
            .invoke(
                &entry.id,
                &params,
                input,
                prepare,
                self.confirmer.as_ref(),
                apply,
            )
            .await;
        if let Ok(mut done) = self.done.lock() {
            done.push(format!("{said} {}", ended.status().as_str()));
        }
        match ended {
            Ended::Done { outcome, .. } => Ok(if outcome.data.is_null() {
                Value::String(outcome.summary)
            } else {
                outcome.data
            }),
            Ended::Declined { .. } => Err(HostError::new(
                PyExc::PermissionError,
                format!(
                    "Tool \"{}\" was declined by the user; nothing ran. Do not retry it: continue without it or ask the user.",
                    entry.python
                ),
            )
            .ended(Status::Declined, None)),
            Ended::Refused(refusal) => Err(HostError::new(
                match refusal.kind {
                    RefusalKind::UnknownTool => PyExc::NameError,
                    RefusalKind::InvalidParameters => PyExc::ValueError,
                    RefusalKind::Target => PyExc::ValueError,
                    _ => PyExc::PermissionError,
                },
                refusal.message,
            )
            .ended(Status::Refused, Some(refusal.kind.as_str()))),
            Ended::Failed(failure) => Err(match (&failure.call_error, failure.kind) {
                (Some(e), _) => call_error_to_host(e),
                (None, FailureKind::Guard) => {
                    HostError::new(PyExc::PermissionError, failure.message)
                }
                (None, _) => HostError::new(PyExc::RuntimeError, failure.message),
            }
            .ended(Status::Failed, Some(failure.kind.as_str()))),
        }
    }
}

/// The target a call names (its path, command, …) for the call log, or nothing.
fn target_said(entry: &Entry, params: &Map<String, Value>) -> String {
    entry
        .target_param
        .as_ref()
        .and_then(|p| params.get(p))
        .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
        .unwrap_or_default()
}

fn core_clip(s: &str) -> String {
    toolgate_core::clip::clip(s, 60).into_owned()
}

/// The Python exception type of a provider failure.
pub fn call_error_to_host(e: &CallError) -> HostError {
    let py_type = match e {
        CallError::NotFound { .. } => PyExc::FileNotFoundError,
        CallError::AlreadyExists { .. } => PyExc::FileExistsError,
        CallError::PermissionDenied { .. } => PyExc::PermissionError,
        CallError::InvalidInput { .. } => PyExc::ValueError,
        CallError::Timeout { .. } => PyExc::TimeoutError,
        CallError::Failed { .. } => PyExc::RuntimeError,
    };
    HostError::new(py_type, e.to_string())
}
