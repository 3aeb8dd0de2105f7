//! Open plots, the active plot, the selection, and per plot a document with a version, a dirty
//! flag, undo/redo (one change set = one step), revert and save.
//!
//! This is the only place a plot changes. Tools return change sets; the session applies them.
//! Saving is a method a *person's* surface calls (CLI with a TTY or `--save`, the workbench's
//! Save button); no agent tool maps to it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex, PoisonError, Weak};
use std::time::Duration;

use serde_json::Value;
use toolgate_core::{ChangeSet, Edit, Failure, FailureKind};

use crate::fsio::{Replaced, replace_beneath, sha256_hex};
use crate::journal::{Journal, JournalError, SessionOp};
use crate::model;
use crate::store::{ItemEntry, StacStore, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("No plot is open. Search the catalog and open a plot first.")]
    NoPlotOpen,
    // Ids come from clients: each message quotes at most 200 bytes of one.
    #[error(
        "No plot \"{}\" in the catalogue. Search the catalog to find plot ids.",
        toolgate_core::clip::quote(.0)
    )]
    UnknownPlot(String),
    #[error("No open plot matches \"{}\".", toolgate_core::clip::quote(.0))]
    NotOpen(String),
    #[error("Nothing to undo on \"{}\".", toolgate_core::clip::quote(.0))]
    NothingToUndo(String),
    #[error("Nothing to redo on \"{}\".", toolgate_core::clip::quote(.0))]
    NothingToRedo(String),
    #[error(
        "The plot file {path} changed on disk since it was opened, so saving would overwrite someone else's change. Your unsaved edits are kept: revert to load the file's version, or copy your edits elsewhere."
    )]
    Conflict { path: PathBuf },
    #[error(
        "The plot changed while this call was waiting (version {expected} → {actual}); nothing was applied. Summarise the plot again and retry."
    )]
    VersionMismatch { expected: u64, actual: u64 },
    #[error(
        "Cannot remove feature \"{}\": it is not in the plot.",
        toolgate_core::clip::quote(.0)
    )]
    MissingFeature(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Api(#[from] crate::stac_api::ApiError),
    #[error(
        "Reading the plot file {path} did not finish within {} s, so nothing was opened. The file may be a FIFO, a device or on a stalled network mount: replace it with a regular file, or choose another plot.",
        .after.as_secs()
    )]
    ReadTimedOut { path: PathBuf, after: Duration },
    #[error(
        "The catalogue is busy: {0} plot files are still being read (a file that never finishes reading, such as a FIFO, holds a reader). Try again shortly, or check the catalogue's files."
    )]
    StoreBusy(usize),
    #[error(transparent)]
    Journal(#[from] JournalError),
    #[error("internal: the plot reader stopped unexpectedly ({0}); try again")]
    Reader(String),
    #[error("could not save {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl SessionError {
    /// The gate's failure for a change set that could not be applied to a plot — one mapping
    /// for every caller of [`Session::apply`] (a single tool call, a CodeAct commit, a
    /// program's scratch copy): a plot that changed since the call was prepared is a
    /// [`FailureKind::Conflict`] (summarise and retry), anything else
    /// [`FailureKind::Apply`].
    pub fn into_apply_failure(self) -> Failure {
        let kind = if matches!(self, SessionError::VersionMismatch { .. }) {
            FailureKind::Conflict
        } else {
            FailureKind::Apply
        };
        Failure::new(kind, self.to_string())
    }
}

#[derive(Debug, Clone)]
struct Change {
    id: String,
    before: Option<(usize, Value)>,
    after: Option<(usize, Value)>,
}

#[derive(Debug, Clone)]
struct Step {
    label: String,
    changes: Vec<Change>,
    state_before: u64,
    state_after: u64,
}

/// A features file as parsed: what sessions that opened the same file version share until one of
/// them edits it (copy on write), so N sessions viewing a large plot hold one copy, not N.
#[derive(Debug, Clone)]
pub struct Content {
    head: Head,
    features: Vec<Value>,
}

impl Content {
    /// The collection as compact JSON (what a journal stores for replicas to replay from).
    fn to_json_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(&Collection {
            head: &self.head,
            features: &self.features,
        })
        .unwrap_or_default()
    }

    fn from_collection(collection: Value) -> Self {
        let mut members = match collection {
            Value::Object(m) => m,
            _ => serde_json::Map::new(),
        };
        let features_at = members
            .keys()
            .position(|k| k == "features")
            .unwrap_or(members.len());
        let features = match members.shift_remove("features") {
            Some(Value::Array(a)) => a,
            _ => Vec::new(),
        };
        Self {
            head: Head {
                members,
                features_at,
            },
            features,
        }
    }
}

/// One plot's editable state.
#[derive(Debug, Clone)]
pub struct Document {
    /// Shared with other sessions' documents of the same file version until the first edit.
    content: Arc<Content>,
    path: PathBuf,
    disk_sha256: String,
    version: u64,
    state: u64,
    saved_state: u64,
    next_state: u64,
    undo: Vec<Step>,
    redo: Vec<Step>,
}

/// The FeatureCollection's other members (`type`, `bbox`, foreign members), in file order, with
/// the features kept apart so edits do not walk a `Value` tree.
#[derive(Debug, Clone)]
struct Head {
    members: serde_json::Map<String, Value>,
    /// Where "features" sat among the members, so saving keeps the file's key order.
    features_at: usize,
}

struct Collection<'a> {
    head: &'a Head,
    features: &'a [Value],
}

impl serde::Serialize for Collection<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(self.head.members.len() + 1))?;
        for (i, (k, v)) in self.head.members.iter().enumerate() {
            if i == self.head.features_at {
                map.serialize_entry("features", self.features)?;
            }
            map.serialize_entry(k, v)?;
        }
        if self.head.features_at >= self.head.members.len() {
            map.serialize_entry("features", self.features)?;
        }
        map.end()
    }
}

fn position(features: &[Value], id: &str) -> Option<usize> {
    features.iter().position(|f| model::feature_id(f) == id)
}

impl Document {
    pub fn new(collection: Value, path: PathBuf, disk_sha256: String) -> Self {
        Self::from_content(
            Arc::new(Content::from_collection(collection)),
            path,
            disk_sha256,
        )
    }

    fn from_content(content: Arc<Content>, path: PathBuf, disk_sha256: String) -> Self {
        Self {
            content,
            path,
            disk_sha256,
            version: 1,
            state: 0,
            saved_state: 0,
            next_state: 1,
            undo: Vec::new(),
            redo: Vec::new(),
        }
    }

    pub fn features(&self) -> &[Value] {
        &self.content.features
    }

    /// True when both documents hold the same (unedited, shared) copy of their file's content.
    /// The SHA-256 of the file as last read or saved (what a save expects to find).
    pub fn disk_sha256(&self) -> &str {
        &self.disk_sha256
    }

    pub fn shares_content_with(&self, other: &Document) -> bool {
        Arc::ptr_eq(&self.content, &other.content)
    }

    pub fn feature(&self, id: &str) -> Option<&Value> {
        self.features().iter().find(|f| model::feature_id(f) == id)
    }

