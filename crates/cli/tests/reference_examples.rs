//! The model-facing CodeAct reference is executable: every Python example in
//! `toolgate tools list --surface codeact --markdown [--plot]` and in every file `toolgate install`
//! writes (skills, agents, instructions, the skill's `references/tools.md`) is extracted
//! mechanically and run by the real `toolgate exec` against a fixture workspace this file
//! generates; its printed output and return value are asserted ([`expected`]). An example
//! nobody wrote an expectation for fails the test, and so does an expectation whose example is
//! gone. The documented exception types are the raised ones, the signatures' return types are
//! what the tools return, the config key an error names is one the config accepts, and the
//! generated reference is snapshotted (`tests/snapshots/`) so changes show in review.
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(clippy::disallowed_methods)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};

mod support;

const PLOT: &str = "stac://demo/alpha-day1/item.json";

/// The workspace every example runs in (a fresh copy per run).
fn write_fixture(ws: &Path) {
    let files: &[(&str, &str)] = &[
        (
            "src/app.py",
            "def main():\n    # TODO: parse arguments\n    print(\"hello\")\n\n# TODO: add logging\n",
        ),
        (
            "src/util/helpers.py",
            "def helper():\n    return 1  # TODO tidy\n",
        ),
        ("src/notes.txt", "not python; TODO elsewhere\n"),
        ("docs/intro.md", "# Intro\n"),
        ("docs/usage.md", "Usage: run it.\n"),
        ("notes/todo.md", "- write docs\n"),
    ];
    for (rel, text) in files {
        let p = ws.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
}

/// What each example prints (`stdout`) and evaluates to (`return_value`) in the fixture, by
/// the line that introduces it in the reference.
fn expected() -> BTreeMap<&'static str, (&'static str, Value)> {
    // grep searches every file under src; the skills' example reads only the .py files.
    let grep_todos = "4 TODOs\nsrc/app.py:2: # TODO: parse arguments\nsrc/app.py:5: # TODO: add logging\nsrc/notes.txt:1: not python; TODO elsewhere\nsrc/util/helpers.py:2: return 1  # TODO tidy\n";
    let py_todos = "3 TODOs\nsrc/app.py:2: # TODO: parse arguments\nsrc/app.py:5: # TODO: add logging\nsrc/util/helpers.py:2: return 1  # TODO tidy\n";
    BTreeMap::from([
        (
            "Find TODOs (grep returns one dict per matching line):",
            (grep_todos, Value::Null),
        ),
        (
            "Count lines per file:",
            ("", json!([["src/app.py", 5], ["src/util/helpers.py", 2]])),
        ),
        (
            "Read many files concurrently:",
            ("", json!({"docs/intro.md": 8, "docs/usage.md": 15})),
        ),
        ("Handle a missing file:", ("", Value::Null)),
        (
            "Create a file, or change it when it exists:",
            ("- write docs\n- add tests\n\n", Value::Null),
        ),
        // The skills' and instructions' example (crates/hosts/src/render.rs).
        (
            "Example (the tools are plain function calls):",
            (py_todos, Value::Null),
        ),
        // Plot section: runs with `--plot` on the demo plot.
        (
            "Recolour a track and read its statistics in the same program:",
            ("['track-contact'] Contact 361\n", Value::Null),
        ),
    ])
}

