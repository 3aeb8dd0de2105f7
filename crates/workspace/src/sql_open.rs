//! Every file SQLite opens for `sql`, checked on the descriptor SQLite will use.
//!
//! SQLite's unix VFS opens the database, its `-journal`, `-wal` and `-shm` by name, later and
//! more than once (the journal at the first write, the WAL when the header says so). A check
//! made beforehand by name cannot cover those opens: between the check and SQLite's `open()`
//! the name can be replaced by a hard link to a file outside the workspace, and Landlock cannot
//! tell (a hard link inside the workspace *is* inside, whatever inode it names). So the VFS's
//! `open` system call is replaced, once per process, through SQLite's own `xSetSystemCall`
//! (the documented way to interpose on the unix VFS). On a thread that entered a [`Scope`]
//! (the `sql` thread) every open SQLite makes goes through [`open_checked`]: beneath the
//! workspace root's descriptor, one component at a time with `O_NOFOLLOW`, then `fstat` on the
//! descriptor itself, refusing a regular file with more than one hard link (the path guard's
//! check, [`crate::guard::check_readable`]) and anything that is neither a regular file nor a
//! directory (SQLite opens the database's directory to sync it). The checked descriptor is the
//! one returned to SQLite, so nothing can change between the check and the use. Threads
//! outside a scope (no other code in toolgate uses SQLite) get the original `open`.

#![allow(unsafe_code)]

