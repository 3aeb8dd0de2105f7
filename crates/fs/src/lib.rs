//! toolgate's one file module: every file toolgate writes, and every file it opens beneath a
//! root it confines to, goes through here, so there is one place where a race or a symbolic
//! link bug can live, and one place to audit.
//!
//! - [`Root`]: a directory held open as a descriptor; paths are opened **beneath** it with
//!   `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)` (plus `RESOLVE_NO_SYMLINKS` under
//!   [`Links::Refuse`]), so the kernel refuses any resolution that leaves the root at the moment
//!   of the open, whatever another process swaps in meanwhile. Where `openat2` is missing
//!   (ENOSYS, Linux < 5.6) the one fallback walks the path a component at a time with
//!   `O_PATH | O_NOFOLLOW` from the root's descriptor, reading each link through the descriptor
//!   it opened and never going above the root ([`Root::walk`]).
//! - [`refuse_special`], [`refuse_multi_link`], [`regular_only`]: FIFOs, devices and sockets
//!   are refused (they are opened `O_NONBLOCK` first so a FIFO cannot block the open), and so is
//!   a regular file with more than one hard link — a process inside the root could have linked
//!   a file from outside in, and no path check can tell.
//! - [`write_in`] / [`atomic_write`]: an exclusive temporary file (`O_CREAT | O_EXCL |
//!   O_NOFOLLOW`) created in the target's directory **descriptor**, written, fsynced, renamed
//!   over the target within that descriptor (`renameat`), then the directory fsynced: a reader
//!   or a crash sees the old file or the new one, never a part, and no temporary is left behind
//!   on an error.
//! - [`read_bounded`]: at most N bytes, [`FsError::TooLarge`] beyond.
//! - [`open`]: the few opens that are not a replace — an append-only log, a lock file, a
//!   terminal — each named for why it is one.
//!
//! `clippy.toml` bans `std::fs::write`, `std::fs::rename`, `File::create` and
//! `OpenOptions::open` everywhere else, so a new copy cannot appear unnoticed.

#![warn(unreachable_pub)]
#![allow(clippy::disallowed_methods)]

mod atomic;
mod beneath;
mod check;
pub mod open;

use std::io;
use std::path::PathBuf;

pub use atomic::{
    AtomicFile, WriteOptions, atomic_write, atomic_write_new, atomic_write_with, open_dir,
    remove_stale_temps, remove_stale_temps_in, temp_prefix, write_in,
};
pub use beneath::{Links, Root, Walked, disable_openat2_for_tests};
pub use check::{
    fstat, read_bounded, read_bounded_from, refuse_multi_link, refuse_special, regular_only,
};
pub use rustix::fs::{FileType, OFlags, Stat};

/// Whether `path` is relative and never climbs (`..`): the lexical half of "beneath", for a
/// path given as text (a setting, a glob pattern, a manifest entry) before anything is opened.
/// What it names on disk is still resolved beneath a [`Root`].
pub fn is_beneath_lexically(path: &std::path::Path) -> bool {
    use std::path::Component;
    !path.is_absolute()
        && path
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
}

/// `path` with `.` removed and each `..` applied lexically, without looking at the disk; `None`
/// when a `..` climbs above where the path starts (the file system root for an absolute path,
/// its first component for a relative one). The one lexical normaliser: what the result names
/// is still opened beneath a [`Root`].
pub fn normalize(path: &std::path::Path) -> Option<PathBuf> {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::Prefix(_) | Component::RootDir => out.push(c.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::Normal(n) => out.push(n),
        }
    }
    Some(out)
}

/// Why a file operation was refused or failed. Each kind names the path it was about.
#[derive(Debug, thiserror::Error)]
pub enum FsError {
    /// The path leaves the root: `..` above it, an absolute path elsewhere, or a symbolic link
    /// that resolves outside.
    #[error("{} {reason}", path.display())]
    Escapes { path: PathBuf, reason: &'static str },
    /// The path goes through a symbolic link where none is allowed ([`Links::Refuse`]), or a
    /// magic link (`/proc/self/fd/N`).
    #[error("{} goes through a symbolic link, which is not followed here", path.display())]
    ThroughSymlink { path: PathBuf },
    /// Nothing exists at the path (or a component of it is not a directory).
    #[error("{} does not exist", path.display())]
    NotFound { path: PathBuf },
    /// A FIFO, a device, a socket (or a directory where a file was wanted).
    #[error("{} is a {kind}, not a regular file", path.display())]
    Special { path: PathBuf, kind: &'static str },
    /// A regular file with more than one hard link.
    #[error(
        "{} has {links} hard links, so it may be a file from elsewhere linked in; it is not read",
        path.display()
    )]
    MultiLink { path: PathBuf, links: u64 },
    /// More bytes than the caller allows.
    #[error("{} is {size} bytes, more than the {max} bytes allowed; it was not read", path.display())]
    TooLarge { path: PathBuf, size: u64, max: u64 },
    /// The path kept changing while it was opened (a swap raced every retry).
    #[error("{} kept changing while it was opened; try again", path.display())]
    Unstable { path: PathBuf },
    /// Anything else the file system said.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

impl FsError {
    /// An I/O error about `path`.
    pub fn io(path: impl Into<PathBuf>, source: impl Into<io::Error>) -> Self {
        FsError::Io {
            path: path.into(),
            source: source.into(),
        }
    }

    /// The path the error is about.
    pub fn path(&self) -> &std::path::Path {
        match self {
            FsError::Escapes { path, .. }
            | FsError::ThroughSymlink { path }
            | FsError::NotFound { path }
            | FsError::Special { path, .. }
            | FsError::MultiLink { path, .. }
            | FsError::TooLarge { path, .. }
            | FsError::Unstable { path }
            | FsError::Io { path, .. } => path,
        }
    }

    /// The error as an `io::Error` (for callers whose own errors carry one), with the kind
    /// kept: a refusal is `PermissionDenied` or `InvalidInput`, a missing path `NotFound`.
    pub fn into_io(self) -> io::Error {
        match self {
            FsError::Io { source, .. } => source,
            FsError::NotFound { .. } => io::Error::new(io::ErrorKind::NotFound, self.to_string()),
            FsError::Escapes { .. } | FsError::ThroughSymlink { .. } => {
                io::Error::new(io::ErrorKind::PermissionDenied, self.to_string())
            }
            FsError::Special { .. } | FsError::MultiLink { .. } => {
                io::Error::new(io::ErrorKind::InvalidInput, self.to_string())
            }
            FsError::TooLarge { .. } => {
                io::Error::new(io::ErrorKind::InvalidData, self.to_string())
            }
            FsError::Unstable { .. } => io::Error::other(self.to_string()),
        }
    }
}

impl From<FsError> for io::Error {
    fn from(e: FsError) -> Self {
        e.into_io()
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    #[test]
    fn normalizes_lexically() {
        let n = |p: &str| super::normalize(Path::new(p));
        assert_eq!(n("/w/./a/../b"), Some("/w/b".into()));
        assert_eq!(n("a/b/.."), Some("a".into()));
        assert_eq!(n("/.."), None);
        assert_eq!(n("a/../.."), None);
    }

    #[test]
    fn lexically_beneath() {
        for ok in ["a", "a/b", "./a", "a/./b", ""] {
            assert!(super::is_beneath_lexically(Path::new(ok)), "{ok}");
        }
        for bad in ["/a", "..", "a/../b", "a/..", "../a"] {
            assert!(!super::is_beneath_lexically(Path::new(bad)), "{bad}");
        }
    }
}
