//! `eval probe`: the agent loop live, per scenario × priming × repeat, every call executed
//! against a fresh copy of the scenario's world, scored three ways side by side — strict (first
//! call), sequence (trajectory with a valid grounding prefix) and outcome (end state) — with
//! pass^k over repeats, turns, tool calls, tokens and wall time.

use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;
use toolgate_agent::{
    AgentConfig, AgentLoop, CallStatus, Conversation, ModelClient, Stop, surface_settings,
};

use crate::EvalError;
use crate::fixture::Fixture;
use crate::replay::scripted_confirmer;
use crate::scenario::Scenario;
use crate::score::{self, CallView, Ended};

#[derive(Debug, Clone)]
pub struct ProbeOptions {
    /// Priming variants to run (e.g. `[true]`, `[false]`, `[false, true]`).
    pub priming: Vec<bool>,
    pub repeat: usize,
    pub agent: AgentConfig,
    /// Write a JSONL transcript per run here.
    pub transcripts: Option<PathBuf>,
}

impl Default for ProbeOptions {
    fn default() -> Self {
        Self {
            priming: vec![true],
            repeat: 1,
            agent: AgentConfig::default(),
            transcripts: None,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct ProbeRun {
    pub scenario: String,
    pub priming: bool,
    pub repeat: usize,
    pub strict: bool,
    pub sequence: bool,
    pub outcome: bool,
    pub calls: Vec<String>,
    pub turns: usize,
    pub tool_calls: usize,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub wall_ms: f64,
    pub stop: Stop,
    pub failures: Vec<String>,
    /// What the final reply claimed that the run's tool results do not support
    /// ([`toolgate_agent::grounded::false_claims`]): numbers from nowhere, changes never made.
    pub false_claims: Vec<String>,
}

/// One scenario under one priming setting, over its repeats.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub scenario: String,
    pub priming: bool,
    pub runs: usize,
    pub strict: usize,
    pub sequence: usize,
    pub outcome: usize,
    /// The outcome was reached in every repeat.
    pub pass_k: bool,
    pub turns: usize,
    pub tool_calls: usize,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub wall_ms: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Totals {
    pub priming: bool,
    pub scenarios: usize,
    pub runs: usize,
    pub strict: usize,
    pub sequence: usize,
    pub outcome: usize,
    pub pass_k: usize,
    pub strict_rate: f64,
    pub sequence_rate: f64,
    pub outcome_rate: f64,
    pub pass_k_rate: f64,
    pub turns: usize,
    pub tool_calls: usize,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub wall_ms: f64,
    /// Median wall time of one run (one prompt, one repeat).
    pub median_wall_ms: f64,
    /// Runs that ended on a model error (a timeout, an HTTP 400 for an over-long context, …).
    pub model_errors: usize,
    /// Runs that ended at the turn limit.
    pub turn_limits: usize,
    /// Runs whose final reply made at least one false claim.
    pub false_claims: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct ProbeReport {
    pub model: String,
    pub repeat: usize,
    pub rows: Vec<Row>,
    pub totals: Vec<Totals>,
    pub runs: Vec<ProbeRun>,
}

fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        f64::midpoint(v[n / 2 - 1], v[n / 2])
    }
}

#[allow(clippy::cast_precision_loss)]
fn rate(n: usize, d: usize) -> f64 {
    if d == 0 { 0.0 } else { n as f64 / d as f64 }
}

pub async fn run_one(
    s: &Scenario,
    client: Arc<dyn ModelClient>,
    priming: bool,
    repeat: usize,
    opts: &ProbeOptions,
) -> Result<ProbeRun, EvalError> {
    let fx = Fixture::build(s, surface_settings("eval", client.model_id(), priming)).await?;
    let agent = AgentLoop::new(
        client,
        fx.debrief.clone(),
        AgentConfig {
            priming,
            ..opts.agent
        },
    );
    let id = format!(
        "{}-{}-{repeat}",
        s.id,
        if priming { "primed" } else { "unprimed" }
    );
    let mut conv = Conversation::new(id);
    if let Some(dir) = &opts.transcripts {
        conv = conv.with_transcript(dir).map_err(|e| {
            EvalError::Setup(format!("creating a transcript in {}: {e}", dir.display()))
        })?;
    }
    let confirmer = scripted_confirmer(&s.confirm);
    let versions = plot_versions(&fx);
    let out = agent.run(&mut conv, &s.utterance, &confirmer, |_| {}).await;
    let applied = plot_versions(&fx) != versions;
    let turn: Vec<toolgate_agent::grounded::TurnCall<'_>> = out
        .calls
        .iter()
        .filter(|c| c.status == CallStatus::Dispatched)
        .map(|c| toolgate_agent::grounded::TurnCall {
            tool: &c.tool,
            status: c.outcome,
            result: &c.result,
        })
        .collect();
    let false_claims: Vec<String> = out
        .final_text
        .as_deref()
        .map(|text| {
            toolgate_agent::grounded::false_claims(text, &s.utterance, &turn, applied)
                .iter()
                .map(ToString::to_string)
                .collect()
        })
        .unwrap_or_default();
    let calls: Vec<CallView> = out
        .calls
        .iter()
        .map(|c| CallView {
            tool: c.tool.clone(),
            input: c.input.clone(),
            dispatched: c.status == CallStatus::Dispatched,
        })
        .collect();
    let results: Vec<String> = out.calls.iter().map(|c| c.result.clone()).collect();
    let failures = score::check(
        s,
        &fx,
        &Ended {
            calls: &calls,
            results: &results,
            asked: confirmer.asked().len(),
            ask: out.ask.as_ref(),
        },
    );
    Ok(ProbeRun {
        scenario: s.id.clone(),
        priming,
        repeat,
        strict: score::strict(s, &calls),
        sequence: score::sequence_ok(s, &calls),
        outcome: failures.is_empty(),
        calls: calls.iter().map(|c| c.tool.clone()).collect(),
        turns: out.turns,
        tool_calls: out.calls.len(),
        prompt_tokens: out.usage.prompt_tokens,
        completion_tokens: out.usage.completion_tokens,
        wall_ms: out.wall_ms,
        stop: out.stop,
        failures,
        false_claims,
    })
}

fn plot_versions(fx: &Fixture) -> Vec<(String, u64)> {
    fx.debrief
        .session()
        .open_plots()
        .iter()
        .map(|p| (p.id.clone(), p.doc.version()))
        .collect()
}

/// Where a probe stands, for a surface that shows progress (a probe runs for minutes).
#[derive(Debug, Clone, Copy)]
pub enum Progress<'a> {
    /// Run `index` (0-based) of `total` starts: `scenario`, repeat `repeat` (0-based).
    Start {
        index: usize,
        total: usize,
        scenario: &'a str,
        repeat: usize,
    },
    /// A run ended.
    Done(&'a ProbeRun),
}

pub async fn probe(
    list: &[Scenario],
    client: Arc<dyn ModelClient>,
    opts: &ProbeOptions,
) -> Result<ProbeReport, EvalError> {
    probe_with_progress(list, client, opts, &mut |_| {}).await
}

/// [`probe`], telling `progress` when each run starts and ends.
pub async fn probe_with_progress(
    list: &[Scenario],
    client: Arc<dyn ModelClient>,
    opts: &ProbeOptions,
    progress: &mut (dyn FnMut(Progress<'_>) + Send),
) -> Result<ProbeReport, EvalError> {
    let mut runs = Vec::new();
    let repeat = opts.repeat.max(1);
    let total = opts.priming.len() * list.len() * repeat;
    let mut index = 0;
    for &priming in &opts.priming {
        for s in list {
            for r in 0..repeat {
                progress(Progress::Start {
                    index,
                    total,
                    scenario: &s.id,
                    repeat: r,
                });
                index += 1;
                let run = run_one(s, client.clone(), priming, r, opts).await?;
                progress(Progress::Done(&run));
                tracing::info!(scenario = %s.id, priming, repeat = r, strict = run.strict, sequence = run.sequence, outcome = run.outcome, "probe run");
                runs.push(run);
            }
        }
    }
    let mut rows = Vec::new();
    let mut totals = Vec::new();
    for &priming in &opts.priming {
        let mut t = Totals {
            priming,
            scenarios: 0,
            runs: 0,
            strict: 0,
            sequence: 0,
            outcome: 0,
            pass_k: 0,
            strict_rate: 0.0,
            sequence_rate: 0.0,
            outcome_rate: 0.0,
            pass_k_rate: 0.0,
            turns: 0,
            tool_calls: 0,
            prompt_tokens: 0,
            completion_tokens: 0,
            wall_ms: 0.0,
            median_wall_ms: 0.0,
            model_errors: 0,
            turn_limits: 0,
            false_claims: 0,
        };
        let mut walls: Vec<f64> = Vec::new();
        for s in list {
            let mine: Vec<&ProbeRun> = runs
                .iter()
                .filter(|r| r.priming == priming && r.scenario == s.id)
                .collect();
            let row = Row {
                scenario: s.id.clone(),
                priming,
                runs: mine.len(),
                strict: mine.iter().filter(|r| r.strict).count(),
                sequence: mine.iter().filter(|r| r.sequence).count(),
                outcome: mine.iter().filter(|r| r.outcome).count(),
                pass_k: !mine.is_empty() && mine.iter().all(|r| r.outcome),
                turns: mine.iter().map(|r| r.turns).sum(),
                tool_calls: mine.iter().map(|r| r.tool_calls).sum(),
                prompt_tokens: mine.iter().map(|r| r.prompt_tokens).sum(),
                completion_tokens: mine.iter().map(|r| r.completion_tokens).sum(),
                wall_ms: mine.iter().map(|r| r.wall_ms).sum(),
            };
            t.scenarios += 1;
            t.runs += row.runs;
            t.strict += row.strict;
            t.sequence += row.sequence;
            t.outcome += row.outcome;
            t.pass_k += usize::from(row.pass_k);
            t.turns += row.turns;
            t.tool_calls += row.tool_calls;
            t.prompt_tokens += row.prompt_tokens;
            t.completion_tokens += row.completion_tokens;
            t.wall_ms += row.wall_ms;
            t.model_errors += mine
                .iter()
                .filter(|r| matches!(r.stop, Stop::ModelError { .. }))
                .count();
            t.turn_limits += mine.iter().filter(|r| r.stop == Stop::TurnLimit).count();
            t.false_claims += mine.iter().filter(|r| !r.false_claims.is_empty()).count();
            walls.extend(mine.iter().map(|r| r.wall_ms));
            rows.push(row);
        }
        t.median_wall_ms = median(&mut walls);
        t.strict_rate = rate(t.strict, t.runs);
        t.sequence_rate = rate(t.sequence, t.runs);
        t.outcome_rate = rate(t.outcome, t.runs);
        t.pass_k_rate = rate(t.pass_k, t.scenarios);
        totals.push(t);
    }
    Ok(ProbeReport {
        model: client.model_id().to_owned(),
        repeat,
        rows,
        totals,
        runs,
    })
}

/// Which score a threshold applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    Strict,
    Sequence,
    Outcome,
    PassK,
}

impl ProbeReport {
    /// The lowest rate of `metric` over the priming variants.
    pub fn min_rate(&self, metric: Metric) -> f64 {
        self.totals
            .iter()
            .map(|t| match metric {
                Metric::Strict => t.strict_rate,
                Metric::Sequence => t.sequence_rate,
                Metric::Outcome => t.outcome_rate,
                Metric::PassK => t.pass_k_rate,
            })
            .fold(f64::INFINITY, f64::min)
    }

    pub fn markdown(&self) -> String {
        let k = self.repeat;
        let mut md = format!(
            "# Routing probe — model `{}`, {k} repeat(s)\n\n| scenario | priming | strict | sequence | outcome | pass^{k} | turns | tool calls | prompt tok | completion tok | wall ms |\n|---|---|---:|---:|---:|:---:|---:|---:|---:|---:|---:|\n",
            self.model
        );
        for r in &self.rows {
            md.push_str(&format!(
                "| {} | {} | {}/{} | {}/{} | {}/{} | {} | {} | {} | {} | {} | {:.0} |\n",
                r.scenario,
                if r.priming { "on" } else { "off" },
                r.strict,
                r.runs,
                r.sequence,
                r.runs,
                r.outcome,
                r.runs,
                if r.pass_k { "yes" } else { "no" },
                r.turns,
                r.tool_calls,
                r.prompt_tokens,
                r.completion_tokens,
                r.wall_ms
            ));
        }
        md.push_str("\n| priming | strict | sequence | outcome | pass^k | turns | tool calls | prompt tok | completion tok | wall ms | median wall ms | model errors | turn limits | false claims |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for t in &self.totals {
            md.push_str(&format!(
                "| {} | {}/{} ({:.0}%) | {}/{} ({:.0}%) | {}/{} ({:.0}%) | {}/{} ({:.0}%) | {} | {} | {} | {} | {:.0} | {:.0} | {} | {} | {} |\n",
                if t.priming { "on" } else { "off" },
                t.strict,
                t.runs,
                t.strict_rate * 100.0,
                t.sequence,
                t.runs,
                t.sequence_rate * 100.0,
                t.outcome,
                t.runs,
                t.outcome_rate * 100.0,
                t.pass_k,
                t.scenarios,
                t.pass_k_rate * 100.0,
                t.turns,
                t.tool_calls,
                t.prompt_tokens,
                t.completion_tokens,
                t.wall_ms,
                t.median_wall_ms,
                t.model_errors,
                t.turn_limits,
                t.false_claims
            ));
        }
        md
    }
}
