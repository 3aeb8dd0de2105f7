#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The hook over real payload shapes of both hosts, in every mode.
#![allow(clippy::disallowed_methods)]

use serde_json::{Value, json};
use toolgate_hosts::hook::{self, HookConfig, Kind, Mode, answer, classify};

fn cfg(mode: Mode, dir: &std::path::Path) -> HookConfig {
    HookConfig {
        mode,
        mode_var: "TOOLGATE_MODE".into(),
        nudge_after: 3,
        exe: EXE.into(),
        aliases: Vec::new(),
        tools: vec!["view".into(), "glob".into()],
        state_dir: dir.to_path_buf(),
    }
}

/// The installed binary the hook accepts (`cfg().exe`).
const EXE: &str = "/usr/local/bin/toolgate";
const EXEC: &str =
    "/usr/local/bin/toolgate exec --raw --code 'print(len(glob(pattern=\"**/*.rs\")))'";

/// Copilot CLI camelCase payload with toolArgs as a JSON string (older reference).
fn copilot_string(tool: &str, args: Value, session: &str) -> String {
    json!({"sessionId": session, "timestamp": 1_704_614_600_000_u64, "cwd": "/work/repo",
           "toolName": tool, "toolArgs": args.to_string()})
    .to_string()
}
/// Copilot CLI camelCase payload with toolArgs as an object (newer reference).
fn copilot_object(tool: &str, args: Value, session: &str) -> String {
    json!({"sessionId": session, "timestamp": 1_704_614_600_000_u64, "cwd": "/work/repo",
           "toolName": tool, "toolArgs": args})
    .to_string()
}
/// snake_case without an event name.
fn copilot_snake(tool: &str, args: Value, session: &str) -> String {
    json!({"session_id": session, "cwd": "/work/repo", "tool_name": tool, "tool_args": args})
        .to_string()
}
/// Claude Code PreToolUse.
fn claude(tool: &str, input: Value, session: &str) -> String {
    json!({"session_id": session, "transcript_path": "/home/u/.claude/projects/x.jsonl",
           "cwd": "/work/repo", "permission_mode": "default", "hook_event_name": "PreToolUse",
           "tool_name": tool, "tool_input": input, "tool_use_id": "toolu_01"})
    .to_string()
}

#[derive(Debug, PartialEq, Clone)]
enum Out {
    Empty,
    CopilotDeny,
    ClaudeDeny,
}

fn shape(stdout: &str) -> Out {
    if stdout.is_empty() {
        return Out::Empty;
    }
    assert!(!stdout.contains('\n'), "compact JSON on one line: {stdout}");
    let v: Value = serde_json::from_str(stdout).unwrap();
    if let Some(h) = v.get("hookSpecificOutput") {
        assert_eq!(h["hookEventName"], "PreToolUse");
        assert_eq!(h["permissionDecision"], "deny");
        let reason = h["permissionDecisionReason"].as_str().unwrap();
        assert!(
            reason.contains("/usr/local/bin/toolgate exec --workspace /work/repo --raw --code '"),
            "{reason}"
        );
        Out::ClaudeDeny
    } else {
        assert_eq!(v["permissionDecision"], "deny");
        let reason = v["permissionDecisionReason"].as_str().unwrap();
        assert!(
            reason.contains("/usr/local/bin/toolgate exec --workspace /work/repo --raw --code '"),
            "{reason}"
        );
        assert!(reason.contains("view, glob"), "{reason}");
        Out::CopilotDeny
    }
}

