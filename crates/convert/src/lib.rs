//! Agent-definition conversion between hosts (Claude Code, Copilot CLI, VS Code, OpenCode, Codex,
//! Gemini CLI, Kiro CLI) with tool-name mapping.
//!
//! The source is a Claude Code agent file (`*.md` with YAML frontmatter), a directory of them, or a
//! whole Claude Code plugin (`.claude-plugin/plugin.json`, `agents/`, `skills/`, `commands/`,
//! `.mcp.json`, `hooks/`). [`plan`] reads and converts everything in memory (every error surfaces
//! there, before anything is written); [`convert`] then writes the result into a temporary sibling
//! of the destination and renames it into place.
//!
//! With `--from copilot|vscode|opencode` ([`convert_from`], [`reverse`]) agents of those hosts
//! convert back to Claude Code, each coarse alias becoming the Claude tools it stands for.
//!
//! Tool names follow the tables in the project's agent-conversion reference: `Read`→`read`,
//! `Grep`/`Glob`→`search`, `Bash`→`execute`, `Write`/`Edit`/`MultiEdit`→`edit`,
//! `WebFetch`/`WebSearch`→`web`, `Task`→`agent`, `Todo*`→`todo`, `mcp__srv__tool`→`srv/tool` (where
//! the target can name MCP tools; dropped with a warning elsewhere), de-duplicated in order.
//!
//! Gemini CLI and Kiro CLI name their tools one by one, so each Claude tool becomes the host's own
//! (`Read`→`read_file` / `read`, `Bash`→`run_shell_command` / `shell`, `mcp__srv__tool`→
//! `mcp_srv_tool` / `@srv/tool`; see [`tools`]). A plugin becomes a Gemini CLI extension
//! (`gemini-extension.json`, `agents/`, `skills/`, `commands/*.toml`) or a Kiro CLI directory
//! (`agents/*.json`, `skills/`, `settings/mcp.json`).

#![warn(unreachable_pub)]
pub mod agent;
pub mod error;
pub mod frontmatter;
pub mod next;
pub mod plan;
pub mod reverse;
pub mod target;
pub mod tools;
mod write;

use std::path::Path;

pub use agent::{Agent, AgentReport, ConvertedAgent, normalize_name, parse_agent};
pub use error::{ConvertError, Result};
pub use plan::{FileContent, Options, Plan, PlannedFile, Report, SourceKind, plan, plan_from};
pub use target::{Source, Target};
pub use tools::{DroppedTool, MappedTools, map_tools, split_tool_list};

/// Convert `src` into `dst` and report what was written. On error nothing is written (and an
/// existing destination is left as it was).
pub fn convert(src: &Path, dst: &Path, options: &Options) -> Result<Report> {
    let plan = plan::plan(src, options)?;
    write_plan(plan, dst, options.force)
}

/// Convert `src`, written for `source`, into `dst` (see [`plan_from`]: Copilot, VS Code and
/// OpenCode agents convert back to Claude Code).
pub fn convert_from(src: &Path, dst: &Path, source: Source, options: &Options) -> Result<Report> {
    let plan = plan::plan_from(src, source, options)?;
    write_plan(plan, dst, options.force)
}

/// Write a planned conversion to `dst` (see [`convert`]).
pub fn write_plan(plan: Plan, dst: &Path, force: bool) -> Result<Report> {
    let mut report = plan.report.clone();
    if report.kind == SourceKind::AgentFile {
        let written = write::write_single(&plan, dst, force)?;
        report.destination = written.display().to_string();
        report.files = vec![written.display().to_string()];
    } else {
        write::write_tree(&plan, dst, force)?;
        report.destination = dst.display().to_string();
        report.files = plan
            .files
            .iter()
            .map(|f| f.path.display().to_string())
            .collect();
    }
    // The report (text or JSON) is where the warnings are shown, once; the log only counts them.
    tracing::debug!(target: "toolgate::convert", warnings = report.all_warnings().len(), "converted");
    Ok(report)
}
