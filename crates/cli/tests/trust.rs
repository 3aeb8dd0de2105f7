//! Untrusted project configuration (issue 14, item 3): a cloned repository's
//! `.toolgate/config.toml` and `.toolgate/tools/` may only narrow what the user configured
//! until the user runs `toolgate trust DIR`; any change to them afterwards makes the workspace
//! untrusted again. Each reproduction from the issue runs the real binary.
//!
//! Every test points `HOME`, `TOOLGATE_CONFIG`, `XDG_CONFIG_HOME` and `TOOLGATE_DATA_DIR` at
//! its own temp dir, so nothing touches a real home and the trust file is private.
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(clippy::disallowed_methods)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;

mod support;

struct Env {
    dir: tempfile::TempDir,
    vars: Vec<(String, String)>,
}

impl Env {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("ws")).unwrap();
        std::fs::write(dir.path().join("ws/README.md"), "# sample\n").unwrap();
        Self {
            dir,
            vars: Vec::new(),
        }
    }

    fn ws(&self) -> PathBuf {
        self.dir.path().join("ws")
    }

    fn user_config(&self) -> PathBuf {
        self.dir.path().join("config/toolgate/config.toml")
    }

    fn write(&self, path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn user(&self, text: &str) {
        self.write(&self.user_config(), text);
    }

    fn project(&self, rel: &str, text: &str) {
        self.write(&self.ws().join(".toolgate").join(rel), text);
    }

    fn env(mut self, k: &str, v: &str) -> Self {
        self.vars.push((k.to_owned(), v.to_owned()));
        self
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = support::isolated_toolgate(self.dir.path());
        cmd.args(args);
        for (k, v) in &self.vars {
            cmd.env(k, v);
        }
        cmd
    }

    /// `toolgate exec --workspace WS --code CODE`: the envelope and the output.
    fn exec(&self, code: &str, extra: &[&str]) -> (Value, Output) {
        let ws = self.ws().display().to_string();
        let mut args = vec!["exec", "--workspace", &ws, "--code", code];
        args.extend_from_slice(extra);
        let out = self.command(&args).output().unwrap();
        let env: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "no envelope ({e}); stdout: {}; stderr: {}",
                String::from_utf8_lossy(&out.stdout),
                stderr(&out)
            )
        });
        (env, out)
    }

    /// The CodeAct tool names `tools list` shows for the workspace, and its stderr.
    fn codeact_tools(&self) -> (Vec<String>, String) {
        let ws = self.ws().display().to_string();
        let out = self
            .command(&[
                "tools",
                "list",
                "--json",
                "--surface",
                "codeact",
                "--workspace",
                &ws,
            ])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let names = v
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect();
        (names, stderr(&out))
    }

    fn trust(&self, verb: &str) {
        let ws = self.ws().display().to_string();
        let out = self.command(&[verb, &ws]).output().unwrap();
        assert!(out.status.success(), "{verb}: {}", stderr(&out));
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The one warning line about ignored project settings, checked for its shape.
fn trust_warning(err: &str) -> String {
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("may only narrow your configuration"))
        .collect();
    assert_eq!(lines.len(), 1, "exactly one warning line: {err}");
    assert!(
        lines[0].contains("run \"toolgate trust ") && lines[0].ends_with("to allow it"),
        "{}",
        lines[0]
    );
    lines[0].to_owned()
}

const TRY_BASH: &str = r#"
try:
    bash(command="echo ran")
    print("BASH_RAN")
except NameError as err:
    print("DENIED", err)
"#;

/// Reproduction: a project `deny = []` cleared the user's `deny = ["bash"]`.
#[test]
fn project_deny_empty_does_not_clear_the_users_denies() {
    let e = Env::new();
    e.user("[tools]\ndeny = [\"bash\"]\n");
    e.project("config.toml", "[tools]\ndeny = []\n");
    let (env, out) = e.exec(TRY_BASH, &[]);
    let stdout = env["stdout"].as_str().unwrap();
    assert!(stdout.starts_with("DENIED"), "{env:#}\n{}", stderr(&out));
    let w = trust_warning(&stderr(&out));
    assert!(
        w.contains("tools.deny replacing the user's deny list (it still denies bash)"),
        "{w}"
    );
}

