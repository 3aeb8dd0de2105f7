//! The CodeAct configuration: which tools a program sees, its limits, the workspace tools'
//! switches, and command tools declared in TOML.
//!
//! # Where it comes from: configuration layers and trust
//!
//! 1. built-in defaults;
//! 2. the **user file**: `TOOLGATE_CONFIG`, else `$XDG_CONFIG_HOME/toolgate/config.toml`, else
//!    `~/.config/toolgate/config.toml` (the caller passes the path). It may set anything.
//! 3. the **project file** `<workspace>/.toolgate/config.toml` ([`PROJECT_CONFIG`]) and the
//!    project's custom tools in `<workspace>/.toolgate/tools/`. They come with a repository, so
//!    until the user trusts the workspace (`toolgate trust DIR`, recorded with a hash of
//!    these files in `<user config dir>/trusted.toml`; see [`crate::trust`]) they may only
//!    **narrow**: `[tools] deny` adds to the user's denies (so `deny = []` clears nothing),
//!    `[tools] allow` is one more list every tool must pass, `[limits]` and the numbers of
//!    `[workspace]` apply only when lower than the user's (or the built-in) value,
//!    `web_fetch` / `http_writes` may only be turned off, and `[[command_tools]]` and
//!    `.toolgate/tools/*.py` are not loaded at all. Everything ignored is listed in
//!    [`CodeactConfig::ignored`] (the CLI prints it as one warning). A trusted project file
//!    **replaces** the user's values key by key (lists are replaced whole), adds command tools
//!    (a project tool replaces a user tool of the same name) and custom tools. Any change to
//!    `config.toml` or `tools/` after `toolgate trust` makes the workspace untrusted again.
//!    `[workspace] unconfined_processes` and `network` are honoured **only** in the user file;
//!    a project file (trusted or not) that sets them is ignored with a warning.
//! 4. the **environment**, for the tool lists only, and it can only narrow
//!    ([`toolgate_core::ToolFilter::with_env`]): `TOOLGATE_TOOLS` (else `CODEACT_TOOLS`) is one
//!    more allow list, `TOOLGATE_DISABLE` (else `CODEACT_DISABLE`) adds to the deny list.
//!    The Debrief CLI's tool lists follow the same rule (user file, then environment).
//! 5. command-line flags (the caller applies them over [`CodeactConfig::limits`]; they are the
//!    user's own).
//!
//! A tool is exposed when no deny pattern matches it and every allow list (absent or empty:
//! everything) has a pattern that matches it. The lists apply to built-in, command and custom
//! tools alike. Patterns are exact ids or a prefix followed by `*`
//! ([`toolgate_core::ToolFilter`]). Custom Python tools are read from
//! `<user config dir>/tools/*.py` and, when trusted, `<workspace>/.toolgate/tools/*.py`
//! ([`CodeactConfig::tool_dirs`]; see `toolgate_codeact::PythonTools`).
//!
//! # The file
//!
//! ```toml
//! [tools]
//! allow = ["view", "glob", "grep"]   # absent or empty: everything
//! deny = ["bash"]
//!
//! [limits]
//! timeout_secs = 30          # wall clock, tool calls included
//! max_memory = "256M"        # bytes, or a size such as "512K", "1G"
//! max_tool_calls = 1000
//! max_output_bytes = "64K"
//! max_recursion_depth = 200
//!
//! [workspace]
//! web_fetch = false          # web_fetch refuses every call unless true
//! http_writes = false        # POST/PUT/PATCH/DELETE in web_fetch and github_api
//! bash_timeout_secs = 30
//! bash_max_timeout_secs = 600
//! output_cap_bytes = "64K"   # per stream of bash and command tools
//! unconfined_processes = false # user file only: run bash/command tools without OS
//!                              # confinement where confinement is unavailable
//! network = false            # user file only: let bash/command tools reach the network
//!
//! [[command_tools]]
//! name = "line_count"
//! description = "Count the lines of a file."
//! argv = ["wc", "-l", "--", "{path}"] # no shell; "{param}" becomes one argument
//! parameters = { path = { type = "string", required = true } }
//! timeout_secs = 10                  # default: [workspace] bash_timeout_secs
//! ```
//!
//! A `{param}` placeholder is always exactly one argv entry (a value with spaces, quotes or
//! `;` stays one argument; a list is one argument per item), never shell text. A value that
//! would put a leading `-` at the start of an argument is refused before the program runs
//! (`find {dir}` with `dir = "-delete"` would otherwise delete the workspace), unless that
//! parameter declares `allow_options = true` (e.g.
//! `parameters = { flag = { type = "string", allow_options = true } }`). `--` before the
//! placeholders is still good practice for programs that honour it.
//!
//! Unknown keys are errors, and every error names the file and the key, e.g.
//! `/x/.toolgate/config.toml: invalid value for key `limits.timeout_secs`: expected an integer, found string "ten" (line 2, column 16)`.

use std::collections::HashSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Map, Value, json};
use toolgate_core::ToolFilter;

use crate::limits::{Limits, parse_size};
use crate::regular_file::{Links, MAX_PROJECT_FILE_BYTES, Unreadable, read_regular};
use crate::trust::{self, TrustError, TrustStatus, TrustStore};

/// The project config file, relative to the workspace root.
pub const PROJECT_CONFIG: &str = ".toolgate/config.toml";
/// The project's custom-tools folder, relative to the workspace root.
pub const PROJECT_TOOLS_DIR: &str = ".toolgate/tools";

/// Longest program wall clock a config may set (one day).
const MAX_TIMEOUT_SECS: i64 = 86_400;

/// A config file that cannot be used. Every variant names the file; key errors name the key
/// as a dotted path (`limits.timeout_secs`, `command_tools[0].argv`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("{}: cannot read the config file: {message}", path.display())]
    Read { path: PathBuf, message: String },
    #[error("{}: not valid TOML{}: {message}", path.display(), at(*position))]
    Syntax {
        path: PathBuf,
        message: String,
        position: Option<(usize, usize)>,
    },
    #[error("{}: unknown key `{key}`{}{}", path.display(), expected_keys(expected), at(*position))]
    UnknownKey {
        path: PathBuf,
        key: String,
        expected: Vec<String>,
        position: Option<(usize, usize)>,
    },
    #[error("{}: invalid value for key `{key}`: {message}{}", path.display(), at(*position))]
    Key {
        path: PathBuf,
        key: String,
        message: String,
        position: Option<(usize, usize)>,
    },
    /// The trust file, or the project configuration it is checked against, cannot be read.
    #[error(transparent)]
    Trust(#[from] TrustError),
}

impl ConfigError {
    /// The file the error is about.
    pub fn path(&self) -> &Path {
        match self {
            ConfigError::Read { path, .. }
            | ConfigError::Syntax { path, .. }
            | ConfigError::UnknownKey { path, .. }
            | ConfigError::Key { path, .. } => path,
            ConfigError::Trust(
                TrustError::Read { path, .. }
                | TrustError::Parse { path, .. }
                | TrustError::Write { path, .. }
                | TrustError::Project { path, .. },
            ) => path,
        }
    }

    fn key(path: &Path, key: impl Into<String>, message: impl Into<String>) -> Self {
        ConfigError::Key {
            path: path.to_owned(),
            key: key.into(),
            message: message.into(),
            position: None,
        }
    }
}

fn at(position: Option<(usize, usize)>) -> String {
    position.map_or_else(String::new, |(l, c)| format!(" (line {l}, column {c})"))
}

