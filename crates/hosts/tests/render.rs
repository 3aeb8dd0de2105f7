#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Every rendered file, per host, backend and scope: snapshots, and parse checks of the JSON and
//! the Markdown frontmatter the hosts read.

use std::path::{Path, PathBuf};

use toolgate_hosts::{
    Action, Backend, Host, InstallOptions, Locations, ToolSet, parse_manifest, plan,
};

const MANIFEST: &str = include_str!("fixtures/codeact-tools.json");
const REFERENCE: &str = include_str!("fixtures/codeact-tools.md");
const ROOT: &str = "/nonexistent-toolgate-test";

fn locations() -> Locations {
    Locations {
        target: PathBuf::from(ROOT).join("repo"),
        home: PathBuf::from(ROOT).join("home"),
        data_dir: PathBuf::from(ROOT).join("home/.local/share/toolgate"),
        vscode_user_dir: PathBuf::from(ROOT).join("home/.config/Code/User"),
    }
}

fn options(host: Host, backend: Backend, global: bool) -> InstallOptions {
    InstallOptions {
        host,
        global,
        backend,
        surface: ToolSet::All,
        // What the CLI writes by default: the command on PATH for a project (portable), the
        // absolute binary for the user's own install.
        exe: if global {
            "/usr/local/bin/toolgate".to_owned()
        } else {
            "toolgate".to_owned()
        },
        tools: parse_manifest(MANIFEST).unwrap(),
        tools_reference: REFERENCE.to_owned(),
        hyperlight: backend == Backend::Hyperlight,
    }
}

/// The rendered files as (path relative to the fake root, content).
fn rendered(host: Host, backend: Backend, global: bool) -> Vec<(String, String)> {
    let p = plan(&options(host, backend, global), &locations()).unwrap();
    p.changes
        .iter()
        .map(|c| {
            let rel = c.path.strip_prefix(ROOT).unwrap().display().to_string();
            (rel, c.new.clone().unwrap())
        })
        .collect()
}

fn frontmatter(md: &str) -> serde_yaml_ng::Value {
    let rest = md
        .strip_prefix("---\n")
        .expect("frontmatter opens the file");
    let end = rest.find("\n---\n").expect("frontmatter is closed");
    serde_yaml_ng::from_str(&rest[..end]).expect("frontmatter is YAML")
}

fn yaml_str<'a>(v: &'a serde_yaml_ng::Value, key: &str) -> &'a str {
    v.get(key)
        .and_then(serde_yaml_ng::Value::as_str)
        .unwrap_or_else(|| panic!("frontmatter lacks a string {key}: {v:?}"))
}

#[test]
fn snapshots_of_every_file() {
    for host in Host::ALL {
        for backend in [Backend::Monty, Backend::Hyperlight] {
            for global in [false, true] {
                for (rel, content) in rendered(host, backend, global) {
                    let scope = if global { "global" } else { "project" };
                    let name = format!("{host}-{backend}-{scope}-{}", rel.replace('/', "_"));
                    insta::assert_snapshot!(name, content);
                }
            }
        }
    }
}

