//! Scoring a run: strict (the first call is a terminal call), sequence (the calls up to the
//! terminal follow an accepted trajectory: only its grounding tools, in order, repeats allowed),
//! and outcome (the end state satisfies the scenario's expectations).

use serde::Serialize;
use serde_json::Value;

use crate::fixture::Fixture;
use crate::scenario::{Scenario, Trajectory, subset};

/// One call as scored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallView {
    pub tool: String,
    pub input: Value,
    /// False for a call to an unknown tool or with malformed arguments.
    pub dispatched: bool,
}

fn is_terminal(t: &Trajectory, c: &CallView) -> bool {
    c.dispatched
        && c.tool == t.terminal()
        && t.terminal_input
            .as_ref()
            .is_none_or(|want| subset(want, &c.input))
}

/// The first call is a valid terminal call of some accepted trajectory.
pub fn strict(s: &Scenario, calls: &[CallView]) -> bool {
    calls
        .first()
        .is_some_and(|c| s.accept.iter().any(|t| is_terminal(t, c)))
}

/// Some accepted trajectory is followed up to its terminal call.
pub fn sequence_ok(s: &Scenario, calls: &[CallView]) -> bool {
    s.accept.iter().any(|t| {
        let Some(k) = calls.iter().position(|c| is_terminal(t, c)) else {
            return false;
        };
        let grounding = &t.tools[..t.tools.len() - 1];
        let mut at = 0usize;
        calls[..k].iter().all(|c| {
            if !c.dispatched {
                return false;
            }
            match grounding[at..].iter().position(|g| *g == c.tool) {
                Some(i) => {
                    at += i;
                    true
                }
                None => false,
            }
        })
    })
}

/// What a run left behind, for the expectations.
pub struct Ended<'a> {
    pub calls: &'a [CallView],
    pub results: &'a [String],
    pub asked: usize,
    /// The question or refusal the panel made in code, when the run ended in one.
    pub ask: Option<&'a toolgate_agent::Ask>,
}

/// A question or refusal the panel made in code, in the gate's own words for the refusal of
/// the same kind, followed by what the analyst was shown. A fail-safe scenario expects the
/// gate's refusal in a tool result ("Nothing is selected.", "is ambiguous", "Unknown tool id");
/// the small profile asks before any call instead, so the same fact reaching the analyst from
/// the panel counts as the same outcome. Decided before the panel set's second measurement
/// (docs/local-model-eval.md says so): fail-safes score safety (the other expectations:
/// nothing changed, nothing asked) plus the question reaching the analyst.
pub fn gate_words(ask: &toolgate_agent::Ask) -> String {
    use toolgate_agent::Ask;
    match ask {
        Ask::WhichFeature { .. } => format!("Nothing is selected. {ask}"),
        Ask::Ambiguous { phrase, candidates } => format!(
            "\"{phrase}\" is ambiguous — matches {}: {}. {ask}",
            candidates.len(),
            candidates.join(", ")
        ),
        Ask::InventedTool { id, .. } => format!("Unknown tool id \"{id}\". {ask}"),
        Ask::OtherPlot { id, open: true, .. } => {
            format!("The plot \"{id}\" is open but not focused. {ask}")
        }
        Ask::OtherPlot { id, .. } => format!("No open plot matches \"{id}\". {ask}"),
        Ask::WhichWindow { .. } => {
            format!(
                "missing required parameter \"start_time\"; missing required parameter \"end_time\". {ask}"
            )
        }
    }
}

