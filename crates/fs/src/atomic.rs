//! Atomic replace: an exclusive temporary file in the target's directory descriptor, written,
//! fsynced, renamed over the target within that descriptor, then the directory fsynced.

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, RenameFlags};
use rustix::io::Errno;

use crate::FsError;

/// How a replace treats the target.
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteOptions {
    /// Permission bits for the new file; `None`: `0o666` less the umask, as `File::create`.
    pub mode: Option<u32>,
    /// Fail with `AlreadyExists` instead of replacing an existing file (`RENAME_NOREPLACE`,
    /// or a hard link where the file system lacks it: just as exclusive).
    pub noclobber: bool,
}

/// Retries when a temporary name is taken.
const RETRIES: usize = 8;

/// The prefix of every temporary file a replace of `name` creates: `.{name}.tmp-`, followed by
/// the writing process's id, `-` and a counter. [`remove_stale_temps_in`] recognises them.
pub fn temp_prefix(name: &str) -> String {
    format!(".{name}.tmp-")
}

fn temp_name(name: &OsStr) -> OsString {
    static N: AtomicU64 = AtomicU64::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let pid = std::process::id();
    let shown = name.to_string_lossy();
    let tmp = format!("{}{pid}-{n}", temp_prefix(&shown));
    if tmp.len() > 255 {
        // A long name: keep the temp within NAME_MAX.
        OsString::from(format!(".tmp-{pid}-{n}"))
    } else {
        OsString::from(tmp)
    }
}

/// Open the directory at `path` by name (links followed, as any by-name write would) for
/// [`write_in`]: `O_RDONLY | O_DIRECTORY`, so it can be fsynced.
pub fn open_dir(path: &Path) -> Result<OwnedFd, FsError> {
    rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| match e {
        Errno::NOENT => FsError::NotFound {
            path: path.to_path_buf(),
        },
        other => FsError::io(path, other),
    })
}

fn split(path: &Path) -> Result<(&Path, &OsStr), FsError> {
    let name = path.file_name().ok_or_else(|| {
        FsError::io(
            path,
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "the path names no file"),
        )
    })?;
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    Ok((dir, name))
}

/// Atomically replace the file at `path` with `bytes` (its directory must exist).
pub fn atomic_write(path: &Path, bytes: &[u8]) -> Result<(), FsError> {
    atomic_write_with(path, bytes, WriteOptions::default())
}

/// Atomically create the file at `path` with `bytes`; `AlreadyExists` when there is one.
pub fn atomic_write_new(path: &Path, bytes: &[u8]) -> Result<(), FsError> {
    atomic_write_with(
        path,
        bytes,
        WriteOptions {
            noclobber: true,
            ..WriteOptions::default()
        },
    )
}

/// [`atomic_write`] with options.
pub fn atomic_write_with(path: &Path, bytes: &[u8], opts: WriteOptions) -> Result<(), FsError> {
    let (dir, name) = split(path)?;
    let dir = open_dir(dir)?;
    write_in(dir.as_fd(), name, bytes, opts).map_err(|e| FsError::io(path, e))
}

/// Write `bytes` as `name` in the directory `dir`: a temporary file created in that same
/// descriptor (`O_CREAT | O_EXCL | O_NOFOLLOW`, so it can only be a new file there), written,
/// fsynced, renamed over `name` within the descriptor, and the directory fsynced. Temporaries
/// of `name` left by killed processes go first; this one is removed on any failure.
pub fn write_in(
    dir: BorrowedFd<'_>,
    name: &OsStr,
    bytes: &[u8],
    opts: WriteOptions,
) -> std::io::Result<()> {
    remove_stale_temps_in(dir, &name.to_string_lossy());
    let (tmp_name, fd) = create_temp(dir, name, opts.mode.map_or(0o666, |_| 0o600))?;
    let result = (|| -> std::io::Result<()> {
        let mut file = std::fs::File::from(fd);
        file.write_all(bytes)?;
        if let Some(mode) = opts.mode {
            rustix::fs::fchmod(&file, Mode::from_raw_mode(mode & 0o7777))?;
        }
        file.sync_all()?;
        drop(file);
        rename_temp(dir, &tmp_name, name, opts.noclobber)
    })();
    if result.is_err() {
        let _ = rustix::fs::unlinkat(dir, &tmp_name, AtFlags::empty());
    }
    result
}

