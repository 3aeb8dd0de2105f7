//! `toolgate chat` and `toolgate eval`: the agent loop and the evaluation harness.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use async_trait::async_trait;
use clap::{Args, Subcommand, ValueEnum};
use toolgate_agent::{
    AgentConfig, AgentEvent, AgentLoop, Conversation, Levers, ModelClient, ModelConfig, Profile,
    Provider, build_client, surface_settings,
};
use toolgate_core::Preview;
use toolgate_core::flow::{Answer, Confirmer};
use toolgate_core::telemetry::JsonlSink;
use toolgate_eval::probe::{self, Metric, ProbeOptions};
use toolgate_eval::{arms, replay, scenario, tokens};
use toolgate_plot::debrief::Debrief;
use toolgate_plot::session::Session;

use crate::debrief_cli::{StoreArgs, debrief_registry};
use crate::paths;

/// Exit status of `eval arms --drive` when no host CLI is installed and authenticated.
pub const EXIT_NO_HOST: i32 = 3;

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum ProviderArg {
    /// OpenAI-compatible `/v1/chat/completions` (llama.cpp server, Ollama, vLLM, LM Studio, …).
    Openai,
    /// Anthropic Messages `/v1/messages`.
    Anthropic,
}

/// How to reach the model.
#[derive(Args, Debug, Clone)]
pub struct ModelArgs {
    /// Model server base URL, e.g. http://127.0.0.1:8080/v1 (OpenAI-compatible) or
    /// https://api.anthropic.com.
    #[arg(long, env = "TOOLGATE_MODEL_URL")]
    pub model_url: Option<String>,
    /// Model id to ask for.
    #[arg(long, env = "TOOLGATE_MODEL")]
    pub model: Option<String>,
    #[arg(long, value_enum, default_value = "openai")]
    pub provider: ProviderArg,
    /// Name of the environment variable that holds the API key (the key itself is never passed
    /// on the command line, logged or written to a transcript).
    #[arg(long, value_name = "VAR")]
    pub api_key_env: Option<String>,
    /// Seconds one model request may take.
    #[arg(long, default_value_t = 120)]
    pub timeout_s: u64,
    /// Retries after 429, 5xx or connection errors (exponential backoff).
    #[arg(long, default_value_t = 3)]
    pub retries: u32,
    /// Tool calls as fenced JSON in the reply, for models without native tool calling.
    #[arg(long)]
    pub text_tools: bool,
    /// Model requests per utterance.
    #[arg(long, default_value_t = 8)]
    pub max_turns: usize,
    /// Tool surface: large (every tool every turn, full results) or small (per-step tools,
    /// ranked tools, grounded values and replies, repeat guard, compact results, context budget,
    /// constrained decoding where the server offers it). auto: small for a model inside
    /// toolgate, a server that reports at most 4 B parameters, or a model id that states such a
    /// size ("qwen2.5-coder-0.5b"); large otherwise.
    #[arg(long, value_enum, default_value = "auto")]
    pub profile: ProfileArg,
    /// Only these small-profile parts, comma-separated (parsing, constraints, state,
    /// compaction; none), instead of the profile's: to measure each part's lift.
    #[arg(long, value_name = "LIST")]
    pub levers: Option<String>,
    /// The model's context window in tokens (default: what the server reports, e.g. llama.cpp's
    /// /props; for --model-file, 8192 or the model's training context if smaller).
    #[arg(long, value_name = "N")]
    pub context: Option<usize>,
    /// Run this GGUF model inside toolgate instead of asking a server (llama.cpp in process,
    /// grammar-constrained decoding; in the default build). Default: the model `toolgate model
    /// install` installed, when no server is named.
    /// Takes the place of --model-url/--model.
    #[arg(long, env = "TOOLGATE_MODEL_FILE", value_name = "PATH.gguf")]
    pub model_file: Option<PathBuf>,
    /// llama.cpp threads for --model-file (one was measured fastest on a 2-core machine).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub threads: u32,
    /// Most tokens in one model reply (default: the server's setting; 512 for --model-file).
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<u32>,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum ProfileArg {
    Auto,
    Large,
    Small,
}

impl ModelArgs {
    /// The loop's limits and levers from these flags; `--profile auto` asks `client` what it
    /// is (one `server_info` probe, cached by the client) and says on stderr what it chose.
    pub(crate) async fn agent_config(&self, client: &dyn ModelClient) -> Result<AgentConfig> {
        let profile = self.profile(client).await;
        let levers = match &self.levers {
            Some(list) => Levers::parse(list).map_err(anyhow::Error::msg)?,
            None => Levers::for_profile(profile),
        };
        Ok(AgentConfig {
            max_turns: self.max_turns,
            levers,
            context: self.context,
            ..AgentConfig::default()
        })
    }

