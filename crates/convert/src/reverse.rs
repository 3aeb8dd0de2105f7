//! Copilot CLI, VS Code and OpenCode agents → Claude Code agents (`--from copilot|vscode|opencode`).
//!
//! The agent is parsed with the same frontmatter reader as a Claude agent, its tools are mapped
//! back to Claude Code names, and the result is rendered by the Claude writer. The inverse of the
//! coarse aliases is their *closure*: `read`→`Read`, `search`→`Grep, Glob`, `execute`→`Bash`,
//! `edit`→`Write, Edit`, `web`→`WebFetch, WebSearch`, `agent`→`Task`, `todo`→`TodoWrite`,
//! `srv/tool`→`mcp__srv__tool`. A Claude agent that named only `Grep` therefore comes back with
//! `Grep, Glob` after a round trip through any target (see `tests/roundtrip_prop.rs`).

use serde_yaml_ng::{Mapping, Value};

use crate::agent::{
    Agent, CLAUDE_KEYS, ConvertedAgent, Mentions, OPENCODE_KEYS, VSCODE_KEYS, is_word_byte,
};
use crate::error::Result;
use crate::target::{Source, Target};
use crate::tools::DroppedTool;

/// The coarse capabilities every source can express, in emission order.
const CAPS: &[&str] = &["read", "search", "edit", "execute", "web", "agent", "todo"];

/// Claude Code tools granted by one coarse capability.
#[must_use]
pub fn claude_tools_for(cap: &str) -> &'static [&'static str] {
    match cap {
        "read" => &["Read"],
        "search" => &["Grep", "Glob"],
        "edit" => &["Write", "Edit"],
        "execute" => &["Bash"],
        "web" => &["WebFetch", "WebSearch"],
        "agent" => &["Task"],
        "todo" => &["TodoWrite"],
        _ => &[],
    }
}

/// The coarse capability (or `None`) a Copilot / VS Code tool name means. Besides the documented
/// aliases this accepts their Copilot synonyms and VS Code's older individual tool names.
fn capability(lower: &str) -> Option<&'static str> {
    Some(match lower {
        "read" | "notebookread" | "readfile" | "problems" | "changes" => "read",
        "search" | "grep" | "glob" | "codebase" | "usages" | "findtestfiles" | "searchresults"
        | "ls" => "search",
        "edit" | "write" | "multiedit" | "notebookedit" | "editfiles" | "new" => "edit",
        "execute"
        | "shell"
        | "bash"
        | "powershell"
        | "runcommands"
        | "runinterminal"
        | "terminallastcommand"
        | "runtasks"
        | "runtests" => "execute",
        "web" | "fetch" | "webfetch" | "websearch" => "web",
        "agent" | "task" | "custom-agent" | "runsubagent" => "agent",
        "todo" | "todos" | "todowrite" => "todo",
        _ => return None,
    })
}

