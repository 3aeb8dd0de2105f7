//! Custom tools written in Python: files that define a `TOOL` dict and a function, run **inside
//! the sandbox** (never in the host process), so a custom tool can do nothing a program could
//! not: its effects are the tool calls it makes, each taking the same registry, policy and
//! confirmer as the program's own calls.
//!
//! ```python
//! """Shout text back."""          # the description when TOOL has none
//! TOOL = {
//!     "name": "shout",              # default: the file name without .py
//!     "description": "Upper-case text.",
//!     "parameters": {"text": {"type": "string", "required": True}},   # or a JSON Schema
//!     # "function": "run",          # default: a function named like the tool, else `run`
//! }
//!
//! def shout(text):
//!     return text.upper()
//! ```
//!
//! At registration each file runs once in the sandbox, with no tools, to read `TOOL` (a file
//! that fails, or whose top-level code calls a tool, is skipped with a warning). A call runs the
//! file again followed by `function(**params)` in a nested [`toolgate_sandbox::run`] on the host that
//! called the tool ([`toolgate_sandbox::calling_host`]; the host must be made with
//! [`toolgate_sandbox::RegistryHost::shared`]), under the provider's limits and the call's deadline. The
//! function's return value is the tool's result; what it prints becomes the result when it
//! returns `None`. Custom tools may call custom tools, at most [`MAX_NESTING`] deep.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::{Map, Value, json};
use toolgate_core::{
    CallError, OutputKind, Provider, ProviderError, ToolCall, ToolOutcome, ToolSpec,
};

use toolgate_config::regular_file::{Links, Unreadable, read_regular};
use toolgate_config::{Limits, parameters_schema};
use toolgate_sandbox::{
    Envelope, ExecRequest, HostError, PyExc, ToolHost, calling_host, py_literal,
};

/// How a custom tool file is opened: a workspace's (`<root>/.toolgate/tools/`) never through a
/// symbolic link (it could point anywhere, or change after `toolgate trust` hashed it); the
/// user's own folder follows links (dotfile managers link files there).
fn links_for(file: &Path) -> Links {
    if file
        .parent()
        .is_some_and(|d| d.ends_with(toolgate_config::PROJECT_TOOLS_DIR))
    {
        Links::Refuse
    } else {
        Links::Follow
    }
}

/// The provider name of custom Python tools.
pub const CUSTOM_TOOLS_PROVIDER: &str = "custom-tools";
/// The output kind custom tools declare. Mutating (a custom tool may call mutating tools), so
/// a surface confirms them unless it pre-approves the provider; the calls they make are gated
/// on their own either way.
pub(crate) const CUSTOM_TOOL_KIND: &str = "workspace/custom_tool";
/// How deep custom tools may call custom tools.
pub(crate) const MAX_NESTING: usize = 4;
/// Largest custom-tool file read.
const MAX_SOURCE_BYTES: u64 = 1 << 20;
/// Time allowed to read the `TOOL`s of **all** custom-tool files together at registration (one
/// budget, not one per file: twenty files with a top-level `while True: pass` must not stall
/// a program's start for 20 × the budget). Files left when it is spent are refused.
pub(crate) const LOAD_BUDGET: Duration = Duration::from_secs(2);

tokio::task_local! {
    static NESTING: usize;
}

/// One loaded custom tool.
#[derive(Debug, Clone, PartialEq)]
pub struct PythonTool {
    pub spec: ToolSpec,
    /// The Python function called.
    pub function: String,
    /// The file's text.
    pub source: String,
    /// The file.
    pub path: PathBuf,
}

/// A provider of custom Python tools ([`CUSTOM_TOOLS_PROVIDER`]).
#[derive(Debug, Clone)]
pub struct PythonTools {
    tools: Vec<PythonTool>,
    limits: Limits,
}

/// A host with no tools, for reading `TOOL`.
struct NoTools;

#[async_trait]
impl ToolHost for NoTools {
    fn tool_names(&self) -> Vec<String> {
        Vec::new()
    }

    async fn call(&self, name: &str, _args: Map<String, Value>) -> Result<Value, HostError> {
        Err(HostError::new(
            PyExc::NameError,
            format!("name '{name}' is not defined"),
        ))
    }
}

