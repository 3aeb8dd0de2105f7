//! `toolgate convert`: agent definitions between hosts.

use anyhow::{Result, bail};
use clap::Args;

/// Arguments of `toolgate convert`.
#[derive(Args, Debug)]
pub struct ConvertArgs {}

pub fn convert(_args: &ConvertArgs) -> Result<i32> {
    bail!("`toolgate convert` is not built yet (issue 6)")
}
