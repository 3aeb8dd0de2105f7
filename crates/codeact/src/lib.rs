//! toolgate-codeact: the CodeAct runtime, composed once for every surface that runs a model's
//! Python program — `toolgate exec`, MCP `run_code` (and the workspace tools served directly
//! with `--workspace-tools`), and the installers' discovery (`toolgate tools list --json`).
//!
//! - [`Tools::open`] loads the configuration of one workspace (user file, the project's
//!   `.toolgate/config.toml`, the environment) and registers its tools: the workspace tools,
//!   the `[[command_tools]]` and the custom Python tools ([`setup`]; [`PythonTools`], which run
//!   as nested sandbox programs, are here rather than in `toolgate_config` because loading and
//!   calling one runs the interpreter); other providers (upstream
//!   MCP servers) join with [`Tools::add`]. [`Tools::manifest`] / [`Tools::reference`] are what
//!   installers and models read.
//! - [`Tools::runtime`] binds them to a [`Surface`], whose pre-approval list
//!   ([`Surface::pre_approved_providers`]) is written here and nowhere else, and to the
//!   telemetry sink every surface shares.
//! - [`Runtime::run`] runs one program (in a sandbox worker or in process). With a
//!   [`PlotTransaction`] its plot tools act on a scratch copy; [`Runtime::commit`] then sends the
//!   net change through the gate as one call ([`toolgate_plot::transaction::Commit::invoke`]).
//! - [`mcp`] adapts the runtime to the MCP server's `CodeRunner` and `DirectTools`.

#![warn(unreachable_pub)]

pub mod command_tools;
mod custom_tools;
pub mod mcp;
pub mod paused;
pub mod setup;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};
use toolgate_config::CodeactConfig;
use toolgate_core::flow::Confirmer;
use toolgate_core::policy::Mode;
use toolgate_core::telemetry::TelemetrySink;
use toolgate_core::{Provider, Registry, RegistryError, ToolFilter, ToolSpec};
use toolgate_plot::transaction::{
    CommitGate, Committed, PlotTransaction, SCRATCH_PROVIDER, scratch_ids, scratch_specs,
};
use toolgate_sandbox::{
    Backend, Envelope, ExecRequest, HostError, Limits, PoolConfig, RegistryHost, ToolHost,
    WORKSPACE_PROVIDER, WorkerCommand, WorkerPool,
};

pub use command_tools::COMMAND_TOOLS_PROVIDER;
pub use custom_tools::{CUSTOM_TOOLS_PROVIDER, LoadError, PythonTool, PythonTools};

