#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Issue 30 item 5: exclusive mode fed arbitrary and adversarial payloads (more than 10,000 in
//! all: random bytes, random JSON, shell commands built from adversarial tokens in every host
//! shape, and real payloads of the three hosts mutated structurally and byte by byte).
//! Nothing is allowed unless an independent oracle, written here from the specification and
//! sharing no code with the hook, says it is allowed:
//! - a shell tool call whose every command is one exact `toolgate exec` of this project
//!   (`oracle_command`),
//! - one of toolgate's own MCP tools under the exact names the installs give them, or a host
//!   bookkeeping tool (`exempt_names`),
//! - a payload for another event than PreToolUse (not a tool call: the hook says nothing).

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use toolgate_hosts::hook::{HookConfig, Mode, answer, answer_bytes};

const EXE: &str = "/usr/local/bin/toolgate";
const CWD: &str = "/work/repo";

fn cfg() -> HookConfig {
    HookConfig {
        mode: Mode::Exclusive,
        mode_var: "TOOLGATE_MODE".into(),
        nudge_after: 3,
        exe: EXE.into(),
        aliases: Vec::new(),
        tools: Vec::new(),
        // Exclusive mode keeps no state; a path that cannot be created shows if it tried.
        state_dir: "/proc/nonexistent/toolgate-hook-state".into(),
    }
}

// ---------------------------------------------------------------------------------------------
// The oracle.

/// Every tool name exclusive mode lets through whatever its arguments, written out by hand.
fn exempt_names() -> Vec<String> {
    let mut v: Vec<String> = [
        "report_intent",
        "ask_user",
        "askuserquestion",
        "todowrite",
        "update_todo",
        "exitplanmode",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    for t in [
        "run_code",
        "debrief_searchplots",
        "debrief_summarizecurrentplot",
        "debrief_listtools",
        "debrief_runtool",
    ] {
        v.push(format!("mcp__toolgate__{t}"));
        v.push(format!("mcp__plugin_toolgate_toolgate__{t}"));
        v.push(format!("mcp_toolgate_{t}"));
        v.push(format!("toolgate-{t}"));
        v.push(format!("toolgate/{t}"));
    }
    v
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Sh {
    /// bash or zsh.
    Posix,
    /// Any shell (PowerShell, fish, …).
    Any,
}

/// The words of `cmd` when every shell reads it the same way and nothing in it expands; `None`
/// otherwise. Deliberately small: bare runs of `[A-Za-z0-9_./:=+-]`, '…' (for `Sh::Any` without
/// a backslash or typographic quote, and as a whole word), "…" without `$ \` \\ !` (likewise).
fn oracle_words(cmd: &str, sh: Sh) -> Option<Vec<String>> {
    let bare = |c: char| c.is_ascii_alphanumeric() || "_./:=+-".contains(c);
    let typo = |c: char| ('\u{2018}'..='\u{201E}').contains(&c);
    let mut words = Vec::new();
    let chars: Vec<char> = cmd.trim_matches([' ', '\t']).chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == ' ' || chars[i] == '\t' {
            i += 1;
            continue;
        }
        let mut word = String::new();
        let mut pieces = 0;
        let mut has_bare = false;
        while i < chars.len() && chars[i] != ' ' && chars[i] != '\t' {
            let c = chars[i];
            if c == '\'' || c == '"' {
                let close = chars[i + 1..].iter().position(|&d| d == c)? + i + 1;
                let inner = &chars[i + 1..close];
                if inner.contains(&'\0') {
                    return None;
                }
                if c == '"' && inner.iter().any(|d| "$`\\!".contains(*d)) {
                    return None;
                }
                if sh == Sh::Any && inner.iter().any(|&d| typo(d) || (c == '\'' && d == '\\')) {
                    return None;
                }
                if sh == Sh::Any && c == '"' && inner.iter().any(|&d| typo(d)) {
                    return None;
                }
                word.extend(inner);
                pieces += 1;
                i = close + 1;
            } else if bare(c) {
                word.push(c);
                has_bare = true;
                i += 1;
            } else if c == '\\' && sh == Sh::Posix && i + 1 < chars.len() && chars[i + 1] != '\n' {
                // bash/zsh: the next character, literally.
                word.push(chars[i + 1]);
                has_bare = true;
                i += 2;
            } else {
                return None;
            }
        }
        if sh == Sh::Any && (pieces > 1 || (pieces == 1 && has_bare)) {
            return None;
        }
        words.push(word);
    }
    Some(words)
}

/// Whether these words are exactly an allowed `toolgate exec` of the project `cwd`.
fn oracle_exec(words: &[String], cwd: Option<&str>) -> bool {
    if words.len() < 2 || words[0] != EXE || words[1] != "exec" {
        return false;
    }
    let valued = [
        "--code",
        "--workspace",
        "-f",
        "--file",
        "--backend",
        "--timeout",
        "--max-memory",
        "--max-tool-calls",
        "--plot",
    ];
    let good = |o: &str, v: &str| -> bool {
        let num = !v.is_empty()
            && v.chars().next().unwrap().is_ascii_digit()
            && v.chars().all(|c| c.is_ascii_alphanumeric() || c == '.');
        match o {
            "--code" => true,
            "--workspace" => {
                let p = cwd.filter(|p| p.starts_with('/'));
                let strip = |s: &str| {
                    let t = s.trim_end_matches('/');
                    if t.is_empty() {
                        "/".to_owned()
                    } else {
                        t.to_owned()
                    }
                };
                v == "." || v == "./" || p.is_some_and(|p| !v.is_empty() && strip(v) == strip(p))
            }
            "-f" | "--file" => v == "-",
            "--backend" => ["auto", "monty", "hyperlight"].contains(&v),
            "--plot" => {
                !v.is_empty()
                    && !v.starts_with('-')
                    && v.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "._:/-".contains(c))
            }
            _ => num,
        }
    };
    let mut i = 2;
    while i < words.len() {
        let w = words[i].as_str();
        if w == "--raw" || w == "-" {
            i += 1;
        } else if let Some((o, v)) = w.split_once('=').filter(|(o, _)| o.starts_with("--")) {
            if !valued.contains(&o) || !good(o, v) {
                return false;
            }
            i += 1;
        } else if valued.contains(&w) {
            let Some(v) = words.get(i + 1) else {
                return false;
            };
            if !good(w, v) {
                return false;
            }
            i += 2;
        } else {
            return false;
        }
    }
    true
}