    /// The profile these flags select for `client`.
    pub(crate) async fn profile(&self, client: &dyn ModelClient) -> Profile {
        match self.profile {
            ProfileArg::Large => Profile::Large,
            ProfileArg::Small => Profile::Small,
            ProfileArg::Auto => {
                let info = client.server_info().await;
                let (p, why) = toolgate_agent::small::auto_profile(client.model_id(), &info);
                tracing::info!("profile {p:?}: {why}");
                eprintln!(
                    "toolgate: the {} profile for {} ({why}; --profile large|small overrides)",
                    match p {
                        Profile::Large => "large",
                        Profile::Small => "small",
                    },
                    client.model_id()
                );
                p
            }
        }
    }

    pub(crate) fn config(&self, stream: bool) -> Result<ModelConfig> {
        let (Some(url), Some(model)) = (&self.model_url, &self.model) else {
            bail!(
                "no model given: pass --model-url URL and --model ID (or set TOOLGATE_MODEL_URL and TOOLGATE_MODEL), e.g. --model-url http://127.0.0.1:8080/v1 --model qwen2.5"
            );
        };
        let provider = match self.provider {
            ProviderArg::Openai => Provider::OpenAi,
            ProviderArg::Anthropic => Provider::Anthropic,
        };
        let mut c = ModelConfig::new(provider, url.clone(), model.clone());
        c.api_key_env.clone_from(&self.api_key_env);
        c.timeout = Duration::from_secs(self.timeout_s.max(1));
        c.max_retries = self.retries;
        c.stream = stream;
        c.max_tokens = self.max_tokens;
        Ok(c)
    }

    /// A model was named: a file to run in process, or a server URL and a model id — or
    /// neither, and `toolgate model install` installed a default this build can run.
    pub(crate) fn given(&self) -> bool {
        self.model_file().is_some() || (self.model_url.is_some() && self.model.is_some())
    }

    /// `--model-file`, else (no server named either) the model `toolgate model install` made the
    /// default, when this build runs models in process.
    pub(crate) fn model_file(&self) -> Option<PathBuf> {
        self.model_file.clone().or_else(|| {
            (cfg!(feature = "local-model") && self.model_url.is_none() && self.model.is_none())
                .then(crate::model_cli::installed_default)
                .flatten()
        })
    }

    /// The client these flags describe and the model id it reports: the in-process model for
    /// --model-file, else the HTTP client (wrapped in the text protocol with --text-tools).
    pub(crate) fn client(&self, stream: bool) -> Result<(Arc<dyn ModelClient>, String)> {
        if let Some(path) = &self.model_file() {
            let client = self.local_client(path)?;
            let id = client.model_id().to_owned();
            return Ok((client, id));
        }
        let config = self.config(stream)?;
        let id = config.model.clone();
        Ok((build_client(config, self.text_tools), id))
    }

    #[cfg(feature = "local-model")]
    fn local_client(&self, path: &Path) -> Result<Arc<dyn ModelClient>> {
        let mut c = toolgate_local_model::LocalModelConfig::new(path);
        c.model_id.clone_from(&self.model);
        c.threads = self.threads;
        c.n_ctx = self.context.and_then(|n| u32::try_from(n).ok());
        if let Some(m) = self.max_tokens {
            c.max_tokens = m;
        }
        c.timeout = Duration::from_secs(self.timeout_s.max(1));
        let model = toolgate_local_model::LocalModel::load(c)?;
        Ok(model.client())
    }

