//! Putting a planned conversion on disk: everything is written into a temporary sibling of the
//! destination and renamed into place at the end, so a failure leaves nothing behind and a
//! replaced destination is swapped only once the new one is complete.

use std::fs;
use std::io::Write;
use std::path::{Component, Path, PathBuf};

use crate::error::{ConvertError, Result};
use crate::plan::{FileContent, Plan, PlannedFile};

fn check_relative(path: &Path) -> Result<()> {
    let ok = !path.as_os_str().is_empty()
        && path.components().all(|c| matches!(c, Component::Normal(_)));
    if ok {
        Ok(())
    } else {
        Err(ConvertError::Usage(format!(
            "refusing to write `{}`: output paths must stay inside the destination",
            path.display()
        )))
    }
}

fn parent_of(dst: &Path) -> PathBuf {
    match dst.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

fn write_one(root: &Path, file: &PlannedFile) -> Result<()> {
    check_relative(&file.path)?;
    let path = root.join(&file.path);
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).map_err(|e| ConvertError::io(dir, "create directory", e))?;
    }
    match &file.content {
        // A new file in the temporary tree this process just made; the tree as a whole is
        // moved into place at the end.
        FileContent::Text(text) => toolgate_fs::open::create_new(&path)
            .and_then(|mut f| f.write_all(text.as_bytes()))
            .map_err(|e| ConvertError::io(&path, "write", e)),
        FileContent::Copy(from) => fs::copy(from, &path)
            .map(|_| ())
            .map_err(|e| ConvertError::io(from, "copy", e)),
    }
}

fn is_empty_dir(path: &Path) -> bool {
    fs::read_dir(path).is_ok_and(|mut d| d.next().is_none())
}

/// Write a multi-file plan as the directory `dst`.
pub(crate) fn write_tree(plan: &Plan, dst: &Path, force: bool) -> Result<()> {
    for f in &plan.files {
        check_relative(&f.path)?;
    }
    let exists = dst.symlink_metadata().is_ok();
    if exists && !force && !(dst.is_dir() && is_empty_dir(dst)) {
        return Err(ConvertError::DestinationExists(dst.to_path_buf()));
    }
    if exists && !dst.is_dir() {
        return Err(ConvertError::Usage(format!(
            "{}: is a file; converting a directory or plugin needs a directory destination",
            dst.display()
        )));
    }
    let parent = parent_of(dst);
    fs::create_dir_all(&parent).map_err(|e| ConvertError::io(&parent, "create directory", e))?;
    let tmp = tempfile::Builder::new()
        .prefix(".toolgate-convert-")
        .tempdir_in(&parent)
        .map_err(|e| ConvertError::io(&parent, "create a temporary directory in", e))?;
    for f in &plan.files {
        write_one(tmp.path(), f)?;
    }
    if exists {
        // Move the old tree aside first, so the swap is a rename on both sides.
        let old = tempfile::Builder::new()
            .prefix(".toolgate-convert-old-")
            .tempdir_in(&parent)
            .map_err(|e| ConvertError::io(&parent, "create a temporary directory in", e))?;
        let aside = old.path().join("old");
        toolgate_fs::open::rename_dir(dst, &aside)
            .map_err(|e| ConvertError::io(dst, "move aside", e))?;
        if let Err(e) = toolgate_fs::open::rename_dir(tmp.path(), dst) {
            // Put the old one back; the new tree is removed with `tmp`.
            let _ = toolgate_fs::open::rename_dir(&aside, dst);
            return Err(ConvertError::io(dst, "rename into place", e));
        }
        drop(old);
    } else {
        toolgate_fs::open::rename_dir(tmp.path(), dst)
            .map_err(|e| ConvertError::io(dst, "rename into place", e))?;
    }
    // `tmp` no longer exists at its path; dropping it is a no-op.
    drop(tmp);
    Ok(())
}

/// Write a one-file plan: into `dst` when it is a directory (or has no file extension), or as
/// `dst` itself when it names a file. Returns the path written.
pub(crate) fn write_single(plan: &Plan, dst: &Path, force: bool) -> Result<PathBuf> {
    let [file] = plan.files.as_slice() else {
        return write_tree(plan, dst, force).map(|()| dst.to_path_buf());
    };
    check_relative(&file.path)?;
    let names_file = !dst.is_dir()
        && dst
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .is_some_and(|n| n.ends_with(".md") || n.ends_with(".toml"));
    let target = if names_file {
        dst.to_path_buf()
    } else {
        dst.join(&file.path)
    };
    if target.symlink_metadata().is_ok() && !force {
        return Err(ConvertError::DestinationExists(target));
    }
    let dir = parent_of(&target);
    fs::create_dir_all(&dir).map_err(|e| ConvertError::io(&dir, "create directory", e))?;
    let bytes = match &file.content {
        FileContent::Text(text) => text.as_bytes().to_vec(),
        FileContent::Copy(from) => fs::read(from).map_err(|e| ConvertError::io(from, "read", e))?,
    };
    toolgate_fs::atomic_write(&target, &bytes)
        .map_err(|e| ConvertError::io(&target, "rename into place", e.into_io()))?;
    Ok(target)
}
