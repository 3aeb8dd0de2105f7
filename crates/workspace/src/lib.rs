//! toolgate-workspace: the coding tools for CodeAct — `view`, `create`, `edit`, `glob`, `grep`,
//! `bash`, `sql`, `web_fetch`, `github_api` — with the names, parameters and return shapes of the
//! codeact anchor, behind one [`PathGuard`] that confines every path to the workspace.
//!
//! Every escape the anchor had is closed here: paths resolve against the workspace root (never
//! the cwd) and are re-checked after symbolic links are resolved; glob and grep results are
//! checked after expansion; grep runs in-process (no argument injection); SQL runs under an
//! authorizer that refuses ATTACH/DETACH and `load_extension`; bash gets a cleared environment,
//! a timeout that kills its whole process group and capped output; `web_fetch` is off by
//! default, http(s) only, and vets every address (redirects included) before connecting;
//! `github_api` only talks to api.github.com. Every output is capped with a visible marker.

#![warn(unreachable_pub)]
// Tests may unwrap; library code may not (workspace lints).
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod bash;
pub mod cap;
mod fsops;
mod github;
mod glob;
mod grep;
mod guard;
mod params;
pub mod process;
pub mod specs;
mod sql;
mod sql_open;
mod web;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;
use toolgate_core::{
    CallError, OutputKind, Provider, ProviderError, ToolCall, ToolOutcome, ToolSpec,
};

pub use guard::{GuardError, PathGuard};
pub use process::Processes;
pub use web::{is_public_ip, vet_url};

/// The provider name.
pub const PROVIDER_NAME: &str = "workspace";

/// Settings of one workspace.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkspaceConfig {
    /// The workspace root, canonical (see [`WorkspaceConfig::new`]).
    pub root: PathBuf,
    /// `web_fetch` refuses every call unless this is set. Default false.
    pub web_fetch_enabled: bool,
    /// Allow write methods (POST, PUT, PATCH, DELETE) in `web_fetch` and `github_api`. When set,
    /// both tools declare a mutating output kind (every call is confirmed); when not, they are
    /// reads and only GET (and HEAD for web_fetch) is accepted. Default false.
    pub http_writes_enabled: bool,
    /// Default `bash` timeout. Default 30 s.
    pub bash_timeout: Duration,
    /// The largest `timeout` a `bash` call may ask for. Default 600 s.
    pub bash_max_timeout: Duration,
    /// Cap of each of bash's stdout and stderr. Default 64 KiB.
    pub output_cap_bytes: usize,
    /// Cap of text read from files and the network (`view`, `web_fetch` download, `github_api`
    /// response) and of a whole `sql` result (rows stop being read at it). Default 1 MiB.
    pub read_cap_bytes: usize,
    /// The largest file `edit` will load. Default 50 MiB.
    pub edit_max_bytes: u64,
    /// Environment variables `bash` inherits; everything else is cleared.
    /// Default `PATH`, `HOME`, `LANG`, `TERM`.
    pub env_allow: Vec<String>,
    /// The environment variable holding the GitHub token. Default `GITHUB_TOKEN`.
    pub github_token_env: String,
    /// The database `sql` uses when no `db_path` is given, relative to the root.
    /// Default `.toolgate/workspace.db`.
    pub sql_default_db: PathBuf,
    /// Rows a query returns at most. Default 10,000.
    pub sql_max_rows: usize,
    /// A statement running longer is interrupted. Default 30 s.
    pub sql_timeout: Duration,
    /// Paths `glob` returns at most. Default 10,000.
    pub glob_max_results: usize,
    /// Results `grep` returns at most. Default 1,000.
    pub grep_max_results: usize,
    /// Whole-request timeout of `web_fetch` and `github_api`. Default 30 s.
    pub http_timeout: Duration,
    /// How `bash` starts its shell: OS-confined, unconfined on the user's say-so, or off.
    /// Default off (the caller detects confinement with [`Processes::detect`]).
    pub processes: Processes,
}