/// What went wrong composing the runtime, with the file or setting to fix.
#[derive(Debug, thiserror::Error)]
pub enum CodeactError {
    #[error(transparent)]
    Config(#[from] toolgate_config::ConfigError),
    #[error("opening the workspace {}: {message}", root.display())]
    Workspace { root: PathBuf, message: String },
    #[error("the [workspace] settings ({sources}): {message}")]
    Settings { sources: String, message: String },
    #[error("{}: command tool \"{name}\": invalid parameters: {message}", source_file.display())]
    CommandTool {
        source_file: PathBuf,
        name: String,
        message: String,
    },
    #[error("registering {what}: {source}")]
    Register {
        what: String,
        #[source]
        source: Box<RegistryError>,
    },
    #[error("cannot locate the toolgate executable to start sandbox workers: {0}")]
    WorkerCommand(#[source] std::io::Error),
}

/// How the process around the runtime is set up.
#[derive(Debug, Clone)]
pub struct Host {
    /// The user's config file (`toolgate_config`: it may widen; the project may only
    /// narrow unless trusted).
    pub user_config: PathBuf,
    /// Where configuration warnings go (one line each; the CLI prints them to stderr).
    pub warn: fn(&str),
}

/// The sentence an unknown function name gets to say where the functions are listed.
const DISCOVERY_HINT: &str = "Call `toolgate tools list --markdown` (or read the tools reference) for the available functions.";

/// The CodeAct tools of one workspace.
pub struct Tools {
    root: PathBuf,
    config: CodeactConfig,
    registry: Registry,
    registered: setup::Registered,
    custom_load_time: Duration,
}

impl Tools {
    /// Load the configuration for the workspace at `root` and register its tools. What the
    /// project configuration could not do is reported once through `host.warn`.
    pub async fn open(root: &Path, host: &Host) -> Result<Self, CodeactError> {
        let config = CodeactConfig::load(&host.user_config, root, |k| std::env::var(k).ok())?;
        if let Some(w) = config.warning() {
            (host.warn)(&w);
        }
        let mut registry = Registry::new()
            .with_discovery_hint(DISCOVERY_HINT)
            .with_filter(config.tool_filter());
        let mut registered = Vec::new();
        let custom_load_time =
            setup::register_codeact_tools(&mut registry, &mut registered, root, &config, host)
                .await?;
        Ok(Self {
            root: root.to_owned(),
            config,
            registry,
            registered,
            custom_load_time,
        })
    }

    /// Add another provider (an upstream MCP server) to the tools programs can call.
    pub async fn add(&mut self, provider: Arc<dyn Provider>) -> Result<(), CodeactError> {
        let what = format!("the tools of {}", provider.name());
        let specs = provider
            .list_tools()
            .await
            .map_err(|e| CodeactError::Register {
                what: what.clone(),
                source: Box::new(e.into()),
            })?;
        setup::register(
            &mut self.registry,
            &mut self.registered,
            provider,
            specs,
            &what,
        )
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn config(&self) -> &CodeactConfig {
        &self.config
    }

    /// The registry programs see (without plot tools).
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The registry alone (a listing that adds other tools to it).
    pub fn into_registry(self) -> Registry {
        self.registry
    }

    /// How long loading the custom tools took (it ran this project's code before any program:
    /// a surface counts it in what a program cost).
    pub fn custom_load_time(&self) -> Duration {
        self.custom_load_time
    }

    /// The tools manifest installers render and `toolgate tools list --json` prints.
    pub fn manifest(&self, backend: Backend) -> Vec<Value> {
        self.registry
            .specs()
            .map(|s| toolgate_sandbox::manifest_entry(s, backend))
            .collect()
    }

    /// The Markdown reference models read.
    pub fn reference(&self, backend: Backend) -> String {
        let specs: Vec<ToolSpec> = self.registry.specs().cloned().collect();
        toolgate_sandbox::markdown_reference(&specs, backend)
    }

    /// Bind the tools to a surface. Programs run in sandbox workers (a pool of `workers`).
    pub fn runtime(
        self,
        surface: Surface,
        sink: Arc<dyn TelemetrySink>,
        executor: Executor,
    ) -> Runtime {
        Runtime {
            shared: Arc::new(Shared {
                filter: self.config.tool_filter(),
                limits: self.config.limits(),
                registry: Arc::new(self.registry),
                registered: self.registered,
                executor,
                custom_load_time: self.custom_load_time,
                confirm: self.config.confirm.clone(),
            }),
            surface,
            sink,
            active_model: "unknown".to_owned(),
        }
    }
}

/// Where programs run.
pub enum Executor {
    /// In this process: faster to start, but the memory limit is only partly enforced and a
    /// runaway native operation cannot be stopped at the deadline.
    InProcess,
    /// In sandbox worker processes (`toolgate __sandbox-worker`) under a watchdog.
    Workers(WorkerPool),
}

impl Executor {
    /// A pool of `size` workers started from this executable.
    pub fn workers(size: usize) -> Result<Self, CodeactError> {
        let command = WorkerCommand::current_exe().map_err(CodeactError::WorkerCommand)?;
        Ok(Executor::Workers(WorkerPool::new(
            PoolConfig::new(command).with_size(size),
        )))
    }
}

/// Which surface a program (or a direct tool call) arrives by. The surface decides what runs
/// without asking: see [`Surface::pre_approved_providers`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Surface {
    /// `toolgate exec`: the person typed the command and chose the workspace.
    Exec,
    /// MCP `run_code`: a client chose the program.
    RunCode { auto_approve_commands: bool },
    /// MCP workspace tools served directly (`--workspace-tools`).
    Direct { auto_approve_commands: bool },
}

impl Surface {
    /// The surface name telemetry records carry.
    pub fn label(self) -> &'static str {
        match self {
            Surface::Exec => "exec",
            Surface::RunCode { .. } => "mcp:run_code",
            Surface::Direct { .. } => "mcp",
        }
    }

    /// The pre-approval list, the one place it is written:
    ///
    /// | provider | exec | run_code | direct |
    /// |---|---|---|---|
    /// | `workspace` (files; `bash` see below) | yes | yes | yes |
    /// | `plot-scratch` (edits of the scratch copy; the commit is confirmed) | yes | yes | — |
    /// | `command-tools` | yes | with `--auto-approve-commands` | with `--auto-approve-commands` |
    /// | `custom-tools` (their nested calls are gated on their own) | yes | yes | — |
    ///
    /// Everything else (upstream tools, unknown effects) runs strict: reads run, the rest asks.
    pub fn pre_approved_providers(self) -> Vec<&'static str> {
        let mut p = vec![WORKSPACE_PROVIDER];
        match self {
            Surface::Exec => {
                p.extend([
                    SCRATCH_PROVIDER,
                    COMMAND_TOOLS_PROVIDER,
                    CUSTOM_TOOLS_PROVIDER,
                ]);
            }
            Surface::RunCode {
                auto_approve_commands,
            } => {
                p.extend([SCRATCH_PROVIDER, CUSTOM_TOOLS_PROVIDER]);
                if auto_approve_commands {
                    p.push(COMMAND_TOOLS_PROVIDER);
                }
            }
            Surface::Direct {
                auto_approve_commands,
            } => {
                if auto_approve_commands {
                    p.push(COMMAND_TOOLS_PROVIDER);
                }
            }
        }
        p
    }

