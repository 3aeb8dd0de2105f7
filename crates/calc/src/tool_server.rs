//! External tool servers over the debrief-calc one-shot stdio protocol (reference §10.4): one
//! JSON request on stdin, one JSON response on stdout, one process per call. Existing Python
//! tools plug in through this provider.
//!
//! The registry validates ids and parameters before a provider is called, so a process is never
//! spawned for an invented id or bad parameters. A call that outlives its timeout is killed (the
//! spike only marked it cancelled); stderr is captured into the error.
//!
//! Each process starts as upstream MCP servers do: a cleared environment, its own process group
//! (killed when the call ends, times out or is dropped), and OS confinement through toolgate's
//! launcher ([`toolgate_confine::server_policy`]): read-only its program's and scripts'
//! install and the system's directories, writes only a private tmp/home — no workspace (a calc
//! server gets its input on stdin) — no network unless the user's config allows it, a PID
//! namespace so nothing it starts outlives the call. Where this machine cannot confine, it
//! starts unconfined with a warning (as upstream servers do), or on purpose when the user's own
//! config opts the server out.

use std::process::Stdio;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Map, Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use toolgate_core::{
    CallError, ChangeSet, Edit, OutputKind, Provider, ProviderError, ToolCall, ToolOutcome,
    ToolSpec,
};

/// The variables of toolgate's environment a tool server inherits (the rest are cleared; a
/// server's own `env` adds what it needs).
const INHERITED_ENV: &[&str] = &[
    "PATH", "HOME", "LANG", "LC_ALL", "TERM", "TMPDIR", "TZ", "USER", "LOGNAME",
];

/// How much of a failing process's stderr goes into the error message.
const STDERR_CAP: usize = 4000;

#[derive(Debug, Clone)]
pub struct StdioToolServer {
    pub name: String,
    /// argv that prints the tool list (a JSON array of MCP tool objects) and exits.
    pub list_command: Vec<String>,
    /// argv that reads one request on stdin and writes one response.
    pub call_command: Vec<String>,
    pub timeout: Duration,
    /// Extra environment for the processes (beyond `PATH`, `HOME`, `LANG` and a few more of
    /// toolgate's own; the rest is cleared).
    pub env: Vec<(String, String)>,
    /// Starts the processes under OS confinement (toolgate's own binary as the launcher).
    /// `None`: this machine cannot confine; they start unconfined with a warning, as upstream
    /// MCP servers do.
    pub confiner: Option<toolgate_confine::Confiner>,
    /// Whether the confined processes may use the network: only when the user's own config
    /// says so.
    pub network: bool,
    /// Start without OS confinement: the user's own config opted this server out
    /// (`"toolgate": {"unconfined": true}`), never a project's.
    pub unconfined: bool,
}

fn humanise(id: &str) -> String {
    id.split(['-', '_'])
        .filter(|w| !w.is_empty())
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
                .unwrap_or_default()
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Turn one MCP tool object from debrief-calc's listing into a spec. Every declared parameter is
/// kept (the spike kept only "picker" parameters); unknown parameters are rejected.
pub fn spec_from_mcp(tool: &Value) -> Option<ToolSpec> {
    let id = tool.get("name")?.as_str()?.to_owned();
    let params = tool
        .pointer("/inputSchema/properties/params")
        .cloned()
        .unwrap_or_else(|| json!({"type": "object", "properties": {}}));
    let mut schema = Map::new();
    schema.insert("type".into(), json!("object"));
    schema.insert(
        "properties".into(),
        params
            .get("properties")
            .cloned()
            .unwrap_or_else(|| json!({})),
    );
    if let Some(r) = params.get("required") {
        schema.insert("required".into(), r.clone());
    }
    schema.insert("additionalProperties".into(), json!(false));
    let ann = tool
        .get("annotations")
        .cloned()
        .unwrap_or_else(|| json!({}));
    Some(ToolSpec {
        title: humanise(&id),
        description: tool
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        input_schema: Value::Object(schema),
        output_kind: ann
            .get("debrief:outputKind")
            .and_then(Value::as_str)
            .map(OutputKind::new),
        category: ann
            .get("debrief:category")
            .and_then(Value::as_str)
            .unwrap_or("external")
            .to_owned(),
        annotations: ann.as_object().cloned().unwrap_or_default(),
        id,
    })
}

struct RunOutput {
    status: Option<i32>,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

/// The most of a response (stdout) kept; a server that prints more gets an error, not an
/// unbounded buffer.
const STDOUT_CAP: usize = 64 * 1024 * 1024;

/// Kills a process group when dropped (the call ended, timed out, or its future was dropped).
struct GroupKill(Option<i32>);

impl Drop for GroupKill {
    fn drop(&mut self) {
        if let Some(pid) = self.0.take().and_then(rustix::process::Pid::from_raw) {
            // ESRCH (the group is gone already) is fine.
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
    }
}

/// Read to the end, keeping the first `cap` bytes (the rest drained, so the child never blocks
/// on a full pipe); also whether anything was cut.
async fn read_capped<R: tokio::io::AsyncRead + Unpin>(mut r: R, cap: usize) -> (Vec<u8>, bool) {
    let mut kept = Vec::new();
    let mut cut = false;
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match r.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let take = n.min(cap.saturating_sub(kept.len()));
                kept.extend_from_slice(&buf[..take]);
                cut |= take < n;
            }
        }
    }
    (kept, cut)
}