    /// Increases on every change (apply, undo, redo, revert); approvals are bound to it.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// True when the document differs from what is on disk (undoing back to the saved state
    /// makes it clean again).
    pub fn is_dirty(&self) -> bool {
        self.state != self.saved_state
    }

    pub fn can_undo(&self) -> bool {
        !self.undo.is_empty()
    }

    pub fn can_redo(&self) -> bool {
        !self.redo.is_empty()
    }

    pub fn undo_label(&self) -> Option<&str> {
        self.undo.last().map(|s| s.label.as_str())
    }

    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// The document as it would be saved.
    pub fn to_bytes(&self) -> Vec<u8> {
        let collection = Collection {
            head: &self.content.head,
            features: &self.content.features,
        };
        // Serialising plain JSON values cannot fail.
        let mut bytes = serde_json::to_vec_pretty(&collection).unwrap_or_default();
        bytes.push(b'\n');
        bytes
    }

    /// Apply a change set as one undo step. All edits are checked first, so a change set
    /// either applies completely or not at all. Returns the ids touched.
    pub fn apply(&mut self, cs: &ChangeSet) -> Result<Vec<String>, SessionError> {
        self.check(cs)?;
        Ok(self.apply_checked(cs))
    }

    /// Whether `cs` applies: every removed id is there when its edit comes.
    fn check(&self, cs: &ChangeSet) -> Result<(), SessionError> {
        let mut shadow_ids: Vec<String> = self.features().iter().map(model::feature_id).collect();
        for e in &cs.edits {
            match e {
                Edit::Upsert { id, .. } => {
                    if !shadow_ids.contains(id) {
                        shadow_ids.push(id.clone());
                    }
                }
                Edit::Remove { id } => {
                    let Some(i) = shadow_ids.iter().position(|x| x == id) else {
                        return Err(SessionError::MissingFeature(id.clone()));
                    };
                    shadow_ids.remove(i);
                }
            }
        }
        Ok(())
    }

    fn apply_checked(&mut self, cs: &ChangeSet) -> Vec<String> {
        // the first edit makes this document's own copy; other sessions keep theirs
        let features = &mut Arc::make_mut(&mut self.content).features;
        let mut changes = Vec::with_capacity(cs.edits.len());
        for e in &cs.edits {
            match e {
                Edit::Upsert { id, item } => {
                    let mut item = item.clone();
                    if item.get("id").is_none() {
                        item["id"] = Value::String(id.clone());
                    }
                    match position(features, id) {
                        Some(i) => {
                            let before = std::mem::replace(&mut features[i], item.clone());
                            changes.push(Change {
                                id: id.clone(),
                                before: Some((i, before)),
                                after: Some((i, item)),
                            });
                        }
                        None => {
                            let i = features.len();
                            features.push(item.clone());
                            changes.push(Change {
                                id: id.clone(),
                                before: None,
                                after: Some((i, item)),
                            });
                        }
                    }
                }
                Edit::Remove { id } => {
                    if let Some(i) = position(features, id) {
                        let before = features.remove(i);
                        changes.push(Change {
                            id: id.clone(),
                            before: Some((i, before)),
                            after: None,
                        });
                    }
                }
            }
        }
        let touched = cs.touched_ids().into_iter().map(str::to_owned).collect();
        let state_after = self.next_state;
        self.next_state += 1;
        self.undo.push(Step {
            label: cs.label.clone(),
            changes,
            state_before: self.state,
            state_after,
        });
        self.redo.clear();
        self.state = state_after;
        self.version += 1;
        touched
    }

    fn revert_changes(features: &mut Vec<Value>, changes: &[Change]) {
        for c in changes.iter().rev() {
            let pos = position(features, &c.id);
            match (&c.before, pos) {
                (Some((_, v)), Some(p)) => features[p] = v.clone(),
                (Some((i, v)), None) => features.insert((*i).min(features.len()), v.clone()),
                (None, Some(p)) => {
                    features.remove(p);
                }
                (None, None) => {}
            }
        }
    }

    fn replay_changes(features: &mut Vec<Value>, changes: &[Change]) {
        for c in changes {
            let pos = position(features, &c.id);
            match (&c.after, pos) {
                (Some((_, v)), Some(p)) => features[p] = v.clone(),
                (Some((i, v)), None) => features.insert((*i).min(features.len()), v.clone()),
                (None, Some(p)) => {
                    features.remove(p);
                }
                (None, None) => {}
            }
        }
    }

    /// Undo the last applied change set. Returns its label.
    pub fn undo(&mut self) -> Option<String> {
        let step = self.undo.pop()?;
        Self::revert_changes(
            &mut Arc::make_mut(&mut self.content).features,
            &step.changes,
        );
        self.state = step.state_before;
        self.version += 1;
        let label = step.label.clone();
        self.redo.push(step);
        Some(label)
    }

    pub fn redo(&mut self) -> Option<String> {
        let step = self.redo.pop()?;
        Self::replay_changes(
            &mut Arc::make_mut(&mut self.content).features,
            &step.changes,
        );
        self.state = step.state_after;
        self.version += 1;
        let label = step.label.clone();
        self.undo.push(step);
        Some(label)
    }

    /// Write the document to its file. Refuses when the file changed on disk since it was
    /// opened or last saved; writes atomically.
    pub fn save(&mut self) -> Result<(), SessionError> {
        let saved = self.save_job(String::new()).write()?;
        self.mark_saved(&saved);
        Ok(())
    }

    /// What saving writes, taken now (so the write can happen without the session lock).
    fn save_job(&self, plot_id: String) -> SaveJob {
        SaveJob {
            plot_id,
            path: self.path.clone(),
            root: None,
            bytes: self.to_bytes(),
            expected_sha256: self.disk_sha256.clone(),
            state: self.state,
        }
    }

    /// The file now holds the document as it was at `saved.state` (later edits stay unsaved).
    fn mark_saved(&mut self, saved: &SavedPlot) {
        self.disk_sha256.clone_from(&saved.sha256);
        self.saved_state = saved.state;
    }
}

/// A save prepared under the session lock ([`Session::save_job`]) and written without it.
#[derive(Debug)]
pub struct SaveJob {
    plot_id: String,
    path: PathBuf,
    /// The store root the file lies under: its directory is opened beneath it.
    root: Option<PathBuf>,
    bytes: Vec<u8>,
    expected_sha256: String,
    state: u64,
}

/// A finished save, for [`Session::finish_save`].
#[derive(Debug)]
pub struct SavedPlot {
    plot_id: String,
    state: u64,
    sha256: String,
}

impl SaveJob {
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Refuse when the file changed on disk since it was opened or last saved, else write it
    /// atomically — both through one descriptor of its directory, opened beneath the store
    /// root (see [`crate::fsio`]). Blocking: async code runs it through [`off_runtime`].
    pub fn write(self) -> Result<SavedPlot, SessionError> {
        let replaced = replace_beneath(
            self.root.as_deref(),
            &self.path,
            &self.expected_sha256,
            &self.bytes,
        )
        .map_err(|source| SessionError::Write {
            path: self.path.clone(),
            source,
        })?;
        if replaced == Replaced::Changed {
            return Err(SessionError::Conflict { path: self.path });
        }
        Ok(SavedPlot {
            plot_id: self.plot_id,
            state: self.state,
            sha256: sha256_hex(&self.bytes),
        })
    }
}

