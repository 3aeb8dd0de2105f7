//! `toolgate mcp` (stdio) and `toolgate serve` (streamable HTTP + workbench).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};
use clap::Args;
use toolgate_codeact::mcp::{McpDirect, McpRunner};
use toolgate_codeact::{Executor, Surface as CodeactSurface};
use toolgate_core::Registry;
use toolgate_core::telemetry::{JsonlSink, TelemetrySink};
use toolgate_mcp::upstream::{self, Upstream};
use toolgate_mcp::{CodeRunner, DirectTools, McpShared, ToolSet};
use toolgate_plot::debrief::{Debrief, Settings};
use toolgate_plot::session::Session;
use toolgate_plot::store::StacStore;

use crate::debrief_cli::{self, StoreArgs};
use crate::paths;

/// What both MCP commands share.
#[derive(Args, Debug, Clone)]
pub struct SurfaceArgs {
    /// Which tools to serve: `debrief` (the four plot tools), `codeact` (run_code) or `all`.
    #[arg(long, default_value = "all", env = "TOOLGATE_SURFACE")]
    pub surface: ToolSet,
    #[command(flatten)]
    pub store: StoreArgs,
    /// The folder run_code's file and shell tools work in. Without it there is no workspace:
    /// run_code is not served (the current directory is never used by default, so starting a
    /// server somewhere does not hand that folder to every MCP client).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// A `.mcp.json`-style file of upstream MCP servers whose tools join the registry
    /// (namespaced `server__tool`). Default: `$TOOLGATE_MCP_SERVERS` when set.
    #[arg(long, env = "TOOLGATE_MCP_SERVERS")]
    pub upstream: Option<PathBuf>,
    /// With `codeact`/`all` and `--workspace`: also serve the workspace tools (view, grep,
    /// edit, …) directly. File tools run without asking (choosing the workspace grants them);
    /// `bash` asks, as in run_code.
    #[arg(long)]
    pub workspace_tools: bool,
    /// Run `bash` and the `[[command_tools]]` over MCP without asking, as `toolgate exec` does.
    /// Without it each such call needs the user's confirmation (an elicitation dialog where
    /// the client has one; refused otherwise). Only for a workspace and clients you trust.
    #[arg(long)]
    pub auto_approve_commands: bool,
}

/// Arguments of `toolgate mcp`.
#[derive(Args, Debug)]
pub struct McpArgs {
    #[command(flatten)]
    pub common: SurfaceArgs,
}

/// Arguments of `toolgate serve`.
#[derive(Args, Debug)]
pub struct ServeArgs {
    #[command(flatten)]
    pub common: SurfaceArgs,
    /// Port on 127.0.0.1 (0 picks a free one).
    #[arg(long, default_value_t = 8765, env = "TOOLGATE_PORT")]
    pub port: u16,
    /// The model that answers the workbench's chat panel (optional).
    #[command(flatten)]
    pub model: crate::agent_cli::ModelArgs,
    /// Do not send the domain priming file to the chat model.
    #[arg(long)]
    pub no_priming: bool,
    /// Most MCP sessions (legacy HTTP clients) held at once; when full, the least recently used
    /// idle one is closed, and a new one is refused (503) only when all are busy.
    #[arg(long, default_value_t = 64, env = "TOOLGATE_MAX_SESSIONS", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_sessions: u32,
    /// Minutes after which an MCP session with no traffic is closed.
    #[arg(long, default_value_t = 10, env = "TOOLGATE_SESSION_IDLE_MINUTES", value_parser = clap::value_parser!(u64).range(1..))]
    pub session_idle_minutes: u64,
    /// Keep the workbench's session — open plots, selection, undo/redo, unsaved edits — in
    /// PostgreSQL (`postgres://user@host:port/db`) instead of this process: every instance given
    /// the same database serves the same session, and a restart loses nothing acknowledged.
    #[arg(long, env = "TOOLGATE_STATE", value_name = "POSTGRES_URL")]
    pub state: Option<String>,
    /// How often the workbench's live stream checks for changes it is not told of (edits in
    /// this instance's MCP client sessions), in milliseconds. Its own session's changes, and with
    /// --state other instances' changes to it, are pushed at once.
    #[arg(long, default_value_t = 200, env = "TOOLGATE_LIVE_POLL_MS", value_parser = clap::value_parser!(u64).range(10..))]
    pub live_poll_ms: u64,
}

