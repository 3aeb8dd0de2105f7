//! Render the files of one install from the embedded templates.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::install::{Action, EntryKey, JsonEntry};
use crate::shell::quote;
use crate::{Backend, Host, InstallOptions, Locations, MARKETPLACE_NAME, PLUGIN_NAME, ToolSet};

const INSTRUCTIONS: &str = include_str!("../templates/instructions.md");
const AGENT_BODY: &str = include_str!("../templates/agent-body.md");
const AGENT_COPILOT: &str = include_str!("../templates/agent-copilot.md");
const AGENT_CLAUDE: &str = include_str!("../templates/agent-claude.md");
const AGENT_VSCODE: &str = include_str!("../templates/agent-vscode.md");
const SKILL_CODEACT: &str = include_str!("../templates/skill-codeact.md");
const SKILL_INSTALL: &str = include_str!("../templates/skill-install.md");

/// The version written into plugin manifests.
pub(crate) const VERSION: &str = env!("CARGO_PKG_VERSION");
const DESCRIPTION: &str = "toolgate: sandboxed CodeAct (one Python program instead of many tool calls), its enforcement hook and the toolgate MCP server.";
/// Seconds a host waits for the hook.
pub(crate) const HOOK_TIMEOUT_SECS: u64 = 5;

/// Where the files of one (host, scope) go.
pub(crate) struct Layout {
    /// The folder that holds the marketplace manifest (`.github/plugin/` or `.claude-plugin/`
    /// below it) for the plugin hosts.
    pub marketplace_root: PathBuf,
    pub receipt: PathBuf,
    /// Every path written or removed must lie under one of these.
    pub roots: Vec<PathBuf>,
}

pub(crate) fn layout(host: Host, global: bool, loc: &Locations) -> Layout {
    let receipt = if global {
        loc.data_dir
            .join("receipts")
            .join(format!("{}-global.json", host.as_str()))
    } else {
        loc.target
            .join(".toolgate/receipts")
            .join(format!("{}.json", host.as_str()))
    };
    let marketplace_root = if global {
        loc.data_dir.join("hosts").join(host.as_str())
    } else {
        loc.target.clone()
    };
    let roots = if !global {
        vec![loc.target.clone()]
    } else {
        match host {
            Host::Copilot => vec![loc.data_dir.clone(), loc.home.join(".copilot")],
            Host::Claude => vec![loc.data_dir.clone()],
            Host::Vscode => vec![loc.data_dir.clone(), loc.vscode_user_dir.clone()],
        }
    };
    Layout {
        marketplace_root,
        receipt,
        roots,
    }
}

