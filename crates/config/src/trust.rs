//! Which workspaces the user trusts to *widen* their configuration.
//!
//! A workspace's `.toolgate/config.toml` and `.toolgate/tools/` come with the repository, so
//! whoever wrote the repository wrote them. Until the user trusts the workspace they may only
//! narrow what the user configured (see [`crate::CodeactConfig`]). `toolgate trust DIR` records the
//! workspace in `<user config dir>/trusted.toml` (`TRUST_FILE`, next to the user's
//! `config.toml`) together with a SHA-256 of the project configuration ([`project_digest`]:
//! `config.toml` and every file in `tools/`), so that any later change to those files makes the
//! workspace untrusted again until the user looks and runs `toolgate trust` once more (the
//! model of direnv's `allow`).
//!
//! ```toml
//! [[workspace]]
//! path = "/home/me/src/project"   # canonical path of the workspace root
//! sha256 = "3f5a…"                # project_digest at the time of `toolgate trust`
//! ```
//!
//! The file is written atomically (a temporary sibling, synced, then renamed), so a crash never
//! leaves it half written.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::config::{PROJECT_CONFIG, PROJECT_TOOLS_DIR};
use crate::regular_file::{Links, MAX_PROJECT_FILE_BYTES, Unreadable, open_regular, read_regular};

/// The trust file's name, in the directory of the user config file.
pub(crate) const TRUST_FILE: &str = "trusted.toml";

/// Largest trust file read (it holds one short entry per trusted workspace).
const MAX_TRUST_FILE_BYTES: u64 = 4 << 20;

/// A trust file or project configuration that cannot be used. Every variant names the file and
/// says what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TrustError {
    #[error("{}: cannot read the trust file: {message}", path.display())]
    Read { path: PathBuf, message: String },
    #[error(
        "{}: not a toolgate trust file ({message}); fix it or delete it and run `toolgate trust DIR` again for the workspaces you trust",
        path.display()
    )]
    Parse { path: PathBuf, message: String },
    #[error("{}: cannot write the trust file: {message}", path.display())]
    Write { path: PathBuf, message: String },
    #[error("{}: cannot read the project configuration to check it: {message}", path.display())]
    Project { path: PathBuf, message: String },
}

/// One trusted workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TrustEntry {
    /// The canonical workspace root.
    pub path: PathBuf,
    /// [`project_digest`] when the user trusted it.
    pub sha256: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TrustDoc {
    #[serde(default)]
    workspace: Vec<TrustEntry>,
}

/// What the trust file says about one workspace's current project configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrustStatus {
    /// Trusted, and the project configuration is unchanged since.
    Trusted,
    /// Trusted once, but the project configuration changed since.
    Changed,
    /// Never trusted (or untrusted again).
    Untrusted,
}

/// The trust file of one user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustStore {
    path: PathBuf,
    entries: Vec<TrustEntry>,
}

/// The canonical form of a workspace root, the key it is trusted under (the path as given
/// when it cannot be resolved).
pub(crate) fn workspace_key(root: &Path) -> PathBuf {
    root.canonicalize().unwrap_or_else(|_| root.to_owned())
}

impl TrustStore {
    /// Where the trust file of the user config file `user_config` lives: beside it.
    pub fn path_for(user_config: &Path) -> PathBuf {
        user_config
            .parent()
            .map_or_else(|| PathBuf::from(TRUST_FILE), |d| d.join(TRUST_FILE))
    }

    /// Read the trust file; a missing file trusts nothing.
    pub fn load(path: &Path) -> Result<Self, TrustError> {
        let read_err = |e: std::io::Error| TrustError::Read {
            path: path.to_owned(),
            message: e.to_string(),
        };
        // Only a regular file within the cap (the user's own: a link is followed): a FIFO
        // there is an error, never a hang.
        let text = match read_regular(path, Links::Follow, MAX_TRUST_FILE_BYTES) {
            Ok(Some(bytes)) => String::from_utf8(bytes)
                .map_err(|e| read_err(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))?,
            Ok(None) => String::new(),
            Err(e @ Unreadable::TooLarge { .. }) => {
                return Err(TrustError::Parse {
                    path: path.to_owned(),
                    message: e.reason(),
                });
            }
            Err(e) => {
                return Err(TrustError::Read {
                    path: path.to_owned(),
                    message: format!("it {}", e.reason()),
                });
            }
        };
        let doc: TrustDoc = toml::from_str(&text).map_err(|e| TrustError::Parse {
            path: path.to_owned(),
            message: e.message().lines().next().unwrap_or_default().to_owned(),
        })?;
        Ok(Self {
            path: path.to_owned(),
            entries: doc.workspace,
        })
    }