/// Workspace settings as a config file gives them (e.g. a `[workspace]` TOML table): every key
/// optional, unknown keys rejected. Durations are in seconds.
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceSettings {
    pub web_fetch_enabled: Option<bool>,
    pub http_writes_enabled: Option<bool>,
    pub bash_timeout_secs: Option<f64>,
    pub bash_max_timeout_secs: Option<f64>,
    pub output_cap_bytes: Option<usize>,
    pub read_cap_bytes: Option<usize>,
    pub edit_max_bytes: Option<u64>,
    pub env_allow: Option<Vec<String>>,
    pub github_token_env: Option<String>,
    pub sql_default_db: Option<PathBuf>,
    pub sql_max_rows: Option<usize>,
    pub sql_timeout_secs: Option<f64>,
    pub glob_max_results: Option<usize>,
    pub grep_max_results: Option<usize>,
    pub http_timeout_secs: Option<f64>,
}

/// The workspace could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    #[error("workspace root {path}: {source}")]
    Root {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "workspace root {path} is not canonical (expected {canonical}); use WorkspaceConfig::new"
    )]
    NotCanonical { path: PathBuf, canonical: PathBuf },
    #[error("invalid workspace setting `{key}`: {message}")]
    Setting { key: &'static str, message: String },
}

impl WorkspaceConfig {
    /// Defaults for a workspace at `root`, which is canonicalized (it must exist and be a
    /// directory).
    pub fn new(root: impl AsRef<Path>) -> Result<Self, WorkspaceError> {
        let root_ref = root.as_ref();
        let guard = PathGuard::new(root_ref).map_err(|source| WorkspaceError::Root {
            path: root_ref.to_path_buf(),
            source,
        })?;
        Ok(Self {
            root: guard.root().to_path_buf(),
            web_fetch_enabled: false,
            http_writes_enabled: false,
            bash_timeout: Duration::from_secs(30),
            bash_max_timeout: Duration::from_secs(600),
            output_cap_bytes: 64 * 1024,
            read_cap_bytes: 1024 * 1024,
            edit_max_bytes: 50 * 1024 * 1024,
            env_allow: ["PATH", "HOME", "LANG", "TERM"].map(str::to_owned).to_vec(),
            github_token_env: "GITHUB_TOKEN".to_owned(),
            sql_default_db: PathBuf::from(".toolgate/workspace.db"),
            sql_max_rows: 10_000,
            sql_timeout: Duration::from_secs(30),
            glob_max_results: 10_000,
            grep_max_results: 1_000,
            http_timeout: Duration::from_secs(30),
            processes: Processes::default(),
        })
    }

    /// Apply settings from a config file over these values, then check the result.
    pub fn with_settings(mut self, s: &WorkspaceSettings) -> Result<Self, WorkspaceError> {
        fn secs(key: &'static str, v: f64) -> Result<Duration, WorkspaceError> {
            Duration::try_from_secs_f64(v)
                .ok()
                .filter(|d| !d.is_zero())
                .ok_or_else(|| WorkspaceError::Setting {
                    key,
                    message: format!("{v} is not a positive number of seconds"),
                })
        }
        macro_rules! set {
            ($field:ident) => {
                if let Some(v) = &s.$field {
                    self.$field = v.clone();
                }
            };
            ($field:ident, $secs:ident) => {
                if let Some(v) = s.$secs {
                    self.$field = secs(stringify!($secs), v)?;
                }
            };
        }
        set!(web_fetch_enabled);
        set!(http_writes_enabled);
        set!(bash_timeout, bash_timeout_secs);
        set!(bash_max_timeout, bash_max_timeout_secs);
        set!(output_cap_bytes);
        set!(read_cap_bytes);
        set!(edit_max_bytes);
        set!(env_allow);
        set!(github_token_env);
        set!(sql_default_db);
        set!(sql_max_rows);
        set!(sql_timeout, sql_timeout_secs);
        set!(glob_max_results);
        set!(grep_max_results);
        set!(http_timeout, http_timeout_secs);
        self.check()?;
        Ok(self)
    }

