//! `toolgate hook pre-tool-use`: read a host's hook payload, answer allow (empty output, the
//! host's default) or deny with a reason the model reads.
//!
//! Payload shapes (reference §7.3–7.4): Copilot CLI camelCase (`toolName`, `toolArgs` as a JSON
//! string or an object, `sessionId`), its snake_case form (`tool_name`, `tool_args`/`tool_input`,
//! `session_id`), and the `hook_event_name` form that Claude Code (and Copilot's PascalCase
//! `PreToolUse` registration) sends, which is answered with `hookSpecificOutput`. Payloads are
//! read as Node's `JSON.stringify` writes them: a lone surrogate escape (`"\ud800"`, what it
//! emits for broken UTF-16) is read as U+FFFD, which is also what Node hands a process when it
//! writes that string out; nesting deeper than [`MAX_DEPTH`] is not read at all.
//!
//! Modes: `off`; `nudge` (after N consecutive read-only calls the next one is denied with the
//! exact `toolgate exec` command); `exclusive`. The mode is the stricter (off < nudge <
//! exclusive) of `TOOLGATE_MODE` (else `CODEACT_MODE`) and `mode` in the `[hook]` table of the
//! user config `~/.config/toolgate/config.toml`: the environment can make the user's choice
//! stricter, never weaker, so a host or project that sets `TOOLGATE_MODE=off` cannot switch
//! off what the user chose ([`Mode::resolve`]).
//!
//! What exclusive mode allows, exactly ([`exclusive_verdict`]); everything else is denied:
//! - a shell tool call (`bash`, `shell`, `powershell`, `pwsh`, `run_in_terminal`) whose command
//!   is one exact `toolgate exec` of this project ([`crate::shell::exclusive_exec`]): the
//!   installed binary (its absolute path, or the spelling the host ran the hook by once the CLI
//!   has checked that it resolves to the running binary), `exec`, and only the options
//!   `--code`, `-f -`/`-` (the program on stdin, e.g. a quoted heredoc), `--workspace` equal to
//!   the payload's `cwd` (or `.`, or absent), `--raw`, `--backend`, `--timeout`, `--max-memory`,
//!   `--max-tool-calls` and `--plot`; no `--yes`, `--save`, `--store`, `--in-process`, no file
//!   path, nothing the shell would expand, no second command, no redirection; and no
//!   argument that sets the call's working directory or environment;
//! - toolgate's own MCP tools under the exact names the installs give them (server `toolgate`:
//!   [`is_own_mcp_tool`]);
//! - the host's bookkeeping tools (report_intent, TodoWrite, …: they touch nothing);
//! - a payload for another event than `PreToolUse` gets no answer (it is not a tool call).
//!
//! A payload exclusive mode cannot read (not UTF-8, not JSON, too deep, not an object) is
//! denied, in the answer shape its top-level keys name. In `nudge` mode the same payload is
//! allowed with a warning: nudging is advice, not a boundary.
//!
//! The nudge counter is kept per host session id (a payload without one: per working
//! directory, a new count after [`SESSIONLESS_GAP_MS`] without calls) in a small JSON file,
//! updated under an exclusive file lock and replaced by rename, so concurrent hook processes
//! count exactly. Any trouble with that state fails open: the call is allowed and a warning
//! goes to stderr.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::fsutil::sha256_hex;
use crate::shell::{Dialect, NotAllowed, exclusive_exec, is_exec_of, is_toolgate_exec, quote};

/// Environment variables that set the mode, in order.
pub const MODE_ENV: [&str; 2] = ["TOOLGATE_MODE", "CODEACT_MODE"];
/// Environment variable for N in nudge mode.
pub const NUDGE_AFTER_ENV: &str = "TOOLGATE_NUDGE_AFTER";
/// Default N: three read-only calls in a row pass, the fourth is denied.
pub const DEFAULT_NUDGE_AFTER: u32 = 3;