/// Warnings for names in a Copilot / VS Code / OpenCode agent body that the conversion leaves as
/// they are but Claude Code calls otherwise (or does not read): `#tool:name` / `#name`
/// references, "the `execute` tool" style mentions of the source's tool names, `srv/tool` MCP
/// names, and the instruction files Claude Code does not read. Each distinct mention once, in
/// order of first appearance, with the Claude name where there is one. The mirror of
/// [`crate::agent::body_references`] for the other direction.
#[must_use]
pub fn body_references_back(body: &str, source: Source) -> Vec<String> {
    let mut found = Mentions::default();
    let mut note = |key: String, msg: String| found.note(key, msg);
    let bytes = body.as_bytes();
    let word = is_word_byte;
    let name_end = |from: usize| {
        (from..bytes.len())
            .find(|&j| !(word(bytes[j]) || bytes[j] == b'/' || bytes[j] == b'*'))
            .unwrap_or(bytes.len())
    };
    let claude_name = |name: &str| -> Option<String> {
        if let Some((srv, tool)) = name.split_once('/') {
            return (!srv.is_empty() && !tool.is_empty()).then(|| format!("mcp__{srv}__{tool}"));
        }
        capability(&name.to_ascii_lowercase()).map(|cap| claude_tools_for(cap).join(" / "))
    };
    let mut i = 0;
    'scan: while i < bytes.len() {
        let at_start = i == 0 || !word(bytes[i - 1]);
        for file in [".github/copilot-instructions.md", "AGENTS.md"] {
            if at_start && body[i..].starts_with(file) {
                note(
                    file.to_owned(),
                    format!(
                        "the body names `{file}`, which Claude Code does not read (it reads `CLAUDE.md`): edit the body"
                    ),
                );
                i += file.len();
                continue 'scan;
            }
        }
        // `#tool:name` (VS Code's prompt syntax) or `#name`.
        if at_start && bytes[i] == b'#' && matches!(source, Source::Copilot | Source::Vscode) {
            let from = if body[i..].starts_with("#tool:") {
                i + 6
            } else {
                i + 1
            };
            let end = name_end(from);
            let name = body[from..end].trim_end_matches(['-', '_', '/']);
            if let Some(claude) = (!name.is_empty()).then(|| claude_name(name)).flatten() {
                note(
                    name.to_owned(),
                    format!(
                        "the body references the {source} tool `#{name}`; Claude Code calls it `{claude}`: edit the body"
                    ),
                );
                i = end;
                continue;
            }
        }
        // "`execute`" or "the execute tool".
        if at_start && word(bytes[i]) {
            let end = name_end(i);
            let name = &body[i..end];
            let backticked = i > 0 && bytes[i - 1] == b'`' && bytes.get(end) == Some(&b'`');
            let as_tool = body[end..].starts_with(" tool");
            if (backticked || as_tool)
                && let Some(claude) = claude_name(name)
                && !claude.split(" / ").any(|c| c == name)
            {
                note(
                    name.to_owned(),
                    format!(
                        "the body names the {source} tool `{name}`; Claude Code calls it `{claude}`: edit the body"
                    ),
                );
            }
            i = end.max(i + 1);
            continue;
        }
        i += body[i..].chars().next().map_or(1, char::len_utf8);
    }
    found.into_warnings()
}

/// The result of mapping a source tool list back to Claude Code.
#[derive(Debug, Default)]
struct Back {
    /// Claude tool names, de-duplicated in order; `None` = every tool (`*`).
    tools: Option<Vec<String>>,
    dropped: Vec<DroppedTool>,
    notes: Vec<String>,
}

fn push_unique(list: &mut Vec<String>, item: &str) {
    if !list.iter().any(|t| t == item) {
        list.push(item.to_string());
    }
}

/// Map a Copilot / VS Code `tools` list to Claude Code tool names.
fn copilot_tools_back(source: Source, tools: &[String]) -> Back {
    let mut back = Back::default();
    let mut out = Vec::new();
    for raw in tools {
        let raw = raw.trim();
        if raw == "*" {
            back.tools = None;
            back.notes
                .push("`tools: [\"*\"]` is every tool: the Claude agent omits `tools`".into());
            return back;
        }
        let lower = raw.to_ascii_lowercase();
        if lower == "vscode/askquestions" || lower == "askuserquestion" {
            push_unique(&mut out, "AskUserQuestion");
            continue;
        }
        if let Some((set, tool)) = raw.split_once('/') {
            let set_lower = set.to_ascii_lowercase();
            if let Some(cap) = CAPS.iter().find(|c| **c == set_lower) {
                // An individual tool of a built-in set (`read/readFile`): Claude grants the set's
                // tools, which may be more than the one named.
                for t in claude_tools_for(cap) {
                    push_unique(&mut out, t);
                }
                back.notes.push(format!(
                    "`{raw}` widened to the Claude tools of `{set}` ({})",
                    claude_tools_for(cap).join(", ")
                ));
            } else if set.is_empty() || tool.is_empty() || set_lower == "vscode" {
                back.dropped.push(DroppedTool {
                    tool: raw.to_string(),
                    reason: "no Claude Code equivalent".into(),
                });
            } else {
                // `srv/tool`, `srv/*`: an MCP server's tool(s).
                push_unique(&mut out, &format!("mcp__{set}__{tool}"));
            }
            continue;
        }
        match capability(&lower) {
            Some(cap) => {
                for t in claude_tools_for(cap) {
                    push_unique(&mut out, t);
                }
            }
            None => back.dropped.push(DroppedTool {
                tool: raw.to_string(),
                reason: format!(
                    "not a {source} tool this converter knows; no Claude Code equivalent"
                ),
            }),
        }
    }
    back.tools = Some(out);
    back
}

