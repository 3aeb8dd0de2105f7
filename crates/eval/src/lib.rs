//! Evaluation harness: scenario replay, trajectory-scored routing probe, token budgets, CodeAct arm comparison.
//!
//! - [`scenario`]: scenarios as TOML data (`crates/eval/scenarios/*.toml`), validated at load
//!   (unknown tools and impossible assertions are errors with `file:line`).
//! - [`replay`]: canned calls against the real registry, policy and session (deterministic).
//! - [`probe`]: the agent loop live against a model, scored strict / sequence / outcome, pass^k.
//! - [`tokens`]: summary and tool-list token costs against 4k/8k/32k windows.
//! - [`arms`]: Copilot CLI JSONL transcripts of a baseline and a CodeAct arm, compared.

#![warn(unreachable_pub)]
pub mod arms;
pub mod fixture;
pub mod panel;
pub mod probe;
pub mod replay;
pub mod scenario;
pub mod score;
pub mod tokens;

pub use scenario::{Scenario, ScenarioError};

/// The scenario files shipped in `crates/eval/scenarios`, as `(file name, text)`.
pub const BUILTIN_SCENARIOS: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/scenarios.rs"));

#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    #[error("setting up a scenario: {0}")]
    Setup(String),
    #[error("the plot store: {0}")]
    Store(#[from] toolgate_plot::store::StoreError),
    #[error("{0}")]
    Input(String),
}