/// One open plot.
#[derive(Debug, Clone)]
pub struct OpenPlot {
    pub id: String,
    pub title: String,
    pub entry: ItemEntry,
    pub doc: Document,
    selection: Vec<String>,
}

impl OpenPlot {
    /// The selection as given (may contain nested paths like `<id>/positions/4`).
    pub fn selection_raw(&self) -> &[String] {
        &self.selection
    }

    /// The selected feature ids: nested paths resolved to their feature, duplicates and ids
    /// not in the plot dropped, selection order kept.
    pub fn selected_ids(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for s in &self.selection {
            if let Some(id) = self.resolve_selection_path(s)
                && !out.contains(&id)
            {
                out.push(id);
            }
        }
        out
    }

    fn resolve_selection_path(&self, s: &str) -> Option<String> {
        if self.doc.feature(s).is_some() {
            return Some(s.to_owned());
        }
        // Longest prefix ending at a '/' that is a feature id (ids may themselves contain '/').
        let mut cut = s.len();
        while let Some(i) = s[..cut].rfind('/') {
            let prefix = &s[..i];
            if self.doc.feature(prefix).is_some() {
                return Some(prefix.to_owned());
            }
            cut = i;
        }
        None
    }

    pub fn bbox(&self) -> Option<[f64; 4]> {
        self.doc
            .features()
            .iter()
            .fold(None, |acc, f| {
                model::union_bbox(acc, model::feature_bbox(f))
            })
            .or(self.entry.bbox)
    }
}

/// A person's working session: the catalogue and the open plots.
#[derive(Debug, Default)]
pub struct Session {
    stores: Vec<StacStore>,
    /// Catalogues on a STAC API; each opened plot is copied into its mirror, a folder store in
    /// `stores` with the API store's id (see [`crate::stac_api`]).
    api: Vec<crate::stac_api::ApiStore>,
    plots: Vec<OpenPlot>,
    active: Option<String>,
    /// Bumped by every change a surface could show (open, focus, close, edit, undo, redo,
    /// revert, save, selection, a catalogue re-read): live views compare it instead of
    /// serialising the whole state to find out whether anything changed.
    generation: u64,
    /// Where this session's changes are recorded before they are made (see
    /// [`crate::journal`]); `None`: the session lives in this process only.
    journal: Option<Arc<dyn Journal>>,
    /// The newest journal entry applied here.
    journal_seq: u64,
}

/// What an op returned.
enum Done {
    Nothing,
    Touched(Vec<String>),
    Label(String),
}

/// Most times a change is retried when other instances keep taking its journal entry first.
const MAX_JOURNAL_RETRIES: usize = 32;

/// A random pause of up to 2^tries × 0.5 ms (capped at 32 ms) before trying again.
fn conflict_pause(tries: usize) -> Duration {
    use std::hash::BuildHasher;
    let cap_us = 500u64 << tries.min(6);
    let jitter = std::collections::hash_map::RandomState::new().hash_one(tries) % cap_us;
    Duration::from_micros(jitter)
}

impl Session {
    pub fn new(stores: Vec<StacStore>) -> Self {
        Self {
            stores,
            api: Vec::new(),
            plots: Vec::new(),
            active: None,
            generation: 0,
            journal: None,
            journal_seq: 0,
        }
    }

    /// This session recorded in `journal`, and made of what it already holds: the entries are
    /// replayed now (a restarted instance gets every open plot, selection, undo step and
    /// unsaved edit back), and again before every later read or change ([`Session::sync`]).
    pub fn with_journal(self, journal: Arc<dyn Journal>) -> Result<Self, SessionError> {
        let mut s = self.journaled(journal);
        s.sync()?;
        Ok(s)
    }

    /// [`Session::with_journal`] without replaying now: the entries are replayed at the first
    /// [`Session::sync`] (for sessions made where a failure cannot be reported, such as one an
    /// MCP client names; a journal that is down then refuses changes with its own message).
    #[must_use]
    pub fn journaled(mut self, journal: Arc<dyn Journal>) -> Self {
        self.journal = Some(journal);
        self.journal_seq = 0;
        self
    }

    /// The newest journal entry this session has applied (0 without a journal).
    pub fn journal_seq(&self) -> u64 {
        self.journal_seq
    }

    /// Apply the journal's entries this session has not seen (changes made by other instances).
    /// One round trip when there are none; nothing at all without a journal. An entry that does
    /// not replay here is logged and skipped (every replica skips it the same way).
    pub fn sync(&mut self) -> Result<(), SessionError> {
        let Some(journal) = self.journal.clone() else {
            return Ok(());
        };
        // A journal answers in batches (a long history is not read into memory at once).
        loop {
            let batch = journal.since(self.journal_seq)?;
            if batch.is_empty() {
                return Ok(());
            }
            for (seq, op) in batch {
                if let Err(e) = self.apply_op(&op, None) {
                    tracing::error!(
                        session = journal.session(),
                        seq,
                        "a journaled change does not replay here ({e}); skipped"
                    );
                }
                self.journal_seq = seq;
            }
        }
    }

    /// Make a change: without a journal, at once; with one, write-ahead — catch up, check that
    /// the op applies, store it as the next entry (another instance taking that entry first
    /// means catching up and checking again), and only then change the session. A change is
    /// acknowledged only once its entry is stored, so a crash right after loses nothing that
    /// was acknowledged.
    fn perform(&mut self, op: SessionOp, staged: Option<LoadedPlot>) -> Result<Done, SessionError> {
        let Some(journal) = self.journal.clone() else {
            return self.apply_op(&op, staged);
        };
        if let Some(loaded) = &staged
            && !journal.has_content(&loaded.sha256)?
        {
            journal.put_content(&loaded.sha256, &loaded.content.to_json_bytes())?;
        }
        let mut tries = 0;
        loop {
            self.sync()?;
            self.check_op(&op)?;
            let seq = self.journal_seq + 1;
            match journal.append(seq, &op) {
                Ok(()) => break,
                Err(JournalError::Conflict { .. }) if tries < MAX_JOURNAL_RETRIES => {
                    tries += 1;
                    // Two instances that keep colliding would take turns losing: a random
                    // pause, growing with the tries (at most 32 ms), lets one through.
                    std::thread::sleep(conflict_pause(tries));
                }
                Err(e) => return Err(e.into()),
            }
        }
        self.journal_seq += 1;
        self.apply_op(&op, staged).inspect_err(|e| {
            tracing::error!(
                session = journal.session(),
                seq = self.journal_seq,
                "a journaled change passed its check but did not apply ({e})"
            );
        })
    }