/// A private home for one test: user config, data dir (the demo store), telemetry.
struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Self {
        let home = Self {
            dir: tempfile::tempdir().unwrap(),
        };
        // bash runs on every machine (unconfined where confinement is unavailable), so the
        // probes below can call it.
        home.user_config("[workspace]\nunconfined_processes = true\n");
        home
    }

    fn user_config(&self, text: &str) {
        let p = self.dir.path().join("config/toolgate/config.toml");
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    /// A fresh fixture workspace.
    fn workspace(&self) -> PathBuf {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let ws = self
            .dir
            .path()
            .join(format!("ws{}", NEXT.fetch_add(1, Ordering::Relaxed)));
        write_fixture(&ws);
        ws
    }

    fn toolgate(&self) -> Command {
        let mut cmd = support::isolated_toolgate(self.dir.path());
        cmd.env("TOOLGATE_BACKEND", "monty");
        cmd
    }

    fn stdout(&self, args: &[&str]) -> String {
        let o = self.toolgate().args(args).output().unwrap();
        assert!(o.status.success(), "{args:?}: {}", text(&o.stderr));
        text(&o.stdout)
    }

    fn reference(&self, ws: &Path, plot: bool) -> String {
        let mut args = vec![
            "tools",
            "list",
            "--surface",
            "codeact",
            "--markdown",
            "--workspace",
            ws.to_str().unwrap(),
        ];
        if plot {
            args.push("--plot");
        }
        self.stdout(&args)
    }

    /// `toolgate exec --workspace WS [extra] --code CODE`: its JSON envelope.
    fn exec(&self, ws: &Path, extra: &[&str], code: &str) -> (Value, Output) {
        let o = self
            .toolgate()
            .args(["exec", "--workspace", ws.to_str().unwrap()])
            .args(extra)
            .args(["--code", code])
            .output()
            .unwrap();
        let env: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
            panic!(
                "no envelope ({e}) for\n{code}\nstdout: {}\nstderr: {}",
                text(&o.stdout),
                text(&o.stderr)
            )
        });
        (env, o)
    }

    /// Every Markdown file `toolgate install` writes for each host into a fresh project.
    fn installed_markdown(&self) -> Vec<(String, String)> {
        let project = self.workspace();
        for host in ["copilot", "claude", "vscode"] {
            self.stdout(&[
                "install",
                host,
                "--target",
                project.to_str().unwrap(),
                "--backend",
                "monty",
            ]);
        }
        let mut files = Vec::new();
        walk(&project, &mut files);
        let md: Vec<(String, String)> = files
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "md"))
            .map(|p| {
                let rel = p.strip_prefix(&project).unwrap().display().to_string();
                (rel, std::fs::read_to_string(&p).unwrap())
            })
            .collect();
        assert!(
            md.iter().any(|(p, _)| p.ends_with("SKILL.md"))
                && md.iter().any(|(p, _)| p.ends_with("references/tools.md"))
                && md.iter().any(|(p, _)| p.ends_with("instructions.md")),
            "{:?}",
            md.iter().map(|(p, _)| p).collect::<Vec<_>>()
        );
        md
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            walk(&p, out);
        } else {
            out.push(p);
        }
    }
}

/// Every fenced ```python block of `md` that is not a block of signatures, with the last
/// non-empty line before it (the line that introduces it).
fn python_examples(md: &str) -> Vec<(String, String)> {
    let lines: Vec<&str> = md.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim() == "```python" {
            let title = lines[..i]
                .iter()
                .rev()
                .find(|l| !l.trim().is_empty())
                .map_or("", |l| l.trim())
                .to_owned();
            let end = (i + 1..lines.len())
                .find(|&j| lines[j].trim() == "```")
                .unwrap_or_else(|| panic!("unclosed ```python block after {title:?}"));
            let code = lines[i + 1..end].join("\n") + "\n";
            if !code.starts_with("def ") {
                out.push((title, code));
            }
            i = end;
        }
        i += 1;
    }
    out
}

