//! `toolgate install`, `uninstall`, `doctor` and `hook`: host integration.

use anyhow::{Result, bail};
use clap::{Args, Subcommand};

/// Arguments of `toolgate install`.
#[derive(Args, Debug)]
pub struct InstallArgs {}

/// Arguments of `toolgate uninstall`.
#[derive(Args, Debug)]
pub struct UninstallArgs {}

/// Arguments of `toolgate doctor`.
#[derive(Args, Debug)]
pub struct DoctorArgs {}

/// `toolgate hook <event>`.
#[derive(Subcommand, Debug)]
pub enum HookCommand {
    /// Answer a host's pre-tool-use hook (payload on stdin, decision on stdout).
    PreToolUse,
}

pub async fn install(_args: InstallArgs) -> Result<i32> {
    bail!("`toolgate install` is not built yet (issue 6)")
}

pub async fn uninstall(_args: UninstallArgs) -> Result<i32> {
    bail!("`toolgate uninstall` is not built yet (issue 6)")
}

pub async fn doctor(_args: DoctorArgs) -> Result<i32> {
    bail!("`toolgate doctor` is not built yet (issue 6)")
}

pub fn hook(_command: HookCommand) -> Result<i32> {
    bail!("`toolgate hook` is not built yet (issue 6)")
}
