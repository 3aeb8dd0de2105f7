//! The small-model profile: a tool surface that fits a 0.5B model.
//!
//! Small models ignore instructions about tool choice far more often than they escape a
//! restricted tool list, so under [`Profile::Small`] the loop offers per turn only the tools that
//! make sense in the session's state ([`Stage`]), answers a repeated identical call from its
//! previous result instead of dispatching it again, shows compact results ([`compact_result`]),
//! and fits every request into the model's context window ([`fit_to_budget`]), dropping old tool
//! results first. Each part is a [`Levers`] switch so its lift can be measured alone;
//! [`Profile::Large`] switches every new part off and sends the same requests as before.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolgate_core::TokenCounter;
use toolgate_plot::debrief::{LIST_TOOLS, RUN_TOOL, SEARCH, SUMMARIZE};

use crate::client::{Message, Role};
use crate::constrain::MONTHS;

/// Which surface the loop shows the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// Every tool every turn, full results, no budget: the requests toolgate always sent.
    #[default]
    Large,
    /// The state machine, the repeat guard, compact results, the context budget, and
    /// constrained decoding where the server offers it.
    Small,
}

/// Models with at most this many parameters get the small profile when none is asked for: the
/// small profile was built for and measured on 0.1–0.5 B models, and models up to a few billion
/// parameters still pick the first of a long tool list and invent values.
pub const SMALL_MODEL_MAX_PARAMS: u64 = 4_000_000_000;

/// The parameter count a model id states: "qwen2.5-coder-0.5b-instruct-q8_0" → 0.5 B,
/// "SmolLM2-135M" → 135 M, "llama3.2:1b" → 1 B. The last such number wins (ids put the size
/// after the family and version: "qwen2.5-7b" is 7 B, not 2.5).
pub fn params_in_name(model_id: &str) -> Option<u64> {
    let lower = model_id.to_lowercase();
    let mut found = None;
    for word in lower.split(|c: char| !(c.is_ascii_alphanumeric() || c == '.')) {
        let (num, scale) = if let Some(n) = word.strip_suffix('b') {
            (n, 1e9)
        } else if let Some(n) = word.strip_suffix('m') {
            (n, 1e6)
        } else {
            continue;
        };
        // A size is digits with at most one point ("0.5", "135"); "q8" or "v2" is not.
        if num.is_empty() || !num.chars().all(|c| c.is_ascii_digit() || c == '.') {
            continue;
        }
        if let Ok(v) = num.parse::<f64>()
            && v > 0.0
        {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            {
                found = Some((v * scale) as u64);
            }
        }
    }
    found
}

/// The profile for a model when the user asked for none, and why: the small one for a model
/// inside toolgate, for a server that reports at most [`SMALL_MODEL_MAX_PARAMS`] parameters,
/// or a model id that states such a size; otherwise the large one.
pub fn auto_profile(model_id: &str, info: &crate::constrain::ServerInfo) -> (Profile, String) {
    use crate::constrain::ServerKind;
    let gb = |n: u64| {
        #[allow(clippy::cast_precision_loss)]
        let v = n as f64 / 1e9;
        format!("{v:.2} B parameters")
    };
    if info.kind == ServerKind::InProcess {
        return (Profile::Small, "the model runs inside toolgate".to_owned());
    }
    if let Some(n) = info.n_params {
        let p = if n <= SMALL_MODEL_MAX_PARAMS {
            Profile::Small
        } else {
            Profile::Large
        };
        return (p, format!("the server reports {}", gb(n)));
    }
    match params_in_name(model_id) {
        Some(n) if n <= SMALL_MODEL_MAX_PARAMS => {
            (Profile::Small, format!("the model id states {}", gb(n)))
        }
        Some(n) => (Profile::Large, format!("the model id states {}", gb(n))),
        None => (
            Profile::Large,
            "the model's size is unknown (pass --profile small for a small model)".to_owned(),
        ),
    }
}

/// The separately measurable parts of the small profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Levers {
    /// Read tool calls written into the reply text ([`crate::call_parse`]).
    pub parsing: bool,
    /// Constrained decoding (`response_format` JSON schema) when the server offers it.
    pub constraints: bool,
    /// Per-turn tool offers from [`Stage`], and repeated identical calls answered from the
    /// previous result.
    pub state_machine: bool,
    /// Compact tool results and the context budget.
    pub compaction: bool,
    /// One constrained classification request per utterance ([`Intent`]) that narrows the
    /// state machine's offers (needs `constraints` and `state_machine` and a server that
    /// decodes under a schema).
    #[serde(default)]
    pub intent: bool,
    /// Search arguments repaired before they are sent ([`repair_search`]): words that name no
    /// plot (`plot`, `find`, `the`, …) dropped from the text, and a month the analyst named
    /// searched as that whole month.
    #[serde(default)]
    pub arguments: bool,
    /// The final reply checked against the turn's tool results ([`crate::grounded`]): a number
    /// no tool returned, or a change claimed when nothing was applied, and the reply is
    /// replaced by one composed from the results.
    #[serde(default)]
    pub grounding: bool,
    /// Steps the request already settles are made in code, with no model request: a summary or
    /// a listing that is the only step offered, a run whose one fitting tool and every required
    /// parameter the words settle, and the answer after a run (composed from its result, as
    /// [`crate::grounded::grounded_reply`] does). The model is asked only where there is a
    /// choice to make.
    #[serde(default)]
    pub planning: bool,
}

impl Levers {
    pub const LARGE: Levers = Levers {
        parsing: true,
        constraints: false,
        state_machine: false,
        compaction: false,
        intent: false,
        arguments: false,
        grounding: false,
        planning: false,
    };
    pub const SMALL: Levers = Levers {
        parsing: true,
        constraints: true,
        state_machine: true,
        compaction: true,
        intent: true,
        arguments: true,
        grounding: true,
        planning: true,
    };
    pub const NONE: Levers = Levers {
        parsing: false,
        constraints: false,
        state_machine: false,
        compaction: false,
        intent: false,
        arguments: false,
        grounding: false,
        planning: false,
    };

    pub fn for_profile(p: Profile) -> Levers {
        match p {
            Profile::Large => Levers::LARGE,
            Profile::Small => Levers::SMALL,
        }
    }

    /// A comma-separated list of levers (`parsing,constraints,state,compaction`, `none`, `all`).
    ///
    /// # Errors
    /// A word that names no lever, with the valid words.
    pub fn parse(list: &str) -> Result<Levers, UnknownLever> {
        let mut l = Levers::NONE;
        for w in list.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            match w {
                "none" => {}
                "all" => l = Levers::SMALL,
                "parsing" => l.parsing = true,
                "constraints" => l.constraints = true,
                "state" | "state-machine" => l.state_machine = true,
                "compaction" => l.compaction = true,
                "intent" => l.intent = true,
                "arguments" => l.arguments = true,
                "grounding" => l.grounding = true,
                "planning" => l.planning = true,
                other => return Err(UnknownLever(other.to_owned())),
            }
        }
        Ok(l)
    }
}

/// A word in a `--levers` list that names no lever.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown lever \"{0}\": use a comma-separated list of parsing, constraints, state, compaction, intent, arguments, grounding, planning (or none / all)"
)]
pub struct UnknownLever(pub String);

/// Where a conversation stands, as far as tool choice goes. Ordered: later stages know more.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Stage {
    /// No plot is open and nothing was searched in this utterance.
    NoPlot,
    /// No plot is open; a search ran.
    Searched,
    /// A plot is open and has not been summarised since it became active.
    Opened,
    /// The active plot was summarised.
    Summarised,
    /// The tools were listed.
    Listed,
    /// A tool ran successfully in this utterance.
    Ran,
}

