//! Claude Code tool names → target tool names.
//!
//! The coarse aliases are GitHub Copilot's documented custom-agent aliases, which VS Code resolves
//! as tool sets of the same names: `read`, `edit`, `search`, `execute`, `web`, `agent`, `todo`.
//! MCP tools (`mcp__srv__tool`, `mcp__srv__*`) become `srv/tool`, `srv/*` where the target's
//! `tools` can name MCP tools, and are dropped with a reason elsewhere.
//!
//! Gemini CLI and Kiro CLI name their tools one by one, so a Claude tool maps to the host's own
//! tool ([`gemini_tool`], [`kiro_tool`]); MCP tools become `mcp_srv_tool` / `mcp_srv_*` (Gemini)
//! and `@srv/tool` / `@srv` (Kiro).

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

/// Why a `tools`-like value cannot be read; the text follows the key's name ("`tools` is a
/// mapping; …").
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolsValueError {
    /// A list holds something other than a name.
    #[error(
        "lists a {found} where a tool name was expected; write tool names as strings, e.g. \
         `tools: Read, Grep` or `tools: [Read, Grep]`"
    )]
    Item { found: &'static str },
    /// Neither a string nor a list.
    #[error(
        "is a {found}; write a comma-separated string (`tools: Read, Grep`) or a list \
         (`tools: [Read, Grep]`)"
    )]
    Value { found: &'static str },
}

