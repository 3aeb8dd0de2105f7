//! The four agent tools — `debrief_searchPlots`, `debrief_summarizeCurrentPlot`,
//! `debrief_listTools`, `debrief_runTool` — over one session, with the fail-safe messages of
//! reference §3. Every surface (MCP, workbench chat, `toolgate chat`, eval) calls these.
//!
//! Named for the [`Debrief`] tool surface it holds, not `agent`: that word already names the
//! model loop (`toolgate-agent`) and the agent-definition files (`toolgate_convert::agent`).

use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{Map, Value, json};
use toolgate_core::flow::Confirmer;
use toolgate_core::policy::Mode;
use toolgate_core::telemetry::{Outcome, TelemetryRecord, TelemetrySink, Validation};
use toolgate_core::validate::ParamValidator;
use toolgate_core::{OutputKind, Refusal, RefusalKind, Registry, Reply, TokenCounter, ToolSpec};

use crate::model;
pub use crate::run::Audience;
use crate::run::{self, TargetKeys, TargetRequest};
use crate::search::SearchQuery;
use crate::session::{self, Session, SessionError};
use crate::summary::{self, NoPlot, SummaryRequest};
use crate::tools::units::Units;

pub const SEARCH: &str = "debrief_searchPlots";
pub const SUMMARIZE: &str = "debrief_summarizeCurrentPlot";
pub const LIST_TOOLS: &str = "debrief_listTools";
pub const RUN_TOOL: &str = "debrief_runTool";

/// Settings of the surface the tools are served on.
#[derive(Debug, Clone)]
pub struct Settings {
    pub surface: String,
    pub mode: Mode,
    pub active_model: String,
    pub priming_enabled: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            surface: "cli".to_owned(),
            mode: Mode::Strict,
            active_model: "unknown".to_owned(),
            priming_enabled: true,
        }
    }
}

/// [`Dataset::kind`] of the entry a failed tool run leaves in the Results panel.
pub const ERROR_KIND: &str = "error";

/// An analytical result kept for the Results panel (the reply carries only a summary), or the
/// error of a tool run that failed (`kind` = [`ERROR_KIND`]).
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Dataset {
    pub id: String,
    pub tool_id: String,
    pub plot_id: String,
    pub kind: String,
    pub summary: String,
    pub data: Value,
}

/// The specs of the four agent tools (what an MCP host or a chat model sees).
pub fn agent_tool_specs() -> Vec<ToolSpec> {
    let spec =
        |id: &str, title: &str, description: &str, kind: Option<&str>, schema: Value| ToolSpec {
            id: id.to_owned(),
            title: title.to_owned(),
            description: description.to_owned(),
            input_schema: schema,
            output_kind: kind.map(OutputKind::new),
            category: "debrief".to_owned(),
            annotations: Map::new(),
        };
    vec![
        spec(
            SEARCH,
            "Search Debrief plots",
            "Search the plot catalogue by text (title, description, tags), time range, platform (name, id, type, role) and/or bbox; each match gives id, title, time span, platforms, extent. open:true opens the plot when exactly one matches.",
            Some("search/plots"),
            json!({"type": "object", "additionalProperties": false, "properties": {
                "text": {"type": "string", "description": "Words to find in title, description or tags"},
                "startTime": {"type": "string", "description": "ISO-8601 start of the time window to overlap"},
                "endTime": {"type": "string", "description": "ISO-8601 end of the time window"},
                "platforms": {"type": "array", "items": {"type": "string"}, "description": "Platform names, ids, types or roles"},
                "bbox": {"type": "array", "items": {"type": "number"}, "minItems": 4, "maxItems": 4, "description": "[west, south, east, north]"},
                "open": {"type": "boolean", "description": "Open the plot if exactly one matches"}
            }}),
        ),
        spec(
            SUMMARIZE,
            "Summarise current Debrief plot",
            &format!(
                "Summarise the open plot: metadata plus a compact inventory (id, name, type, platform, time span, point count, where in the plot) without geometry. Use it before targeting an edit. selectionOnly restricts to the selected features; other open plots are listed. {}",
                crate::summary::LEGEND
            ),
            Some("read/plot_summary"),
            json!({"type": "object", "additionalProperties": false, "properties": {
                "plotId": {"type": "string", "description": "stac:// id of an open plot; default the active plot"},
                "selectionOnly": {"type": "boolean"},
                "tokenBudget": {"type": "integer", "minimum": 50, "description": "Upper bound on the reply's tokens"}
            }}),
        ),
        spec(
            LIST_TOOLS,
            "List Debrief tools",
            "List the tools for the open plot (or the named features, or the selection), with parameters and effect. all=true: every tool; toolIds: those, in full. Use before debrief_runTool; never invent ids or parameters.",
            Some("listing/tools"),
            json!({"type": "object", "additionalProperties": false, "properties": {
                "plotId": {"type": "string"},
                "featureNames": {"type": "array", "items": {"type": "string"}},
                "toolIds": {"type": "array", "items": {"type": "string"}},
                "all": {"type": "boolean"}
            }}),
        ),
        spec(
            RUN_TOOL,
            "Run a Debrief tool",
            "Run a Debrief tool by id against the current plot. Modifying tools ask the user to confirm in plain language and leave the plot unsaved; analytical tools return a summary and fill the Results panel. Target features with featureNames/featureIds from the summary; otherwise the map selection is used. Pass the analyst's words as utterance.",
            None,
            json!({"type": "object", "additionalProperties": false, "required": ["toolId"], "properties": {
                "toolId": {"type": "string", "minLength": 1, "description": "Tool id from debrief_listTools"},
                "params": {"type": "object", "description": "Tool parameters as listed by debrief_listTools"},
                "plotId": {"type": "string"},
                "scope": {"type": "string", "enum": ["all", "selection"]},
                "featureNames": {"type": "array", "items": {"type": "string"}},
                "featureIds": {"type": "array", "items": {"type": "string"}},
                "utterance": {"type": "string", "description": "The analyst's original request"}
            }}),
        ),
    ]
}