/// What an utterance asks for, as one constrained classification request decides it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Intent {
    /// Search the catalogue or open a plot.
    FindPlots,
    /// Say what the open plot or the selection contains.
    DescribePlot,
    /// Say which tools can be run.
    ListTools,
    /// Change the plot or run an analysis tool.
    RunTool,
}

impl Intent {
    pub const ALL: [Intent; 4] = [
        Intent::FindPlots,
        Intent::DescribePlot,
        Intent::ListTools,
        Intent::RunTool,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Intent::FindPlots => "find_plots",
            Intent::DescribePlot => "describe_plot",
            Intent::ListTools => "list_tools",
            Intent::RunTool => "run_tool",
        }
    }

    pub fn parse(s: &str) -> Option<Intent> {
        Intent::ALL.into_iter().find(|i| i.as_str() == s)
    }

    /// The question the classification request appends (only to that request).
    pub const QUESTION: &'static str = "Classify the analyst's last request. Answer with one of:\n\
{\"intent\": \"find_plots\"}: find or open plots in the catalogue (e.g. \"open the Bravo exercise\", \"plots with a frigate\")\n\
{\"intent\": \"describe_plot\"}: tell what the open plot or the selection contains (e.g. \"describe what I have open\")\n\
{\"intent\": \"list_tools\"}: tell which tools or analyses can be run (e.g. \"what can I do here?\")\n\
{\"intent\": \"run_tool\"}: change the plot or run an analysis (e.g. \"trim the frigate track\", \"measure the range\")";

    /// The intent an utterance states in so many words, when it does: asking which tools there
    /// are, naming a change or an analysis, asking for a summary, or asking to find or open
    /// plots. `None` leaves it to the model's classification. Checked in that order, so "which
    /// tools can I run" is a question about tools, not a run.
    pub fn from_words(utterance: &str) -> Option<Intent> {
        let lower = utterance.to_lowercase();
        let words: Vec<&str> = lower
            .split(|c: char| !c.is_alphanumeric() && c != '\'' && c != '-')
            .filter(|w| !w.is_empty())
            .collect();
        let has = |list: &[&str]| words.iter().any(|w| list.contains(w));
        let asks = has(&["which", "what", "list", "available", "show"]);
        if has(&["tool", "tools", "analyses", "toolset", "toolbox", "toolkit"]) && asks {
            return Some(Intent::ListTools);
        }
        // "what sort of analysis is available": the kinds on offer, not one analysis ("show me
        // the analysis of …" is a run).
        if has(&["analysis", "analyses", "capabilities"])
            && has(&[
                "available",
                "sort",
                "kind",
                "kinds",
                "types",
                "offer",
                "options",
            ])
        {
            return Some(Intent::ListTools);
        }

        if leads_with_change(utterance) {
            return Some(Intent::RunTool);
        }
        if has(&[
            "summarise",
            "summarize",
            "summary",
            "describe",
            "overview",
            "contents",
            "brief",
            "rundown",
            "recap",
        ]) || lower.contains("what's in")
            || lower.contains("what is in")
        {
            return Some(Intent::DescribePlot);
        }
        // A question about a quantity of the tracks is an analysis (the summary holds no speeds,
        // ranges or bearings), and a colour or a speed bound with no verb still asks for a run
        // ("Nelson in green", "the contact under 5 knots").
        const QUANTITY: [&str; 23] = [
            "miles",
            "cover",
            "covered",
            "travelled",
            "traveled",
            "stats",
            "statistics",
            "far",
            "fast",
            "quick",
            "slow",
            "long",
            "close",
            "closest",
            "apart",
            "distance",
            "range",
            "bearing",
            "speed",
            "average",
            "mean",
            "knots",
            "separation",
        ];
        let how = words.windows(2).any(|w| {
            w[0] == "how" && ["far", "fast", "quick", "long", "close", "quickly"].contains(&w[1])
        });
        let values = crate::values::colour(utterance).is_some()
            || crate::values::speed_bounds(utterance) != crate::values::SpeedBounds::default();
        // A time window about the open plot ("Nelson from 0200 to 0400 only") asks for a run
        // too, unless the words are about finding plots.
        // "is there a plot from …", "any plot with …", "do we have anything from … in the
        // library": asking the catalogue.
        let a_plot = words
            .windows(2)
            .any(|w| w[1] == "plot" && ["a", "any", "some"].contains(&w[0]));
        let catalogue = a_plot
            || has(&["library", "catalogue", "catalog", "lookup"])
            || lower.contains("look up")
            || lower.contains("look for");
        let finds = catalogue || has(&["plots", "find", "search", "open"]);
        let window = crate::values::parameters_for(utterance)
            .iter()
            .any(|g| g.contains(&"start_time"));
        if how || values || (window && !finds) || (has(&QUANTITY) && !finds) {
            return Some(Intent::RunTool);
        }
        // "open" as an adjective ("the open plot", "currently open") asks for nothing to be opened.
        let opens = words.iter().enumerate().any(|(i, w)| {
            *w == "open"
                && !(i > 0
                    && [
                        "the",
                        "currently",
                        "already",
                        "now",
                        "is",
                        "that's",
                        "thats",
                        "i've",
                    ]
                    .contains(&words[i - 1]))
        });
        if opens || catalogue || has(&["find", "search", "plots"]) {
            return Some(Intent::FindPlots);
        }
        const ANYWHERE: [&str; 2] = ["make", "turn"];
        if words
            .iter()
            .any(|w| CHANGE.contains(w) && !ANYWHERE.contains(w))
        {
            return Some(Intent::RunTool);
        }
        None
    }

    /// The schema of the classification reply.
    pub fn schema() -> Value {
        let names: Vec<&str> = Intent::ALL.iter().map(|i| i.as_str()).collect();
        json!({"type": "object", "additionalProperties": false, "required": ["intent"],
            "properties": {"intent": {"enum": names}}})
    }

    /// Narrow a stage's offer to what this intent needs. `stage` is where the utterance is now,
    /// `calls` the calls already made in it.
    pub fn narrow(self, stage: Stage, calls: usize, offer: Offer) -> Offer {
        let open = stage >= Stage::Opened;
        match self {
            // A change or a summary asked for while no plot is open: the session's refusal first
            // ("No plot is open … search first"), instead of a search for words that name no
            // plot; the search comes next. Read from the summary for a change too: a change the
            // model writes with a parameter missing is refused for the parameter before the
            // plot is looked at, which tells the analyst to fix the wrong thing.
            Intent::RunTool | Intent::DescribePlot | Intent::ListTools
                if stage == Stage::NoPlot && calls == 0 =>
            {
                Offer {
                    tools: vec![SUMMARIZE],
                    reply: false,
                }
            }
            // Searching: once a search ran and a plot is open (it opened one), answer.
            Intent::FindPlots if open && calls > 0 => Offer {
                tools: Vec::new(),
                reply: true,
            },
            Intent::FindPlots if open => Offer {
                tools: vec![SEARCH],
                reply: false,
            },
            // Describing: the summary is the answer's source; then answer (another summary only
            // for the selection-only variant).
            Intent::DescribePlot if stage >= Stage::Summarised => {
                let mut o = offer;
                o.tools.retain(|t| *t == SUMMARIZE);
                o.reply = true;
                o
            }
            // Listing: the listing is the answer; no summary needed first.
            Intent::ListTools if open && stage < Stage::Listed => Offer {
                tools: vec![LIST_TOOLS],
                reply: calls > 0,
            },
            Intent::ListTools if stage >= Stage::Listed => Offer {
                tools: Vec::new(),
                reply: true,
            },
            // Running: no answer before a run (small models answer "done" after the summary),
            // until a few calls have been spent.
            Intent::RunTool if open && stage < Stage::Ran && calls < RUN_ATTEMPTS => {
                let mut o = offer;
                if stage == Stage::Summarised {
                    o.tools.retain(|t| *t == LIST_TOOLS);
                }
                o.reply = false;
                o
            }
            _ => offer,
        }
    }
}

