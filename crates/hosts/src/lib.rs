//! Host integration: install/uninstall into Copilot CLI, Claude Code and VS Code, doctor preflight, the pre-tool-use enforcement hook.