/// Ordered by strictness: `Off < Nudge < Exclusive`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Mode {
    Off,
    Nudge,
    Exclusive,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Off => "off",
            Mode::Nudge => "nudge",
            Mode::Exclusive => "exclusive",
        }
    }

    /// A mode word (`off`, `nudge`, `exclusive`, and the aliases `0`, `false`, `none`, `strict`).
    pub fn parse(v: &str) -> Option<Mode> {
        match v.trim().to_ascii_lowercase().as_str() {
            "off" | "0" | "false" | "none" => Some(Mode::Off),
            "nudge" => Some(Mode::Nudge),
            "exclusive" | "strict" => Some(Mode::Exclusive),
            _ => None,
        }
    }

    /// The mode from the environment (read through `env`), with the variable that set it; an
    /// unknown value is `off` plus a warning.
    pub fn from_env(env: impl Fn(&str) -> Option<String>) -> (Mode, String, Option<String>) {
        Mode::resolve(env, None)
    }

    /// The stricter (off < nudge < exclusive) of the mode in the environment and the mode in
    /// the user config (`config`: where it was set, as shown to the user, and the value), else
    /// `off`; with where it came from and a warning. The environment can make the user's choice
    /// stricter but never weaker: a host or a project's settings that set `TOOLGATE_MODE=off`
    /// must not switch off the exclusive mode the user chose. A value that is not a mode is
    /// ignored with a warning (`off` when nothing else sets one).
    pub fn resolve(
        env: impl Fn(&str) -> Option<String>,
        config: Option<(&str, &str)>,
    ) -> (Mode, String, Option<String>) {
        let mut warnings = Vec::new();
        // Whether a value that is not a mode was ignored: then an `off` result is worth saying.
        let mut ignored_value = false;
        let from_env = MODE_ENV.iter().find_map(|var| {
            env(var)
                .filter(|v| !v.trim().is_empty())
                .map(|v| ((*var).to_owned(), v))
        });
        let env_mode = from_env
            .as_ref()
            .and_then(|(var, value)| match Mode::parse(value) {
                Some(m) => Some((m, var.clone())),
                None => {
                    warnings.push(format!(
                        "{var}={value} is not a mode (use off, nudge or exclusive); it is ignored"
                    ));
                    ignored_value = true;
                    None
                }
            });
        let config_mode = config.and_then(|(src, value)| match Mode::parse(value) {
            Some(m) => Some((m, src.to_owned())),
            None => {
                warnings.push(format!(
                    "mode = {value:?} in the [hook] table of {src} is not a mode (use off, nudge or exclusive); it is ignored"
                ));
                ignored_value = true;
                None
            }
        });
        let (mode, source) = match (env_mode, config_mode) {
            (Some((e, var)), Some((c, src))) => {
                if e < c {
                    warnings.push(format!(
                        "{var}={} is ignored: the [hook] table of {src} sets mode {}, and the environment can only make the mode stricter",
                        e.as_str(),
                        c.as_str()
                    ));
                }
                if e > c { (e, var) } else { (c, src) }
            }
            (Some(e), None) => e,
            (None, Some(c)) => c,
            (None, None) => {
                let source = match (&from_env, config) {
                    (Some((var, _)), _) => var.clone(),
                    (None, Some((src, _))) => src.to_owned(),
                    (None, None) => MODE_ENV[0].to_owned(),
                };
                (Mode::Off, source)
            }
        };
        let warning = (!warnings.is_empty()).then(|| {
            if mode == Mode::Off && ignored_value {
                format!("{}; enforcement is off", warnings.join("; "))
            } else {
                warnings.join("; ")
            }
        });
        (mode, source, warning)
    }
}

/// How the hook runs.
#[derive(Debug, Clone)]
pub struct HookConfig {
    pub mode: Mode,
    /// The variable the mode came from (shown in the deny reason).
    pub mode_var: String,
    /// Nudge: how many read-only calls in a row pass before one is denied.
    pub nudge_after: u32,
    /// The toolgate binary: the canonical absolute path of the running (installed) binary.
    /// The deny reason tells the model to run it, and exclusive mode lets through only shell
    /// calls that start with exactly this path.
    pub exe: String,
    /// Other spellings of the same binary that shell calls may use: the one the installed files
    /// use and the host ran the hook by (`toolgate` from `PATH`, `./bin/toolgate`). The caller
    /// adds a spelling only after checking that it resolves to the running binary; the deny
    /// reason suggests the first one.
    pub aliases: Vec<String>,
    /// Sandbox function names for the deny reason.
    pub tools: Vec<String>,
    /// Where the per-session counters live.
    pub state_dir: PathBuf,
}

/// What to print.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Answer {
    /// Compact JSON for stdout; empty means "no opinion" (the host's default handling).
    pub stdout: String,
    /// Lines for stderr.
    pub warnings: Vec<String>,
    /// Whether the call was denied.
    pub denied: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// Top-level `permissionDecision` (Copilot CLI camelCase or snake_case payloads).
    Copilot,
    /// `hookSpecificOutput` (payloads with `hook_event_name`: Claude Code, Copilot PascalCase).
    HookSpecific,
}

/// A parsed payload.
#[derive(Debug, Clone, PartialEq)]
pub struct Payload {
    shape: Shape,
    pub event: Option<String>,
    pub tool_name: String,
    pub args: Value,
    pub session_id: Option<String>,
    pub cwd: Option<String>,
    /// Milliseconds since the epoch (Copilot CLI's `timestamp`).
    pub timestamp_ms: Option<u64>,
}

fn str_field<'a>(v: &'a Value, keys: &[&str]) -> Option<&'a str> {
    keys.iter().find_map(|k| v.get(*k).and_then(Value::as_str))
}

/// How deep a payload may nest (arrays and objects). serde_json stops at 128 with an error,
/// which used to be read as "not JSON, allow"; a payload deeper than this is refused here
/// first, so exclusive mode denies it.
pub const MAX_DEPTH: usize = 100;

/// What one lexical pass over a payload found (see [`scan_json`]).
struct Scan<'a> {
    /// The text with every lone surrogate escape replaced by `\ufffd`.
    text: std::borrow::Cow<'a, str>,
    /// The deepest nesting of arrays and objects.
    depth: usize,
    /// Whether the top-level object has a `hook_event_name` / `hookEventName` key.
    event_key: bool,
}

