//! Every `toolgate …` command in the README's and `docs/*.md`'s fenced `sh`/`bash`/`console`
//! blocks (the README links the reference pages in docs/; a command moved there is still run) runs: against a
//! temporary HOME / data dir (the demo data is generated there on first use), in a temporary
//! working directory holding the sample files the commands name. Optional parts written as
//! `[…]` are left out, so the command's minimal form runs. A command that cannot run in a test
//! must be in [`SKIP`] with the reason; a README command that is neither runnable nor listed
//! fails the test, and so does a stale entry in [`SKIP`].
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(clippy::disallowed_methods)]

use std::fs;
use std::path::Path;
use std::process::Command;

/// Command prefixes (after `[…]` and `# comments` are removed) that are not run, and why.
const SKIP: &[(&str, &str)] = &[
    (
        "curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs",
        "installs Rust with rustup (the set-up; the test runs under the installed toolchain)",
    ),
    (". \"$HOME/.cargo/env\"", "the set-up's shell environment"),
    (
        "sudo apt-get update",
        "system packages of the set-up (.ci/run installs them)",
    ),
    ("git clone", "the set-up's checkout"),
    (
        "eval/local-models.sh",
        "the local-model evaluation (docs/local-model-eval.md): minutes per model",
    ),
    (
        "LEVERS_ROWS=",
        "the local-model evaluation with its settings (docs/local-model-eval.md)",
    ),
    (
        "BACKEND=in-process",
        "the local-model evaluation in process (docs/local-model-eval.md)",
    ),
    (
        "python3 eval/compare-backends.py",
        "compares two evaluation runs' outputs (docs/local-model-eval.md)",
    ),
    (
        "bash .ci/install-test-clients",
        "installs the tests' clients (.ci/run runs it)",
    ),
    (
        "cargo install",
        "installs into ~/.cargo; the test runs the built binary",
    ),
    (
        "cargo run --release",
        "a release build (and `serve` never exits)",
    ),
    ("cargo test", "the test suite itself"),
    ("cargo bench", "benchmarks take minutes"),
    (
        "claude plugin",
        "needs the Claude Code CLI (tested in hosts_real_clis)",
    ),
    (
        "copilot plugin",
        "needs the Copilot CLI (tested in hosts_real_clis)",
    ),
    ("toolgate import FILE.rep", "FILE.rep… is a placeholder"),
    (
        "toolgate model install",
        "downloads a 400 MB model from PyPI (tested against local servers in model_install.rs)",
    ),
    (
        "toolgate mcp",
        "a stdio server that waits for a client (tested in mcp_*.rs)",
    ),
    (
        "toolgate serve",
        "an HTTP server that never exits (tested in serve_*.rs)",
    ),
    (
        "TOOLGATE_TOKEN=… toolgate serve",
        "HTTP servers on a shared PostgreSQL that never exit (tested in serve_state.rs)",
    ),
    (
        "toolgate chat",
        "needs a model server (tested in agent_chat)",
    ),
    ("toolgate eval probe", "needs a model server"),
    (
        "toolgate eval arms",
        "reads crates/eval/arms-sample relative to the repository (tested in eval_cli)",
    ),
    (
        "toolgate import --store https://stac.example",
        "needs a STAC API (tested in stac_api_cli.rs against pgstac)",
    ),
    (
        "toolgate catalog load --store https://stac.example",
        "needs a STAC API (tested in stac_api_cli.rs against pgstac)",
    ),
    (
        "toolgate catalog search --store https://stac.example",
        "needs a STAC API (tested in stac_api_cli.rs against pgstac)",
    ),
    (
        "toolgate plot summary --store https://stac.example",
        "needs a STAC API (tested in stac_api_cli.rs against pgstac)",
    ),
    (
        "toolgate calc range-calc input.json",
        "input.json is a placeholder",
    ),
];

/// Exit statuses other than 0 that the README documents for a command. Without `[--yes]` (the
/// test runs the shortest form, with no terminal to ask on) an edit of the demo plot — a fresh
/// copy in the test's data dir — is declined: exit 4, "the status codes every command uses".
const STATUS: &[(&str, i32)] = &[("toolgate plot run", 4), ("toolgate exec --plot", 4)];

