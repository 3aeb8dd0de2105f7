//! The `Next:` lines of the text report: how to put what a conversion wrote where the target host
//! reads it, phrased as `toolgate install` phrases its own (`Next: <command>`, further commands
//! indented under it, then what to restart).

use std::path::Path;

use crate::agent::normalize_name;
use crate::plan::{Report, SourceKind};
use crate::target::Target;

/// Where the target host reads agent files in a project (relative to its root).
fn agents_dir(target: Target) -> &'static str {
    match target {
        Target::Copilot | Target::Vscode => ".github/agents",
        Target::Opencode => ".opencode/agents",
        Target::Codex => ".codex/agents",
        Target::Gemini => ".gemini/agents",
        Target::Kiro => ".kiro/agents",
        Target::Claude => ".claude/agents",
    }
}

/// What makes the host read the new files.
fn restart(target: Target) -> &'static str {
    match target {
        Target::Vscode => "then reload VS Code.",
        _ => "then restart the session.",
    }
}

/// A path as a shell word: as it is when it needs no quoting, else in single quotes.
fn quote(path: &str) -> String {
    let plain = !path.is_empty()
        && path
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+,:@%=~".contains(&b))
        && !path.starts_with('~');
    if plain {
        path.to_string()
    } else {
        format!("'{}'", path.replace('\'', r"'\''"))
    }
}

/// `Next:` followed by `commands`, one a line (the first after `Next: `, the others indented
/// under it), then `last` on a line of its own.
fn lines(commands: &[String], last: &str) -> String {
    let mut out = String::new();
    for (i, c) in commands.iter().enumerate() {
        out.push_str(if i == 0 { "Next: " } else { "\n      " });
        out.push_str(c);
    }
    out.push('\n');
    out.push_str(last);
    out
}

/// The `Next:` lines for `report`, once it has been written (`None` for a report with no
/// destination, i.e. a plan).
#[must_use]
pub fn next_steps(report: &Report) -> Option<String> {
    if report.destination.is_empty() {
        return None;
    }
    let target = report.target;
    let dst = quote(&report.destination);
    let dir = agents_dir(target);
    match report.kind {
        SourceKind::AgentFile => {
            let file = quote(report.files.first()?);
            Some(lines(
                &[format!("mkdir -p {dir} && cp {file} {dir}/")],
                restart(target),
            ))
        }
        SourceKind::AgentDirectory => Some(lines(
            &[format!(
                "mkdir -p {dir} && cp {dst}/*{} {dir}/",
                target.agent_extension()
            )],
            restart(target),
        )),
        SourceKind::Plugin => Some(plugin_steps(report, &dst)),
    }
}

