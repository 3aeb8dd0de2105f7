//! Host integration: install/uninstall into Copilot CLI, Claude Code and VS Code, doctor preflight, the pre-tool-use enforcement hook.
//!
//! The pipeline of `toolgate install`: the CLI runs the preflight (backend usable, target
//! writable), discovers the tools (the `toolgate tools list --json` manifest, passed in here as
//! data), then [`plan`] renders every file from the embedded templates and [`apply`] writes them
//! atomically and records a [`receipt::Receipt`], so that [`uninstall`] removes exactly what was
//! written. [`hook`] answers the hosts' pre-tool-use hook.

#![warn(unreachable_pub)]
mod error;
mod fsutil;
pub mod hook;
mod install;
mod jsonedit;
pub mod manifest;
pub mod preflight;
pub mod receipt;
mod render;
pub mod shell;

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

pub use error::HostsError;
pub use install::{
    Action, ApplyReport, Change, Plan, UninstallReport, apply, plan, unified_diff, uninstall,
};
pub use jsonedit::{JsonEditError, parse_jsonc};
pub use manifest::{Param, ToolInfo, parse_manifest};
/// Which tools the registered MCP server (`toolgate mcp --surface …`) exposes.
pub use toolgate_core::ToolSet;

/// The agent hosts toolgate installs into.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Host {
    /// GitHub Copilot CLI: a plugin (marketplace layout), instructions, agent, hook.
    Copilot,
    /// Claude Code: a plugin in a local marketplace (skills, agent, hook, MCP server).
    Claude,
    /// VS Code (Copilot Chat): MCP server entry, instructions, custom agent.
    Vscode,
}

impl Host {
    pub const ALL: [Host; 3] = [Host::Copilot, Host::Claude, Host::Vscode];

    pub fn as_str(self) -> &'static str {
        match self {
            Host::Copilot => "copilot",
            Host::Claude => "claude",
            Host::Vscode => "vscode",
        }
    }
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Host {
    type Err = HostsError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "copilot" => Ok(Host::Copilot),
            "claude" => Ok(Host::Claude),
            "vscode" | "code" => Ok(Host::Vscode),
            other => Err(HostsError::UnknownHost(other.to_owned())),
        }
    }
}

/// The interpreter the installed files tell the model (and `toolgate exec`) to use. `auto` is
/// resolved by the preflight before rendering, so the files name a backend that was usable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    Monty,
    Hyperlight,
}

impl Backend {
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Monty => "monty",
            Backend::Hyperlight => "hyperlight",
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What to install.
#[derive(Debug, Clone)]
pub struct InstallOptions {
    pub host: Host,
    /// User-level install (home and data dir) instead of the project at `Locations::target`.
    pub global: bool,
    pub backend: Backend,
    pub surface: ToolSet,
    /// How the installed files run toolgate: `toolgate` (found on the host's `PATH`, what a
    /// project install writes so that it works in every clone), `./rel/path` (relative to the
    /// project root, where the hosts start hooks and servers) or an absolute path.
    pub exe: String,
    /// The CodeAct tools (`toolgate tools list --json --surface codeact`).
    pub tools: Vec<ToolInfo>,
    /// The Markdown reference of the sandbox (`toolgate tools list --surface codeact --markdown`).
    pub tools_reference: String,
    /// Whether this binary can run the hyperlight backend; without it the Copilot plugin does
    /// not ship the `codeact-install-hyperlight` skill.
    pub hyperlight: bool,
}

/// Where the receipt of the (host, scope) install lies.
pub fn receipt_path(host: Host, global: bool, loc: &Locations) -> PathBuf {
    render::layout(host, global, loc).receipt
}

/// The folder a plugin host's marketplace is added from (`… plugin marketplace add DIR`): the
/// project for a project install, `<data dir>/hosts/<host>` for a global one.
pub fn marketplace_root(host: Host, global: bool, loc: &Locations) -> PathBuf {
    render::layout(host, global, loc).marketplace_root
}

/// Where things go. Every path the installer writes or removes lies under one of these.
#[derive(Debug, Clone)]
pub struct Locations {
    /// The project (repository) root for a project install.
    pub target: PathBuf,
    /// The user's home (`~/.copilot/instructions` for a global Copilot install).
    pub home: PathBuf,
    /// toolgate's data dir: global plugin marketplaces and global receipts.
    pub data_dir: PathBuf,
    /// VS Code's user settings folder (`~/.config/Code/User` on Linux) for a global VS Code
    /// install.
    pub vscode_user_dir: PathBuf,
}

/// The plugin's name in every host, and the MCP server's name.
pub const PLUGIN_NAME: &str = "toolgate";
/// The marketplace name toolgate creates when the target has none.
pub const MARKETPLACE_NAME: &str = "toolgate";
