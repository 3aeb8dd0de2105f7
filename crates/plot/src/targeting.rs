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
pub const EMPTY_PLOT: &str = "The plot has no features to run the tool on.";

/// Whether the call changes the plot (then the default target is the selection only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Intent {
    Analyse,
    Mutate,
}

/// Resolve the targets of a call. Any problem fails the whole request, naming candidates.
pub fn resolve(plot: &OpenPlot, req: &TargetRequest, intent: Intent) -> Result<Targets, String> {
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
            let all = candidates(plot);
            return Err(format!(
                "Could not resolve the target features: {}. Features in this plot: {all}. Select them, or pass exact names/ids from debrief_summarizeCurrentPlot.",
                problems.join("; ")
            ));
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
            return Err(format!(
                "{NOTHING_SELECTED} Features in this plot: {}.",
                candidates(plot)
            ));
        }
    };
    match scope {
        Scope::Selection => {
            if selected.is_empty() {
                return Err(NOTHING_SELECTED.to_owned());
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
