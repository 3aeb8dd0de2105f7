//! CLI commands over the Debrief plot domain: tools, import, catalog, plot, demo.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result, bail};
use async_trait::async_trait;
use clap::{Args, Subcommand, ValueEnum};
use serde_json::{Map, Value, json};
use toolgate_core::flow::{Answer, Confirmer};
use toolgate_core::telemetry::{JsonlSink, TelemetrySink};
use toolgate_core::{Preview, Registry, ToolSet};
use toolgate_plot::debrief::{self, Debrief, Settings};
use toolgate_plot::session::Session;
use toolgate_plot::stac_api::{self, ApiStore};
use toolgate_plot::store::StacStore;
use toolgate_plot::tools::units::Units;
use toolgate_plot::{demo, rep};

use crate::paths;

#[derive(Subcommand)]
pub enum ToolsCommand {
    /// List every tool: id, title, parameters, whether it modifies a plot.
    List {
        /// Machine-readable manifest (JSON).
        #[arg(long, conflicts_with = "markdown")]
        json: bool,
        /// An LLM-ready Markdown reference (for `codeact`: Python signatures and examples).
        #[arg(long)]
        markdown: bool,
        /// Which tools: the Debrief analysis tools, the CodeAct sandbox functions, or both.
        #[arg(long, default_value = "all", value_parser = tool_set_parser(false))]
        surface: ToolSet,
        /// With `--surface codeact`: also the plot functions a program can call when it runs
        /// with a plot open (`toolgate exec --plot PLOT_ID`), with their parameters.
        #[arg(long)]
        plot: bool,
        /// Workspace root for the CodeAct tools (default: the current directory).
        #[arg(long, value_name = "DIR")]
        workspace: Option<PathBuf>,
        /// A `.mcp.json`-style file of upstream MCP servers whose tools are listed too
        /// (namespaced `server__tool`).
        #[arg(long, value_name = "FILE", env = "TOOLGATE_MCP_SERVERS")]
        upstream: Option<PathBuf>,
    },
}

/// The parser of a `--surface` flag: the tool sets by name (exactly as written), listed in the
/// help, with a line on each when `described`.
pub(crate) fn tool_set_parser(
    described: bool,
) -> impl clap::builder::TypedValueParser<Value = ToolSet> {
    let value = |t: ToolSet, help: &'static str| {
        let v = clap::builder::PossibleValue::new(t.as_str());
        if described { v.help(help) } else { v }
    };
    let names = clap::builder::PossibleValuesParser::new([
        value(ToolSet::Debrief, "The Debrief analysis tools"),
        value(ToolSet::Codeact, "`run_code` and the CodeAct sandbox tools"),
        value(ToolSet::All, "Both"),
    ]);
    clap::builder::TypedValueParser::try_map(names, |name: String| ToolSet::parse(&name))
}

#[derive(Args, Debug, Clone)]
pub struct StoreArgs {
    /// A STAC catalogue folder (with catalog.json), or a STAC API: `https://host/path/`
    /// (`stac+api://host:port/path` for plain http; `#collection=NAME`, default `debrief`).
    /// Default: your own plots (`<data dir>/plots`, where `toolgate import` writes), searched
    /// and opened beside the built-in demo plots, which imports never touch.
    #[arg(long, env = "TOOLGATE_STORE")]
    pub store: Option<PathBuf>,
}

/// Exit codes: 0 imported, 1 a file could not be read or parsed, or the plot of --into is not
/// there (nothing written for it), 3 refused: a plot of that name exists and `--replace` was
/// not given (nothing changed).
#[derive(Args)]
pub struct ImportArgs {
    /// REP files to import: each becomes its own plot, or all of them one plot with --plot, or
    /// they are added to an existing plot with --into.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Import every file into ONE plot with this name (ownship, contacts, narrative and sensor
    /// files together, as an analyst builds a Debrief plot).
    #[arg(long, value_name = "NAME", conflicts_with = "into")]
    plot: Option<String>,
    /// Add the files' layers to this existing plot (its id or short name, e.g. `boat1`):
    /// positions, sensor contacts, sensor arcs, narratives and TMA solutions attach to the
    /// tracks they name, whichever file those tracks came from.
    #[arg(long, value_name = "PLOT", conflicts_with = "replace")]
    into: Option<String>,
    /// Replace a plot of the same name (without it, such an import is refused and nothing is
    /// changed). Edits saved to the replaced plot are lost; toolgate says when there were any.
    #[arg(long)]
    replace: bool,
    /// Write the plot's features.geojson pretty-printed (two-space indent) instead of compact
    /// JSON, which is about 2.3× smaller and faster to write and read.
    #[arg(long)]
    pretty: bool,
    #[command(flatten)]
    store: StoreArgs,
}

#[derive(Subcommand)]
pub enum CatalogCommand {
    /// Search plots by text, time, platform and bbox (AND-combined).
    Search {
        #[arg(long)]
        text: Option<String>,
        /// ISO-8601 start of the time window.
        #[arg(long)]
        start: Option<String>,
        /// ISO-8601 end of the time window.
        #[arg(long)]
        end: Option<String>,
        /// Platform name, id, type or role (repeatable).
        #[arg(long = "platform")]
        platforms: Vec<String>,
        /// Area as `west,south,east,north` in decimal degrees, e.g. `--bbox -5,50,0,55`.
        #[arg(long, value_name = "W,S,E,N", allow_hyphen_values = true, value_parser = parse_bbox)]
        bbox: Option<[f64; 4]>,
        /// Print the search result as JSON (for scripts) instead of a table.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Load plots into a STAC API catalogue (`--store https://…`): every plot of the given
    /// catalogue folders (e.g. written by `toolgate import`), the STAC items of `--items` NDJSON
    /// files (their features assets already where their hrefs say), or with `--demo` the
    /// built-in demo plots. A plot already there is replaced. Through the API's Transactions
    /// extension, one request per plot; with `--pgstac DSN` (the pgstac database behind the API)
    /// through pgstac's bulk path instead — rows copied into the collection's partitions,
    /// several at once — then toolgate's search indexes built: for large catalogues.
    Load {
        /// Catalogue folders (with catalog.json) whose plots are loaded.
        folders: Vec<PathBuf>,
        /// Load the built-in demo plots too.
        #[arg(long)]
        demo: bool,
        /// An NDJSON file of STAC items, one a line (repeatable).
        #[arg(long = "items", value_name = "FILE.ndjson")]
        items: Vec<PathBuf>,
        /// The pgstac database behind the API (postgresql://user@host:port/db): load through
        /// pgstac's bulk path and build toolgate's search indexes.
        #[arg(long, value_name = "DSN", env = "TOOLGATE_PGSTAC_DSN")]
        pgstac: Option<String>,
        /// Partitions copied at once on the bulk path (default: the CPUs, at most 4).
        #[arg(long, value_name = "N")]
        jobs: Option<usize>,
        #[command(flatten)]
        store: StoreArgs,
    },
}

/// `w,s,e,n` (commas, optionally spaces) → `[w, s, e, n]`, checked.
fn parse_bbox(s: &str) -> std::result::Result<[f64; 4], String> {
    let parts: Vec<&str> = s
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|p| !p.is_empty())
        .collect();
    let usage =
        "write the area as west,south,east,north in decimal degrees, e.g. --bbox -5,50,0,55";
    let [w, so, e, n] = parts.as_slice() else {
        return Err(format!(
            "\"{s}\" has {} number(s), not 4: {usage}",
            parts.len()
        ));
    };
    let num = |name: &str, t: &str| {
        t.parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .ok_or_else(|| format!("the {name} \"{t}\" is not a number: {usage}"))
    };
    let b = [
        num("west", w)?,
        num("south", so)?,
        num("east", e)?,
        num("north", n)?,
    ];
    if !(-180.0..=180.0).contains(&b[0]) || !(-180.0..=180.0).contains(&b[2]) {
        return Err(format!("longitudes must be within -180..180: {usage}"));
    }
    if !(-90.0..=90.0).contains(&b[1]) || !(-90.0..=90.0).contains(&b[3]) || b[1] > b[3] {
        return Err(format!(
            "latitudes must be within -90..90 with south ≤ north: {usage}"
        ));
    }
    Ok(b)
}

