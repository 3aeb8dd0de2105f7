//! Atomic file writes: a temp file in the same directory, fsynced, then renamed over the target,
//! so a reader (or a crash) sees either the old file or the new one, never a partial one.
//!
//! Every step happens relative to one descriptor of the target's directory, opened once —
//! beneath the store root with `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)` when there
//! is one: the temp is created in it with `O_CREAT | O_EXCL | O_NOFOLLOW`, renamed within it
//! with `renameat`, and the conflict check reads the current file through it with
//! `O_NOFOLLOW`. A directory swapped for a symbolic link after that open cannot redirect any
//! of it: the descriptor still names the directory that was opened.

use std::ffi::{OsStr, OsString};
use std::io::{Read, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags};

fn dir_of(path: &Path) -> &Path {
    path.parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

fn name_of(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".to_owned())
}

fn file_name(path: &Path) -> std::io::Result<&OsStr> {
    path.file_name().ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{} names no file", path.display()),
        )
    })
}

/// Open the directory `dir` for the writes and reads of this module. With a `root` that `dir`
/// lies under, it is opened beneath a descriptor of `root` and every link that would leave
/// `root` is refused by the kernel (`EXDEV`); where `openat2` is missing (Linux < 5.6) its
/// canonical path is checked against `root` and opened by name. Without a root (a file opened
/// on its own) it is opened by name.
pub fn open_dir_beneath(root: Option<&Path>, dir: &Path) -> std::io::Result<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    if let Some(root) = root
        && let Ok(rel) = dir.strip_prefix(root)
    {
        let root_fd = rustix::fs::open(root, flags, Mode::empty())?;
        if rel.as_os_str().is_empty() {
            return Ok(root_fd);
        }
        match rustix::fs::openat2(
            &root_fd,
            rel,
            flags,
            Mode::empty(),
            ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
        ) {
            Ok(fd) => return Ok(fd),
            Err(rustix::io::Errno::NOSYS) => {
                let real = dir.canonicalize()?;
                if !real.starts_with(root.canonicalize()?) {
                    return Err(rustix::io::Errno::XDEV.into());
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(rustix::fs::open(dir, flags, Mode::empty())?)
}

/// Read the regular file `name` in `dir` (never through a symbolic link, never blocking on a
/// FIFO, never more than [`crate::store::MAX_FEATURES_BYTES`]).
pub fn read_in(dir: BorrowedFd<'_>, name: &OsStr) -> std::io::Result<Vec<u8>> {
    let fd = rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY,
        Mode::empty(),
    )?;
    let stat = rustix::fs::fstat(&fd)?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{} is not a regular file", name.to_string_lossy()),
        ));
    }
    // The largest file a store holds: anything bigger is refused by its size, not read.
    let cap = crate::store::MAX_FEATURES_BYTES;
    let too_large = |size: u64| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "{} is {size} bytes, more than the {cap} bytes a store file may be; it was not read",
                name.to_string_lossy()
            ),
        )
    };
    let size = u64::try_from(stat.st_size).unwrap_or(0);
    if size > cap {
        return Err(too_large(size));
    }
    let mut bytes = Vec::new();
    std::fs::File::from(fd)
        .take(cap + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(too_large(bytes.len() as u64));
    }
    Ok(bytes)
}

/// Remove the temp files a save of `path` left behind when its process died mid-write (a
/// `kill -9` between creating `.<name>.tmp-<pid>-<n>` and renaming it). Only temps of *this*
/// file whose writing process no longer exists are removed: this process's own (a save in
/// another thread may be under way) and a live process's are kept. Best effort; never fails.
pub fn remove_stale_temps(path: &Path) {
    remove_stale_temps_beneath(None, path);
}

/// [`remove_stale_temps`] through a descriptor of the directory opened beneath `root`.
pub fn remove_stale_temps_beneath(root: Option<&Path>, path: &Path) {
    if let Ok(dir) = open_dir_beneath(root, dir_of(path)) {
        remove_stale_temps_in(dir.as_fd(), &name_of(path));
    }
}

