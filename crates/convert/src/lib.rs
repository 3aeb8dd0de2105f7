//! Agent-definition conversion between hosts (Claude Code, Copilot CLI, VS Code, OpenCode, Codex) with tool-name mapping.
