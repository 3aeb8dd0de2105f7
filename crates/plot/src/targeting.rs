//! Feature targeting (reference §4): explicit ids/names, else the selection, else — for an
//! analytical tool only — all features. A mutation with no names, no selection and no explicit
//! `scope: "all"` is refused: toolgate does not guess what to change.

use serde_json::{Map, Value};

use crate::model;
use crate::session::OpenPlot;

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
    args.get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
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
