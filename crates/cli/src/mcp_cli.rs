//! `toolgate mcp` (stdio) and `toolgate serve` (streamable HTTP + workbench).

use anyhow::{Result, bail};
use clap::Args;

/// Arguments of `toolgate mcp`.
#[derive(Args, Debug)]
pub struct McpArgs {}

/// Arguments of `toolgate serve`.
#[derive(Args, Debug)]
pub struct ServeArgs {}

pub async fn mcp(_args: McpArgs) -> Result<i32> {
    bail!(
        "`toolgate mcp` is not built yet (issue 5); use `toolgate exec` or `toolgate plot` meanwhile"
    )
}

pub async fn serve(_args: ServeArgs) -> Result<i32> {
    bail!(
        "`toolgate serve` is not built yet (issue 5/8); use `toolgate exec` or `toolgate plot` meanwhile"
    )
}