impl StdioToolServer {
    /// The command for `argv`: through the confinement launcher unless this server is
    /// unconfined (by the user's choice, or because this machine cannot confine), and the
    /// private home/tmp to remove once the process is gone.
    fn command(
        &self,
        program: &str,
        args: &[String],
    ) -> Result<
        (
            tokio::process::Command,
            Option<toolgate_confine::PrivateDirs>,
        ),
        CallError,
    > {
        match self.confiner.as_ref().filter(|_| !self.unconfined) {
            Some(confiner) => {
                let dirs = toolgate_confine::PrivateDirs::new().map_err(|e| {
                    CallError::failed(format!(
                        "could not make a private tmp dir for the tool server `{program}`: {e}"
                    ))
                })?;
                // No workspace (cwd): the server gets its input on stdin.
                let policy = toolgate_confine::server_policy(program, args, None, &dirs)
                    .with_network(self.network);
                let cmd = confiner.command(&policy, std::ffi::OsStr::new(program), args);
                Ok((tokio::process::Command::from(cmd), Some(dirs)))
            }
            None => {
                let mut cmd = tokio::process::Command::new(program);
                cmd.args(args);
                Ok((cmd, None))
            }
        }
    }

    async fn run(
        &self,
        argv: &[String],
        input: Option<Vec<u8>>,
        timeout: Duration,
        tool: &str,
    ) -> Result<RunOutput, CallError> {
        let Some((program, args)) = argv.split_first() else {
            return Err(CallError::failed(
                "the tool server has no command configured",
            ));
        };
        let deadline = tokio::time::Instant::now() + timeout;
        let (mut cmd, private) = self.command(program, args)?;
        // A tool server gets toolgate's basic environment and what its configuration names,
        // never the rest (API keys and tokens in toolgate's own environment are not its
        // business).
        cmd.env_clear();
        for key in INHERITED_ENV {
            if let Some(v) = std::env::var_os(key) {
                cmd.env(key, v);
            }
        }
        let mut child = cmd
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdin(if input.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| {
                CallError::failed(format!("could not start the tool server `{program}`: {e}"))
            })?;
        // However this future ends, the group dies (and, confined, everything it started).
        let group = GroupKill(child.id().and_then(|p| i32::try_from(p).ok()));
        let stdin = child.stdin.take();
        let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
            return Err(CallError::failed(format!(
                "could not capture the output of the tool server `{program}`"
            )));
        };
        let read_out = tokio::spawn(read_capped(stdout, STDOUT_CAP));
        let read_err = tokio::spawn(read_capped(stderr, STDERR_CAP * 4));
        let work = async {
            if let (Some(mut w), Some(bytes)) = (stdin, input) {
                // A server that exits without reading its input is reported by its response.
                let _ = w.write_all(&bytes).await;
                drop(w);
            }
            child.wait().await.ok().and_then(|s| s.code())
        };
        let Ok(status) = tokio::time::timeout(timeout, work).await else {
            drop(group);
            read_out.abort();
            read_err.abort();
            return Err(CallError::Timeout {
                tool: tool.to_owned(),
                seconds: timeout.as_secs_f64(),
            });
        };
        // The server is done: whatever it left running goes too (it would hold the pipes
        // open, and nothing may outlive the call).
        drop(group);
        // Confined, the pipes close with the namespace; unconfined, a `setsid` daemon may hold
        // them open: read no longer than the call had left.
        let left = deadline
            .saturating_duration_since(tokio::time::Instant::now())
            .max(Duration::from_millis(500));
        let outputs = tokio::time::timeout(left, async {
            let out = read_out.await.unwrap_or_default();
            let err = read_err.await.unwrap_or_default();
            (out, err)
        })
        .await;
        drop(private);
        let Ok(((stdout, stdout_cut), (stderr, _))) = outputs else {
            return Err(CallError::failed(format!(
                "the tool server `{program}` exited but left a process holding its output open; run it confined, or make it not leave processes behind"
            )));
        };
        if stdout_cut {
            return Err(CallError::failed(format!(
                "the tool server `{program}` printed more than {} MiB; its response was refused",
                STDOUT_CAP / (1024 * 1024)
            )));
        }
        Ok(RunOutput {
            status,
            stdout,
            stderr,
        })
    }
}

