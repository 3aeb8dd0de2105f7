//! Plan, apply and undo an install.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::fsutil::{confine, create_parents, normalize, read_opt, sha256_hex, write_atomic};
use crate::receipt::{FileRecord, JsonRecord, RECEIPT_VERSION, Receipt};
use crate::render::{self, layout};
use crate::{Host, HostsError, InstallOptions, Locations, jsonedit};

/// Where in a shared JSON file toolgate's entry sits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKey {
    /// `container[name]` in an object.
    Object(String),
    /// The element of the `container` array whose `"name"` is this.
    ArrayName(String),
}

/// One entry toolgate adds to a JSON file, and the document to start from when the file is
/// missing.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonEntry {
    pub container: Vec<String>,
    pub key: EntryKey,
    pub value: Value,
    pub skeleton: Value,
    /// The host reads the file as JSONC (VS Code's `mcp.json`): comments and trailing commas are
    /// accepted, and the entry is spliced into the text so the user's layout survives.
    pub jsonc: bool,
}

/// What rendering produced.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// A file toolgate owns, whole.
    File { path: PathBuf, content: String },
    /// One entry in a file the user may share.
    Json { path: PathBuf, entry: JsonEntry },
}

impl Action {
    pub fn path(&self) -> &Path {
        match self {
            Action::File { path, .. } | Action::Json { path, .. } => path,
        }
    }
}

/// One file's before and after.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub path: PathBuf,
    /// `None`: the file does not exist yet.
    pub old: Option<String>,
    /// `None`: the file is removed (left over from an earlier install).
    pub new: Option<String>,
}

impl Change {
    pub fn is_noop(&self) -> bool {
        self.old == self.new
    }
}

/// Everything an install would do; nothing is written until [`apply`].
#[derive(Debug, Clone)]
pub struct Plan {
    pub host: Host,
    pub global: bool,
    pub receipt_path: PathBuf,
    /// The project root (paths in diffs and reports are shown relative to it).
    pub display_root: PathBuf,
    pub changes: Vec<Change>,
    /// The rendered actions (for inspection and snapshots).
    pub actions: Vec<Action>,
    roots: Vec<PathBuf>,
    receipt: Receipt,
    old_receipt: Option<Receipt>,
    /// The project a project receipt's paths are relative to.
    base: Option<PathBuf>,
}

