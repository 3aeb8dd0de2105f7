//! `toolgate convert`: agent definitions (or a whole Claude Code plugin) between hosts.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use toolgate_convert::{Options, Source, Target};

/// Arguments of `toolgate convert`.
#[derive(Args, Debug)]
#[command(
    long_about = "Convert Claude Code agent definitions to another host, mapping tool names \
                  (Read→read, Grep/Glob→search, Bash→execute, Write/Edit→edit, WebFetch/WebSearch→web, \
                  Task→agent, mcp__srv__tool→srv/tool where the target can name MCP tools). Gemini \
                  CLI and Kiro CLI get their own tool names (Read→read_file / read, \
                  Bash→run_shell_command / shell, mcp__srv__tool→mcp_srv_tool / @srv/tool); a plugin \
                  becomes a Gemini CLI extension or a Kiro CLI agents directory.\n\n\
                  SRC is an agent file, a directory of agent files, or a Claude Code plugin directory \
                  (with .claude-plugin/plugin.json). With --from copilot|vscode|opencode and --to \
                  claude, Copilot / VS Code / OpenCode agents convert back (read→Read, \
                  search→Grep+Glob, execute→Bash, edit→Write+Edit, web→WebFetch+WebSearch, \
                  agent→Task, srv/tool→mcp__srv__tool). Nothing is written unless the whole conversion \
                  succeeds; the destination appears in one rename."
)]
pub struct ConvertArgs {
    /// Source format: claude (agents or a plugin, to any target), or copilot, vscode, opencode
    /// (an agent file or directory, back to `--to claude`).
    #[arg(long, default_value = "claude", value_parser = parse_source)]
    pub from: Source,
    /// Target host: copilot, vscode, opencode, codex, gemini (Gemini CLI), kiro (Kiro CLI) or
    /// claude.
    #[arg(long, value_parser = parse_target)]
    pub to: Target,
    /// Agent file, agents directory, or plugin directory to convert.
    pub src: PathBuf,
    /// Destination: a new directory (or, for one agent file, a file or an existing directory).
    pub dst: PathBuf,
    /// Wrap the converted plugin in a local marketplace of this name (claude, copilot, vscode).
    #[arg(long, value_name = "NAME")]
    pub marketplace: Option<String>,
    /// Replace an existing destination (swapped in only once the new one is complete).
    #[arg(long)]
    pub force: bool,
    /// Print the report as JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

fn parse_target(s: &str) -> Result<Target, String> {
    s.parse()
        .map_err(|e: toolgate_convert::ConvertError| e.to_string())
}

fn parse_source(s: &str) -> Result<Source, String> {
    s.parse()
        .map_err(|e: toolgate_convert::ConvertError| e.to_string())
}

#[allow(clippy::print_stdout)] // The report is this command's output.
pub fn convert(args: &ConvertArgs) -> Result<i32> {
    let options = Options {
        target: args.to,
        marketplace: args.marketplace.clone(),
        force: args.force,
    };
    let report = match args.from {
        Source::Claude => toolgate_convert::convert(&args.src, &args.dst, &options)?,
        source => toolgate_convert::convert_from(&args.src, &args.dst, source, &options)?,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.render_human());
    }
    Ok(0)
}
