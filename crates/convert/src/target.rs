//! The hosts an agent definition can be converted to.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use crate::error::ConvertError;

/// A conversion target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Target {
    /// GitHub Copilot CLI: `agents/<name>.agent.md` with GitHub tool aliases; plugins with a root
    /// `plugin.json`.
    Copilot,
    /// VS Code custom agents: `<name>.agent.md` with VS Code tool sets (same plugin layout as
    /// Copilot, which VS Code reads).
    Vscode,
    /// OpenCode: `agents/<name>.md` subagents; tools become `permissions` rules.
    Opencode,
    /// Codex: `agents/<name>.toml` custom agents (`name`, `description`, `developer_instructions`).
    Codex,
    /// Gemini CLI: `.gemini/agents/<name>.md` subagents (YAML frontmatter `name`, `description`,
    /// `tools` of Gemini tool names, the body as the system prompt); plugins become a Gemini
    /// extension (`gemini-extension.json`). See geminicli.com/docs/core/subagents and
    /// google-gemini/gemini-cli `docs/core/subagents.md`, `docs/extensions/reference.md`.
    Gemini,
    /// Kiro CLI: `.kiro/agents/<name>.json` custom agents (`name`, `description`, `prompt`,
    /// `tools` of Kiro tool names). See kiro.dev/docs/cli/custom-agents/configuration-reference.
    Kiro,
    /// Claude Code itself: a normalised copy (tools re-emitted canonically, YAML re-quoted).
    Claude,
}

impl Target {
    /// Every target, in the order the CLI lists them.
    pub const ALL: [Target; 7] = [
        Target::Copilot,
        Target::Vscode,
        Target::Opencode,
        Target::Codex,
        Target::Gemini,
        Target::Kiro,
        Target::Claude,
    ];

    /// The CLI name.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Target::Copilot => "copilot",
            Target::Vscode => "vscode",
            Target::Opencode => "opencode",
            Target::Codex => "codex",
            Target::Gemini => "gemini",
            Target::Kiro => "kiro",
            Target::Claude => "claude",
        }
    }

    /// The agent file extension, with its leading dot.
    #[must_use]
    pub fn agent_extension(self) -> &'static str {
        match self {
            Target::Copilot | Target::Vscode => ".agent.md",
            Target::Opencode | Target::Gemini | Target::Claude => ".md",
            Target::Codex => ".toml",
            Target::Kiro => ".json",
        }
    }

    /// Whether the target's agent `tools` can name MCP tools as `server/tool`, `server/*`. (Gemini
    /// CLI and Kiro CLI name them too, in their own spellings: see [`Target::has_native_tools`].)
    #[must_use]
    pub fn supports_mcp_tool_refs(self) -> bool {
        matches!(self, Target::Copilot | Target::Vscode | Target::Claude)
    }

    /// Whether the target's `tools` are its own individual tool names (Gemini CLI's `read_file`,
    /// Kiro CLI's `read`) rather than the coarse aliases Copilot, VS Code, OpenCode and Codex use.
    #[must_use]
    pub fn has_native_tools(self) -> bool {
        matches!(self, Target::Gemini | Target::Kiro)
    }

    /// Whether `--marketplace` can wrap this target's plugin output.
    #[must_use]
    pub fn has_plugin_marketplace(self) -> bool {
        matches!(self, Target::Copilot | Target::Vscode | Target::Claude)
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Target {
    type Err = ConvertError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let lower = s.trim().to_ascii_lowercase();
        Target::ALL
            .into_iter()
            .find(|t| t.name() == lower)
            .or(match lower.as_str() {
                "vs-code" | "vscode-copilot" => Some(Target::Vscode),
                "copilot-cli" | "github-copilot" => Some(Target::Copilot),
                "claude-code" => Some(Target::Claude),
                "gemini-cli" => Some(Target::Gemini),
                "kiro-cli" => Some(Target::Kiro),
                _ => None,
            })
            .ok_or_else(|| ConvertError::UnknownTarget(s.to_string()))
    }
}

/// The source format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// Claude Code agents (`*.md` with frontmatter) and plugins (`.claude-plugin/plugin.json`).
    Claude,
    /// Copilot CLI custom agents (`*.agent.md`, `tools:` of GitHub aliases and `srv/tool`);
    /// converted back to Claude Code only.
    Copilot,
    /// VS Code custom agents (`*.agent.md`, legacy `*.chatmode.md`); converted back to Claude Code
    /// only.
    Vscode,
    /// OpenCode agents (`*.md` with `permission`/`permissions`/`tools` maps); converted back to
    /// Claude Code only.
    Opencode,
}

impl Source {
    /// The CLI name.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Source::Claude => "claude",
            Source::Copilot => "copilot",
            Source::Vscode => "vscode",
            Source::Opencode => "opencode",
        }
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Source {
    type Err = ConvertError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "claude" | "claude-code" => Ok(Source::Claude),
            "copilot" | "copilot-cli" | "github-copilot" => Ok(Source::Copilot),
            "vscode" | "vs-code" | "vscode-copilot" => Ok(Source::Vscode),
            "opencode" => Ok(Source::Opencode),
            _ => Err(ConvertError::UnknownSource(s.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_target_name() {
        for t in Target::ALL {
            assert_eq!(t.name().parse::<Target>().unwrap(), t);
            assert_eq!(t.name().to_uppercase().parse::<Target>().unwrap(), t);
        }
    }

    #[test]
    fn unknown_target_lists_the_valid_ones() {
        let err = "cursor".parse::<Target>().unwrap_err().to_string();
        assert_eq!(
            err,
            "unknown target `cursor`; expected one of: copilot, vscode, opencode, codex, gemini, kiro, claude"
        );
    }

    #[test]
    fn gemini_and_kiro_have_their_cli_aliases() {
        assert_eq!("gemini-cli".parse::<Target>().unwrap(), Target::Gemini);
        assert_eq!("Kiro-CLI".parse::<Target>().unwrap(), Target::Kiro);
        assert_eq!(Target::Gemini.agent_extension(), ".md");
        assert_eq!(Target::Kiro.agent_extension(), ".json");
        assert!(!Target::Gemini.has_plugin_marketplace());
        assert!(Target::Kiro.has_native_tools() && !Target::Codex.has_native_tools());
    }

    #[test]
    fn unknown_source_is_rejected() {
        assert!("gemini".parse::<Source>().is_err());
        assert_eq!("Claude".parse::<Source>().unwrap(), Source::Claude);
        for s in [Source::Copilot, Source::Vscode, Source::Opencode] {
            assert_eq!(s.name().parse::<Source>().unwrap(), s);
        }
    }
}