    fn check(&self) -> Result<(), WorkspaceError> {
        let setting = |key, message: &str| WorkspaceError::Setting {
            key,
            message: message.to_owned(),
        };
        if self.sql_default_db.is_absolute() {
            return Err(setting(
                "sql_default_db",
                "must be relative to the workspace root",
            ));
        }
        if !toolgate_fs::is_beneath_lexically(&self.sql_default_db) {
            return Err(setting("sql_default_db", "must not contain \"..\""));
        }
        if self.bash_timeout.is_zero() || self.bash_timeout > self.bash_max_timeout {
            return Err(setting(
                "bash_timeout",
                "must be above zero and at most bash_max_timeout",
            ));
        }
        for (key, v) in [
            ("output_cap_bytes", self.output_cap_bytes),
            ("read_cap_bytes", self.read_cap_bytes),
            ("sql_max_rows", self.sql_max_rows),
            ("glob_max_results", self.glob_max_results),
            ("grep_max_results", self.grep_max_results),
        ] {
            if v == 0 {
                return Err(setting(key, "must be above zero"));
            }
        }
        if self.github_token_env.is_empty() {
            return Err(setting(
                "github_token_env",
                "must name an environment variable",
            ));
        }
        Ok(())
    }
}

/// Shared by every call.
pub(crate) struct Inner {
    pub config: WorkspaceConfig,
    pub guard: PathGuard,
    /// Where github_api sends requests (tests point it at a local server).
    pub github_base: String,
    /// Tests only: let web_fetch reach loopback addresses so a local server can play the web.
    pub allow_loopback: bool,
    /// Reads the GitHub token variable (the process environment, outside tests).
    pub env: EnvLookup,
}

pub(crate) type EnvLookup = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// The workspace tools; a [`Provider`] named `workspace`.
#[derive(Clone)]
pub struct WorkspaceTools {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for WorkspaceTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkspaceTools")
            .field("root", &self.inner.config.root)
            .finish_non_exhaustive()
    }
}

impl WorkspaceTools {
    pub fn new(config: WorkspaceConfig) -> Result<Self, WorkspaceError> {
        config.check()?;
        let guard = PathGuard::new(&config.root).map_err(|source| WorkspaceError::Root {
            path: config.root.clone(),
            source,
        })?;
        if guard.root() != config.root {
            return Err(WorkspaceError::NotCanonical {
                path: config.root,
                canonical: guard.root().to_path_buf(),
            });
        }
        Ok(Self {
            inner: Arc::new(Inner {
                config,
                guard,
                github_base: github::API_BASE.to_owned(),
                allow_loopback: false,
                env: Arc::new(|k: &str| std::env::var(k).ok()),
            }),
        })
    }

    pub fn config(&self) -> &WorkspaceConfig {
        &self.inner.config
    }

    pub fn guard(&self) -> &PathGuard {
        &self.inner.guard
    }

    /// The tool specs for this configuration (also what [`Provider::list_tools`] returns).
    pub fn specs(&self) -> Vec<ToolSpec> {
        specs::all(&self.inner.config)
    }

    #[cfg(test)]
    pub(crate) fn for_tests(
        config: WorkspaceConfig,
        github_base: Option<String>,
        allow_loopback: bool,
        env: Option<EnvLookup>,
    ) -> Self {
        let guard = PathGuard::new(&config.root).unwrap();
        Self {
            inner: Arc::new(Inner {
                config,
                guard,
                github_base: github_base.unwrap_or_else(|| github::API_BASE.to_owned()),
                allow_loopback,
                env: env.unwrap_or_else(|| Arc::new(|k: &str| std::env::var(k).ok())),
            }),
        }
    }

    /// Run a blocking tool body on the blocking pool, within the call's deadline.
    async fn blocking<F>(&self, call: &ToolCall, f: F) -> Result<ToolOutcome, CallError>
    where
        F: FnOnce(&Inner) -> Result<ToolOutcome, CallError> + Send + 'static,
    {
        let inner = Arc::clone(&self.inner);
        let task = tokio::task::spawn_blocking(move || f(&inner));
        let joined = match call.timeout {
            Some(limit) => match tokio::time::timeout(limit, task).await {
                Ok(j) => j,
                Err(_) => {
                    return Err(CallError::Timeout {
                        tool: call.tool_id.clone(),
                        seconds: limit.as_secs_f64(),
                    });
                }
            },
            None => task.await,
        };
        joined.map_err(|e| CallError::failed(format!("tool \"{}\" crashed: {e}", call.tool_id)))?
    }
}

