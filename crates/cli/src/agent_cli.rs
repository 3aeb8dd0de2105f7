//! `toolgate chat` and `toolgate eval`: the agent loop and the evaluation harness.

use anyhow::{Result, bail};
use clap::{Args, Subcommand};

/// Arguments of `toolgate chat`.
#[derive(Args, Debug)]
pub struct ChatArgs {}

/// `toolgate eval <command>`.
#[derive(Subcommand, Debug)]
pub enum EvalCommand {
    /// Replay scenarios with canned tool calls against the real registry and session.
    Replay,
}

pub async fn chat(_args: ChatArgs) -> Result<i32> {
    bail!("`toolgate chat` is not built yet (issue 7)")
}

pub async fn eval(_command: EvalCommand) -> Result<i32> {
    bail!("`toolgate eval` is not built yet (issue 7)")
}
