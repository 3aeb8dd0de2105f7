//! One Claude Code agent definition: parse it, and render it for a target.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_yaml_ng::{Mapping, Value};

use crate::error::{ConvertError, Result};
use crate::frontmatter::{Document, kind_of, parse_document, render_document};
use crate::target::Target;
use crate::tools::{DroppedTool, all_native_tools, map_tools, tools_from_value};

/// A parsed Claude Code agent file.
#[derive(Debug, Clone, PartialEq)]
pub struct Agent {
    /// Where it was read from (for messages).
    pub source: PathBuf,
    /// `name` from the frontmatter, else the file stem (without `.md` and `.agent`).
    pub name: String,
    pub description: Option<String>,
    /// `tools` as written (comma string or list), `None` when the key is absent.
    pub tools: Option<Vec<String>>,
    /// `disallowedTools`, `None` when absent.
    pub disallowed_tools: Option<Vec<String>>,
    /// `model`, `None` when absent.
    pub model: Option<String>,
    /// The whole frontmatter in source order, unknown keys included.
    pub frontmatter: Mapping,
    /// Whether the file had a frontmatter block at all.
    pub has_frontmatter: bool,
    /// The markdown after the frontmatter, byte for byte.
    pub body: String,
}

/// What happened to one agent.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct AgentReport {
    pub name: String,
    pub source: String,
    /// The written file, relative to the destination.
    pub output: String,
    /// The source `tools`, as written; absent when the source declares none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools_in: Option<Vec<String>>,
    /// The target tools emitted (Copilot, VS Code, Gemini CLI, Kiro CLI, Claude) or the
    /// capabilities granted (OpenCode); absent when no `tools` were emitted (the agent gets the
    /// host's defaults, or, for Codex, whose agent files have no tool list, every Codex tool).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools_out: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dropped_tools: Vec<DroppedTool>,
    /// Frontmatter keys the target cannot carry (expected ones such as `color` included).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dropped_keys: Vec<String>,
    /// Expected losses (e.g. `model: sonnet` dropped for Copilot).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Things a person should look at: unknown keys or tools dropped, privileges widened.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// An agent rendered for a target.
#[derive(Debug, Clone, PartialEq)]
pub struct ConvertedAgent {
    /// File name (no directory), e.g. `ce-foo.agent.md`.
    pub file_name: String,
    pub content: String,
    pub report: AgentReport,
}

/// Normalise a name for use as a file name: lowercase, anything outside `[a-z0-9_-]` becomes `-`,
/// runs of `-` collapse, edge `-` are trimmed; empty becomes `agent`.
#[must_use]
pub fn normalize_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.trim().chars() {
        let c = c.to_ascii_lowercase();
        let c = if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
            c
        } else {
            '-'
        };
        if c == '-' && out.ends_with('-') {
            continue;
        }
        out.push(c);
    }
    let trimmed = out.trim_matches('-');
    if trimmed.is_empty() {
        "agent".to_string()
    } else {
        trimmed.to_string()
    }
}

fn file_stem_name(path: &Path) -> String {
    let file = path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = file.strip_suffix(".md").unwrap_or(&file);
    stem.strip_suffix(".agent").unwrap_or(stem).to_string()
}

fn string_field(doc: &Document, fm: &Mapping, path: &Path, key: &str) -> Result<Option<String>> {
    match fm.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(Value::Number(n)) => Ok(Some(n.to_string())),
        Some(Value::Bool(b)) => Ok(Some(b.to_string())),
        Some(other) => Err(ConvertError::Field {
            path: path.to_path_buf(),
            line: doc.key_line(key),
            key: key.to_string(),
            message: format!("is a {}; it must be a string", kind_of(other)),
        }),
    }
}

fn tools_field(
    doc: &Document,
    fm: &Mapping,
    path: &Path,
    key: &str,
) -> Result<Option<Vec<String>>> {
    match fm.get(key) {
        None => Ok(None),
        Some(v) => tools_from_value(v).map_err(|e| ConvertError::Field {
            path: path.to_path_buf(),
            line: doc.key_line(key),
            key: key.to_string(),
            message: e.to_string(),
        }),
    }
}

/// Parse an agent file. `path` is used for the name fallback and for messages.
pub fn parse_agent(path: &Path, text: &str) -> Result<Agent> {
    parse_agent_with(path, text, false)
}

/// [`parse_agent`], where `tools_may_be_map` lets `tools` be a map (OpenCode's `tools:
/// {bash: false}`); `tools` is then `None` and the map stays in `frontmatter`.
pub(crate) fn parse_agent_with(path: &Path, text: &str, tools_may_be_map: bool) -> Result<Agent> {
    let doc = parse_document(path, text)?;
    let has_frontmatter = doc.frontmatter.is_some();
    let fm = doc.frontmatter.clone().unwrap_or_default();
    let name = string_field(&doc, &fm, path, "name")?
        .filter(|n| !n.trim().is_empty())
        .unwrap_or_else(|| file_stem_name(path));
    Ok(Agent {
        source: path.to_path_buf(),
        name,
        description: string_field(&doc, &fm, path, "description")?,
        tools: if tools_may_be_map && matches!(fm.get("tools"), Some(Value::Mapping(_))) {
            None
        } else {
            tools_field(&doc, &fm, path, "tools")?
        },
        disallowed_tools: tools_field(&doc, &fm, path, "disallowedTools")?,
        model: string_field(&doc, &fm, path, "model")?,
        frontmatter: fm,
        has_frontmatter,
        body: doc.body,
    })
}