/// Build an outcome.
pub(crate) fn outcome(kind: &str, summary: impl Into<String>, data: Value) -> ToolOutcome {
    ToolOutcome {
        kind: OutputKind::new(kind),
        summary: summary.into(),
        data,
        change_set: None,
    }
}

#[async_trait]
impl Provider for WorkspaceTools {
    fn name(&self) -> &str {
        PROVIDER_NAME
    }

    fn builtin_specs(&self) -> bool {
        true
    }

    async fn list_tools(&self) -> Result<Vec<ToolSpec>, ProviderError> {
        Ok(self.specs())
    }

    async fn call(&self, call: &ToolCall) -> Result<ToolOutcome, CallError> {
        // Only the tool id: parameters can hold file contents or secrets.
        tracing::debug!(tool = %call.tool_id, "workspace tool call");
        let params = call.params.clone();
        let deadline = call.timeout;
        match call.tool_id.as_str() {
            "view" => self.blocking(call, move |i| fsops::view(i, &params)).await,
            "create" => {
                self.blocking(call, move |i| fsops::create(i, &params))
                    .await
            }
            "edit" => self.blocking(call, move |i| fsops::edit(i, &params)).await,
            "glob" => self.blocking(call, move |i| glob::glob(i, &params)).await,
            "grep" => self.blocking(call, move |i| grep::grep(i, &params)).await,
            "sql" => {
                self.blocking(call, move |i| sql::sql(i, &params, deadline))
                    .await
            }
            "web_fetch" => {
                self.blocking(call, move |i| web::web_fetch(i, &params, deadline))
                    .await
            }
            "github_api" => {
                self.blocking(call, move |i| github::github_api(i, &params, deadline))
                    .await
            }
            "bash" => bash::bash(&self.inner, &params, deadline).await,
            other => Err(CallError::NotFound {
                message: format!(
                    "The workspace provider has no tool \"{other}\". Its tools: view, create, edit, glob, grep, bash, sql, web_fetch, github_api."
                ),
            }),
        }
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
pub(crate) mod testutil {
    use super::*;
    use serde_json::{Map, json};

    pub(crate) fn ws() -> (tempfile::TempDir, WorkspaceTools) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        std::fs::create_dir(&root).unwrap();
        let mut config = WorkspaceConfig::new(&root).unwrap();
        // The unit tests exercise the tools, not the OS confinement (crates/confine's tests and
        // the CLI's exec tests do that, through the real launcher).
        config.processes = Processes::Unconfined;
        let tools = WorkspaceTools::new(config).unwrap();
        (dir, tools)
    }

    pub(crate) fn params(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    pub(crate) async fn run(
        t: &WorkspaceTools,
        tool: &str,
        v: Value,
    ) -> Result<ToolOutcome, CallError> {
        t.call(&ToolCall::new(tool, params(v))).await
    }

    pub(crate) fn write(t: &WorkspaceTools, rel: &str, text: &str) {
        let p = t.config().root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[tokio::test]
    async fn lists_nine_tools_with_valid_schemas() {
        let (_d, t) = ws();
        let specs = t.list_tools().await.unwrap();
        let ids: Vec<_> = specs.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "view",
                "create",
                "edit",
                "glob",
                "grep",
                "bash",
                "sql",
                "web_fetch",
                "github_api"
            ]
        );
        let mut registry = toolgate_core::Registry::new();
        registry
            .register(Arc::new(t.clone()))
            .await
            .expect("every schema compiles");
        for s in &specs {
            assert_eq!(s.category, "workspace");
            assert_eq!(
                s.input_schema["additionalProperties"],
                json!(false),
                "{}",
                s.id
            );
            assert!(s.description.len() > 60, "{}", s.id);
        }
        let mutating: Vec<_> = registry
            .listing()
            .into_iter()
            .filter(|l| l.mutating)
            .map(|l| l.id)
            .collect();
        assert_eq!(mutating, ["create", "edit", "bash", "sql"]);
        // Unknown parameters are errors.
        let view = registry.resolve("view").unwrap();
        assert!(
            view.validate(&params(json!({"path": "x", "bogus": 1})))
                .is_err()
        );
        assert!(
            view.validate(&params(json!({"path": "x", "view_range": [1]})))
                .is_err()
        );
    }

    #[tokio::test]
    async fn http_writes_make_network_tools_mutating() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = WorkspaceConfig::new(dir.path()).unwrap();
        c.http_writes_enabled = true;
        let t = WorkspaceTools::new(c).unwrap();
        let specs = t.specs();
        for id in ["web_fetch", "github_api"] {
            let s = specs.iter().find(|s| s.id == id).unwrap();
            assert_eq!(s.effect(), toolgate_core::Effect::Mutating, "{id}");
            assert!(
                s.input_schema["properties"]["method"]["enum"]
                    .as_array()
                    .unwrap()
                    .contains(&json!("POST"))
            );
        }
        let (_d, t) = ws();
        for s in t
            .specs()
            .iter()
            .filter(|s| s.id == "web_fetch" || s.id == "github_api")
        {
            assert_eq!(s.effect(), toolgate_core::Effect::Read, "{}", s.id);
            assert!(
                !s.input_schema["properties"]["method"]["enum"]
                    .as_array()
                    .unwrap()
                    .contains(&json!("POST"))
            );
        }
    }

