#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `toolgate install / uninstall / doctor` end to end, with a temporary HOME and repository.
#![allow(clippy::disallowed_methods)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_toolgate");

struct Env {
    _dir: tempfile::TempDir,
    home: PathBuf,
    repo: PathBuf,
}

impl Env {
    fn new() -> Env {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&repo).unwrap();
        Env {
            home: home.canonicalize().unwrap(),
            repo: repo.canonicalize().unwrap(),
            _dir: dir,
        }
    }

    fn run(&self, args: &[&str]) -> Output {
        self.run_in(&self.repo, None, args)
    }

    /// `toolgate ARGS` in `cwd`, with `PATH` set to `path` when given.
    fn run_in(&self, cwd: &Path, path: Option<&std::ffi::OsStr>, args: &[&str]) -> Output {
        let mut c = Command::new(BIN);
        if let Some(p) = path {
            c.env("PATH", p);
        }
        c.args(args)
            .current_dir(cwd)
            .env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", self.home.join(".config"))
            .env("XDG_DATA_HOME", self.home.join(".local/share"))
            .env_remove("TOOLGATE_DATA_DIR")
            .env_remove("TOOLGATE_CONFIG")
            .env_remove("TOOLGATE_VSCODE_USER_DIR")
            .env_remove("TOOLGATE_BACKEND")
            .env_remove("CODEACT_BACKEND")
            .env_remove("TOOLGATE_MODE")
            .env_remove("CODEACT_MODE")
            .output()
            .unwrap()
    }

    fn ok(&self, args: &[&str]) -> String {
        let o = self.run(args);
        assert!(
            o.status.success(),
            "toolgate {args:?} failed:\n{}\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8(o.stdout).unwrap()
    }

    fn write(&self, rel: &str, text: &str) {
        let p = self.repo.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
}

/// Every file and directory under `root`, with file bytes.
fn tree(root: &Path) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(root).unwrap().to_path_buf();
            if p.is_dir() {
                out.insert(rel, None);
                stack.push(p);
            } else {
                out.insert(rel, Some(std::fs::read(&p).unwrap()));
            }
        }
    }
    out
}

const USER_MCP: &str = "{\n    \"inputs\": [],\n    \"servers\": {\n        \"github\": {\"type\": \"http\", \"url\": \"https://api.githubcopilot.com/mcp/\"}\n    }\n}\n";
const USER_MARKETPLACE: &str = r#"{"name": "team-tools", "owner": {"name": "team"}, "plugins": [{"name": "lint", "source": "./plugins/lint", "description": "ours"}]}"#;