    /// Whether the workspace at `root`, whose project configuration now hashes to `digest`, is
    /// trusted.
    pub fn status(&self, root: &Path, digest: &str) -> TrustStatus {
        let key = workspace_key(root);
        match self.entries.iter().find(|e| e.path == key) {
            Some(e) if e.sha256 == digest => TrustStatus::Trusted,
            Some(_) => TrustStatus::Changed,
            None => TrustStatus::Untrusted,
        }
    }

    /// Trust `root` with its project configuration as it hashes now (replacing an earlier
    /// entry for it). Call [`TrustStore::save`] to keep it.
    pub fn trust(&mut self, root: &Path, digest: String) {
        let key = workspace_key(root);
        self.entries.retain(|e| e.path != key);
        self.entries.push(TrustEntry {
            path: key,
            sha256: digest,
        });
        self.entries.sort_by(|a, b| a.path.cmp(&b.path));
    }

    /// Forget `root`; whether it was trusted. Call [`TrustStore::save`] to keep it.
    pub fn untrust(&mut self, root: &Path) -> bool {
        let key = workspace_key(root);
        let before = self.entries.len();
        self.entries.retain(|e| e.path != key);
        self.entries.len() != before
    }

    /// Write the trust file atomically, creating its directory when needed.
    pub fn save(&self) -> Result<(), TrustError> {
        let write_err = |e: std::io::Error| TrustError::Write {
            path: self.path.clone(),
            message: e.to_string(),
        };
        let body = toml::to_string(&TrustDoc {
            workspace: self.entries.clone(),
        })
        .map_err(|e| TrustError::Write {
            path: self.path.clone(),
            message: e.to_string(),
        })?;
        let text = format!(
            "# Workspaces whose .toolgate/config.toml and .toolgate/tools/ may widen your toolgate\n# configuration. Written by `toolgate trust` / `toolgate untrust`; any change to a\n# workspace's project configuration makes it untrusted again.\n{body}"
        );
        let dir = self
            .path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        fs::create_dir_all(dir).map_err(write_err)?;
        // Exclusive temp in the same directory, fsync, rename, directory fsync.
        toolgate_fs::atomic_write(&self.path, text.as_bytes())
            .map_err(|e| write_err(e.into_io()))?;
        Ok(())
    }
}

/// Whether the workspace has any project configuration at all (`.toolgate/config.toml`, or a
/// file in `.toolgate/tools/`).
pub fn has_project_config(root: &Path) -> bool {
    // Anything at that name counts (a dangling link, a FIFO): it is reported, not skipped.
    root.join(PROJECT_CONFIG).symlink_metadata().is_ok()
        || fs::read_dir(root.join(PROJECT_TOOLS_DIR))
            .map(|mut d| d.next().is_some())
            .unwrap_or(false)
}