fn is_false(v: &Value) -> bool {
    matches!(v, Value::Bool(false)) || v.as_str().is_some_and(|s| s.eq_ignore_ascii_case("deny"))
}

/// OpenCode capabilities: everything unless denied by the converter's `permissions` rules, by
/// OpenCode's `permission` map (`edit: deny`, `bash: deny`, `webfetch: deny`, `task: deny`) or by
/// its `tools` map (`write: false`, `bash: false`, …).
fn opencode_tools_back(fm: &Mapping) -> Back {
    let mut back = Back::default();
    let mut denied: Vec<&'static str> = Vec::new();
    let cap_of = |k: &str| -> Option<&'static str> {
        match k.to_ascii_lowercase().as_str() {
            "edit" | "write" | "patch" | "multiedit" => Some("edit"),
            "bash" | "shell" => Some("execute"),
            "webfetch" | "websearch" => Some("web"),
            "task" | "subagent" => Some("agent"),
            "read" => Some("read"),
            "grep" | "glob" | "list" => Some("search"),
            "todowrite" | "todoread" => Some("todo"),
            _ => None,
        }
    };
    if let Some(Value::Sequence(rules)) = fm.get("permissions") {
        for rule in rules {
            let action = rule.get("action").and_then(Value::as_str).unwrap_or("");
            let effect = rule.get("effect").and_then(Value::as_str).unwrap_or("");
            let resource = rule.get("resource").and_then(Value::as_str).unwrap_or("*");
            if effect != "deny" {
                continue;
            }
            if resource != "*" {
                back.notes.push(format!(
                    "permission rule `{action}` denied only for `{resource}`: Claude agents \
                     cannot deny a tool for some resources; granted"
                ));
                continue;
            }
            if let Some(c) = cap_of(action) {
                denied.push(c);
            }
        }
    }
    for key in ["permission", "tools"] {
        if let Some(Value::Mapping(m)) = fm.get(key) {
            for (k, v) in m {
                let Some(name) = k.as_str() else { continue };
                match (cap_of(name), v) {
                    (Some(c), v) if is_false(v) => denied.push(c),
                    (Some(_), Value::Mapping(_)) => back.notes.push(format!(
                        "`{key}.{name}` has per-command rules: Claude agents cannot restrict a \
                         tool by argument; granted"
                    )),
                    (None, v) if is_false(v) => back.dropped.push(DroppedTool {
                        tool: name.to_string(),
                        reason: "denied in OpenCode; Claude Code has no such tool to deny".into(),
                    }),
                    _ => {}
                }
            }
        }
    }
    if denied.is_empty() {
        back.tools = None;
        return back;
    }
    let mut out = Vec::new();
    for cap in CAPS.iter().filter(|c| !denied.contains(c)) {
        for t in claude_tools_for(cap) {
            push_unique(&mut out, t);
        }
    }
    back.notes.push(
        "OpenCode grants MCP tools unless denied; the Claude `tools` list names none: add \
         `mcp__<server>__*` entries for the servers the agent needs"
            .into(),
    );
    back.tools = Some(out);
    back
}

/// Whether `key` is one a `source` agent carries that Claude Code agents have no equivalent for
/// (dropping it is an expected loss, reported as a note): the keys the forward conversion
/// writes or passes through for that host, and the few only that host reads.
fn known_key(source: Source, key: &str) -> bool {
    match source {
        Source::Copilot | Source::Vscode => VSCODE_KEYS.contains(&key) || key == "infer",
        Source::Opencode => {
            OPENCODE_KEYS.contains(&key) || ["permission", "permissions", "prompt"].contains(&key)
        }
        Source::Claude => false,
    }
}

/// The name an agent file of `source` gives its agent when the frontmatter has none.
fn stem(agent: &Agent) -> String {
    let file = agent
        .source
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let s = file.strip_suffix(".md").unwrap_or(&file);
    let s = s.strip_suffix(".agent").unwrap_or(s);
    s.strip_suffix(".chatmode").unwrap_or(s).to_string()
}