#[derive(Clone, Copy, ValueEnum)]
pub enum ScopeArg {
    All,
    Selection,
}

#[derive(Subcommand)]
pub enum PlotCommand {
    /// Summarise a plot (the same compact inventory an agent reads).
    Summary {
        /// The plot: its id (stac://…) or short name (e.g. `boat1`); default: the first plot in
        /// the catalogue.
        #[arg(long)]
        plot: Option<String>,
        /// Upper bound on the summary's tokens.
        #[arg(long)]
        token_budget: Option<usize>,
        /// Print the summary as the JSON an agent reads (for scripts) instead of tables.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Run an analysis tool: shows the plain-language preview, asks, applies, and saves only
    /// when you confirm on a terminal or pass `--yes --save`.
    ///
    /// Targets: the features named by --feature/--feature-id, else --scope. Without either, an
    /// analytical tool runs on every feature, while a tool that changes the plot is refused
    /// (nothing is selected on the command line, and toolgate does not guess what to change):
    /// name the features or pass --scope all.
    ///
    /// Exit codes: 0 ran (and applied), 1 the tool failed, 2 usage error, 3 refused before
    /// running (unknown tool, bad parameters, unresolvable targets), 4 declined.
    Run {
        /// Tool id (see `toolgate tools list`).
        tool: String,
        /// The plot: its id (stac://…) or short name (e.g. `boat1`); default: the first plot in
        /// the catalogue.
        #[arg(long)]
        plot: Option<String>,
        /// Parameter as key=value; values that parse as JSON are typed (5, true, [1,2]).
        #[arg(short = 'p', long = "param")]
        params: Vec<String>,
        /// Target a feature by name (repeatable).
        #[arg(long = "feature")]
        features: Vec<String>,
        /// Target a feature by id (repeatable).
        #[arg(long = "feature-id")]
        feature_ids: Vec<String>,
        /// Without --feature/--feature-id: `all` features, or the `selection` (empty on the
        /// command line). Edits need names or `--scope all`.
        #[arg(long, value_enum)]
        scope: Option<ScopeArg>,
        /// Approve the edit without asking.
        #[arg(long)]
        yes: bool,
        /// Save the plot after an approved edit (with --yes: without asking).
        #[arg(long)]
        save: bool,
        /// Print one JSON object (status, reason, text, dataset and its data) for scripts
        /// instead of lines and tables.
        #[arg(long)]
        json: bool,
        /// The unit setting: a distance unit (nm, yd, m or km) and/or a speed unit (kn, m/s or
        /// km/h), e.g. `yd` or `m,m/s`. Filled into the tool's unit parameter when -p does not
        /// give it, and the unit results are printed in. Default: nautical miles and knots.
        #[arg(long, env = "TOOLGATE_UNITS", value_parser = parse_units)]
        units: Option<Units>,
        #[command(flatten)]
        store: StoreArgs,
    },
}

fn parse_units(text: &str) -> Result<Units, String> {
    Units::parse(text).map_err(|e| e.to_string())
}

#[derive(Args)]
pub struct DemoArgs {
    #[command(flatten)]
    store: StoreArgs,
}

/// The registry of analysis tools behind `debrief_listTools` / `debrief_runTool`.
pub async fn debrief_registry() -> Result<Registry> {
    registry_with_hint("Call debrief_listTools first.").await
}

/// The same tools for `toolgate plot run`: an unknown id says how a person lists them.
async fn cli_registry() -> Result<Registry> {
    registry_with_hint("`toolgate tools list` lists every tool.").await
}

/// The analysis tools, an unknown id answered with `hint`.
async fn registry_with_hint(hint: &str) -> Result<Registry> {
    let mut registry = Registry::new()
        .with_discovery_hint(hint)
        .with_filter(tool_filter()?);
    registry
        .register(Arc::new(toolgate_plot::tools::NativeTools))
        .await
        .context("registering the native Debrief tools")?;
    Ok(registry)
}

/// Allow/deny lists: the user config file's `[tools]` table, then the environment, which may
/// only narrow them: the same layering as CodeAct (`toolgate_config`), without a
/// project layer.
pub fn tool_filter() -> Result<toolgate_core::ToolFilter> {
    let config = toolgate_config::CodeactConfig::load_user(&paths::user_config(), |k| {
        std::env::var(k).ok()
    })?;
    Ok(config.tool_filter())
}

/// How the CodeAct runtime finds the user's config and reports configuration warnings.
pub fn codeact_host() -> toolgate_codeact::Host {
    toolgate_codeact::Host {
        user_config: paths::user_config(),
        warn: |message| eprintln!("toolgate: warning: {message}"),
    }
}

/// The tools CodeAct programs see: the workspace tools confined to `root`, plus the command
/// and custom tools from the config files (`exec --plot` and `run_code` with an open plot add
/// the plot tools over a scratch copy).
pub async fn codeact_tools(root: &Path) -> Result<toolgate_codeact::Tools> {
    Ok(toolgate_codeact::Tools::open(root, &codeact_host()).await?)
}

/// The STAC API `--store` names, if it names one (rather than a folder).
pub fn api_address(args: &StoreArgs) -> Option<&str> {
    args.store
        .as_deref()
        .and_then(Path::to_str)
        .filter(|s| stac_api::is_api_address(s))
}

/// Connect to a STAC API store; its opened plots are copied under the data directory.
pub fn open_api_store(address: &str) -> Result<ApiStore> {
    let api = ApiStore::connect(None, address, std::time::Duration::from_secs(30))?;
    let key = toolgate_plot::sha256_hex(api.address.canonical().as_bytes());
    let mirror = paths::data_dir()
        .join("stac-api")
        .join(key.get(..16).unwrap_or(&key));
    Ok(api.with_mirror(&mirror))
}

/// The API stores `--store` names (none for a folder or the demo store).
pub fn api_stores(args: &StoreArgs) -> Result<Vec<ApiStore>> {
    api_address(args)
        .map(open_api_store)
        .transpose()
        .map(|a| a.into_iter().collect())
}

/// The session over `--store`: a folder store, or a STAC API store with its mirror; without
/// `--store`, your own plots (when you have imported any) and the demo plots.
pub fn open_session(args: &StoreArgs) -> Result<Session> {
    match api_address(args) {
        Some(address) => {
            let api = open_api_store(address)?;
            let mirror = mirror_store(&api)?;
            Ok(Session::new(vec![mirror]).with_api_stores(vec![api]))
        }
        None if args.store.is_none() => {
            let mut stores = Vec::new();
            if let Some(mine) = existing_user_store()? {
                stores.push(mine);
            }
            stores.push(open_store(args)?);
            Ok(Session::new(stores))
        }
        None => Ok(Session::new(vec![open_store(args)?])),
    }
}

/// The folder stores a long-running server serves: `--store`'s (a STAC API's mirror), else
/// your own plots first — where the workbench's import writes — and the demo plots.
pub fn open_stores(args: &StoreArgs) -> Result<Vec<StacStore>> {
    if args.store.is_some() {
        return Ok(vec![open_store(args)?]);
    }
    Ok(vec![user_store()?, open_store(args)?])
}

/// The id of your own plots' store (`stac://plots/…`).
pub const USER_STORE_ID: &str = "plots";

/// Your own plots' store, when `toolgate import` has made it.
fn existing_user_store() -> Result<Option<StacStore>> {
    let dir = paths::user_store_dir();
    if !dir.join("catalog.json").exists() {
        return Ok(None);
    }
    StacStore::open(USER_STORE_ID, &dir)
        .map(Some)
        .with_context(|| format!("opening your plots in {}", dir.display()))
}

/// Your own plots' store, made on first use.
fn user_store() -> Result<StacStore> {
    let dir = paths::user_store_dir();
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    StacStore::create(USER_STORE_ID, &dir, "Your plots")
        .with_context(|| format!("opening your plots in {}", dir.display()))
}

/// The one plot `reference` names (its id or short name) in `session`'s stores, or an error
/// that lists the plots it could mean or says how to find one.
pub fn plot_named(session: &mut Session, reference: &str) -> Result<String> {
    let found = session.plots_named(reference);
    match found.as_slice() {
        [(id, _)] => Ok(id.clone()),
        [] => bail!(
            "no plot is called \"{}\": give a plot's id (stac://…) or short name (the folder \
             of its id, e.g. boat1, or its title); `toolgate catalog search` lists them",
            toolgate_core::clip::quote(reference)
        ),
        many => bail!(
            "\"{}\" could be {} plots: {}; give its id",
            toolgate_core::clip::quote(reference),
            many.len(),
            many.iter()
                .map(|(id, title)| format!("{title} ({id})"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn mirror_store(api: &ApiStore) -> Result<StacStore> {
    let dir = api
        .mirror_dir
        .clone()
        .context("internal: a STAC API store without its mirror folder")?;
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    StacStore::create(&api.id, &dir, "STAC API plots opened here")
        .with_context(|| format!("opening {}", dir.display()))
}

/// A folder store, or for a STAC API the folder its opened plots are copied to (callers that
/// search or open through the API use [`open_session`]).
pub fn open_store(args: &StoreArgs) -> Result<StacStore> {
    if let Some(address) = api_address(args) {
        return mirror_store(&open_api_store(address)?);
    }
    match &args.store {
        Some(dir) => {
            let id = dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "store".to_owned());
            StacStore::open(&id, dir)
                .with_context(|| format!("opening the catalogue in {}", dir.display()))
        }
        None => {
            let dir = paths::demo_store_dir();
            demo::ensure_demo_store(&dir)
                .with_context(|| format!("creating the demo store in {}", dir.display()))
        }
    }
}

fn sink() -> Arc<dyn TelemetrySink> {
    Arc::new(JsonlSink::new(paths::telemetry_file()))
}

fn debrief(session: Session, registry: Registry, mode: toolgate_core::Mode) -> Debrief {
    Debrief::new(
        Arc::new(Mutex::new(session)),
        Arc::new(registry),
        sink(),
        Settings {
            surface: "cli".to_owned(),
            mode,
            ..Settings::default()
        },
    )
}

/// One line to stdout. A closed pipe (`toolgate tools list | head`) ends the output quietly
/// instead of panicking the way `println!` does.
fn out(s: &str) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    if writeln!(stdout, "{s}").is_err() {
        std::process::exit(0);
    }
}

pub async fn tools(command: ToolsCommand) -> Result<i32> {
    let ToolsCommand::List {
        json,
        markdown,
        surface,
        plot,
        workspace,
        upstream,
    } = command;
    if plot && surface != ToolSet::Codeact {
        bail!(
            "--plot lists the plot functions of a CodeAct program (`toolgate exec --plot`); use it with --surface codeact"
        );
    }
    // The plot tools as a program sees them over its scratch copy (no plot needs to be open).
    let plot_specs = if plot {
        toolgate_plot::transaction::scratch_specs()
    } else {
        Vec::new()
    };
    let root = match workspace {
        Some(w) => w,
        None => std::env::current_dir().context("reading the current directory")?,
    };
    let mut registry = match surface {
        ToolSet::Debrief => debrief_registry().await?,
        ToolSet::Codeact | ToolSet::All => codeact_tools(&root).await?.into_registry(),
    };
    if surface == ToolSet::All {
        registry
            .register(Arc::new(toolgate_plot::tools::NativeTools))
            .await
            .context("registering the native Debrief tools")?;
    }
    // Upstream servers stay connected until the listing is printed (dropping them kills them).
    let mut _upstreams = Vec::new();
    if let Some(path) = &upstream {
        let configs = toolgate_mcp::upstream::read_config(path)?;
        let (ok, errors) =
            toolgate_mcp::upstream::connect_all(&configs, crate::paths::confiner().as_ref()).await;
        for e in errors {
            eprintln!("warning: {e}");
        }
        for u in ok {
            registry.register(u.clone()).await.with_context(|| {
                format!("registering the tools of upstream server {}", u.name())
            })?;
            _upstreams.push(u);
        }
    }
    let backend =
        toolgate_sandbox::detect(toolgate_sandbox::Backend::Auto, |k| std::env::var(k).ok())
            .map(|s| s.backend)
            .unwrap_or(toolgate_sandbox::Backend::Monty);
    let listing = registry.listing();
    if json {
        let manifest: Vec<Value> = registry
            .specs()
            .chain(&plot_specs)
            .map(|s| toolgate_sandbox::manifest_entry(s, backend))
            .collect();
        out(&serde_json::to_string_pretty(&manifest)?);
    } else if markdown && surface == ToolSet::Codeact {
        let specs: Vec<_> = registry.specs().cloned().collect();
        let mut md = toolgate_sandbox::markdown_reference(&specs, backend);
        if plot {
            md.push('\n');
            md.push_str(&toolgate_sandbox::plot_functions_reference(&plot_specs));
        }
        out(md.trim_end());
    } else if markdown {
        let mut md = String::from(
            "# toolgate tools\n\nRun them through `debrief_runTool` (or as Python functions inside `run_code`). Tools marked **modifies** ask for a confirmation and leave the plot unsaved.\n",
        );
        for t in &listing {
            md.push_str(&format!(
                "\n## `{}` — {}{}\n\n{}\n\n",
                t.id,
                t.name,
                if t.mutating { " (**modifies**)" } else { "" },
                t.description
            ));
            if t.parameters.is_empty() {
                md.push_str("No parameters.\n");
            }
            for p in &t.parameters {
                md.push_str(&format!(
                    "- `{}` ({}{}){}{}{}\n",
                    p.name,
                    p.value_type,
                    if p.required { ", required" } else { "" },
                    p.default_value
                        .as_ref()
                        .map(|d| format!(", default {d}"))
                        .unwrap_or_default(),
                    if p.choices.is_empty() {
                        String::new()
                    } else {
                        format!(
                            ", one of: {}",
                            p.choices
                                .iter()
                                .map(toolgate_core::preview::format_value)
                                .collect::<Vec<_>>()
                                .join(", ")
                        )
                    },
                    if p.description.is_empty() {
                        String::new()
                    } else {
                        format!(" — {}", p.description)
                    }
                ));
            }
        }
        out(&md);
    } else {
        for t in &listing {
            out(&format!(
                "{:<28} {:<9} {}",
                t.id,
                if t.mutating { "modifies" } else { "read" },
                t.name
            ));
        }
        for s in &plot_specs {
            out(&format!(
                "{:<28} {:<9} {} (with --plot)",
                toolgate_sandbox::python_identifier(&s.id),
                if s.effect().is_mutating() {
                    "modifies"
                } else {
                    "read"
                },
                s.title
            ));
        }
    }
    Ok(0)
}

/// "3 TRACK, 1 NARRATIVE": what a prepared plot holds, for the import's report line.
fn kinds_label(plot: &toolgate_plot::import::PreparedPlot) -> String {
    plot.kinds
        .iter()
        .map(|(k, n)| format!("{n} {k}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The files a prepared plot was read from, comma-separated.
fn files_label(plot: &toolgate_plot::import::PreparedPlot) -> String {
    plot.files
        .iter()
        .map(|f| f.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Prepares each group's plot, the groups spread over the machine's cores (each group is
/// parsed and serialised on one thread; the results come back in the groups' order).
fn prepare_groups(
    groups: &[&[toolgate_plot::import::RepSource]],
    name: Option<&str>,
    layout: rep::JsonLayout,
) -> Vec<Result<toolgate_plot::import::PreparedPlot, toolgate_plot::import::ImportError>> {
    use toolgate_plot::import::prepare_plot_with;
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    if groups.len() < 2 || cores < 2 {
        return groups
            .iter()
            .map(|g| prepare_plot_with(g, name, layout))
            .collect();
    }
    let per_thread = groups.len().div_ceil(cores);
    std::thread::scope(|scope| {
        let handles: Vec<_> = groups
            .chunks(per_thread)
            .map(|chunk| {
                scope.spawn(move || {
                    chunk
                        .iter()
                        .map(|g| prepare_plot_with(g, name, layout))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    })
}

pub fn import(args: &ImportArgs) -> Result<i32> {
    use toolgate_plot::import::{ImportError, RepSource};
    let mut failed = false;
    let mut sources = Vec::with_capacity(args.files.len());
    for file in &args.files {
        match RepSource::read(file) {
            Ok(s) => sources.push(s),
            Err(e) => {
                failed = true;
                eprintln!("error: {e}");
            }
        }
    }
    if let Some(into) = &args.into {
        if failed {
            eprintln!("error: nothing was added: every file added with --into must be readable");
            return Ok(1);
        }
        return import_into(args, into, &sources);
    }
    // One plot of every file with --plot, else one plot per file.
    let groups: Vec<&[RepSource]> = if args.plot.is_some() {
        if failed {
            eprintln!("error: no plot was written: every file of a --plot import must be readable");
            return Ok(1);
        }
        vec![&sources[..]]
    } else {
        sources.chunks(1).collect()
    };
    let layout = if args.pretty {
        rep::JsonLayout::Pretty
    } else {
        rep::JsonLayout::Compact
    };
    let results = prepare_groups(&groups, args.plot.as_deref(), layout);
    let mut prepared = Vec::new();
    for (group, result) in groups.into_iter().zip(results) {
        match result {
            Ok(plot) => {
                for f in &plot.files {
                    if f.windows_1252 {
                        eprintln!(
                            "note: {} is not UTF-8; read it as Windows-1252 (Latin-1)",
                            f.name
                        );
                    }
                    // What the plot will not show, one line per line kind: nothing lost silently.
                    for unhandled in &f.unhandled {
                        eprintln!("warning: {}: {unhandled}", f.name);
                    }
                }
                if plot.undated {
                    eprintln!(
                        "warning: {} has no times (no position, narrative, sensor, TMA or timed \
                         annotation lines): the plot is imported undated",
                        plot.files
                            .iter()
                            .map(|f| f.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    );
                }
                prepared.push(plot);
            }
            Err(e) => {
                failed = true;
                if let ImportError::Empty { .. } = e {
                    for f in group {
                        let (text, _) = rep::decode_rep(&f.bytes);
                        if let Ok(parsed) = rep::parse_rep(&f.name, &text) {
                            for unhandled in &parsed.unhandled {
                                eprintln!("warning: {}: {unhandled}", f.name);
                            }
                        }
                    }
                }
                eprintln!("error: {e}");
            }
        }
    }
    if prepared.is_empty() {
        // Nothing to write: the store is not created or touched.
        return Ok(1);
    }
    if let Some(address) = api_address(&args.store) {
        let api = open_api_store(address)?;
        return import_into_api(&api, &prepared, args.replace, failed);
    }
    let mut store = match &args.store.store {
        Some(dir) => {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            let id = dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "store".to_owned());
            StacStore::create(&id, dir, &id)?
        }
        None => user_store()?,
    };
    let mut refused = false;
    for plot in &prepared {
        let files = files_label(plot);
        match store.add_prepared(plot, args.replace) {
            Ok(written) => {
                let kinds = kinds_label(plot);
                let replaced = if written.replaced {
                    " (replacing the plot of that name)"
                } else {
                    ""
                };
                let contacts: usize = plot.files.iter().map(|f| f.contacts).sum();
                let contacts = if contacts > 0 {
                    format!(", {contacts} sensor contact(s)")
                } else {
                    String::new()
                };
                out(&format!(
                    "imported {files} → {}: {kinds}{contacts}{replaced}",
                    written.plot_id
                ));
                // With several files, what each one brought.
                if plot.files.len() > 1 {
                    for f in &plot.files {
                        let kinds = f
                            .kinds
                            .iter()
                            .map(|(k, n)| format!("{n} {k}"))
                            .collect::<Vec<_>>()
                            .join(", ");
                        out(&format!(
                            "  {}: {kinds} ({} positions)",
                            f.name, f.positions
                        ));
                    }
                }
                match written.discarded_saved_edits {
                    Some(true) => eprintln!(
                        "warning: {} had edits saved since it was imported; --replace discarded them",
                        written.plot_id
                    ),
                    None if written.replaced => eprintln!(
                        "warning: {} was replaced; it was not written by `toolgate import`, so any \
                         edits saved to it are gone too",
                        written.plot_id
                    ),
                    _ => {}
                }
            }
            Err(e) if e.is_refusal() => {
                refused = true;
                eprintln!("refused: {e}");
            }
            Err(e) => {
                failed = true;
                eprintln!("error: {files}: {e}");
            }
        }
    }
    Ok(if failed {
        1
    } else if refused {
        3
    } else {
        0
    })
}

/// `toolgate import --into PLOT FILE…`: the files' layers added to an existing plot of the
/// store (`--store`, else your own plots).
fn import_into(
    args: &ImportArgs,
    into: &str,
    sources: &[toolgate_plot::import::RepSource],
) -> Result<i32> {
    if api_address(&args.store).is_some() {
        bail!(
            "--into adds to a plot in a catalogue folder; for a STAC API, import the files as a \
             new plot (--plot NAME) or load an edited folder with `toolgate catalog load`"
        );
    }
    let mut store = match &args.store.store {
        Some(dir) => {
            let id = dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "store".to_owned());
            StacStore::open(&id, dir)
                .with_context(|| format!("opening the catalogue in {}", dir.display()))?
        }
        None => match existing_user_store()? {
            Some(store) => store,
            None => user_store()?,
        },
    };
    let found: Vec<(String, String)> = store
        .lookup(into)
        .iter()
        .map(|i| (i.plot_id.clone(), i.title.clone()))
        .collect();
    let plot_id = match found.as_slice() {
        [(id, _)] => id.clone(),
        [] => {
            let demo_has_it = args.store.store.is_none()
                && demo::ensure_demo_store(&paths::demo_store_dir())
                    .is_ok_and(|d| !d.lookup(into).is_empty());
            if demo_has_it {
                eprintln!(
                    "error: \"{into}\" is a demo plot, and imports never change the demo: \
                     import its files and yours as one plot of your own (--plot NAME), then add \
                     more with --into NAME"
                );
            } else {
                eprintln!(
                    "error: no plot called \"{into}\" in {} to add the files to: give a plot's \
                     id or short name (`toolgate catalog search` lists them), or import the files \
                     as a new plot with --plot NAME",
                    store.root.display()
                );
            }
            return Ok(1);
        }
        many => {
            eprintln!(
                "error: \"{into}\" could be {} plots: {}; give its id",
                many.len(),
                many.iter()
                    .map(|(id, title)| format!("{title} ({id})"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            return Ok(1);
        }
    };
    let added = match store.add_to_plot(&plot_id, sources) {
        Ok(added) => added,
        Err(e) => {
            if let toolgate_plot::import::ImportError::Empty { .. } = e {
                for f in sources {
                    let (text, _) = rep::decode_rep(&f.bytes);
                    if let Ok(parsed) = rep::parse_rep(&f.name, &text) {
                        for unhandled in &parsed.unhandled {
                            eprintln!("warning: {}: {unhandled}", f.name);
                        }
                    }
                }
            }
            eprintln!("error: {e}; nothing was added to {plot_id}");
            return Ok(1);
        }
    };
    for f in &added.files {
        if f.windows_1252 {
            eprintln!(
                "note: {} is not UTF-8; read it as Windows-1252 (Latin-1)",
                f.name
            );
        }
        for unhandled in &f.unhandled {
            eprintln!("warning: {}: {unhandled}", f.name);
        }
    }
    let files = added
        .files
        .iter()
        .map(|f| f.name.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    let mut what: Vec<String> = added
        .kinds
        .iter()
        .map(|(k, n)| format!("{n} {k}"))
        .collect();
    if added.positions > 0 {
        what.push(format!(
            "{} position(s) on existing tracks",
            added.positions
        ));
    }
    if added.contacts > 0 {
        what.push(format!("{} sensor contact(s)", added.contacts));
    }
    out(&format!(
        "added {files} → {} (\"{}\"): {}",
        added.plot_id,
        added.title,
        if what.is_empty() {
            "nothing new".to_owned()
        } else {
            what.join(", ")
        }
    ));
    if !added.attached.is_empty() {
        out(&format!(
            "  attached to the plot's tracks: {}",
            added
                .attached
                .iter()
                .map(|(name, n)| format!("{name} {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    for (name, n) in &added.unattached {
        eprintln!(
            "warning: {n} added feature(s) name the track \"{name}\", which the plot does not \
             have: they are added unattached (import that track's file --into the plot too)"
        );
    }
    Ok(0)
}

/// `toolgate import --store <api>`: each prepared plot written through the Transactions
/// extension; an existing plot of that name refused unless `replace` (exit 3, as for a folder).
fn import_into_api(
    api: &ApiStore,
    prepared: &[toolgate_plot::import::PreparedPlot],
    replace: bool,
    mut failed: bool,
) -> Result<i32> {
    api.writable("imported plots")?;
    let mut refused = false;
    for plot in prepared {
        let plot_id = format!("stac://{}/{}/item.json", api.id, plot.dir);
        if !replace && api.has_plot(&plot_id)? {
            refused = true;
            eprintln!(
                "refused: a plot \"{}\" is already in the catalogue ({plot_id}); pass --replace to replace it",
                plot.title
            );
            continue;
        }
        match api.put_plot(&plot.item, &plot.features) {
            Ok(id) => {
                let kinds = kinds_label(plot);
                let files = files_label(plot);
                out(&format!("imported {files} → {id}: {kinds}"));
            }
            Err(e) => {
                failed = true;
                eprintln!("error: {}: {e}", plot.title);
            }
        }
    }
    Ok(if failed {
        1
    } else if refused {
        3
    } else {
        0
    })
}

/// What `toolgate catalog load` was asked.
struct LoadArgs<'a> {
    folders: &'a [PathBuf],
    demo_plots: bool,
    items: &'a [PathBuf],
    pgstac: Option<&'a str>,
    jobs: Option<usize>,
    store: &'a StoreArgs,
}

/// `toolgate catalog load --store <api> [FOLDER…] [--demo] [--items FILE…] [--pgstac DSN]`.
fn catalog_load(args: &LoadArgs) -> Result<i32> {
    let Some(address) = api_address(args.store) else {
        bail!(
            "catalog load writes into a STAC API: give --store https://host/path/ (or stac+api://host:port/path); a folder store is written with `toolgate import --store DIR`"
        );
    };
    let api = open_api_store(address)?;
    api.writable("loaded plots")?;
    let mut sources = Vec::new();
    for dir in args.folders {
        let id = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "store".to_owned());
        sources.push(
            StacStore::open(&id, dir)
                .with_context(|| format!("opening the catalogue in {}", dir.display()))?,
        );
    }
    if args.demo_plots {
        let dir = paths::data_dir().join("demo-store");
        sources.push(
            demo::ensure_demo_store(&dir)
                .with_context(|| format!("creating the demo store in {}", dir.display()))?,
        );
    }
    if sources.is_empty() && args.items.is_empty() {
        bail!("nothing to load: name catalogue folders or --items files, or pass --demo");
    }
    for source in &sources {
        for u in &source.unavailable {
            eprintln!(
                "note: {} skipped in {}: {}",
                u.href,
                source.root.display(),
                u.reason
            );
        }
    }
    let started = std::time::Instant::now();
    if let Some(dsn) = args.pgstac {
        let jobs = args
            .jobs
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get().min(4)));
        let r = crate::pgstac_load::load(&api, dsn, &sources, args.items, jobs)?;
        out(&format!(
            "loaded {} plot(s) into {} in {:.1} s through pgstac's bulk path ({} partition(s); rows {:.1} s, search indexes {:.1} s){}{}",
            r.loaded,
            api.address.canonical(),
            started.elapsed().as_secs_f64(),
            r.partitions,
            r.rows_secs,
            r.index_secs,
            if r.replaced > 0 {
                format!("; {} replaced", r.replaced)
            } else {
                String::new()
            },
            if r.failed > 0 {
                format!("; {} failed", r.failed)
            } else {
                String::new()
            },
        ));
        return Ok(i32::from(r.failed > 0));
    }
    let (mut loaded, mut failed) = (0usize, 0usize);
    for source in &sources {
        for entry in &source.items {
            match api.put_folder_plot(source, entry) {
                Ok(_) => loaded += 1,
                Err(e) => {
                    failed += 1;
                    eprintln!("error: {}: {e}", entry.plot_id);
                }
            }
        }
    }
    if !args.items.is_empty() {
        api.ensure_collection()?;
    }
    for file in args.items {
        let text =
            std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
        for (n, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            let put = serde_json::from_str::<serde_json::Value>(line)
                .map_err(anyhow::Error::from)
                .and_then(|item| {
                    let id = item
                        .get("id")
                        .and_then(serde_json::Value::as_str)
                        .unwrap_or_default()
                        .to_owned();
                    let href = stac_api::features_href(&item)
                        .unwrap_or_default()
                        .to_owned();
                    let body = stac_api::item_for_api(&item, &api.address.collection, &href)?;
                    api.put_item(&id, &body)?;
                    Ok(())
                });
            match put {
                Ok(()) => loaded += 1,
                Err(e) => {
                    failed += 1;
                    eprintln!("error: {} line {}: {e:#}", file.display(), n + 1);
                }
            }
        }
    }
    let hint = if loaded + failed >= 1000 {
        " (for large catalogues, --pgstac DSN loads through pgstac's bulk path)"
    } else {
        ""
    };
    out(&format!(
        "loaded {loaded} plot(s) into {} in {:.1} s{}{hint}",
        api.address.canonical(),
        started.elapsed().as_secs_f64(),
        if failed > 0 {
            format!("; {failed} failed")
        } else {
            String::new()
        }
    ));
    Ok(i32::from(failed > 0))
}

pub fn catalog(command: CatalogCommand) -> Result<i32> {
    let (text, start, end, platforms, bbox, json, store) = match command {
        CatalogCommand::Load {
            folders,
            demo,
            items,
            pgstac,
            jobs,
            store,
        } => {
            return catalog_load(&LoadArgs {
                folders: &folders,
                demo_plots: demo,
                items: &items,
                pgstac: pgstac.as_deref(),
                jobs,
                store: &store,
            });
        }
        CatalogCommand::Search {
            text,
            start,
            end,
            platforms,
            bbox,
            json,
            store,
        } => (text, start, end, platforms, bbox, json, store),
    };
    let session = open_session(&store)?;
    let where_ = match session.api_stores().first() {
        Some(api) => api.address.canonical(),
        None => session
            .stores()
            .iter()
            .map(|s| s.root.display().to_string())
            .collect::<Vec<_>>()
            .join(" and "),
    };
    let query = toolgate_plot::search::SearchQuery {
        text,
        start_time: start,
        end_time: end,
        platforms,
        bbox,
        limit: None,
    };
    let (result, api_entries) =
        stac_api::search_catalogues_with_entries(session.stores(), session.api_stores(), &query)?;
    if json {
        out(&serde_json::to_string_pretty(&result)?);
        return Ok(0);
    }
    let criteria = if result.criteria_applied.is_empty() {
        "no criteria: every plot".to_owned()
    } else {
        result.criteria_applied.join("; ")
    };
    let line = |text: &str| out(&crate::human::wrap(text, crate::human::width()));
    line(&format!(
        "{} plot(s) in {} match ({criteria}).",
        toolgate_plot::search::total_phrase(result.total, result.total_is),
        where_
    ));
    if let Some(m) = &result.message {
        line(m);
    }
    if !result.matches.is_empty() {
        let rows: Vec<Vec<String>> = result
            .matches
            .iter()
            .map(|m| {
                let span = m
                    .time_span
                    .as_ref()
                    .map_or_else(|| "undated".to_owned(), |t| human_span(&t.start, &t.end));
                // The platforms' names (the match also lists their types and roles).
                let names: Vec<String> = session
                    .find_item(&m.plot_id)
                    .map(|(_, i)| i)
                    .or_else(|| api_entries.iter().find(|e| e.plot_id == m.plot_id))
                    .map(|i| {
                        i.platforms
                            .iter()
                            .filter_map(|p| p.get("name").or_else(|| p.get("id")))
                            .map(crate::human::scalar)
                            .collect()
                    })
                    .unwrap_or_default();
                let platforms = if names.is_empty() {
                    "-".to_owned()
                } else {
                    names.join(", ")
                };
                vec![m.title.clone(), span, platforms, m.plot_id.clone()]
            })
            .collect();
        out("");
        out(&crate::human::table_keeping(
            &["TITLE", "TIME (UTC)", "PLATFORMS", "PLOT ID"],
            &rows,
            &[3],
        ));
    }
    if let Some(more) = &result.more {
        line(more);
    }
    Ok(0)
}

/// `2026-03-01 00:00 – 12:00` (one day) or `1995-12-12 05:00 – 1995-12-13 01:00`, from
/// RFC 3339 UTC times (shown as they are when they are not).
fn human_span(start: &str, end: &str) -> String {
    let parts = |t: &str| Some((t.get(..10)?.to_owned(), t.get(11..16)?.to_owned()));
    match (parts(start), parts(end)) {
        (Some((d1, t1)), Some((d2, t2))) if d1 == d2 => format!("{d1} {t1} – {t2}"),
        (Some((d1, t1)), Some((d2, t2))) => format!("{d1} {t1} – {d2} {t2}"),
        _ => format!("{start} – {end}"),
    }
}

/// Asks at the terminal (stderr prompt, stdin answer); declines when there is no terminal.
struct TerminalConfirmer {
    yes: bool,
    /// Set when a person was actually asked (so a decline is theirs, not for want of a
    /// terminal).
    asked: std::sync::atomic::AtomicBool,
}

impl TerminalConfirmer {
    fn new(yes: bool) -> Self {
        Self {
            yes,
            asked: std::sync::atomic::AtomicBool::new(false),
        }
    }

    fn asked(&self) -> bool {
        self.asked.load(std::sync::atomic::Ordering::Relaxed)
    }
}

#[async_trait]
impl Confirmer for TerminalConfirmer {
    async fn confirm(&self, preview: &Preview) -> Answer {
        eprintln!("\n{}\n", preview.plain_text());
        if self.yes {
            eprintln!("(approved with --yes)");
            return Answer::Approve;
        }
        if !std::io::stdin().is_terminal() {
            return Answer::Decline;
        }
        self.asked.store(true, std::sync::atomic::Ordering::Relaxed);
        if ask("Apply this change? [y/N] ") {
            Answer::Approve
        } else {
            Answer::Decline
        }
    }
}

fn ask(question: &str) -> bool {
    eprint!("{question}");
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line).is_err() {
        return false;
    }
    matches!(line.trim().to_lowercase().as_str(), "y" | "yes")
}

fn parse_param(s: &str) -> Result<(String, Value)> {
    let (k, v) = s
        .split_once('=')
        .with_context(|| format!("parameter \"{s}\" must look like key=value"))?;
    let value = serde_json::from_str(v).unwrap_or_else(|_| Value::String(v.to_owned()));
    Ok((k.trim().to_owned(), value))
}

/// The plot `--plot` names (id or short name), else the first plot of the first store that has
/// any.
fn default_plot(session: &mut Session, plot: Option<String>) -> Result<String> {
    match plot {
        Some(p) => plot_named(session, &p),
        None => session
            .stores()
            .iter()
            .find_map(|s| s.items.first())
            .map(|i| i.plot_id.clone())
            .context("the catalogue has no plots; import some with `toolgate import`"),
    }
}

pub async fn plot(command: PlotCommand) -> Result<i32> {
    match command {
        PlotCommand::Summary {
            plot,
            token_budget,
            json,
            store,
        } => {
            let d = debrief(
                open_session(&store)?,
                debrief_registry().await?,
                toolgate_core::Mode::ReadOnly,
            );
            let id = default_plot(&mut d.session(), plot)?;
            d.session().open(&id)?;
            let mut input = json!({});
            if let Some(b) = token_budget {
                input["tokenBudget"] = json!(b);
            }
            let reply = d.summarize(&input);
            if json {
                out(&reply.text);
            } else {
                out(&human_summary(&reply.text));
            }
            Ok(reply.status.exit_code())
        }
        PlotCommand::Run {
            tool,
            plot,
            params,
            features,
            feature_ids,
            scope,
            yes,
            save,
            json,
            units,
            store,
        } => {
            let units = units.unwrap_or_default();
            let d = debrief(
                open_session(&store)?,
                cli_registry().await?,
                toolgate_core::Mode::Strict,
            )
            .with_units(units);
            let id = default_plot(&mut d.session(), plot)?;
            d.session().open(&id)?;
            let mut p = Map::new();
            for s in &params {
                let (k, v) = parse_param(s)?;
                p.insert(k, v);
            }
            let mut input = json!({"toolId": tool, "params": p, "plotId": id});
            if !features.is_empty() {
                input["featureNames"] = json!(features);
            }
            if !feature_ids.is_empty() {
                input["featureIds"] = json!(feature_ids);
            }
            if let Some(s) = scope {
                input["scope"] = json!(match s {
                    ScopeArg::All => "all",
                    ScopeArg::Selection => "selection",
                });
            }
            let confirmer = TerminalConfirmer::new(yes);
            let reply = d
                .run_tool_as(&input, &confirmer, debrief::Audience::Cli)
                .await;
            let (dirty, label) = {
                let session = d.session();
                let p = session.plot(&id)?;
                (p.doc.is_dirty(), p.doc.undo_label().map(str::to_owned))
            };
            let dataset = d
                .datasets()
                .into_iter()
                .find(|ds| reply.dataset.as_deref() == Some(ds.id.as_str()));
            let title = d
                .registry()
                .resolve(&tool)
                .map(|t| t.spec.title.clone())
                .unwrap_or_else(|_| tool.clone());
            if !json {
                out(&human_run(
                    &reply,
                    &title,
                    dataset.as_ref(),
                    confirmer.asked(),
                    units,
                ));
            }
            // Whether the change was saved (none when nothing changed): said after the save,
            // so what is printed stays true.
            let saved = if dirty {
                if let Some(l) = label.filter(|l| !l.is_empty()) {
                    eprintln!("Change: {l}");
                }
                let do_save = if yes {
                    save
                } else {
                    std::io::stdin().is_terminal() && ask("Save the plot to disk? [y/N] ")
                };
                if do_save {
                    d.session().save(&id)?;
                    eprintln!("Saved {id}.");
                } else {
                    eprintln!("{NOT_SAVED}");
                }
                Some(do_save)
            } else {
                None
            };
            if json {
                let mut v = serde_json::to_value(&reply)?;
                if let Some(ds) = &dataset {
                    v["data"] = ds.data.clone();
                }
                if reply.status == toolgate_core::outcome::Status::Declined && !confirmer.asked() {
                    v["text"] = json!(no_terminal_to_ask(&title));
                }
                if let Some(saved) = saved {
                    v["saved"] = json!(saved);
                    let said = if saved {
                        format!("Saved to {id}.")
                    } else {
                        NOT_SAVED.to_owned()
                    };
                    v["text"] = json!(format!("{} {said}", reply.text));
                }
                out(&serde_json::to_string_pretty(&v)?);
            }
            Ok(if dirty { 0 } else { reply.status.exit_code() })
        }
    }
}

/// Why a change was not made when nobody could be asked.
fn no_terminal_to_ask(title: &str) -> String {
    format!(
        "Not run: {title} changes the plot and needs your approval, and there is no terminal to \
         ask on. Nothing was changed. Pass --yes to approve it (and --save to keep the change)."
    )
}

/// What `plot run` says when an applied change is not saved (the process ends, so the change
/// goes with it).
const NOT_SAVED: &str =
    "Not saved: the change was discarded (pass --save with --yes, or answer y, to keep it).";

/// A plot summary for a person: the title, the time span, then one table per feature type.
fn human_summary(reply: &str) -> String {
    let Ok(v) = serde_json::from_str::<Value>(reply) else {
        return reply.to_owned();
    };
    let (Some(title), Some(features)) = (
        v.get("title").and_then(Value::as_str),
        v.get("features").and_then(Value::as_str),
    ) else {
        return v
            .get("hint")
            .and_then(Value::as_str)
            .map_or_else(|| reply.to_owned(), str::to_owned);
    };
    let mut out = format!("{title}\n");
    if let Some(id) = v.get("plotId").and_then(Value::as_str) {
        out.push_str(&format!("Plot: {id}\n"));
    }
    let span = v.get("span").and_then(Value::as_str).unwrap_or("undated");
    out.push_str(&format!("Time (UTC): {span}\n"));
    let total = v.get("total").and_then(Value::as_u64).unwrap_or(0);
    out.push_str(&format!("{total} feature(s)"));
    if v.get("dirty").and_then(Value::as_bool) == Some(true) {
        out.push_str(", with unsaved edits");
    }
    if v.get("truncated").and_then(Value::as_bool) == Some(true) {
        let listed = v.get("listed").and_then(Value::as_u64).unwrap_or(0);
        out.push_str(&format!(
            "; {listed} listed (the list was cut to fit; pass a larger --token-budget for more)"
        ));
    }
    let mut out = crate::human::wrap(&out, crate::human::width());
    out.push_str("\n\n");
    out.push_str(&crate::human::summary_features(features));
    out.trim_end().to_owned()
}

/// What `plot run` did, for a person at a terminal (the reply's text is written for a model).
fn human_run(
    reply: &toolgate_core::outcome::Reply,
    title: &str,
    dataset: Option<&debrief::Dataset>,
    asked: bool,
    units: Units,
) -> String {
    use toolgate_core::outcome::Status;
    let width = crate::human::width();
    let line = |text: String| crate::human::wrap(&text, width);
    match reply.status {
        Status::Declined if asked => {
            line(format!("You declined {title}: nothing was run or changed."))
        }
        Status::Declined => line(no_terminal_to_ask(title)),
        Status::Refused => line(format!("Not run: {}", reply.text)),
        Status::Failed => line(format!("{title} failed: {}", reply.text)),
        Status::Ok => match dataset {
            Some(ds) => {
                let summary = ds.summary.trim();
                let mut out = line(format!("{title}: {summary}"));
                let data = crate::human::dataset(&units.present(&ds.data));
                if !data.is_empty() {
                    out.push_str("\n\n");
                    out.push_str(&data);
                }
                out
            }
            // Worded for the command line (`Audience::Cli`): no dirty-state sentence, since
            // the command says itself whether it saved (from the plot's state, not this text).
            None => line(reply.text.clone()),
        },
    }
}

/// Approves every edit and says so (the demo shows what a person would be asked).
struct DemoConfirmer;

#[async_trait]
impl Confirmer for DemoConfirmer {
    async fn confirm(&self, preview: &Preview) -> Answer {
        out(&format!(
            "   ┌ confirmation asked of the analyst ─────────\n{}\n   └ (the demo approves)",
            preview
                .plain_text()
                .lines()
                .map(|l| format!("   │ {l}"))
                .collect::<Vec<_>>()
                .join("\n")
        ));
        Answer::Approve
    }
}

fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_owned()
    } else {
        format!(
            "{}… [{} more characters]",
            s.chars().take(n).collect::<String>(),
            s.chars().count() - n
        )
    }
}

pub async fn demo(args: &DemoArgs) -> Result<i32> {
    let store = open_store(&args.store)?;
    let store_root = store.root.clone();
    let before = hash_tree(&store_root)?;
    let d = debrief(
        Session::new(vec![store]),
        debrief_registry().await?,
        toolgate_core::Mode::Strict,
    );
    out(&format!(
        "toolgate demo — the four Debrief agent tools on the demo store ({})\n",
        store_root.display()
    ));
    let steps: Vec<(&str, &str, Value)> = vec![
        (
            "find the Exercise Alpha day-1 plot and open it",
            debrief::SEARCH,
            json!({"text": "Day 1", "open": true}),
        ),
        ("what's in this plot?", debrief::SUMMARIZE, json!({})),
        ("which tools can I run?", debrief::LIST_TOOLS, json!({})),
        (
            "colour the submarine track red",
            debrief::RUN_TOOL,
            json!({"toolId": "set-track-color", "params": {"color": "red"}, "featureNames": ["Contact"], "utterance": "colour the submarine track red"}),
        ),
        (
            "how far did HMS Nelson go?",
            debrief::RUN_TOOL,
            json!({"toolId": "track-stats", "featureNames": ["HMS Nelson"]}),
        ),
        (
            "make it pretty (an invented tool)",
            debrief::RUN_TOOL,
            json!({"toolId": "make-it-pretty", "params": {}}),
        ),
        (
            "colour the track red (ambiguous)",
            debrief::RUN_TOOL,
            json!({"toolId": "set-track-color", "params": {"color": "red"}, "featureNames": ["HMS"]}),
        ),
    ];
    for (i, (utterance, tool, input)) in steps.iter().enumerate() {
        out(&format!(
            "{}. analyst: \"{utterance}\"\n   agent → {tool} {}",
            i + 1,
            input
        ));
        let reply = d.call(tool, input, &DemoConfirmer).await?;
        out(&format!("   reply: {}\n", clip(&reply.text, 600)));
    }
    let active = d
        .session()
        .active_id()
        .map(str::to_owned)
        .context("the demo opened no plot")?;
    let dirty = d.session().plot(&active)?.doc.is_dirty();
    out(&format!(
        "The plot is {} in memory.",
        if dirty { "dirty (unsaved)" } else { "clean" }
    ));
    let undone = d.session().undo(&active)?;
    let dirty = d.session().plot(&active)?.doc.is_dirty();
    out(&format!(
        "Undo: \"{undone}\" — the plot is {} again.",
        if dirty { "still dirty" } else { "clean" }
    ));
    let after = hash_tree(&store_root)?;
    out(&format!(
        "Nothing was written to the store: {} (saving is a person's action: `toolgate plot run … --save`).",
        if before == after {
            "verified by hashing every file before and after"
        } else {
            "NO — files changed!"
        }
    ));
    Ok(i32::from(before != after))
}

/// Hash of every file under a directory (paths and contents), to prove nothing was written.
pub fn hash_tree(root: &Path) -> Result<String> {
    let mut entries = Vec::new();
    let mut stack = vec![root.to_owned()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).with_context(|| format!("listing {}", dir.display()))? {
            let e = e?;
            let p = e.path();
            if e.file_type()?.is_dir() {
                stack.push(p);
            } else {
                entries.push(p);
            }
        }
    }
    entries.sort();
    let mut all = Vec::new();
    for p in entries {
        all.extend_from_slice(p.to_string_lossy().as_bytes());
        all.extend_from_slice(&std::fs::read(&p)?);
    }
    Ok(toolgate_plot::sha256_hex(&all))
}