    /// Tools confirmed call by call although their provider is pre-approved: over MCP the
    /// client, not the person, chose the program, so `bash` asks unless the person started the
    /// server with `--auto-approve-commands`.
    pub fn confirmed_tools(self) -> Vec<&'static str> {
        match self {
            Surface::Exec => Vec::new(),
            Surface::RunCode {
                auto_approve_commands,
            }
            | Surface::Direct {
                auto_approve_commands,
            } => {
                if auto_approve_commands {
                    Vec::new()
                } else {
                    vec!["bash"]
                }
            }
        }
    }

    /// Why a plot function cannot be called in a program that has no plot, and what would work.
    fn no_plot_reason(self) -> Option<&'static str> {
        match self {
            Surface::Exec => Some(
                "the plot functions need a plot: run the program with `toolgate exec --plot stac://…`",
            ),
            Surface::RunCode { .. } => Some(
                "no plot is open in this session: open one first (debrief_searchPlots with open: true), then run the program again",
            ),
            Surface::Direct { .. } => None,
        }
    }

    fn policy(self, mut host: RegistryHost) -> RegistryHost {
        // RegistryHost pre-approves the workspace provider by default; start from nothing so
        // this table is the whole truth.
        host = host.without_auto_approval();
        for p in self.pre_approved_providers() {
            host = host.auto_approve_provider(p);
        }
        for t in self.confirmed_tools() {
            host = host.confirm_tool(t);
        }
        host
    }
}

struct Shared {
    registry: Arc<Registry>,
    registered: setup::Registered,
    filter: ToolFilter,
    limits: Limits,
    executor: Executor,
    custom_load_time: Duration,
    /// `[tools] confirm`: asked before every call on every surface.
    confirm: Vec<String>,
}

/// The CodeAct runtime of one surface. Cheap to clone; clones share the registry and workers.
#[derive(Clone)]
pub struct Runtime {
    shared: Arc<Shared>,
    surface: Surface,
    sink: Arc<dyn TelemetrySink>,
    active_model: String,
}

