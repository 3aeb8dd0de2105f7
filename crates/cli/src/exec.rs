//! `toolgate exec`: run a CodeAct Python program whose every tool call goes through the registry
//! and the policy, and print what it did as a JSON envelope.

// The CodeAct config, command tools and custom tools (used by `debrief_cli::codeact_registry`).
pub mod command_tools;
pub mod setup;
pub use setup::{load_config, register_codeact_tools};

use std::fs::OpenOptions;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use async_trait::async_trait;
use toolgate_core::Preview;
use toolgate_core::Registry;
use toolgate_core::flow::{Answer, Confirmer, Fixed};
use toolgate_sandbox::{
    Backend, Envelope, ExecRequest, Limits, PoolConfig, RegistryHost, WorkerCommand, WorkerPool,
};

/// Run a Python program (the monty subset) in the sandbox. Tools are Python functions; the
/// program's stdout, return value and error come back as a JSON envelope. Exit code 1 when the
/// program failed.
#[derive(clap::Args, Debug, Clone)]
pub struct ExecArgs {
    /// Workspace root: the file tools are confined to it and relative paths resolve against it
    /// (default: the current directory). Choosing it grants the workspace tools' side effects:
    /// they run without asking.
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,

    /// The program, inline.
    #[arg(long, value_name = "CODE", conflicts_with_all = ["file", "source"])]
    pub code: Option<String>,

    /// Read the program from a file (`-` for stdin).
    #[arg(long, short = 'f', value_name = "FILE", conflicts_with = "source")]
    pub file: Option<PathBuf>,

    /// `-` reads the program from stdin (a path reads that file).
    #[arg(value_name = "-")]
    pub source: Option<String>,

    /// Interpreter backend. `auto` uses hyperlight only where it is usable, else monty.
    /// TOOLGATE_BACKEND (or CODEACT_BACKEND) sets it when this flag is left at auto.
    #[arg(long, value_name = "auto|monty|hyperlight", default_value = "auto", value_parser = parse_backend)]
    pub backend: Backend,

    /// Print the program's stdout, then its return value as plain text, instead of the
    /// envelope (errors go to stderr).
    #[arg(long)]
    pub raw: bool,

    /// Wall-clock limit in seconds, tool calls included [default: `[limits] timeout_secs` of
    /// the config, else 30].
    #[arg(long, value_name = "S", value_parser = parse_seconds)]
    pub timeout: Option<Duration>,

    /// Memory limit, e.g. 256M or 1G [default: `[limits] max_memory` of the config, else 256M].
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub max_memory: Option<u64>,

    /// Most tool calls one program may make [default: `[limits] max_tool_calls` of the
    /// config, else 1000].
    #[arg(long, value_name = "N")]
    pub max_tool_calls: Option<u32>,

    /// Approve every tool call that would ask for confirmation (tools outside the workspace
    /// provider). Without it, such calls ask on the terminal, or are declined when there is none.
    #[arg(long)]
    pub yes: bool,

    /// Open this plot (stac://…) so the program can call the Debrief plot tools (with
    /// `feature_names` / `feature_ids` / `scope`). Their edits land on a scratch copy; when the
    /// program succeeds the net change is previewed once and applied as one undo step on
    /// approval (`--yes` or the terminal), or dropped.
    #[arg(long, value_name = "PLOT_ID")]
    pub plot: Option<String>,

    /// Save the plot after an approved program edit (a person's choice, like `plot run --save`).
    #[arg(long, requires = "plot")]
    pub save: bool,

    #[command(flatten)]
    pub store: crate::debrief_cli::StoreArgs,

    /// Run the interpreter inside this process instead of a worker process: faster to start,
    /// but the memory limit is only partly enforced and a runaway native operation cannot be
    /// stopped at the deadline.
    #[arg(long)]
    pub in_process: bool,
}

impl ExecArgs {
    /// The workspace root as an absolute path (the current directory by default). main.rs builds
    /// the workspace tools for this root.
    pub fn workspace_root(&self) -> Result<PathBuf> {
        let dir = match &self.workspace {
            Some(d) => d.clone(),
            None => std::env::current_dir().context("cannot read the current directory")?,
        };
        dir.canonicalize()
            .with_context(|| format!("workspace {} not found", dir.display()))
    }
}

fn parse_backend(s: &str) -> Result<Backend, String> {
    s.parse()
}

