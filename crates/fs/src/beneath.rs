//! Opening beneath a root, race-free (see the crate comment).

use std::collections::VecDeque;
use std::ffi::OsString;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::fs::{
    FileType, Mode, OFlags, ResolveFlags, fstat, mkdirat, openat, openat2, readlinkat,
};
use rustix::io::Errno;

use crate::FsError;

/// Symbolic links followed in one resolution at most (the kernel's own limit is 40).
const MAX_LINKS: usize = 40;
/// Retries when a path changes under an open (EAGAIN from openat2, a name that turned into a
/// link between two steps).
const RETRIES: usize = 8;

/// Set once `openat2` answered ENOSYS: every later open walks instead.
static NO_OPENAT2: AtomicBool = AtomicBool::new(false);

/// The reason an escape through a link gives (the workspace guard's wording).
pub(crate) const LINK_OUT: &str =
    "resolves through a symbolic link to a place outside the workspace";

/// Make every later open in this process use the component-by-component walk instead of
/// `openat2`, as on a kernel without it. For tests of the fallback only.
#[doc(hidden)]
pub fn disable_openat2_for_tests() {
    NO_OPENAT2.store(true, Ordering::Relaxed);
}

/// Which symbolic links an open beneath a root follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Links {
    /// Links whose target stays beneath the root, relative or absolute (an absolute one must
    /// name a place under the root's canonical path). Magic links never.
    Inside,
    /// None at all (`RESOLVE_NO_SYMLINKS`): for roots a repository controls, where a link is
    /// itself the attack (an install into `.vscode` shipped as a link elsewhere).
    Refuse,
}

/// Where a walk ended: a directory descriptor and, unless the target is that directory, the
/// last name in it (never a symbolic link at the time it was looked at, unless the walk was
/// asked not to follow the last one).
#[derive(Debug)]
pub struct Walked {
    /// An `O_PATH` descriptor of the directory (beneath the root).
    pub dir: OwnedFd,
    /// The last name, `None` when the path names `dir` itself.
    pub name: Option<OsString>,
    /// Whether something exists at `name`.
    pub exists: bool,
}

/// A directory held open as a descriptor, beneath which paths are opened.
#[derive(Debug)]
pub struct Root {
    path: PathBuf,
    fd: OwnedFd,
}

impl Root {
    /// Open `path` (canonicalized here) as a root; it must be an existing directory.
    pub fn new(path: impl AsRef<Path>) -> Result<Self, FsError> {
        let given = path.as_ref();
        let path = given.canonicalize().map_err(|e| FsError::io(given, e))?;
        let fd = rustix::fs::open(
            &path,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| match e {
            Errno::NOTDIR => FsError::io(
                &path,
                std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a directory"),
            ),
            other => FsError::io(&path, other),
        })?;
        Ok(Self { path, fd })
    }

    /// The canonical path of the root.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The root's `O_PATH` descriptor.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Open `rel` (relative to the root; empty or "." for the root) beneath the root with
    /// `flags` (`O_CLOEXEC` added). The kernel does it in one step where it can (`openat2`);
    /// where it is missing, and for an absolute link that names a place inside (which
    /// `RESOLVE_BENEATH` refuses), [`Root::walk`] resolves the path itself.
    pub fn open(&self, rel: &Path, flags: OFlags, links: Links) -> Result<OwnedFd, FsError> {
        let flags = flags | OFlags::CLOEXEC;
        if rel.is_absolute() {
            return Err(FsError::Escapes {
                path: rel.to_path_buf(),
                reason: "is an absolute path where one relative to the root was expected",
            });
        }
        let target: &Path = if rel.as_os_str().is_empty() {
            Path::new(".")
        } else {
            rel
        };
        if !NO_OPENAT2.load(Ordering::Relaxed) {
            let mut resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
            if links == Links::Refuse {
                resolve |= ResolveFlags::NO_SYMLINKS;
            }
            for _ in 0..RETRIES {
                match openat2(&self.fd, target, flags, Mode::empty(), resolve) {
                    Ok(fd) => return Ok(fd),
                    // A rename raced a `..` step; the kernel asks to retry.
                    Err(Errno::AGAIN) => continue,
                    Err(Errno::NOSYS) => {
                        NO_OPENAT2.store(true, Ordering::Relaxed);
                        break;
                    }
                    // Leaving the root, a link (which may still name a place inside), or a
                    // magic link: the walk decides which, and says why.
                    Err(Errno::XDEV | Errno::LOOP) => break,
                    Err(e) => return Err(map_errno(rel, e)),
                }
            }
        }
        for _ in 0..RETRIES {
            let walked = self.walk(rel, true, links)?;
            let result = match &walked.name {
                None => openat(&walked.dir, ".", flags, Mode::empty()),
                Some(_) if !walked.exists => {
                    return Err(FsError::NotFound {
                        path: rel.to_path_buf(),
                    });
                }
                Some(name) => openat(&walked.dir, name, flags | OFlags::NOFOLLOW, Mode::empty()),
            };
            match result {
                // `O_PATH | O_NOFOLLOW` opens a link itself instead of failing: one swapped in
                // after the walk looked is not what was asked for, walk again.
                Ok(fd) if flags.contains(OFlags::PATH) && is_link(&fd) => continue,
                Ok(fd) => return Ok(fd),
                // The last name became a symbolic link after the walk looked at it: walk again.
                Err(Errno::LOOP) => continue,
                Err(e) => return Err(map_errno(rel, e)),
            }
        }
        Err(FsError::Unstable {
            path: rel.to_path_buf(),
        })
    }