impl Runtime {
    /// The same tools and workers on another surface.
    #[must_use]
    pub fn on(&self, surface: Surface) -> Self {
        Self {
            surface,
            ..self.clone()
        }
    }

    #[must_use]
    pub fn with_active_model(mut self, model: impl Into<String>) -> Self {
        self.active_model = model.into();
        self
    }

    pub fn surface(&self) -> Surface {
        self.surface
    }

    /// The limits from the configuration (a caller may tighten them per request).
    pub fn limits(&self) -> Limits {
        self.shared.limits.clone()
    }

    pub fn registry(&self) -> &Registry {
        &self.shared.registry
    }

    pub fn custom_load_time(&self) -> Duration {
        self.shared.custom_load_time
    }

    /// The Python names of the functions a program can call, with the plot functions when a
    /// plot can be open.
    pub fn function_names(&self) -> Vec<String> {
        self.shared
            .registry
            .specs()
            .map(|s| toolgate_sandbox::python_identifier(&s.id))
            .collect()
    }

    /// The specs of the workspace provider's tools (what `--workspace-tools` serves).
    pub fn workspace_specs(&self) -> Vec<ToolSpec> {
        let r = &self.shared.registry;
        r.specs()
            .filter(|s| {
                r.resolve(&s.id)
                    .is_ok_and(|t| t.provider_name() == WORKSPACE_PROVIDER)
            })
            .cloned()
            .collect()
    }

    /// The registry a program sees: the tools, plus the plot tools over `plot`'s scratch copy.
    fn registry_for(
        &self,
        plot: Option<&Arc<PlotTransaction>>,
    ) -> Result<Arc<Registry>, RegistryError> {
        let Some(tx) = plot else {
            return Ok(self.shared.registry.clone());
        };
        let mut registry = Registry::new()
            .with_discovery_hint(DISCOVERY_HINT)
            .with_filter(self.shared.filter.clone());
        for (provider, specs) in &self.shared.registered {
            registry.register_specs(provider.clone(), specs.clone())?;
        }
        registry.register_specs(Arc::new(tx.provider()), scratch_specs())?;
        Ok(Arc::new(registry))
    }

    /// The host a program's calls go through: this surface's policy, the telemetry sink, the
    /// per-call deadline, and (with a plot) the scratch copy as the applier.
    pub fn host(
        &self,
        confirmer: Arc<dyn Confirmer>,
        plot: Option<&Arc<PlotTransaction>>,
        call_timeout: Duration,
    ) -> Result<Arc<RegistryHost>, RegistryError> {
        Ok(self.unshared_host(confirmer, plot, call_timeout)?.shared())
    }

    fn unshared_host(
        &self,
        confirmer: Arc<dyn Confirmer>,
        plot: Option<&Arc<PlotTransaction>>,
        call_timeout: Duration,
    ) -> Result<RegistryHost, RegistryError> {
        let mut host = self
            .surface
            .policy(RegistryHost::new(self.registry_for(plot)?, confirmer)?);
        for tool in &self.shared.confirm {
            host = host.confirm_tool(tool.clone());
        }
        let mut host = host
            .with_call_timeout(call_timeout)
            .with_surface(self.surface.label())
            .with_active_model(self.active_model.clone())
            .with_sink(self.sink.clone());
        if let Some(tx) = plot {
            let tx = tx.clone();
            host = host.with_applier(move |cs| tx.apply_to_scratch(cs));
        } else if let Some(reason) = self.surface.no_plot_reason() {
            host = host.with_unavailable(
                scratch_ids()
                    .into_iter()
                    .map(|id| (toolgate_sandbox::python_identifier(id), reason.to_owned())),
            );
        }
        Ok(host)
    }

    /// Run one program. `confirmer` answers for its calls that need a person; with `plot`, its
    /// plot tools edit the transaction's scratch copy (nothing reaches the session until
    /// [`Runtime::commit`]).
    pub async fn run(
        &self,
        req: ExecRequest,
        confirmer: Arc<dyn Confirmer>,
        plot: Option<&Arc<PlotTransaction>>,
    ) -> Envelope {
        let call_timeout = req.limits.timeout;
        let host = match self.host(confirmer, plot, call_timeout) {
            Ok(h) => h,
            Err(e) => return setup_failure(&e.to_string()),
        };
        self.run_on(req, host.as_ref()).await
    }

