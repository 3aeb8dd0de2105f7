//! Running one tool on the open plot (`debrief_runTool`): which plot and version, which
//! features ([`resolve_for`]), the gate ([`Gate::invoke`]) with the Debrief domain's prepare and
//! apply, and the one reply — the whole of a mutating call's Debrief side in one file. The CLI's
//! `plot run`, MCP's `debrief_runTool`, the workbench's Tools tab and the chat's tool calls all
//! enter at [`Debrief::run_tool_as`]; CodeAct's scratch copy resolves its targets with the same
//! [`resolve`] (`transaction.rs`).
//!
//! Feature targeting (reference §4): explicit ids/names, else the selection, else — for an
//! analytical tool only — all features. A mutation with no names, no selection and no explicit
//! `scope: "all"` is refused: toolgate does not guess what to change.

use std::sync::Mutex;

use serde_json::{Map, Value, json};
use toolgate_core::flow::{Confirmer, Ended, Gate, Prepared};
use toolgate_core::policy::Approvals;
use toolgate_core::telemetry::Validation;
use toolgate_core::{Failure, FailureKind, Refusal, RefusalKind, Reply, ToolCall, ToolOrigin};

use crate::debrief::{Debrief, ERROR_KIND, RUN_TOOL, refused_outcome};
use crate::model;
use crate::session::{OpenPlot, SessionError};

impl Debrief {
    pub async fn run_tool(&self, input: &Value, confirmer: &dyn Confirmer) -> Reply {
        self.run_tool_as(input, confirmer, Audience::Agent).await
    }

