//! grep: regex search in-process with the ripgrep libraries. No subprocess, so a pattern is only
//! ever a pattern (`--pre=sh` cannot become an option).

use std::io;
use std::path::{Path, PathBuf};

use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use serde_json::{Map, Value, json};
use toolgate_core::{CallError, ToolOutcome};

use crate::cap::cap_str;
use crate::params::Params;
use crate::specs::kinds;
use crate::{Inner, outcome};

/// The longest line text a result carries.
const LINE_CAP: usize = 1000;

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

pub fn grep(inner: &Inner, map: &Map<String, Value>) -> Result<ToolOutcome, CallError> {
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
        .heap_limit(Some(64 * 1024 * 1024))
        .build();

    // Every path is guarded before anything is read.
    let mut bases: Vec<PathBuf> = Vec::with_capacity(paths.len());
    for user_path in &paths {
        bases.push(inner.guard.resolve(user_path)?);
    }

    let mut files: Vec<PathBuf> = Vec::new();
    let mut skipped_outside = 0usize;
    for base in &bases {
        if base.is_file() {
            // Named explicitly: searched even if hidden or ignored (as rg does).
            files.push(base.clone());
            continue;
        }
        let mut builder = ignore::WalkBuilder::new(base);
        // rg's filters (hidden, .gitignore, .ignore), but only files inside the workspace count:
        // no parent-directory or global ignore files, and .gitignore applies without a .git.
        builder
            .follow_links(false)
            .standard_filters(true)
            .parents(false)
            .git_global(false)
            .require_git(false);
        if !glob.is_empty() {
            let mut ob = ignore::overrides::OverrideBuilder::new(base);
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
            if ft.is_file() {
                found.push(entry.into_path());
            } else if ft.is_symlink() {
                // Never follow a link out of the workspace; one to a file inside is searched.
                match inner.guard.check_found(entry.path()) {
                    Some(c) if c.is_file() => found.push(entry.into_path()),
                    Some(_) => {}
                    None => skipped_outside += 1,
                }
            }
        }
        found.sort();
        files.extend(found);
    }

    let cap = inner.config.grep_max_results;
    let mut hits: Vec<Hit> = Vec::new();
    let mut total = 0usize;
    let mut matched_files = 0usize;
    for file in &files {
        // The check after expansion: the file (links resolved) must be inside the workspace.
        let Some(canonical) = inner.guard.check_found(file) else {
            skipped_outside += 1;
            continue;
        };
        let rel = inner
            .guard
            .relative(&relative_base(inner, file, &canonical));
        let before = total;
        let mut sink = Collect {
            file: &rel,
            hits: &mut hits,
            total: &mut total,
            cap,
        };
        // Unreadable files are skipped, as rg reports and moves on.
        if searcher
            .search_path(&matcher, &canonical, &mut sink)
            .is_err()
        {
            continue;
        }
        if total > before {
            matched_files += 1;
        }
    }
    let shown = hits.len();
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
        "{total} lines in {matched_files} files match /{pattern}/ ({} files searched).",
        files.len()
    );
    if total > shown {
        data.push(json!({
            "file": format!("…[truncated {} more results]", total - shown),
            "line": 0,
            "text": "",
        }));
        summary.push_str(&format!(" Showing the first {shown}."));
    }
    if skipped_outside > 0 {
        summary.push_str(&format!(
            " {skipped_outside} symbolic links leading outside the workspace were skipped."
        ));
    }
    Ok(outcome(kinds::GREP, summary, Value::Array(data)))
}

/// The path to report: a link inside the workspace keeps its own name.
fn relative_base(inner: &Inner, found: &Path, canonical: &Path) -> PathBuf {
    match found.parent().and_then(|p| p.canonicalize().ok()) {
        Some(parent) if inner.guard.contains(&parent) => {
            parent.join(found.file_name().unwrap_or_default())
        }
        _ => canonical.to_path_buf(),
    }
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
