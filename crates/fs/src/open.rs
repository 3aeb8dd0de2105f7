//! The opens that are not a replace, each named for why it is one. Everything else toolgate
//! writes goes through [`crate::atomic_write`] or [`crate::write_in`].

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// An append-only log (telemetry, transcripts): created if missing, every write appended.
/// Not a replace: a log grows line by line, and readers tail it.
pub fn open_append(path: &Path) -> io::Result<File> {
    OpenOptions::new().create(true).append(true).open(path)
}

/// A lock file, held with `flock` while a small state file beside it is replaced: created if
/// missing, never truncated (another process may hold the lock), never written.
pub fn open_lock(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .create(true)
        .read(true)
        .write(true)
        .truncate(false)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)
}

/// A device (`/dev/tty`, `/dev/kvm`), opened as it is: no create, no truncate. `O_NOCTTY` so
/// opening a terminal does not make it this process's controlling one.
pub fn open_device(path: &Path, write: bool) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(write)
        .custom_flags(rustix::fs::OFlags::NOCTTY.bits() as i32)
        .open(path)
}

/// A file that must not exist yet (`O_CREAT | O_EXCL | O_NOFOLLOW`): a spool file or a
/// write probe in a directory this process made or is testing. Nothing left at the name, file
/// or link, is written through.
pub fn create_new(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)
}

/// Open an existing file for reading without following a final symbolic link and without
/// blocking on a FIFO (`O_NOFOLLOW | O_NONBLOCK | O_NOCTTY`); check what it is with
/// [`crate::refuse_special`] / [`crate::regular_only`] before reading.
pub fn open_nofollow(path: &Path) -> io::Result<File> {
    open_nonblocking(path, false)
}

/// [`open_nofollow`], with a final symbolic link followed when `follow` says so (a file the
/// user named, which may be a link they made).
pub fn open_nonblocking(path: &Path, follow: bool) -> io::Result<File> {
    use rustix::fs::OFlags;
    let mut flags = OFlags::NONBLOCK | OFlags::NOCTTY;
    if !follow {
        flags |= OFlags::NOFOLLOW;
    }
    OpenOptions::new()
        .read(true)
        .custom_flags(flags.bits() as i32)
        .open(path)
}

/// Write to a kernel file under `/proc` (a user namespace's `uid_map`, `setgroups`): these
/// take one `write(2)` in place and cannot be replaced by a rename.
pub fn write_procfs(path: &Path, bytes: &[u8]) -> io::Result<()> {
    std::fs::write(path, bytes)
}

/// Move a whole directory tree into place (a converted plugin built beside its destination):
/// `rename(2)` of a directory, atomic on one file system. Files inside were written by this
/// process into a directory it created.
pub fn rename_dir(from: &Path, to: &Path) -> io::Result<()> {
    std::fs::rename(from, to)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_new_never_writes_through_what_is_there() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("t"), "x").unwrap();
        assert_eq!(
            create_new(&d.path().join("t")).unwrap_err().kind(),
            io::ErrorKind::AlreadyExists
        );
        std::os::unix::fs::symlink(d.path().join("elsewhere"), d.path().join("l")).unwrap();
        assert!(create_new(&d.path().join("l")).is_err());
        assert!(!d.path().join("elsewhere").exists());
        let st = std::process::Command::new("mkfifo")
            .arg(d.path().join("fifo"))
            .status()
            .unwrap();
        assert!(st.success());
        // Returns at once although no one writes to the FIFO.
        let f = open_nofollow(&d.path().join("fifo")).unwrap();
        let stat = rustix::fs::fstat(&f).unwrap();
        assert!(crate::regular_only(Path::new("fifo"), &stat).is_err());
        assert!(open_nofollow(&d.path().join("l")).is_err());
    }
}
