//! The CodeAct tool set of one workspace: the configuration (the user file, the project's
//! `.toolgate/config.toml`, the environment; see `toolgate_sandbox::config`), the workspace
//! tools under its `[workspace]` switches, the `[[command_tools]]`, and the custom Python tools
//! of `<user config dir>/tools/` and `<workspace>/.toolgate/tools/`.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use toolgate_core::{ParamValidator, Registry, RegistryError};
use toolgate_sandbox::{CodeactConfig, PythonTools};
use toolgate_workspace::{Processes, WorkspaceConfig, WorkspaceSettings, WorkspaceTools};

use super::command_tools::CommandTools;
use crate::paths;

/// The CodeAct configuration for the workspace at `root`: the user config file
/// ([`paths::user_config`]), then `<root>/.toolgate/config.toml` (only narrowing unless the
/// user trusted the workspace), then the environment (only narrowing). What the project
/// configuration could not do is printed once per process as one warning line.
pub fn load_config(root: &Path) -> Result<CodeactConfig> {
    let config = CodeactConfig::load(&paths::user_config(), root, |k| std::env::var(k).ok())?;
    if let Some(w) = config.warning() {
        static WARNED: std::sync::Once = std::sync::Once::new();
        WARNED.call_once(|| warn(&w));
    }
    Ok(config)
}

/// How long loading the custom tools took in this process (the budget is
/// `toolgate_sandbox::custom::LOAD_BUDGET` for all files together), so a caller can count it in
/// the duration it reports.
pub fn custom_tools_load_time() -> std::time::Duration {
    CUSTOM_LOAD_NANOS
        .get()
        .map_or(std::time::Duration::ZERO, |n| {
            std::time::Duration::from_nanos(*n)
        })
}

static CUSTOM_LOAD_NANOS: std::sync::OnceLock<u64> = std::sync::OnceLock::new();

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

fn sources(config: &CodeactConfig) -> String {
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

fn warn(message: &str) {
    eprintln!("toolgate: warning: {message}");
}

/// Whether no tool (enabled or disabled) has this id yet.
fn free(registry: &Registry, id: &str) -> bool {
    matches!(registry.resolve(id), Err(RegistryError::UnknownTool { .. }))
}

/// Register the workspace tools for `root`, then the command tools, then the custom Python
/// tools. A command or custom tool whose id is taken is skipped with a warning (the first
/// registered wins: built-ins, then command tools, then custom tools); so is a custom-tool file
/// that cannot be loaded.
pub async fn register_codeact_tools(
    registry: &mut Registry,
    root: &Path,
    config: &CodeactConfig,
) -> Result<()> {
    let mut workspace = WorkspaceConfig::new(root)
        .with_context(|| format!("opening the workspace {}", root.display()))?
        .with_settings(&workspace_settings(config))
        .with_context(|| format!("the [workspace] settings ({})", sources(config)))?;
    workspace.processes = processes(config);
    let tools = WorkspaceTools::new(workspace.clone())?;
    registry
        .register(Arc::new(tools))
        .await
        .context("registering the workspace tools")?;

    for decl in &config.command_tools {
        ParamValidator::compile(&decl.name, &decl.input_schema()).with_context(|| {
            format!(
                "{}: command tool \"{}\": invalid parameters",
                decl.source.display(),
                decl.name
            )
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
        registry
            .register(Arc::new(commands))
            .await
            .with_context(|| format!("registering the command tools ({})", sources(config)))?;
    }

    let started = std::time::Instant::now();
    let (loaded, warnings) = PythonTools::load_dirs(&config.tool_dirs).await;
    let _ = CUSTOM_LOAD_NANOS.set(u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX));
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
        registry
            .register(Arc::new(custom))
            .await
            .context("registering the custom tools")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use toolgate_sandbox::config::{
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