/// Verbs that ask for a change or an analysis. "make" and "turn" only count first ("make the
/// track green"), as every verb does for [`leads_with_change`].
const CHANGE: [&str; 34] = [
    "colour",
    "color",
    "recolour",
    "recolor",
    "paint",
    "trim",
    "rename",
    "delete",
    "remove",
    "hide",
    "set",
    "run",
    "apply",
    "measure",
    "merge",
    "split",
    "interpolate",
    "calculate",
    "compute",
    "filter",
    "label",
    "smooth",
    "enlarge",
    "shrink",
    "resize",
    "scale",
    "move",
    "shift",
    "change",
    "clip",
    "extend",
    "highlight",
    "make",
    "turn",
];

/// The request's first word that is not a politeness ("please colour …", "now trim …") is a
/// verb of a change or an analysis.
pub fn leads_with_change(utterance: &str) -> bool {
    let lower = utterance.to_lowercase();
    lower
        .split(|c: char| !c.is_alphanumeric() && c != '\'' && c != '-')
        .filter(|w| !w.is_empty())
        .find(|w| !["please", "now", "can", "could", "you", "kindly", "then"].contains(w))
        .is_some_and(|w| CHANGE.contains(&w))
}

/// The request asks for a quantity of the tracks — how far, how fast, how long, what range or
/// bearing, an average or top speed — rather than for a change: a question answered by a tool
/// that computes ("how fast was the sub going", "Contact's mean speed?", "distance covered by
/// Nelson"). Stated speed bounds ask for a filter instead ("slower than 5 knots").
pub fn asks_quantity(utterance: &str) -> bool {
    let lower = utterance.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    if crate::values::speed_bounds(utterance) != crate::values::SpeedBounds::default() {
        return false;
    }
    let how = words.windows(2).any(|w| {
        w[0] == "how"
            && [
                "far", "fast", "quick", "quickly", "long", "close", "near", "slow", "much",
            ]
            .contains(&w[1])
    });
    const MEASURES: [&str; 13] = [
        "distance",
        "range",
        "bearing",
        "speed",
        "average",
        "mean",
        "separation",
        "closest",
        "cpa",
        "length",
        "covered",
        "travelled",
        "traveled",
    ];
    how || words.iter().any(|w| MEASURES.contains(w))
}

/// Calls a run-tool request may make before an answer without a run is accepted.
pub const RUN_ATTEMPTS: usize = 5;

/// Words a small model copies from the request into the search text that name no plot.
const NOT_SEARCH_WORDS: [&str; 28] = [
    "plot",
    "plots",
    "find",
    "open",
    "show",
    "search",
    "load",
    "bring",
    "pull",
    "up",
    "get",
    "need",
    "the",
    "a",
    "an",
    "me",
    "all",
    "any",
    "involving",
    "with",
    "from",
    "in",
    "on",
    "of",
    "for",
    "and",
    "that",
    "which",
];

/// The month (1–12) an utterance names, if it names exactly one.
fn named_month(utterance: &str) -> Option<u32> {
    let lower = utterance.to_lowercase();
    let named: Vec<u32> = lower
        .split(|c: char| !c.is_alphabetic())
        .filter_map(|w| {
            MONTHS
                .iter()
                .position(|m| *m == w || (w.len() >= 3 && month_abbreviation(m, w)))
        })
        .filter_map(|i| u32::try_from(i + 1).ok())
        .collect();
    match named.as_slice() {
        [m] => Some(*m),
        _ => None,
    }
}

/// The day of the month said beside the one month named: "2 March", "March 2nd", "the 2nd of
/// March".
fn named_day_of_month(utterance: &str) -> Option<u32> {
    named_month(utterance)?;
    let lower = utterance.to_lowercase();
    let w: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty() && *w != "of" && *w != "the")
        .collect();
    let day = |x: &str| -> Option<u32> {
        x.trim_end_matches(|c: char| c.is_alphabetic())
            .parse::<u32>()
            .ok()
            .filter(|d| (1..=31).contains(d))
            .filter(|_| x.chars().next().is_some_and(|c| c.is_ascii_digit()))
    };
    let i = w.iter().position(|x| named_month(x).is_some())?;
    i.checked_sub(1)
        .and_then(|j| day(w[j]))
        .or_else(|| w.get(i + 1).and_then(|x| day(x)))
}

/// `w` abbreviates the month `m` as dates are written ("Mar", "Sept"; not "May", which is a
/// word and the whole name).
fn month_abbreviation(m: &str, w: &str) -> bool {
    m != "may" && m.len() > w.len() && (w.len() == 3 || w == "sept") && m.starts_with(w)
}

/// A token that is a date or a bare number ("2026-03-02", "02", "26"): with the window set from
/// the words, it names no plot.
fn date_or_number(bare: &str) -> bool {
    !bare.is_empty()
        && bare
            .chars()
            .all(|c| c.is_ascii_digit() || c == '-' || c == '/')
}

/// Repair a search call's arguments (the `arguments` lever): drop words that name no plot from
/// `text` (and the whole `text` when nothing is left), and when the analyst named one month and
/// the model's window lies inside it (a small model picks the month's first day), search that
/// whole month of the year the model chose — the month name then leaves the text too.
pub fn repair_search(input: &Value, utterance: &str) -> Value {
    use chrono::{Datelike, NaiveDate};
    let mut out = input.clone();
    let Some(obj) = out.as_object_mut() else {
        return out;
    };
    let date = |k: &str| -> Option<NaiveDate> {
        let s = obj.get(k)?.as_str()?;
        chrono::DateTime::parse_from_rfc3339(s)
            .ok()
            .map(|t| t.date_naive())
            .or_else(|| NaiveDate::parse_from_str(s.get(..10)?, "%Y-%m-%d").ok())
    };
    let (start, end) = (date("startTime"), date("endTime"));
    // A day of a month ("2 March"): that day, in the year the model chose.
    if let (Some(m), Some(d), Some(year)) = (
        named_month(utterance),
        named_day_of_month(utterance),
        start.or(end).map(|t| t.year()),
    ) && let Some(day) = NaiveDate::from_ymd_opt(year, m, d)
        && let Some(next) = day.succ_opt()
    {
        obj.insert(
            "startTime".into(),
            Value::String(format!("{day}T00:00:00Z")),
        );
        obj.insert("endTime".into(), Value::String(format!("{next}T00:00:00Z")));
        if let Some(text) = obj.get("text").and_then(Value::as_str) {
            let kept: Vec<&str> = text
                .split_whitespace()
                .filter(|w| {
                    let bare = w
                        .trim_matches(|c: char| !c.is_alphanumeric())
                        .to_lowercase();
                    named_month(&bare).is_none()
                        && bare.trim_end_matches(|c: char| c.is_alphabetic()) != d.to_string()
                        && !date_or_number(&bare)
                })
                .collect();
            obj.insert("text".into(), Value::String(kept.join(" ")));
        }
        return finish_search(out, utterance, false);
    }
    let window = named_month(utterance).zip(start).filter(|(m, start)| {
        let next = first_of_next(start.year(), *m);
        start.month() == *m
            && end.is_none_or(|e| (e.year() == start.year() && e.month() == *m) || e == next)
    });
    let widened = match window.and_then(|(m, start)| {
        Some((
            NaiveDate::from_ymd_opt(start.year(), m, 1)?,
            first_of_next(start.year(), m),
        ))
    }) {
        Some((first, next)) => {
            obj.insert(
                "startTime".into(),
                Value::String(format!("{first}T00:00:00Z")),
            );
            obj.insert("endTime".into(), Value::String(format!("{next}T00:00:00Z")));
            true
        }
        None => false,
    };
    finish_search(out, utterance, widened)
}

