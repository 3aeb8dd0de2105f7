//! The CodeAct configuration: which tools a program sees, its limits, the workspace tools'
//! switches, and command tools declared in TOML.
//!
//! # Where it comes from (lowest to highest precedence)
//!
//! 1. built-in defaults;
//! 2. the user file: `TOOLGATE_CONFIG`, else `$XDG_CONFIG_HOME/toolgate/config.toml`, else
//!    `~/.config/toolgate/config.toml` (the caller passes the path);
//! 3. the project file `<workspace>/.toolgate/config.toml` ([`PROJECT_CONFIG`]);
//! 4. the environment, for the tool lists only: `TOOLGATE_TOOLS` (allow) and
//!    `TOOLGATE_DISABLE` (deny), or the codeact anchor's `CODEACT_TOOLS` / `CODEACT_DISABLE`
//!    when the `TOOLGATE_*` variable is unset or empty;
//! 5. command-line flags (the caller applies them over [`CodeactConfig::limits`]).
//!
//! A higher layer **replaces** a value of a lower one, key by key; lists are never merged. This
//! is the anchor's precedence (reference §5) extended to two files: for each of the allow and
//! deny lists separately, an environment value that is present and non-empty replaces the
//! files' list, and a list present in the project file replaces the user file's. Then a tool is
//! dropped when the deny list names it, and, when the allow list is non-empty, when the allow
//! list does not name it (so a tool in both lists is dropped; an empty allow list allows
//! everything). The lists apply to built-in, command and custom tools alike. Patterns are exact
//! ids or a prefix followed by `*` ([`toolgate_core::ToolFilter`]).
//!
//! `[[command_tools]]` of both files are kept; a project tool replaces a user tool of the same
//! name. Custom Python tools are read from `<user config dir>/tools/*.py` and
//! `<workspace>/.toolgate/tools/*.py` ([`CodeactConfig::tool_dirs`]; see
//! [`crate::PythonTools`]).
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
//!
//! [[command_tools]]
//! name = "line_count"
//! description = "Count the lines of a file."
//! argv = ["wc", "-l", "{path}"]      # no shell; "{param}" becomes one argument
//! parameters = { path = { type = "string", required = true } }
//! timeout_secs = 10                  # default: [workspace] bash_timeout_secs
//! ```
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

/// The project config file, relative to the workspace root.
pub const PROJECT_CONFIG: &str = ".toolgate/config.toml";
/// The project's custom-tools folder, relative to the workspace root.
pub const PROJECT_TOOLS_DIR: &str = ".toolgate/tools";
/// Allow-list variables, in the order they are consulted.
pub const ENV_ALLOW: [&str; 2] = ["TOOLGATE_TOOLS", "CODEACT_TOOLS"];
/// Deny-list variables, in the order they are consulted.
pub const ENV_DENY: [&str; 2] = ["TOOLGATE_DISABLE", "CODEACT_DISABLE"];

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
}

