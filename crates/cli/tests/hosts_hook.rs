#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `toolgate hook pre-tool-use` as a process: what hosts see on stdout, and exact counting under
//! many simultaneous invocations for one session.
#![allow(clippy::disallowed_methods)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_toolgate");

fn hook(mode: &str, state: &Path, extra: &[&str], payload: &str) -> (String, String, i32) {
    let o = toolgate_test_support::run_with_input(
        Command::new(BIN)
            .args(["hook", "pre-tool-use"])
            .args(extra)
            .env("TOOLGATE_MODE", mode)
            .env_remove("CODEACT_MODE")
            .env("TOOLGATE_HOOK_STATE_DIR", state),
        payload,
    )
    .unwrap();
    (
        String::from_utf8(o.stdout).unwrap(),
        String::from_utf8(o.stderr).unwrap(),
        o.status.code().unwrap_or(-1),
    )
}

#[test]
fn answers_each_host_in_its_own_shape() {
    let dir = tempfile::tempdir().unwrap();
    let exe = std::fs::canonicalize(BIN).unwrap();
    // Copilot CLI, toolArgs as a JSON string: the codeact call passes (no output = default).
    // The exact installed binary passes; a bare `toolgate` (whatever PATH finds) does not.
    let payload = |command: &str| {
        serde_json::json!({"sessionId": "a", "timestamp": 1, "cwd": "/r", "toolName": "bash",
                           "toolArgs": serde_json::json!({"command": command}).to_string()})
        .to_string()
    };
    let ok = payload(&format!("{} exec --raw --code 'print(1)'", exe.display()));
    assert_eq!(
        hook("exclusive", dir.path(), &[], &ok),
        (String::new(), String::new(), 0)
    );
    let (out, _, _) = hook(
        "exclusive",
        dir.path(),
        &[],
        &payload("toolgate exec --raw --code 'print(1)'"),
    );
    assert!(out.contains("\"deny\""), "{out}");
    let (out, _, code) = hook(
        "exclusive",
        dir.path(),
        &["--tools", "view,glob"],
        r#"{"sessionId":"a","timestamp":1,"cwd":"/r","toolName":"view","toolArgs":{"path":"x"}}"#,
    );
    assert_eq!(code, 0);
    assert!(
        out.ends_with("}\n") && out.lines().count() == 1,
        "compact: {out}"
    );
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["permissionDecision"], "deny");
    let reason = v["permissionDecisionReason"].as_str().unwrap();
    assert!(
        reason.contains(&format!(
            "{} exec --workspace /r --raw --code '<your python>'",
            exe.display()
        )),
        "{reason}"
    );
    assert!(
        reason.contains("Sandbox tools (Python functions, keyword arguments): view, glob."),
        "{reason}"
    );
    // Claude Code.
    let (out, _, _) = hook(
        "exclusive",
        dir.path(),
        &[],
        r#"{"session_id":"c","cwd":"/r","hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{"file_path":"/r/x"}}"#,
    );
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny");
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], "PreToolUse");
    // CODEACT_MODE is honoured when TOOLGATE_MODE is unset.
    let o = Command::new(BIN)
        .args(["hook", "pre-tool-use"])
        .env_remove("TOOLGATE_MODE")
        .env("CODEACT_MODE", "exclusive")
        .env("TOOLGATE_HOOK_STATE_DIR", dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut o = o;
    o.stdin
        .take()
        .unwrap()
        .write_all(br#"{"toolName":"view","toolArgs":{}}"#)
        .unwrap();
    let o = o.wait_with_output().unwrap();
    assert!(String::from_utf8_lossy(&o.stdout).contains("CODEACT_MODE=exclusive"));
}

#[test]
fn off_by_default_and_fails_open() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(
        hook("off", dir.path(), &[], r#"{"toolName":"view"}"#),
        (String::new(), String::new(), 0)
    );
    let (out, err, code) = hook("nudge", dir.path(), &[], "definitely not json");
    assert_eq!((out.as_str(), code), ("", 0));
    assert!(
        err.contains("toolgate hook: warning: the hook payload could not be read: it is not JSON")
            && err.contains("allowing the call"),
        "{err}"
    );
    // State directory unusable (a file where the folder should be): allowed, warned.
    let blocked = dir.path().join("blocked");
    std::fs::write(&blocked, "").unwrap();
    let (out, err, code) = hook(
        "nudge",
        &blocked,
        &[],
        r#"{"sessionId":"s","toolName":"view","toolArgs":{}}"#,
    );
    assert_eq!((out.as_str(), code), ("", 0));
    assert!(err.contains("allowing the call"), "{err}");
}

/// Start `n` hook processes at once for one session, then feed them all.
fn storm(n: usize, state: &Path, extra: &[&str]) -> usize {
    let payload = br#"{"sessionId":"storm","timestamp":1,"cwd":"/r","toolName":"view","toolArgs":"{\"path\":\"a\"}"}"#;
    let mut children: Vec<_> = (0..n)
        .map(|_| {
            Command::new(BIN)
                .args(["hook", "pre-tool-use"])
                .args(extra)
                .env("TOOLGATE_MODE", "nudge")
                .env("TOOLGATE_HOOK_STATE_DIR", state)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in &mut children {
        c.stdin.take().unwrap().write_all(payload).unwrap();
    }
    let mut denied = 0;
    for c in children {
        let o = c.wait_with_output().unwrap();
        assert!(o.status.success());
        assert!(
            o.stderr.is_empty(),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        if !o.stdout.is_empty() {
            denied += 1;
        }
    }
    denied
}

#[test]
fn concurrent_hooks_for_one_session_count_exactly() {
    let dir = tempfile::tempdir().unwrap();
    // N = 3: every fourth read-only call in a row is denied; 48 calls → exactly 12 denials.
    assert_eq!(storm(48, dir.path(), &["--nudge-after", "3"]), 12);
    // With a threshold never reached, the stored count is exactly the number of calls.
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(storm(40, dir.path(), &["--nudge-after", "1000"]), 0);
    let state: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    assert_eq!(state.len(), 1, "one state file per session");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&state[0]).unwrap()).unwrap();
    assert_eq!(v["consecutive_read_only"], 40);
}

/// Issue 19 item 4: the hook run as `toolgate` from PATH (what a portable install writes) lets
/// `toolgate exec` through in exclusive mode, because that name resolves to the hook's own
/// binary; a `toolgate` on PATH that is another program is not this binary, and is refused.
#[test]
fn exclusive_mode_accepts_the_path_spelling_the_hook_was_run_by() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(std::fs::canonicalize(BIN).unwrap(), bin.join("toolgate")).unwrap();
    let path =
        std::env::join_paths([bin.as_path(), Path::new("/usr/bin"), Path::new("/bin")]).unwrap();
    let run = |command: &str| {
        let payload =
            serde_json::json!({"session_id": "p", "cwd": "/r", "hook_event_name": "PreToolUse",
            "tool_name": "Bash", "tool_input": {"command": command}})
            .to_string();
        let o = toolgate_test_support::run_with_input(
            Command::new("toolgate")
                .args(["hook", "pre-tool-use"])
                .env("PATH", &path)
                .env("TOOLGATE_MODE", "exclusive")
                .env("TOOLGATE_HOOK_STATE_DIR", dir.path().join("state")),
            &payload,
        )
        .unwrap();
        String::from_utf8(o.stdout).unwrap()
    };
    assert_eq!(run("toolgate exec --raw --code 'print(1)'"), "");
    let denied = run("toolgate tools list");
    assert!(denied.contains("\"deny\""), "{denied}");
    assert!(
        denied.contains("  toolgate exec --workspace /r --raw --code '<your python>'"),
        "the reason suggests the portable spelling: {denied}"
    );
    assert!(run("PATH=/tmp toolgate exec --code 1").contains("\"deny\""));
}

/// Issue 19 item 4: the mode can be set in the user config's [hook] table; the environment
/// overrides it; the deny reason says where it was set.
#[test]
fn the_mode_comes_from_the_user_config() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "[hook]\nmode = \"exclusive\"\n").unwrap();
    let run = |env_mode: Option<&str>| {
        let mut c = Command::new(BIN);
        c.args(["hook", "pre-tool-use"])
            .env_remove("TOOLGATE_MODE")
            .env_remove("CODEACT_MODE")
            .env("TOOLGATE_CONFIG", &config)
            .env("TOOLGATE_HOOK_STATE_DIR", dir.path().join("state"));
        if let Some(m) = env_mode {
            c.env("TOOLGATE_MODE", m);
        }
        let o = toolgate_test_support::run_with_input(
            &mut c,
            r#"{"sessionId":"c","cwd":"/r","toolName":"view","toolArgs":{}}"#,
        )
        .unwrap();
        (
            String::from_utf8(o.stdout).unwrap(),
            String::from_utf8(o.stderr).unwrap(),
        )
    };
    let (out, err) = run(None);
    assert!(
        out.contains(&format!("(mode exclusive, set in {})", config.display())),
        "{out}"
    );
    assert!(
        out.contains("set mode = \\\"off\\\" in the [hook] table"),
        "{out}"
    );
    assert_eq!(err, "");
    // Issue 30 item 5: the environment may only make the mode stricter, never switch off (or
    // weaken) what the user's config sets.
    for weaker in ["off", "0", "none", "nudge", "loud"] {
        let (out, _) = run(Some(weaker));
        assert!(
            out.contains("\"deny\"") && out.contains("mode exclusive"),
            "TOOLGATE_MODE={weaker} must not weaken the config's exclusive mode: {out}"
        );
    }
    std::fs::write(&config, "[hook]\nmode = \"nudge\"\n").unwrap();
    let (out, _) = run(Some("exclusive"));
    assert!(
        out.contains("TOOLGATE_MODE=exclusive"),
        "the environment can make it stricter: {out}"
    );
    std::fs::write(&config, "[hook]\nmode = \"loud\"\n").unwrap();
    let (out, err) = run(None);
    assert_eq!(out, "");
    assert!(err.contains("is not a mode"), "{err}");
}

