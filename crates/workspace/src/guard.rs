//! The one path guard every path argument goes through.
//!
//! Relative paths resolve against the workspace root (never the process cwd). A path is accepted
//! only when it stays inside the root both lexically (no `..` that climbs out) and after every
//! symbolic link is resolved (`canonicalize`, then checked again). Paths that do not exist yet
//! (for `create`, a SQLite file) are checked through their deepest existing ancestor.

use std::io;
use std::path::{Component, Path, PathBuf};

use toolgate_core::CallError;

/// Why a path was refused.
#[derive(Debug, thiserror::Error)]
pub enum GuardError {
    /// The path leaves the workspace (absolute elsewhere, `..`, or a symbolic link).
    #[error(
        "Path \"{path}\" {reason}: paths must stay inside the workspace ({root}). Use a path relative to the workspace root, e.g. \"src/main.rs\"."
    )]
    Outside {
        path: String,
        reason: &'static str,
        root: PathBuf,
    },
    /// Nothing exists at the path.
    #[error(
        "No such file or directory: \"{path}\" (relative paths start at the workspace root {root})."
    )]
    NotFound { path: String, root: PathBuf },
    /// The path string itself is unusable.
    #[error("Invalid path \"{path}\": {message}")]
    Invalid { path: String, message: String },
    /// The file system refused to tell (permissions, I/O).
    #[error("Could not resolve \"{path}\": {source}")]
    Io {
        path: String,
        #[source]
        source: io::Error,
    },
}

impl From<GuardError> for CallError {
    fn from(e: GuardError) -> Self {
        let message = e.to_string();
        match e {
            GuardError::Outside { .. } => CallError::PermissionDenied { message },
            GuardError::NotFound { .. } => CallError::NotFound { message },
            GuardError::Invalid { .. } => CallError::InvalidInput { message },
            GuardError::Io { .. } => CallError::Failed { message },
        }
    }
}

/// Confines paths to one canonical workspace root.
#[derive(Debug, Clone)]
pub struct PathGuard {
    root: PathBuf,
}

