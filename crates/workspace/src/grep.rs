//! grep: regex search in-process with the ripgrep libraries. No subprocess, so a pattern is only
//! ever a pattern (`--pre=sh` cannot become an option).

use std::fs::File;
use std::io;
use std::path::PathBuf;

use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use rustix::fs::FileType;
use serde_json::{Map, Value, json};
use toolgate_core::{CallError, ToolOutcome};

use crate::cap::cap_str;
use crate::params::Params;
use crate::specs::kinds;
use crate::{GuardError, Inner, outcome};

/// The longest line text a result carries.
const LINE_CAP: usize = 1000;
/// The most the searcher holds in memory for one file: a line (with its context lines) longer
/// than this cannot be searched, and the file is reported as not searched. Smaller in unit
/// tests, so a test file just over it stays small.
const HEAP_LIMIT: usize = if cfg!(test) {
    1024 * 1024
} else {
    64 * 1024 * 1024
};

/// The limit as a person reads it ("64 MiB").
fn mib(bytes: usize) -> String {
    format!("{} MiB", bytes / (1024 * 1024))
}

/// Whether the searcher gave up on a file because a line did not fit in [`HEAP_LIMIT`]. Read
/// from the error's kind, not its text: a read of the file fails with the OS's error (it has an
/// OS code), our sink never fails, and no transcoding or binary-quit error is configured, so
/// the searcher's one error of its own — `ErrorKind::Other` without an OS code — is the limit.
fn is_heap_limit(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::Other && e.raw_os_error().is_none()
}

struct Hit {
    file: String,
    line: u64,
    text: String,
    context: bool,
}

struct Collect<'a> {
    file: &'a str,
    hits: &'a mut Vec<Hit>,
    total: &'a mut usize,
    cap: usize,
}

impl Collect<'_> {
    fn push(&mut self, line: Option<u64>, bytes: &[u8], context: bool) {
        *self.total += 1;
        if self.hits.len() >= self.cap {
            return;
        }
        let raw = String::from_utf8_lossy(bytes);
        let trimmed = raw.trim_end_matches(['\n', '\r']);
        let (text, _) = cap_str(trimmed, LINE_CAP);
        self.hits.push(Hit {
            file: self.file.to_owned(),
            line: line.unwrap_or(0),
            text,
            context,
        });
    }
}

impl Sink for Collect<'_> {
    type Error = io::Error;

    fn matched(&mut self, _s: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, io::Error> {
        self.push(mat.line_number(), mat.bytes(), false);
        Ok(true)
    }

    fn context(&mut self, _s: &Searcher, ctx: &SinkContext<'_>) -> Result<bool, io::Error> {
        self.push(ctx.line_number(), ctx.bytes(), true);
        Ok(true)
    }
}