fn hex4(b: &[u8]) -> Option<u32> {
    let s = std::str::from_utf8(b.get(..4)?).ok()?;
    if !s.bytes().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    u32::from_str_radix(s, 16).ok()
}

/// One pass over JSON text without parsing it: strings (with their escapes) are skipped as
/// JSON defines them, so brackets and keys are counted only outside strings. A `\uD800`–
/// `\uDFFF` escape that is not half of a high+low pair is rewritten to `\ufffd` (serde_json
/// refuses lone surrogates; Node's `JSON.stringify` writes them for broken UTF-16 strings, and
/// Node itself writes U+FFFD when it passes such a string to a process). Nothing else is
/// changed, and malformed text is left for serde_json to refuse.
fn scan_json(input: &str) -> Scan<'_> {
    let b = input.as_bytes();
    let mut out: Option<String> = None;
    let mut copied = 0;
    let (mut i, mut depth, mut max_depth) = (0, 0usize, 0usize);
    let mut top_object = false;
    let mut event_key = false;
    let mut in_str: Option<usize> = None; // start of the string's content
    while i < b.len() {
        let c = b[i];
        if let Some(start) = in_str {
            match c {
                b'"' => {
                    in_str = None;
                    i += 1;
                    if top_object && depth == 1 {
                        let key = &b[start..i - 1];
                        let colon = b[i..].iter().find(|c| !c.is_ascii_whitespace());
                        if colon == Some(&b':')
                            && (key == b"hook_event_name" || key == b"hookEventName")
                        {
                            event_key = true;
                        }
                    }
                }
                b'\\' if b.get(i + 1) == Some(&b'u') => match b.get(i + 2..).and_then(hex4) {
                    Some(0xD800..=0xDBFF)
                        if b.get(i + 6..i + 8) == Some(b"\\u")
                            && b.get(i + 8..)
                                .and_then(hex4)
                                .is_some_and(|l| (0xDC00..=0xDFFF).contains(&l)) =>
                    {
                        i += 12;
                    }
                    Some(0xD800..=0xDFFF) => {
                        let o = out.get_or_insert_with(|| String::with_capacity(input.len()));
                        o.push_str(&input[copied..i]);
                        o.push_str("\\ufffd");
                        i += 6;
                        copied = i;
                    }
                    Some(_) => i += 6,
                    None => i += 2,
                },
                b'\\' => i += 2,
                _ => i += 1,
            }
            continue;
        }
        match c {
            b'"' => in_str = Some(i + 1),
            b'{' | b'[' => {
                if depth == 0 && c == b'{' {
                    top_object = true;
                }
                depth += 1;
                max_depth = max_depth.max(depth);
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    let text = match out {
        Some(mut o) => {
            o.push_str(&input[copied..]);
            std::borrow::Cow::Owned(o)
        }
        None => std::borrow::Cow::Borrowed(input),
    };
    Scan {
        text,
        depth: max_depth,
        event_key,
    }
}

/// Why a hook payload could not be read (the hook then fails as its mode says: open in nudge,
/// closed in exclusive).
#[derive(Debug, thiserror::Error)]
pub enum PayloadError {
    #[error(
        "the hook payload could not be read: it nests arrays and objects {depth} deep, more than the {MAX_DEPTH} the hook reads"
    )]
    TooDeep { depth: usize },
    #[error("the hook payload could not be read: it is not JSON ({0})")]
    NotJson(#[source] serde_json::Error),
    #[error("the hook payload could not be read: it is not a JSON object")]
    NotObject,
}

/// JSON as Node writes it: lone surrogates read as U+FFFD, nesting limited to [`MAX_DEPTH`].
fn read_json(input: &str) -> Result<Value, PayloadError> {
    let scan = scan_json(input);
    if scan.depth > MAX_DEPTH {
        return Err(PayloadError::TooDeep { depth: scan.depth });
    }
    serde_json::from_str(scan.text.trim()).map_err(PayloadError::NotJson)
}

/// Parse a payload of either host.
///
/// # Errors
///
/// [`PayloadError`] when the input is not a JSON object the hook can read.
pub fn parse_payload(input: &str) -> Result<Payload, PayloadError> {
    let v = read_json(input)?;
    if !v.is_object() {
        return Err(PayloadError::NotObject);
    }
    let event = str_field(&v, &["hook_event_name", "hookEventName"]).map(str::to_owned);
    let shape = if event.is_some() {
        Shape::HookSpecific
    } else {
        Shape::Copilot
    };
    let tool_name = str_field(&v, &["toolName", "tool_name"])
        .unwrap_or("")
        .to_owned();
    let raw_args = ["toolArgs", "tool_args", "tool_input", "toolInput", "input"]
        .iter()
        .find_map(|k| v.get(*k))
        .cloned()
        .unwrap_or(Value::Null);
    // Copilot CLI sends toolArgs as a JSON string (older reference) or an object (newer). A
    // string that is not JSON is kept as it is (a shell tool's whole command line); so is one
    // too deep to read, which no exact `toolgate exec` is.
    let args = match raw_args {
        Value::String(s) => read_json(&s).unwrap_or(Value::String(s)),
        other => other,
    };
    Ok(Payload {
        shape,
        event,
        tool_name,
        args,
        session_id: str_field(&v, &["sessionId", "session_id"]).map(str::to_owned),
        cwd: str_field(&v, &["cwd"]).map(str::to_owned),
        timestamp_ms: v.get("timestamp").and_then(Value::as_u64),
    })
}

const SHELL_TOOLS: &[&str] = &[
    "bash",
    "shell",
    "powershell",
    "pwsh",
    "run_in_terminal",
    "runinterminal",
];
/// Shell tools known to run a POSIX shell (Claude Code's and Copilot CLI's `bash`: bash or
/// zsh). The others may run PowerShell, fish or whatever the user's terminal runs, so their
/// commands must read the same in every shell ([`Dialect::Neutral`]).
const POSIX_SHELL_TOOLS: &[&str] = &["bash"];
/// Shell tool arguments that would move the call to another directory or give it another
/// environment: `--workspace .` would then be another folder.
const SHELL_CONTEXT_ARGS: &[&str] = &[
    "cwd",
    "workdir",
    "working_dir",
    "working_directory",
    "workingdirectory",
    "dir",
    "directory",
    "env",
    "environment",
];
const READ_ONLY_TOOLS: &[&str] = &[
    "view",
    "read",
    "read_file",
    "readfile",
    "glob",
    "grep",
    "rg",
    "search",
    "file_search",
    "grep_search",
    "semantic_search",
    "ls",
    "list_dir",
    "listdir",
    "notebookread",
];
/// Host bookkeeping that touches nothing: exclusive mode lets it through.
const BOOKKEEPING_TOOLS: &[&str] = &[
    "report_intent",
    "ask_user",
    "askuserquestion",
    "todowrite",
    "update_todo",
    "exitplanmode",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A shell call that runs `toolgate exec` and nothing else.
    Codeact,
    ReadOnly,
    /// Allowed even in exclusive mode: toolgate's own MCP tools, host bookkeeping.
    Exempt,
    Other,
}

/// Classify a call.
/// `exe` is the installed toolgate binary (its absolute path): a shell call counts as a
/// CodeAct call only when it runs exactly that binary's `exec` and nothing else.
pub fn classify(tool_name: &str, args: &Value, exe: &str) -> Kind {
    let name = tool_name.trim().to_ascii_lowercase();
    if SHELL_TOOLS.contains(&name.as_str()) {
        let command = match args {
            Value::String(s) => Some(s.as_str()),
            other => str_field(other, &["command", "cmd", "script"]),
        };
        return if command.is_some_and(|c| is_toolgate_exec(c, exe)) {
            Kind::Codeact
        } else {
            Kind::Other
        };
    }
    if READ_ONLY_TOOLS.contains(&name.as_str()) {
        return Kind::ReadOnly;
    }
    if BOOKKEEPING_TOOLS.contains(&name.as_str()) || is_own_mcp_tool(&name) {
        return Kind::Exempt;
    }
    Kind::Other
}

/// The MCP server name every install writes (`mcpServers.toolgate`, VS Code `servers.toolgate`;
/// the plugins are named `toolgate` too).
pub const OWN_MCP_SERVER: &str = crate::PLUGIN_NAME;

/// The tools toolgate's MCP server lists on the surfaces the installs start (`run_code` and
/// the four Debrief agent tools), lowercased. The CLI's tests check this against
/// `toolgate_mcp::surface_specs`.
pub const OWN_MCP_TOOLS: &[&str] = &[
    "run_code",
    "debrief_searchplots",
    "debrief_summarizecurrentplot",
    "debrief_listtools",
    "debrief_runtool",
];

/// toolgate's own MCP tools under every name the hosts give them: Claude Code
/// `mcp__toolgate__run_code` (project `.mcp.json`) and `mcp__plugin_toolgate_toolgate__run_code`
/// (the plugin's server), Copilot CLI `toolgate-run_code` (server-namespaced), VS Code
/// `mcp_toolgate_run_code` and the `toolgate/run_code` tool reference. Exactly the server
/// `toolgate` and one of [`OWN_MCP_TOOLS`], not a prefix: `mcp_toolgate_x_run_code` is the tool
/// `run_code` of a server named `toolgate_x`, and `toolgate-x-run_code` one of `toolgate-x`.
pub fn is_own_mcp_tool(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    let server = OWN_MCP_SERVER;
    [
        format!("mcp__{server}__"),
        format!("mcp__plugin_{server}_{server}__"),
        format!("mcp_{server}_"),
        format!("{server}-"),
        format!("{server}/"),
    ]
    .iter()
    .any(|p| {
        name.strip_prefix(p.as_str())
            .is_some_and(|rest| OWN_MCP_TOOLS.contains(&rest))
    })
}

/// The command lines of a shell tool call: the whole argument when it is a string, else every
/// `command`/`cmd`/`script` field (each must be a string, and there must be one).
fn shell_commands(args: &Value) -> Result<Vec<&str>, NotAllowed> {
    match args {
        Value::String(s) => Ok(vec![s.as_str()]),
        Value::Object(m) => {
            if let Some(k) = m
                .keys()
                .find(|k| SHELL_CONTEXT_ARGS.contains(&k.to_ascii_lowercase().as_str()))
            {
                return Err(NotAllowed::ContextArgument { key: k.clone() });
            }
            let mut out = Vec::new();
            for key in ["command", "cmd", "script"] {
                match m.get(key) {
                    None => {}
                    Some(Value::String(s)) => out.push(s.as_str()),
                    Some(_) => {
                        return Err(NotAllowed::CommandNotString {
                            key: key.to_owned(),
                        });
                    }
                }
            }
            if out.is_empty() {
                return Err(NotAllowed::NoCommand);
            }
            Ok(out)
        }
        _ => Err(NotAllowed::NoCommand),
    }
}

/// Why exclusive mode denied a call (the deny reason's first sentence).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Blocked {
    /// A tool that is not a shell.
    #[error("exclusive mode runs only `toolgate exec` programs, so `{tool}` was blocked")]
    NotShell { tool: String },
    /// A shell call that is not one exact `toolgate exec` of this project.
    #[error(
        "exclusive mode runs only `toolgate exec` on this project, so this `{tool}` call was blocked: {why}"
    )]
    NotExec { tool: String, why: NotAllowed },
}