#[test]
fn exclusive_mode_table() {
    let dir = tempfile::tempdir().unwrap();
    let c = cfg(Mode::Exclusive, dir.path());
    let cmd = json!({"command": EXEC, "description": "count"});
    let rows: Vec<(String, Out)> = vec![
        // §7.5: the codeact call itself must pass, whichever field carries the arguments.
        (copilot_string("bash", cmd.clone(), "s"), Out::Empty),
        (copilot_object("bash", cmd.clone(), "s"), Out::Empty),
        (copilot_object("powershell", cmd.clone(), "s"), Out::Empty),
        (copilot_snake("shell", cmd.clone(), "s"), Out::Empty),
        (claude("Bash", cmd, "s"), Out::Empty),
        // Everything else is denied, in the host's own answer shape.
        (
            copilot_string("view", json!({"path": "a.rs"}), "s"),
            Out::CopilotDeny,
        ),
        (
            copilot_object("edit", json!({"path": "a.rs"}), "s"),
            Out::CopilotDeny,
        ),
        (
            copilot_snake("grep", json!({"pattern": "x"}), "s"),
            Out::CopilotDeny,
        ),
        (
            copilot_string("bash", json!({"command": "ls -la"}), "s"),
            Out::CopilotDeny,
        ),
        (
            copilot_string(
                "bash",
                json!({"command": format!("{EXEC} && rm -rf /")}),
                "s",
            ),
            Out::CopilotDeny,
        ),
        (
            claude("Read", json!({"file_path": "/work/repo/a.rs"}), "s"),
            Out::ClaudeDeny,
        ),
        (
            claude("Bash", json!({"command": "cat a.rs"}), "s"),
            Out::ClaudeDeny,
        ),
        (
            claude("WebFetch", json!({"url": "https://x"}), "s"),
            Out::ClaudeDeny,
        ),
        // Bookkeeping and toolgate's own MCP tools pass.
        (
            copilot_object("report_intent", json!({"intent": "x"}), "s"),
            Out::Empty,
        ),
        (
            claude("mcp__toolgate__debrief_listTools", json!({}), "s"),
            Out::Empty,
        ),
        (
            copilot_object("toolgate-debrief_runTool", json!({}), "s"),
            Out::Empty,
        ),
    ];
    for (payload, expected) in rows {
        let a = answer(&payload, &c);
        assert_eq!(shape(&a.stdout), expected, "{payload}");
        assert!(a.warnings.is_empty(), "{:?}", a.warnings);
    }
}

#[test]
fn nudge_mode_table() {
    for make in [copilot_string, copilot_object, copilot_snake, claude] {
        let dir = tempfile::tempdir().unwrap();
        let c = cfg(Mode::Nudge, dir.path());
        let deny = if make("x", json!({}), "s").contains("hook_event_name") {
            Out::ClaudeDeny
        } else {
            Out::CopilotDeny
        };
        let read = |s: &str| {
            make(
                if deny == Out::ClaudeDeny {
                    "Read"
                } else {
                    "view"
                },
                json!({"path": "a"}),
                s,
            )
        };
        let steps: Vec<(String, Out)> = vec![
            (read("s1"), Out::Empty),
            (read("s1"), Out::Empty),
            (read("s1"), Out::Empty),
            // The fourth read in a row is denied, and the count starts again.
            (read("s1"), deny.clone()),
            (read("s1"), Out::Empty),
            (read("s1"), Out::Empty),
            // A codeact call resets the count (§7.5: it used to be invisible).
            (
                make(
                    if deny == Out::ClaudeDeny {
                        "Bash"
                    } else {
                        "bash"
                    },
                    json!({"command": EXEC}),
                    "s1",
                ),
                Out::Empty,
            ),
            (read("s1"), Out::Empty),
            (read("s1"), Out::Empty),
            (read("s1"), Out::Empty),
            // Another session has its own count.
            (read("s2"), Out::Empty),
            (read("s1"), deny.clone()),
            // Any other tool resets too.
            (read("s1"), Out::Empty),
            (make("edit", json!({"path": "a"}), "s1"), Out::Empty),
            (read("s1"), Out::Empty),
            (read("s1"), Out::Empty),
            (read("s1"), Out::Empty),
            (read("s1"), deny.clone()),
        ];
        for (i, (payload, expected)) in steps.into_iter().enumerate() {
            let a = answer(&payload, &c);
            assert_eq!(shape(&a.stdout), expected, "step {i}: {payload}");
        }
    }
}

#[test]
fn off_mode_and_other_events_say_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let off = cfg(Mode::Off, dir.path());
    assert_eq!(
        answer(&copilot_string("view", json!({}), "s"), &off).stdout,
        ""
    );
    assert_eq!(answer("not json", &off), hook::Answer::default());
    let ex = cfg(Mode::Exclusive, dir.path());
    let post = json!({"hook_event_name": "PostToolUse", "session_id": "s", "tool_name": "Read", "tool_input": {}});
    assert_eq!(answer(&post.to_string(), &ex).stdout, "");
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "no state written"
    );
}

