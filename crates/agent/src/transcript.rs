//! One JSONL transcript per conversation: messages, model turns (model id, tokens, latency),
//! tool calls and results, confirmations, final answers and errors. Writing a transcript never
//! fails a conversation; problems are logged. Credentials never reach it: the loop only ever
//! sees messages and tool results, and the client reads keys from the environment itself.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// An append-only JSONL file for one conversation.
#[derive(Debug)]
pub struct Transcript {
    path: PathBuf,
    file: Option<File>,
    conversation: String,
}

impl Transcript {
    /// `<dir>/<conversation>.jsonl`, created (with `dir`) if needed.
    pub fn create(dir: &Path, conversation: &str) -> std::io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let safe: String = conversation
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let path = dir.join(format!("{safe}.jsonl"));
        let file = toolgate_fs::open::open_append(&path)?;
        Ok(Self {
            path,
            file: Some(file),
            conversation: conversation.to_owned(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Append one record `{ts, conversation, kind, ...fields}`.
    pub fn write(&mut self, kind: &str, fields: Value) {
        let mut rec = Map::new();
        rec.insert(
            "ts".into(),
            Value::String(chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)),
        );
        rec.insert(
            "conversation".into(),
            Value::String(self.conversation.clone()),
        );
        rec.insert("kind".into(), Value::String(kind.to_owned()));
        if let Value::Object(m) = fields {
            rec.extend(m);
        }
        let Some(file) = self.file.as_mut() else {
            return;
        };
        let mut line = Value::Object(rec).to_string();
        line.push('\n');
        if let Err(e) = file.write_all(line.as_bytes()) {
            tracing::warn!(path = %self.path.display(), "could not write the transcript: {e}");
            self.file = None;
        }
    }
}
