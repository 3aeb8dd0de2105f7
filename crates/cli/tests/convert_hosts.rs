//! The real hosts judge `toolgate convert`: the 43 Compound Engineering agents (plus a skill and a
//! command), converted to a Claude Code plugin in a local marketplace and to a Copilot CLI plugin,
//! are added and installed with the hosts' own plugin commands, offline, each run with a fresh
//! HOME. A deliberately broken converted plugin must be rejected or under-reported.
//!
//! The host CLIs are installed into `.tools/` by `.ci/install-test-clients` (or found through
//! `TOOLGATE_TOOLS_DIR`). Without them these tests print a loud notice and pass, unless
//! `TOOLGATE_REQUIRE_TEST_CLIENTS=1` (CI), where a missing client fails the test.
//!
//! Every assertion on host output shows the host's whole output when it fails, so a change in a
//! host's wording is visible.
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(clippy::disallowed_methods)]

use std::collections::BTreeSet;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use toolgate_test_support::tools_dir;

use serde_json::Value as Json;

const PLUGIN: &str = "compound-engineering";
const MARKET: &str = "ce-local";

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn fixtures() -> PathBuf {
    workspace_root().join("crates/convert/tests/fixtures/ce-agents")
}

/// The host CLI `name` (`claude` or `copilot`), or `None` (after a loud notice) when it is not
/// installed and the environment does not require it.
fn host(name: &str) -> Option<PathBuf> {
    let bin = tools_dir().join("hosts/node_modules/.bin").join(name);
    if bin.exists() {
        return Some(bin);
    }
    let msg = format!(
        "host CLI `{name}` not found at {}; run .ci/install-test-clients (or set \
         TOOLGATE_TOOLS_DIR)",
        bin.display()
    );
    if std::env::var("TOOLGATE_REQUIRE_TEST_CLIENTS").as_deref() == Ok("1") {
        panic!("{msg}");
    }
    eprintln!("\n!!!!!!!! SKIPPED: {msg} !!!!!!!!\n");
    None
}