/// Render the install and compare it with what is on disk. Refuses (before writing anything)
/// when a file toolgate would write exists and is not toolgate's, or was edited since install.
pub fn plan(opts: &InstallOptions, loc: &Locations) -> Result<Plan, HostsError> {
    let lay = layout(opts.host, opts.global, loc);
    let receipt_path = confine(&lay.receipt, &lay.roots)?;
    let base = receipt_base(opts.global, loc);
    let old_receipt = Receipt::load_in(&receipt_path, base.as_deref())?;
    let shared = co_owned(&receipt_path, base.as_deref());
    let actions = render::actions(opts, loc);
    let mut changes = Vec::new();
    let mut files = Vec::new();
    let mut json_entries = Vec::new();
    let old_file = |p: &Path| {
        old_receipt
            .as_ref()
            .and_then(|r| r.files.iter().find(|f| f.path == p))
    };
    let old_json = |p: &Path| {
        old_receipt
            .as_ref()
            .and_then(|r| r.json_entries.iter().find(|j| j.path == p))
    };
    for action in &actions {
        let path = confine(action.path(), &lay.roots)?;
        let current = read_opt(&path)?;
        match action {
            Action::File { content, .. } => {
                let current_text = current.as_deref().map(text).transpose()?;
                if let Some(cur) = &current
                    && cur.as_slice() != content.as_bytes()
                {
                    match old_file(&path) {
                        Some(rec) if rec.sha256 != sha256_hex(cur) => {
                            return Err(HostsError::ModifiedSinceInstall { path });
                        }
                        Some(_) => {}
                        None => {
                            return Err(match shared.get(&path) {
                                Some(owner) => HostsError::SharedDiffers {
                                    path,
                                    owner: owner.to_string(),
                                },
                                None => HostsError::Conflict { path },
                            });
                        }
                    }
                }
                // A file that already holds exactly this text and is not in the receipt belongs
                // to the user: leave it unrecorded so that uninstall does not take it away. If
                // another host's toolgate install wrote it (the Copilot and VS Code installs share
                // the instructions file), it is co-owned: recorded here too, and uninstall
                // removes it only with the last receipt that lists it.
                let foreign_identical =
                    current.is_some() && old_file(&path).is_none() && !shared.contains_key(&path);
                if !foreign_identical {
                    files.push(FileRecord {
                        path: path.clone(),
                        sha256: sha256_hex(content.as_bytes()),
                    });
                }
                changes.push(Change {
                    path,
                    old: current_text,
                    new: Some(content.clone()),
                });
            }
            Action::Json { entry, .. } => {
                let current_text = current.as_deref().map(text).transpose()?;
                let mut doc = match &current_text {
                    Some(t) => {
                        if entry.jsonc {
                            jsonedit::parse_jsonc(t).map_err(|source| HostsError::Jsonc {
                                path: path.clone(),
                                source,
                            })?
                        } else {
                            serde_json::from_str::<Value>(t).map_err(|source| HostsError::Json {
                                path: path.clone(),
                                source,
                            })?
                        }
                    }
                    None => entry.skeleton.clone(),
                };
                let prior = old_json(&path);
                let existing = jsonedit::get(&doc, &entry.container, &entry.key).cloned();
                let new_text = if existing.as_ref() == Some(&entry.value) && current_text.is_some()
                {
                    current_text.clone().unwrap_or_default()
                } else {
                    if let Some(existing) = &existing {
                        match prior {
                            None => return Err(HostsError::Conflict { path }),
                            Some(rec) if rec.value_sha256 != value_hash(existing) => {
                                return Err(HostsError::ModifiedSinceInstall { path });
                            }
                            Some(_) => {}
                        }
                    }
                    let shape_err = |e: jsonedit::JsonEditError| HostsError::JsonShape {
                        path: path.clone(),
                        message: format!(
                            "{e}; toolgate cannot add its entry (fix the file, or remove it to let toolgate create it)"
                        ),
                    };
                    match (&current_text, &entry.key) {
                        (Some(t), EntryKey::Object(name)) if entry.jsonc => {
                            jsonedit::splice_set(t, &entry.container, name, &entry.value)
                                .map_err(shape_err)?
                        }
                        _ => {
                            jsonedit::set(
                                &mut doc,
                                &entry.container,
                                &entry.key,
                                entry.value.clone(),
                            )
                            .map_err(shape_err)?;
                            pretty(&doc)
                        }
                    }
                };
                let original = match prior {
                    Some(rec) => rec.original.clone(),
                    None => current_text.clone(),
                };
                json_entries.push(JsonRecord {
                    path: path.clone(),
                    container: entry.container.clone(),
                    key: entry.key.clone(),
                    value_sha256: value_hash(&entry.value),
                    original,
                    installed_sha256: sha256_hex(new_text.as_bytes()),
                });
                changes.push(Change {
                    path,
                    old: current_text,
                    new: Some(new_text),
                });
            }
        }
    }
    // Files of an earlier install that this one no longer writes.
    if let Some(old) = &old_receipt {
        for rec in &old.files {
            if files.iter().any(|f| f.path == rec.path) || shared.contains_key(&rec.path) {
                continue;
            }
            let path = confine(&rec.path, &lay.roots)?;
            if let Some(cur) = read_opt(&path)? {
                if sha256_hex(&cur) != rec.sha256 {
                    return Err(HostsError::ModifiedSinceInstall { path });
                }
                changes.push(Change {
                    path,
                    old: Some(text(&cur)?),
                    new: None,
                });
            }
        }
    }
    let receipt = Receipt {
        version: RECEIPT_VERSION,
        host: opts.host,
        global: opts.global,
        toolgate_version: render::VERSION.to_owned(),
        backend: opts.backend,
        surface: opts.surface,
        exe: Some(opts.exe.clone()),
        files,
        json_entries,
        dirs_created: old_receipt
            .as_ref()
            .map(|r| r.dirs_created.clone())
            .unwrap_or_default(),
    };
    Ok(Plan {
        host: opts.host,
        global: opts.global,
        receipt_path,
        display_root: if opts.global {
            loc.home.clone()
        } else {
            loc.target.clone()
        },
        changes,
        actions,
        roots: lay.roots,
        receipt,
        old_receipt,
        base,
    })
}

