//! Typed outcomes: why a call was refused or failed, carried from the step that knew it (resolve,
//! validate, the domain's prepare, policy, run, guard, apply) up to every surface, which maps the
//! kind — never the wording — to its own signal: MCP `isError`, the CLI's exit code, the
//! workbench's `status` field, the agent loop's observation, the telemetry outcome.

use serde::{Deserialize, Serialize};

use crate::provider::CallError;

/// Why a call stopped before anything ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RefusalKind {
    /// The tool id is not in the registry.
    UnknownTool,
    /// The arguments do not match the tool's schema (or the surface's input shape).
    InvalidParameters,
    /// The call needs an open plot and none is open.
    NoPlot,
    /// The plot the call named is not open (or not in the catalogue).
    UnknownPlot,
    /// The plot is open but another one has the focus.
    PlotNotFocused,
    /// The targets could not be resolved: unknown or ambiguous names, nothing selected, an
    /// empty plot, or a mutation with no target named (toolgate does not guess).
    Target,
    /// The policy denies the call (read-only mode, a deny list).
    PolicyDenied,
    /// A confirmation token or round was missing, forged, replayed or expired.
    Confirmation,
    /// No tool can run at all (an empty or broken registry).
    Unavailable,
}

impl RefusalKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RefusalKind::UnknownTool => "unknown_tool",
            RefusalKind::InvalidParameters => "invalid_parameters",
            RefusalKind::NoPlot => "no_plot",
            RefusalKind::UnknownPlot => "unknown_plot",
            RefusalKind::PlotNotFocused => "plot_not_focused",
            RefusalKind::Target => "target",
            RefusalKind::PolicyDenied => "policy_denied",
            RefusalKind::Confirmation => "confirmation",
            RefusalKind::Unavailable => "unavailable",
        }
    }
}

/// A call stopped before running, with the corrective message the model or person reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Refusal {
    pub kind: RefusalKind,
    pub message: String,
}

impl Refusal {
    pub fn new(kind: RefusalKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }
}

/// Why a call that ran did not end well.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// The tool ran and reported an error.
    Tool,
    /// The tool ran past its deadline and was stopped.
    Timeout,
    /// The post-run guard refused the result (an unconfirmed change set); nothing was applied.
    Guard,
    /// The document changed since the call was prepared; nothing was applied.
    Conflict,
    /// The change could not be applied for another reason; nothing was applied.
    Apply,
}

impl FailureKind {
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::Tool => "tool",
            FailureKind::Timeout => "timeout",
            FailureKind::Guard => "guard",
            FailureKind::Conflict => "conflict",
            FailureKind::Apply => "apply",
        }
    }
}

/// A call that ran and failed, with the provider's typed error when there was one.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct Failure {
    pub kind: FailureKind,
    pub message: String,
    /// The provider's own error, kept typed for surfaces that map it further (the sandbox turns
    /// it into a Python exception type).
    pub call_error: Option<CallError>,
}

impl Failure {
    pub fn new(kind: FailureKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            call_error: None,
        }
    }

    /// A provider's error, kept typed.
    pub fn from_call(e: CallError) -> Self {
        let kind = match e {
            CallError::Timeout { .. } => FailureKind::Timeout,
            _ => FailureKind::Tool,
        };
        Self {
            kind,
            message: e.to_string(),
            call_error: Some(e),
        }
    }
}

/// How a call ended, as every surface reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// It ran (and any change was applied).
    Ok,
    /// toolgate stopped it before it ran; the text says what would work.
    Refused,
    /// A person declined; nothing ran.
    Declined,
    /// It ran and failed, or its result could not be applied.
    Failed,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Refused => "refused",
            Status::Declined => "declined",
            Status::Failed => "failed",
        }
    }

    /// The CLI's exit code for this status (README, "Exit codes"): 0 ok, 1 failed, 3 refused,
    /// 4 declined. 2 stays clap's usage error.
    pub fn exit_code(self) -> i32 {
        match self {
            Status::Ok => 0,
            Status::Failed => 1,
            Status::Refused => 3,
            Status::Declined => 4,
        }
    }

    /// Whether an MCP client should see `isError: true`: refusals and failures are errors the
    /// model must act on; a person's decline is an answer, not an error.
    pub fn is_error(self) -> bool {
        matches!(self, Status::Refused | Status::Failed)
    }
}

/// The reply of one surface call: what happened (typed), the text a model or person reads
/// (rendered once, by the domain), and the result id when a dataset was kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reply {
    pub status: Status,
    /// The refusal or failure kind (`no_plot`, `target`, `conflict`, …); absent when ok or declined.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset: Option<String>,
}

impl Reply {
    pub fn ok(text: impl Into<String>) -> Self {
        Self {
            status: Status::Ok,
            reason: None,
            text: text.into(),
            dataset: None,
        }
    }

    pub fn refused(refusal: Refusal) -> Self {
        Self {
            status: Status::Refused,
            reason: Some(refusal.kind.as_str().to_owned()),
            text: refusal.message,
            dataset: None,
        }
    }

    pub fn failed(failure: Failure) -> Self {
        Self {
            status: Status::Failed,
            reason: Some(failure.kind.as_str().to_owned()),
            text: failure.message,
            dataset: None,
        }
    }

    pub fn declined(text: impl Into<String>) -> Self {
        Self {
            status: Status::Declined,
            reason: None,
            text: text.into(),
            dataset: None,
        }
    }

    #[must_use]
    pub fn with_dataset(mut self, id: impl Into<String>) -> Self {
        self.dataset = Some(id.into());
        self
    }

    pub fn is_ok(&self) -> bool {
        self.status == Status::Ok
    }

    pub fn is_error(&self) -> bool {
        self.status.is_error()
    }
}

impl std::fmt::Display for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_to_distinct_exit_codes_and_only_refusals_and_failures_are_mcp_errors() {
        let all = [
            Status::Ok,
            Status::Refused,
            Status::Declined,
            Status::Failed,
        ];
        let mut codes: Vec<i32> = all.iter().map(|s| s.exit_code()).collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), 4);
        assert!(!codes.contains(&2), "2 is clap's usage error");
        let errors: Vec<Status> = all.into_iter().filter(|s| s.is_error()).collect();
        assert_eq!(errors, [Status::Refused, Status::Failed]);
    }

    #[test]
    fn a_reply_serialises_its_status_and_reason_as_snake_case() {
        let r = Reply::refused(Refusal::new(RefusalKind::NoPlot, "No plot is open."));
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["status"], "refused");
        assert_eq!(v["reason"], "no_plot");
        assert_eq!(v["text"], "No plot is open.");
        assert!(v.get("dataset").is_none());
        let f = Reply::failed(Failure::from_call(CallError::Timeout {
            tool: "x".into(),
            seconds: 1.0,
        }));
        assert_eq!(f.reason.as_deref(), Some("timeout"));
    }
}