/// The rest of [`repair_search`]: filler words out of the text, the day as "Day N", platforms
/// the analyst did not name dropped, `open` when asked to open.
fn finish_search(mut out: Value, utterance: &str, widened: bool) -> Value {
    let Some(obj) = out.as_object_mut() else {
        return out;
    };
    // The day the analyst named, as the catalogue titles say it ("Day 2"), in place of however
    // the model spelled it (or left it out): "the second day", "day2", "day two".
    let day = crate::values::day_number(utterance);
    if let Some(text) = obj.get("text").and_then(Value::as_str) {
        let mut kept: Vec<String> = text
            .split_whitespace()
            .filter(|w| {
                let bare = w
                    .trim_matches(|c: char| !c.is_alphanumeric())
                    .to_lowercase();
                let month = widened && named_month(&bare).is_some();
                // A date the model copied into the text ("2023-03-02"): the window says it.
                let date = bare.len() >= 8 && bare.contains('-') && date_or_number(&bare);
                let day_word = day.is_some()
                    && (bare == "day"
                        || crate::values::day_number(&bare).is_some()
                        || crate::values::day_number(&format!("day {bare}")).is_some()
                        || crate::values::day_number(&format!("{bare} day")).is_some());
                !(NOT_SEARCH_WORDS.contains(&bare.as_str()) || month || day_word || date)
            })
            .map(str::to_owned)
            .collect();
        if let Some(n) = day {
            kept.push(format!("Day {n}"));
        }
        if kept.is_empty() {
            obj.remove("text");
        } else {
            obj.insert("text".into(), Value::String(kept.join(" ")));
        }
    } else if let Some(n) = day {
        obj.insert("text".into(), Value::String(format!("Day {n}")));
    }
    // Asked to open, bring up or load: the one match opens.
    let lower = utterance.to_lowercase();
    // "opne", "oepn": the letters of "open" with two swapped count as "open".
    let transposed = lower.split(|c: char| !c.is_alphabetic()).any(|w| {
        let mut c: Vec<char> = w.chars().collect();
        c.sort_unstable();
        w.len() == 4 && c == ['e', 'n', 'o', 'p']
    });
    // "show me the Alpha plot" (one plot) asks to see it; "show me plots with …" to list them.
    let words: Vec<&str> = lower.split(|c: char| !c.is_alphanumeric()).collect();
    let show_one = words.contains(&"show") && words.contains(&"plot") && !words.contains(&"plots");
    if (transposed
        || show_one
        || [
            "open",
            "load",
            "bring up",
            "pull up",
            "up on screen",
            "display",
            // "I need the second day of exercise alpha": the one match is what they want.
            "i need",
            "i want",
            "get me",
            "give me",
            "switch to",
            "take me to",
        ]
        .iter()
        .any(|w| lower.contains(w)))
        && !obj.contains_key("open")
    {
        obj.insert("open".into(), Value::Bool(true));
    }
    // Platforms the analyst named (a small model adds the ones it saw in an earlier result):
    // "subs" names the submarine.
    let said: Vec<String> = utterance
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric() && c != '-')
        .filter(|w| w.len() >= 3)
        .map(|w| w.trim_end_matches('s').to_owned())
        .collect();
    // A word the search text already holds is what the plot is called, not a platform ("the
    // Alpha plot from 2 March" once searched for a platform "Alpha" and found nothing).
    let text_words: Vec<String> = obj
        .get("text")
        .and_then(Value::as_str)
        .map(|t| {
            t.to_lowercase()
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| !w.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    if let Some(Value::Array(platforms)) = obj.get_mut("platforms") {
        platforms.retain(|p| {
            p.as_str().is_some_and(|p| {
                let p = p.to_lowercase();
                !p.split(|c: char| !c.is_alphanumeric())
                    .any(|w| text_words.iter().any(|t| t == w))
                    && said
                        .iter()
                        .any(|w| w.len() >= 3 && (p.starts_with(w.as_str()) || w.starts_with(&p)))
            })
        });
        if platforms.is_empty() {
            obj.remove("platforms");
        }
    }
    out
}

fn first_of_next(year: i32, month: u32) -> chrono::NaiveDate {
    let (y, m) = if month == 12 {
        (year + 1, 1)
    } else {
        (year, month + 1)
    };
    chrono::NaiveDate::from_ymd_opt(y, m, 1).unwrap_or_default()
}

/// What the model may do in one turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offer {
    /// Agent tool names, in the order shown.
    pub tools: Vec<&'static str>,
    /// A final answer without a call is acceptable.
    pub reply: bool,
}

impl Stage {
    /// The stage an utterance starts in, from the previous utterance's stage and the session.
    pub fn begin(previous: Option<Stage>, plot_open: bool, plot_changed: bool) -> Stage {
        if !plot_open {
            return Stage::NoPlot;
        }
        match previous {
            _ if plot_changed => Stage::Opened,
            None | Some(Stage::NoPlot | Stage::Searched | Stage::Opened) => Stage::Opened,
            Some(Stage::Summarised) => Stage::Summarised,
            // The tools are known; a new request may need another one.
            Some(Stage::Listed | Stage::Ran) => Stage::Listed,
        }
    }

    /// The tools that make sense now. `calls` counts the calls already made in this utterance:
    /// the first step never offers a free reply (small models answer from memory instead).
    /// Once summarised, another summary is offered only when something is `selected` (the
    /// selection-only summary is then a different answer).
    pub fn offer(self, calls: usize, selected: bool) -> Offer {
        let (mut tools, reply): (Vec<&'static str>, bool) = match self {
            Stage::NoPlot => (vec![SEARCH], calls > 0),
            // A search that opened nothing: one more try before answering.
            Stage::Searched => (vec![SEARCH], calls >= 2),
            Stage::Opened => (vec![SUMMARIZE], calls > 0),
            Stage::Summarised => (vec![SUMMARIZE, LIST_TOOLS], true),
            Stage::Listed => (vec![SUMMARIZE, RUN_TOOL], true),
            Stage::Ran => (Vec::new(), true),
        };
        if !selected && self >= Stage::Summarised {
            tools.retain(|t| *t != SUMMARIZE);
        }
        Offer { tools, reply }
    }

    /// The stage after a call to `tool` ended (`ok`: it ran; a refusal or failure is not ok).
    pub fn after(self, tool: &str, ok: bool, plot_open: bool, plot_changed: bool) -> Stage {
        if !plot_open {
            return if tool == SEARCH || self == Stage::Searched {
                Stage::Searched
            } else {
                Stage::NoPlot
            };
        }
        if plot_changed || self < Stage::Opened {
            // A search opened a plot (or the active plot changed under us).
            return Stage::Opened;
        }
        if !ok {
            return self;
        }
        match tool {
            SUMMARIZE => self.max(Stage::Summarised),
            LIST_TOOLS => self.max(Stage::Listed),
            RUN_TOOL => Stage::Ran,
            _ => self,
        }
    }
}