impl PathGuard {
    /// `root` is canonicalized here; it must be an existing directory.
    pub fn new(root: impl AsRef<Path>) -> io::Result<Self> {
        let root = root.as_ref().canonicalize()?;
        if !root.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!("workspace root {} is not a directory", root.display()),
            ));
        }
        Ok(Self { root })
    }

    /// The canonical workspace root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolve a path that must exist. Returns its canonical form, inside the root.
    pub fn resolve(&self, user_path: &str) -> Result<PathBuf, GuardError> {
        let lexical = self.lexical(user_path)?;
        let (ancestor, rest) = self.deepest_existing(user_path, &lexical)?;
        if !rest.as_os_str().is_empty() {
            return Err(GuardError::NotFound {
                path: user_path.to_owned(),
                root: self.root.clone(),
            });
        }
        Ok(ancestor)
    }

    /// Resolve a path that may not exist yet (for creating it). The deepest existing ancestor is
    /// canonicalized and checked; the missing tail is made only of plain names. When the path
    /// exists, this is [`PathGuard::resolve`].
    pub fn resolve_for_create(&self, user_path: &str) -> Result<PathBuf, GuardError> {
        let lexical = self.lexical(user_path)?;
        let (ancestor, rest) = self.deepest_existing(user_path, &lexical)?;
        if rest.as_os_str().is_empty() {
            return Ok(ancestor);
        }
        // A dangling symbolic link at the first missing component would be followed by a
        // create; refuse it whatever its target.
        if let Some(first) = rest.components().next() {
            let candidate = ancestor.join(first);
            if candidate.symlink_metadata().is_ok() {
                return Err(GuardError::Outside {
                    path: user_path.to_owned(),
                    reason: "goes through a symbolic link that points nowhere (it could lead outside the workspace)",
                    root: self.root.clone(),
                });
            }
        }
        Ok(ancestor.join(rest))
    }

    /// Is this (already canonical) path inside the root?
    pub fn contains(&self, canonical: &Path) -> bool {
        canonical.starts_with(&self.root)
    }

    /// Check a path found by expansion (a glob or grep walk): canonicalize it and confirm it is
    /// still inside the root. `None` when it is outside or cannot be resolved.
    pub fn check_found(&self, path: &Path) -> Option<PathBuf> {
        let canonical = path.canonicalize().ok()?;
        self.contains(&canonical).then_some(canonical)
    }

    /// The workspace-relative form of a canonical path inside the root ("." for the root).
    pub fn relative(&self, canonical: &Path) -> String {
        match canonical.strip_prefix(&self.root) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".to_owned(),
            Ok(rel) => rel.to_string_lossy().into_owned(),
            Err(_) => canonical.to_string_lossy().into_owned(),
        }
    }

    /// Join against the root and normalize `.`/`..` without touching the file system. Refuses
    /// anything that would climb above the root.
    fn lexical(&self, user_path: &str) -> Result<PathBuf, GuardError> {
        let outside = |reason| GuardError::Outside {
            path: user_path.to_owned(),
            reason,
            root: self.root.clone(),
        };
        if user_path.is_empty() {
            return Err(GuardError::Invalid {
                path: String::new(),
                message: "the path is empty; use \".\" for the workspace root".to_owned(),
            });
        }
        if user_path.contains('\0') {
            return Err(GuardError::Invalid {
                path: user_path.replace('\0', "\\0"),
                message: "the path contains a NUL byte".to_owned(),
            });
        }
        if user_path == "~" || user_path.starts_with("~/") {
            return Err(outside("is in the home directory"));
        }
        let given = Path::new(user_path);
        let joined = if given.is_absolute() {
            given.to_path_buf()
        } else {
            self.root.join(given)
        };
        let mut out = PathBuf::new();
        for comp in joined.components() {
            match comp {
                Component::Prefix(p) => out.push(p.as_os_str()),
                Component::RootDir => out.push(Component::RootDir.as_os_str()),
                Component::CurDir => {}
                Component::ParentDir => {
                    if !out.pop() {
                        return Err(outside("climbs above the file system root"));
                    }
                }
                Component::Normal(n) => out.push(n),
            }
        }
        if !out.starts_with(&self.root) {
            return Err(if given.is_absolute() {
                outside("is outside the workspace")
            } else {
                outside("uses \"..\" to leave the workspace")
            });
        }
        Ok(out)
    }

    /// Walk up from `lexical` to the deepest ancestor that exists, canonicalize it and check it.
    /// Returns the canonical ancestor and the missing tail (empty when the path exists).
    fn deepest_existing(
        &self,
        user_path: &str,
        lexical: &Path,
    ) -> Result<(PathBuf, PathBuf), GuardError> {
        let mut existing = lexical.to_path_buf();
        let mut missing: Vec<std::ffi::OsString> = Vec::new();
        let canonical = loop {
            match existing.canonicalize() {
                Ok(c) => break c,
                Err(e) if is_missing(&e) => {
                    let Some(name) = existing.file_name().map(ToOwned::to_owned) else {
                        return Err(GuardError::Io {
                            path: user_path.to_owned(),
                            source: e,
                        });
                    };
                    missing.push(name);
                    if !existing.pop() {
                        return Err(GuardError::Io {
                            path: user_path.to_owned(),
                            source: e,
                        });
                    }
                }
                Err(source) => {
                    return Err(GuardError::Io {
                        path: user_path.to_owned(),
                        source,
                    });
                }
            }
        };
        if !self.contains(&canonical) {
            // `lexical` is inside the root, so only a symbolic link can have led outside.
            return Err(GuardError::Outside {
                path: user_path.to_owned(),
                reason: "resolves through a symbolic link to a place outside the workspace",
                root: self.root.clone(),
            });
        }
        let mut rest = PathBuf::new();
        for name in missing.iter().rev() {
            rest.push(name);
        }
        Ok((canonical, rest))
    }
}