#[test]
fn hook_help_names_the_full_command() {
    let o = Command::new(BIN).args(["hook", "--help"]).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("Usage: toolgate hook <COMMAND>"), "{text}");
    let o = Command::new(BIN)
        .args(["hook", "pre-tool-use", "--help"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("Usage: toolgate hook pre-tool-use [OPTIONS]"),
        "{text}"
    );
    assert!(text.contains("[hook] table of the user config"), "{text}");
}

/// Run the real binary in exclusive mode on raw bytes; stdout, stderr.
fn exclusive_bytes(state: &Path, payload: &[u8]) -> (String, String) {
    let mut child = Command::new(BIN)
        .args(["hook", "pre-tool-use"])
        .env("TOOLGATE_MODE", "exclusive")
        .env_remove("CODEACT_MODE")
        .env("TOOLGATE_CONFIG", state.join("no-config.toml"))
        .env("TOOLGATE_HOOK_STATE_DIR", state)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(payload).unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0));
    (
        String::from_utf8(o.stdout).unwrap(),
        String::from_utf8(o.stderr).unwrap(),
    )
}

/// The decision in a hook answer: `Some(reason)` when denied (either host shape).
fn denial(out: &str) -> Option<String> {
    if out.is_empty() {
        return None;
    }
    let v: serde_json::Value = serde_json::from_str(out).unwrap();
    let d = v.get("hookSpecificOutput").unwrap_or(&v);
    assert_eq!(d["permissionDecision"], "deny", "{out}");
    Some(d["permissionDecisionReason"].as_str().unwrap().to_owned())
}