/// Exclusive mode's decision for one parsed PreToolUse payload: `Ok` to allow, else why it is
/// denied. See the module documentation for exactly what passes.
///
/// # Errors
///
/// [`Blocked`] for a call exclusive mode denies.
pub fn exclusive_verdict(payload: &Payload, cfg: &HookConfig) -> Result<(), Blocked> {
    // No trimming: a name with spaces is not the tool it resembles.
    let name = payload.tool_name.to_ascii_lowercase();
    if BOOKKEEPING_TOOLS.contains(&name.as_str()) || is_own_mcp_tool(&name) {
        return Ok(());
    }
    if !SHELL_TOOLS.contains(&name.as_str()) {
        return Err(Blocked::NotShell {
            tool: payload.tool_name.clone(),
        });
    }
    let dialect = if POSIX_SHELL_TOOLS.contains(&name.as_str()) {
        Dialect::Posix
    } else {
        Dialect::Neutral
    };
    let mut spellings: Vec<&str> = Vec::new();
    if Path::new(&cfg.exe).is_absolute() {
        spellings.push(&cfg.exe);
    }
    spellings.extend(cfg.aliases.iter().map(String::as_str));
    let blocked = |why: NotAllowed| Blocked::NotExec {
        tool: payload.tool_name.clone(),
        why,
    };
    for command in shell_commands(&payload.args).map_err(blocked)? {
        exclusive_exec(command, &spellings, payload.cwd.as_deref(), dialect).map_err(blocked)?;
    }
    Ok(())
}

