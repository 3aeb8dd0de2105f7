//! A session whose state lives outside the process: the write-ahead journal of its changes.
//!
//! A journaled [`crate::session::Session`] records every change a surface makes — open, focus,
//! close, selection, apply, undo, redo, revert, save — as one [`SessionOp`] in a [`Journal`]
//! before it changes anything in memory, and is acknowledged only after the entry is stored.
//! Every process holding the same session (two `toolgate serve` instances behind a load
//! balancer, or one restarted) replays the entries it has not seen before it reads or changes the
//! session ([`crate::session::Session::sync`]), so they all hold the same open plots, versions,
//! selections, undo/redo stacks and unsaved edits: the in-memory session is a cache of the
//! journal.
//!
//! Why replaying ops rather than storing snapshots: an op is small (a change set, a selection),
//! while a snapshot of a plot with its undo history is the plot several times over; and the
//! same code path ([`crate::session::Session`]'s `apply_op`) runs for a local change and for a
//! replayed one, so replicas cannot disagree about what an op does. The plot contents an `Open`
//! or `Revert` started from are stored once per file version (by the file's SHA-256), so a
//! replay never depends on the file still being what it was — a later save changes the file,
//! not the history.
//!
//! Ordering: entries are numbered 1, 2, … per session; [`Journal::append`] stores entry `n`
//! only when `n` is the next number, so two processes changing the session at once cannot both
//! win — the loser replays the winner's entry and tries again ([`JournalError::Conflict`]).
//!
//! [`MemoryJournal`] is the in-process journal the tests share between two sessions (two
//! "instances" in one process); the PostgreSQL one is `toolgate-state`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use serde::{Deserialize, Serialize};
use toolgate_core::ChangeSet;

/// One change to a session, as journaled. Replaying the same ops from the same start gives the
/// same session: the same plot versions (which approvals are bound to), selections and undo
/// stacks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum SessionOp {
    /// A plot opened from the file version with this SHA-256 (its content is in the journal's
    /// content store under that key).
    Open {
        plot_id: String,
        sha256: String,
    },
    /// An open plot made active.
    Focus {
        plot_id: String,
    },
    Close {
        plot_id: String,
    },
    Select {
        plot_id: String,
        ids: Vec<String>,
    },
    /// A change set applied as one undo step at this plot version.
    Apply {
        plot_id: String,
        expected_version: u64,
        change_set: ChangeSet,
    },
    Undo {
        plot_id: String,
    },
    Redo {
        plot_id: String,
    },
    /// Unsaved edits discarded: the plot reloaded from the file version with this SHA-256.
    Revert {
        plot_id: String,
        sha256: String,
    },
    /// The plot was written to its file as it was at undo state `state`; the file's SHA-256 is
    /// now `sha256` (what the next save expects to find).
    Saved {
        plot_id: String,
        state: u64,
        sha256: String,
    },
}

impl SessionOp {
    pub fn plot_id(&self) -> &str {
        match self {
            Self::Open { plot_id, .. }
            | Self::Focus { plot_id }
            | Self::Close { plot_id }
            | Self::Select { plot_id, .. }
            | Self::Apply { plot_id, .. }
            | Self::Undo { plot_id }
            | Self::Redo { plot_id }
            | Self::Revert { plot_id, .. }
            | Self::Saved { plot_id, .. } => plot_id,
        }
    }
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum JournalError {
    /// Entry `seq` was stored by someone else first: replay it, then try again.
    #[error(
        "another toolgate instance changed session \"{session}\" at the same moment (entry {seq}); nothing was applied"
    )]
    Conflict { session: String, seq: u64 },
    /// The store could not be reached or answered an error.
    #[error(
        "the session state store failed ({0}); nothing was applied. Check that the database given with --state is running and reachable, then retry"
    )]
    Store(String),
    /// An entry or stored content that does not parse (written by another version?).
    #[error("the session state store holds an unreadable entry: {0}")]
    Corrupt(String),
}