fn expected_keys(expected: &[String]) -> String {
    if expected.is_empty() {
        String::new()
    } else {
        format!("; expected one of: {}", expected.join(", "))
    }
}

/// A size in bytes: an integer, or a string such as `"256M"`, `"64K"`, `"1G"` (binary units).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Size(pub u64);

impl<'de> Deserialize<'de> for Size {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Size;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a size in bytes (an integer, or a string such as \"256M\")")
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Size, E> {
                u64::try_from(v)
                    .ok()
                    .filter(|v| *v > 0)
                    .map(Size)
                    .ok_or_else(|| {
                        E::invalid_value(serde::de::Unexpected::Signed(v), &"a positive size")
                    })
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Size, E> {
                if v == 0 {
                    return Err(E::invalid_value(
                        serde::de::Unexpected::Unsigned(v),
                        &"a positive size",
                    ));
                }
                Ok(Size(v))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Size, E> {
                parse_size(v).map(Size).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

/// `[tools]`: which tools are exposed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolsTable {
    /// Only these (absent or empty: every tool).
    pub allow: Option<Vec<String>>,
    /// Never these.
    pub deny: Option<Vec<String>>,
    /// These ask for a person's confirmation before every call, on every surface, even where
    /// they would otherwise run pre-approved (`confirm = ["create", "edit"]` asks before each
    /// file write). Every layer adds to the list — asking more only narrows — so a project
    /// file's list counts without trust.
    pub confirm: Option<Vec<String>>,
}

/// `[limits]`: the program's resource limits (see [`Limits`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsTable {
    /// Wall clock of the whole program in seconds, tool calls included (1–86400).
    pub timeout_secs: Option<i64>,
    pub max_memory: Option<Size>,
    pub max_tool_calls: Option<i64>,
    pub max_output_bytes: Option<Size>,
    pub max_recursion_depth: Option<i64>,
}

/// `[workspace]`: switches of the workspace tools.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceTable {
    /// Let `web_fetch` run (default false).
    pub web_fetch: Option<bool>,
    /// Allow write methods in `web_fetch` and `github_api` (default false).
    pub http_writes: Option<bool>,
    /// Default `bash` timeout in seconds (and of command tools without their own).
    pub bash_timeout_secs: Option<i64>,
    /// The longest timeout a `bash` call may ask for, in seconds.
    pub bash_max_timeout_secs: Option<i64>,
    /// Cap of each of stdout and stderr of `bash` and the command tools.
    pub output_cap_bytes: Option<Size>,
    /// Let `bash` and command tools run without OS confinement where confinement is
    /// unavailable (default false). Honoured only in the user file.
    pub unconfined_processes: Option<bool>,
    /// Let `bash` and command tools reach the network (default false). Honoured only in the
    /// user file.
    pub network: Option<bool>,
}

/// Built-in values of the `[workspace]` numbers, the ceiling an untrusted project file may
/// not raise (they mirror `toolgate_workspace::WorkspaceConfig::new`; a CLI test checks).
pub const DEFAULT_BASH_TIMEOUT_SECS: i64 = 30;
pub const DEFAULT_BASH_MAX_TIMEOUT_SECS: i64 = 600;
pub const DEFAULT_OUTPUT_CAP_BYTES: u64 = 64 * 1024;

/// One `[[command_tools]]` entry: a program run with an argument vector, no shell.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandToolDecl {
    /// The tool id (and Python name): letters, digits, `_` and `-`, not starting with a digit.
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// The program and its arguments. `{param}` in an argument is replaced by the parameter's
    /// value; an argument that is exactly `{param}` becomes that value as one argument (a list
    /// value becomes one argument per item; an absent optional parameter drops the argument).
    /// `{{` and `}}` are literal braces. The program itself (`argv[0]`) is fixed. A value that
    /// would start an argument with `-` is refused unless its parameter declares
    /// `allow_options = true` ([`CommandToolDecl::allows_options`]).
    pub argv: Vec<String>,
    /// The parameters: a JSON Schema object (`{type = "object", properties = {...}}`) or the
    /// anchor's form `{name = {type = "string", required = true, description = "..."}}`.
    #[serde(default)]
    pub parameters: Option<Value>,
    /// Seconds before the program is killed (default: `[workspace] bash_timeout_secs`).
    pub timeout_secs: Option<i64>,
    /// The file that declared it (set when the file is read).
    #[serde(skip)]
    pub source: PathBuf,
}

/// The per-parameter key that lets a value start an argument with `-` (an option).
pub(crate) const ALLOW_OPTIONS: &str = "allow_options";

impl CommandToolDecl {
    /// The parameters as a JSON Schema object, as the model and the validator see them
    /// (without toolgate's own `allow_options` keys, which are no JSON Schema).
    pub fn input_schema(&self) -> Value {
        let mut schema =
            parameters_schema(self.parameters.as_ref()).unwrap_or_else(|_| empty_schema());
        if let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) {
            for spec in props.values_mut() {
                if let Some(spec) = spec.as_object_mut() {
                    spec.remove(ALLOW_OPTIONS);
                }
            }
        }
        schema
    }

    /// Whether parameter `name` declares `allow_options = true`: only then may its value start
    /// an argument with `-`.
    pub fn allows_options(&self, name: &str) -> bool {
        parameters_schema(self.parameters.as_ref())
            .ok()
            .and_then(|s| {
                s.get("properties")?
                    .get(name)?
                    .get(ALLOW_OPTIONS)?
                    .as_bool()
            })
            .unwrap_or(false)
    }
}

/// `[hook]`: the host enforcement hook (`toolgate hook pre-tool-use`). Read only from the user
/// file (a repository must not switch its reader's enforcement); `TOOLGATE_MODE` /
/// `CODEACT_MODE` override it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookTable {
    /// `off` (default), `nudge` or `exclusive`.
    pub mode: Option<String>,
    /// Nudge mode: read-only calls in a row that pass before the next is denied.
    pub nudge_after: Option<u32>,
}

/// One config file as written.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    #[serde(default)]
    pub tools: ToolsTable,
    #[serde(default)]
    pub limits: LimitsTable,
    #[serde(default)]
    pub workspace: WorkspaceTable,
    #[serde(default)]
    pub command_tools: Vec<CommandToolDecl>,
    #[serde(default)]
    pub hook: HookTable,
}

impl ConfigFile {
    /// Read a config file; `Ok(None)` when it does not exist.
    ///
    /// This is for the user's own file: a symbolic link is followed (dotfile managers link it),
    /// but only a regular file of at most `MAX_PROJECT_FILE_BYTES` (1 MiB) is read — a FIFO or a
    /// device there is an error naming the file, never a hang.
    pub fn read(path: &Path) -> Result<Option<Self>, ConfigError> {
        Self::read_with(path, Links::Follow)
    }

    /// Read a config file whose symbolic links are followed (`links`) or refused; `Ok(None)`
    /// when it does not exist. A file that is not a regular file within the size cap is a
    /// [`ConfigError::Read`] naming it (nothing is read from it).
    pub(crate) fn read_with(path: &Path, links: Links) -> Result<Option<Self>, ConfigError> {
        let read_err = |message: String| ConfigError::Read {
            path: path.to_owned(),
            message,
        };
        let bytes = match read_regular(path, links, MAX_PROJECT_FILE_BYTES) {
            Ok(Some(b)) => b,
            Ok(None) => return Ok(None),
            Err(e) => return Err(read_err(format!("it {}", e.reason()))),
        };
        let text = String::from_utf8(bytes)
            .map_err(|e| read_err(format!("it is not UTF-8 text ({e})")))?;
        Self::parse(path, &text).map(Some)
    }