/// The Debrief tool surface over one session.
pub struct Debrief {
    pub(crate) session: Arc<Mutex<Session>>,
    pub(crate) registry: Arc<Registry>,
    pub(crate) sink: Arc<dyn TelemetrySink>,
    pub(crate) counter: TokenCounter,
    pub(crate) settings: Settings,
    pub(crate) validators: Vec<(String, ParamValidator)>,
    pub(crate) datasets: Mutex<Vec<Dataset>>,
    pub(crate) store_read_timeout: std::time::Duration,
    /// One save at a time: each checks the file against the last save's hash.
    pub(crate) saving: tokio::sync::Mutex<()>,
    /// Where applied changes are logged (set when the session is listed in a directory).
    pub(crate) activity: std::sync::OnceLock<crate::activity::ActivityHook>,
    /// The analyst's unit setting, filled into a tool call that leaves its unit out.
    pub(crate) units: std::sync::RwLock<Units>,
}

pub(crate) fn refused_outcome(r: &Refusal) -> Outcome {
    Outcome::typed(
        toolgate_core::Status::Refused,
        Some(r.kind.as_str()),
        &r.message,
    )
}

fn text_of(v: &impl serde::Serialize) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

impl Debrief {
    /// `registry` holds the analysis tools (its discovery hint should name debrief_listTools).
    pub fn new(
        session: Arc<Mutex<Session>>,
        registry: Arc<Registry>,
        sink: Arc<dyn TelemetrySink>,
        settings: Settings,
    ) -> Self {
        let validators = agent_tool_specs()
            .into_iter()
            .filter_map(|s| {
                ParamValidator::compile(&s.id, &s.input_schema)
                    .ok()
                    .map(|v| (s.id, v))
            })
            .collect();
        Self {
            session,
            registry,
            sink,
            counter: TokenCounter::default(),
            settings,
            validators,
            datasets: Mutex::new(Vec::new()),
            store_read_timeout: session::STORE_READ_TIMEOUT,
            saving: tokio::sync::Mutex::new(()),
            activity: std::sync::OnceLock::new(),
            units: std::sync::RwLock::new(Units::default()),
        }
    }

    /// Start with this unit setting instead of nautical miles and knots.
    #[must_use]
    pub fn with_units(self, units: Units) -> Self {
        self.set_units(units);
        self
    }

