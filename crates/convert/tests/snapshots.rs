//! Snapshots of converted files per target: real agents (frontmatter in full, body abbreviated —
//! bodies are compared byte for byte in `ce_agents.rs`) and a small synthetic plugin with a
//! command, a skill, MCP servers, hooks and an agent with hard-to-quote strings. Gemini CLI and
//! Kiro CLI have their own snapshots (`gemini__*`, `kiro__*`, `plugin__gemini`, `plugin__kiro`);
//! adding them left every other target's snapshot as it was.
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(clippy::disallowed_methods)]

mod common;

use std::fs;
use std::path::Path;

use common::fixtures_dir;
use toolgate_convert::{Options, Target, convert, parse_agent};

fn abbreviate(content: &str) -> String {
    // Kiro's JSON: every key as written, the inline `prompt` cut to its first 4 lines.
    if content.starts_with('{') {
        let mut v: serde_json::Value = serde_json::from_str(content).unwrap();
        let prompt = v["prompt"].as_str().unwrap().to_string();
        let lines: Vec<&str> = prompt.lines().collect();
        let shown = lines.len().min(4);
        v["prompt"] = serde_json::Value::String(format!(
            "{}\n[… {} more prompt lines, verbatim …]",
            lines[..shown].join("\n"),
            lines.len() - shown
        ));
        return serde_json::to_string_pretty(&v).unwrap() + "\n";
    }
    // Keep the header (frontmatter, or TOML keys before the instructions) and 3 body lines.
    let (head, body) = if let Some(rest) = content.strip_prefix("---\n") {
        let end = rest.find("\n---\n").unwrap() + 5;
        (&content[..4 + end], &rest[end..])
    } else {
        let i = content.find("developer_instructions").unwrap();
        (&content[..i], &content[i..])
    };
    let lines: Vec<&str> = body.lines().collect();
    let shown = lines.len().min(4);
    format!(
        "{head}{}\n[… {} more body lines, verbatim …]\n",
        lines[..shown].join("\n"),
        lines.len() - shown
    )
}

#[test]
fn real_agents_per_target() {
    for name in [
        "ce-ankane-readme-writer",      // no tools, color, model inherit
        "ce-api-contract-reviewer",     // + Write, color
        "ce-framework-docs-researcher", // web + mcp__context7__*
        "ce-design-lens-reviewer",      // model sonnet
    ] {
        let path = fixtures_dir().join(format!("{name}.md"));
        let agent = parse_agent(&path, &fs::read_to_string(&path).unwrap()).unwrap();
        for target in Target::ALL {
            let out = agent.convert(target).unwrap();
            let snapshot = format!("# {}\n{}", out.file_name, abbreviate(&out.content));
            insta::assert_snapshot!(format!("{target}__{name}"), snapshot);
        }
    }
}

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, text).unwrap();
}

/// A small plugin exercising every component.
fn sample_plugin(dir: &Path) -> std::path::PathBuf {
    let root = dir.join("sample");
    write(
        &root,
        ".claude-plugin/plugin.json",
        r#"{"name": "sample", "version": "1.2.3", "description": "Sample plugin", "author": {"name": "Test"}, "outputStyles": "./styles"}"#,
    );
    write(
        &root,
        "agents/Tricky Agent.md",
        "---\nname: Tricky Agent\ndescription: \"@mention first: `code`, a #hash and: colons — ünïcode\"\n\
         model: opus\ntools: [Read, Edit, \"Bash(git:*)\", Task, TodoWrite, mcp__github__get_issue, Skill]\n\
         color: red\npermissionMode: plan\nx-owner: \"@team\"\n---\n\nDo tricky things.\n",
    );
    write(
        &root,
        "agents/plain.md",
        "---\nname: plain\ndescription: A plain agent\n---\nPlain body.\n",
    );
    write(
        &root,
        "commands/review.md",
        "---\ndescription: \"Review: the diff\"\nargument-hint: \"[pr]\"\nallowed-tools: Read, Bash(git diff:*)\n---\n\nReview $ARGUMENTS.\n",
    );
    write(
        &root,
        "skills/summarise/SKILL.md",
        "---\nname: summarise\ndescription: Summarise a file\n---\n\nSummarise it.\n",
    );
    write(
        &root,
        "skills/summarise/scripts/helper.sh",
        "#!/bin/sh\necho hi\n",
    );
    write(
        &root,
        ".mcp.json",
        r#"{"mcpServers": {"github": {"command": "gh-mcp", "args": ["--stdio"], "env": {"TOKEN": "${GITHUB_TOKEN}"}}, "docs": {"type": "http", "url": "https://example.invalid/mcp", "headers": {"X-Key": "k"}}}}"#,
    );
    write(
        &root,
        "hooks/hooks.json",
        r#"{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]}]}}"#,
    );
    write(&root, "README.md", "# Sample\n");
    root
}

fn tree_snapshot(dst: &Path, report: &toolgate_convert::Report) -> String {
    let mut s = String::new();
    for f in &report.files {
        s.push_str(&format!("== {f}\n"));
        let text = fs::read_to_string(dst.join(f)).unwrap();
        s.push_str(&text);
        if !text.ends_with('\n') {
            s.push('\n');
        }
    }
    s.push_str("== report warnings\n");
    for w in report.all_warnings() {
        s.push_str(&format!("{w}\n"));
    }
    s
}

#[test]
fn sample_plugin_per_target() {
    let tmp = tempfile::tempdir().unwrap();
    let src = sample_plugin(tmp.path());
    for target in Target::ALL {
        let dst = tmp.path().join(format!("out-{target}"));
        let report = convert(&src, &dst, &Options::new(target)).unwrap();
        insta::assert_snapshot!(format!("plugin__{target}"), tree_snapshot(&dst, &report));
    }
}

/// Gemini CLI and Kiro CLI: every expected loss (`lost:` in the text report) of the sample
/// plugin, plugin-level and per agent.
#[test]
fn sample_plugin_losses_for_gemini_and_kiro() {
    let tmp = tempfile::tempdir().unwrap();
    let src = sample_plugin(tmp.path());
    for target in [Target::Gemini, Target::Kiro] {
        let report = toolgate_convert::plan(&src, &Options::new(target))
            .unwrap()
            .report;
        let mut s = String::new();
        for n in &report.notes {
            s.push_str(&format!("{n}\n"));
        }
        for a in &report.agents {
            for n in &a.notes {
                s.push_str(&format!("{}: {n}\n", a.name));
            }
        }
        insta::assert_snapshot!(format!("losses__{target}"), s);
    }
}

#[test]
fn sample_plugin_as_a_claude_marketplace() {
    let tmp = tempfile::tempdir().unwrap();
    let src = sample_plugin(tmp.path());
    let dst = tmp.path().join("market");
    let options = Options {
        target: Target::Claude,
        marketplace: Some("local-test".into()),
        force: false,
    };
    let report = convert(&src, &dst, &options).unwrap();
    let listing = report.files.join("\n");
    let market = fs::read_to_string(dst.join(".claude-plugin/marketplace.json")).unwrap();
    assert_eq!(
        market,
        fs::read_to_string(dst.join(".github/plugin/marketplace.json")).unwrap()
    );
    insta::assert_snapshot!(
        "marketplace__claude",
        format!("{listing}\n== marketplace.json\n{market}")
    );
}