    /// Would `op` apply now? (What [`Session::perform`] checks before journaling it.)
    fn check_op(&self, op: &SessionOp) -> Result<(), SessionError> {
        match op {
            SessionOp::Open { .. } => Ok(()),
            SessionOp::Focus { plot_id }
            | SessionOp::Close { plot_id }
            | SessionOp::Select { plot_id, .. }
            | SessionOp::Revert { plot_id, .. }
            | SessionOp::Saved { plot_id, .. } => self.plot(plot_id).map(|_| ()),
            SessionOp::Apply {
                plot_id,
                expected_version,
                change_set,
            } => {
                let doc = &self.plot(plot_id)?.doc;
                if doc.version() != *expected_version {
                    return Err(SessionError::VersionMismatch {
                        expected: *expected_version,
                        actual: doc.version(),
                    });
                }
                doc.check(change_set)
            }
            SessionOp::Undo { plot_id } => match self.plot(plot_id)?.doc.can_undo() {
                true => Ok(()),
                false => Err(SessionError::NothingToUndo(plot_id.clone())),
            },
            SessionOp::Redo { plot_id } => match self.plot(plot_id)?.doc.can_redo() {
                true => Ok(()),
                false => Err(SessionError::NothingToRedo(plot_id.clone())),
            },
        }
    }

    /// The one place an op changes the session, for a local change and a replayed one alike.
    /// `staged`: the content an `Open`/`Revert` made here read; a replay reads it again.
    fn apply_op(
        &mut self,
        op: &SessionOp,
        staged: Option<LoadedPlot>,
    ) -> Result<Done, SessionError> {
        match op {
            SessionOp::Open { plot_id, sha256 } => {
                let loaded = match staged {
                    Some(l) => l,
                    None => self.load_for_replay(plot_id, sha256)?,
                };
                self.open_loaded_raw(loaded);
                Ok(Done::Nothing)
            }
            SessionOp::Focus { plot_id } => match self.focus_raw(plot_id) {
                true => Ok(Done::Nothing),
                false => Err(SessionError::NotOpen(plot_id.clone())),
            },
            SessionOp::Close { plot_id } => self.close_raw(plot_id).map(|()| Done::Nothing),
            SessionOp::Select { plot_id, ids } => {
                self.plot_mut(plot_id)?.selection.clone_from(ids);
                Ok(Done::Nothing)
            }
            SessionOp::Apply {
                plot_id,
                expected_version,
                change_set,
            } => self
                .apply_raw(plot_id, change_set, *expected_version)
                .map(Done::Touched),
            SessionOp::Undo { plot_id } => self.undo_raw(plot_id).map(Done::Label),
            SessionOp::Redo { plot_id } => self.redo_raw(plot_id).map(Done::Label),
            SessionOp::Revert { plot_id, sha256 } => {
                let loaded = match staged {
                    Some(l) => l,
                    None => self.load_for_replay(plot_id, sha256)?,
                };
                self.revert_loaded_raw(loaded).map(|()| Done::Nothing)
            }
            SessionOp::Saved {
                plot_id,
                state,
                sha256,
            } => {
                self.plot_mut(plot_id)?.doc.mark_saved(&SavedPlot {
                    plot_id: plot_id.clone(),
                    state: *state,
                    sha256: sha256.clone(),
                });
                Ok(Done::Nothing)
            }
        }
    }

    /// The content a journaled `Open`/`Revert` started from: the file, when it is still that
    /// version (shared with other sessions through the cache), else the copy the journal keeps.
    fn load_for_replay(&mut self, plot_id: &str, sha256: &str) -> Result<LoadedPlot, SessionError> {
        let loader = self.loader(plot_id)?;
        if let Ok(loaded) = loader.load()
            && loaded.sha256 == sha256
        {
            return Ok(loaded);
        }
        let journal = self
            .journal
            .clone()
            .ok_or_else(|| SessionError::Reader("no journal to replay from".to_owned()))?;
        let bytes = journal.content(sha256)?.ok_or_else(|| {
            JournalError::Corrupt(format!(
                "no stored content for {plot_id} at file version {sha256}"
            ))
        })?;
        let collection: Value = serde_json::from_slice(&bytes)
            .map_err(|e| JournalError::Corrupt(format!("stored content of {plot_id}: {e}")))?;
        let path = loader.entry.features_path.clone().unwrap_or_default();
        Ok(LoadedPlot {
            entry: loader.entry,
            content: Arc::new(Content::from_collection(collection)),
            path,
            sha256: sha256.to_owned(),
        })
    }