/// What the paths of a receipt are stored relative to: the project, for a project install.
fn receipt_base(global: bool, loc: &Locations) -> Option<PathBuf> {
    (!global).then(|| loc.target.clone())
}

fn text(bytes: &[u8]) -> Result<String, HostsError> {
    String::from_utf8(bytes.to_vec()).map_err(|_| HostsError::JsonShape {
        path: PathBuf::from("(file)"),
        message: "not UTF-8 text".to_owned(),
    })
}

fn pretty(v: &Value) -> String {
    let mut s = serde_json::to_string_pretty(v).unwrap_or_default();
    s.push('\n');
    s
}

fn value_hash(v: &Value) -> String {
    sha256_hex(serde_json::to_string(v).unwrap_or_default().as_bytes())
}

/// What [`apply`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApplyReport {
    pub written: Vec<PathBuf>,
    pub unchanged: Vec<PathBuf>,
    pub removed: Vec<PathBuf>,
    pub receipt: PathBuf,
    /// Whether anything on disk changed (the receipt included).
    pub changed: bool,
}

/// Write the plan: every file atomically, then the receipt.
pub fn apply(plan: &Plan) -> Result<ApplyReport, HostsError> {
    let mut report = ApplyReport {
        receipt: plan.receipt_path.clone(),
        ..ApplyReport::default()
    };
    let mut receipt = plan.receipt.clone();
    let note_dirs = |dirs: Vec<PathBuf>, receipt: &mut Receipt| {
        for d in dirs {
            if !receipt.dirs_created.contains(&d) {
                receipt.dirs_created.push(d);
            }
        }
    };
    for change in &plan.changes {
        if change.is_noop() {
            report.unchanged.push(change.path.clone());
            continue;
        }
        // Checked again right before the write: a link may have appeared since the plan.
        confine(&change.path, &plan.roots)?;
        match &change.new {
            Some(new) => {
                let dirs = create_parents(&change.path)?;
                note_dirs(dirs, &mut receipt);
                write_atomic(&change.path, new.as_bytes())?;
                report.written.push(change.path.clone());
            }
            None => {
                fs::remove_file(&change.path).map_err(|e| HostsError::io(&change.path, e))?;
                report.removed.push(change.path.clone());
            }
        }
    }
    confine(&plan.receipt_path, &plan.roots)?;
    let dirs = create_parents(&plan.receipt_path)?;
    note_dirs(dirs, &mut receipt);
    let bytes = receipt.to_bytes_in(plan.base.as_deref());
    let receipt_changed = read_opt(&plan.receipt_path)?.as_deref() != Some(bytes.as_slice());
    if receipt_changed {
        write_atomic(&plan.receipt_path, &bytes)?;
    }
    report.changed = receipt_changed || !report.written.is_empty() || !report.removed.is_empty();
    Ok(report)
}

/// The plan as a unified diff (what `--dry-run` prints). Empty when nothing would change.
pub fn unified_diff(plan: &Plan) -> String {
    let mut out = String::new();
    for change in plan.changes.iter().filter(|c| !c.is_noop()) {
        // `a/rel` and `b/rel` below the project (or home); a file elsewhere keeps its absolute
        // path, without a prefix (never `b//abs`).
        let (a_side, b_side) = match change.path.strip_prefix(&plan.display_root) {
            Ok(rel) => (
                format!("a/{}", rel.display()),
                format!("b/{}", rel.display()),
            ),
            Err(_) => {
                let abs = change.path.display().to_string();
                (abs.clone(), abs)
            }
        };
        let a = if change.old.is_some() {
            a_side
        } else {
            "/dev/null".to_owned()
        };
        let b = if change.new.is_some() {
            b_side
        } else {
            "/dev/null".to_owned()
        };
        let old = change.old.as_deref().unwrap_or("");
        let new = change.new.as_deref().unwrap_or("");
        let diff = similar::TextDiff::from_lines(old, new);
        out.push_str(
            &diff
                .unified_diff()
                .context_radius(3)
                .header(&a, &b)
                .to_string(),
        );
    }
    out
}

