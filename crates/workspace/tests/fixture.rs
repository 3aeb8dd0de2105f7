//! The anchor's functional prompts (reference §10.3–10.4), answered with the tools over the
//! fixture workspace `tests/fixtures/ws`, checked against `tests/fixtures/ws-facts.json`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Value, json};
use toolgate_core::{CallError, Provider, ToolCall, ToolOutcome};
use toolgate_workspace::{WorkspaceConfig, WorkspaceTools};

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}

fn fixtures() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// A private copy of the fixture workspace (tools may write into it).
fn workspace() -> (tempfile::TempDir, WorkspaceTools) {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    copy_dir(&fixtures().join("ws"), &ws);
    let tools = WorkspaceTools::new(WorkspaceConfig::new(&ws).unwrap()).unwrap();
    (dir, tools)
}

fn facts() -> Value {
    let text = std::fs::read_to_string(fixtures().join("ws-facts.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

async fn call(t: &WorkspaceTools, tool: &str, params: Value) -> Result<ToolOutcome, CallError> {
    let Value::Object(map) = params else {
        panic!("object expected")
    };
    t.call(&ToolCall::new(tool, map)).await
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn the_fixture_has_the_anchor_layout() {
    let (_d, t) = workspace();
    let all = call(&t, "glob", json!({})).await.unwrap();
    let files = strings(&all.data);
    let facts = facts();
    let expected: Vec<String> = facts["files"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(
        files, expected,
        "glob lists exactly the fixture's files, sorted"
    );
    assert_eq!(files.len(), 37);
    assert_eq!(files.iter().filter(|f| f.ends_with(".py")).count(), 31);
    assert_eq!(files.iter().filter(|f| f.ends_with(".json")).count(), 5);
}

#[tokio::test]
async fn multi_file_search_todos_with_file_and_line() {
    let (_d, t) = workspace();
    let o = call(
        &t,
        "grep",
        json!({"pattern": "TODO", "paths": "src", "glob": "*.py"}),
    )
    .await
    .unwrap();
    let mut per_file: BTreeMap<String, u64> = BTreeMap::new();
    for hit in o.data.as_array().unwrap() {
        let file = hit["file"].as_str().unwrap();
        assert!(hit["line"].as_u64().unwrap() >= 1);
        assert!(hit["text"].as_str().unwrap().contains("TODO"));
        *per_file.entry(file.to_owned()).or_default() += 1;
    }
    let facts = facts();
    for (file, f) in facts["files"].as_object().unwrap() {
        if file.starts_with("src/") && file.ends_with(".py") {
            let want = f["todos"].as_u64().unwrap();
            assert_eq!(per_file.get(file).copied().unwrap_or(0), want, "{file}");
        }
    }
    assert_eq!(per_file["src/app.py"], 5);
}

#[tokio::test]
async fn batch_count_lines_and_defs_per_file() {
    let (_d, t) = workspace();
    let files = strings(
        &call(&t, "glob", json!({"pattern": "**/*.py", "paths": "src"}))
            .await
            .unwrap()
            .data,
    );
    let facts = facts();
    let mut by_lines: Vec<(u64, String)> = Vec::new();
    for file in &files {
        let text = call(&t, "view", json!({"path": file})).await.unwrap().data;
        let lines = text.as_str().unwrap().lines().count() as u64;
        assert_eq!(
            lines,
            facts["files"][file]["lines"].as_u64().unwrap(),
            "{file}"
        );
        let defs = call(&t, "grep", json!({"pattern": r"^\s*def ", "paths": file}))
            .await
            .unwrap();
        assert_eq!(
            defs.data.as_array().unwrap().len() as u64,
            facts["files"][file]["defs"].as_u64().unwrap(),
            "{file}"
        );
        by_lines.push((lines, file.clone()));
    }
    by_lines.sort_by(|a, b| b.cmp(a));
    let top: Vec<&str> = by_lines.iter().take(3).map(|(_, f)| f.as_str()).collect();
    assert_eq!(top, ["src/app.py", "src/models.py", "src/config.py"]);
}

#[tokio::test]
async fn json_validate_finds_the_broken_file() {
    let (_d, t) = workspace();
    let files = strings(
        &call(&t, "glob", json!({"pattern": "config/*.json"}))
            .await
            .unwrap()
            .data,
    );
    assert_eq!(files.len(), 5);
    let mut invalid = Vec::new();
    for file in &files {
        let text = call(&t, "view", json!({"path": file})).await.unwrap().data;
        if serde_json::from_str::<Value>(text.as_str().unwrap()).is_err() {
            invalid.push(file.clone());
        }
    }
    assert_eq!(invalid, ["config/broken.json"]);
}

#[tokio::test]
async fn single_file_read_and_env_reads() {
    let (_d, t) = workspace();
    let readme = call(&t, "view", json!({"path": "README.md"}))
        .await
        .unwrap();
    assert!(
        readme
            .data
            .as_str()
            .unwrap()
            .starts_with("# Sample project")
    );
    let o = call(
        &t,
        "grep",
        json!({"pattern": r#"os\.environ\.get\("([A-Z_]+)""#, "paths": "src"}),
    )
    .await
    .unwrap();
    let mut vars: Vec<String> = o
        .data
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|h| {
            let text = h["text"].as_str()?;
            let start = text.find("get(\"")? + 5;
            let end = text[start..].find('"')? + start;
            Some(text[start..end].to_owned())
        })
        .collect();
    vars.sort();
    vars.dedup();
    assert_eq!(json!(vars), facts()["env_vars"]);
    let imports = call(
        &t,
        "grep",
        json!({"pattern": "^import os$", "paths": "src"}),
    )
    .await
    .unwrap();
    let mut files: Vec<String> = imports
        .data
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["file"].as_str().unwrap().to_owned())
        .collect();
    files.sort();
    assert_eq!(json!(files), facts()["src_files_importing_os"]);
}

#[tokio::test]
async fn edit_and_sql_round_trip_in_the_copy() {
    let (_d, t) = workspace();
    call(
        &t,
        "edit",
        json!({"path": "src/utils.py", "old_str": "result = value + 0", "new_str": "result = value * 2"}),
    )
    .await
    .unwrap();
    let text = call(
        &t,
        "view",
        json!({"path": "src/utils.py", "view_range": [1, 8]}),
    )
    .await
    .unwrap();
    assert!(text.data.as_str().unwrap().contains("value * 2"));
    let o = call(
        &t,
        "sql",
        json!({"query": "CREATE TABLE todos(file TEXT, n INT); INSERT INTO todos VALUES ('src/app.py', 5); SELECT file, n FROM todos"}),
    )
    .await
    .unwrap();
    assert_eq!(
        o.data,
        json!({"columns": ["file", "n"], "rows": [["src/app.py", 5]]})
    );
    // The repository's fixture is untouched.
    let original = std::fs::read_to_string(fixtures().join("ws/src/utils.py")).unwrap();
    assert!(original.contains("result = value + 0"));
    assert!(!fixtures().join("ws/.toolgate").exists());
}
