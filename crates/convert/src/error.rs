//! Errors of the converter. Every message names the file (and line, where there is one) and says
//! what would work instead.

use std::path::PathBuf;

/// What can go wrong while converting.
#[derive(Debug, thiserror::Error)]
pub enum ConvertError {
    /// The YAML between the `---` lines does not parse.
    #[error(
        "{path}:{line}:{column}: malformed YAML frontmatter: {message}. Quote values that contain \
         `: ` or ` #`, or that start with `@`, a backtick, `[`, `{{`, `*`, `&`, `!`, `%` or `|`"
    )]
    Frontmatter {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    /// A `---` line opens a frontmatter block that no later `---` line closes.
    #[error(
        "{path}:{line}: the frontmatter block opened here is never closed; add a line `---` after \
         the last YAML line"
    )]
    UnclosedFrontmatter { path: PathBuf, line: usize },
    /// The frontmatter parses, but is not a mapping of keys to values.
    #[error(
        "{path}:{line}: the frontmatter is a YAML {found}, not a mapping; write `key: value` lines"
    )]
    FrontmatterNotMapping {
        path: PathBuf,
        line: usize,
        found: &'static str,
    },
    /// A field has a type the converter cannot use (e.g. `tools: {a: b}`).
    #[error("{path}:{line}: `{key}` {message}")]
    Field {
        path: PathBuf,
        line: usize,
        key: String,
        message: String,
    },
    /// The `--to` value is not a known target.
    #[error(
        "unknown target `{0}`; expected one of: copilot, vscode, opencode, codex, gemini, kiro, claude"
    )]
    UnknownTarget(String),
    /// The `--from` value is not a supported source.
    #[error("unknown source format `{0}`; expected one of: claude, copilot, vscode, opencode")]
    UnknownSource(String),
    /// A directory looks like a Claude Code plugin but has no manifest.
    #[error(
        "{dir}: looks like a Claude Code plugin (it has {found}) but {manifest} is missing; add a \
         manifest with at least {{\"name\": \"…\"}}, or pass the agents/ directory itself to convert \
         only the agents"
    )]
    MissingManifest {
        dir: PathBuf,
        manifest: PathBuf,
        found: String,
    },
    /// The plugin manifest is not valid JSON or lacks a usable name.
    #[error("{path}: invalid plugin manifest: {message}")]
    Manifest { path: PathBuf, message: String },
    /// A path named by the plugin manifest leaves the plugin root.
    #[error(
        "{manifest}: `{key}` path `{value}` leaves the plugin root; use a path inside the plugin"
    )]
    PathEscape {
        manifest: PathBuf,
        key: String,
        value: String,
    },
    /// The source does not exist or is neither a file nor a directory.
    #[error("{0}: no such agent file, agents directory or plugin directory")]
    SourceMissing(PathBuf),
    /// A directory holds nothing to convert.
    #[error("{0}: no agent files (`*.md` with YAML frontmatter) found")]
    NothingToConvert(PathBuf),
    /// An option does not apply to the chosen target or source.
    #[error("{0}")]
    Usage(String),
    /// The destination exists and `--force` was not given.
    #[error(
        "{0}: already exists; choose a new destination, or pass --force to replace it (the old one \
         is replaced only once the new one is complete)"
    )]
    DestinationExists(PathBuf),
    /// A JSON config (e.g. `.mcp.json`) does not parse.
    #[error("{path}: invalid JSON: {message}")]
    Json { path: PathBuf, message: String },
    /// Reading or writing a file failed.
    #[error("{path}: {action}: {source}")]
    Io {
        path: PathBuf,
        action: &'static str,
        #[source]
        source: std::io::Error,
    },
    /// Emitting YAML or TOML failed (a bug: every value the converter builds is serialisable).
    #[error("could not serialise {what}: {message}")]
    Serialise { what: String, message: String },
}

impl ConvertError {
    pub(crate) fn io(
        path: impl Into<PathBuf>,
        action: &'static str,
        source: std::io::Error,
    ) -> Self {
        ConvertError::Io {
            path: path.into(),
            action,
            source,
        }
    }
}

/// Result alias of this crate.
pub type Result<T, E = ConvertError> = std::result::Result<T, E>;