/// What [`uninstall`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UninstallReport {
    /// `false`: there was no receipt, so nothing was touched.
    pub receipt_found: bool,
    pub receipt: PathBuf,
    pub removed: Vec<PathBuf>,
    /// Shared JSON files put back as they were, or with toolgate's entry taken out.
    pub restored: Vec<PathBuf>,
    /// Files (or entries) changed since install: left in place.
    pub kept_modified: Vec<PathBuf>,
    /// Recorded but already gone.
    pub missing: Vec<PathBuf>,
    /// Also listed by another host's install receipt: left for that install.
    pub kept_shared: Vec<PathBuf>,
}

/// Files recorded by the other receipts beside `receipt_path` (the other hosts' installs in the
/// same scope), with the host whose receipt lists them. An unreadable sibling receipt is skipped
/// with a warning: it cannot claim a file, and refusing every install or uninstall because of it
/// would leave the user stuck.
fn co_owned(receipt_path: &Path, base: Option<&Path>) -> HashMap<PathBuf, Host> {
    let mut out = HashMap::new();
    let Some(dir) = receipt_path.parent() else {
        return out;
    };
    let Ok(entries) = fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path == receipt_path || path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        match Receipt::load_in(&path, base) {
            Ok(Some(r)) => out.extend(r.files.into_iter().map(|f| (f.path, r.host))),
            Ok(None) => {}
            Err(e) => tracing::warn!("ignoring another install's receipt: {e}"),
        }
    }
    out
}

