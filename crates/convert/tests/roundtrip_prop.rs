//! Property tests: random frontmatter (keys and values with `@`, backticks, ` #`, colons, quotes,
//! unicode, line breaks, YAML-looking words) survives emit → parse, judged by the converter's own
//! parser and by an independent one; random agents convert to every target into files that parse.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;

use common::{judge_yaml, ours_as_json, raw_frontmatter};
use proptest::prelude::*;
use serde_yaml_ng::{Mapping, Value};
use toolgate_convert::frontmatter::{parse_document, render_document};
use toolgate_convert::{Target, parse_agent};

/// Pieces that are hard for YAML emitters, mixed with ordinary text.
fn tricky_piece() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("@".to_string()),
        Just("`".to_string()),
        Just(" #".to_string()),
        Just("#".to_string()),
        Just(": ".to_string()),
        Just(":".to_string()),
        Just("\"".to_string()),
        Just("'".to_string()),
        Just("\\".to_string()),
        Just("\n".to_string()),
        Just("\r\n".to_string()),
        Just("\t".to_string()),
        Just(" ".to_string()),
        Just("- ".to_string()),
        Just("? ".to_string()),
        Just("[".to_string()),
        Just("]".to_string()),
        Just("{".to_string()),
        Just("}".to_string()),
        Just(",".to_string()),
        Just("*".to_string()),
        Just("&".to_string()),
        Just("!".to_string()),
        Just("%".to_string()),
        Just("|".to_string()),
        Just(">".to_string()),
        Just("---".to_string()),
        Just("...".to_string()),
        Just("yes".to_string()),
        Just("No".to_string()),
        Just("on".to_string()),
        Just("null".to_string()),
        Just("~".to_string()),
        Just("true".to_string()),
        Just("0x1F".to_string()),
        Just("1e3".to_string()),
        Just("-.5".to_string()),
        Just("2026-01-01".to_string()),
        Just("12:30".to_string()),
        Just("é".to_string()),
        Just("—".to_string()),
        Just("日本".to_string()),
        Just("🚀".to_string()),
        Just("\u{85}".to_string()),
        Just("\u{a0}".to_string()),
        Just("\u{2028}".to_string()),
        Just("\u{feff}".to_string()),
        "[a-zA-Z0-9 ]{1,8}",
        any::<char>().prop_map(|c| c.to_string()),
    ]
}

fn tricky_string() -> impl Strategy<Value = String> {
    prop::collection::vec(tricky_piece(), 0..8).prop_map(|parts| parts.concat())
}

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => tricky_string().prop_map(Value::from),
        1 => any::<bool>().prop_map(Value::from),
        1 => any::<i64>().prop_map(Value::from),
        1 => Just(Value::Null),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => scalar(),
        1 => prop::collection::vec(tricky_string().prop_map(Value::from), 0..5)
            .prop_map(Value::Sequence),
        1 => prop::collection::vec((tricky_string(), scalar()), 0..4).prop_map(|kv| {
            let mut m = Mapping::new();
            for (k, v) in kv {
                m.insert(Value::from(k), v);
            }
            Value::Mapping(m)
        }),
    ]
}

fn frontmatter() -> impl Strategy<Value = Mapping> {
    prop::collection::vec((tricky_string(), value()), 1..6).prop_map(|kv| {
        let mut m = Mapping::new();
        for (k, v) in kv {
            m.insert(Value::from(k), v);
        }
        m
    })
}

fn body() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("\nBody\n".to_string()),
        Just("\n---\nnot: frontmatter\n---\n".to_string()),
        tricky_string(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn emit_then_parse_is_identity(fm in frontmatter(), body in body()) {
        let doc = render_document(&fm, &body).unwrap();
        let back = parse_document(Path::new("prop.md"), &doc)
            .unwrap_or_else(|e| panic!("{e}\n--- emitted ---\n{doc}"));
        prop_assert_eq!(back.frontmatter.as_ref(), Some(&fm), "emitted:\n{}", doc);
        prop_assert_eq!(&back.body, &body);
        // An independent YAML implementation reads the same values.
        let (yaml, rest) = raw_frontmatter(&doc);
        prop_assert_eq!(judge_yaml(yaml), ours_as_json(&fm), "emitted:\n{}", doc);
        prop_assert_eq!(rest, body.as_str());
    }

    #[test]
    fn random_agents_convert_to_files_that_parse(
        name in tricky_string(),
        description in tricky_string(),
        tools in prop::collection::vec(
            prop_oneof![
                Just("Read".to_string()), Just("Grep".to_string()), Just("Bash(git:*)".to_string()),
                Just("mcp__srv__tool".to_string()), Just("WebFetch".to_string()),
                tricky_string(),
            ],
            0..6,
        ),
        extra in tricky_string(),
    ) {
        let mut fm = Mapping::new();
        fm.insert("name".into(), name.into());
        fm.insert("description".into(), description.clone().into());
        fm.insert("tools".into(), Value::Sequence(tools.into_iter().map(Value::from).collect()));
        fm.insert("x-extra".into(), extra.into());
        let source = render_document(&fm, "\nBody\n").unwrap();
        let agent = parse_agent(Path::new("agents/p.md"), &source).unwrap();
        for target in Target::ALL {
            let out = agent.convert(target).unwrap();
            prop_assert!(
                !out.file_name.contains('/') && !out.file_name.starts_with('.'),
                "{}", out.file_name
            );
            if target == Target::Codex {
                let t: toml::Table = toml::from_str(&out.content).unwrap();
                if !description.trim().is_empty() {
                    prop_assert_eq!(t["description"].as_str(), Some(description.as_str()));
                }
                continue;
            }
            if target == Target::Kiro {
                let v: serde_json::Value = serde_json::from_str(&out.content).unwrap();
                if !description.trim().is_empty() {
                    prop_assert_eq!(v["description"].as_str(), Some(description.as_str()));
                }
                prop_assert_eq!(v["prompt"].as_str(), Some("Body"));
                prop_assert!(v["tools"].as_array().is_some_and(|t| t.iter().all(|x| x.is_string())));
                continue;
            }
            let (yaml, rest) = raw_frontmatter(&out.content);
            let judged = judge_yaml(yaml);
            if !description.trim().is_empty() {
                prop_assert_eq!(judged["description"].as_str(), Some(description.as_str()));
            }
            prop_assert_eq!(rest, "\nBody\n");
        }
    }
}