/// Keys every target handles itself (never passed through as-is).
const HANDLED: &[&str] = &["name", "description", "tools", "disallowedTools", "model"];

/// Claude Code agent keys no other target has, which a Claude agent carries as they are (the
/// reverse conversion keeps them when a source agent has them).
pub(crate) const CLAUDE_KEYS: &[&str] = &[
    "color",
    "permissionMode",
    "maxTurns",
    "skills",
    "mcpServers",
    "hooks",
    "memory",
    "background",
    "isolation",
];

/// Whether dropping `key` when converting a Claude agent away is expected (a note, not a
/// warning): the [`CLAUDE_KEYS`], and `capabilities`, which only older Claude agents wrote.
fn claude_only(key: &str) -> bool {
    CLAUDE_KEYS.contains(&key) || key == "capabilities"
}

/// Keys VS Code / Copilot custom agents accept besides the handled ones.
pub(crate) const VSCODE_KEYS: &[&str] = &[
    "argument-hint",
    "agents",
    "user-invocable",
    "disable-model-invocation",
    "target",
    "mcp-servers",
    "handoffs",
    "metadata",
];

/// Claude Code's built-in tool names, as an agent body may name them ("use the Grep tool").
const CLAUDE_TOOL_NAMES: &[&str] = &[
    "Read",
    "Write",
    "Edit",
    "MultiEdit",
    "Grep",
    "Glob",
    "LS",
    "Bash",
    "BashOutput",
    "KillShell",
    "WebFetch",
    "WebSearch",
    "Task",
    "TodoWrite",
    "TodoRead",
    "NotebookEdit",
    "NotebookRead",
    "SlashCommand",
    "ExitPlanMode",
];

/// Warnings about names in an agent body, each distinct key once, in order of first mention.
#[derive(Default)]
pub(crate) struct Mentions {
    seen: Vec<String>,
    out: Vec<String>,
}

impl Mentions {
    pub(crate) fn note(&mut self, key: String, msg: String) {
        if !self.seen.contains(&key) {
            self.seen.push(key);
            self.out.push(msg);
        }
    }

    pub(crate) fn into_warnings(self) -> Vec<String> {
        self.out
    }
}

/// A byte of a tool or file name as the body scanners read it.
pub(crate) fn is_word_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'-'
}

/// Warnings for Claude Code-only names in an agent body that the conversion leaves as they
/// are: `mcp__srv__tool` names, "the Grep tool" / `` `Grep` ``, and `CLAUDE.md`. Each distinct
/// mention once, in order of first appearance, with the target's name where there is one.
#[must_use]
pub fn body_references(body: &str, target: Target) -> Vec<String> {
    let mut found = Mentions::default();
    let mut note = |key: String, msg: String| found.note(key, msg);
    let bytes = body.as_bytes();
    let word = is_word_byte;
    let mut i = 0;
    while i < bytes.len() {
        let at_start = i == 0 || !word(bytes[i - 1]);
        if at_start && body[i..].starts_with("mcp__") {
            let end = (i..bytes.len())
                .find(|&j| !word(bytes[j]) && bytes[j] != b'*')
                .unwrap_or(bytes.len());
            let name = body[i..end].trim_end_matches(['-', '_']);
            let m = map_tools(target, &[name.to_string()]);
            let msg = match m.tools.first() {
                Some(t) => format!(
                    "the body names the Claude Code tool `{name}`; on {target} it is `{t}`: edit the body"
                ),
                None => format!(
                    "the body names the Claude Code tool `{name}`, which {target} agents cannot name: edit the body"
                ),
            };
            note(name.to_string(), msg);
            i = end;
            continue;
        }
        if at_start {
            for tool in CLAUDE_TOOL_NAMES {
                let Some(rest) = body[i..].strip_prefix(tool) else {
                    continue;
                };
                let after = rest.as_bytes().first().copied();
                if after.is_some_and(word) {
                    continue;
                }
                let backticked = i > 0 && bytes[i - 1] == b'`' && after == Some(b'`');
                let as_tool = rest.starts_with(" tool");
                if !(backticked || as_tool) {
                    continue;
                }
                let m = map_tools(target, &[(*tool).to_string()]);
                let msg = match m.tools.first() {
                    Some(t) => format!(
                        "the body names Claude Code's `{tool}` tool; {target} calls it `{t}`: edit the body"
                    ),
                    None => format!(
                        "the body names Claude Code's `{tool}` tool, which {target} does not have: edit the body"
                    ),
                };
                note((*tool).to_string(), msg);
                break;
            }
        }
        if at_start && body[i..].starts_with("CLAUDE.md") {
            let instead = match target {
                Target::Copilot | Target::Vscode => {
                    "`.github/copilot-instructions.md` or `AGENTS.md`"
                }
                // google-gemini/gemini-cli docs/cli/gemini-md.md: the default context file name.
                Target::Gemini => "`GEMINI.md`",
                // kiro.dev/docs/steering: project guidance lives in steering files.
                Target::Kiro => "steering files in `.kiro/steering/`",
                _ => "`AGENTS.md`",
            };
            note(
                "CLAUDE.md".into(),
                format!(
                    "the body names `CLAUDE.md`, which {target} does not read (it reads {instead}): edit the body"
                ),
            );
        }
        i += body[i..].chars().next().map_or(1, char::len_utf8);
    }
    found.into_warnings()
}