/// Where a session's changes are recorded, in order (see the module docs). Implementations are
/// blocking; a session calls them under its lock, so each call should be one short round trip.
pub trait Journal: Send + Sync + std::fmt::Debug {
    /// The session's key (e.g. `workbench`).
    fn session(&self) -> &str;
    /// The entries after `after`, oldest first, with their numbers — all of them or a first
    /// batch (callers ask again from the last one until the answer is empty).
    fn since(&self, after: u64) -> Result<Vec<(u64, SessionOp)>, JournalError>;
    /// Store `op` as entry `seq`, which must be the next number; [`JournalError::Conflict`] when
    /// that number is taken.
    fn append(&self, seq: u64, op: &SessionOp) -> Result<(), JournalError>;
    /// Whether content is stored under this file SHA-256.
    fn has_content(&self, sha256: &str) -> Result<bool, JournalError>;
    /// Store a plot's content (a FeatureCollection as JSON) under its file's SHA-256; storing
    /// the same key again is a no-op.
    fn put_content(&self, sha256: &str, bytes: &[u8]) -> Result<(), JournalError>;
    /// The content stored under this SHA-256.
    fn content(&self, sha256: &str) -> Result<Option<Vec<u8>>, JournalError>;
}

#[derive(Debug, Default)]
struct MemoryState {
    ops: Vec<SessionOp>,
    content: HashMap<String, Arc<[u8]>>,
}

/// A journal in this process's memory: clones share it, so two sessions holding clones behave
/// like two instances on one database (the tests' stand-in for PostgreSQL).
#[derive(Debug, Clone)]
pub struct MemoryJournal {
    session: String,
    state: Arc<Mutex<MemoryState>>,
}

impl MemoryJournal {
    pub fn new(session: &str) -> Self {
        Self {
            session: session.to_owned(),
            state: Arc::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, MemoryState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How many entries are stored.
    pub fn len(&self) -> usize {
        self.lock().ops.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Journal for MemoryJournal {
    fn session(&self) -> &str {
        &self.session
    }

    fn since(&self, after: u64) -> Result<Vec<(u64, SessionOp)>, JournalError> {
        let st = self.lock();
        let from = usize::try_from(after).unwrap_or(usize::MAX);
        Ok(st
            .ops
            .iter()
            .enumerate()
            .skip(from)
            .map(|(i, op)| (i as u64 + 1, op.clone()))
            .collect())
    }

    fn append(&self, seq: u64, op: &SessionOp) -> Result<(), JournalError> {
        let mut st = self.lock();
        if seq != st.ops.len() as u64 + 1 {
            return Err(JournalError::Conflict {
                session: self.session.clone(),
                seq,
            });
        }
        st.ops.push(op.clone());
        Ok(())
    }

    fn has_content(&self, sha256: &str) -> Result<bool, JournalError> {
        Ok(self.lock().content.contains_key(sha256))
    }

    fn put_content(&self, sha256: &str, bytes: &[u8]) -> Result<(), JournalError> {
        self.lock()
            .content
            .entry(sha256.to_owned())
            .or_insert_with(|| Arc::from(bytes));
        Ok(())
    }

    fn content(&self, sha256: &str) -> Result<Option<Vec<u8>>, JournalError> {
        Ok(self.lock().content.get(sha256).map(|b| b.to_vec()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ops_round_trip_through_json_with_a_readable_tag() {
        let op = SessionOp::Apply {
            plot_id: "stac://demo/a/item.json".into(),
            expected_version: 3,
            change_set: ChangeSet {
                label: "colour".into(),
                edits: vec![toolgate_core::Edit::Remove { id: "x".into() }],
            },
        };
        let v = serde_json::to_value(&op).unwrap();
        assert_eq!(v["op"], "apply");
        assert_eq!(v["expected_version"], 3);
        assert_eq!(serde_json::from_value::<SessionOp>(v).unwrap(), op);
        let sel: SessionOp =
            serde_json::from_value(json!({"op": "select", "plot_id": "p", "ids": ["a"]})).unwrap();
        assert_eq!(sel.plot_id(), "p");
    }

    #[test]
    fn append_takes_only_the_next_number() {
        let j = MemoryJournal::new("w");
        let op = SessionOp::Focus {
            plot_id: "p".into(),
        };
        j.append(1, &op).unwrap();
        assert!(matches!(
            j.append(1, &op),
            Err(JournalError::Conflict { seq: 1, .. })
        ));
        assert!(matches!(
            j.append(3, &op),
            Err(JournalError::Conflict { .. })
        ));
        j.append(2, &op).unwrap();
        assert_eq!(j.since(1).unwrap().len(), 1);
        assert_eq!(j.since(1).unwrap()[0].0, 2);
        assert!(j.since(2).unwrap().is_empty());
    }
}