/// Everything an MCP server process holds: the shared state and the upstream connections (kept
/// alive for the process's lifetime; dropping them kills their children).
pub struct McpSetup {
    pub shared: Arc<McpShared>,
    pub upstreams: Vec<Arc<Upstream>>,
    /// The analysis registry behind the Debrief tools (with the upstream tools).
    pub registry: Arc<Registry>,
    /// The catalogues served: `--store`'s, else your plots and the demo's.
    pub stores: Vec<StacStore>,
    /// The STAC API catalogue `--store` names, if any (`stores` is then its mirror).
    pub api: Vec<toolgate_plot::stac_api::ApiStore>,
    pub sink: Arc<dyn TelemetrySink>,
}

pub async fn setup(args: &SurfaceArgs, surface_label: &str) -> Result<McpSetup> {
    let upstreams = match &args.upstream {
        Some(path) => {
            let configs = upstream::read_config(path)?;
            let (ok, errors) =
                upstream::connect_all(&configs, crate::paths::confiner().as_ref()).await;
            for e in errors {
                tracing::warn!("{e}");
                eprintln!("warning: {e}");
            }
            ok
        }
        None => Vec::new(),
    };
    let sink: Arc<dyn TelemetrySink> = Arc::new(JsonlSink::new(paths::telemetry_file()));

    // The analysis registry behind debrief_listTools/debrief_runTool, plus upstream tools.
    let mut registry = debrief_cli::debrief_registry().await?;
    for u in &upstreams {
        registry
            .register(u.clone())
            .await
            .with_context(|| format!("registering the tools of upstream server {}", u.name()))?;
    }
    let registry = Arc::new(registry);
    // Without --store: your plots first (where the page's import writes), then the demo's.
    let stores: Vec<StacStore> = debrief_cli::open_stores(&args.store)?;
    let api = debrief_cli::api_stores(&args.store)?;
    let factory_api = api.clone();
    let label = surface_label.to_owned();
    let factory_sink = sink.clone();
    let (factory_stores, factory_registry) =
        (Arc::new(Mutex::new(stores.clone())), registry.clone());
    let new_session = Arc::new(move |identity: &str| {
        // A session starts on the catalogue as it is now: plots imported (or replaced) while
        // the server runs are there, without a restart.
        let current = match factory_stores.lock() {
            Ok(mut stores) => {
                for s in stores.iter_mut() {
                    match s.reread_if_changed() {
                        Ok(Some(fresh)) => *s = fresh,
                        Ok(None) => {}
                        Err(e) => {
                            tracing::warn!("the catalogue changed but could not be read: {e}");
                        }
                    }
                }
                stores.clone()
            }
            Err(poisoned) => poisoned.into_inner().clone(),
        };
        Arc::new(Debrief::new(
            Arc::new(Mutex::new(
                Session::new(current).with_api_stores(factory_api.clone()),
            )),
            factory_registry.clone(),
            factory_sink.clone(),
            Settings {
                surface: label.clone(),
                active_model: identity.to_owned(),
                ..Settings::default()
            },
        ))
    });

    let surface = served_surface(args)?;
    let mut direct: Option<Arc<dyn DirectTools>> = None;
    let (code, functions): (Option<Arc<dyn CodeRunner>>, String) =
        if let (true, Some(root)) = (surface.has_codeact(), &args.workspace) {
            let mut tools = debrief_cli::codeact_tools(root).await?;
            for u in &upstreams {
                tools.add(u.clone()).await?;
            }
            let runtime = tools.runtime(
                CodeactSurface::RunCode {
                    auto_approve_commands: args.auto_approve_commands,
                },
                sink.clone(),
                Executor::workers(2)?,
            );
            if args.workspace_tools {
                direct = Some(Arc::new(McpDirect::new(
                    &runtime,
                    args.auto_approve_commands,
                )));
            }
            let runner = McpRunner::new(runtime);
            let functions = runner.functions(surface.has_debrief());
            (Some(Arc::new(runner)), functions)
        } else {
            (None, String::new())
        };
    let mut shared = McpShared::new(surface, new_session, code, sink.clone(), functions);
    if let Some(direct) = direct {
        shared = shared.with_direct_tools(direct);
    }
    Ok(McpSetup {
        shared: Arc::new(shared),
        upstreams,
        registry,
        stores,
        api,
        sink,
    })
}

