//! The codeact anchor's functional prompts (reference §10.4), as programs run by the real
//! `toolgate exec` on a private copy of the fixture workspace
//! (`crates/workspace/tests/fixtures/ws`, expected answers in `ws-facts.json`), plus the config
//! layer (§5), custom and command tools, and the error contract (exit codes, messages).
//!
//! Every test points `HOME`, `TOOLGATE_CONFIG` and `TOOLGATE_DATA_DIR` at its own temp dir and
//! clears the tool-list variables, so nothing from the machine leaks in.
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(clippy::disallowed_methods)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

mod support;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../workspace/tests/fixtures")
}

fn facts() -> Value {
    serde_json::from_str(&std::fs::read_to_string(fixtures().join("ws-facts.json")).unwrap())
        .unwrap()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}

/// A temp home with a private copy of the fixture workspace.
struct Env {
    dir: tempfile::TempDir,
    vars: Vec<(String, String)>,
}

impl Env {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        copy_dir(&fixtures().join("ws"), &dir.path().join("ws"));
        Self {
            dir,
            vars: Vec::new(),
        }
    }

    fn ws(&self) -> PathBuf {
        self.dir.path().join("ws")
    }

    /// The user config file (`TOOLGATE_CONFIG`); its folder holds the user's `tools/`.
    fn user_config(&self) -> PathBuf {
        self.dir.path().join("config/toolgate/config.toml")
    }

    fn write(&self, path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn project_file(&self, rel: &str, text: &str) {
        self.write(&self.ws().join(".toolgate").join(rel), text);
    }

    /// `toolgate trust WS`: let the project files written so far widen the user's config.
    fn trust(&self) {
        let out = Command::new(env!("CARGO_BIN_EXE_toolgate"))
            .arg("trust")
            .arg(self.ws())
            .env("HOME", self.dir.path())
            .env("TOOLGATE_CONFIG", self.user_config())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
    }

    fn env(mut self, k: &str, v: &str) -> Self {
        self.vars.push((k.to_owned(), v.to_owned()));
        self
    }

    fn exec(&self, code: &str, extra: &[&str]) -> Output {
        let mut cmd = support::isolated_toolgate(self.dir.path());
        cmd.args(["exec", "--workspace"])
            .arg(self.ws())
            .args(["--code", code])
            .args(extra);
        for (k, v) in &self.vars {
            cmd.env(k, v);
        }
        cmd.output().unwrap()
    }

    /// Run and parse the envelope; panics with the output when it is not JSON.
    fn run(&self, code: &str, extra: &[&str]) -> (Value, Output) {
        let out = self.exec(code, extra);
        let env: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "no envelope ({e}); stdout: {}; stderr: {}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        });
        (env, out)
    }

    /// Run a program that must succeed, in a worker and in process; returns the envelope.
    fn ok(&self, code: &str) -> Value {
        let mut first = None;
        for mode in [&[][..], &["--in-process"][..]] {
            let (env, out) = self.run(code, mode);
            assert!(
                env["success"] == json!(true) && out.status.success(),
                "{mode:?}: {env:#}\nstderr: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            match &first {
                None => first = Some(env),
                Some(f) => assert_eq!(
                    (&f["return_value"], &f["stdout"]),
                    (&env["return_value"], &env["stdout"]),
                    "worker and in-process runs agree"
                ),
            }
        }
        first.unwrap()
    }
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// multi-file-search: every TODO in src/ with file and line.
#[test]
fn todos_with_file_and_line() {
    let e = Env::new();
    let env = e.ok(r#"
hits = []
for f in glob(pattern="src/**/*.py"):
    for n, line in enumerate(view(path=f).splitlines(), 1):
        if "TODO" in line:
            hits.append({"file": f, "line": n})
print(f"{len(hits)} TODOs, first in {hits[0]['file']}")
hits
"#);
    let hits = env["return_value"].as_array().unwrap();
    let mut per_file: BTreeMap<String, u64> = BTreeMap::new();
    for h in hits {
        let file = h["file"].as_str().unwrap();
        let line = h["line"].as_u64().unwrap();
        let text = std::fs::read_to_string(e.ws().join(file)).unwrap();
        let at = text
            .lines()
            .nth(usize::try_from(line).unwrap() - 1)
            .unwrap();
        assert!(at.contains("TODO"), "{file}:{line} is {at:?}");
        *per_file.entry(file.to_owned()).or_default() += 1;
    }
    let expected: BTreeMap<String, u64> = facts()["files"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(f, v)| f.starts_with("src/") && v["todos"].as_u64().unwrap() > 0)
        .map(|(f, v)| (f.clone(), v["todos"].as_u64().unwrap()))
        .collect();
    assert_eq!(per_file, expected);
    assert_eq!(per_file["src/app.py"], 5);
    assert!(env["stdout"].as_str().unwrap().starts_with("29 TODOs"));
    let src_py = facts()["files"]
        .as_object()
        .unwrap()
        .keys()
        .filter(|f| f.starts_with("src/") && f.ends_with(".py"))
        .count();
    assert_eq!(
        env["tool_calls"],
        json!(1 + src_py),
        "one glob, one view per file"
    );
}

/// batch-count: lines per file, top 3.
#[test]
fn line_counts_top_three() {
    let e = Env::new();
    let env = e.ok(r#"
counts = {f: len(view(path=f).splitlines()) for f in glob(pattern="src/**/*.py")}
top = sorted(counts.items(), key=lambda kv: -kv[1])[:3]
for f, n in top:
    print(f"{f}: {n} lines")
top
"#);
    let mut expected: Vec<(String, u64)> = facts()["files"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(f, _)| f.starts_with("src/"))
        .map(|(f, v)| (f.clone(), v["lines"].as_u64().unwrap()))
        .collect();
    expected.sort_by_key(|b| std::cmp::Reverse(b.1));
    expected.truncate(3);
    let got: Vec<(String, u64)> = env["return_value"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p[0].as_str().unwrap().to_owned(), p[1].as_u64().unwrap()))
        .collect();
    assert_eq!(got, expected);
    assert_eq!(got[0], ("src/app.py".to_owned(), 68));
    assert!(
        env["stdout"]
            .as_str()
            .unwrap()
            .starts_with("src/app.py: 68 lines\n")
    );
}

/// json-validate: every JSON file checked, the broken one reported with the parser's message.
#[test]
fn json_validation_reports_the_broken_file() {
    let e = Env::new();
    let env = e.ok(r#"
import json
report = {}
for f in glob(pattern="**/*.json"):
    try:
        json.loads(view(path=f))
        report[f] = "ok"
    except Exception as err:
        report[f] = str(err)
report
"#);
    let facts = facts();
    let report = env["return_value"].as_object().unwrap();
    let json_files: Vec<&String> = facts["files"]
        .as_object()
        .unwrap()
        .keys()
        .filter(|f| f.ends_with(".json"))
        .collect();
    assert_eq!(report.len(), json_files.len());
    for f in json_files {
        let expected = facts["invalid_json"]
            .get(f.as_str())
            .map_or(json!("ok"), Clone::clone);
        assert_eq!(report[f.as_str()], expected, "{f}");
    }
    assert_eq!(
        report["config/broken.json"],
        "Expecting ',' delimiter: line 4 column 3 (char 44)"
    );
}

const SHOUT: &str = r#""""Shout text back."""
TOOL = {
    "name": "shout",
    "description": "Return the text upper-cased; with path, add that file's first line, upper-cased.",
    "parameters": {
        "text": {"type": "string", "required": True, "description": "What to shout."},
        "path": {"type": "string", "description": "A workspace file whose first line to add."},
    },
}


def shout(text, path=None):
    if path is None:
        return text.upper()
    first = view(path=path).splitlines()[0]
    return text.upper() + " / " + first.upper()
"#;

/// custom-tool-shout: a project tool in `.toolgate/tools/shout.py`, run inside the sandbox,
/// calling `view` through the same host.
#[test]
fn custom_tool_shout_may_call_view() {
    let e = Env::new();
    e.project_file("tools/shout.py", SHOUT);
    e.trust();
    let env = e.ok(r#"
print(shout(text="hello world"))
shout(text="readme", path="README.md")
"#);
    assert_eq!(env["stdout"], "HELLO WORLD\n");
    assert_eq!(env["return_value"], "README / # SAMPLE PROJECT");
    // Its parameters are validated like any tool's.
    let (env, out) = e.run("shout(txt='x')", &[]);
    assert_eq!(out.status.code(), Some(1));
    let msg = env["error"]["message"].as_str().unwrap();
    assert!(
        msg.starts_with("Invalid parameters for \"shout\":"),
        "{msg}"
    );
    // It is listed with the built-ins.
    let out = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args([
            "tools",
            "list",
            "--json",
            "--surface",
            "codeact",
            "--workspace",
        ])
        .arg(e.ws())
        .env("HOME", e.dir.path())
        .env("TOOLGATE_CONFIG", e.user_config())
        .env("TOOLGATE_DATA_DIR", e.dir.path().join("data"))
        .env_remove("TOOLGATE_TOOLS")
        .env_remove("TOOLGATE_DISABLE")
        .output()
        .unwrap();
    let manifest: Value = serde_json::from_slice(&out.stdout).unwrap();
    let shout = manifest
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "shout")
        .unwrap();
    assert_eq!(shout["parameters"]["required"], json!(["text"]));
}

/// Custom tools of the user config dir and of the project: the project's wins on a name; a
/// broken file is skipped with a warning naming it; a tool that fails raises in the caller.
#[test]
fn custom_tools_from_both_dirs() {
    let e = Env::new();
    let user_tools = e.user_config().parent().unwrap().join("tools");
    e.write(
        &user_tools.join("shout.py"),
        "TOOL = {'name': 'shout'}\ndef shout(text):\n    return 'user version'\n",
    );
    e.write(
        &user_tools.join("whisper.py"),
        "\"\"\"Whisper.\"\"\"\nTOOL = {'parameters': {'text': {'type': 'string', 'required': True}}}\ndef run(text):\n    if text == 'boom':\n        raise ValueError('no booms')\n    return shout(text=text).lower() + '...'\n",
    );
    e.write(&user_tools.join("broken.py"), "TOOL = {\n");
    e.project_file("tools/shout.py", SHOUT);
    e.trust();
    let env = e.ok("[whisper(text='Hi'), shout(text='x')]");
    assert_eq!(
        env["return_value"],
        json!(["hi...", "X"]),
        "custom tools call custom tools; the project's shout wins"
    );
    let out = e.exec("1", &[]);
    assert!(
        stderr(&out).contains("broken.py: custom tool skipped: running it failed: SyntaxError"),
        "{}",
        stderr(&out)
    );
    let (env, _) = e.run(
        "try:\n    whisper(text='boom')\nexcept ValueError as err:\n    print('caught', err)\n",
        &[],
    );
    assert!(
        env["stdout"]
            .as_str()
            .unwrap()
            .starts_with("caught no booms (in custom tool \"whisper\", whisper.py, line 5)"),
        "{env:#}"
    );
    // The tool lists apply to custom tools too.
    let e = e.env("TOOLGATE_DISABLE", "whisper");
    let (env, _) = e.run("whisper(text='x')", &[]);
    assert_eq!(env["error"]["type"], "NameError");
    assert!(
        env["error"]["message"]
            .as_str()
            .unwrap()
            .contains("\"whisper\" is disabled"),
        "{env:#}"
    );
}

/// tool-config-disable: a disabled tool raises an exception the program catches, and its
/// message says the tool is disabled.
#[test]
fn disabled_tool_raises_a_catchable_exception() {
    let program = r#"
try:
    bash(command="echo still here")
    print("TOOL_STILL_ENABLED")
except Exception as err:
    print("TOOL_DISABLED_OK", type(err).__name__, err)
"#;
    let e = Env::new().env("TOOLGATE_DISABLE", "bash");
    let env = e.ok(program);
    let out = env["stdout"].as_str().unwrap();
    assert!(
        out.starts_with(
            "TOOL_DISABLED_OK NameError name 'bash' is not defined: Tool \"bash\" is disabled"
        ),
        "{out}"
    );
    // The anchor's variable, and the config file's deny list, do the same.
    let env = Env::new().env("CODEACT_DISABLE", "sql,bash").ok(program);
    assert!(
        env["stdout"]
            .as_str()
            .unwrap()
            .starts_with("TOOL_DISABLED_OK")
    );
    let e = Env::new();
    e.project_file("config.toml", "[tools]\ndeny = [\"bash\"]\n");
    let env = e.ok(program);
    assert!(
        env["stdout"]
            .as_str()
            .unwrap()
            .starts_with("TOOL_DISABLED_OK")
    );
    // Enabled, it runs.
    let env = Env::new().ok(program);
    assert_eq!(env["stdout"], "TOOL_STILL_ENABLED\n");
}

/// The layering rule over two files and the environment (README "Configuration layers and
/// trust"): a trusted project file replaces the user's lists; an untrusted one and the
/// environment only narrow (denies add, allow lists intersect); a tool in both lists is dropped.
#[test]
fn tool_lists_follow_the_layering_rule() {
    let probe = r#"
out = []
for name, call in [("bash", lambda: bash(command="true")), ("sql", lambda: sql(query="select 1")), ("glob", lambda: glob(pattern="*.md"))]:
    try:
        call()
        out.append(name)
    except NameError:
        pass
out
"#;
    let e = Env::new();
    e.write(
        &e.user_config(),
        "[tools]\ndeny = [\"bash\"]\nallow = [\"bash\", \"sql\", \"view\"]\n",
    );
    assert_eq!(e.ok(probe)["return_value"], json!(["sql"]), "user file");
    e.project_file("config.toml", "[tools]\ndeny = [\"sql\"]\n");
    assert_eq!(
        e.ok(probe)["return_value"],
        json!([]),
        "an untrusted project's deny list adds to the user's"
    );
    e.trust();
    assert_eq!(
        e.ok(probe)["return_value"],
        json!(["bash"]),
        "a trusted project's deny list replaces the user's; the user's allow list stays"
    );
    let e = e.env("TOOLGATE_TOOLS", "glob, bash");
    assert_eq!(
        e.ok(probe)["return_value"],
        json!(["bash"]),
        "env allow narrows: glob is not in the files' allow list"
    );
    let e = e.env("CODEACT_DISABLE", "bash");
    assert_eq!(
        e.ok(probe)["return_value"],
        json!([]),
        "env deny adds to the files' deny list"
    );
}

/// A bad config file: the command fails before running anything, naming the file and the key.
#[test]
fn bad_config_names_the_file_and_the_key() {
    let e = Env::new();
    e.project_file("config.toml", "[limits]\ntimeout_secs = \"ten\"\n");
    let out = e.exec("1+1", &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let project = e.ws().join(".toolgate/config.toml");
    assert_eq!(
        stderr(&out).trim(),
        format!(
            "error: {}: invalid value for key `limits.timeout_secs`: expected an integer, found string \"ten\" (line 2, column 16)",
            project.canonicalize().unwrap().display()
        )
    );
    let e = Env::new();
    e.write(
        &e.user_config(),
        "[workspace]\nweb_fetch = true\nwebfetch = true\n",
    );
    let out = e.exec("1+1", &[]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "{}: unknown key `workspace.webfetch`; expected one of: web_fetch,",
            e.user_config().display()
        )),
        "{err}"
    );
    let e = Env::new();
    e.project_file("config.toml", "[limits\n");
    let err = stderr(&e.exec("1+1", &[]));
    assert!(err.contains("config.toml: not valid TOML (line 1"), "{err}");
}

/// A traceback names a program file inside the workspace by its workspace-relative path
/// (issue 33: "tracebacks name workspace-relative paths"); a file outside by its name only.
#[test]
fn a_traceback_names_the_workspace_relative_path() {
    let e = Env::new();
    let inside = e.ws().join("scripts").join("check.py");
    e.write(&inside, "x = 1\nraise ValueError('boom')\n");
    let out = support::isolated_toolgate(e.dir.path())
        .args(["exec", "--workspace"])
        .arg(e.ws())
        .arg(&inside)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &stderr(&out);
    assert!(text.contains("scripts/check.py"), "{text}");
    let outside = e.dir.path().join("elsewhere").join("other.py");
    e.write(&outside, "raise ValueError('boom')\n");
    let out = support::isolated_toolgate(e.dir.path())
        .args(["exec", "--workspace"])
        .arg(e.ws())
        .arg(&outside)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &stderr(&out);
    assert!(text.contains("other.py"), "{text}");
    assert!(!text.contains("elsewhere"), "{text}");
}

/// Config limits apply; flags win over them.
#[test]
fn limits_from_config_and_flags_win() {
    let e = Env::new();
    e.project_file(
        "config.toml",
        "[limits]\ntimeout_secs = 1\nmax_tool_calls = 2\n",
    );
    let (env, out) = e.run("import time\ntime.sleep(1.5)\n'done'", &[]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(env["error"]["type"], "TimeoutError");
    assert!(
        env["error"]["message"]
            .as_str()
            .unwrap()
            .contains("wall-clock limit of 1 s"),
        "{env:#}"
    );
    let (env, _) = e.run("import time\ntime.sleep(1.5)\n'done'", &["--timeout", "5"]);
    assert_eq!(env["return_value"], "done");
    let (env, _) = e.run("[view(path='README.md') for _ in range(3)]", &[]);
    assert!(
        env["error"]["message"]
            .as_str()
            .unwrap()
            .contains("tool-call limit exceeded"),
        "{env:#}"
    );
    let (env, _) = e.run(
        "len([view(path='README.md') for _ in range(3)])",
        &["--max-tool-calls", "3"],
    );
    assert_eq!(env["return_value"], 3);
}

/// `[[command_tools]]`: an argv with whole-argument placeholders, no shell, in the workspace.
#[test]
fn command_tools_from_toml() {
    let e = Env::new();
    e.project_file(
        "config.toml",
        r#"
[[command_tools]]
name = "count_lines"
description = "Count the lines of files with wc -l."
argv = ["wc", "-l", "--", "{paths}"]
parameters = { paths = { type = "array", items = { type = "string" }, required = true } }

[[command_tools]]
name = "echo_arg"
argv = ["sh", "-c", "printf '%s|' \"$@\"; pwd", "sh", "{text}", "--flag={opt}"]
parameters = { type = "object", properties = { text = { type = "string" }, opt = { type = "integer" } }, required = ["text"] }
"#,
    );
    e.trust();
    let env = e.ok(r#"
r = count_lines(paths=["src/app.py", "README.md"])
print(r["returncode"])
[echo_arg(text="a b; $(rm -rf /)")["stdout"], echo_arg(text="x", opt=3)["stdout"], r["stdout"].split("\n")[0].split()]
"#);
    let root = e.ws().canonicalize().unwrap().display().to_string();
    assert_eq!(env["stdout"], "0\n");
    assert_eq!(
        env["return_value"],
        json!([
            format!("a b; $(rm -rf /)|{root}\n"),
            format!("x|--flag=3|{root}\n"),
            ["68", "src/app.py"]
        ])
    );
    let (env, _) = e.run("echo_arg(text=1)", &[]);
    assert!(
        env["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("Invalid parameters for \"echo_arg\":"),
        "{env:#}"
    );
}

/// Invalid tool arguments are rejected before the tool runs, with the core's corrective
/// message.
#[test]
fn invalid_arguments_are_rejected_before_the_tool_runs() {
    let e = Env::new();
    let (env, out) = e.run("create(path='new.txt', file_text='x', mode='w')", &[]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(env["error"]["type"], "ValueError");
    assert_eq!(
        env["error"]["message"],
        "Invalid parameters for \"create\": unknown parameter \"mode\""
    );
    assert!(!e.ws().join("new.txt").exists(), "nothing ran");
    let env = e.ok(r#"
try:
    view(path=["README.md"])
except ValueError as err:
    msg = str(err)
msg
"#);
    let msg = env["return_value"].as_str().unwrap();
    assert!(
        msg.starts_with("Invalid parameters for \"view\": "),
        "{msg}"
    );
    assert!(msg.contains("\"path\""), "{msg}");
}

/// Syntax errors report the line and the column.
#[test]
fn syntax_errors_report_line_and_column() {
    let e = Env::new();
    let (env, out) = e.run("x = 1\nif x\n    print(x)\n", &[]);
    assert_eq!(out.status.code(), Some(1));
    let err = &env["error"];
    assert_eq!(err["type"], "SyntaxError");
    assert_eq!(err["line"], 2);
    assert_eq!(err["column"], 5);
    assert!(
        env["stderr"].as_str().unwrap().contains("line 2"),
        "{env:#}"
    );
}

/// Exit status: 0 on success, 1 when `success` is false (envelope and `--raw`), 2 without a
/// program.
#[test]
fn exit_status_follows_success() {
    let e = Env::new();
    let (env, out) = e.run("print('a')\nraise RuntimeError('stop')", &[]);
    assert_eq!(env["success"], false);
    assert_eq!(env["stdout"], "a\n");
    assert_eq!(out.status.code(), Some(1));
    let out = e.exec("raise RuntimeError('stop')", &["--raw"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("RuntimeError: stop"));
    let out = e.exec("6 * 7", &["--raw"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "42\n");
    let out = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["exec", "--workspace"])
        .arg(e.ws())
        .env("TOOLGATE_CONFIG", e.user_config())
        .env("HOME", e.dir.path())
        .env("TOOLGATE_DATA_DIR", e.dir.path().join("data"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// `[tools] confirm` makes `create` ask on `exec` too. With no terminal the first such call
/// ends the run there — exit 4, a message naming `--yes`, nothing of that call run — instead
/// of being reported as declined by the user; `--yes` pre-approves.
#[test]
fn exec_without_a_terminal_stops_at_the_first_call_that_needs_a_person() {
    let env = Env::new();
    env.write(&env.user_config(), "[tools]\nconfirm = [\"create\"]\n");
    let code =
        "print(view(path='README.md')[:5])\ncreate(path='new.txt', file_text='x')\nprint('after')";
    // `setsid`: no controlling terminal, whatever runs the tests.
    let mut cmd = Command::new("setsid");
    cmd.arg("-w").arg(env!("CARGO_BIN_EXE_toolgate"));
    let probe = support::isolated_toolgate(env.dir.path());
    for (k, v) in probe.get_envs() {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    let out = cmd
        .args(["exec", "--workspace"])
        .arg(env.ws())
        .args(["--code", code])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("--yes") && err.contains("no terminal") && err.contains("Create File"),
        "{err}"
    );
    assert!(!err.contains("declined by the user"), "{err}");
    let envelope: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        envelope["error"]["type"], "ConfirmationNeeded",
        "{envelope:#}"
    );
    assert_eq!(
        envelope["tool_calls"], 1,
        "the view before it counts: {envelope:#}"
    );
    assert!(!env.ws().join("new.txt").exists());

    let (envelope, out) = env.run(code, &["--yes"]);
    assert!(out.status.success(), "{envelope:#}");
    assert!(env.ws().join("new.txt").exists());
}

/// On a terminal, each call that needs a person pauses the program and asks (y/N, with the
/// preview and what ran before); an answer resumes it from that call, a "no" raises
/// `PermissionError` the program handles.
#[test]
fn exec_on_a_terminal_asks_at_each_call_and_resumes_from_it() {
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("skipped: util-linux `script` (a pseudo-terminal) is not installed");
        return;
    }
    let env = Env::new();
    env.write(&env.user_config(), "[tools]\nconfirm = [\"create\"]\n");
    let code = "create(path='a.txt', file_text='one')\ntry:\n    create(path='b.txt', file_text='two')\nexcept PermissionError:\n    print('b declined')\nprint(view(path='a.txt'))";
    let probe = support::isolated_toolgate(env.dir.path());
    let command = format!(
        "{} exec --workspace {} --code \"$PROGRAM\"",
        env!("CARGO_BIN_EXE_toolgate"),
        env.ws().display()
    );
    let mut cmd = Command::new("script");
    for (k, v) in probe.get_envs() {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    let mut child = cmd
        .args(["-qec", &command, "/dev/null"])
        .env("PROGRAM", code)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"y\nn\n").unwrap();
    }
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{text}\n{}", stderr(&out));
    assert_eq!(text.matches("Run it? [y/N]").count(), 2, "{text}");
    assert!(
        text.contains("- Target: a.txt") && text.contains("- Target: b.txt"),
        "{text}"
    );
    assert!(
        text.contains("1 tool call before this one: create(a.txt) ok"),
        "{text}"
    );
    assert!(
        text.contains("b declined") && text.contains("one"),
        "{text}"
    );
    assert_eq!(
        std::fs::read_to_string(env.ws().join("a.txt")).unwrap(),
        "one"
    );
    assert!(!env.ws().join("b.txt").exists());
}