    #[cfg(not(feature = "local-model"))]
    fn local_client(&self, path: &Path) -> Result<Arc<dyn ModelClient>> {
        bail!(
            "--model-file {} needs a toolgate built with the in-process model, which this one was built without (--no-default-features): cargo install --path crates/cli --ignore-rust-version (needs CMake, a C++ compiler and libclang); or serve the model (llama.cpp's llama-server, Ollama, vLLM) and pass --model-url and --model",
            path.display()
        )
    }
}

/// Arguments of `toolgate chat`.
#[derive(Args, Debug)]
pub struct ChatArgs {
    #[command(flatten)]
    model: ModelArgs,
    #[command(flatten)]
    store: StoreArgs,
    /// Open this plot (stac://…) before the first prompt.
    #[arg(long)]
    open: Option<String>,
    /// Do not send the domain priming file as the system prompt.
    #[arg(long)]
    no_priming: bool,
    /// Wait for whole replies instead of streaming them.
    #[arg(long)]
    no_stream: bool,
    /// Approve every edit without asking (edits still stay unsaved until /save).
    #[arg(long)]
    yes: bool,
    /// Folder for the JSONL transcript (default: <data dir>/transcripts).
    #[arg(long)]
    transcripts: Option<PathBuf>,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum PrimingArg {
    On,
    Off,
    Both,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum MetricArg {
    Strict,
    Sequence,
    Outcome,
    PassK,
}

/// `toolgate eval <command>`.
#[derive(Subcommand, Debug)]
pub enum EvalCommand {
    /// Replay scenarios with canned tool calls against the real registry and session.
    /// Exit status 1 when any scenario fails.
    Replay {
        /// Folder of scenario TOML files (default: the scenarios shipped with toolgate).
        #[arg(long)]
        scenarios: Option<PathBuf>,
        /// Only these scenario ids (repeatable).
        #[arg(long = "only")]
        only: Vec<String>,
        #[arg(long)]
        json: bool,
    },
    /// Run the agent loop live per scenario and score strict / sequence / outcome.
    /// Exit status 1 when the chosen metric falls below --threshold.
    Probe {
        #[command(flatten)]
        model: ModelArgs,
        #[arg(long)]
        scenarios: Option<PathBuf>,
        #[arg(long = "only")]
        only: Vec<String>,
        /// Only scenarios with this tag (e.g. routing, fail-safe, spike-replay).
        #[arg(long)]
        tag: Option<String>,
        #[arg(long, value_enum, default_value = "on")]
        priming: PrimingArg,
        /// Runs per scenario (pass^k needs every run to reach the outcome).
        #[arg(long, default_value_t = 1)]
        repeat: usize,
        /// Fail (exit 1) when the metric's rate is below this (0–1).
        #[arg(long)]
        threshold: Option<f64>,
        #[arg(long, value_enum, default_value = "outcome")]
        metric: MetricArg,
        /// Write a JSONL transcript per run into this folder.
        #[arg(long)]
        transcripts: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Token budget: summary cost of 8/32/100/250-feature and demo plots against 4k/8k/32k
    /// windows, plus the advertised tool list.
    Tokens {
        #[arg(long)]
        json: bool,
    },
    /// CodeAct arm comparison from Copilot CLI `--output-format json` transcripts
    /// (<prompt>.baseline.jsonl and <prompt>.codeact.jsonl in --dir). With --drive, runs the
    /// prompts through an installed, authenticated Copilot CLI first; exit status 3 when there
    /// is none.
    Arms {
        /// Folder with the transcripts (read), or where --drive writes them.
        #[arg(long)]
        dir: PathBuf,
        /// Dollars per million input tokens.
        #[arg(long, default_value_t = 2.5)]
        price_in: f64,
        /// Dollars per million output tokens.
        #[arg(long, default_value_t = 15.0)]
        price_out: f64,
        /// Drive the host CLI: run each prompt of --prompts in both arms.
        #[arg(long, requires = "prompts")]
        drive: bool,
        /// JSON array of {"id", "prompt"} (for --drive).
        #[arg(long)]
        prompts: Option<PathBuf>,
        /// Workspace the host CLI runs in (for --drive; default: current directory).
        #[arg(long)]
        workspace: Option<PathBuf>,
        /// Plugin folder for the CodeAct arm (`copilot --plugin-dir`).
        #[arg(long)]
        plugin_dir: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
}

#[allow(clippy::print_stdout)]
fn out(s: &str) {
    println!("{s}");
}

#[allow(clippy::print_stdout)]
fn out_inline(s: &str) {
    print!("{s}");
    let _ = std::io::stdout().flush();
}

fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_owned()
    } else {
        format!("{}…", s.chars().take(n).collect::<String>())
    }
}

/// Lines from stdin, read on their own thread so prompts and confirmations share them.
type Lines = Arc<tokio::sync::Mutex<tokio::sync::mpsc::UnboundedReceiver<String>>>;

fn stdin_lines() -> Lines {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        let mut line = String::new();
        loop {
            line.clear();
            match stdin.read_line(&mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    if tx
                        .send(line.trim_end_matches(['\r', '\n']).to_owned())
                        .is_err()
                    {
                        break;
                    }
                }
            }
        }
    });
    Arc::new(tokio::sync::Mutex::new(rx))
}