/// The kind of a call, accepting the binary's absolute path and its checked aliases.
fn classify_cfg(payload: &Payload, cfg: &HookConfig) -> Kind {
    let kind = classify(&payload.tool_name, &payload.args, &cfg.exe);
    if kind != Kind::Other || cfg.aliases.is_empty() {
        return kind;
    }
    let name = payload.tool_name.trim().to_ascii_lowercase();
    if !SHELL_TOOLS.contains(&name.as_str()) {
        return kind;
    }
    let command = match &payload.args {
        Value::String(s) => Some(s.as_str()),
        other => str_field(other, &["command", "cmd", "script"]),
    };
    match command {
        Some(c) if cfg.aliases.iter().any(|a| is_exec_of(c, a)) => Kind::Codeact,
        _ => kind,
    }
}

/// Answer one payload given as bytes (what a host writes to the hook's stdin): text that is
/// not UTF-8 is a payload that cannot be read.
pub fn answer_bytes(input: &[u8], cfg: &HookConfig) -> Answer {
    match std::str::from_utf8(input) {
        Ok(text) => answer(text, cfg),
        Err(e) => unreadable(
            &format!("the hook payload could not be read: it is not UTF-8 ({e})"),
            &String::from_utf8_lossy(input),
            cfg,
        ),
    }
}

/// The answer to a payload that could not be read: in exclusive mode a denial (in the shape
/// the payload's top-level keys name: `hook_event_name` → `hookSpecificOutput`, else
/// Copilot's), otherwise the call is allowed with a warning.
pub fn unreadable(why: &str, input: &str, cfg: &HookConfig) -> Answer {
    let mut ans = Answer::default();
    match cfg.mode {
        Mode::Off => {}
        Mode::Nudge => ans.warnings.push(format!("{why}; allowing the call")),
        Mode::Exclusive => {
            let shape = if scan_json(input).event_key {
                Shape::HookSpecific
            } else {
                Shape::Copilot
            };
            let payload = Payload {
                shape,
                event: None,
                tool_name: String::new(),
                args: Value::Null,
                session_id: None,
                cwd: None,
                timestamp_ms: None,
            };
            let why = format!("{why}, and exclusive mode denies what it cannot check");
            ans.warnings.push(format!("{why}; denying the call"));
            ans.denied = true;
            ans.stdout = deny_json(shape, &reason(&why, &payload, cfg));
        }
    }
    ans
}

