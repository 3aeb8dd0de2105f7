#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The real host CLIs (Copilot CLI and Claude Code from npm, `.ci/install-test-clients`) judge
//! what `toolgate install` writes: they add and install the plugin offline with a scratch HOME,
//! and their own reports must match what toolgate wrote. Deliberately broken plugins must be
//! rejected or under-reported. When a host's wording changes, the assertion shows its output.
//!
//! A missing client skips the test loudly, unless TOOLGATE_REQUIRE_TEST_CLIENTS=1 (CI).
#![allow(clippy::disallowed_methods)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use toolgate_test_support::tools_dir;

const BIN: &str = env!("CARGO_BIN_EXE_toolgate");

/// The host CLI, or `None` (test skipped) when it is not installed.
fn client(name: &str) -> Option<PathBuf> {
    let p = tools_dir().join("hosts/node_modules/.bin").join(name);
    if p.is_file() {
        return Some(p);
    }
    let msg = format!(
        "host CLI `{name}` not found at {}: run .ci/install-test-clients",
        p.display()
    );
    if std::env::var("TOOLGATE_REQUIRE_TEST_CLIENTS").as_deref() == Ok("1") {
        panic!("{msg}");
    }
    eprintln!("\n!!!!!!!! SKIPPED: {msg} !!!!!!!!\n");
    None
}

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
    cmd: String,
}

impl Out {
    fn all(&self) -> String {
        format!(
            "$ {}\n(exit {})\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.cmd, self.code, self.stdout, self.stderr
        )
    }
    fn ok(self) -> Out {
        assert_eq!(self.code, 0, "host command failed:\n{}", self.all());
        self
    }
}

/// A scratch HOME with a project folder in it.
struct Scratch {
    _dir: tempfile::TempDir,
    home: PathBuf,
    repo: PathBuf,
    /// PATH of every command: `toolgate` (a link to the binary under test, as a portable
    /// install expects it), the host CLIs, git and node.
    path: std::ffi::OsString,
}

impl Scratch {
    fn new() -> Scratch {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().canonicalize().unwrap().join("home");
        let repo = dir.path().canonicalize().unwrap().join("repo");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&repo).unwrap();
        let bin = dir.path().canonicalize().unwrap().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::os::unix::fs::symlink(std::fs::canonicalize(BIN).unwrap(), bin.join("toolgate"))
            .unwrap();
        let clients = tools_dir().join("hosts/node_modules/.bin");
        let mut dirs = vec![bin, clients];
        dirs.extend(
            std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
                .filter(|d| !d.join("claude").exists() && !d.join("copilot").exists()),
        );
        let path = std::env::join_paths(dirs).unwrap();
        Scratch {
            _dir: dir,
            home,
            repo,
            path,
        }
    }

    fn cmd(&self, program: &Path, cwd: &Path, args: &[&str]) -> Out {
        let o = Command::new(program)
            .args(args)
            .current_dir(cwd)
            .env("PATH", &self.path)
            .env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", self.home.join(".config"))
            .env("XDG_DATA_HOME", self.home.join(".local/share"))
            .env("XDG_STATE_HOME", self.home.join(".local/state"))
            .env("XDG_CACHE_HOME", self.home.join(".cache"))
            .env_remove("TOOLGATE_DATA_DIR")
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("COPILOT_HOME")
            .env("DISABLE_TELEMETRY", "1")
            .env("DISABLE_AUTOUPDATER", "1")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        Out {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
            cmd: format!("{} {}", program.display(), args.join(" ")),
        }
    }

    fn toolgate(&self, args: &[&str]) -> Out {
        self.cmd(Path::new(BIN), &self.repo, args).ok()
    }
}

fn version(s: &Scratch, cli: &Path) -> String {
    let v = s.cmd(cli, &s.repo, &["--version"]).ok();
    let line = v.stdout.lines().next().unwrap_or("").to_owned();
    eprintln!(
        "host CLI {}: {line}",
        cli.file_name().unwrap().to_string_lossy()
    );
    line
}

fn files(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.insert(
                    p.strip_prefix(root).unwrap().to_path_buf(),
                    std::fs::read(&p).unwrap(),
                );
            }
        }
    }
    out
}