/// Issue 30 item 5: exclusive mode denies a payload it cannot read (in Copilot's shape when
/// the payload names no event); nudge mode, which is advice and not a boundary, allows it with
/// a warning. Bad nudge state still fails open.
#[test]
fn bad_input_is_denied_in_exclusive_mode_and_bad_state_fails_open() {
    let dir = tempfile::tempdir().unwrap();
    let c = cfg(Mode::Exclusive, dir.path());
    let a = answer("{not json", &c);
    assert!(a.denied);
    let v: Value = serde_json::from_str(&a.stdout).unwrap();
    assert_eq!(v["permissionDecision"], "deny");
    assert!(
        v["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .contains("could not be read: it is not JSON"),
        "{v}"
    );
    assert!(
        a.warnings[0].contains("denying the call"),
        "{:?}",
        a.warnings
    );
    let a = answer("{not json", &cfg(Mode::Nudge, dir.path()));
    assert_eq!(a.stdout, "");
    assert!(
        a.warnings[0].contains("not JSON") && a.warnings[0].contains("allowing the call"),
        "{:?}",
        a.warnings
    );
    // Corrupt state: allowed with a warning, then counting works again.
    let c = cfg(Mode::Nudge, dir.path());
    let st = hook::SessionState::new(dir.path(), "session:s");
    std::fs::write(&st.path, "garbage").unwrap();
    let a = answer(&copilot_object("view", json!({}), "s"), &c);
    assert_eq!(a.stdout, "");
    assert!(a.warnings[0].contains("unusable"), "{:?}", a.warnings);
    for _ in 0..3 {
        assert_eq!(
            answer(&copilot_object("view", json!({}), "s"), &c).stdout,
            ""
        );
    }
    assert!(answer(&copilot_object("view", json!({}), "s"), &c).denied);
    // An unusable state directory (a file in its place): allowed, with a warning.
    let blocked = dir.path().join("file");
    std::fs::write(&blocked, "x").unwrap();
    let c = cfg(Mode::Nudge, &blocked);
    let a = answer(&copilot_object("view", json!({}), "s"), &c);
    assert!(!a.denied);
    assert!(!a.warnings.is_empty());
}

/// Issue 19 item 4: a Copilot payload without a session id is counted per working directory
/// within a time window (a gap longer than SESSIONLESS_GAP_MS starts a new count), and no call
/// prints a warning.
#[test]
fn sessionless_payloads_count_per_cwd_within_a_time_window() {
    let dir = tempfile::tempdir().unwrap();
    let c = cfg(Mode::Nudge, dir.path());
    let at = |cwd: &str, ms: u64| {
        answer(
            &json!({"toolName": "view", "cwd": cwd, "timestamp": ms, "toolArgs": {}}).to_string(),
            &c,
        )
    };
    let t0 = 1_704_614_600_000_u64;
    // Three read-only calls pass (nudge after 3), the fourth in the same cwd is denied.
    for i in 0..3 {
        let a = at("/w", t0 + i * 1000);
        assert!(!a.denied && a.warnings.is_empty(), "{a:?}");
    }
    // Another directory is another count.
    assert!(!at("/other", t0 + 3000).denied);
    assert!(at("/w", t0 + 4000).denied);
    // Within the window the count goes on; after a longer gap it starts again.
    for i in 0..3 {
        assert!(!at("/w", t0 + 5000 + i).denied);
    }
    let later = t0 + 5002 + hook::SESSIONLESS_GAP_MS + 1;
    for i in 0..3 {
        let a = at("/w", later + i);
        assert!(
            !a.denied && a.warnings.is_empty(),
            "a gap starts a new count: {a:?}"
        );
    }
    assert!(at("/w", later + 10).denied);
}

/// Issue 19 item 4: exclusive mode lets toolgate's own MCP tools through under every name the
/// hosts give them, and nothing that only looks similar.
#[test]
fn exclusive_mode_allows_toolgates_own_mcp_tools_under_every_host_name() {
    let dir = tempfile::tempdir().unwrap();
    let c = cfg(Mode::Exclusive, dir.path());
    for name in [
        "mcp__plugin_toolgate_toolgate__run_code",
        "mcp__toolgate__run_code",
        "toolgate-run_code",
        "mcp_toolgate_run_code",
        "toolgate/run_code",
    ] {
        for payload in [
            claude(name, json!({"code": "print(1)"}), "s"),
            copilot_object(name, json!({"code": "print(1)"}), "s"),
        ] {
            assert!(!answer(&payload, &c).denied, "{name} denied");
        }
    }
    for name in [
        "mcp__context7__query-docs",
        "mcp__plugin_other_toolgate__run_code",
        "mcp__toolgate__",
        "toolgate",
        "github-run_code",
    ] {
        assert!(
            answer(&claude(name, json!({}), "s"), &c).denied,
            "{name} passed"
        );
    }
}

/// A spelling the CLI verified (the one the host ran the hook by, e.g. `toolgate` from PATH)
/// counts as the installed binary; without it, the bare name is refused.
#[test]
fn verified_aliases_of_the_binary_pass_exclusive_mode() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = cfg(Mode::Exclusive, dir.path());
    let bare = claude(
        "Bash",
        json!({"command": "toolgate exec --raw --code 'print(1)'"}),
        "s",
    );
    assert!(answer(&bare, &c).denied);
    c.aliases = vec!["toolgate".into()];
    assert!(!answer(&bare, &c).denied);
    let a = answer(&claude("Read", json!({"file_path": "x"}), "s"), &c);
    assert!(a.denied);
    assert!(
        a.stdout
            .contains("toolgate exec --workspace /work/repo --raw"),
        "the reason suggests the portable spelling: {}",
        a.stdout
    );
    assert!(!a.stdout.contains(EXE), "{}", a.stdout);
    // Still one simple command only.
    let chained = claude(
        "Bash",
        json!({"command": "toolgate exec --code 1; rm -rf /"}),
        "s",
    );
    assert!(answer(&chained, &c).denied);
}

