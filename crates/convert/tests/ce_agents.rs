//! The 43 real Compound Engineering agents convert to VS Code and Copilot with exactly the tool
//! sets of the reference's acceptance table (§7.3), none dropped, and every converted file — for
//! every target — parses back with an independent YAML parser.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::fs;

use common::{fixture_agents, fixtures_dir, judge_yaml, make_ce_plugin, raw_frontmatter};
use serde_json::{Value as Json, json};
use toolgate_convert::{Options, SourceKind, Target, convert, parse_agent, plan};

/// Source `tools` groups of the LAST-AGENTS population and what VS Code / Copilot must get.
struct Group {
    source: Option<&'static [&'static str]>,
    expected: Option<&'static [&'static str]>,
    members: &'static [&'static str],
}

const RGGB: &[&str] = &["Read", "Grep", "Glob", "Bash"];

const GROUPS: &[Group] = &[
    Group {
        source: Some(RGGB),
        expected: Some(&["read", "search", "execute"]),
        members: &[
            "ce-adversarial-document-reviewer",
            "ce-design-lens-reviewer",
            "ce-feasibility-reviewer",
            "ce-product-lens-reviewer",
            "ce-scope-guardian-reviewer",
            "ce-security-lens-reviewer",
            "ce-git-history-analyzer",
            "ce-learnings-researcher",
            "ce-repo-research-analyst",
            "ce-agent-native-reviewer",
            "ce-architecture-strategist",
            "ce-code-simplicity-reviewer",
            "ce-data-integrity-guardian",
            "ce-deployment-verification-agent",
            "ce-pattern-recognition-specialist",
            "ce-performance-oracle",
            "ce-security-sentinel",
            "ce-spec-flow-analyzer",
        ],
    },
    Group {
        source: Some(&["Read", "Grep", "Glob", "Bash", "Write"]),
        expected: Some(&["read", "search", "execute", "edit"]),
        members: &[
            "ce-adversarial-reviewer",
            "ce-api-contract-reviewer",
            "ce-correctness-reviewer",
            "ce-data-migration-reviewer",
            "ce-julik-frontend-races-reviewer",
            "ce-maintainability-reviewer",
            "ce-performance-reviewer",
            "ce-previous-comments-reviewer",
            "ce-project-standards-reviewer",
            "ce-reliability-reviewer",
            "ce-security-reviewer",
            "ce-swift-ios-reviewer",
            "ce-testing-reviewer",
        ],
    },
    Group {
        source: Some(&["Read", "Grep", "Glob"]),
        expected: Some(&["read", "search"]),
        members: &["ce-coherence-reviewer"],
    },
    Group {
        source: Some(&[
            "Read",
            "Grep",
            "Glob",
            "Bash",
            "WebFetch",
            "WebSearch",
            "mcp__context7__*",
        ]),
        // MCP tool references are mapped (the reference's "plus `context7/*`" option).
        expected: Some(&["read", "search", "execute", "web", "context7/*"]),
        members: &[
            "ce-best-practices-researcher",
            "ce-framework-docs-researcher",
        ],
    },
    Group {
        source: Some(&["Read", "Grep", "Glob", "Bash", "mcp__github__*"]),
        expected: Some(&["read", "search", "execute", "github/*"]),
        members: &["ce-issue-intelligence-analyst"],
    },
    Group {
        source: None,
        expected: None,
        members: &[
            "ce-ankane-readme-writer",
            "ce-design-implementation-reviewer",
            "ce-design-iterator",
            "ce-figma-design-sync",
            "ce-pr-comment-resolver",
            "ce-session-historian",
            "ce-slack-researcher",
            "ce-web-researcher",
        ],
    },
];

fn expected_by_name() -> BTreeMap<&'static str, &'static Group> {
    let mut m = BTreeMap::new();
    for g in GROUPS {
        for name in g.members {
            assert!(m.insert(*name, g).is_none(), "{name} listed twice");
        }
    }
    m
}

