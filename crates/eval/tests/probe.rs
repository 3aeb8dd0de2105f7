//! The routing probe end to end: the agent loop against the scripted mock model over HTTP, every
//! call executed against a fresh world, scored strict / sequence / outcome. Four scripts per
//! scenario — (a) ground first then act, (b) act directly, (c) answer in prose, (d) a malformed
//! call, then the right one — give exactly the scores asserted here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use toolgate_agent::{HttpModel, ModelConfig, Provider, Stop};
use toolgate_eval::probe::{self, Metric, ProbeOptions, ProbeReport};
use toolgate_eval::scenario::{self, Scenario};
use toolgate_test_support::{MockModel, Reply, Script};

#[derive(Clone, Copy)]
enum Style {
    GroundThenAct,
    ActDirectly,
    Prose,
    Malformed,
}

fn routing() -> Vec<Scenario> {
    scenario::builtin()
        .unwrap()
        .into_iter()
        .filter(|s| s.tags.iter().any(|t| t == "routing"))
        .collect()
}

fn script(s: &Scenario, style: Style) -> Vec<Reply> {
    let (tool, input) = s.replay.last().unwrap();
    let act = Reply::tool(tool, input.clone());
    let done = Reply::text("Done.");
    match style {
        Style::GroundThenAct => {
            let t = &s.accept[0].tools;
            let mut v: Vec<Reply> = t[..t.len() - 1]
                .iter()
                .map(|g| Reply::tool(g, serde_json::json!({})))
                .collect();
            v.extend([act, done]);
            v
        }
        Style::ActDirectly => vec![act, done],
        Style::Prose => vec![Reply::text(
            "The plot probably has a few tracks; I can't say more.",
        )],
        Style::Malformed => vec![
            Reply::tool_raw(tool, "{\"toolId\": \"set-track-color\", "),
            act,
            done,
        ],
    }
}

async fn run(style: Style, priming: Vec<bool>, repeat: usize) -> (ProbeReport, MockModel) {
    let list = routing();
    let map: HashMap<String, Vec<Reply>> = list
        .iter()
        .map(|s| (s.utterance.clone(), script(s, style)))
        .collect();
    let mock = MockModel::start(Script::ByUtterance(map)).await.unwrap();
    let mut cfg = ModelConfig::new(Provider::OpenAi, mock.url(), "mock-model");
    cfg.timeout = Duration::from_secs(10);
    let opts = ProbeOptions {
        priming,
        repeat,
        ..ProbeOptions::default()
    };
    let report = probe::probe(&list, Arc::new(HttpModel::new(cfg)), &opts)
        .await
        .unwrap();
    (report, mock)
}

fn scores(r: &ProbeReport) -> (usize, usize, usize, usize) {
    let t = &r.totals[0];
    (t.strict, t.sequence, t.outcome, t.runs)
}

fn row<'a>(r: &'a ProbeReport, id: &str) -> &'a probe::Row {
    r.rows.iter().find(|x| x.scenario == id).unwrap()
}

#[tokio::test]
async fn a_ground_then_act() {
    let (r, _) = run(Style::GroundThenAct, vec![true], 1).await;
    // Two prompts (colour…, speed-filter…) ground first: strict penalises them, the sequence
    // and outcome scores do not.
    assert_eq!(scores(&r), (6, 8, 8, 8), "{}", r.markdown());
    let colour = row(&r, "routing-4-colour-submarine");
    assert_eq!((colour.strict, colour.sequence, colour.outcome), (0, 1, 1));
    assert_eq!(colour.tool_calls, 3);
    assert_eq!(colour.turns, 4);
    assert_eq!(r.totals[0].pass_k, 8);
    assert!(r.totals[0].prompt_tokens > 0 && r.totals[0].completion_tokens > 0);
    assert!((r.min_rate(Metric::Strict) - 0.75).abs() < 1e-9);
    assert!((r.min_rate(Metric::Outcome) - 1.0).abs() < 1e-9);
    let md = r.markdown();
    assert!(
        md.contains("| routing-4-colour-submarine | on | 0/1 | 1/1 | 1/1 | yes | 4 | 3 |"),
        "{md}"
    );
    assert!(
        md.contains("| on | 6/8 (75%) | 8/8 (100%) | 8/8 (100%) | 8/8 (100%) |"),
        "{md}"
    );
}

#[tokio::test]
async fn b_act_directly() {
    let (r, _) = run(Style::ActDirectly, vec![true], 1).await;
    assert_eq!(scores(&r), (8, 8, 8, 8), "{}", r.markdown());
}

#[tokio::test]
async fn c_prose_instead_of_calls() {
    let (r, _) = run(Style::Prose, vec![true], 1).await;
    assert_eq!(scores(&r), (0, 0, 0, 8), "{}", r.markdown());
    assert!(
        r.runs
            .iter()
            .all(|x| x.stop == Stop::Final && x.tool_calls == 0)
    );
    assert_eq!(r.totals[0].pass_k, 0);
}

#[tokio::test]
async fn d_malformed_then_corrected() {
    let (r, mock) = run(Style::Malformed, vec![true], 1).await;
    // The malformed first call fails strict and breaks the sequence; the loop's corrective
    // message lets the model recover, so the end state is still reached.
    assert_eq!(scores(&r), (0, 0, 8, 8), "{}", r.markdown());
    let corrected = mock
        .requests()
        .iter()
        .filter(|q| {
            q.body["messages"].as_array().unwrap().iter().any(|m| {
                m["role"] == "tool" && m["content"].as_str().unwrap().contains("not valid JSON")
            })
        })
        .count();
    assert!(corrected >= 8, "every scenario got the corrective message");
}

#[tokio::test]
async fn priming_both_with_repeats_reports_pass_k_per_variant() {
    let (r, mock) = run(Style::GroundThenAct, vec![false, true], 2).await;
    assert_eq!(r.totals.len(), 2);
    for t in &r.totals {
        assert_eq!((t.strict, t.sequence, t.outcome, t.runs), (12, 16, 16, 16));
        assert_eq!(t.pass_k, 8);
    }
    assert_eq!(r.runs.len(), 32);
    let reqs = mock.requests();
    let primed = reqs
        .iter()
        .filter(|q| q.body["messages"][0]["role"] == "system")
        .count();
    let unprimed = reqs
        .iter()
        .filter(|q| q.body["messages"][0]["role"] == "user")
        .count();
    assert_eq!(
        primed, unprimed,
        "half the requests carried the priming file"
    );
    assert!(primed > 0);
}
