//! Where toolgate keeps its files: your plots, the demo store and telemetry. Every location can
//! be moved by an environment variable, so tests and CI never touch a real home directory.

use std::path::PathBuf;

/// `TOOLGATE_DATA_DIR`, else `$XDG_DATA_HOME/toolgate`, else `~/.local/share/toolgate`.
pub fn data_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("TOOLGATE_DATA_DIR") {
        return PathBuf::from(d);
    }
    if let Some(d) = std::env::var_os("XDG_DATA_HOME") {
        return PathBuf::from(d).join("toolgate");
    }
    home().join(".local/share/toolgate")
}

/// Your own plots: the folder store `toolgate import` writes to when no `--store` is given,
/// `<data dir>/plots` — kept apart from the built-in demo plots (`<data dir>/demo-store`).
pub fn user_store_dir() -> PathBuf {
    data_dir().join("plots")
}

/// The built-in demo plots' folder store, `<data dir>/demo-store`.
pub fn demo_store_dir() -> PathBuf {
    data_dir().join("demo-store")
}

/// `TOOLGATE_TELEMETRY` (a file path), else `<data dir>/telemetry.jsonl`.
pub fn telemetry_file() -> PathBuf {
    std::env::var_os("TOOLGATE_TELEMETRY")
        .map(PathBuf::from)
        .unwrap_or_else(|| data_dir().join("telemetry.jsonl"))
}

fn home() -> PathBuf {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// The user config file: `TOOLGATE_CONFIG`, else `$XDG_CONFIG_HOME/toolgate/config.toml`, else
/// `~/.config/toolgate/config.toml`.
pub fn user_config() -> PathBuf {
    if let Some(p) = std::env::var_os("TOOLGATE_CONFIG") {
        return PathBuf::from(p);
    }
    default_user_config()
}

/// The user config file's usual place, whatever `TOOLGATE_CONFIG` says: the hook reads its
/// mode from here too, so pointing `TOOLGATE_CONFIG` elsewhere cannot weaken it.
pub fn default_user_config() -> PathBuf {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| home().join(".config"));
    base.join("toolgate/config.toml")
}

/// The confiner for child processes toolgate starts itself (upstream servers): this binary's
/// `__confine` stages, when the machine can confine (`None` otherwise, or with
/// `TOOLGATE_CONFINEMENT=off`).
pub fn confiner() -> Option<toolgate_confine::Confiner> {
    if std::env::var_os("TOOLGATE_CONFINEMENT").is_some_and(|v| v == "off") {
        return None;
    }
    std::env::current_exe()
        .ok()
        .and_then(|exe| toolgate_confine::Confiner::detect(exe).ok())
}