#[test]
fn the_mode_from_the_user_config_and_its_precedence() {
    let none = |_: &str| None;
    let (m, src, warn) = Mode::resolve(none, Some(("/u/config.toml", "exclusive")));
    assert_eq!(
        (m, src.as_str(), warn),
        (Mode::Exclusive, "/u/config.toml", None)
    );
    // Issue 30 item 5: the environment makes the mode stricter, never weaker.
    let env_is = |v: &'static str| move |k: &str| (k == "TOOLGATE_MODE").then(|| v.to_owned());
    for weaker in ["off", "nudge", "0", "none", "loud"] {
        let (m, src, warn) = Mode::resolve(env_is(weaker), Some(("/u/config.toml", "exclusive")));
        assert_eq!(
            (m, src.as_str()),
            (Mode::Exclusive, "/u/config.toml"),
            "TOOLGATE_MODE={weaker} must not weaken the config"
        );
        assert!(warn.unwrap().contains("ignored"), "{weaker}");
    }
    let (m, src, warn) = Mode::resolve(env_is("exclusive"), Some(("/u/config.toml", "nudge")));
    assert_eq!(
        (m, src.as_str(), warn),
        (Mode::Exclusive, "TOOLGATE_MODE", None)
    );
    let (m, src, _) = Mode::resolve(env_is("nudge"), Some(("/u/config.toml", "off")));
    assert_eq!((m, src.as_str()), (Mode::Nudge, "TOOLGATE_MODE"));
    let (m, src, warn) = Mode::resolve(env_is("exclusive"), Some(("/u/config.toml", "exclusive")));
    assert_eq!(
        (m, src.as_str(), warn),
        (Mode::Exclusive, "/u/config.toml", None)
    );
    let (m, _, warn) = Mode::resolve(none, Some(("/u/config.toml", "loud")));
    assert_eq!(m, Mode::Off);
    assert!(warn.unwrap().contains("[hook] table of /u/config.toml"));
    // An unknown config value leaves the environment's mode in force.
    let (m, _, warn) = Mode::resolve(env_is("nudge"), Some(("/u/config.toml", "loud")));
    assert_eq!(m, Mode::Nudge);
    assert!(warn.unwrap().contains("is not a mode"));
}

