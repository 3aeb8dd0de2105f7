//! Bad input: a clear error naming the file (and line), and nothing written — no destination, no
//! temporary directory left beside it, an existing destination untouched.
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(clippy::disallowed_methods)]

mod common;

use std::fs;
use std::path::Path;

use common::make_ce_plugin;
use toolgate_convert::{ConvertError, Options, Target, convert};

/// The names in `dir` (to check that nothing, not even a temporary, was left behind).
fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    v.sort();
    v
}

#[test]
fn malformed_frontmatter_in_one_agent_fails_the_whole_plugin_naming_file_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    let src = make_ce_plugin(tmp.path());
    let bad = src.join("agents/ce-zz-broken.md");
    fs::write(
        &bad,
        "---\nname: ce-zz-broken\ndescription: \"never closed\ntools: Read\n---\n\nBody\n",
    )
    .unwrap();
    let before = entries(tmp.path());
    for target in Target::ALL {
        let dst = tmp.path().join(format!("out-{target}"));
        let err = convert(&src, &dst, &Options::new(target)).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.starts_with(&format!("{}:", bad.display())),
            "the message names the file first: {msg}"
        );
        match err {
            ConvertError::Frontmatter { line, .. } => assert!((3..=5).contains(&line), "{msg}"),
            other => panic!("unexpected error {other:?}"),
        }
        assert!(msg.contains("Quote values"), "says what would work: {msg}");
        assert!(!dst.exists());
        assert_eq!(
            entries(tmp.path()),
            before,
            "nothing left beside the destination"
        );
    }
}

#[test]
fn a_bad_indent_reports_the_exact_line() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("agent.md");
    fs::write(
        &file,
        "---\nname: a\ndescription: d\n  tools: Read\n---\nbody\n",
    )
    .unwrap();
    let err = convert(
        &file,
        &tmp.path().join("out"),
        &Options::new(Target::Vscode),
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .starts_with(&format!("{}:4:", file.display())),
        "{err}"
    );
    assert!(!tmp.path().join("out").exists());
}

#[test]
fn an_unclosed_frontmatter_and_a_wrong_type_are_errors_with_lines() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("agent.md");
    fs::write(&file, "---\nname: a\ndescription: d\n\nbody\n").unwrap();
    let err = convert(
        &file,
        &tmp.path().join("o1"),
        &Options::new(Target::Copilot),
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .starts_with(&format!("{}:1:", file.display())),
        "{err}"
    );
    fs::write(
        &file,
        "---\nname: a\ndescription: d\ntools: {Read: yes}\n---\n",
    )
    .unwrap();
    let err = convert(
        &file,
        &tmp.path().join("o2"),
        &Options::new(Target::Copilot),
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .starts_with(&format!("{}:4: `tools` is a mapping", file.display())),
        "{err}"
    );
    assert_eq!(entries(tmp.path()), ["agent.md"]);
}

#[test]
fn a_plugin_directory_without_plugin_json_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let src = make_ce_plugin(tmp.path());
    fs::remove_file(src.join(".claude-plugin/plugin.json")).unwrap();
    let dst = tmp.path().join("out");
    let err = convert(&src, &dst, &Options::new(Target::Copilot)).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, ConvertError::MissingManifest { .. }), "{msg}");
    assert!(
        msg.contains(".claude-plugin/plugin.json is missing"),
        "{msg}"
    );
    assert!(msg.contains("pass the agents/ directory itself"), "{msg}");
    assert!(!dst.exists());
}