    /// [`Debrief::run_tool`] with the reply worded for `audience`: a person at the command line
    /// or on the page reads its own flags or controls, never the agent's parameter names, and
    /// no state that a later Save, Undo or Revert would make untrue.
    pub async fn run_tool_as(
        &self,
        input: &Value,
        confirmer: &dyn Confirmer,
        audience: Audience,
    ) -> Reply {
        let started = std::time::Instant::now();
        let args = match self.accept(RUN_TOOL, input, "", started) {
            Ok(a) => a,
            Err(msg) => return msg,
        };
        let tool_id = args
            .get("toolId")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .trim()
            .to_owned();
        if tool_id.is_empty() {
            let refusal = Refusal::new(
                RefusalKind::InvalidParameters,
                "\"toolId\" is required and must be a non-empty string",
            );
            self.record(
                RUN_TOOL,
                json!({}),
                Validation::rejected(&refusal.message),
                refused_outcome(&refusal),
                started,
            );
            return Reply::refused(refusal);
        }
        let mut params = args
            .get("params")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        // The unit setting for a plot tool that leaves its unit out (shown in the preview and
        // bound by the digest like any parameter); an upstream MCP tool is not a plot tool.
        if let Ok(tool) = self.registry.resolve(&tool_id)
            && tool.origin() == ToolOrigin::Toolgate
        {
            self.units().fill(tool.spec, &mut params);
        }
        let targets_req = TargetRequest::from_arguments(&args, TargetKeys::AGENT);
        let plot_arg = args
            .get("plotId")
            .and_then(Value::as_str)
            .map(str::to_owned);
        // Shared between prepare and apply: which plot, at which version, and its title.
        let prepared_on: Mutex<Option<(String, u64, String, usize)>> = Mutex::new(None);
        let approvals = Approvals::none();
        let gate = Gate {
            registry: &self.registry,
            mode: self.settings.mode,
            approvals: &approvals,
            sink: self.sink.as_ref(),
            surface: &self.settings.surface,
            active_model: &self.settings.active_model,
            priming_enabled: self.settings.priming_enabled,
            record_as: Some(RUN_TOOL),
        };
        let ended = gate
            .invoke(
                &tool_id,
                &params,
                Value::Object(args.clone()),
                |tool, params| {
                    // Tools from upstream MCP servers do not operate on the plot: no target, no
                    // subject; the approval binds to the exact call only.
                    if let ToolOrigin::UpstreamMcp { server } = tool.origin() {
                        return Ok(Prepared {
                            call: ToolCall::new(tool.spec.id.clone(), params),
                            document_title: None,
                            target: format!("the external tool {} (it does not change the plot)", tool.spec.id),
                            context: json!({"external": tool.spec.category}),
                            consequence: Some(format!(
                                "The call runs on the external MCP server {server}; toolgate cannot undo what it does."
                            )),
                        });
                    }
                    let session = self.session();
                    let active = session.active_id().map(str::to_owned);
                    let plot = match (&plot_arg, &active) {
                        (None, None) => {
                            return Err(Refusal::new(RefusalKind::NoPlot, "No plot is open, so there is nothing to run a tool against. Search the catalog and open a plot first."));
                        }
                        (Some(id), _) if session.plot(id).is_err() => {
                            // Each reader is told what works where they are.
                            let what_works = match audience {
                                Audience::Agent => "Ask to summarise the current plot to see the open plots.",
                                Audience::Cli => "Name an open plot with --plot (its id or short name).",
                                Audience::Page => "Open it from the Catalogue first.",
                            };
                            return Err(Refusal::new(RefusalKind::UnknownPlot, format!(
                                "No open plot matches \"{id}\". {what_works}"
                            )));
                        }
                        (Some(id), Some(a)) if id != a => {
                            return Err(Refusal::new(RefusalKind::PlotNotFocused, format!(
                                "The plot \"{id}\" is open but not focused. Open it before running a tool against it."
                            )));
                        }
                        (Some(id), _) | (None, Some(id)) => session
                            .plot(id)
                            .map_err(|e| Refusal::new(RefusalKind::UnknownPlot, e.to_string()))?,
                    };
                    let intent = if tool.effect.is_mutating() { Intent::Mutate } else { Intent::Analyse };
                    let targets = resolve_for(plot, &targets_req, intent, audience)
                        .map_err(|e| Refusal::new(RefusalKind::Target, e.to_string()))?;
                    let subject: Vec<Value> = targets
                        .ids
                        .iter()
                        .filter_map(|id| plot.doc.feature(id).cloned())
                        .collect();
                    let version = plot.doc.version();
                    if let Ok(mut slot) = prepared_on.lock() {
                        *slot = Some((plot.id.clone(), version, plot.title.clone(), targets.ids.len()));
                    }
                    Ok(Prepared {
                        call: ToolCall::new(tool.spec.id.clone(), params).with_subject(Value::Array(subject)),
                        document_title: Some(plot.title.clone()),
                        target: targets.description,
                        context: json!({"plot": plot.id, "version": version, "targets": targets.ids}),
                        consequence: Some(
                            "The change is applied to the open plot and left unsaved (undo or revert to discard, save to keep)."
                                .to_owned(),
                        ),
                    })
                },
                confirmer,
                |cs| {
                    let (plot_id, version) = prepared_on
                        .lock()
                        .ok()
                        .and_then(|s| s.as_ref().map(|(p, v, _, _)| (p.clone(), *v)))
                        .ok_or_else(|| Failure::new(FailureKind::Apply, "internal: the call was not prepared"))?;
                    self.session()
                        .apply(&plot_id, cs, version)
                        .map(|_| ())
                        .map_err(SessionError::into_apply_failure)
                },
            )
            .await;
        let title = self
            .registry
            .resolve(&tool_id)
            .map(|t| t.spec.title.clone())
            .unwrap_or_else(|_| tool_id.clone());
        let prepared = prepared_on.lock().ok().and_then(|s| s.clone());
        match ended {
            Ended::Done { outcome, .. } => match outcome.change_set {
                Some(cs) if !cs.is_empty() => {
                    let (plot_id, _, plot_title, _) = prepared.unwrap_or_default();
                    let n = cs.touched_ids().len();
                    if let Some(hook) = self.activity.get() {
                        let what: &str = if cs.label.is_empty() {
                            &title
                        } else {
                            &cs.label
                        };
                        hook.record(
                            None,
                            crate::activity::Action::Edit,
                            &plot_id,
                            &plot_title,
                            what,
                        );
                    }
                    let state = match audience {
                        Audience::Agent => {
                            "The plot is now dirty (unsaved) — undo/revert to discard, or Save to persist."
                        }
                        // The command line says itself whether it saved.
                        Audience::Cli => "",
                        Audience::Page => {
                            "It is one undoable step; Save writes it to the plot's file."
                        }
                    };
                    Reply::ok(
                        format!(
                            "Applied {title} to {n} feature(s) in \"{plot_title}\". {} {state}",
                            if cs.label.is_empty() {
                                String::new()
                            } else {
                                format!("{}.", cs.label.trim_end_matches('.'))
                            }
                        )
                        .replace(". .", ".")
                        .replace("  ", " ")
                        .trim_end()
                        .to_owned(),
                    )
                }
                Some(_) => Reply::ok(format!("{title} ran but produced no editable change.")),
                None => {
                    let (plot_id, _, _, _) = prepared.unwrap_or_default();
                    let id = self.keep_result(
                        &tool_id,
                        plot_id,
                        outcome.kind.as_str(),
                        &outcome.summary,
                        outcome.data,
                    );
                    let summary = outcome.summary.trim();
                    let stop = if summary.ends_with('.') { "" } else { "." };
                    let whereabouts = match audience {
                        Audience::Agent | Audience::Page => {
                            format!(" The full result is in the Results panel as {id}.")
                        }
                        // The command line prints the result (`--json`: all of it as `data`).
                        Audience::Cli => String::new(),
                    };
                    Reply::ok(format!("Ran {title}. {summary}{stop}{whereabouts}")).with_dataset(id)
                }
            },
            Ended::Failed(failure) => {
                // As in the spike, a tool that ran and failed also leaves an error entry in the
                // Results panel, so the analyst sees it next to the results; the model gets the
                // error text unchanged.
                let plot_id = prepared.map(|p| p.0).unwrap_or_default();
                let data = json!({ "error": failure.message });
                let id = self.keep_result(&tool_id, plot_id, ERROR_KIND, &failure.message, data);
                Reply::failed(failure).with_dataset(id)
            }
            Ended::Refused(refusal) => Reply::refused(refusal),
            Ended::Declined { .. } => Reply::declined(match audience {
                Audience::Agent => format!(
                    "The analyst declined {title}; nothing was run or changed. Do not retry unless they ask again."
                ),
                Audience::Cli | Audience::Page => {
                    format!("You declined {title}: nothing was run or changed.")
                }
            }),
        }
    }
}