    /// Changes whenever anything a surface shows of this session may have changed (see the
    /// field); equal generations mean nothing changed.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    fn changed(&mut self) {
        self.generation = self.generation.wrapping_add(1);
    }

    pub fn stores(&self) -> &[StacStore] {
        &self.stores
    }

    /// This session with catalogues on STAC APIs besides its folder stores.
    #[must_use]
    pub fn with_api_stores(mut self, api: Vec<crate::stac_api::ApiStore>) -> Self {
        self.api = api;
        self
    }

    pub fn api_stores(&self) -> &[crate::stac_api::ApiStore] {
        &self.api
    }

    /// The API store a plot id belongs to.
    pub fn api_store_for(&self, plot_id: &str) -> Option<&crate::stac_api::ApiStore> {
        self.api.iter().find(|a| a.item_id(plot_id).is_some())
    }

    /// Copy an API plot into its store's mirror (fresh from the server) before it is opened.
    fn materialise(&mut self, plot_id: &str) -> Result<(), SessionError> {
        let Some(api) = self.api_store_for(plot_id).cloned() else {
            return Ok(());
        };
        let fetched = api.fetch(plot_id)?;
        self.loader_fetched(plot_id, fetched).map(|_| ())
    }

    /// [`Session::loader`] for an API plot already fetched (without the session lock, by
    /// [`crate::stac_api::ApiStore::fetch`]): the copy is written into the mirror, then read.
    pub fn loader_fetched(
        &mut self,
        plot_id: &str,
        fetched: crate::stac_api::FetchedPlot,
    ) -> Result<PlotLoader, SessionError> {
        let api = self
            .api_store_for(plot_id)
            .cloned()
            .ok_or_else(|| SessionError::UnknownPlot(plot_id.to_owned()))?;
        let at = match self.stores.iter().position(|s| s.id == api.id) {
            Some(i) => i,
            None => {
                let dir = api.mirror_dir.clone().ok_or_else(|| {
                    SessionError::Reader("no mirror folder for the STAC API store".to_owned())
                })?;
                std::fs::create_dir_all(&dir).map_err(|source| SessionError::Write {
                    path: dir.clone(),
                    source,
                })?;
                self.stores.push(StacStore::create(
                    &api.id,
                    &dir,
                    "STAC API plots opened here",
                )?);
                self.stores.len() - 1
            }
        };
        api.install(&mut self.stores[at], plot_id, fetched)?;
        self.changed();
        self.loader_of(plot_id)
    }

    /// Read again every store whose catalogue changed on disk since it was read (a plot imported,
    /// replaced or removed by another process), so a long-lived session — the workbench's —
    /// searches and opens what is there now. Cheap when nothing changed: one read of the root
    /// catalogue and a `stat` per item. A store that changed but cannot be read is kept as it
    /// was (logged): a half-written catalogue must not empty the search.
    pub fn refresh_stores(&mut self) -> &[StacStore] {
        for store in &mut self.stores {
            match store.reread_if_changed() {
                Ok(Some(fresh)) => {
                    *store = fresh;
                    self.generation = self.generation.wrapping_add(1);
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(
                    "catalogue {} changed but could not be read again: {e}",
                    store.id
                ),
            }
        }
        &self.stores
    }

    /// The plots `reference` names in every store (its id, or its short name:
    /// [`StacStore::lookup`]) as `(plot id, title)`, reading the stores again first when none
    /// does. A plot of a STAC API store is named by its id only.
    pub fn plots_named(&mut self, reference: &str) -> Vec<(String, String)> {
        let find = |stores: &[StacStore]| -> Vec<(String, String)> {
            stores
                .iter()
                .flat_map(|s| s.lookup(reference))
                .map(|i| (i.plot_id.clone(), i.title.clone()))
                .collect()
        };
        let found = find(&self.stores);
        if !found.is_empty() {
            return found;
        }
        self.refresh_stores();
        let found = find(&self.stores);
        if found.is_empty() && reference.starts_with("stac://") {
            // An API store's plot is fetched on opening: its id is taken as it is.
            return vec![(reference.to_owned(), reference.to_owned())];
        }
        found
    }

    pub fn find_item(&self, plot_id: &str) -> Option<(&StacStore, &ItemEntry)> {
        self.stores
            .iter()
            .find_map(|s| s.item(plot_id).map(|i| (s, i)))
    }

    /// Open a plot (or focus it when already open) and make it active. This reads the file:
    /// async surfaces use [`Session::loader`] under the lock, [`PlotLoader::load`] off the runtime
    /// without it, then [`Session::open_loaded`] (what [`crate::debrief::Debrief::open_plot`] does).
    pub fn open(&mut self, plot_id: &str) -> Result<&OpenPlot, SessionError> {
        if !self.focus_if_open(plot_id) {
            let loaded = self.loader(plot_id)?.load()?;
            self.open_loaded(loaded)?;
        }
        self.plot(plot_id)
    }

    /// Make an open plot active; false when it is not open. (With a journal, a focus that
    /// cannot be recorded is logged and the active plot stays as it was.)
    pub fn focus_if_open(&mut self, plot_id: &str) -> bool {
        if self.journal.is_none() {
            return self.focus_raw(plot_id);
        }
        if let Err(e) = self.sync() {
            tracing::warn!("{e}");
        }
        if !self.plots.iter().any(|p| p.id == plot_id) {
            return false;
        }
        if self.active.as_deref() != Some(plot_id) {
            let op = SessionOp::Focus {
                plot_id: plot_id.to_owned(),
            };
            if let Err(e) = self.perform(op, None) {
                tracing::warn!("could not make {plot_id} the active plot: {e}");
            }
        }
        true
    }

    fn focus_raw(&mut self, plot_id: &str) -> bool {
        if self.plots.iter().any(|p| p.id == plot_id) {
            self.active = Some(plot_id.to_owned());
            self.changed();
            true
        } else {
            false
        }
    }

    /// The loader of a plot the session's stores know.
    fn loader_of(&self, plot_id: &str) -> Result<PlotLoader, SessionError> {
        let (store, entry) = self
            .find_item(plot_id)
            .ok_or_else(|| SessionError::UnknownPlot(plot_id.to_owned()))?;
        Ok(PlotLoader {
            store: store.clone(),
            entry: entry.clone(),
        })
    }

    /// What reading `plot_id`'s file needs, so the read can happen without the session lock.
    pub fn loader(&mut self, plot_id: &str) -> Result<PlotLoader, SessionError> {
        self.materialise(plot_id)?;
        if self.find_item(plot_id).is_none() {
            self.refresh_stores();
        }
        self.loader_of(plot_id)
    }

    /// Add a loaded plot and make it active. When it was opened meanwhile (another call on this
    /// session), the open one is kept — it may have edits — and focused.
    pub fn open_loaded(&mut self, loaded: LoadedPlot) -> Result<&OpenPlot, SessionError> {
        let id = loaded.entry.plot_id.clone();
        let op = SessionOp::Open {
            plot_id: id.clone(),
            sha256: loaded.sha256.clone(),
        };
        self.perform(op, Some(loaded))?;
        self.plot(&id)
    }

    fn open_loaded_raw(&mut self, loaded: LoadedPlot) {
        let id = loaded.entry.plot_id.clone();
        if !self.plots.iter().any(|p| p.id == id) {
            self.plots.push(OpenPlot {
                id: id.clone(),
                title: loaded.entry.title.clone(),
                entry: loaded.entry,
                doc: Document::from_content(loaded.content, loaded.path, loaded.sha256),
                selection: Vec::new(),
            });
        }
        self.active = Some(id);
        self.changed();
    }

    /// Close a plot, discarding unsaved edits (a surface asks the person first).
    pub fn close(&mut self, plot_id: &str) -> Result<(), SessionError> {
        let op = SessionOp::Close {
            plot_id: plot_id.to_owned(),
        };
        self.perform(op, None).map(|_| ())
    }

    fn close_raw(&mut self, plot_id: &str) -> Result<(), SessionError> {
        let before = self.plots.len();
        self.plots.retain(|p| p.id != plot_id);
        if self.plots.len() == before {
            return Err(SessionError::NotOpen(plot_id.to_owned()));
        }
        if self.active.as_deref() == Some(plot_id) {
            self.active = self.plots.last().map(|p| p.id.clone());
        }
        self.changed();
        Ok(())
    }

    pub fn open_plots(&self) -> &[OpenPlot] {
        &self.plots
    }

    pub fn active_id(&self) -> Option<&str> {
        self.active.as_deref()
    }

    pub fn active(&self) -> Result<&OpenPlot, SessionError> {
        let id = self.active.as_deref().ok_or(SessionError::NoPlotOpen)?;
        self.plot(id)
    }

    pub fn plot(&self, plot_id: &str) -> Result<&OpenPlot, SessionError> {
        self.plots
            .iter()
            .find(|p| p.id == plot_id)
            .ok_or_else(|| SessionError::NotOpen(plot_id.to_owned()))
    }

    /// The plot to change: counts as a change of the session (see [`Session::generation`]).
    /// Not journaled: changes made through it stay in this process (the session's own methods
    /// are what other instances see).
    pub fn plot_mut(&mut self, plot_id: &str) -> Result<&mut OpenPlot, SessionError> {
        self.changed();
        self.plots
            .iter_mut()
            .find(|p| p.id == plot_id)
            .ok_or_else(|| SessionError::NotOpen(plot_id.to_owned()))
    }

    /// Replace a plot's selection (ids or nested paths, as a map click gives them).
    pub fn select(&mut self, plot_id: &str, ids: Vec<String>) -> Result<(), SessionError> {
        let op = SessionOp::Select {
            plot_id: plot_id.to_owned(),
            ids,
        };
        self.perform(op, None).map(|_| ())
    }

    /// Apply a change set as one undo step, refusing when the plot changed since
    /// `expected_version` (the version the call was prepared and confirmed against).
    pub fn apply(
        &mut self,
        plot_id: &str,
        cs: &ChangeSet,
        expected_version: u64,
    ) -> Result<Vec<String>, SessionError> {
        if self.journal.is_none() {
            return self.apply_raw(plot_id, cs, expected_version);
        }
        let op = SessionOp::Apply {
            plot_id: plot_id.to_owned(),
            expected_version,
            change_set: cs.clone(),
        };
        match self.perform(op, None)? {
            Done::Touched(ids) => Ok(ids),
            _ => Ok(Vec::new()),
        }
    }

    fn apply_raw(
        &mut self,
        plot_id: &str,
        cs: &ChangeSet,
        expected_version: u64,
    ) -> Result<Vec<String>, SessionError> {
        let plot = self.plot_mut(plot_id)?;
        let actual = plot.doc.version();
        if actual != expected_version {
            return Err(SessionError::VersionMismatch {
                expected: expected_version,
                actual,
            });
        }
        plot.doc.apply(cs)
    }

    pub fn undo(&mut self, plot_id: &str) -> Result<String, SessionError> {
        let op = SessionOp::Undo {
            plot_id: plot_id.to_owned(),
        };
        match self.perform(op, None)? {
            Done::Label(l) => Ok(l),
            _ => Ok(String::new()),
        }
    }

    fn undo_raw(&mut self, plot_id: &str) -> Result<String, SessionError> {
        self.plot_mut(plot_id)?
            .doc
            .undo()
            .ok_or_else(|| SessionError::NothingToUndo(plot_id.to_owned()))
    }

    pub fn redo(&mut self, plot_id: &str) -> Result<String, SessionError> {
        let op = SessionOp::Redo {
            plot_id: plot_id.to_owned(),
        };
        match self.perform(op, None)? {
            Done::Label(l) => Ok(l),
            _ => Ok(String::new()),
        }
    }

    fn redo_raw(&mut self, plot_id: &str) -> Result<String, SessionError> {
        self.plot_mut(plot_id)?
            .doc
            .redo()
            .ok_or_else(|| SessionError::NothingToRedo(plot_id.to_owned()))
    }

    /// Discard unsaved edits: reload the file as it is on disk now.
    pub fn revert(&mut self, plot_id: &str) -> Result<(), SessionError> {
        self.plot(plot_id)?;
        let loaded = self.loader(plot_id)?.load()?;
        self.revert_loaded(loaded)
    }

    /// Replace an open plot's document with a fresh load of its file (see [`Session::revert`]).
    pub fn revert_loaded(&mut self, loaded: LoadedPlot) -> Result<(), SessionError> {
        let op = SessionOp::Revert {
            plot_id: loaded.entry.plot_id.clone(),
            sha256: loaded.sha256.clone(),
        };
        self.perform(op, Some(loaded)).map(|_| ())
    }

    fn revert_loaded_raw(&mut self, loaded: LoadedPlot) -> Result<(), SessionError> {
        let plot = self.plot_mut(&loaded.entry.plot_id)?;
        let version = plot.doc.version() + 1;
        plot.doc = Document::from_content(loaded.content, loaded.path, loaded.sha256);
        plot.doc.version = version;
        plot.selection.retain(|_| true);
        Ok(())
    }

    /// Save a plot to disk. Only people's surfaces call this.
    pub fn save(&mut self, plot_id: &str) -> Result<(), SessionError> {
        self.check_save(plot_id)?;
        if let Some(api) = self.api_store_for(plot_id) {
            api.check_unchanged(plot_id, self.plot(plot_id)?.doc.disk_sha256())?;
        }
        let saved = self.save_job(plot_id)?.write()?;
        self.finish_save(&saved)?;
        match self.write_back(plot_id) {
            Some(w) => w.run(),
            None => Ok(()),
        }
    }

    /// Before a save: a plot of a STAC API without transactions is refused (nothing written).
    pub fn check_save(&self, plot_id: &str) -> Result<(), SessionError> {
        if let Some(api) = self.api_store_for(plot_id) {
            api.writable("a saved plot")?;
        }
        Ok(())
    }

    /// After a save: what writes a STAC API plot's saved mirror back to the server (features
    /// asset, then item); `None` for a folder plot.
    pub fn write_back(&self, plot_id: &str) -> Option<WriteBack> {
        let api = self.api_store_for(plot_id)?.clone();
        let (mirror, entry) = self.find_item(plot_id)?;
        Some(WriteBack {
            api,
            mirror: mirror.clone(),
            entry: entry.clone(),
        })
    }

    /// [`Session::save`] in two halves, so the file is written without the session lock held:
    /// take the job here, [`SaveJob::write`] it, then [`Session::finish_save`].
    pub fn save_job(&self, plot_id: &str) -> Result<SaveJob, SessionError> {
        let mut job = self.plot(plot_id)?.doc.save_job(plot_id.to_owned());
        job.root = self.find_item(plot_id).map(|(store, _)| store.root.clone());
        Ok(job)
    }

    /// Record a finished save (the plot is clean unless it was edited while it was written).
    pub fn finish_save(&mut self, saved: &SavedPlot) -> Result<(), SessionError> {
        let op = SessionOp::Saved {
            plot_id: saved.plot_id.clone(),
            state: saved.state,
            sha256: saved.sha256.clone(),
        };
        self.perform(op, None).map(|_| ())
    }
}