/// Asks inline: shows the plain-language preview and reads y/N from the same input.
struct InlineConfirmer {
    lines: Lines,
    yes: bool,
}

#[async_trait]
impl Confirmer for InlineConfirmer {
    async fn confirm(&self, preview: &Preview) -> Answer {
        out(&format!(
            "\n┌ confirm ─────────────────────────────\n{}\n└──────────────────────────────────────",
            preview
                .plain_text()
                .lines()
                .map(|l| format!("│ {l}"))
                .collect::<Vec<_>>()
                .join("\n")
        ));
        if self.yes {
            out("(approved with --yes)");
            return Answer::Approve;
        }
        out_inline("Apply this change? [y/N] ");
        let answer = self.lines.lock().await.recv().await.unwrap_or_default();
        if matches!(answer.trim().to_lowercase().as_str(), "y" | "yes") {
            Answer::Approve
        } else {
            out("Declined; nothing was changed.");
            Answer::Decline
        }
    }
}

fn plots_listing(session: &Session) -> String {
    let mut s = String::from("Catalogue:\n");
    let active = session.active_id();
    for store in session.stores() {
        for item in &store.items {
            let open = session.plot(&item.plot_id).ok();
            s.push_str(&format!(
                "  {} {} — {}{}\n",
                if active == Some(item.plot_id.as_str()) {
                    "*"
                } else if open.is_some() {
                    "o"
                } else {
                    " "
                },
                item.plot_id,
                item.title,
                match open {
                    Some(p) if p.doc.is_dirty() => " (open, dirty: unsaved changes)",
                    Some(_) => " (open, clean)",
                    None => "",
                }
            ));
        }
    }
    s.push_str("(* active, o open)");
    s
}

/// `/undo`, `/save`, `/revert`, `/plots`, `/help`: the analyst's own actions.
fn command(debrief: &Debrief, cmd: &str) -> String {
    let mut session = debrief.session();
    let active = session.active_id().map(str::to_owned);
    let need = |a: &Option<String>| {
        a.clone()
            .context("No plot is open; ask the assistant to find and open one.")
    };
    let r: anyhow::Result<String> = match cmd {
        "/plots" => Ok(plots_listing(&session)),
        "/undo" => need(&active).and_then(|id| {
            let label = session.undo(&id)?;
            Ok(format!("Undid \"{label}\" on {id}."))
        }),
        "/save" => need(&active).and_then(|id| {
            session.save(&id)?;
            Ok(format!("Saved {id} to disk."))
        }),
        "/revert" => need(&active).and_then(|id| {
            session.revert(&id)?;
            Ok(format!(
                "Reverted {id} to the saved file; unsaved changes are gone."
            ))
        }),
        _ => Ok(
            "Commands: /plots, /undo, /save, /revert, /quit. Anything else goes to the assistant."
                .to_owned(),
        ),
    };
    r.unwrap_or_else(|e| format!("error: {e}"))
}

