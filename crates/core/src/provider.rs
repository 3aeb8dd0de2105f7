//! Providers run tools; they never apply what they produce.

use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::spec::{OutputKind, ToolSpec};

/// One validated call as a provider receives it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub tool_id: String,
    /// Parameters, already validated against the tool's schema.
    pub params: Map<String, Value>,
    /// What the tool operates on, resolved by the surface before the call (for plot tools: the
    /// target features as GeoJSON). `Value::Null` when the tool needs no subject.
    #[serde(default)]
    pub subject: Value,
    /// Per-call deadline; providers that spawn processes must kill them when it passes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Duration>,
}

impl ToolCall {
    pub fn new(tool_id: impl Into<String>, params: Map<String, Value>) -> Self {
        Self {
            tool_id: tool_id.into(),
            params,
            subject: Value::Null,
            timeout: None,
        }
    }

    #[must_use]
    pub fn with_subject(mut self, subject: Value) -> Self {
        self.subject = subject;
        self
    }
}

/// One edit to a document made of identified JSON items (a plot's GeoJSON features).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Edit {
    /// Replace the item with this id (or add it when absent).
    Upsert { id: String, item: Value },
    /// Remove the item with this id.
    Remove { id: String },
}

impl Edit {
    pub fn id(&self) -> &str {
        match self {
            Edit::Upsert { id, .. } | Edit::Remove { id } => id,
        }
    }
}

/// What a mutating tool proposes. The core never applies it: only a session does, as one undo
/// step, after the policy allowed the call. A provider that wrote the document itself would
/// break the "no silent writes" promise.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ChangeSet {
    /// One line a person can read, e.g. "Trimmed NELSON to 05:10–11:41 (392 positions kept)".
    #[serde(default)]
    pub label: String,
    pub edits: Vec<Edit>,
}

impl ChangeSet {
    pub fn is_empty(&self) -> bool {
        self.edits.is_empty()
    }

    /// The distinct ids touched, in first-touched order.
    pub fn touched_ids(&self) -> Vec<&str> {
        let mut ids: Vec<&str> = Vec::with_capacity(self.edits.len());
        for e in &self.edits {
            if !ids.contains(&e.id()) {
                ids.push(e.id());
            }
        }
        ids
    }
}

/// What a provider returns for one call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolOutcome {
    /// The kind of the result actually produced (checked by the post-run guard).
    pub kind: OutputKind,
    /// A short plain-language summary a model can read.
    pub summary: String,
    /// Full result data (datasets, statistics); surfaces decide how much of it to show.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub data: Value,
    /// Present for mutations only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change_set: Option<ChangeSet>,
}

/// A tool failed while running. The message is shown to the model verbatim, so it must say what
/// went wrong and, where possible, what would work.
#[derive(Debug, Clone, PartialEq, thiserror::Error, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CallError {
    /// The input was wrong in a way only the tool could see (e.g. "No track features found in input").
    #[error("{message}")]
    InvalidInput { message: String },
    /// A file or item the call named does not exist.
    #[error("{message}")]
    NotFound { message: String },
    /// The call would create something that already exists (`create` on an existing file).
    #[error("{message}")]
    AlreadyExists { message: String },
    /// Refused by a guard (path outside the workspace, forbidden SQL, …).
    #[error("{message}")]
    PermissionDenied { message: String },
    /// The tool ran past its deadline and was stopped.
    #[error("Tool \"{tool}\" timed out after {seconds} s and was stopped.")]
    Timeout { tool: String, seconds: f64 },
    /// Anything else that went wrong while running.
    #[error("{message}")]
    Failed { message: String },
}

impl CallError {
    pub fn invalid(message: impl Into<String>) -> Self {
        CallError::InvalidInput {
            message: message.into(),
        }
    }

    pub fn failed(message: impl Into<String>) -> Self {
        CallError::Failed {
            message: message.into(),
        }
    }
}

/// Parameters put into the form a tool's schema takes, before they are validated
/// ([`Provider::normalise`]): `"90 s"` for a number of seconds, `"12 kn"` for a speed in knots,
/// `"2026-03-01 05:00"` for an ISO-8601 time.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Normalised {
    pub params: Map<String, Value>,
    /// One line per value read differently from how it was written, for the preview, e.g.
    /// `end_time: "2026-03-01 05:00" read as 2026-03-01T05:00:00Z`.
    pub notes: Vec<String>,
}