struct HostRun {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl HostRun {
    fn all(&self) -> String {
        format!(
            "exit code: {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

/// Run a host CLI with HOME (and the XDG dirs) inside `home`, killing it after two minutes.
fn run_host(bin: &Path, home: &Path, args: &[&str]) -> HostRun {
    let mut child = Command::new(bin)
        .args(args)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env("XDG_STATE_HOME", home.join(".local/state"))
        .env("DISABLE_AUTOUPDATER", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("NO_COLOR", "1")
        .env_remove("GH_TOKEN")
        .env_remove("GITHUB_TOKEN")
        .env_remove("COPILOT_GITHUB_TOKEN")
        .env_remove("ANTHROPIC_API_KEY")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
    let mut out_pipe = child.stdout.take().unwrap();
    let mut err_pipe = child.stderr.take().unwrap();
    let out_thread = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out_pipe.read_to_string(&mut s);
        s
    });
    let err_thread = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err_pipe.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let run = HostRun {
        code: status.and_then(|s| s.code()),
        stdout: out_thread.join().unwrap(),
        stderr: err_thread.join().unwrap(),
    };
    assert!(
        status.is_some(),
        "{} {args:?} did not finish in 120 s\n{}",
        bin.display(),
        run.all()
    );
    run
}

/// The host's binary, a scratch folder and a fresh HOME inside it, with the host's version
/// printed; `None` (the test returns) when the host is not installed and not required.
#[allow(clippy::print_stdout)] // the host's version belongs in the test output
fn host_with_home(name: &str) -> Option<(PathBuf, tempfile::TempDir, PathBuf)> {
    let bin = host(name)?;
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    fs::create_dir_all(&home).unwrap();
    println!("host: {name} {}", version(&bin, &home));
    Some((bin, tmp, home))
}

fn version(bin: &Path, home: &Path) -> String {
    let v = run_host(bin, home, &["--version"]);
    v.stdout
        .lines()
        .next()
        .unwrap_or_default()
        .trim()
        .to_string()
}

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

/// The 43 agents as a Claude Code plugin, plus one skill and one command (written here).
fn make_plugin(dir: &Path) -> (PathBuf, BTreeSet<String>) {
    let root = dir.join("ce");
    write(
        &root.join(".claude-plugin/plugin.json"),
        r#"{"name": "compound-engineering", "version": "2.0.0", "description": "Compound Engineering agents (test fixture)", "author": {"name": "Every"}, "license": "MIT"}"#,
    );
    let mut names = BTreeSet::new();
    for e in fs::read_dir(fixtures()).unwrap() {
        let p = e.unwrap().path();
        let file = p.file_name().unwrap().to_string_lossy().to_string();
        if file.starts_with("ce-") && file.ends_with(".md") {
            fs::create_dir_all(root.join("agents")).unwrap();
            fs::copy(&p, root.join("agents").join(&file)).unwrap();
            names.insert(file.trim_end_matches(".md").to_string());
        }
    }
    assert_eq!(names.len(), 43);
    fs::copy(fixtures().join("LICENSE"), root.join("LICENSE")).unwrap();
    write(
        &root.join("skills/ce-hello-skill/SKILL.md"),
        "---\nname: ce-hello-skill\ndescription: \"Says hello: a tiny test skill\"\n---\n\nSay hello.\n",
    );
    write(
        &root.join("commands/ce-hello-cmd.md"),
        "---\ndescription: \"A tiny test command: says hello\"\nargument-hint: \"[name]\"\n---\n\nSay hello to $ARGUMENTS.\n",
    );
    (root, names)
}

fn toolgate_convert(args: &[&str]) {
    let out = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .arg("convert")
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "toolgate convert {args:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The names Claude Code lists after `Agents (N)` in `plugin details`.
fn details_line<'a>(details: &'a str, label: &str) -> Option<&'a str> {
    details
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with(&format!("{label} (")))
}

fn parse_inventory(line: &str) -> (usize, BTreeSet<String>) {
    // e.g. "Agents (43)  ce-a, ce-b" or "Hooks (0)"
    let open = line.find('(').unwrap();
    let close = line.find(')').unwrap();
    let n: usize = line[open + 1..close].parse().unwrap();
    let names = line[close + 1..]
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    (n, names)
}

fn claude_validate(claude: &Path, home: &Path, dir: &Path) -> (HostRun, Json) {
    let run = run_host(
        claude,
        home,
        &["plugin", "validate", "--json", dir.to_str().unwrap()],
    );
    let json: Json = serde_json::from_str(&run.stdout).unwrap_or_else(|e| {
        panic!(
            "`claude plugin validate --json` did not print JSON ({e}):\n{}",
            run.all()
        )
    });
    (run, json)
}

#[test]
fn claude_code_installs_the_converted_plugin_and_reports_43_agents() {
    let Some((claude, tmp, home)) = host_with_home("claude") else {
        return;
    };
    let (src, names) = make_plugin(tmp.path());
    let market = tmp.path().join("market");
    toolgate_convert(&[
        "--from",
        "claude",
        "--to",
        "claude",
        "--marketplace",
        MARKET,
        src.to_str().unwrap(),
        market.to_str().unwrap(),
    ]);
    let plugin_dir = market.join("plugins").join(PLUGIN);

    // The host's validator finds no error in any converted file.
    let (run, report) = claude_validate(&claude, &home, &plugin_dir);
    assert_eq!(report["success"], Json::Bool(true), "{}", run.all());
    let contents = report["contents"].as_array().unwrap();
    for c in contents {
        assert_eq!(
            c["errors"].as_array().map(Vec::len),
            Some(0),
            "{}",
            run.all()
        );
    }

    let add = run_host(
        &claude,
        &home,
        &["plugin", "marketplace", "add", market.to_str().unwrap()],
    );
    assert!(
        add.code == Some(0)
            && add
                .stdout
                .contains(&format!("Successfully added marketplace: {MARKET}")),
        "{}",
        add.all()
    );
    let id = format!("{PLUGIN}@{MARKET}");
    let install = run_host(&claude, &home, &["plugin", "install", &id]);
    assert!(
        install.code == Some(0)
            && install
                .stdout
                .contains(&format!("Successfully installed plugin: {id}")),
        "{}",
        install.all()
    );
    let details = run_host(&claude, &home, &["plugin", "details", &id]);
    assert_eq!(details.code, Some(0), "{}", details.all());
    let agents = details_line(&details.stdout, "Agents")
        .unwrap_or_else(|| panic!("no `Agents (n)` line:\n{}", details.all()));
    let (n, listed) = parse_inventory(agents);
    assert_eq!(n, 43, "{}", details.all());
    assert_eq!(listed, names, "{}", details.all());
    // Claude Code counts commands as skills.
    let skills = details_line(&details.stdout, "Skills")
        .unwrap_or_else(|| panic!("no `Skills (n)` line:\n{}", details.all()));
    let (n, listed) = parse_inventory(skills);
    assert_eq!(n, 2, "{}", details.all());
    assert_eq!(
        listed,
        BTreeSet::from(["ce-hello-cmd".to_string(), "ce-hello-skill".to_string()]),
        "{}",
        details.all()
    );
    if let Some(cost) = details.stdout.lines().find(|l| l.contains("Always-on:")) {
        println!(
            "claude projected cost of the converted plugin: {}",
            cost.trim()
        );
    }
}

#[test]
fn claude_code_rejects_a_broken_converted_agent() {
    let Some((claude, tmp, home)) = host_with_home("claude") else {
        return;
    };
    let (src, _) = make_plugin(tmp.path());
    let out = tmp.path().join("out");
    toolgate_convert(&[
        "--to",
        "claude",
        src.to_str().unwrap(),
        out.to_str().unwrap(),
    ]);
    let (run, report) = claude_validate(&claude, &home, &out);
    assert_eq!(report["success"], Json::Bool(true), "{}", run.all());

    // Break one converted agent's frontmatter (an unterminated quoted string).
    let broken = out.join("agents/ce-coherence-reviewer.md");
    let text = fs::read_to_string(&broken).unwrap();
    fs::write(
        &broken,
        text.replacen("description: ", "description: \"", 1),
    )
    .unwrap();
    let (run, report) = claude_validate(&claude, &home, &out);
    assert_eq!(report["success"], Json::Bool(false), "{}", run.all());
    assert_ne!(run.code, Some(0), "{}", run.all());
    let entry = report["contents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| {
            c["file"]
                .as_str()
                .is_some_and(|f| f.ends_with("ce-coherence-reviewer.md"))
        })
        .unwrap_or_else(|| panic!("the broken agent is not reported:\n{}", run.all()));
    let errors = entry["errors"].as_array().unwrap();
    assert!(
        errors.iter().any(|e| e["path"] == "frontmatter"
            && e["message"]
                .as_str()
                .is_some_and(|m| m.contains("failed to parse"))),
        "{}",
        run.all()
    );
}