/// Reproduction: a project `[[command_tools]]` running `/bin/sh -c` was registered (and ran)
/// despite the user's `deny = ["bash"]` and `TOOLGATE_DISABLE=bash`.
#[test]
fn project_command_tools_are_not_loaded_untrusted() {
    let e = Env::new().env("TOOLGATE_DISABLE", "bash");
    e.user("[tools]\ndeny = [\"bash\"]\n");
    e.project(
        "config.toml",
        "[[command_tools]]\nname = \"pwned\"\nargv = [\"/bin/sh\", \"-c\", \"echo pwned\"]\n",
    );
    let (env, out) = e.exec(
        "try:\n    print(pwned()['stdout'])\nexcept NameError as err:\n    print('NOT_DEFINED')\n",
        &[],
    );
    assert_eq!(env["stdout"], "NOT_DEFINED\n", "{env:#}\n{}", stderr(&out));
    let w = trust_warning(&stderr(&out));
    assert!(w.contains("[[command_tools]] \"pwned\""), "{w}");
    let (names, _) = e.codeact_tools();
    assert!(!names.contains(&"pwned".to_owned()), "{names:?}");
    // Trusted, the user asked for it: it is listed.
    e.trust("trust");
    let (names, err) = e.codeact_tools();
    assert!(names.contains(&"pwned".to_owned()), "{names:?}\n{err}");
    assert!(!err.contains("may only narrow"), "{err}");
}

/// Reproduction: a project turned on `web_fetch` and `http_writes` (so `github_api` POSTs
/// would carry the user's token).
#[test]
fn project_cannot_enable_web_fetch_or_http_writes() {
    let e = Env::new();
    e.project(
        "config.toml",
        "[workspace]\nweb_fetch = true\nhttp_writes = true\n",
    );
    let (env, out) = e.exec("web_fetch(url='http://127.0.0.1:9/')", &[]);
    let msg = env["error"]["message"].as_str().unwrap_or_default();
    assert!(
        msg.contains("web_fetch is disabled"),
        "{env:#}\n{}",
        stderr(&out)
    );
    let w = trust_warning(&stderr(&out));
    assert!(
        w.contains("workspace.web_fetch = true") && w.contains("workspace.http_writes = true"),
        "{w}"
    );
    // The user enabled web_fetch themselves: the project still cannot add write methods.
    e.user("[workspace]\nweb_fetch = true\n");
    let (env, out) = e.exec(
        "web_fetch(url='http://127.0.0.1:9/', method='POST', data='x')",
        &[],
    );
    // Without http_writes the tool's schema offers only GET and HEAD.
    let msg = env["error"]["message"].as_str().unwrap_or_default();
    assert!(
        msg.contains("parameter \"method\" must be one of: GET, HEAD"),
        "{env:#}\n{}",
        stderr(&out)
    );
}

/// Reproduction: a project raised the user's limits. Lowering them still works.
#[test]
fn project_cannot_raise_limits_but_may_lower_them() {
    let e = Env::new();
    e.user("[limits]\ntimeout_secs = 1\n");
    e.project("config.toml", "[limits]\ntimeout_secs = 30\n");
    let (env, out) = e.exec("import time\ntime.sleep(2)\n'done'", &[]);
    assert_eq!(env["error"]["type"], "TimeoutError", "{env:#}");
    let w = trust_warning(&stderr(&out));
    assert!(w.contains("limits.timeout_secs = 30 (above 1)"), "{w}");
    // Lower than the user's value: applied, no warning.
    e.user("[limits]\nmax_tool_calls = 50\n");
    e.project("config.toml", "[limits]\nmax_tool_calls = 2\n");
    let (env, out) = e.exec("[view(path='README.md') for _ in range(3)]", &[]);
    assert!(
        env["error"]["message"]
            .as_str()
            .unwrap()
            .contains("tool-call limit exceeded"),
        "{env:#}"
    );
    assert!(
        !stderr(&out).contains("may only narrow"),
        "{}",
        stderr(&out)
    );
}

