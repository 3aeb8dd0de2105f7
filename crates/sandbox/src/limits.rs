//! The request that carries one program and its [`Limits`] (the limits themselves are
//! configuration: `toolgate_config::Limits`).

use serde::{Deserialize, Serialize};
use toolgate_config::Limits;

/// Appended where captured output was cut.
pub const TRUNCATION_MARKER: &str = "…[output truncated]";

/// The memory budget as monty takes it.
pub(crate) fn memory_usize(limits: &Limits) -> usize {
    usize::try_from(limits.max_memory_bytes).unwrap_or(usize::MAX)
}

/// One program to run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecRequest {
    /// The Python source.
    pub code: String,
    /// The file name tracebacks show, e.g. `main.py`.
    #[serde(default = "default_script_name")]
    pub script_name: String,
    #[serde(default)]
    pub limits: Limits,
}

fn default_script_name() -> String {
    "main.py".to_owned()
}

impl ExecRequest {
    /// A request with the default script name and limits.
    pub fn new(code: impl Into<String>) -> Self {
        Self {
            code: code.into(),
            script_name: default_script_name(),
            limits: Limits::default(),
        }
    }

    #[must_use]
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    #[must_use]
    pub fn with_script_name(mut self, name: impl Into<String>) -> Self {
        self.script_name = name.into();
        self
    }
}