impl ConfigError {
    /// The file the error is about.
    pub fn path(&self) -> &Path {
        match self {
            ConfigError::Read { path, .. }
            | ConfigError::Syntax { path, .. }
            | ConfigError::UnknownKey { path, .. }
            | ConfigError::Key { path, .. } => path,
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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
}

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
    /// `{{` and `}}` are literal braces. The program itself (`argv[0]`) is fixed.
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

impl CommandToolDecl {
    /// The parameters as a JSON Schema object.
    pub fn input_schema(&self) -> Value {
        parameters_schema(self.parameters.as_ref()).unwrap_or_else(|_| empty_schema())
    }
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
}

impl ConfigFile {
    /// Read a config file; `Ok(None)` when it does not exist.
    pub fn read(path: &Path) -> Result<Option<Self>, ConfigError> {
        match std::fs::read_to_string(path) {
            Ok(text) => Self::parse(path, &text).map(Some),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(ConfigError::Read {
                path: path.to_owned(),
                message: e.to_string(),
            }),
        }
    }

    /// Parse and check the text of the config file at `path` (the path is only used in
    /// messages and recorded as the source of its command tools).
    pub fn parse(path: &Path, text: &str) -> Result<Self, ConfigError> {
        // Syntax first, so a broken file says so (not "missing field").
        if let Err(e) = text.parse::<toml::Table>() {
            return Err(ConfigError::Syntax {
                path: path.to_owned(),
                message: first_line(e.message()),
                position: e.span().map(|s| line_column(text, s.start)),
            });
        }
        let mut file: ConfigFile = toml::from_str(text).map_err(|e| classify(path, text, &e))?;
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
                .map_err(|m| ConfigError::key(path, key("parameters"), m))?;
            let declared: Vec<&str> = schema
                .get("properties")
                .and_then(Value::as_object)
                .map(|p| p.keys().map(String::as_str).collect())
                .unwrap_or_default();
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
                    ConfigError::key(path, format!("command_tools[{i}].argv[{j}]"), m)
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

/// The dotted key path a toml deserialization error carries (only shown by its `Display` when
/// the error has no input attached).
fn error_keys(e: &toml::de::Error) -> Vec<String> {
    let mut bare = e.clone();
    bare.set_input(None);
    bare.to_string()
        .lines()
        .find_map(|l| l.strip_prefix("in `").and_then(|r| r.strip_suffix('`')))
        .map(|k| k.split('.').map(str::to_owned).collect())
        .unwrap_or_default()
}

/// Serde's type names in the words a config author uses.
fn friendly_expected(expected: &str) -> String {
    let e = expected.trim();
    match e {
        "i8" | "i16" | "i32" | "i64" | "u8" | "u16" | "u32" | "u64" | "usize" | "isize" => {
            "an integer".to_owned()
        }
        "f32" | "f64" => "a number".to_owned(),
        "a sequence" => "an array".to_owned(),
        "a map" => "a table".to_owned(),
        _ if e.starts_with("struct ") => "a table".to_owned(),
        _ => e.to_owned(),
    }
}

/// Turn a toml/serde error into one that names the file and the key.
fn classify(path: &Path, text: &str, e: &toml::de::Error) -> ConfigError {
    let keys = error_keys(e);
    let position = e.span().map(|s| line_column(text, s.start));
    let message = first_line(e.message());
    if let Some(rest) = message.strip_prefix("unknown field `")
        && let Some((field, tail)) = rest.split_once('`')
    {
        let expected = tail
            .split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_owned)
            .collect();
        let mut key = keys;
        key.push(field.to_owned());
        return ConfigError::UnknownKey {
            path: path.to_owned(),
            key: key.join("."),
            expected,
            position,
        };
    }
    let friendly = ["invalid type: ", "invalid value: "]
        .iter()
        .find_map(|p| message.strip_prefix(p))
        .and_then(|rest| rest.rsplit_once(", expected "))
        .map(|(found, expected)| format!("expected {}, found {found}", friendly_expected(expected)))
        .or_else(|| {
            message
                .strip_prefix("missing field `")
                .and_then(|r| r.strip_suffix('`'))
                .map(|f| format!("missing key `{f}`"))
        })
        .unwrap_or(message);
    ConfigError::Key {
        path: path.to_owned(),
        key: if keys.is_empty() {
            "(top level)".to_owned()
        } else {
            keys.join(".")
        },
        message: friendly,
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

/// Split an argument template into literal text and `{param}` placeholders (`{{` and `}}` are
/// literal braces).
pub fn parse_arg(arg: &str) -> Result<Vec<ArgPiece>, String> {
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
                            return Err(format!(
                                "unclosed placeholder in \"{arg}\" (write {{{{ for a literal brace)"
                            ));
                        }
                    }
                }
                if name.is_empty()
                    || !name
                        .chars()
                        .all(|c| c.is_alphanumeric() || c == '_' || c == '-')
                {
                    return Err(format!(
                        "\"{{{name}}}\" in \"{arg}\" is not a placeholder name"
                    ));
                }
                if !lit.is_empty() {
                    pieces.push(ArgPiece::Literal(std::mem::take(&mut lit)));
                }
                pieces.push(ArgPiece::Param(name));
            }
            '}' => {
                return Err(format!(
                    "unmatched }} in \"{arg}\" (write }}}} for a literal brace)"
                ));
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
pub fn parameters_schema(parameters: Option<&Value>) -> Result<Value, String> {
    let Some(p) = parameters.filter(|p| !p.is_null()) else {
        return Ok(empty_schema());
    };
    let Value::Object(map) = p else {
        return Err(format!(
            "expected a table of parameters or a JSON Schema object, found {p}"
        ));
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
            return Err("a parameters schema must have \"type\": \"object\"".to_owned());
        }
        return Ok(Value::Object(schema));
    }
    let mut properties = Map::new();
    let mut required = Vec::new();
    for (name, spec) in map {
        let Value::Object(spec) = spec else {
            return Err(format!(
                "parameter `{name}`: expected a table such as {{ type = \"string\" }}, found {spec}"
            ));
        };
        let mut spec = spec.clone();
        match spec.remove("required") {
            None | Some(Value::Bool(false)) => {}
            Some(Value::Bool(true)) => required.push(Value::String(name.clone())),
            Some(other) => {
                return Err(format!(
                    "parameter `{name}`: `required` must be true or false, found {other}"
                ));
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

/// The configuration in force: the files layered, then the environment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CodeactConfig {
    /// The files that were read, lowest precedence first.
    pub sources: Vec<PathBuf>,
    /// Allow list after layering (`None`: everything).
    pub allow: Option<Vec<String>>,
    /// Deny list after layering.
    pub deny: Vec<String>,
    pub limits: LimitsTable,
    pub workspace: WorkspaceTable,
    /// Command tools of both files (a project tool replaces a user tool of the same name).
    pub command_tools: Vec<CommandToolDecl>,
    /// Where custom Python tools are looked for, lowest precedence first.
    pub tool_dirs: Vec<PathBuf>,
}

impl CodeactConfig {
    /// Read the user file (if it exists) and `<workspace_root>/.toolgate/config.toml` (if it
    /// exists), then apply the environment read through `env`.
    pub fn load(
        user_file: &Path,
        workspace_root: &Path,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let project_file = workspace_root.join(PROJECT_CONFIG);
        let user = ConfigFile::read(user_file)?.map(|f| (user_file.to_owned(), f));
        let project = ConfigFile::read(&project_file)?.map(|f| (project_file, f));
        let mut config = Self::layered(user, project, env);
        config.tool_dirs = vec![
            user_file
                .parent()
                .map_or_else(|| PathBuf::from("tools"), |d| d.join("tools")),
            workspace_root.join(PROJECT_TOOLS_DIR),
        ];
        Ok(config)
    }

    /// Layer parsed files (lowest first) and the environment. `tool_dirs` is left empty.
    pub fn layered(
        user: Option<(PathBuf, ConfigFile)>,
        project: Option<(PathBuf, ConfigFile)>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Self {
        let mut c = CodeactConfig::default();
        let mut allow: Option<Vec<String>> = None;
        let mut deny: Option<Vec<String>> = None;
        for (path, file) in user.into_iter().chain(project) {
            c.sources.push(path);
            let ConfigFile {
                tools,
                limits,
                workspace,
                command_tools,
            } = file;
            if tools.allow.is_some() {
                allow = tools.allow;
            }
            if tools.deny.is_some() {
                deny = tools.deny;
            }
            macro_rules! over {
                ($into:expr, $from:expr, $($field:ident),+) => {
                    $(if $from.$field.is_some() { $into.$field = $from.$field; })+
                };
            }
            over!(
                c.limits,
                limits,
                timeout_secs,
                max_memory,
                max_tool_calls,
                max_output_bytes,
                max_recursion_depth
            );
            over!(
                c.workspace,
                workspace,
                web_fetch,
                http_writes,
                bash_timeout_secs,
                bash_max_timeout_secs,
                output_cap_bytes
            );
            for t in command_tools {
                c.command_tools.retain(|old| old.name != t.name);
                c.command_tools.push(t);
            }
        }
        if let Some(list) = env_list(&env, &ENV_ALLOW) {
            allow = Some(list);
        }
        if let Some(list) = env_list(&env, &ENV_DENY) {
            deny = Some(list);
        }
        c.allow = allow.filter(|a| !a.is_empty());
        c.deny = deny.unwrap_or_default();
        c
    }

    /// The allow/deny filter for the registry.
    pub fn tool_filter(&self) -> ToolFilter {
        ToolFilter::new(self.allow.clone(), self.deny.clone())
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

/// The first of `names` that is set to a non-empty list (comma-separated, items trimmed,
/// empty items dropped).
fn env_list(env: &impl Fn(&str) -> Option<String>, names: &[&str]) -> Option<Vec<String>> {
    names.iter().find_map(|n| {
        let list: Vec<String> = env(n)?
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect();
        (!list.is_empty()).then_some(list)
    })
}

#[cfg(test)]
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
        let c = CodeactConfig::layered(Some((PathBuf::from("/u"), f)), None, no_env);
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
    fn precedence_project_over_user_env_over_files() {
        let user = parse(
            "[tools]\ndeny = [\"bash\"]\nallow = [\"view\", \"bash\"]\n[limits]\ntimeout_secs = 5\nmax_tool_calls = 7\n[[command_tools]]\nname = \"a\"\nargv = [\"true\"]\n[[command_tools]]\nname = \"b\"\nargv = [\"true\"]\n",
        )
        .unwrap();
        let project = parse(
            "[tools]\ndeny = [\"sql\"]\n[limits]\ntimeout_secs = 9\n[[command_tools]]\nname = \"b\"\nargv = [\"false\"]\n",
        )
        .unwrap();
        let c = CodeactConfig::layered(
            Some(("/u".into(), user.clone())),
            Some(("/p".into(), project.clone())),
            no_env,
        );
        assert_eq!(c.sources, [PathBuf::from("/u"), PathBuf::from("/p")]);
        assert_eq!(c.limits().timeout, Duration::from_secs(9), "project wins");
        assert_eq!(c.limits().max_tool_calls, 7, "untouched user key stays");
        assert_eq!(c.deny, ["sql"], "a project list replaces the user's");
        assert_eq!(
            c.allow.as_deref(),
            Some(&["view".to_owned(), "bash".to_owned()][..])
        );
        let names: Vec<_> = c
            .command_tools
            .iter()
            .map(|t| (t.name.as_str(), t.argv[0].as_str()))
            .collect();
        assert_eq!(names, [("a", "true"), ("b", "false")]);
        let f = c.tool_filter();
        assert!(f.permits("bash") && f.permits("view") && !f.permits("sql") && !f.permits("glob"));

        // The environment replaces each list separately; TOOLGATE_* before CODEACT_*.
        let env = |k: &str| match k {
            "TOOLGATE_DISABLE" => Some(" , ".to_owned()),
            "CODEACT_DISABLE" => Some("view, bash".to_owned()),
            "CODEACT_TOOLS" => Some("view,glob".to_owned()),
            "TOOLGATE_TOOLS" => Some("glob,bash,view".to_owned()),
            _ => None,
        };
        let c =
            CodeactConfig::layered(Some(("/u".into(), user)), Some(("/p".into(), project)), env);
        assert_eq!(
            c.deny,
            ["view", "bash"],
            "empty TOOLGATE_DISABLE falls through to CODEACT_DISABLE"
        );
        let f = c.tool_filter();
        assert!(
            f.permits("glob") && !f.permits("sql"),
            "TOOLGATE_TOOLS replaces every allow list"
        );
        assert!(
            !f.permits("bash") && !f.permits("view"),
            "a tool in both lists is dropped"
        );
        // Empty allow lists allow everything.
        let c = CodeactConfig::layered(
            Some(("/u".into(), parse("[tools]\nallow = []\n").unwrap())),
            None,
            no_env,
        );
        assert!(c.tool_filter().permits("anything"));
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
