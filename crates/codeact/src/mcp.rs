//! The runtime behind the MCP server: `run_code` ([`McpRunner`]) and the workspace tools served
//! directly ([`McpDirect`]). The server keeps the confirmation machinery (elicitation, MRTR, the
//! token) and the plot commit of a program; these only run programs and calls.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Map, Value};
use toolgate_core::flow::{Answer, Confirmer};
use toolgate_core::{CallDigest, Preview};
use toolgate_mcp::{CodeProgress, CodeRunner, DirectError, DirectTools, PausedCode};
use toolgate_plot::transaction::PlotTransaction;
use toolgate_sandbox::ExecRequest;

use crate::paused::{Paused, Progress};
use crate::{Runtime, Surface};

/// Runs `run_code` programs on the runtime (its surface should be [`Surface::RunCode`]).
pub struct McpRunner {
    runtime: Runtime,
}

impl McpRunner {
    pub fn new(runtime: Runtime) -> Self {
        Self { runtime }
    }

    /// The functions `run_code`'s description lists: the tools (bounded), then, when the server
    /// has plot sessions, the plot functions with their signatures.
    pub fn functions(&self, with_plot: bool) -> String {
        let mut line = function_line(&self.runtime.function_names());
        if with_plot {
            // The tools' own parameters; the three target keywords every plot function takes
            // are said once instead of fifteen times.
            let specs = toolgate_plot::tools::specs();
            let signatures: Vec<String> = toolgate_sandbox::python_signatures(&specs)
                .lines()
                .filter_map(|l| l.strip_prefix("def "))
                .map(|l| l.trim_end_matches(':').to_owned())
                .collect();
            line.push_str("\n\nPlot functions (when a plot is open — debrief_searchPlots with open:true): they edit a scratch copy of the active plot, so later calls see earlier edits; when the program ends, its net change is shown to the user once and applied as one undo step only if they approve (the result's `plot` says what happened). Each also takes feature_names: list[str] | None, feature_ids: list[str] | None, scope: 'all' | 'selection' | None to choose its targets. ");
            line.push_str(&signatures.join("; "));
            line.push('.');
        }
        line
    }
}

#[async_trait]
impl CodeRunner for McpRunner {
    async fn run(
        &self,
        code: &str,
        timeout: Option<Duration>,
        confirmer: Arc<dyn Confirmer>,
        plot: Option<Arc<PlotTransaction>>,
    ) -> Value {
        let mut limits = self.runtime.limits();
        if let Some(t) = timeout {
            limits.timeout = t;
        }
        let req = ExecRequest::new(code)
            .with_script_name("run_code.py")
            .with_limits(limits);
        let envelope = self.runtime.run(req, confirmer, plot.as_ref()).await;
        serde_json::to_value(&envelope).unwrap_or(Value::Null)
    }

    async fn start(
        &self,
        code: &str,
        timeout: Option<Duration>,
        plot: Option<Arc<PlotTransaction>>,
    ) -> CodeProgress {
        let mut limits = self.runtime.limits();
        if let Some(t) = timeout {
            limits.timeout = t;
        }
        let req = ExecRequest::new(code)
            .with_script_name("run_code.py")
            .with_limits(limits);
        progress(self.runtime.start(req, plot).next().await)
    }
}

/// A paused program as the MCP server sees it.
struct McpPaused(Paused);

fn progress(p: Progress) -> CodeProgress {
    match p {
        Progress::Done(envelope) => {
            CodeProgress::Done(serde_json::to_value(&envelope).unwrap_or(Value::Null))
        }
        Progress::Paused(p) => CodeProgress::Paused(Box::new(McpPaused(p))),
    }
}

#[async_trait]
impl PausedCode for McpPaused {
    fn preview(&self) -> &Preview {
        &self.0.asked().preview
    }

    fn digest(&self) -> &CallDigest {
        &self.0.asked().digest
    }

    fn already(&self) -> String {
        self.0.asked().already.describe()
    }

    async fn resume(self: Box<Self>, answer: Answer) -> CodeProgress {
        progress(self.0.resume(answer).await)
    }
}

/// The workspace tools served directly (`--workspace-tools`), through the same host as run_code.
pub struct McpDirect {
    runtime: Runtime,
    specs: Vec<toolgate_core::ToolSpec>,
}

impl McpDirect {
    /// `runtime` on any surface; calls run on [`Surface::Direct`] with its command switch.
    pub fn new(runtime: &Runtime, auto_approve_commands: bool) -> Self {
        let runtime = runtime.on(Surface::Direct {
            auto_approve_commands,
        });
        Self {
            specs: runtime.workspace_specs(),
            runtime,
        }
    }
}

#[async_trait]
impl DirectTools for McpDirect {
    fn specs(&self) -> Vec<toolgate_core::ToolSpec> {
        self.specs.clone()
    }

    async fn call(
        &self,
        tool: &str,
        args: Map<String, Value>,
        confirmer: Arc<dyn Confirmer>,
    ) -> Result<Value, DirectError> {
        self.runtime
            .call(tool, args, confirmer)
            .await
            .map_err(|e| DirectError {
                message: e.to_string(),
                status: e.ended.as_ref().map(|g| g.status),
                reason: e.ended.and_then(|g| g.reason),
            })
    }
}

/// `view, create, …` — the function names a program can call, bounded so the advertised tool
/// list stays small whatever the registry size.
pub fn function_line(names: &[String]) -> String {
    const SHOWN: usize = 24;
    let mut line = names
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > SHOWN {
        line.push_str(&format!(
            ", and {} more (`toolgate tools list --markdown` lists them all)",
            names.len() - SHOWN
        ));
    }
    if !line.is_empty() {
        line.push('.');
    }
    line
}