/// The surface actually served: run_code needs a workspace the person named, so without
/// `--workspace` the default `all` serves the Debrief tools only (said on stderr) and an explicit
/// `codeact` is an error.
fn served_surface(args: &SurfaceArgs) -> Result<ToolSet> {
    if args.workspace.is_some() || !args.surface.has_codeact() {
        return Ok(args.surface);
    }
    if args.workspace_tools {
        anyhow::bail!(
            "--workspace-tools needs --workspace DIR: the folder the tools may read and change (toolgate never uses the current directory by default)"
        );
    }
    if args.surface == ToolSet::Codeact {
        anyhow::bail!(
            "--surface codeact needs --workspace DIR: run_code's file and shell tools work only in a folder you name (toolgate never uses the current directory by default). Add --workspace . to serve this one, or use --surface debrief."
        );
    }
    let note = "run_code is not served: no --workspace DIR was given (toolgate never hands the current directory to MCP clients by default). Serving the Debrief tools only.";
    tracing::info!("{note}");
    eprintln!("toolgate: {note}");
    Ok(ToolSet::Debrief)
}

pub async fn mcp(args: McpArgs) -> Result<i32> {
    let setup = setup(&args.common, "mcp").await?;
    tracing::info!(upstreams = setup.upstreams.len(), surface = %args.common.surface.as_str(), "serving MCP on stdio");
    tokio::select! {
        r = toolgate_mcp::transport::serve_stdio(setup.shared.clone()) => r?,
        () = shutdown_signal() => tracing::info!("signal received; shutting down"),
    }
    drop(setup);
    Ok(0)
}

/// The access token of this server: `TOOLGATE_TOKEN` when set (scripts, tests), else a fresh
/// random one.
fn access_token() -> Result<toolgate_core::AccessToken> {
    match std::env::var("TOOLGATE_TOKEN") {
        Ok(chosen) if !chosen.is_empty() => {
            toolgate_core::AccessToken::new(&chosen).context("TOOLGATE_TOKEN is not usable")
        }
        _ => Ok(toolgate_core::AccessToken::generate()?),
    }
}

/// The workbench session's key in the state database (`--state`).
const STATE_SESSION: &str = "workbench";

/// Under `--state`, the sessions stateless MCP clients name (`x-toolgate-session: NAME`) are
/// journaled too, as `named:NAME`, so every instance serves them and one made again after it
/// expired here comes back as it was.
fn named_sessions_journaled(setup: &McpSetup, journal: &Arc<toolgate_state::PgJournal>) {
    let (stores, api) = (setup.stores.clone(), setup.api.clone());
    let (registry, sink) = (setup.registry.clone(), setup.sink.clone());
    let journal = journal.clone();
    let make = move |name: &str, identity: &str| {
        let session = Session::new(stores.clone())
            .with_api_stores(api.clone())
            .journaled(journal.session_journal(&format!("named:{name}")));
        Arc::new(Debrief::new(
            Arc::new(Mutex::new(session)),
            registry.clone(),
            sink.clone(),
            Settings {
                surface: "mcp-http".to_owned(),
                active_model: identity.to_owned(),
                ..Settings::default()
            },
        ))
    };
    let _ = setup.shared.named_factory.set(Arc::new(make));
}