fn error_text(env: &Envelope) -> String {
    match &env.error {
        Some(e) => {
            let mut s = format!("{}: {}", e.type_, e.message);
            if let Some(line) = e.line {
                s.push_str(&format!(" (line {line})"));
            }
            s
        }
        None => "it failed".to_owned(),
    }
}

impl PythonTools {
    pub fn new(tools: Vec<PythonTool>, limits: Limits) -> Self {
        Self { tools, limits }
    }

    pub fn tools(&self) -> &[PythonTool] {
        &self.tools
    }

    /// Keep only the tools `keep` accepts (e.g. drop ids another provider already has).
    pub fn retain(&mut self, mut keep: impl FnMut(&PythonTool) -> bool) {
        self.tools.retain(|t| keep(t));
    }

    /// Load every `*.py` file (names starting with `_` skipped) of each folder, folders in
    /// order, files sorted by name, all within `LOAD_BUDGET` (2 s). A tool of a later folder
    /// replaces one of the same name from an earlier folder. Missing folders are fine. Returns
    /// the tools and one warning per file skipped (naming the file and why).
    pub async fn load_dirs(dirs: &[PathBuf]) -> (Vec<PythonTool>, Vec<String>) {
        Self::load_dirs_within(dirs, LOAD_BUDGET).await
    }

