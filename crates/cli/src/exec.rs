//! `toolgate exec`: run a CodeAct Python program whose every tool call goes through the registry
//! and the policy, and print what it did as a JSON envelope. The runtime itself (tools,
//! pre-approvals, the plot commit through the gate) is `toolgate_codeact`; this file is the
//! command line around it.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use async_trait::async_trait;
use serde_json::Value;
use toolgate_codeact::paused::Progress;
use toolgate_codeact::{Executor, Surface};
use toolgate_core::Preview;
use toolgate_core::flow::{Answer, Confirmer, Fixed};
use toolgate_core::telemetry::JsonlSink;
use toolgate_plot::transaction::{Committed, PlotTransaction};
use toolgate_sandbox::{Backend, Envelope, ExecRequest, Limits};

/// Run a Python program (the monty subset) in the sandbox. Tools are Python functions; the
/// program's stdout, return value and error come back as a JSON envelope. Exit code 1 when the
/// program failed, 2 when there was no program; when its plot edits were not applied, the
/// commit's status code (3 refused, 4 declined, 1 failed — as every command's).
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

    /// Open this plot (its id, stac://…, or short name, e.g. `boat1`) so the program can call
    /// the Debrief plot tools (with `feature_names` / `feature_ids` / `scope`). Their edits land
    /// on a scratch copy; when the program succeeds the net change is previewed once and
    /// applied as one undo step on approval (`--yes` or the terminal), or dropped (then
    /// `success` is false, `plot.status` says why, and the exit code is 4 for a decline, 3 for
    /// a refusal, 1 for a failure).
    #[arg(long, value_name = "PLOT")]
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
        .map_err(|e: toolgate_sandbox::UnknownBackend| e.to_string())
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
    toolgate_config::parse_size(s).map_err(|e| e.to_string())
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
        match ask(preview.plain_text()).await {
            Some(answer) => answer,
            None => {
                eprintln!(
                    "toolgate exec: a tool call needs confirmation and there is no terminal to ask; declined (pass --yes to approve such calls)"
                );
                Answer::Decline
            }
        }
    }
}

/// Ask on the controlling terminal; `None` when there is none.
async fn ask(text: String) -> Option<Answer> {
    tokio::task::spawn_blocking(move || ask_on_tty(&text))
        .await
        .unwrap_or(Some(Answer::Decline))
}

fn ask_on_tty(text: &str) -> Option<Answer> {
    let mut tty = toolgate_fs::open::open_device(std::path::Path::new("/dev/tty"), true).ok()?;
    Some(answer_from(&mut tty, text))
}

fn answer_from(tty: &mut std::fs::File, text: &str) -> Answer {
    if write!(tty, "\n{text}\n\nRun it? [y/N] ")
        .and_then(|()| tty.flush())
        .is_err()
    {
        return Answer::Decline;
    }
    let mut line = String::new();
    if BufReader::new(&*tty).read_line(&mut line).is_err() {
        return Answer::Decline;
    }
    match line.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Answer::Approve,
        _ => Answer::Decline,
    }
}

/// `json` is the envelope with the plot report (`--raw` prints the program's own output).
fn print_envelope(env: &Envelope, json: &Value, raw: bool) -> Result<()> {
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
        out.write_all(serde_json::to_string_pretty(json)?.as_bytes())?;
        out.write_all(b"\n")?;
        out.flush()?;
    }
    Ok(())
}

/// The program file's path relative to the workspace root, when the program is a file beneath
/// it (both resolved, so a link or `..` cannot name a file outside as if it were inside).
fn workspace_relative(args: &ExecArgs, root: &Path) -> Option<String> {
    if args.code.is_some() {
        return None;
    }
    let file = args
        .file
        .clone()
        .or_else(|| args.source.as_deref().map(std::path::PathBuf::from))
        .filter(|f| f.as_os_str() != "-")?;
    let file = std::fs::canonicalize(file).ok()?;
    let root = std::fs::canonicalize(root).ok()?;
    let rel = file.strip_prefix(&root).ok()?;
    Some(rel.to_string_lossy().into_owned())
}

