//! `run_code` programs paused at a call that needs a person.
//!
//! A client that cannot be asked inline (no elicitation — Claude Code is one — or the
//! 2026-07-28 protocol, which asks by MRTR) gets the paused call's preview with a single-use
//! token or a sealed MRTR state; the program waits, suspended at that call, in its worker.
//! The next `run_code` round with the same code and the token (`confirm` to approve,
//! `decline` to decline) or the MRTR answer resumes it from there: the calls made before are
//! never made again.
//!
//! A paused program holds its worker process, so the server holds few: [`PAUSED_LIMITS`] — 4
//! per session, 16 per server, each for at most [`crate::confirm::CONFIRM_TTL`] (5 minutes);
//! the oldest is stopped first to make room, and its client hears that it expired.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use toolgate_core::{Answer, CallDigest, Preview};
use toolgate_plot::transaction::PlotTransaction;

use crate::pending::PendingLimits;

/// Where a started `run_code` program stands.
pub enum CodeProgress {
    /// It ended: the sandbox envelope as JSON.
    Done(Value),
    /// It waits at a call for a person's answer.
    Paused(Box<dyn PausedCode>),
}

/// A program stopped at a call that needs a person. Dropping it stops the program.
#[async_trait]
pub trait PausedCode: Send {
    /// The plain-language preview of the paused call.
    fn preview(&self) -> &Preview;
    /// The digest of the exact call (tool, validated arguments, context).
    fn digest(&self) -> &CallDigest;
    /// What the program did before this call, in words.
    fn already(&self) -> String;
    /// Answer; the program goes on from the paused call until it ends or asks again.
    async fn resume(self: Box<Self>, answer: Answer) -> CodeProgress;
}

/// How many paused programs the server holds (count per session and per server; the bytes
/// are those of the kept programs and previews — the worker each one holds is bounded by the
/// program's own memory limit).
pub const PAUSED_LIMITS: PendingLimits = PendingLimits {
    per_session: 4,
    per_server: 16,
    max_bytes: 16 << 20,
};

/// A paused program kept for its confirming round.
pub(crate) struct PausedRun {
    pub(crate) paused: Box<dyn PausedCode>,
    /// Who may answer: the session (or connection) it was started in.
    pub(crate) owner: String,
    /// The program (a confirming call must name the same one).
    pub(crate) code: String,
    /// Its plot transaction, committed when the program ends.
    pub(crate) tx: Option<Arc<PlotTransaction>>,
}

/// The digest a paused program's token or MRTR state is bound to: the call, this run (a fresh
/// id, so two runs paused at the same call are never confused), its owner and its program.
pub(crate) fn pause_digest(call: &CallDigest, owner: &str, code: &str) -> CallDigest {
    let mut params = serde_json::Map::new();
    params.insert("call".into(), Value::String(call.as_str().to_owned()));
    params.insert(
        "run".into(),
        Value::String(uuid::Uuid::new_v4().simple().to_string()),
    );
    CallDigest::of(
        "run_code-paused-call",
        &params,
        &serde_json::json!({"owner": owner, "code": code}),
    )
}

/// `owner` as the number the pending table keys owners by.
pub(crate) fn owner_number(owner: &str) -> usize {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    owner.hash(&mut h);
    h.finish() as usize
}