/// [`remove_stale_temps`] for the file `name` in the directory `dir`.
pub fn remove_stale_temps_in(dir: BorrowedFd<'_>, name: &str) {
    let prefix = format!(".{name}.tmp-");
    let Ok(entries) = rustix::fs::Dir::read_from(dir) else {
        return;
    };
    let me = std::process::id();
    for entry in entries.flatten() {
        let file_name = OsStr::from_bytes(entry.file_name().to_bytes()).to_owned();
        let Some(rest) = file_name.to_str().and_then(|n| n.strip_prefix(&prefix)) else {
            continue;
        };
        let Some(pid) = rest
            .split_once('-')
            .and_then(|(pid, n)| n.parse::<u64>().ok().and(pid.parse::<u32>().ok()))
        else {
            continue;
        };
        if pid == me || process_exists(pid) {
            continue;
        }
        // Only plain files: never follow or remove anything else that happens to match.
        let regular = rustix::fs::statat(dir, &file_name, AtFlags::SYMLINK_NOFOLLOW)
            .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::RegularFile);
        if regular {
            match rustix::fs::unlinkat(dir, &file_name, AtFlags::empty()) {
                Ok(()) => {
                    tracing::info!(temp = %file_name.to_string_lossy(), "removed a stale save temp file");
                }
                Err(e) => {
                    tracing::debug!(temp = %file_name.to_string_lossy(), error = %e, "stale temp file not removed");
                }
            }
        }
    }
}

/// Whether a process with this id exists (signal 0: EPERM means it exists, owned by another user).
fn process_exists(pid: u32) -> bool {
    let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return false;
    };
    !matches!(
        rustix::process::test_kill_process(pid),
        Err(rustix::io::Errno::SRCH)
    )
}

/// Atomically replace `path` with `bytes` (its directory made first, by name).
pub fn atomic_write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir_of(path))?;
    atomic_write_beneath(None, path, bytes)
}

/// Atomically replace `path` with `bytes`, through a descriptor of its directory opened
/// beneath `root` (see [`open_dir_beneath`]). The directory must exist.
pub fn atomic_write_beneath(root: Option<&Path>, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = open_dir_beneath(root, dir_of(path))?;
    write_in(dir.as_fd(), file_name(path)?, bytes)
}

/// What [`replace_beneath`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Replaced {
    Done,
    /// The file's bytes no longer hash to the expected SHA-256: nothing was written.
    Changed,
}

/// Replace `path` with `bytes` only if its current content hashes to `expected_sha256` (the
/// save's conflict check), checked and written through one descriptor of its directory opened
/// beneath `root`.
pub fn replace_beneath(
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

/// Write `bytes` to a new temp file in `dir` (`O_CREAT | O_EXCL | O_NOFOLLOW`), fsync it, and
/// rename it over `name` within `dir`; stale temps of `name` from killed saves go first.
pub fn write_in(dir: BorrowedFd<'_>, name: &OsStr, bytes: &[u8]) -> std::io::Result<()> {
    let shown = name.to_string_lossy();
    remove_stale_temps_in(dir, &shown);
    let mut tmp = OsString::from(format!(".{shown}.tmp-{}-{}", std::process::id(), unique()));
    if tmp.len() > 255 {
        // A long name: keep the temp within NAME_MAX (it is still recognisably this file's).
        tmp = OsString::from(format!(".tmp-{}-{}", std::process::id(), unique()));
    }
    let result = (|| {
        let fd = rustix::fs::openat(
            dir,
            &tmp,
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o666),
        )?;
        let mut f = std::fs::File::from(fd);
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        rustix::fs::renameat(dir, &tmp, dir, name)?;
        // Persist the rename itself.
        let _ = rustix::fs::fsync(dir);
        Ok(())
    })();
    if result.is_err() {
        let _ = rustix::fs::unlinkat(dir, &tmp, AtFlags::empty());
    }
    result
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
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
        remove_stale_temps(&p);
        assert!(!stale.exists());
    }
}