impl Offer {
    /// The offer without the tools in `blocked` (a tool whose identical call was just
    /// repeated); with nothing left to call, a reply is always allowed.
    pub fn without(mut self, blocked: &[String]) -> Offer {
        self.tools.retain(|t| !blocked.iter().any(|b| b == t));
        if self.tools.is_empty() {
            self.reply = true;
        }
        self
    }
}

/// The four agent tools, in the order a full offer shows them.
pub const ALL_TOOLS: [&str; 4] = [SEARCH, SUMMARIZE, LIST_TOOLS, RUN_TOOL];

/// Tokens kept free of the context window for the reply and the chat template.
pub const RESERVE: usize = 700;

/// The prompt budget for a context window of `n_ctx` tokens: the reserve off, and 15% margin
/// because the budget counts o200k tokens, not the model's own.
pub fn budget_for(n_ctx: usize) -> usize {
    n_ctx.saturating_sub(RESERVE) * 85 / 100
}

/// The refusal for a call to an agent tool the current step does not offer.
pub fn not_offered_message(tool: &str, offered: &[String]) -> String {
    if offered.is_empty() {
        format!("{tool} is not needed at this step: answer the analyst now, in plain words.")
    } else {
        format!(
            "{tool} is not available at this step. Call {} instead, or answer the analyst.",
            offered.join(" or ")
        )
    }
}

/// The reply the model gets for a repeated identical call (not dispatched again).
pub fn repeated_call_message(tool: &str) -> String {
    format!(
        "You already called {tool} with exactly these arguments; the result has not changed (it is the earlier {tool} result above). Do not call it again: use that result, call a different tool, or answer the analyst."
    )
}

/// Tools whose identical repeat is answered from the previous result (they read, and reading
/// twice gives the same answer while nothing else ran).
pub fn cacheable(tool: &str) -> bool {
    matches!(tool, SEARCH | SUMMARIZE | LIST_TOOLS)
}

fn first_sentence(s: &str) -> &str {
    let end = s
        .char_indices()
        .find(|&(i, c)| c == '.' && s[i + 1..].starts_with(' ') || c == '\n')
        .map_or(s.len(), |(i, _)| i);
    s[..end].trim_end_matches('.').trim()
}

/// A compact form of a tool's result for a small model: the tool listing as one line per tool
/// (id, whether it modifies the plot, its purpose, its parameters), a search as the matches'
/// ids, titles, time spans and platform names. Anything else (summaries already honour a token
/// budget, refusals are short sentences) is shown as it is.
pub fn compact_result(tool: &str, result: &str) -> String {
    let Ok(v) = serde_json::from_str::<Value>(result) else {
        return result.to_owned();
    };
    match tool {
        LIST_TOOLS => match v.as_array() {
            Some(tools) => compact_listing(tools),
            None => result.to_owned(),
        },
        SEARCH => compact_search(&v).unwrap_or_else(|| result.to_owned()),
        _ => result.to_owned(),
    }
}

/// The compact listing of only the tools in `keep` (the few a request is about), when `result`
/// is a listing and some of them are in it: what a small model needs to fill the one call it is
/// offered, without sixty other tools' lines to read past.
pub fn compact_listing_of(result: &str, keep: &[String]) -> Option<String> {
    let v: Value = serde_json::from_str(result).ok()?;
    let kept: Vec<Value> = v
        .as_array()?
        .iter()
        .filter(|t| {
            t["id"]
                .as_str()
                .is_some_and(|id| keep.iter().any(|k| k == id))
        })
        .cloned()
        .collect();
    (!kept.is_empty()).then(|| compact_listing(&kept))
}

fn compact_listing(tools: &[Value]) -> String {
    let mut out = String::from(
        "Tools (id — what it does; params, * = required). Pass the id as toolId and the params as params to debrief_runTool.\n",
    );
    for t in tools {
        let id = t["id"].as_str().unwrap_or_default();
        let purpose = first_sentence(t["description"].as_str().unwrap_or_default());
        let kind = if t["mutating"].as_bool() == Some(true) {
            "edits the plot"
        } else {
            "read-only"
        };
        // Names only (`*` = required): types, choices and defaults are in the tool's schema,
        // which constrained decoding enforces and a refusal names when a value is wrong.
        let params: Vec<String> = t["parameters"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| {
                format!(
                    "{}{}",
                    p["name"].as_str().unwrap_or_default(),
                    if p["required"].as_bool() == Some(true) {
                        "*"
                    } else {
                        ""
                    }
                )
            })
            .collect();
        out.push_str(&format!("- {id} — {purpose} [{kind}]"));
        if !params.is_empty() {
            out.push_str(&format!("; params: {}", params.join(", ")));
        }
        out.push('\n');
    }
    out
}

fn compact_search(v: &Value) -> Option<String> {
    let matches = v.get("matches")?.as_array()?;
    let slim: Vec<Value> = matches
        .iter()
        .map(|m| {
            let platforms: Vec<Value> = m["platforms"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|p| {
                    p.get("name")
                        .cloned()
                        .or_else(|| p.as_str().map(|s| json!(s)))
                        .unwrap_or(Value::Null)
                })
                .collect();
            let mut o = json!({"plotId": m["plotId"], "title": m["title"]});
            for k in ["startTime", "endTime", "timeSpan", "start", "end"] {
                if let Some(x) = m.get(k) {
                    o[k] = x.clone();
                }
            }
            o["platforms"] = Value::Array(platforms);
            o
        })
        .collect();
    let mut out = json!({"matches": slim, "total": v["total"]});
    if v["total"].as_u64() == Some(0) {
        out["hint"] = json!(
            "No plot matches all of these words and filters. Search again with fewer, distinctive words (a name, an exercise, a platform) and no dates unless the analyst gave them."
        );
    }
    // `totalIs`: a STAC API catalogue's count may be its server's estimate (issue 35).
    for k in [
        "totalIs",
        "more",
        "message",
        "opened",
        "notOpened",
        "openError",
    ] {
        if let Some(x) = v.get(k) {
            out[k] = x.clone();
        }
    }
    serde_json::to_string(&out).ok()
}

/// Tokens of a message as the budget counts them (o200k plus the per-message overhead).
fn message_tokens(counter: &TokenCounter, m: &Message) -> usize {
    counter.count(&m.content)
        + m.tool_calls
            .iter()
            .map(|c| counter.count(&c.arguments) + counter.count(&c.name) + 4)
            .sum::<usize>()
        + 4
}

/// The counted size of a list of messages.
pub fn messages_tokens(counter: &TokenCounter, messages: &[Message]) -> usize {
    messages.iter().map(|m| message_tokens(counter, m)).sum()
}

/// The placeholder for a tool result dropped to fit the context.
pub const DROPPED: &str =
    "[earlier result dropped to fit the model's context; call the tool again if it is needed]";

