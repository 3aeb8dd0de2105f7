//! `eval replay`: each scenario's canned calls against the real registry, policy and session,
//! then its end-state expectations. Deterministic; no model involved.

use serde::Serialize;
use toolgate_core::flow::{Answer, Scripted};
use toolgate_plot::debrief::Settings;

use crate::EvalError;
use crate::fixture::Fixture;
use crate::scenario::Scenario;
use crate::score::{self, CallView, Ended};

/// Answers confirmations from the scenario's list, approving once it runs out.
pub fn scripted_confirmer(answers: &[Answer]) -> Scripted {
    Scripted::new(answers.iter().copied()).then(Answer::Approve)
}

#[derive(Debug, Clone, Serialize)]
pub struct ReplayResult {
    pub id: String,
    pub utterance: String,
    pub calls: Vec<String>,
    pub passed: bool,
    pub failures: Vec<String>,
}

pub async fn replay_one(s: &Scenario) -> Result<ReplayResult, EvalError> {
    let fx = Fixture::build(
        s,
        Settings {
            surface: "eval".to_owned(),
            active_model: "replay".to_owned(),
            ..Settings::default()
        },
    )
    .await?;
    let confirmer = scripted_confirmer(&s.confirm);
    let mut calls = Vec::new();
    let mut results = Vec::new();
    for (tool, input) in &s.replay {
        let (dispatched, result) = match fx.debrief.call(tool, input, &confirmer).await {
            Ok(r) => (true, r.text),
            Err(refusal) => (false, refusal.message),
        };
        calls.push(CallView {
            tool: tool.clone(),
            input: input.clone(),
            dispatched,
        });
        results.push(result);
    }
    let mut failures = Vec::new();
    if !score::sequence_ok(s, &calls) {
        failures.push("the canned calls do not follow an accepted trajectory".to_owned());
    }
    failures.extend(score::check(
        s,
        &fx,
        &Ended {
            calls: &calls,
            results: &results,
            asked: confirmer.asked().len(),
            ask: None,
        },
    ));
    if !failures.is_empty() {
        for (c, r) in calls.iter().zip(&results) {
            failures.push(format!("{} → {}", c.tool, clip(r, 300)));
        }
    }
    Ok(ReplayResult {
        id: s.id.clone(),
        utterance: s.utterance.clone(),
        calls: calls.iter().map(|c| c.tool.clone()).collect(),
        passed: failures.is_empty(),
        failures,
    })
}

pub(crate) fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_owned()
    } else {
        format!("{}…", s.chars().take(n).collect::<String>())
    }
}

pub async fn replay_all(list: &[Scenario]) -> Result<Vec<ReplayResult>, EvalError> {
    let mut out = Vec::new();
    for s in list {
        out.push(replay_one(s).await?);
    }
    Ok(out)
}

pub fn markdown(results: &[ReplayResult]) -> String {
    let mut md = String::from("| scenario | calls | result |\n|---|---|---|\n");
    for r in results {
        md.push_str(&format!(
            "| {} | {} | {} |\n",
            r.id,
            r.calls.join(" → "),
            if r.passed {
                "pass".to_owned()
            } else {
                format!(
                    "FAIL: {}",
                    r.failures.join("; ").replace('|', "\\|").replace('\n', " ")
                )
            }
        ));
    }
    let passed = results.iter().filter(|r| r.passed).count();
    md.push_str(&format!("\n{passed}/{} scenarios passed.\n", results.len()));
    md
}
