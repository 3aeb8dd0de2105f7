//! view, create, edit.

use std::fs::{self, File, Permissions};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde_json::{Map, Value};
use toolgate_core::{CallError, ToolOutcome};

use crate::cap::{cap_bytes, cap_str};
use crate::params::Params;
use crate::specs::kinds;
use crate::{Inner, outcome};

/// Map an I/O error on a (workspace-relative) path to a call error.
pub(crate) fn io_error(rel: &str, action: &str, e: &io::Error) -> CallError {
    match e.kind() {
        io::ErrorKind::NotFound => CallError::NotFound {
            message: format!("No such file or directory: \"{rel}\"."),
        },
        io::ErrorKind::PermissionDenied => CallError::PermissionDenied {
            message: format!(
                "Could not {action} \"{rel}\": permission denied by the operating system."
            ),
        },
        _ => CallError::failed(format!("Could not {action} \"{rel}\": {e}")),
    }
}

pub fn view(inner: &Inner, map: &Map<String, Value>) -> Result<ToolOutcome, CallError> {
    let p = Params::new("view", map);
    let user_path = p.str_req("path")?;
    let range = p.int_pair_opt("view_range")?;
    let path = inner.guard.resolve(user_path)?;
    let rel = inner.guard.relative(&path);
    let meta = fs::metadata(&path).map_err(|e| io_error(&rel, "read", &e))?;
    if meta.is_dir() {
        return view_dir(inner, &path, &rel);
    }
    if !meta.is_file() {
        return Err(CallError::invalid(format!(
            "\"{rel}\" is not a regular file (a device, FIFO or socket); view reads files and directories only."
        )));
    }
    let file = File::open(&path).map_err(|e| io_error(&rel, "read", &e))?;
    // Re-check the opened handle: the path could have been swapped since the check.
    let meta = file.metadata().map_err(|e| io_error(&rel, "read", &e))?;
    if !meta.is_file() {
        return Err(CallError::invalid(format!(
            "\"{rel}\" is not a regular file; view reads files and directories only."
        )));
    }
    let cap = inner.config.read_cap_bytes;
    let mut reader = BufReader::new(file);
    let head = reader.fill_buf().map_err(|e| io_error(&rel, "read", &e))?;
    if head[..head.len().min(8192)].contains(&0) {
        return Err(CallError::invalid(format!(
            "\"{rel}\" looks like a binary file (it contains NUL bytes); view shows text only. Use bash (e.g. `xxd {rel} | head`) to inspect binary data."
        )));
    }
    let (text, cut, summary) = match range {
        None => {
            let mut buf = Vec::with_capacity(cap.min(meta.len() as usize) + 1);
            reader
                .by_ref()
                .take(cap as u64 + 1)
                .read_to_end(&mut buf)
                .map_err(|e| io_error(&rel, "read", &e))?;
            let total = (meta.len() as usize).max(buf.len());
            let (text, cut) = cap_bytes(&buf, total, cap);
            let summary = format!("Read {rel} ({total} bytes).");
            (text, cut, summary)
        }
        Some((start, end)) => {
            let start = start.max(1) as u64;
            if end != -1 && end < start as i64 {
                return Err(CallError::invalid(format!(
                    "view_range [{start}, {end}] is empty: end must be -1 or at least start."
                )));
            }
            let end = if end == -1 { u64::MAX } else { end as u64 };
            let mut kept: Vec<u8> = Vec::new();
            let mut total = 0usize;
            let mut line_no = 0u64;
            let mut line = Vec::new();
            loop {
                line.clear();
                let n = reader
                    .read_until(b'\n', &mut line)
                    .map_err(|e| io_error(&rel, "read", &e))?;
                if n == 0 {
                    break;
                }
                line_no += 1;
                if line_no < start {
                    continue;
                }
                if line_no > end {
                    break;
                }
                total += n;
                if kept.len() <= cap {
                    kept.extend_from_slice(&line[..n.min(cap + 1 - kept.len())]);
                }
            }
            if line_no < start {
                return Err(CallError::invalid(format!(
                    "view_range starts at line {start}, but \"{rel}\" has only {line_no} lines."
                )));
            }
            let last = end.min(line_no);
            let (text, cut) = cap_bytes(&kept, total, cap);
            let summary = format!("Read lines {start}–{last} of {rel}.");
            (text, cut, summary)
        }
    };
    let summary = if cut {
        format!("{summary} Cut at {cap} bytes.")
    } else {
        summary
    };
    Ok(outcome(kinds::FILE, summary, Value::String(text)))
}