/// Fit `messages` into `budget` tokens (as counted by `counter`): first the oldest tool results
/// are replaced by [`DROPPED`] (the newest result is kept), then the oldest whole exchanges
/// before the current utterance are dropped (the system prompt and the current utterance with
/// everything after it are kept). Returns what fits, or as close as the kept part allows.
pub fn fit_to_budget(counter: &TokenCounter, messages: &[Message], budget: usize) -> Vec<Message> {
    let mut out: Vec<Message> = messages.to_vec();
    if messages_tokens(counter, &out) <= budget {
        return out;
    }
    let last_tool = out.iter().rposition(|m| m.role == Role::Tool);
    for i in 0..out.len() {
        if Some(i) == last_tool {
            continue;
        }
        if out[i].role == Role::Tool && out[i].content != DROPPED {
            out[i].content = DROPPED.to_owned();
            if messages_tokens(counter, &out) <= budget {
                return out;
            }
        }
    }
    // Still too long: drop earlier exchanges, oldest first, keeping a leading system message
    // and the current utterance (the last user message) with what follows it.
    let mut keep_from = out.iter().rposition(|m| m.role == Role::User).unwrap_or(0);
    let first = usize::from(out.first().is_some_and(|m| m.role == Role::System));
    while first < keep_from && messages_tokens(counter, &out) > budget {
        out.remove(first);
        keep_from -= 1;
        // Never leave a tool result at the front without the call it answers.
        while first < keep_from && out[first].role == Role::Tool {
            out.remove(first);
            keep_from -= 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {

    #[test]
    fn questions_about_quantities_and_bare_values_are_runs() {
        for u in [
            "what was the contact's average speed?",
            "how far apart were Nelson and the contact?",
            "Nelson in green",
            "where was the sub under 5 knots",
            "range and bearing from Nelson to the contact",
        ] {
            assert_eq!(Intent::from_words(u), Some(Intent::RunTool), "{u}");
        }
        assert_eq!(
            Intent::from_words("which tools can I run"),
            Some(Intent::ListTools)
        );
        assert_eq!(
            Intent::from_words("find the plots with a frigate"),
            Some(Intent::FindPlots)
        );
    }

    #[test]
    fn a_small_model_gets_the_small_profile_by_itself() {
        use crate::constrain::{ServerInfo, ServerKind};
        assert_eq!(
            params_in_name("qwen2.5-coder-0.5b-instruct-q8_0"),
            Some(500_000_000)
        );
        assert_eq!(params_in_name("SmolLM2-135M-Instruct"), Some(135_000_000));
        assert_eq!(params_in_name("llama3.2:1b"), Some(1_000_000_000));
        assert_eq!(params_in_name("qwen2.5-7b"), Some(7_000_000_000));
        assert_eq!(params_in_name("gpt-4o"), None);
        let unknown = ServerInfo::default();
        assert_eq!(
            auto_profile("qwen2.5-coder-0.5b", &unknown).0,
            Profile::Small
        );
        assert_eq!(
            auto_profile("qwen2.5-32b-instruct", &unknown).0,
            Profile::Large
        );
        assert_eq!(auto_profile("gpt-4o", &unknown).0, Profile::Large);
        let in_process = ServerInfo {
            kind: ServerKind::InProcess,
            ..ServerInfo::default()
        };
        assert_eq!(auto_profile("anything", &in_process).0, Profile::Small);
        let reported = ServerInfo {
            kind: ServerKind::LlamaCpp,
            n_params: Some(494_032_768),
            ..ServerInfo::default()
        };
        let (p, why) = auto_profile("model", &reported);
        assert_eq!(p, Profile::Small);
        assert!(why.contains("0.49 B"), "{why}");
    }
    use super::*;
    use crate::client::ToolCallRequest;

    #[test]
    fn the_state_machine_offers_search_then_summary_then_the_rest() {
        let s = Stage::begin(None, false, false);
        assert_eq!(s, Stage::NoPlot);
        assert_eq!(
            s.offer(0, true),
            Offer {
                tools: vec![SEARCH],
                reply: false
            }
        );
        // A search that matched nothing: search again or say so.
        let s2 = s.after(SEARCH, true, false, false);
        assert_eq!(s2, Stage::Searched);
        assert!(!s2.offer(1, true).reply, "one more search first");
        assert!(s2.offer(2, true).reply);
        // A search that opened a plot: summary next (or reply, a call was made).
        let s = s.after(SEARCH, true, true, true);
        assert_eq!(s, Stage::Opened);
        assert_eq!(s.offer(1, true).tools, vec![SUMMARIZE]);
        assert!(s.offer(1, true).reply);
        // A plot already open at the start: summary first, no free reply.
        let s = Stage::begin(None, true, false);
        assert_eq!(
            s.offer(0, true),
            Offer {
                tools: vec![SUMMARIZE],
                reply: false
            }
        );
        // A refused summary keeps the stage.
        assert_eq!(s.after(SUMMARIZE, false, true, false), Stage::Opened);
        let s = s.after(SUMMARIZE, true, true, false);
        assert_eq!(s, Stage::Summarised);
        assert_eq!(s.offer(1, true).tools, vec![SUMMARIZE, LIST_TOOLS]);
        let s = s.after(LIST_TOOLS, true, true, false);
        assert_eq!(s, Stage::Listed);
        assert_eq!(s.offer(2, true).tools, vec![SUMMARIZE, RUN_TOOL]);
        // A summary after listing does not forget the listing.
        assert_eq!(s.after(SUMMARIZE, true, true, false), Stage::Listed);
        // A failed run keeps the stage; a run that worked leaves only the reply.
        assert_eq!(s.after(RUN_TOOL, false, true, false), Stage::Listed);
        let s = s.after(RUN_TOOL, true, true, false);
        assert_eq!(
            s.offer(3, true),
            Offer {
                tools: vec![],
                reply: true
            }
        );
        // The next utterance starts with the tools known, a changed plot starts over, a closed
        // plot goes back to search.
        assert_eq!(Stage::begin(Some(s), true, false), Stage::Listed);
        assert_eq!(Stage::begin(Some(s), true, true), Stage::Opened);
        assert_eq!(Stage::begin(Some(s), false, true), Stage::NoPlot);
        // Closing the plot mid-utterance goes back to search.
        assert_eq!(
            Stage::Listed.after(RUN_TOOL, true, false, true),
            Stage::NoPlot
        );
    }

    #[test]
    fn a_blocked_tool_leaves_the_offer_and_an_empty_offer_allows_a_reply() {
        let o = Stage::Opened
            .offer(0, true)
            .without(&[SUMMARIZE.to_owned()]);
        assert!(o.tools.is_empty());
        assert!(o.reply);
        let o = Stage::Summarised
            .offer(1, true)
            .without(&[SUMMARIZE.to_owned()]);
        assert_eq!(o.tools, vec![LIST_TOOLS]);
    }

    #[test]
    fn without_a_selection_a_second_summary_is_not_offered() {
        assert_eq!(Stage::Opened.offer(0, false).tools, vec![SUMMARIZE]);
        assert_eq!(Stage::Summarised.offer(1, false).tools, vec![LIST_TOOLS]);
        assert_eq!(Stage::Listed.offer(2, false).tools, vec![RUN_TOOL]);
        assert_eq!(
            Stage::Listed.offer(2, true).tools,
            vec![SUMMARIZE, RUN_TOOL]
        );
    }

    #[test]
    fn an_intent_narrows_the_offers() {
        let o = |i: Intent, s: Stage, calls: usize| i.narrow(s, calls, s.offer(calls, true));
        // Finding: a search, and once it opened a plot only the answer.
        assert_eq!(o(Intent::FindPlots, Stage::NoPlot, 0).tools, vec![SEARCH]);
        assert_eq!(
            o(Intent::FindPlots, Stage::Opened, 1).tools,
            Vec::<&str>::new()
        );
        assert!(o(Intent::FindPlots, Stage::Opened, 1).reply);
        assert_eq!(
            o(Intent::FindPlots, Stage::Summarised, 0),
            Offer {
                tools: vec![SEARCH],
                reply: false
            }
        );
        // Describing: the summary first, then the answer (or the selection-only summary).
        assert_eq!(
            o(Intent::DescribePlot, Stage::Opened, 0).tools,
            vec![SUMMARIZE]
        );
        assert_eq!(
            o(Intent::DescribePlot, Stage::Summarised, 1).tools,
            vec![SUMMARIZE]
        );
        assert!(o(Intent::DescribePlot, Stage::Summarised, 1).reply);
        assert!(
            Intent::DescribePlot
                .narrow(Stage::Listed, 2, Stage::Listed.offer(2, false))
                .tools
                .is_empty()
        );
        // Listing: straight to the listing, then the answer.
        assert_eq!(
            o(Intent::ListTools, Stage::Opened, 0),
            Offer {
                tools: vec![LIST_TOOLS],
                reply: false
            }
        );
        assert_eq!(
            o(Intent::ListTools, Stage::Listed, 1).tools,
            Vec::<&str>::new()
        );
        // Without a plot, finding searches first (a change, a summary or a listing asks the
        // session first: `with_no_plot_open_a_change_or_summary_first_asks_its_own_tool`).
        assert_eq!(o(Intent::FindPlots, Stage::NoPlot, 0).tools, vec![SEARCH]);
        // Running: the state machine's tools, but no answer before a run.
        assert_eq!(
            o(Intent::RunTool, Stage::Listed, 2),
            Offer {
                tools: Stage::Listed.offer(2, true).tools,
                reply: false
            }
        );
        assert_eq!(Intent::parse("list_tools"), Some(Intent::ListTools));
        assert_eq!(Intent::parse("colour"), None);
        let v = jsonschema::validator_for(&Intent::schema()).unwrap();
        assert!(v.is_valid(&json!({"intent": "run_tool"})));
        assert!(!v.is_valid(&json!({"intent": "open_plot"})));
    }

    #[test]
    fn plain_words_state_the_intent_before_any_model_is_asked() {
        use Intent::*;
        for (u, want) in [
            ("which Debrief tools can I run right now?", Some(ListTools)),
            ("what analyses are available here", Some(ListTools)),
            (
                "what sort of analysis is available for these tracks",
                Some(ListTools),
            ),
            ("show me the analysis of the contact's speed", Some(RunTool)),
            // fresh2's and fresh3's misses.
            ("look up Joint Warrior 2025", Some(FindPlots)),
            (
                "how many miles did the opposition cover over the whole plot",
                Some(RunTool),
            ),
            ("stats on the HMS one pls", Some(RunTool)),
            ("show me the toolset for the open plot", Some(ListTools)),
            ("Is there a plot from 15 April 2025?", Some(FindPlots)),
            (
                "Do we have anything from Cold Response in the library?",
                Some(FindPlots),
            ),
            (
                "Can you find the periods when the SSK's speed was 5 knots or under?",
                Some(RunTool),
            ),
            ("colour the frigate track blue", Some(RunTool)),
            ("trim NELSON to the first hour", Some(RunTool)),
            ("please measure the range between them", Some(RunTool)),
            ("summarize what is selected", Some(DescribePlot)),
            ("what's in here?", Some(DescribePlot)),
            ("open the Bravo exercise", Some(FindPlots)),
            ("plots with a tanker in June", Some(FindPlots)),
            ("please paint the destroyer yellow", Some(RunTool)),
            ("make the reference zone twice as big", Some(RunTool)),
            ("give me an overview of the open plot", Some(DescribePlot)),
            ("is there anything odd in the currently open plot", None),
            ("can you open the Charlie exercise", Some(FindPlots)),
            ("what would make this track look smoother", None),
            ("hello", None),
        ] {
            assert_eq!(Intent::from_words(u), want, "{u}");
        }
    }

    #[test]
    fn with_no_plot_open_a_change_or_summary_first_hears_the_session_say_so() {
        let o =
            |i: Intent, calls| i.narrow(Stage::NoPlot, calls, Stage::NoPlot.offer(calls, false));
        assert_eq!(o(Intent::RunTool, 0).tools, vec![SUMMARIZE]);
        assert_eq!(o(Intent::DescribePlot, 0).tools, vec![SUMMARIZE]);
        assert!(!o(Intent::RunTool, 0).reply);
        // After the refusal, the search (or an answer relaying the refusal).
        assert_eq!(o(Intent::RunTool, 1), Stage::NoPlot.offer(1, false));
        assert!(o(Intent::RunTool, 1).reply);
        // "Which tools can I use?" with nothing open: the session says no plot is open (the
        // tools apply to an open plot). Searching is unchanged.
        assert_eq!(o(Intent::ListTools, 0).tools, vec![SUMMARIZE]);
        assert_eq!(o(Intent::FindPlots, 0), Stage::NoPlot.offer(0, false));
    }

    #[test]
    fn a_run_request_is_not_answered_before_a_run() {
        let summarised = Stage::Summarised.offer(1, false);
        let o = Intent::RunTool.narrow(Stage::Summarised, 1, summarised);
        assert_eq!(
            o,
            Offer {
                tools: vec![LIST_TOOLS],
                reply: false
            }
        );
        let listed = Stage::Listed.offer(2, false);
        let o = Intent::RunTool.narrow(Stage::Listed, 2, listed);
        assert_eq!(
            o,
            Offer {
                tools: vec![RUN_TOOL],
                reply: false
            }
        );
        // after a few attempts an answer is accepted (a refused run must not loop forever)
        let o = Intent::RunTool.narrow(
            Stage::Listed,
            RUN_ATTEMPTS,
            Stage::Listed.offer(RUN_ATTEMPTS, false),
        );
        assert!(o.reply);
        assert!(
            Intent::RunTool
                .narrow(Stage::Ran, 3, Stage::Ran.offer(3, false))
                .reply
        );
    }

    #[test]
    fn search_arguments_lose_filler_words_and_a_named_month_becomes_the_month() {
        let r = repair_search(
            &json!({"text": "Exercise Alpha day-1 plot", "open": true}),
            "open the Exercise Alpha day-1 plot",
        );
        assert_eq!(r, json!({"text": "Exercise Alpha Day 1", "open": true}));
        // The day however it was said, as the catalogue titles say it; asked to load, it opens.
        let r = repair_search(
            &json!({"text": "alpha second"}),
            "load the second day of alpha",
        );
        assert_eq!(r, json!({"text": "alpha Day 2", "open": true}));
        let r = repair_search(&json!({"text": "alpha day2"}), "opne the alpha day2 plot");
        assert_eq!(r, json!({"text": "alpha Day 2", "open": true}));
        // A day of a month is that day; platforms nobody named are dropped ("subs" names one).
        let r = repair_search(
            &json!({"text": "Alpha", "startTime": "2026-03-01T00:00:00Z", "endTime": "2026-04-01T00:00:00Z", "platforms": ["frigate", "submarine"]}),
            "show me the Alpha plot from 2 March",
        );
        assert_eq!(
            r,
            json!({"text": "Alpha", "startTime": "2026-03-02T00:00:00Z", "endTime": "2026-03-03T00:00:00Z", "open": true})
        );
        let r = repair_search(
            &json!({"text": "exercise", "platforms": ["submarine"]}),
            "find exercises with subs",
        );
        assert_eq!(r["platforms"], json!(["submarine"]));
        let r = repair_search(
            &json!({"text": "March", "startTime": "2026-03-01T00:00:00Z", "endTime": "2026-03-01T23:59:59Z", "platforms": ["submarine"]}),
            "find plots from March involving a submarine",
        );
        assert_eq!(
            r,
            json!({"startTime": "2026-03-01T00:00:00Z", "endTime": "2026-04-01T00:00:00Z", "platforms": ["submarine"]})
        );
        // December rolls into the next year; a window the analyst gave outside the month stays
        let r = repair_search(&json!({"startTime": "2025-12-05"}), "tracks in December");
        assert_eq!(r["endTime"], "2026-01-01T00:00:00Z");
        let kept = json!({"startTime": "2026-02-01T00:00:00Z", "endTime": "2026-05-01T00:00:00Z"});
        assert_eq!(repair_search(&kept, "from March"), kept);
        // no month named, or two: the window is the model's
        let one_day =
            json!({"startTime": "2026-03-01T00:00:00Z", "endTime": "2026-03-01T23:00:00Z"});
        assert_eq!(repair_search(&one_day, "find the plots"), one_day);
        assert_eq!(repair_search(&one_day, "March or April"), one_day);
        // A date as signals write it ("02 Mar 26"), and a date the model copied into the text:
        // the window holds the day, the text keeps only words a title could have.
        let r = repair_search(
            &json!({"text": "bring up Bravo 05 Jun 26", "startTime": "2026-06-26T00:00:00Z", "endTime": "2026-06-26T00:00:00Z"}),
            "bring up Bravo 05 Jun 26",
        );
        assert_eq!(
            r,
            json!({"text": "Bravo", "startTime": "2026-06-05T00:00:00Z", "endTime": "2026-06-06T00:00:00Z", "open": true})
        );
        let r = repair_search(
            &json!({"text": "2025-07-04", "startTime": "2026-07-04", "endTime": "2026-07-04"}),
            "the third day of exercise bravo, the 4th of July one",
        );
        assert_eq!(r["text"], "Day 3");
        assert_eq!(r["startTime"], "2026-07-04T00:00:00Z");
        assert_eq!(named_month("in May"), Some(5));
        assert_eq!(named_month("from Sept"), Some(9));
        assert_eq!(named_month("a mare's nest"), None);
        // fresh3: a platform the model made of the plot's name is no filter.
        let r = repair_search(
            &json!({"text": "Alpha", "startTime": "2026-03-02", "endTime": "2026-03-02", "platforms": ["Alpha", "Beta", "Gamma"]}),
            "open the Alpha plot from 2 March 2026",
        );
        assert!(r.get("platforms").is_none(), "{r}");
        assert_eq!(r["open"], true);
        let r = repair_search(
            &json!({"text": "pull up Alpha 02 Mar 26", "platforms": ["Alpha 02 Mar 26", "Alpha 02 Mar 27"]}),
            "pull up Alpha 02 Mar 26",
        );
        assert!(r.get("platforms").is_none(), "{r}");
        let r = repair_search(
            &json!({"text": "2023-03-02", "startTime": "2026-03-02", "endTime": "2026-03-02"}),
            "I need the second day of exercise alpha - the 2nd of March one",
        );
        assert_eq!(r["open"], true, "{r}");
    }

    #[test]
    fn levers_parse_and_name_the_valid_words() {
        assert_eq!(Levers::parse("none").unwrap(), Levers::NONE);
        assert_eq!(Levers::parse("all").unwrap(), Levers::SMALL);
        let l = Levers::parse("parsing, state").unwrap();
        assert!(l.parsing && l.state_machine && !l.constraints && !l.compaction);
        let e = Levers::parse("parsing,routing").unwrap_err().to_string();
        assert!(e.contains("routing") && e.contains("compaction"), "{e}");
        assert_eq!(Levers::for_profile(Profile::Large), Levers::LARGE);
    }

    #[test]
    fn an_empty_search_says_how_to_search_again() {
        let r = json!({"matches": [], "total": 0, "criteriaApplied": ["text ~ \"a b c\""], "message": "No plots matched."}).to_string();
        let c: Value = serde_json::from_str(&compact_result(SEARCH, &r)).unwrap();
        assert!(c["hint"].as_str().unwrap().contains("fewer"));
        assert_eq!(c["message"], "No plots matched.");
        let r = json!({"matches": [{"plotId": "stac://a", "title": "A", "timeSpan": {"start": "s", "end": "e"}, "platforms": ["HMS Nelson"], "bbox": [1, 2, 3, 4]}], "total": 1, "criteriaApplied": []}).to_string();
        let c: Value = serde_json::from_str(&compact_result(SEARCH, &r)).unwrap();
        assert!(c.get("hint").is_none());
        assert_eq!(
            c["matches"][0],
            json!({"plotId": "stac://a", "title": "A", "timeSpan": {"start": "s", "end": "e"}, "platforms": ["HMS Nelson"]})
        );
    }

    #[test]
    fn a_listing_is_compacted_to_one_line_per_tool_keeping_ids_and_params() {
        let listing = json!([
            {"id": "set-track-color", "name": "Set colour", "description": "Set the line colour of tracks. Long explanation follows here.", "mutating": true,
             "parameters": [{"name": "color", "valueType": "string", "required": true, "description": "a colour"}], "category": "style"},
            {"id": "speed-filter", "name": "Speed filter", "description": "Find legs below a speed.", "mutating": false,
             "parameters": [{"name": "max_knots", "valueType": "number", "required": false, "defaultValue": 5}]}
        ])
        .to_string();
        let c = compact_result(LIST_TOOLS, &listing);
        assert!(
            c.contains(
                "- set-track-color — Set the line colour of tracks [edits the plot]; params: color*"
            ),
            "{c}"
        );
        assert!(
            c.contains("- speed-filter — Find legs below a speed [read-only]; params: max_knots"),
            "{c}"
        );
        assert!(!c.contains("Long explanation"));
        assert!(c.len() < listing.len());
        // Not JSON, or another tool: unchanged.
        assert_eq!(compact_result(LIST_TOOLS, "oops"), "oops");
        assert_eq!(compact_result(SUMMARIZE, &listing), listing);
    }

    fn tool_msg(n: usize, text: &str) -> Vec<Message> {
        let call = ToolCallRequest {
            id: format!("c{n}"),
            name: LIST_TOOLS.into(),
            arguments: "{}".into(),
        };
        vec![
            Message::assistant("", vec![call.clone()]),
            Message::tool(&call, text),
        ]
    }

    #[test]
    fn the_budget_drops_old_tool_results_first_then_old_exchanges() {
        let counter = TokenCounter::default();
        let big = "word ".repeat(400);
        let mut m = vec![Message::system("sys"), Message::user("first request")];
        m.extend(tool_msg(1, &big));
        m.push(Message::assistant("done", vec![]));
        m.push(Message::user("second request"));
        m.extend(tool_msg(2, &big));
        m.extend(tool_msg(3, &big));
        let total = messages_tokens(&counter, &m);
        // Fits: unchanged.
        assert_eq!(fit_to_budget(&counter, &m, total), m);
        // Room for one big result: the older two are dropped, the newest kept, order kept.
        let fitted = fit_to_budget(&counter, &m, total - 700);
        assert_eq!(fitted.len(), m.len());
        assert_eq!(fitted[3].content, DROPPED);
        assert_eq!(fitted[7].content, DROPPED);
        assert_eq!(fitted[9].content, big);
        assert!(messages_tokens(&counter, &fitted) <= total - 700);
        // Tighter than the newest result: earlier exchanges go, system and the current
        // utterance stay.
        let fitted = fit_to_budget(&counter, &m, 450);
        assert_eq!(fitted[0].content, "sys");
        assert_eq!(fitted[1].content, "second request");
        assert_eq!(fitted.last().unwrap().content, big);
    }
}