    /// The unit setting (nautical miles and knots unless changed): every tool run through
    /// [`Debrief::run_tool`] that leaves its unit parameter out gets it
    /// ([`Units::fill`](crate::tools::units::Units::fill)), so previews, results and undo
    /// labels speak one unit.
    pub fn units(&self) -> Units {
        *self
            .units
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Change the unit setting (the workbench's Distance/Speed choice).
    pub fn set_units(&self, units: Units) {
        *self
            .units
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = units;
    }

    /// Log this session's applied changes through `hook` (the first hook attached stays).
    pub fn attach_activity(&self, hook: crate::activity::ActivityHook) {
        let _ = self.activity.set(hook);
    }

    /// Log a change a surface made on this session's plot (undo, redo, save, revert from the
    /// page); `who` defaults to the current actor, then the session's client. Nothing happens
    /// when no log is attached.
    pub fn note_activity(
        &self,
        who: Option<&str>,
        action: crate::activity::Action,
        plot_id: &str,
        what: &str,
    ) {
        if let Some(hook) = self.activity.get() {
            let title = self
                .session()
                .plot(plot_id)
                .map(|p| p.title.clone())
                .unwrap_or_default();
            hook.record(who, action, plot_id, &title, what);
        }
    }

    /// How long opening or reverting a plot may wait for its file (default
    /// [`session::STORE_READ_TIMEOUT`]).
    pub fn with_store_read_timeout(mut self, timeout: std::time::Duration) -> Self {
        self.store_read_timeout = timeout;
        self
    }

    /// Open a plot (or focus it when open) and make it active. The file is read off the async
    /// runtime, bounded in time, and without the session lock held, so a slow or blocking file
    /// (a FIFO in the catalogue) delays only this call.
    pub async fn open_plot(&self, plot_id: &str) -> Result<(), SessionError> {
        // A STAC API plot is fetched first, without the session lock and off the runtime.
        let api = {
            let mut s = self.session();
            if s.focus_if_open(plot_id) {
                return Ok(());
            }
            s.api_store_for(plot_id).cloned()
        };
        let fetched = match api {
            Some(api) => {
                let id = plot_id.to_owned();
                Some(
                    tokio::task::spawn_blocking(move || api.fetch(&id))
                        .await
                        .map_err(|e| SessionError::Reader(e.to_string()))??,
                )
            }
            None => None,
        };
        let loader = {
            let mut s = self.session();
            if s.focus_if_open(plot_id) {
                return Ok(());
            }
            match fetched {
                Some(f) => s.loader_fetched(plot_id, f)?,
                None => s.loader(plot_id)?,
            }
        };
        let loaded = self.load_off_runtime(loader).await?;
        self.session().open_loaded(loaded)?;
        Ok(())
    }

    /// Save a plot (a person's action; no agent tool maps to it). The file is checked and
    /// written off the async runtime without the session lock held; edits made meanwhile stay
    /// unsaved.
    pub async fn save_plot(&self, plot_id: &str) -> Result<(), SessionError> {
        let _one_save = self.saving.lock().await;
        let api = {
            let s = self.session();
            s.check_save(plot_id)?;
            match s.api_store_for(plot_id) {
                Some(api) => Some((api.clone(), s.plot(plot_id)?.doc.disk_sha256().to_owned())),
                None => None,
            }
        };
        if let Some((api, known)) = api {
            // Not over someone else's change on the server (asked without the session lock).
            let id = plot_id.to_owned();
            tokio::task::spawn_blocking(move || api.check_unchanged(&id, &known))
                .await
                .map_err(|e| SessionError::Reader(e.to_string()))??;
        }
        let job = self.session().save_job(plot_id)?;
        let path = job.path().to_owned();
        let saved =
            session::off_runtime(path, self.store_read_timeout, move || job.write()).await?;
        self.session().finish_save(&saved)?;
        let write_back = self.session().write_back(plot_id);
        if let Some(w) = write_back {
            tokio::task::spawn_blocking(move || w.run())
                .await
                .map_err(|e| SessionError::Reader(e.to_string()))??;
        }
        Ok(())
    }

    /// Read a plot's file off the async runtime, bounded in time (no session lock is held).
    async fn load_off_runtime(
        &self,
        loader: session::PlotLoader,
    ) -> Result<session::LoadedPlot, SessionError> {
        let path = loader
            .features_path()
            .map(ToOwned::to_owned)
            .unwrap_or_default();
        session::off_runtime(path, self.store_read_timeout, move || loader.load()).await
    }

    /// Discard a plot's unsaved edits by reloading its file (read as in [`Debrief::open_plot`]).
    pub async fn revert_plot(&self, plot_id: &str) -> Result<(), SessionError> {
        let loader = {
            let mut s = self.session();
            s.plot(plot_id)?;
            s.loader(plot_id)?
        };
        let loaded = self.load_off_runtime(loader).await?;
        self.session().revert_loaded(loaded)
    }

    /// The session, caught up with its journal when it has one (changes other instances made):
    /// a journal that cannot be read is logged and this instance's copy is used.
    pub fn session(&self) -> MutexGuard<'_, Session> {
        let mut s = self
            .session
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Err(e) = s.sync() {
            tracing::warn!("{e}");
        }
        s
    }

    pub fn session_handle(&self) -> Arc<Mutex<Session>> {
        self.session.clone()
    }

    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Analytical results kept for the Results panel, newest last.
    pub fn datasets(&self) -> Vec<Dataset> {
        self.datasets.lock().map(|d| d.clone()).unwrap_or_default()
    }

    /// Keep a result (or a failed run's error) for the Results panel; returns its id.
    pub(crate) fn keep_result(
        &self,
        tool_id: &str,
        plot_id: String,
        kind: &str,
        summary: &str,
        data: Value,
    ) -> String {
        let mut ds = self
            .datasets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let id = format!("result-{}", ds.len() + 1);
        ds.push(Dataset {
            id: id.clone(),
            tool_id: tool_id.to_owned(),
            plot_id,
            kind: kind.to_owned(),
            summary: summary.to_owned(),
            data,
        });
        id
    }

    /// How many analytical results are kept, without copying them (the workbench polls it).
    pub fn dataset_count(&self) -> usize {
        self.datasets.lock().map(|d| d.len()).unwrap_or_default()
    }

    pub(crate) fn record(
        &self,
        tool: &str,
        input: Value,
        validation: Validation,
        outcome: Outcome,
        started: std::time::Instant,
    ) {
        let mut rec = TelemetryRecord::now(&self.settings.surface, tool, input);
        rec.validation = validation;
        rec.outcome = outcome;
        rec.active_model.clone_from(&self.settings.active_model);
        rec.priming_enabled = self.settings.priming_enabled;
        rec.latency_ms.total = started.elapsed().as_secs_f64() * 1000.0;
        self.sink.record(&rec);
    }

    /// Check a tool's input shape. A non-object input is treated as `{}` (as the spike did).
    /// `Err` lists every problem.
    pub(crate) fn check(
        &self,
        tool: &str,
        input: &Value,
    ) -> Result<Map<String, Value>, Vec<String>> {
        let map = input.as_object().cloned().unwrap_or_default();
        let Some((_, v)) = self.validators.iter().find(|(id, _)| id == tool) else {
            return Ok(map);
        };
        v.validate(&map)
    }

    /// Check an input's shape; a rejection is recorded (as rejected, with input `{}`) and the
    /// message to return is given back.
    pub(crate) fn accept(
        &self,
        tool: &str,
        input: &Value,
        prefix: &str,
        started: std::time::Instant,
    ) -> Result<Map<String, Value>, Reply> {
        self.check(tool, input).map_err(|problems| {
            let msg = format!("{prefix}{}", problems.join("; "));
            let refusal = Refusal::new(RefusalKind::InvalidParameters, msg);
            self.record(
                tool,
                json!({}),
                Validation::rejected(&refusal.message),
                refused_outcome(&refusal),
                started,
            );
            Reply::refused(refusal)
        })
    }

    /// Dispatch by agent tool name.
    ///
    /// # Errors
    ///
    /// A [`Refusal`] of kind [`RefusalKind::UnknownTool`], naming the four tools, when `tool`
    /// is none of them: nothing was dispatched (a surface counts it as the model's mistake).
    pub async fn call(
        &self,
        tool: &str,
        input: &Value,
        confirmer: &dyn Confirmer,
    ) -> Result<Reply, Refusal> {
        match tool {
            SEARCH => Ok(self.search_plots(input).await),
            SUMMARIZE => Ok(self.summarize(input)),
            LIST_TOOLS => Ok(self.list_tools(input)),
            RUN_TOOL => Ok(self.run_tool(input, confirmer).await),
            other => Err(Refusal::new(
                RefusalKind::UnknownTool,
                format!(
                    "Unknown tool \"{other}\". The Debrief tools are {SEARCH}, {SUMMARIZE}, {LIST_TOOLS} and {RUN_TOOL}."
                ),
            )),
        }
    }

    /// One search over every catalogue of the session (folder stores, and STAC APIs asked off
    /// the runtime and without the session lock).
    async fn search_all(
        &self,
        query: SearchQuery,
    ) -> Result<crate::search::SearchResult, crate::stac_api::SearchError> {
        let apis = self.session().api_stores().to_vec();
        if apis.is_empty() {
            let mut s = self.session();
            s.refresh_stores();
            crate::stac_api::search_catalogues(s.stores(), &[], &query)
        } else {
            // The servers are asked without the session lock and off the runtime.
            let folders: Vec<crate::store::StacStore> = {
                let mut s = self.session();
                s.refresh_stores();
                s.stores()
                    .iter()
                    .filter(|f| !apis.iter().any(|a| a.id == f.id))
                    .cloned()
                    .collect()
            };
            tokio::task::spawn_blocking(move || {
                crate::stac_api::search_catalogues(&folders, &apis, &query)
            })
            .await
            .unwrap_or_else(|e| {
                Err(crate::stac_api::SearchError::Stopped {
                    reason: e.to_string(),
                })
            })
        }
    }

    pub async fn search_plots(&self, input: &Value) -> Reply {
        let started = std::time::Instant::now();
        let args = match self.accept(SEARCH, input, "Invalid search input: ", started) {
            Ok(a) => a,
            Err(msg) => return msg,
        };
        let query = SearchQuery::from_arguments(&args);
        let searched = self.search_all(query).await;
        let result = match searched {
            Ok(r) => r,
            Err(e) => {
                let refusal = match e {
                    e @ (crate::stac_api::SearchError::Invalid(_)
                    | crate::stac_api::SearchError::Stopped { .. }) => Refusal::new(
                        RefusalKind::InvalidParameters,
                        format!("Invalid search input: {e}"),
                    ),
                    crate::stac_api::SearchError::Api(e) => Refusal::new(
                        RefusalKind::Unavailable,
                        format!("The catalogue could not be searched: {e}"),
                    ),
                };
                self.record(
                    SEARCH,
                    Value::Object(args),
                    Validation::rejected(&refusal.message),
                    refused_outcome(&refusal),
                    started,
                );
                return Reply::refused(refusal);
            }
        };
        let mut reply = serde_json::to_value(&result).unwrap_or(Value::Null);
        if result.total == 0
            && let Some(text) = args.get("text").and_then(Value::as_str)
        {
            // Say what was searched and what nearly matched (read leniently: plurals, "second"
            // for 2, ASW for anti-submarine), so a retry need not guess (never opened here).
            // One search a lenient word, through the same stores (folder or STAC API) as the
            // search itself, so every backend suggests the same plots.
            let mut seen: Vec<crate::search::PlotMatch> = Vec::new();
            let mut hits: Vec<(String, usize)> = Vec::new();
            for word in crate::search::lenient_words(text) {
                let q = SearchQuery {
                    text: Some(word),
                    ..SearchQuery::default()
                };
                if let Ok(r) = self.search_all(q).await {
                    for m in r.matches {
                        match hits.iter_mut().find(|(id, _)| *id == m.plot_id) {
                            Some((_, n)) => *n += 1,
                            None => {
                                hits.push((m.plot_id.clone(), 1));
                                seen.push(m);
                            }
                        }
                    }
                }
            }
            let near =
                crate::search::rank_near(&hits, &seen, crate::search::lenient_words(text).len(), 3);
            let text = toolgate_core::clip::quote(text);
            if !near.is_empty() {
                // The same near matches as data, for a reply composed in code.
                reply["nearMatches"] = Value::Array(
                    near.iter()
                        .map(|(id, title)| json!({"plotId": id, "title": title}))
                        .collect(),
                );
            }
            reply["message"] = Value::String(if near.is_empty() {
                format!(
                    "No plots matched. Searched for the text \"{text}\"; no plot shares a word with it. Try fewer words, a platform, or a date range."
                )
            } else {
                format!(
                    "No plots matched. Searched for the text \"{text}\". Near matches: {}. Search again with words from one of these titles (or its id) to open it.",
                    near.iter()
                        .map(|(id, title)| format!("{title} ({id})"))
                        .collect::<Vec<_>>()
                        .join("; ")
                )
            });
        }
        if args.get("open").and_then(Value::as_bool) == Some(true) {
            if result.matches.len() == 1 && result.total == 1 {
                let id = result.matches[0].plot_id.clone();
                match self.open_plot(&id).await {
                    Ok(_) => reply["opened"] = Value::String(id),
                    Err(e) => reply["openError"] = Value::String(e.to_string()),
                }
            } else if result.total > 1 {
                reply["notOpened"] = Value::String(format!(
                    "Nothing was opened: {} plots matched and open:true needs exactly one. Ask the analyst which one, or narrow the search.",
                    crate::search::total_phrase(result.total, result.total_is)
                ));
            }
        }
        self.record(
            SEARCH,
            Value::Object(args),
            Validation::accepted(),
            Outcome::ok(),
            started,
        );
        Reply::ok(text_of(&reply))
    }

    pub fn summarize(&self, input: &Value) -> Reply {
        let started = std::time::Instant::now();
        let args = match self.accept(SUMMARIZE, input, "Invalid summary input: ", started) {
            Ok(a) => a,
            Err(msg) => return msg,
        };
        let session = self.session();
        let plot_id = args.get("plotId").and_then(Value::as_str);
        let plot = match plot_id {
            Some(id) => session.plot(id).ok(),
            None => session.active().ok(),
        };
        let reply = match plot {
            None => {
                let (kind, hint) = match plot_id {
                    Some(id) => (
                        RefusalKind::UnknownPlot,
                        format!("No open plot matches \"{id}\". Choose one of the open plots."),
                    ),
                    None => (
                        RefusalKind::NoPlot,
                        "No plot is open. Search the catalog first, then open a plot.".to_owned(),
                    ),
                };
                // The model reads the structured reply (the open plots it may choose from).
                Reply::refused(Refusal::new(
                    kind,
                    text_of(&NoPlot {
                        no_plot_open: true,
                        hint,
                        open_plots: summary::open_plots(&session),
                    }),
                ))
            }
            Some(plot) => {
                let req = SummaryRequest {
                    plot_id: Some(plot.id.clone()),
                    selection_only: args.get("selectionOnly").and_then(Value::as_bool)
                        == Some(true),
                    cap: None,
                    token_budget: args
                        .get("tokenBudget")
                        .and_then(Value::as_u64)
                        .and_then(|n| usize::try_from(n).ok()),
                };
                Reply::ok(summary::summarize(&session, plot, &req, &self.counter).1)
            }
        };
        drop(session);
        let outcome = if reply.is_ok() {
            Outcome::ok()
        } else {
            Outcome::typed(reply.status, reply.reason.as_deref(), &reply.text)
        };
        self.record(
            SUMMARIZE,
            Value::Object(args),
            Validation::accepted(),
            outcome,
            started,
        );
        reply
    }

    pub fn list_tools(&self, input: &Value) -> Reply {
        let started = std::time::Instant::now();
        let args = match self.accept(LIST_TOOLS, input, "Invalid input: ", started) {
            Ok(a) => a,
            Err(msg) => return msg,
        };
        let listing = self.applicable_listing(&args);
        let broken = self.registry.unavailable_providers();
        let registry_empty = self.registry.listing().is_empty();
        let (reply, outcome) = if !registry_empty && listing.is_empty() {
            // The registry has tools; none is the one asked for, or none applies.
            let asked: Vec<&str> = args
                .get("toolIds")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if asked.is_empty() {
                (Reply::ok("[]".to_owned()), Outcome::ok())
            } else {
                let refusal = Refusal::new(
                    RefusalKind::InvalidParameters,
                    format!(
                        "No tool has the id {}. Call debrief_listTools without toolIds to see the tools that apply.",
                        asked.join(", ")
                    ),
                );
                let outcome = refused_outcome(&refusal);
                (Reply::refused(refusal), outcome)
            }
        } else if listing.is_empty() {
            let reason = if broken.is_empty() {
                "The Debrief tool registry is empty: no tool provider is configured, so no tools can be listed or run.".to_owned()
            } else {
                let why: Vec<String> = broken.iter().map(|(p, e)| format!("{p}: {e}")).collect();
                format!(
                    "The Debrief tool registry is unavailable ({}). The tool server may be broken — no tools can be listed or run until it recovers.",
                    why.join("; ")
                )
            };
            let refusal = Refusal::new(
                RefusalKind::Unavailable,
                text_of(&json!({"toolsUnavailable": true, "reason": reason})),
            );
            let outcome = Outcome::typed(
                toolgate_core::Status::Refused,
                Some(refusal.kind.as_str()),
                reason,
            );
            (Reply::refused(refusal), outcome)
        } else {
            // Providers that failed next to working ones are logged at registration; the
            // listing keeps its shape (an array of tools), shortened to fit the budget.
            // Tools asked for by id are shown in full: that is how a shortened list is read.
            let by_id = args
                .get("toolIds")
                .and_then(Value::as_array)
                .is_some_and(|a| !a.is_empty());
            let budget = if by_id { usize::MAX } else { LIST_TOKEN_BUDGET };
            (
                Reply::ok(fit_listing(&listing, budget, &self.counter)),
                Outcome::ok(),
            )
        };
        self.record(
            LIST_TOOLS,
            Value::Object(args),
            Validation::accepted(),
            outcome,
            started,
        );
        reply
    }

    /// The registry's listing, narrowed to what applies (see [`applies_to`]): `toolIds` when given; else, unless
    /// `all`, the tools whose selection requirements (`debrief:selectionRequirements`: any one
    /// `{kind, min}` met) the scope's features satisfy — the named features, else the selection,
    /// else the whole plot. With no plot open, or a scope that names nothing known, every tool
    /// is listed (hiding tools would then mislead more than it saves). Upstream MCP tools and
    /// tools without requirements always apply.
    fn applicable_listing(&self, args: &Map<String, Value>) -> Vec<toolgate_core::ToolListing> {
        let listing = self.registry.listing();
        let wanted = run::strings(args, "toolIds");
        if !wanted.is_empty() {
            return listing
                .into_iter()
                .filter(|l| wanted.contains(&l.id))
                .collect();
        }
        if args.get("all").and_then(Value::as_bool) == Some(true) {
            return listing;
        }
        let kinds: Vec<String> = {
            let session = self.session();
            let plot = match args.get("plotId").and_then(Value::as_str) {
                Some(id) => session.plot(id).ok(),
                None => session.active().ok(),
            };
            let Some(plot) = plot else {
                return listing;
            };
            let features = plot.doc.features();
            let TargetRequest {
                feature_ids: ids,
                feature_names: names,
                ..
            } = TargetRequest::from_arguments(args, TargetKeys::AGENT);
            let selected = plot.selected_ids();
            let named: Vec<&Value> = features
                .iter()
                .filter(|f| {
                    let feature = model::Feature(f);
                    let id = feature.id().unwrap_or_default();
                    if !ids.is_empty() || !names.is_empty() {
                        ids.contains(&id)
                            || names.contains(&id)
                            || names
                                .iter()
                                .any(|n| n.eq_ignore_ascii_case(&feature.display_name()))
                    } else if !selected.is_empty() {
                        selected.contains(&id)
                    } else {
                        true
                    }
                })
                .collect();
            let scope = if named.is_empty() {
                features.iter().collect()
            } else {
                named
            };
            scope
                .iter()
                .map(|f| model::Feature(f).kind().to_ascii_uppercase())
                .collect()
        };
        let keep: std::collections::HashSet<&str> = self
            .registry
            .specs()
            .filter(|s| applies_to(s, &kinds))
            .map(|s| s.id.as_str())
            .collect();
        listing
            .into_iter()
            .filter(|l| keep.contains(l.id.as_str()))
            .collect()
    }
}

/// Names of a plot's features, for messages.
pub fn feature_names(features: &[Value]) -> Vec<String> {
    features.iter().map(model::display_name).collect()
}

/// The upper bound on a `debrief_listTools` reply: about what the full list of toolgate's
/// first 15 tools cost (2 137 tokens, the largest single cost in the small-model trial).
pub const LIST_TOKEN_BUDGET: usize = 2500;

fn first_sentence(text: &str) -> &str {
    match text.find(". ") {
        Some(i) => &text[..=i],
        None => text,
    }
}

/// The listing as JSON text within `budget` tokens, in the first of these forms that fits:
/// every detail; then tool descriptions cut to their first sentence and parameters without their
/// descriptions and examples; then parameters as `name` / `name*` (required) only; then ids,
/// names and whether each tool modifies the plot. Every form is an array of tools.
pub fn fit_listing(
    listing: &[toolgate_core::ToolListing],
    budget: usize,
    counter: &TokenCounter,
) -> String {
    let full = text_of(&listing);
    if counter.count(&full) <= budget {
        return full;
    }
    let mut tools: Vec<Value> = listing
        .iter()
        .map(|l| serde_json::to_value(l).unwrap_or(Value::Null))
        .collect();
    for t in &mut tools {
        if let Some(d) = t.get("description").and_then(Value::as_str) {
            let short = first_sentence(d).to_owned();
            t["description"] = Value::String(short);
        }
        if let Some(params) = t.get_mut("parameters").and_then(Value::as_array_mut) {
            for p in params.iter_mut().filter_map(Value::as_object_mut) {
                p.remove("description");
                p.remove("examples");
            }
        }
    }
    let brief = text_of(&tools);
    if counter.count(&brief) <= budget {
        return brief;
    }
    for t in &mut tools {
        let names: Vec<Value> = t
            .get("parameters")
            .and_then(Value::as_array)
            .map(|ps| {
                ps.iter()
                    .filter_map(|p| {
                        let name = p.get("name")?.as_str()?;
                        let required = p.get("required").and_then(Value::as_bool) == Some(true);
                        Some(Value::String(if required {
                            format!("{name}*")
                        } else {
                            name.to_owned()
                        }))
                    })
                    .collect()
            })
            .unwrap_or_default();
        t["parameters"] = Value::Array(names);
        if let Some(o) = t.as_object_mut() {
            o.remove("category");
            o.remove("outputKind");
        }
    }
    let names_only = text_of(&tools);
    if counter.count(&names_only) <= budget {
        return names_only;
    }
    let bare: Vec<Value> = tools
        .iter()
        .map(|t| json!({"id": t["id"], "name": t["name"], "mutating": t["mutating"]}))
        .collect();
    text_of(&bare)
}

/// Whether a tool applies to features of these kinds: it declares no selection requirements, or
/// one of its `debrief:selectionRequirements` (`{kind, min}`; any one suffices) is met.
pub fn applies_to(spec: &ToolSpec, kinds: &[String]) -> bool {
    let Some(reqs) = spec
        .annotations
        .get("debrief:selectionRequirements")
        .and_then(Value::as_array)
        .filter(|r| !r.is_empty())
    else {
        return true;
    };
    reqs.iter().any(|r| {
        let kind = r.get("kind").and_then(Value::as_str).unwrap_or_default();
        let min = r.get("min").and_then(Value::as_u64).unwrap_or(1) as usize;
        kinds
            .iter()
            .filter(|k| k.eq_ignore_ascii_case(kind))
            .count()
            >= min.max(1)
    })
}

#[cfg(test)]
mod listing_tests {
    use super::*;

