//! One JSONL record per invocation. Writing telemetry never fails a call.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::policy::Confirmation;

/// The JSON Schema every record validates against (shipped as `schemas/telemetry-record.schema.json`).
pub const RECORD_SCHEMA: &str = include_str!("../../../schemas/telemetry-record.schema.json");

/// Problems with a serialised record according to the shipped schema (empty when valid). Used by
/// tests across crates and by `toolgate telemetry check`-style tooling.
pub fn schema_problems(record: &Value) -> Vec<String> {
    static VALIDATOR: std::sync::OnceLock<Option<jsonschema::Validator>> =
        std::sync::OnceLock::new();
    let validator = VALIDATOR.get_or_init(|| {
        serde_json::from_str::<Value>(RECORD_SCHEMA)
            .ok()
            .and_then(|s| jsonschema::validator_for(&s).ok())
    });
    match validator {
        Some(v) => v
            .iter_errors(record)
            .map(|e| format!("{}: {e}", e.instance_path()))
            .collect(),
        None => vec!["the shipped telemetry schema does not compile".to_owned()],
    }
}

/// Whether the call's input passed validation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Validation {
    /// Serialised as the string `"accepted"`.
    Accepted(AcceptedTag),
    /// Serialised as `{"rejected": "<reason>"}`.
    Rejected { rejected: String },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AcceptedTag {
    Accepted,
}

impl Validation {
    pub fn accepted() -> Self {
        Validation::Accepted(AcceptedTag::Accepted)
    }
    pub fn rejected(reason: impl Into<String>) -> Self {
        Validation::Rejected {
            rejected: reason.into(),
        }
    }
}

/// How the call ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Outcome {
    /// Serialised as `"ok"`.
    Ok(OkTag),
    /// Serialised as `{"error": "<message>"}`, with the status (`refused`, `declined`,
    /// `failed`) and the refusal/failure kind when the caller knows them.
    Error {
        error: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<crate::outcome::Status>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OkTag {
    Ok,
}

impl Outcome {
    pub fn ok() -> Self {
        Outcome::Ok(OkTag::Ok)
    }
    pub fn error(message: impl Into<String>) -> Self {
        Outcome::Error {
            error: message.into(),
            status: None,
            reason: None,
        }
    }

    /// An error outcome that says how the call ended and why (a refusal kind, a failure kind).
    pub fn typed(
        status: crate::outcome::Status,
        reason: Option<&str>,
        message: impl Into<String>,
    ) -> Self {
        Outcome::Error {
            error: message.into(),
            status: Some(status),
            reason: reason.map(str::to_owned),
        }
    }

    /// `ok`, or the error's status (`failed` when the recorder did not say).
    pub fn status(&self) -> crate::outcome::Status {
        match self {
            Outcome::Ok(_) => crate::outcome::Status::Ok,
            Outcome::Error { status, .. } => status.unwrap_or(crate::outcome::Status::Failed),
        }
    }
}

/// Milliseconds spent per stage; stages that did not run are absent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Latency {
    pub total: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolve: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validate: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirm: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub apply: Option<f64>,
}

/// One invocation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TelemetryRecord {
    pub ts: String,
    /// Which surface the call came by: `mcp`, `cli`, `sandbox`, `workbench`, `chat`, `eval`.
    pub surface: String,
    pub tool: String,
    /// The input as given (after shape checks); `{}` when it was not an object.
    pub input: Value,
    pub validation: Validation,
    pub retries: u32,
    pub confirmation: Confirmation,
    pub latency_ms: Latency,
    /// The model id when the surface knows it, else "unknown".
    pub active_model: String,
    pub priming_enabled: bool,
    pub outcome: Outcome,
}