    #[test]
    fn config_is_checked() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = WorkspaceConfig::new(dir.path()).unwrap();
        assert_eq!(c.root, dir.path().canonicalize().unwrap());
        c.sql_default_db = PathBuf::from("/tmp/x.db");
        assert!(WorkspaceTools::new(c.clone()).is_err());
        c.sql_default_db = PathBuf::from("../x.db");
        assert!(WorkspaceTools::new(c.clone()).is_err());
        c.sql_default_db = PathBuf::from("x.db");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(dir.path(), &link).unwrap();
        c.root = link;
        assert!(matches!(
            WorkspaceTools::new(c).unwrap_err(),
            WorkspaceError::NotCanonical { .. }
        ));
        assert!(WorkspaceConfig::new(dir.path().join("missing")).is_err());
    }

    #[test]
    fn settings_apply_and_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        let base = WorkspaceConfig::new(dir.path()).unwrap();
        let s: WorkspaceSettings = serde_json::from_value(json!({
            "web_fetch_enabled": true,
            "bash_timeout_secs": 5,
            "env_allow": ["PATH"],
            "sql_default_db": "data/x.db"
        }))
        .unwrap();
        let c = base.clone().with_settings(&s).unwrap();
        assert!(c.web_fetch_enabled);
        assert_eq!(c.bash_timeout, std::time::Duration::from_secs(5));
        assert_eq!(c.env_allow, ["PATH"]);
        assert_eq!(c.sql_default_db, PathBuf::from("data/x.db"));
        assert_eq!(
            c.grep_max_results, base.grep_max_results,
            "untouched keys keep defaults"
        );
        let unknown = serde_json::from_value::<WorkspaceSettings>(json!({"web_fetch": true}));
        assert!(unknown.is_err());
        for bad in [
            json!({"bash_timeout_secs": -1}),
            json!({"bash_timeout_secs": 9999}),
            json!({"sql_default_db": "/abs.db"}),
            json!({"glob_max_results": 0}),
        ] {
            let s: WorkspaceSettings = serde_json::from_value(bad.clone()).unwrap();
            assert!(base.clone().with_settings(&s).is_err(), "{bad}");
        }
    }

    #[tokio::test]
    async fn unknown_tool_is_not_found() {
        let (_d, t) = ws();
        let err = run(&t, "rm", json!({})).await.unwrap_err();
        assert!(matches!(err, CallError::NotFound { .. }), "{err}");
    }
}

#[cfg(test)]
mod builtin_specs_tests {
    #![allow(clippy::unwrap_used)]

    #[test]
    fn every_schema_passes_the_registration_checks() {
        // The registry defers these checks for built-in providers to a tool's first call; the
        // schemas are fixed in the code, so they are checked here instead.
        let (_dir, tools) = super::testutil::ws();
        let specs = tools.specs();
        assert!(specs.len() >= 5);
        for spec in specs {
            toolgate_core::ParamValidator::compile(&spec.id, &spec.input_schema)
                .unwrap_or_else(|e| panic!("{e}"))
                .compiled()
                .unwrap_or_else(|e| panic!("{e}"));
        }
    }
}
