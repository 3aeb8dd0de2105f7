//! `toolgate install`, `uninstall`, `doctor` and `hook`: host integration.
//!
//! The pipeline of `install`: preflight (the backend really runs a program through
//! `toolgate exec`; the target is writable) → discover the tools (the same manifest as
//! `toolgate tools list --json`) → render the templates (`toolgate_hosts`) → write atomically
//! with a receipt. `hook` is dispatched by `main` before tracing and the async runtime start,
//! so a host gets its answer in a few milliseconds.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use clap::{Args, Parser, Subcommand, ValueEnum};
use serde_json::Value;
use toolgate_hosts::hook::{self, HookConfig, Mode};
use toolgate_hosts::preflight::{Check, Level, Report, check_writable};
use toolgate_hosts::{Host, InstallOptions, Locations, Surface};
use toolgate_sandbox::Backend;

use crate::paths;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum HostArg {
    /// GitHub Copilot CLI.
    Copilot,
    /// Claude Code.
    Claude,
    /// VS Code (Copilot Chat).
    Vscode,
}

impl From<HostArg> for Host {
    fn from(h: HostArg) -> Self {
        match h {
            HostArg::Copilot => Host::Copilot,
            HostArg::Claude => Host::Claude,
            HostArg::Vscode => Host::Vscode,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SurfaceArg {
    Debrief,
    Codeact,
    All,
}

impl From<SurfaceArg> for Surface {
    fn from(s: SurfaceArg) -> Self {
        match s {
            SurfaceArg::Debrief => Surface::Debrief,
            SurfaceArg::Codeact => Surface::Codeact,
            SurfaceArg::All => Surface::All,
        }
    }
}

/// Arguments of `toolgate install`.
#[derive(Args, Debug)]
pub struct InstallArgs {
    /// The host to install into.
    #[arg(value_enum)]
    pub host: HostArg,
    /// Install for this user (every repository) instead of the project at --target.
    #[arg(long)]
    pub global: bool,
    /// Sandbox backend the installed files use; `auto` picks hyperlight only where it really
    /// runs, else monty.
    #[arg(long, value_name = "auto|monty|hyperlight", default_value = "auto", value_parser = parse_backend)]
    pub backend: Backend,
    /// Which tools the registered MCP server (`toolgate mcp --surface …`) exposes.
    #[arg(long, value_enum, default_value = "all")]
    pub surface: SurfaceArg,
    /// Print the changes as a unified diff and write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// The project (repository) root (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub target: Option<PathBuf>,
}

/// Arguments of `toolgate uninstall`.
#[derive(Args, Debug)]
pub struct UninstallArgs {
    #[arg(value_enum)]
    pub host: HostArg,
    /// Remove the user-level install instead of the project's.
    #[arg(long)]
    pub global: bool,
    /// The project root (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub target: Option<PathBuf>,
}

/// Arguments of `toolgate doctor`.
#[derive(Args, Debug)]
pub struct DoctorArgs {
    /// The backend to check (`auto`: the one `toolgate exec` would pick).
    #[arg(long, value_name = "auto|monty|hyperlight", default_value = "auto", value_parser = parse_backend)]
    pub backend: Backend,
    /// The project root an install would write to (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub target: Option<PathBuf>,
}

/// `toolgate hook <event>`.
#[derive(Subcommand, Debug)]
pub enum HookCommand {
    /// Answer a host's pre-tool-use hook (payload on stdin, decision on stdout). The mode comes
    /// from TOOLGATE_MODE (or CODEACT_MODE): off (default), nudge, exclusive.
    PreToolUse(HookArgs),
}

#[derive(Args, Debug)]
pub struct HookArgs {
    /// Sandbox function names to list in a deny reason (comma-separated).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub tools: Vec<String>,
    /// Nudge mode: how many read-only calls in a row pass before the next is denied
    /// [default: TOOLGATE_NUDGE_AFTER, else 3].
    #[arg(long, value_name = "N")]
    pub nudge_after: Option<u32>,
}

/// `toolgate hook …` on its own, for the early dispatch in `main`.
#[derive(Parser, Debug)]
#[command(name = "toolgate hook", about = "Answer an agent host's hook")]
struct HookCli {
    #[command(subcommand)]
    command: HookCommand,
}

fn parse_backend(s: &str) -> Result<Backend, String> {
    s.parse()
}

#[allow(clippy::print_stdout)]
fn out(s: &str) {
    println!("{s}");
}

fn home() -> PathBuf {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// VS Code's user folder: `TOOLGATE_VSCODE_USER_DIR`, else the platform default.
fn vscode_user_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("TOOLGATE_VSCODE_USER_DIR") {
        return PathBuf::from(d);
    }
    if cfg!(target_os = "macos") {
        return home().join("Library/Application Support/Code/User");
    }
    if cfg!(windows)
        && let Some(d) = std::env::var_os("APPDATA")
    {
        return PathBuf::from(d).join("Code/User");
    }
    std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| home().join(".config"))
        .join("Code/User")
}

fn target_dir(target: Option<&Path>) -> Result<PathBuf> {
    let dir = match target {
        Some(d) => d.to_path_buf(),
        None => std::env::current_dir().context("reading the current directory")?,
    };
    dir.canonicalize().with_context(|| {
        format!(
            "target {} not found: pass an existing project folder with --target",
            dir.display()
        )
    })
}

fn locations(target: PathBuf) -> Locations {
    Locations {
        target,
        home: home(),
        data_dir: paths::data_dir(),
        vscode_user_dir: vscode_user_dir(),
    }
}

/// The toolgate binary the hosts should run: this one, by absolute path.
fn exe() -> String {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.canonicalize().ok())
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|| "toolgate".to_owned())
}