/// A saved STAC API plot to write back to its server, taken out of the session so the requests
/// are made without the session lock held.
#[derive(Debug, Clone)]
pub struct WriteBack {
    api: crate::stac_api::ApiStore,
    mirror: StacStore,
    entry: ItemEntry,
}

impl WriteBack {
    /// Blocking (HTTP): async code runs it on a blocking thread.
    pub fn run(self) -> Result<(), SessionError> {
        self.api.put_folder_plot(&self.mirror, &self.entry)?;
        Ok(())
    }
}

/// A plot's catalogue entry and store, taken out of the session so its file is read without the
/// session lock held.
#[derive(Debug, Clone)]
pub struct PlotLoader {
    store: StacStore,
    entry: ItemEntry,
}

/// A features file read (or shared from another session) for [`Session::open_loaded`].
#[derive(Debug, Clone)]
pub struct LoadedPlot {
    entry: ItemEntry,
    content: Arc<Content>,
    path: PathBuf,
    sha256: String,
}

impl LoadedPlot {
    pub fn plot_id(&self) -> &str {
        &self.entry.plot_id
    }
}

impl PlotLoader {
    pub fn plot_id(&self) -> &str {
        &self.entry.plot_id
    }

    pub fn features_path(&self) -> Option<&Path> {
        self.entry.features_path.as_deref()
    }

    /// Read the features file, or share the copy another session already holds of this exact
    /// file version. Blocking (file I/O and parsing): async code runs it through [`off_runtime`].
    pub fn load(&self) -> Result<LoadedPlot, SessionError> {
        let (content, path, sha256) = CACHE.load(&self.store, &self.entry)?;
        Ok(LoadedPlot {
            entry: self.entry.clone(),
            content,
            path,
            sha256,
        })
    }
}

