//! What the small profile asks the analyst, or refuses, in code before any tool runs: a change
//! that names nothing, a phrase that fits several features, a tool that does not exist, a time
//! window it needs and the words do not give. Typed so
//! a surface (and the evaluation) can tell a question from an answer without reading its words.

use serde::{Deserialize, Serialize};

/// A question or refusal made in code, in place of a tool call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Ask {
    /// A change with nothing named or selected: which of these?
    WhichFeature {
        /// "track" or "feature".
        what: String,
        candidates: Vec<String>,
    },
    /// A phrase of the request that fits several features.
    Ambiguous {
        phrase: String,
        candidates: Vec<String>,
    },
    /// The request names a tool the registry does not have; the nearest real ones.
    InventedTool { id: String, nearest: Vec<String> },
    /// A change that needs a time window the request does not state in a form read in code
    /// ("trim nelsons trak to the interesting bit"): which window, never one the model guessed.
    WhichWindow {
        /// The tool's title ("Trim Track").
        tool: String,
    },
    /// The request names another plot than the one in front of the analyst ("the contact on
    /// day 2" with Day 1 active): nothing is run on the active plot.
    OtherPlot {
        /// The named plot's id and title.
        id: String,
        named: String,
        active: String,
        /// The named plot is open, only not the active one.
        open: bool,
    },
}

/// "a, b or c".
pub fn or_list(names: &[String]) -> String {
    match names {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

impl std::fmt::Display for Ask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ask::WhichFeature { what, candidates } => write!(
                f,
                "Which {what}? {} — or select it on the map. Nothing was changed.",
                or_list(candidates)
            ),
            Ask::Ambiguous { phrase, candidates } => write!(
                f,
                "\"{phrase}\" could mean {}. Which one? Nothing was changed.",
                or_list(candidates)
            ),
            Ask::OtherPlot {
                named,
                active,
                open: true,
                ..
            } => write!(
                f,
                "That is about \"{named}\", which is open but not the plot in front of you (\"{active}\"). Switch to it first, then ask again. Nothing was changed."
            ),
            Ask::OtherPlot { named, active, .. } => write!(
                f,
                "That is about \"{named}\", but the plot open is \"{active}\". Open \"{named}\" first (ask to open it), then ask again. Nothing was changed."
            ),
            Ask::WhichWindow { tool } => write!(
                f,
                "Which time window should {tool} keep? I could not read one from your words — say it like \"0200-0400Z\" or \"from 02:00 to 04:00\". Nothing was changed."
            ),
            Ask::InventedTool { id, nearest } if nearest.is_empty() => write!(
                f,
                "There is no tool called \"{id}\" here, so nothing was run. Ask \"which tools can I run?\" to see the ones that apply."
            ),
            Ask::InventedTool { id, nearest } => write!(
                f,
                "There is no tool called \"{id}\" here, so nothing was run. The nearest tools are {}; name one of them, or ask \"which tools can I run?\" to see all that apply.",
                nearest.join(", ")
            ),
        }
    }
}
