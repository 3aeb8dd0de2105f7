//! Atomic file writes: a temp file in the same directory, fsynced, then renamed over the target,
//! so a reader (or a crash) sees either the old file or the new one, never a partial one.
//!
//! Every step happens relative to one descriptor of the target's directory, opened once —
//! beneath the store root with `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)` when there
//! is one: the temp is created in it with `O_CREAT | O_EXCL | O_NOFOLLOW`, renamed within it
//! with `renameat`, and the conflict check reads the current file through it with
//! `O_NOFOLLOW`. A directory swapped for a symbolic link after that open cannot redirect any
//! of it: the descriptor still names the directory that was opened.

use std::ffi::OsStr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;

use toolgate_fs::{FsError, Links, Root, WriteOptions};

fn dir_of(path: &Path) -> &Path {
    path.parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

fn file_name(path: &Path) -> std::io::Result<&OsStr> {
    path.file_name().ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{} names no file", path.display()),
        )
    })
}

/// The file module's refusal as the `io::Error` this module's callers look at: leaving the
/// root is `EXDEV`, as the kernel says it (`StoreError::OutsideStore` is chosen on it).
pub(crate) fn fs_io(e: FsError) -> std::io::Error {
    match e {
        FsError::Escapes { .. } | FsError::ThroughSymlink { .. } => rustix::io::Errno::XDEV.into(),
        FsError::NotFound { .. } => rustix::io::Errno::NOENT.into(),
        other => other.into_io(),
    }
}

/// Open the directory `dir` for the writes and reads of this module. With a `root` that `dir`
/// lies under, it is opened beneath a descriptor of `root` ([`toolgate_fs::Root::open`]:
/// `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)`, or the walk where it is missing), and
/// every link that would leave `root` is refused (`EXDEV`). Without a root (a file opened on
/// its own) it is opened by name.
pub(crate) fn open_dir_beneath(root: Option<&Path>, dir: &Path) -> std::io::Result<OwnedFd> {
    if let Some(root) = root
        && let Ok(rel) = dir.strip_prefix(root)
    {
        let root = Root::new(root).map_err(fs_io)?;
        return root.open_dir(rel, Links::Inside).map_err(fs_io);
    }
    toolgate_fs::open_dir(dir).map_err(fs_io)
}

/// Read the regular file `name` in `dir` (never through a symbolic link, never blocking on a
/// FIFO, never more than [`crate::store::MAX_FEATURES_BYTES`]).
pub(crate) fn read_in(dir: BorrowedFd<'_>, name: &OsStr) -> std::io::Result<Vec<u8>> {
    use rustix::fs::{Mode, OFlags};
    let fd = rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY,
        Mode::empty(),
    )?;
    let stat = toolgate_fs::fstat(&fd)?;
    if toolgate_fs::FileType::from_raw_mode(stat.st_mode) != toolgate_fs::FileType::RegularFile {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{} is not a regular file", name.to_string_lossy()),
        ));
    }
    // The largest file a store holds: anything bigger is refused by its size, not read.
    let cap = crate::store::MAX_FEATURES_BYTES;
    toolgate_fs::read_bounded(Path::new(name), std::fs::File::from(fd), cap).map_err(|e| match e {
        FsError::TooLarge { size, .. } => std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "{} is {size} bytes, more than the {cap} bytes a store file may be; it was not read",
                name.to_string_lossy()
            ),
        ),
        other => other.into_io(),
    })
}

/// Remove the temp files a save of `path` left behind when its process died mid-write (a
/// `kill -9` between creating `.<name>.tmp-<pid>-<n>` and renaming it), through a descriptor of
/// the directory opened beneath `root`. Only temps of *this* file whose writing process no longer
/// exists are removed: this process's own (a save in another thread may be under way) and a live
/// process's are kept. Best effort; never fails.
pub(crate) fn remove_stale_temps_beneath(root: Option<&Path>, path: &Path) {
    if let Ok(dir) = open_dir_beneath(root, dir_of(path)) {
        toolgate_fs::remove_stale_temps_in(dir.as_fd(), &file_name_lossy(path));
    }
}

fn file_name_lossy(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".to_owned())
}

