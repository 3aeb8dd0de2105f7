//! Reading a small file that someone else may have put there — the project configuration a
//! cloned repository brings (`.toolgate/config.toml`, `.toolgate/tools/*.py`) — without trusting
//! what it is.
//!
//! A repository can ship `config.toml` as a symbolic link to `/dev/zero` (an endless read), a
//! FIFO (an `open` that blocks until someone writes), a directory, or a 50 MB file; reading any
//! of them the ordinary way hung or exhausted every entry point (`exec`, `mcp`, `serve`). Here a
//! file is opened with `O_NONBLOCK | O_NOCTTY` (and `O_NOFOLLOW` for the workspace's files), its
//! type and size come from `fstat` on that descriptor (so nothing swapped in after a check is
//! read), anything but a regular file within the size cap is refused before a byte is read, and
//! the one read is bounded by the cap. A regular file never blocks a read, so no deadline beyond
//! that is needed.

use std::fs::{File, Metadata};
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

/// Largest project configuration file read (`config.toml`, one custom tool): hand-written TOML
/// and Python are a few KiB; a megabyte leaves room for generated files and still reads in a
/// moment.
pub(crate) const MAX_PROJECT_FILE_BYTES: u64 = 1 << 20;

/// Whether a symbolic link at the file's own name is followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Links {
    /// The user's own files (a dotfile manager links `~/.config/toolgate/config.toml`).
    Follow,
    /// A workspace's files: a link could point anywhere on the machine (outside the workspace,
    /// or at a file that changes after `toolgate trust` hashed the link), and a repository has
    /// no need for one.
    Refuse,
}

/// Why a file was not read. [`Unreadable::reason`] says it without the path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unreadable {
    #[error("{} {}", path.display(), self.reason())]
    NotRegular { path: PathBuf, what: &'static str },
    #[error("{} {}", path.display(), self.reason())]
    TooLarge {
        path: PathBuf,
        size: u64,
        limit: u64,
    },
    #[error("{} {}", path.display(), self.reason())]
    Io { path: PathBuf, message: String },
}

impl Unreadable {
    /// The file in question.
    pub fn path(&self) -> &Path {
        match self {
            Unreadable::NotRegular { path, .. }
            | Unreadable::TooLarge { path, .. }
            | Unreadable::Io { path, .. } => path,
        }
    }

    /// What is wrong, as the rest of a sentence that starts with the path.
    pub fn reason(&self) -> String {
        match self {
            Unreadable::NotRegular { what, .. } => format!("is {what}, not a regular file"),
            Unreadable::TooLarge { size, limit, .. } => {
                format!("is larger than {limit} bytes ({size} bytes)")
            }
            Unreadable::Io { message, .. } => format!("cannot be read: {message}"),
        }
    }

    /// Whether the file is of a kind or size that is never read (as opposed to an I/O error).
    pub(crate) fn is_refused(&self) -> bool {
        !matches!(self, Unreadable::Io { .. })
    }
}

fn kind(m: &Metadata) -> &'static str {
    let t = m.file_type();
    if t.is_symlink() {
        "a symbolic link"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "something else"
    }
}

/// Open `path` for reading only if it is a regular file of at most `max` bytes; `Ok(None)` when
/// nothing is at that name. Returns the file and its size (from `fstat` on the descriptor).
pub(crate) fn open_regular(
    path: &Path,
    links: Links,
    max: u64,
) -> Result<Option<(File, u64)>, Unreadable> {
    let io = |e: std::io::Error| Unreadable::Io {
        path: path.to_owned(),
        message: e.to_string(),
    };
    let not_regular = |what| Unreadable::NotRegular {
        path: path.to_owned(),
        what,
    };
    // A look before opening, so a device is refused without being opened at all (opening some
    // has effects). The descriptor's own fstat below is what decides.
    let seen = match links {
        Links::Follow => std::fs::metadata(path),
        Links::Refuse => std::fs::symlink_metadata(path),
    };
    match seen {
        Ok(m) if !m.is_file() => return Err(not_regular(kind(&m))),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io(e)),
    }
    // O_NONBLOCK: a FIFO swapped in after the look opens at once instead of waiting for a
    // writer; O_NOCTTY: a terminal never becomes ours; O_NOFOLLOW: a link swapped in is refused.
    let file = match toolgate_fs::open::open_nonblocking(path, links == Links::Follow) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if links == Links::Refuse && e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(not_regular("a symbolic link"));
        }
        Err(e) => return Err(io(e)),
    };
    let m = file.metadata().map_err(io)?;
    if !m.is_file() {
        return Err(not_regular(kind(&m)));
    }
    if m.len() > max {
        return Err(Unreadable::TooLarge {
            path: path.to_owned(),
            size: m.len(),
            limit: max,
        });
    }
    Ok(Some((file, m.len())))
}