/// Lowercase hex SHA-256 over the project configuration of the workspace at `root`:
/// `.toolgate/config.toml` and every file directly in `.toolgate/tools/` (sorted by name; a
/// file's name, length and bytes all count, and so does a missing `config.toml`).
/// Sub-directories are not read by toolgate and do not count.
pub fn project_digest(root: &Path) -> Result<String, TrustError> {
    let mut h = Sha256::new();
    h.update(b"toolgate project configuration v1\n");
    hash_file(&mut h, "config.toml", &root.join(PROJECT_CONFIG))?;
    let dir = root.join(PROJECT_TOOLS_DIR);
    match fs::read_dir(&dir) {
        Ok(entries) => {
            let mut files: Vec<PathBuf> = Vec::new();
            for entry in entries {
                let entry = entry.map_err(|e| TrustError::Project {
                    path: dir.clone(),
                    message: e.to_string(),
                })?;
                // Everything but a sub-directory counts, links and FIFOs included (they are
                // hashed as what they are, never followed or opened for reading: see
                // hash_file), so adding one changes the digest.
                if entry.file_type().is_ok_and(|t| !t.is_dir()) {
                    files.push(entry.path());
                }
            }
            files.sort();
            for f in files {
                let name = format!(
                    "tools/{}",
                    f.file_name().unwrap_or_default().to_string_lossy()
                );
                hash_file(&mut h, &name, &f)?;
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(TrustError::Project {
                path: dir,
                message: e.to_string(),
            });
        }
    }
    let digest = h.finalize();
    Ok(digest.iter().map(|b| format!("{b:02x}")).collect())
}

fn hash_file(h: &mut Sha256, name: &str, path: &Path) -> Result<(), TrustError> {
    h.update(name.as_bytes());
    h.update([0]);
    let err = |e: std::io::Error| TrustError::Project {
        path: path.to_owned(),
        message: e.to_string(),
    };
    // The loader reads only regular files within the cap, never through a link
    // (crate::regular_file); anything else is hashed as what it is, without reading it — a
    // FIFO or `/dev/zero` there must not block or spin the digest.
    let mut f = match open_regular(path, Links::Refuse, MAX_PROJECT_FILE_BYTES) {
        Ok(Some((f, _))) => f,
        Ok(None) => {
            h.update(b"absent\n");
            return Ok(());
        }
        Err(e) if e.is_refused() => {
            h.update(b"not read: ");
            h.update(e.reason().as_bytes());
            h.update(b"\n");
            return Ok(());
        }
        Err(e) => {
            return Err(TrustError::Project {
                path: path.to_owned(),
                message: e.reason(),
            });
        }
    };
    // Stream it: the digest needs no copy of the file in memory.
    let mut inner = Sha256::new();
    let mut len: u64 = 0;
    let mut buf = [0u8; 64 * 1024];
    loop {
        let n = f.read(&mut buf).map_err(err)?;
        if n == 0 {
            break;
        }
        inner.update(&buf[..n]);
        len += n as u64;
    }
    h.update(len.to_le_bytes());
    h.update(inner.finalize());
    Ok(())
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;

    #[test]
    fn trust_round_trip_and_changes_untrust() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        fs::create_dir_all(ws.join(".toolgate/tools")).unwrap();
        assert!(!has_project_config(&ws));
        fs::write(ws.join(".toolgate/config.toml"), "[tools]\ndeny = []\n").unwrap();
        assert!(has_project_config(&ws));
        let d1 = project_digest(&ws).unwrap();
        assert_eq!(d1.len(), 64);
        let file = TrustStore::path_for(&dir.path().join("cfg/config.toml"));
        assert_eq!(file, dir.path().join("cfg/trusted.toml"));
        let mut store = TrustStore::load(&file).unwrap();
        assert_eq!(store.status(&ws, &d1), TrustStatus::Untrusted);
        store.trust(&ws, d1.clone());
        store.save().unwrap();
        let store = TrustStore::load(&file).unwrap();
        assert_eq!(store.status(&ws, &d1), TrustStatus::Trusted);
        assert_eq!(
            fs::read_dir(dir.path().join("cfg")).unwrap().count(),
            1,
            "no temporary file left"
        );
        // Editing the config, adding or changing a tool file: a different digest.
        fs::write(ws.join(".toolgate/config.toml"), "[tools]\ndeny = [] \n").unwrap();
        let d2 = project_digest(&ws).unwrap();
        assert_ne!(d1, d2);
        assert_eq!(store.status(&ws, &d2), TrustStatus::Changed);
        fs::write(ws.join(".toolgate/tools/a.py"), "TOOL = {}\n").unwrap();
        let d3 = project_digest(&ws).unwrap();
        fs::write(ws.join(".toolgate/tools/a.py"), "TOOL = {} \n").unwrap();
        let d4 = project_digest(&ws).unwrap();
        assert!(d3 != d2 && d4 != d3);
        let mut store = store;
        assert!(store.untrust(&ws));
        assert!(!store.untrust(&ws));
        assert_eq!(store.status(&ws, &d1), TrustStatus::Untrusted);
    }

    #[test]
    fn a_broken_trust_file_names_itself() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("trusted.toml");
        fs::write(&file, "[[workspace]]\npath = 3\n").unwrap();
        let err = TrustStore::load(&file).unwrap_err().to_string();
        assert!(
            err.starts_with(&format!("{}: not a toolgate trust file", file.display())),
            "{err}"
        );
    }
}