/// Keys Gemini CLI subagents accept besides the ones this converter writes (`kind`, `temperature`,
/// `max_turns`, `timeout_mins`: google-gemini/gemini-cli `docs/core/subagents.md`).
const GEMINI_KEYS: &[&str] = &["kind", "temperature", "max_turns", "timeout_mins"];

/// Keys OpenCode agents accept besides the ones this converter writes.
pub(crate) const OPENCODE_KEYS: &[&str] =
    &["temperature", "top_p", "mode", "disable", "hidden", "steps"];

/// The coarse capabilities an agent with no `tools` key has on Copilot / VS Code.
const ALL_ALIASES: &[&str] = &["read", "search", "edit", "execute", "web", "agent", "todo"];

impl Agent {
    fn source_display(&self) -> String {
        self.source.display().to_string()
    }

    /// Convert to `target`.
    pub fn convert(&self, target: Target) -> Result<ConvertedAgent> {
        let file_name = format!("{}{}", normalize_name(&self.name), target.agent_extension());
        let mut report = AgentReport {
            name: self.name.clone(),
            source: self.source_display(),
            output: file_name.clone(),
            tools_in: self.tools.clone(),
            ..AgentReport::default()
        };
        if !self.has_frontmatter {
            report.warnings.push(
                "no YAML frontmatter: the name comes from the file name and there is no description"
                    .into(),
            );
        }
        let content = match target {
            Target::Copilot | Target::Vscode => self.render_copilot(target, &mut report)?,
            Target::Opencode => self.render_opencode(&mut report)?,
            Target::Codex => self.render_codex(&mut report)?,
            Target::Gemini => self.render_gemini(&mut report)?,
            Target::Kiro => self.render_kiro(&mut report)?,
            Target::Claude => self.render_claude(&mut report)?,
        };
        if target != Target::Claude {
            report.warnings.extend(body_references(&self.body, target));
        }
        Ok(ConvertedAgent {
            file_name,
            content,
            report,
        })
    }

    fn description_or_fallback(&self, report: &mut AgentReport) -> String {
        match &self.description {
            Some(d) if !d.trim().is_empty() => d.clone(),
            _ => {
                report.warnings.push(
                    "no `description`: wrote a placeholder; hosts pick agents by description, so \
                     write one"
                        .into(),
                );
                format!("Converted from Claude Code agent {}", self.name)
            }
        }
    }

    /// The tools (or capabilities) the target grants, after `tools` and `disallowedTools`.
    fn effective_tools(&self, target: Target, report: &mut AgentReport) -> Option<Vec<String>> {
        let allow = self.tools.as_ref().map(|t| {
            let m = map_tools(target, t);
            report.dropped_tools.extend(m.dropped.iter().cloned());
            for d in &m.dropped {
                report
                    .warnings
                    .push(format!("tool `{}` dropped: {}", d.tool, d.reason));
            }
            report.warnings.extend(m.widened.iter().cloned());
            m.tools
        });
        let Some(deny) = &self.disallowed_tools else {
            return allow;
        };
        let mut denied = Vec::new();
        for tool in deny {
            if tool.contains('(') {
                report.warnings.push(format!(
                    "disallowedTools `{tool}`: {target} cannot deny a tool for some arguments \
                     only; not denied"
                ));
                continue;
            }
            let m = map_tools(target, std::slice::from_ref(tool));
            if m.tools.is_empty() {
                report.warnings.push(format!(
                    "disallowedTools `{tool}`: no {target} equivalent to deny; not denied"
                ));
            }
            denied.extend(m.tools);
        }
        let native = target.has_native_tools();
        let base = allow.unwrap_or_else(|| {
            if native {
                report.notes.push(format!(
                    "no `tools` but `disallowedTools`: granted every {target} built-in tool that a \
                     Claude Code tool maps to, except the denied ones (MCP tools are then not \
                     granted)"
                ));
                return all_native_tools(target);
            }
            report.notes.push(format!(
                "no `tools` but `disallowedTools`: granted every {target} tool set except the \
                 denied ones (MCP tools are then not granted)"
            ));
            ALL_ALIASES.iter().map(|s| (*s).to_string()).collect()
        });
        if native {
            report.notes.push(format!(
                "disallowedTools applied to {target} tool names (Claude tools that share one, \
                 such as Edit and MultiEdit, are denied together)"
            ));
        } else {
            report.notes.push(
                "disallowedTools applied at tool-set granularity (e.g. Write denies all of `edit`)"
                    .into(),
            );
        }
        Some(base.into_iter().filter(|t| !denied.contains(t)).collect())
    }

