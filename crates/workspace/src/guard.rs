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

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use rustix::fs::{
    AtFlags, FileType, Mode, OFlags, RenameFlags, ResolveFlags, Stat, fstat, fsync, linkat,
    mkdirat, openat, openat2, readlinkat, renameat, renameat_with, statat, unlinkat,
};
use rustix::io::Errno;
use toolgate_core::CallError;

/// Symbolic links followed in one resolution at most (the kernel's own limit is 40).
const MAX_LINKS: usize = 40;
/// Retries when a path changes under an open (EAGAIN from openat2, a name that turned into a
/// link between two steps).
const RETRIES: usize = 8;

/// Set once `openat2` answered ENOSYS: every later open walks instead.
static NO_OPENAT2: AtomicBool = AtomicBool::new(false);

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

/// Where a walk ended: a directory descriptor and, unless the target is that directory, the
/// last name in it.
struct Walked {
    dir: OwnedFd,
    name: Option<OsString>,
    exists: bool,
}

/// Confines paths to one canonical workspace root, held open as a descriptor.
#[derive(Debug, Clone)]
pub struct PathGuard {
    root: PathBuf,
    root_fd: Arc<OwnedFd>,
}

fn errno_io(e: Errno) -> io::Error {
    io::Error::from(e)
}

impl PathGuard {
    /// `root` is canonicalized here and opened; it must be an existing directory.
    pub fn new(root: impl AsRef<Path>) -> io::Result<Self> {
        let root = root.as_ref().canonicalize()?;
        let fd = rustix::fs::open(
            &root,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| match e {
            Errno::NOTDIR => io::Error::new(
                io::ErrorKind::NotADirectory,
                format!("workspace root {} is not a directory", root.display()),
            ),
            other => errno_io(other),
        })?;
        Ok(Self {
            root,
            root_fd: Arc::new(fd),
        })
    }

    /// Make every later open in this process use the component-by-component walk instead of
    /// `openat2`, as on a kernel without it. For tests of the fallback only.
    #[doc(hidden)]
    pub fn disable_openat2_for_tests() {
        NO_OPENAT2.store(true, Ordering::Relaxed);
    }

    /// The canonical workspace root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The `O_PATH` descriptor of the workspace root every open is made beneath (for a
    /// Landlock rule that confines a thread to the same directory; see `sql`).
    pub fn root_fd(&self) -> BorrowedFd<'_> {
        self.root_fd.as_fd()
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

