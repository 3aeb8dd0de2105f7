//! What may be read: no special files, no multi-link files, no more than N bytes.

use std::io::Read;
use std::path::Path;

use rustix::fs::{FileType, Stat};

use crate::FsError;

/// The plain name of a file type, for messages.
pub(crate) fn kind_name(t: FileType) -> &'static str {
    match t {
        FileType::RegularFile => "regular file",
        FileType::Directory => "directory",
        FileType::Symlink => "symbolic link",
        FileType::Fifo => "FIFO (named pipe)",
        FileType::Socket => "socket",
        FileType::CharacterDevice => "character device",
        FileType::BlockDevice => "block device",
        FileType::Unknown => "special file",
    }
}

/// What an opened file is (`fstat`).
pub fn fstat(fd: impl std::os::fd::AsFd) -> std::io::Result<Stat> {
    Ok(rustix::fs::fstat(fd)?)
}

/// Refuse a FIFO, a device or a socket (directories and regular files pass). Open such paths
/// with `O_NONBLOCK` before calling this, so a FIFO with no writer cannot block the open.
pub fn refuse_special(path: &Path, stat: &Stat) -> Result<(), FsError> {
    match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile | FileType::Directory => Ok(()),
        other => Err(FsError::Special {
            path: path.to_path_buf(),
            kind: kind_name(other),
        }),
    }
}

/// Refuse a regular file with more than one hard link: a process that can write beneath a root
/// could have hard-linked a file from outside it in, and no path check can tell.
pub fn refuse_multi_link(path: &Path, stat: &Stat) -> Result<(), FsError> {
    // `st_nlink` is u64 on x86_64 but u32 on other targets.
    #[allow(clippy::useless_conversion)]
    let links = u64::from(stat.st_nlink);
    if FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile && links > 1 {
        return Err(FsError::MultiLink {
            path: path.to_path_buf(),
            links,
        });
    }
    Ok(())
}

/// Only a regular file with one link passes.
pub fn regular_only(path: &Path, stat: &Stat) -> Result<(), FsError> {
    match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile => refuse_multi_link(path, stat),
        other => Err(FsError::Special {
            path: path.to_path_buf(),
            kind: kind_name(other),
        }),
    }
}

/// Read at most `max` bytes of an opened file: a file whose size says more is refused before
/// reading, and one that grows while it is read is refused after `max + 1` bytes.
pub fn read_bounded(path: &Path, file: std::fs::File, max: u64) -> Result<Vec<u8>, FsError> {
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    if size > max {
        return Err(FsError::TooLarge {
            path: path.to_path_buf(),
            size,
            max,
        });
    }
    read_bounded_from(path, file, max)
}

/// [`read_bounded`] for any reader (a pipe, a socket): no size to look at first.
pub fn read_bounded_from(path: &Path, reader: impl Read, max: u64) -> Result<Vec<u8>, FsError> {
    let mut bytes = Vec::new();
    reader
        .take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| FsError::io(path, e))?;
    if bytes.len() as u64 > max {
        return Err(FsError::TooLarge {
            path: path.to_path_buf(),
            size: bytes.len() as u64,
            max,
        });
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Links, OFlags, Root};

    #[test]
    fn fifo_is_refused_without_blocking() {
        let d = tempfile::tempdir().unwrap();
        let st = std::process::Command::new("mkfifo")
            .arg(d.path().join("fifo"))
            .status()
            .unwrap();
        assert!(st.success());
        let r = Root::new(d.path()).unwrap();
        // No writer: a blocking open would hang here. The test's own timeout is the check.
        let fd = r
            .open(
                Path::new("fifo"),
                OFlags::RDONLY | OFlags::NONBLOCK,
                Links::Inside,
            )
            .unwrap();
        let stat = rustix::fs::fstat(&fd).unwrap();
        let err = refuse_special(Path::new("fifo"), &stat).unwrap_err();
        assert!(matches!(err, FsError::Special { .. }), "{err}");
        assert!(err.to_string().contains("FIFO"), "{err}");
        assert!(regular_only(Path::new("fifo"), &stat).is_err());
        let null = rustix::fs::stat("/dev/null").unwrap();
        assert!(matches!(
            refuse_special(Path::new("/dev/null"), &null).unwrap_err(),
            FsError::Special {
                kind: "character device",
                ..
            }
        ));
    }

    #[test]
    fn multi_link_files_are_refused() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("a"), "a").unwrap();
        let one = rustix::fs::stat(d.path().join("a")).unwrap();
        regular_only(Path::new("a"), &one).unwrap();
        std::fs::hard_link(d.path().join("a"), d.path().join("b")).unwrap();
        let two = rustix::fs::stat(d.path().join("a")).unwrap();
        let err = refuse_multi_link(Path::new("a"), &two).unwrap_err();
        assert!(matches!(err, FsError::MultiLink { links: 2, .. }), "{err}");
        assert!(regular_only(Path::new("a"), &two).is_err());
        // A directory has several links and is not refused for it.
        let dir = rustix::fs::stat(d.path()).unwrap();
        refuse_multi_link(d.path(), &dir).unwrap();
    }

    #[test]
    fn bounded_reads_stop_at_the_limit() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        std::fs::write(&p, "0123456789").unwrap();
        let open = || std::fs::File::open(&p).unwrap();
        assert_eq!(read_bounded(&p, open(), 10).unwrap(), b"0123456789");
        let err = read_bounded(&p, open(), 9).unwrap_err();
        assert!(
            matches!(
                err,
                FsError::TooLarge {
                    size: 10,
                    max: 9,
                    ..
                }
            ),
            "{err}"
        );
        // Without a size to look at (a pipe, a file growing), the read stops after max + 1.
        let err = read_bounded_from(&p, &b"0123456789"[..], 4).unwrap_err();
        assert!(
            matches!(
                err,
                FsError::TooLarge {
                    size: 5,
                    max: 4,
                    ..
                }
            ),
            "{err}"
        );
        assert_eq!(read_bounded_from(&p, &b"0123"[..], 4).unwrap(), b"0123");
    }
}
