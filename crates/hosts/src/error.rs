//! Errors of the host integration, each with the file it concerns and what would work.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum HostsError {
    #[error("unknown host \"{0}\": use copilot, claude or vscode")]
    UnknownHost(String),

    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error(
        "{path}: not valid JSON ({source}); fix or remove the file, then run the command again"
    )]
    Json {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },

    #[error(
        "{path}: not valid JSON ({source}); fix or remove the file, then run the command again"
    )]
    Jsonc {
        path: PathBuf,
        #[source]
        source: crate::jsonedit::JsonEditError,
    },

    #[error("{path}: {message}")]
    JsonShape { path: PathBuf, message: String },

    #[error(
        "{path} already exists and toolgate did not write it; move it away (or merge it by hand) and run the install again"
    )]
    Conflict { path: PathBuf },

    #[error(
        "{path} was written by toolgate's {owner} install with other content (another backend or toolgate version); install with the same options as that one, or uninstall {owner} first"
    )]
    SharedDiffers { path: PathBuf, owner: String },

    #[error(
        "{path} was changed since toolgate installed it; toolgate will not overwrite your edits: move it away and run the install again"
    )]
    ModifiedSinceInstall { path: PathBuf },

    #[error("{path} lies outside the install locations ({allowed}); refusing to touch it")]
    OutsideRoots { path: PathBuf, allowed: String },

    #[error(
        "{path}: {link} is a symbolic link inside the install location {root}; toolgate does not follow links there because they can lead outside it. Replace the link by a real folder (or remove it) and run the command again"
    )]
    Symlink {
        path: PathBuf,
        link: PathBuf,
        root: PathBuf,
    },

    #[error("{path}: unreadable receipt ({message}); remove the files it lists by hand")]
    BadReceipt { path: PathBuf, message: String },

    #[error("the tools manifest is not usable: {0}")]
    Manifest(String),
}

impl HostsError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        HostsError::Io {
            path: path.into(),
            source,
        }
    }
}