/// `toolgate exec`. Returns the exit code: 0 when the program succeeded (and its plot edits, if
/// any, were applied), 1 when it failed, 2 when there was no program to run; a commit that was
/// not applied exits with its status's code (`Status::exit_code`: 3 refused, 4 declined, 1
/// failed).
pub async fn run(args: ExecArgs) -> Result<i32> {
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
    // The worker starts first, so its process start-up runs on the other core while this one
    // reads the configuration and builds the registry (measured: the two overlap almost
    // entirely; see benches/README.md).
    let executor = if args.in_process {
        Executor::InProcess
    } else {
        let executor = Executor::workers(1)?;
        if let Executor::Workers(pool) = &executor
            && let Err(e) = pool.warm().await
        {
            tracing::debug!(error = %e, "the worker did not start early; it starts with the program");
        }
        executor
    };
    let root = args.workspace_root()?;
    // A program file inside the workspace is named by its workspace-relative path in tracebacks
    // ("scripts/check.py", line 3), so the developer can open it from there.
    let script_name = workspace_relative(&args, &root).unwrap_or(script_name);
    let tools = crate::debrief_cli::codeact_tools(&root).await?;
    // Limits: built-in defaults, then the config files ([limits]), then the flags.
    let mut limits: Limits = tools.config().limits();
    if let Some(t) = args.timeout {
        limits.timeout = t;
    }
    if let Some(m) = args.max_memory {
        limits.max_memory_bytes = m;
    }
    if let Some(n) = args.max_tool_calls {
        limits.max_tool_calls = n;
    }
    let req = ExecRequest::new(code)
        .with_script_name(script_name)
        .with_limits(limits);
    let confirmer: Arc<dyn Confirmer> = if args.yes {
        Arc::new(Fixed(Answer::Approve))
    } else {
        Arc::new(TerminalConfirmer)
    };
    let sink = Arc::new(JsonlSink::new(crate::paths::telemetry_file()));
    let runtime = tools.runtime(Surface::Exec, sink, executor);
    // A plot for the program: its tools edit a scratch copy (one confirmation at the end).
    let transaction = match &args.plot {
        Some(reference) => {
            // The plot by its id or short name, in your plots or the demo's (or --store's).
            let mut session = crate::debrief_cli::open_session(&args.store)?;
            let plot_id = crate::debrief_cli::plot_named(&mut session, reference)?;
            session.open(&plot_id)?;
            let session = Arc::new(std::sync::Mutex::new(session));
            let tx = PlotTransaction::begin(session, &plot_id)?;
            // The unit setting `plot run --units` reads, for the program's plot functions.
            if let Ok(text) = std::env::var("TOOLGATE_UNITS") {
                let units = toolgate_plot::tools::units::Units::parse(&text)
                    .map_err(|e| anyhow::anyhow!("TOOLGATE_UNITS: {e}"))?;
                tx.set_units(units);
            }
            Some(tx)
        }
        None => None,
    };
    let mut envelope = if args.yes {
        runtime
            .run(req, confirmer.clone(), transaction.as_ref())
            .await
    } else {
        // A call that needs a person pauses the program there and is asked on the terminal;
        // with no terminal the run ends at that call (exit 4), nothing of it having run.
        let mut progress = runtime.start(req, transaction.clone()).next().await;
        loop {
            match progress {
                Progress::Done(envelope) => break envelope,
                Progress::Paused(paused) => {
                    let asked = paused.asked();
                    let text = format!(
                        "{}\n\nThe program paused here; {}.",
                        asked.preview.plain_text(),
                        asked.already.describe()
                    );
                    match ask(text).await {
                        Some(answer) => progress = paused.resume(answer).await,
                        None => {
                            let (title, calls) = (asked.preview.title.clone(), asked.already.count);
                            drop(paused);
                            return Ok(stopped_unasked(&title, calls, args.raw));
                        }
                    }
                }
            }
        }
    };
    // Loading the workspace's custom tools ran this project's code before the program: it is
    // part of what the program cost (a spinning tool file must not hide behind a 5 ms figure).
    envelope.duration_ms += runtime.custom_load_time().as_secs_f64() * 1000.0;
    let mut report = None;
    let mut plot_status = toolgate_core::Status::Ok;
    if let (Some(tx), true) = (&transaction, envelope.success) {
        let committed = runtime.commit(tx, confirmer.as_ref()).await;
        let plot_id = tx.plot_id();
        eprintln!("{}", committed.message(plot_id));
        plot_status = committed.status();
        if let (Committed::Applied { .. }, true) = (&committed, args.save) {
            tx.session()
                .lock()
                .map_err(|_| anyhow::anyhow!("the plot session is unavailable"))?
                .save(plot_id)?;
            eprintln!("Saved {plot_id}.");
        } else if let Committed::Applied { .. } = committed {
            eprintln!("Not saved (pass --save to keep it).");
        }
        report = Some(committed.report(plot_id));
    }
    let json = toolgate_codeact::envelope_with_plot(&envelope, report);
    print_envelope(&envelope, &json, args.raw)?;
    Ok(if envelope.success {
        plot_status.exit_code()
    } else {
        1
    })
}

/// The run ended at a call nobody could confirm: say so (naming `--yes`) and exit 4.
fn stopped_unasked(title: &str, calls: usize, raw: bool) -> i32 {
    let message = format!(
        "the program was stopped at a call that needs confirmation ({title}) because there is no terminal to ask on; that call did not run. Pass --yes to approve such calls, or run it from a terminal"
    );
    eprintln!("toolgate exec: {message}");
    if !raw {
        let mut envelope = Envelope::failure(
            toolgate_sandbox::ExecError::new("ConfirmationNeeded", &message),
            0.0,
        );
        envelope.tool_calls = u32::try_from(calls).unwrap_or(u32::MAX);
        let json = toolgate_codeact::envelope_with_plot(&envelope, None);
        let _ = print_envelope(&envelope, &json, false);
    }
    toolgate_core::Status::Declined.exit_code()
}

/// `toolgate __sandbox-worker`: the worker process's main loop (hidden; started by `exec`).
/// Call it before anything writes to stdout (stdout carries the worker protocol).
pub fn worker() -> i32 {
    toolgate_sandbox::worker_main()
}
