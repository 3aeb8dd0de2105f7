//! What the sandbox needs from whoever runs the tools.

use async_trait::async_trait;
use monty_types::{ExcType, MontyException};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The Python exception type a tool failure surfaces as inside the sandbox. Each one can be
/// caught with `except <Type>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum PyExc {
    FileNotFoundError,
    FileExistsError,
    PermissionError,
    ValueError,
    TimeoutError,
    RuntimeError,
    NameError,
    KeyError,
    TypeError,
}

impl PyExc {
    pub fn as_str(self) -> &'static str {
        match self {
            PyExc::FileNotFoundError => "FileNotFoundError",
            PyExc::FileExistsError => "FileExistsError",
            PyExc::PermissionError => "PermissionError",
            PyExc::ValueError => "ValueError",
            PyExc::TimeoutError => "TimeoutError",
            PyExc::RuntimeError => "RuntimeError",
            PyExc::NameError => "NameError",
            PyExc::KeyError => "KeyError",
            PyExc::TypeError => "TypeError",
        }
    }

    pub(crate) fn exc_type(self) -> ExcType {
        match self {
            PyExc::FileNotFoundError => ExcType::FileNotFoundError,
            PyExc::FileExistsError => ExcType::FileExistsError,
            PyExc::PermissionError => ExcType::PermissionError,
            PyExc::ValueError => ExcType::ValueError,
            PyExc::TimeoutError => ExcType::TimeoutError,
            PyExc::RuntimeError => ExcType::RuntimeError,
            PyExc::NameError => ExcType::NameError,
            PyExc::KeyError => ExcType::KeyError,
            PyExc::TypeError => ExcType::TypeError,
        }
    }
}

impl std::fmt::Display for PyExc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A tool call failed; raised inside the sandbox as `py_type(message)`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[error("{py_type}: {message}")]
pub struct HostError {
    pub py_type: PyExc,
    pub message: String,
    /// How the gate ended the call, when the gate ended it: the typed status (and reason, e.g.
    /// `policy_denied`) a surface reports, so a person's decline and a refusal stay apart
    /// without reading `message`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<GateEnd>,
}

/// The typed end of a gated call that did not succeed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GateEnd {
    pub status: toolgate_core::Status,
    /// The refusal or failure kind (`RefusalKind::as_str`, `FailureKind::as_str`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl HostError {
    pub fn new(py_type: PyExc, message: impl Into<String>) -> Self {
        Self {
            py_type,
            message: message.into(),
            ended: None,
        }
    }

    /// The same error, marked with how the gate ended the call.
    #[must_use]
    pub fn ended(mut self, status: toolgate_core::Status, reason: Option<&str>) -> Self {
        self.ended = Some(GateEnd {
            status,
            reason: reason.map(str::to_owned),
        });
        self
    }

    pub(crate) fn to_exception(&self) -> MontyException {
        MontyException::new(self.py_type.exc_type(), Some(self.message.clone()))
    }
}

/// Runs the tools a program calls. The sandbox never touches files, processes or the network
/// itself: every effect goes through a host.
#[async_trait]
pub trait ToolHost: Send + Sync {
    /// The names Python code can call, as Python identifiers.
    fn tool_names(&self) -> Vec<String>;

    /// The keyword-argument names of a tool, in declared order. When known, positional
    /// arguments map onto them in that order; when `None`, positional arguments raise
    /// `TypeError`.
    fn param_names(&self, _tool: &str) -> Option<Vec<String>> {
        None
    }

    /// Names a program may not call although the host knows them (e.g. tools disabled by
    /// configuration), each with the reason. A program that names one gets a `NameError` that
    /// carries the reason instead of a plain "not defined". Not listed among the available
    /// tools.
    fn unavailable_tools(&self) -> Vec<(String, String)> {
        Vec::new()
    }

    /// Where this host records time spent waiting for a person (a call that needs a
    /// confirmation pauses the program until it is answered); deadlines do not count it. `None`:
    /// this host never waits for anyone.
    fn pause_clock(&self) -> Option<std::sync::Arc<crate::pause::PauseClock>> {
        None
    }

    /// Run one tool. `args` are the keyword arguments as JSON.
    async fn call(&self, name: &str, args: Map<String, Value>) -> Result<Value, HostError>;
}