pub async fn chat(args: ChatArgs) -> Result<i32> {
    let (client, model_id) = args.model.client(!args.no_stream)?;
    // A folder store, or a STAC API with its mirror (issue 21).
    let mut session = crate::debrief_cli::open_session(&args.store)?;
    if let Some(p) = &args.open {
        session.open(p).with_context(|| format!("opening {p}"))?;
    }
    let priming = !args.no_priming;
    let debrief = Arc::new(Debrief::new(
        Arc::new(Mutex::new(session)),
        Arc::new(debrief_registry().await?),
        Arc::new(JsonlSink::new(paths::telemetry_file())),
        surface_settings("chat", &model_id, priming),
    ));
    let config = args.model.agent_config(client.as_ref()).await?;
    let agent = AgentLoop::new(client, debrief.clone(), AgentConfig { priming, ..config });
    let tdir = args
        .transcripts
        .clone()
        .unwrap_or_else(|| paths::data_dir().join("transcripts"));
    let id = format!("chat-{}", chrono_stamp());
    let mut conv = Conversation::new(id)
        .with_transcript(&tdir)
        .with_context(|| format!("creating the transcript in {}", tdir.display()))?;
    if let Some(p) = conv.transcript_path() {
        eprintln!("transcript: {}", p.display());
    }
    out(&format!(
        "toolgate chat — model {model_id}. Ask about your plots; /plots /undo /save /revert /quit."
    ));
    let lines = stdin_lines();
    let confirmer = InlineConfirmer {
        lines: lines.clone(),
        yes: args.yes,
    };
    loop {
        out_inline("\nyou> ");
        let Some(line) = lines.lock().await.recv().await else {
            out("");
            break;
        };
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if matches!(line, "/quit" | "/exit") {
            break;
        }
        if line.starts_with('/') {
            out(&command(&debrief, line));
            continue;
        }
        let mut streamed = false;
        out_inline("assistant> ");
        let outcome = agent
            .run(&mut conv, line, &confirmer, |e| match e {
                AgentEvent::TextDelta { text } => {
                    streamed = true;
                    out_inline(&text);
                }
                AgentEvent::ToolCallStarted { tool, input } => {
                    out(&format!("\n  → {tool} {}", clip(&input.to_string(), 300)));
                }
                AgentEvent::ToolCallFinished { result, .. } => {
                    out(&format!("  ← {}", clip(&result, 300)));
                    streamed = false;
                }
                AgentEvent::Final { text } => {
                    if !streamed {
                        out_inline(&text);
                    }
                    out("");
                }
                AgentEvent::Error { message } => out(&format!("\nerror: {message}")),
                AgentEvent::ConfirmationAsked { .. } | AgentEvent::ConfirmationAnswered { .. } => {}
            })
            .await;
        tracing::debug!(
            turns = outcome.turns,
            calls = outcome.calls.len(),
            "utterance done"
        );
    }
    Ok(0)
}

fn chrono_stamp() -> String {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    format!("{}-{}", d.as_secs(), std::process::id())
}

fn load(dir: Option<&Path>, only: &[String], tag: Option<&str>) -> Result<Vec<scenario::Scenario>> {
    let all = match dir {
        Some(d) => scenario::load_dir(d)?,
        None => {
            let mut all = scenario::builtin()?;
            // The panel set (crates/eval/panel) joins when a panel tag asks for it:
            // `--tag panel-test` (frozen), `panel-dev`, `family:NAME`, `heldout-family`.
            if tag.is_some_and(|t| {
                t.starts_with("panel") || t.starts_with("family:") || t == "heldout-family"
            }) {
                all.extend(
                    toolgate_eval::panel::builtin(None)?
                        .into_iter()
                        .map(|c| c.scenario),
                );
            }
            all
        }
    };
    let picked: Vec<_> = all
        .into_iter()
        .filter(|s| only.is_empty() || only.contains(&s.id))
        .filter(|s| tag.is_none_or(|t| s.tags.iter().any(|x| x == t)))
        .collect();
    if picked.is_empty() {
        bail!("no scenario matched --only/--tag");
    }
    Ok(picked)
}

