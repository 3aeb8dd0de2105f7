//! glob: files by pattern, relative to a base inside the workspace.

use std::collections::HashSet;
use std::path::Path;

use globset::GlobBuilder;
use rustix::fs::FileType;
use serde_json::{Map, Value};
use toolgate_core::{CallError, ToolOutcome};

use crate::params::Params;
use crate::specs::{DEFAULT_EXCLUDE_DIRS, kinds};
use crate::{GuardError, Inner, outcome};

pub(crate) fn glob(inner: &Inner, map: &Map<String, Value>) -> Result<ToolOutcome, CallError> {
    let p = Params::new("glob", map);
    let pattern = p.str_or("pattern", "**/*")?;
    let base_arg = p.str_or("paths", ".")?;
    let excludes: HashSet<String> = match p.strings_opt("exclude_dirs")? {
        None => DEFAULT_EXCLUDE_DIRS
            .iter()
            .map(|s| (*s).to_owned())
            .collect(),
        Some(list) => list.into_iter().map(str::to_owned).collect(),
    };
    if pattern.is_empty() {
        return Err(CallError::invalid(
            "glob: the pattern is empty; try \"**/*\".",
        ));
    }
    let pat_path = Path::new(pattern);
    if pat_path.is_absolute() {
        return Err(CallError::invalid(format!(
            "glob: the pattern \"{pattern}\" is absolute; patterns are relative to `paths` (a directory inside the workspace), e.g. \"**/*.py\"."
        )));
    }
    if !toolgate_fs::is_beneath_lexically(pat_path) {
        return Err(GuardError::Outside {
            path: pattern.to_owned(),
            reason: "uses \"..\" in a glob pattern",
            root: inner.guard.root().to_path_buf(),
        }
        .into());
    }
    let matcher = GlobBuilder::new(pattern.trim_start_matches("./"))
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map_err(|e| CallError::invalid(format!("glob: invalid pattern \"{pattern}\": {e}")))?
        .compile_matcher();
    let base = inner.guard.open_path(base_arg)?;
    if base.file_type() != FileType::Directory {
        return Err(CallError::invalid(format!(
            "glob: paths=\"{base_arg}\" is not a directory; give the directory to search from."
        )));
    }
    let root = inner.guard.root().to_path_buf();
    let base_path = root.join(inner.guard.lexical_rel(base_arg)?);

    let excl = excludes;
    // The walker lists directories by name; it can be raced into listing a directory that was
    // swapped for a link out. So every match is opened again beneath the workspace root before
    // it is reported: a name that does not resolve inside at that moment is dropped.
    let walker = ignore::WalkBuilder::new(&base_path)
        .standard_filters(false)
        .follow_links(false)
        .filter_entry(move |e| {
            e.depth() == 0
                || !e.file_type().is_some_and(|t| t.is_dir())
                || !excl.contains(&*e.file_name().to_string_lossy())
        })
        .build();
    let mut found: Vec<String> = Vec::new();
    let mut skipped_outside = 0usize;
    for entry in walker {
        let Ok(entry) = entry else { continue };
        let Some(ft) = entry.file_type() else {
            continue;
        };
        if ft.is_dir() {
            continue;
        }
        let Ok(rel_to_base) = entry.path().strip_prefix(&base_path) else {
            continue;
        };
        if !matcher.is_match(rel_to_base) {
            continue;
        }
        if !(ft.is_file() || ft.is_symlink()) {
            continue;
        }
        let Ok(rel_to_root) = entry.path().strip_prefix(&root) else {
            continue;
        };
        // A file inside the workspace counts (a link to one too, as pathlib's glob would list
        // it); anything outside is dropped.
        match inner.guard.open_path_found(rel_to_root) {
            Ok(o) if o.file_type() == FileType::RegularFile => {}
            Ok(_) => continue,
            Err(GuardError::Outside { .. }) => {
                skipped_outside += 1;
                continue;
            }
            Err(_) if ft.is_symlink() => {
                skipped_outside += 1;
                continue;
            }
            Err(_) => continue,
        }
        // Report the path as found (a link keeps its own name), relative to the root.
        found.push(inner.guard.relative(entry.path()));
    }
    found.sort();
    found.dedup();
    let total = found.len();
    let cap = inner.config.glob_max_results;
    let mut summary = format!("{total} files match \"{pattern}\" under {}.", base.rel);
    if total > cap {
        found.truncate(cap);
        found.push(format!("…[truncated {} more paths]", total - cap));
        summary.push_str(&format!(" Showing the first {cap}."));
    }
    if skipped_outside > 0 {
        summary.push_str(&format!(
            " {skipped_outside} symbolic links leading outside the workspace were skipped."
        ));
    }
    Ok(outcome(
        kinds::GLOB,
        summary,
        Value::Array(found.into_iter().map(Value::String).collect()),
    ))
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use serde_json::json;
    use toolgate_core::CallError;

    use crate::testutil::{run, write, ws};

    fn setup() -> (tempfile::TempDir, crate::WorkspaceTools) {
        let (d, t) = ws();
        for f in [
            "README.md",
            "src/app.py",
            "src/utils.py",
            "src/db/conn.py",
            "src/web/index.js",
            "src/web/index.ts",
            ".hidden.py",
            "node_modules/pkg/x.py",
            "build/gen.py",
            "src/build/y.py",
        ] {
            write(&t, f, "x\n");
        }
        (d, t)
    }

    #[tokio::test]
    async fn default_pattern_lists_files_sorted_relative() {
        let (_d, t) = setup();
        let o = run(&t, "glob", json!({})).await.unwrap();
        assert_eq!(
            o.data,
            json!([
                ".hidden.py",
                "README.md",
                "src/app.py",
                "src/db/conn.py",
                "src/utils.py",
                "src/web/index.js",
                "src/web/index.ts"
            ])
        );
        assert_eq!(o.kind.as_str(), "read/glob");
    }

    #[tokio::test]
    async fn star_stays_in_one_directory_and_braces_work() {
        let (_d, t) = setup();
        let o = run(&t, "glob", json!({"pattern": "src/*.py"}))
            .await
            .unwrap();
        assert_eq!(o.data, json!(["src/app.py", "src/utils.py"]));
        let o = run(&t, "glob", json!({"pattern": "**/*.{js,ts}"}))
            .await
            .unwrap();
        assert_eq!(o.data, json!(["src/web/index.js", "src/web/index.ts"]));
        let o = run(&t, "glob", json!({"pattern": "*.py", "paths": "src/db"}))
            .await
            .unwrap();
        assert_eq!(
            o.data,
            json!(["src/db/conn.py"]),
            "relative to the base, root-relative output"
        );
    }

    #[tokio::test]
    async fn excludes_match_below_the_base_only() {
        let (d, t) = setup();
        let o = run(
            &t,
            "glob",
            json!({"pattern": "**/*.py", "exclude_dirs": []}),
        )
        .await
        .unwrap();
        let list = o.data.as_array().unwrap();
        assert!(list.contains(&json!("node_modules/pkg/x.py")));
        assert!(list.contains(&json!("src/build/y.py")));
        let o = run(
            &t,
            "glob",
            json!({"pattern": "**/*.py", "exclude_dirs": ["db"]}),
        )
        .await
        .unwrap();
        let list = o.data.as_array().unwrap();
        assert!(!list.contains(&json!("src/db/conn.py")));
        assert!(
            list.contains(&json!("build/gen.py")),
            "the list replaces the defaults"
        );
        // The anchor bug: a workspace that lies under a folder named `build`.
        let nested = d.path().join("build/ws");
        std::fs::create_dir_all(nested.join("src")).unwrap();
        std::fs::write(nested.join("src/m.py"), "").unwrap();
        let t2 = crate::WorkspaceTools::new(crate::WorkspaceConfig::new(&nested).unwrap()).unwrap();
        let o = run(&t2, "glob", json!({"pattern": "**/*.py"}))
            .await
            .unwrap();
        assert_eq!(o.data, json!(["src/m.py"]));
        // A base inside an excluded name is searched: the user asked for it.
        let o = run(&t, "glob", json!({"pattern": "*.py", "paths": "build"}))
            .await
            .unwrap();
        assert_eq!(o.data, json!(["build/gen.py"]));
    }

    #[tokio::test]
    async fn cap_leaves_a_marker() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = crate::WorkspaceConfig::new(dir.path()).unwrap();
        c.glob_max_results = 2;
        let t = crate::WorkspaceTools::new(c).unwrap();
        for i in 0..5 {
            write(&t, &format!("f{i}.txt"), "");
        }
        let o = run(&t, "glob", json!({"pattern": "*.txt"})).await.unwrap();
        assert_eq!(
            o.data,
            json!(["f0.txt", "f1.txt", "…[truncated 3 more paths]"])
        );
    }

    #[tokio::test]
    async fn bad_patterns_and_bases() {
        let (_d, t) = setup();
        let err = run(&t, "glob", json!({"pattern": "../*"}))
            .await
            .unwrap_err();
        assert!(matches!(err, CallError::PermissionDenied { .. }), "{err}");
        let err = run(&t, "glob", json!({"pattern": "src/../../*"}))
            .await
            .unwrap_err();
        assert!(matches!(err, CallError::PermissionDenied { .. }), "{err}");
        let err = run(&t, "glob", json!({"pattern": "/etc/*"}))
            .await
            .unwrap_err();
        assert!(matches!(err, CallError::InvalidInput { .. }), "{err}");
        let err = run(&t, "glob", json!({"paths": ".."})).await.unwrap_err();
        assert!(matches!(err, CallError::PermissionDenied { .. }), "{err}");
        let err = run(&t, "glob", json!({"pattern": "a[", "paths": "."}))
            .await
            .unwrap_err();
        assert!(matches!(err, CallError::InvalidInput { .. }), "{err}");
        let err = run(&t, "glob", json!({"paths": "README.md"}))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("not a directory"), "{err}");
        let err = run(&t, "glob", json!({"paths": "missing"}))
            .await
            .unwrap_err();
        assert!(matches!(err, CallError::NotFound { .. }), "{err}");
    }
}