// ---- which features a call targets ----

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    All,
    Selection,
}

#[derive(Debug, Clone, Default)]
pub struct TargetRequest {
    pub feature_ids: Vec<String>,
    pub feature_names: Vec<String>,
    pub scope: Option<Scope>,
}

/// The argument names a call's targets come under: the agent tools' `featureIds` /
/// `featureNames` ([`TargetKeys::AGENT`]), a CodeAct program's plot functions' `feature_ids` /
/// `feature_names` ([`TargetKeys::PROGRAM`]); `scope` in both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TargetKeys {
    pub ids: &'static str,
    pub names: &'static str,
    pub scope: &'static str,
}

impl TargetKeys {
    /// `debrief_runTool` and `debrief_listTools`.
    pub const AGENT: Self = Self {
        ids: "featureIds",
        names: "featureNames",
        scope: "scope",
    };
    /// A CodeAct program's plot functions (Python keyword arguments).
    pub const PROGRAM: Self = Self {
        ids: "feature_ids",
        names: "feature_names",
        scope: "scope",
    };

    /// The three keys, to take them out of the parameters a tool gets.
    pub fn all(self) -> [&'static str; 3] {
        [self.ids, self.names, self.scope]
    }
}

impl TargetRequest {
    /// The targets a call's arguments name under `keys` — the one reading every surface uses.
    /// Entries that are not strings, and a scope other than `all` / `selection`, count as not
    /// given (the tool's schema has already refused them where it declares them).
    pub fn from_arguments(args: &Map<String, Value>, keys: TargetKeys) -> Self {
        Self {
            feature_ids: strings(args, keys.ids),
            feature_names: strings(args, keys.names),
            scope: match args.get(keys.scope).and_then(Value::as_str) {
                Some("all") => Some(Scope::All),
                Some("selection") => Some(Scope::Selection),
                _ => None,
            },
        }
    }
}

/// The strings of the array `args[key]` (none when absent or not an array).
pub fn strings(args: &Map<String, Value>, key: &str) -> Vec<String> {
    crate::store::strings(args.get(key))
}