/// Parse an agent file written for `source` (OpenCode's `tools` may be a map).
pub fn parse_source_agent(source: Source, path: &std::path::Path, text: &str) -> Result<Agent> {
    crate::agent::parse_agent_with(path, text, source == Source::Opencode)
}

/// Convert an agent parsed from a `source` file into a Claude Code agent.
pub fn to_claude(source: Source, parsed: &Agent) -> Result<ConvertedAgent> {
    let name = if parsed.frontmatter.contains_key("name") {
        parsed.name.clone()
    } else {
        stem(parsed)
    };
    let mut notes = Vec::new();
    let mut warnings = Vec::new();
    let back = match source {
        Source::Opencode => {
            if parsed.tools.is_some() {
                warnings
                    .push("`tools` is not a map of tool names to true/false; ignored".to_string());
            }
            opencode_tools_back(&parsed.frontmatter)
        }
        _ => match &parsed.tools {
            Some(t) => copilot_tools_back(source, t),
            None => Back::default(),
        },
    };
    let mut fm = Mapping::new();
    fm.insert("name".into(), name.clone().into());
    if let Some(d) = &parsed.description {
        fm.insert("description".into(), d.clone().into());
    }
    if let Some(t) = &back.tools {
        fm.insert("tools".into(), t.join(", ").into());
    }
    if let Some(m) = &parsed.model {
        notes.push(format!(
            "`model: {m}` dropped: Claude Code expects an alias such as `sonnet`; the agent \
             inherits the session's model"
        ));
    }
    for (k, v) in &parsed.frontmatter {
        let Some(key) = k.as_str() else {
            warnings.push("a frontmatter key that is not a string was dropped".into());
            continue;
        };
        if matches!(key, "name" | "description" | "model" | "tools") {
            continue;
        }
        if CLAUDE_KEYS.contains(&key) {
            fm.insert(k.clone(), v.clone());
        } else if known_key(source, key) {
            // OpenCode's permissions became the `tools` list, and `mode: subagent` is what a
            // Claude agent is: neither is a loss.
            let carried = source == Source::Opencode
                && ((matches!(key, "permission" | "permissions") && back.tools.is_some())
                    || (key == "mode" && v.as_str() == Some("subagent")));
            if !carried {
                notes.push(format!(
                    "`{key}` dropped: Claude Code agents have no equivalent"
                ));
            }
        } else {
            warnings.push(format!(
                "unknown key `{key}` dropped: Claude Code agents do not accept it"
            ));
        }
    }
    for d in &back.dropped {
        warnings.push(format!("tool `{}` dropped: {}", d.tool, d.reason));
    }
    warnings.extend(body_references_back(&parsed.body, source));
    notes.extend(back.notes.iter().cloned());
    let claude = Agent {
        source: parsed.source.clone(),
        name,
        description: parsed.description.clone(),
        tools: back.tools.clone(),
        disallowed_tools: None,
        model: None,
        frontmatter: fm,
        has_frontmatter: true,
        body: parsed.body.clone(),
    };
    let mut converted = claude.convert(Target::Claude)?;
    let report = &mut converted.report;
    report.tools_in = match source {
        Source::Opencode => None,
        _ => parsed.tools.clone(),
    };
    report.dropped_tools = back.dropped;
    report.dropped_keys = parsed
        .frontmatter
        .keys()
        .filter_map(Value::as_str)
        .filter(|k| !matches!(*k, "name" | "description" | "tools") && !CLAUDE_KEYS.contains(k))
        .map(str::to_string)
        .collect();
    report.notes.extend(notes);
    report.warnings.extend(warnings);
    Ok(converted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn back(source: Source, file: &str, text: &str) -> ConvertedAgent {
        to_claude(
            source,
            &parse_source_agent(source, Path::new(file), text).unwrap(),
        )
        .unwrap()
    }

    #[test]
    fn copilot_aliases_map_to_their_claude_closure() {
        let c = back(
            Source::Copilot,
            "a/rev.agent.md",
            "---\ndescription: d\ntools: [read, search, execute, edit, web, agent, github/get_issue, ctx/*, frob]\nmodel: Claude Sonnet 4.5 (copilot)\n---\nBody\n",
        );
        assert_eq!(c.file_name, "rev.md");
        assert_eq!(
            c.report.tools_out.clone().unwrap(),
            [
                "Read",
                "Grep",
                "Glob",
                "Bash",
                "Write",
                "Edit",
                "WebFetch",
                "WebSearch",
                "Task",
                "mcp__github__get_issue",
                "mcp__ctx__*"
            ]
        );
        assert!(
            c.content
                .contains("tools: Read, Grep, Glob, Bash, Write, Edit")
        );
        assert!(
            c.report
                .warnings
                .iter()
                .any(|w| w.contains("`frob` dropped"))
        );
        assert!(
            c.report
                .notes
                .iter()
                .any(|n| n.contains("model: Claude Sonnet"))
        );
        assert!(c.content.ends_with("---\nBody\n"));
    }

    #[test]
    fn vscode_chatmode_and_individual_tools() {
        let c = back(
            Source::Vscode,
            "m/plan.chatmode.md",
            "---\ndescription: d\ntools: ['codebase', 'fetch', 'read/readFile', 'vscode/askQuestions']\nhandoffs: []\n---\n",
        );
        assert_eq!(c.file_name, "plan.md");
        assert_eq!(
            c.report.tools_out.clone().unwrap(),
            [
                "Grep",
                "Glob",
                "WebFetch",
                "WebSearch",
                "Read",
                "AskUserQuestion"
            ]
        );
        assert!(
            c.report
                .notes
                .iter()
                .any(|n| n.contains("`handoffs` dropped"))
        );
    }

    #[test]
    fn opencode_permissions_and_tools_maps() {
        let c = back(
            Source::Opencode,
            "o/x.md",
            "---\ndescription: d\nmode: subagent\npermissions:\n- action: edit\n  resource: '*'\n  effect: deny\n- action: subagent\n  resource: '*'\n  effect: deny\n---\nB",
        );
        assert_eq!(
            c.report.tools_out.unwrap(),
            [
                "Read",
                "Grep",
                "Glob",
                "Bash",
                "WebFetch",
                "WebSearch",
                "TodoWrite"
            ]
        );
        let c = back(
            Source::Opencode,
            "o/y.md",
            "---\ndescription: d\ntools:\n  write: false\n  bash: false\npermission:\n  webfetch: deny\ntemperature: 0.1\n---\nB",
        );
        assert_eq!(
            c.report.tools_out.clone().unwrap(),
            ["Read", "Grep", "Glob", "Task", "TodoWrite"]
        );
        assert!(
            c.report
                .notes
                .iter()
                .any(|n| n.contains("`temperature` dropped"))
        );
        let c = back(Source::Opencode, "o/z.md", "---\ndescription: d\n---\nB");
        assert_eq!(c.report.tools_out, None);
    }
}

#[cfg(test)]
mod body_tests {
    use super::*;

    #[test]
    fn body_names_of_the_source_host_are_reported_once_with_claudes_names() {
        let body = "Use #tool:codebase to look, then the `execute` tool; run `execute` again. \
                    Ask #github/search_code. Follow .github/copilot-instructions.md. `Read` is fine.";
        let w = body_references_back(body, Source::Copilot);
        assert_eq!(w.len(), 4, "{w:#?}");
        assert!(
            w[0].contains("`#codebase`") && w[0].contains("Grep / Glob"),
            "{}",
            w[0]
        );
        assert!(
            w[1].contains("`execute`") && w[1].contains("`Bash`"),
            "{}",
            w[1]
        );
        assert!(w[2].contains("mcp__github__search_code"), "{}", w[2]);
        assert!(w[3].contains("CLAUDE.md"), "{}", w[3]);
        assert!(
            body_references_back("Plain prose about reading and editing.", Source::Vscode)
                .is_empty()
        );
        // OpenCode has no `#tool:` syntax; a `#heading` is not a tool there.
        assert!(body_references_back("#read this", Source::Opencode).is_empty());
    }
}