/// Read a `tools`-like value: a comma-separated string or a YAML list of names. `null` (a bare
/// `tools:`) counts as absent.
///
/// # Errors
///
/// [`ToolsValueError`] for anything else, for the caller to place.
pub fn tools_from_value(value: &Value) -> Result<Option<Vec<String>>, ToolsValueError> {
    match value {
        Value::Null => Ok(None),
        Value::String(s) => Ok(Some(split_tool_list(s))),
        Value::Sequence(items) => {
            let mut out = Vec::with_capacity(items.len());
            for item in items {
                match item {
                    Value::String(s) => push_trimmed(&mut out, s),
                    other => {
                        return Err(ToolsValueError::Item {
                            found: crate::frontmatter::kind_of(other),
                        });
                    }
                }
            }
            Ok(Some(out))
        }
        other => Err(ToolsValueError::Value {
            found: crate::frontmatter::kind_of(other),
        }),
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

/// Gemini CLI's built-in tool names (google-gemini/gemini-cli `docs/reference/tools.md`), which a
/// source may already use; they pass through unchanged.
pub const GEMINI_TOOLS: &[&str] = &[
    "run_shell_command",
    "glob",
    "grep_search",
    "list_directory",
    "read_file",
    "read_many_files",
    "replace",
    "write_file",
    "ask_user",
    "write_todos",
    "activate_skill",
    "save_memory",
    "google_web_search",
    "web_fetch",
    "enter_plan_mode",
    "exit_plan_mode",
];

/// Kiro CLI's built-in tool names (kiro.dev/docs/cli/reference/built-in-tools), which a source may
/// already use; they pass through unchanged. Older Kiro / Amazon Q Developer CLI versions called
/// `read`, `write`, `shell` and `aws` `fs_read`, `fs_write`, `execute_bash` and `use_aws`; those
/// old names are accepted and written as the current ones.
pub const KIRO_TOOLS: &[&str] = &[
    "read",
    "glob",
    "grep",
    "write",
    "shell",
    "aws",
    "web_search",
    "web_fetch",
    "introspect",
    "code",
    "delegate",
    "knowledge",
    "thinking",
    "todo_list",
    "subagent",
];

/// The Gemini CLI tool for a Claude Code tool (lowercase name).
///
/// `Read` becomes `read_file` only: Claude's `Read` reads one file per call, as `read_file` does;
/// `read_many_files` is what Gemini's `@path` syntax expands to, and an agent that has `glob` and
/// `read_file` can read many files anyway.
fn gemini_tool(lower: &str) -> Alias {
    if let Some(native) = GEMINI_TOOLS.iter().find(|t| **t == lower) {
        return Alias::To(native);
    }
    match lower {
        "read" | "notebookread" => Alias::To("read_file"),
        "write" => Alias::To("write_file"),
        "edit" | "multiedit" => Alias::To("replace"),
        "grep" => Alias::To("grep_search"),
        "ls" => Alias::To("list_directory"),
        "bash" => Alias::To("run_shell_command"),
        "webfetch" => Alias::To("web_fetch"),
        "websearch" => Alias::To("google_web_search"),
        "todowrite" | "todoread" => Alias::To("write_todos"),
        "askuserquestion" => Alias::To("ask_user"),
        "skill" => Alias::To("activate_skill"),
        "exitplanmode" => Alias::To("exit_plan_mode"),
        "enterplanmode" => Alias::To("enter_plan_mode"),
        "task" | "agent" => Alias::None(
            "Gemini CLI subagents cannot call other subagents (recursion protection), so there is \
             no tool to grant",
        ),
        "notebookedit" => Alias::None(
            "Gemini CLI has no notebook-editing tool (`replace` and `write_file` edit a notebook \
             only as JSON text)",
        ),
        "bashoutput" | "killshell" | "killbash" => Alias::None(
            "Gemini CLI has no separate tool for a background shell; `run_shell_command` runs \
             background processes itself",
        ),
        "slashcommand" => Alias::None("Gemini CLI agents have no tool that runs slash commands"),
        _ => Alias::Unknown,
    }
}

/// The Kiro CLI tool for a Claude Code tool (lowercase name). Kiro's `read` also reads folders, so
/// `LS` is `read`; its `write` creates and edits files, so `Write`, `Edit` and `MultiEdit` are all
/// `write`.
fn kiro_tool(lower: &str) -> Alias {
    if let Some(native) = KIRO_TOOLS.iter().find(|t| **t == lower) {
        return Alias::To(native);
    }
    const NONE: &str = "not among Kiro CLI's built-in tools";
    match lower {
        "fs_read" | "notebookread" | "ls" => Alias::To("read"),
        "fs_write" | "edit" | "multiedit" | "notebookedit" => Alias::To("write"),
        "execute_bash" | "bash" => Alias::To("shell"),
        "use_aws" => Alias::To("aws"),
        "webfetch" => Alias::To("web_fetch"),
        "websearch" => Alias::To("web_search"),
        "task" | "agent" => Alias::To("subagent"),
        "todowrite" | "todoread" => Alias::To("todo_list"),
        "bashoutput" | "killshell" | "killbash" => Alias::None(
            "Kiro CLI has no tool for a background shell (not among its built-in tools)",
        ),
        "askuserquestion" | "skill" | "exitplanmode" | "enterplanmode" | "slashcommand" => {
            Alias::None(NONE)
        }
        _ => Alias::Unknown,
    }
}

/// Where a widened pattern could be kept on a host with native tool names.
fn native_pattern_hint(target: Target) -> &'static str {
    match target {
        Target::Gemini => {
            "a Gemini CLI agent file cannot restrict a tool's arguments; Gemini's policy engine \
             can, with a `[[rule]]` for this subagent, which this converter does not write"
        }
        _ => {
            "a Kiro CLI agent's `tools` cannot restrict a tool's arguments; its `toolsSettings` \
             can, which this converter does not write"
        }
    }
}

/// [`map_tools`] for Gemini CLI and Kiro CLI, whose `tools` name individual tools.
fn map_native(target: Target, source: &[String]) -> MappedTools {
    let mut out = MappedTools::default();
    for raw in source {
        let raw = raw.trim();
        if raw == "*" {
            push_unique(&mut out.tools, "*".to_string());
            continue;
        }
        if let Some(parts) = mcp_parts(raw) {
            let Some((server, tool)) = parts.recorded_in(&mut out, raw) else {
                continue;
            };
            let name = match (target, tool) {
                (Target::Gemini, "*") => format!("mcp_{server}_*"),
                (Target::Gemini, _) => format!("mcp_{server}_{tool}"),
                (_, "*") => format!("@{server}"),
                _ => format!("@{server}/{tool}"),
            };
            push_unique(&mut out.tools, name);
            continue;
        }
        let (base, pattern) = match raw.find('(') {
            Some(i) if raw.ends_with(')') => (raw[..i].trim(), Some(&raw[i..])),
            _ => (raw, None),
        };
        let lower = base.to_ascii_lowercase();
        let alias = if target == Target::Gemini {
            gemini_tool(&lower)
        } else {
            kiro_tool(&lower)
        };
        match alias {
            Alias::To(tool) => {
                if let Some(pattern) = pattern {
                    out.widened.push(format!(
                        "`{raw}`: the pattern `{pattern}` was dropped ({}), so `{tool}` is granted \
                         without it",
                        native_pattern_hint(target)
                    ));
                }
                push_unique(&mut out.tools, tool.to_string());
            }
            Alias::None(reason) => drop_unmapped(&mut out, raw, Some(reason), target),
            Alias::Unknown => drop_unmapped(&mut out, raw, None, target),
        }
    }
    out
}

/// Every tool a Gemini CLI / Kiro CLI agent with no `tools` restriction has, as this converter
/// names them (the targets of the Claude tools it maps), in a fixed order.
#[must_use]
pub fn all_native_tools(target: Target) -> Vec<String> {
    let all: Vec<String> = CLAUDE_NAMES.iter().map(|s| (*s).to_string()).collect();
    map_native(target, &all).tools
}

/// Map one agent's Claude tool list to `target`.
///
/// For Copilot and VS Code the result is the `tools` list to emit; for OpenCode and Codex it is the
/// set of coarse capabilities (`read`, `edit`, `execute`, …) the agent is granted, which those
/// writers turn into permissions; for Gemini CLI and Kiro CLI it is the host's own tool names; for
/// Claude it is the list in canonical Claude spelling.
#[must_use]
pub fn map_tools(target: Target, source: &[String]) -> MappedTools {
    if target.has_native_tools() {
        return map_native(target, source);
    }
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
        if let Some(parts) = mcp_parts(raw) {
            let Some((server, tool)) = parts.recorded_in(&mut out, raw) else {
                continue;
            };
            if target.supports_mcp_tool_refs() {
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
            Alias::None(reason) => drop_unmapped(&mut out, raw, Some(reason), target),
            Alias::Unknown => drop_unmapped(&mut out, raw, None, target),
        }
    }
    out
}

/// The server and tool of an MCP tool name (`mcp__srv__tool`; `mcp__srv` is every tool of
/// `srv`), or `None` when it is malformed; `mcp_parts` itself is `None` for a name that is not
/// an MCP tool's.
struct McpParts<'a>(Option<(&'a str, &'a str)>);

fn mcp_parts(raw: &str) -> Option<McpParts<'_>> {
    let rest = raw.strip_prefix("mcp__")?;
    let (server, tool) = rest.split_once("__").unwrap_or((rest, "*"));
    Some(McpParts(
        (!server.is_empty() && !tool.is_empty()).then_some((server, tool)),
    ))
}

