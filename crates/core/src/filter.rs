//! Which tools are exposed: allow/deny lists from a config file and the environment.
//!
//! Precedence: the environment wins over the config file. `TOOLGATE_TOOLS` (or the CodeAct
//! anchor's `CODEACT_TOOLS`) replaces the config's allow list; `TOOLGATE_DISABLE` (or
//! `CODEACT_DISABLE`) adds to the deny list; a tool named in the env allow list is not denied by
//! the config file, and a tool named in the env deny list is denied whatever the config says.

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// Names of the environment variables the filter reads.
pub const ENV_TOOLS: &str = "TOOLGATE_TOOLS";
pub const ENV_DISABLE: &str = "TOOLGATE_DISABLE";
pub const ENV_TOOLS_COMPAT: &str = "CODEACT_TOOLS";
pub const ENV_DISABLE_COMPAT: &str = "CODEACT_DISABLE";

#[derive(Debug, thiserror::Error)]
pub enum FilterError {
    #[error("could not read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: invalid value for key `{key}`: {message}")]
    Key {
        path: PathBuf,
        key: String,
        message: String,
    },
    #[error("{path}: not valid TOML: {message}")]
    Parse { path: PathBuf, message: String },
}

/// Allow/deny selection of tool ids. Patterns are exact ids, or a prefix followed by `*`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolFilter {
    allow: Option<Vec<String>>,
    deny: Vec<String>,
    /// Ids the environment explicitly allowed: the config's deny list does not apply to them.
    env_allowed: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolsTable {
    #[serde(default)]
    allow: Option<Vec<String>>,
    #[serde(default)]
    deny: Vec<String>,
}

impl ToolFilter {
    /// Everything allowed.
    pub fn allow_all() -> Self {
        Self::default()
    }

    pub fn new(allow: Option<Vec<String>>, deny: Vec<String>) -> Self {
        Self {
            allow,
            deny,
            env_allowed: Vec::new(),
        }
    }

    /// Read the `[tools]` table (`allow = [...]`, `deny = [...]`) of a TOML config file. Other
    /// tables are ignored here; they belong to other parts of the config.
    pub fn from_config_str(path: &Path, text: &str) -> Result<Self, FilterError> {
        let doc: toml::Table = toml::from_str(text).map_err(|e| FilterError::Parse {
            path: path.to_owned(),
            message: e.message().to_owned(),
        })?;
        let Some(tools) = doc.get("tools") else {
            return Ok(Self::allow_all());
        };
        let table: ToolsTable =
            tools
                .clone()
                .try_into()
                .map_err(|e: toml::de::Error| FilterError::Key {
                    path: path.to_owned(),
                    key: "tools".to_owned(),
                    message: e.message().to_owned(),
                })?;
        Ok(Self::new(table.allow, table.deny))
    }

    pub fn from_config_file(path: &Path) -> Result<Self, FilterError> {
        let text = std::fs::read_to_string(path).map_err(|source| FilterError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::from_config_str(path, &text)
    }

    /// Apply environment overrides through a lookup function (testable without touching the
    /// process environment).
    #[must_use]
    pub fn with_env(mut self, get: impl Fn(&str) -> Option<String>) -> Self {
        let list = |name: &str, compat: &str| {
            get(name)
                .or_else(|| get(compat))
                .map(|v| split_list(&v))
                .filter(|v: &Vec<String>| !v.is_empty())
        };
        if let Some(allow) = list(ENV_TOOLS, ENV_TOOLS_COMPAT) {
            self.env_allowed.clone_from(&allow);
            self.allow = Some(allow);
        }
        if let Some(deny) = list(ENV_DISABLE, ENV_DISABLE_COMPAT) {
            self.env_allowed.retain(|a| !deny.contains(a));
            self.deny.extend(deny);
        }
        self
    }

    /// Apply the real process environment.
    #[must_use]
    pub fn with_process_env(self) -> Self {
        self.with_env(|k| std::env::var(k).ok())
    }

    pub fn permits(&self, id: &str) -> bool {
        if self.env_allowed.iter().any(|p| p == id) {
            return true;
        }
        if self.deny.iter().any(|p| matches(p, id)) {
            return false;
        }
        match &self.allow {
            Some(allow) => allow.iter().any(|p| matches(p, id)),
            None => true,
        }
    }
}

fn split_list(v: &str) -> Vec<String> {
    v.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

fn matches(pattern: &str, id: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => id.starts_with(prefix),
        None => pattern == id,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn config_then_env_wins() {
        let f = ToolFilter::from_config_str(
            Path::new("c.toml"),
            "[tools]\nallow = [\"set-*\", \"track-stats\"]\ndeny = [\"set-track-color\"]\n",
        )
        .unwrap();
        assert!(f.permits("set-symbol"));
        assert!(!f.permits("set-track-color"));
        assert!(!f.permits("range-bearing"));
        let f = f.with_env(env(&[
            ("TOOLGATE_TOOLS", "set-track-color, range-bearing"),
            ("CODEACT_DISABLE", "range-bearing"),
        ]));
        assert!(f.permits("set-track-color"), "env allow beats config deny");
        assert!(!f.permits("range-bearing"), "env deny beats env allow");
        assert!(
            !f.permits("track-stats"),
            "env allow list replaces the config's"
        );
    }

    #[test]
    fn bad_config_names_file_and_key() {
        let err = ToolFilter::from_config_str(Path::new("/x/config.toml"), "[tools]\nallow = 3\n")
            .unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("/x/config.toml") && msg.contains("`tools`"),
            "{msg}"
        );
        let err = ToolFilter::from_config_str(Path::new("/x/c.toml"), "[tools\n").unwrap_err();
        assert!(err.to_string().starts_with("/x/c.toml: not valid TOML"));
    }
}