fn copilot_list(copilot: &Path, home: &Path, pre: &[&str]) -> (HostRun, Vec<Json>) {
    let mut args: Vec<&str> = pre.to_vec();
    args.extend(["plugin", "list", "--json"]);
    let run = run_host(copilot, home, &args);
    let list: Vec<Json> = serde_json::from_str(&run.stdout).unwrap_or_else(|e| {
        panic!(
            "`copilot plugin list --json` did not print a JSON array ({e}):\n{}",
            run.all()
        )
    });
    (run, list)
}

#[test]
fn copilot_cli_installs_the_converted_plugin() {
    let Some((copilot, tmp, home)) = host_with_home("copilot") else {
        return;
    };
    let (src, names) = make_plugin(tmp.path());
    let plugin = tmp.path().join("copilot-plugin");
    toolgate_convert(&[
        "--to",
        "copilot",
        src.to_str().unwrap(),
        plugin.to_str().unwrap(),
    ]);

    // Loaded in place with --plugin-dir.
    let (run, list) = copilot_list(&copilot, &home, &["--plugin-dir", plugin.to_str().unwrap()]);
    assert!(
        list.iter().any(|p| p["name"] == PLUGIN
            && p["enabled"] == Json::Bool(true)
            && p["source"] == "external"),
        "{}",
        run.all()
    );
    // Both skills (the skill and the command turned skill) load, none fails.
    let skills = run_host(
        &copilot,
        &home,
        &[
            "--plugin-dir",
            plugin.to_str().unwrap(),
            "skill",
            "list",
            "--json",
        ],
    );
    assert!(!skills.all().contains("failed to load"), "{}", skills.all());
    let listed: Vec<Json> = serde_json::from_str(&skills.stdout)
        .unwrap_or_else(|e| panic!("no JSON from skill list ({e}):\n{}", skills.all()));
    let plugin_skills: BTreeSet<&str> = listed
        .iter()
        .filter(|s| s["source"] == "plugin")
        .filter_map(|s| s["name"].as_str())
        .collect();
    assert_eq!(
        plugin_skills,
        BTreeSet::from(["ce-hello-cmd", "ce-hello-skill"]),
        "{}",
        skills.all()
    );

    // Direct install from an absolute path: the host copies the plugin.
    let install = run_host(
        &copilot,
        &home,
        &["plugin", "install", plugin.to_str().unwrap()],
    );
    assert!(
        install.code == Some(0)
            && install.stdout.contains(&format!(
                "Plugin \"{PLUGIN}\" installed successfully. Installed 2 skills."
            )),
        "{}",
        install.all()
    );
    let (run, list) = copilot_list(&copilot, &home, &[]);
    assert!(
        list.iter().any(|p| p["name"] == PLUGIN
            && p["enabled"] == Json::Bool(true)
            && p["source"] == "installed"),
        "{}",
        run.all()
    );
    let copied = home.join(".copilot/installed-plugins/_direct/copilot-plugin/agents");
    let mut agents: BTreeSet<String> = BTreeSet::new();
    for e in fs::read_dir(&copied)
        .unwrap_or_else(|e| panic!("{}: {e}\n{}", copied.display(), install.all()))
    {
        let f = e.unwrap().file_name().to_string_lossy().to_string();
        agents.insert(f.trim_end_matches(".agent.md").to_string());
    }
    assert_eq!(agents, names);

    // Marketplace flow: add by absolute path, install plugin@marketplace.
    let market = tmp.path().join("copilot-market");
    toolgate_convert(&[
        "--to",
        "copilot",
        "--marketplace",
        MARKET,
        src.to_str().unwrap(),
        market.to_str().unwrap(),
    ]);
    let add = run_host(
        &copilot,
        &home,
        &["plugin", "marketplace", "add", market.to_str().unwrap()],
    );
    assert!(
        add.code == Some(0)
            && add
                .stdout
                .contains(&format!("Marketplace \"{MARKET}\" added successfully.")),
        "{}",
        add.all()
    );
    let id = format!("{PLUGIN}@{MARKET}");
    let install = run_host(&copilot, &home, &["plugin", "install", &id]);
    assert!(
        install.code == Some(0)
            && install
                .stdout
                .contains(&format!("Plugin \"{PLUGIN}\" installed successfully.")),
        "{}",
        install.all()
    );
    let (run, list) = copilot_list(&copilot, &home, &[]);
    assert!(
        list.iter().any(|p| p["name"] == PLUGIN
            && p["marketplace"] == MARKET
            && p["enabled"] == Json::Bool(true)),
        "{}",
        run.all()
    );
}