fn strip_optional(line: &str) -> String {
    let mut out = String::new();
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => {
                quote = None;
                if depth == 0 {
                    out.push(c);
                }
            }
            (Some(_), c) => {
                if depth == 0 {
                    out.push(c);
                }
            }
            (None, '\'' | '"') => {
                quote = Some(c);
                if depth == 0 {
                    out.push(c);
                }
            }
            (None, '[') => depth += 1,
            (None, ']') => depth = depth.saturating_sub(1),
            (None, '#') if depth == 0 && (out.is_empty() || out.ends_with(' ')) => break,
            (None, c) => {
                if depth == 0 {
                    out.push(c);
                }
            }
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The commands of the README's shell blocks, one per line (indented lines continue the previous).
fn readme_commands(readme: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut in_block = false;
    for line in readme.lines() {
        let t = line.trim_start();
        if let Some(info) = t.strip_prefix("```") {
            if in_block {
                in_block = false;
            } else {
                in_block = matches!(info.trim(), "sh" | "bash" | "console");
            }
            continue;
        }
        if !in_block || t.is_empty() {
            continue;
        }
        let t = t.strip_prefix("$ ").unwrap_or(t);
        if line.starts_with(' ') && !out.is_empty() {
            let last = out.len() - 1;
            out[last] = format!("{} {t}", out[last]);
        } else {
            out.push(t.to_string());
        }
    }
    out.into_iter()
        .map(|c| strip_optional(&c))
        .filter(|c| !c.is_empty())
        .collect()
}

/// Sample files the commands name (`DIR` is the README's workspace placeholder).
fn seed(cwd: &Path) {
    let rep = Path::new(env!("CARGO_MANIFEST_DIR")).join("../rep/tests/fixtures/rep/valid");
    for f in ["boat1.rep", "boat2.rep"] {
        fs::copy(rep.join(f), cwd.join(f)).unwrap();
    }
    fs::create_dir_all(cwd.join("DIR")).unwrap();
    fs::write(cwd.join("DIR/notes.txt"), "TODO: one\nTODO: two\n").unwrap();
    let agent = "---\nname: reviewer\ndescription: Reviews code\ntools: Read, Grep, Glob, Bash\n---\nReview.\n";
    fs::create_dir_all(cwd.join("agents")).unwrap();
    fs::write(cwd.join("agents/reviewer.md"), agent).unwrap();
    fs::create_dir_all(cwd.join(".claude/agents")).unwrap();
    fs::write(cwd.join(".claude/agents/reviewer.md"), agent).unwrap();
    let plugin = cwd.join("path/to/claude-plugin");
    fs::create_dir_all(plugin.join(".claude-plugin")).unwrap();
    fs::create_dir_all(plugin.join("agents")).unwrap();
    fs::write(
        plugin.join(".claude-plugin/plugin.json"),
        r#"{"name": "team-tools", "version": "0.1.0", "description": "d"}"#,
    )
    .unwrap();
    fs::write(plugin.join("agents/reviewer.md"), agent).unwrap();
    let copilot = "---\nname: reviewer\ndescription: Reviews code\ntools: [read, search, execute]\n---\nReview.\n";
    fs::create_dir_all(cwd.join(".github/agents")).unwrap();
    fs::write(cwd.join(".github/agents/reviewer.agent.md"), copilot).unwrap();
    fs::create_dir_all(cwd.join(".opencode/agent")).unwrap();
    fs::write(
        cwd.join(".opencode/agent/reviewer.md"),
        "---\ndescription: Reviews code\nmode: subagent\npermission:\n  edit: deny\n---\nReview.\n",
    )
    .unwrap();
}

#[test]
fn every_readme_command_runs_or_is_skipped_with_a_reason() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut pages = vec![root.join("README.md")];
    let mut docs: Vec<_> = fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    let mut commands = Vec::new();
    for page in &pages {
        commands.extend(readme_commands(&fs::read_to_string(page).unwrap()));
    }
    // The README keeps the two commands at the top (the rest may live in docs/).
    let top = readme_commands(&fs::read_to_string(&pages[0]).unwrap());
    for want in ["cargo run --release", "cargo test --workspace"] {
        assert!(
            top.iter().any(|c| c.starts_with(want)),
            "README lacks `{want}`: {top:?}"
        );
    }
    assert!(commands.len() > 20, "{commands:?}");
    let home = tempfile::tempdir().unwrap();
    let cwd = home.path().join("project");
    fs::create_dir_all(&cwd).unwrap();
    seed(&cwd);
    let bin = env!("CARGO_BIN_EXE_toolgate");
    let mut used_skips = Vec::new();
    let mut failures = Vec::new();
    let mut ran = 0;
    for cmd in &commands {
        if let Some((prefix, _why)) = SKIP.iter().find(|(p, _)| cmd.starts_with(p)) {
            used_skips.push(*prefix);
            continue;
        }
        let Some(rest) = cmd.strip_prefix("toolgate ") else {
            failures.push(format!("`{cmd}`: not a toolgate command and not in SKIP"));
            continue;
        };
        let dir = home.path();
        let out = Command::new("sh")
            .arg("-c")
            .arg(format!("'{bin}' {rest}"))
            .current_dir(&cwd)
            .env("HOME", dir)
            .env("TOOLGATE_CONFIG", dir.join("config/toolgate/config.toml"))
            .env("XDG_CONFIG_HOME", dir.join("config"))
            .env("TOOLGATE_DATA_DIR", dir.join("data"))
            .env("TOOLGATE_TELEMETRY", dir.join("telemetry.jsonl"))
            .env_remove("TOOLGATE_MODE")
            .env_remove("CODEACT_MODE")
            .output()
            .unwrap();
        ran += 1;
        let want = STATUS
            .iter()
            .find(|(p, _)| cmd.starts_with(p))
            .map_or(0, |(_, s)| *s);
        if out.status.code() != Some(want) {
            failures.push(format!(
                "`{cmd}`: exit {:?}, want {want}\nstdout: {}\nstderr: {}",
                out.status.code(),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    for (prefix, _) in SKIP {
        if !used_skips.contains(prefix) {
            failures.push(format!(
                "SKIP entry `{prefix}` matches no README command; remove it"
            ));
        }
    }
    assert!(ran >= 10, "only {ran} commands ran");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn optional_parts_and_comments_are_stripped() {
    assert_eq!(
        strip_optional("toolgate tools list [--json | --markdown]   # the manifest"),
        "toolgate tools list"
    );
    assert_eq!(
        strip_optional("toolgate exec --code 'a[0] # not a comment'"),
        "toolgate exec --code 'a[0] # not a comment'"
    );
}