    /// [`PythonTools::load_dirs`] with one total time budget for all files.
    pub async fn load_dirs_within(
        dirs: &[PathBuf],
        budget: Duration,
    ) -> (Vec<PythonTool>, Vec<String>) {
        let deadline = Instant::now() + budget;
        let mut tools: Vec<PythonTool> = Vec::new();
        let mut warnings = Vec::new();
        for dir in dirs {
            let entries = match std::fs::read_dir(dir) {
                Ok(e) => e,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => {
                    warnings.push(format!("{}: cannot list custom tools: {e}", dir.display()));
                    continue;
                }
            };
            let mut files: Vec<PathBuf> = entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| {
                    p.extension().is_some_and(|x| x == "py")
                        && p.file_name()
                            .and_then(|n| n.to_str())
                            .is_some_and(|n| !n.starts_with('_'))
                        // Whether it is a regular file is decided on the opened descriptor
                        // (load_file_by); a sub-folder is only skipped.
                        && !std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir())
                })
                .collect();
            files.sort();
            let mut from_this_dir: Vec<String> = Vec::new();
            for file in files {
                if Instant::now() >= deadline {
                    warnings.push(format!(
                        "{}: custom tool not loaded: loading custom tools used up its {} s budget (for all files together); make the top-level code of the custom tools only define TOOL and functions",
                        file.display(),
                        budget.as_secs_f64()
                    ));
                    continue;
                }
                match Self::load_file_by(&file, deadline).await {
                    Ok(tool) => {
                        if from_this_dir.contains(&tool.spec.id) {
                            warnings.push(format!(
                                "{}: custom tool \"{}\" skipped: another file in {} defines it",
                                file.display(),
                                tool.spec.id,
                                dir.display()
                            ));
                            continue;
                        }
                        from_this_dir.push(tool.spec.id.clone());
                        tools.retain(|t| t.spec.id != tool.spec.id);
                        tools.push(tool);
                    }
                    Err(why) => {
                        warnings.push(format!("{}: custom tool skipped: {why}", file.display()));
                    }
                }
            }
        }
        (tools, warnings)
    }

    /// Read one file's `TOOL` by running it in the sandbox with no tools, within
    /// `LOAD_BUDGET` (2 s).
    pub async fn load_file(path: &Path) -> Result<PythonTool, LoadError> {
        Self::load_file_by(path, Instant::now() + LOAD_BUDGET).await
    }

    /// Read one file's `TOOL`; every run of it must end by `deadline`.
    pub async fn load_file_by(path: &Path, deadline: Instant) -> Result<PythonTool, LoadError> {
        // A regular file within the cap, read once; a workspace's file never through a link.
        // A FIFO or a device (a repository can ship one) is refused without blocking.
        let source = match read_regular(path, links_for(path), MAX_SOURCE_BYTES) {
            Ok(Some(bytes)) => String::from_utf8(bytes).map_err(LoadError::NotUtf8)?,
            Ok(None) => return Err(LoadError::Missing),
            Err(Unreadable::TooLarge { size, .. }) => return Err(LoadError::TooLarge { size }),
            Err(e) => return Err(LoadError::Unreadable(e)),
        };
        let file_name = path.file_name().map_or_else(
            || "tool.py".to_owned(),
            |n| n.to_string_lossy().into_owned(),
        );
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        // Each probe gets what is left of the budget, so the runs of all files together end by
        // the deadline.
        let probe = |tail: &str| {
            let limits = Limits {
                timeout: deadline
                    .saturating_duration_since(Instant::now())
                    .max(Duration::from_millis(1)),
                max_tool_calls: 1,
                ..Limits::default()
            };
            ExecRequest::new(format!("{source}\n{tail}\n"))
                .with_script_name(file_name.clone())
                .with_limits(limits)
        };
        // A file that never binds TOOL reads as None here, not as a NameError whose message
        // would have to be read to tell it from a NameError in the file's own code.
        let env = toolgate_sandbox::run(
            probe("try:\n    __toolgate_tool__ = TOOL\nexcept NameError:\n    __toolgate_tool__ = None\n__toolgate_tool__"),
            &NoTools,
        )
        .await;
        if !env.success {
            if env
                .error
                .as_ref()
                .is_some_and(|e| e.type_ == "TimeoutError")
            {
                return Err(LoadError::OverBudget);
            }
            return Err(LoadError::Failed(error_text(&env)));
        }
        if env.return_value.is_null() {
            return Err(LoadError::NoTool);
        }
        let Value::Object(tool) = env.return_value else {
            return Err(LoadError::ToolNotADict(env.return_value));
        };
        let text = |key: &'static str| -> Result<Option<String>, LoadError> {
            match tool.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(other) => Err(LoadError::NotAString {
                    key,
                    found: other.clone(),
                }),
            }
        };
        let name = text("name")?.unwrap_or(stem);
        if !is_identifier(&name) {
            return Err(LoadError::BadName(name));
        }
        let description = text("description")?
            .or_else(|| module_docstring(&source))
            .unwrap_or_else(|| "User tool".to_owned());
        let input_schema =
            parameters_schema(tool.get("parameters")).map_err(LoadError::Parameters)?;
        let function = match text("function")? {
            Some(f) => {
                if !is_identifier(&f) {
                    return Err(LoadError::BadFunctionName(f));
                }
                if !toolgate_sandbox::run(probe(&f), &NoTools).await.success {
                    return Err(LoadError::NoSuchFunction(f));
                }
                f
            }
            // A function named like the tool, else `run` (the anchor's default).
            None if toolgate_sandbox::run(probe(&name), &NoTools).await.success => name.clone(),
            None if toolgate_sandbox::run(probe("run"), &NoTools).await.success => "run".to_owned(),
            None => return Err(LoadError::NoFunction(name)),
        };
        let mut annotations = Map::new();
        annotations.insert("source".to_owned(), json!(path.display().to_string()));
        annotations.insert("function".to_owned(), json!(function));
        Ok(PythonTool {
            spec: ToolSpec {
                id: name.clone(),
                title: name,
                description,
                input_schema,
                output_kind: Some(OutputKind::new(CUSTOM_TOOL_KIND)),
                category: "workspace".to_owned(),
                annotations,
            },
            function,
            source,
            path: path.to_owned(),
        })
    }
}