#[test]
fn copilot_cli_rejects_or_under_reports_a_broken_converted_plugin() {
    let Some((copilot, tmp, home)) = host_with_home("copilot") else {
        return;
    };
    let (src, _) = make_plugin(tmp.path());
    let plugin = tmp.path().join("broken");
    toolgate_convert(&[
        "--to",
        "copilot",
        src.to_str().unwrap(),
        plugin.to_str().unwrap(),
    ]);

    // A malformed frontmatter in a converted skill: the host drops it and says so.
    let skill = plugin.join("skills/ce-hello-skill/SKILL.md");
    let text = fs::read_to_string(&skill).unwrap();
    fs::write(
        &skill,
        text.replacen("description: \"", "description: \"\"oops ", 1),
    )
    .unwrap();
    let skills = run_host(
        &copilot,
        &home,
        &[
            "--plugin-dir",
            plugin.to_str().unwrap(),
            "skill",
            "list",
            "--json",
        ],
    );
    let all = skills.all();
    assert!(
        all.contains("The following skills failed to load")
            && all.contains("ce-hello-skill/SKILL.md: failed to parse YAML frontmatter"),
        "{all}"
    );
    assert!(
        !skills.stdout.contains("\"name\": \"ce-hello-skill\""),
        "the broken skill must not be listed:\n{all}"
    );

    // A malformed converted agent: Copilot CLI 1.0.102 only reads agent frontmatter when a
    // (logged-in) session starts, so offline it installs without complaint. Asserted, so that a
    // host that starts checking agents at install shows up here and this test can use it.
    let agent = plugin.join("agents/ce-coherence-reviewer.agent.md");
    let text = fs::read_to_string(&agent).unwrap();
    fs::write(&agent, text.replacen("tools: [", "tools: [[", 1)).unwrap();

    // A broken plugin.json is rejected outright.
    fs::write(
        plugin.join("plugin.json"),
        "{\"name\": \"compound-engineering\", ",
    )
    .unwrap();
    let install = run_host(
        &copilot,
        &home,
        &["plugin", "install", plugin.to_str().unwrap()],
    );
    assert!(
        install.code != Some(0) && install.all().contains("Failed to parse plugin.json"),
        "{}",
        install.all()
    );
    fs::write(
        plugin.join("plugin.json"),
        r#"{"name": "compound-engineering", "version": "2.0.0"}"#,
    )
    .unwrap();
    let install = run_host(
        &copilot,
        &home,
        &["plugin", "install", plugin.to_str().unwrap()],
    );
    assert!(
        install.code == Some(0)
            && install
                .stdout
                .contains(&format!("Plugin \"{PLUGIN}\" installed successfully.")),
        "{}",
        install.all()
    );
    // Installed, the broken skill is still reported as failing and left out.
    let skills = run_host(&copilot, &home, &["skill", "list", "--json"]);
    let all = skills.all();
    assert!(
        all.contains("ce-hello-skill/SKILL.md: failed to parse YAML frontmatter"),
        "{all}"
    );
    assert!(
        !skills.stdout.contains("\"name\": \"ce-hello-skill\""),
        "{all}"
    );
    assert!(
        skills.stdout.contains("\"name\": \"ce-hello-cmd\""),
        "{all}"
    );
}
