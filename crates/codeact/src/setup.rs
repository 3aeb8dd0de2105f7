//! The CodeAct tool set of one workspace: the configuration (the user file, the project's
//! `.toolgate/config.toml`, the environment; see `toolgate_config`), the workspace
//! tools under its `[workspace]` switches, the `[[command_tools]]`, and the custom Python tools
//! of `<user config dir>/tools/` and `<workspace>/.toolgate/tools/`.

use std::path::Path;
use std::sync::Arc;

use toolgate_config::CodeactConfig;
use toolgate_core::{ParamValidator, Provider, Registry, RegistryError, ToolSpec};
use toolgate_workspace::{Processes, WorkspaceConfig, WorkspaceSettings, WorkspaceTools};

use crate::PythonTools;
use crate::command_tools::CommandTools;
use crate::{CodeactError, Host};

/// The `[workspace]` table as the workspace crate takes it.
pub fn workspace_settings(config: &CodeactConfig) -> WorkspaceSettings {
    let w = &config.workspace;
    // Config integers are range-checked at load (1..=86400 for seconds).
    let secs = |v: Option<i64>| v.and_then(|s| u32::try_from(s).ok()).map(f64::from);
    WorkspaceSettings {
        web_fetch_enabled: w.web_fetch,
        http_writes_enabled: w.http_writes,
        bash_timeout_secs: secs(w.bash_timeout_secs),
        bash_max_timeout_secs: secs(w.bash_max_timeout_secs),
        output_cap_bytes: w
            .output_cap_bytes
            .map(|s| usize::try_from(s.0).unwrap_or(usize::MAX)),
        ..WorkspaceSettings::default()
    }
}

/// How bash and command tools start processes here: confined through this very binary (its
/// `__confine` stages) when the machine can, else unconfined only if the user's own config
/// says `unconfined_processes = true`, else off.
pub fn processes(config: &CodeactConfig) -> Processes {
    let launcher = std::env::current_exe().ok();
    Processes::detect(
        launcher.as_deref(),
        config.unconfined_processes(),
        config.network(),
    )
}

pub(crate) fn sources(config: &CodeactConfig) -> String {
    if config.sources.is_empty() {
        "no config file".to_owned()
    } else {
        config
            .sources
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Whether no tool (enabled or disabled) has this id yet.
fn free(registry: &Registry, id: &str) -> bool {
    matches!(registry.resolve(id), Err(RegistryError::UnknownTool { .. }))
}

/// The providers registered so far with their specs (a run with a plot builds its own registry
/// from them plus the plot tools, without listing anything again).
pub(crate) type Registered = Vec<(Arc<dyn Provider>, Vec<ToolSpec>)>;

pub(crate) fn register(
    registry: &mut Registry,
    registered: &mut Registered,
    provider: Arc<dyn Provider>,
    specs: Vec<ToolSpec>,
    what: &str,
) -> Result<(), CodeactError> {
    registry
        .register_specs(provider.clone(), specs.clone())
        .map_err(|source| CodeactError::Register {
            what: what.to_owned(),
            source: Box::new(source),
        })?;
    registered.push((provider, specs));
    Ok(())
}

async fn specs_of(provider: &dyn Provider, what: &str) -> Result<Vec<ToolSpec>, CodeactError> {
    provider
        .list_tools()
        .await
        .map_err(|e| CodeactError::Register {
            what: what.to_owned(),
            source: Box::new(e.into()),
        })
}

/// Register the workspace tools for `root`, then the command tools, then the custom Python
/// tools. A command or custom tool whose id is taken is skipped with a warning (the first
/// registered wins: built-ins, then command tools, then custom tools); so is a custom-tool file
/// that cannot be loaded. Returns how long loading the custom tools took.
pub(crate) async fn register_codeact_tools(
    registry: &mut Registry,
    registered: &mut Registered,
    root: &Path,
    config: &CodeactConfig,
    host: &Host,
) -> Result<std::time::Duration, CodeactError> {
    let warn = host.warn;
    let mut workspace = WorkspaceConfig::new(root)
        .map_err(|e| CodeactError::Workspace {
            root: root.to_owned(),
            message: e.to_string(),
        })?
        .with_settings(&workspace_settings(config))
        .map_err(|e| CodeactError::Settings {
            sources: sources(config),
            message: e.to_string(),
        })?;
    workspace.processes = processes(config);
    let tools = WorkspaceTools::new(workspace.clone()).map_err(|e| CodeactError::Workspace {
        root: root.to_owned(),
        message: e.to_string(),
    })?;
    let what = "the workspace tools";
    let specs = specs_of(&tools, what).await?;
    register(registry, registered, Arc::new(tools), specs, what)?;

    for decl in &config.command_tools {
        ParamValidator::compile(&decl.name, &decl.input_schema()).map_err(|e| {
            CodeactError::CommandTool {
                source_file: decl.source.clone(),
                name: decl.name.clone(),
                message: e.to_string(),
            }
        })?;
    }
    let mut commands = CommandTools::new(config.command_tools.clone(), &workspace);
    commands.retain(|id| {
        let ok = free(registry, id);
        if !ok {
            warn(&format!(
                "command tool \"{id}\" skipped: another tool has that name"
            ));
        }
        ok
    });
    if !commands.is_empty() {
        let what = format!("the command tools ({})", sources(config));
        let specs = specs_of(&commands, &what).await?;
        register(registry, registered, Arc::new(commands), specs, &what)?;
    }

    let started = std::time::Instant::now();
    let (loaded, warnings) = PythonTools::load_dirs(&config.tool_dirs).await;
    let load_time = started.elapsed();
    for w in &warnings {
        warn(w);
    }
    let mut custom = PythonTools::new(loaded, config.limits());
    custom.retain(|t| {
        if let Err(e) = ParamValidator::compile(&t.spec.id, &t.spec.input_schema) {
            warn(&format!(
                "{}: custom tool skipped: invalid parameters: {e}",
                t.path.display()
            ));
            return false;
        }
        let ok = free(registry, &t.spec.id);
        if !ok {
            warn(&format!(
                "{}: custom tool \"{}\" skipped: another tool has that name",
                t.path.display(),
                t.spec.id
            ));
        }
        ok
    });
    if !custom.tools().is_empty() {
        let what = "the custom tools";
        let specs = specs_of(&custom, what).await?;
        register(registry, registered, Arc::new(custom), specs, what)?;
    }
    Ok(load_time)
}

#[cfg(test)]
mod tests {
    use toolgate_config::{
        DEFAULT_BASH_MAX_TIMEOUT_SECS, DEFAULT_BASH_TIMEOUT_SECS, DEFAULT_OUTPUT_CAP_BYTES,
    };

    /// The ceilings an untrusted project may not raise are the workspace's real defaults.
    #[test]
    fn narrowing_ceilings_match_the_workspace_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let w = toolgate_workspace::WorkspaceConfig::new(dir.path()).unwrap();
        assert_eq!(w.bash_timeout.as_secs(), DEFAULT_BASH_TIMEOUT_SECS as u64);
        assert_eq!(
            w.bash_max_timeout.as_secs(),
            DEFAULT_BASH_MAX_TIMEOUT_SECS as u64
        );
        assert_eq!(w.output_cap_bytes as u64, DEFAULT_OUTPUT_CAP_BYTES);
    }
}