    /// Parse and check the text of the config file at `path` (the path is only used in
    /// messages and recorded as the source of its command tools).
    pub fn parse(path: &Path, text: &str) -> Result<Self, ConfigError> {
        // Syntax first, so a broken file says so (not "missing field").
        let table = match text.parse::<toml::Table>() {
            Ok(t) => t,
            Err(e) => {
                return Err(ConfigError::Syntax {
                    path: path.to_owned(),
                    message: first_line(e.message()),
                    position: e.span().map(|s| line_column(text, s.start)),
                });
            }
        };
        let mut file: ConfigFile =
            crate::toml_typed::from_table(table).map_err(|e| classify(path, text, &e))?;
        file.check(path)?;
        for t in &mut file.command_tools {
            t.source = path.to_owned();
        }
        Ok(file)
    }

    fn check(&self, path: &Path) -> Result<(), ConfigError> {
        let range = |key: &str, v: Option<i64>, min: i64, max: i64| match v {
            Some(v) if v < min || v > max => Err(ConfigError::key(
                path,
                key,
                format!("must be an integer from {min} to {max} (found {v})"),
            )),
            _ => Ok(()),
        };
        let l = &self.limits;
        range("limits.timeout_secs", l.timeout_secs, 1, MAX_TIMEOUT_SECS)?;
        range(
            "limits.max_tool_calls",
            l.max_tool_calls,
            1,
            i64::from(u32::MAX),
        )?;
        range(
            "limits.max_recursion_depth",
            l.max_recursion_depth,
            1,
            10_000,
        )?;
        let w = &self.workspace;
        range(
            "workspace.bash_timeout_secs",
            w.bash_timeout_secs,
            1,
            MAX_TIMEOUT_SECS,
        )?;
        range(
            "workspace.bash_max_timeout_secs",
            w.bash_max_timeout_secs,
            1,
            MAX_TIMEOUT_SECS,
        )?;
        let mut names = HashSet::new();
        for (i, t) in self.command_tools.iter().enumerate() {
            let key = |k: &str| format!("command_tools[{i}].{k}");
            if !is_tool_name(&t.name) {
                return Err(ConfigError::key(
                    path,
                    key("name"),
                    format!(
                        "\"{}\" is not a tool name (letters, digits, _ and -, not starting with a digit)",
                        t.name
                    ),
                ));
            }
            if !names.insert(t.name.as_str()) {
                return Err(ConfigError::key(
                    path,
                    key("name"),
                    format!("\"{}\" is declared twice", t.name),
                ));
            }
            range(&key("timeout_secs"), t.timeout_secs, 1, MAX_TIMEOUT_SECS)?;
            let schema = parameters_schema(t.parameters.as_ref())
                .map_err(|m| ConfigError::key(path, key("parameters"), m.to_string()))?;
            let declared: Vec<&str> = schema
                .get("properties")
                .and_then(Value::as_object)
                .map(|p| p.keys().map(String::as_str).collect())
                .unwrap_or_default();
            for name in &declared {
                match schema["properties"][*name].get(ALLOW_OPTIONS) {
                    None | Some(Value::Bool(_)) => {}
                    Some(other) => {
                        return Err(ConfigError::key(
                            path,
                            key("parameters"),
                            format!(
                                "parameter `{name}`: `{ALLOW_OPTIONS}` must be true or false, found {other}"
                            ),
                        ));
                    }
                }
            }
            let Some(program) = t.argv.first() else {
                return Err(ConfigError::key(
                    path,
                    key("argv"),
                    "must name a program (argv = [\"prog\", \"{arg}\", ...])",
                ));
            };
            if program.is_empty() {
                return Err(ConfigError::key(
                    path,
                    key("argv"),
                    "the program (argv[0]) is empty",
                ));
            }
            for (j, arg) in t.argv.iter().enumerate() {
                let pieces = parse_arg(arg).map_err(|m| {
                    ConfigError::key(path, format!("command_tools[{i}].argv[{j}]"), m.to_string())
                })?;
                for piece in &pieces {
                    if let ArgPiece::Param(p) = piece {
                        if j == 0 {
                            return Err(ConfigError::key(
                                path,
                                key("argv"),
                                "the program (argv[0]) must be fixed: it may not contain a {placeholder}",
                            ));
                        }
                        if !declared.contains(&p.as_str()) {
                            return Err(ConfigError::key(
                                path,
                                format!("command_tools[{i}].argv[{j}]"),
                                format!(
                                    "placeholder {{{p}}} names no parameter (declared: {})",
                                    if declared.is_empty() {
                                        "none".to_owned()
                                    } else {
                                        declared.join(", ")
                                    }
                                ),
                            ));
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or_default().trim().to_owned()
}

/// 1-based line and column (in characters) of a byte offset.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let mut at = offset.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let column = before
        .rsplit('\n')
        .next()
        .unwrap_or_default()
        .chars()
        .count()
        + 1;
    (line, column)
}

/// A typed deserialization failure as a message that names the file and the key.
fn classify(path: &Path, text: &str, e: &crate::toml_typed::TypedError) -> ConfigError {
    use crate::toml_typed::Kind;
    let mut keys = e.keys();
    let position = e.span(text).map(|s| line_column(text, s.start));
    if let Kind::UnknownKey { key, expected } = &e.kind {
        keys.push(key.clone());
        return ConfigError::UnknownKey {
            path: path.to_owned(),
            key: keys.join("."),
            expected: expected.iter().map(|k| (*k).to_owned()).collect(),
            position,
        };
    }
    ConfigError::Key {
        path: path.to_owned(),
        key: if keys.is_empty() {
            "(top level)".to_owned()
        } else {
            keys.join(".")
        },
        message: e.to_string(),
        position,
    }
}

fn is_tool_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// One piece of a command-tool argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArgPiece {
    Literal(String),
    /// `{name}`: the parameter's value.
    Param(String),
}

/// Why an argument template of a command tool cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgTemplateError {
    #[error("unclosed placeholder in \"{arg}\" (write {{{{ for a literal brace)")]
    Unclosed { arg: String },
    #[error("\"{{{name}}}\" in \"{arg}\" is not a placeholder name")]
    BadName { name: String, arg: String },
    #[error("unmatched }} in \"{arg}\" (write }}}} for a literal brace)")]
    Unmatched { arg: String },
}

/// Why a tool's declared parameters make no JSON Schema.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ParametersError {
    #[error("expected a table of parameters or a JSON Schema object, found {0}")]
    NotATable(Value),
    #[error("a parameters schema must have \"type\": \"object\"")]
    NotAnObjectSchema,
    #[error("parameter `{name}`: expected a table such as {{ type = \"string\" }}, found {found}")]
    ParameterNotATable { name: String, found: Value },
    #[error("parameter `{name}`: `required` must be true or false, found {found}")]
    RequiredNotBool { name: String, found: Value },
}

/// Split an argument template into literal text and `{param}` placeholders (`{{` and `}}` are
/// literal braces).
pub fn parse_arg(arg: &str) -> Result<Vec<ArgPiece>, ArgTemplateError> {
    let mut pieces = Vec::new();
    let mut lit = String::new();
    let mut chars = arg.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                lit.push('{');
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                lit.push('}');
            }
            '{' => {
                let mut name = String::new();
                loop {
                    match chars.next() {
                        Some('}') => break,
                        Some(c) => name.push(c),
                        None => {
                            return Err(ArgTemplateError::Unclosed {
                                arg: arg.to_owned(),
                            });
                        }
                    }
                }
                if name.is_empty()
                    || !name
                        .chars()
                        .all(|c| c.is_alphanumeric() || c == '_' || c == '-')
                {
                    return Err(ArgTemplateError::BadName {
                        name,
                        arg: arg.to_owned(),
                    });
                }
                if !lit.is_empty() {
                    pieces.push(ArgPiece::Literal(std::mem::take(&mut lit)));
                }
                pieces.push(ArgPiece::Param(name));
            }
            '}' => {
                return Err(ArgTemplateError::Unmatched {
                    arg: arg.to_owned(),
                });
            }
            c => lit.push(c),
        }
    }
    if !lit.is_empty() || pieces.is_empty() {
        pieces.push(ArgPiece::Literal(lit));
    }
    Ok(pieces)
}