/// Atomically replace `path` with `bytes` (its directory made first, by name).
pub(crate) fn atomic_write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir_of(path))?;
    atomic_write_beneath(None, path, bytes)
}

/// Atomically replace `path` with `bytes`, through a descriptor of its directory opened
/// beneath `root` (see [`open_dir_beneath`]). The directory must exist.
pub(crate) fn atomic_write_beneath(
    root: Option<&Path>,
    path: &Path,
    bytes: &[u8],
) -> std::io::Result<()> {
    let dir = open_dir_beneath(root, dir_of(path))?;
    write_in(dir.as_fd(), file_name(path)?, bytes)
}

/// What [`replace_beneath`] found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Replaced {
    Done,
    /// The file's bytes no longer hash to the expected SHA-256: nothing was written.
    Changed,
}

/// Replace `path` with `bytes` only if its current content hashes to `expected_sha256` (the
/// save's conflict check), checked and written through one descriptor of its directory opened
/// beneath `root`.
pub(crate) fn replace_beneath(
    root: Option<&Path>,
    path: &Path,
    expected_sha256: &str,
    bytes: &[u8],
) -> std::io::Result<Replaced> {
    let dir = open_dir_beneath(root, dir_of(path))?;
    let name = file_name(path)?;
    if sha256_hex(&read_in(dir.as_fd(), name)?) != expected_sha256 {
        return Ok(Replaced::Changed);
    }
    write_in(dir.as_fd(), name, bytes)?;
    Ok(Replaced::Done)
}

/// Replace `name` in `dir` atomically ([`toolgate_fs::write_in`]: an exclusive temp file in
/// `dir`, fsynced, renamed over `name` within `dir`); stale temps of `name` from killed saves
/// go first.
pub(crate) fn write_in(dir: BorrowedFd<'_>, name: &OsStr, bytes: &[u8]) -> std::io::Result<()> {
    toolgate_fs::write_in(dir, name, bytes, WriteOptions::default())
}

/// SHA-256 hex of some bytes (used to detect on-disk changes since a plot was opened).
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;

    #[test]
    fn replaces_whole_file_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.json");
        atomic_write(&p, b"old").unwrap();
        atomic_write(&p, b"new").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"new");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    /// A process that creates a save temp file for `name` and is then killed with SIGKILL, as a
    /// `kill -9` during a save would leave it. Returns the temp file's path.
    fn killed_mid_save(dir: &Path, name: &str) -> std::path::PathBuf {
        let st = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(": > \".{name}.tmp-$$-0\"; kill -9 $$"))
            .current_dir(dir)
            .status()
            .unwrap();
        assert!(!st.success(), "the shell was killed");
        let temps: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().contains(".tmp-"))
            .collect();
        assert_eq!(temps.len(), 1, "{temps:?}");
        temps[0].clone()
    }

    #[test]
    fn the_next_save_removes_temps_of_killed_saves_only() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("features.geojson");
        atomic_write(&p, b"old").unwrap();
        let stale = killed_mid_save(dir.path(), "features.geojson");
        // Kept: this process's own temp (a save may be running in another thread), a live
        // process's, another file's, and names that only look similar.
        let own = dir
            .path()
            .join(format!(".features.geojson.tmp-{}-99", std::process::id()));
        let live = dir.path().join(".features.geojson.tmp-1-0");
        let other = dir.path().join(".item.json.tmp-999999999-0");
        let odd = dir.path().join(".features.geojson.tmp-notapid");
        for f in [&own, &live, &other, &odd] {
            std::fs::write(f, "x").unwrap();
        }
        atomic_write(&p, b"new").unwrap();
        assert!(!stale.exists(), "the killed save's temp file was removed");
        for f in [&own, &live, &other, &odd] {
            assert!(f.exists(), "{} was kept", f.display());
        }
        assert_eq!(std::fs::read(&p).unwrap(), b"new");
    }

    #[test]
    fn opening_a_plot_removes_temps_of_killed_saves() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("features.geojson");
        atomic_write(&p, b"{}").unwrap();
        let stale = killed_mid_save(dir.path(), "features.geojson");
        remove_stale_temps_beneath(None, &p);
        assert!(!stale.exists());
    }
}