/// Reproduction: twenty `.toolgate/tools/*.py` with a top-level `while True: pass` made
/// `exec --code 1` take 100 s. Untrusted they are not loaded at all; trusted they share one
/// load budget and are refused.
#[test]
fn spinning_custom_tools_cost_at_most_one_budget() {
    let e = Env::new();
    for i in 0..20 {
        e.project(&format!("tools/spin{i:02}.py"), "while True:\n    pass\n");
    }
    let started = Instant::now();
    let (env, out) = e.exec("1", &[]);
    let untrusted = started.elapsed();
    assert_eq!(env["return_value"], 1, "{env:#}");
    assert!(untrusted < Duration::from_secs(10), "{untrusted:?}");
    let w = trust_warning(&stderr(&out));
    assert!(w.contains("20 custom tools in .toolgate/tools"), "{w}");

    e.trust("trust");
    let started = Instant::now();
    let (env, out) = e.exec("1", &[]);
    let trusted = started.elapsed();
    assert_eq!(env["return_value"], 1, "{env:#}");
    // The budget is 2 s for all files together; the rest is process start-up.
    assert!(trusted < Duration::from_secs(12), "{trusted:?}");
    // …and the time spent loading them is part of what the envelope reports.
    let reported = env["duration_ms"].as_f64().unwrap();
    assert!(
        reported >= 1900.0,
        "duration_ms {reported} hides the load time"
    );
    let err = stderr(&out);
    assert!(
        err.contains("spin00.py: custom tool skipped: its top-level code did not finish"),
        "{err}"
    );
    assert!(
        err.contains(
            "spin19.py: custom tool not loaded: loading custom tools used up its 2 s budget"
        ),
        "{err}"
    );
}

/// `trust` lets the project widen; editing any project file afterwards makes it untrusted
/// again (with a warning that says so) until `trust` is run again; `untrust` ends it.
#[test]
fn trust_edit_retrust_untrust() {
    let e = Env::new();
    let tool = "[[command_tools]]\nname = \"hello\"\nargv = [\"echo\", \"hi\"]\n";
    e.project("config.toml", tool);
    let has = |e: &Env| e.codeact_tools().0.contains(&"hello".to_owned());
    assert!(!has(&e));
    e.trust("trust");
    assert!(has(&e));
    let trusted_file = e.dir.path().join("config/toolgate/trusted.toml");
    let text = std::fs::read_to_string(&trusted_file).unwrap();
    assert!(
        text.contains(&e.ws().canonicalize().unwrap().display().to_string()),
        "{text}"
    );
    // An edit to the config file …
    e.project("config.toml", &format!("{tool}# harmless?\n"));
    let (names, err) = e.codeact_tools();
    assert!(!names.contains(&"hello".to_owned()));
    assert!(
        trust_warning(&err).contains("changed since you trusted it"),
        "{err}"
    );
    e.trust("trust");
    assert!(has(&e));
    // … or a new custom-tool file untrusts it too.
    e.project("tools/new.py", "TOOL = {}\ndef run():\n    return 1\n");
    assert!(!has(&e));
    e.trust("trust");
    assert!(has(&e));
    e.trust("untrust");
    assert!(!has(&e));
}

/// One layering rule: the environment's deny list adds to the files' (it used to replace it in
/// CodeAct), and its allow list cannot re-enable what the user file denies (it used to in the
/// Debrief CLI).
#[test]
fn environment_lists_only_narrow_on_both_surfaces() {
    let e = Env::new().env("TOOLGATE_DISABLE", "sql");
    e.user("[tools]\ndeny = [\"bash\", \"set-track-color\"]\n");
    let (env, _) = e.exec(TRY_BASH, &[]);
    assert!(
        env["stdout"].as_str().unwrap().starts_with("DENIED"),
        "{env:#}"
    );
    let (names, _) = e.codeact_tools();
    assert!(
        !names.contains(&"bash".to_owned()) && !names.contains(&"sql".to_owned()),
        "{names:?}"
    );
    // The Debrief tools: TOOLGATE_TOOLS naming a tool the user file denies does not bring it
    // back.
    let e = e.env("TOOLGATE_TOOLS", "set-track-color,track-stats");
    let out = e.command(&["tools", "list", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let ids: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["id"].as_str().or(t["name"].as_str()))
        .collect();
    assert!(!ids.contains(&"set-track-color"), "{ids:?}");
    assert_eq!(
        ids,
        ["track-stats"],
        "the env allow list narrows to what the file allows"
    );
}

/// `unconfined_processes` and `network` in a project file are ignored even when trusted.
#[test]
fn user_only_keys_in_a_project_file_warn() {
    let e = Env::new();
    e.project(
        "config.toml",
        "[workspace]\nunconfined_processes = true\nnetwork = true\n",
    );
    e.trust("trust");
    let (_, err) = e.codeact_tools();
    assert!(
        err.contains("workspace.unconfined_processes and workspace.network ignored: only your own config file may set them"),
        "{err}"
    );
}