/// `ENOENT`, or `ENOTDIR` for a path that runs through a regular file.
fn is_missing(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ws() -> (tempfile::TempDir, PathGuard) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("ws/src")).unwrap();
        std::fs::write(dir.path().join("ws/src/a.txt"), "a").unwrap();
        std::fs::write(dir.path().join("secret.txt"), "s").unwrap();
        let g = PathGuard::new(dir.path().join("ws")).unwrap();
        (dir, g)
    }

    #[test]
    fn relative_paths_resolve_against_the_root() {
        let (_d, g) = ws();
        let p = g.resolve("src/a.txt").unwrap();
        assert_eq!(p, g.root().join("src/a.txt"));
        assert_eq!(g.resolve(".").unwrap(), g.root());
        assert_eq!(g.resolve("src/../src/./a.txt").unwrap(), p);
        assert_eq!(g.relative(&p), "src/a.txt");
    }

    #[test]
    fn absolute_inside_is_fine_outside_is_not() {
        let (d, g) = ws();
        let inside = g.root().join("src/a.txt");
        assert!(g.resolve(inside.to_str().unwrap()).is_ok());
        let outside = d.path().canonicalize().unwrap().join("secret.txt");
        let err = g.resolve(outside.to_str().unwrap()).unwrap_err();
        assert!(matches!(err, GuardError::Outside { .. }), "{err}");
        assert!(err.to_string().contains("must stay inside the workspace"));
        // The C1 prefix bug: a sibling whose name extends the root's.
        let sibling = format!("{}_attacker/x", g.root().display());
        assert!(matches!(
            g.resolve_for_create(&sibling).unwrap_err(),
            GuardError::Outside { .. }
        ));
    }

    #[test]
    fn dotdot_that_leaves_is_refused_even_for_missing_paths() {
        let (_d, g) = ws();
        for p in [
            "../secret.txt",
            "src/../../secret.txt",
            "../nope",
            "../../../../etc/passwd",
        ] {
            let err = g.resolve(p).unwrap_err();
            assert!(matches!(err, GuardError::Outside { .. }), "{p}: {err}");
            let err = g.resolve_for_create(p).unwrap_err();
            assert!(matches!(err, GuardError::Outside { .. }), "{p}: {err}");
        }
    }

    #[test]
    fn missing_inside_is_not_found() {
        let (_d, g) = ws();
        let err = g.resolve("src/missing.txt").unwrap_err();
        assert!(matches!(err, GuardError::NotFound { .. }), "{err}");
        let p = g.resolve_for_create("src/new/deeper/file.txt").unwrap();
        assert_eq!(p, g.root().join("src/new/deeper/file.txt"));
    }

    #[test]
    fn symlinks_out_are_refused() {
        let (d, g) = ws();
        let out = d.path().join("outdir");
        std::fs::create_dir(&out).unwrap();
        std::os::unix::fs::symlink(&out, g.root().join("link")).unwrap();
        std::os::unix::fs::symlink(d.path().join("secret.txt"), g.root().join("s.txt")).unwrap();
        std::os::unix::fs::symlink(d.path().join("nowhere"), g.root().join("dangling")).unwrap();
        for p in ["link", "link/x.txt", "s.txt"] {
            let err = g.resolve_for_create(p).unwrap_err();
            assert!(err.to_string().contains("symbolic link"), "{p}: {err}");
        }
        assert!(matches!(
            g.resolve("link/missing").unwrap_err(),
            GuardError::Outside { .. }
        ));
        assert!(matches!(
            g.resolve_for_create("dangling").unwrap_err(),
            GuardError::Outside { .. }
        ));
        // A link that stays inside is fine.
        std::os::unix::fs::symlink(g.root().join("src"), g.root().join("src2")).unwrap();
        assert_eq!(g.resolve("src2/a.txt").unwrap(), g.root().join("src/a.txt"));
    }

    proptest::proptest! {
        /// Whatever path a model sends, the guard answers with a path inside the root or an
        /// error; never a path outside.
        #[test]
        fn resolved_paths_never_leave_the_root(
            parts in proptest::collection::vec(
                proptest::sample::select(vec!["src", "a.txt", "..", ".", "link", "in_link", "new", "/"]),
                0..8,
            ),
            absolute in proptest::bool::ANY,
        ) {
            let (d, g) = ws();
            let out = d.path().join("outdir");
            std::fs::create_dir_all(&out).unwrap();
            let _ = std::os::unix::fs::symlink(&out, g.root().join("link"));
            let _ = std::os::unix::fs::symlink(g.root().join("src"), g.root().join("in_link"));
            let joined = parts.join("/");
            let user = if absolute {
                format!("{}/{joined}", g.root().display())
            } else {
                joined
            };
            for p in [g.resolve(&user), g.resolve_for_create(&user)].into_iter().flatten() {
                proptest::prop_assert!(p.starts_with(g.root()), "{user} -> {}", p.display());
                // The existing part of the answer, links resolved, is inside too.
                let mut existing = p.clone();
                while !existing.exists() {
                    existing.pop();
                }
                proptest::prop_assert!(existing.canonicalize().unwrap().starts_with(g.root()));
            }
        }
    }

    #[test]
    fn odd_inputs() {
        let (_d, g) = ws();
        assert!(matches!(
            g.resolve("").unwrap_err(),
            GuardError::Invalid { .. }
        ));
        assert!(matches!(
            g.resolve("a\0b").unwrap_err(),
            GuardError::Invalid { .. }
        ));
        assert!(matches!(
            g.resolve("~/x").unwrap_err(),
            GuardError::Outside { .. }
        ));
    }
}
