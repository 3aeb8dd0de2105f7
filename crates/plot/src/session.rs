//! Open plots, the active plot, the selection, and per plot a document with a version, a dirty
//! flag, undo/redo (one change set = one step), revert and save.
//!
//! This is the only place a plot changes. Tools return change sets; the session applies them.
//! Saving is a method a *person's* surface calls (CLI with a TTY or `--save`, the workbench's
//! Save button); no agent tool maps to it.

use std::path::PathBuf;

use serde_json::Value;
use toolgate_core::{ChangeSet, Edit};

use crate::fsio::{atomic_write, sha256_hex};
use crate::model;
use crate::store::{ItemEntry, StacStore, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("No plot is open. Search the catalog and open a plot first.")]
    NoPlotOpen,
    #[error("No plot \"{0}\" in the catalogue. Search the catalog to find plot ids.")]
    UnknownPlot(String),
    #[error("No open plot matches \"{0}\".")]
    NotOpen(String),
    #[error("Nothing to undo on \"{0}\".")]
    NothingToUndo(String),
    #[error("Nothing to redo on \"{0}\".")]
    NothingToRedo(String),
    #[error(
        "The plot file {path} changed on disk since it was opened, so saving would overwrite someone else's change. Your unsaved edits are kept: revert to load the file's version, or copy your edits elsewhere."
    )]
    Conflict { path: PathBuf },
    #[error(
        "The plot changed while this call was waiting (version {expected} → {actual}); nothing was applied. Summarise the plot again and retry."
    )]
    VersionMismatch { expected: u64, actual: u64 },
    #[error("Cannot remove feature \"{0}\": it is not in the plot.")]
    MissingFeature(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("could not save {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
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

/// One plot's editable state.
#[derive(Debug, Clone)]
pub struct Document {
    head: Head,
    features: Vec<Value>,
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
        &self.features
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
            head: &self.head,
            features: &self.features,
        };
        // Serialising plain JSON values cannot fail.
        let mut bytes = serde_json::to_vec_pretty(&collection).unwrap_or_default();
        bytes.push(b'\n');
        bytes
    }

    /// Apply a change set as one undo step. All edits are checked first, so a change set
    /// either applies completely or not at all. Returns the ids touched.
    pub fn apply(&mut self, cs: &ChangeSet) -> Result<Vec<String>, SessionError> {
        // check
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
        // apply
        let features = &mut self.features;
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
        Ok(touched)
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
        Self::revert_changes(&mut self.features, &step.changes);
        self.state = step.state_before;
        self.version += 1;
        let label = step.label.clone();
        self.redo.push(step);
        Some(label)
    }

    pub fn redo(&mut self) -> Option<String> {
        let step = self.redo.pop()?;
        Self::replay_changes(&mut self.features, &step.changes);
        self.state = step.state_after;
        self.version += 1;
        let label = step.label.clone();
        self.undo.push(step);
        Some(label)
    }

    /// Write the document to its file. Refuses when the file changed on disk since it was
    /// opened or last saved; writes atomically.
    pub fn save(&mut self) -> Result<(), SessionError> {
        let current = std::fs::read(&self.path).map_err(|source| SessionError::Write {
            path: self.path.clone(),
            source,
        })?;
        if sha256_hex(&current) != self.disk_sha256 {
            return Err(SessionError::Conflict {
                path: self.path.clone(),
            });
        }
        let bytes = self.to_bytes();
        atomic_write(&self.path, &bytes).map_err(|source| SessionError::Write {
            path: self.path.clone(),
            source,
        })?;
        self.disk_sha256 = sha256_hex(&bytes);
        self.saved_state = self.state;
        Ok(())
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
    plots: Vec<OpenPlot>,
    active: Option<String>,
}

impl Session {
    pub fn new(stores: Vec<StacStore>) -> Self {
        Self {
            stores,
            plots: Vec::new(),
            active: None,
        }
    }

    pub fn stores(&self) -> &[StacStore] {
        &self.stores
    }

    pub fn find_item(&self, plot_id: &str) -> Option<(&StacStore, &ItemEntry)> {
        self.stores
            .iter()
            .find_map(|s| s.item(plot_id).map(|i| (s, i)))
    }

    /// Open a plot (or focus it when already open) and make it active.
    pub fn open(&mut self, plot_id: &str) -> Result<&OpenPlot, SessionError> {
        if !self.plots.iter().any(|p| p.id == plot_id) {
            let (store, entry) = self
                .find_item(plot_id)
                .ok_or_else(|| SessionError::UnknownPlot(plot_id.to_owned()))?;
            let loaded = store.load_features(entry)?;
            let plot = OpenPlot {
                id: plot_id.to_owned(),
                title: entry.title.clone(),
                entry: entry.clone(),
                doc: Document::new(loaded.collection, loaded.path, loaded.sha256),
                selection: Vec::new(),
            };
            self.plots.push(plot);
        }
        self.active = Some(plot_id.to_owned());
        self.plot(plot_id)
    }

    /// Close a plot, discarding unsaved edits (a surface asks the person first).
    pub fn close(&mut self, plot_id: &str) -> Result<(), SessionError> {
        let before = self.plots.len();
        self.plots.retain(|p| p.id != plot_id);
        if self.plots.len() == before {
            return Err(SessionError::NotOpen(plot_id.to_owned()));
        }
        if self.active.as_deref() == Some(plot_id) {
            self.active = self.plots.last().map(|p| p.id.clone());
        }
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

    pub fn plot_mut(&mut self, plot_id: &str) -> Result<&mut OpenPlot, SessionError> {
        self.plots
            .iter_mut()
            .find(|p| p.id == plot_id)
            .ok_or_else(|| SessionError::NotOpen(plot_id.to_owned()))
    }

    /// Replace a plot's selection (ids or nested paths, as a map click gives them).
    pub fn select(&mut self, plot_id: &str, ids: Vec<String>) -> Result<(), SessionError> {
        self.plot_mut(plot_id)?.selection = ids;
        Ok(())
    }

    /// Apply a change set as one undo step, refusing when the plot changed since
    /// `expected_version` (the version the call was prepared and confirmed against).
    pub fn apply(
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
        self.plot_mut(plot_id)?
            .doc
            .undo()
            .ok_or_else(|| SessionError::NothingToUndo(plot_id.to_owned()))
    }

    pub fn redo(&mut self, plot_id: &str) -> Result<String, SessionError> {
        self.plot_mut(plot_id)?
            .doc
            .redo()
            .ok_or_else(|| SessionError::NothingToRedo(plot_id.to_owned()))
    }

    /// Discard unsaved edits: reload the file as it is on disk now.
    pub fn revert(&mut self, plot_id: &str) -> Result<(), SessionError> {
        let (store, entry) = self
            .find_item(plot_id)
            .ok_or_else(|| SessionError::UnknownPlot(plot_id.to_owned()))?;
        let loaded = store.load_features(entry)?;
        let plot = self.plot_mut(plot_id)?;
        let version = plot.doc.version() + 1;
        plot.doc = Document::new(loaded.collection, loaded.path, loaded.sha256);
        plot.doc.version = version;
        plot.selection.retain(|_| true);
        Ok(())
    }

    /// Save a plot to disk. Only people's surfaces call this.
    pub fn save(&mut self, plot_id: &str) -> Result<(), SessionError> {
        self.plot_mut(plot_id)?.doc.save()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