/// Unmet expectations, in words (empty = outcome reached).
pub fn check(s: &Scenario, fx: &Fixture, ended: &Ended<'_>) -> Vec<String> {
    let mut out = Vec::new();
    let e = &s.expect;
    let terminals = s.terminals();
    let asked_back = ended.ask.map(gate_words);
    let terminal_results: Vec<&str> = ended
        .calls
        .iter()
        .zip(ended.results)
        .filter(|(c, _)| c.dispatched && terminals.contains(c.tool.as_str()))
        .map(|(_, r)| r.as_str())
        .chain(asked_back.as_deref())
        .collect();
    for needle in &e.result_contains {
        let n = needle.to_lowercase();
        if !terminal_results
            .iter()
            .any(|r| r.to_lowercase().contains(&n))
        {
            out.push(format!(
                "no result of {} contains \"{needle}\"",
                terminals.iter().copied().collect::<Vec<_>>().join("/")
            ));
        }
    }
    for needle in &e.result_not_contains {
        let n = needle.to_lowercase();
        if terminal_results
            .iter()
            .any(|r| r.to_lowercase().contains(&n))
        {
            out.push(format!("a result contains \"{needle}\""));
        }
    }
    let session = fx.debrief.session();
    let active = session.active_id().map(str::to_owned);
    if let Some(want) = &e.active_plot
        && active.as_ref() != Some(want)
    {
        out.push(format!("the active plot is {active:?}, not \"{want}\""));
    }
    let subject = e.active_plot.clone().or(active);
    let plot = subject.as_deref().and_then(|id| session.plot(id).ok());
    if let Some(want) = e.dirty {
        let dirty = plot.is_some_and(|p| p.doc.is_dirty());
        if dirty != want {
            out.push(format!("dirty is {dirty}, expected {want}"));
        }
    }
    if let Some(want) = e.unchanged {
        let unchanged = match (plot, &fx.initial_doc) {
            (Some(p), Some((id, bytes))) if &p.id == id => p.doc.to_bytes() == *bytes,
            (None, None) => true,
            (Some(p), None) => !p.doc.is_dirty(),
            _ => false,
        };
        if unchanged != want {
            out.push(format!("unchanged is {unchanged}, expected {want}"));
        }
    }
    for f in &e.feature {
        let got = plot
            .and_then(|p| p.doc.feature(&f.id))
            .and_then(|v| v.pointer(&f.pointer))
            .cloned();
        if got.as_ref() != Some(&f.equals) {
            out.push(format!(
                "feature {} {} is {}, expected {}",
                f.id,
                f.pointer,
                got.map_or_else(|| "absent".to_owned(), |v| v.to_string()),
                f.equals
            ));
        }
    }
    drop(session);
    if let Some(n) = e.asked
        && ended.asked != n
    {
        out.push(format!(
            "{} confirmation(s) asked, expected {n}",
            ended.asked
        ));
    }
    if let Some(n) = e.datasets {
        let got = fx.debrief.datasets().len();
        if got != n {
            out.push(format!(
                "{got} dataset(s) in the Results panel, expected {n}"
            ));
        }
    }
    if e.disk_untouched && fx.disk_hash() != fx.disk_before {
        out.push("files in the store changed on disk".to_owned());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::parse;
    use serde_json::json;
    use std::path::Path;

    fn scenario() -> Scenario {
        parse(
            Path::new("s.toml"),
            r#"
utterance = "colour the submarine track red"
[initial]
store = "demo"
open = ["stac://demo/alpha-day1/item.json"]
[[accept]]
tools = ["debrief_summarizeCurrentPlot", "debrief_listTools", "debrief_runTool"]
terminal_input = { toolId = "set-track-color" }
[[replay]]
tool = "debrief_runTool"
input = { toolId = "set-track-color", params = { color = "red" }, featureNames = ["Contact"] }
[expect]
dirty = true
"#,
        )
        .unwrap()
    }

    fn c(tool: &str, input: Value) -> CallView {
        CallView {
            tool: format!("debrief_{tool}"),
            input,
            dispatched: true,
        }
    }

    #[test]
    fn a_question_asked_in_code_carries_the_gates_words_for_the_same_refusal() {
        use toolgate_agent::Ask;
        let names = vec!["HMS Nelson".to_owned(), "HMS Collingwood".to_owned()];
        let which = gate_words(&Ask::WhichFeature {
            what: "track".into(),
            candidates: names.clone(),
        });
        assert!(
            which.starts_with("Nothing is selected. Which track? HMS Nelson or HMS Collingwood"),
            "{which}"
        );
        let amb = gate_words(&Ask::Ambiguous {
            phrase: "HMS".into(),
            candidates: names,
        });
        for needle in ["is ambiguous", "HMS Nelson", "HMS Collingwood"] {
            assert!(amb.contains(needle), "{amb}");
        }
        let inv = gate_words(&Ask::InventedTool {
            id: "wake-analysis".into(),
            nearest: vec!["range-calc".into()],
        });
        assert!(
            inv.starts_with("Unknown tool id \"wake-analysis\"."),
            "{inv}"
        );
    }

    #[test]
    #[allow(clippy::redundant_clone, clippy::cloned_ref_to_slice_refs)]
    fn strict_and_sequence() {
        let s = scenario();
        let run = c("runTool", json!({"toolId": "set-track-color"}));
        let sum = c("summarizeCurrentPlot", json!({}));
        let list = c("listTools", json!({}));
        assert!(strict(&s, &[run.clone()]));
        assert!(sequence_ok(&s, &[run.clone()]));
        assert!(!strict(&s, &[sum.clone(), run.clone()]));
        assert!(sequence_ok(&s, &[sum.clone(), list.clone(), run.clone()]));
        assert!(
            sequence_ok(
                &s,
                &[
                    sum.clone(),
                    sum.clone(),
                    list.clone(),
                    list.clone(),
                    run.clone()
                ]
            ),
            "repeats are fine"
        );
        assert!(
            !sequence_ok(&s, &[list.clone(), sum.clone(), run.clone()]),
            "order matters"
        );
        assert!(
            !sequence_ok(&s, &[c("searchPlots", json!({})), run.clone()]),
            "not a grounding step here"
        );
        assert!(
            !sequence_ok(&s, &[sum.clone(), list.clone()]),
            "the terminal was never called"
        );
        let wrong = c("runTool", json!({"toolId": "track-stats"}));
        assert!(!strict(&s, &[wrong.clone()]));
        assert!(
            sequence_ok(&s, &[sum.clone(), run.clone(), wrong]),
            "calls after the terminal do not count"
        );
        let mut bad = run.clone();
        bad.dispatched = false;
        assert!(!strict(&s, &[bad.clone(), run.clone()]));
        assert!(
            !sequence_ok(&s, &[bad, run]),
            "an invalid call breaks the sequence"
        );
        assert!(!strict(&s, &[]));
    }
}