impl TelemetryRecord {
    /// A record stamped now, with the fields every call has; fill the rest in.
    pub fn now(surface: &str, tool: &str, input: Value) -> Self {
        Self {
            ts: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            surface: surface.to_owned(),
            tool: tool.to_owned(),
            input: if input.is_object() {
                input
            } else {
                Value::Object(serde_json::Map::new())
            },
            validation: Validation::accepted(),
            retries: 0,
            confirmation: Confirmation::NotRequired,
            latency_ms: Latency::default(),
            active_model: "unknown".to_owned(),
            priming_enabled: false,
            outcome: Outcome::ok(),
        }
    }
}

/// Where records go. Implementations swallow their own failures (logging them to stderr).
pub trait TelemetrySink: Send + Sync {
    fn record(&self, record: &TelemetryRecord);
}

/// Drops every record.
#[derive(Debug, Default)]
pub struct NullSink;

impl TelemetrySink for NullSink {
    fn record(&self, _record: &TelemetryRecord) {}
}

/// Keeps records in memory (tests, the workbench's recent-calls view).
#[derive(Debug, Default)]
pub struct MemorySink {
    records: Mutex<Vec<TelemetryRecord>>,
}

impl MemorySink {
    pub fn records(&self) -> Vec<TelemetryRecord> {
        self.records.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

impl TelemetrySink for MemorySink {
    fn record(&self, record: &TelemetryRecord) {
        if let Ok(mut r) = self.records.lock() {
            r.push(record.clone());
        }
    }
}

/// Appends one JSON line per record to a file (created with its directory when missing). Each
/// line is written with a single `write_all` on an `O_APPEND` handle, so concurrent writers do
/// not interleave within a line.
#[derive(Debug)]
pub struct JsonlSink {
    path: PathBuf,
    lock: Mutex<()>,
}

impl JsonlSink {
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            lock: Mutex::new(()),
        }
    }

    fn try_record(&self, record: &TelemetryRecord) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(record)?;
        line.push(b'\n');
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let _guard = self.lock.lock();
        let mut f = toolgate_fs::open::open_append(&self.path)?;
        f.write_all(&line)
    }
}

impl TelemetrySink for JsonlSink {
    fn record(&self, record: &TelemetryRecord) {
        if let Err(e) = self.try_record(record) {
            tracing::warn!(path = %self.path.display(), error = %e, "telemetry record not written");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> jsonschema::Validator {
        let schema: Value = serde_json::from_str(RECORD_SCHEMA).unwrap();
        jsonschema::validator_for(&schema).unwrap()
    }

    #[test]
    fn records_validate_against_the_shipped_schema() {
        let v = schema();
        let mut rec = TelemetryRecord::now("mcp", "debrief_runTool", json!({"toolId": "x"}));
        assert!(v.is_valid(&serde_json::to_value(&rec).unwrap()));
        rec.validation = Validation::rejected("Unknown tool id \"x\".");
        rec.confirmation = Confirmation::Declined;
        rec.outcome = Outcome::error("declined by the user");
        rec.latency_ms.run = Some(1.5);
        let value = serde_json::to_value(&rec).unwrap();
        assert!(v.is_valid(&value), "{value}");
        assert_eq!(value["confirmation"], "declined");
        assert_eq!(
            value["validation"],
            json!({"rejected": "Unknown tool id \"x\"."})
        );
        let back: TelemetryRecord = serde_json::from_value(value).unwrap();
        assert_eq!(back, rec);
        // the schema is strict: an extra field or a bad confirmation fails
        let mut bad = serde_json::to_value(&rec).unwrap();
        bad["confirmation"] = json!("maybe");
        assert!(!v.is_valid(&bad));
    }

    #[test]
    fn jsonl_sink_appends_and_never_fails() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/telemetry.jsonl");
        let sink = JsonlSink::new(&path);
        let mut rec = TelemetryRecord::now("cli", "t", json!(null));
        rec.confirmation = Confirmation::Declined;
        sink.record(&rec);
        sink.record(&rec);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 2);
        let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        assert_eq!(first["confirmation"], "declined");
        assert_eq!(first["input"], json!({}));
        // an unwritable path is logged, not raised
        JsonlSink::new(dir.path().join("sub/telemetry.jsonl/nested")).record(&rec);
    }
}