/// What identifies one version of a file without reading it: a later write, rename or
/// replacement changes at least one of these.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FileStamp {
    len: u64,
    modified: Option<std::time::SystemTime>,
    #[cfg(unix)]
    unix: (u64, u64, i64, i64),
}

impl FileStamp {
    /// `stat` only: never opens the file, so it cannot block on a FIFO.
    fn of(path: &Path) -> Option<Self> {
        let m = std::fs::metadata(path).ok()?;
        #[cfg(unix)]
        let unix = {
            use std::os::unix::fs::MetadataExt;
            (m.dev(), m.ino(), m.ctime(), m.ctime_nsec())
        };
        Some(Self {
            len: m.len(),
            modified: m.modified().ok(),
            #[cfg(unix)]
            unix,
        })
    }
}

struct CacheEntry {
    stamp: FileStamp,
    sha256: String,
    /// Weak: the copy lives only as long as some session holds it unedited.
    content: Weak<Content>,
}

/// The per-process table of parsed features files, keyed by path and file version.
#[derive(Default)]
struct PlotCache {
    entries: Mutex<HashMap<PathBuf, CacheEntry>>,
    /// One reader per path at a time, so sessions opening the same plot together parse it once.
    reading: Mutex<HashMap<PathBuf, Arc<Mutex<()>>>>,
}

static CACHE: LazyLock<PlotCache> = LazyLock::new(PlotCache::default);

impl PlotCache {
    fn load(
        &self,
        store: &StacStore,
        entry: &ItemEntry,
    ) -> Result<(Arc<Content>, PathBuf, String), SessionError> {
        let Some(path) = entry.features_path.clone() else {
            // The store reports the missing features link.
            let loaded = store.load_features(entry)?;
            return Ok((
                Arc::new(Content::from_collection(loaded.collection)),
                loaded.path,
                loaded.sha256,
            ));
        };
        let gate = self.reader_for(&path);
        let result = {
            let _one_reader = gate.lock().unwrap_or_else(PoisonError::into_inner);
            self.load_locked(store, entry, &path)
        };
        drop(gate);
        self.forget_idle_reader(&path);
        result
    }

    fn load_locked(
        &self,
        store: &StacStore,
        entry: &ItemEntry,
        path: &Path,
    ) -> Result<(Arc<Content>, PathBuf, String), SessionError> {
        let before = FileStamp::of(path);
        if let Some(stamp) = &before
            && let Some(hit) = self.lookup(path, stamp)
        {
            return Ok(hit);
        }
        // Every real read goes through the store (its confinement and file-type checks).
        let loaded = store.load_features(entry)?;
        let content = Arc::new(Content::from_collection(loaded.collection));
        // Shared only when the file did not change while it was read.
        if let Some(stamp) = before
            && FileStamp::of(&loaded.path).as_ref() == Some(&stamp)
        {
            let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
            entries.retain(|_, e| e.content.strong_count() > 0);
            entries.insert(
                loaded.path.clone(),
                CacheEntry {
                    stamp,
                    sha256: loaded.sha256.clone(),
                    content: Arc::downgrade(&content),
                },
            );
        }
        Ok((content, loaded.path, loaded.sha256))
    }

    fn lookup(&self, path: &Path, stamp: &FileStamp) -> Option<(Arc<Content>, PathBuf, String)> {
        let entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        let e = entries.get(path).filter(|e| &e.stamp == stamp)?;
        let content = e.content.upgrade()?;
        Some((content, path.to_owned(), e.sha256.clone()))
    }

    fn reader_for(&self, path: &Path) -> Arc<Mutex<()>> {
        self.reading
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(path.to_owned())
            .or_default()
            .clone()
    }

    fn forget_idle_reader(&self, path: &Path) {
        let mut reading = self.reading.lock().unwrap_or_else(PoisonError::into_inner);
        if reading.get(path).is_some_and(|g| Arc::strong_count(g) == 1) {
            reading.remove(path);
        }
    }
}

/// How long a store read may take before the call gives up and says why.
pub const STORE_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// Store reads in progress at once, process-wide. A read that never ends (a FIFO nobody writes)
/// keeps its slot, so at most this many threads can be stuck, and later reads are refused with
/// [`SessionError::StoreBusy`] instead of piling up.
pub const MAX_STORE_READS: usize = 4;

static STORE_READS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(MAX_STORE_READS);