fn empty_schema() -> Value {
    json!({"type": "object", "properties": {}, "additionalProperties": false})
}

/// Parameters as a tool declares them → a JSON Schema object.
///
/// - absent, `null` or `{}` → no parameters (unknown ones rejected);
/// - a JSON Schema (it has `"type": "object"` or `"properties"`) → used as written;
/// - the anchor's form `{name: {type, required?, default?, description?}}` → an object schema
///   with those properties, `required` collected, unknown parameters rejected.
pub fn parameters_schema(parameters: Option<&Value>) -> Result<Value, ParametersError> {
    let Some(p) = parameters.filter(|p| !p.is_null()) else {
        return Ok(empty_schema());
    };
    let Value::Object(map) = p else {
        return Err(ParametersError::NotATable(p.clone()));
    };
    if map.is_empty() {
        return Ok(empty_schema());
    }
    if map.get("type").and_then(Value::as_str) == Some("object") || map.contains_key("properties") {
        let mut schema = map.clone();
        schema
            .entry("type")
            .or_insert_with(|| Value::String("object".to_owned()));
        if schema.get("type").and_then(Value::as_str) != Some("object") {
            return Err(ParametersError::NotAnObjectSchema);
        }
        return Ok(Value::Object(schema));
    }
    let mut properties = Map::new();
    let mut required = Vec::new();
    for (name, spec) in map {
        let Value::Object(spec) = spec else {
            return Err(ParametersError::ParameterNotATable {
                name: name.clone(),
                found: spec.clone(),
            });
        };
        let mut spec = spec.clone();
        match spec.remove("required") {
            None | Some(Value::Bool(false)) => {}
            Some(Value::Bool(true)) => required.push(Value::String(name.clone())),
            Some(other) => {
                return Err(ParametersError::RequiredNotBool {
                    name: name.clone(),
                    found: other,
                });
            }
        }
        properties.insert(name.clone(), Value::Object(spec));
    }
    let mut schema =
        json!({"type": "object", "properties": properties, "additionalProperties": false});
    if !required.is_empty() {
        schema["required"] = Value::Array(required);
    }
    Ok(schema)
}

/// Whether the workspace's project configuration may widen the user's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ProjectTrust {
    /// No `.toolgate/config.toml` and no `.toolgate/tools/` files.
    #[default]
    NoProjectConfig,
    /// Trusted with `toolgate trust`, unchanged since: it may widen.
    Trusted,
    /// Never trusted: it may only narrow.
    Untrusted,
    /// Trusted once, changed since: it may only narrow until trusted again.
    ChangedSinceTrusted,
}

impl ProjectTrust {
    fn from_status(status: TrustStatus) -> Self {
        match status {
            TrustStatus::Trusted => ProjectTrust::Trusted,
            TrustStatus::Changed => ProjectTrust::ChangedSinceTrusted,
            TrustStatus::Untrusted => ProjectTrust::Untrusted,
        }
    }

    /// Whether the project configuration may widen the user's.
    pub fn is_trusted(self) -> bool {
        self == ProjectTrust::Trusted
    }
}

/// The configuration in force: the files layered, then the environment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CodeactConfig {
    /// The files that were read, lowest precedence first.
    pub sources: Vec<PathBuf>,
    /// The tool filter: the files' lists, then the environment's (see the module docs).
    pub filter: ToolFilter,
    pub limits: LimitsTable,
    /// The `[workspace]` switches in force. `unconfined_processes` and `network` come only from
    /// the user file (see [`CodeactConfig::unconfined_processes`], [`CodeactConfig::network`]).
    pub workspace: WorkspaceTable,
    /// Command tools of the user file, and of the project file when it is trusted (a project
    /// tool replaces a user tool of the same name).
    pub command_tools: Vec<CommandToolDecl>,
    /// Where custom Python tools are looked for, lowest precedence first (the project's folder
    /// only when it is trusted).
    pub tool_dirs: Vec<PathBuf>,
    /// Whether the project configuration was trusted.
    pub project_trust: ProjectTrust,
    /// The project file and the workspace root, when there is project configuration.
    pub project: Option<(PathBuf, PathBuf)>,
    /// Project settings not applied because the project is not trusted, each as
    /// `key (why)`; trusting the workspace would apply them.
    pub ignored: Vec<String>,
    /// Project settings that only the user file may set (ignored even when trusted).
    pub user_only_ignored: Vec<String>,
    /// Project files that were not read because they are not regular files within the size
    /// cap (a link, a FIFO, a device, a directory, too large), each a sentence naming the file.
    pub unreadable: Vec<String>,
    /// Tools confirmed before every call (`[tools] confirm`, every layer's list together).
    pub confirm: Vec<String>,
}

/// The warning sentence for a project file that is not read.
fn ignored_file(e: &Unreadable) -> String {
    tracing::warn!(path = %e.path().display(), "{}; ignored", e.reason());
    format!(
        "{e}; ignored (toolgate reads project configuration only from a regular file of at most {MAX_PROJECT_FILE_BYTES} bytes, never through a symbolic link)"
    )
}

/// Keys of `[workspace]` that only the user file may set.
pub(crate) const USER_ONLY_WORKSPACE_KEYS: [&str; 2] =
    ["workspace.unconfined_processes", "workspace.network"];