#[test]
fn modes_from_the_environment() {
    let env = |pairs: &'static [(&'static str, &'static str)]| {
        move |k: &str| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| (*v).to_owned())
        }
    };
    assert_eq!(Mode::from_env(env(&[])).0, Mode::Off);
    assert_eq!(
        Mode::from_env(env(&[("CODEACT_MODE", "nudge")])).0,
        Mode::Nudge
    );
    let (m, var, _) = Mode::from_env(env(&[
        ("TOOLGATE_MODE", "exclusive"),
        ("CODEACT_MODE", "nudge"),
    ]));
    assert_eq!((m, var.as_str()), (Mode::Exclusive, "TOOLGATE_MODE"));
    let (m, _, warn) = Mode::from_env(env(&[("TOOLGATE_MODE", "loud")]));
    assert_eq!(m, Mode::Off);
    assert!(warn.unwrap().contains("off, nudge or exclusive"));
}

#[test]
fn classification() {
    assert_eq!(
        classify("Bash", &json!({"command": EXEC}), EXE),
        Kind::Codeact
    );
    assert_eq!(classify("bash", &json!(EXEC), EXE), Kind::Codeact);
    assert_eq!(
        classify("bash", &json!({"command": "python codeact.py"}), EXE),
        Kind::Other
    );
    assert_eq!(classify("Grep", &json!({}), EXE), Kind::ReadOnly);
    assert_eq!(classify("Write", &json!({}), EXE), Kind::Other);
}

/// Issue 14 item 8: the five ways exclusive mode let other code through, in both hosts'
/// payload shapes. Each used to be taken for a `toolgate exec` call and allowed; each is now
/// denied. The exact installed binary (plain or quoted), and a quoted heredoc, still pass.
#[test]
fn exclusive_mode_bypasses_are_denied() {
    let dir = tempfile::tempdir().unwrap();
    let c = cfg(Mode::Exclusive, dir.path());
    let rows: &[(&str, &str, bool)] = &[
        (
            "leading LD_PRELOAD assignment",
            "LD_PRELOAD=/tmp/evil.so /usr/local/bin/toolgate exec --code 1",
            false,
        ),
        (
            "leading PATH assignment",
            "PATH=/tmp/evil:/usr/bin toolgate exec --code 1",
            false,
        ),
        (
            "leading PATH assignment, exact binary",
            "PATH=/tmp/evil /usr/local/bin/toolgate exec --code 1",
            false,
        ),
        (
            "another directory's toolgate",
            "/tmp/evil/toolgate exec --code 1",
            false,
        ),
        ("./toolgate", "./toolgate exec --code 1", false),
        (
            "a bare toolgate found through PATH",
            "toolgate exec --code 1",
            false,
        ),
        (
            "unquoted heredoc with $(id)",
            "/usr/local/bin/toolgate exec --raw - <<EOF\nprint(\"$(id)\")\nEOF",
            false,
        ),
        (
            "quoted heredoc followed by a command",
            "/usr/local/bin/toolgate exec --raw - <<'EOF'\nprint(1)\nEOF\nid\nEOF",
            false,
        ),
        ("the installed binary", EXEC, true),
        (
            "the installed binary, quoted",
            "'/usr/local/bin/toolgate' exec --code 'print(1)'",
            true,
        ),
        (
            "quoted heredoc keeps $(id) literal",
            "/usr/local/bin/toolgate exec --raw - <<'EOF'\nprint(\"$(id)\")\nEOF",
            true,
        ),
    ];
    for (what, command, allowed) in rows {
        for (payload, deny) in [
            (
                copilot_object("bash", json!({"command": command}), "s"),
                Out::CopilotDeny,
            ),
            (
                claude("Bash", json!({"command": command}), "s"),
                Out::ClaudeDeny,
            ),
        ] {
            let a = answer(&payload, &c);
            let expected = if *allowed { Out::Empty } else { deny };
            assert_eq!(shape(&a.stdout), expected, "{what}: {command}");
        }
    }
}