/// Why a call's targets could not be resolved. The text is worded for the reader the call was
/// resolved for ([`Audience`]) and names the candidates; the variant says what went wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    /// Names or ids that match no feature, or a name that matches several (`problems`, one per
    /// name or id).
    #[error("{message}")]
    Unresolved {
        problems: Vec<String>,
        message: String,
    },
    /// An edit with nothing named, nothing selected and no `scope: "all"`: toolgate does not
    /// guess what to change.
    #[error("{message}")]
    NothingNamed { message: String },
    /// `scope: "selection"` with nothing selected.
    #[error("{message}")]
    EmptySelection { message: String },
    /// `scope: "all"` on a plot without features.
    #[error("{}", EMPTY_PLOT)]
    EmptyPlot,
}

/// The resolved targets and how a person should read them.
#[derive(Debug, Clone, PartialEq)]
pub struct Targets {
    pub ids: Vec<String>,
    /// "HMS Nelson, Contact" or "all 12 features in Exercise Alpha".
    pub description: String,
}

pub const NOTHING_SELECTED: &str = "Nothing is selected. Select one or more features in the plot, name them explicitly (featureNames), or run on all features (scope:\"all\"). I will not guess.";

/// Who reads a call's reply, so that it names what that reader can do: an agent the tool
/// parameters (`featureNames`, `scope:"all"`), a person at the command line its flags
/// (`--feature NAME`, `--scope all`), a person on the workbench page its controls ("select a
/// track or pick one").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Audience {
    #[default]
    Agent,
    Cli,
    Page,
}

/// Most features a refusal for a person names before "and N more".
const NAMED_FOR_A_PERSON: usize = 12;
pub const EMPTY_PLOT: &str = "The plot has no features to run the tool on.";

/// Whether the call changes the plot (then the default target is the selection only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Intent {
    Analyse,
    Mutate,
}

/// Resolve the targets of a call. Any problem fails the whole request, naming candidates in
/// the words an agent acts on.
///
/// # Errors
///
/// [`TargetError`] when the request names nothing that resolves, or nothing when it must.
pub fn resolve(
    plot: &OpenPlot,
    req: &TargetRequest,
    intent: Intent,
) -> Result<Targets, TargetError> {
    resolve_for(plot, req, intent, Audience::Agent)
}