impl CodeactConfig {
    /// Read the user file (if it exists) and `<workspace_root>/.toolgate/config.toml` (if it
    /// exists), check the project configuration against the user's trust file
    /// ([`TrustStore::path_for`] the user file), then apply the environment read through
    /// `env`.
    pub fn load(
        user_file: &Path,
        workspace_root: &Path,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let project_file = workspace_root.join(PROJECT_CONFIG);
        let user = ConfigFile::read(user_file)?.map(|f| (user_file.to_owned(), f));
        let has_project = trust::has_project_config(workspace_root);
        let project_trust = if has_project {
            let store = TrustStore::load(&TrustStore::path_for(user_file))?;
            let digest = trust::project_digest(workspace_root)?;
            ProjectTrust::from_status(store.status(workspace_root, &digest))
        } else {
            ProjectTrust::NoProjectConfig
        };
        // The repository's file: never through a link, only a regular file within the cap;
        // anything else is ignored with a warning naming it (a FIFO or `/dev/zero` there hung
        // every entry point).
        let mut unreadable = Vec::new();
        let project = match read_regular(&project_file, Links::Refuse, MAX_PROJECT_FILE_BYTES) {
            Ok(Some(bytes)) => {
                let text = String::from_utf8(bytes).map_err(|e| ConfigError::Read {
                    path: project_file.clone(),
                    message: format!("it is not UTF-8 text ({e})"),
                })?;
                Some((
                    project_file.clone(),
                    ConfigFile::parse(&project_file, &text)?,
                ))
            }
            Ok(None) => None,
            Err(e) if e.is_refused() => {
                unreadable.push(ignored_file(&e));
                None
            }
            Err(e) => {
                return Err(ConfigError::Read {
                    path: project_file.clone(),
                    message: format!("it {}", e.reason()),
                });
            }
        };
        let mut config = Self::layered(user, project, project_trust.is_trusted(), env);
        config.project_trust = project_trust;
        config.unreadable = unreadable;
        if has_project {
            // Name the file when there is one, else the folder (only `tools/` has files).
            let named = if project_file.symlink_metadata().is_ok() {
                project_file
            } else {
                workspace_root.join(".toolgate")
            };
            config.project = Some((named, workspace_root.to_owned()));
        }
        let user_tools = user_file
            .parent()
            .map_or_else(|| PathBuf::from("tools"), |d| d.join("tools"));
        let project_tools = workspace_root.join(PROJECT_TOOLS_DIR);
        config.tool_dirs = vec![user_tools];
        if project_trust.is_trusted() {
            config.tool_dirs.push(project_tools);
        } else {
            let names = python_files(&project_tools);
            if !names.is_empty() {
                config.ignored.push(format!(
                    "{} custom tool{} in {} ({})",
                    names.len(),
                    if names.len() == 1 { "" } else { "s" },
                    PROJECT_TOOLS_DIR,
                    names.join(", ")
                ));
            }
        }
        Ok(config)
    }

    /// The user file (if it exists) and the environment only: the tool lists of surfaces that
    /// have no workspace (the Debrief CLI and its MCP tools). `tool_dirs` is left empty.
    pub fn load_user(
        user_file: &Path,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let user = ConfigFile::read(user_file)?.map(|f| (user_file.to_owned(), f));
        Ok(Self::layered(user, None, false, env))
    }

    /// Layer parsed files and the environment: the user file, then the project file (replacing
    /// when `project_trusted`, else only narrowing), then the environment (narrowing).
    /// `tool_dirs` is left empty.
    pub(crate) fn layered(
        user: Option<(PathBuf, ConfigFile)>,
        project: Option<(PathBuf, ConfigFile)>,
        project_trusted: bool,
        env: impl Fn(&str) -> Option<String>,
    ) -> Self {
        let mut c = CodeactConfig::default();
        // Lists a layer may replace (the user's, a trusted project's).
        let mut allow: Option<Vec<String>> = None;
        let mut deny: Option<Vec<String>> = None;
        if let Some((path, mut file)) = user {
            c.sources.push(path);
            c.confirm
                .extend(file.tools.confirm.take().unwrap_or_default());
            c.replace_with(file, &mut allow, &mut deny);
        }
        let mut narrowing: Option<ToolsTable> = None;
        if let Some((path, mut file)) = project {
            // `<root>/.toolgate/config.toml` → `<root>` (load() sets the root it was given).
            let root = path
                .parent()
                .and_then(Path::parent)
                .map(Path::to_path_buf)
                .unwrap_or_default();
            c.project = Some((path.clone(), root));
            c.sources.push(path);
            c.confirm
                .extend(file.tools.confirm.take().unwrap_or_default());
            for (key, value) in [
                (
                    USER_ONLY_WORKSPACE_KEYS[0],
                    file.workspace.unconfined_processes.take(),
                ),
                (USER_ONLY_WORKSPACE_KEYS[1], file.workspace.network.take()),
            ] {
                if value.is_some() {
                    c.user_only_ignored.push(key.to_owned());
                }
            }
            if project_trusted {
                c.replace_with(file, &mut allow, &mut deny);
            } else {
                narrowing = Some(c.narrow_with(file, allow.as_deref(), deny.as_deref()));
            }
        }
        let mut filter = ToolFilter::new(allow, deny.unwrap_or_default());
        if let Some(t) = narrowing {
            filter = filter.narrow(t.allow, t.deny.unwrap_or_default());
        }
        c.filter = filter.with_env(env);
        c.confirm.sort();
        c.confirm.dedup();
        c
    }

    /// A layer with the user's authority: each key it sets replaces the value so far.
    fn replace_with(
        &mut self,
        file: ConfigFile,
        allow: &mut Option<Vec<String>>,
        deny: &mut Option<Vec<String>>,
    ) {
        let ConfigFile {
            hook: _,
            tools,
            limits,
            workspace,
            command_tools,
        } = file;
        if tools.allow.is_some() {
            *allow = tools.allow;
        }
        if tools.deny.is_some() {
            *deny = tools.deny;
        }
        macro_rules! over {
            ($into:expr, $from:expr, $($field:ident),+) => {
                $(if $from.$field.is_some() { $into.$field = $from.$field; })+
            };
        }
        over!(
            self.limits,
            limits,
            timeout_secs,
            max_memory,
            max_tool_calls,
            max_output_bytes,
            max_recursion_depth
        );
        over!(
            self.workspace,
            workspace,
            web_fetch,
            http_writes,
            bash_timeout_secs,
            bash_max_timeout_secs,
            output_cap_bytes,
            unconfined_processes,
            network
        );
        for t in command_tools {
            self.command_tools.retain(|old| old.name != t.name);
            self.command_tools.push(t);
        }
    }

    /// An untrusted project file: apply what narrows, record the rest in `ignored`. Returns
    /// its tool lists, to be added to the filter as narrowing lists.
    fn narrow_with(
        &mut self,
        file: ConfigFile,
        user_allow: Option<&[String]>,
        user_deny: Option<&[String]>,
    ) -> ToolsTable {
        let ConfigFile {
            hook: _,
            tools,
            limits,
            workspace,
            command_tools,
        } = file;
        if let (Some(project), Some(user)) =
            (tools.allow.as_deref(), user_allow.filter(|a| !a.is_empty()))
        {
            let extra: Vec<&str> = project
                .iter()
                .filter(|p| !user.contains(p))
                .map(String::as_str)
                .collect();
            if !extra.is_empty() && !project.is_empty() {
                self.ignored.push(format!(
                    "tools.allow widening the user's allow list ({})",
                    extra.join(", ")
                ));
            }
        }
        if let (Some(project), Some(user)) = (tools.deny.as_deref(), user_deny) {
            let dropped: Vec<&str> = user
                .iter()
                .filter(|u| !project.contains(u))
                .map(String::as_str)
                .collect();
            if !dropped.is_empty() {
                self.ignored.push(format!(
                    "tools.deny replacing the user's deny list (it still denies {})",
                    dropped.join(", ")
                ));
            }
        }
        let d = Limits::default();
        let secs = |t: Duration| i64::try_from(t.as_secs()).unwrap_or(i64::MAX);
        let l = &mut self.limits;
        lower(
            &mut self.ignored,
            "limits.timeout_secs",
            &mut l.timeout_secs,
            limits.timeout_secs,
            secs(d.timeout),
        );
        lower(
            &mut self.ignored,
            "limits.max_memory",
            &mut l.max_memory,
            limits.max_memory,
            Size(d.max_memory_bytes),
        );
        lower(
            &mut self.ignored,
            "limits.max_tool_calls",
            &mut l.max_tool_calls,
            limits.max_tool_calls,
            i64::from(d.max_tool_calls),
        );
        lower(
            &mut self.ignored,
            "limits.max_output_bytes",
            &mut l.max_output_bytes,
            limits.max_output_bytes,
            Size(d.max_output_bytes as u64),
        );
        lower(
            &mut self.ignored,
            "limits.max_recursion_depth",
            &mut l.max_recursion_depth,
            limits.max_recursion_depth,
            i64::from(d.max_recursion_depth),
        );
        let w = &mut self.workspace;
        lower(
            &mut self.ignored,
            "workspace.bash_timeout_secs",
            &mut w.bash_timeout_secs,
            workspace.bash_timeout_secs,
            DEFAULT_BASH_TIMEOUT_SECS,
        );
        lower(
            &mut self.ignored,
            "workspace.bash_max_timeout_secs",
            &mut w.bash_max_timeout_secs,
            workspace.bash_max_timeout_secs,
            DEFAULT_BASH_MAX_TIMEOUT_SECS,
        );
        lower(
            &mut self.ignored,
            "workspace.output_cap_bytes",
            &mut w.output_cap_bytes,
            workspace.output_cap_bytes,
            Size(DEFAULT_OUTPUT_CAP_BYTES),
        );
        // A lowered ceiling pulls the default bash timeout down with it (the workspace refuses a
        // default above the ceiling).
        if let Some(max) = w.bash_max_timeout_secs
            && w.bash_timeout_secs.unwrap_or(DEFAULT_BASH_TIMEOUT_SECS) > max
        {
            w.bash_timeout_secs = Some(max);
        }
        for (key, slot, value) in [
            ("workspace.web_fetch", &mut w.web_fetch, workspace.web_fetch),
            (
                "workspace.http_writes",
                &mut w.http_writes,
                workspace.http_writes,
            ),
        ] {
            match value {
                Some(false) => *slot = Some(false),
                Some(true) if *slot != Some(true) => {
                    self.ignored.push(format!("{key} = true"));
                }
                _ => {}
            }
        }
        if !command_tools.is_empty() {
            let names: Vec<String> = command_tools
                .iter()
                .map(|t| format!("\"{}\"", t.name))
                .collect();
            self.ignored
                .push(format!("[[command_tools]] {}", names.join(", ")));
        }
        tools
    }