pub async fn eval(command: EvalCommand) -> Result<i32> {
    match command {
        EvalCommand::Replay {
            scenarios,
            only,
            json,
        } => {
            let list = load(scenarios.as_deref(), &only, None)?;
            let results = replay::replay_all(&list).await?;
            if json {
                out(&serde_json::to_string_pretty(&results)?);
            } else {
                out(&replay::markdown(&results));
            }
            Ok(i32::from(results.iter().any(|r| !r.passed)))
        }
        EvalCommand::Probe {
            model,
            scenarios,
            only,
            tag,
            priming,
            repeat,
            threshold,
            metric,
            transcripts,
            json,
        } => {
            let list = load(scenarios.as_deref(), &only, tag.as_deref())?;
            let (client, _) = model.client(false)?;
            let opts = ProbeOptions {
                priming: match priming {
                    PrimingArg::On => vec![true],
                    PrimingArg::Off => vec![false],
                    PrimingArg::Both => vec![false, true],
                },
                repeat: repeat.max(1),
                agent: model.agent_config(client.as_ref()).await?,
                transcripts,
            };
            // A probe runs for minutes: scenario, run and elapsed time on the terminal (stderr;
            // indicatif draws nothing when stderr is not a terminal).
            let bar = indicatif::ProgressBar::with_draw_target(
                None,
                indicatif::ProgressDrawTarget::stderr(),
            );
            if let Ok(style) = indicatif::ProgressStyle::with_template(
                "{pos}/{len} [{elapsed_precise}] {bar:25} {msg}",
            ) {
                bar.set_style(style);
            }
            let mut passed = 0usize;
            let report = probe::probe_with_progress(&list, client, &opts, &mut |p| match p {
                probe::Progress::Start {
                    total,
                    scenario,
                    repeat,
                    ..
                } => {
                    bar.set_length(u64::try_from(total).unwrap_or(u64::MAX));
                    bar.set_message(format!(
                        "{scenario} (run {}; outcome so far {passed})",
                        repeat + 1
                    ));
                }
                probe::Progress::Done(run) => {
                    passed += usize::from(run.outcome);
                    bar.inc(1);
                }
            })
            .await?;
            bar.finish_and_clear();
            if json {
                out(&serde_json::to_string_pretty(&report)?);
            } else {
                out(&report.markdown());
            }
            let metric = match metric {
                MetricArg::Strict => Metric::Strict,
                MetricArg::Sequence => Metric::Sequence,
                MetricArg::Outcome => Metric::Outcome,
                MetricArg::PassK => Metric::PassK,
            };
            if let Some(t) = threshold {
                let got = report.min_rate(metric);
                if got < t {
                    eprintln!("below threshold: {metric:?} rate {got:.3} < {t}");
                    return Ok(1);
                }
            }
            Ok(0)
        }
        EvalCommand::Tokens { json } => {
            let report = tokens::report()?;
            if json {
                out(&serde_json::to_string_pretty(&report)?);
            } else {
                out(&report.markdown());
            }
            Ok(0)
        }
        EvalCommand::Arms {
            dir,
            price_in,
            price_out,
            drive,
            prompts,
            workspace,
            plugin_dir,
            json,
        } => {
            if drive {
                let code = drive_copilot(
                    &dir,
                    prompts.as_deref(),
                    workspace.as_deref(),
                    plugin_dir.as_deref(),
                )
                .await?;
                if code != 0 {
                    return Ok(code);
                }
            }
            let report = arms::from_dir(
                &dir,
                arms::Prices {
                    input_per_m: price_in,
                    output_per_m: price_out,
                },
            )?;
            if json {
                out(&serde_json::to_string_pretty(&report)?);
            } else {
                out(&report.markdown());
            }
            Ok(0)
        }
    }
}

