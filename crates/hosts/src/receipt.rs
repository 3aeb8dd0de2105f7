//! The receipt of one install: every file written and every JSON entry added, with hashes, so
//! that `uninstall` removes exactly that and nothing the user wrote.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::install::EntryKey;
use crate::{Backend, Host, HostsError, ToolSet, fsutil};

pub const RECEIPT_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Receipt {
    pub version: u32,
    pub host: Host,
    pub global: bool,
    pub toolgate_version: String,
    pub backend: Backend,
    pub surface: ToolSet,
    /// How the installed files run toolgate: `toolgate` (found on the host's `PATH`), a path
    /// relative to the project (`./bin/toolgate`) or an absolute path. `None` in receipts written
    /// before portable installs. `toolgate doctor` checks that it exists and is this version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exe: Option<String>,
    /// Files toolgate owns, with the SHA-256 of what it wrote.
    pub files: Vec<FileRecord>,
    /// Entries toolgate added to files it shares with the user.
    pub json_entries: Vec<JsonRecord>,
    /// Directories the install created, outermost first (removed, deepest first, when empty).
    pub dirs_created: Vec<PathBuf>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileRecord {
    pub path: PathBuf,
    pub sha256: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JsonRecord {
    pub path: PathBuf,
    /// Keys from the top level to the object or array that holds the entry.
    pub container: Vec<String>,
    pub key: EntryKey,
    /// SHA-256 of the entry's compact JSON.
    pub value_sha256: String,
    /// The file's content before the first install (`None`: toolgate created the file).
    pub original: Option<String>,
    /// SHA-256 of the whole file as toolgate last wrote it: when it still matches, uninstall
    /// puts `original` back byte for byte.
    pub installed_sha256: String,
}

impl Receipt {
    pub fn load(path: &Path) -> Result<Option<Receipt>, HostsError> {
        let Some(bytes) = fsutil::read_opt(path)? else {
            return Ok(None);
        };
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| HostsError::BadReceipt {
                path: path.to_path_buf(),
                message: e.to_string(),
            })
    }

    /// [`Receipt::load`], with the paths of a project receipt (stored relative to the project,
    /// `base`) made absolute again. Absolute paths (global receipts, older project receipts)
    /// stay as they are.
    pub fn load_in(path: &Path, base: Option<&Path>) -> Result<Option<Receipt>, HostsError> {
        let mut r = Self::load(path)?;
        if let (Some(r), Some(base)) = (r.as_mut(), base) {
            r.map_paths(|p| base.join(p));
        }
        Ok(r)
    }

    /// The bytes to store: paths under `base` (the project of a project install) are written
    /// relative to it, so that a committed receipt works in every clone of the repository.
    pub fn to_bytes_in(&self, base: Option<&Path>) -> Vec<u8> {
        let Some(base) = base else {
            return self.to_bytes();
        };
        let mut r = self.clone();
        r.map_paths(|p| {
            p.strip_prefix(base)
                .map(Path::to_path_buf)
                .unwrap_or_else(|_| p.to_path_buf())
        });
        r.to_bytes()
    }

    fn map_paths(&mut self, f: impl Fn(&Path) -> PathBuf) {
        for rec in &mut self.files {
            rec.path = f(&rec.path);
        }
        for rec in &mut self.json_entries {
            rec.path = f(&rec.path);
        }
        for d in &mut self.dirs_created {
            *d = f(d);
        }
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        let mut s = serde_json::to_string_pretty(self).unwrap_or_default();
        s.push('\n');
        s.into_bytes()
    }
}