struct Vars {
    pairs: Vec<(&'static str, String)>,
}

impl Vars {
    fn fill(&self, template: &str) -> String {
        let mut out = template.to_owned();
        for (k, v) in &self.pairs {
            out = out.replace(&format!("{{{{{k}}}}}"), v);
        }
        out
    }
}

fn syntax() -> String {
    "Example (the tools are plain function calls):\n\n```python\ntodo = []\nfor f in glob(pattern=\"src/**/*.py\"):\n    for n, line in enumerate(view(path=f).splitlines(), 1):\n        if \"TODO\" in line:\n            todo.append(f + \":\" + str(n) + \": \" + line.strip())\nprint(len(todo), \"TODOs\")\nprint(\"\\n\".join(todo[:50]))\n```".to_owned()
}

fn limitations(backend: Backend) -> String {
    match backend {
        Backend::Monty => "Backend monty: a sandboxed Python interpreter in a worker process. The program has no file, process, network or environment access of its own, only the tools below; no third-party packages. Default limits: 30 s, 256 MB, 1000 tool calls (`--timeout`, `--max-memory`, `--max-tool-calls`).".to_owned(),
        Backend::Hyperlight => "Backend hyperlight: the program runs in a Hyperlight micro-VM (KVM). Same syntax and tools; the VM has no file, process, network or environment access except through the tools; no third-party packages. Default limits: 30 s, 256 MB, 1000 tool calls (`--timeout`, `--max-memory`, `--max-tool-calls`).".to_owned(),
    }
}

/// The hook command line the hosts run (absolute binary, the tool names for the deny reason).
pub(crate) fn hook_command(opts: &InstallOptions) -> String {
    let tools: Vec<&str> = opts.tools.iter().map(|t| t.python.as_str()).collect();
    let mut cmd = format!("{} hook pre-tool-use", quote(&opts.exe));
    if !tools.is_empty() {
        cmd.push_str(" --tools ");
        cmd.push_str(&quote(&tools.join(",")));
    }
    cmd
}

/// `toolgate exec` exactly as the model should type it (before `--code '…'`).
pub(crate) fn exec_command(exe: &str, backend: Backend) -> String {
    format!(
        "{} exec --backend {backend} --workspace . --raw",
        quote(exe)
    )
}

fn vars(opts: &InstallOptions) -> Vars {
    let signatures: Vec<String> = opts.tools.iter().map(|t| t.signature()).collect();
    let exe = quote(&opts.exe);
    let pairs = vec![
        ("BACKEND", opts.backend.to_string()),
        ("EXEC", exec_command(&opts.exe, opts.backend)),
        ("EXE", exe),
        ("HOST", opts.host.to_string()),
        ("SYNTAX", syntax()),
        ("BACKEND_LIMITATIONS", limitations(opts.backend)),
        ("TOOL_SIGNATURES", signatures.join(", ")),
    ];
    Vars { pairs }
}

fn pretty(v: &Value) -> String {
    let mut s = serde_json::to_string_pretty(v).unwrap_or_default();
    s.push('\n');
    s
}

fn mcp_server(opts: &InstallOptions, vscode: bool) -> Value {
    let mut args = vec!["mcp", "--surface", opts.surface.as_str()];
    if opts.surface != ToolSet::Debrief {
        // `run_code` gets a workspace only when one is named (never the server's cwd by
        // default): installing names the project the host runs in — VS Code says which, the
        // CLIs start their servers in it.
        args.extend([
            "--workspace",
            if vscode { "${workspaceFolder}" } else { "." },
        ]);
    }
    let mut v = json!({
        "command": opts.exe,
        "args": args,
    });
    if vscode && let Value::Object(m) = &mut v {
        // VS Code wants the transport first; keep it readable.
        let mut o = serde_json::Map::new();
        o.insert("type".into(), json!("stdio"));
        o.extend(std::mem::take(m));
        return Value::Object(o);
    }
    v
}

fn file(path: PathBuf, content: String) -> Action {
    Action::File { path, content }
}

fn agent(template: &str, v: &Vars) -> String {
    let body = v.fill(AGENT_BODY);
    v.fill(&template.replace("{{AGENT_BODY}}", body.trim_end()))
}

/// Every file and JSON entry of one install, in write order.
pub(crate) fn actions(opts: &InstallOptions, loc: &Locations) -> Vec<Action> {
    let lay = layout(opts.host, opts.global, loc);
    let v = vars(opts);
    let instructions = v.fill(INSTRUCTIONS);
    let mut out = Vec::new();
    match opts.host {
        Host::Copilot => {
            let mroot = &lay.marketplace_root;
            let rel = "./.github/plugin/toolgate";
            let plugin = mroot.join(".github/plugin").join(PLUGIN_NAME);
            out.push(Action::Json {
                path: mroot.join(".github/plugin/marketplace.json"),
                entry: JsonEntry {
                    container: vec!["plugins".into()],
                    key: EntryKey::ArrayName(PLUGIN_NAME.into()),
                    value: json!({
                        "name": PLUGIN_NAME,
                        "description": DESCRIPTION,
                        "version": VERSION,
                        "source": rel,
                        "license": "Apache-2.0",
                        "keywords": ["codeact", "sandbox", "mcp", "toolgate"],
                    }),
                    skeleton: json!({
                        "name": MARKETPLACE_NAME,
                        "owner": {"name": "toolgate"},
                        "metadata": {"description": "Plugins installed by `toolgate install copilot`.", "version": VERSION},
                        "plugins": [],
                    }),
                    jsonc: false,
                },
            });
            out.push(file(
                plugin.join("plugin.json"),
                pretty(&json!({
                    "name": PLUGIN_NAME,
                    "description": DESCRIPTION,
                    "version": VERSION,
                    "author": {"name": "toolgate"},
                    "license": "Apache-2.0",
                    "keywords": ["codeact", "sandbox", "mcp", "toolgate"],
                    "agents": "agents/",
                    "skills": "skills/",
                    "hooks": "hooks.json",
                    "mcpServers": ".mcp.json",
                })),
            ));
            let hook = hook_command(opts);
            out.push(file(
                plugin.join("hooks.json"),
                pretty(&json!({
                    "version": 1,
                    "hooks": {"preToolUse": [{
                        "type": "command",
                        "bash": hook,
                        "powershell": format!("& {hook}"),
                        "timeoutSec": HOOK_TIMEOUT_SECS,
                    }]},
                })),
            ));
            out.push(file(
                plugin.join(".mcp.json"),
                pretty(&json!({"mcpServers": {PLUGIN_NAME: mcp_server(opts, false)}})),
            ));
            out.push(file(
                plugin.join("agents/codeact.agent.md"),
                agent(AGENT_COPILOT, &v),
            ));
            push_codeact_skill(&mut out, &plugin, opts, &v);
            for (name, args, desc) in [
                (
                    "codeact-install",
                    "--backend auto",
                    "Install or refresh toolgate CodeAct (instructions, agent, hook) for this repository; picks the sandbox backend that works here.",
                ),
                (
                    "codeact-install-monty",
                    "--backend monty",
                    "Install or refresh toolgate CodeAct with the monty sandbox backend (works everywhere).",
                ),
                (
                    "codeact-install-hyperlight",
                    "--backend hyperlight",
                    "Install or refresh toolgate CodeAct with the hyperlight micro-VM backend (Linux with a working KVM).",
                ),
            ]
            .into_iter()
            .filter(|(name, _, _)| opts.hyperlight || *name != "codeact-install-hyperlight")
            {
                let sv = Vars {
                    pairs: vec![
                        ("SKILL_NAME", name.to_owned()),
                        ("SKILL_DESCRIPTION", desc.to_owned()),
                        ("INSTALL_ARGS", args.to_owned()),
                    ],
                };
                out.push(file(
                    plugin.join("skills").join(name).join("SKILL.md"),
                    v.fill(&sv.fill(SKILL_INSTALL)),
                ));
            }
            let instr = if opts.global {
                // Where Copilot CLI loads personal instructions (`~/.copilot/codeact.instructions.md`
                // is not read: reference §11).
                loc.home
                    .join(".copilot/instructions/codeact.instructions.md")
            } else {
                loc.target
                    .join(".github/instructions/codeact.instructions.md")
            };
            out.push(file(instr, instructions));
        }
        Host::Claude => {
            let mroot = &lay.marketplace_root;
            let plugin = mroot.join(".claude-plugin").join(PLUGIN_NAME);
            out.push(Action::Json {
                path: mroot.join(".claude-plugin/marketplace.json"),
                entry: JsonEntry {
                    container: vec!["plugins".into()],
                    key: EntryKey::ArrayName(PLUGIN_NAME.into()),
                    value: json!({
                        "name": PLUGIN_NAME,
                        "source": "./.claude-plugin/toolgate",
                        "description": DESCRIPTION,
                        "version": VERSION,
                    }),
                    skeleton: json!({
                        "name": MARKETPLACE_NAME,
                        "owner": {"name": "toolgate"},
                        "plugins": [],
                    }),
                    jsonc: false,
                },
            });
            out.push(file(
                plugin.join(".claude-plugin/plugin.json"),
                pretty(&json!({
                    "name": PLUGIN_NAME,
                    "version": VERSION,
                    "description": DESCRIPTION,
                    "author": {"name": "toolgate"},
                    "license": "Apache-2.0",
                    "keywords": ["codeact", "sandbox", "mcp", "toolgate"],
                })),
            ));
            out.push(file(
                plugin.join(".mcp.json"),
                pretty(&json!({"mcpServers": {PLUGIN_NAME: mcp_server(opts, false)}})),
            ));
            out.push(file(
                plugin.join("hooks/hooks.json"),
                pretty(&json!({
                    "hooks": {"PreToolUse": [{
                        "matcher": "*",
                        "hooks": [{"type": "command", "command": hook_command(opts), "timeout": HOOK_TIMEOUT_SECS}],
                    }]},
                })),
            ));
            out.push(file(
                plugin.join("agents/codeact.md"),
                agent(AGENT_CLAUDE, &v),
            ));
            push_codeact_skill(&mut out, &plugin, opts, &v);
        }
        Host::Vscode => {
            let (mcp, prompts) = if opts.global {
                (
                    loc.vscode_user_dir.join("mcp.json"),
                    loc.vscode_user_dir.join("prompts"),
                )
            } else {
                (
                    loc.target.join(".vscode/mcp.json"),
                    loc.target.join(".github/instructions"),
                )
            };
            out.push(Action::Json {
                path: mcp,
                entry: JsonEntry {
                    container: vec!["servers".into()],
                    key: EntryKey::Object(PLUGIN_NAME.into()),
                    value: mcp_server(opts, true),
                    skeleton: json!({"servers": {}}),
                    jsonc: true,
                },
            });
            out.push(file(prompts.join("codeact.instructions.md"), instructions));
            let agent_path = if opts.global {
                prompts.join("codeact.agent.md")
            } else {
                loc.target.join(".github/agents/codeact.agent.md")
            };
            out.push(file(agent_path, agent(AGENT_VSCODE, &v)));
        }
    }
    out
}

fn push_codeact_skill(out: &mut Vec<Action>, plugin: &Path, opts: &InstallOptions, v: &Vars) {
    let dir = plugin.join("skills/toolgate-codeact");
    out.push(file(dir.join("SKILL.md"), v.fill(SKILL_CODEACT)));
    let mut reference = opts.tools_reference.trim_end().to_owned();
    reference.push('\n');
    out.push(file(dir.join("references/tools.md"), reference));
}
