//! `toolgate convert` driven through the real binary: reports, JSON, and bad input (clear error on
//! stderr, non-zero exit, nothing written).
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(clippy::disallowed_methods)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value as Json;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../convert/tests/fixtures/ce-agents")
}

fn toolgate(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(args)
        .env("TOOLGATE_LOG", "warn")
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A Claude Code plugin with the 43 fixture agents.
fn make_plugin(dir: &Path) -> PathBuf {
    let root = dir.join("ce");
    fs::create_dir_all(root.join(".claude-plugin")).unwrap();
    fs::create_dir_all(root.join("agents")).unwrap();
    fs::write(
        root.join(".claude-plugin/plugin.json"),
        r#"{"name": "compound-engineering", "version": "2.0.0", "description": "CE agents"}"#,
    )
    .unwrap();
    let mut n = 0;
    for e in fs::read_dir(fixtures()).unwrap() {
        let p = e.unwrap().path();
        if p.file_name().unwrap().to_string_lossy().starts_with("ce-") {
            fs::copy(&p, root.join("agents").join(p.file_name().unwrap())).unwrap();
            n += 1;
        }
    }
    assert_eq!(n, 43);
    fs::copy(fixtures().join("LICENSE"), root.join("LICENSE")).unwrap();
    root
}

#[test]
fn converts_a_plugin_and_prints_a_report() {
    let tmp = tempfile::tempdir().unwrap();
    let src = make_plugin(tmp.path());
    let dst = tmp.path().join("out");
    let out = toolgate(&[
        "convert",
        "--from",
        "claude",
        "--to",
        "copilot",
        src.to_str().unwrap(),
        dst.to_str().unwrap(),
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(
        stdout.starts_with(&format!(
            "Converted plugin {} (plugin `compound-engineering`) -> copilot: 45 file(s) written to {}",
            src.display(),
            dst.display()
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains("agents: 43, skills: 0, commands: 0"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "ce-best-practices-researcher -> agents/ce-best-practices-researcher.agent.md: \
             [Read, Grep, Glob, Bash, WebFetch, WebSearch, mcp__context7__*] -> \
             [read, search, execute, web, context7/*]"
        ),
        "{stdout}"
    );
    // Issue 19 item 5: what the conversion cannot carry is in the text report. Agent bodies
    // that name Claude Code tools are found by scanning them.
    for line in [
        "warning: ce-best-practices-researcher: the body names the Claude Code tool `mcp__context7__query-docs`; on copilot it is `context7/query-docs`: edit the body",
        "warning: ce-pr-comment-resolver: the body names `CLAUDE.md`, which copilot does not read (it reads `.github/copilot-instructions.md` or `AGENTS.md`): edit the body",
    ] {
        assert!(stdout.contains(line), "{line}\n{stdout}");
    }
    assert!(
        stdout.contains("tool; copilot calls it `search`: edit the body"),
        "{stdout}"
    );
    // Each warning once.
    let warnings: Vec<&str> = stdout
        .lines()
        .filter(|l| l.trim_start().starts_with("warning: "))
        .collect();
    let unique: std::collections::BTreeSet<&&str> = warnings.iter().collect();
    assert_eq!(unique.len(), warnings.len(), "{stdout}");
    assert!(
        stdout.contains(&format!("{} warning(s):", warnings.len())),
        "{stdout}"
    );
    assert_eq!(fs::read_dir(dst.join("agents")).unwrap().count(), 43);
    assert!(dst.join("plugin.json").is_file());
}

#[test]
fn json_report_lists_every_agent_with_its_tools() {
    let tmp = tempfile::tempdir().unwrap();
    let src = make_plugin(tmp.path());
    let dst = tmp.path().join("out");
    let out = toolgate(&[
        "convert",
        "--to",
        "claude",
        "--marketplace",
        "ce-local",
        "--json",
        src.to_str().unwrap(),
        dst.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: Json = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["kind"], "plugin");
    assert_eq!(report["target"], "claude");
    assert_eq!(report["marketplace"], "ce-local");
    let agents = report["agents"].as_array().unwrap();
    assert_eq!(agents.len(), 43);
    let coherence = agents
        .iter()
        .find(|a| a["name"] == "ce-coherence-reviewer")
        .unwrap();
    assert_eq!(
        coherence["tools_out"],
        serde_json::json!(["Read", "Grep", "Glob"])
    );
    assert_eq!(
        coherence["output"],
        "plugins/compound-engineering/agents/ce-coherence-reviewer.md"
    );
    assert!(dst.join(".claude-plugin/marketplace.json").is_file());
    assert!(dst.join(".github/plugin/marketplace.json").is_file());
    assert!(
        dst.join("plugins/compound-engineering/.claude-plugin/plugin.json")
            .is_file()
    );
}

#[test]
fn converts_one_agent_file_into_a_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let dst = tmp.path().join("agents");
    let src = fixtures().join("ce-issue-intelligence-analyst.md");
    let out = toolgate(&[
        "convert",
        "--to",
        "vscode",
        src.to_str().unwrap(),
        dst.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let written = fs::read_to_string(dst.join("ce-issue-intelligence-analyst.agent.md")).unwrap();
    assert!(
        written.contains("\ntools: [read, search, execute, github/*]\n"),
        "{written}"
    );
}

#[test]
fn warnings_print_once_in_the_report_and_losses_are_listed() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("a.md");
    fs::write(
        &src,
        "---\nname: a\ndescription: d\ntools: Read, mcp__github__*, Frobnicate\n---\nBody\n",
    )
    .unwrap();
    let out = toolgate(&[
        "convert",
        "--to",
        "codex",
        src.to_str().unwrap(),
        tmp.path().join("out").to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    assert!(stdout.contains("2 warning(s):"), "{stdout}");
    assert!(
        stdout.contains("tool `mcp__github__*` dropped: codex agents cannot name MCP tools"),
        "{stdout}"
    );
    // Printed once: in the report, not again in the log.
    assert!(!stderr.contains("Frobnicate"), "{stderr}");
    assert_eq!(
        stdout.matches("Frobnicate").count(),
        2,
        "tool list and its warning: {stdout}"
    );
    // An expected loss (`model:`) is in the text report too, not only in --json.
    fs::write(
        &src,
        "---\nname: a\ndescription: d\nmodel: sonnet\ntools: Read\n---\nUse the Grep tool.\n",
    )
    .unwrap();
    let out = toolgate(&[
        "convert",
        "--to",
        "copilot",
        src.to_str().unwrap(),
        tmp.path().join("out2").to_str().unwrap(),
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains("    lost: `model: sonnet` dropped"),
        "{stdout}"
    );
    assert!(
        stdout.contains("warning: a: the body names Claude Code's `Grep` tool; copilot calls it `search`: edit the body"),
        "{stdout}"
    );
    assert!(!stdout.contains("(-)"), "{stdout}");
}

#[test]
fn malformed_frontmatter_exits_non_zero_naming_file_and_line_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let src = make_plugin(tmp.path());
    let bad = src.join("agents/ce-broken.md");
    fs::write(
        &bad,
        "---\nname: ce-broken\ndescription: @oops\n---\nBody\n",
    )
    .unwrap();
    let dst = tmp.path().join("out");
    let out = toolgate(&[
        "convert",
        "--to",
        "claude",
        src.to_str().unwrap(),
        dst.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.starts_with(&format!("error: {}:3:", bad.display())),
        "{stderr}"
    );
    assert!(stderr.contains("malformed YAML frontmatter"), "{stderr}");
    assert!(out.stdout.is_empty());
    assert!(!dst.exists());
    let mut left: Vec<String> = fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    left.sort();
    assert_eq!(left, ["ce"]);
}

#[test]
fn missing_plugin_json_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let src = make_plugin(tmp.path());
    fs::remove_file(src.join(".claude-plugin/plugin.json")).unwrap();
    let dst = tmp.path().join("out");
    let out = toolgate(&[
        "convert",
        "--to",
        "copilot",
        src.to_str().unwrap(),
        dst.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(".claude-plugin/plugin.json is missing"),
        "{stderr}"
    );
    assert!(!dst.exists());
}

#[test]
fn unknown_target_is_refused_by_the_argument_parser() {
    let tmp = tempfile::tempdir().unwrap();
    let dst = tmp.path().join("out");
    let out = toolgate(&[
        "convert",
        "--to",
        "cursor",
        fixtures().to_str().unwrap(),
        dst.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(
            "unknown target `cursor`; expected one of: copilot, vscode, opencode, codex, gemini, kiro, claude"
        ),
        "{stderr}"
    );
    assert!(!dst.exists());
}

#[test]
fn an_existing_destination_needs_force() {
    let tmp = tempfile::tempdir().unwrap();
    let src = make_plugin(tmp.path());
    let dst = tmp.path().join("out");
    fs::create_dir(&dst).unwrap();
    fs::write(dst.join("keep.txt"), "x").unwrap();
    let args = |force: bool| {
        let mut v = vec![
            "convert".to_string(),
            "--to".into(),
            "opencode".into(),
            src.display().to_string(),
            dst.display().to_string(),
        ];
        if force {
            v.push("--force".into());
        }
        v
    };
    let a = args(false);
    let out = toolgate(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("already exists"),
        "{}",
        text(&out.stderr)
    );
    assert!(dst.join("keep.txt").is_file());
    let a = args(true);
    let out = toolgate(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!dst.join("keep.txt").exists());
    assert_eq!(fs::read_dir(dst.join("agents")).unwrap().count(), 43);
}

#[test]
fn from_copilot_converts_back_to_claude_and_reports_losses() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("reviewer.agent.md");
    fs::write(
        &src,
        "---\nname: reviewer\ndescription: Reviews code\ntools: [read, search, execute, github/get_issue, frob]\nmodel: Claude Sonnet 4.5 (copilot)\nhandoffs: []\n---\nReview with #tool:codebase; follow AGENTS.md.\n",
    )
    .unwrap();
    let dst = tmp.path().join("out");
    let out = toolgate(&[
        "convert",
        "--from",
        "copilot",
        "--to",
        "claude",
        src.to_str().unwrap(),
        dst.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let written = fs::read_to_string(dst.join("reviewer.md")).unwrap();
    assert!(
        written.contains("tools: Read, Grep, Glob, Bash, mcp__github__get_issue"),
        "{written}"
    );
    let report = text(&out.stdout);
    assert!(report.contains("tool `frob` dropped"), "{report}");
    assert!(
        report.contains("lost: `model: Claude Sonnet 4.5 (copilot)` dropped"),
        "{report}"
    );
    assert!(report.contains("lost: `handoffs` dropped"), "{report}");
    assert!(
        report.starts_with("Converted copilot agent file"),
        "{report}"
    );
    assert!(
        report.contains("`#codebase`; Claude Code calls it `Grep / Glob`"),
        "{report}"
    );
    assert!(
        report.contains("`AGENTS.md`, which Claude Code does not read"),
        "{report}"
    );
    // --from copilot only converts to Claude Code.
    let out = toolgate(&[
        "convert",
        "--from",
        "copilot",
        "--to",
        "vscode",
        src.to_str().unwrap(),
        tmp.path().join("o2").to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("--to claude"),
        "{}",
        text(&out.stderr)
    );
}

/// Issue 19 item 5: Gemini CLI and Kiro CLI as targets, through the binary: the hosts' own tool
/// names, the plugin layouts, and the losses in the text report.
#[test]
fn converts_to_gemini_and_kiro() {
    let tmp = tempfile::tempdir().unwrap();
    let src = make_plugin(tmp.path());
    let dst = tmp.path().join("gemini");
    let out = toolgate(&[
        "convert",
        "--to",
        "gemini-cli",
        src.to_str().unwrap(),
        dst.to_str().unwrap(),
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(
        stdout.contains(
            "ce-best-practices-researcher -> agents/ce-best-practices-researcher.md: \
             [Read, Grep, Glob, Bash, WebFetch, WebSearch, mcp__context7__*] -> \
             [read_file, grep_search, glob, run_shell_command, web_fetch, google_web_search, mcp_context7_*]"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "the body names `CLAUDE.md`, which gemini does not read (it reads `GEMINI.md`)"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("lost: `model: sonnet` dropped: Gemini CLI runs Gemini models"),
        "{stdout}"
    );
    let ext: Json =
        serde_json::from_str(&fs::read_to_string(dst.join("gemini-extension.json")).unwrap())
            .unwrap();
    assert_eq!(ext["name"], "compound-engineering");

    let dst = tmp.path().join("kiro");
    let out = toolgate(&[
        "convert",
        "--to",
        "kiro",
        "--json",
        src.to_str().unwrap(),
        dst.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: Json = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["target"], "kiro");
    assert_eq!(report["agents"].as_array().unwrap().len(), 43);
    let agent: Json = serde_json::from_str(
        &fs::read_to_string(dst.join("agents/ce-issue-intelligence-analyst.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        agent["tools"],
        serde_json::json!(["read", "grep", "glob", "shell", "@github"])
    );
    assert!(agent["prompt"].as_str().unwrap().len() > 100);
}

/// The lines of `stdout` that belong to the agent `name` (its line and the indented lines below).
fn agent_block<'a>(stdout: &'a str, name: &str) -> Vec<&'a str> {
    let head = format!("  {name} -> ");
    let mut lines = stdout.lines().skip_while(|l| !l.starts_with(&head));
    let mut block: Vec<&str> = lines.next().into_iter().collect();
    block.extend(lines.take_while(|l| l.starts_with("    ")));
    block
}

/// Issue 33 item 6: each loss is printed once per agent (not as "dropped keys: color" and again
/// as "lost: `color` dropped"), the report closes with a count, and a `Next:` line says how to
/// install the result, as `toolgate install` does.
#[test]
fn each_loss_prints_once_per_agent_with_a_closing_count_and_a_next_line() {
    let tmp = tempfile::tempdir().unwrap();
    let dst = tmp.path().join("out");
    let out = toolgate(&[
        "convert",
        "--to",
        "copilot",
        fixtures().to_str().unwrap(),
        dst.to_str().unwrap(),
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    let block = agent_block(&stdout, "ce-adversarial-reviewer");
    assert_eq!(
        block[1..],
        ["    lost: `color` dropped: copilot agents have no equivalent"],
        "{stdout}"
    );
    assert!(!stdout.contains("dropped keys:"), "{stdout}");
    // The closing count agrees with the `lost:` lines above it.
    let lost = stdout
        .lines()
        .filter(|l| l.starts_with("    lost: "))
        .count();
    let mut agents_with_losses = 0;
    let mut in_agent_with_loss = false;
    for l in stdout.lines() {
        if l.starts_with("  ") && !l.starts_with("    ") {
            in_agent_with_loss = false;
        } else if l.starts_with("    lost: ") && !in_agent_with_loss {
            in_agent_with_loss = true;
            agents_with_losses += 1;
        }
    }
    assert!(lost > 0 && agents_with_losses > 0);
    let closing = format!("Converted 43 agents; {lost} losses in {agents_with_losses} of them");
    assert!(stdout.contains(&closing), "{closing}\n{stdout}");
    assert!(
        stdout.ends_with(&format!(
            "Next: mkdir -p .github/agents && cp {}/*.agent.md .github/agents/\nthen restart the session.\n",
            dst.display()
        )),
        "{stdout}"
    );

    // A plugin: the host's own install command, and a marketplace's two.
    let src = make_plugin(tmp.path());
    let dst = tmp.path().join("plugin-out");
    let out = toolgate(&[
        "convert",
        "--to",
        "copilot",
        src.to_str().unwrap(),
        dst.to_str().unwrap(),
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.ends_with(&format!(
            "Next: copilot plugin install {}\nthen restart the session.\n",
            dst.display()
        )),
        "{stdout}"
    );
    let dst = tmp.path().join("market-out");
    let out = toolgate(&[
        "convert",
        "--to",
        "claude",
        "--marketplace",
        "ce-local",
        src.to_str().unwrap(),
        dst.to_str().unwrap(),
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.ends_with(&format!(
            "Next: claude plugin marketplace add {}\n      claude plugin install compound-engineering@ce-local\nthen restart the session.\n",
            dst.display()
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains("Converted 43 agents; nothing lost"),
        "{stdout}"
    );
    let dst = tmp.path().join("gemini-out");
    let out = toolgate(&[
        "convert",
        "--to",
        "gemini",
        src.to_str().unwrap(),
        dst.to_str().unwrap(),
    ]);
    let stdout = text(&out.stdout);
    assert!(
        stdout.ends_with(&format!(
            "Next: gemini extensions link {}\nthen restart the session.\n",
            dst.display()
        )),
        "{stdout}"
    );
}

/// Issue 33 item 6: a Codex agent TOML has no tool list, so the report names no Codex tools
/// for it: what the report lists is checked against the TOML actually written.
#[test]
fn codex_report_lists_no_tools_the_written_toml_does_not_hold() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("a.md");
    fs::write(
        &src,
        "---\nname: a\ndescription: d\ntools: Read, Grep, WebFetch\n---\nBody\n",
    )
    .unwrap();
    let dst = tmp.path().join("out");
    let out = toolgate(&[
        "convert",
        "--to",
        "codex",
        "--json",
        src.to_str().unwrap(),
        dst.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: Json = serde_json::from_slice(&out.stdout).unwrap();
    let written = fs::read_to_string(dst.join("a.toml")).unwrap();
    // The TOML's keys: every line `key = …` before the (multi-line) instructions.
    let keys: Vec<&str> = written
        .lines()
        .take_while(|l| !l.starts_with("developer_instructions = "))
        .filter_map(|l| l.split_once(" = ").map(|(k, _)| k))
        .collect();
    assert_eq!(keys, ["name", "description", "sandbox_mode"], "{written}");
    assert!(
        written.contains("\nsandbox_mode = \"read-only\"\n"),
        "{written}"
    );
    // Every tool the report lists is in the TOML; the TOML has no tool list, so none is.
    let agent = &report["agents"][0];
    assert_eq!(agent["tools_out"], Json::Null, "{agent}");
    assert_eq!(
        agent["tools_in"],
        serde_json::json!(["Read", "Grep", "WebFetch"])
    );

    let out = toolgate(&[
        "convert",
        "--to",
        "codex",
        src.to_str().unwrap(),
        tmp.path().join("out2").to_str().unwrap(),
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let block = agent_block(&stdout, "a");
    assert_eq!(
        block[0], "  a -> a.toml: [Read, Grep, WebFetch] -> no tool list written",
        "{stdout}"
    );
    assert!(
        block[1..]
            .iter()
            .any(|l| l.starts_with("    lost: `tools` not written: Codex agents have no tool list")),
        "{stdout}"
    );
    assert!(!stdout.contains("[read, search, web]"), "{stdout}");
}