    /// Open the directory `rel` beneath the root for reading its entries and as the base of
    /// further `*at` calls (`O_RDONLY | O_DIRECTORY`, so it can also be fsynced).
    pub fn open_dir(&self, rel: &Path, links: Links) -> Result<OwnedFd, FsError> {
        self.open(rel, OFlags::RDONLY | OFlags::DIRECTORY, links)
    }

    /// Make every missing directory of `rel`, each one with `mkdirat` inside the confined
    /// descriptor of its parent, and return the last one's (`O_PATH`) descriptor. Each new
    /// directory is re-opened by its whole path beneath the root, so something else that
    /// appeared at the name meanwhile (a link out) is refused.
    pub fn mkdir_all(&self, rel: &Path, links: Links) -> Result<OwnedFd, FsError> {
        let dir_flags = OFlags::PATH | OFlags::DIRECTORY;
        match self.open(rel, dir_flags, links) {
            Err(FsError::NotFound { .. }) => {}
            other => return other,
        }
        let mut sofar = PathBuf::new();
        let mut dir = self.open(&sofar, dir_flags, links)?;
        for comp in rel.components() {
            let Component::Normal(name) = comp else {
                continue;
            };
            sofar.push(name);
            match self.open(&sofar, dir_flags, links) {
                Ok(next) => dir = next,
                Err(FsError::NotFound { .. }) => {
                    match mkdirat(&dir, name, Mode::from_raw_mode(0o777)) {
                        Ok(()) | Err(Errno::EXIST) => {}
                        Err(e) => return Err(FsError::io(&sofar, e)),
                    }
                    dir = self.open(&sofar, dir_flags, links)?;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(dir)
    }

    /// The first existing component of `rel` (relative to the root, returned as such) that is
    /// a symbolic link, looked at one component at a time through descriptors (`O_PATH |
    /// O_NOFOLLOW`), never by whole path; `None` when there is none. Components that do not
    /// exist yet end the look (they will be made as real folders). For roots a repository
    /// controls, where a shipped link (`.vscode` → elsewhere) is itself the attack.
    pub fn first_link(&self, rel: &Path) -> Result<Option<PathBuf>, FsError> {
        let io = |e: Errno| FsError::io(rel, e);
        let mut cur = dup_dir(self.fd.as_fd()).map_err(io)?;
        let mut sofar = PathBuf::new();
        for comp in rel.components() {
            let name = match comp {
                Component::Normal(n) => n,
                Component::CurDir => continue,
                _ => {
                    return Err(FsError::Escapes {
                        path: rel.to_path_buf(),
                        reason: "is not a plain path below the root",
                    });
                }
            };
            sofar.push(name);
            let fd = match openat(
                &cur,
                name,
                OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            ) {
                Ok(fd) => fd,
                Err(Errno::NOENT) => return Ok(None),
                Err(e) => return Err(map_errno(rel, e)),
            };
            match FileType::from_raw_mode(fstat(&fd).map_err(io)?.st_mode) {
                FileType::Symlink => return Ok(Some(sofar)),
                _ => cur = fd,
            }
        }
        Ok(None)
    }

    /// Resolve `rel` one component at a time from the root's descriptor with
    /// `O_PATH | O_NOFOLLOW` — the fallback where `openat2` is missing, and the judge of why it
    /// refused. A symbolic link is read through the descriptor that was opened for it; a
    /// relative target continues from the link's directory, an absolute one must name a place
    /// under the root (it continues from the root). `..` returns to the directory the walk came
    /// from and never above the root. With `follow_final`, a link in the last component is
    /// followed too. A missing last component is not an error (`exists: false`).
    pub fn walk(&self, rel: &Path, follow_final: bool, links: Links) -> Result<Walked, FsError> {
        let io = |e: Errno| FsError::io(rel, e);
        let escapes = |reason| FsError::Escapes {
            path: rel.to_path_buf(),
            reason,
        };
        if rel.is_absolute() {
            return Err(escapes(
                "is an absolute path where one relative to the root was expected",
            ));
        }
        let mut stack: Vec<OwnedFd> = vec![dup_dir(self.fd.as_fd()).map_err(io)?];
        let mut pending: VecDeque<OsString> = components(rel);
        let mut followed = 0usize;
        while let Some(comp) = pending.pop_front() {
            if comp.as_bytes() == b"." {
                continue;
            }
            if comp.as_bytes() == b".." {
                if stack.len() == 1 {
                    return Err(escapes(LINK_OUT));
                }
                stack.pop();
                continue;
            }
            let last = pending.is_empty();
            // The root is never popped, so the stack is never empty here.
            let cur = stack
                .last()
                .map(AsFd::as_fd)
                .ok_or_else(|| io(Errno::INVAL))?;
            let fd = match openat(
                cur,
                &comp,
                OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            ) {
                Ok(fd) => fd,
                Err(Errno::NOENT) if last => {
                    return Ok(Walked {
                        dir: dup_dir(cur).map_err(io)?,
                        name: Some(comp),
                        exists: false,
                    });
                }
                Err(e) => return Err(map_errno(rel, e)),
            };
            let st = fstat(&fd).map_err(io)?;
            match FileType::from_raw_mode(st.st_mode) {
                FileType::Symlink if last && !follow_final => {
                    return Ok(Walked {
                        dir: dup_dir(cur).map_err(io)?,
                        name: Some(comp),
                        exists: true,
                    });
                }
                FileType::Symlink if links == Links::Refuse => {
                    return Err(FsError::ThroughSymlink {
                        path: rel.to_path_buf(),
                    });
                }
                FileType::Symlink => {
                    followed += 1;
                    if followed > MAX_LINKS {
                        return Err(io(Errno::LOOP));
                    }
                    // Read the link through the descriptor just opened: it is the link that was
                    // looked at, whatever has been renamed since.
                    let target = readlinkat(&fd, "", Vec::new()).map_err(io)?;
                    let target = PathBuf::from(OsString::from_vec(target.into_bytes()));
                    let mut next = if target.is_absolute() {
                        let Ok(inside) = target.strip_prefix(&self.path) else {
                            return Err(escapes(LINK_OUT));
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
                        dir: dup_dir(cur).map_err(io)?,
                        name: Some(comp),
                        exists: true,
                    });
                }
                // A file in the middle of a path: like the kernel, "not a directory".
                _ => {
                    return Err(FsError::NotFound {
                        path: rel.to_path_buf(),
                    });
                }
            }
        }
        let dir = stack.pop().ok_or_else(|| io(Errno::INVAL))?;
        Ok(Walked {
            dir,
            name: None,
            exists: true,
        })
    }
}

fn is_link(fd: &OwnedFd) -> bool {
    fstat(fd).is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::Symlink)
}

fn map_errno(rel: &Path, e: Errno) -> FsError {
    match e {
        Errno::NOENT | Errno::NOTDIR => FsError::NotFound {
            path: rel.to_path_buf(),
        },
        Errno::XDEV => FsError::Escapes {
            path: rel.to_path_buf(),
            reason: LINK_OUT,
        },
        other => FsError::io(rel, other),
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn tree() -> (tempfile::TempDir, Root) {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("root/src")).unwrap();
        std::fs::write(d.path().join("root/src/a.txt"), "a").unwrap();
        std::fs::write(d.path().join("secret.txt"), "s").unwrap();
        let r = Root::new(d.path().join("root")).unwrap();
        (d, r)
    }

    fn read(r: &Root, p: &str, links: Links) -> Result<String, FsError> {
        let fd = r.open(Path::new(p), OFlags::RDONLY, links)?;
        let mut s = String::new();
        std::fs::File::from(fd).read_to_string(&mut s).unwrap();
        Ok(s)
    }

    /// Every refusal, through `openat2` and through the walk alone (the ENOSYS fallback).
    fn refusals(r: &Root, d: &Path) {
        assert_eq!(read(r, "src/a.txt", Links::Inside).unwrap(), "a");
        assert_eq!(read(r, "src/../src/a.txt", Links::Inside).unwrap(), "a");
        for p in [
            "../secret.txt",
            "src/../../secret.txt",
            "abs_out",
            "rel_out",
        ] {
            let err = read(r, p, Links::Inside).unwrap_err();
            assert!(matches!(err, FsError::Escapes { .. }), "{p}: {err}");
        }
        let err = read(r, d.join("secret.txt").to_str().unwrap(), Links::Inside).unwrap_err();
        assert!(matches!(err, FsError::Escapes { .. }), "{err}");
        // Links that stay inside: followed under `Inside`, refused under `Refuse`.
        assert_eq!(read(r, "abs_in/a.txt", Links::Inside).unwrap(), "a");
        assert_eq!(read(r, "rel_in", Links::Inside).unwrap(), "a");
        for p in ["abs_in/a.txt", "rel_in"] {
            let err = read(r, p, Links::Refuse).unwrap_err();
            assert!(
                matches!(
                    err,
                    FsError::ThroughSymlink { .. } | FsError::Escapes { .. }
                ),
                "{p}: {err}"
            );
        }
        assert!(matches!(
            read(r, "src/missing", Links::Inside).unwrap_err(),
            FsError::NotFound { .. }
        ));
    }

    fn links(d: &Path, r: &Root) {
        std::os::unix::fs::symlink(d.join("secret.txt"), r.path().join("abs_out")).unwrap();
        std::os::unix::fs::symlink("../secret.txt", r.path().join("rel_out")).unwrap();
        std::os::unix::fs::symlink(r.path().join("src"), r.path().join("abs_in")).unwrap();
        std::os::unix::fs::symlink("src/a.txt", r.path().join("rel_in")).unwrap();
    }

    #[test]
    fn beneath_refuses_dotdot_and_links_out() {
        let (d, r) = tree();
        links(d.path(), &r);
        refusals(&r, d.path());
    }

    #[test]
    fn the_walk_alone_refuses_the_same() {
        let (d, r) = tree();
        links(d.path(), &r);
        // The fallback, called directly (the process-wide switch would change other tests).
        let ok = r
            .walk(Path::new("abs_in/a.txt"), true, Links::Inside)
            .unwrap();
        assert!(ok.exists);
        for p in ["abs_out", "rel_out", "../x", "src/../../secret.txt"] {
            let err = r.walk(Path::new(p), true, Links::Inside).unwrap_err();
            assert!(matches!(err, FsError::Escapes { .. }), "{p}: {err}");
        }
        let err = r
            .walk(Path::new("rel_in"), true, Links::Refuse)
            .unwrap_err();
        assert!(matches!(err, FsError::ThroughSymlink { .. }), "{err}");
        let missing = r.walk(Path::new("src/nope"), true, Links::Inside).unwrap();
        assert!(!missing.exists);
    }

    #[test]
    fn magic_links_are_not_followed() {
        // /proc/self/fd/N is a magic link: following it would jump to whatever the descriptor
        // names, wherever that is.
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("f"), "x").unwrap();
        let f = std::fs::File::open(d.path().join("f")).unwrap();
        let fd = std::os::fd::AsRawFd::as_raw_fd(&f);
        let proc_root = Root::new("/proc/self").unwrap();
        let err = proc_root
            .open(
                Path::new(&format!("fd/{fd}")),
                OFlags::RDONLY,
                Links::Inside,
            )
            .unwrap_err();
        assert!(
            matches!(
                err,
                FsError::Escapes { .. } | FsError::ThroughSymlink { .. }
            ),
            "{err}"
        );
        // A link inside a root to the magic link is an absolute link out.
        let r = Root::new(d.path()).unwrap();
        std::os::unix::fs::symlink(format!("/proc/self/fd/{fd}"), d.path().join("magic")).unwrap();
        let err = r
            .open(Path::new("magic"), OFlags::RDONLY, Links::Inside)
            .unwrap_err();
        assert!(matches!(err, FsError::Escapes { .. }), "{err}");
    }

    #[test]
    fn first_link_names_the_link_below_the_root() {
        let (d, r) = tree();
        links(d.path(), &r);
        assert_eq!(r.first_link(Path::new("src/a.txt")).unwrap(), None);
        assert_eq!(r.first_link(Path::new("src/new/x")).unwrap(), None);
        assert_eq!(
            r.first_link(Path::new("abs_in/a.txt")).unwrap(),
            Some(PathBuf::from("abs_in"))
        );
        assert_eq!(
            r.first_link(Path::new("rel_in")).unwrap(),
            Some(PathBuf::from("rel_in"))
        );
    }

    #[test]
    fn mkdir_all_makes_folders_beneath_only() {
        let (d, r) = tree();
        links(d.path(), &r);
        r.mkdir_all(Path::new("src/new/deeper"), Links::Inside)
            .unwrap();
        assert!(r.path().join("src/new/deeper").is_dir());
        std::os::unix::fs::symlink(d.path(), r.path().join("out")).unwrap();
        let err = r
            .mkdir_all(Path::new("out/made"), Links::Inside)
            .unwrap_err();
        assert!(matches!(err, FsError::Escapes { .. }), "{err}");
        assert!(!d.path().join("made").exists());
        let err = r
            .mkdir_all(Path::new("abs_in/x"), Links::Refuse)
            .unwrap_err();
        assert!(matches!(err, FsError::ThroughSymlink { .. }), "{err}");
    }
}