    /// Drop or pass through the keys not handled explicitly.
    fn pass_through(
        &self,
        keep: &[&str],
        target: Target,
        out: &mut Mapping,
        report: &mut AgentReport,
    ) {
        self.pass_through_except(keep, &[], target, out, report);
    }

    /// [`Agent::pass_through`], skipping the keys in `done` (which the renderer wrote itself).
    fn pass_through_except(
        &self,
        keep: &[&str],
        done: &[&str],
        target: Target,
        out: &mut Mapping,
        report: &mut AgentReport,
    ) {
        for (k, v) in &self.frontmatter {
            let key = match k {
                Value::String(s) => s.as_str(),
                other => {
                    report.warnings.push(format!(
                        "a frontmatter key that is a {} was dropped",
                        kind_of(other)
                    ));
                    continue;
                }
            };
            if HANDLED.contains(&key) || done.contains(&key) {
                continue;
            }
            if keep.contains(&key) {
                out.insert(k.clone(), v.clone());
            } else if claude_only(key) {
                report.dropped_keys.push(key.to_string());
                report.notes.push(format!(
                    "`{key}` dropped: {target} agents have no equivalent"
                ));
            } else {
                report.dropped_keys.push(key.to_string());
                report.warnings.push(format!(
                    "unknown key `{key}` dropped: {target} agents do not accept it"
                ));
            }
        }
    }

    fn model_note(&self, why: &str, report: &mut AgentReport) {
        if let Some(m) = &self.model
            && m != "inherit"
        {
            report.notes.push(format!("`model: {m}` dropped: {why}"));
        }
    }

    /// `tools:` as a YAML list of the target's names (when the source limits the tools), with a
    /// warning when none of them has an equivalent.
    fn insert_tools(&self, target: Target, fm: &mut Mapping, report: &mut AgentReport) {
        if let Some(tools) = self.effective_tools(target, report) {
            if tools.is_empty() {
                report.warnings.push(
                    "`tools: []` written: no source tool has an equivalent, so the agent gets no \
                     tools"
                        .into(),
                );
            }
            fm.insert(
                "tools".into(),
                Value::Sequence(tools.iter().cloned().map(Value::from).collect()),
            );
            report.tools_out = Some(tools);
        }
    }

    fn render_copilot(&self, target: Target, report: &mut AgentReport) -> Result<String> {
        let mut fm = Mapping::new();
        fm.insert("name".into(), self.name.clone().into());
        fm.insert(
            "description".into(),
            self.description_or_fallback(report).into(),
        );
        self.insert_tools(target, &mut fm, report);
        match &self.model {
            // A display name ("Claude Sonnet 4.5 (copilot)") is what these hosts accept.
            Some(m) if m.contains(' ') => {
                fm.insert("model".into(), m.clone().into());
            }
            _ => self.model_note(
                "the host expects a display name such as 'Claude Sonnet 4.5 (copilot)', not a \
                 Claude alias or id; the agent uses the session's model",
                report,
            ),
        }
        self.pass_through(VSCODE_KEYS, target, &mut fm, report);
        render_document(&fm, &self.body)
    }

    fn render_opencode(&self, report: &mut AgentReport) -> Result<String> {
        let target = Target::Opencode;
        let mut fm = Mapping::new();
        fm.insert(
            "description".into(),
            self.description_or_fallback(report).into(),
        );
        fm.insert("mode".into(), "subagent".into());
        if let Some(caps) = self.effective_tools(target, report) {
            let mut rules = Vec::new();
            for (cap, action) in [
                ("edit", "edit"),
                ("execute", "shell"),
                ("agent", "subagent"),
            ] {
                if !caps.iter().any(|c| c == cap || c == "*") {
                    let mut rule = Mapping::new();
                    rule.insert("action".into(), action.into());
                    rule.insert("resource".into(), "*".into());
                    rule.insert("effect".into(), "deny".into());
                    rules.push(Value::Mapping(rule));
                }
            }
            if !caps.iter().any(|c| c == "web" || c == "*") {
                report.notes.push(
                    "web access is not restricted: OpenCode permissions have no rule this \
                     converter can write for it"
                        .into(),
                );
            }
            if !rules.is_empty() {
                fm.insert("permissions".into(), Value::Sequence(rules));
            }
            report.tools_out = Some(caps);
        }
        self.model_note(
            "OpenCode subagents inherit the session's model (an explicit one fails when the \
             provider lacks it)",
            report,
        );
        let mut extra = Mapping::new();
        self.pass_through(OPENCODE_KEYS, target, &mut extra, report);
        for (k, v) in extra {
            fm.insert(k, v);
        }
        render_document(&fm, &self.body)
    }

