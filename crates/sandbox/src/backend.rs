//! Which interpreter runs a program: monty (in-process or in a worker), or hyperlight when a
//! usable micro-VM guest exists.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Environment variables that choose the backend when none is requested explicitly, in order.
pub const BACKEND_ENV: [&str; 2] = ["TOOLGATE_BACKEND", "CODEACT_BACKEND"];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// Hyperlight when it is usable, else monty.
    #[default]
    Auto,
    Monty,
    Hyperlight,
}

impl Backend {
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Auto => "auto",
            Backend::Monty => "monty",
            Backend::Hyperlight => "hyperlight",
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A backend name that names no backend.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown backend \"{0}\": use auto, monty or hyperlight")]
pub struct UnknownBackend(pub String);

impl FromStr for Backend {
    type Err = UnknownBackend;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(Backend::Auto),
            "monty" => Ok(Backend::Monty),
            "hyperlight" => Ok(Backend::Hyperlight),
            other => Err(UnknownBackend(other.to_owned())),
        }
    }
}

/// The backend chosen, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selected {
    /// `Monty` or `Hyperlight`, never `Auto`.
    pub backend: Backend,
    /// One sentence for logs: what was asked and why this backend runs.
    pub reason: String,
}

/// Why the hyperlight backend cannot run a program here.
#[derive(Debug, thiserror::Error)]
pub enum HyperlightUnusable {
    #[error("hyperlight support is not compiled in (build with --features hyperlight)")]
    NotCompiledIn,
    #[error("hyperlight needs Linux KVM")]
    NotLinux,
    #[error("{} missing", device.display())]
    DeviceMissing { device: PathBuf },
    #[error("{} not accessible (permission denied; join the kvm group)", device.display())]
    DeviceDenied { device: PathBuf },
    #[error("{} cannot be opened: {source}", device.display())]
    DeviceOpen {
        device: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: unexpected KVM API version {version} (expected {expected})", device.display())]
    ApiVersion {
        device: PathBuf,
        version: i32,
        expected: i32,
    },
    #[error("KVM_CREATE_VM failed: {0}")]
    CreateVm(#[source] std::io::Error),
    #[error(
        "guest failed to start: no hyperlight Python guest ships with this build (the published hyperlight host crates are placeholders); KVM itself is usable"
    )]
    NoGuest,
}

/// Why no backend could be chosen.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// An environment variable names no backend.
    #[error("{var}: {source}")]
    BadEnv {
        var: &'static str,
        #[source]
        source: UnknownBackend,
    },
    #[error(
        "the hyperlight backend was requested ({requested_by}) but is unusable here: {why}. Use --backend monty (or auto)."
    )]
    HyperlightUnusable {
        requested_by: String,
        #[source]
        why: HyperlightUnusable,
    },
}

/// Whether the hyperlight backend can run a program here; the error says why not.
pub fn hyperlight_status() -> Result<(), HyperlightUnusable> {
    #[cfg(feature = "hyperlight")]
    {
        crate::hyperlight::probe()
    }
    #[cfg(not(feature = "hyperlight"))]
    {
        Err(HyperlightUnusable::NotCompiledIn)
    }
}

/// Pick the backend. An explicit `requested` backend wins; under `Auto`, `TOOLGATE_BACKEND`
/// then `CODEACT_BACKEND` (read through `env`) may name one. `auto` runs hyperlight only when it
/// is usable, else monty; an explicitly requested hyperlight that is unusable is an error that
/// says why.
pub fn detect(
    requested: Backend,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Selected, BackendError> {
    detect_with(requested, env, hyperlight_status)
}

pub(crate) fn detect_with(
    requested: Backend,
    env: impl Fn(&str) -> Option<String>,
    hyperlight: impl Fn() -> Result<(), HyperlightUnusable>,
) -> Result<Selected, BackendError> {
    let (backend, source) = if requested == Backend::Auto {
        let mut chosen = (Backend::Auto, "default".to_owned());
        for var in BACKEND_ENV {
            if let Some(value) = env(var).filter(|v| !v.trim().is_empty()) {
                let b = value
                    .parse::<Backend>()
                    .map_err(|source| BackendError::BadEnv { var, source })?;
                chosen = (b, format!("{var}={value}"));
                break;
            }
        }
        chosen
    } else {
        (requested, format!("--backend {requested}"))
    };
    match backend {
        Backend::Monty => Ok(Selected {
            backend: Backend::Monty,
            reason: format!("monty ({source})"),
        }),
        Backend::Hyperlight => match hyperlight() {
            Ok(()) => Ok(Selected {
                backend: Backend::Hyperlight,
                reason: format!("hyperlight ({source})"),
            }),
            Err(why) => Err(BackendError::HyperlightUnusable {
                requested_by: source,
                why,
            }),
        },
        Backend::Auto => match hyperlight() {
            Ok(()) => Ok(Selected {
                backend: Backend::Hyperlight,
                reason: format!("hyperlight (auto, {source})"),
            }),
            Err(why) => Ok(Selected {
                backend: Backend::Monty,
                reason: format!("monty (auto: hyperlight unusable: {why})"),
            }),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn explicit_wins_env_overrides_auto() {
        let usable = || Ok(());
        let unusable = || {
            Err(HyperlightUnusable::DeviceMissing {
                device: PathBuf::from("/dev/kvm"),
            })
        };
        let s = detect_with(Backend::Monty, |_| Some("hyperlight".into()), usable).unwrap();
        assert_eq!(s.backend, Backend::Monty);
        let s = detect_with(
            Backend::Auto,
            |k| (k == "CODEACT_BACKEND").then(|| "monty".into()),
            usable,
        )
        .unwrap();
        assert_eq!(s.backend, Backend::Monty);
        assert!(s.reason.contains("CODEACT_BACKEND"));
        let s = detect_with(
            Backend::Auto,
            |k| match k {
                "TOOLGATE_BACKEND" => Some("hyperlight".into()),
                _ => Some("monty".into()),
            },
            usable,
        )
        .unwrap();
        assert_eq!(
            s.backend,
            Backend::Hyperlight,
            "TOOLGATE_BACKEND comes first"
        );
        let s = detect_with(Backend::Auto, no_env, unusable).unwrap();
        assert_eq!(s.backend, Backend::Monty);
        assert!(s.reason.contains("/dev/kvm missing"), "{}", s.reason);
        let s = detect_with(Backend::Auto, no_env, usable).unwrap();
        assert_eq!(s.backend, Backend::Hyperlight);
        let err = detect_with(Backend::Hyperlight, no_env, unusable)
            .unwrap_err()
            .to_string();
        assert!(err.contains("/dev/kvm missing"), "{err}");
        let err = detect_with(Backend::Auto, |_| Some("cpython".into()), usable)
            .unwrap_err()
            .to_string();
        assert!(err.contains("TOOLGATE_BACKEND"), "{err}");
    }
}
