//! `toolgate`: the command-line surface over the toolgate crates.

mod agent_cli;
mod calc_cli;
mod convert_cli;
mod debrief_cli;
mod exec;
mod hosts_cli;
mod human;
mod mcp_cli;
mod model_cli;
mod paths;
mod pgstac_load;
mod trust_cli;
mod workbench_chat;

use std::io::IsTerminal;

use anyhow::Result;
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "toolgate",
    version,
    about = "Let AI agents drive real tools safely, cheaply and offline.",
    long_about = "toolgate lets AI agents drive real tools safely, cheaply and offline: Debrief plot analysis through four agent tools with confirmed, undoable edits; CodeAct (sandboxed Python that calls tools); and portable agent definitions."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List the tools in the registry (the manifest installers and models read).
    Tools {
        #[command(subcommand)]
        command: debrief_cli::ToolsCommand,
    },
    /// Import Debrief REP files into a STAC catalogue.
    Import(debrief_cli::ImportArgs),
    /// Search the plot catalogue.
    Catalog {
        #[command(subcommand)]
        command: debrief_cli::CatalogCommand,
    },
    /// Summarise a plot or run an analysis tool on it (a person's surface: it can save).
    Plot {
        #[command(subcommand)]
        command: debrief_cli::PlotCommand,
    },
    /// Run one of Debrief's catalogue tools on a catalogue-style input and print its
    /// ToolResponse (or answer one debrief-calc stdio request with --stdio).
    Calc(calc_cli::CalcArgs),
    /// Run a CodeAct Python program in the sandbox; its tool calls go through the registry and
    /// policy. Prints one JSON envelope (or `--raw` output); exit status 1 when it failed.
    Exec(exec::ExecArgs),
    /// Walk through the agent tools on the built-in demo data: search, open, summarise, list
    /// tools, run an edit (previewed and confirmed), undo.
    Demo(debrief_cli::DemoArgs),
    /// Serve toolgate's tools over MCP on stdio (nothing but protocol on stdout).
    Mcp(mcp_cli::McpArgs),
    /// Serve the workbench and the MCP streamable-HTTP endpoint on 127.0.0.1.
    Serve(mcp_cli::ServeArgs),
    /// Install toolgate (CodeAct runner, MCP server, hook, agent) into an agent host.
    Install(hosts_cli::InstallArgs),
    /// Remove exactly what `toolgate install` wrote into a host.
    Uninstall(hosts_cli::UninstallArgs),
    /// Install a GGUF model for the offline chat panel (a known name, a URL or a path) and
    /// list the installed ones.
    Model {
        #[command(subcommand)]
        command: model_cli::ModelCommand,
    },
    /// Check that the sandbox backends and install targets are usable (non-zero on problems).
    Doctor(hosts_cli::DoctorArgs),
    /// Answer an agent host's hook (payload on stdin, decision on stdout).
    Hook {
        #[command(subcommand)]
        command: hosts_cli::HookCommand,
    },
    /// Convert agent definitions (or a whole plugin) between hosts, mapping tool names.
    Convert(convert_cli::ConvertArgs),
    /// Let a workspace's .toolgate/config.toml and .toolgate/tools/ widen your configuration
    /// (until they change). Untrusted, they may only narrow it.
    Trust(trust_cli::TrustArgs),
    /// Stop trusting a workspace's project configuration (it may only narrow again).
    Untrust(trust_cli::TrustArgs),
    /// Chat with a model that drives the Debrief tools (the panel, in a terminal).
    Chat(agent_cli::ChatArgs),
    /// Evaluation: scenario replay, routing probe, token budgets, CodeAct arm comparison.
    Eval {
        #[command(subcommand)]
        command: agent_cli::EvalCommand,
    },
}

fn init_tracing() {
    // Logs go to stderr: stdout is data (and protocol, in MCP stdio mode).
    let filter = tracing_subscriber::EnvFilter::try_from_env("TOOLGATE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
}

fn main() -> std::process::ExitCode {
    // The confinement launcher's stages must run before any thread exists (a new user
    // namespace needs a single-threaded process) and print nothing of toolgate's own.
    if let Some(stage) = std::env::args_os().nth(1)
        && (stage == toolgate_confine::GUARD_SUBCOMMAND
            || stage == toolgate_confine::EXEC_SUBCOMMAND)
    {
        let rest: Vec<std::ffi::OsString> = std::env::args_os().skip(2).collect();
        let code = toolgate_confine::launcher::main(&stage.to_string_lossy(), &rest);
        return std::process::ExitCode::from(u8::try_from(code).unwrap_or(255));
    }
    // A sandbox worker speaks its protocol on stdout: dispatch before anything can log or parse.
    if std::env::args().nth(1).as_deref() == Some(toolgate_sandbox::WORKER_SUBCOMMAND) {
        return std::process::ExitCode::from(u8::try_from(exec::worker()).unwrap_or(1));
    }
    // A host waits for its hook's answer: no tracing, no async runtime.
    if std::env::args().nth(1).as_deref() == Some("hook") {
        return std::process::ExitCode::from(u8::try_from(hosts_cli::hook_main()).unwrap_or(1));
    }
    init_tracing();
    let cli = Cli::parse();
    // `exec` is one short program: its runtime is this thread alone (no worker threads to start
    // and join; the sandbox worker is another process). Servers and the rest get two workers.
    let runtime = if matches!(cli.command, Command::Exec(_)) {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
    };
    let runtime = match runtime {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: could not start the async runtime: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let result: Result<i32> = runtime.block_on(async move {
        match cli.command {
            Command::Tools { command } => debrief_cli::tools(command).await,
            Command::Import(args) => debrief_cli::import(&args),
            Command::Catalog { command } => debrief_cli::catalog(command),
            Command::Plot { command } => debrief_cli::plot(command).await,
            Command::Demo(args) => debrief_cli::demo(&args).await,
            Command::Mcp(args) => mcp_cli::mcp(args).await,
            Command::Serve(args) => mcp_cli::serve(args).await,
            Command::Install(args) => hosts_cli::install(args).await,
            Command::Uninstall(args) => hosts_cli::uninstall(args).await,
            Command::Doctor(args) => hosts_cli::doctor(args).await,
            Command::Model { command } => model_cli::model(command),
            Command::Hook { command } => hosts_cli::hook(command),
            Command::Convert(args) => convert_cli::convert(&args),
            Command::Trust(args) => trust_cli::trust(&args),
            Command::Untrust(args) => trust_cli::untrust(&args),
            Command::Chat(args) => agent_cli::chat(args).await,
            Command::Eval { command } => agent_cli::eval(command).await,
            Command::Exec(args) => exec::run(args).await,
            Command::Calc(args) => calc_cli::calc(&args),
        }
    });
    match result {
        Ok(code) => std::process::ExitCode::from(u8::try_from(code).unwrap_or(1)),
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::from(1)
        }
    }
}