    /// The one warning line for what the project configuration could not do, `None` when it
    /// did everything it asked.
    pub fn warning(&self) -> Option<String> {
        if self.ignored.is_empty()
            && self.user_only_ignored.is_empty()
            && self.unreadable.is_empty()
        {
            return None;
        }
        let (file, root) = self.project.clone().unwrap_or_default();
        let mut parts = self.unreadable.clone();
        if !self.ignored.is_empty() {
            let why = match self.project_trust {
                ProjectTrust::ChangedSinceTrusted => "changed since you trusted it",
                _ => "not trusted",
            };
            parts.push(format!(
                "{} is {why}, so it may only narrow your configuration; ignored: {}; run \"toolgate trust {}\" to allow it",
                file.display(),
                self.ignored.join("; "),
                root.display()
            ));
        }
        if !self.user_only_ignored.is_empty() {
            parts.push(format!(
                "{}: {} ignored: only your own config file may set {}",
                file.display(),
                self.user_only_ignored.join(" and "),
                if self.user_only_ignored.len() == 1 {
                    "it"
                } else {
                    "them"
                }
            ));
        }
        Some(parts.join(". "))
    }

    /// `[workspace] unconfined_processes` of the user file (default false): whether `bash` and
    /// command tools may run without OS confinement where confinement is unavailable.
    pub fn unconfined_processes(&self) -> bool {
        self.workspace.unconfined_processes.unwrap_or(false)
    }

    /// `[workspace] network` of the user file (default false): whether `bash` and command tools
    /// may reach the network.
    pub fn network(&self) -> bool {
        self.workspace.network.unwrap_or(false)
    }

    /// The allow/deny filter for the registry.
    pub fn tool_filter(&self) -> ToolFilter {
        self.filter.clone()
    }

    /// The default [`Limits`] with the config's values over them (flags go on top).
    pub fn limits(&self) -> Limits {
        let mut limits = Limits::default();
        let l = &self.limits;
        if let Some(s) = l.timeout_secs.and_then(|s| u64::try_from(s).ok()) {
            limits.timeout = Duration::from_secs(s);
        }
        if let Some(Size(b)) = l.max_memory {
            limits.max_memory_bytes = b;
        }
        if let Some(n) = l.max_tool_calls.and_then(|n| u32::try_from(n).ok()) {
            limits.max_tool_calls = n;
        }
        if let Some(Size(b)) = l.max_output_bytes {
            limits.max_output_bytes = usize::try_from(b).unwrap_or(usize::MAX);
        }
        if let Some(n) = l.max_recursion_depth.and_then(|n| u32::try_from(n).ok()) {
            limits.max_recursion_depth = n;
        }
        limits
    }
}

/// Narrow one number: the project's value applies when it is at most the value in force (the
/// user's, else `default`); otherwise it is recorded as ignored.
fn lower<T: PartialOrd + Copy + fmt::Debug + Shown>(
    ignored: &mut Vec<String>,
    key: &str,
    slot: &mut Option<T>,
    project: Option<T>,
    default: T,
) {
    let Some(p) = project else { return };
    let current = slot.unwrap_or(default);
    if p <= current {
        *slot = Some(p);
    } else {
        ignored.push(format!("{key} = {} (above {})", p.shown(), current.shown()));
    }
}

/// How a config number is shown in a warning.
trait Shown {
    fn shown(&self) -> String;
}

impl Shown for i64 {
    fn shown(&self) -> String {
        self.to_string()
    }
}

impl Shown for Size {
    fn shown(&self) -> String {
        self.0.to_string()
    }
}