/// An exclusive temporary file in `dir` for `name` (`O_CREAT | O_EXCL | O_NOFOLLOW`, read and
/// write so a caller can check what it wrote).
fn create_temp(
    dir: BorrowedFd<'_>,
    name: &OsStr,
    mode: u32,
) -> std::io::Result<(OsString, OwnedFd)> {
    for _ in 0..RETRIES {
        let candidate = temp_name(name);
        match rustix::fs::openat(
            dir,
            &candidate,
            OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(mode),
        ) {
            Ok(fd) => return Ok((candidate, fd)),
            Err(Errno::EXIST) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::AlreadyExists,
        "could not pick a temporary file name",
    ))
}

/// Rename the (synced) temporary over `name` within `dir`, then sync `dir`.
fn rename_temp(
    dir: BorrowedFd<'_>,
    tmp_name: &OsStr,
    name: &OsStr,
    noclobber: bool,
) -> std::io::Result<()> {
    if noclobber {
        match rustix::fs::renameat_with(dir, tmp_name, dir, name, RenameFlags::NOREPLACE) {
            Ok(()) => {}
            // A file system without RENAME_NOREPLACE: a hard link is just as exclusive.
            Err(Errno::INVAL | Errno::NOSYS) => {
                rustix::fs::linkat(dir, tmp_name, dir, name, AtFlags::empty())?;
                let _ = rustix::fs::unlinkat(dir, tmp_name, AtFlags::empty());
            }
            Err(e) => return Err(e.into()),
        }
    } else {
        rustix::fs::renameat(dir, tmp_name, dir, name)?;
    }
    sync_dir(dir);
    Ok(())
}

/// A replace written as a stream (a download too large to hold in memory): the same exclusive
/// temporary in the target's directory as [`write_in`], written through [`AtomicFile::file`],
/// and renamed over the target only by [`AtomicFile::commit`]. Dropped uncommitted, the
/// temporary is removed: nothing half-written stays.
#[derive(Debug)]
pub struct AtomicFile {
    dir: OwnedFd,
    name: OsString,
    tmp: OsString,
    path: std::path::PathBuf,
    file: std::fs::File,
    committed: bool,
}

impl AtomicFile {
    /// Start replacing the file at `path` (its directory must exist).
    pub fn create(path: &Path) -> Result<Self, FsError> {
        let (dir, name) = split(path)?;
        let dir = open_dir(dir)?;
        let (tmp, fd) = create_temp(dir.as_fd(), name, 0o666).map_err(|e| FsError::io(path, e))?;
        Ok(Self {
            name: name.to_owned(),
            tmp,
            path: path.to_path_buf(),
            file: std::fs::File::from(fd),
            dir,
            committed: false,
        })
    }

    /// The temporary file, open for reading and writing.
    pub fn file(&mut self) -> &mut std::fs::File {
        &mut self.file
    }

    /// fsync the temporary, rename it over the target, fsync the directory.
    pub fn commit(self) -> Result<(), FsError> {
        let name = self.name.clone();
        self.commit_as(&name)
    }

    /// [`AtomicFile::commit`] under another name in the same directory (a download whose name
    /// is known only once it is read).
    pub fn commit_as(mut self, name: &OsStr) -> Result<(), FsError> {
        let path = self.path.with_file_name(name);
        self.file.sync_all().map_err(|e| FsError::io(&path, e))?;
        rename_temp(self.dir.as_fd(), &self.tmp, name, false).map_err(|e| FsError::io(&path, e))?;
        self.committed = true;
        Ok(())
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if !self.committed {
            let _ = rustix::fs::unlinkat(&self.dir, &self.tmp, AtFlags::empty());
        }
    }
}

/// Persist a rename in `dir`. `dir` may be an `O_PATH` descriptor (which fsync refuses), so a
/// readable one is opened through it; a directory that cannot be synced is not an error.
fn sync_dir(dir: BorrowedFd<'_>) {
    if rustix::fs::fsync(dir).is_ok() {
        return;
    }
    if let Ok(d) = rustix::fs::openat(
        dir,
        ".",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        let _ = rustix::fs::fsync(&d);
    }
}

/// Remove the temporaries a replace of `path` left behind when its process died mid-write (a
/// `kill -9` between creating the temporary and renaming it). Only temporaries of *this* file
/// whose writing process no longer exists are removed: this process's own (a write in another
/// thread may be under way) and a live process's are kept. Best effort; never fails.
pub fn remove_stale_temps(path: &Path) {
    if let Ok((dir, name)) = split(path)
        && let Ok(dir) = open_dir(dir)
    {
        remove_stale_temps_in(dir.as_fd(), &name.to_string_lossy());
    }
}