/// Skills toolgate wrote into a plugin folder: `skills/<name>/SKILL.md`.
fn skills_written(plugin: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(plugin.join("skills"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("SKILL.md").is_file())
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// `Installed N skill(s).` from Copilot's install output.
fn copilot_installed_skills(out: &Out) -> usize {
    let text = &out.stdout;
    let i = text.find("Installed ").unwrap_or_else(|| {
        panic!(
            "no \"Installed N skill(s)\" in Copilot's output:\n{}",
            out.all()
        )
    });
    let rest = &text[i + "Installed ".len()..];
    let n: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let tail = &rest[n.len()..];
    assert!(
        tail.starts_with(" skill.") || tail.starts_with(" skills."),
        "unexpected wording after the skill count:\n{}",
        out.all()
    );
    n.parse().unwrap()
}

fn json(out: &Out) -> serde_json::Value {
    serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("host printed no JSON ({e}):\n{}", out.all()))
}

fn copilot_plugin<'a>(list: &'a serde_json::Value, name: &str) -> Option<&'a serde_json::Value> {
    list.as_array().unwrap().iter().find(|p| p["name"] == name)
}

#[test]
fn copilot_installs_the_marketplace_plugin_and_uninstalls_cleanly() {
    let Some(copilot) = client("copilot") else {
        return;
    };
    let s = Scratch::new();
    assert_eq!(version(&s, &copilot), "GitHub Copilot CLI 1.0.102.");
    s.toolgate(&["install", "copilot"]);
    let plugin = s.repo.join(".github/plugin/toolgate");
    let skills = skills_written(&plugin);
    assert_eq!(
        skills,
        [
            "codeact-install",
            "codeact-install-monty",
            "toolgate-codeact"
        ],
        "no hyperlight install skill from a binary that cannot run hyperlight"
    );
    let written = files(&s.repo);
    let repo = s.repo.to_str().unwrap();
    let add = s
        .cmd(&copilot, &s.repo, &["plugin", "marketplace", "add", repo])
        .ok();
    assert!(
        add.stdout
            .contains("Marketplace \"toolgate\" added successfully."),
        "{}",
        add.all()
    );
    let install = s
        .cmd(
            &copilot,
            &s.repo,
            &["plugin", "install", "toolgate@toolgate"],
        )
        .ok();
    assert!(
        install
            .stdout
            .contains("Plugin \"toolgate\" installed successfully."),
        "{}",
        install.all()
    );
    assert_eq!(
        copilot_installed_skills(&install),
        skills.len(),
        "{}",
        install.all()
    );
    let list = s.cmd(&copilot, &s.repo, &["plugin", "list", "--json"]).ok();
    let entry = copilot_plugin(&json(&list), "toolgate")
        .unwrap_or_else(|| panic!("{}", list.all()))
        .clone();
    assert_eq!(entry["enabled"], true, "{}", list.all());
    assert_eq!(entry["marketplace"], "toolgate", "{}", list.all());
    assert_eq!(
        entry["version"],
        env!("CARGO_PKG_VERSION"),
        "{}",
        list.all()
    );
    // The host sees every skill toolgate wrote, from the plugin.
    let sk = s.cmd(&copilot, &s.repo, &["skill", "list", "--json"]).ok();
    let mut from_plugin: Vec<String> = json(&sk)
        .as_array()
        .unwrap()
        .iter()
        .filter(|k| k["source"] == "plugin" && k["enabled"] == true)
        .map(|k| k["name"].as_str().unwrap().to_owned())
        .collect();
    from_plugin.sort();
    assert_eq!(from_plugin, skills, "{}", sk.all());
    // And loads the project instructions.
    let ins = s
        .cmd(&copilot, &s.repo, &["instruction", "list", "--json"])
        .ok();
    let loaded: Vec<String> = json(&ins)
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["sourcePath"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        loaded.contains(&".github/instructions/codeact.instructions.md".to_owned()),
        "{}",
        ins.all()
    );
    // Uninstall through the host: nothing of the plugin is left enabled, known or copied.
    let un = s
        .cmd(
            &copilot,
            &s.repo,
            &["plugin", "uninstall", "toolgate@toolgate"],
        )
        .ok();
    let rm = s
        .cmd(
            &copilot,
            &s.repo,
            &["plugin", "marketplace", "remove", "toolgate"],
        )
        .ok();
    let list = s.cmd(&copilot, &s.repo, &["plugin", "list", "--json"]).ok();
    assert!(
        copilot_plugin(&json(&list), "toolgate").is_none(),
        "{}\n{}\n{}",
        un.all(),
        rm.all(),
        list.all()
    );
    let settings: serde_json::Value =
        serde_json::from_slice(&std::fs::read(s.home.join(".copilot/settings.json")).unwrap())
            .unwrap();
    assert!(
        settings["extraKnownMarketplaces"].get("toolgate").is_none(),
        "{settings}"
    );
    assert_ne!(
        settings["enabledPlugins"]["toolgate@toolgate"], true,
        "{settings}"
    );
    let installed = s.home.join(".copilot/installed-plugins");
    if installed.is_dir() {
        let left: Vec<_> = files(&installed)
            .into_keys()
            .filter(|p| p.to_string_lossy().contains("toolgate"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }
    assert_eq!(files(&s.repo), written, "the host changed the plugin files");
    s.toolgate(&["uninstall", "copilot"]);
    assert!(files(&s.repo).is_empty());
}

#[test]
fn copilot_loads_the_plugin_dir_directly_and_the_global_instructions() {
    let Some(copilot) = client("copilot") else {
        return;
    };
    let s = Scratch::new();
    version(&s, &copilot);
    s.toolgate(&["install", "copilot"]);
    let plugin = s.repo.join(".github/plugin/toolgate");
    let p = plugin.to_str().unwrap();
    let list = s
        .cmd(
            &copilot,
            &s.home,
            &["--plugin-dir", p, "plugin", "list", "--json"],
        )
        .ok();
    let entry = copilot_plugin(&json(&list), "toolgate")
        .unwrap_or_else(|| panic!("{}", list.all()))
        .clone();
    assert_eq!(entry["enabled"], true, "{}", list.all());
    assert_eq!(entry["source"], "external", "{}", list.all());
    assert_eq!(
        entry["version"],
        env!("CARGO_PKG_VERSION"),
        "{}",
        list.all()
    );
    // Global install: Copilot CLI must list the instructions as a personal source (the
    // reference's ~/.copilot/codeact.instructions.md was never loaded).
    s.toolgate(&["install", "copilot", "--global"]);
    let elsewhere = s.home.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let ins = s
        .cmd(&copilot, &elsewhere, &["instruction", "list", "--json"])
        .ok();
    let want = s.home.join(".copilot/instructions/codeact.instructions.md");
    let found = json(&ins)
        .as_array()
        .unwrap()
        .iter()
        .any(|i| i["sourcePath"] == want.to_str().unwrap() && i["location"] == "user");
    assert!(
        found,
        "Copilot does not load {}:\n{}",
        want.display(),
        ins.all()
    );
    // The global marketplace installs too.
    let mroot = s.home.join(".local/share/toolgate/hosts/copilot");
    s.cmd(
        &copilot,
        &s.home,
        &["plugin", "marketplace", "add", mroot.to_str().unwrap()],
    )
    .ok();
    let install = s
        .cmd(
            &copilot,
            &s.home,
            &["plugin", "install", "toolgate@toolgate"],
        )
        .ok();
    assert_eq!(copilot_installed_skills(&install), 3, "{}", install.all());
}

#[test]
fn copilot_rejects_or_under_reports_broken_plugins() {
    let Some(copilot) = client("copilot") else {
        return;
    };
    let s = Scratch::new();
    version(&s, &copilot);
    s.toolgate(&["install", "copilot"]);
    let plugin = s.repo.join(".github/plugin/toolgate");
    // A missing skill file: the host installs one skill fewer than toolgate meant to write.
    std::fs::remove_file(plugin.join("skills/codeact-install/SKILL.md")).unwrap();
    // Malformed skill frontmatter: the skill is not loaded.
    std::fs::write(
        plugin.join("skills/codeact-install-monty/SKILL.md"),
        "---\nname: codeact-install-monty\ndescription: [unclosed\n---\nbody\n",
    )
    .unwrap();
    let p = plugin.to_str().unwrap();
    let sk = s
        .cmd(
            &copilot,
            &s.home,
            &["--plugin-dir", p, "skill", "list", "--json"],
        )
        .ok();
    let names: Vec<String> = json(&sk)
        .as_array()
        .unwrap()
        .iter()
        .filter(|k| k["source"] == "plugin")
        .map(|k| k["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        !names.contains(&"codeact-install".to_owned()),
        "{}",
        sk.all()
    );
    assert!(
        !names.contains(&"codeact-install-monty".to_owned()),
        "{}",
        sk.all()
    );
    assert!(
        names.contains(&"toolgate-codeact".to_owned()),
        "{}",
        sk.all()
    );
    s.cmd(
        &copilot,
        &s.repo,
        &["plugin", "marketplace", "add", s.repo.to_str().unwrap()],
    )
    .ok();
    let install = s
        .cmd(
            &copilot,
            &s.repo,
            &["plugin", "install", "toolgate@toolgate"],
        )
        .ok();
    assert_eq!(copilot_installed_skills(&install), 2, "{}", install.all());
    // A broken plugin.json: a direct install is refused, and --plugin-dir loses the manifest's
    // version.
    std::fs::write(plugin.join("plugin.json"), "{\"name\": \"toolgate\", ").unwrap();
    let direct = s.cmd(&copilot, &s.home, &["plugin", "install", p]);
    assert_ne!(direct.code, 0, "{}", direct.all());
    assert!(
        direct.all().contains("Failed to parse plugin.json"),
        "{}",
        direct.all()
    );
    let list = s
        .cmd(
            &copilot,
            &s.home,
            &["--plugin-dir", p, "plugin", "list", "--json"],
        )
        .ok();
    let listed = json(&list);
    let entry = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "toolgate" && p["source"] == "external")
        .unwrap_or_else(|| panic!("{}", list.all()));
    assert!(entry.get("version").is_none(), "{}", list.all());
}

/// `claude plugin details` → (section name → the rest of its line).
fn claude_inventory(out: &Out) -> BTreeMap<String, String> {
    let text = &out.stdout;
    let start = text
        .find("Component inventory")
        .unwrap_or_else(|| panic!("no component inventory:\n{}", out.all()));
    let mut map = BTreeMap::new();
    for line in text[start..].lines().skip(1) {
        let line = line.trim();
        if line.is_empty() {
            break;
        }
        let (name, rest) = line
            .split_once(" (")
            .unwrap_or_else(|| panic!("unexpected inventory line {line:?}:\n{}", out.all()));
        map.insert(name.to_owned(), format!("({rest}"));
    }
    map
}

fn always_on_tokens(out: &Out) -> u32 {
    let text = &out.stdout;
    let i = text
        .find("Always-on:")
        .unwrap_or_else(|| panic!("no \"Always-on:\" cost:\n{}", out.all()));
    let rest = text[i + "Always-on:".len()..].trim_start();
    let rest = rest.strip_prefix('~').unwrap_or(rest);
    let n: String = rest.chars().take_while(char::is_ascii_digit).collect();
    assert!(
        rest[n.len()..].starts_with(" tok"),
        "unexpected cost wording:\n{}",
        out.all()
    );
    n.parse().unwrap()
}

#[test]
fn claude_reports_exactly_the_components_toolgate_wrote() {
    let Some(claude) = client("claude") else {
        return;
    };
    let s = Scratch::new();
    assert_eq!(version(&s, &claude), "2.1.332 (Claude Code)");
    s.toolgate(&["install", "claude"]);
    let plugin = s.repo.join(".claude-plugin/toolgate");
    let skills = skills_written(&plugin);
    let agents: Vec<String> = std::fs::read_dir(plugin.join("agents"))
        .unwrap()
        .map(|e| {
            e.unwrap()
                .path()
                .file_stem()
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    let validate = s
        .cmd(
            &claude,
            &s.repo,
            &["plugin", "validate", plugin.to_str().unwrap()],
        )
        .ok();
    assert!(
        validate.stdout.contains("✔ Validation passed"),
        "{}",
        validate.all()
    );
    let add = s
        .cmd(
            &claude,
            &s.repo,
            &["plugin", "marketplace", "add", s.repo.to_str().unwrap()],
        )
        .ok();
    assert!(
        add.all()
            .contains("Successfully added marketplace: toolgate"),
        "{}",
        add.all()
    );
    let install = s
        .cmd(
            &claude,
            &s.repo,
            &["plugin", "install", "toolgate@toolgate"],
        )
        .ok();
    assert!(
        install
            .all()
            .contains("Successfully installed plugin: toolgate@toolgate"),
        "{}",
        install.all()
    );
    let details = s
        .cmd(
            &claude,
            &s.repo,
            &["plugin", "details", "toolgate@toolgate"],
        )
        .ok();
    let inv = claude_inventory(&details);
    let expect = |name: &str, items: &[String]| {
        let line = format!(
            "({}){}",
            items.len(),
            if items.is_empty() {
                String::new()
            } else {
                format!("  {}", items.join(" "))
            }
        );
        assert_eq!(inv.get(name), Some(&line), "{name}:\n{}", details.all());
    };
    expect("Skills", &skills);
    expect("Agents", &agents);
    assert!(
        inv.get("Hooks")
            .is_some_and(|h| h.starts_with("(1)  PreToolUse")),
        "{}",
        details.all()
    );
    assert!(
        inv.get("MCP servers")
            .is_some_and(|m| m.starts_with("(1)  toolgate ")),
        "{}",
        details.all()
    );
    assert_eq!(
        inv.get("LSP servers").map(String::as_str),
        Some("(0)"),
        "{}",
        details.all()
    );
    let cost = always_on_tokens(&details);
    eprintln!("Claude Code projected always-on cost of the toolgate plugin: ~{cost} tok");
    assert!(
        cost <= 300,
        "always-on cost {cost} > 300 tokens:\n{}",
        details.all()
    );
    // Uninstall through the host leaves nothing behind.
    s.cmd(
        &claude,
        &s.repo,
        &["plugin", "uninstall", "toolgate@toolgate"],
    )
    .ok();
    s.cmd(
        &claude,
        &s.repo,
        &["plugin", "marketplace", "remove", "toolgate"],
    )
    .ok();
    let list = s.cmd(&claude, &s.repo, &["plugin", "list", "--json"]).ok();
    assert!(!list.stdout.contains("toolgate"), "{}", list.all());
    // Claude Code keeps the cached copy for a while, marked `.orphaned_at` for its own garbage
    // collection; nothing else may remain.
    let cache = s.home.join(".claude/plugins/cache/toolgate");
    if cache.is_dir() {
        for version in std::fs::read_dir(cache.join("toolgate")).unwrap() {
            let v = version.unwrap().path();
            assert!(
                v.join(".orphaned_at").is_file(),
                "{} is still live after uninstall",
                v.display()
            );
        }
    }
    let installed: serde_json::Value = serde_json::from_slice(
        &std::fs::read(s.home.join(".claude/plugins/installed_plugins.json")).unwrap(),
    )
    .unwrap();
    assert!(
        !installed.to_string().contains("toolgate@toolgate"),
        "{installed}"
    );
    s.toolgate(&["uninstall", "claude"]);
    assert!(files(&s.repo).is_empty());
}

#[test]
fn claude_rejects_or_under_reports_broken_plugins() {
    let Some(claude) = client("claude") else {
        return;
    };
    let s = Scratch::new();
    version(&s, &claude);
    s.toolgate(&["install", "claude"]);
    let plugin = s.repo.join(".claude-plugin/toolgate");
    let p = plugin.to_str().unwrap().to_owned();
    // Malformed agent frontmatter: the validator fails.
    let agent = plugin.join("agents/codeact.md");
    let good_agent = std::fs::read_to_string(&agent).unwrap();
    std::fs::write(
        &agent,
        good_agent.replacen("description: ", "description: x: y: z\n  - bad\nx: ", 1),
    )
    .unwrap();
    let v = s.cmd(&claude, &s.repo, &["plugin", "validate", &p]);
    assert_ne!(v.code, 0, "{}", v.all());
    assert!(
        v.all().contains("YAML frontmatter failed to parse"),
        "{}",
        v.all()
    );
    std::fs::write(&agent, good_agent).unwrap();
    // A missing skill file: installed, but the host reports no skill.
    std::fs::remove_file(plugin.join("skills/toolgate-codeact/SKILL.md")).unwrap();
    s.cmd(
        &claude,
        &s.repo,
        &["plugin", "marketplace", "add", s.repo.to_str().unwrap()],
    )
    .ok();
    s.cmd(
        &claude,
        &s.repo,
        &["plugin", "install", "toolgate@toolgate"],
    )
    .ok();
    let details = s
        .cmd(
            &claude,
            &s.repo,
            &["plugin", "details", "toolgate@toolgate"],
        )
        .ok();
    assert_eq!(
        claude_inventory(&details).get("Skills").map(String::as_str),
        Some("(0)"),
        "{}",
        details.all()
    );
    s.cmd(
        &claude,
        &s.repo,
        &["plugin", "uninstall", "toolgate@toolgate"],
    )
    .ok();
    // A broken plugin.json: validation and installation fail.
    std::fs::write(plugin.join(".claude-plugin/plugin.json"), "{\"name\": ").unwrap();
    let v = s.cmd(&claude, &s.repo, &["plugin", "validate", &p]);
    assert_ne!(v.code, 0, "{}", v.all());
    assert!(v.all().contains("Invalid JSON syntax"), "{}", v.all());
    let i = s.cmd(
        &claude,
        &s.repo,
        &["plugin", "install", "toolgate@toolgate"],
    );
    assert_ne!(i.code, 0, "{}", i.all());
}

fn git(s: &Scratch, cwd: &Path, args: &[&str]) -> Out {
    let mut all = vec![
        "-c",
        "user.name=toolgate test",
        "-c",
        "user.email=test@example.invalid",
        "-c",
        "init.defaultBranch=main",
    ];
    all.extend_from_slice(args);
    s.cmd(Path::new("git"), cwd, &all).ok()
}

/// A project install committed into a fresh repository and cloned to another path by another
/// user (another HOME): no file names the first checkout or this machine's binary, the clone's
/// host registers the committed plugin and runs it, and `doctor` in the clone is clean.
fn commit_and_clone(s: &Scratch, host: &str) -> (PathBuf, PathBuf) {
    s.toolgate(&["install", host]);
    git(s, &s.repo, &["init", "-q"]);
    git(s, &s.repo, &["add", "-A"]);
    git(s, &s.repo, &["commit", "-q", "-m", "toolgate install"]);
    let root = s.home.parent().unwrap().to_path_buf();
    let clone = root.join("elsewhere/clone");
    std::fs::create_dir_all(clone.parent().unwrap()).unwrap();
    git(
        s,
        &root,
        &[
            "clone",
            "-q",
            s.repo.to_str().unwrap(),
            clone.to_str().unwrap(),
        ],
    );
    let repo = s.repo.to_str().unwrap();
    let bin = std::fs::canonicalize(BIN).unwrap();
    for (p, bytes) in files(&clone) {
        if p.starts_with(".git") {
            continue;
        }
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            !text.contains(repo),
            "{} names the first checkout",
            p.display()
        );
        assert!(
            !text.contains(bin.to_str().unwrap()),
            "{} names this machine's binary",
            p.display()
        );
    }
    let teammate = root.join("teammate");
    std::fs::create_dir_all(&teammate).unwrap();
    (clone, teammate)
}

fn as_user(s: &Scratch, home: &Path) -> Scratch {
    Scratch {
        _dir: tempfile::tempdir().unwrap(),
        home: home.to_path_buf(),
        repo: s.repo.clone(),
        path: s.path.clone(),
    }
}

#[test]
fn claude_project_install_works_from_a_clone_and_uninstall_leaves_the_host_clean() {
    let Some(claude) = client("claude") else {
        return;
    };
    let s = Scratch::new();
    version(&s, &claude);
    let (clone, teammate) = commit_and_clone(&s, "claude");
    let t = as_user(&s, &teammate);
    let c = clone.to_str().unwrap();
    // What `toolgate install claude` tells the user to run (project scope).
    t.cmd(
        &claude,
        &clone,
        &["plugin", "marketplace", "add", c, "--scope", "project"],
    )
    .ok();
    t.cmd(
        &claude,
        &clone,
        &[
            "plugin",
            "install",
            "toolgate@toolgate",
            "--scope",
            "project",
        ],
    )
    .ok();
    let details = t
        .cmd(&claude, &clone, &["plugin", "details", "toolgate@toolgate"])
        .ok();
    let inv = claude_inventory(&details);
    assert!(
        inv.get("Hooks")
            .is_some_and(|h| h.starts_with("(1)  PreToolUse")),
        "{}",
        details.all()
    );
    let list = json(&t.cmd(&claude, &clone, &["plugin", "list", "--json"]).ok());
    let entry = list
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == "toolgate@toolgate")
        .unwrap_or_else(|| panic!("{list}"));
    assert_eq!(entry["enabled"], true, "{entry}");
    assert_eq!(entry["scope"], "project", "{entry}");
    // The host starts the plugin's MCP server from the clone: `toolgate` on PATH.
    let health = t.cmd(&claude, &clone, &["mcp", "list"]).ok();
    assert!(
        health.stdout.contains(
            "plugin:toolgate:toolgate: toolgate mcp --surface all --workspace . - ✔ Connected"
        ),
        "{}",
        health.all()
    );
    let doctor = t.cmd(Path::new(BIN), &clone, &["doctor"]);
    assert_eq!(doctor.code, 0, "{}", doctor.all());
    assert!(
        doctor
            .stdout
            .contains("ok      install claude (project): runs toolgate"),
        "{}",
        doctor.all()
    );
    // Uninstall from the clone takes the plugin out of Claude Code too.
    let un = t.cmd(Path::new(BIN), &clone, &["uninstall", "claude"]).ok();
    assert!(
        un.stdout
            .contains("ran       claude plugin uninstall toolgate@toolgate --scope project"),
        "{}",
        un.all()
    );
    assert!(
        un.stdout
            .contains("ran       claude plugin marketplace remove toolgate"),
        "{}",
        un.all()
    );
    let list = t.cmd(&claude, &clone, &["plugin", "list", "--json"]).ok();
    assert!(!list.stdout.contains("toolgate"), "{}", list.all());
    let human = t.cmd(&claude, &clone, &["plugin", "list"]).ok();
    assert!(
        !human.all().contains("toolgate"),
        "not even as failed:\n{}",
        human.all()
    );
    let markets = t
        .cmd(
            &claude,
            &clone,
            &["plugin", "marketplace", "list", "--json"],
        )
        .ok();
    assert!(!markets.stdout.contains("toolgate"), "{}", markets.all());
}

#[test]
fn copilot_project_install_works_from_a_clone_and_uninstall_leaves_the_host_clean() {
    let Some(copilot) = client("copilot") else {
        return;
    };
    let s = Scratch::new();
    version(&s, &copilot);
    let (clone, teammate) = commit_and_clone(&s, "copilot");
    let t = as_user(&s, &teammate);
    let c = clone.to_str().unwrap();
    t.cmd(&copilot, &clone, &["plugin", "marketplace", "add", c])
        .ok();
    let install = t
        .cmd(
            &copilot,
            &clone,
            &["plugin", "install", "toolgate@toolgate"],
        )
        .ok();
    assert_eq!(copilot_installed_skills(&install), 3, "{}", install.all());
    let list = t.cmd(&copilot, &clone, &["plugin", "list", "--json"]).ok();
    let entry = copilot_plugin(&json(&list), "toolgate")
        .unwrap_or_else(|| panic!("{}", list.all()))
        .clone();
    assert_eq!(entry["enabled"], true, "{}", list.all());
    assert_eq!(entry["installedFrom"], c, "{}", list.all());
    let doctor = t.cmd(Path::new(BIN), &clone, &["doctor"]);
    assert_eq!(doctor.code, 0, "{}", doctor.all());
    assert!(
        doctor
            .stdout
            .contains("ok      install copilot (project): runs toolgate"),
        "{}",
        doctor.all()
    );
    let un = t
        .cmd(Path::new(BIN), &clone, &["uninstall", "copilot"])
        .ok();
    assert!(
        un.stdout
            .contains("ran       copilot plugin uninstall toolgate@toolgate"),
        "{}",
        un.all()
    );
    assert!(
        un.stdout
            .contains("ran       copilot plugin marketplace remove toolgate"),
        "{}",
        un.all()
    );
    let list = t.cmd(&copilot, &clone, &["plugin", "list", "--json"]).ok();
    assert!(
        copilot_plugin(&json(&list), "toolgate").is_none(),
        "{}",
        list.all()
    );
    let human = t.cmd(&copilot, &clone, &["plugin", "list"]).ok();
    assert!(
        !human.all().contains("toolgate"),
        "not even as failed:\n{}",
        human.all()
    );
    let markets = t
        .cmd(
            &copilot,
            &clone,
            &["plugin", "marketplace", "list", "--json"],
        )
        .ok();
    assert!(!markets.stdout.contains("toolgate"), "{}", markets.all());
    // Only what git tracks is left: toolgate removed exactly its files.
    let left: Vec<_> = files(&clone)
        .into_keys()
        .filter(|p| !p.starts_with(".git"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