#[test]
fn the_table_covers_exactly_the_43_fixtures_with_the_reference_counts() {
    let table = expected_by_name();
    assert_eq!(table.len(), 43);
    let counts: Vec<usize> = GROUPS.iter().map(|g| g.members.len()).collect();
    assert_eq!(counts, [18, 13, 1, 2, 1, 8]);
    let files: Vec<String> = fixture_agents()
        .iter()
        .map(|p| p.file_stem().unwrap().to_string_lossy().to_string())
        .collect();
    assert_eq!(files.len(), 43);
    assert_eq!(
        files,
        table.keys().map(|s| (*s).to_string()).collect::<Vec<_>>()
    );
}

#[test]
fn every_fixture_declares_the_tools_its_group_says() {
    let table = expected_by_name();
    for path in fixture_agents() {
        let text = fs::read_to_string(&path).unwrap();
        let agent = parse_agent(&path, &text).unwrap();
        let group = table[agent.name.as_str()];
        let declared: Option<Vec<&str>> = agent
            .tools
            .as_ref()
            .map(|t| t.iter().map(String::as_str).collect());
        assert_eq!(declared.as_deref(), group.source, "{}", agent.name);
    }
}

fn frontmatter_json(text: &str) -> Json {
    let (yaml, _) = raw_frontmatter(text);
    judge_yaml(yaml)
}

#[test]
fn vscode_and_copilot_get_exactly_the_expected_tool_sets() {
    let table = expected_by_name();
    for target in [Target::Vscode, Target::Copilot] {
        for path in fixture_agents() {
            let text = fs::read_to_string(&path).unwrap();
            let agent = parse_agent(&path, &text).unwrap();
            let out = agent.convert(target).unwrap();
            let group = table[agent.name.as_str()];
            assert_eq!(out.file_name, format!("{}.agent.md", agent.name));
            let fm = frontmatter_json(&out.content);
            let expected = group.expected.map(|e| json!(e));
            assert_eq!(
                fm.get("tools").cloned(),
                expected,
                "{target} {}: {}",
                agent.name,
                out.content.lines().take(8).collect::<Vec<_>>().join("\n")
            );
            // No raw model alias, no color, nothing but what the host reads.
            assert!(fm.get("model").is_none(), "{}", agent.name);
            assert!(fm.get("color").is_none(), "{}", agent.name);
            assert_eq!(fm["name"], json!(agent.name));
            assert_eq!(fm["description"], json!(agent.description.clone().unwrap()));
            assert!(
                out.report.dropped_tools.is_empty(),
                "{:?}",
                out.report.dropped_tools
            );
            // Only the body scan may warn: the frontmatter converts without loss.
            let other: Vec<&String> = out
                .report
                .warnings
                .iter()
                .filter(|w| !w.starts_with("the body names "))
                .collect();
            assert!(other.is_empty(), "{other:?}");
        }
    }
}

/// Issue 19 item 5: agent bodies that tell the model to use Claude Code's tool names are found
/// by scanning them; each name once, with the target's name for it.
#[test]
fn body_references_to_claude_tool_names_are_reported() {
    let path = fixtures_dir().join("ce-best-practices-researcher.md");
    let agent = parse_agent(&path, &fs::read_to_string(&path).unwrap()).unwrap();
    let out = agent.convert(Target::Copilot).unwrap();
    let found: Vec<&str> = out
        .report
        .warnings
        .iter()
        .filter_map(|w| w.strip_prefix("the body names "))
        .collect();
    assert_eq!(
        found,
        [
            "the Claude Code tool `mcp__context7__resolve-library-id`; on copilot it is `context7/resolve-library-id`: edit the body",
            "the Claude Code tool `mcp__context7__query-docs`; on copilot it is `context7/query-docs`: edit the body",
            "Claude Code's `Glob` tool; copilot calls it `search`: edit the body",
            "Claude Code's `Grep` tool; copilot calls it `search`: edit the body",
            "Claude Code's `Read` tool; copilot calls it `read`: edit the body",
        ]
    );
    // Codex cannot name MCP tools; Claude keeps the names as they are (no warning).
    let codex = agent.convert(Target::Codex).unwrap();
    assert!(
        codex
            .report
            .warnings
            .iter()
            .any(|w| w.contains("`mcp__context7__query-docs`, which codex agents cannot name")),
        "{:?}",
        codex.report.warnings
    );
    let claude = agent.convert(Target::Claude).unwrap();
    assert!(
        !claude
            .report
            .warnings
            .iter()
            .any(|w| w.starts_with("the body names"))
    );
    // Plain words are not tool names: "Read the docs", "a Task list", "Bashful".
    let plain = toolgate_convert::agent::body_references(
        "Read the docs. A Task list. Bashful. Use Grep, then `Edit`. See CLAUDE.md.",
        Target::Copilot,
    );
    assert_eq!(plain.len(), 2, "{plain:?}");
    assert!(
        plain[0].contains("`Edit`") && plain[1].contains("CLAUDE.md"),
        "{plain:?}"
    );
}