fn parse_seconds(s: &str) -> Result<Duration, String> {
    let secs: f64 = s
        .trim()
        .trim_end_matches('s')
        .parse()
        .map_err(|_| format!("invalid timeout \"{s}\": expected seconds, e.g. 30 or 2.5"))?;
    if !(secs > 0.0 && secs <= 86_400.0) {
        return Err(format!("timeout {s} out of range (0 < S ≤ 86400)"));
    }
    Ok(Duration::from_secs_f64(secs))
}

fn parse_size(s: &str) -> Result<u64, String> {
    toolgate_sandbox::parse_size(s)
}

/// The program and the file name its tracebacks show.
fn read_program(args: &ExecArgs) -> Result<(String, String)> {
    let from_stdin = || -> Result<(String, String)> {
        let mut code = String::new();
        std::io::stdin()
            .read_to_string(&mut code)
            .context("cannot read the program from stdin")?;
        Ok((code, "<stdin>".to_owned()))
    };
    let from_file = |path: &Path| -> Result<(String, String)> {
        let code = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the program from {}", path.display()))?;
        let name = path.file_name().map_or_else(
            || "main.py".to_owned(),
            |n| n.to_string_lossy().into_owned(),
        );
        Ok((code, name))
    };
    if let Some(code) = &args.code {
        return Ok((code.clone(), "main.py".to_owned()));
    }
    if let Some(file) = &args.file {
        return if file.as_os_str() == "-" {
            from_stdin()
        } else {
            from_file(file)
        };
    }
    match args.source.as_deref() {
        Some("-") => from_stdin(),
        Some(path) => from_file(Path::new(path)),
        None => bail!("no program given: pass --code CODE, --file FILE, or - to read stdin"),
    }
}

/// Asks on the controlling terminal; declines when there is none.
struct TerminalConfirmer;

#[async_trait]
impl Confirmer for TerminalConfirmer {
    async fn confirm(&self, preview: &Preview) -> Answer {
        let text = preview.plain_text();
        tokio::task::spawn_blocking(move || ask_on_tty(&text))
            .await
            .unwrap_or(Answer::Decline)
    }
}

fn ask_on_tty(text: &str) -> Answer {
    let Ok(mut tty) = OpenOptions::new().read(true).write(true).open("/dev/tty") else {
        eprintln!(
            "toolgate exec: a tool call needs confirmation and there is no terminal to ask; declined (pass --yes to approve such calls)"
        );
        return Answer::Decline;
    };
    if write!(tty, "\n{text}\n\nRun it? [y/N] ")
        .and_then(|()| tty.flush())
        .is_err()
    {
        return Answer::Decline;
    }
    let mut line = String::new();
    if BufReader::new(&tty).read_line(&mut line).is_err() {
        return Answer::Decline;
    }
    match line.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Answer::Approve,
        _ => Answer::Decline,
    }
}

fn print_envelope(env: &Envelope, raw: bool) -> Result<()> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if raw {
        out.write_all(env.stdout.as_bytes())?;
        let value = match &env.return_value {
            serde_json::Value::Null => String::new(),
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        if !value.is_empty() {
            if !env.stdout.is_empty() && !env.stdout.ends_with('\n') {
                out.write_all(b"\n")?;
            }
            out.write_all(value.as_bytes())?;
            out.write_all(b"\n")?;
        }
        out.flush()?;
        if !env.stderr.is_empty() {
            let mut err = std::io::stderr().lock();
            err.write_all(env.stderr.as_bytes())?;
            if !env.stderr.ends_with('\n') {
                err.write_all(b"\n")?;
            }
        }
    } else {
        out.write_all(env.to_json_pretty().as_bytes())?;
        out.write_all(b"\n")?;
        out.flush()?;
    }
    Ok(())
}