/// The words of `text` that name a Python exception type (`FileNotFoundError`, …).
fn exception_names(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| w.len() > 5 && w.ends_with("Error") && w.starts_with(char::is_uppercase))
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_reference_example_prints_what_it_is_expected_to_print() {
    let home = Home::new();
    let ws = home.workspace();
    let base = home.reference(&ws, false);
    let with_plot = home.reference(&ws, true);
    assert!(
        with_plot.starts_with(base.trim_end()),
        "--plot appends to the reference"
    );
    let base_examples = python_examples(&base);
    // (title, code, where it was found, needs a plot)
    let mut all: Vec<(String, String, String, bool)> = Vec::new();
    let mut add = |title: String, code: String, source: &str, plot: bool| {
        if let Some((_, other, first, _)) = all.iter().find(|(t, ..)| *t == title) {
            assert_eq!(
                *other, code,
                "two different examples share the title {title:?} ({first} and {source}); give each its own"
            );
            return;
        }
        all.push((title, code, source.to_owned(), plot));
    };
    for (title, code) in python_examples(&with_plot) {
        let plot = !base_examples.iter().any(|(t, _)| *t == title);
        add(title, code, "tools list --plot --markdown", plot);
    }
    for (path, md) in home.installed_markdown() {
        for (title, code) in python_examples(&md) {
            add(title, code, &path, false);
        }
    }
    let expected = expected();
    let mut seen = BTreeSet::new();
    let mut report = Vec::new();
    for (title, code, source, plot) in &all {
        let Some((stdout, value)) = expected.get(title.as_str()) else {
            panic!(
                "the example {title:?} ({source}) has no expected output: add it to expected() in {}\n{code}",
                file!()
            );
        };
        seen.insert(title.as_str());
        let ws = home.workspace();
        let extra: &[&str] = if *plot {
            &["--plot", PLOT, "--yes"]
        } else {
            &[]
        };
        let (env, _) = home.exec(&ws, extra, code);
        assert_eq!(
            env["success"],
            json!(true),
            "example {title:?} ({source}) failed:\n{code}\n{env:#}"
        );
        assert_eq!(
            env["stdout"].as_str().unwrap(),
            *stdout,
            "example {title:?} ({source}) printed something else:\n{code}"
        );
        assert_eq!(
            env["return_value"], *value,
            "example {title:?} ({source}) returned something else:\n{code}"
        );
        report.push(format!("ran {title:?} from {source}"));
    }
    let stale: Vec<_> = expected.keys().filter(|k| !seen.contains(*k)).collect();
    assert!(
        stale.is_empty(),
        "expected outputs for examples the reference no longer has: {stale:?}"
    );
    eprintln!("{}", report.join("\n"));
}

/// A program that raises it for the reason the reference gives, per documented exception type.
struct Raises {
    ty: &'static str,
    flags: Vec<&'static str>,
    code: &'static str,
    /// A tool's failure, which the program can catch; a limit ends the program instead.
    catchable: bool,
}

fn raising_programs() -> Vec<Raises> {
    let tool = |ty, flags, code| Raises {
        ty,
        flags,
        code,
        catchable: true,
    };
    let limit = |ty, flags, code| Raises {
        ty,
        flags,
        code,
        catchable: false,
    };
    vec![
        tool("FileNotFoundError", vec![], "view(path=\"missing.txt\")"),
        tool(
            "FileExistsError",
            vec![],
            "create(path=\"src/app.py\", file_text=\"x\")",
        ),
        tool("PermissionError", vec![], "view(path=\"../outside.txt\")"),
        tool(
            "ValueError",
            vec![],
            "edit(path=\"src/app.py\", old_str=\"no such text\", new_str=\"x\")",
        ),
        tool(
            "ValueError",
            vec!["--plot", PLOT, "--yes"],
            "set_track_color(color=\"red\", feature_names=[\"No such track\"])",
        ),
        tool(
            "TimeoutError",
            vec![],
            "bash(command=\"sleep 10\", timeout=0.5)",
        ),
        tool("NameError", vec![], "no_such_tool(path=\"x\")"),
        limit(
            "TimeoutError",
            vec!["--timeout", "1"],
            "while True:\n    pass",
        ),
        limit(
            "RuntimeError",
            vec!["--max-tool-calls", "1"],
            "view(path=\"src/app.py\")\nview(path=\"src/app.py\")",
        ),
        limit("MemoryError", vec![], "x = \"a\" * (300 * 1024 * 1024)"),
        limit(
            "RecursionError",
            vec![],
            "def f(n):\n    return f(n + 1)\nf(0)",
        ),
    ]
}

