//! Command tools: programs declared in `[[command_tools]]` of a config file, run with an
//! argument vector (no shell) in the workspace root, started exactly as `bash` starts its shell
//! ([`toolgate_workspace::process::run`]: OS-confined as the workspace's `processes` says, a
//! cleared environment (the workspace's `env_allow` variables only), a null stdin, a timeout
//! that kills everything it started, stdout/stderr capped like `bash`'s). Results have `bash`'s shape
//! (`{"stdout", "stderr", "returncode"}`) and its output kind, `workspace/exec`: mutating, so
//! they run pre-approved only where the surface pre-approves [`COMMAND_TOOLS_PROVIDER`] (as
//! `toolgate exec` does, like the workspace tools).

use std::path::{Path, PathBuf};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Map, Value, json};
use toolgate_config::{ArgPiece, CommandToolDecl, parse_arg};
use toolgate_core::{
    CallError, OutputKind, Provider, ProviderError, ToolCall, ToolOutcome, ToolSpec,
};
use toolgate_workspace::WorkspaceConfig;
use toolgate_workspace::process::{Processes, Run, run};

/// The provider name of command tools.
pub const COMMAND_TOOLS_PROVIDER: &str = "command-tools";
/// Their output kind (the same as `bash`).
pub const COMMAND_KIND: &str = "workspace/exec";

/// The `[[command_tools]]` of the config, as a provider.
pub struct CommandTools {
    root: PathBuf,
    tools: Vec<(CommandToolDecl, ToolSpec)>,
    env: Vec<(String, std::ffi::OsString)>,
    output_cap: usize,
    default_timeout: Duration,
    processes: Processes,
}