use std::cell::RefCell;
use std::ffi::{CStr, OsStr, c_char, c_int};
use std::os::fd::{AsFd, BorrowedFd, IntoRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;

use rusqlite::ffi;
use rustix::fs::{FileType, Mode, OFlags, fcntl_setfl, fstat, openat};
use rustix::io::Errno;

use crate::guard::{GuardError, Opened, check_readable};

/// The signature of the unix VFS's `open` (`posixOpen`): path, flags, mode.
type OpenFn = unsafe extern "C" fn(*const c_char, c_int, c_int) -> c_int;

/// Whether ours is installed (or why it could not be).
static INSTALLED: OnceLock<Result<(), InstallFailure>> = OnceLock::new();

/// Why the checked `open` could not be put in SQLite's place (then `sql` opens nothing).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("sql: could not check the files SQLite opens: {why}; nothing was opened")]
pub(crate) struct InstallError {
    why: InstallFailure,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum InstallFailure {
    #[error("SQLite has no default file system layer")]
    NoVfs,
    #[error("SQLite's file system layer cannot be interposed")]
    NotInterposable,
    #[error("SQLite's file system layer has no \"open\"")]
    NoOpen,
    #[error("SQLite refused the checked open (code {0})")]
    Refused(c_int),
}
/// SQLite's own `open`, kept before ours is installed: threads outside a scope use it.
static ORIGINAL: OnceLock<OpenFn> = OnceLock::new();

/// Why SQLite was refused a file, for the message the caller shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    /// The workspace-relative name SQLite asked for.
    pub rel: String,
    pub reason: RefusalKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RefusalKind {
    /// A regular file with this many hard links.
    HardLinked(u64),
    /// Neither a regular file nor a directory.
    NotRegular(&'static str),
}

impl Refusal {
    /// The message for a refusal while `db_rel` was the database asked for: what is wrong and
    /// what would work.
    pub(crate) fn message(&self, db_rel: &str) -> String {
        let rel = &self.rel;
        match (&self.reason, rel == db_rel) {
            (RefusalKind::HardLinked(links), true) => GuardError::HardLinked {
                path: rel.clone(),
                links: *links,
            }
            .to_string(),
            (RefusalKind::HardLinked(links), false) => format!(
                "\"{rel}\" beside the database has {links} hard links, so it may be a file from outside the workspace linked in, and SQLite would write into it; the database was not opened. Remove \"{rel}\" (it is not this database's own journal) or copy the database to a new name inside the workspace and use the copy."
            ),
            (RefusalKind::NotRegular(what), true) => format!(
                "\"{rel}\" is {what}, not a regular file; give the path of a database file inside the workspace (or a new name to create one)."
            ),
            (RefusalKind::NotRegular(what), false) => format!(
                "\"{rel}\" beside the database is {what}, not a regular file, and SQLite would open it; the database was not opened. Remove \"{rel}\" or copy the database to a new name inside the workspace."
            ),
        }
    }
}

struct ScopeState {
    root: PathBuf,
    root_fd: RawFd,
    refused: Option<Refusal>,
}

thread_local! {
    static SCOPE: RefCell<Option<ScopeState>> = const { RefCell::new(None) };
}

/// While alive, every file SQLite opens on this thread is opened by [`open_checked`] beneath
/// `root_fd`. The descriptor must outlive the scope (the caller borrows it from the guard).
pub(crate) struct Scope<'fd> {
    _root_fd: BorrowedFd<'fd>,
}

impl<'fd> Scope<'fd> {
    /// Enter a scope on this thread, installing the hook first if this process has not.
    pub(crate) fn enter(root: &Path, root_fd: BorrowedFd<'fd>) -> Result<Self, InstallError> {
        install()?;
        SCOPE.with(|s| {
            *s.borrow_mut() = Some(ScopeState {
                root: root.to_path_buf(),
                root_fd: std::os::fd::AsRawFd::as_raw_fd(&root_fd),
                refused: None,
            });
        });
        Ok(Self { _root_fd: root_fd })
    }

    /// The first refusal since the scope began, taken.
    pub(crate) fn take_refusal(&self) -> Option<Refusal> {
        SCOPE.with(|s| {
            s.try_borrow_mut()
                .ok()
                .and_then(|mut s| s.as_mut().and_then(|st| st.refused.take()))
        })
    }
}

impl Drop for Scope<'_> {
    fn drop(&mut self) {
        SCOPE.with(|s| {
            if let Ok(mut s) = s.try_borrow_mut() {
                *s = None;
            }
        });
    }
}

/// Replace the unix VFS's `open` with [`hooked_open`], once per process, before any connection
/// is made by `sql` (`OnceLock` makes every caller wait for the first). SQLite's random-number
/// generator is seeded here too, on an unconfined thread, so it reads `/dev/urandom` and not a
/// fallback (the `sql` thread may open nothing outside the workspace).
pub(crate) fn install() -> Result<(), InstallError> {
    INSTALLED
        .get_or_init(|| {
            // SAFETY: sqlite3_vfs_find returns SQLite's static default VFS (or null); its
            // xGetSystemCall/xSetSystemCall take that VFS and a NUL-terminated name. The
            // transmutes convert between SQLite's generic `sqlite3_syscall_ptr` and the real
            // signature of "open" (`int (*)(const char*, int, int)`, see `posixOpen`).
            // Nothing else in this process uses SQLite, and every `sql` call waits here until
            // the pointer is set, so no connection reads the table while it changes.
            unsafe {
                let mut seed = [0u8; 1];
                ffi::sqlite3_randomness(1, seed.as_mut_ptr().cast());
                let vfs = ffi::sqlite3_vfs_find(std::ptr::null());
                if vfs.is_null() {
                    return Err(InstallFailure::NoVfs);
                }
                let (Some(get), Some(set)) = ((*vfs).xGetSystemCall, (*vfs).xSetSystemCall) else {
                    return Err(InstallFailure::NotInterposable);
                };
                let Some(current) = get(vfs, c"open".as_ptr()) else {
                    return Err(InstallFailure::NoOpen);
                };
                let original: OpenFn =
                    std::mem::transmute::<unsafe extern "C" fn(), OpenFn>(current);
                // Kept before ours is in place, so no open ever finds neither.
                let _ = ORIGINAL.set(original);
                let ours =
                    std::mem::transmute::<OpenFn, unsafe extern "C" fn()>(hooked_open as OpenFn);
                let rc = set(vfs, c"open".as_ptr(), Some(ours));
                if rc != ffi::SQLITE_OK {
                    return Err(InstallFailure::Refused(rc));
                }
                Ok(())
            }
        })
        .clone()
        .map_err(|why| InstallError { why })
}

/// The unix VFS's `open`, as installed.
unsafe extern "C" fn hooked_open(path: *const c_char, flags: c_int, mode: c_int) -> c_int {
    // `try_with`/`try_borrow`: nothing here may panic (it would abort across the C frame).
    let scoped = SCOPE
        .try_with(|s| {
            s.try_borrow()
                .ok()
                .and_then(|s| s.as_ref().map(|st| (st.root.clone(), st.root_fd)))
        })
        .ok()
        .flatten();
    let Some((root, root_fd)) = scoped else {
        return match ORIGINAL.get() {
            // SAFETY: the original open, called with SQLite's own arguments.
            Some(original) => unsafe { original(path, flags, mode) },
            None => fail(Errno::NOSYS),
        };
    };
    if path.is_null() {
        return fail(Errno::FAULT);
    }
    // SAFETY: SQLite passes a NUL-terminated path that lives for the call.
    let path = unsafe { CStr::from_ptr(path) };
    // SAFETY: the scope borrows the root descriptor for as long as it is set on this thread.
    let root_fd = unsafe { BorrowedFd::borrow_raw(root_fd) };
    match open_checked(&root, root_fd, path, flags, mode) {
        Ok(fd) => fd.into_raw_fd(),
        Err((errno, refusal)) => {
            if let Some(r) = refusal {
                let _ = SCOPE.try_with(|s| {
                    if let Ok(mut s) = s.try_borrow_mut()
                        && let Some(st) = s.as_mut()
                    {
                        st.refused.get_or_insert(r);
                    }
                });
            }
            fail(errno)
        }
    }
}

fn fail(errno: Errno) -> c_int {
    // SAFETY: errno is this thread's; SQLite reads it after a failed open (EINTR retries).
    unsafe { *libc::__errno_location() = errno.raw_os_error() };
    -1
}

/// Open `path` (absolute, as SQLite names it) beneath the workspace root with `flags` and
/// `mode`, and check what was opened. Paths elsewhere are refused (`EACCES`; Landlock refuses
/// them on this thread too). Every component is opened with `O_NOFOLLOW` from the one before
/// (SQLite resolved the name without symbolic links, `SQLITE_OPEN_NOFOLLOW`; one now is a swap).
/// The last one is opened non-blocking (a FIFO must not hang the open), then checked with
/// `fstat` and given back with the caller's own flags.
fn open_checked(
    root: &Path,
    root_fd: BorrowedFd<'_>,
    path: &CStr,
    flags: c_int,
    mode: c_int,
) -> Result<OwnedFd, (Errno, Option<Refusal>)> {
    let path = Path::new(OsStr::from_bytes(path.to_bytes()));
    let Ok(rel) = path.strip_prefix(root) else {
        return Err((Errno::ACCESS, None));
    };
    let mut names = Vec::new();
    for c in rel.components() {
        match c {
            Component::Normal(n) => names.push(n),
            _ => return Err((Errno::ACCESS, None)),
        }
    }
    #[allow(clippy::cast_sign_loss)]
    let asked = OFlags::from_bits_retain(flags as u32);
    let dir_flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut dir: Option<OwnedFd> = None;
    let fd = match names.split_last() {
        None => openat(root_fd, ".", asked | OFlags::CLOEXEC, Mode::empty()),
        Some((last, parents)) => {
            for name in parents {
                let base = dir.as_ref().map_or(root_fd, AsFd::as_fd);
                dir = Some(openat(base, *name, dir_flags, Mode::empty()).map_err(|e| (e, None))?);
            }
            let base = dir.as_ref().map_or(root_fd, AsFd::as_fd);
            #[allow(clippy::cast_sign_loss)]
            let mode = Mode::from_raw_mode(mode as u32);
            let open_flags =
                asked | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
            openat(base, *last, open_flags, mode)
        }
    }
    .map_err(|e| (e, None))?;
    let stat = fstat(&fd).map_err(|e| (e, None))?;
    let opened = Opened {
        fd,
        stat,
        rel: rel.to_string_lossy().into_owned(),
    };
    let refuse = |reason| {
        Err((
            Errno::ACCESS,
            Some(Refusal {
                rel: opened.rel.clone(),
                reason,
            }),
        ))
    };
    match opened.file_type() {
        FileType::RegularFile => {
            if let Err(GuardError::HardLinked { links, .. }) = check_readable(&opened) {
                return refuse(RefusalKind::HardLinked(links));
            }
        }
        FileType::Directory => {}
        FileType::Fifo => return refuse(RefusalKind::NotRegular("a FIFO")),
        FileType::Socket => return refuse(RefusalKind::NotRegular("a socket")),
        FileType::CharacterDevice | FileType::BlockDevice => {
            return refuse(RefusalKind::NotRegular("a device"));
        }
        _ => return refuse(RefusalKind::NotRegular("not a plain file")),
    }
    if !asked.contains(OFlags::NONBLOCK) {
        fcntl_setfl(&opened.fd, asked & !OFlags::NONBLOCK).map_err(|e| (e, None))?;
    }
    Ok(opened.fd)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used)]

    use std::ffi::CString;

    use super::*;

    fn c(p: &Path) -> CString {
        CString::new(p.as_os_str().as_bytes()).unwrap()
    }

    /// The check is on the descriptor: a hard link, a FIFO, a symbolic link and a path outside
    /// are refused; a single-link file and a new file are opened.
    #[test]
    fn opens_only_single_link_regular_files_beneath_the_root() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("ws")).unwrap();
        let root = d.path().join("ws").canonicalize().unwrap();
        let outside = d.path().canonicalize().unwrap().join("o.db");
        std::fs::write(&outside, "secret").unwrap();
        std::fs::hard_link(&outside, root.join("hard.db")).unwrap();
        std::fs::write(root.join("ok.db"), "").unwrap();
        std::os::unix::fs::symlink(&outside, root.join("link.db")).unwrap();
        let st = std::process::Command::new("mkfifo")
            .arg(root.join("fifo"))
            .status()
            .unwrap();
        assert!(st.success());
        let root_fd =
            rustix::fs::open(&root, OFlags::PATH | OFlags::DIRECTORY, Mode::empty()).unwrap();
        let rw = libc::O_RDWR | libc::O_CREAT;
        let try_open = |p: &Path| open_checked(&root, root_fd.as_fd(), &c(p), rw, 0o644);
        let err = try_open(&root.join("hard.db")).unwrap_err();
        assert_eq!(
            err.1,
            Some(Refusal {
                rel: "hard.db".to_owned(),
                reason: RefusalKind::HardLinked(2)
            })
        );
        let err = try_open(&root.join("fifo")).unwrap_err();
        assert_eq!(err.1.unwrap().reason, RefusalKind::NotRegular("a FIFO"));
        assert_eq!(try_open(&root.join("link.db")).unwrap_err().0, Errno::LOOP);
        assert_eq!(try_open(&outside).unwrap_err().0, Errno::ACCESS);
        assert!(try_open(&root.join("ok.db")).is_ok());
        let fd = try_open(&root.join("new.db")).unwrap();
        let fl = rustix::fs::fcntl_getfl(&fd).unwrap();
        assert!(
            !fl.contains(OFlags::NONBLOCK),
            "the caller's flags are given back"
        );
        assert!(root.join("new.db").is_file());
        assert!(open_checked(&root, root_fd.as_fd(), &c(&root), libc::O_RDONLY, 0).is_ok());
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "secret");
    }

    /// The race the early check cannot close: a hard link put at the journal's name after the
    /// database was checked (here: before a connection in the scope, with no check at all).
    /// SQLite opens the journal at the first write; the hook refuses it and the file outside
    /// is unchanged.
    #[test]
    fn a_journal_linked_in_after_the_check_is_refused_on_open() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("ws")).unwrap();
        let root = d.path().join("ws").canonicalize().unwrap();
        let db = root.join("k.db");
        rusqlite::Connection::open(&db)
            .unwrap()
            .execute_batch("create table t(a)")
            .unwrap();
        let outside = d.path().canonicalize().unwrap().join("secret");
        // A first byte of 0: SQLite takes it as a cold journal and would reuse it (PERSIST).
        let mut secret = vec![0xA5u8; 4096];
        secret[0] = 0;
        std::fs::write(&outside, &secret).unwrap();
        std::fs::hard_link(&outside, root.join("k.db-journal")).unwrap();
        let root_fd =
            rustix::fs::open(&root, OFlags::PATH | OFlags::DIRECTORY, Mode::empty()).unwrap();
        let scope = Scope::enter(&root, root_fd.as_fd()).unwrap();
        let conn = rusqlite::Connection::open(&db).unwrap();
        let err = conn
            .execute_batch("pragma journal_mode=persist; insert into t values(1)")
            .unwrap_err();
        let refusal = scope.take_refusal().expect("refused by the checked open");
        assert_eq!(refusal.rel, "k.db-journal", "{err}");
        assert_eq!(refusal.reason, RefusalKind::HardLinked(2));
        assert!(
            refusal
                .message("k.db")
                .contains("beside the database has 2 hard links"),
            "{}",
            refusal.message("k.db")
        );
        drop(conn);
        drop(scope);
        assert_eq!(std::fs::read(&outside).unwrap(), secret);
        // Outside a scope (another thread, or after it) SQLite's own open is used.
        std::fs::remove_file(root.join("k.db-journal")).unwrap();
        rusqlite::Connection::open(&db)
            .unwrap()
            .execute_batch("insert into t values(1)")
            .unwrap();
    }
}