/// Run a blocking store read off the async runtime (on tokio's blocking pool), bounded by
/// `timeout`; `path` names the file in the timeout message. Outside a runtime it runs inline.
pub async fn off_runtime<T, F>(path: PathBuf, timeout: Duration, read: F) -> Result<T, SessionError>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, SessionError> + Send + 'static,
{
    if tokio::runtime::Handle::try_current().is_err() {
        return read();
    }
    let timed_out = || SessionError::ReadTimedOut {
        path: path.clone(),
        after: timeout,
    };
    let started = tokio::time::Instant::now();
    let permit = match tokio::time::timeout(timeout, STORE_READS.acquire()).await {
        Ok(Ok(p)) => p,
        Ok(Err(_closed)) => return Err(SessionError::StoreBusy(MAX_STORE_READS)),
        Err(_) => return Err(SessionError::StoreBusy(MAX_STORE_READS)),
    };
    // The permit travels with the read: a read that outlives the timeout still holds it.
    let task = tokio::task::spawn_blocking(move || {
        let _slot = permit;
        read()
    });
    let left = timeout.saturating_sub(started.elapsed());
    match tokio::time::timeout(left, task).await {
        Ok(Ok(result)) => result,
        Ok(Err(join)) => Err(SessionError::Reader(join.to_string())),
        Err(_) => {
            tracing::warn!(path = %path.display(), "a store read did not finish in time");
            Err(timed_out())
        }
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Issue 30 item 7: an id a client sent is quoted clipped, however long it was.
    #[test]
    fn errors_quote_a_clipped_id() {
        let id = "x".repeat(1_000_000);
        for e in [
            SessionError::UnknownPlot(id.clone()),
            SessionError::NotOpen(id.clone()),
            SessionError::NothingToUndo(id.clone()),
            SessionError::NothingToRedo(id.clone()),
            SessionError::MissingFeature(id.clone()),
            SessionError::Store(StoreError::BadPlotId(id)),
        ] {
            let msg = e.to_string();
            assert!(
                msg.len() < 400 && msg.contains("(1000000 bytes)"),
                "{}",
                &msg[..300]
            );
        }
    }

    fn doc() -> Document {
        let c = json!({"type": "FeatureCollection", "features": [
            {"type": "Feature", "id": "a", "properties": {"kind": "TRACK", "v": 1}},
            {"type": "Feature", "id": "b", "properties": {"kind": "POINT", "v": 2}},
            {"type": "Feature", "id": "c", "properties": {"kind": "POINT", "v": 3}}
        ]});
        Document::new(c, PathBuf::from("/nonexistent"), String::new())
    }

    #[test]
    fn one_change_set_is_one_undo_step_and_undo_is_byte_identical() {
        let mut d = doc();
        let original = d.to_bytes();
        let cs = ChangeSet {
            label: "edit".into(),
            edits: vec![
                Edit::Upsert {
                    id: "a".into(),
                    item: json!({"type": "Feature", "id": "a", "properties": {"kind": "TRACK", "v": 9}}),
                },
                Edit::Remove { id: "b".into() },
                Edit::Upsert {
                    id: "z".into(),
                    item: json!({"type": "Feature", "properties": {"kind": "ZONE"}}),
                },
            ],
        };
        assert!(!d.is_dirty());
        let touched = d.apply(&cs).unwrap();
        assert_eq!(touched, vec!["a", "b", "z"]);
        assert!(d.is_dirty());
        assert_eq!(d.features().len(), 3);
        assert_eq!(d.feature("z").unwrap()["id"], "z");
        let edited = d.to_bytes();
        assert_eq!(d.undo().as_deref(), Some("edit"));
        assert_eq!(
            d.to_bytes(),
            original,
            "one undo restores the document byte for byte"
        );
        assert!(!d.is_dirty(), "back at the saved state");
        d.redo();
        assert_eq!(d.to_bytes(), edited);
        assert!(d.is_dirty());
    }

    const BULK: &str = "stac://demo/bulk-tracks/item.json";

    fn recolour(id: &str) -> ChangeSet {
        ChangeSet {
            label: "recolour".into(),
            edits: vec![Edit::Upsert {
                id: id.into(),
                item: json!({"type": "Feature", "id": id, "properties": {"kind": "TRACK", "stroke": "#123456"}}),
            }],
        }
    }

    #[test]
    fn sessions_opening_the_same_file_share_one_copy_until_one_edits_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::demo::ensure_demo_store(dir.path()).unwrap();
        let mut a = Session::new(vec![store.clone()]);
        let mut b = Session::new(vec![store.clone()]);
        a.open(BULK).unwrap();
        b.open(BULK).unwrap();
        let shared = |a: &Session, b: &Session| {
            a.plot(BULK)
                .unwrap()
                .doc
                .shares_content_with(&b.plot(BULK).unwrap().doc)
        };
        assert!(
            shared(&a, &b),
            "two sessions viewing one file hold one copy"
        );
        let pristine = b.plot(BULK).unwrap().doc.to_bytes();

        let first = model::feature_id(&a.plot(BULK).unwrap().doc.features()[0]);
        a.apply(BULK, &recolour(&first), 1).unwrap();
        assert!(!shared(&a, &b), "the edit made a private copy");
        assert_eq!(
            b.plot(BULK).unwrap().doc.to_bytes(),
            pristine,
            "the other session does not see the edit"
        );
        assert_ne!(a.plot(BULK).unwrap().doc.to_bytes(), pristine);

        // A third session still gets the unedited shared copy; undo keeps a's copy private.
        let mut c = Session::new(vec![store]);
        c.open(BULK).unwrap();
        assert!(shared(&b, &c));
        a.undo(BULK).unwrap();
        assert_eq!(a.plot(BULK).unwrap().doc.to_bytes(), pristine);
        assert!(!shared(&a, &c));
    }

    #[test]
    fn a_file_changed_on_disk_is_read_again_not_shared() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::demo::ensure_demo_store(dir.path()).unwrap();
        let mut a = Session::new(vec![store.clone()]);
        a.open(BULK).unwrap();
        let path = a.plot(BULK).unwrap().doc.path().to_owned();
        let mut text = std::fs::read_to_string(&path).unwrap();
        let first = model::feature_id(&a.plot(BULK).unwrap().doc.features()[0]);
        let mut v: Value = serde_json::from_str(&text).unwrap();
        v["features"].as_array_mut().unwrap().remove(0);
        text = serde_json::to_string_pretty(&v).unwrap();
        std::fs::write(&path, &text).unwrap();

        let mut b = Session::new(vec![store]);
        b.open(BULK).unwrap();
        let (da, db) = (&a.plot(BULK).unwrap().doc, &b.plot(BULK).unwrap().doc);
        assert!(!da.shares_content_with(db));
        assert!(da.feature(&first).is_some());
        assert!(db.feature(&first).is_none(), "b read the file as it is now");
    }

    #[tokio::test]
    async fn a_read_that_never_finishes_times_out_and_leaves_the_runtime_free() {
        let started = std::time::Instant::now();
        let slow = off_runtime(
            PathBuf::from("/catalogue/fifo.geojson"),
            Duration::from_millis(200),
            || {
                std::thread::sleep(Duration::from_secs(1));
                Ok(())
            },
        );
        // Meanwhile the runtime (one thread in this test) runs other work.
        let other = async {
            tokio::time::sleep(Duration::from_millis(50)).await;
            started.elapsed()
        };
        let (slow, other) = tokio::join!(slow, other);
        assert!(other < Duration::from_millis(150), "{other:?}");
        let err = slow.unwrap_err();
        assert!(matches!(err, SessionError::ReadTimedOut { .. }), "{err}");
        assert!(err.to_string().contains("/catalogue/fifo.geojson"), "{err}");
        assert!(started.elapsed() < Duration::from_secs(2));
    }

    #[test]
    fn a_save_written_without_the_lock_keeps_edits_made_meanwhile_unsaved() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::demo::ensure_demo_store(dir.path()).unwrap();
        let mut s = Session::new(vec![store]);
        s.open(BULK).unwrap();
        let first = model::feature_id(&s.plot(BULK).unwrap().doc.features()[0]);
        s.apply(BULK, &recolour(&first), 1).unwrap();
        let job = s.save_job(BULK).unwrap();
        let saved_bytes = s.plot(BULK).unwrap().doc.to_bytes();
        // An edit lands while the file is being written.
        let second = model::feature_id(&s.plot(BULK).unwrap().doc.features()[1]);
        s.apply(BULK, &recolour(&second), 2).unwrap();
        let saved = job.write().unwrap();
        s.finish_save(&saved).unwrap();
        let doc = &s.plot(BULK).unwrap().doc;
        assert_eq!(std::fs::read(doc.path()).unwrap(), saved_bytes);
        assert!(doc.is_dirty(), "the later edit is not in the file");
        s.undo(BULK).unwrap();
        assert!(
            !s.plot(BULK).unwrap().doc.is_dirty(),
            "undoing it is back at the saved state"
        );
        // The next save checks against what this one wrote.
        s.save(BULK).unwrap();
    }

    #[test]
    fn a_bad_change_set_applies_nothing() {
        let mut d = doc();
        let before = d.to_bytes();
        let cs = ChangeSet {
            label: "x".into(),
            edits: vec![
                Edit::Upsert {
                    id: "a".into(),
                    item: json!({"id": "a"}),
                },
                Edit::Remove { id: "nope".into() },
            ],
        };
        assert!(matches!(d.apply(&cs), Err(SessionError::MissingFeature(_))));
        assert_eq!(d.to_bytes(), before);
        assert!(!d.can_undo());
    }
}