    #[test]
    fn a_long_list_is_shortened_to_its_budget_and_keeps_its_shape() {
        let counter = TokenCounter::default();
        let listing: Vec<toolgate_core::ToolListing> = toolgate_native_tools::specs()
            .iter()
            .map(toolgate_core::ToolListing::of)
            .collect();
        let full = fit_listing(&listing, usize::MAX, &counter);
        let bare: Vec<Value> = listing
            .iter()
            .map(|l| json!({"id": l.id, "name": l.name, "mutating": l.mutating}))
            .collect();
        let floor = counter.count(&text_of(&bare));
        for budget in [LIST_TOKEN_BUDGET, 6000, 3000, 900] {
            let text = fit_listing(&listing, budget, &counter);
            let tools: Value = serde_json::from_str(&text).unwrap_or_default();
            let tools = tools.as_array().cloned().unwrap_or_default();
            assert_eq!(tools.len(), listing.len(), "every tool listed at {budget}");
            assert!(
                tools
                    .iter()
                    .all(|t| t["id"].is_string() && t["mutating"].is_boolean())
            );
            let tokens = counter.count(&text);
            assert!(
                tokens <= budget.max(floor),
                "{tokens} tokens at budget {budget}"
            );
            assert!(tokens < counter.count(&full), "shortened at {budget}");
        }
    }
}