    fn render_codex(&self, report: &mut AgentReport) -> Result<String> {
        let target = Target::Codex;
        // Keys in a fixed, readable order; each value is TOML-encoded by the `toml` crate.
        let mut keys: Vec<(&str, toml::Value)> = vec![
            ("name", toml::Value::String(normalize_name(&self.name))),
            (
                "description",
                toml::Value::String(self.description_or_fallback(report)),
            ),
        ];
        // A Codex agent file has no tool list: the tools are not written (so `tools_out` stays
        // empty), and the one thing they decide is whether the agent may write files.
        if let Some(caps) = self.effective_tools(target, report) {
            if caps.iter().any(|c| c == "edit" || c == "*") {
                report.notes.push(
                    "`tools` not written: Codex agents have no tool list, so the agent can use \
                     every Codex tool"
                        .into(),
                );
            } else {
                keys.push(("sandbox_mode", toml::Value::String("read-only".into())));
                report.notes.push(
                    "`tools` not written: Codex agents have no tool list; as none of them edits \
                     files, `sandbox_mode = \"read-only\"` keeps the agent (which always has the \
                     shell) from writing"
                        .into(),
                );
            }
        }
        self.model_note(
            "Codex runs OpenAI models; the agent uses the session's model",
            report,
        );
        self.pass_through(&[], target, &mut Mapping::new(), report);
        keys.push((
            "developer_instructions",
            toml::Value::String(self.body.trim().to_string()),
        ));
        let mut out = String::new();
        for (k, v) in keys {
            out.push_str(k);
            out.push_str(" = ");
            out.push_str(&v.to_string());
            out.push('\n');
        }
        Ok(out)
    }

    /// The slug a host that needs one (Gemini CLI, Kiro CLI) gets as the name, with a note when
    /// it differs from the source name.
    fn slug_name(&self, target: Target, report: &mut AgentReport) -> String {
        let slug = normalize_name(&self.name);
        if slug != self.name {
            report.notes.push(format!(
                "name `{}` written as `{slug}`: {target} agent names are lowercase letters, \
                 digits, `-` and `_`",
                self.name
            ));
        }
        slug
    }

    /// The agent's own inline MCP servers (Claude's `mcpServers`: a map of server configs, or a
    /// list of server names and single-server maps), for a host whose agents define servers
    /// inline (Gemini CLI, Kiro CLI). Servers named only by reference are reported.
    fn inline_mcp_servers(&self, target: Target, report: &mut AgentReport) -> Option<Mapping> {
        let value = self.frontmatter.get("mcpServers")?;
        let mut out = Mapping::new();
        // Each server in the host's shape (Claude's `type` dropped; `url` → Gemini's `httpUrl`).
        let mut merge = |m: &Mapping, report: &mut AgentReport| {
            for (k, v) in m {
                let name = k.as_str().unwrap_or("?");
                let server = serde_json::to_value(v)
                    .ok()
                    .filter(serde_json::Value::is_object)
                    .and_then(|j| {
                        crate::plan::native_mcp_server(target, name, &j, &mut report.warnings)
                    })
                    .and_then(|m| serde_yaml_ng::to_value(m).ok());
                match server {
                    Some(server) => {
                        out.insert(k.clone(), server);
                    }
                    None if !v.is_mapping() => report.warnings.push(format!(
                        "`mcpServers` entry `{name}` is not a server configuration; not converted"
                    )),
                    None => {}
                }
            }
        };
        match value {
            Value::Mapping(m) => merge(m, report),
            Value::Sequence(items) => {
                for item in items {
                    match item {
                        Value::Mapping(m) => merge(m, report),
                        Value::String(name) => report.warnings.push(format!(
                            "`mcpServers` names the server `{name}`, which {target} agents cannot \
                             refer to by name: configure it inline in the agent or for the host"
                        )),
                        other => report.warnings.push(format!(
                            "`mcpServers` lists a {}; not converted",
                            kind_of(other)
                        )),
                    }
                }
            }
            Value::Null => {}
            other => report.warnings.push(format!(
                "`mcpServers` is a {}; not converted",
                kind_of(other)
            )),
        }
        (!out.is_empty()).then_some(out)
    }

    /// A Gemini CLI subagent (google-gemini/gemini-cli `docs/core/subagents.md`, also at
    /// geminicli.com/docs/core/subagents): Markdown with YAML frontmatter, the body the system
    /// prompt. `name` must be a slug; `tools` omitted inherits every tool, so no `tools` key stays
    /// absent; `mcpServers` are inline servers; `max_turns` is Claude's `maxTurns`.
    fn render_gemini(&self, report: &mut AgentReport) -> Result<String> {
        let target = Target::Gemini;
        let mut fm = Mapping::new();
        fm.insert("name".into(), self.slug_name(target, report).into());
        fm.insert(
            "description".into(),
            self.description_or_fallback(report).into(),
        );
        self.insert_tools(target, &mut fm, report);
        match &self.model {
            Some(m) if m.starts_with("gemini-") => {
                fm.insert("model".into(), m.clone().into());
            }
            _ => self.model_note(
                "Gemini CLI runs Gemini models; the agent inherits the session's model",
                report,
            ),
        }
        if let Some(servers) = self.inline_mcp_servers(target, report) {
            fm.insert("mcpServers".into(), Value::Mapping(servers));
        }
        let mut done = vec!["mcpServers"];
        match self.frontmatter.get("maxTurns") {
            Some(v @ Value::Number(_)) => {
                fm.insert("max_turns".into(), v.clone());
                done.push("maxTurns");
            }
            Some(_) => {
                report
                    .warnings
                    .push("`maxTurns` is not a number; not converted to `max_turns`".into());
                done.push("maxTurns");
            }
            None => {}
        }
        self.pass_through_except(GEMINI_KEYS, &done, target, &mut fm, report);
        render_document(&fm, &self.body)
    }

