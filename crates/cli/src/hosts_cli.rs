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

use anyhow::{Context, Result, anyhow, bail};
use clap::{Args, Parser, Subcommand, ValueEnum};
use serde_json::Value;
use toolgate_hosts::hook::{self, HookConfig, Mode};
use toolgate_hosts::preflight::{Check, Level, Report, check_writable};
use toolgate_hosts::{Host, InstallOptions, Locations, ToolSet};
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
    #[arg(long, default_value = "all", value_parser = crate::debrief_cli::tool_set_parser(true))]
    pub surface: ToolSet,
    /// Print the changes as a unified diff and write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// The project (repository) root (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub target: Option<PathBuf>,
    /// How the installed files run toolgate: `path` (the command `toolgate`, found on PATH; the
    /// default for a project install, so a committed install works for every clone),
    /// `absolute` (this binary's absolute path; the default with --global), or a path relative
    /// to --target such as `bin/toolgate` (written as `./bin/toolgate`; the hosts start hooks and
    /// servers in the repository root).
    #[arg(long, value_name = "path|absolute|REL_PATH")]
    pub binary_path: Option<String>,
}

/// Arguments of `toolgate uninstall`.
#[derive(Args, Debug)]
pub struct UninstallArgs {
    /// The host to remove toolgate from.
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
    /// Answer a host's pre-tool-use hook (payload on stdin, decision on stdout). The mode is the
    /// stricter of TOOLGATE_MODE (or CODEACT_MODE) and `mode` in the [hook] table of the user
    /// config (~/.config/toolgate/config.toml): off (default), nudge, exclusive. The
    /// environment can make the config's mode stricter, never weaker.
    PreToolUse(HookArgs),
}

#[derive(Args, Debug)]
pub struct HookArgs {
    /// Sandbox function names to list in a deny reason (comma-separated).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub tools: Vec<String>,
    /// Nudge mode: how many read-only calls in a row pass before the next is denied
    /// [default: TOOLGATE_NUDGE_AFTER, else `nudge_after` in [hook] of the user config, else 3].
    #[arg(long, value_name = "N")]
    pub nudge_after: Option<u32>,
}

/// `toolgate hook …` on its own, for the early dispatch in `main`.
#[derive(Parser, Debug)]
#[command(
    name = "hook",
    bin_name = "toolgate hook",
    about = "Answer an agent host's hook"
)]
struct HookCli {
    #[command(subcommand)]
    command: HookCommand,
}

