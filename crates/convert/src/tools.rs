//! Claude Code tool names → target tool names.
//!
//! The coarse aliases are GitHub Copilot's documented custom-agent aliases, which VS Code resolves
//! as tool sets of the same names: `read`, `edit`, `search`, `execute`, `web`, `agent`, `todo`.
//! MCP tools (`mcp__srv__tool`, `mcp__srv__*`) become `srv/tool`, `srv/*` where the target's
//! `tools` can name MCP tools, and are dropped with a reason elsewhere.

use serde::Serialize;
use serde_yaml_ng::Value;

use crate::target::Target;

/// A source tool the target cannot carry, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DroppedTool {
    pub tool: String,
    pub reason: String,
}

/// The result of mapping one agent's tool list.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct MappedTools {
    /// Target tool names, de-duplicated, in the order of first appearance.
    pub tools: Vec<String>,
    /// Source tools with no target equivalent.
    pub dropped: Vec<DroppedTool>,
    /// Source tools mapped with a loss of precision (e.g. a `Bash(git:*)` pattern dropped).
    pub widened: Vec<String>,
}

/// Split a Claude `tools` string on commas outside parentheses (`Bash(a, b)` stays whole),
/// trimming entries and dropping empty ones.
#[must_use]
pub fn split_tool_list(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                push_trimmed(&mut out, &s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    push_trimmed(&mut out, &s[start..]);
    out
}

fn push_trimmed(out: &mut Vec<String>, s: &str) {
    let t = s.trim();
    if !t.is_empty() {
        out.push(t.to_string());
    }
}

/// Read a `tools`-like value: a comma-separated string or a YAML list of names. `null` (a bare
/// `tools:`) counts as absent. Anything else is an error message for the caller to place.
pub fn tools_from_value(value: &Value) -> Result<Option<Vec<String>>, String> {
    match value {
        Value::Null => Ok(None),
        Value::String(s) => Ok(Some(split_tool_list(s))),
        Value::Sequence(items) => {
            let mut out = Vec::with_capacity(items.len());
            for item in items {
                match item {
                    Value::String(s) => push_trimmed(&mut out, s),
                    other => {
                        return Err(format!(
                            "lists a {} where a tool name was expected; write tool names as \
                             strings, e.g. `tools: Read, Grep` or `tools: [Read, Grep]`",
                            crate::frontmatter::kind_of(other)
                        ));
                    }
                }
            }
            Ok(Some(out))
        }
        other => Err(format!(
            "is a {}; write a comma-separated string (`tools: Read, Grep`) or a list \
             (`tools: [Read, Grep]`)",
            crate::frontmatter::kind_of(other)
        )),
    }
}

/// Canonical Claude Code spellings, keyed by lowercase name.
const CLAUDE_NAMES: &[&str] = &[
    "Read",
    "Write",
    "Edit",
    "MultiEdit",
    "NotebookEdit",
    "NotebookRead",
    "Glob",
    "Grep",
    "LS",
    "Bash",
    "BashOutput",
    "KillShell",
    "WebFetch",
    "WebSearch",
    "Task",
    "Agent",
    "TodoWrite",
    "TodoRead",
    "AskUserQuestion",
    "Skill",
    "SlashCommand",
    "ExitPlanMode",
    "EnterPlanMode",
];

enum Alias {
    To(&'static str),
    None(&'static str),
    Unknown,
}

fn coarse_alias(lower: &str, target: Target) -> Alias {
    match lower {
        "read" | "notebookread" => Alias::To("read"),
        "write" | "edit" | "multiedit" | "notebookedit" | "patch" => Alias::To("edit"),
        "grep" | "glob" | "ls" | "list" | "search" => Alias::To("search"),
        "bash" | "bashoutput" | "killshell" | "killbash" | "execute" | "shell" | "powershell" => {
            Alias::To("execute")
        }
        "webfetch" | "websearch" | "web" => Alias::To("web"),
        "task" | "agent" | "custom-agent" => Alias::To("agent"),
        "todowrite" | "todoread" | "todo" | "todos" => Alias::To("todo"),
        "askuserquestion" => match target {
            Target::Vscode => Alias::To("vscode/askQuestions"),
            _ => Alias::None(
                "the target has no tool for asking the user; it asks through its own UI",
            ),
        },
        "skill" | "slashcommand" => {
            Alias::None("skills and commands load automatically in the target")
        }
        "exitplanmode" | "enterplanmode" => Alias::None("the target has no plan-mode tool"),
        _ => Alias::Unknown,
    }
}

/// Map one agent's Claude tool list to `target`.
///
/// For Copilot and VS Code the result is the `tools` list to emit; for OpenCode and Codex it is the
/// set of coarse capabilities (`read`, `edit`, `execute`, …) the agent is granted, which those
/// writers turn into permissions; for Claude it is the list in canonical Claude spelling.
#[must_use]
pub fn map_tools(target: Target, source: &[String]) -> MappedTools {
    let mut out = MappedTools::default();
    for raw in source {
        let raw = raw.trim();
        if target == Target::Claude {
            push_unique(&mut out.tools, canonical_claude(raw));
            continue;
        }
        if raw == "*" {
            push_unique(&mut out.tools, "*".to_string());
            continue;
        }
        if let Some(rest) = raw.strip_prefix("mcp__") {
            let (server, tool) = rest.split_once("__").unwrap_or((rest, "*"));
            if server.is_empty() || tool.is_empty() {
                out.dropped.push(DroppedTool {
                    tool: raw.to_string(),
                    reason: "not a valid MCP tool name (expected mcp__<server>__<tool>)".into(),
                });
            } else if target.supports_mcp_tool_refs() {
                push_unique(&mut out.tools, format!("{server}/{tool}"));
            } else {
                out.dropped.push(DroppedTool {
                    tool: raw.to_string(),
                    reason: format!(
                        "{target} agents cannot name MCP tools; configure the `{server}` server \
                         for the target instead"
                    ),
                });
            }
            continue;
        }
        let (base, pattern) = match raw.find('(') {
            Some(i) if raw.ends_with(')') => (raw[..i].trim(), Some(&raw[i..])),
            _ => (raw, None),
        };
        if base.contains('/') {
            // Already a target-style reference (`read/readFile`, `server/tool`).
            if target.supports_mcp_tool_refs() {
                push_unique(&mut out.tools, base.to_string());
            } else {
                out.dropped.push(DroppedTool {
                    tool: raw.to_string(),
                    reason: format!("{target} agents cannot name individual tools"),
                });
            }
            continue;
        }
        match coarse_alias(&base.to_ascii_lowercase(), target) {
            Alias::To(alias) => {
                if let Some(pattern) = pattern {
                    out.widened.push(format!(
                        "`{raw}`: the pattern `{pattern}` was dropped ({target} has no per-tool \
                         allow-lists), so `{alias}` is granted without it"
                    ));
                }
                push_unique(&mut out.tools, alias.to_string());
            }
            Alias::None(reason) => out.dropped.push(DroppedTool {
                tool: raw.to_string(),
                reason: reason.to_string(),
            }),
            Alias::Unknown => out.dropped.push(DroppedTool {
                tool: raw.to_string(),
                reason: format!(
                    "not a Claude Code tool this converter knows; no {target} equivalent"
                ),
            }),
        }
    }
    out
}

fn canonical_claude(raw: &str) -> String {
    if raw.starts_with("mcp__") {
        return raw.to_string();
    }
    let (base, pattern) = match raw.find('(') {
        Some(i) => (&raw[..i], &raw[i..]),
        None => (raw, ""),
    };
    let lower = base.trim().to_ascii_lowercase();
    match CLAUDE_NAMES
        .iter()
        .find(|n| n.to_ascii_lowercase() == lower)
    {
        Some(name) => format!("{name}{pattern}"),
        None => raw.to_string(),
    }
}

fn push_unique(list: &mut Vec<String>, item: String) {
    if !list.contains(&item) {
        list.push(item);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|s| (*s).to_string()).collect()
    }

    #[test]
    fn splits_on_top_level_commas_only() {
        assert_eq!(
            split_tool_list(" Read, Grep ,, Bash(git add, git commit), mcp__x__*"),
            v(&["Read", "Grep", "Bash(git add, git commit)", "mcp__x__*"])
        );
        assert!(split_tool_list("").is_empty());
    }

    #[test]
    fn reads_strings_lists_and_rejects_others() {
        let s: Value = serde_yaml_ng::from_str("Read, Grep").unwrap();
        assert_eq!(tools_from_value(&s).unwrap(), Some(v(&["Read", "Grep"])));
        let l: Value = serde_yaml_ng::from_str("[Read, ' Grep ']").unwrap();
        assert_eq!(tools_from_value(&l).unwrap(), Some(v(&["Read", "Grep"])));
        assert_eq!(tools_from_value(&Value::Null).unwrap(), None);
        let m: Value = serde_yaml_ng::from_str("{a: b}").unwrap();
        assert!(tools_from_value(&m).unwrap_err().contains("is a mapping"));
        let n: Value = serde_yaml_ng::from_str("[Read, 3]").unwrap();
        assert!(tools_from_value(&n).unwrap_err().contains("number"));
    }

    #[test]
    fn brainstorm_acceptance_examples() {
        // AE1: Grep and Glob both become `search`, emitted once.
        let m = map_tools(Target::Vscode, &v(&["Read", "Grep", "Glob", "Bash"]));
        assert_eq!(m.tools, v(&["read", "search", "execute"]));
        assert!(m.dropped.is_empty());
        // AE3 with MCP refs mapped.
        let m = map_tools(
            Target::Copilot,
            &v(&[
                "Read",
                "Grep",
                "Glob",
                "Bash",
                "WebFetch",
                "WebSearch",
                "mcp__context7__*",
            ]),
        );
        assert_eq!(
            m.tools,
            v(&["read", "search", "execute", "web", "context7/*"])
        );
    }

    #[test]
    fn full_table() {
        let m = map_tools(
            Target::Copilot,
            &v(&[
                "Write",
                "Edit",
                "MultiEdit",
                "NotebookEdit",
                "Task",
                "TodoWrite",
                "TodoRead",
                "LS",
                "mcp__github__get_issue",
            ]),
        );
        assert_eq!(
            m.tools,
            v(&["edit", "agent", "todo", "search", "github/get_issue"])
        );
    }

    #[test]
    fn mcp_is_dropped_with_a_reason_where_unsupported() {
        let m = map_tools(Target::Codex, &v(&["Read", "mcp__github__*"]));
        assert_eq!(m.tools, v(&["read"]));
        assert_eq!(m.dropped.len(), 1);
        assert!(
            m.dropped[0].reason.contains("`github` server"),
            "{:?}",
            m.dropped
        );
    }

    #[test]
    fn patterns_are_stripped_and_reported() {
        let m = map_tools(Target::Vscode, &v(&["Bash(git:*)", "Read(.env)"]));
        assert_eq!(m.tools, v(&["execute", "read"]));
        assert_eq!(m.widened.len(), 2);
    }

    #[test]
    fn unknown_and_unmappable_tools_are_dropped() {
        let m = map_tools(
            Target::Copilot,
            &v(&["Frobnicate", "Skill", "AskUserQuestion", "Read"]),
        );
        assert_eq!(m.tools, v(&["read"]));
        let names: Vec<_> = m.dropped.iter().map(|d| d.tool.as_str()).collect();
        assert_eq!(names, ["Frobnicate", "Skill", "AskUserQuestion"]);
        let m = map_tools(Target::Vscode, &v(&["AskUserQuestion"]));
        assert_eq!(m.tools, v(&["vscode/askQuestions"]));
    }

    #[test]
    fn claude_target_canonicalises_and_dedups() {
        let m = map_tools(
            Target::Claude,
            &v(&["read", "Read", "bash(git:*)", "mcp__a__b", "Custom"]),
        );
        assert_eq!(m.tools, v(&["Read", "Bash(git:*)", "mcp__a__b", "Custom"]));
    }
}
