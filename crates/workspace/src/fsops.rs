//! view, create, edit.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::os::fd::AsFd;
use std::path::Path;

use rustix::fs::{Dir, FileType, Mode, OFlags, fstat, openat};

use serde_json::{Map, Value};
use toolgate_core::{CallError, ToolOutcome};

use crate::cap::{cap_bytes, cap_str};
use crate::guard::{Opened, check_readable, write_in};
use crate::params::Params;
use crate::specs::kinds;
use crate::{GuardError, Inner, outcome};

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

pub(crate) fn view(inner: &Inner, map: &Map<String, Value>) -> Result<ToolOutcome, CallError> {
    let p = Params::new("view", map);
    let user_path = p.str_req("path")?;
    let range = p.int_pair_opt("view_range")?;
    // Opened beneath the workspace root's descriptor; what is read is what was checked.
    let opened = inner.guard.open_read(user_path)?;
    let rel = opened.rel.clone();
    match opened.file_type() {
        FileType::Directory => return view_dir(inner, &opened),
        FileType::RegularFile => {}
        _ => {
            return Err(CallError::invalid(format!(
                "\"{rel}\" is not a regular file (a device, FIFO or socket); view reads files and directories only."
            )));
        }
    }
    let size = u64::try_from(opened.stat.st_size).unwrap_or(0);
    let file = File::from(opened.fd);
    let cap = inner.config.read_cap_bytes;
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    let head = reader.fill_buf().map_err(|e| io_error(&rel, "read", &e))?;
    if head[..head.len().min(8192)].contains(&0) {
        return Err(CallError::invalid(format!(
            "\"{rel}\" looks like a binary file (it contains NUL bytes); view shows text only. Use bash (e.g. `xxd {rel} | head`) to inspect binary data."
        )));
    }
    let (text, cut, summary) = match range {
        None => {
            // Capped while reading: at most cap + 1 bytes are ever held.
            let mut buf = Vec::with_capacity(cap.min(usize::try_from(size).unwrap_or(cap)) + 1);
            reader
                .by_ref()
                .take(cap as u64 + 1)
                .read_to_end(&mut buf)
                .map_err(|e| io_error(&rel, "read", &e))?;
            let total = usize::try_from(size).unwrap_or(usize::MAX).max(buf.len());
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
            let lines = read_line_range(&mut reader, start, end, cap)
                .map_err(|e| io_error(&rel, "read", &e))?;
            if lines.count < start {
                return Err(CallError::invalid(format!(
                    "view_range starts at line {start}, but \"{rel}\" has only {} lines.",
                    lines.count
                )));
            }
            let last = end.min(lines.count);
            let (text, cut) = cap_bytes(&lines.kept, lines.total, cap);
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

/// What [`read_line_range`] found.
struct LineRange {
    /// The first `cap + 1` bytes of the lines in range (one more than the cap, so a cut shows).
    kept: Vec<u8>,
    /// Bytes the lines in range really have.
    total: usize,
    /// Lines seen: all of the file's, or `end` when reading stopped after the range.
    count: u64,
}

/// Lines `start..=end` (1-based) of `reader`, streamed: the reader's buffer is scanned for
/// newlines and only in-range bytes up to `cap + 1` are kept, so a huge line (a 1 GiB file
/// without a newline) never sits in memory. Lines after `end` are not read.
fn read_line_range(
    reader: &mut impl BufRead,
    start: u64,
    end: u64,
    cap: usize,
) -> io::Result<LineRange> {
    let mut kept: Vec<u8> = Vec::new();
    let mut total = 0usize;
    // The line the next byte belongs to, and whether that line has bytes yet.
    let mut line = 1u64;
    let mut partial = false;
    'read: loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        let n = buf.len();
        let mut i = 0;
        while i < n {
            if line > end {
                reader.consume(i);
                break 'read;
            }
            let (seg_end, newline) = match memchr::memchr(b'\n', &buf[i..]) {
                Some(pos) => (i + pos + 1, true),
                None => (n, false),
            };
            if line >= start {
                let seg = &buf[i..seg_end];
                total = total.saturating_add(seg.len());
                if kept.len() <= cap {
                    let take = seg.len().min(cap + 1 - kept.len());
                    kept.extend_from_slice(&seg[..take]);
                }
            }
            if newline {
                line += 1;
                partial = false;
            } else {
                partial = true;
            }
            i = seg_end;
        }
        reader.consume(n);
    }
    Ok(LineRange {
        kept,
        total,
        count: line - 1 + u64::from(partial),
    })
}

fn view_dir(inner: &Inner, opened: &Opened) -> Result<ToolOutcome, CallError> {
    let rel = opened.rel.as_str();
    let list_error = |e: rustix::io::Errno| io_error(rel, "list", &io::Error::from(e));
    let mut entries: Vec<String> = Vec::new();
    for entry in Dir::read_from(&opened.fd).map_err(list_error)? {
        let entry = entry.map_err(list_error)?;
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        let name = String::from_utf8_lossy(name);
        let mut shown = if rel == "." {
            name.into_owned()
        } else {
            format!("{rel}/{name}")
        };
        // A link gets the "/" of a directory only when it leads to one inside the workspace.
        let is_dir = match entry.file_type() {
            FileType::Directory => true,
            FileType::Symlink | FileType::Unknown => inner
                .guard
                .open_path_found(Path::new(&shown))
                .is_ok_and(|o| o.file_type() == FileType::Directory),
            _ => false,
        };
        if is_dir {
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

fn exists_error(rel: &str) -> CallError {
    CallError::AlreadyExists {
        message: format!("\"{rel}\" already exists — use edit to modify it."),
    }
}

pub(crate) fn create(inner: &Inner, map: &Map<String, Value>) -> Result<ToolOutcome, CallError> {
    let p = Params::new("create", map);
    let user_path = p.str_req("path")?;
    let text = p.str_req("file_text")?;
    // The parent folders are made inside the workspace's descriptor, and the file is written
    // (temp file, then a no-clobber rename) inside the parent's descriptor.
    let slot = inner.guard.slot(user_path, true)?;
    let rel = slot.rel.clone();
    if slot.exists {
        return Err(exists_error(&rel));
    }
    match write_in(slot.dir.as_fd(), &slot.name, text.as_bytes(), 0o644, true) {
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

pub(crate) fn edit(inner: &Inner, map: &Map<String, Value>) -> Result<ToolOutcome, CallError> {
    let p = Params::new("edit", map);
    let user_path = p.str_req("path")?;
    let old = p.str_req("old_str")?;
    let new = p.str_req("new_str")?;
    if old.is_empty() {
        return Err(CallError::invalid(
            "old_str is empty; give the exact text to replace (it must occur once).",
        ));
    }
    let slot = inner.guard.slot(user_path, false)?;
    let rel = slot.rel.clone();
    if !slot.exists {
        return Err(GuardError::NotFound {
            path: user_path.to_owned(),
            root: inner.guard.root().to_path_buf(),
        }
        .into());
    }
    let not_regular = || {
        CallError::invalid(format!(
            "\"{rel}\" is not a regular file; edit changes files only."
        ))
    };
    // Read the file through its confined directory, never following a link at the name.
    let fd = match openat(
        &slot.dir,
        &slot.name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::LOOP) => return Err(not_regular()),
        Err(e) => return Err(io_error(&rel, "read", &io::Error::from(e))),
    };
    let stat = fstat(&fd).map_err(|e| io_error(&rel, "read", &io::Error::from(e)))?;
    let opened = Opened {
        fd,
        stat,
        rel: rel.clone(),
    };
    if opened.file_type() != FileType::RegularFile {
        return Err(not_regular());
    }
    check_readable(&opened)?;
    let len = u64::try_from(opened.stat.st_size).unwrap_or(0);
    let mode = opened.stat.st_mode;
    let limit = inner.config.edit_max_bytes;
    if len > limit {
        return Err(CallError::invalid(format!(
            "\"{rel}\" is too large to edit ({len} bytes, max {limit})."
        )));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    File::from(opened.fd)
        .take(limit + 1)
        .read_to_end(&mut bytes)
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
    write_in(
        slot.dir.as_fd(),
        &slot.name,
        updated.as_bytes(),
        mode,
        false,
    )
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
#[allow(clippy::disallowed_methods)]
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
        assert!(
            matches!(err, CallError::AlreadyExists { .. })
                && err.to_string().contains("already exists"),
            "{err:?}"
        );
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