// Claude → X → Claude (X in copilot, vscode, opencode) keeps the tool set up to its *closure*.
//
// The targets' aliases are coarser than Claude's tools (`Grep` and `Glob` are both `search`), so
// the invariant is not identity: the round trip returns the closure of the source set, every
// Claude tool of every alias the source granted (`Grep` alone comes back as `Grep, Glob`; `Edit`
// as `Write, Edit`). We chose the closure over a round-trip hint key because the hosts' files
// would then carry a toolgate-only key, and the existing output (and its snapshots) stays as it
// is. The closure is a fixpoint: a second round trip changes nothing. OpenCode can only deny
// editing, the shell and subagents, so there `read`, `search`, `web` and `todo` always come back,
// MCP tools (which OpenCode agents cannot name) do not, and an agent denied nothing comes back
// with no `tools` key (every tool).

const ROUND_TRIP_TOOLS: &[&str] = &[
    "Read",
    "Write",
    "Edit",
    "MultiEdit",
    "Grep",
    "Glob",
    "LS",
    "Bash",
    "WebFetch",
    "WebSearch",
    "Task",
    "TodoWrite",
    "mcp__github__get_issue",
    "mcp__ctx__*",
];

/// The documented alias of each Claude tool and the Claude tools each alias stands for.
fn alias_of(tool: &str) -> &'static str {
    match tool {
        "Read" => "read",
        "Write" | "Edit" | "MultiEdit" => "edit",
        "Grep" | "Glob" | "LS" => "search",
        "Bash" => "execute",
        "WebFetch" | "WebSearch" => "web",
        "Task" => "agent",
        "TodoWrite" => "todo",
        _ => "mcp",
    }
}

fn closure(target: Target, tools: &[String]) -> Option<std::collections::BTreeSet<String>> {
    use std::collections::BTreeSet;
    let mut aliases: BTreeSet<&str> = tools.iter().map(|t| alias_of(t)).collect();
    if target == Target::Opencode {
        if ["edit", "execute", "agent"]
            .iter()
            .all(|a| aliases.contains(a))
        {
            return None;
        }
        aliases.extend(["read", "search", "web", "todo"]);
        aliases.remove("mcp");
    }
    let mut out = BTreeSet::new();
    for a in aliases {
        if a == "mcp" {
            out.extend(tools.iter().filter(|t| t.starts_with("mcp__")).cloned());
        } else {
            out.extend(
                toolgate_convert::reverse::claude_tools_for(a)
                    .iter()
                    .map(|s| (*s).to_string()),
            );
        }
    }
    Some(out)
}

fn source_of(target: Target) -> toolgate_convert::Source {
    match target {
        Target::Copilot => toolgate_convert::Source::Copilot,
        Target::Vscode => toolgate_convert::Source::Vscode,
        _ => toolgate_convert::Source::Opencode,
    }
}

/// Claude agent text → X → Claude; the Claude tools of the result (`None`: no `tools` key).
fn round_trip(target: Target, claude: &str) -> (Option<Vec<String>>, String) {
    let a = parse_agent(Path::new("agents/rt.md"), claude).unwrap();
    let there = a.convert(target).unwrap();
    let source = source_of(target);
    let parsed = toolgate_convert::reverse::parse_source_agent(
        source,
        Path::new(&format!("x/{}", there.file_name)),
        &there.content,
    )
    .unwrap();
    let back = toolgate_convert::reverse::to_claude(source, &parsed).unwrap();
    let again = parse_agent(Path::new("agents/rt.md"), &back.content).unwrap();
    (again.tools, back.content)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn claude_to_host_to_claude_keeps_the_tool_closure(
        picks in prop::collection::vec(prop::sample::select(ROUND_TRIP_TOOLS), 1..8),
        target in prop::sample::select(vec![Target::Copilot, Target::Vscode, Target::Opencode]),
        description in "[a-zA-Z][a-zA-Z ,.:]{0,29}",
    ) {
        let tools: Vec<String> = picks.iter().map(|s| (*s).to_string()).collect();
        let claude = format!(
            "---\nname: rt\ndescription: {}\ntools: {}\n---\nBody\n",
            serde_json::to_string(&description).unwrap(),
            tools.join(", ")
        );
        let (back, content) = round_trip(target, &claude);
        let got = back.map(|t| t.into_iter().collect::<std::collections::BTreeSet<_>>());
        prop_assert_eq!(&got, &closure(target, &tools), "{} via {}", claude, target);
        // The closure is a fixpoint: a second round trip changes nothing.
        let (twice, _) = round_trip(target, &content);
        let twice = twice.map(|t| t.into_iter().collect::<std::collections::BTreeSet<_>>());
        prop_assert_eq!(&twice, &got);
        // Name, description and body survive.
        let again = parse_agent(Path::new("agents/rt.md"), &content).unwrap();
        prop_assert_eq!(again.name, "rt");
        prop_assert_eq!(again.description.as_deref(), Some(description.as_str()));
        prop_assert_eq!(again.body, "Body\n");
    }
}