fn oracle_command(cmd: &str, sh: Sh, cwd: Option<&str>) -> bool {
    oracle_words(cmd, sh).is_some_and(|w| oracle_exec(&w, cwd))
}

fn depth(v: &Value) -> usize {
    match v {
        Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
        Value::Object(o) => 1 + o.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// Whether exclusive mode may let this payload through (no answer, or no denial).
fn oracle_payload(v: &Value) -> bool {
    if depth(v) > 100 {
        return false;
    }
    let Some(o) = v.as_object() else { return false };
    let first_str = |keys: &[&str]| keys.iter().find_map(|k| o.get(*k).and_then(Value::as_str));
    if let Some(e) = first_str(&["hook_event_name", "hookEventName"])
        && !e.eq_ignore_ascii_case("PreToolUse")
    {
        return true;
    }
    let name = first_str(&["toolName", "tool_name"])
        .unwrap_or("")
        .to_ascii_lowercase();
    if exempt_names().contains(&name) {
        return true;
    }
    let sh = match name.as_str() {
        "bash" => Sh::Posix,
        "shell" | "powershell" | "pwsh" | "run_in_terminal" | "runinterminal" => Sh::Any,
        _ => return false,
    };
    let cwd = o.get("cwd").and_then(Value::as_str);
    let args = ["toolArgs", "tool_args", "tool_input", "toolInput", "input"]
        .iter()
        .find_map(|k| o.get(*k))
        .cloned()
        .unwrap_or(Value::Null);
    let args = match args {
        Value::String(s) => serde_json::from_str::<Value>(&s)
            .ok()
            .filter(|v| depth(v) <= 100)
            .unwrap_or(Value::String(s)),
        other => other,
    };
    let commands: Vec<String> = match &args {
        Value::String(s) => vec![s.clone()],
        Value::Object(m) => {
            let context = [
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
            if m.keys()
                .any(|k| context.contains(&k.to_ascii_lowercase().as_str()))
            {
                return false;
            }
            let mut c = Vec::new();
            for k in ["command", "cmd", "script"] {
                match m.get(k) {
                    None => {}
                    Some(Value::String(s)) => c.push(s.clone()),
                    Some(_) => return false,
                }
            }
            c
        }
        _ => return false,
    };
    !commands.is_empty() && commands.iter().all(|c| oracle_command(c, sh, cwd))
}

/// Strictly parsed (serde_json, no lone surrogates), then [`oracle_payload`].
fn oracle_text(text: &[u8]) -> bool {
    std::str::from_utf8(text)
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(t.trim()).ok())
        .is_some_and(|v| oracle_payload(&v))
}

// ---------------------------------------------------------------------------------------------
// Generators.

/// Shell tokens: (text, the one word it is in bash/zsh, the one word it is in every shell).
/// `None`: the text is syntax or an expansion somewhere.
const TOKENS: &[(&str, Option<&str>, Option<&str>)] = &[
    (EXE, Some(EXE), Some(EXE)),
    ("'/usr/local/bin/toolgate'", Some(EXE), Some(EXE)),
    ("toolgate", Some("toolgate"), Some("toolgate")),
    (
        "/tmp/evil/toolgate",
        Some("/tmp/evil/toolgate"),
        Some("/tmp/evil/toolgate"),
    ),
    (
        "/usr/local/bin/../bin/toolgate",
        Some("/usr/local/bin/../bin/toolgate"),
        Some("/usr/local/bin/../bin/toolgate"),
    ),
    ("exec", Some("exec"), Some("exec")),
    ("'exec'", Some("exec"), Some("exec")),
    ("tools", Some("tools"), Some("tools")),
    ("--code", Some("--code"), Some("--code")),
    ("'print(1)'", Some("print(1)"), Some("print(1)")),
    (
        "'print(\"a b\"); x = 1 | 2 && 3'",
        Some("print(\"a b\"); x = 1 | 2 && 3"),
        Some("print(\"a b\"); x = 1 | 2 && 3"),
    ),
    ("\"print(2)\"", Some("print(2)"), Some("print(2)")),
    ("'a\\nb'", Some("a\\nb"), None),
    ("'a\u{2019}b'", Some("a\u{2019}b"), None),
    ("'$(id)'", Some("$(id)"), Some("$(id)")),
    ("\"$(id)\"", None, None),
    ("\"$HOME\"", None, None),
    ("\"a\\\"b\"", None, None),
    ("$(id)", None, None),
    ("`id`", None, None),
    ("'--yes'", Some("--yes"), Some("--yes")),
    ("\"--workspace\"", Some("--workspace"), Some("--workspace")),
    ("--code='print(3)'", Some("--code=print(3)"), None),
    ("--code=x", Some("--code=x"), Some("--code=x")),
    ("''", Some(""), Some("")),
    ("'é'", Some("é"), Some("é")),
    ("--workspace", Some("--workspace"), Some("--workspace")),
    (
        "--workspace=.",
        Some("--workspace=."),
        Some("--workspace=."),
    ),
    (
        "--workspace=/",
        Some("--workspace=/"),
        Some("--workspace=/"),
    ),
    (
        "--workspace=/work/repo",
        Some("--workspace=/work/repo"),
        Some("--workspace=/work/repo"),
    ),
    (".", Some("."), Some(".")),
    ("./", Some("./"), Some("./")),
    ("..", Some(".."), Some("..")),
    ("/", Some("/"), Some("/")),
    (CWD, Some(CWD), Some(CWD)),
    ("/work/repo/", Some("/work/repo/"), Some("/work/repo/")),
    (
        "/work/repo/..",
        Some("/work/repo/.."),
        Some("/work/repo/.."),
    ),
    ("/work/repo2", Some("/work/repo2"), Some("/work/repo2")),
    ("/work", Some("/work"), Some("/work")),
    ("~", None, None),
    ("$HOME", None, None),
    ("${HOME}", None, None),
    ("-f", Some("-f"), Some("-f")),
    ("--file", Some("--file"), Some("--file")),
    ("--file=-", Some("--file=-"), Some("--file=-")),
    ("-f-", Some("-f-"), Some("-f-")),
    ("-", Some("-"), Some("-")),
    ("~/.ssh/id_rsa", None, None),
    (
        "/home/u/.ssh/id_rsa",
        Some("/home/u/.ssh/id_rsa"),
        Some("/home/u/.ssh/id_rsa"),
    ),
    ("prog.py", Some("prog.py"), Some("prog.py")),
    ("--yes", Some("--yes"), Some("--yes")),
    ("--save", Some("--save"), Some("--save")),
    ("--plot", Some("--plot"), Some("--plot")),
    (
        "stac://demo/x",
        Some("stac://demo/x"),
        Some("stac://demo/x"),
    ),
    ("--store", Some("--store"), Some("--store")),
    ("--in-process", Some("--in-process"), Some("--in-process")),
    ("--raw", Some("--raw"), Some("--raw")),
    ("--raw=1", Some("--raw=1"), Some("--raw=1")),
    ("--backend", Some("--backend"), Some("--backend")),
    ("monty", Some("monty"), Some("monty")),
    ("auto", Some("auto"), Some("auto")),
    ("evil", Some("evil"), Some("evil")),
    ("{--yes,auto}", None, None),
    ("--timeout", Some("--timeout"), Some("--timeout")),
    ("5", Some("5"), Some("5")),
    ("1.5", Some("1.5"), Some("1.5")),
    ("--max-memory", Some("--max-memory"), Some("--max-memory")),
    ("256M", Some("256M"), Some("256M")),
    (
        "--max-tool-calls",
        Some("--max-tool-calls"),
        Some("--max-tool-calls"),
    ),
    ("--", Some("--"), Some("--")),
    ("-h", Some("-h"), Some("-h")),
    (";", None, None),
    ("&&", None, None),
    ("||", None, None),
    ("|", None, None),
    ("&", None, None),
    (">", None, None),
    ("</etc/passwd", None, None),
    (">>/tmp/x", None, None),
    ("2>&1", None, None),
    ("(", None, None),
    (")", None, None),
    ("#", None, None),
    ("*", None, None),
    ("?", None, None),
    ("[a]", None, None),
    ("\n", None, None),
    ("!", None, None),
    ("\\x", Some("x"), None),
    ("\\;", Some(";"), None),
    ("'a'\\''b'", Some("a'b"), None),
    ("\\-\\-yes", Some("--yes"), None),
    ("$'--yes'", None, None),
    ("\u{a0}", None, None),
    ("\u{2018}x\u{2019}", None, None),
    (
        "LD_PRELOAD=/tmp/x.so",
        Some("LD_PRELOAD=/tmp/x.so"),
        Some("LD_PRELOAD=/tmp/x.so"),
    ),
    ("'unclosed", None, None),
];

/// Option/value pairs that make up allowed commands (and near misses), to reach the allowed
/// side often.
const PAIRS: &[&str] = &[
    "--raw",
    "--code 'print(1)'",
    "--code=x",
    "--workspace .",
    "--workspace /work/repo",
    "--workspace=/work/repo/",
    "--workspace /",
    "--workspace /work",
    "--backend monty",
    "--backend=auto",
    "--backend evil",
    "--timeout 5",
    "--max-memory 256M",
    "--max-tool-calls 10",
    "-f -",
    "--file -",
    "-",
    "-f /home/u/.ssh/id_rsa",
    "--plot stac://demo/x",
    "--yes",
    "--save",
    "--store /tmp/s",
    "--in-process",
    "'--raw'",
    "\"--code\" 'x'",
];

fn tokens_command() -> impl Strategy<Value = (String, bool, bool)> {
    let start = prop_oneof![
        3 => Just(vec![0usize, 5]),
        1 => proptest::collection::vec(0..TOKENS.len(), 0..3),
    ];
    (start, proptest::collection::vec(0..TOKENS.len(), 0..7)).prop_map(|(head, tail)| {
        let toks: Vec<usize> = head.into_iter().chain(tail).collect();
        let text = toks
            .iter()
            .map(|&i| TOKENS[i].0)
            .collect::<Vec<_>>()
            .join(" ");
        let words = |posix: bool| -> Option<Vec<String>> {
            toks.iter()
                .map(|&i| if posix { TOKENS[i].1 } else { TOKENS[i].2 }.map(str::to_owned))
                .collect()
        };
        let posix = words(true).is_some_and(|w| oracle_exec(&w, Some(CWD)));
        let any = words(false).is_some_and(|w| oracle_exec(&w, Some(CWD)));
        (text, posix, any)
    })
}

fn pairs_command() -> impl Strategy<Value = String> {
    (
        prop_oneof![4 => Just(EXE), 1 => Just("toolgate"), 1 => Just("/usr/local/bin/toolgate.sh")],
        prop_oneof![6 => Just("exec"), 1 => Just("tools")],
        proptest::collection::vec(proptest::sample::select(PAIRS), 0..5),
    )
        .prop_map(|(p, s, pairs)| {
            let mut c = format!("{p} {s}");
            for x in pairs {
                c.push(' ');
                c.push_str(x);
            }
            c
        })
}

/// A payload for `tool` with shell arguments `args`, in one of the hosts' shapes.
fn shaped(shape: usize, tool: &str, args: Value) -> Value {
    match shape {
        // Claude Code.
        0 => json!({"session_id": "s", "transcript_path": "/h/.claude/x.jsonl", "cwd": CWD,
                    "permission_mode": "default", "hook_event_name": "PreToolUse",
                    "tool_name": tool, "tool_input": args, "tool_use_id": "toolu_1"}),
        // Copilot CLI, toolArgs as an object.
        1 => json!({"sessionId": "s", "timestamp": 1_704_614_600_000_u64, "cwd": CWD,
                    "toolName": tool, "toolArgs": args}),
        // Copilot CLI, toolArgs as a JSON string.
        2 => json!({"sessionId": "s", "timestamp": 1_704_614_600_000_u64, "cwd": CWD,
                    "toolName": tool, "toolArgs": args.to_string()}),
        // snake_case without an event.
        3 => json!({"session_id": "s", "cwd": CWD, "tool_name": tool, "tool_args": args}),
        // VS Code (Claude-compatible shape).
        _ => json!({"timestamp": "2026-01-01T00:00:00Z", "hookEventName": "PreToolUse",
                    "sessionId": "s", "cwd": CWD, "tool_name": tool, "tool_input": args}),
    }
}

const TOOL_NAMES: &[&str] = &[
    "bash",
    "Bash",
    "shell",
    "powershell",
    "pwsh",
    "run_in_terminal",
    "runInTerminal",
    " bash",
    "bash ",
    "BASH",
    "sh",
    "zsh",
    "Read",
    "view",
    "edit",
    "Write",
    "WebFetch",
    "report_intent",
    "TodoWrite",
    "mcp__toolgate__run_code",
    "mcp__toolgate__debrief_runTool",
    "mcp__plugin_toolgate_toolgate__run_code",
    "mcp_toolgate_run_code",
    "toolgate-run_code",
    "toolgate/run_code",
    "mcp_toolgate_x_run_code",
    "mcp_toolgate_x_evil",
    "toolgate-x-run_code",
    "toolgate_x-run_code",
    "mcp__toolgate_x__run_code",
    "mcp__toolgate__evil",
    "toolgate-evil",
    "mcp__toolgate__",
    "toolgate-",
    "toolgate",
    "mcp__plugin_toolgate_evil__run_code",
    "toolgate-run_code ",
    "toolgate-run_code\u{0}",
];

const INSERTS: &[&str] = &[
    ";",
    "&&",
    "|",
    "$(",
    ")",
    "`",
    "'",
    "\"",
    "\\",
    "\n",
    " ",
    "\t",
    "#",
    "*",
    "~",
    "$HOME",
    " --yes",
    " --save",
    " --workspace /",
    " -f ~/.ssh/id_rsa",
    "{",
    "}",
    "<",
    ">",
    "!",
    "\u{0}",
    "\u{FFFD}",
    "\u{2019}",
    "=",
    "-",
    "--",
    " ; id",
    "\u{E000}",
];

#[derive(Debug, Clone)]
enum Mutation {
    ToolName(usize),
    Event(&'static str),
    Cwd(Option<&'static str>),
    ContextKey(&'static str),
    Nest(usize),
    Insert(usize, usize),
    Delete(usize, usize),
    ExtraCommand(&'static str, String),
    ArgsNot(u8),
    DropKey(&'static str),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (0..TOOL_NAMES.len()).prop_map(Mutation::ToolName),
        proptest::sample::select(vec![
            "PreToolUse",
            "pretooluse",
            "PostToolUse",
            "",
            "PreToolUse "
        ])
        .prop_map(Mutation::Event),
        proptest::sample::select(vec![
            Some("/"),
            Some("/work"),
            Some("relative"),
            None,
            Some("/work/repo/")
        ])
        .prop_map(Mutation::Cwd),
        proptest::sample::select(vec![
            "cwd",
            "workdir",
            "Env",
            "directory",
            "description",
            "timeout"
        ])
        .prop_map(Mutation::ContextKey),
        (90usize..220).prop_map(Mutation::Nest),
        (any::<usize>(), 0..INSERTS.len()).prop_map(|(p, i)| Mutation::Insert(p, i)),
        (any::<usize>(), 1usize..6).prop_map(|(p, n)| Mutation::Delete(p, n)),
        (
            proptest::sample::select(vec!["cmd", "script", "command"]),
            prop_oneof![Just("id".to_owned()), pairs_command()]
        )
            .prop_map(|(k, c)| Mutation::ExtraCommand(k, c)),
        (0u8..4).prop_map(Mutation::ArgsNot),
        proptest::sample::select(vec![
            "cwd",
            "hook_event_name",
            "hookEventName",
            "tool_name",
            "toolName"
        ])
        .prop_map(Mutation::DropKey),
    ]
}

fn char_pos(s: &str, p: usize) -> usize {
    let n = s.chars().count();
    if n == 0 {
        return 0;
    }
    s.char_indices()
        .nth(p % (n + 1))
        .map_or(s.len(), |(i, _)| i)
}

/// Apply one mutation to the payload value.
fn mutate(v: &mut Value, m: &Mutation) {
    let o = v.as_object_mut().unwrap();
    let args_key = ["toolArgs", "tool_args", "tool_input"]
        .into_iter()
        .find(|k| o.contains_key(*k))
        .unwrap_or("tool_input");
    // The command, wherever the shape keeps it (toolArgs as a string: inside that JSON).
    let with_args = |o: &mut Map<String, Value>, f: &mut dyn FnMut(&mut Value)| {
        let a = o.entry(args_key).or_insert(Value::Null);
        if let Value::String(s) = a
            && let Ok(mut inner) = serde_json::from_str::<Value>(s)
        {
            f(&mut inner);
            *a = Value::String(inner.to_string());
            return;
        }
        f(a);
    };
    match m {
        Mutation::ToolName(i) => {
            let k = if o.contains_key("toolName") {
                "toolName"
            } else {
                "tool_name"
            };
            o.insert(k.into(), json!(TOOL_NAMES[*i]));
        }
        Mutation::Event(e) => {
            let k = if o.contains_key("hookEventName") {
                "hookEventName"
            } else {
                "hook_event_name"
            };
            o.insert(k.into(), json!(e));
        }
        Mutation::Cwd(c) => {
            o.insert("cwd".into(), c.map_or(Value::Null, |c| json!(c)));
        }
        Mutation::ContextKey(k) => with_args(o, &mut |a| {
            if let Some(a) = a.as_object_mut() {
                a.insert((*k).into(), json!("/"));
            }
        }),
        Mutation::Nest(n) => {
            let mut deep = json!(1);
            for _ in 0..*n {
                deep = json!([deep]);
            }
            with_args(o, &mut |a| {
                if let Some(a) = a.as_object_mut() {
                    a.insert("x".into(), deep.clone());
                }
            });
        }
        Mutation::Insert(p, i) => with_args(o, &mut |a| {
            if let Some(Value::String(c)) = a.get_mut("command") {
                let at = char_pos(c, *p);
                c.insert_str(at, INSERTS[*i]);
            }
        }),
        Mutation::Delete(p, n) => with_args(o, &mut |a| {
            if let Some(Value::String(c)) = a.get_mut("command") {
                let at = char_pos(c, *p);
                let end = c[at..]
                    .char_indices()
                    .nth(*n)
                    .map_or(c.len(), |(j, _)| at + j);
                c.replace_range(at..end, "");
            }
        }),
        Mutation::ExtraCommand(k, c) => with_args(o, &mut |a| {
            if let Some(a) = a.as_object_mut() {
                a.insert((*k).into(), json!(c));
            }
        }),
        Mutation::ArgsNot(kind) => {
            let cmd = o.get(args_key).cloned().unwrap_or(Value::Null);
            let cmd = match &cmd {
                Value::String(s) => serde_json::from_str::<Value>(s)
                    .ok()
                    .and_then(|v| v.get("command").cloned()),
                v => v.get("command").cloned(),
            }
            .unwrap_or(json!("id"));
            let new = match kind {
                0 => cmd,
                1 => json!([cmd]),
                2 => json!({"command": [cmd]}),
                _ => json!(42),
            };
            o.insert(args_key.into(), new);
        }
        Mutation::DropKey(k) => {
            o.remove(*k);
        }
    }
}

/// Raw-text mutations after serialising.
#[derive(Debug, Clone)]
enum Raw {
    None,
    Flip(usize, u8),
    Cut(usize),
    Insert(usize, &'static str),
    /// Replace each U+E000 marker by this lone surrogate escape (one kind per payload: two
    /// highs or two lows never pair).
    Surrogate(&'static str),
}

fn raw() -> impl Strategy<Value = Raw> {
    prop_oneof![
        4 => Just(Raw::None),
        1 => (any::<usize>(), any::<u8>()).prop_map(|(p, b)| Raw::Flip(p, b)),
        1 => any::<usize>().prop_map(Raw::Cut),
        1 => (any::<usize>(), proptest::sample::select(vec!["\"", "\\", "{", "}", "[", "]", ",", ":", "\\u0000", "\\\"", "\"hook_event_name\":\"x\","]))
            .prop_map(|(p, s)| Raw::Insert(p, s)),
        2 => proptest::sample::select(vec!["\\ud800", "\\udbff", "\\udc00", "\\udfff"]).prop_map(Raw::Surrogate),
    ]
}

/// (text to feed the hook, whether the oracle allows it)
fn serialise(v: &Value, r: &Raw) -> (Vec<u8>, bool) {
    let text = v.to_string();
    match r {
        Raw::Surrogate(esc) => {
            // Node writes the escape; the process it starts gets U+FFFD: the oracle judges
            // that command. (Markers inside toolArgs-as-a-string are escaped twice over there.)
            // (Past serde_json's own depth limit the oracle denies anyway: deeper than 100.)
            let ok = serde_json::from_str::<Value>(&text.replace('\u{E000}', "\u{FFFD}"))
                .is_ok_and(|fixed| oracle_payload(&fixed));
            (text.replace('\u{E000}', esc).into_bytes(), ok)
        }
        Raw::None => {
            let b = text.into_bytes();
            let ok = oracle_text(&b);
            (b, ok)
        }
        Raw::Flip(p, byte) => {
            let mut b = text.into_bytes();
            let i = p % b.len();
            b[i] = *byte;
            let ok = oracle_text(&b);
            (b, ok)
        }
        Raw::Cut(p) => {
            let mut b = text.into_bytes();
            b.truncate(p % (b.len() + 1));
            let ok = oracle_text(&b);
            (b, ok)
        }
        Raw::Insert(p, s) => {
            let at = char_pos(&text, *p);
            let mut t = text;
            t.insert_str(at, s);
            let ok = oracle_text(t.as_bytes());
            (t.into_bytes(), ok)
        }
    }
}

fn arbitrary_json() -> impl Strategy<Value = Value> {
    let key = proptest::sample::select(vec![
        "toolName",
        "tool_name",
        "toolArgs",
        "tool_args",
        "tool_input",
        "toolInput",
        "input",
        "hook_event_name",
        "hookEventName",
        "cwd",
        "command",
        "cmd",
        "script",
        "sessionId",
        "x",
    ]);
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        "\\PC{0,12}".prop_map(Value::String),
        proptest::sample::select(TOOL_NAMES).prop_map(|s| json!(s)),
        Just(json!("PreToolUse")),
        pairs_command().prop_map(Value::String),
    ];
    leaf.prop_recursive(6, 48, 6, move |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            proptest::collection::vec((key.clone(), inner), 0..6).prop_map(|kv| Value::Object(
                kv.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
            )),
        ]
    })
}

// ---------------------------------------------------------------------------------------------
// The properties: 4,000 + 1,500 + 1,500 + 3,000 = 10,000 cases; the first feeds five payloads
// per case.

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    /// Commands built from adversarial shell tokens, in all five payload shapes: denied
    /// exactly when the oracle says so (so the hook is neither looser nor stricter than the
    /// specification on these tokens).
    #[test]
    fn exec_commands_match_the_oracle((cmd, posix_ok, any_ok) in tokens_command()) {
        let c = cfg();
        for (shape, tool, ok) in [
            (0, "Bash", posix_ok),
            (1, "bash", posix_ok),
            (2, "powershell", any_ok),
            (3, "shell", any_ok),
            (4, "run_in_terminal", any_ok),
        ] {
            let payload = shaped(shape, tool, json!({"command": cmd, "description": "d"})).to_string();
            let a = answer(&payload, &c);
            prop_assert_eq!(!a.denied, ok, "{} {}: {:?}", tool, a.stdout, cmd);
            prop_assert_eq!(a.stdout.is_empty(), ok);
            // The independent string oracle agrees with the token oracle.
            prop_assert_eq!(
                oracle_command(&cmd, if shape < 2 { Sh::Posix } else { Sh::Any }, Some(CWD)),
                ok,
                "string oracle vs token oracle: {:?}", cmd
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1500))]

    /// Random bytes: nothing is allowed that the oracle would not allow (in practice: none).
    #[test]
    fn random_bytes_are_denied(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let a = answer_bytes(&bytes, &cfg());
        prop_assert!(a.denied || oracle_text(&bytes), "allowed: {:?}", String::from_utf8_lossy(&bytes));
        prop_assert_eq!(a.denied, !a.stdout.is_empty());
    }

    /// Random JSON built from the payloads' own keys, tool names and commands.
    #[test]
    fn random_json_is_denied_unless_the_oracle_allows(v in arbitrary_json()) {
        let text = v.to_string();
        let a = answer(&text, &cfg());
        prop_assert!(a.denied || oracle_payload(&v), "allowed: {}", text);
        prop_assert_eq!(a.denied, !a.stdout.is_empty());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    /// Real payloads of the three hosts, carrying an allowed exec or a near miss, mutated in
    /// structure and then in bytes: allowed only when the oracle allows the result.
    #[test]
    fn mutated_real_payloads_are_denied_unless_the_oracle_allows(
        shape in 0usize..5,
        tool in proptest::sample::select(vec!["bash", "Bash", "powershell", "run_in_terminal", "mcp__toolgate__run_code", "view"]),
        cmd in prop_oneof![pairs_command(), tokens_command().prop_map(|t| t.0)],
        marker in proptest::option::of(any::<usize>()),
        mutations in proptest::collection::vec(mutation(), 0..4),
        r in raw(),
    ) {
        let mut cmd = cmd;
        if let Some(p) = marker {
            let at = char_pos(&cmd, p);
            cmd.insert(at, '\u{E000}');
        }
        let mut v = shaped(shape, tool, json!({"command": cmd, "description": "d"}));
        for m in &mutations {
            mutate(&mut v, m);
        }
        let (bytes, ok) = serialise(&v, &r);
        let a = answer_bytes(&bytes, &cfg());
        prop_assert!(
            a.denied || ok,
            "allowed but the oracle denies: {}", String::from_utf8_lossy(&bytes)
        );
        prop_assert_eq!(a.denied, !a.stdout.is_empty());
    }
}

/// The generators reach both sides: a fixed sample of allowed and denied commands.
#[test]
fn the_oracle_allows_the_installed_command_and_denies_the_issue_reproductions() {
    let exec = format!("{EXE} exec --backend auto --workspace . --raw --code 'print(1)'");
    assert!(oracle_command(&exec, Sh::Posix, Some(CWD)));
    assert!(oracle_command(&exec, Sh::Any, Some(CWD)));
    for bad in [
        format!("{EXE} exec --workspace / --code 'bash(command=\"cat ~/.ssh/id_rsa\")'"),
        format!("{EXE} exec -f ~/.ssh/id_rsa"),
        format!("{EXE} exec --yes --save --plot p --code 1"),
    ] {
        assert!(!oracle_command(&bad, Sh::Posix, Some(CWD)), "{bad}");
        let p = shaped(0, "Bash", json!({"command": bad})).to_string();
        assert!(answer(&p, &cfg()).denied, "{bad}");
    }
    let p = shaped(0, "Bash", json!({"command": exec})).to_string();
    assert!(!answer(&p, &cfg()).denied);
}

/// The command generator reaches the allowed side often enough for the equality property to
/// mean something (not only denials).
#[test]
fn the_command_generator_reaches_both_sides() {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let (mut posix, mut any, n) = (0, 0, 2000);
    for _ in 0..n {
        let (_, p, a) = tokens_command().new_tree(&mut runner).unwrap().current();
        posix += usize::from(p);
        any += usize::from(a);
    }
    assert!(
        posix * 20 > n && any * 20 > n,
        "allowed: posix {posix}, any {any} of {n}"
    );
    assert!(posix < n / 2, "denied too rarely: {posix} of {n}");
}