    /// A Kiro CLI custom agent (kiro.dev/docs/cli/custom-agents/configuration-reference): one JSON
    /// object with `name`, `description`, `prompt` (the body, inline), `tools` and `mcpServers`.
    /// `allowedTools` (tools used without asking) is never written: Claude's `tools` grants
    /// availability, not approval. No `tools` becomes `["*"]`, every tool, as a Claude agent
    /// without `tools` has.
    fn render_kiro(&self, report: &mut AgentReport) -> Result<String> {
        let target = Target::Kiro;
        let mut out = serde_json::Map::new();
        out.insert("name".into(), self.slug_name(target, report).into());
        out.insert(
            "description".into(),
            self.description_or_fallback(report).into(),
        );
        out.insert("prompt".into(), self.body.trim().into());
        let tools = self
            .effective_tools(target, report)
            .unwrap_or_else(|| vec!["*".to_string()]);
        if tools.is_empty() {
            report.warnings.push(
                "`\"tools\": []` written: no source tool has an equivalent, so the agent gets no \
                 tools"
                    .into(),
            );
        }
        out.insert("tools".into(), tools.clone().into());
        report.tools_out = Some(tools);
        self.model_note(
            "Kiro CLI names models by its own ids; the agent uses the session's model",
            report,
        );
        if let Some(servers) = self.inline_mcp_servers(target, report) {
            let json = serde_json::to_value(&servers).map_err(|e| ConvertError::Serialise {
                what: "Kiro agent mcpServers".into(),
                message: e.to_string(),
            })?;
            out.insert("mcpServers".into(), json);
        }
        self.pass_through_except(&[], &["mcpServers"], target, &mut Mapping::new(), report);
        serde_json::to_string_pretty(&serde_json::Value::Object(out))
            .map(|s| s + "\n")
            .map_err(|e| ConvertError::Serialise {
                what: "Kiro agent JSON".into(),
                message: e.to_string(),
            })
    }