/// The custom-tool files the loader would read in `dir` (sorted names; none when it is
/// missing).
fn python_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
        .filter(|n| n.ends_with(".py") && !n.starts_with('_'))
        .collect();
    names.sort();
    names
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<ConfigFile, ConfigError> {
        ConfigFile::parse(Path::new("/x/.toolgate/config.toml"), text)
    }

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn full_file_parses() {
        let f = parse(
            r#"
[tools]
allow = ["view", "glob"]
deny = ["bash"]

[limits]
timeout_secs = 12
max_memory = "64M"
max_tool_calls = 10
max_output_bytes = 4096

[workspace]
web_fetch = true
http_writes = false
bash_timeout_secs = 5

[[command_tools]]
name = "count"
description = "Count lines."
argv = ["wc", "-l", "{path}"]
parameters = { path = { type = "string", required = true } }
"#,
        )
        .unwrap();
        assert_eq!(
            f.tools.allow.as_deref(),
            Some(&["view".to_owned(), "glob".to_owned()][..])
        );
        assert_eq!(f.limits.max_memory, Some(Size(64 << 20)));
        assert_eq!(f.workspace.web_fetch, Some(true));
        let t = &f.command_tools[0];
        assert_eq!(t.source, Path::new("/x/.toolgate/config.toml"));
        assert_eq!(
            t.input_schema(),
            json!({"type": "object", "properties": {"path": {"type": "string"}}, "additionalProperties": false, "required": ["path"]})
        );
        let c = CodeactConfig::layered(Some((PathBuf::from("/u"), f)), None, false, no_env);
        let l = c.limits();
        assert_eq!(l.timeout, Duration::from_secs(12));
        assert_eq!(l.max_tool_calls, 10);
        assert_eq!(l.max_output_bytes, 4096);
        assert_eq!(l.max_recursion_depth, Limits::default().max_recursion_depth);
    }

    #[test]
    fn errors_name_the_file_and_the_key() {
        let msg = parse("[limits]\ntimeout_secs = \"ten\"\n")
            .unwrap_err()
            .to_string();
        assert_eq!(
            msg,
            "/x/.toolgate/config.toml: invalid value for key `limits.timeout_secs`: expected an integer, found string \"ten\" (line 2, column 16)"
        );
        // Read from the value itself, not the toml crate's wording (which said "found map").
        let msg = parse("[limits]\ntimeout_secs = 1979-05-27T07:32:00Z\n")
            .unwrap_err()
            .to_string();
        assert!(
            msg.ends_with(
                "`limits.timeout_secs`: expected an integer, found a date-time (line 2, column 16)"
            ),
            "{msg}"
        );
        let msg = parse("[limits]\ntimeout_secs = 0\n")
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("`limits.timeout_secs`: must be an integer from 1 to 86400 (found 0)"),
            "{msg}"
        );
        let msg = parse("[workspace]\nweb_fetch = \"yes\"\n")
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("`workspace.web_fetch`: expected a boolean"),
            "{msg}"
        );
        let msg = parse("[limits]\nmax_memory = \"lots\"\n")
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("`limits.max_memory`: invalid size \"lots\""),
            "{msg}"
        );
        let msg = parse("[tools]\nallow = \"view\"\n")
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("`tools.allow`: expected an array, found string"),
            "{msg}"
        );
        let msg = parse("[limits]\ntimeout = 3\n").unwrap_err().to_string();
        assert!(
            msg.starts_with("/x/.toolgate/config.toml: unknown key `limits.timeout`; expected one of: timeout_secs, "),
            "{msg}"
        );
        let msg = parse("colour = 1\n").unwrap_err().to_string();
        assert!(
            msg.contains("unknown key `colour`; expected one of: tools, limits"),
            "{msg}"
        );
        let msg = parse("[limits\n").unwrap_err().to_string();
        assert!(
            msg.starts_with("/x/.toolgate/config.toml: not valid TOML (line 1"),
            "{msg}"
        );
        let msg = parse("[[command_tools]]\nname = \"x\"\n")
            .unwrap_err()
            .to_string();
        assert!(msg.contains("`command_tools`: missing key `argv`"), "{msg}");
        let msg = parse("[[command_tools]]\nname = \"x\"\nargv = [\"{p}\"]\nparameters = { p = { type = \"string\" } }\n")
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("`command_tools[0].argv`: the program (argv[0]) must be fixed"),
            "{msg}"
        );
        let msg = parse("[[command_tools]]\nname = \"x\"\nargv = [\"echo\", \"{q}\"]\n")
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains(
                "`command_tools[0].argv[1]`: placeholder {q} names no parameter (declared: none)"
            ),
            "{msg}"
        );
        let msg = parse("[[command_tools]]\nname = \"1x\"\nargv = [\"echo\"]\n")
            .unwrap_err()
            .to_string();
        assert!(msg.contains("`command_tools[0].name`"), "{msg}");
    }

    #[test]
    fn precedence_trusted_project_over_user_env_narrows() {
        let user = parse(
            "[tools]\ndeny = [\"bash\"]\nallow = [\"view\", \"bash\", \"glob\"]\n[limits]\ntimeout_secs = 5\nmax_tool_calls = 7\n[[command_tools]]\nname = \"a\"\nargv = [\"true\"]\n[[command_tools]]\nname = \"b\"\nargv = [\"true\"]\n",
        )
        .unwrap();
        let project = parse(
            "[tools]\ndeny = [\"sql\"]\n[limits]\ntimeout_secs = 9\n[[command_tools]]\nname = \"b\"\nargv = [\"false\"]\n",
        )
        .unwrap();
        let c = CodeactConfig::layered(
            Some(("/u".into(), user.clone())),
            Some(("/p".into(), project.clone())),
            true,
            no_env,
        );
        assert_eq!(c.sources, [PathBuf::from("/u"), PathBuf::from("/p")]);
        assert_eq!(
            c.limits().timeout,
            Duration::from_secs(9),
            "a trusted project wins"
        );
        assert_eq!(c.limits().max_tool_calls, 7, "untouched user key stays");
        assert_eq!(
            c.filter.deny_list(),
            ["sql"],
            "a trusted project's list replaces the user's"
        );
        let names: Vec<_> = c
            .command_tools
            .iter()
            .map(|t| (t.name.as_str(), t.argv[0].as_str()))
            .collect();
        assert_eq!(names, [("a", "true"), ("b", "false")]);
        assert!(c.ignored.is_empty() && c.warning().is_none());
        let f = c.tool_filter();
        assert!(f.permits("bash") && f.permits("view") && !f.permits("sql") && !f.permits("edit"));

        // The environment only narrows: its allow list intersects, its deny list adds;
        // TOOLGATE_* before CODEACT_*.
        let env = |k: &str| match k {
            "TOOLGATE_DISABLE" => Some(" , ".to_owned()),
            "CODEACT_DISABLE" => Some("view".to_owned()),
            "CODEACT_TOOLS" => Some("view".to_owned()),
            "TOOLGATE_TOOLS" => Some("glob,bash,view,edit".to_owned()),
            _ => None,
        };
        let c = CodeactConfig::layered(
            Some(("/u".into(), user)),
            Some(("/p".into(), project)),
            true,
            env,
        );
        let f = c.tool_filter();
        assert!(
            !f.permits("view"),
            "empty TOOLGATE_DISABLE falls through to CODEACT_DISABLE, which adds"
        );
        assert!(
            !f.permits("sql"),
            "the files' deny list stays under an env deny list"
        );
        assert!(f.permits("glob") && f.permits("bash"));
        assert!(
            !f.permits("edit"),
            "TOOLGATE_TOOLS cannot add a tool the files' allow list leaves out"
        );
        // Empty allow lists allow everything.
        let c = CodeactConfig::layered(
            Some(("/u".into(), parse("[tools]\nallow = []\n").unwrap())),
            None,
            false,
            no_env,
        );
        assert!(c.tool_filter().permits("anything"));
    }

    fn user_and_untrusted(user: &str, project: &str) -> CodeactConfig {
        CodeactConfig::layered(
            Some(("/u/config.toml".into(), parse(user).unwrap())),
            Some(("/w/.toolgate/config.toml".into(), parse(project).unwrap())),
            false,
            no_env,
        )
    }

    /// Issue 14 item 3: an untrusted project's `deny = []` clears nothing, and its own denies
    /// add; its allow list can only narrow.
    #[test]
    fn untrusted_project_cannot_clear_or_widen_the_tool_lists() {
        let c = user_and_untrusted(
            "[tools]\ndeny = [\"bash\", \"web_*\"]\n",
            "[tools]\ndeny = []\n",
        );
        let f = c.tool_filter();
        assert!(!f.permits("bash") && !f.permits("web_fetch") && f.permits("view"));
        let w = c.warning().unwrap();
        assert!(
            w.contains("tools.deny replacing the user's deny list (it still denies bash, web_*)"),
            "{w}"
        );
        let c = user_and_untrusted(
            "[tools]\nallow = [\"view\"]\n",
            "[tools]\nallow = [\"view\", \"bash\"]\ndeny = [\"sql\"]\n",
        );
        let f = c.tool_filter();
        assert!(f.permits("view") && !f.permits("bash") && !f.permits("sql"));
        assert!(
            c.ignored[0].contains("tools.allow widening"),
            "{:?}",
            c.ignored
        );
        // Narrowing lists apply without a warning.
        let c = user_and_untrusted(
            "",
            "[tools]\nallow = [\"view\", \"glob\"]\ndeny = [\"glob\"]\n",
        );
        let f = c.tool_filter();
        assert!(f.permits("view") && !f.permits("glob") && !f.permits("bash"));
        assert_eq!(c.warning(), None);
    }

    /// Issue 14 item 3: command tools, network switches and raised limits of an untrusted
    /// project are ignored (and listed); lowered limits and switches turned off apply.
    #[test]
    fn untrusted_project_only_narrows_limits_switches_and_command_tools() {
        let c = user_and_untrusted(
            "[limits]\ntimeout_secs = 20\n[workspace]\nhttp_writes = true\n",
            r#"
[limits]
timeout_secs = 900
max_memory = "8G"
max_tool_calls = 10
[workspace]
web_fetch = true
http_writes = false
bash_timeout_secs = 3000
bash_max_timeout_secs = 10
[[command_tools]]
name = "pwned"
argv = ["/bin/sh", "-c", "echo pwned"]
"#,
        );
        assert!(c.command_tools.is_empty());
        let l = c.limits();
        assert_eq!(l.timeout, Duration::from_secs(20), "not raised");
        assert_eq!(l.max_memory_bytes, Limits::default().max_memory_bytes);
        assert_eq!(l.max_tool_calls, 10, "lowered");
        assert_eq!(c.workspace.web_fetch, None, "not enabled");
        assert_eq!(c.workspace.http_writes, Some(false), "turned off");
        assert_eq!(c.workspace.bash_max_timeout_secs, Some(10));
        assert_eq!(
            c.workspace.bash_timeout_secs,
            Some(10),
            "pulled under the lowered ceiling, not raised to 3000"
        );
        let w = c.warning().unwrap();
        for part in [
            "/w/.toolgate/config.toml is not trusted",
            "limits.timeout_secs = 900 (above 20)",
            "limits.max_memory = 8589934592 (above 268435456)",
            "workspace.web_fetch = true",
            "workspace.bash_timeout_secs = 3000 (above 30)",
            "[[command_tools]] \"pwned\"",
            "run \"toolgate trust ",
        ] {
            assert!(w.contains(part), "{part:?} in {w}");
        }
        assert!(!w.contains('\n'), "one line: {w}");
        // The same file, trusted, applies whole.
        let c = CodeactConfig::layered(
            None,
            Some((
                "/w/.toolgate/config.toml".into(),
                parse("[workspace]\nweb_fetch = true\n[limits]\ntimeout_secs = 900\n").unwrap(),
            )),
            true,
            no_env,
        );
        assert_eq!(c.workspace.web_fetch, Some(true));
        assert_eq!(c.limits().timeout, Duration::from_secs(900));
    }

    /// `unconfined_processes` and `network` come only from the user file.
    #[test]
    fn user_only_keys() {
        let p = "[workspace]\nunconfined_processes = true\nnetwork = true\n";
        for trusted in [false, true] {
            let c = CodeactConfig::layered(
                None,
                Some(("/w/.toolgate/config.toml".into(), parse(p).unwrap())),
                trusted,
                no_env,
            );
            assert!(
                !c.unconfined_processes() && !c.network(),
                "trusted: {trusted}"
            );
            let w = c.warning().unwrap();
            assert!(
                w.contains("workspace.unconfined_processes and workspace.network ignored: only your own config file may set them"),
                "{w}"
            );
        }
        let c = CodeactConfig::layered(
            Some(("/u".into(), parse(p).unwrap())),
            Some((
                "/w/.toolgate/config.toml".into(),
                parse("[workspace]\nnetwork = false\n").unwrap(),
            )),
            true,
            no_env,
        );
        assert!(
            c.unconfined_processes() && c.network(),
            "the user's own values stay"
        );
        assert_eq!(c.user_only_ignored, ["workspace.network"]);
        assert!(!CodeactConfig::default().network());
    }

    /// Loading from disk: an untrusted workspace's tools folder is not searched; after
    /// `trust` it is; after an edit it is untrusted again.
    #[test]
    fn load_checks_the_trust_file() {
        let dir = tempfile::tempdir().unwrap();
        let user = dir.path().join("cfg/config.toml");
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(ws.join(".toolgate/tools")).unwrap();
        std::fs::write(
            ws.join(".toolgate/config.toml"),
            "[workspace]\nweb_fetch = true\n",
        )
        .unwrap();
        std::fs::write(
            ws.join(".toolgate/tools/spin.py"),
            "while True:\n    pass\n",
        )
        .unwrap();
        let c = CodeactConfig::load(&user, &ws, no_env).unwrap();
        assert_eq!(c.project_trust, ProjectTrust::Untrusted);
        assert_eq!(c.tool_dirs, [dir.path().join("cfg/tools")]);
        assert_eq!(c.workspace.web_fetch, None);
        let w = c.warning().unwrap();
        assert!(
            w.contains("1 custom tool in .toolgate/tools (spin.py)"),
            "{w}"
        );
        let mut store = TrustStore::load(&TrustStore::path_for(&user)).unwrap();
        store.trust(&ws, trust::project_digest(&ws).unwrap());
        store.save().unwrap();
        let c = CodeactConfig::load(&user, &ws, no_env).unwrap();
        assert_eq!(c.project_trust, ProjectTrust::Trusted);
        assert_eq!(c.tool_dirs.len(), 2);
        assert_eq!(c.workspace.web_fetch, Some(true));
        assert_eq!(c.warning(), None);
        std::fs::write(
            ws.join(".toolgate/tools/spin.py"),
            "while True:\n    pass # \n",
        )
        .unwrap();
        let c = CodeactConfig::load(&user, &ws, no_env).unwrap();
        assert_eq!(c.project_trust, ProjectTrust::ChangedSinceTrusted);
        assert_eq!(c.workspace.web_fetch, None);
        assert!(
            c.warning()
                .unwrap()
                .contains("changed since you trusted it")
        );
    }

    #[test]
    fn argument_templates() {
        assert_eq!(
            parse_arg("{path}").unwrap(),
            [ArgPiece::Param("path".into())]
        );
        assert_eq!(
            parse_arg("--out={dir}/x{{y}}").unwrap(),
            [
                ArgPiece::Literal("--out=".into()),
                ArgPiece::Param("dir".into()),
                ArgPiece::Literal("/x{y}".into())
            ]
        );
        assert_eq!(parse_arg("").unwrap(), [ArgPiece::Literal(String::new())]);
        assert!(parse_arg("{open").is_err());
        assert!(parse_arg("a}b").is_err());
        assert!(parse_arg("{a b}").is_err());
    }

    #[test]
    fn parameter_forms() {
        let s = parameters_schema(Some(
            &json!({"type": "object", "properties": {"x": {"type": "integer"}}}),
        ))
        .unwrap();
        assert_eq!(s["properties"]["x"]["type"], "integer");
        assert!(
            s.get("additionalProperties").is_none(),
            "a JSON Schema is used as written"
        );
        let s = parameters_schema(Some(
            &json!({"text": {"type": "string", "required": true, "description": "d"}}),
        ))
        .unwrap();
        assert_eq!(s["required"], json!(["text"]));
        assert_eq!(
            s["properties"]["text"],
            json!({"type": "string", "description": "d"})
        );
        assert_eq!(parameters_schema(None).unwrap(), empty_schema());
        assert!(parameters_schema(Some(&json!({"x": 3}))).is_err());
        assert!(parameters_schema(Some(&json!({"x": {"required": "yes"}}))).is_err());
    }
}