/// [`resolve`], its refusals worded for `audience`.
///
/// # Errors
///
/// As [`resolve`].
pub fn resolve_for(
    plot: &OpenPlot,
    req: &TargetRequest,
    intent: Intent,
    audience: Audience,
) -> Result<Targets, TargetError> {
    let features = plot.doc.features();
    if !req.feature_ids.is_empty() || !req.feature_names.is_empty() {
        let mut ids: Vec<String> = Vec::new();
        let mut problems = Vec::new();
        let push = |ids: &mut Vec<String>, id: String| {
            if !ids.contains(&id) {
                ids.push(id);
            }
        };
        for id in &req.feature_ids {
            // nested selection paths resolve to their feature
            let base = if plot.doc.feature(id).is_some() {
                Some(id.clone())
            } else {
                id.split_once('/')
                    .map(|(b, _)| b.to_owned())
                    .filter(|b| plot.doc.feature(b).is_some())
            };
            match base {
                Some(b) => push(&mut ids, b),
                None => problems.push(format!("no feature with id \"{id}\"")),
            }
        }
        let names: Vec<(String, String)> = features
            .iter()
            .map(|f| (model::feature_id(f), model::display_name(f)))
            .collect();
        for raw in &req.feature_names {
            let name = raw.trim().to_lowercase();
            let mut matches: Vec<&(String, String)> = if name.is_empty() {
                Vec::new()
            } else {
                names
                    .iter()
                    .filter(|(_, n)| n.to_lowercase() == name)
                    .collect()
            };
            if matches.is_empty() && !name.is_empty() {
                matches = names
                    .iter()
                    .filter(|(_, n)| n.to_lowercase().contains(&name))
                    .collect();
            }
            match matches.len() {
                0 => problems.push(format!("no feature named \"{}\"", raw.trim())),
                1 => push(&mut ids, matches[0].0.clone()),
                n => problems.push(format!(
                    "\"{}\" is ambiguous — matches {n}: {}",
                    raw.trim(),
                    matches
                        .iter()
                        .map(|(id, nm)| format!("{nm} ({id})"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
            }
        }
        if !problems.is_empty() {
            let joined = problems.join("; ");
            let message = match audience {
                Audience::Agent => format!(
                    "Could not resolve the target features: {joined}. Features in this plot: {}. Select them, or pass exact names/ids from debrief_summarizeCurrentPlot.",
                    candidates(plot)
                ),
                Audience::Cli => format!(
                    "Could not find the features to run on: {joined}. Features in this plot: {}. Name them with --feature NAME or --feature-id ID (`toolgate plot summary` lists them).",
                    candidates_for_a_person(plot)
                ),
                Audience::Page => format!(
                    "Could not find the features to run on: {joined}. Features in this plot: {}. Select them on the map, or choose Pick features and pick them in the list.",
                    candidates_for_a_person(plot)
                ),
            };
            return Err(TargetError::Unresolved { problems, message });
        }
        let description = describe(plot, &ids);
        return Ok(Targets { ids, description });
    }
    let selected = plot.selected_ids();
    let scope = match (req.scope, selected.is_empty(), intent) {
        (Some(scope), _, _) => scope,
        (None, false, _) => Scope::Selection,
        (None, true, Intent::Analyse) => Scope::All,
        (None, true, Intent::Mutate) => {
            let message = match audience {
                Audience::Agent => format!(
                    "{NOTHING_SELECTED} Features in this plot: {}.",
                    candidates(plot)
                ),
                Audience::Cli => format!(
                    "This tool changes the plot, and nothing was named: toolgate does not guess \
                     what to change. Name the features with --feature NAME (or --feature-id ID), \
                     or pass --scope all to change every feature. Features in this plot: {}.",
                    candidates_for_a_person(plot)
                ),
                Audience::Page => format!(
                    "Nothing is selected, and toolgate does not guess what to change: select a \
                     track on the map or pick one (Pick features), or choose Every feature the \
                     tool accepts. Features in this plot: {}.",
                    candidates_for_a_person(plot)
                ),
            };
            return Err(TargetError::NothingNamed { message });
        }
    };
    match scope {
        Scope::Selection => {
            if selected.is_empty() {
                let message = match audience {
                    Audience::Agent => NOTHING_SELECTED.to_owned(),
                    Audience::Cli => "--scope selection is empty: nothing can be selected on \
                                      the command line. Name the features with --feature NAME, \
                                      or pass --scope all."
                        .to_owned(),
                    Audience::Page => "Nothing is selected: select a track on the map or pick \
                                       one (Pick features), or choose Every feature the tool \
                                       accepts."
                        .to_owned(),
                };
                return Err(TargetError::EmptySelection { message });
            }
            let description = describe(plot, &selected);
            Ok(Targets {
                ids: selected,
                description,
            })
        }
        Scope::All => {
            if features.is_empty() {
                return Err(TargetError::EmptyPlot);
            }
            Ok(Targets {
                ids: features.iter().map(model::feature_id).collect(),
                description: format!("all {} features in {}", features.len(), plot.title),
            })
        }
    }
}

/// Every feature as `name (id)` (or the id alone when it is the name), for refusals that name
/// the candidates.
fn candidates(plot: &OpenPlot) -> String {
    let features = plot.doc.features();
    if features.is_empty() {
        return "(none)".to_owned();
    }
    features
        .iter()
        .map(|f| {
            let (id, n) = (model::feature_id(f), model::display_name(f));
            if n == id { n } else { format!("{n} ({id})") }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// [`candidates`], at most [`NAMED_FOR_A_PERSON`] of them, then how many more.
fn candidates_for_a_person(plot: &OpenPlot) -> String {
    let features = plot.doc.features();
    if features.is_empty() {
        return "(none)".to_owned();
    }
    let mut named: Vec<String> = features
        .iter()
        .take(NAMED_FOR_A_PERSON)
        .map(|f| {
            let (id, n) = (model::feature_id(f), model::display_name(f));
            if n == id { n } else { format!("{n} ({id})") }
        })
        .collect();
    if features.len() > NAMED_FOR_A_PERSON {
        named.push(format!("and {} more", features.len() - NAMED_FOR_A_PERSON));
    }
    named.join(", ")
}

fn describe(plot: &OpenPlot, ids: &[String]) -> String {
    ids.iter()
        .map(|id| {
            plot.doc
                .feature(id)
                .map_or_else(|| id.clone(), model::display_name)
        })
        .collect::<Vec<_>>()
        .join(", ")
}