    async fn run_on(&self, req: ExecRequest, host: &dyn ToolHost) -> Envelope {
        match &self.shared.executor {
            Executor::InProcess => toolgate_sandbox::run(req, host).await,
            Executor::Workers(pool) => pool.run(req, host).await,
        }
    }

    /// Start one program on its own task. A call that needs a person's confirmation pauses it
    /// at that call ([`paused::Progress::Paused`]) until [`paused::Paused::resume`] answers;
    /// the wait does not count against its wall-clock limit, and a paused program gives its
    /// worker-pool slot back. Dropping the run stops the program.
    pub fn start(&self, req: ExecRequest, plot: Option<Arc<PlotTransaction>>) -> paused::Run {
        let clock = Arc::new(toolgate_sandbox::PauseClock::new());
        let (confirmer, questions) = paused::Pausing::new(clock.clone());
        let call_timeout = req.limits.timeout;
        let host = self
            .unshared_host(Arc::new(confirmer), plot.as_ref(), call_timeout)
            .map(|h| h.with_pause_clock(clock).shared());
        let host = match host {
            Ok(host) => host,
            Err(e) => return paused::Run::ended(questions, setup_failure(&e.to_string())),
        };
        let Ok(tokio) = tokio::runtime::Handle::try_current() else {
            return paused::Run::ended(
                questions,
                setup_failure("a program can only be started inside a Tokio runtime"),
            );
        };
        let runtime = self.clone();
        let task_host = host.clone();
        let task = tokio.spawn(async move {
            // The transaction lives as long as the program edits its scratch copy.
            let _plot = plot;
            runtime.run_on(req, task_host.as_ref()).await
        });
        paused::Run::new(questions, task, Some(host))
    }

    /// One tool called directly (not from a program), through the same host and policy.
    pub async fn call(
        &self,
        tool: &str,
        args: Map<String, Value>,
        confirmer: Arc<dyn Confirmer>,
    ) -> Result<Value, HostError> {
        let host = self
            .host(confirmer, None, self.shared.limits.timeout)
            .map_err(|e| HostError::new(toolgate_sandbox::PyExc::RuntimeError, e.to_string()))?;
        host.call(&toolgate_sandbox::python_identifier(tool), args)
            .await
    }

    /// Send a finished program's net change on `tx`'s plot through the gate as one call
    /// (policy, confirmation bound to the digest, guard, apply at the base version, one
    /// telemetry record on this surface). Nothing to commit → [`Committed::NoChanges`].
    pub async fn commit(&self, tx: &PlotTransaction, confirmer: &dyn Confirmer) -> Committed {
        let Some(commit) = tx.finish() else {
            return Committed::NoChanges;
        };
        let gate = CommitGate {
            sink: self.sink.as_ref(),
            surface: self.surface.label(),
            active_model: &self.active_model,
            mode: Mode::Strict,
        };
        commit.invoke(tx.session(), &gate, confirmer).await
    }
}

/// The envelope of a program that could not start.
pub(crate) fn setup_failure(message: &str) -> Envelope {
    Envelope {
        success: false,
        stdout: String::new(),
        stderr: String::new(),
        return_value: Value::Null,
        error: Some(toolgate_sandbox::ExecError::new("SetupError", message)),
        tool_calls: 0,
        duration_ms: 0.0,
        truncated: false,
    }
}

/// The envelope as JSON with the plot commit's report under `plot`
/// ([`toolgate_plot::transaction::attach_report`]).
pub fn envelope_with_plot(envelope: &Envelope, plot: Option<Value>) -> Value {
    let mut v = serde_json::to_value(envelope).unwrap_or(Value::Null);
    if let Some(report) = plot {
        toolgate_plot::transaction::attach_report(&mut v, report);
    }
    v
}
