//! `toolgate hook pre-tool-use`: read a host's hook payload, answer allow (empty output, the
//! host's default) or deny with a reason the model reads.
//!
//! Payload shapes (reference §7.3–7.4): Copilot CLI camelCase (`toolName`, `toolArgs` as a JSON
//! string or an object, `sessionId`), its snake_case form (`tool_name`, `tool_args`/`tool_input`,
//! `session_id`), and the `hook_event_name` form that Claude Code (and Copilot's PascalCase
//! `PreToolUse` registration) sends, which is answered with `hookSpecificOutput`.
//!
//! Modes (`TOOLGATE_MODE`, else `CODEACT_MODE`, else `mode` in the `[hook]` table of the user
//! config `~/.config/toolgate/config.toml`): `off`; `nudge` (after N consecutive read-only
//! calls the next one is denied with the exact `toolgate exec` command); `exclusive` (only shell
//! calls that run exactly the installed binary's `exec` — its absolute path, no leading
//! assignments, no expanding heredoc; see [`crate::shell::is_toolgate_exec`] — toolgate's own MCP
//! tools and the host's bookkeeping tools pass). The nudge counter is kept per host session id (a payload without one: per working
//! directory, a new count after [`SESSIONLESS_GAP_MS`] without calls) in a small JSON file, updated under an
//! exclusive file lock and replaced by rename, so concurrent hook processes count exactly. Any
//! trouble with that state fails open: the call is allowed and a warning goes to stderr.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::fsutil::sha256_hex;
use crate::shell::{is_exec_of, is_toolgate_exec, quote};