fn view_dir(inner: &Inner, path: &Path, rel: &str) -> Result<ToolOutcome, CallError> {
    let mut entries: Vec<String> = Vec::new();
    for entry in fs::read_dir(path).map_err(|e| io_error(rel, "list", &e))? {
        let entry = entry.map_err(|e| io_error(rel, "list", &e))?;
        let child = entry.path();
        let mut shown = inner.guard.relative(&path.join(entry.file_name()));
        // Follow links for the "/" suffix as the anchor did, but only to say what they are.
        if fs::metadata(&child).is_ok_and(|m| m.is_dir()) {
            shown.push('/');
        }
        entries.push(shown);
    }
    entries.sort();
    let count = entries.len();
    let (text, _) = cap_str(&entries.join("\n"), inner.config.read_cap_bytes);
    Ok(outcome(
        kinds::FILE,
        format!("Listed {rel}: {count} entries."),
        Value::String(text),
    ))
}

/// Write `bytes` to `path` atomically: a temp file in the same directory, synced, then renamed.
/// With `noclobber` the rename fails when the target exists.
fn write_atomic(path: &Path, bytes: &[u8], noclobber: bool, perms: Permissions) -> io::Result<()> {
    let dir = path
        .parent()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path has no parent"))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".toolgate-")
        .suffix(".tmp")
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().set_permissions(perms)?;
    tmp.as_file().sync_all()?;
    if noclobber {
        tmp.persist_noclobber(path).map_err(|e| e.error)?;
    } else {
        tmp.persist(path).map_err(|e| e.error)?;
    }
    Ok(())
}

fn exists_error(rel: &str) -> CallError {
    CallError::invalid(format!(
        "FileExistsError: \"{rel}\" already exists — use edit to modify it."
    ))
}

pub fn create(inner: &Inner, map: &Map<String, Value>) -> Result<ToolOutcome, CallError> {
    let p = Params::new("create", map);
    let user_path = p.str_req("path")?;
    let text = p.str_req("file_text")?;
    let path = inner.guard.resolve_for_create(user_path)?;
    let rel = inner.guard.relative(&path);
    if path.symlink_metadata().is_ok() {
        return Err(exists_error(&rel));
    }
    let parent = path
        .parent()
        .ok_or_else(|| CallError::invalid(format!("\"{user_path}\" names the workspace root")))?;
    fs::create_dir_all(parent).map_err(|e| io_error(&rel, "create the folders of", &e))?;
    // The parent now exists: check it again after resolving links (it may have raced).
    let parent_canonical = parent
        .canonicalize()
        .map_err(|e| io_error(&rel, "create", &e))?;
    if !inner.guard.contains(&parent_canonical) {
        return Err(crate::GuardError::Outside {
            path: user_path.to_owned(),
            reason: "resolves through a symbolic link to a place outside the workspace",
            root: inner.guard.root().to_path_buf(),
        }
        .into());
    }
    let target = parent_canonical.join(path.file_name().unwrap_or_default());
    match write_atomic(
        &target,
        text.as_bytes(),
        true,
        Permissions::from_mode(0o644),
    ) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Err(exists_error(&rel)),
        Err(e) => return Err(io_error(&rel, "create", &e)),
    }
    let message = format!("Created {rel} ({} bytes)", text.len());
    Ok(outcome(
        kinds::WRITE,
        message.clone(),
        Value::String(message),
    ))
}

