//! The result of one program, as the model reads it.

use monty_types::MontyException;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What one program produced. Serialised exactly as
/// `{success, stdout, stderr, return_value, error, tool_calls, duration_ms, truncated}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    /// True when the program ran to its end without an uncaught exception.
    pub success: bool,
    /// What the program printed (cut at the output limit).
    pub stdout: String,
    /// What the program printed to `sys.stderr`, then, on failure, the traceback.
    pub stderr: String,
    /// The value of the program's last expression as JSON (`null` on failure or when the last
    /// statement is not an expression). Values JSON cannot hold come back as their `repr()`.
    pub return_value: Value,
    /// The uncaught exception, if any.
    pub error: Option<ExecError>,
    /// Tool calls the program made.
    pub tool_calls: u32,
    /// Wall-clock time of the whole run, in milliseconds.
    pub duration_ms: f64,
    /// True when stdout/stderr were cut at the output limit.
    pub truncated: bool,
}

/// An uncaught Python exception (or a limit that stopped the program).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecError {
    /// The Python exception type, e.g. `FileNotFoundError`, `SyntaxError`, `TimeoutError`.
    #[serde(rename = "type")]
    pub type_: String,
    pub message: String,
    /// 1-based line of the innermost frame (of the syntax error for `SyntaxError`).
    pub line: Option<u32>,
    /// 1-based column, in characters.
    pub column: Option<u32>,
    /// The CPython-style traceback, one line per entry, without the final `Type: message`
    /// line. Empty when the error has no Python frames (a limit hit between statements).
    pub traceback: Vec<String>,
    /// The program's wall-clock limit stopped it (a `TimeoutError` the deadline raised, not one
    /// the program or a tool raised): a kind callers decide on instead of reading `message`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub wall_clock: bool,
}

impl ExecError {
    /// An error with no Python location.
    pub fn new(type_: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            type_: type_.into(),
            message: message.into(),
            line: None,
            column: None,
            traceback: Vec::new(),
            wall_clock: false,
        }
    }

    pub(crate) fn from_exception(exc: &MontyException) -> Self {
        let type_ = exc.exc_type().to_string();
        let message = exc.message().unwrap_or_default().to_owned();
        let frames = exc.traceback();
        let (line, column) = frames
            .last()
            .map_or((None, None), |f| (Some(f.start.line), Some(f.start.column)));
        let traceback = if frames.is_empty() {
            Vec::new()
        } else {
            let full = exc.to_string();
            let summary = exc.summary();
            let body = full.strip_suffix(summary.as_str()).unwrap_or(&full);
            body.lines().map(str::to_owned).collect()
        };
        Self {
            type_,
            message,
            line,
            column,
            traceback,
            wall_clock: false,
        }
    }

    /// The text a Python process would print for this error: the traceback, then
    /// `Type: message`.
    pub fn render(&self) -> String {
        let mut s = String::new();
        for l in &self.traceback {
            s.push_str(l);
            s.push('\n');
        }
        s.push_str(&self.type_);
        if !self.message.is_empty() {
            s.push_str(": ");
            s.push_str(&self.message);
        }
        s
    }
}

impl Envelope {
    /// A failed run that produced nothing but this error (used before the interpreter started
    /// or after its worker was stopped).
    pub fn failure(error: ExecError, duration_ms: f64) -> Self {
        let stderr = error.render();
        Self {
            success: false,
            stdout: String::new(),
            stderr,
            return_value: Value::Null,
            error: Some(error),
            tool_calls: 0,
            duration_ms,
            truncated: false,
        }
    }

    /// Pretty JSON with 2-space indents (what `toolgate exec` prints).
    pub fn to_json_pretty(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| {
            format!("{{\"success\": false, \"error\": {{\"type\": \"RuntimeError\", \"message\": \"envelope not serialisable: {e}\"}}}}")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use monty_types::ExcType;

    #[test]
    fn error_without_frames_renders_type_and_message() {
        let e = ExecError::from_exception(&MontyException::new(
            ExcType::TimeoutError,
            Some("too slow".into()),
        ));
        assert_eq!(e.type_, "TimeoutError");
        assert!(e.traceback.is_empty());
        assert_eq!(e.render(), "TimeoutError: too slow");
        assert_eq!(e.line, None);
    }
}