pub async fn serve(args: ServeArgs) -> Result<i32> {
    let token = access_token()?;
    let setup = setup(&args.common, "mcp-http").await?;
    // The workbench's session: what the page shows, what the chat panel drives, and what
    // stateless MCP clients (and clients naming no session) drive — so a person sees an
    // agent's edits live and saves them.
    let model_id = args
        .model
        .model
        .clone()
        .or_else(|| {
            // --model-file, or the model `toolgate model install` made the default.
            let file = args.model.model_file()?;
            Some(file.file_stem()?.to_string_lossy().into_owned())
        })
        .unwrap_or_else(|| "none".to_owned());
    let priming = !args.no_priming;
    let mut session = Session::new(setup.stores.clone()).with_api_stores(setup.api.clone());
    if let Some(dsn) = &args.state {
        let journal = toolgate_state::PgJournal::connect(dsn, STATE_SESSION)?;
        named_sessions_journaled(&setup, &journal);
        session = session.with_journal(journal).with_context(|| {
            format!(
                "cannot restore the workbench session from {}",
                toolgate_state::redact(dsn)
            )
        })?;
        tracing::info!(
            "workbench session kept in PostgreSQL ({}): {} changes replayed, {} plots open",
            toolgate_state::redact(dsn),
            session.journal_seq(),
            session.open_plots().len()
        );
    }
    let workbench = Arc::new(Debrief::new(
        Arc::new(Mutex::new(session)),
        setup.registry.clone(),
        setup.sink.clone(),
        toolgate_agent::surface_settings("workbench", &model_id, priming),
    ));
    let _ = setup.shared.shared_session.set(workbench.clone());
    let _ = setup
        .shared
        .session_limits
        .set(toolgate_mcp::sessions::SessionLimits {
            max_sessions: usize::try_from(args.max_sessions).unwrap_or(usize::MAX),
            idle_timeout: std::time::Duration::from_secs(args.session_idle_minutes * 60),
        });
    let mut state = toolgate_web::WebState::new(workbench.clone(), token.clone())
        .context("cannot start the workbench")?
        .with_poll_interval(std::time::Duration::from_millis(args.live_poll_ms));
    // Every MCP session this server makes is listed on the page (its edits can be saved there).
    let _ = setup.shared.directory.set(state.directory().clone());
    if args.model.given() {
        let (client, _) = args.model.client(true)?;
        let config = args.model.agent_config(client.as_ref()).await?;
        let profile = if config.levers == toolgate_agent::Levers::SMALL {
            "small profile"
        } else if config.levers == toolgate_agent::Levers::LARGE {
            "large profile"
        } else {
            "custom levers"
        };
        let agent = toolgate_agent::AgentLoop::new(
            client,
            workbench.clone(),
            toolgate_agent::AgentConfig { priming, ..config },
        );
        let conversation =
            toolgate_agent::Conversation::new(format!("workbench-{}", std::process::id()));
        state = state.with_chat(Arc::new(crate::workbench_chat::AgentChat::new(
            agent,
            conversation,
            format!("{model_id}, {profile}"),
        )));
    }
    // Changes other instances make wake this one's live streams at once.
    let _listener = match &args.state {
        Some(dsn) => {
            let waker = state.clone();
            // Any session's change: the page lists named sessions too.
            Some(toolgate_state::Listener::start(dsn, move |_changed| {
                waker.notify_changed();
            })?)
        }
        None => None,
    };
    let cancel = tokio_util::sync::CancellationToken::new();
    let app =
        toolgate_mcp::transport::http_router(setup.shared.clone(), cancel.clone(), token.clone())
            .merge(toolgate_web::router(state));
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", args.port))
        .await
        .with_context(|| format!("cannot listen on 127.0.0.1:{} (use --port)", args.port))?;
    let addr = listener.local_addr()?;
    // The only place the token is shown (stdout, for the person who started the server); logs
    // and telemetry never carry it.
    print_line(&format!(
        "Workbench: http://{addr}/?token={}",
        token.reveal()
    ));
    print_line(&format!("MCP endpoint: http://{addr}/mcp"));
    print_line(&format!(
        "MCP header: Authorization: Bearer {}",
        token.reveal()
    ));
    let stop = cancel.clone();
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            shutdown_signal().await;
            stop.cancel();
        })
        .await
        .context("the HTTP server failed")?;
    drop(setup);
    Ok(0)
}

/// One banner line to stdout. Whoever started the server may stop reading after the URL it
/// wanted (and close the pipe): the server keeps serving rather than panic in `println!`.
fn print_line(s: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{s}");
    let _ = out.flush();
}

/// SIGINT or SIGTERM: stop serving so upstream children are killed on the way out.
async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        std::future::pending::<()>().await;
        return;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}