/// Run a small program through `toolgate exec` with `backend`: usable means it printed 42.
fn probe_backend(exe: &str, backend: Backend, workspace: &Path) -> Check {
    let name = format!("backend {backend}");
    let output = Command::new(exe)
        .args([
            "exec",
            "--backend",
            backend.as_str(),
            "--raw",
            "--timeout",
            "20",
        ])
        .arg("--workspace")
        .arg(workspace)
        .args(["--code", "print(6 * 7)"])
        .env_remove("TOOLGATE_BACKEND")
        .env_remove("CODEACT_BACKEND")
        .output();
    match output {
        Ok(o) if o.status.success() && String::from_utf8_lossy(&o.stdout).trim() == "42" => {
            Check::new(name, Level::Ok, "ran a program through `toolgate exec`")
        }
        Ok(o) => Check::new(
            name,
            Level::Problem,
            format!(
                "`toolgate exec --backend {backend}` did not run a program ({}): {}",
                o.status,
                String::from_utf8_lossy(&o.stderr).trim()
            ),
        ),
        Err(e) => Check::new(name, Level::Problem, format!("cannot run {exe}: {e}")),
    }
}

/// Resolve `requested` (auto → the backend that runs here) and prove it runs.
fn preflight_backend(
    exe: &str,
    requested: Backend,
    workspace: &Path,
    report: &mut Report,
) -> Option<toolgate_hosts::Backend> {
    match toolgate_sandbox::detect(requested, |k| std::env::var(k).ok()) {
        Ok(sel) => {
            if requested == Backend::Auto
                && sel.backend == Backend::Monty
                && let Err(why) = toolgate_sandbox::hyperlight_status()
            {
                report.push(Check::new(
                    "backend hyperlight",
                    Level::Note,
                    format!("not usable here ({why}); auto uses monty"),
                ));
            }
            let check = probe_backend(exe, sel.backend, workspace);
            let ok = check.level == Level::Ok;
            report.push(check);
            ok.then_some(match sel.backend {
                Backend::Hyperlight => toolgate_hosts::Backend::Hyperlight,
                _ => toolgate_hosts::Backend::Monty,
            })
        }
        Err(why) => {
            report.push(Check::new(
                format!("backend {requested}"),
                Level::Problem,
                why,
            ));
            None
        }
    }
}

/// The `toolgate tools list --json` manifest of the CodeAct tools, and the Markdown reference.
async fn discover(target: &Path, backend: toolgate_hosts::Backend) -> Result<(Vec<Value>, String)> {
    let tools = crate::debrief_cli::codeact_tools(target).await?;
    let sb = match backend {
        toolgate_hosts::Backend::Monty => Backend::Monty,
        toolgate_hosts::Backend::Hyperlight => Backend::Hyperlight,
    };
    Ok((tools.manifest(sb), tools.reference(sb)))
}

fn show(p: &Path, root: &Path) -> String {
    p.strip_prefix(root)
        .map(|r| r.display().to_string())
        .unwrap_or_else(|_| p.display().to_string())
}