/// Answer one payload.
pub fn answer(input: &str, cfg: &HookConfig) -> Answer {
    if cfg.mode == Mode::Off {
        return Answer::default();
    }
    let payload = match parse_payload(input) {
        Ok(p) => p,
        Err(e) => return unreadable(&e.to_string(), input, cfg),
    };
    let mut ans = Answer::default();
    if let Some(ev) = &payload.event
        && !ev.eq_ignore_ascii_case("PreToolUse")
    {
        return ans;
    }
    let deny_reason = match cfg.mode {
        Mode::Off => None,
        Mode::Exclusive => exclusive_verdict(&payload, cfg)
            .err()
            .map(|b| b.to_string()),
        Mode::Nudge => match classify_cfg(&payload, cfg) {
            Kind::Exempt => None,
            kind => nudge(&payload, kind, cfg, &mut ans.warnings),
        },
    };
    if let Some(why) = deny_reason {
        ans.denied = true;
        ans.stdout = deny_json(payload.shape, &reason(&why, &payload, cfg));
    }
    ans
}

fn deny_json(shape: Shape, reason: &str) -> String {
    let v = match shape {
        Shape::Copilot => json!({"permissionDecision": "deny", "permissionDecisionReason": reason}),
        Shape::HookSpecific => json!({"hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }}),
    };
    v.to_string()
}

/// The text the model reads: why, and the exact command to use instead.
pub fn reason(why: &str, payload: &Payload, cfg: &HookConfig) -> String {
    let workspace = payload.cwd.as_deref().unwrap_or(".");
    let tools = if cfg.tools.is_empty() {
        "view, create, edit, glob, grep, bash, sql, web_fetch".to_owned()
    } else {
        cfg.tools.join(", ")
    };
    let exe = quote(cfg.aliases.first().unwrap_or(&cfg.exe));
    let from_env = MODE_ENV.contains(&cfg.mode_var.as_str());
    let set = if from_env {
        format!("{}={}", cfg.mode_var, cfg.mode.as_str())
    } else {
        format!("mode {}, set in {}", cfg.mode.as_str(), cfg.mode_var)
    };
    let change = if from_env {
        format!(
            "To turn enforcement off: unset {} (or set it to off).",
            MODE_ENV.join(" and ")
        )
    } else {
        format!(
            "To turn enforcement off: set mode = \"off\" in the [hook] table of {} (the environment can only make the mode stricter).",
            cfg.mode_var
        )
    };
    format!(
        "toolgate CodeAct enforcement ({set}): {why}. Do this work as one sandboxed Python program in a single shell call:\n\n  {exe} exec --workspace {ws} --raw --code '<your python>'\n\nSandbox tools (Python functions, keyword arguments): {tools}.\nFull reference: {exe} tools list --surface codeact --markdown\n{change}",
        ws = quote(workspace),
    )
}

/// A payload without a session id (Copilot CLI sends none in some versions) is counted per
/// working directory, and a gap of more than this many milliseconds since the previous call
/// there starts a new count: that is taken as a new session.
pub const SESSIONLESS_GAP_MS: u64 = 15 * 60 * 1000;

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// Nudge bookkeeping; `Some(why)` to deny.
fn nudge(
    payload: &Payload,
    kind: Kind,
    cfg: &HookConfig,
    warnings: &mut Vec<String>,
) -> Option<String> {
    let (key, window) = match (&payload.session_id, &payload.cwd) {
        (Some(s), _) if !s.is_empty() => (format!("session:{s}"), None),
        (_, cwd) => (
            format!("cwd:{}", cwd.as_deref().unwrap_or("")),
            Some(payload.timestamp_ms.unwrap_or_else(now_ms)),
        ),
    };
    let state = SessionState::new(&cfg.state_dir, &key);
    if kind != Kind::ReadOnly && !state.path.exists() {
        return None; // nothing to reset
    }
    let result = state.update_at(window, |count| {
        if kind != Kind::ReadOnly {
            return (0, None);
        }
        if count >= cfg.nudge_after {
            (
                0,
                Some(format!(
                    "{count} read-only tool calls in a row (nudge after {})",
                    cfg.nudge_after
                )),
            )
        } else {
            (count + 1, None)
        }
    });
    match result {
        Ok(deny) => deny,
        Err(e) => {
            warnings.push(format!(
                "hook state {} unusable ({e}); allowing the call",
                state.path.display()
            ));
            None
        }
    }
}

/// Why a session's counter could not be read or written (the hook then allows the call and warns).
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("cannot {action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("not a toolgate hook state file")]
    NotState,
}

impl StateError {
    fn io(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> Self + use<> {
        let path = path.to_path_buf();
        move |source| StateError::Io {
            action,
            path,
            source,
        }
    }
}

/// One session's counter file and its lock file.
pub struct SessionState {
    pub path: PathBuf,
    lock: PathBuf,
}

impl SessionState {
    pub fn new(dir: &Path, key: &str) -> Self {
        let name = &sha256_hex(key.as_bytes())[..32];
        SessionState {
            path: dir.join(format!("{name}.json")),
            lock: dir.join(format!("{name}.lock")),
        }
    }

    /// Read the count, let `f` decide the new count, write it; all under an exclusive lock.
    /// Unreadable state is an error (the caller fails open) but is reset so that the next call
    /// works again.
    pub fn update<T>(&self, f: impl FnOnce(u32) -> (u32, T)) -> Result<T, StateError> {
        self.update_at(None, f)
    }

    /// [`SessionState::update`] for a count without a session id: `now_ms` is stored with the
    /// count, and a stored count older than [`SESSIONLESS_GAP_MS`] is taken as 0.
    pub fn update_at<T>(
        &self,
        now_ms: Option<u64>,
        f: impl FnOnce(u32) -> (u32, T),
    ) -> Result<T, StateError> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        fs::create_dir_all(dir).map_err(StateError::io("create", dir))?;
        let lock =
            toolgate_fs::open::open_lock(&self.lock).map_err(StateError::io("open", &self.lock))?;
        lock.lock().map_err(StateError::io("lock", &self.lock))?;
        let current = match fs::read(&self.path) {
            Ok(bytes) => {
                let v = serde_json::from_slice::<Value>(&bytes).ok();
                let count = v
                    .as_ref()
                    .and_then(|v| v.get("consecutive_read_only")?.as_u64())
                    .and_then(|n| u32::try_from(n).ok());
                let last = v.as_ref().and_then(|v| v.get("last_ms")?.as_u64());
                match (count, now_ms, last) {
                    (None, _, _) => Err(StateError::NotState),
                    (Some(_), Some(now), Some(last))
                        if now.saturating_sub(last) > SESSIONLESS_GAP_MS =>
                    {
                        Ok(0)
                    }
                    (Some(n), _, _) => Ok(n),
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
            Err(e) => Err(StateError::io("read", &self.path)(e)),
        };
        let result = match current {
            Ok(n) => {
                let (next, out) = f(n);
                self.write(dir, next, now_ms).map(|()| out)
            }
            Err(e) => {
                let _ = self.write(dir, 0, now_ms);
                Err(e)
            }
        };
        let _ = lock.unlock();
        result
    }

    fn write(&self, _dir: &Path, count: u32, now_ms: Option<u64>) -> Result<(), StateError> {
        let body = match now_ms {
            Some(t) => json!({"consecutive_read_only": count, "last_ms": t}),
            None => json!({"consecutive_read_only": count}),
        }
        .to_string();
        // Exclusive temp, fsync, rename, directory fsync: a crash never leaves half a count.
        toolgate_fs::atomic_write(&self.path, body.as_bytes()).map_err(|e| StateError::Io {
            action: "write",
            path: self.path.clone(),
            source: e.into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(mode: Mode) -> HookConfig {
        HookConfig {
            mode,
            mode_var: "TOOLGATE_MODE".into(),
            nudge_after: 3,
            exe: "/opt/bin/toolgate".into(),
            aliases: Vec::new(),
            tools: Vec::new(),
            state_dir: PathBuf::from("/nonexistent/toolgate-hook-state"),
        }
    }

    #[test]
    fn lone_surrogates_read_as_replacement_characters_and_pairs_stay() {
        for (json, want) in [
            (r#""a\ud800b""#, "a\u{FFFD}b"),
            (r#""a\uDC00""#, "a\u{FFFD}"),
            (r#""\ud800\ud800""#, "\u{FFFD}\u{FFFD}"),
            (r#""\udc00\ud83d""#, "\u{FFFD}\u{FFFD}"),
            (r#""\ud83d\ude00""#, "\u{1F600}"),
            (r#""\ud83d\u0041""#, "\u{FFFD}A"),
            // An escaped backslash followed by the letters `ud800` is text, not an escape.
            (r#""\\ud800""#, "\\ud800"),
            (r#""\"\ud800""#, "\"\u{FFFD}"),
        ] {
            assert_eq!(
                read_json(json).unwrap(),
                Value::String(want.into()),
                "{json}"
            );
        }
        // Outside strings nothing is rewritten; serde_json still judges the text.
        assert!(read_json(r"\ud800").is_err());
    }

    #[test]
    fn nesting_is_limited_and_counted_outside_strings_only() {
        let nested = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert!(read_json(&nested(MAX_DEPTH)).is_ok());
        let e = read_json(&nested(MAX_DEPTH + 1)).unwrap_err();
        assert!(e.to_string().contains("101 deep"), "{e}");
        assert!(read_json(&format!("\"{}\"", "[".repeat(500))).is_ok());
        // Unbalanced text is deep too: refused before serde_json's own limit is reached.
        assert!(
            read_json(&"[".repeat(200))
                .unwrap_err()
                .to_string()
                .contains("deep")
        );
    }

    #[test]
    fn the_event_key_is_found_at_the_top_level_only() {
        assert!(scan_json(r#"{"a": [1], "hook_event_name": "PreToolUse"}"#).event_key);
        assert!(scan_json(r#" { "hookEventName" : 1 }"#).event_key);
        assert!(!scan_json(r#"{"a": {"hook_event_name": "x"}}"#).event_key);
        assert!(!scan_json(r#"{"a": "hook_event_name"}"#).event_key);
        assert!(!scan_json(r#"["hook_event_name", 1]"#).event_key);
        assert!(!scan_json(r#"{"a": "\"hook_event_name\":"}"#).event_key);
    }

    /// An ignored value that leaves the mode off says so; one that another setting overrides
    /// does not (the decision is made from which value was ignored, not from the warning text).
    #[test]
    fn an_ignored_mode_value_says_enforcement_is_off_only_when_it_is() {
        let env = |v: &'static str| move |k: &str| (k == MODE_ENV[0]).then(|| v.to_owned());
        let (mode, _, warning) = Mode::resolve(env("bogus"), None);
        assert_eq!(mode, Mode::Off);
        let warning = warning.unwrap();
        assert!(warning.ends_with("; enforcement is off"), "{warning}");
        let (mode, _, warning) = Mode::resolve(env("bogus"), Some(("config.toml", "exclusive")));
        assert_eq!(mode, Mode::Exclusive);
        let warning = warning.unwrap();
        assert!(!warning.contains("enforcement is off"), "{warning}");
        let (mode, _, warning) = Mode::resolve(env("off"), Some(("config.toml", "nudge")));
        assert_eq!(mode, Mode::Nudge);
        assert!(!warning.unwrap().contains("enforcement is off"));
        let (mode, _, warning) = Mode::resolve(env(""), Some(("config.toml", "bogus")));
        assert_eq!(mode, Mode::Off);
        assert!(warning.unwrap().ends_with("; enforcement is off"));
    }

    #[test]
    fn exclusive_mode_denies_unreadable_payloads_and_nudge_allows_them() {
        for bad in ["", "null", "[]", "{", "\"x\"", "{\"toolName\": }"] {
            let a = answer(bad, &cfg(Mode::Exclusive));
            assert!(a.denied && a.stdout.contains("permissionDecision"), "{bad}");
            let a = answer(bad, &cfg(Mode::Nudge));
            assert!(!a.denied && a.warnings[0].contains("allowing"), "{bad}");
            assert_eq!(answer(bad, &cfg(Mode::Off)), Answer::default());
        }
        let a = answer_bytes(b"{\"toolName\":\"bash\xff\"}", &cfg(Mode::Exclusive));
        assert!(a.denied && a.stdout.contains("not UTF-8"), "{a:?}");
        let a = answer(
            &format!(
                r#"{{"hook_event_name":"PreToolUse","tool_input":{}}}"#,
                "[".repeat(150)
            ),
            &cfg(Mode::Exclusive),
        );
        assert!(
            a.stdout.starts_with(r#"{"hookSpecificOutput""#),
            "{}",
            a.stdout
        );
    }

    #[test]
    fn own_mcp_tools_are_matched_exactly() {
        for own in [
            "mcp__toolgate__run_code",
            "MCP__TOOLGATE__RUN_CODE",
            "mcp__plugin_toolgate_toolgate__debrief_listTools",
            "mcp_toolgate_debrief_runtool",
            "toolgate-debrief_summarizeCurrentPlot",
            "toolgate/debrief_searchPlots",
        ] {
            assert!(is_own_mcp_tool(own), "{own}");
        }
        for other in [
            "mcp_toolgate_x_run_code",
            "toolgate-x-run_code",
            "mcp__toolgate__run_code2",
            "mcp__toolgate__",
            "toolgate-",
            "xtoolgate-run_code",
            "mcp__toolgate__run_code ",
        ] {
            assert!(!is_own_mcp_tool(other), "{other}");
        }
    }

    #[test]
    fn shell_arguments_that_move_the_call_are_refused() {
        let exec = "/opt/bin/toolgate exec --code 1";
        let p = |args: Value| Payload {
            shape: Shape::HookSpecific,
            event: None,
            tool_name: "Bash".into(),
            args,
            session_id: None,
            cwd: Some("/r".into()),
            timestamp_ms: None,
        };
        let c = cfg(Mode::Exclusive);
        assert!(exclusive_verdict(&p(json!({"command": exec})), &c).is_ok());
        assert!(exclusive_verdict(&p(json!(exec)), &c).is_ok());
        for bad in [
            json!({"command": exec, "cwd": "/"}),
            json!({"command": exec, "Env": {"LD_PRELOAD": "/x.so"}}),
            json!({"command": exec, "cmd": "id"}),
            json!({"command": [exec]}),
            json!({"description": exec}),
            json!([exec]),
            Value::Null,
        ] {
            assert!(exclusive_verdict(&p(bad.clone()), &c).is_err(), "{bad}");
        }
    }
}