fn stderr_text(bytes: &[u8]) -> String {
    let s = String::from_utf8_lossy(bytes);
    let s = s.trim();
    if s.len() > STDERR_CAP {
        let cut = s.char_indices().nth(STDERR_CAP).map_or(s.len(), |(i, _)| i);
        format!("{}… [stderr truncated]", &s[..cut])
    } else {
        s.to_owned()
    }
}

/// Interpret a debrief-calc response for `tool`.
pub fn parse_response(
    tool: &str,
    declared: Option<&OutputKind>,
    response: &Value,
) -> Result<ToolOutcome, CallError> {
    if let Some(err) = response.get("error") {
        let message = err
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("Unknown tool error")
            .to_owned();
        return Err(
            match err
                .pointer("/data/debrief:errorCategory")
                .and_then(Value::as_str)
            {
                Some("invalid_input") => CallError::InvalidInput { message },
                Some("resource_not_found") => CallError::NotFound { message },
                _ => CallError::Failed { message },
            },
        );
    }
    let content = response
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| {
            CallError::failed(format!(
                "Tool \"{tool}\" returned neither content nor an error"
            ))
        })?;
    let first_ann = content.first().and_then(|c| c.get("annotations"));
    let result_type = first_ann
        .and_then(|a| a.get("debrief:resultType"))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .or_else(|| declared.map(|k| k.as_str().to_owned()))
        .unwrap_or_default();
    let label = first_ann
        .and_then(|a| a.get("debrief:label"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let mut features = Vec::new();
    for item in content {
        if let Some(text) = item.pointer("/resource/text").and_then(Value::as_str)
            && let Ok(v) = serde_json::from_str::<Value>(text)
        {
            features.push(v);
        }
    }
    let kind = OutputKind::new(result_type.trim_start_matches("artifact/").to_owned());
    if kind.is_mutation() {
        let edits = features
            .into_iter()
            .map(|f| Edit::Upsert {
                id: toolgate_feature::Feature(&f).id().unwrap_or_default(),
                item: f,
            })
            .filter(|e| !e.id().is_empty())
            .collect::<Vec<_>>();
        let n = edits.len();
        Ok(ToolOutcome {
            kind,
            summary: format!("{} changed {n} feature(s).", humanise(tool)),
            data: Value::Null,
            change_set: Some(ChangeSet { label, edits }),
        })
    } else {
        let n = features.len();
        Ok(ToolOutcome {
            kind,
            summary: format!("{} returned {n} item(s).", humanise(tool)),
            data: json!({ "items": features }),
            change_set: None,
        })
    }
}

#[async_trait]
impl Provider for StdioToolServer {
    fn name(&self) -> &str {
        &self.name
    }

    async fn list_tools(&self) -> Result<Vec<ToolSpec>, ProviderError> {
        let err = |message: String| ProviderError {
            provider: self.name.clone(),
            message,
        };
        if self.confiner.is_none() && !self.unconfined {
            tracing::warn!(
                server = %self.name,
                "starting the tool server without OS confinement (unavailable here)"
            );
        }
        let out = self
            .run(&self.list_command, None, self.timeout, "list")
            .await
            .map_err(|e| err(e.to_string()))?;
        if out.status != Some(0) {
            return Err(err(format!(
                "the listing command exited with {:?}: {}",
                out.status,
                stderr_text(&out.stderr)
            )));
        }
        let tools: Vec<Value> = serde_json::from_slice(&out.stdout)
            .map_err(|e| err(format!("the listing is not a JSON array of tools: {e}")))?;
        Ok(tools.iter().filter_map(spec_from_mcp).collect())
    }

    async fn call(&self, call: &ToolCall) -> Result<ToolOutcome, CallError> {
        let request = json!({
            "tool": call.tool_id,
            "features": call.subject.as_array().cloned().unwrap_or_default(),
            "params": call.params,
        });
        let bytes = serde_json::to_vec(&request).map_err(|e| CallError::failed(e.to_string()))?;
        let timeout = call.timeout.unwrap_or(self.timeout);
        let out = self
            .run(&self.call_command, Some(bytes), timeout, &call.tool_id)
            .await?;
        // A non-zero exit with a JSON response is still read (the protocol prints errors to stdout).
        let response: Value = match serde_json::from_slice(&out.stdout) {
            Ok(v) => v,
            Err(_) => {
                let stderr = stderr_text(&out.stderr);
                return Err(CallError::failed(format!(
                    "Tool \"{}\" failed (exit status {}): {}",
                    call.tool_id,
                    out.status
                        .map_or_else(|| "killed".to_owned(), |s| s.to_string()),
                    if stderr.is_empty() {
                        "no output".to_owned()
                    } else {
                        stderr
                    }
                )));
            }
        };
        parse_response(&call.tool_id, None, &response).map_err(|e| match e {
            CallError::Failed { message } if !out.stderr.is_empty() => CallError::Failed {
                message: format!("{message}\nstderr: {}", stderr_text(&out.stderr)),
            },
            other => other,
        })
    }
}