fn marketplace_name(path: &Path) -> String {
    std::fs::read(path)
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .and_then(|v| v.get("name").and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_else(|| toolgate_hosts::MARKETPLACE_NAME.to_owned())
}

pub async fn install(args: InstallArgs) -> Result<i32> {
    let target = target_dir(args.target.as_deref())?;
    let loc = locations(target.clone());
    let host: Host = args.host.into();
    let exe = exe();
    let mut report = Report::default();
    let backend = preflight_backend(&exe, args.backend, &target, &mut report);
    if args.global {
        report.push(check_writable("data dir", &loc.data_dir));
        match host {
            Host::Copilot => report.push(check_writable("~/.copilot", &loc.home.join(".copilot"))),
            Host::Vscode => report.push(check_writable("VS Code user dir", &loc.vscode_user_dir)),
            Host::Claude => {}
        }
    } else {
        report.push(check_writable("target", &target));
    }
    let backend = match backend {
        Some(b) if !report.has_problems() => b,
        _ => {
            eprint!("{}", report.render());
            bail!("preflight failed; nothing was written (run `toolgate doctor` for details)");
        }
    };
    let (manifest, reference) = discover(&target, backend).await?;
    let tools = toolgate_hosts::manifest::manifest_from_value(&Value::Array(manifest))?;
    let opts = InstallOptions {
        host,
        global: args.global,
        backend,
        surface: args.surface.into(),
        exe: exe.clone(),
        tools,
        tools_reference: reference,
    };
    let plan = toolgate_hosts::plan(&opts, &loc)?;
    if args.dry_run {
        let diff = toolgate_hosts::unified_diff(&plan);
        if diff.is_empty() {
            out(&format!("{host}: already installed, nothing would change"));
        } else {
            out(diff.trim_end());
        }
        return Ok(0);
    }
    let applied = toolgate_hosts::apply(&plan)?;
    let root = &plan.display_root;
    for p in &applied.written {
        out(&format!("wrote     {}", show(p, root)));
    }
    for p in &applied.removed {
        out(&format!("removed   {}", show(p, root)));
    }
    if !applied.changed {
        out(&format!(
            "{host}: already installed (backend {backend}), nothing changed"
        ));
        return Ok(0);
    }
    out(&format!("receipt   {}", show(&applied.receipt, root)));
    out(&format!(
        "toolgate installed into {host} (backend {backend}, MCP surface {}).",
        opts.surface
    ));
    let mroot = if args.global {
        loc.data_dir.join("hosts").join(host.as_str())
    } else {
        target.clone()
    };
    match host {
        Host::Copilot => {
            let name = marketplace_name(&mroot.join(".github/plugin/marketplace.json"));
            out(&format!(
                "Next: copilot plugin marketplace add {}\n      copilot plugin install toolgate@{name}\nthen restart the session. Enforcement: set TOOLGATE_MODE=nudge or exclusive.",
                mroot.display()
            ));
        }
        Host::Claude => {
            let name = marketplace_name(&mroot.join(".claude-plugin/marketplace.json"));
            out(&format!(
                "Next: claude plugin marketplace add {}\n      claude plugin install toolgate@{name}\nthen restart the session. Enforcement: set TOOLGATE_MODE=nudge or exclusive.",
                mroot.display()
            ));
        }
        Host::Vscode => out(
            "Next: reload VS Code; the toolgate MCP server and the codeact agent are available.",
        ),
    }
    Ok(0)
}

pub async fn uninstall(args: UninstallArgs) -> Result<i32> {
    let target = target_dir(args.target.as_deref())?;
    let loc = locations(target.clone());
    let host: Host = args.host.into();
    let report = toolgate_hosts::uninstall(host, args.global, &loc)?;
    let root = if args.global { loc.home } else { target };
    if !report.receipt_found {
        out(&format!(
            "{host}: no toolgate install recorded at {}; nothing removed",
            report.receipt.display()
        ));
        return Ok(0);
    }
    for p in &report.removed {
        out(&format!("removed   {}", show(p, &root)));
    }
    for p in &report.restored {
        out(&format!(
            "restored  {} (toolgate's entry taken out)",
            show(p, &root)
        ));
    }
    for p in &report.missing {
        out(&format!("missing   {} (already gone)", show(p, &root)));
    }
    for p in &report.kept_modified {
        out(&format!(
            "kept      {} (changed since install; it is yours now)",
            show(p, &root)
        ));
    }
    for p in &report.kept_shared {
        out(&format!(
            "kept      {} (another host's toolgate install uses it too)",
            show(p, &root)
        ));
    }
    out(&format!("toolgate uninstalled from {host}."));
    Ok(0)
}

pub async fn doctor(args: DoctorArgs) -> Result<i32> {
    let target = target_dir(args.target.as_deref())?;
    let loc = locations(target.clone());
    let exe = exe();
    let mut report = Report::default();
    report.push(Check::new(
        "toolgate",
        Level::Ok,
        format!("{exe} {}", env!("CARGO_PKG_VERSION")),
    ));
    preflight_backend(&exe, args.backend, &target, &mut report);
    if args.backend == Backend::Auto {
        // Also say how an explicit choice would fare.
        if let Ok(()) = toolgate_sandbox::hyperlight_status() {
            report.push(Check::new("backend hyperlight", Level::Ok, "usable"));
        }
    }
    report.push(check_confinement());
    report.push(check_writable("target", &target));
    report.push(check_writable("data dir", &loc.data_dir));
    report.push(check_writable("hook state", &hook_state_dir()));
    for (cli, what) in [
        ("copilot", "Copilot CLI"),
        ("claude", "Claude Code"),
        ("code", "VS Code"),
    ] {
        let found = std::env::var_os("PATH")
            .map(|p| std::env::split_paths(&p).any(|d| d.join(cli).is_file()))
            .unwrap_or(false);
        report.push(Check::new(
            format!("host {cli}"),
            Level::Note,
            if found {
                format!("{what} found on PATH")
            } else {
                format!("{what} not on PATH (installing files for it still works)")
            },
        ));
    }
    let (mode, var, warn) = Mode::from_env(|k| std::env::var(k).ok());
    report.push(Check::new(
        "hook mode",
        if warn.is_some() {
            Level::Problem
        } else {
            Level::Note
        },
        warn.unwrap_or_else(|| format!("{var}={}", mode.as_str())),
    ));
    out(report.render().trim_end());
    Ok(i32::from(report.has_problems()))
}

/// What OS confinement bash and command tools get here, proven by starting one confined
/// process (`/bin/true`) through this binary's launcher, not only by asking the kernel.
fn check_confinement() -> Check {
    let name = "process confinement";
    let launcher = std::env::current_exe().ok();
    let confiner = match launcher.as_deref().map(toolgate_confine::Confiner::detect) {
        Some(Ok(c)) => c,
        Some(Err(e)) => {
            return Check::new(
                name,
                Level::Note,
                format!(
                    "unavailable: {e}; bash and command tools are off unless your own config sets [workspace] unconfined_processes = true"
                ),
            );
        }
        None => {
            return Check::new(
                name,
                Level::Problem,
                "toolgate's own binary could not be found",
            );
        }
    };
    let proof = toolgate_confine::PrivateDirs::new().and_then(|dirs| {
        let policy = toolgate_confine::Policy::new(None, &dirs);
        confiner
            .command(&policy, "/bin/true".as_ref(), Vec::<String>::new())
            .env_clear()
            .current_dir(dirs.tmp())
            .stdin(std::process::Stdio::null())
            .output()
    });
    match proof {
        Ok(o) if o.status.success() => Check::new(name, Level::Ok, confiner.level().describe()),
        Ok(o) => Check::new(
            name,
            Level::Problem,
            format!(
                "{} — but a confined /bin/true failed: {}",
                confiner.level().describe(),
                String::from_utf8_lossy(&o.stderr).trim()
            ),
        ),
        Err(e) => Check::new(
            name,
            Level::Problem,
            format!("a confined /bin/true could not start: {e}"),
        ),
    }
}

fn hook_state_dir() -> PathBuf {
    std::env::var_os("TOOLGATE_HOOK_STATE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| paths::data_dir().join("hook-state"))
}

/// Entry point for `toolgate hook …` before anything else starts (see `main`).
pub fn hook_main() -> i32 {
    match HookCli::try_parse_from(std::env::args().skip(1)) {
        Ok(cli) => hook(cli.command).unwrap_or_else(|e| {
            eprintln!("toolgate hook: warning: {e:#}; allowing the call");
            0
        }),
        Err(e) => {
            let _ = e.print();
            e.exit_code()
        }
    }
}

#[allow(clippy::print_stdout)]
pub fn hook(command: HookCommand) -> Result<i32> {
    let HookCommand::PreToolUse(args) = command;
    let (mode, mode_var, warning) = Mode::from_env(|k| std::env::var(k).ok());
    if let Some(w) = warning {
        eprintln!("toolgate hook: warning: {w}");
    }
    let mut input = String::new();
    std::io::stdin()
        .read_to_string(&mut input)
        .context("reading the hook payload from stdin")?;
    if mode == Mode::Off {
        return Ok(0);
    }
    let nudge_after = args
        .nudge_after
        .or_else(|| {
            std::env::var(hook::NUDGE_AFTER_ENV)
                .ok()?
                .trim()
                .parse()
                .ok()
        })
        .unwrap_or(hook::DEFAULT_NUDGE_AFTER);
    let cfg = HookConfig {
        mode,
        mode_var,
        nudge_after,
        exe: exe(),
        tools: args.tools,
        state_dir: hook_state_dir(),
    };
    let answer = hook::answer(&input, &cfg);
    for w in &answer.warnings {
        eprintln!("toolgate hook: warning: {w}");
    }
    if !answer.stdout.is_empty() {
        println!("{}", answer.stdout);
    }
    Ok(0)
}