fn plugin_steps(report: &Report, dst: &str) -> String {
    let target = report.target;
    let name = report.plugin.clone().unwrap_or_default();
    let wrote = |top: &str| report.files.iter().any(|f| Path::new(f).starts_with(top));
    let copy = |from: &str, to: &str| format!("mkdir -p {to} && cp -r {dst}/{from}/. {to}/");
    match (target, &report.marketplace) {
        (Target::Copilot | Target::Claude, Some(market)) => lines(
            &[
                format!("{target} plugin marketplace add {dst}"),
                format!(
                    "{target} plugin install {}",
                    quote(&format!("{name}@{market}"))
                ),
            ],
            restart(target),
        ),
        (Target::Copilot, None) => {
            lines(&[format!("copilot plugin install {dst}")], restart(target))
        }
        (Target::Claude, None) => lines(
            &[format!("claude --plugin-dir {dst}")],
            "loads it for one session; to install it, convert with --marketplace NAME and run \
             the `claude plugin` commands printed then.",
        ),
        (Target::Vscode, market) => {
            let dir = match market {
                Some(_) => quote(&format!(
                    "{}/plugins/{}",
                    report.destination,
                    normalize_name(&name)
                )),
                None => dst.to_string(),
            };
            lines(
                &[format!(
                    "add {dir} to VS Code's `chat.pluginLocations` setting (agent plugins, \
                     `chat.plugins.enabled`)"
                )],
                restart(target),
            )
        }
        (Target::Gemini, _) => lines(&[format!("gemini extensions link {dst}")], restart(target)),
        (Target::Opencode, _) => {
            let mut c: Vec<String> = ["agents", "commands", "skills"]
                .into_iter()
                .filter(|d| wrote(d))
                .map(|d| copy(d, &format!(".opencode/{d}")))
                .collect();
            if wrote("opencode.json") {
                c.push(format!(
                    "add the `mcp` servers of {dst}/opencode.json to the project's opencode.json"
                ));
            }
            lines(&c, restart(target))
        }
        (Target::Codex, _) => {
            let mut c = Vec::new();
            if wrote("agents") {
                c.push(copy("agents", ".codex/agents"));
            }
            if wrote("skills") {
                c.push(copy("skills", ".agents/skills"));
            }
            if wrote("prompts") {
                c.push(copy("prompts", "~/.codex/prompts"));
            }
            if wrote("config.toml") {
                c.push(format!(
                    "add the [mcp_servers] tables of {dst}/config.toml to ~/.codex/config.toml"
                ));
            }
            lines(&c, restart(target))
        }
        (Target::Kiro, _) => {
            let mut c: Vec<String> = ["agents", "skills"]
                .into_iter()
                .filter(|d| wrote(d))
                .map(|d| copy(d, &format!(".kiro/{d}")))
                .collect();
            if wrote("settings") {
                c.push(format!(
                    "add the servers of {dst}/settings/mcp.json to .kiro/settings/mcp.json"
                ));
            }
            lines(&c, restart(target))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(kind: SourceKind, target: Target, files: &[&str]) -> Report {
        Report {
            source: "src".into(),
            destination: "/tmp/out".into(),
            kind,
            from: None,
            target,
            plugin: Some("Sample Plugin".into()),
            marketplace: None,
            files: files.iter().map(|f| (*f).to_string()).collect(),
            agents: Vec::new(),
            skills: Vec::new(),
            commands: Vec::new(),
            notes: Vec::new(),
            warnings: Vec::new(),
        }
    }

    #[test]
    fn agents_go_where_each_host_reads_them() {
        let r = report(
            SourceKind::AgentFile,
            Target::Vscode,
            &["/tmp/out/a b.agent.md"],
        );
        assert_eq!(
            next_steps(&r).unwrap(),
            "Next: mkdir -p .github/agents && cp '/tmp/out/a b.agent.md' .github/agents/\n\
             then reload VS Code."
        );
        let r = report(SourceKind::AgentDirectory, Target::Codex, &["a.toml"]);
        assert_eq!(
            next_steps(&r).unwrap(),
            "Next: mkdir -p .codex/agents && cp /tmp/out/*.toml .codex/agents/\n\
             then restart the session."
        );
        let mut plan = r;
        plan.destination.clear();
        assert_eq!(next_steps(&plan), None);
    }

    #[test]
    fn plugins_use_the_hosts_own_commands() {
        let mut r = report(SourceKind::Plugin, Target::Copilot, &["plugin.json"]);
        assert_eq!(
            next_steps(&r).unwrap(),
            "Next: copilot plugin install /tmp/out\nthen restart the session."
        );
        r.marketplace = Some("team".into());
        assert_eq!(
            next_steps(&r).unwrap(),
            "Next: copilot plugin marketplace add /tmp/out\n      \
             copilot plugin install 'Sample Plugin@team'\nthen restart the session."
        );
        r.target = Target::Vscode;
        assert!(
            next_steps(&r)
                .unwrap()
                .starts_with("Next: add /tmp/out/plugins/sample-plugin to VS Code's")
        );
        let r = report(
            SourceKind::Plugin,
            Target::Codex,
            &["agents/a.toml", "prompts/p.md", "config.toml"],
        );
        assert_eq!(
            next_steps(&r).unwrap(),
            "Next: mkdir -p .codex/agents && cp -r /tmp/out/agents/. .codex/agents/\n      \
             mkdir -p ~/.codex/prompts && cp -r /tmp/out/prompts/. ~/.codex/prompts/\n      \
             add the [mcp_servers] tables of /tmp/out/config.toml to ~/.codex/config.toml\n\
             then restart the session."
        );
        let r = report(
            SourceKind::Plugin,
            Target::Gemini,
            &["gemini-extension.json"],
        );
        assert_eq!(
            next_steps(&r).unwrap(),
            "Next: gemini extensions link /tmp/out\nthen restart the session."
        );
    }
}
