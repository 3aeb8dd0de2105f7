//! Atomic writes, hashes and path confinement.

use std::fs;
use std::io::Write;
use std::path::{Component, Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::HostsError;

/// Lowercase hex SHA-256 of some bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut s = String::with_capacity(64);
    for b in digest.iter() {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// The file's bytes, `None` when it does not exist.
pub fn read_opt(path: &Path) -> Result<Option<Vec<u8>>, HostsError> {
    match fs::read(path) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(HostsError::io(path, e)),
    }
}

/// Create the missing ancestors of `path` (not `path` itself), returning the ones created,
/// outermost first.
pub fn create_parents(path: &Path) -> Result<Vec<PathBuf>, HostsError> {
    let mut missing = Vec::new();
    let mut dir = path.parent();
    while let Some(d) = dir {
        if d.as_os_str().is_empty() || d.exists() {
            break;
        }
        missing.push(d.to_path_buf());
        dir = d.parent();
    }
    missing.reverse();
    for d in &missing {
        match fs::create_dir(d) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(HostsError::io(d, e)),
        }
    }
    Ok(missing)
}

/// Write `bytes` to `path` atomically: a temporary file in the same directory, synced, then
/// renamed over the target.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), HostsError> {
    let dir = path
        .parent()
        .ok_or_else(|| HostsError::io(path, std::io::Error::other("path has no parent")))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.toolgate-{}.tmp", std::process::id()));
    let result = (|| {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        fs::rename(&tmp, path)
    })();
    if let Err(e) = result {
        let _ = fs::remove_file(&tmp);
        return Err(HostsError::io(path, e));
    }
    Ok(())
}

/// `path` with `.` removed and `..` applied lexically; `None` if `..` climbs above the root or
/// the path is relative.
pub fn normalize(path: &Path) -> Option<PathBuf> {
    if !path.is_absolute() {
        return None;
    }
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

/// Check that `path` lies strictly inside one of `roots` (lexically, after normalisation).
pub fn confine(path: &Path, roots: &[PathBuf]) -> Result<PathBuf, HostsError> {
    let outside = || HostsError::OutsideRoots {
        path: path.to_path_buf(),
        allowed: roots
            .iter()
            .map(|r| r.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
    };
    let p = normalize(path).ok_or_else(outside)?;
    for r in roots {
        if let Some(r) = normalize(r)
            && p != r
            && p.starts_with(&r)
        {
            return Ok(p);
        }
    }
    Err(outside())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn confinement_rejects_escapes() {
        let roots = vec![PathBuf::from("/w/repo")];
        assert!(confine(Path::new("/w/repo/.github/x"), &roots).is_ok());
        assert!(confine(Path::new("/w/repo/../etc/passwd"), &roots).is_err());
        assert!(confine(Path::new("/w/repo"), &roots).is_err());
        assert!(confine(Path::new("/w/repository/x"), &roots).is_err());
        assert!(confine(Path::new("relative/x"), &roots).is_err());
        assert_eq!(
            confine(Path::new("/w/repo/./a/../b"), &roots).unwrap(),
            PathBuf::from("/w/repo/b")
        );
    }

    #[test]
    fn atomic_write_and_parents() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a/b/c.txt");
        let made = create_parents(&f).unwrap();
        assert_eq!(made, vec![dir.path().join("a"), dir.path().join("a/b")]);
        write_atomic(&f, b"x").unwrap();
        write_atomic(&f, b"yz").unwrap();
        assert_eq!(fs::read(&f).unwrap(), b"yz");
        assert_eq!(fs::read_dir(dir.path().join("a/b")).unwrap().count(), 1);
        assert_eq!(sha256_hex(b"").len(), 64);
    }
}