#[test]
fn documented_exception_types_are_the_raised_ones() {
    let home = Home::new();
    let ws = home.workspace();
    let mut documented = exception_names(&home.reference(&ws, true));
    for (_, md) in home.installed_markdown() {
        documented.extend(exception_names(&md));
    }
    let programs = raising_programs();
    let missing: Vec<_> = documented
        .iter()
        .filter(|d| !programs.iter().any(|p| p.ty == d.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "documented exception types without a program that raises them: {missing:?}"
    );
    for p in &programs {
        assert!(
            documented.contains(p.ty),
            "{} is raised but the reference does not document it",
            p.ty
        );
        let (env, o) = home.exec(&home.workspace(), &p.flags, p.code);
        assert_eq!(
            env["error"]["type"],
            json!(p.ty),
            "{}\n{env:#}\n{}",
            p.code,
            text(&o.stderr)
        );
        if p.catchable {
            // The same type is what `except` sees.
            let indented = p.code.replace('\n', "\n    ");
            let caught = format!(
                "try:\n    {indented}\nexcept {}:\n    print(\"caught\")",
                p.ty
            );
            let (env, _) = home.exec(&home.workspace(), &p.flags, &caught);
            assert_eq!(env["stdout"], json!("caught\n"), "{caught}\n{env:#}");
        }
    }
}

/// `list[str]` → ("list", Some("str")); `dict` → ("dict", None).
fn split_annotation(t: &str) -> (&str, Option<&str>) {
    match t.split_once('[') {
        Some((outer, inner)) => (outer, Some(inner.trim_end_matches(']'))),
        None => (t, None),
    }
}

/// A call of each tool that succeeds in the fixture, to compare what it returns with its
/// signature. (tool, extra `exec` flags, call)
fn probes() -> Vec<(&'static str, Vec<&'static str>, &'static str)> {
    let plot = vec!["--plot", PLOT, "--yes"];
    vec![
        ("view", vec![], "view(path=\"src/app.py\")"),
        ("view", vec![], "view(path=\"src\")"),
        (
            "create",
            vec![],
            "create(path=\"new.txt\", file_text=\"x\")",
        ),
        (
            "edit",
            vec![],
            "edit(path=\"notes/todo.md\", old_str=\"docs\", new_str=\"tests\")",
        ),
        ("glob", vec![], "glob(pattern=\"**/*.py\")"),
        ("grep", vec![], "grep(pattern=\"TODO\")"),
        ("bash", vec![], "bash(command=\"echo hi\")"),
        ("sql", vec![], "sql(query=\"select 1 as one\")"),
        // The command tool the test's user config declares.
        ("line_count", vec![], "line_count(path=\"src/app.py\")"),
        (
            "set_track_color",
            plot.clone(),
            "set_track_color(color=\"red\", feature_names=[\"Contact\"])",
        ),
        (
            "track_stats",
            plot,
            "track_stats(feature_names=[\"Contact\"])",
        ),
    ]
}

/// Workspace tools whose successful call needs the internet, which tests do not have.
const NEEDS_NETWORK: &[&str] = &["web_fetch", "github_api"];

#[test]
fn signatures_state_the_types_the_tools_return() {
    let home = Home::new();
    home.user_config(
        "[workspace]\nunconfined_processes = true\n\n[[command_tools]]\nname = \"line_count\"\nargv = [\"wc\", \"-l\", \"{path}\"]\nparameters = { path = { type = \"string\", required = true } }\n",
    );
    let ws = home.workspace();
    let ws_arg = ws.to_str().unwrap();
    let manifest: Vec<Value> = serde_json::from_str(&home.stdout(&[
        "tools",
        "list",
        "--surface",
        "codeact",
        "--json",
        "--plot",
        "--workspace",
        ws_arg,
    ]))
    .unwrap();
    let md = home.reference(&ws, true);
    // `def name(...) -> T:` as the model reads it.
    let signatures: BTreeMap<String, String> = md
        .lines()
        .filter_map(|l| l.strip_prefix("def "))
        .map(|l| {
            let name = l.split('(').next().unwrap().to_owned();
            let ret = l.rsplit_once(") -> ").unwrap().1.trim_end_matches(':');
            (name, ret.to_owned())
        })
        .collect();
    assert_eq!(
        signatures.len(),
        manifest.len(),
        "one signature per listed tool"
    );
    for entry in &manifest {
        let python = entry["python"].as_str().unwrap();
        assert_eq!(
            Some(entry["returns"].as_str().unwrap()),
            signatures.get(python).map(String::as_str),
            "--json and --markdown agree on {python}"
        );
    }
    let probes = probes();
    for entry in manifest.iter().filter(|e| e["category"] == "workspace") {
        let python = entry["python"].as_str().unwrap();
        assert!(
            probes.iter().any(|(t, ..)| *t == python) || NEEDS_NETWORK.contains(&python),
            "no probe calls the workspace tool {python}: add one to probes()"
        );
    }
    for (tool, extra, call) in &probes {
        let annotation = &signatures[*tool];
        let code = format!(
            "r = {call}\n[type(r).__name__, sorted(set(type(x).__name__ for x in r)) if isinstance(r, list) else None]"
        );
        let (env, o) = home.exec(&home.workspace(), extra, &code);
        assert_eq!(
            env["success"],
            json!(true),
            "{code}\n{env:#}\n{}",
            text(&o.stderr)
        );
        let (outer, inner) = split_annotation(annotation);
        assert_eq!(
            env["return_value"][0],
            json!(outer),
            "{tool} is documented `-> {annotation}` but {call} returned another type"
        );
        if let Some(inner) = inner {
            assert_eq!(
                env["return_value"][1],
                json!([inner]),
                "{tool} is documented `-> {annotation}` but the items {call} returned differ"
            );
        }
    }
}

/// A key named in backticks as `key = value` in `message`.
fn named_setting(message: &str) -> Option<String> {
    message
        .split('`')
        .skip(1)
        .step_by(2)
        .find(|s| s.contains(" = "))
        .map(str::to_owned)
}

/// The message that says how to turn a workspace switch on names a key the config accepts, in
/// the table it names, and setting it does turn the switch on.
#[test]
fn the_switches_errors_name_are_keys_the_config_accepts() {
    let home = Home::new();
    let ws = home.workspace();
    let (env, _) = home.exec(&ws, &[], "web_fetch(url=\"https://example.com/\")");
    let message = env["error"]["message"].as_str().unwrap().to_owned();
    assert!(message.contains("disabled"), "{message}");
    let setting = named_setting(&message).unwrap_or_else(|| panic!("names no key: {message}"));
    assert!(message.contains("`[workspace]`"), "{message}");
    home.user_config(&format!(
        "[workspace]\nunconfined_processes = true\n{setting}\n"
    ));
    // Loopback is refused as a private address: the call now gets past the switch.
    let (env, o) = home.exec(&ws, &[], "web_fetch(url=\"http://127.0.0.1:9/\")");
    assert!(o.status.code() == Some(1), "{}", text(&o.stderr));
    let after = env["error"]["message"].as_str().unwrap();
    assert!(
        !after.contains("disabled"),
        "{setting} did not enable it: {after}"
    );
}

/// The generated reference, with and without plot functions, as reviewers see it change.
#[test]
fn the_codeact_reference_snapshot() {
    let home = Home::new();
    let ws = home.workspace();
    let ws_arg = ws.to_str().unwrap();
    // Confinement off: the listing does not depend on the machine's sandboxing.
    let run = |args: &[&str]| {
        let o = home
            .toolgate()
            .env("TOOLGATE_CONFINEMENT", "off")
            .args(args)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o.stderr));
        text(&o.stdout)
    };
    let md = run(&[
        "tools",
        "list",
        "--surface",
        "codeact",
        "--markdown",
        "--plot",
        "--workspace",
        ws_arg,
    ]);
    insta::assert_snapshot!("codeact_reference_plot_markdown", md);
    let manifest: Vec<Value> = serde_json::from_str(&run(&[
        "tools",
        "list",
        "--surface",
        "codeact",
        "--json",
        "--plot",
        "--workspace",
        ws_arg,
    ]))
    .unwrap();
    let summary: Vec<String> = manifest
        .iter()
        .map(|e| {
            let params: Vec<&str> = e["parameters"]["properties"]
                .as_object()
                .map(|p| p.keys().map(String::as_str).collect())
                .unwrap_or_default();
            format!(
                "{}({}) -> {} [{}]",
                e["python"].as_str().unwrap(),
                params.join(", "),
                e["returns"].as_str().unwrap(),
                e["risk"].as_str().unwrap()
            )
        })
        .collect();
    insta::assert_snapshot!("codeact_reference_plot_json", summary.join("\n"));
    let plain = run(&[
        "tools",
        "list",
        "--surface",
        "codeact",
        "--plot",
        "--workspace",
        ws_arg,
    ]);
    assert!(
        plain.contains("set_track_color") && plain.contains("track_stats"),
        "{plain}"
    );
    let err = home
        .toolgate()
        .args(["tools", "list", "--surface", "debrief", "--plot"])
        .output()
        .unwrap();
    assert!(
        !err.status.success() && text(&err.stderr).contains("--surface codeact"),
        "{}",
        text(&err.stderr)
    );
}