/// `toolgate exec`. `registry` already holds the workspace tools built for
/// [`ExecArgs::workspace_root`]. Returns the exit code: 0 when the program succeeded, 1 when it
/// failed, 2 when there was no program to run.
pub async fn run(args: ExecArgs, mut registry: Registry) -> Result<i32> {
    let (code, script_name) = match read_program(&args) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e:#}");
            return Ok(2);
        }
    };
    let selected = toolgate_sandbox::detect(args.backend, |k| std::env::var(k).ok())
        .map_err(anyhow::Error::msg)?;
    tracing::debug!(backend = %selected.backend, reason = %selected.reason, "sandbox backend");
    if selected.backend != Backend::Monty {
        bail!(
            "the {} backend has no runner in this build",
            selected.backend
        );
    }
    // Limits: built-in defaults, then the config files ([limits]), then the flags.
    let config = load_config(&args.workspace_root()?)?;
    let mut limits: Limits = config.limits();
    if let Some(t) = args.timeout {
        limits.timeout = t;
    }
    if let Some(m) = args.max_memory {
        limits.max_memory_bytes = m;
    }
    if let Some(n) = args.max_tool_calls {
        limits.max_tool_calls = n;
    }
    let call_timeout = limits.timeout;
    let req = ExecRequest::new(code)
        .with_script_name(script_name)
        .with_limits(limits);
    let confirmer: Arc<dyn Confirmer> = if args.yes {
        Arc::new(Fixed(Answer::Approve))
    } else {
        Arc::new(TerminalConfirmer)
    };
    // Command and custom tools run pre-approved like the workspace tools (choosing the
    // workspace grants them); the calls a custom tool makes are gated on their own. `shared`
    // lets custom tools run their nested programs on this host.
    // A plot for the program: its tools edit a scratch copy (one confirmation at the end).
    let transaction = match &args.plot {
        Some(plot_id) => {
            let store = crate::debrief_cli::open_store(&args.store)?;
            let session = Arc::new(std::sync::Mutex::new(toolgate_plot::session::Session::new(
                vec![store],
            )));
            session
                .lock()
                .map_err(|_| anyhow::anyhow!("the plot session is unavailable"))?
                .open(plot_id)?;
            let tx = toolgate_plot::transaction::PlotTransaction::begin(session.clone(), plot_id)?;
            registry
                .register(Arc::new(tx.provider()))
                .await
                .context("registering the plot tools")?;
            Some((session, tx, plot_id.clone()))
        }
        None => None,
    };
    let mut host = RegistryHost::new(Arc::new(registry), confirmer.clone())
        .context("cannot prepare the tools for the sandbox")?
        .auto_approve_provider(command_tools::COMMAND_TOOLS_PROVIDER)
        .auto_approve_provider(toolgate_sandbox::CUSTOM_TOOLS_PROVIDER)
        .with_call_timeout(call_timeout);
    if let Some((_, tx, _)) = &transaction {
        let tx = tx.clone();
        host = host
            .auto_approve_provider(toolgate_plot::transaction::SCRATCH_PROVIDER)
            .with_applier(move |cs| tx.apply_to_scratch(cs));
    }
    let host = host.shared();
    let host = host.as_ref();
    let mut envelope = if args.in_process {
        toolgate_sandbox::run(req, host).await
    } else {
        let command = WorkerCommand::current_exe()
            .context("cannot locate the toolgate executable to start a sandbox worker")?;
        let pool = WorkerPool::new(PoolConfig::new(command).with_size(1));
        pool.run(req, host).await
    };
    // Loading the workspace's custom tools ran this project's code before the program: it is
    // part of what the program cost (a spinning tool file must not hide behind a 5 ms figure).
    envelope.duration_ms += setup::custom_tools_load_time().as_secs_f64() * 1000.0;
    print_envelope(&envelope, args.raw)?;
    if let (Some((session, tx, plot_id)), true) = (&transaction, envelope.success) {
        use toolgate_plot::transaction::Committed;
        match tx
            .commit(confirmer.as_ref())
            .await
            .map_err(anyhow::Error::msg)?
        {
            Committed::NoChanges => eprintln!("The program changed nothing on {plot_id}."),
            Committed::Declined { .. } => {
                eprintln!("Declined: the program's plot edits were dropped.");
            }
            Committed::Applied { features, .. } => {
                eprintln!(
                    "Applied the program's edits to {features} feature(s) of {plot_id} as one undo step."
                );
                let mut s = session
                    .lock()
                    .map_err(|_| anyhow::anyhow!("the plot session is unavailable"))?;
                if args.save {
                    s.save(plot_id)?;
                    eprintln!("Saved {plot_id}.");
                } else {
                    eprintln!("Not saved (pass --save to keep it).");
                }
            }
        }
    }
    Ok(if envelope.success { 0 } else { 1 })
}

/// `toolgate __sandbox-worker`: the worker process's main loop (hidden; started by `exec`).
/// Call it before anything writes to stdout (stdout carries the worker protocol).
pub fn worker() -> i32 {
    toolgate_sandbox::worker_main()
}
