//! Plugins to Gemini CLI extensions and Kiro CLI agent directories: commands, MCP servers, hooks
//! and the manifest, each loss reported.
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(clippy::disallowed_methods)]

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value as Json;
use toolgate_convert::{Options, Target, convert};

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, text).unwrap();
}

fn plugin(dir: &Path, manifest: &str) -> PathBuf {
    let root = dir.join("p");
    write(&root, ".claude-plugin/plugin.json", manifest);
    write(
        &root,
        "agents/a.md",
        "---\nname: a\ndescription: d\ntools: Read\n---\nBody\n",
    );
    write(
        &root,
        "commands/fix.md",
        "---\ndescription: Fix it\n---\nFix $ARGUMENTS, starting with $1.\nContext: !`git status`\n",
    );
    write(
        &root,
        ".mcp.json",
        r#"{"mcpServers": {
            "local": {"command": "${CLAUDE_PLUGIN_ROOT}/bin/srv", "args": ["--root", "${CLAUDE_PLUGIN_ROOT}"], "x-extra": 1},
            "events": {"type": "sse", "url": "https://example.invalid/sse"},
            "stream": {"type": "http", "url": "https://example.invalid/mcp"},
            "broken": {"args": []}
        }}"#,
    );
    write(
        &root,
        "hooks/hooks.json",
        r#"{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]}]}}"#,
    );
    root
}

#[test]
fn a_plugin_becomes_a_gemini_extension() {
    let tmp = tempfile::tempdir().unwrap();
    let src = plugin(tmp.path(), r#"{"name": "My_Plugin", "description": "P"}"#);
    let dst = tmp.path().join("ext");
    let report = convert(&src, &dst, &Options::new(Target::Gemini)).unwrap();

    let command: toml::Table =
        toml::from_str(&fs::read_to_string(dst.join("commands/fix.toml")).unwrap()).unwrap();
    assert_eq!(command["description"].as_str(), Some("Fix it"));
    assert_eq!(
        command["prompt"].as_str(),
        Some("Fix {{args}}, starting with $1.\nContext: !`git status`")
    );
    assert_eq!(report.commands, ["fix"]);

    let ext: Json =
        serde_json::from_str(&fs::read_to_string(dst.join("gemini-extension.json")).unwrap())
            .unwrap();
    assert_eq!(ext["name"], "my-plugin");
    assert_eq!(ext["version"], "0.0.0");
    assert_eq!(ext["description"], "P");
    let servers = &ext["mcpServers"];
    assert_eq!(servers["local"]["command"], "${extensionPath}/bin/srv");
    assert_eq!(servers["local"]["args"][1], "${extensionPath}");
    assert_eq!(servers["events"]["url"], "https://example.invalid/sse");
    assert_eq!(servers["stream"]["httpUrl"], "https://example.invalid/mcp");
    assert!(servers["stream"].get("type").is_none());
    assert!(servers.get("broken").is_none());
    assert!(dst.join("agents/a.md").is_file());
    assert!(!dst.join("hooks").exists());

    let warnings = report.all_warnings().join("\n");
    for needle in [
        "command /fix: positional arguments",
        "command /fix: Claude's `` !`command` `` shell injection is `!{command}`",
        "MCP server `local`: `x-extra` dropped",
        "MCP server `broken` has neither `command` nor `url`",
        "hooks not converted: Gemini CLI extension hooks",
        "no `version`: wrote `0.0.0`",
    ] {
        assert!(warnings.contains(needle), "{needle}\n{warnings}");
    }
    let notes = report.notes.join("\n");
    assert!(notes.contains("`${CLAUDE_PLUGIN_ROOT}` in MCP servers became `${extensionPath}`"));
    assert!(notes.contains("extension name `My_Plugin` written as `my-plugin`"));
    // The text report lists the losses.
    let text = report.render_human();
    assert!(text.contains("  lost: `${CLAUDE_PLUGIN_ROOT}`"), "{text}");
    assert!(text.contains("warning: hooks not converted"), "{text}");
}

#[test]
fn a_plugin_becomes_a_kiro_agent_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let src = plugin(tmp.path(), r#"{"name": "p", "version": "1.0.0"}"#);
    let dst = tmp.path().join("kiro");
    let report = convert(&src, &dst, &Options::new(Target::Kiro)).unwrap();

    let agent: Json =
        serde_json::from_str(&fs::read_to_string(dst.join("agents/a.json")).unwrap()).unwrap();
    assert_eq!(agent["tools"], serde_json::json!(["read"]));
    assert_eq!(agent["prompt"], "Body");
    assert!(agent.get("allowedTools").is_none());

    let mcp: Json =
        serde_json::from_str(&fs::read_to_string(dst.join("settings/mcp.json")).unwrap()).unwrap();
    let servers = mcp["mcpServers"].as_object().unwrap();
    let names: Vec<&str> = servers.keys().map(String::as_str).collect();
    assert_eq!(names, ["local", "events", "stream"]);
    assert_eq!(servers["stream"]["url"], "https://example.invalid/mcp");
    assert!(servers["stream"].get("type").is_none());
    assert!(servers["events"].get("args").is_none());

    assert!(!dst.join("commands").exists());
    assert!(report.commands.is_empty());
    let warnings = report.all_warnings().join("\n");
    for needle in [
        "commands not converted: Kiro CLI agents have no slash-command files",
        "/fix",
        "hooks not converted: Kiro CLI hooks",
        "MCP server `local` uses ${CLAUDE_PLUGIN_ROOT}, which Kiro CLI does not set",
    ] {
        assert!(warnings.contains(needle), "{needle}\n{warnings}");
    }
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.contains("copy it to `.kiro/settings/mcp.json`"))
    );
}

#[test]
fn marketplace_is_refused_for_gemini_and_kiro() {
    let tmp = tempfile::tempdir().unwrap();
    let src = plugin(tmp.path(), r#"{"name": "p"}"#);
    for target in [Target::Gemini, Target::Kiro] {
        let options = Options {
            target,
            marketplace: Some("m".into()),
            force: false,
        };
        let err = convert(&src, &tmp.path().join("o"), &options)
            .unwrap_err()
            .to_string();
        assert!(err.contains("--marketplace applies to"), "{err}");
    }
}