/// Issue 30 item 5: what Node's JSON.stringify emits for a broken UTF-16 string (a lone
/// surrogate escape), a payload nested deeper than serde_json's limit, invalid UTF-8 and plain
/// garbage were all allowed in exclusive mode ("payload is not JSON … allowing the call"). They
/// are parsed (lone surrogates become U+FFFD, as Node itself does when it writes the string
/// out) or denied, in the host's own answer shape.
#[test]
fn exclusive_mode_fails_closed_on_payloads_it_cannot_parse() {
    let dir = tempfile::tempdir().unwrap();
    // The exact reproduction of the issue.
    let (out, err) = exclusive_bytes(
        dir.path(),
        br#"{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"id #\ud800"},"session_id":"s"}"#,
    );
    let v: serde_json::Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out:?} {err}"));
    assert_eq!(
        v["hookSpecificOutput"]["permissionDecision"], "deny",
        "{out}"
    );
    assert!(!err.contains("allowing"), "{err}");
    // A lone low surrogate, and a pair split by other text.
    for cmd in [r"id \udc00", r"id \ud83d x \ude00"] {
        let payload = format!(
            r#"{{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{{"command":"{cmd}"}}}}"#
        );
        assert!(
            denial(&exclusive_bytes(dir.path(), payload.as_bytes()).0).is_some(),
            "{cmd}"
        );
    }
    // A lone surrogate inside the allowed exec's program is parsed, not refused.
    let exe = std::fs::canonicalize(BIN).unwrap();
    let payload = format!(
        r#"{{"hook_event_name":"PreToolUse","cwd":"/r","tool_name":"Bash","tool_input":{{"command":"{} exec --code 'print(\"\ud800\")'"}}}}"#,
        exe.display()
    );
    assert_eq!(
        exclusive_bytes(dir.path(), payload.as_bytes()),
        (String::new(), String::new())
    );
    // 200 nested arrays anywhere in tool_input.
    let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
    for payload in [
        format!(
            r#"{{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{{"command":"id","x":{deep}}}}}"#
        ),
        format!(r#"{{"toolName":"bash","toolArgs":{{"command":"id","x":{deep}}}}}"#),
        // Copilot's toolArgs as a JSON string, nested inside.
        serde_json::json!({"toolName": "bash", "toolArgs": format!(r#"{{"command":"id","x":{deep}}}"#)}).to_string(),
    ] {
        let (out, err) = exclusive_bytes(dir.path(), payload.as_bytes());
        assert!(denial(&out).is_some(), "allowed: {payload:.80} {err}");
        assert!(!err.contains("allowing"), "{err}");
    }
    // The answer shape follows the payload's own top-level keys.
    let (out, _) = exclusive_bytes(
        dir.path(),
        format!(r#"{{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{deep}}}"#)
            .as_bytes(),
    );
    assert!(out.contains("hookSpecificOutput"), "{out}");
    let (out, _) = exclusive_bytes(
        dir.path(),
        format!(r#"{{"toolName":"bash","toolArgs":{{"hook_event_name":{deep}}}}}"#).as_bytes(),
    );
    assert!(
        out.starts_with(r#"{"permissionDecision":"deny""#),
        "a key deep inside the arguments does not choose the shape: {out}"
    );
    // Invalid UTF-8 and text that is not JSON at all.
    for payload in [
        &b"{\"toolName\":\"bash\",\"toolArgs\":{\"command\":\"id \xff\"}}"[..],
        b"definitely not json",
        b"",
        b"[]",
    ] {
        let (out, err) = exclusive_bytes(dir.path(), payload);
        let why = denial(&out).unwrap_or_else(|| panic!("allowed: {payload:?} {err}"));
        assert!(why.contains("could not be read"), "{why}");
    }
}

fn claude_bash(command: &str) -> String {
    serde_json::json!({"session_id": "s", "cwd": "/r", "hook_event_name": "PreToolUse",
        "tool_name": "Bash", "tool_input": {"command": command}})
    .to_string()
}

/// Issue 30 item 5: exclusive mode let any `exec` flags through: `--workspace /` (the whole
/// disk as the workspace), `-f ~/.ssh/id_rsa` (a line of the key in the SyntaxError), `--yes
/// --save`. Only `--workspace` equal to the project (or absent), the program from `--code` or
/// stdin, and the harmless limits and output flags pass.
#[test]
fn exclusive_mode_accepts_exec_only_for_the_project() {
    let dir = tempfile::tempdir().unwrap();
    let exe = std::fs::canonicalize(BIN).unwrap();
    let exe = exe.display();
    let run = |cmd: &str| hook("exclusive", dir.path(), &[], &claude_bash(cmd)).0;
    for ok in [
        format!("{exe} exec --raw --code 'print(1)'"),
        format!("{exe} exec --workspace /r --raw --code 'print(1)'"),
        format!("{exe} exec --backend auto --workspace . --raw --code 'print(1)'"),
        format!(
            "{exe} exec --workspace=/r/ --timeout 10 --max-memory 512M --max-tool-calls 50 --code x"
        ),
        format!("{exe} exec --raw - <<'EOF'\nprint(1)\nEOF"),
        format!("{exe} exec -f - <<'EOF'\nprint(1)\nEOF"),
    ] {
        assert_eq!(run(&ok), "", "{ok}");
    }
    for bad in [
        format!("{exe} exec --workspace / --code 'bash(command=\"cat ~/.ssh/id_rsa\")'"),
        format!("{exe} exec --workspace=/ --code 1"),
        format!("{exe} exec --workspace /r/.. --code 1"),
        format!("{exe} exec --workspace /rr --code 1"),
        format!("{exe} exec --workspace .. --code 1"),
        format!("{exe} exec -f ~/.ssh/id_rsa"),
        format!("{exe} exec -f /home/u/.ssh/id_rsa"),
        format!("{exe} exec --file=notes.py"),
        format!("{exe} exec /etc/passwd"),
        format!("{exe} exec --yes --save --plot p --code 1"),
        format!("{exe} exec --code 1 --yes"),
        format!("{exe} exec --store /tmp/elsewhere --code 1"),
        format!("{exe} exec --in-process --code 1"),
        format!("{exe} exec --code x --workspace $HOME"),
        format!("{exe} exec --code x --workspace \"$HOME\""),
        format!("{exe} exec --code x --workspace ~"),
        format!("{exe} exec --backend {{--yes,auto}} --code 1"),
        format!("{exe} exec --code x *"),
        format!("{exe} exec --code $'--yes'"),
        format!("{exe} exec --code x # --workspace /r"),
        format!("{exe} exec --code x; id"),
        format!("{exe} exec --code x && id"),
        format!("{exe} exec --code x | sh"),
        format!("{exe} exec --code \"$(id)\""),
        format!("{exe} exec --code `id`"),
        format!("{exe} exec --code x > /etc/x"),
        format!("{exe} exec -- --yes"),
    ] {
        let why = denial(&run(&bad)).unwrap_or_else(|| panic!("allowed: {bad}"));
        assert!(why.contains("exclusive mode"), "{why}");
    }
    // The reason says what was wrong with the call.
    let why = denial(&run(&format!("{exe} exec --yes --code 1"))).unwrap();
    assert!(why.contains("--yes"), "{why}");
    let why = denial(&run(&format!("{exe} exec --workspace / --code 1"))).unwrap();
    assert!(why.contains("--workspace"), "{why}");
}

/// Issue 30 item 5: any tool named `mcp_toolgate_*` or `toolgate-*` was exempt, so another MCP
/// server named `toolgate_x` or `toolgate-x` got through exclusive mode. Only the server name
/// the installs write (`toolgate`) with one of toolgate's own MCP tools passes.
#[test]
fn exclusive_mode_exempts_only_toolgates_own_mcp_tools() {
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str| {
        let payload = serde_json::json!({"session_id": "s", "cwd": "/r",
            "hook_event_name": "PreToolUse", "tool_name": name, "tool_input": {"code": "1"}})
        .to_string();
        hook("exclusive", dir.path(), &[], &payload).0
    };
    for own in [
        "mcp__toolgate__run_code",
        "mcp__plugin_toolgate_toolgate__run_code",
        "mcp_toolgate_run_code",
        "toolgate-run_code",
        "toolgate/run_code",
        "mcp__toolgate__debrief_runTool",
        "toolgate-debrief_searchPlots",
    ] {
        assert_eq!(run(own), "", "{own}");
    }
    for impostor in [
        "mcp_toolgate_x_run_code",
        "mcp_toolgate_x_evil",
        "toolgate-x-run_code",
        "toolgate_x-run_code",
        "mcp__toolgate_x__run_code",
        "mcp__toolgate__evil",
        "toolgate-evil",
        "mcp_toolgate_evil",
        "toolgate/evil",
        "mcp__plugin_toolgate_evil__run_code",
    ] {
        assert!(denial(&run(impostor)).is_some(), "{impostor} passed");
    }
}

/// The hook's list of toolgate's own MCP tools is the list the server serves on the surface the
/// installs start (`all`): a tool added there must be added to the hook's exemption too.
#[test]
fn the_hooks_own_mcp_tools_are_the_servers() {
    let mut served: Vec<String> = toolgate_mcp::surface_specs(toolgate_mcp::ToolSet::All, "")
        .into_iter()
        .map(|t| t.id.to_ascii_lowercase())
        .collect();
    served.sort();
    let mut exempt: Vec<String> = toolgate_hosts::hook::OWN_MCP_TOOLS
        .iter()
        .map(|t| (*t).to_owned())
        .collect();
    exempt.sort();
    assert_eq!(served, exempt);
}