/// [`remove_stale_temps`] for the file `name` in the directory `dir`.
pub fn remove_stale_temps_in(dir: BorrowedFd<'_>, name: &str) {
    let prefix = temp_prefix(name);
    // Listing needs a readable descriptor; an `O_PATH` one is re-opened through itself.
    let Ok(listed) = rustix::fs::openat(
        dir,
        ".",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    ) else {
        return;
    };
    let Ok(entries) = rustix::fs::Dir::read_from(&listed) else {
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
                    tracing::info!(temp = %file_name.to_string_lossy(), "removed a stale temp file");
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

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn replaces_whole_and_leaves_no_temp() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.json");
        atomic_write(&p, b"old").unwrap();
        atomic_write(&p, b"new").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"new");
        assert_eq!(names(d.path()), ["a.json"]);
        let err = atomic_write_new(&p, b"x").unwrap_err();
        assert!(
            matches!(&err, FsError::Io { source, .. } if source.kind() == std::io::ErrorKind::AlreadyExists),
            "{err}"
        );
        assert_eq!(std::fs::read(&p).unwrap(), b"new");
        assert_eq!(names(d.path()), ["a.json"], "no temp after a refused write");
    }

    #[test]
    fn a_streamed_replace_appears_only_on_commit() {
        use std::io::{Read, Seek};
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("model.gguf");
        atomic_write(&p, b"old").unwrap();
        let mut f = AtomicFile::create(&p).unwrap();
        f.file().write_all(b"new bytes").unwrap();
        f.file().seek(std::io::SeekFrom::Start(0)).unwrap();
        let mut back = String::new();
        f.file().read_to_string(&mut back).unwrap();
        assert_eq!(back, "new bytes");
        assert_eq!(
            std::fs::read(&p).unwrap(),
            b"old",
            "nothing replaced before commit"
        );
        f.commit().unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"new bytes");
        assert_eq!(names(d.path()), ["model.gguf"]);
        let mut dropped = AtomicFile::create(&p).unwrap();
        dropped.file().write_all(b"half").unwrap();
        drop(dropped);
        assert_eq!(std::fs::read(&p).unwrap(), b"new bytes");
        assert_eq!(
            names(d.path()),
            ["model.gguf"],
            "an uncommitted temp is removed"
        );
    }

    #[test]
    fn a_failed_replace_keeps_the_old_file_and_leaves_no_temp() {
        let d = tempfile::tempdir().unwrap();
        // The target is a non-empty directory: the rename fails after the temp was written.
        std::fs::create_dir(d.path().join("t")).unwrap();
        std::fs::write(d.path().join("t/inner"), "old").unwrap();
        let err = atomic_write(&d.path().join("t"), b"new").unwrap_err();
        assert!(matches!(err, FsError::Io { .. }), "{err}");
        assert_eq!(names(d.path()), ["t"]);
        assert_eq!(std::fs::read(d.path().join("t/inner")).unwrap(), b"old");
    }

    #[test]
    fn readers_see_old_or_new_never_a_part() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        let old = vec![b'o'; 1 << 20];
        let new = vec![b'n'; 1 << 20];
        atomic_write(&p, &old).unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let reader = {
            let (p, stop) = (p.clone(), stop.clone());
            let (old, new) = (old.clone(), new.clone());
            std::thread::spawn(move || {
                let mut reads = 0u32;
                while !stop.load(Ordering::Relaxed) || reads == 0 {
                    let got = std::fs::read(&p).unwrap();
                    assert!(
                        got == old || got == new,
                        "a partial file: {} bytes",
                        got.len()
                    );
                    reads += 1;
                }
                reads
            })
        };
        for i in 0..40 {
            atomic_write(&p, if i % 2 == 0 { &new } else { &old }).unwrap();
        }
        stop.store(true, Ordering::Relaxed);
        assert!(reader.join().unwrap() > 0);
        assert_eq!(names(d.path()), ["f"]);
    }

    #[test]
    fn mode_is_set_and_temps_of_dead_writers_are_removed() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        let st = std::process::Command::new("sh")
            .arg("-c")
            .arg(": > \".f.tmp-$$-0\"; kill -9 $$")
            .current_dir(d.path())
            .status()
            .unwrap();
        assert!(!st.success());
        let own = d.path().join(format!(".f.tmp-{}-99", std::process::id()));
        std::fs::write(&own, "x").unwrap();
        atomic_write_with(
            &p,
            b"x",
            WriteOptions {
                mode: Some(0o640),
                noclobber: false,
            },
        )
        .unwrap();
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
        let left = names(d.path());
        assert_eq!(left.len(), 2, "{left:?}");
        assert!(own.exists(), "this process's own temp is kept");
    }
}