/// Environment variables that set the mode, in order.
pub const MODE_ENV: [&str; 2] = ["TOOLGATE_MODE", "CODEACT_MODE"];
/// Environment variable for N in nudge mode.
pub const NUDGE_AFTER_ENV: &str = "TOOLGATE_NUDGE_AFTER";
/// Default N: three read-only calls in a row pass, the fourth is denied.
pub const DEFAULT_NUDGE_AFTER: u32 = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

    /// The mode from the environment, else from the user config (`config`: where it was set, as
    /// shown to the user, and the value), else `off`; with where it came from and a warning for
    /// a value that is not a mode (then `off`).
    pub fn resolve(
        env: impl Fn(&str) -> Option<String>,
        config: Option<(&str, &str)>,
    ) -> (Mode, String, Option<String>) {
        let from_env = MODE_ENV.iter().find_map(|var| {
            env(var)
                .filter(|v| !v.trim().is_empty())
                .map(|v| ((*var).to_owned(), v))
        });
        let Some((source, value)) =
            from_env.or_else(|| config.map(|(src, v)| (src.to_owned(), v.to_owned())))
        else {
            return (Mode::Off, MODE_ENV[0].to_owned(), None);
        };
        match Mode::parse(&value) {
            Some(mode) => (mode, source, None),
            None => (
                Mode::Off,
                source.clone(),
                Some(if MODE_ENV.contains(&source.as_str()) {
                    format!(
                        "{source}={value} is not a mode (use off, nudge or exclusive); enforcement is off"
                    )
                } else {
                    format!(
                        "mode = {value:?} in the [hook] table of {source} is not a mode (use off, nudge or exclusive); enforcement is off"
                    )
                }),
            ),
        }
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

/// Parse a payload of either host.
pub fn parse_payload(input: &str) -> Result<Payload, String> {
    let v: Value = serde_json::from_str(input.trim())
        .map_err(|e| format!("the hook payload is not JSON ({e})"))?;
    if !v.is_object() {
        return Err("the hook payload is not a JSON object".to_owned());
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
    // Copilot CLI sends toolArgs as a JSON string (older reference) or an object (newer).
    let args = match raw_args {
        Value::String(s) => serde_json::from_str(&s).unwrap_or(Value::String(s)),
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

/// toolgate's own MCP tools under every name the hosts give them (`name` lowercased):
/// Claude Code `mcp__toolgate__run_code` (project `.mcp.json`) and
/// `mcp__plugin_toolgate_toolgate__run_code` (the plugin's server), Copilot CLI
/// `toolgate-run_code` (server-namespaced), VS Code `mcp_toolgate_run_code` and the
/// `toolgate/run_code` tool reference.
pub fn is_own_mcp_tool(name: &str) -> bool {
    [
        "mcp__toolgate__",
        "mcp__plugin_toolgate_toolgate__",
        "mcp_toolgate_",
        "toolgate-",
        "toolgate/",
    ]
    .iter()
    .any(|p| name.strip_prefix(p).is_some_and(|rest| !rest.is_empty()))
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

/// Answer one payload.
pub fn answer(input: &str, cfg: &HookConfig) -> Answer {
    let mut ans = Answer::default();
    if cfg.mode == Mode::Off {
        return ans;
    }
    let payload = match parse_payload(input) {
        Ok(p) => p,
        Err(e) => {
            ans.warnings.push(format!("{e}; allowing the call"));
            return ans;
        }
    };
    if let Some(ev) = &payload.event
        && !ev.eq_ignore_ascii_case("PreToolUse")
    {
        return ans;
    }
    let kind = classify_cfg(&payload, cfg);
    let deny_reason = match (cfg.mode, kind) {
        (Mode::Off, _) | (_, Kind::Exempt) => None,
        (Mode::Exclusive, Kind::Codeact) => None,
        (Mode::Exclusive, _) => Some(format!(
            "exclusive mode runs only `toolgate exec` programs, so `{}` was blocked",
            payload.tool_name
        )),
        (Mode::Nudge, kind) => nudge(&payload, kind, cfg, &mut ans.warnings),
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
            "To turn enforcement off: set mode = \"off\" in the [hook] table of {}, or TOOLGATE_MODE=off.",
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
    pub fn update<T>(&self, f: impl FnOnce(u32) -> (u32, T)) -> Result<T, String> {
        self.update_at(None, f)
    }

    /// [`SessionState::update`] for a count without a session id: `now_ms` is stored with the
    /// count, and a stored count older than [`SESSIONLESS_GAP_MS`] is taken as 0.
    pub fn update_at<T>(
        &self,
        now_ms: Option<u64>,
        f: impl FnOnce(u32) -> (u32, T),
    ) -> Result<T, String> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&self.lock)
            .map_err(|e| format!("cannot open {}: {e}", self.lock.display()))?;
        lock.lock()
            .map_err(|e| format!("cannot lock {}: {e}", self.lock.display()))?;
        let current = match fs::read(&self.path) {
            Ok(bytes) => {
                let v = serde_json::from_slice::<Value>(&bytes).ok();
                let count = v
                    .as_ref()
                    .and_then(|v| v.get("consecutive_read_only")?.as_u64())
                    .and_then(|n| u32::try_from(n).ok());
                let last = v.as_ref().and_then(|v| v.get("last_ms")?.as_u64());
                match (count, now_ms, last) {
                    (None, _, _) => Err("not a toolgate hook state file".to_owned()),
                    (Some(_), Some(now), Some(last))
                        if now.saturating_sub(last) > SESSIONLESS_GAP_MS =>
                    {
                        Ok(0)
                    }
                    (Some(n), _, _) => Ok(n),
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
            Err(e) => Err(e.to_string()),
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

    fn write(&self, dir: &Path, count: u32, now_ms: Option<u64>) -> Result<(), String> {
        let tmp = dir.join(format!(
            ".{}.{}.tmp",
            self.path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            std::process::id()
        ));
        let body = match now_ms {
            Some(t) => json!({"consecutive_read_only": count, "last_ms": t}),
            None => json!({"consecutive_read_only": count}),
        }
        .to_string();
        let r = (|| {
            let mut f = File::create(&tmp)?;
            f.write_all(body.as_bytes())?;
            drop(f);
            fs::rename(&tmp, &self.path)
        })();
        r.map_err(|e| {
            let _ = fs::remove_file(&tmp);
            format!("cannot write {}: {e}", self.path.display())
        })
    }
}
