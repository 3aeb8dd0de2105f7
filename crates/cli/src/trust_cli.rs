//! `toolgate trust [DIR]` / `toolgate untrust [DIR]`: record (or forget) that the user trusts a
//! workspace's project configuration (`.toolgate/config.toml` and `.toolgate/tools/`) to widen
//! their own, in `<user config dir>/trusted.toml` with a hash of those files; see
//! `toolgate_config::trust`. A change to the files makes the workspace untrusted again.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use toolgate_config::PROJECT_CONFIG;
use toolgate_config::trust::{self, TrustStatus, TrustStore};

use crate::paths;

#[derive(Args)]
pub struct TrustArgs {
    /// The workspace root (default: the current directory).
    dir: Option<PathBuf>,
}

fn workspace(args: &TrustArgs) -> Result<PathBuf> {
    let dir = match &args.dir {
        Some(d) => d.clone(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let root = dir
        .canonicalize()
        .with_context(|| format!("{}: no such workspace directory", dir.display()))?;
    anyhow::ensure!(root.is_dir(), "{}: not a directory", root.display());
    Ok(root)
}

/// `toolgate trust [DIR]`.
pub fn trust(args: &TrustArgs) -> Result<i32> {
    let root = workspace(args)?;
    let file = TrustStore::path_for(&paths::user_config());
    let mut store = TrustStore::load(&file)?;
    let digest = trust::project_digest(&root)?;
    let before = store.status(&root, &digest);
    store.trust(&root, digest);
    store.save()?;
    let what = if trust::has_project_config(&root) {
        format!(
            "{} and .toolgate/tools/ may now widen your configuration",
            root.join(PROJECT_CONFIG).display()
        )
    } else {
        format!(
            "{} has no project configuration yet; trusting it as it is (empty)",
            root.display()
        )
    };
    let note = match before {
        TrustStatus::Trusted => " (it was already trusted)",
        TrustStatus::Changed => " (re-trusted after a change)",
        TrustStatus::Untrusted => "",
    };
    eprintln!(
        "toolgate: {what}{note}; recorded in {}. Any change to them makes the workspace untrusted again.",
        file.display()
    );
    Ok(0)
}

/// `toolgate untrust [DIR]`.
pub fn untrust(args: &TrustArgs) -> Result<i32> {
    // An untrust of a folder that no longer exists still removes its entry (trusted paths are
    // absolute).
    let root = workspace(args).or_else(|e| {
        args.dir
            .as_deref()
            .and_then(|d| std::path::absolute(d).ok())
            .ok_or(e)
    })?;
    let file = TrustStore::path_for(&paths::user_config());
    let mut store = TrustStore::load(&file)?;
    if store.untrust(&root) {
        store.save()?;
        eprintln!(
            "toolgate: {} is no longer trusted; its project configuration may only narrow yours.",
            root.display()
        );
    } else {
        eprintln!(
            "toolgate: {} was not trusted ({}); nothing changed.",
            root.display(),
            file.display()
        );
    }
    Ok(0)
}