/// The Copilot CLI: `$TOOLGATE_TOOLS_DIR/hosts/node_modules/.bin/copilot`, `.tools/…` under the
/// current directory, or `copilot` on PATH.
fn find_copilot() -> Option<PathBuf> {
    let rel = Path::new("hosts/node_modules/.bin/copilot");
    let mut candidates = Vec::new();
    if let Some(t) = std::env::var_os("TOOLGATE_TOOLS_DIR") {
        candidates.push(PathBuf::from(t).join(rel));
    }
    if let Ok(cwd) = std::env::current_dir() {
        candidates.push(cwd.join(".tools").join(rel));
    }
    if let Some(path) = std::env::var_os("PATH") {
        candidates.extend(std::env::split_paths(&path).map(|p| p.join("copilot")));
    }
    candidates.into_iter().find(|p| p.is_file())
}

async fn drive_copilot(
    dir: &Path,
    prompts: Option<&Path>,
    workspace: Option<&Path>,
    plugin_dir: Option<&Path>,
) -> Result<i32> {
    let Some(copilot) = find_copilot() else {
        eprintln!(
            "no host CLI: the Copilot CLI is not installed (looked in $TOOLGATE_TOOLS_DIR/hosts, ./.tools/hosts and PATH). Compare existing transcripts with `toolgate eval arms --dir DIR`."
        );
        return Ok(EXIT_NO_HOST);
    };
    let authenticated = ["COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN"]
        .iter()
        .any(|v| std::env::var(v).is_ok_and(|s| !s.trim().is_empty()));
    if !authenticated {
        eprintln!(
            "no authenticated host CLI: {} is installed but none of COPILOT_GITHUB_TOKEN, GH_TOKEN or GITHUB_TOKEN is set, so it cannot reach a model.",
            copilot.display()
        );
        return Ok(EXIT_NO_HOST);
    }
    let prompts = prompts.context("--drive needs --prompts FILE")?;
    let text = std::fs::read_to_string(prompts)
        .with_context(|| format!("reading {}", prompts.display()))?;
    let list: Vec<serde_json::Value> = serde_json::from_str(&text).with_context(|| {
        format!(
            "{} must be a JSON array of {{\"id\", \"prompt\"}}",
            prompts.display()
        )
    })?;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let cwd = match workspace {
        Some(w) => w.to_owned(),
        None => std::env::current_dir()?,
    };
    for p in &list {
        let (Some(id), Some(prompt)) = (p["id"].as_str(), p["prompt"].as_str()) else {
            bail!("every prompt needs a string \"id\" and \"prompt\": {p}");
        };
        for arm in ["baseline", "codeact"] {
            let mut cmd = tokio::process::Command::new(&copilot);
            let text = if arm == "codeact" {
                format!("{prompt} Use codeact to do this in a single sandbox run.")
            } else {
                prompt.to_owned()
            };
            cmd.args(["-p", &text, "--output-format", "json", "--yolo", "-s"])
                .current_dir(&cwd)
                .kill_on_drop(true);
            if arm == "baseline" {
                cmd.arg("--no-custom-instructions");
            } else if let Some(pd) = plugin_dir {
                cmd.arg("--plugin-dir").arg(pd);
            }
            eprintln!("running {id} ({arm})…");
            let output = tokio::time::timeout(Duration::from_secs(300), cmd.output())
                .await
                .with_context(|| format!("{id} ({arm}) ran past 300 s"))?
                .with_context(|| format!("running {}", copilot.display()))?;
            let file = dir.join(format!("{id}.{arm}.jsonl"));
            toolgate_fs::atomic_write(&file, &output.stdout)
                .with_context(|| format!("writing {}", file.display()))?;
        }
    }
    Ok(0)
}