    fn render_claude(&self, report: &mut AgentReport) -> Result<String> {
        let mut fm = Mapping::new();
        if !self.frontmatter.contains_key("name") {
            fm.insert("name".into(), self.name.clone().into());
        }
        if self
            .description
            .as_deref()
            .is_none_or(|d| d.trim().is_empty())
        {
            report.warnings.push(
                "no `description`: Claude Code needs one to decide when to use the agent".into(),
            );
        }
        for (k, v) in &self.frontmatter {
            match k.as_str() {
                Some(key @ ("tools" | "disallowedTools")) => {
                    let list = if key == "tools" {
                        &self.tools
                    } else {
                        &self.disallowed_tools
                    };
                    if let Some(list) = list {
                        let mapped = map_tools(Target::Claude, list);
                        if key == "tools" {
                            report.tools_out = Some(mapped.tools.clone());
                        }
                        fm.insert(k.clone(), mapped.tools.join(", ").into());
                    }
                }
                _ => {
                    fm.insert(k.clone(), v.clone());
                }
            }
        }
        render_document(&fm, &self.body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frontmatter::parse_document;

    fn agent(text: &str) -> Agent {
        parse_agent(Path::new("agents/ce-x.md"), text).unwrap()
    }

    const SAMPLE: &str = "---\nname: ce-x\ndescription: \"Reviews: things, carefully\"\nmodel: \
                          sonnet\ntools: Read, Grep, Glob, Bash, Write\ncolor: blue\n---\n\nBody \
                          text\n";

    fn fm_of(content: &str) -> Mapping {
        parse_document(Path::new("out"), content)
            .unwrap()
            .frontmatter
            .unwrap()
    }

    #[test]
    fn parses_fields() {
        let a = agent(SAMPLE);
        assert_eq!(a.name, "ce-x");
        assert_eq!(a.description.as_deref(), Some("Reviews: things, carefully"));
        assert_eq!(a.model.as_deref(), Some("sonnet"));
        assert_eq!(a.tools.as_ref().unwrap().len(), 5);
        assert_eq!(a.body, "\nBody text\n");
    }

    #[test]
    fn name_falls_back_to_the_file_stem() {
        let a = parse_agent(Path::new("d/foo.agent.md"), "---\ndescription: d\n---\n").unwrap();
        assert_eq!(a.name, "foo");
        let a = parse_agent(Path::new("d/bar.md"), "no frontmatter").unwrap();
        assert_eq!(a.name, "bar");
        assert!(!a.has_frontmatter);
    }

    #[test]
    fn wrong_field_types_name_the_line() {
        let err = parse_agent(
            Path::new("a.md"),
            "---\nname: a\ndescription: d\ntools:\n  x: y\n---\n",
        )
        .unwrap_err()
        .to_string();
        assert!(err.starts_with("a.md:4: `tools` is a mapping"), "{err}");
        let err = parse_agent(Path::new("a.md"), "---\nname: [a]\n---\n")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("a.md:2: `name` is a list"), "{err}");
    }

    #[test]
    fn copilot_output() {
        let c = agent(SAMPLE).convert(Target::Copilot).unwrap();
        assert_eq!(c.file_name, "ce-x.agent.md");
        let fm = fm_of(&c.content);
        let keys: Vec<_> = fm.keys().map(|k| k.as_str().unwrap()).collect();
        assert_eq!(keys, ["name", "description", "tools"]);
        let tools: Vec<_> = fm["tools"]
            .as_sequence()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(tools, ["read", "search", "execute", "edit"]);
        assert_eq!(c.report.dropped_keys, ["color"]);
        assert!(c.report.notes.iter().any(|n| n.contains("model: sonnet")));
        assert!(c.report.warnings.is_empty(), "{:?}", c.report.warnings);
        assert!(c.content.ends_with("---\n\nBody text\n"));
    }

    #[test]
    fn no_tools_key_means_no_tools_output() {
        let c = agent("---\nname: a\ndescription: d\nmodel: inherit\n---\nb")
            .convert(Target::Vscode)
            .unwrap();
        assert!(!fm_of(&c.content).contains_key("tools"));
        assert!(c.report.notes.is_empty());
        assert_eq!(c.report.tools_out, None);
    }

    #[test]
    fn display_name_models_are_kept_for_copilot() {
        let c = agent("---\nname: a\ndescription: d\nmodel: Claude Sonnet 4.5 (copilot)\n---\n")
            .convert(Target::Vscode)
            .unwrap();
        assert_eq!(
            fm_of(&c.content)["model"].as_str(),
            Some("Claude Sonnet 4.5 (copilot)")
        );
    }

    #[test]
    fn unknown_keys_warn_where_dropped_and_stay_for_claude() {
        let a =
            agent("---\nname: a\ndescription: d\nx-team: core\nargument-hint: \"[file]\"\n---\n");
        let c = a.convert(Target::Copilot).unwrap();
        let fm = fm_of(&c.content);
        assert_eq!(fm["argument-hint"].as_str(), Some("[file]"));
        assert!(!fm.contains_key("x-team"));
        assert!(c.report.warnings[0].contains("unknown key `x-team`"));
        let c = a.convert(Target::Claude).unwrap();
        assert_eq!(fm_of(&c.content)["x-team"].as_str(), Some("core"));
    }

    #[test]
    fn disallowed_tools_subtract() {
        let a = agent("---\nname: a\ndescription: d\ndisallowedTools: Write, Edit\n---\n");
        let c = a.convert(Target::Vscode).unwrap();
        assert_eq!(
            c.report.tools_out.unwrap(),
            ["read", "search", "execute", "web", "agent", "todo"]
        );
    }

    #[test]
    fn opencode_denies_what_was_not_granted() {
        let c = agent(SAMPLE).convert(Target::Opencode).unwrap();
        assert_eq!(c.file_name, "ce-x.md");
        let fm = fm_of(&c.content);
        assert_eq!(fm["mode"].as_str(), Some("subagent"));
        let rules = fm["permissions"].as_sequence().unwrap();
        let actions: Vec<_> = rules
            .iter()
            .map(|r| r["action"].as_str().unwrap())
            .collect();
        assert_eq!(actions, ["subagent"]);
        let c = agent("---\nname: a\ndescription: d\ntools: Read, Grep\n---\n")
            .convert(Target::Opencode)
            .unwrap();
        let fm = fm_of(&c.content);
        let actions: Vec<_> = fm["permissions"]
            .as_sequence()
            .unwrap()
            .iter()
            .map(|r| r["action"].as_str().unwrap())
            .collect();
        assert_eq!(actions, ["edit", "shell", "subagent"]);
    }

    #[test]
    fn codex_is_valid_toml_with_instructions() {
        let c = agent("---\nname: Ce X\ndescription: \"d: \\\"q\\\"\"\ntools: Read, Grep\n---\n\nDo \"this\"\n")
            .convert(Target::Codex)
            .unwrap();
        assert_eq!(c.file_name, "ce-x.toml");
        let t: toml::Table = toml::from_str(&c.content).unwrap();
        assert_eq!(t["name"].as_str(), Some("ce-x"));
        assert_eq!(t["description"].as_str(), Some("d: \"q\""));
        assert_eq!(t["sandbox_mode"].as_str(), Some("read-only"));
        assert_eq!(t["developer_instructions"].as_str(), Some("Do \"this\""));
    }

    /// Issue 33 item 6: the report lists no tools for a Codex agent, whose TOML has no tool
    /// list; that the tools were not written is the agent's one `lost:` line about them.
    #[test]
    fn codex_reports_no_tools_it_did_not_write() {
        for (tools, sandbox) in [("Read, Grep, WebFetch", true), ("Read, Write, Bash", false)] {
            let c = agent(&format!(
                "---\nname: a\ndescription: d\ntools: {tools}\n---\nB"
            ))
            .convert(Target::Codex)
            .unwrap();
            let t: toml::Table = toml::from_str(&c.content).unwrap();
            let keys: Vec<&str> = t.keys().map(String::as_str).collect();
            let mut want = vec!["description", "developer_instructions", "name"];
            if sandbox {
                want.push("sandbox_mode");
            }
            assert_eq!(keys, want);
            assert_eq!(c.report.tools_out, None);
            let about_tools: Vec<&String> = c
                .report
                .notes
                .iter()
                .filter(|n| n.starts_with("`tools` not written: Codex agents have no tool list"))
                .collect();
            assert_eq!(about_tools.len(), 1, "{:?}", c.report.notes);
        }
    }

    #[test]
    fn claude_normalises_tools_and_keeps_the_rest() {
        let c =
            agent("---\nname: a\ndescription: d\ntools: [read, Grep, grep]\ncolor: blue\n---\nB")
                .convert(Target::Claude)
                .unwrap();
        let fm = fm_of(&c.content);
        assert_eq!(fm["tools"].as_str(), Some("Read, Grep"));
        assert_eq!(fm["color"].as_str(), Some("blue"));
        assert!(c.content.ends_with("---\nB"));
    }

    #[test]
    fn gemini_output() {
        let c = agent(SAMPLE).convert(Target::Gemini).unwrap();
        assert_eq!(c.file_name, "ce-x.md");
        let fm = fm_of(&c.content);
        let keys: Vec<_> = fm.keys().map(|k| k.as_str().unwrap()).collect();
        assert_eq!(keys, ["name", "description", "tools"]);
        let tools: Vec<_> = fm["tools"]
            .as_sequence()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(
            tools,
            [
                "read_file",
                "grep_search",
                "glob",
                "run_shell_command",
                "write_file"
            ]
        );
        assert!(
            c.report
                .notes
                .iter()
                .any(|n| n.contains("`model: sonnet` dropped"))
        );
        assert_eq!(c.report.dropped_keys, ["color"]);
        assert!(c.content.ends_with("---\n\nBody text\n"));
    }

    #[test]
    fn gemini_keeps_turns_inline_servers_and_gemini_models() {
        let a = agent(
            "---\nname: Ce Y\ndescription: d\nmodel: gemini-2.5-pro\nmaxTurns: 12\n\
             temperature: 0.2\nmcpServers:\n  - gh:\n      command: gh-mcp\n      args: [x]\n  \
             - shared\n  - web:\n      type: http\n      url: https://x.invalid\n---\nB\n",
        );
        let c = a.convert(Target::Gemini).unwrap();
        let fm = fm_of(&c.content);
        assert_eq!(fm["name"].as_str(), Some("ce-y"));
        assert_eq!(fm["model"].as_str(), Some("gemini-2.5-pro"));
        assert_eq!(fm["max_turns"].as_u64(), Some(12));
        assert_eq!(fm["temperature"].as_f64(), Some(0.2));
        assert_eq!(fm["mcpServers"]["gh"]["command"].as_str(), Some("gh-mcp"));
        assert_eq!(
            fm["mcpServers"]["web"]["httpUrl"].as_str(),
            Some("https://x.invalid")
        );
        assert!(fm["mcpServers"]["web"].get("type").is_none());
        assert!(!fm.contains_key("tools"), "no tools: inherits every tool");
        assert!(!fm.contains_key("maxTurns"));
        assert!(
            c.report.warnings.iter().any(|w| w.contains("`shared`")),
            "{:?}",
            c.report.warnings
        );
        assert!(
            c.report
                .notes
                .iter()
                .any(|n| n.contains("written as `ce-y`"))
        );
    }

    #[test]
    fn kiro_output_is_json_with_the_body_as_prompt() {
        let c = agent(SAMPLE).convert(Target::Kiro).unwrap();
        assert_eq!(c.file_name, "ce-x.json");
        let v: serde_json::Value = serde_json::from_str(&c.content).unwrap();
        let keys: Vec<_> = v.as_object().unwrap().keys().cloned().collect();
        assert_eq!(keys, ["name", "description", "prompt", "tools"]);
        assert_eq!(v["prompt"], "Body text");
        assert_eq!(
            v["tools"],
            serde_json::json!(["read", "grep", "glob", "shell", "write"])
        );
        assert!(
            c.report
                .notes
                .iter()
                .any(|n| n.contains("`model: sonnet` dropped"))
        );
        // No `tools`: every tool, as on Claude Code; `disallowedTools` subtracts.
        let c = agent("---\nname: a\ndescription: d\n---\nB")
            .convert(Target::Kiro)
            .unwrap();
        let v: serde_json::Value = serde_json::from_str(&c.content).unwrap();
        assert_eq!(v["tools"], serde_json::json!(["*"]));
        let c = agent("---\nname: a\ndescription: d\ndisallowedTools: Bash, Task\n---\nB")
            .convert(Target::Kiro)
            .unwrap();
        let tools = c.report.tools_out.unwrap();
        assert!(tools.contains(&"read".to_string()));
        assert!(!tools.contains(&"shell".to_string()) && !tools.contains(&"subagent".to_string()));
    }

    #[test]
    fn normalize_names() {
        assert_eq!(normalize_name("Security Reviewer"), "security-reviewer");
        assert_eq!(normalize_name("ws:plan//x"), "ws-plan-x");
        assert_eq!(normalize_name("../../etc"), "etc");
        assert_eq!(normalize_name("  "), "agent");
        assert_eq!(normalize_name("ce-ok_1"), "ce-ok_1");
    }
}
