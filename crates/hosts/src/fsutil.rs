//! Atomic writes, hashes and path confinement.
//!
//! Confinement is lexical (no `..` out of an install root) **and** physical: no existing
//! component below the root may be a symbolic link ([`confine`]), since a repository can ship
//! `.github/plugin` or `.vscode` as a link to a folder elsewhere and make an install write, or an
//! uninstall delete, there. Files are read with `O_NOFOLLOW` and temporary files are created
//! with `O_EXCL`, so a link swapped in after the check is not followed either.

use std::fs;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::HostsError;

/// Lowercase hex SHA-256 of some bytes.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut s = String::with_capacity(64);
    for b in digest.iter() {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// The file's bytes, `None` when it does not exist. A symbolic link is not followed (it is an
/// error, `ELOOP`).
pub(crate) fn read_opt(path: &Path) -> Result<Option<Vec<u8>>, HostsError> {
    match toolgate_fs::open::open_nofollow(path) {
        Ok(mut f) => {
            let mut b = Vec::new();
            std::io::Read::read_to_end(&mut f, &mut b).map_err(|e| HostsError::io(path, e))?;
            Ok(Some(b))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(HostsError::io(path, e)),
    }
}

/// Create the missing ancestors of `path` (not `path` itself), returning the ones created,
/// outermost first.
pub(crate) fn create_parents(path: &Path) -> Result<Vec<PathBuf>, HostsError> {
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

/// Write `bytes` to `path` atomically ([`toolgate_fs::atomic_write`]: an exclusive temporary
/// file in the same directory, synced, renamed over the target, the directory synced).
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), HostsError> {
    toolgate_fs::atomic_write(path, bytes).map_err(|e| HostsError::io(path, e.into_io()))
}

/// `path` with `.` removed and `..` applied lexically; `None` if `..` climbs above the root or
/// the path is relative.
pub(crate) fn normalize(path: &Path) -> Option<PathBuf> {
    if !path.is_absolute() {
        return None;
    }
    toolgate_fs::normalize(path)
}

/// Check that no existing component of `path` strictly below `root` is a symbolic link (the
/// root itself may be one: the user chose it). Components that do not exist yet are fine;
/// they will be created as real folders.
pub(crate) fn no_symlinks_below(path: &Path, root: &Path) -> Result<(), HostsError> {
    let Ok(rel) = path.strip_prefix(root) else {
        return Ok(());
    };
    let opened = match toolgate_fs::Root::new(root) {
        Ok(r) => r,
        // A root that does not exist yet has no links below it.
        Err(toolgate_fs::FsError::Io { source, .. })
            if source.kind() == std::io::ErrorKind::NotFound =>
        {
            return Ok(());
        }
        Err(e) => return Err(HostsError::io(root, e.into_io())),
    };
    match opened.first_link(rel) {
        Ok(None) => Ok(()),
        Ok(Some(link)) => Err(HostsError::Symlink {
            path: path.to_path_buf(),
            link: root.join(link),
            root: root.to_path_buf(),
        }),
        Err(e) => Err(HostsError::io(path, e.into_io())),
    }
}

/// Check that `path` lies strictly inside one of `roots`: lexically, after normalisation, and
/// with no symbolic link below that root on the way ([`no_symlinks_below`]).
pub(crate) fn confine(path: &Path, roots: &[PathBuf]) -> Result<PathBuf, HostsError> {
    let p = confine_lexically(path, roots)?;
    for r in roots {
        if let Some(r) = normalize(r)
            && p.starts_with(&r)
        {
            no_symlinks_below(&p, &r)?;
            return Ok(p);
        }
    }
    Ok(p)
}

/// [`confine`] without looking at the disk.
pub(crate) fn confine_lexically(path: &Path, roots: &[PathBuf]) -> Result<PathBuf, HostsError> {
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
#[allow(clippy::disallowed_methods)]
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

    /// Issue 14 item 7: a link below the root is refused wherever it sits; the root itself
    /// may be a link; missing components are fine.
    #[cfg(unix)]
    #[test]
    fn confinement_refuses_symlinks_below_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside");
        let repo = dir.path().join("repo");
        fs::create_dir_all(&outside).unwrap();
        fs::create_dir_all(repo.join(".github")).unwrap();
        std::os::unix::fs::symlink(&outside, repo.join(".github/plugin")).unwrap();
        std::os::unix::fs::symlink(&outside, repo.join(".vscode")).unwrap();
        fs::write(outside.join("x.json"), "{}").unwrap();
        std::os::unix::fs::symlink(outside.join("x.json"), repo.join("link.json")).unwrap();
        let roots = vec![repo.clone()];
        for p in [
            ".github/plugin/toolgate/plugin.json",
            ".vscode/mcp.json",
            "link.json",
        ] {
            let err = confine(&repo.join(p), &roots).unwrap_err();
            assert!(matches!(err, HostsError::Symlink { .. }), "{p}: {err}");
            assert!(err.to_string().contains("is a symbolic link"), "{err}");
        }
        assert!(confine(&repo.join(".github/instructions/a.md"), &roots).is_ok());
        assert!(confine(&repo.join("new/dir/file"), &roots).is_ok());
        let linked_root = dir.path().join("linked-repo");
        std::os::unix::fs::symlink(&repo, &linked_root).unwrap();
        assert!(confine(&linked_root.join("a"), std::slice::from_ref(&linked_root)).is_ok());
        // Reading does not follow a final link.
        assert!(read_opt(&repo.join("link.json")).is_err());
        assert_eq!(read_opt(&outside.join("x.json")).unwrap().unwrap(), b"{}");
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