/// Remove exactly what the receipt of (host, scope) lists.
pub fn uninstall(host: Host, global: bool, loc: &Locations) -> Result<UninstallReport, HostsError> {
    let lay = layout(host, global, loc);
    let receipt_path = confine(&lay.receipt, &lay.roots)?;
    let mut report = UninstallReport {
        receipt: receipt_path.clone(),
        ..UninstallReport::default()
    };
    let base = receipt_base(global, loc);
    let Some(receipt) = Receipt::load_in(&receipt_path, base.as_deref())? else {
        return Ok(report);
    };
    report.receipt_found = true;
    // A tampered receipt must not reach outside the install locations.
    for p in receipt
        .files
        .iter()
        .map(|f| &f.path)
        .chain(receipt.json_entries.iter().map(|j| &j.path))
    {
        confine(p, &lay.roots)?;
    }
    // Directories may also be a root itself or one of its ancestors (a global install creates
    // e.g. ~/.local/share/toolgate); only empty ones are ever removed.
    for d in &receipt.dirs_created {
        let inside = confine(d, &lay.roots).is_ok();
        let above = normalize(d).is_some_and(|d| lay.roots.iter().any(|r| r.starts_with(&d)));
        if !inside && !above {
            confine(d, &lay.roots)?;
        }
    }
    let shared = co_owned(&receipt_path, base.as_deref());
    for rec in &receipt.files {
        if shared.contains_key(&rec.path) {
            report.kept_shared.push(rec.path.clone());
            continue;
        }
        match read_opt(&rec.path)? {
            None => report.missing.push(rec.path.clone()),
            Some(cur) if sha256_hex(&cur) == rec.sha256 => {
                fs::remove_file(&rec.path).map_err(|e| HostsError::io(&rec.path, e))?;
                report.removed.push(rec.path.clone());
            }
            Some(_) => report.kept_modified.push(rec.path.clone()),
        }
    }
    for rec in &receipt.json_entries {
        let Some(cur) = read_opt(&rec.path)? else {
            report.missing.push(rec.path.clone());
            continue;
        };
        if sha256_hex(&cur) == rec.installed_sha256 {
            match &rec.original {
                Some(orig) => {
                    write_atomic(&rec.path, orig.as_bytes())?;
                    report.restored.push(rec.path.clone());
                }
                None => {
                    fs::remove_file(&rec.path).map_err(|e| HostsError::io(&rec.path, e))?;
                    report.removed.push(rec.path.clone());
                }
            }
            continue;
        }
        // Edited since install: take out only toolgate's entry, if it is still as written. Object
        // entries are VS Code's JSONC `mcp.json`: the entry's bytes are cut out of the text so
        // the user's comments and layout stay.
        let cur_text = String::from_utf8_lossy(&cur);
        let parsed = match &rec.key {
            EntryKey::Object(_) => jsonedit::parse_jsonc(&cur_text).ok(),
            EntryKey::ArrayName(_) => serde_json::from_slice(&cur).ok(),
        };
        let mut doc: Value = match parsed {
            Some(d) => d,
            None => {
                report.kept_modified.push(rec.path.clone());
                continue;
            }
        };
        match jsonedit::get(&doc, &rec.container, &rec.key) {
            Some(v) if value_hash(v) == rec.value_sha256 => {
                let new_text = match &rec.key {
                    EntryKey::Object(name) => {
                        jsonedit::splice_remove(&cur_text, &rec.container, name)
                    }
                    EntryKey::ArrayName(_) => None,
                };
                let new_text = new_text.unwrap_or_else(|| {
                    jsonedit::remove(&mut doc, &rec.container, &rec.key);
                    pretty(&doc)
                });
                write_atomic(&rec.path, new_text.as_bytes())?;
                report.restored.push(rec.path.clone());
            }
            Some(_) => report.kept_modified.push(rec.path.clone()),
            None => report.missing.push(rec.path.clone()),
        }
    }
    fs::remove_file(&receipt_path).map_err(|e| HostsError::io(&receipt_path, e))?;
    for d in receipt.dirs_created.iter().rev() {
        // Only empty directories go; anything the user added keeps its folder.
        let _ = fs::remove_dir(d);
    }
    hand_over_dirs(&receipt_path, &receipt.dirs_created, base.as_deref())?;
    Ok(report)
}

/// Directories this install created that are still there because another host's install keeps
/// files (or its receipt) inside them are handed to that install's receipt, so the last uninstall
/// removes them instead of leaving empty folders behind.
fn hand_over_dirs(
    receipt_path: &Path,
    created: &[PathBuf],
    base: Option<&Path>,
) -> Result<(), HostsError> {
    let left: Vec<&PathBuf> = created.iter().filter(|d| d.is_dir()).collect();
    if left.is_empty() {
        return Ok(());
    }
    let Some(dir) = receipt_path.parent() else {
        return Ok(());
    };
    let Ok(entries) = fs::read_dir(dir) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let Ok(Some(mut other)) = Receipt::load_in(&path, base) else {
            continue;
        };
        let mut changed = false;
        for d in &left {
            let inside = |p: &Path| p.starts_with(d.as_path());
            let needed = inside(&path) || other.files.iter().any(|f| inside(&f.path));
            if needed && !other.dirs_created.contains(d) {
                other.dirs_created.push((*d).clone());
                changed = true;
            }
        }
        if changed {
            // Outermost first, as the receipt keeps them.
            other.dirs_created.sort_by_key(|d| d.components().count());
            write_atomic(&path, &other.to_bytes_in(base))?;
        }
    }
    Ok(())
}

impl Plan {
    /// Whether applying would change anything on disk.
    pub fn is_noop(&self) -> bool {
        self.changes.iter().all(Change::is_noop)
            && self.old_receipt.as_ref().is_some_and(|r| {
                let mut r2 = self.receipt.clone();
                r2.dirs_created.clone_from(&r.dirs_created);
                &r2 == r
            })
    }

    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }
}