#[test]
fn install_twice_then_uninstall_restores_the_tree_byte_for_byte() {
    let env = Env::new();
    env.write(".vscode/mcp.json", USER_MCP);
    env.write(".github/plugin/marketplace.json", USER_MARKETPLACE);
    env.write(".github/copilot-instructions.md", "Be brief.\n");
    env.write("src/main.rs", "fn main() {}\n");
    let before = tree(&env.repo);
    let home_before = tree(&env.home);
    for host in ["copilot", "claude", "vscode"] {
        let out = env.ok(&["install", host]);
        assert!(
            out.contains(&format!("toolgate installed into {host}")),
            "{out}"
        );
    }
    let installed = tree(&env.repo);
    // The user's entries are kept, in their order, next to toolgate's.
    let mcp: serde_json::Value =
        serde_json::from_slice(installed[Path::new(".vscode/mcp.json")].as_ref().unwrap()).unwrap();
    let keys: Vec<&String> = mcp["servers"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["github", "toolgate"]);
    assert_eq!(mcp["inputs"], serde_json::json!([]));
    let market: serde_json::Value = serde_json::from_slice(
        installed[Path::new(".github/plugin/marketplace.json")]
            .as_ref()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(market["name"], "team-tools");
    let names: Vec<&str> = market["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["lint", "toolgate"]);
    assert_eq!(
        installed[Path::new(".github/copilot-instructions.md")].as_deref(),
        Some(&b"Be brief.\n"[..]),
        "a file toolgate does not own is untouched"
    );
    // Idempotent: a second run changes nothing, byte for byte.
    for host in ["copilot", "claude", "vscode"] {
        let out = env.ok(&["install", host]);
        assert!(out.contains("nothing changed"), "{host}: {out}");
        let dry = env.ok(&["install", host, "--dry-run"]);
        assert!(dry.contains("nothing would change"), "{host}: {dry}");
    }
    assert_eq!(
        tree(&env.repo),
        installed,
        "second install changed the tree"
    );
    for host in ["vscode", "claude", "copilot"] {
        let out = env.ok(&["uninstall", host]);
        assert!(
            out.contains(&format!("toolgate uninstalled from {host}")),
            "{out}"
        );
    }
    let after = tree(&env.repo);
    for (p, v) in &before {
        assert_eq!(
            after.get(p),
            Some(v),
            "{} differs after uninstall",
            p.display()
        );
    }
    assert_eq!(after, before, "uninstall left something behind");
    assert_eq!(
        tree(&env.home),
        home_before,
        "a project install touched HOME"
    );
    let again = env.ok(&["uninstall", "copilot"]);
    assert!(again.contains("nothing removed"), "{again}");
}

#[test]
fn a_file_two_hosts_install_stays_until_the_last_of_them_is_uninstalled() {
    let env = Env::new();
    env.write("src/main.rs", "fn main() {}\n");
    let before = tree(&env.repo);
    let shared = Path::new(".github/instructions/codeact.instructions.md");
    env.ok(&["install", "copilot"]);
    let out = env.ok(&["install", "vscode"]);
    assert!(out.contains("toolgate installed into vscode"), "{out}");
    let installed = tree(&env.repo);
    assert!(installed.contains_key(shared), "both hosts read {shared:?}");
    // Copilot goes first: VS Code still reads the instructions, so they stay.
    let out = env.ok(&["uninstall", "copilot"]);
    assert!(
        out.contains("another host's toolgate install uses it too"),
        "{out}"
    );
    assert_eq!(
        tree(&env.repo).get(shared),
        installed.get(shared),
        "uninstalling copilot took away what the vscode install needs"
    );
    assert!(env.ok(&["install", "vscode"]).contains("nothing changed"));
    let out = env.ok(&["uninstall", "vscode"]);
    assert!(out.contains("removed"), "{out}");
    assert_eq!(
        tree(&env.repo),
        before,
        "the last uninstall leaves the tree as it was"
    );
}

#[test]
fn a_shared_file_with_other_content_names_the_install_that_wrote_it() {
    let env = Env::new();
    env.ok(&["install", "copilot"]);
    // As if the copilot install had been made by another toolgate (other content, recorded).
    let rel = ".github/instructions/codeact.instructions.md";
    let other = "Other instructions.\n";
    env.write(rel, other);
    let receipt_path = env.repo.join(".toolgate/receipts/copilot.json");
    let mut receipt: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&receipt_path).unwrap()).unwrap();
    let sha: String = {
        use sha2::Digest;
        sha2::Sha256::digest(other.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    };
    for f in receipt["files"].as_array_mut().unwrap() {
        if f["path"].as_str().unwrap().ends_with(rel) {
            f["sha256"] = serde_json::json!(sha);
        }
    }
    std::fs::write(&receipt_path, serde_json::to_vec_pretty(&receipt).unwrap()).unwrap();
    let before = tree(&env.repo);
    let out = env.run(&["install", "vscode"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("was written by toolgate's copilot install with other content"),
        "{err}"
    );
    assert_eq!(tree(&env.repo), before, "a refused install writes nothing");
}

#[test]
fn dry_run_prints_a_diff_and_writes_nothing() {
    let env = Env::new();
    env.write(".vscode/mcp.json", USER_MCP);
    let before = tree(&env.repo);
    let out = env.ok(&["install", "vscode", "--dry-run"]);
    assert!(
        out.contains("--- a/.vscode/mcp.json\n+++ b/.vscode/mcp.json\n"),
        "{out}"
    );
    assert!(
        out.contains("+        \"toolgate\": {") || out.contains("+    \"toolgate\": {"),
        "{out}"
    );
    assert!(
        out.contains("--- /dev/null\n+++ b/.github/agents/codeact.agent.md\n"),
        "{out}"
    );
    assert!(out.contains("+applyTo: \"**\""), "{out}");
    assert_eq!(tree(&env.repo), before);
}

#[test]
fn refuses_to_overwrite_a_file_it_does_not_own() {
    let env = Env::new();
    env.write(
        ".github/instructions/codeact.instructions.md",
        "my own rules\n",
    );
    let before = tree(&env.repo);
    let o = env.run(&["install", "copilot"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("codeact.instructions.md already exists and toolgate did not write it"),
        "{err}"
    );
    assert_eq!(tree(&env.repo), before, "nothing written");
}

#[test]
fn uninstall_keeps_files_edited_since_install() {
    let env = Env::new();
    env.ok(&["install", "claude"]);
    let agent = ".claude-plugin/toolgate/agents/codeact.md";
    env.write(agent, "my edits\n");
    // A reinstall will not overwrite the edit either.
    let o = env.run(&["install", "claude"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("changed since toolgate installed it"));
    let out = env.ok(&["uninstall", "claude"]);
    assert!(
        out.contains("kept      .claude-plugin/toolgate/agents/codeact.md"),
        "{out}"
    );
    let left: Vec<PathBuf> = tree(&env.repo)
        .into_iter()
        .filter(|(_, v)| v.is_some())
        .map(|(p, _)| p)
        .collect();
    assert_eq!(left, [PathBuf::from(agent)]);
}

#[test]
fn global_copilot_install_writes_where_copilot_loads_instructions() {
    let env = Env::new();
    let home_before = tree(&env.home);
    let repo_before = tree(&env.repo);
    let out = env.ok(&["install", "copilot", "--global"]);
    let instr = env
        .home
        .join(".copilot/instructions/codeact.instructions.md");
    assert!(instr.is_file(), "{out}");
    assert!(!env.home.join(".copilot/codeact.instructions.md").exists());
    let market = env
        .home
        .join(".local/share/toolgate/hosts/copilot/.github/plugin/marketplace.json");
    assert!(market.is_file());
    assert!(
        env.home
            .join(".local/share/toolgate/receipts/copilot-global.json")
            .is_file()
    );
    assert!(
        out.contains(&format!(
            "copilot plugin marketplace add {}",
            market
                .parent()
                .unwrap()
                .parent()
                .unwrap()
                .parent()
                .unwrap()
                .display()
        )),
        "{out}"
    );
    assert_eq!(
        tree(&env.repo),
        repo_before,
        "a global install touched the project"
    );
    assert!(
        env.ok(&["install", "copilot", "--global"])
            .contains("nothing changed")
    );
    env.ok(&["uninstall", "copilot", "--global"]);
    assert_eq!(tree(&env.home), home_before);
}

#[test]
fn global_vscode_install_edits_only_its_entry_in_user_mcp_json() {
    let env = Env::new();
    let user = env.home.join(".config/Code/User");
    std::fs::create_dir_all(&user).unwrap();
    std::fs::write(user.join("mcp.json"), USER_MCP).unwrap();
    std::fs::write(user.join("settings.json"), "{\"editor.fontSize\": 13}\n").unwrap();
    let before = tree(&env.home);
    env.ok(&["install", "vscode", "--global"]);
    let mcp: serde_json::Value =
        serde_json::from_slice(&std::fs::read(user.join("mcp.json")).unwrap()).unwrap();
    assert_eq!(
        mcp["servers"]["toolgate"]["args"],
        serde_json::json!([
            "mcp",
            "--surface",
            "all",
            "--workspace",
            "${workspaceFolder}"
        ])
    );
    assert!(user.join("prompts/codeact.instructions.md").is_file());
    env.ok(&["uninstall", "vscode", "--global"]);
    assert_eq!(tree(&env.home), before);
}

#[test]
fn installed_files_list_the_tools_of_the_manifest() {
    let env = Env::new();
    env.ok(&["install", "copilot", "--surface", "codeact"]);
    let manifest: serde_json::Value =
        serde_json::from_str(&env.ok(&["tools", "list", "--json", "--surface", "codeact"]))
            .unwrap();
    let instr = std::fs::read_to_string(
        env.repo
            .join(".github/instructions/codeact.instructions.md"),
    )
    .unwrap();
    let line = instr
        .lines()
        .find(|l| l.starts_with("Sandbox tools: "))
        .unwrap();
    let listed: Vec<&str> = line["Sandbox tools: ".len()..]
        .trim_end_matches('.')
        .split("), ")
        .map(|s| s.split('(').next().unwrap())
        .collect();
    let names: Vec<&str> = manifest
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["python"].as_str().unwrap())
        .collect();
    assert_eq!(listed, names);
    let exe = std::fs::canonicalize(BIN).unwrap();
    // A project install names the command on PATH (portable), not this machine's binary.
    assert!(
        instr.contains("    toolgate exec --backend monty --workspace . --raw --code '<python>'"),
        "{instr}"
    );
    let mcp: serde_json::Value = serde_json::from_slice(
        &std::fs::read(env.repo.join(".github/plugin/toolgate/.mcp.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        mcp["mcpServers"]["toolgate"]["args"],
        serde_json::json!(["mcp", "--surface", "codeact", "--workspace", "."])
    );
    // The exec command the files give really runs.
    let o = Command::new(&exe)
        .args([
            "exec",
            "--backend",
            "monty",
            "--workspace",
            ".",
            "--raw",
            "--code",
            "print(len(glob(pattern=\"**/*.md\")) > 0)",
        ])
        .current_dir(&env.repo)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        "True",
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn preflight_rejects_an_unusable_backend_and_writes_nothing() {
    let env = Env::new();
    let before = tree(&env.repo);
    let o = env.run(&["install", "copilot", "--backend", "hyperlight"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("PROBLEM backend hyperlight"), "{err}");
    assert!(err.contains("nothing was written"), "{err}");
    assert_eq!(tree(&env.repo), before);
    let doctor = env.run(&["doctor", "--backend", "hyperlight"]);
    assert_eq!(doctor.status.code(), Some(1));
    let doctor = env.run(&["doctor"]);
    let text = String::from_utf8_lossy(&doctor.stdout);
    assert_eq!(doctor.status.code(), Some(0), "{text}");
    assert!(
        text.contains("ok      backend monty: ran a program through `toolgate exec`"),
        "{text}"
    );
    assert!(text.contains("no problems found"), "{text}");
}

/// Issue 19 item 3: VS Code's `mcp.json` is JSONC. Before the fix the install refused a file with
/// comments (and re-indented one without).
#[test]
fn commented_vscode_mcp_json_survives_install_and_uninstall_byte_for_byte() {
    const COMMENTED: &str = include_str!("../../hosts/tests/fixtures/vscode-mcp.jsonc");
    let env = Env::new();
    let mcp = env.repo.join(".vscode/mcp.json");
    std::fs::create_dir_all(mcp.parent().unwrap()).unwrap();
    std::fs::write(&mcp, COMMENTED).unwrap();
    let before = tree(&env.repo);
    let diff = env.ok(&["install", "vscode", "--dry-run"]);
    assert!(diff.contains("+\t\t\"toolgate\": {"), "{diff}");
    assert_eq!(tree(&env.repo), before);
    env.ok(&["install", "vscode"]);
    let installed = std::fs::read_to_string(&mcp).unwrap();
    let doc = toolgate_hosts::parse_jsonc(&installed).unwrap();
    assert_eq!(doc["servers"]["toolgate"]["type"], "stdio");
    assert_eq!(doc["servers"]["Perplexity"]["command"], "npx");
    // The user's lines are all still there, in order, with toolgate's lines between them.
    let mut user = COMMENTED.lines().peekable();
    for line in installed.lines() {
        if user.peek() == Some(&line) {
            user.next();
        }
    }
    assert_eq!(user.next(), None, "{installed}");
    env.ok(&["uninstall", "vscode"]);
    assert_eq!(std::fs::read_to_string(&mcp).unwrap(), COMMENTED);
    assert_eq!(tree(&env.repo), before);
}

fn text_of(o: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A folder holding `toolgate` (a link to the binary under test, or a script), for PATH.
fn bin_dir(root: &Path, script: Option<&str>) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let d = root.join(if script.is_some() { "fakebin" } else { "bin" });
    std::fs::create_dir_all(&d).unwrap();
    let t = d.join("toolgate");
    match script {
        None => std::os::unix::fs::symlink(std::fs::canonicalize(BIN).unwrap(), &t).unwrap(),
        Some(s) => {
            std::fs::write(&t, s).unwrap();
            std::fs::set_permissions(&t, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
    d
}

fn path_with(dir: &Path) -> std::ffi::OsString {
    std::env::join_paths([dir, Path::new("/usr/bin"), Path::new("/bin")]).unwrap()
}

/// Issue 19 item 1: a project install names `toolgate` on PATH and records paths relative to
/// the project, so the repository can move (or be cloned) and still be uninstalled; `doctor`
/// checks that the binary the files run exists and is the version that wrote them.
#[test]
fn project_installs_are_portable_and_doctor_checks_the_referenced_binary() {
    let env = Env::new();
    let root = env.repo.parent().unwrap().to_path_buf();
    let exe = std::fs::canonicalize(BIN).unwrap();
    let bare = std::ffi::OsString::from("/usr/bin:/bin");
    let o = env.run_in(&env.repo, Some(&bare), &["install", "copilot"]);
    assert!(o.status.success(), "{}", text_of(&o));
    assert!(
        text_of(&o).contains("note: `toolgate` is not on PATH"),
        "the install says the hosts will not find it: {}",
        text_of(&o)
    );
    let good = bin_dir(&root, None);
    let o = env.run_in(&env.repo, Some(&path_with(&good)), &["install", "claude"]);
    assert!(o.status.success(), "{}", text_of(&o));
    assert!(!text_of(&o).contains("note:"), "{}", text_of(&o));
    let repo = env.repo.to_str().unwrap();
    for (p, bytes) in tree(&env.repo) {
        let Some(bytes) = bytes else { continue };
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            !text.contains(repo),
            "{} names the checkout: {text}",
            p.display()
        );
        assert!(
            !text.contains(exe.to_str().unwrap()),
            "{} names this machine's binary: {text}",
            p.display()
        );
    }
    let hooks =
        std::fs::read_to_string(env.repo.join(".claude-plugin/toolgate/hooks/hooks.json")).unwrap();
    assert!(
        hooks.contains("\"command\": \"toolgate hook pre-tool-use"),
        "{hooks}"
    );
    let receipt: serde_json::Value = serde_json::from_slice(
        &std::fs::read(env.repo.join(".toolgate/receipts/claude.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(receipt["exe"], "toolgate");
    for f in receipt["files"].as_array().unwrap() {
        assert!(
            f["path"].as_str().unwrap().starts_with(".claude-plugin/"),
            "{f}"
        );
    }
    // doctor: no toolgate on PATH → a problem per install that names the fix.
    let o = env.run_in(&env.repo, Some(&bare), &["doctor"]);
    assert_eq!(o.status.code(), Some(1), "{}", text_of(&o));
    assert!(
        text_of(&o).contains("PROBLEM install copilot (project): its files run `toolgate` from PATH, and there is none on PATH"),
        "{}",
        text_of(&o)
    );
    // Another version on PATH → a problem that says which.
    let fake = bin_dir(&root, Some("#!/bin/sh\necho toolgate 0.0.1\n"));
    let o = env.run_in(&env.repo, Some(&path_with(&fake)), &["doctor"]);
    assert_eq!(o.status.code(), Some(1), "{}", text_of(&o));
    assert!(
        text_of(&o).contains(&format!(
            "which is toolgate 0.0.1, but toolgate {} wrote them",
            env!("CARGO_PKG_VERSION")
        )),
        "{}",
        text_of(&o)
    );
    // This binary on PATH → clean.
    let o = env.run_in(&env.repo, Some(&path_with(&good)), &["doctor"]);
    assert_eq!(o.status.code(), Some(0), "{}", text_of(&o));
    assert!(
        text_of(&o).contains(&format!(
            "ok      install claude (project): runs toolgate ({}), toolgate {} as recorded",
            good.join("toolgate").display(),
            env!("CARGO_PKG_VERSION")
        )),
        "{}",
        text_of(&o)
    );
    // The checkout moves: the relative receipts still find every file.
    let moved = root.join("moved");
    std::fs::rename(&env.repo, &moved).unwrap();
    for host in ["claude", "copilot"] {
        let o = env.run_in(&moved, Some(&bare), &["uninstall", host]);
        assert!(o.status.success(), "{}", text_of(&o));
        assert!(
            text_of(&o).contains(&format!("toolgate uninstalled from {host}")),
            "{}",
            text_of(&o)
        );
        assert!(!text_of(&o).contains("missing"), "{}", text_of(&o));
    }
    assert!(
        tree(&moved).is_empty(),
        "{:?}",
        tree(&moved).keys().collect::<Vec<_>>()
    );
}

#[test]
fn binary_path_absolute_or_relative_to_the_project() {
    let env = Env::new();
    let exe = std::fs::canonicalize(BIN).unwrap();
    let bare = std::ffi::OsString::from("/usr/bin:/bin");
    env.ok(&["install", "claude", "--binary-path", "absolute"]);
    let hooks = env.repo.join(".claude-plugin/toolgate/hooks/hooks.json");
    let text = std::fs::read_to_string(&hooks).unwrap();
    assert!(
        text.contains(&format!(
            "\"command\": \"{} hook pre-tool-use",
            exe.display()
        )),
        "{text}"
    );
    env.ok(&["uninstall", "claude"]);
    // A path relative to the project must exist there, and stay inside it.
    let o = env.run(&["install", "claude", "--binary-path", "tools/toolgate"]);
    assert!(!o.status.success());
    assert!(
        text_of(&o).contains("does not exist; build or copy toolgate there first"),
        "{}",
        text_of(&o)
    );
    let o = env.run(&["install", "claude", "--binary-path", "../toolgate"]);
    assert!(!o.status.success());
    assert!(
        text_of(&o).contains("must lie inside the project"),
        "{}",
        text_of(&o)
    );
    std::fs::create_dir_all(env.repo.join("tools")).unwrap();
    std::os::unix::fs::symlink(&exe, env.repo.join("tools/toolgate")).unwrap();
    env.ok(&["install", "claude", "--binary-path", "tools/toolgate"]);
    let text = std::fs::read_to_string(&hooks).unwrap();
    assert!(
        text.contains("\"command\": \"./tools/toolgate hook pre-tool-use"),
        "{text}"
    );
    let mcp = std::fs::read_to_string(env.repo.join(".claude-plugin/toolgate/.mcp.json")).unwrap();
    assert!(mcp.contains("\"command\": \"./tools/toolgate\""), "{mcp}");
    let o = env.run_in(&env.repo, Some(&bare), &["doctor"]);
    assert!(
        text_of(&o).contains("ok      install claude (project): runs ./tools/toolgate"),
        "{}",
        text_of(&o)
    );
    // The hook run by that spelling accepts `./tools/toolgate exec` in exclusive mode.
    let payload = serde_json::json!({"session_id": "s", "cwd": env.repo, "hook_event_name": "PreToolUse",
        "tool_name": "Bash", "tool_input": {"command": "./tools/toolgate exec --raw --code 'print(1)'"}})
    .to_string();
    let o = toolgate_test_support::run_with_input(
        Command::new("./tools/toolgate")
            .args(["hook", "pre-tool-use"])
            .current_dir(&env.repo)
            .env("TOOLGATE_MODE", "exclusive")
            .env("HOME", &env.home)
            .env("TOOLGATE_HOOK_STATE_DIR", env.home.join("state")),
        &payload,
    )
    .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "",
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Issue 19 item 2: without the host CLI on PATH, uninstall prints exactly the host commands that
/// take the plugin out of the host's registry (project scope for Claude Code).
#[test]
fn uninstall_without_the_host_cli_prints_the_host_commands() {
    let env = Env::new();
    env.ok(&["install", "claude"]);
    env.ok(&["install", "copilot"]);
    let bare = std::ffi::OsString::from("/usr/bin:/bin");
    let o = env.run_in(&env.repo, Some(&bare), &["uninstall", "claude"]);
    let out = text_of(&o);
    assert!(
        out.contains("claude is not on PATH, so toolgate cannot take the plugin out of the host's registry. If you added it there, run:\n  claude plugin uninstall toolgate@toolgate --scope project\n  claude plugin marketplace remove toolgate\n"),
        "{out}"
    );
    let o = env.run_in(&env.repo, Some(&bare), &["uninstall", "copilot"]);
    let out = text_of(&o);
    assert!(
        out.contains("run:\n  copilot plugin uninstall toolgate@toolgate\n  copilot plugin marketplace remove toolgate\n"),
        "{out}"
    );
    // A user's marketplace that toolgate only added an entry to is not removed.
    env.write(".claude-plugin/marketplace.json", USER_MARKETPLACE);
    env.ok(&["install", "claude"]);
    let o = env.run_in(&env.repo, Some(&bare), &["uninstall", "claude"]);
    let out = text_of(&o);
    assert!(
        out.contains("  claude plugin uninstall toolgate@team-tools --scope project\n"),
        "{out}"
    );
    assert!(!out.contains("marketplace remove"), "{out}");
}

#[test]
fn install_next_hint_uses_project_scope_for_a_project_install() {
    let env = Env::new();
    let out = env.ok(&["install", "claude"]);
    assert!(
        out.contains(&format!(
            "Next: claude plugin marketplace add {} --scope project\n      claude plugin install toolgate@toolgate --scope project\n",
            env.repo.display()
        )),
        "{out}"
    );
    assert!(
        out.contains("[hook] table of ~/.config/toolgate/config.toml"),
        "{out}"
    );
    let out = env.ok(&["install", "claude", "--global"]);
    assert!(
        out.contains("      claude plugin install toolgate@toolgate\n"),
        "{out}"
    );
}

/// A file outside the project and home (a data dir elsewhere) is shown by its absolute path in
/// the dry-run diff, never as `b//<absolute path>`.
#[test]
fn dry_run_paths_outside_home_have_no_doubled_slash() {
    let env = Env::new();
    let data = env.repo.parent().unwrap().join("data-elsewhere");
    let o = Command::new(BIN)
        .args(["install", "claude", "--global", "--dry-run"])
        .current_dir(&env.repo)
        .env("HOME", &env.home)
        .env("TOOLGATE_DATA_DIR", &data)
        .env_remove("TOOLGATE_CONFIG")
        .env_remove("TOOLGATE_MODE")
        .output()
        .unwrap();
    let out = text_of(&o);
    assert!(o.status.success(), "{out}");
    assert!(!out.contains("b//"), "{out}");
    let manifest = data.join("hosts/claude/.claude-plugin/marketplace.json");
    assert!(
        out.contains(&format!("--- /dev/null\n+++ {}\n", manifest.display())),
        "{out}"
    );
}

/// `doctor`'s `hook mode` line, with `TOOLGATE_MODE` set to `mode` (or unset).
fn doctor_hook_mode(env: &Env, mode: Option<&str>) -> String {
    let mut c = Command::new(BIN);
    c.arg("doctor")
        .current_dir(&env.repo)
        .env("HOME", &env.home)
        .env("XDG_CONFIG_HOME", env.home.join(".config"))
        .env("XDG_DATA_HOME", env.home.join(".local/share"))
        .env_remove("TOOLGATE_DATA_DIR")
        .env_remove("TOOLGATE_CONFIG")
        .env_remove("TOOLGATE_VSCODE_USER_DIR")
        .env_remove("TOOLGATE_BACKEND")
        .env_remove("CODEACT_BACKEND")
        .env_remove("CODEACT_MODE");
    match mode {
        Some(m) => c.env("TOOLGATE_MODE", m),
        None => c.env_remove("TOOLGATE_MODE"),
    };
    let o = c.output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    text.lines()
        .find(|l| l.contains(" hook mode: "))
        .unwrap_or_else(|| panic!("no hook mode line:\n{text}"))
        .to_owned()
}

/// Issue 33 item 6: with nothing setting it, `doctor` says the hook mode is off by default (not
/// `TOOLGATE_MODE=off`, which nobody set); a variable or the config that sets it is named.
#[test]
fn doctor_says_the_hook_mode_is_off_by_default() {
    let env = Env::new();
    assert_eq!(
        doctor_hook_mode(&env, None),
        "note    hook mode: off (default)"
    );
    assert_eq!(
        doctor_hook_mode(&env, Some("nudge")),
        "note    hook mode: TOOLGATE_MODE=nudge"
    );
    assert_eq!(
        doctor_hook_mode(&env, Some("off")),
        "note    hook mode: TOOLGATE_MODE=off"
    );
    let config = env.home.join(".config/toolgate/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(&config, "[hook]\nmode = \"off\"\n").unwrap();
    let line = doctor_hook_mode(&env, None);
    assert!(
        line.starts_with("note    hook mode: off (set in the [hook] table of ")
            && line.contains(".config/toolgate/config.toml"),
        "{line}"
    );
}

/// Issue 33 item 6: toolgate installs no pre-tool-use hook into VS Code, so neither
/// `install vscode` nor `doctor` advises hook enforcement for it; for a host with the hook,
/// doctor says how to turn it on.
#[test]
fn hook_enforcement_is_advised_only_for_hosts_with_a_hook() {
    let env = Env::new();
    let out = env.ok(&["install", "vscode"]);
    let next = &out[out.find("Next:").unwrap()..];
    assert!(!next.contains("Enforcement"), "{next}");
    assert!(!next.contains("[hook] table"), "{next}");
    assert!(
        next.contains("toolgate installs no pre-tool-use hook into VS Code"),
        "{next}"
    );
    // Only VS Code installed: nothing to enforce, nothing advised.
    assert_eq!(
        doctor_hook_mode(&env, None),
        "note    hook mode: off (default)"
    );
    // A strict mode does not reach VS Code: doctor says so.
    let line = doctor_hook_mode(&env, Some("exclusive"));
    assert!(
        line.starts_with("note    hook mode: TOOLGATE_MODE=exclusive; ")
            && line.contains(
                "toolgate installs no pre-tool-use hook into VS Code, so the vscode install is not enforced"
            ),
        "{line}"
    );
    // With Claude Code installed too, off is worth a word, for claude only.
    env.ok(&["install", "claude"]);
    let line = doctor_hook_mode(&env, None);
    assert!(
        line.starts_with("note    hook mode: off (default); the claude hook allows every call: for enforcement set mode = \"nudge\" (or \"exclusive\") in the [hook] table of ~/.config/toolgate/config.toml"),
        "{line}"
    );
    assert!(!line.contains("vscode"), "{line}");
}
