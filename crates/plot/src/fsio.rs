//! Atomic file writes: a temp file in the same directory, fsynced, then renamed over the target,
//! so a reader (or a crash) sees either the old file or the new one, never a partial one.

use std::io::Write;
use std::path::Path;

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

/// Remove the temp files a save of `path` left behind when its process died mid-write (a
/// `kill -9` between creating `.<name>.tmp-<pid>-<n>` and renaming it). Only temps of *this*
/// file whose writing process no longer exists are removed: this process's own (a save in
/// another thread may be under way) and a live process's are kept. Best effort; never fails.
pub fn remove_stale_temps(path: &Path) {
    let dir = dir_of(path);
    let prefix = format!(".{}.tmp-", name_of(path));
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let me = std::process::id();
    for entry in entries.flatten() {
        let file_name = entry.file_name();
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
        if entry.file_type().is_ok_and(|t| t.is_file()) {
            match std::fs::remove_file(entry.path()) {
                Ok(()) => {
                    tracing::info!(temp = %entry.path().display(), "removed a stale save temp file");
                }
                Err(e) => {
                    tracing::debug!(temp = %entry.path().display(), error = %e, "stale temp file not removed");
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

pub fn atomic_write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = dir_of(path);
    std::fs::create_dir_all(dir)?;
    remove_stale_temps(path);
    let name = name_of(path);
    let tmp = dir.join(format!(".{name}.tmp-{}-{}", std::process::id(), unique()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, path)?;
        // Persist the rename itself.
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
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