    /// Make every missing directory of `rel` (relative to the root), each one with `mkdirat`
    /// inside the confined descriptor of its parent, and return the last one's descriptor.
    fn mkdir_all(&self, user_path: &str, rel: &Path) -> Result<OwnedFd, GuardError> {
        let dir_flags = OFlags::PATH | OFlags::DIRECTORY;
        match self.open_rel(user_path, rel, dir_flags) {
            Err(GuardError::NotFound { .. }) => {}
            other => return other,
        }
        let mut sofar = PathBuf::new();
        let mut dir = self.open_rel(user_path, &sofar, dir_flags)?;
        for comp in rel.components() {
            let Component::Normal(name) = comp else {
                continue;
            };
            sofar.push(name);
            match self.open_rel(user_path, &sofar, dir_flags) {
                Ok(next) => dir = next,
                Err(GuardError::NotFound { .. }) => {
                    match mkdirat(&dir, name, Mode::from_raw_mode(0o777)) {
                        Ok(()) | Err(Errno::EXIST) => {}
                        Err(e) => return Err(self.io(user_path, e)),
                    }
                    // Re-open by the whole path beneath the root: if something else appeared
                    // at that name meanwhile (a link out), this refuses it.
                    dir = self.open_rel(user_path, &sofar, dir_flags)?;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(dir)
    }

    /// Open `rel` (relative to the root) beneath the root. The kernel does it in one step where
    /// it can (`openat2`); otherwise, and for absolute links that stay inside, the guard walks.
    fn open_rel(&self, user_path: &str, rel: &Path, flags: OFlags) -> Result<OwnedFd, GuardError> {
        let flags = flags | OFlags::CLOEXEC;
        let target: &Path = if rel.as_os_str().is_empty() {
            Path::new(".")
        } else {
            rel
        };
        if !NO_OPENAT2.load(Ordering::Relaxed) {
            for _ in 0..RETRIES {
                match openat2(
                    &*self.root_fd,
                    target,
                    flags,
                    Mode::empty(),
                    ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
                ) {
                    Ok(fd) => return Ok(fd),
                    // A rename raced a `..` step; the kernel asks to retry.
                    Err(Errno::AGAIN) => continue,
                    Err(Errno::NOSYS) => {
                        NO_OPENAT2.store(true, Ordering::Relaxed);
                        break;
                    }
                    // Leaving the root, an absolute link (which may still name a place
                    // inside), or a magic link: the walk decides which, and says why.
                    Err(Errno::XDEV | Errno::LOOP) => break,
                    Err(e) => return Err(self.map_errno(user_path, e)),
                }
            }
        }
        for _ in 0..RETRIES {
            let walked = self.walk(user_path, rel, true)?;
            let result = match &walked.name {
                None => openat(&walked.dir, ".", flags, Mode::empty()),
                Some(_) if !walked.exists => {
                    return Err(self.not_found(user_path));
                }
                Some(name) => openat(&walked.dir, name, flags | OFlags::NOFOLLOW, Mode::empty()),
            };
            match result {
                Ok(fd) => return Ok(fd),
                // The last name became a symbolic link after the walk looked at it: walk again.
                Err(Errno::LOOP) => continue,
                Err(e) => return Err(self.map_errno(user_path, e)),
            }
        }
        Err(GuardError::Io {
            path: user_path.to_owned(),
            source: io::Error::other("the path kept changing while it was opened; try again"),
        })
    }

    /// Resolve `rel` one component at a time from the root's descriptor with
    /// `O_PATH | O_NOFOLLOW`. A symbolic link is read through the descriptor that was opened
    /// for it; a relative target continues from the link's directory, an absolute one must name
    /// a place under the root (it continues from the root). `..` returns to the directory the
    /// walk came from and never above the root. With `follow_final`, a link in the last
    /// component is followed too. A missing last component is not an error (`exists: false`).
    fn walk(&self, user_path: &str, rel: &Path, follow_final: bool) -> Result<Walked, GuardError> {
        let mut stack: Vec<OwnedFd> = vec![
            openat(
                &*self.root_fd,
                ".",
                OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(|e| self.io(user_path, e))?,
        ];
        let mut pending: VecDeque<OsString> = components(rel);
        let mut links = 0usize;
        while let Some(comp) = pending.pop_front() {
            if comp.as_bytes() == b"." {
                continue;
            }
            if comp.as_bytes() == b".." {
                if stack.len() == 1 {
                    return Err(self.outside(
                        user_path,
                        "resolves through a symbolic link to a place outside the workspace",
                    ));
                }
                stack.pop();
                continue;
            }
            let last = pending.is_empty();
            let cur = stack.last().map(AsFd::as_fd).ok_or_else(|| {
                self.io(user_path, Errno::INVAL) // unreachable: the root is never popped
            })?;
            let fd = match openat(
                cur,
                &comp,
                OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            ) {
                Ok(fd) => fd,
                Err(Errno::NOENT) if last => {
                    return Ok(Walked {
                        dir: dup_dir(cur).map_err(|e| self.io(user_path, e))?,
                        name: Some(comp),
                        exists: false,
                    });
                }
                Err(e) => return Err(self.map_errno(user_path, e)),
            };
            let st = fstat(&fd).map_err(|e| self.io(user_path, e))?;
            match FileType::from_raw_mode(st.st_mode) {
                FileType::Symlink if last && !follow_final => {
                    return Ok(Walked {
                        dir: dup_dir(cur).map_err(|e| self.io(user_path, e))?,
                        name: Some(comp),
                        exists: true,
                    });
                }
                FileType::Symlink => {
                    links += 1;
                    if links > MAX_LINKS {
                        return Err(GuardError::Io {
                            path: user_path.to_owned(),
                            source: errno_io(Errno::LOOP),
                        });
                    }
                    // Read the link through the descriptor just opened: it is the link that was
                    // looked at, whatever has been renamed since.
                    let target =
                        readlinkat(&fd, "", Vec::new()).map_err(|e| self.io(user_path, e))?;
                    let target = PathBuf::from(OsString::from_vec(target.into_bytes()));
                    let mut next = if target.is_absolute() {
                        let Ok(inside) = target.strip_prefix(&self.root) else {
                            return Err(self.outside(
                                user_path,
                                "resolves through a symbolic link to a place outside the workspace",
                            ));
                        };
                        stack.truncate(1);
                        components(inside)
                    } else {
                        components(&target)
                    };
                    next.extend(pending);
                    pending = next;
                }
                FileType::Directory => stack.push(fd),
                _ if last => {
                    return Ok(Walked {
                        dir: dup_dir(cur).map_err(|e| self.io(user_path, e))?,
                        name: Some(comp),
                        exists: true,
                    });
                }
                // A file in the middle of a path: like the kernel, "not a directory".
                _ => return Err(self.not_found(user_path)),
            }
        }
        let dir = stack
            .pop()
            .ok_or_else(|| self.io(user_path, Errno::INVAL))?;
        Ok(Walked {
            dir,
            name: None,
            exists: true,
        })
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

    fn map_errno(&self, user_path: &str, e: Errno) -> GuardError {
        match e {
            Errno::NOENT | Errno::NOTDIR => self.not_found(user_path),
            Errno::XDEV => self.outside(
                user_path,
                "resolves through a symbolic link to a place outside the workspace",
            ),
            other => self.io(user_path, other),
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
        let mut out = PathBuf::new();
        for comp in joined.components() {
            match comp {
                Component::Prefix(p) => out.push(p.as_os_str()),
                Component::RootDir => out.push(Component::RootDir.as_os_str()),
                Component::CurDir => {}
                Component::ParentDir => {
                    if !out.pop() {
                        return Err(self.outside(user_path, "climbs above the file system root"));
                    }
                }
                Component::Normal(n) => out.push(n),
            }
        }
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
    // `st_nlink` is u64 on x86_64 but u32 on other targets.
    #[allow(clippy::useless_conversion)]
    let links = u64::from(opened.stat.st_nlink);
    if opened.file_type() == FileType::RegularFile && links > 1 {
        return Err(GuardError::HardLinked {
            path: opened.rel.clone(),
            links,
        });
    }
    Ok(())
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

/// The names of a path, `.` and `..` kept (a link target's `..` is resolved by the walk).
fn components(p: &Path) -> VecDeque<OsString> {
    p.components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_owned()),
            Component::ParentDir => Some(OsString::from("..")),
            Component::CurDir | Component::RootDir | Component::Prefix(_) => None,
        })
        .collect()
}

fn dup_dir(fd: BorrowedFd<'_>) -> Result<OwnedFd, Errno> {
    openat(
        fd,
        ".",
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

/// A fresh temp-file name for this process.
fn temp_name() -> OsString {
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    OsString::from(format!(
        ".toolgate-{}-{}-{nanos:08x}.tmp",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ))
}

/// Write `bytes` as `name` in the directory `dir` atomically: a temp file created in that same
/// directory descriptor (`O_CREAT | O_EXCL | O_NOFOLLOW`, so it can only be a new file there),
/// synced, then renamed within the descriptor. With `noclobber` the rename fails with
/// `AlreadyExists` when `name` exists. The temp file is removed on any failure.
pub(crate) fn write_in(
    dir: BorrowedFd<'_>,
    name: &OsStr,
    bytes: &[u8],
    mode: u32,
    noclobber: bool,
) -> io::Result<()> {
    use std::io::Write;
    let mut tmp = None;
    for _ in 0..RETRIES {
        let candidate = temp_name();
        match openat(
            dir,
            &candidate,
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        ) {
            Ok(fd) => {
                tmp = Some((candidate, fd));
                break;
            }
            Err(Errno::EXIST) => continue,
            Err(e) => return Err(errno_io(e)),
        }
    }
    let Some((tmp_name, fd)) = tmp else {
        return Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            "could not pick a temporary file name",
        ));
    };
    let result = (|| -> io::Result<()> {
        let mut file = std::fs::File::from(fd);
        file.write_all(bytes)?;
        rustix::fs::fchmod(&file, Mode::from_raw_mode(mode & 0o7777)).map_err(errno_io)?;
        file.sync_all()?;
        drop(file);
        if noclobber {
            match renameat_with(dir, &tmp_name, dir, name, RenameFlags::NOREPLACE) {
                Ok(()) => {}
                // A file system without RENAME_NOREPLACE: a hard link is just as exclusive.
                Err(Errno::INVAL | Errno::NOSYS) => {
                    linkat(dir, &tmp_name, dir, name, AtFlags::empty()).map_err(errno_io)?;
                    let _ = unlinkat(dir, &tmp_name, AtFlags::empty());
                }
                Err(e) => return Err(errno_io(e)),
            }
        } else {
            renameat(dir, &tmp_name, dir, name).map_err(errno_io)?;
        }
        // Persist the rename itself; a directory that cannot be synced is not an error.
        if let Ok(d) = openat(
            dir,
            ".",
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            let _ = fsync(&d);
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = unlinkat(dir, &tmp_name, AtFlags::empty());
    }
    result
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