pub(crate) fn grep(inner: &Inner, map: &Map<String, Value>) -> Result<ToolOutcome, CallError> {
    let p = Params::new("grep", map);
    let pattern = p.str_req("pattern")?;
    let paths = p.strings_opt("paths")?.unwrap_or_else(|| vec!["."]);
    let glob = p.str_or("glob", "")?;
    let context = p.int_opt("context_lines")?.unwrap_or(0);
    let ignore_case = p.bool_or("ignore_case", false)?;
    if pattern.is_empty() {
        return Err(CallError::invalid("grep: the pattern is empty."));
    }
    if !(0..=20).contains(&context) {
        return Err(CallError::invalid(
            "grep: context_lines must be between 0 and 20.",
        ));
    }
    if paths.is_empty() {
        return Err(CallError::invalid(
            "grep: paths is an empty list; give a file or directory, e.g. \".\".",
        ));
    }
    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(ignore_case)
        .line_terminator(Some(b'\n'))
        .build(pattern)
        .map_err(|e| CallError::invalid(format!("grep: invalid regular expression: {e}")))?;
    let mut searcher = SearcherBuilder::new()
        .line_number(true)
        .binary_detection(BinaryDetection::quit(0))
        .before_context(context as usize)
        .after_context(context as usize)
        .heap_limit(Some(HEAP_LIMIT))
        .build();

    // Every path is guarded before anything is read.
    let root = inner.guard.root().to_path_buf();
    let mut bases: Vec<(PathBuf, FileType)> = Vec::with_capacity(paths.len());
    for user_path in &paths {
        let opened = inner.guard.open_read(user_path)?;
        bases.push((inner.guard.lexical_rel(user_path)?, opened.file_type()));
    }

    // Files to search, relative to the root. The walker lists by name (it can be raced into a
    // directory swapped for a link out), so each file is opened again beneath the workspace
    // root before a byte of it is read.
    let mut files: Vec<PathBuf> = Vec::new();
    for (base, kind) in &bases {
        match kind {
            // Named explicitly: searched even if hidden or ignored (as rg does).
            FileType::RegularFile => {
                files.push(base.clone());
                continue;
            }
            FileType::Directory => {}
            _ => continue,
        }
        let base_path = root.join(base);
        let mut builder = ignore::WalkBuilder::new(&base_path);
        // rg's filters (hidden, .gitignore, .ignore), but only files inside the workspace count:
        // no parent-directory or global ignore files, and .gitignore applies without a .git.
        builder
            .follow_links(false)
            .standard_filters(true)
            .parents(false)
            .git_global(false)
            .require_git(false);
        if !glob.is_empty() {
            let mut ob = ignore::overrides::OverrideBuilder::new(&base_path);
            ob.add(glob)
                .map_err(|e| CallError::invalid(format!("grep: invalid glob \"{glob}\": {e}")))?;
            let overrides = ob
                .build()
                .map_err(|e| CallError::invalid(format!("grep: invalid glob \"{glob}\": {e}")))?;
            builder.overrides(overrides);
        }
        let mut found: Vec<PathBuf> = Vec::new();
        for entry in builder.build() {
            let Ok(entry) = entry else { continue };
            let Some(ft) = entry.file_type() else {
                continue;
            };
            // A link is searched only if it leads to a file inside (checked when it is opened).
            if (ft.is_file() || ft.is_symlink())
                && let Ok(rel) = entry.path().strip_prefix(&root)
            {
                found.push(rel.to_path_buf());
            }
        }
        found.sort();
        files.extend(found);
    }

    let cap = inner.config.grep_max_results;
    let mut hits: Vec<Hit> = Vec::new();
    let mut total = 0usize;
    let mut matched_files = 0usize;
    let mut skipped_outside = 0usize;
    let mut skipped_linked = 0usize;
    let mut searched = 0usize;
    // Files the searcher gave up on (a line over the limit, a read error): each is a result
    // with line 0 in file order, and the summary names them. They were silently `[]` before.
    let mut not_searched: Vec<(String, String)> = Vec::new();
    for file in &files {
        let opened = match inner.guard.open_read_found(file) {
            Ok(o) => o,
            Err(GuardError::Outside { .. }) => {
                skipped_outside += 1;
                continue;
            }
            Err(GuardError::HardLinked { .. }) => {
                skipped_linked += 1;
                continue;
            }
            // Unreadable or vanished files are skipped, as rg reports and moves on.
            Err(_) => continue,
        };
        if opened.file_type() != FileType::RegularFile {
            continue;
        }
        searched += 1;
        let rel = opened.rel.clone();
        let handle = File::from(opened.fd);
        let before = total;
        let mut sink = Collect {
            file: &rel,
            hits: &mut hits,
            total: &mut total,
            cap,
        };
        if let Err(e) = searcher.search_file(&matcher, &handle, &mut sink) {
            let why = if is_heap_limit(&e) {
                format!(
                    "a line longer than {}, the most grep holds in memory; search such a file with bash",
                    mib(HEAP_LIMIT)
                )
            } else {
                format!("could not be read ({e})")
            };
            hits.push(Hit {
                file: rel.clone(),
                line: 0,
                text: format!("…[not searched: {why}]"),
                context: false,
            });
            not_searched.push((rel, why));
            continue;
        }
        if total > before {
            matched_files += 1;
        }
    }
    let shown = hits.len() - not_searched.len();
    let mut data: Vec<Value> = hits
        .into_iter()
        .map(|h| {
            let mut v = json!({"file": h.file, "line": h.line, "text": h.text});
            if h.context
                && let Some(obj) = v.as_object_mut()
            {
                obj.insert("context".to_owned(), Value::Bool(true));
            }
            v
        })
        .collect();
    let mut summary = format!(
        "{total} lines in {matched_files} files match /{pattern}/ ({searched} files searched)."
    );
    if total > shown {
        data.push(json!({
            "file": format!("…[truncated {} more results]", total - shown),
            "line": 0,
            "text": "",
        }));
        summary.push_str(&format!(" Showing the first {shown}."));
    }
    if !not_searched.is_empty() {
        let n = not_searched.len();
        let named: Vec<String> = not_searched
            .iter()
            .take(5)
            .map(|(f, why)| format!("{f} ({why})"))
            .collect();
        let more = if n > 5 {
            format!(" and {} more", n - 5)
        } else {
            String::new()
        };
        summary.push_str(&format!(
            " {n} file{} not searched: {}{more}.",
            if n == 1 { "" } else { "s" },
            named.join("; ")
        ));
    }
    if skipped_outside > 0 {
        summary.push_str(&format!(
            " {skipped_outside} symbolic links leading outside the workspace were skipped."
        ));
    }
    if skipped_linked > 0 {
        summary.push_str(&format!(
            " {skipped_linked} files with more than one hard link were skipped (they may be files from outside linked in)."
        ));
    }
    Ok(outcome(kinds::GREP, summary, Value::Array(data)))
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use toolgate_core::CallError;

    use crate::testutil::{run, write, ws};

    fn setup() -> (tempfile::TempDir, crate::WorkspaceTools) {
        let (d, t) = ws();
        write(
            &t,
            "src/app.py",
            "import os\n# TODO: one\nx = 1\n# todo: lower\n# TODO: two\n",
        );
        write(&t, "src/util.py", "def f():\n    pass  # TODO fix\n");
        write(&t, "src/notes.md", "TODO in markdown\n");
        write(&t, ".hidden/h.py", "# TODO hidden\n");
        (d, t)
    }

    #[tokio::test]
    async fn finds_matches_with_file_line_text() {
        let (_d, t) = setup();
        let o = run(
            &t,
            "grep",
            json!({"pattern": "TODO", "paths": "src", "glob": "*.py"}),
        )
        .await
        .unwrap();
        assert_eq!(
            o.data,
            json!([
                {"file": "src/app.py", "line": 2, "text": "# TODO: one"},
                {"file": "src/app.py", "line": 5, "text": "# TODO: two"},
                {"file": "src/util.py", "line": 2, "text": "    pass  # TODO fix"}
            ])
        );
        assert_eq!(o.kind.as_str(), "read/grep");
    }

    #[tokio::test]
    async fn defaults_skip_hidden_and_search_everything_else() {
        let (_d, t) = setup();
        let o = run(&t, "grep", json!({"pattern": "TODO"})).await.unwrap();
        let files: Vec<_> = o
            .data
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["file"].clone())
            .collect();
        assert!(files.contains(&json!("src/notes.md")));
        assert!(
            !files.contains(&json!(".hidden/h.py")),
            "hidden skipped like rg"
        );
        // A hidden file named explicitly is searched.
        let o = run(
            &t,
            "grep",
            json!({"pattern": "TODO", "paths": [".hidden/h.py", "src/util.py"]}),
        )
        .await
        .unwrap();
        assert_eq!(o.data.as_array().unwrap().len(), 2);
    }

    #[tokio::test]
    async fn ignore_case_context_and_negated_glob() {
        let (_d, t) = setup();
        let o = run(
            &t,
            "grep",
            json!({"pattern": "todo", "paths": "src/app.py", "ignore_case": true}),
        )
        .await
        .unwrap();
        assert_eq!(o.data.as_array().unwrap().len(), 3);
        let o = run(
            &t,
            "grep",
            json!({"pattern": "x = 1", "paths": "src/app.py", "context_lines": 1}),
        )
        .await
        .unwrap();
        assert_eq!(
            o.data,
            json!([
                {"file": "src/app.py", "line": 2, "text": "# TODO: one", "context": true},
                {"file": "src/app.py", "line": 3, "text": "x = 1"},
                {"file": "src/app.py", "line": 4, "text": "# todo: lower", "context": true}
            ])
        );
        let o = run(
            &t,
            "grep",
            json!({"pattern": "TODO", "paths": "src", "glob": "!*.py"}),
        )
        .await
        .unwrap();
        assert_eq!(
            o.data,
            json!([{"file": "src/notes.md", "line": 1, "text": "TODO in markdown"}])
        );
    }

    #[tokio::test]
    async fn cap_and_errors() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = crate::WorkspaceConfig::new(dir.path()).unwrap();
        c.grep_max_results = 2;
        let t = crate::WorkspaceTools::new(c).unwrap();
        write(&t, "a.txt", "x\nx\nx\nx\nx\n");
        write(&t, "bin.dat", "x\0x\n");
        let o = run(&t, "grep", json!({"pattern": "x"})).await.unwrap();
        let list = o.data.as_array().unwrap();
        assert_eq!(list.len(), 3);
        assert_eq!(list[2]["file"], json!("…[truncated 3 more results]"));
        let err = run(&t, "grep", json!({"pattern": "("})).await.unwrap_err();
        assert!(matches!(err, CallError::InvalidInput { .. }), "{err}");
        let err = run(&t, "grep", json!({"pattern": "x", "paths": "../"}))
            .await
            .unwrap_err();
        assert!(matches!(err, CallError::PermissionDenied { .. }), "{err}");
        let err = run(&t, "grep", json!({"pattern": "x", "paths": "nope"}))
            .await
            .unwrap_err();
        assert!(matches!(err, CallError::NotFound { .. }), "{err}");
    }

    /// Reproduction: a file whose one line is longer than what the searcher may hold came back
    /// as `[]` with no note. It is reported as not searched, with why, in the results and the
    /// summary.
    #[tokio::test]
    async fn a_line_over_the_limit_is_reported_not_dropped() {
        let (_d, t) = ws();
        let over = super::HEAP_LIMIT + 1;
        let mut big = "a".repeat(over);
        big.push_str("needle\n");
        write(&t, "one-line.txt", &big);
        drop(big);
        write(&t, "small.txt", "needle\n");
        let o = run(&t, "grep", json!({"pattern": "needle"})).await.unwrap();
        let list = o.data.as_array().unwrap();
        assert_eq!(list.len(), 2, "{list:?}");
        assert_eq!(list[0]["file"], json!("one-line.txt"));
        assert_eq!(list[0]["line"], json!(0));
        let note = list[0]["text"].as_str().unwrap();
        assert!(
            note.starts_with("…[not searched: a line longer than"),
            "{note}"
        );
        assert_eq!(
            list[1],
            json!({"file": "small.txt", "line": 1, "text": "needle"})
        );
        assert!(
            o.summary.contains("1 file not searched: one-line.txt"),
            "{}",
            o.summary
        );
    }

    #[tokio::test]
    async fn long_lines_are_cut() {
        let (_d, t) = ws();
        write(
            &t,
            "min.js",
            &format!("{}needle{}\n", "a".repeat(2000), "b".repeat(2000)),
        );
        let o = run(&t, "grep", json!({"pattern": "needle"})).await.unwrap();
        let text = o.data[0]["text"].as_str().unwrap();
        assert!(
            text.len() < 1100 && text.contains("…[truncated 3006 bytes]"),
            "{}",
            text.len()
        );
    }
}
