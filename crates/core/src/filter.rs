//! Which tools are exposed: allow/deny lists from config files and the environment.
//!
//! One rule for every surface (the Debrief CLI, CodeAct, MCP): a filter is a set of allow
//! lists and one deny list. A tool is exposed when **no** deny pattern matches it and **every**
//! allow list has a pattern that matches it (an absent or empty allow list allows everything).
//! Layers that may only take tools away — the environment, an untrusted project file — add
//! their lists with [`ToolFilter::narrow`]: their denies always add, their allow list can only
//! intersect. Only a layer the user controls (their own config file, or a project file they
//! trusted; see `toolgate_config`) may *replace* a list, and it does so before the
//! filter is built.
//!
//! The environment ([`ToolFilter::with_env`]): `TOOLGATE_TOOLS` (else the CodeAct anchor's
//! `CODEACT_TOOLS`) is one more allow list, `TOOLGATE_DISABLE` (else `CODEACT_DISABLE`) adds
//! to the deny list. The environment can only narrow because it is often written by a host
//! configuration that a repository ships (`.mcp.json`, `.vscode/mcp.json`); to widen, edit the
//! user config file.

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
    /// Every list must permit a tool (none: everything). Empty lists are never stored.
    allow: Vec<Vec<String>>,
    deny: Vec<String>,
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

    /// One allow list (absent or empty: everything) and a deny list.
    pub fn new(allow: Option<Vec<String>>, deny: Vec<String>) -> Self {
        Self::allow_all().narrow(allow, deny)
    }

    /// Take tools away: `allow` (when non-empty) must also permit a tool, and `deny` adds to
    /// the deny list. Never exposes a tool that was not exposed before.
    #[must_use]
    pub fn narrow(mut self, allow: Option<Vec<String>>, deny: Vec<String>) -> Self {
        if let Some(allow) = allow.filter(|a| !a.is_empty()) {
            self.allow.push(allow);
        }
        for d in deny {
            if !self.deny.contains(&d) {
                self.deny.push(d);
            }
        }
        self
    }

    /// The allow lists, each of which must permit a tool.
    pub fn allow_lists(&self) -> &[Vec<String>] {
        &self.allow
    }

    /// The deny list.
    pub fn deny_list(&self) -> &[String] {
        &self.deny
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

    /// Narrow by the environment, read through a lookup function (testable without touching
    /// the process environment): each of the allow and deny variables is taken from the first
    /// of its names that is set to a non-empty list.
    #[must_use]
    pub fn with_env(self, get: impl Fn(&str) -> Option<String>) -> Self {
        let list = |names: [&str; 2]| {
            names.iter().find_map(|n| {
                let v = split_list(&get(n)?);
                (!v.is_empty()).then_some(v)
            })
        };
        let allow = list([ENV_TOOLS, ENV_TOOLS_COMPAT]);
        let deny = list([ENV_DISABLE, ENV_DISABLE_COMPAT]).unwrap_or_default();
        self.narrow(allow, deny)
    }

    /// Narrow by the real process environment.
    #[must_use]
    pub fn with_process_env(self) -> Self {
        self.with_env(|k| std::env::var(k).ok())
    }

    pub fn permits(&self, id: &str) -> bool {
        !self.deny.iter().any(|p| matches(p, id))
            && self
                .allow
                .iter()
                .all(|list| list.iter().any(|p| matches(p, id)))
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
    fn config_then_env_narrows() {
        let f = ToolFilter::from_config_str(
            Path::new("c.toml"),
            "[tools]\nallow = [\"set-*\", \"track-stats\"]\ndeny = [\"set-track-color\"]\n",
        )
        .unwrap();
        assert!(f.permits("set-symbol"));
        assert!(!f.permits("set-track-color"));
        assert!(!f.permits("range-bearing"));
        let f = f.with_env(env(&[
            (
                "TOOLGATE_TOOLS",
                "set-track-color, set-symbol, range-bearing",
            ),
            ("CODEACT_DISABLE", "set-symbol"),
        ]));
        assert!(
            !f.permits("set-track-color"),
            "the environment cannot undo the config's deny"
        );
        assert!(
            !f.permits("range-bearing"),
            "the environment's allow list cannot add to the config's"
        );
        assert!(!f.permits("set-symbol"), "env deny adds");
        assert!(
            !f.permits("track-stats"),
            "both allow lists must permit a tool"
        );
        let f = ToolFilter::allow_all().with_env(env(&[
            ("TOOLGATE_DISABLE", " , "),
            ("CODEACT_DISABLE", "bash"),
            ("TOOLGATE_TOOLS", "bash,view"),
        ]));
        assert!(
            !f.permits("bash") && f.permits("view") && !f.permits("sql"),
            "an empty TOOLGATE_DISABLE falls through to CODEACT_DISABLE"
        );
    }

    #[test]
    fn narrowing_never_widens() {
        let base = ToolFilter::new(Some(vec!["a*".into()]), vec!["ab".into()]);
        let n = base.clone().narrow(Some(vec![]), vec![]);
        assert_eq!(n, base, "empty lists change nothing");
        let n = base.narrow(Some(vec!["ab".into(), "ac".into(), "z".into()]), vec![]);
        for id in ["a", "ab", "ac", "z", "b"] {
            assert_eq!(n.permits(id), id == "ac", "{id}");
        }
        assert!(ToolFilter::new(Some(vec![]), vec![]).permits("x"));
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