/// Why a custom tool file was skipped; said after "FILE: custom tool skipped: ".
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot read it: it is not UTF-8 text ({0})")]
    NotUtf8(#[source] std::string::FromUtf8Error),
    #[error("cannot read it: it does not exist")]
    Missing,
    #[error("it is {size} bytes; custom tools may be at most {MAX_SOURCE_BYTES}")]
    TooLarge { size: u64 },
    #[error("it {}; ignored", .0.reason())]
    Unreadable(Unreadable),
    #[error(
        "its top-level code did not finish within the time left of the custom-tool load budget (it may only define TOOL and functions)"
    )]
    OverBudget,
    /// Running the file raised; the Python error as `Type: message (line N)`.
    #[error("running it failed: {0}")]
    Failed(String),
    #[error(
        "it defines no TOOL dict (TOOL = {{\"name\": ..., \"description\": ..., \"parameters\": {{...}}}})"
    )]
    NoTool,
    #[error("TOOL must be a dict, found {0}")]
    ToolNotADict(Value),
    #[error("TOOL[\"{key}\"] must be a string, found {found}")]
    NotAString { key: &'static str, found: Value },
    #[error(
        "TOOL[\"name\"] \"{0}\" is not a tool name (letters, digits and _, not starting with a digit)"
    )]
    BadName(String),
    #[error("TOOL[\"parameters\"]: {0}")]
    Parameters(#[source] toolgate_config::ParametersError),
    #[error("TOOL[\"function\"] \"{0}\" is not a Python name")]
    BadFunctionName(String),
    #[error("it has no function \"{0}\" (TOOL[\"function\"])")]
    NoSuchFunction(String),
    #[error("it defines no function \"{0}\" (or \"run\") to call")]
    NoFunction(String),
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The module docstring, when the file starts with one (first line of it).
fn module_docstring(source: &str) -> Option<String> {
    let s = source.trim_start();
    let quote = ["\"\"\"", "'''"].into_iter().find(|q| s.starts_with(q))?;
    let body = &s[3..];
    let end = body.find(quote)?;
    let text = body[..end].trim();
    (!text.is_empty()).then(|| text.lines().next().unwrap_or_default().trim().to_owned())
}

/// The Python exception of a failed nested run → the provider error the caller's program sees
/// (the type survives where the core has one for it).
fn call_error(tool: &PythonTool, env: &Envelope, limits: &Limits) -> CallError {
    let file = tool
        .path
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let Some(e) = &env.error else {
        return CallError::failed(format!("custom tool \"{}\" failed", tool.spec.id));
    };
    let place = e
        .line
        .map_or_else(|| file.clone(), |l| format!("{file}, line {l}"));
    let message = format!(
        "{} (in custom tool \"{}\", {place})",
        e.message, tool.spec.id
    );
    match e.type_.as_str() {
        "FileNotFoundError" => CallError::NotFound { message },
        "PermissionError" => CallError::PermissionDenied { message },
        "ValueError" => CallError::InvalidInput { message },
        "TimeoutError" if e.wall_clock => CallError::Timeout {
            tool: tool.spec.id.clone(),
            seconds: limits.timeout.as_secs_f64(),
        },
        other => CallError::failed(format!("{other}: {message}")),
    }
}

#[async_trait]
impl Provider for PythonTools {
    fn name(&self) -> &str {
        CUSTOM_TOOLS_PROVIDER
    }

    async fn list_tools(&self) -> Result<Vec<ToolSpec>, ProviderError> {
        Ok(self.tools.iter().map(|t| t.spec.clone()).collect())
    }

    async fn call(&self, call: &ToolCall) -> Result<ToolOutcome, CallError> {
        let Some(tool) = self.tools.iter().find(|t| t.spec.id == call.tool_id) else {
            return Err(CallError::NotFound {
                message: format!("no custom tool \"{}\"", call.tool_id),
            });
        };
        let Some(host) = calling_host() else {
            return Err(CallError::failed(format!(
                "custom tool \"{}\" can only run inside a sandbox program (its host must be made with RegistryHost::shared)",
                tool.spec.id
            )));
        };
        let depth = NESTING.try_with(|d| *d).unwrap_or(0);
        if depth >= MAX_NESTING {
            return Err(CallError::failed(format!(
                "custom tool \"{}\" not run: custom tools may call custom tools at most {MAX_NESTING} deep (does one call itself?)",
                tool.spec.id
            )));
        }
        let mut limits = self.limits.clone();
        if let Some(t) = call.timeout {
            limits.timeout = limits.timeout.min(t);
        }
        let code = format!(
            "{}\n{}(**{})\n",
            tool.source,
            tool.function,
            py_literal(&Value::Object(call.params.clone()))
        );
        let script = tool.path.file_name().map_or_else(
            || "tool.py".to_owned(),
            |n| n.to_string_lossy().into_owned(),
        );
        let req = ExecRequest::new(code)
            .with_script_name(script)
            .with_limits(limits.clone());
        let env = NESTING
            .scope(depth + 1, toolgate_sandbox::run(req, host.as_ref()))
            .await;
        if !env.success {
            return Err(call_error(tool, &env, &limits));
        }
        Ok(ToolOutcome {
            kind: OutputKind::new(CUSTOM_TOOL_KIND),
            summary: env.stdout,
            data: env.return_value,
            change_set: None,
        })
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;

    #[test]
    fn docstrings_and_names() {
        assert_eq!(
            module_docstring("\n\"\"\"Shout it.\n\nMore.\"\"\"\nx = 1"),
            Some("Shout it.".to_owned())
        );
        assert_eq!(module_docstring("x = 1"), None);
        assert!(is_identifier("shout_2") && !is_identifier("2x") && !is_identifier("a-b"));
    }

    /// Issue 14 item 3: twenty files spinning at the top level took 20 × 5 s to refuse; now
    /// all of them together take one budget.
    #[tokio::test]
    async fn spinning_files_share_one_budget() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..20 {
            std::fs::write(
                dir.path().join(format!("spin{i:02}.py")),
                "while True:\n    pass\n",
            )
            .unwrap();
        }
        std::fs::write(
            dir.path().join("zz_ok.py"),
            "TOOL = {}\ndef run():\n    return 1\n",
        )
        .unwrap();
        let budget = Duration::from_millis(500);
        let started = Instant::now();
        let (tools, warnings) =
            PythonTools::load_dirs_within(&[dir.path().to_owned()], budget).await;
        let took = started.elapsed();
        assert!(took < budget + Duration::from_millis(700), "{took:?}");
        assert!(tools.is_empty(), "the budget was spent before zz_ok.py");
        assert_eq!(warnings.len(), 21, "{warnings:#?}");
        assert!(
            warnings[0]
                .contains("spin00.py: custom tool skipped: its top-level code did not finish"),
            "{}",
            warnings[0]
        );
        assert!(
            warnings[20].contains(
                "zz_ok.py: custom tool not loaded: loading custom tools used up its 0.5 s budget"
            ),
            "{}",
            warnings[20]
        );
    }

    #[tokio::test]
    async fn loads_tool_dicts_and_skips_broken_files() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(
            d.join("shout.py"),
            "TOOL = {\"name\": \"shout\", \"description\": \"Upper-case.\", \"parameters\": {\"text\": {\"type\": \"string\", \"required\": True}}}\n\ndef shout(text):\n    return text.upper()\n",
        )
        .unwrap();
        std::fs::write(
            d.join("legacy.py"),
            "\"\"\"Add one.\"\"\"\nTOOL = {}\n\ndef run(n=0):\n    return n + 1\n",
        )
        .unwrap();
        std::fs::write(d.join("broken.py"), "TOOL = {\n").unwrap();
        std::fs::write(d.join("notool.py"), "def f():\n    return 1\n").unwrap();
        std::fs::write(d.join("nofn.py"), "TOOL = {\"name\": \"nofn\"}\n").unwrap();
        std::fs::write(d.join("calls.py"), "view(path='x')\nTOOL = {}\n").unwrap();
        std::fs::write(d.join("_private.py"), "raise ValueError('never read')\n").unwrap();
        let (tools, warnings) = PythonTools::load_dirs(&[d.to_owned(), d.join("missing")]).await;
        let ids: Vec<_> = tools.iter().map(|t| t.spec.id.as_str()).collect();
        assert_eq!(ids, ["legacy", "shout"]);
        let legacy = &tools[0];
        assert_eq!(legacy.function, "run");
        assert_eq!(legacy.spec.description, "Add one.");
        assert_eq!(tools[1].spec.input_schema["required"], json!(["text"]));
        assert_eq!(warnings.len(), 4, "{warnings:#?}");
        let all = warnings.join("\n");
        assert!(
            all.contains("broken.py: custom tool skipped: running it failed: SyntaxError"),
            "{all}"
        );
        assert!(
            all.contains("notool.py: custom tool skipped: it defines no TOOL dict"),
            "{all}"
        );
        assert!(
            all.contains(
                "nofn.py: custom tool skipped: it defines no function \"nofn\" (or \"run\")"
            ),
            "{all}"
        );
        assert!(
            all.contains("calls.py: custom tool skipped: running it failed: NameError"),
            "{all}"
        );
    }
}
