//! Helpers shared by the converter's integration tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]
#![allow(clippy::disallowed_methods)]

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value as Json;
use yaml_rust2::{Yaml, YamlLoader};

/// The 43 Compound Engineering agents (MIT, see the NOTICE.md and LICENSE beside them).
pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ce-agents")
}

/// The agent files (`ce-*.md`), sorted.
pub fn fixture_agents() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(fixtures_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy().to_string();
            n.starts_with("ce-") && n.ends_with(".md")
        })
        .collect();
    v.sort();
    v
}

/// A Claude Code plugin in `dir` holding the 43 agents (plus the licence files).
pub fn make_ce_plugin(dir: &Path) -> PathBuf {
    let root = dir.join("compound-engineering");
    fs::create_dir_all(root.join(".claude-plugin")).unwrap();
    fs::create_dir_all(root.join("agents")).unwrap();
    fs::write(
        root.join(".claude-plugin/plugin.json"),
        r#"{"name": "compound-engineering", "version": "2.0.0", "description": "Compound Engineering agents (test fixture)", "author": {"name": "Every"}, "license": "MIT"}"#,
    )
    .unwrap();
    for a in fixture_agents() {
        fs::copy(&a, root.join("agents").join(a.file_name().unwrap())).unwrap();
    }
    fs::copy(fixtures_dir().join("LICENSE"), root.join("LICENSE")).unwrap();
    fs::copy(fixtures_dir().join("NOTICE.md"), root.join("NOTICE.md")).unwrap();
    root
}

/// Split a generated markdown file's frontmatter block with plain string handling (no converter
/// code), so the judge sees exactly what was written.
pub fn raw_frontmatter(text: &str) -> (&str, &str) {
    let rest = text.strip_prefix("---\n").expect("starts with a --- line");
    let end = rest.find("\n---\n").expect("a closing --- line");
    (&rest[..=end], &rest[end + 5..])
}

/// Parse YAML with the independent parser (yaml-rust2) into JSON for comparison.
pub fn judge_yaml(yaml: &str) -> Json {
    let docs = YamlLoader::load_from_str(yaml)
        .unwrap_or_else(|e| panic!("yaml-rust2 rejects emitted YAML: {e}\n{yaml}"));
    assert_eq!(docs.len(), 1, "one document expected in:\n{yaml}");
    to_json(&docs[0])
}

pub fn to_json(y: &Yaml) -> Json {
    match y {
        Yaml::Real(s) => serde_json::json!(s.parse::<f64>().unwrap()),
        Yaml::Integer(i) => serde_json::json!(i),
        Yaml::String(s) => Json::String(s.clone()),
        Yaml::Boolean(b) => Json::Bool(*b),
        Yaml::Array(a) => Json::Array(a.iter().map(to_json).collect()),
        Yaml::Hash(h) => Json::Object(
            h.iter()
                .map(|(k, v)| {
                    let key = match k {
                        Yaml::String(s) => s.clone(),
                        other => panic!("non-string key {other:?}"),
                    };
                    (key, to_json(v))
                })
                .collect(),
        ),
        Yaml::Null => Json::Null,
        other => panic!("unexpected YAML node {other:?}"),
    }
}

/// The same value as read by the converter's own parser, as JSON.
pub fn ours_as_json(map: &serde_yaml_ng::Mapping) -> Json {
    serde_json::to_value(map).unwrap()
}