#[test]
fn a_manifest_without_a_name_or_with_bad_json_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let src = make_ce_plugin(tmp.path());
    let manifest = src.join(".claude-plugin/plugin.json");
    fs::write(&manifest, r#"{"version": "1.0.0"}"#).unwrap();
    let err = convert(&src, &tmp.path().join("o"), &Options::new(Target::Claude)).unwrap_err();
    assert!(err.to_string().contains("no `name`"), "{err}");
    fs::write(&manifest, r#"{"name": "x", "#).unwrap();
    let err = convert(&src, &tmp.path().join("o"), &Options::new(Target::Claude)).unwrap_err();
    assert!(err.to_string().contains("invalid JSON"), "{err}");
    assert!(!tmp.path().join("o").exists());
}

#[test]
fn manifest_paths_cannot_leave_the_plugin() {
    let tmp = tempfile::tempdir().unwrap();
    let src = make_ce_plugin(tmp.path());
    fs::write(
        src.join(".claude-plugin/plugin.json"),
        r#"{"name": "x", "agents": "../elsewhere"}"#,
    )
    .unwrap();
    let err = convert(&src, &tmp.path().join("o"), &Options::new(Target::Claude)).unwrap_err();
    assert!(matches!(err, ConvertError::PathEscape { .. }), "{err}");
    assert!(err.to_string().contains("leaves the plugin root"), "{err}");
}

#[test]
fn unknown_target_is_a_clear_error() {
    let err = "cursor".parse::<Target>().unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown target `cursor`; expected one of: copilot, vscode, opencode, codex, gemini, kiro, claude"
    );
}

#[test]
fn marketplace_for_a_target_without_plugins_is_refused_before_writing() {
    let tmp = tempfile::tempdir().unwrap();
    let src = make_ce_plugin(tmp.path());
    let options = Options {
        target: Target::Codex,
        marketplace: Some("m".into()),
        force: false,
    };
    let err = convert(&src, &tmp.path().join("o"), &options).unwrap_err();
    assert!(
        err.to_string().contains("--marketplace applies to"),
        "{err}"
    );
    assert!(!tmp.path().join("o").exists());
}

#[test]
fn an_existing_destination_is_kept_unless_forced_and_then_swapped_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let src = make_ce_plugin(tmp.path());
    let dst = tmp.path().join("out");
    fs::create_dir(&dst).unwrap();
    fs::write(dst.join("mine.txt"), "user file").unwrap();
    let err = convert(&src, &dst, &Options::new(Target::Copilot)).unwrap_err();
    assert!(matches!(err, ConvertError::DestinationExists(_)), "{err}");
    assert_eq!(entries(&dst), ["mine.txt"]);

    // A failing forced conversion leaves the old destination exactly as it was.
    fs::write(src.join("agents/ce-zz.md"), "---\nname: [\n---\n").unwrap();
    let mut options = Options::new(Target::Copilot);
    options.force = true;
    convert(&src, &dst, &options).unwrap_err();
    assert_eq!(entries(&dst), ["mine.txt"]);

    fs::remove_file(src.join("agents/ce-zz.md")).unwrap();
    let report = convert(&src, &dst, &options).unwrap();
    assert_eq!(report.agents.len(), 43);
    assert!(!dst.join("mine.txt").exists());
    assert!(dst.join("plugin.json").is_file());
    let leftovers: Vec<String> = entries(tmp.path())
        .into_iter()
        .filter(|n| n.starts_with(".toolgate-convert"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn an_empty_existing_directory_is_a_fine_destination() {
    let tmp = tempfile::tempdir().unwrap();
    let src = make_ce_plugin(tmp.path());
    let dst = tmp.path().join("empty");
    fs::create_dir(&dst).unwrap();
    convert(&src, &dst, &Options::new(Target::Claude)).unwrap();
    assert!(dst.join(".claude-plugin/plugin.json").is_file());
}

#[test]
fn a_missing_source_is_named() {
    let err = convert(
        Path::new("/nonexistent/agents"),
        Path::new("/tmp/never"),
        &Options::new(Target::Claude),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "/nonexistent/agents: no such agent file, agents directory or plugin directory"
    );
}

#[test]
fn single_agent_files_go_into_a_directory_or_onto_a_named_file() {
    let tmp = tempfile::tempdir().unwrap();
    let file = common::fixtures_dir().join("ce-coherence-reviewer.md");
    let dir = tmp.path().join("agents-out");
    let r = convert(&file, &dir, &Options::new(Target::Vscode)).unwrap();
    assert_eq!(
        r.files,
        [dir.join("ce-coherence-reviewer.agent.md")
            .display()
            .to_string()]
    );
    let named = tmp.path().join("custom.agent.md");
    convert(&file, &named, &Options::new(Target::Vscode)).unwrap();
    assert!(named.is_file());
    // Not overwritten without --force.
    let err = convert(&file, &named, &Options::new(Target::Vscode)).unwrap_err();
    assert!(matches!(err, ConvertError::DestinationExists(_)), "{err}");
}