pub fn edit(inner: &Inner, map: &Map<String, Value>) -> Result<ToolOutcome, CallError> {
    let p = Params::new("edit", map);
    let user_path = p.str_req("path")?;
    let old = p.str_req("old_str")?;
    let new = p.str_req("new_str")?;
    if old.is_empty() {
        return Err(CallError::invalid(
            "old_str is empty; give the exact text to replace (it must occur once).",
        ));
    }
    let path = inner.guard.resolve(user_path)?;
    let rel = inner.guard.relative(&path);
    let meta = fs::metadata(&path).map_err(|e| io_error(&rel, "read", &e))?;
    if !meta.is_file() {
        return Err(CallError::invalid(format!(
            "\"{rel}\" is not a regular file; edit changes files only."
        )));
    }
    let limit = inner.config.edit_max_bytes;
    if meta.len() > limit {
        return Err(CallError::invalid(format!(
            "\"{rel}\" is too large to edit ({} bytes, max {limit}).",
            meta.len()
        )));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    File::open(&path)
        .and_then(|f| f.take(limit + 1).read_to_end(&mut bytes))
        .map_err(|e| io_error(&rel, "read", &e))?;
    if bytes.len() as u64 > limit {
        return Err(CallError::invalid(format!(
            "\"{rel}\" is too large to edit (over {limit} bytes)."
        )));
    }
    let text = String::from_utf8(bytes).map_err(|_| {
        CallError::invalid(format!(
            "\"{rel}\" is not UTF-8 text; edit changes text files only."
        ))
    })?;
    let count = text.matches(old).count();
    match count {
        0 => {
            return Err(CallError::invalid(format!(
                "old_str not found in {rel}. It must match the file exactly, whitespace and line endings included; view the file first."
            )));
        }
        1 => {}
        n => {
            return Err(CallError::invalid(format!(
                "old_str matches {n} times in {rel} — must be unique. Include more surrounding lines to pick one."
            )));
        }
    }
    let updated = text.replacen(old, new, 1);
    write_atomic(&path, updated.as_bytes(), false, meta.permissions())
        .map_err(|e| io_error(&rel, "write", &e))?;
    let message = format!("Edited {rel}");
    Ok(outcome(
        kinds::WRITE,
        format!(
            "{message} (1 replacement, {} → {} bytes).",
            text.len(),
            updated.len()
        ),
        Value::String(message),
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::testutil::{run, write, ws};
    use toolgate_core::CallError;

    #[tokio::test]
    async fn view_file_whole_and_ranges() {
        let (_d, t) = ws();
        write(&t, "a.txt", "one\ntwo\nthree\nfour\n");
        let o = run(&t, "view", json!({"path": "a.txt"})).await.unwrap();
        assert_eq!(o.data, json!("one\ntwo\nthree\nfour\n"));
        assert_eq!(o.kind.as_str(), "read/file");
        let o = run(&t, "view", json!({"path": "a.txt", "view_range": [2, 3]}))
            .await
            .unwrap();
        assert_eq!(o.data, json!("two\nthree\n"));
        let o = run(&t, "view", json!({"path": "a.txt", "view_range": [0, -1]}))
            .await
            .unwrap();
        assert_eq!(
            o.data,
            json!("one\ntwo\nthree\nfour\n"),
            "start clamps to 1"
        );
        let o = run(&t, "view", json!({"path": "a.txt", "view_range": [3, 99]}))
            .await
            .unwrap();
        assert_eq!(o.data, json!("three\nfour\n"));
        let err = run(&t, "view", json!({"path": "a.txt", "view_range": [9, -1]}))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("only 4 lines"), "{err}");
        let err = run(&t, "view", json!({"path": "a.txt", "view_range": [3, 2]}))
            .await
            .unwrap_err();
        assert!(matches!(err, CallError::InvalidInput { .. }), "{err}");
        // Absolute path inside the workspace works too.
        let abs = t.config().root.join("a.txt");
        assert!(run(&t, "view", json!({"path": abs})).await.is_ok());
    }

    #[tokio::test]
    async fn view_directory_lists_sorted_relative_entries() {
        let (_d, t) = ws();
        write(&t, "src/b.py", "");
        write(&t, "src/.hidden", "");
        write(&t, "src/a/x.py", "");
        let o = run(&t, "view", json!({"path": "src"})).await.unwrap();
        assert_eq!(o.data, json!("src/.hidden\nsrc/a/\nsrc/b.py"));
        let o = run(&t, "view", json!({"path": "."})).await.unwrap();
        assert_eq!(o.data, json!("src/"));
    }

    #[tokio::test]
    async fn view_caps_large_files_with_marker() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = crate::WorkspaceConfig::new(dir.path()).unwrap();
        c.read_cap_bytes = 10;
        let t = crate::WorkspaceTools::new(c).unwrap();
        write(&t, "big.txt", &"x".repeat(25));
        let o = run(&t, "view", json!({"path": "big.txt"})).await.unwrap();
        assert_eq!(o.data, json!("xxxxxxxxxx…[truncated 15 bytes]"));
        write(&t, "lines.txt", "aaaa\nbbbb\ncccc\ndddd\n");
        let o = run(
            &t,
            "view",
            json!({"path": "lines.txt", "view_range": [2, 4]}),
        )
        .await
        .unwrap();
        assert_eq!(o.data, json!("bbbb\ncccc\n…[truncated 5 bytes]"));
    }

    #[tokio::test]
    async fn view_errors() {
        let (_d, t) = ws();
        let err = run(&t, "view", json!({"path": "missing.txt"}))
            .await
            .unwrap_err();
        assert!(matches!(err, CallError::NotFound { .. }), "{err}");
        std::fs::write(t.config().root.join("bin"), b"ab\0cd").unwrap();
        let err = run(&t, "view", json!({"path": "bin"})).await.unwrap_err();
        assert!(err.to_string().contains("binary"), "{err}");
        let err = run(&t, "view", json!({})).await.unwrap_err();
        assert!(matches!(err, CallError::InvalidInput { .. }), "{err}");
        let fifo = t.config().root.join("fifo");
        let st = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(st.success());
        let err = run(&t, "view", json!({"path": "fifo"})).await.unwrap_err();
        assert!(err.to_string().contains("not a regular file"), "{err}");
    }

    #[tokio::test]
    async fn create_makes_parents_and_refuses_existing() {
        let (_d, t) = ws();
        let o = run(
            &t,
            "create",
            json!({"path": "new/dir/f.txt", "file_text": "héllo"}),
        )
        .await
        .unwrap();
        assert_eq!(o.data, json!("Created new/dir/f.txt (6 bytes)"));
        assert_eq!(o.kind.as_str(), "workspace/write");
        let root = &t.config().root;
        assert_eq!(
            std::fs::read_to_string(root.join("new/dir/f.txt")).unwrap(),
            "héllo"
        );
        let err = run(
            &t,
            "create",
            json!({"path": "new/dir/f.txt", "file_text": "x"}),
        )
        .await
        .unwrap_err();
        assert!(err.to_string().contains("already exists"), "{err}");
        assert_eq!(
            std::fs::read_to_string(root.join("new/dir/f.txt")).unwrap(),
            "héllo"
        );
        // No temp files left behind.
        let names: Vec<_> = std::fs::read_dir(root.join("new/dir"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }

    #[tokio::test]
    async fn edit_replaces_exactly_one() {
        let (_d, t) = ws();
        write(&t, "e.py", "a = 1\nb = 1\nc = 2\n");
        let root = t.config().root.clone();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(root.join("e.py"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        let err = run(
            &t,
            "edit",
            json!({"path": "e.py", "old_str": "= 1", "new_str": "= 3"}),
        )
        .await
        .unwrap_err();
        assert!(err.to_string().contains("matches 2 times"), "{err}");
        let err = run(
            &t,
            "edit",
            json!({"path": "e.py", "old_str": "zzz", "new_str": ""}),
        )
        .await
        .unwrap_err();
        assert!(err.to_string().contains("not found"), "{err}");
        let err = run(
            &t,
            "edit",
            json!({"path": "e.py", "old_str": "", "new_str": "x"}),
        )
        .await
        .unwrap_err();
        assert!(matches!(err, CallError::InvalidInput { .. }), "{err}");
        assert_eq!(
            std::fs::read_to_string(root.join("e.py")).unwrap(),
            "a = 1\nb = 1\nc = 2\n"
        );
        let o = run(
            &t,
            "edit",
            json!({"path": "e.py", "old_str": "b = 1", "new_str": "b = 5"}),
        )
        .await
        .unwrap();
        assert_eq!(o.data, json!("Edited e.py"));
        assert_eq!(
            std::fs::read_to_string(root.join("e.py")).unwrap(),
            "a = 1\nb = 5\nc = 2\n"
        );
        let mode = std::fs::metadata(root.join("e.py"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o755, "permissions kept");
        let err = run(
            &t,
            "edit",
            json!({"path": "nope.py", "old_str": "a", "new_str": "b"}),
        )
        .await
        .unwrap_err();
        assert!(matches!(err, CallError::NotFound { .. }), "{err}");
    }

    #[tokio::test]
    async fn edit_refuses_oversized_files() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = crate::WorkspaceConfig::new(dir.path()).unwrap();
        c.edit_max_bytes = 4;
        let t = crate::WorkspaceTools::new(c).unwrap();
        write(&t, "f", "abcdef");
        let err = run(
            &t,
            "edit",
            json!({"path": "f", "old_str": "a", "new_str": "b"}),
        )
        .await
        .unwrap_err();
        assert!(err.to_string().contains("too large"), "{err}");
    }
}