impl CommandTools {
    /// Command tools running in `workspace.root`, with its environment allow-list, output cap
    /// and default (bash) timeout.
    pub fn new(decls: Vec<CommandToolDecl>, workspace: &WorkspaceConfig) -> Self {
        let tools = decls
            .into_iter()
            .map(|d| {
                let spec = spec(&d);
                (d, spec)
            })
            .collect();
        let env = workspace
            .env_allow
            .iter()
            .filter_map(|k| std::env::var_os(k).map(|v| (k.clone(), v)))
            .collect();
        Self {
            root: workspace.root.clone(),
            tools,
            env,
            output_cap: workspace.output_cap_bytes,
            default_timeout: workspace.bash_timeout,
            processes: workspace.processes.clone(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// Keep only the tools `keep` accepts (by id).
    pub fn retain(&mut self, mut keep: impl FnMut(&str) -> bool) {
        self.tools.retain(|(d, _)| keep(&d.name));
    }
}

fn spec(d: &CommandToolDecl) -> ToolSpec {
    let shown = d.argv.join(" ");
    let description = if d.description.trim().is_empty() {
        format!(
            "Runs `{shown}` in the workspace (no shell). Returns {{stdout, stderr, returncode}}."
        )
    } else {
        d.description.clone()
    };
    let mut annotations = Map::new();
    annotations.insert("argv".to_owned(), json!(d.argv));
    annotations.insert("source".to_owned(), json!(d.source.display().to_string()));
    annotations.insert(
        "returns".to_owned(),
        json!("dict: {stdout: str, stderr: str, returncode: int}"),
    );
    ToolSpec {
        id: d.name.clone(),
        title: d.name.clone(),
        description,
        input_schema: d.input_schema(),
        output_kind: Some(OutputKind::new(COMMAND_KIND)),
        category: "workspace".to_owned(),
        annotations,
    }
}

/// One scalar parameter value as argument text.
fn scalar(name: &str, v: &Value) -> Result<String, CallError> {
    let text = match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        other => {
            return Err(CallError::invalid(format!(
                "parameter \"{name}\" must be a string, number or boolean here, not {other}"
            )));
        }
    };
    if text.contains('\0') {
        return Err(CallError::invalid(format!(
            "parameter \"{name}\" contains a NUL character"
        )));
    }
    Ok(text)
}

/// The refusal of a value that would become an option.
fn option_refused(tool: &str, name: &str, value: &str) -> CallError {
    let shown: String = value.chars().take(60).collect();
    let more = if shown.len() < value.len() { "…" } else { "" };
    CallError::invalid(format!(
        "command tool \"{tool}\": the value of \"{name}\" (\"{shown}{more}\") starts with \"-\", so the program would read it as an option; nothing was run. Give a value that does not start with \"-\" (a file named so: \"./{shown}{more}\"), or, if this parameter is meant to take options, declare it with allow_options = true in the tool's [[command_tools]] entry."
    ))
}

/// The argument vector of one call. An argument that is exactly `{p}` becomes p's value as one
/// argument (a list: one argument per item; absent or null: no argument); an argument with a
/// placeholder among other text is dropped when one of its parameters is absent. A value is
/// never split, never shell text, and never an option: an argument whose leading `-` comes from
/// a value is refused unless `allows_options` says that parameter may (`allow_options = true`).
pub fn build_argv(
    tool: &str,
    argv: &[String],
    params: &Map<String, Value>,
    allows_options: impl Fn(&str) -> bool,
) -> Result<Vec<String>, CallError> {
    let mut out = Vec::with_capacity(argv.len());
    for arg in argv {
        let pieces = parse_arg(arg).map_err(|e| CallError::invalid(e.to_string()))?;
        if let [ArgPiece::Param(p)] = pieces.as_slice() {
            let values: &[Value] = match params.get(p) {
                None | Some(Value::Null) => &[],
                Some(Value::Array(items)) => items,
                Some(v) => std::slice::from_ref(v),
            };
            for v in values {
                let text = scalar(p, v)?;
                if text.starts_with('-') && !allows_options(p) {
                    return Err(option_refused(tool, p, &text));
                }
                out.push(text);
            }
            continue;
        }
        let mut text = String::new();
        let mut complete = true;
        // The parameter whose value begins the argument (no literal text before it).
        let mut leading: Option<(&str, String)> = None;
        for piece in &pieces {
            match piece {
                ArgPiece::Literal(l) => text.push_str(l),
                ArgPiece::Param(p) => match params.get(p) {
                    None | Some(Value::Null) => complete = false,
                    Some(v) => {
                        let value = scalar(p, v)?;
                        if text.is_empty() && !value.is_empty() {
                            leading = Some((p.as_str(), value.clone()));
                        }
                        text.push_str(&value);
                    }
                },
            }
        }
        if !complete {
            continue;
        }
        if let Some((p, value)) = leading
            && text.starts_with('-')
            && !allows_options(p)
        {
            return Err(option_refused(tool, p, &value));
        }
        out.push(text);
    }
    Ok(out)
}

fn program_path(root: &Path, program: &str) -> PathBuf {
    let p = Path::new(program);
    if p.is_relative() && program.contains('/') {
        root.join(p)
    } else {
        p.to_owned()
    }
}

#[async_trait]
impl Provider for CommandTools {
    fn name(&self) -> &str {
        COMMAND_TOOLS_PROVIDER
    }

    async fn list_tools(&self) -> Result<Vec<ToolSpec>, ProviderError> {
        Ok(self.tools.iter().map(|(_, s)| s.clone()).collect())
    }

    async fn call(&self, call: &ToolCall) -> Result<ToolOutcome, CallError> {
        let Some((decl, _)) = self.tools.iter().find(|(d, _)| d.name == call.tool_id) else {
            return Err(CallError::NotFound {
                message: format!("no command tool \"{}\"", call.tool_id),
            });
        };
        let argv = build_argv(&decl.name, &decl.argv, &call.params, |p| {
            decl.allows_options(p)
        })?;
        let Some((program, args)) = argv.split_first() else {
            return Err(CallError::failed(format!(
                "command tool \"{}\" has no program",
                decl.name
            )));
        };
        let own = decl
            .timeout_secs
            .and_then(|s| u64::try_from(s).ok())
            .map_or(self.default_timeout, Duration::from_secs);
        let limit = call.timeout.map_or(own, |d| d.min(own));
        let tool = format!("command tool \"{}\"", decl.name);
        let run = run(
            &self.processes,
            Run {
                tool: &tool,
                program: &program_path(&self.root, program),
                args,
                cwd: &self.root,
                env: &self.env,
                limit,
                cap: self.output_cap,
            },
        )
        .await
        .map_err(|e| match e {
            CallError::Timeout { seconds, .. } => CallError::Timeout {
                tool: decl.name.clone(),
                seconds,
            },
            other => other,
        })?;
        let (summary, data) = run.report(self.output_cap);
        Ok(ToolOutcome {
            kind: OutputKind::new(COMMAND_KIND),
            summary,
            data,
            change_set: None,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn params(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    fn argv(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn placeholders_become_whole_arguments() {
        let t = argv(&[
            "grep",
            "-n",
            "--",
            "{pattern}",
            "{paths}",
            "--max={n}",
            "{opt}",
        ]);
        let got = build_argv(
            "g",
            &t,
            &params(json!({"pattern": "a b; rm -rf /", "paths": ["x y", "z"], "n": 3})),
            no_options,
        )
        .unwrap();
        assert_eq!(
            got,
            ["grep", "-n", "--", "a b; rm -rf /", "x y", "z", "--max=3"],
            "no splitting, no shell; absent optional parameters drop their argument"
        );
        let got = build_argv(
            "g",
            &t,
            &params(json!({"pattern": "p", "paths": "one"})),
            no_options,
        )
        .unwrap();
        assert_eq!(got, ["grep", "-n", "--", "p", "one"]);
        assert!(build_argv("g", &t, &params(json!({"pattern": {"a": 1}})), no_options).is_err());
        assert!(build_argv("g", &t, &params(json!({"pattern": "a\u{0}b"})), no_options).is_err());
    }

    fn no_options(_: &str) -> bool {
        false
    }

    /// `find {dir} -name *.txt` with dir = "-delete" deleted the workspace: a value never
    /// starts an argument with `-` unless its parameter allows options.
    #[test]
    fn values_never_become_options() {
        let t = argv(&[
            "find",
            "{dir}",
            "-name",
            "{glob}.txt",
            "--max={n}",
            "{list}",
        ]);
        for bad in [
            json!({"dir": "-delete"}),
            json!({"dir": "--exec=rm"}),
            json!({"dir": "x", "glob": "-delete"}),
            json!({"dir": "x", "list": ["ok", "-fprint"]}),
            json!({"dir": -1}),
        ] {
            let err = build_argv("list_txt", &t, &params(bad.clone()), no_options).unwrap_err();
            let msg = err.to_string();
            assert!(
                matches!(err, CallError::InvalidInput { .. }),
                "{bad}: {msg}"
            );
            assert!(msg.contains("starts with \"-\""), "{bad}: {msg}");
            assert!(msg.contains("allow_options = true"), "{bad}: {msg}");
        }
        // A dash inside a value, or after literal text, is no option.
        let got = build_argv(
            "list_txt",
            &t,
            &params(json!({"dir": "a-b", "glob": "x", "n": -3, "list": ["./-x"]})),
            no_options,
        )
        .unwrap();
        assert_eq!(got, ["find", "a-b", "-name", "x.txt", "--max=-3", "./-x"]);
        // Only the parameter that opts in may.
        let only_dir = |p: &str| p == "dir";
        let got = build_argv("t", &t, &params(json!({"dir": "-delete"})), only_dir).unwrap();
        assert_eq!(got, ["find", "-delete", "-name"]);
        assert!(
            build_argv(
                "t",
                &t,
                &params(json!({"dir": "x", "glob": "-x"})),
                only_dir
            )
            .is_err()
        );
    }

    /// `allow_options` is read from either parameters form, must be a boolean, and is not part
    /// of the schema the model sees.
    #[test]
    fn allow_options_is_declared_per_parameter() {
        let parse =
            |text: &str| toolgate_config::ConfigFile::parse(std::path::Path::new("/c.toml"), text);
        let f = parse(
            "[[command_tools]]\nname = \"a\"\nargv = [\"echo\", \"{f}\", \"{g}\"]\nparameters = { f = { type = \"string\", allow_options = true }, g = { type = \"string\" } }\n",
        )
        .unwrap();
        let d = &f.command_tools[0];
        assert!(d.allows_options("f"));
        assert!(!d.allows_options("g"));
        assert!(!d.allows_options("nope"));
        assert_eq!(
            d.input_schema()["properties"]["f"],
            json!({"type": "string"})
        );
        let f = parse(
            "[[command_tools]]\nname = \"b\"\nargv = [\"echo\", \"{f}\"]\nparameters = { type = \"object\", properties = { f = { type = \"string\", allow_options = true } } }\n",
        )
        .unwrap();
        assert!(f.command_tools[0].allows_options("f"));
        let err = parse(
            "[[command_tools]]\nname = \"c\"\nargv = [\"echo\", \"{f}\"]\nparameters = { f = { type = \"string\", allow_options = \"yes\" } }\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("`allow_options` must be true or false"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn runs_in_the_root_with_a_cleared_env_and_a_timeout() {
        let dir = tempfile::tempdir().unwrap();
        let mut ws = WorkspaceConfig::new(dir.path()).unwrap();
        ws.output_cap_bytes = 4096;
        // This tests the tool itself; the confined path is tested through the real binary.
        ws.processes = Processes::Unconfined;
        let decl = |name: &str, argv: &[&str], timeout: Option<i64>| CommandToolDecl {
            name: name.to_owned(),
            description: String::new(),
            argv: argv.iter().map(|s| (*s).to_owned()).collect(),
            parameters: Some(json!({"arg": {"type": "string"}})),
            timeout_secs: timeout,
            source: PathBuf::from("/c.toml"),
        };
        let script = "pwd; env | cut -d= -f1 | sort | tr '\\n' ' '; echo; echo \"$1\"";
        let mut tools = CommandTools::new(
            vec![
                decl("where", &["sh", "-c", script, "sh", "{arg}"], None),
                decl("slow", &["sleep", "30"], Some(1)),
                decl("missing", &["no-such-program-xyz"], None),
            ],
            &ws,
        );
        let call = |id: &str, p: Value| ToolCall::new(id, params(p));
        let o = tools
            .call(&call("where", json!({"arg": "it's; $(x)"})))
            .await
            .unwrap();
        assert_eq!(o.kind.as_str(), "workspace/exec");
        assert_eq!(o.data["returncode"], 0);
        let stdout = o.data["stdout"].as_str().unwrap();
        let lines: Vec<&str> = stdout.lines().collect();
        assert_eq!(lines[0], ws.root.display().to_string());
        for var in lines[1].split_whitespace() {
            assert!(
                [
                    "PATH", "HOME", "LANG", "TERM", "PWD", "SHLVL", "_", "OLDPWD"
                ]
                .contains(&var),
                "unexpected variable {var}"
            );
        }
        assert_eq!(
            lines[2], "it's; $(x)",
            "the value is one argument, never shell text"
        );
        let started = std::time::Instant::now();
        let err = tools.call(&call("slow", json!({}))).await.unwrap_err();
        assert!(matches!(err, CallError::Timeout { .. }), "{err}");
        assert!(started.elapsed() < Duration::from_secs(10));
        let err = tools.call(&call("missing", json!({}))).await.unwrap_err();
        assert!(matches!(err, CallError::NotFound { .. }), "{err}");
        assert_eq!(
            tools.list_tools().await.unwrap()[0]
                .output_kind
                .as_ref()
                .unwrap()
                .as_str(),
            COMMAND_KIND
        );
        // Output is capped with a marker.
        ws.output_cap_bytes = 8;
        tools = CommandTools::new(
            vec![decl("big", &["sh", "-c", "yes | head -c 100"], None)],
            &ws,
        );
        let o = tools.call(&call("big", json!({}))).await.unwrap();
        assert_eq!(o.data["stdout"], "y\ny\ny\ny\n…[truncated 92 bytes]");
    }
}