fn parse_backend(s: &str) -> Result<Backend, String> {
    s.parse()
        .map_err(|e: toolgate_sandbox::UnknownBackend| e.to_string())
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

/// The command name a project install writes: found on the host's `PATH`.
const PATH_NAME: &str = "toolgate";

/// How the installed files spell the toolgate binary (see `--binary-path`), and a note when the
/// hosts will not find this binary under that spelling.
fn binary_ref(arg: Option<&str>, global: bool, target: &Path) -> Result<(String, Option<String>)> {
    let this = exe();
    let choice = arg.unwrap_or(if global { "absolute" } else { "path" });
    match choice {
        "absolute" => Ok((this, None)),
        "path" => {
            let note = match resolve_binary(PATH_NAME, target) {
                None => Some(format!(
                    "`{PATH_NAME}` is not on PATH, so the hosts will not find it: put it there (`cargo install --path crates/cli`, or link {this} into a PATH folder), or reinstall with --binary-path absolute"
                )),
                Some(found) if !same_file(&found, Path::new(&this)) => Some(format!(
                    "`{PATH_NAME}` on PATH is {}, not this binary ({this}); the hosts will run that one (`toolgate doctor` compares the versions)",
                    found.display()
                )),
                Some(_) => None,
            };
            Ok((PATH_NAME.to_owned(), note))
        }
        rel => {
            let p = Path::new(rel);
            if p.is_absolute() {
                if !p.is_file() {
                    bail!(
                        "--binary-path {rel}: no such file; pass an existing toolgate binary, `path` or `absolute`"
                    );
                }
                return Ok((rel.to_owned(), None));
            }
            let clean = rel.trim_start_matches("./");
            if !toolgate_fs::is_beneath_lexically(p) {
                bail!(
                    "--binary-path {rel}: a relative binary path must lie inside the project (no `..`); use `absolute` for a binary elsewhere"
                );
            }
            if !target.join(clean).is_file() {
                bail!(
                    "--binary-path {rel}: {} does not exist; build or copy toolgate there first, or use `path` or `absolute`",
                    target.join(clean).display()
                );
            }
            Ok((format!("./{clean}"), None))
        }
    }
}

/// Where `spelling` (as the installed files write it) points, seen from the project `root`:
/// a bare name is looked up on `PATH`, a relative path is taken from `root`.
fn resolve_binary(spelling: &str, root: &Path) -> Option<PathBuf> {
    let p = Path::new(spelling);
    if p.is_absolute() {
        return p.is_file().then(|| p.to_path_buf());
    }
    if spelling.contains('/') {
        let full = root.join(p);
        return full.is_file().then_some(full);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(spelling))
        .find(|c| is_executable(c))
}

fn is_executable(p: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        p.is_file()
    }
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// `toolgate --version` of `bin`: the version number, or why it could not be read.
fn binary_version(bin: &Path) -> Result<String> {
    let o = Command::new(bin)
        .arg("--version")
        .output()
        .map_err(|e| anyhow!("cannot run {}: {e}", bin.display()))?;
    let text = String::from_utf8_lossy(&o.stdout);
    match text.trim().strip_prefix("toolgate ") {
        Some(v) if o.status.success() => Ok(v.trim().to_owned()),
        _ => bail!(
            "{} --version printed {:?}, not `toolgate <version>`",
            bin.display(),
            text.trim()
        ),
    }
}

/// One doctor check per recorded install (project and global): the binary its files run exists
/// and is the version that wrote them. Returns the hosts with a recorded install, each once.
fn check_installs(loc: &Locations, report: &mut Report) -> Vec<Host> {
    let mut hosts = Vec::new();
    for global in [false, true] {
        for host in Host::ALL {
            let lay_receipt = if global {
                loc.data_dir
                    .join("receipts")
                    .join(format!("{}-global.json", host.as_str()))
            } else {
                loc.target
                    .join(".toolgate/receipts")
                    .join(format!("{}.json", host.as_str()))
            };
            let scope = if global { "global" } else { "project" };
            let name = format!("install {host} ({scope})");
            let receipt = toolgate_hosts::receipt::Receipt::load(&lay_receipt);
            if !matches!(receipt, Ok(None)) && !hosts.contains(&host) {
                hosts.push(host);
            }
            let receipt = match receipt {
                Ok(Some(r)) => r,
                Ok(None) => continue,
                Err(e) => {
                    report.push(Check::new(name, Level::Problem, e.to_string()));
                    continue;
                }
            };
            let Some(spelling) = receipt.exe.as_deref() else {
                report.push(Check::new(
                    name,
                    Level::Problem,
                    format!(
                        "recorded by toolgate {} before installs named their binary (it may hard-code a path that is gone); run `toolgate install {host}{}` again",
                        receipt.toolgate_version,
                        if global { " --global" } else { "" }
                    ),
                ));
                continue;
            };
            let root = if global { &loc.home } else { &loc.target };
            let check = match resolve_binary(spelling, root) {
                None => Check::new(
                    name,
                    Level::Problem,
                    if spelling.contains('/') {
                        format!(
                            "its files run {spelling}, which does not exist; build or copy toolgate there, or reinstall with --binary-path path"
                        )
                    } else {
                        format!(
                            "its files run `{spelling}` from PATH, and there is none on PATH; install toolgate (`cargo install --path crates/cli`) or put its folder on PATH"
                        )
                    },
                ),
                Some(bin) => match binary_version(&bin) {
                    Err(why) => Check::new(name, Level::Problem, why.to_string()),
                    Ok(v) if v != receipt.toolgate_version => Check::new(
                        name,
                        Level::Problem,
                        format!(
                            "its files run {spelling} ({}), which is toolgate {v}, but toolgate {} wrote them; run `toolgate install {host}{}` again with the toolgate you use",
                            bin.display(),
                            receipt.toolgate_version,
                            if global { " --global" } else { "" }
                        ),
                    ),
                    Ok(v) => Check::new(
                        name,
                        Level::Ok,
                        format!(
                            "runs {spelling} ({}), toolgate {v} as recorded",
                            bin.display()
                        ),
                    ),
                },
            };
            report.push(check);
        }
    }
    hosts
}

/// How to turn the hook on, for the hosts toolgate installs one into (Copilot CLI, Claude Code).
const ENFORCEMENT: &str = "set mode = \"nudge\" (or \"exclusive\") in the [hook] table of ~/.config/toolgate/config.toml, or TOOLGATE_MODE for one session";

/// toolgate installs no pre-tool-use hook into VS Code (its install is an MCP server entry,
/// instructions and an agent), so no hook mode reaches it.
const VSCODE_NO_HOOK: &str = "toolgate installs no pre-tool-use hook into VS Code";

/// `doctor`'s `hook mode` line: the mode and what set it (`off (default)` when nothing did),
/// and, per recorded install, what it means there: the hosts with toolgate's hook are told how
/// to turn it on while it is off by default; VS Code, which gets no hook, is never advised to,
/// and a mode that is on is said not to reach it.
fn hook_mode_detail(mode: Mode, var: &str, defaulted: bool, installed: &[Host]) -> String {
    let mut detail = if defaulted {
        "off (default)".to_owned()
    } else if hook::MODE_ENV.contains(&var) {
        format!("{var}={}", mode.as_str())
    } else {
        format!("{} (set in the [hook] table of {var})", mode.as_str())
    };
    let hooked: Vec<&str> = installed
        .iter()
        .filter(|h| matches!(h, Host::Copilot | Host::Claude))
        .map(|h| h.as_str())
        .collect();
    if defaulted && !hooked.is_empty() {
        let (hooks, allow) = if hooked.len() == 1 {
            ("hook", "allows")
        } else {
            ("hooks", "allow")
        };
        detail.push_str(&format!(
            "; the {} {hooks} {allow} every call: for enforcement {ENFORCEMENT}",
            hooked.join(" and ")
        ));
    }
    if mode != Mode::Off && installed.contains(&Host::Vscode) {
        detail.push_str(&format!(
            "; {VSCODE_NO_HOOK}, so the vscode install is not enforced"
        ));
    }
    detail
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
                why.to_string(),
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
    let (binary, binary_note) = binary_ref(args.binary_path.as_deref(), args.global, &target)?;
    let opts = InstallOptions {
        host,
        global: args.global,
        backend,
        surface: args.surface,
        exe: binary,
        tools,
        tools_reference: reference,
        hyperlight: toolgate_sandbox::hyperlight_status().is_ok(),
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
    if let Some(note) = &binary_note {
        eprintln!("note: {note}");
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
    let mroot = toolgate_hosts::marketplace_root(host, args.global, &loc);
    let enforcement = format!("Enforcement: {ENFORCEMENT}.");
    match host {
        Host::Copilot => {
            let name = marketplace_name(&mroot.join(".github/plugin/marketplace.json"));
            out(&format!(
                "Next: copilot plugin marketplace add {}\n      copilot plugin install toolgate@{name}\nthen restart the session. {enforcement}",
                mroot.display()
            ));
        }
        Host::Claude => {
            let name = marketplace_name(&mroot.join(".claude-plugin/marketplace.json"));
            let scope = if args.global { "" } else { " --scope project" };
            out(&format!(
                "Next: claude plugin marketplace add {}{scope}\n      claude plugin install toolgate@{name}{scope}\nthen restart the session. {enforcement}",
                mroot.display()
            ));
        }
        Host::Vscode => out(&format!(
            "Next: reload VS Code; the toolgate MCP server and the codeact agent are available. ({VSCODE_NO_HOOK}, so the hook mode does not apply there.)"
        )),
    }
    Ok(0)
}

pub async fn uninstall(args: UninstallArgs) -> Result<i32> {
    let target = target_dir(args.target.as_deref())?;
    let loc = locations(target.clone());
    let host: Host = args.host.into();
    // The host's own registration goes first, while the plugin files it points at still exist.
    if matches!(host, Host::Claude | Host::Copilot) {
        unregister(host, args.global, &loc);
    }
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

/// One host CLI command line (program and arguments) as the user would type it.
fn shown(program: &str, args: &[String]) -> String {
    std::iter::once(program.to_owned())
        .chain(args.iter().map(|a| toolgate_hosts::shell::quote(a)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Run a host CLI and parse its JSON output; `Err` when it failed (with the reason, one line
/// for the report).
fn host_json(cli: &Path, args: &[&str]) -> Result<Value> {
    let o = Command::new(cli)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| anyhow!("cannot run {}: {e}", cli.display()))?;
    if !o.status.success() {
        bail!(
            "`{} {}` failed ({}): {}",
            cli.display(),
            args.join(" "),
            o.status,
            String::from_utf8_lossy(&o.stderr).trim()
        );
    }
    serde_json::from_slice(&o.stdout).map_err(|e| {
        anyhow!(
            "`{} {}` printed no JSON ({e})",
            cli.display(),
            args.join(" ")
        )
    })
}

/// The host commands that take toolgate's plugin (and the marketplace toolgate created) out of
/// the host's own registry. With the host CLI on PATH they are run, for what the host really
/// has registered; without it they are printed, for the user to run where the host is.
fn unregister(host: Host, global: bool, loc: &Locations) {
    let mroot = toolgate_hosts::marketplace_root(host, global, loc);
    let (program, manifest) = match host {
        Host::Claude => ("claude", mroot.join(".claude-plugin/marketplace.json")),
        _ => ("copilot", mroot.join(".github/plugin/marketplace.json")),
    };
    let name = marketplace_name(&manifest);
    let id = format!("{}@{name}", toolgate_hosts::PLUGIN_NAME);
    // The marketplace is toolgate's own when toolgate created its manifest (then it is removed
    // from the host too); a user's marketplace that toolgate only added an entry to stays.
    let base = (!global).then_some(loc.target.as_path());
    let receipt = toolgate_hosts::receipt::Receipt::load_in(
        &toolgate_hosts::receipt_path(host, global, loc),
        base,
    )
    .ok()
    .flatten();
    let own_marketplace = receipt.as_ref().is_some_and(|r| {
        r.json_entries
            .iter()
            .any(|j| j.path == manifest && j.original.is_none())
    });
    let Some(cli) = resolve_binary(program, &loc.target) else {
        let scope = match (host, global) {
            (Host::Claude, false) => " --scope project",
            _ => "",
        };
        let mut lines = vec![format!("{program} plugin uninstall {id}{scope}")];
        if own_marketplace {
            lines.push(format!("{program} plugin marketplace remove {name}"));
        }
        out(&format!(
            "{program} is not on PATH, so toolgate cannot take the plugin out of the host's registry. If you added it there, run:\n  {}",
            lines.join("\n  ")
        ));
        return;
    };
    let same_dir = |p: &str| same_file(Path::new(p), &mroot);
    let mut commands: Vec<Vec<String>> = Vec::new();
    let mut problems: Vec<String> = Vec::new();
    match host {
        Host::Claude => {
            match host_json(&cli, &["plugin", "list", "--json"]) {
                Ok(list) => {
                    for p in list.as_array().into_iter().flatten() {
                        if p["id"] != id.as_str() {
                            continue;
                        }
                        let scope = p["scope"].as_str().unwrap_or("user");
                        // A project or local registration belongs to one project: only this one.
                        let here = p["projectPath"]
                            .as_str()
                            .is_none_or(|pp| same_file(Path::new(pp), &loc.target));
                        if scope == "user" || here {
                            commands.push(vec![
                                "plugin".into(),
                                "uninstall".into(),
                                id.clone(),
                                "--scope".into(),
                                scope.into(),
                            ]);
                        }
                    }
                }
                Err(e) => problems.push(e.to_string()),
            }
            if own_marketplace {
                match host_json(&cli, &["plugin", "marketplace", "list", "--json"]) {
                    Ok(list) => {
                        let known = list.as_array().into_iter().flatten().any(|m| {
                            m["name"] == name.as_str() && m["path"].as_str().is_some_and(same_dir)
                        });
                        if known {
                            commands.push(vec![
                                "plugin".into(),
                                "marketplace".into(),
                                "remove".into(),
                                name.as_str().into(),
                            ]);
                        }
                    }
                    Err(e) => problems.push(e.to_string()),
                }
            }
        }
        _ => {
            match host_json(&cli, &["plugin", "list", "--json"]) {
                Ok(list) => {
                    let installed = list.as_array().into_iter().flatten().any(|p| {
                        p["name"] == toolgate_hosts::PLUGIN_NAME
                            && p["marketplace"] == name.as_str()
                    });
                    if installed {
                        commands.push(vec![
                            "plugin".into(),
                            "uninstall".into(),
                            id.as_str().into(),
                        ]);
                    }
                }
                Err(e) => problems.push(e.to_string()),
            }
            if own_marketplace {
                match host_json(&cli, &["plugin", "marketplace", "list", "--json"]) {
                    Ok(list) => {
                        let known = list.as_array().into_iter().flatten().any(|m| {
                            m["name"] == name.as_str()
                                && m["source"]
                                    .as_str()
                                    .and_then(|s| s.strip_prefix("Local: "))
                                    .is_some_and(same_dir)
                        });
                        if known {
                            commands.push(vec![
                                "plugin".into(),
                                "marketplace".into(),
                                "remove".into(),
                                name.as_str().into(),
                            ]);
                        }
                    }
                    Err(e) => problems.push(e.to_string()),
                }
            }
        }
    }
    for args in &commands {
        let line = shown(program, args);
        match Command::new(&cli)
            .args(args)
            .stdin(std::process::Stdio::null())
            .output()
        {
            Ok(o) if o.status.success() => out(&format!("ran       {line}")),
            Ok(o) => problems.push(format!(
                "`{line}` failed ({}): {}; run it yourself",
                o.status,
                String::from_utf8_lossy(&o.stderr).trim()
            )),
            Err(e) => problems.push(format!("cannot run `{line}` ({e}); run it yourself")),
        }
    }
    for p in problems {
        eprintln!("warning: {p}");
    }
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
    if toolgate_confine::running_as_root() {
        report.push(Check::new(
            "user",
            Level::Note,
            "toolgate runs as root (uid 0): the programs it starts are still confined and hold no capabilities and no terminal (see above), but they run as uid 0: what they and toolgate write is owned by root, root-owned files in the workspace are theirs to change, and other users' files there are as closed to them as to any user without privilege; run toolgate as an ordinary user where you can",
        ));
    }
    report.push(check_writable("target", &target));
    report.push(check_writable("data dir", &loc.data_dir));
    report.push(check_writable("hook state", &hook_state_dir()));
    report.push(match crate::model_cli::installed_default() {
        Some(path) => {
            let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            #[allow(clippy::cast_precision_loss)]
            let mb = size as f64 / 1_048_576.0;
            let runs = if cfg!(feature = "local-model") {
                "the chat panel answers with it in process, small profile"
            } else {
                "this toolgate was built without the in-process model, so it is not used (rebuild without --no-default-features)"
            };
            Check::new(
                "model",
                Level::Note,
                format!("{} ({mb:.1} MB): {runs}", path.display()),
            )
        }
        None => Check::new(
            "model",
            Level::Note,
            "none installed (`toolgate model install qwen2.5-coder-0.5b` for the offline chat panel)",
        ),
    });
    let installed = check_installs(&loc, &mut report);
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
    let mut config_warnings = Vec::new();
    let (config_mode, _) = hook_config(&mut config_warnings);
    let (mode, var, warn) = Mode::resolve(
        |k| std::env::var(k).ok(),
        config_mode.as_ref().map(|(p, m)| (p.as_str(), m.as_str())),
    );
    let warn = warn.or(config_warnings.into_iter().next());
    // Nothing chose a mode: no variable holds one and the config has none.
    let defaulted = config_mode.is_none()
        && !hook::MODE_ENV
            .iter()
            .any(|k| std::env::var(k).is_ok_and(|v| !v.trim().is_empty()));
    report.push(Check::new(
        "hook mode",
        if warn.is_some() {
            Level::Problem
        } else {
            Level::Note
        },
        warn.unwrap_or_else(|| hook_mode_detail(mode, &var, defaulted, &installed)),
    ));
    out(report.render().trim_end());
    Ok(i32::from(report.has_problems()))
}

/// What OS confinement bash and command tools get here, proven by starting one confined
/// process (`/bin/cat`) through this binary's launcher and reading what it holds (capabilities,
/// no-new-privs, seccomp, session, terminal), not only by asking the kernel.
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
    // A confined /bin/cat, inspected from outside while it waits on its stdin: what a child
    // really holds, not what the launcher promises.
    match confiner.inspect_child() {
        Ok(held) if !held.has_capabilities() && held.no_new_privs && !held.terminal => Check::new(
            name,
            Level::Ok,
            format!(
                "{}; a confined child: {}",
                confiner.level().describe(),
                held.describe()
            ),
        ),
        Ok(held) => Check::new(
            name,
            Level::Problem,
            format!(
                "{} — but a confined child holds more than it should: {}",
                confiner.level().describe(),
                held.describe()
            ),
        ),
        Err(e) => Check::new(
            name,
            Level::Problem,
            format!(
                "{} — but a confined child could not be started and inspected: {e}",
                confiner.level().describe()
            ),
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

/// `[hook]` of the user config: (where, mode) and nudge_after. A broken config file is a
/// warning, not a failure. When `TOOLGATE_CONFIG` names another file, the mode in the usual
/// place is read too and the stricter one counts: an environment variable may not weaken the
/// mode the user chose (issue 30 item 5).
fn hook_config(warnings: &mut Vec<String>) -> (Option<(String, String)>, Option<u32>) {
    fn read(path: &Path, warnings: &mut Vec<String>) -> (Option<(String, String)>, Option<u32>) {
        match toolgate_config::ConfigFile::read(path) {
            Ok(Some(f)) => (
                f.hook.mode.map(|m| (path.display().to_string(), m)),
                f.hook.nudge_after,
            ),
            Ok(None) => (None, None),
            Err(e) => {
                warnings.push(format!("{e}; the [hook] settings there are ignored"));
                (None, None)
            }
        }
    }
    let path = paths::user_config();
    let (mode, nudge_after) = read(&path, warnings);
    let usual = paths::default_user_config();
    if usual == path {
        return (mode, nudge_after);
    }
    let (usual_mode, _) = read(&usual, warnings);
    let strictness = |m: &Option<(String, String)>| {
        m.as_ref()
            .and_then(|(_, v)| Mode::parse(v))
            .unwrap_or(Mode::Off)
    };
    if strictness(&usual_mode) > strictness(&mode) {
        (usual_mode, nudge_after)
    } else {
        (mode, nudge_after)
    }
}

/// The spelling the host ran this hook by (`argv[0]`: `toolgate` from PATH, `./bin/toolgate`),
/// when it resolves to this very binary: shell calls may then run `exec` under that name too.
fn hook_alias(exe: &str, cwd: Option<&str>) -> Option<String> {
    let argv0 = std::env::args().next()?;
    if argv0 == exe || Path::new(&argv0).is_absolute() {
        return None;
    }
    let root = cwd
        .map(PathBuf::from)
        .or_else(|| std::env::current_dir().ok())?;
    let found = resolve_binary(&argv0, &root)?;
    same_file(&found, Path::new(exe)).then_some(argv0)
}

#[allow(clippy::print_stdout)]
pub fn hook(command: HookCommand) -> Result<i32> {
    let HookCommand::PreToolUse(args) = command;
    let mut warnings = Vec::new();
    let (config_mode, config_nudge) = hook_config(&mut warnings);
    let (mode, mode_var, warning) = Mode::resolve(
        |k| std::env::var(k).ok(),
        config_mode.as_ref().map(|(p, m)| (p.as_str(), m.as_str())),
    );
    warnings.extend(warning);
    for w in &warnings {
        eprintln!("toolgate hook: warning: {w}");
    }
    // Bytes, not a String: a payload that is not UTF-8 is for the hook to judge (exclusive
    // mode denies it), not an I/O error that allows the call.
    let mut input = Vec::new();
    let read = std::io::stdin().read_to_end(&mut input);
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
        .or(config_nudge)
        .unwrap_or(hook::DEFAULT_NUDGE_AFTER);
    let exe = exe();
    let cwd = std::str::from_utf8(&input)
        .ok()
        .and_then(|text| hook::parse_payload(text).ok())
        .and_then(|p| p.cwd);
    let cfg = HookConfig {
        mode,
        mode_var,
        nudge_after,
        aliases: hook_alias(&exe, cwd.as_deref()).into_iter().collect(),
        exe,
        tools: args.tools,
        state_dir: hook_state_dir(),
    };
    let answer = match read {
        Ok(_) => hook::answer_bytes(&input, &cfg),
        Err(e) => hook::unreadable(
            &format!("the hook payload could not be read from stdin ({e})"),
            &String::from_utf8_lossy(&input),
            &cfg,
        ),
    };
    for w in &answer.warnings {
        eprintln!("toolgate hook: warning: {w}");
    }
    if !answer.stdout.is_empty() {
        println!("{}", answer.stdout);
    }
    Ok(0)
}