/// The bytes of `path` if it is a regular file of at most `max` bytes (see `open_regular`);
/// `Ok(None)` when nothing is at that name. One read, bounded by `max` even if the file grows
/// meanwhile.
pub fn read_regular(path: &Path, links: Links, max: u64) -> Result<Option<Vec<u8>>, Unreadable> {
    let Some((file, size)) = open_regular(path, links, max)? else {
        return Ok(None);
    };
    let _ = size;
    match toolgate_fs::read_bounded_from(path, file, max) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(toolgate_fs::FsError::TooLarge { size, .. }) => Err(Unreadable::TooLarge {
            path: path.to_owned(),
            size,
            limit: max,
        }),
        Err(e) => Err(Unreadable::Io {
            path: path.to_owned(),
            message: e.into_io().to_string(),
        }),
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn fifo(path: &Path) {
        let ok = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "mkfifo {}", path.display());
    }

    #[test]
    fn reads_a_regular_file_and_reports_a_missing_one() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("c.toml");
        assert_eq!(read_regular(&p, Links::Refuse, 10), Ok(None));
        std::fs::write(&p, "a = 1\n").unwrap();
        assert_eq!(
            read_regular(&p, Links::Refuse, 10),
            Ok(Some(b"a = 1\n".to_vec()))
        );
    }

    #[test]
    fn refuses_links_devices_fifos_directories_and_large_files_at_once() {
        let d = tempfile::tempdir().unwrap();
        let zero = d.path().join("zero");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        let pipe = d.path().join("pipe");
        fifo(&pipe);
        let dir = d.path().join("dir");
        std::fs::create_dir(&dir).unwrap();
        let big = d.path().join("big");
        std::fs::File::create(&big)
            .unwrap()
            .set_len(50 << 20)
            .unwrap();
        let target = d.path().join("target");
        std::fs::write(&target, "a = 1\n").unwrap();
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();

        let started = Instant::now();
        let max = MAX_PROJECT_FILE_BYTES;
        let what = |p: &Path, links| match read_regular(p, links, max) {
            Err(Unreadable::NotRegular { what, .. }) => what.to_owned(),
            Err(Unreadable::TooLarge { size, .. }) => format!("{size} bytes"),
            other => panic!("{}: {other:?}", p.display()),
        };
        assert_eq!(what(&zero, Links::Refuse), "a symbolic link");
        assert_eq!(what(&zero, Links::Follow), "a character device");
        assert_eq!(what(&pipe, Links::Refuse), "a FIFO");
        assert_eq!(what(&pipe, Links::Follow), "a FIFO");
        assert_eq!(what(&dir, Links::Refuse), "a directory");
        assert_eq!(what(&big, Links::Refuse), format!("{} bytes", 50u64 << 20));
        assert_eq!(what(&link, Links::Refuse), "a symbolic link");
        // The user's own files may be links to regular files.
        assert_eq!(
            read_regular(&link, Links::Follow, max),
            Ok(Some(b"a = 1\n".to_vec()))
        );
        assert!(started.elapsed() < Duration::from_secs(5));
        let e = read_regular(&pipe, Links::Refuse, max).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("{} is a FIFO, not a regular file", pipe.display())
        );
        assert!(e.is_refused());
    }
}
