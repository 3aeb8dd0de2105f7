//! The one path guard every path argument goes through.
//!
//! Relative paths resolve against the workspace root (never the process cwd). A path is first
//! normalised lexically (no `..` that climbs out, no absolute path elsewhere); then it is
//! **opened**, never checked-then-reopened by name: the guard holds a descriptor of the
//! workspace root and opens every path relative to it with
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)`, so the kernel refuses any resolution that
//! leaves the root at the moment of the open, whatever another process swaps in between. Where
//! `openat2` is missing (ENOSYS), and for the one case it refuses that is still inside (an
//! absolute symbolic link that names a place in the workspace), the guard walks the path itself
//! one component at a time with `O_PATH | O_NOFOLLOW`, reading each symbolic link through the
//! descriptor it opened and never going above the root's descriptor.
//!
//! Writes create their temporary file inside the confined parent directory's descriptor
//! (`O_CREAT | O_EXCL | O_NOFOLLOW`) and rename it within that directory (`renameat`), so nothing
//! can land outside. Files with more than one hard link are refused for reading: a process in
//! the workspace could have hard-linked a secret in, and no path check can tell.
//!
//! What this module cannot confine: code that opens by name itself (SQLite opens its database
//! and journal by path; the `ignore` walker lists directories by path). Callers re-open every
//! file such code finds through this guard before reading it; see `sql.rs` for what remains.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{AtFlags, FileType, OFlags, Stat, fstat, statat};
use rustix::io::Errno;
use toolgate_core::CallError;
use toolgate_fs::{FsError, Links, Root, Walked, WriteOptions};

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
    /// A regular file with more than one hard link: it may be a file from outside the workspace
    /// linked in, so it is not read.
    #[error(
        "\"{path}\" has {links} hard links, so it may be a file from outside the workspace linked in; it is not read. Copy the file (e.g. `cp {path} {path}.copy`) and use the copy."
    )]
    HardLinked { path: String, links: u64 },
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
            GuardError::Outside { .. } | GuardError::HardLinked { .. } => {
                CallError::PermissionDenied { message }
            }
            GuardError::NotFound { .. } => CallError::NotFound { message },
            GuardError::Invalid { .. } => CallError::InvalidInput { message },
            GuardError::Io { .. } => CallError::Failed { message },
        }
    }
}

/// A file or directory opened inside the workspace.
#[derive(Debug)]
pub struct Opened {
    pub fd: OwnedFd,
    pub stat: Stat,
    /// The workspace-relative name the caller asked for ("." for the root).
    pub rel: String,
}

impl Opened {
    pub fn file_type(&self) -> FileType {
        FileType::from_raw_mode(self.stat.st_mode)
    }
}

/// The confined parent directory of a path and the last name in it: where a write happens.
#[derive(Debug)]
pub struct Slot {
    /// An `O_PATH` descriptor of the real parent directory (inside the workspace).
    pub dir: OwnedFd,
    /// The plain name inside `dir` (never a symbolic link at the time it was looked at).
    pub name: OsString,
    /// The workspace-relative name the caller asked for.
    pub rel: String,
    /// Whether something existed at `name` when it was looked at.
    pub exists: bool,
}

/// Confines paths to one canonical workspace root, held open as a descriptor.
#[derive(Debug, Clone)]
pub struct PathGuard {
    root: PathBuf,
    root_fd: Arc<Root>,
}

fn errno_io(e: Errno) -> io::Error {
    io::Error::from(e)
}

impl PathGuard {
    /// `root` is canonicalized here and opened; it must be an existing directory.
    pub fn new(root: impl AsRef<Path>) -> io::Result<Self> {
        let opened = Root::new(root.as_ref()).map_err(|e| match e {
            FsError::Io { path, source } if source.kind() == io::ErrorKind::NotADirectory => {
                io::Error::new(
                    io::ErrorKind::NotADirectory,
                    format!("workspace root {} is not a directory", path.display()),
                )
            }
            other => other.into_io(),
        })?;
        Ok(Self {
            root: opened.path().to_path_buf(),
            root_fd: Arc::new(opened),
        })
    }

    /// Make every later open in this process use the component-by-component walk instead of
    /// `openat2`, as on a kernel without it. For tests of the fallback only.
    #[doc(hidden)]
    pub fn disable_openat2_for_tests() {
        toolgate_fs::disable_openat2_for_tests();
    }

    /// The canonical workspace root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The `O_PATH` descriptor of the workspace root every open is made beneath (for a
    /// Landlock rule that confines a thread to the same directory; see `sql`).
    pub fn root_fd(&self) -> BorrowedFd<'_> {
        self.root_fd.fd()
    }

    /// The workspace-relative form of a path under the root ("." for the root itself). Paths
    /// elsewhere are shown as they are.
    pub fn relative(&self, path: &Path) -> String {
        match path.strip_prefix(&self.root) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".to_owned(),
            Ok(rel) => rel.to_string_lossy().into_owned(),
            Err(_) => path.to_string_lossy().into_owned(),
        }
    }

    /// The path normalised lexically and made relative to the root (empty for the root).
    /// Refuses anything that would climb above the root or names a place elsewhere.
    pub fn lexical_rel(&self, user_path: &str) -> Result<PathBuf, GuardError> {
        let lexical = self.lexical(user_path)?;
        Ok(lexical
            .strip_prefix(&self.root)
            .map(Path::to_path_buf)
            .unwrap_or_default())
    }

    /// Open an existing path for reading (a file or a directory), beneath the root. FIFOs and
    /// devices open without blocking (`O_NONBLOCK`) so a caller can refuse them; a regular file
    /// with more than one hard link is refused.
    pub fn open_read(&self, user_path: &str) -> Result<Opened, GuardError> {
        let rel = self.lexical_rel(user_path)?;
        self.open_read_rel(user_path, &rel)
    }

    /// [`PathGuard::open_read`] for a path already relative to the root (one a walk found).
    pub fn open_read_found(&self, rel: &Path) -> Result<Opened, GuardError> {
        let shown = rel.to_string_lossy().into_owned();
        let rel = self.lexical_rel(&shown)?;
        self.open_read_rel(&shown, &rel)
    }

    fn open_read_rel(&self, user_path: &str, rel: &Path) -> Result<Opened, GuardError> {
        let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY;
        let fd = self.open_rel(user_path, rel, flags)?;
        let stat = fstat(&fd).map_err(|e| self.io(user_path, e))?;
        let opened = Opened {
            fd,
            stat,
            rel: show(rel),
        };
        refuse_hard_links(&opened)?;
        Ok(opened)
    }

    /// Open a path without reading it (`O_PATH`): to learn what it is, or to use a directory as
    /// the base of further opens.
    pub fn open_path(&self, user_path: &str) -> Result<Opened, GuardError> {
        let rel = self.lexical_rel(user_path)?;
        self.open_path_rel(user_path, &rel)
    }

    /// [`PathGuard::open_path`] for a path already relative to the root.
    pub fn open_path_found(&self, rel: &Path) -> Result<Opened, GuardError> {
        let shown = rel.to_string_lossy().into_owned();
        let rel = self.lexical_rel(&shown)?;
        self.open_path_rel(&shown, &rel)
    }

    fn open_path_rel(&self, user_path: &str, rel: &Path) -> Result<Opened, GuardError> {
        let fd = self.open_rel(user_path, rel, OFlags::PATH)?;
        let stat = fstat(&fd).map_err(|e| self.io(user_path, e))?;
        Ok(Opened {
            fd,
            stat,
            rel: show(rel),
        })
    }

    /// The parent directory of a path that is about to be written, and the name in it. With
    /// `create_dirs`, missing parent directories are made, each one inside the directory
    /// descriptor of the one before. A symbolic link at the name itself is resolved: one that
    /// leads outside (or nowhere) is refused; one that leads to a file inside yields that file's
    /// directory and name, so a write replaces the link's target, as writing through a link does.
    pub fn slot(&self, user_path: &str, create_dirs: bool) -> Result<Slot, GuardError> {
        let rel = self.lexical_rel(user_path)?;
        let (Some(parent), Some(name)) = (rel.parent(), rel.file_name()) else {
            return Err(GuardError::Invalid {
                path: user_path.to_owned(),
                message: "it names the workspace root, not a file in it".to_owned(),
            });
        };
        let dir = if create_dirs {
            self.mkdir_all(user_path, parent)?
        } else {
            self.open_rel(user_path, parent, OFlags::PATH | OFlags::DIRECTORY)?
        };
        match statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW) {
            Err(Errno::NOENT) => Ok(Slot {
                dir,
                name: name.to_owned(),
                rel: show(&rel),
                exists: false,
            }),
            Err(e) => Err(self.io(user_path, e)),
            Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::Symlink => {
                let walked = self.walk(user_path, &rel, true)?;
                match walked.name {
                    Some(name) if walked.exists => Ok(Slot {
                        dir: walked.dir,
                        name,
                        rel: show(&rel),
                        exists: true,
                    }),
                    Some(_) => Err(self.outside(
                        user_path,
                        "goes through a symbolic link that points nowhere (it could lead outside the workspace)",
                    )),
                    // A link to a directory inside: the name is taken (and is no file).
                    None => Ok(Slot {
                        dir,
                        name: name.to_owned(),
                        rel: show(&rel),
                        exists: true,
                    }),
                }
            }
            Ok(_) => Ok(Slot {
                dir,
                name: name.to_owned(),
                rel: show(&rel),
                exists: true,
            }),
        }
    }

    /// Make every missing directory of `rel` (relative to the root), each one inside the
    /// confined descriptor of its parent ([`Root::mkdir_all`]), and return the last one's.
    fn mkdir_all(&self, user_path: &str, rel: &Path) -> Result<OwnedFd, GuardError> {
        self.root_fd
            .mkdir_all(rel, Links::Inside)
            .map_err(|e| self.refused(user_path, e))
    }

    /// Open `rel` (relative to the root) beneath the root ([`Root::open`]: `openat2`, or the
    /// walk where it is missing and for absolute links that stay inside).
    fn open_rel(&self, user_path: &str, rel: &Path, flags: OFlags) -> Result<OwnedFd, GuardError> {
        self.root_fd
            .open(rel, flags, Links::Inside)
            .map_err(|e| self.refused(user_path, e))
    }

    /// Resolve `rel` one component at a time from the root's descriptor ([`Root::walk`]).
    fn walk(&self, user_path: &str, rel: &Path, follow_final: bool) -> Result<Walked, GuardError> {
        self.root_fd
            .walk(rel, follow_final, Links::Inside)
            .map_err(|e| self.refused(user_path, e))
    }

    /// The guard's wording for a refusal of the file module.
    fn refused(&self, user_path: &str, e: FsError) -> GuardError {
        match e {
            FsError::Escapes { reason, .. } => self.outside(user_path, reason),
            FsError::ThroughSymlink { .. } => self.outside(
                user_path,
                "resolves through a symbolic link to a place outside the workspace",
            ),
            FsError::NotFound { .. } => self.not_found(user_path),
            FsError::MultiLink { links, .. } => GuardError::HardLinked {
                path: user_path.to_owned(),
                links,
            },
            FsError::Io { source, .. } => GuardError::Io {
                path: user_path.to_owned(),
                source,
            },
            other => GuardError::Io {
                path: user_path.to_owned(),
                source: io::Error::other(other.to_string()),
            },
        }
    }

    fn outside(&self, user_path: &str, reason: &'static str) -> GuardError {
        GuardError::Outside {
            path: user_path.to_owned(),
            reason,
            root: self.root.clone(),
        }
    }

    fn not_found(&self, user_path: &str) -> GuardError {
        GuardError::NotFound {
            path: user_path.to_owned(),
            root: self.root.clone(),
        }
    }

    fn io(&self, user_path: &str, e: Errno) -> GuardError {
        GuardError::Io {
            path: user_path.to_owned(),
            source: errno_io(e),
        }
    }

    /// Join against the root and normalize `.`/`..` without touching the file system. Refuses
    /// anything that would climb above the root.
    fn lexical(&self, user_path: &str) -> Result<PathBuf, GuardError> {
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
            return Err(self.outside(user_path, "is in the home directory"));
        }
        let given = Path::new(user_path);
        let joined = if given.is_absolute() {
            given.to_path_buf()
        } else {
            self.root.join(given)
        };
        let Some(out) = toolgate_fs::normalize(&joined) else {
            return Err(self.outside(user_path, "climbs above the file system root"));
        };
        if !out.starts_with(&self.root) {
            return Err(if given.is_absolute() {
                self.outside(user_path, "is outside the workspace")
            } else {
                self.outside(user_path, "uses \"..\" to leave the workspace")
            });
        }
        Ok(out)
    }
}

/// A regular file with more than one hard link is not read (see the module comment).
fn refuse_hard_links(opened: &Opened) -> Result<(), GuardError> {
    match toolgate_fs::refuse_multi_link(Path::new(&opened.rel), &opened.stat) {
        Err(FsError::MultiLink { links, .. }) => Err(GuardError::HardLinked {
            path: opened.rel.clone(),
            links,
        }),
        _ => Ok(()),
    }
}

/// Check that a file opened some other way (by `edit` through a [`Slot`]) may be read.
pub(crate) fn check_readable(opened: &Opened) -> Result<(), GuardError> {
    refuse_hard_links(opened)
}

fn show(rel: &Path) -> String {
    if rel.as_os_str().is_empty() {
        ".".to_owned()
    } else {
        rel.to_string_lossy().into_owned()
    }
}

/// Write `bytes` as `name` in the directory `dir` atomically ([`toolgate_fs::write_in`]: an
/// exclusive temp file in that same descriptor, synced, renamed within it). With `noclobber`
/// the rename fails with `AlreadyExists` when `name` exists. The temp file is removed on any
/// failure.
pub(crate) fn write_in(
    dir: BorrowedFd<'_>,
    name: &OsStr,
    bytes: &[u8],
    mode: u32,
    noclobber: bool,
) -> io::Result<()> {
    toolgate_fs::write_in(
        dir,
        name,
        bytes,
        WriteOptions {
            mode: Some(mode),
            noclobber,
        },
    )
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    fn ws() -> (tempfile::TempDir, PathGuard) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("ws/src")).unwrap();
        std::fs::write(dir.path().join("ws/src/a.txt"), "a").unwrap();
        std::fs::write(dir.path().join("secret.txt"), "s").unwrap();
        let g = PathGuard::new(dir.path().join("ws")).unwrap();
        (dir, g)
    }

    fn read(g: &PathGuard, p: &str) -> Result<String, GuardError> {
        use std::io::Read;
        let o = g.open_read(p)?;
        let mut s = String::new();
        std::fs::File::from(o.fd).read_to_string(&mut s).unwrap();
        Ok(s)
    }

    #[test]
    fn relative_paths_resolve_against_the_root() {
        let (_d, g) = ws();
        assert_eq!(read(&g, "src/a.txt").unwrap(), "a");
        assert_eq!(read(&g, "src/../src/./a.txt").unwrap(), "a");
        let root = g.open_read(".").unwrap();
        assert_eq!(root.file_type(), FileType::Directory);
        assert_eq!(root.rel, ".");
        assert_eq!(
            g.lexical_rel("src/./x/../a.txt").unwrap(),
            Path::new("src/a.txt")
        );
        assert_eq!(g.relative(&g.root().join("src/a.txt")), "src/a.txt");
    }

    #[test]
    fn absolute_inside_is_fine_outside_is_not() {
        let (d, g) = ws();
        let inside = g.root().join("src/a.txt");
        assert_eq!(read(&g, inside.to_str().unwrap()).unwrap(), "a");
        let outside = d.path().canonicalize().unwrap().join("secret.txt");
        let err = g.open_read(outside.to_str().unwrap()).unwrap_err();
        assert!(matches!(err, GuardError::Outside { .. }), "{err}");
        assert!(err.to_string().contains("must stay inside the workspace"));
        // The C1 prefix bug: a sibling whose name extends the root's.
        let sibling = format!("{}_attacker/x", g.root().display());
        assert!(matches!(
            g.slot(&sibling, false).unwrap_err(),
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
            let err = g.open_read(p).unwrap_err();
            assert!(matches!(err, GuardError::Outside { .. }), "{p}: {err}");
            let err = g.slot(p, true).unwrap_err();
            assert!(matches!(err, GuardError::Outside { .. }), "{p}: {err}");
        }
    }

    #[test]
    fn missing_inside_is_not_found_and_slots_make_folders() {
        let (_d, g) = ws();
        let err = g.open_read("src/missing.txt").unwrap_err();
        assert!(matches!(err, GuardError::NotFound { .. }), "{err}");
        let err = g.slot("src/new/deeper/file.txt", false).unwrap_err();
        assert!(matches!(err, GuardError::NotFound { .. }), "{err}");
        let slot = g.slot("src/new/deeper/file.txt", true).unwrap();
        assert!(!slot.exists);
        assert_eq!(slot.name, "file.txt");
        assert!(g.root().join("src/new/deeper").is_dir());
        write_in(slot.dir.as_fd(), &slot.name, b"hi", 0o644, true).unwrap();
        assert_eq!(read(&g, "src/new/deeper/file.txt").unwrap(), "hi");
        let again = g.slot("src/new/deeper/file.txt", false).unwrap();
        assert!(again.exists);
        let err = write_in(again.dir.as_fd(), &again.name, b"x", 0o644, true).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        // No temp file stays behind after a refused write.
        assert_eq!(
            std::fs::read_dir(g.root().join("src/new/deeper"))
                .unwrap()
                .count(),
            1
        );
        assert!(matches!(
            g.slot(".", true).unwrap_err(),
            GuardError::Invalid { .. }
        ));
    }

    #[test]
    fn symlinks_out_are_refused() {
        let (d, g) = ws();
        let out = d.path().join("outdir");
        std::fs::create_dir(&out).unwrap();
        std::os::unix::fs::symlink(&out, g.root().join("link")).unwrap();
        std::os::unix::fs::symlink(d.path().join("secret.txt"), g.root().join("s.txt")).unwrap();
        std::os::unix::fs::symlink(d.path().join("nowhere"), g.root().join("dangling")).unwrap();
        std::os::unix::fs::symlink("../secret.txt", g.root().join("rel_out")).unwrap();
        for p in ["link", "link/x.txt", "s.txt", "rel_out"] {
            let err = g.slot(p, true).unwrap_err();
            assert!(err.to_string().contains("symbolic link"), "{p}: {err}");
        }
        for p in ["link/missing", "s.txt", "rel_out", "link"] {
            let err = g.open_read(p).unwrap_err();
            assert!(matches!(err, GuardError::Outside { .. }), "{p}: {err}");
        }
        assert!(matches!(
            g.slot("dangling", true).unwrap_err(),
            GuardError::Outside { .. }
        ));
        assert!(!out.join("x.txt").exists());
        // Links that stay inside are fine, absolute or relative.
        std::os::unix::fs::symlink(g.root().join("src"), g.root().join("src2")).unwrap();
        std::os::unix::fs::symlink("src/a.txt", g.root().join("a_rel")).unwrap();
        assert_eq!(read(&g, "src2/a.txt").unwrap(), "a");
        assert_eq!(read(&g, "a_rel").unwrap(), "a");
        let slot = g.slot("a_rel", false).unwrap();
        assert_eq!(
            slot.name, "a.txt",
            "a write through a link replaces its target"
        );
    }

    #[test]
    fn the_walk_alone_confines_too() {
        // The fallback for kernels without openat2, exercised directly.
        let (d, g) = ws();
        std::os::unix::fs::symlink(d.path().join("secret.txt"), g.root().join("s.txt")).unwrap();
        std::os::unix::fs::symlink("..", g.root().join("src/up")).unwrap();
        std::os::unix::fs::symlink("../..", g.root().join("src/up2")).unwrap();
        let ok = g
            .walk("src/up/src/a.txt", Path::new("src/up/src/a.txt"), true)
            .unwrap();
        assert!(ok.exists && ok.name.as_deref() == Some(OsStr::new("a.txt")));
        for p in ["s.txt", "src/up2/secret.txt", "src/up2"] {
            let err = g.walk(p, Path::new(p), true).map(|_| ()).unwrap_err();
            assert!(matches!(err, GuardError::Outside { .. }), "{p}: {err}");
        }
        let missing = g.walk("src/nope", Path::new("src/nope"), true).unwrap();
        assert!(!missing.exists);
    }

    #[test]
    fn hard_links_and_fifos() {
        let (d, g) = ws();
        std::fs::hard_link(d.path().join("secret.txt"), g.root().join("hl")).unwrap();
        let err = g.open_read("hl").unwrap_err();
        assert!(
            matches!(err, GuardError::HardLinked { links: 2, .. }),
            "{err}"
        );
        assert!(err.to_string().contains("hard links"), "{err}");
        let st = std::process::Command::new("mkfifo")
            .arg(g.root().join("fifo"))
            .status()
            .unwrap();
        assert!(st.success());
        // Opens at once (O_NONBLOCK) so the caller can refuse it.
        let o = g.open_read("fifo").unwrap();
        assert_eq!(o.file_type(), FileType::Fifo);
    }

    proptest::proptest! {
        /// Whatever path a model sends, what the guard opens is inside the root, or it refuses.
        #[test]
        fn opened_paths_never_leave_the_root(
            parts in proptest::collection::vec(
                proptest::sample::select(vec!["src", "a.txt", "..", ".", "link", "in_link", "new", "/"]),
                0..8,
            ),
            absolute in proptest::bool::ANY,
        ) {
            let (d, g) = ws();
            let out = d.path().join("outdir");
            std::fs::create_dir_all(&out).unwrap();
            std::fs::write(out.join("a.txt"), "OUT").unwrap();
            let _ = std::os::unix::fs::symlink(&out, g.root().join("link"));
            let _ = std::os::unix::fs::symlink(g.root().join("src"), g.root().join("in_link"));
            let joined = parts.join("/");
            let user = if absolute {
                format!("{}/{joined}", g.root().display())
            } else {
                joined
            };
            if let Ok(o) = g.open_read(&user)
                && o.file_type() == FileType::RegularFile
            {
                use std::io::Read;
                let mut s = String::new();
                std::fs::File::from(o.fd).read_to_string(&mut s).unwrap();
                proptest::prop_assert_eq!(s, "a", "{}", user);
            }
            if let Ok(slot) = g.slot(&user, false) {
                // The slot's directory is inside: writing there never reaches `outdir`.
                let _ = write_in(slot.dir.as_fd(), &slot.name, b"W", 0o644, true);
                proptest::prop_assert_eq!(std::fs::read_dir(&out).unwrap().count(), 1);
            }
        }
    }

    #[test]
    fn odd_inputs() {
        let (_d, g) = ws();
        assert!(matches!(
            g.open_read("").unwrap_err(),
            GuardError::Invalid { .. }
        ));
        assert!(matches!(
            g.open_read("a\0b").unwrap_err(),
            GuardError::Invalid { .. }
        ));
        assert!(matches!(
            g.open_read("~/x").unwrap_err(),
            GuardError::Outside { .. }
        ));
    }
}
