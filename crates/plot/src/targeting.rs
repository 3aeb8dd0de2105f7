//! Feature targeting (reference §4): explicit ids/names, else the selection, else — for an
//! analytical tool only — all features. A mutation with no names, no selection and no explicit
//! `scope: "all"` is refused: toolgate does not guess what to change.

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
pub fn resolve(plot: &OpenPlot, req: &TargetRequest, intent: Intent) -> Result<Targets, String> {
    resolve_for(plot, req, intent, Audience::Agent)
}

/// [`resolve`], its refusals worded for `audience`.
pub fn resolve_for(
    plot: &OpenPlot,
    req: &TargetRequest,
    intent: Intent,
    audience: Audience,
) -> Result<Targets, String> {
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
            let problems = problems.join("; ");
            return Err(match audience {
                Audience::Agent => format!(
                    "Could not resolve the target features: {problems}. Features in this plot: {}. Select them, or pass exact names/ids from debrief_summarizeCurrentPlot.",
                    candidates(plot)
                ),
                Audience::Cli => format!(
                    "Could not find the features to run on: {problems}. Features in this plot: {}. Name them with --feature NAME or --feature-id ID (`toolgate plot summary` lists them).",
                    candidates_for_a_person(plot)
                ),
                Audience::Page => format!(
                    "Could not find the features to run on: {problems}. Features in this plot: {}. Select them on the map, or choose Pick features and pick them in the list.",
                    candidates_for_a_person(plot)
                ),
            });
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
            return Err(match audience {
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
            });
        }
    };
    match scope {
        Scope::Selection => {
            if selected.is_empty() {
                return Err(match audience {
                    Audience::Agent => NOTHING_SELECTED.to_owned(),
                    Audience::Cli => "--scope selection is empty: nothing can be selected on \
                                      the command line. Name the features with --feature NAME, \
                                      or pass --scope all."
                        .to_owned(),
                    Audience::Page => "Nothing is selected: select a track on the map or pick \
                                       one (Pick features), or choose Every feature the tool \
                                       accepts."
                        .to_owned(),
                });
            }
            let description = describe(plot, &selected);
            Ok(Targets {
                ids: selected,
                description,
            })
        }
        Scope::All => {
            if features.is_empty() {
                return Err(EMPTY_PLOT.to_owned());
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