/// What a provider's check of a prepared call found before anyone is asked
/// ([`Provider::check`]).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Checked {
    /// The parameters resolved against the subject (a time of day on the plot's day becomes
    /// ISO-8601 UTC); the call runs with these and the approval is bound to them. `None`:
    /// unchanged.
    pub params: Option<Map<String, Value>>,
    /// One line per value read differently from how it was written (as [`Normalised::notes`]).
    pub notes: Vec<String>,
    /// What the call will do, in numbers, e.g. `remove 240 of 361 positions of HMS Nelson
    /// (keep 121)`; the preview shows each as an `Effect:` line.
    pub effect: Vec<String>,
    /// The dry run's outcome. A provider whose tools are pure functions of (parameters,
    /// subject) may run the call here; the gate then applies exactly this outcome after the
    /// approval instead of running the call a second time.
    pub outcome: Option<ToolOutcome>,
}

/// Why a call was stopped by its provider's check, before anyone was asked.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CheckError {
    /// Parameters that cannot be read or placed (every problem, one sentence each); the call is
    /// refused as having invalid parameters.
    #[error("{}", .0.join("; "))]
    Params(Vec<String>),
    /// The dry run failed: the call would fail if it ran.
    #[error(transparent)]
    Call(#[from] CallError),
}

/// A provider could not list its tools (a broken tool server, an unreachable upstream).
#[derive(Debug, Clone, thiserror::Error)]
#[error("provider \"{provider}\" could not list its tools: {message}")]
pub struct ProviderError {
    pub provider: String,
    pub message: String,
}

/// Where a provider's tools run, for the decisions that depend on it (a tool of an upstream MCP
/// server does not operate on a plot: no targets, no unit setting, and toolgate cannot undo it).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ToolOrigin {
    /// toolgate's own tools and the tool servers it runs for the plot (native, debrief-calc
    /// stdio, CodeAct workspace and custom tools).
    #[default]
    Toolgate,
    /// A tool of the upstream MCP server named `server` (as configured in `.mcp.json`).
    UpstreamMcp { server: String },
}

/// A source of tools: native Rust tools, an external process speaking the debrief-calc stdio
/// protocol, an upstream MCP server, the CodeAct workspace tools.
#[async_trait]
pub trait Provider: Send + Sync {
    /// A short name used in error messages (e.g. "debrief-native", "mcp:github").
    fn name(&self) -> &str;

    /// Where the tools run. Decisions read this, never [`Provider::name`] or a spec's category.
    fn origin(&self) -> ToolOrigin {
        ToolOrigin::Toolgate
    }

    /// The tools this provider offers. Called once at registration.
    async fn list_tools(&self) -> Result<Vec<ToolSpec>, ProviderError>;

    /// Whether the specs are fixed in toolgate's own code (and checked by its tests): the
    /// registry then checks and compiles a tool's schema at its first call instead of at
    /// registration, so a short process pays only for the tools it calls. Providers whose specs
    /// come from outside (configuration, another process) keep the default, `false`: their
    /// schemas are checked when they are registered.
    fn builtin_specs(&self) -> bool {
        false
    }

    /// Put parameters written for a person into the form the tool's schema takes, before they
    /// are validated (units, time formats). No subject is known yet. `Err` lists the values
    /// that cannot be read; the call is refused. Default: unchanged.
    fn normalise(
        &self,
        _tool_id: &str,
        params: &Map<String, Value>,
    ) -> Result<Normalised, Vec<String>> {
        Ok(Normalised {
            params: params.clone(),
            notes: Vec::new(),
        })
    }

    /// Resolve and check a prepared call (parameters validated, subject resolved) before the
    /// policy asks anyone: place values that need the subject (a time of day on the plot's
    /// day), and — when `dry_run` and the provider's tools are pure functions of the call — run
    /// it and say what it will change. A call stopped here never reaches a person. Default:
    /// nothing to resolve, no dry run.
    async fn check(&self, _call: &ToolCall, _dry_run: bool) -> Result<Checked, CheckError> {
        Ok(Checked::default())
    }

    /// Run one call. Parameters are already validated and the policy already decided; a
    /// provider must not apply changes itself — it returns them in [`ToolOutcome::change_set`].
    async fn call(&self, call: &ToolCall) -> Result<ToolOutcome, CallError>;
}