impl<'a> McpParts<'a> {
    /// The parts, or `None` after recording the malformed name in `out` as dropped.
    fn recorded_in(self, out: &mut MappedTools, raw: &str) -> Option<(&'a str, &'a str)> {
        if self.0.is_none() {
            out.dropped.push(DroppedTool {
                tool: raw.to_string(),
                reason: "not a valid MCP tool name (expected mcp__<server>__<tool>)".into(),
            });
        }
        self.0
    }
}

/// Records a source tool the target has no equivalent for: `reason`, or (for a name the
/// converter does not know) that it is unknown.
fn drop_unmapped(out: &mut MappedTools, raw: &str, reason: Option<&str>, target: Target) {
    out.dropped.push(DroppedTool {
        tool: raw.to_string(),
        reason: reason.map_or_else(
            || format!("not a Claude Code tool this converter knows; no {target} equivalent"),
            str::to_string,
        ),
    });
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
        let e = tools_from_value(&m).unwrap_err();
        assert_eq!(e, ToolsValueError::Value { found: "mapping" });
        assert!(e.to_string().starts_with("is a mapping; "), "{e}");
        let n: Value = serde_yaml_ng::from_str("[Read, 3]").unwrap();
        let e = tools_from_value(&n).unwrap_err();
        assert_eq!(e, ToolsValueError::Item { found: "number" });
        assert!(e.to_string().starts_with("lists a number where"), "{e}");
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
    fn gemini_table() {
        let m = map_tools(
            Target::Gemini,
            &v(&[
                "Read",
                "Write",
                "Edit",
                "MultiEdit",
                "Glob",
                "Grep",
                "LS",
                "Bash",
                "WebFetch",
                "WebSearch",
                "TodoWrite",
                "AskUserQuestion",
                "Skill",
                "ExitPlanMode",
                "EnterPlanMode",
                "mcp__github__get_issue",
                "mcp__context7__*",
                "mcp__docs",
                "read_many_files",
            ]),
        );
        assert_eq!(
            m.tools,
            v(&[
                "read_file",
                "write_file",
                "replace",
                "glob",
                "grep_search",
                "list_directory",
                "run_shell_command",
                "web_fetch",
                "google_web_search",
                "write_todos",
                "ask_user",
                "activate_skill",
                "exit_plan_mode",
                "enter_plan_mode",
                "mcp_github_get_issue",
                "mcp_context7_*",
                "mcp_docs_*",
                "read_many_files",
            ])
        );
        assert!(m.dropped.is_empty() && m.widened.is_empty(), "{m:?}");
    }

    #[test]
    fn gemini_drops_subagents_and_shell_helpers_with_reasons() {
        let m = map_tools(
            Target::Gemini,
            &v(&[
                "Task",
                "Agent",
                "NotebookEdit",
                "BashOutput",
                "KillShell",
                "Frob",
                "Read",
            ]),
        );
        assert_eq!(m.tools, v(&["read_file"]));
        let dropped: Vec<_> = m.dropped.iter().map(|d| d.tool.as_str()).collect();
        assert_eq!(
            dropped,
            [
                "Task",
                "Agent",
                "NotebookEdit",
                "BashOutput",
                "KillShell",
                "Frob"
            ]
        );
        assert!(m.dropped[0].reason.contains("cannot call other subagents"));
        assert!(m.dropped[5].reason.contains("no gemini equivalent"));
    }

    #[test]
    fn kiro_table() {
        let m = map_tools(
            Target::Kiro,
            &v(&[
                "Read",
                "LS",
                "Write",
                "Edit",
                "MultiEdit",
                "Glob",
                "Grep",
                "Bash",
                "WebFetch",
                "WebSearch",
                "Task",
                "Agent",
                "TodoWrite",
                "mcp__github__get_issue",
                "mcp__context7__*",
                "fs_read",
                "execute_bash",
                "aws",
            ]),
        );
        assert_eq!(
            m.tools,
            v(&[
                "read",
                "write",
                "glob",
                "grep",
                "shell",
                "web_fetch",
                "web_search",
                "subagent",
                "todo_list",
                "@github/get_issue",
                "@context7",
                "aws",
            ])
        );
        assert!(m.dropped.is_empty(), "{m:?}");
        let m = map_tools(
            Target::Kiro,
            &v(&["AskUserQuestion", "Skill", "ExitPlanMode", "BashOutput"]),
        );
        assert!(m.tools.is_empty());
        assert_eq!(m.dropped.len(), 4);
    }

    #[test]
    fn native_patterns_are_widened_with_where_they_could_live() {
        let m = map_tools(Target::Gemini, &v(&["Bash(git:*)"]));
        assert_eq!(m.tools, v(&["run_shell_command"]));
        assert!(m.widened[0].contains("policy engine"), "{:?}", m.widened);
        let m = map_tools(Target::Kiro, &v(&["Bash(git:*)"]));
        assert_eq!(m.tools, v(&["shell"]));
        assert!(m.widened[0].contains("toolsSettings"), "{:?}", m.widened);
    }

    #[test]
    fn all_native_tools_cover_the_mapped_claude_tools() {
        let g = all_native_tools(Target::Gemini);
        assert!(g.contains(&"read_file".to_string()) && !g.contains(&"*".to_string()));
        let k = all_native_tools(Target::Kiro);
        assert!(k.contains(&"subagent".to_string()));
        assert!(!g.iter().any(|t| t == "subagent"));
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