#[test]
fn the_whole_plugin_converts_with_none_dropped_for_each_plugin_target() {
    let tmp = tempfile::tempdir().unwrap();
    let src = make_ce_plugin(tmp.path());
    let table = expected_by_name();
    for target in [Target::Copilot, Target::Vscode] {
        let dst = tmp.path().join(format!("out-{target}"));
        let report = convert(&src, &dst, &Options::new(target)).unwrap();
        assert_eq!(report.kind, SourceKind::Plugin);
        assert_eq!(report.agents.len(), 43);
        let mut written: Vec<String> = fs::read_dir(dst.join("agents"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
            .collect();
        written.sort();
        let want: Vec<String> = table.keys().map(|n| format!("{n}.agent.md")).collect();
        assert_eq!(written, want);
        for a in &report.agents {
            let expected: Option<Vec<String>> = table[a.name.as_str()]
                .expected
                .map(|e| e.iter().map(|s| (*s).to_string()).collect());
            assert_eq!(a.tools_out, expected, "{}", a.name);
        }
        let manifest: Json =
            serde_json::from_str(&fs::read_to_string(dst.join("plugin.json")).unwrap()).unwrap();
        assert_eq!(manifest["name"], "compound-engineering");
        assert!(dst.join("LICENSE").is_file() && dst.join("NOTICE.md").is_file());
        let other: Vec<String> = report
            .all_warnings()
            .into_iter()
            .filter(|w| !w.contains(": the body names "))
            .collect();
        assert!(other.is_empty(), "{other:?}");
    }
}

#[test]
fn the_fixture_directory_converts_as_an_agents_directory_skipping_the_notice() {
    let report = plan(&fixtures_dir(), &Options::new(Target::Vscode))
        .unwrap()
        .report;
    assert_eq!(report.kind, SourceKind::AgentDirectory);
    assert_eq!(report.agents.len(), 43);
    assert_eq!(report.warnings.len(), 1, "{:?}", report.warnings);
    assert!(report.warnings[0].contains("NOTICE.md: skipped: no YAML frontmatter"));
}

/// Every target's output for every agent parses back with yaml-rust2 (Markdown targets) or a
/// TOML parser (Codex), and keeps the description and body exactly.
#[test]
fn every_output_parses_back_with_an_independent_parser() {
    for target in Target::ALL {
        for path in fixture_agents() {
            let text = fs::read_to_string(&path).unwrap();
            let agent = parse_agent(&path, &text).unwrap();
            let out = agent.convert(target).unwrap();
            let description = json!(agent.description.clone().unwrap());
            if target == Target::Codex {
                let t: toml::Table = toml::from_str(&out.content).unwrap();
                assert_eq!(t["description"].as_str(), description.as_str());
                assert_eq!(
                    t["developer_instructions"].as_str().unwrap(),
                    agent.body.trim()
                );
                continue;
            }
            if target == Target::Kiro {
                assert_kiro_agent(&out.content, &agent);
                continue;
            }
            let (yaml, body) = raw_frontmatter(&out.content);
            let judged = judge_yaml(yaml);
            assert_eq!(
                judged["description"], description,
                "{target} {}",
                agent.name
            );
            assert_eq!(body, agent.body, "{target} {}", agent.name);
            // The converter's own parser reads the same values.
            let ours = toolgate_convert::frontmatter::parse_document(&path, &out.content)
                .unwrap()
                .frontmatter
                .unwrap();
            assert_eq!(
                common::ours_as_json(&ours),
                judged,
                "{target} {}",
                agent.name
            );
        }
    }
}

/// A Kiro CLI agent as JSON with the types of kiro.dev's configuration reference: strings for
/// `name`, `description` and `prompt` (the body, inline), an array of strings for `tools`, and no
/// `allowedTools` (Claude's `tools` grants tools, it does not pre-approve them).
fn assert_kiro_agent(content: &str, agent: &toolgate_convert::Agent) {
    let v: Json =
        serde_json::from_str(content).unwrap_or_else(|e| panic!("not JSON ({e}): {content}"));
    let o = v.as_object().expect("a JSON object");
    assert_eq!(o["name"], json!(agent.name), "{}", agent.name);
    assert_eq!(o["description"], json!(agent.description.clone().unwrap()));
    assert_eq!(o["prompt"].as_str().unwrap(), agent.body.trim());
    let tools = o["tools"].as_array().expect("tools is an array");
    assert!(tools.iter().all(Json::is_string), "{tools:?}");
    assert!(!o.contains_key("allowedTools"));
    assert!(!o.contains_key("model"));
    for key in o.keys() {
        assert!(
            ["name", "description", "prompt", "tools", "mcpServers"].contains(&key.as_str()),
            "unexpected key {key}"
        );
    }
}

/// The acceptance table for Gemini CLI and Kiro CLI: each group's tools in the hosts' own names.
#[test]
fn gemini_and_kiro_get_their_own_tool_names() {
    let table = expected_by_name();
    for path in fixture_agents() {
        let text = fs::read_to_string(&path).unwrap();
        let agent = parse_agent(&path, &text).unwrap();
        let group = table[agent.name.as_str()];
        let gemini = agent.convert(Target::Gemini).unwrap();
        let kiro = agent.convert(Target::Kiro).unwrap();
        assert_eq!(gemini.file_name, format!("{}.md", agent.name));
        assert_eq!(kiro.file_name, format!("{}.json", agent.name));
        let (want_gemini, want_kiro): (Option<&[&str]>, &[&str]) = match group.source {
            None => (None, &["*"]),
            Some(src) if src == RGGB => (
                Some(&["read_file", "grep_search", "glob", "run_shell_command"]),
                &["read", "grep", "glob", "shell"],
            ),
            Some(["Read", "Grep", "Glob", "Bash", "Write"]) => (
                Some(&[
                    "read_file",
                    "grep_search",
                    "glob",
                    "run_shell_command",
                    "write_file",
                ]),
                &["read", "grep", "glob", "shell", "write"],
            ),
            Some(["Read", "Grep", "Glob"]) => (
                Some(&["read_file", "grep_search", "glob"]),
                &["read", "grep", "glob"],
            ),
            Some(
                [
                    "Read",
                    "Grep",
                    "Glob",
                    "Bash",
                    "WebFetch",
                    "WebSearch",
                    "mcp__context7__*",
                ],
            ) => (
                Some(&[
                    "read_file",
                    "grep_search",
                    "glob",
                    "run_shell_command",
                    "web_fetch",
                    "google_web_search",
                    "mcp_context7_*",
                ]),
                &[
                    "read",
                    "grep",
                    "glob",
                    "shell",
                    "web_fetch",
                    "web_search",
                    "@context7",
                ],
            ),
            Some(["Read", "Grep", "Glob", "Bash", "mcp__github__*"]) => (
                Some(&[
                    "read_file",
                    "grep_search",
                    "glob",
                    "run_shell_command",
                    "mcp_github_*",
                ]),
                &["read", "grep", "glob", "shell", "@github"],
            ),
            Some(other) => panic!("a group without an expectation: {other:?}"),
        };
        let fm = frontmatter_json(&gemini.content);
        assert_eq!(
            fm.get("tools").cloned(),
            want_gemini.map(|w| json!(w)),
            "{}",
            agent.name
        );
        assert!(
            fm.get("model").is_none() && fm.get("color").is_none(),
            "{}",
            agent.name
        );
        let k: Json = serde_json::from_str(&kiro.content).unwrap();
        assert_eq!(k["tools"], json!(want_kiro), "{}", agent.name);
        for out in [&gemini, &kiro] {
            assert!(
                out.report.dropped_tools.is_empty(),
                "{:?}",
                out.report.dropped_tools
            );
            let other: Vec<&String> = out
                .report
                .warnings
                .iter()
                .filter(|w| !w.starts_with("the body names "))
                .collect();
            assert!(other.is_empty(), "{other:?}");
        }
    }
}

/// Body scan for Gemini CLI and Kiro CLI: the hosts' own names for Claude's tools, MCP tools and
/// instruction file.
#[test]
fn body_references_name_the_gemini_and_kiro_tools() {
    let path = fixtures_dir().join("ce-best-practices-researcher.md");
    let agent = parse_agent(&path, &fs::read_to_string(&path).unwrap()).unwrap();
    let found = |target| -> Vec<String> {
        agent
            .convert(target)
            .unwrap()
            .report
            .warnings
            .into_iter()
            .filter_map(|w| w.strip_prefix("the body names ").map(str::to_string))
            .collect()
    };
    assert_eq!(
        found(Target::Gemini),
        [
            "the Claude Code tool `mcp__context7__resolve-library-id`; on gemini it is `mcp_context7_resolve-library-id`: edit the body",
            "the Claude Code tool `mcp__context7__query-docs`; on gemini it is `mcp_context7_query-docs`: edit the body",
            "Claude Code's `Glob` tool; gemini calls it `glob`: edit the body",
            "Claude Code's `Grep` tool; gemini calls it `grep_search`: edit the body",
            "Claude Code's `Read` tool; gemini calls it `read_file`: edit the body",
        ]
    );
    assert_eq!(
        found(Target::Kiro),
        [
            "the Claude Code tool `mcp__context7__resolve-library-id`; on kiro it is `@context7/resolve-library-id`: edit the body",
            "the Claude Code tool `mcp__context7__query-docs`; on kiro it is `@context7/query-docs`: edit the body",
            "Claude Code's `Glob` tool; kiro calls it `glob`: edit the body",
            "Claude Code's `Grep` tool; kiro calls it `grep`: edit the body",
            "Claude Code's `Read` tool; kiro calls it `read`: edit the body",
        ]
    );
    let gemini = toolgate_convert::agent::body_references(
        "Use the Task tool. See CLAUDE.md.",
        Target::Gemini,
    );
    assert_eq!(
        gemini,
        [
            "the body names Claude Code's `Task` tool, which gemini does not have: edit the body",
            "the body names `CLAUDE.md`, which gemini does not read (it reads `GEMINI.md`): edit the body",
        ]
    );
    let kiro =
        toolgate_convert::agent::body_references("Use the Task tool. See CLAUDE.md.", Target::Kiro);
    assert_eq!(
        kiro,
        [
            "the body names Claude Code's `Task` tool; kiro calls it `subagent`: edit the body",
            "the body names `CLAUDE.md`, which kiro does not read (it reads steering files in `.kiro/steering/`): edit the body",
        ]
    );
}

#[test]
fn the_whole_plugin_converts_for_gemini_and_kiro() {
    let tmp = tempfile::tempdir().unwrap();
    let src = make_ce_plugin(tmp.path());
    for (target, ext) in [(Target::Gemini, ".md"), (Target::Kiro, ".json")] {
        let dst = tmp.path().join(format!("out-{target}"));
        let report = convert(&src, &dst, &Options::new(target)).unwrap();
        assert_eq!(report.agents.len(), 43);
        let written = fs::read_dir(dst.join("agents"))
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .ends_with(ext)
            })
            .count();
        assert_eq!(written, 43, "{target}");
        let other: Vec<String> = report
            .all_warnings()
            .into_iter()
            .filter(|w| !w.contains(": the body names "))
            .collect();
        assert!(other.is_empty(), "{target}: {other:?}");
    }
    let ext: Json = serde_json::from_str(
        &fs::read_to_string(tmp.path().join("out-gemini/gemini-extension.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(ext["name"], "compound-engineering");
    assert_eq!(ext["version"], "2.0.0");
    assert!(tmp.path().join("out-gemini/LICENSE").is_file());
    assert!(!tmp.path().join("out-kiro/LICENSE").exists());
}

#[test]
fn claude_identity_keeps_every_key_and_value() {
    for path in fixture_agents() {
        let text = fs::read_to_string(&path).unwrap();
        let agent = parse_agent(&path, &text).unwrap();
        let out = agent.convert(Target::Claude).unwrap();
        let (src_yaml, _) = raw_frontmatter(&text);
        let (out_yaml, _) = raw_frontmatter(&out.content);
        assert_eq!(judge_yaml(out_yaml), judge_yaml(src_yaml), "{}", agent.name);
    }
}