#[test]
fn every_file_parses_as_its_host_reads_it() {
    for host in Host::ALL {
        for backend in [Backend::Monty, Backend::Hyperlight] {
            for global in [false, true] {
                let files = rendered(host, backend, global);
                assert!(!files.is_empty());
                for (rel, content) in &files {
                    assert!(
                        !content.contains("{{"),
                        "{rel}: unfilled placeholder\n{content}"
                    );
                    if rel.ends_with(".json") {
                        let v: serde_json::Value = serde_json::from_str(content)
                            .unwrap_or_else(|e| panic!("{rel}: {e}\n{content}"));
                        assert!(v.is_object(), "{rel}");
                    }
                    let file = Path::new(rel).file_name().unwrap().to_str().unwrap();
                    if file == "SKILL.md" {
                        let fm = frontmatter(content);
                        let dir = Path::new(rel).parent().unwrap().file_name().unwrap();
                        assert_eq!(yaml_str(&fm, "name"), dir.to_str().unwrap(), "{rel}");
                        assert!(yaml_str(&fm, "description").len() <= 200, "{rel}");
                    } else if file.ends_with(".agent.md") || rel.contains("/agents/") {
                        let fm = frontmatter(content);
                        assert!(!yaml_str(&fm, "description").is_empty());
                        assert!(fm.get("tools").is_some(), "{rel}: the agent names its tool");
                    } else if file.ends_with(".instructions.md") {
                        assert_eq!(yaml_str(&frontmatter(content), "applyTo"), "**");
                    }
                    if rel.ends_with(".md") && !rel.ends_with("tools.md") {
                        assert!(
                            content.contains(&format!("--backend {backend}"))
                                || !content.contains(" exec "),
                            "{rel}: names the chosen backend"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn layouts_per_host() {
    let names = |host, global| -> Vec<String> {
        rendered(host, Backend::Monty, global)
            .into_iter()
            .map(|(r, _)| r)
            .collect()
    };
    let copilot = names(Host::Copilot, false);
    for expected in [
        "repo/.github/plugin/marketplace.json",
        "repo/.github/plugin/toolgate/plugin.json",
        "repo/.github/plugin/toolgate/hooks.json",
        "repo/.github/plugin/toolgate/agents/codeact.agent.md",
        "repo/.github/plugin/toolgate/skills/codeact-install/SKILL.md",
        "repo/.github/plugin/toolgate/skills/codeact-install-monty/SKILL.md",
        "repo/.github/instructions/codeact.instructions.md",
    ] {
        assert!(
            copilot.iter().any(|p| p == expected),
            "{expected} in {copilot:?}"
        );
    }
    // The hyperlight install skill ships only from a binary that can run hyperlight.
    let hyperlight_skill =
        "repo/.github/plugin/toolgate/skills/codeact-install-hyperlight/SKILL.md";
    assert!(
        !copilot.iter().any(|p| p == hyperlight_skill),
        "{copilot:?}"
    );
    let with_hyperlight: Vec<String> = rendered(Host::Copilot, Backend::Hyperlight, false)
        .into_iter()
        .map(|(r, _)| r)
        .collect();
    assert!(with_hyperlight.iter().any(|p| p == hyperlight_skill));
    // Global Copilot instructions go where Copilot CLI loads personal instructions, not to the
    // unread ~/.copilot/codeact.instructions.md (reference §11).
    let global = names(Host::Copilot, true);
    assert!(global.contains(&"home/.copilot/instructions/codeact.instructions.md".to_owned()));
    assert!(
        !global
            .iter()
            .any(|p| p == "home/.copilot/codeact.instructions.md")
    );
    assert!(global.iter().all(|p| p.starts_with("home/")), "{global:?}");
    let claude = names(Host::Claude, false);
    for expected in [
        "repo/.claude-plugin/marketplace.json",
        "repo/.claude-plugin/toolgate/.claude-plugin/plugin.json",
        "repo/.claude-plugin/toolgate/.mcp.json",
        "repo/.claude-plugin/toolgate/hooks/hooks.json",
        "repo/.claude-plugin/toolgate/agents/codeact.md",
    ] {
        assert!(
            claude.iter().any(|p| p == expected),
            "{expected} in {claude:?}"
        );
    }
    let vscode = names(Host::Vscode, false);
    assert_eq!(
        vscode,
        [
            "repo/.vscode/mcp.json",
            "repo/.github/instructions/codeact.instructions.md",
            "repo/.github/agents/codeact.agent.md"
        ]
    );
    assert_eq!(
        names(Host::Vscode, true),
        [
            "home/.config/Code/User/mcp.json",
            "home/.config/Code/User/prompts/codeact.instructions.md",
            "home/.config/Code/User/prompts/codeact.agent.md"
        ]
    );
}

#[test]
fn project_hooks_and_mcp_entries_run_toolgate_from_path() {
    let files = rendered(Host::Claude, Backend::Monty, false);
    let get = |suffix: &str| {
        let (_, c) = files.iter().find(|(r, _)| r.ends_with(suffix)).unwrap();
        serde_json::from_str::<serde_json::Value>(c).unwrap()
    };
    let hooks = get("hooks/hooks.json");
    let cmd = hooks["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap();
    assert!(
        cmd.starts_with("toolgate hook pre-tool-use --tools view,"),
        "{cmd}"
    );
    let mcp = get(".mcp.json");
    assert_eq!(mcp["mcpServers"]["toolgate"]["command"], "toolgate");
    // No file of a project install names a machine's path.
    for host in Host::ALL {
        for (rel, content) in rendered(host, Backend::Monty, false) {
            assert!(!content.contains("/usr/local/bin"), "{rel}: {content}");
            assert!(!content.contains(ROOT), "{rel}: {content}");
        }
    }
    assert_eq!(
        mcp["mcpServers"]["toolgate"]["args"],
        // run_code needs a named workspace: the project the host starts the server in.
        serde_json::json!(["mcp", "--surface", "all", "--workspace", "."])
    );
    let copilot = rendered(Host::Copilot, Backend::Monty, false);
    let (_, h) = copilot
        .iter()
        .find(|(r, _)| r.ends_with("hooks.json"))
        .unwrap();
    let h: serde_json::Value = serde_json::from_str(h).unwrap();
    let entry = &h["hooks"]["preToolUse"][0];
    assert_eq!(entry["type"], "command");
    assert!(
        entry["bash"]
            .as_str()
            .unwrap()
            .contains("hook pre-tool-use")
    );
    assert!(
        entry["powershell"]
            .as_str()
            .unwrap()
            .contains("hook pre-tool-use")
    );
    // An exe path with a space is quoted for the shell.
    let mut opts = options(Host::Copilot, Backend::Monty, false);
    opts.exe = "/opt/my tools/toolgate".to_owned();
    let p = plan(&opts, &locations()).unwrap();
    let Action::File { content, .. } = p
        .actions
        .iter()
        .find(|a| a.path().ends_with("hooks.json"))
        .unwrap()
    else {
        panic!("hooks.json is a file")
    };
    assert!(
        content.contains("'/opt/my tools/toolgate' hook pre-tool-use"),
        "{content}"
    );
}
