//! Running a child process under a cap: read its output to the end keeping a bounded prefix,
//! and kill its whole process group. Shared by `bash` and the TOML command tools (`toolgate
//! exec`), so both have the same timeout and output behaviour.

use rustix::process::{Pid, Signal, kill_process_group};
use tokio::io::{AsyncRead, AsyncReadExt};

/// Read a stream to its end, keeping the first `cap` bytes and counting the rest (draining it
/// so the child never blocks on a full pipe).
pub async fn read_capped<R: AsyncRead + Unpin>(mut r: R, cap: usize) -> (Vec<u8>, usize) {
    let mut kept = Vec::new();
    let mut total = 0usize;
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match r.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                total += n;
                if kept.len() < cap {
                    let take = n.min(cap - kept.len());
                    kept.extend_from_slice(&buf[..take]);
                }
            }
        }
    }
    (kept, total)
}

/// Kill a process group (the child was started as its leader).
pub fn kill_group(pid: Option<u32>) {
    if let Some(pid) = pid
        .and_then(|p| i32::try_from(p).ok())
        .and_then(Pid::from_raw)
    {
        // ESRCH (the group is gone already) is fine.
        let _ = kill_process_group(pid, Signal::KILL);
    }
}

/// How the tools that start processes (`bash`, command tools) start them.
#[derive(Debug, Clone, PartialEq)]
pub enum Processes {
    /// Under OS confinement (Landlock + seccomp + a PID namespace; see `toolgate-confine`):
    /// files only in the workspace and a private tmp/home, no network unless `network`, nothing
    /// left running after the call.
    Confined {
        confiner: toolgate_confine::Confiner,
        network: bool,
    },
    /// Without OS confinement, because the user's own config said so
    /// (`[workspace] unconfined_processes = true`). Still a cleared environment and a killed
    /// process group.
    Unconfined,
    /// Refused: confinement is unavailable and the user did not opt out of it.
    Off { reason: String },
}

impl Default for Processes {
    fn default() -> Self {
        Self::Off {
            reason: "no OS confinement was set up for this workspace".to_owned(),
        }
    }
}

impl Processes {
    /// Confined through `launcher` (toolgate's own binary) when this machine can; else
    /// unconfined if the user allowed it; else off, saying why.
    pub fn detect(launcher: Option<&std::path::Path>, unconfined_ok: bool, network: bool) -> Self {
        // TOOLGATE_CONFINEMENT=off makes toolgate behave as on a machine without confinement
        // (for tests and for checking that setup): it can only turn process tools off, or
        // unconfined where the user's own config already allows that.
        let forced_off = std::env::var_os("TOOLGATE_CONFINEMENT").is_some_and(|v| v == "off");
        let found = match launcher {
            _ if forced_off => Err("TOOLGATE_CONFINEMENT=off is set".to_owned()),
            Some(l) => toolgate_confine::Confiner::detect(l).map_err(|e| e.to_string()),
            None => Err("toolgate's own binary could not be found".to_owned()),
        };
        match found {
            Ok(confiner) => Self::Confined { confiner, network },
            Err(_) if unconfined_ok => Self::Unconfined,
            Err(reason) => Self::Off { reason },
        }
    }

    /// One line for `toolgate doctor` and the tool descriptions.
    pub fn describe(&self) -> String {
        match self {
            Self::Confined { confiner, network } => format!(
                "confined: {}{}",
                confiner.level().describe(),
                if *network {
                    "; network allowed by the user's config"
                } else {
                    ""
                }
            ),
            Self::Unconfined => {
                "UNCONFINED (the user's config sets [workspace] unconfined_processes = true)"
                    .to_owned()
            }
            Self::Off { reason } => format!("off: {reason}"),
        }
    }
}

/// What one finished child left.
pub struct RunOutput {
    pub stdout: Vec<u8>,
    pub stdout_total: usize,
    pub stderr: Vec<u8>,
    pub stderr_total: usize,
    /// The exit code, or minus the signal that ended it.
    pub code: i32,
}

/// One child process for a tool call, started the one way every process-starting tool starts
/// them: confined as `processes` says, in `cwd` (inside the workspace), with only `env`, a null
/// stdin, its own process group; output read to the end with `cap` bytes kept per stream; the
/// group killed when the call ends, times out, or is dropped (a program's wall clock firing
/// drops it), and with confinement everything it started dies with it.
/// One child to run: what, where, with what, for how long.
pub struct Run<'a> {
    /// The tool's name, for messages.
    pub tool: &'a str,
    pub program: &'a std::path::Path,
    pub args: &'a [String],
    /// The working directory, inside the workspace; also what a confined child may write.
    pub cwd: &'a std::path::Path,
    /// The whole environment of the child.
    pub env: &'a [(String, std::ffi::OsString)],
    pub limit: std::time::Duration,
    /// Bytes kept of each of stdout and stderr.
    pub cap: usize,
}

pub async fn run(
    processes: &Processes,
    spec: Run<'_>,
) -> Result<RunOutput, toolgate_core::CallError> {
    use std::process::Stdio;
    use toolgate_core::CallError;

    let Run {
        tool,
        program,
        args,
        cwd,
        env,
        limit,
        cap,
    } = spec;
    // Found before anything starts, so a missing program is "not found" on every path (a
    // confined child would only report it from inside, as exit code 127).
    let path_env = env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.clone());
    let program = &find_program(program, cwd, path_env.as_deref()).ok_or_else(|| {
        CallError::NotFound {
            message: format!(
                "{tool}: cannot start \"{}\": no such program (looked in the workspace and on PATH)",
                program.display()
            ),
        }
    })?;
    let dirs;
    let mut cmd = match processes {
        Processes::Off { reason } => {
            return Err(CallError::PermissionDenied {
                message: format!(
                    "{tool} is off: child processes run only under OS confinement, which is unavailable here ({reason}). To run them unconfined on purpose, set `unconfined_processes = true` in the [workspace] table of your own config file (~/.config/toolgate/config.toml); a project's .toolgate/config.toml cannot."
                ),
            });
        }
        Processes::Unconfined => {
            dirs = None;
            tokio::process::Command::new(program)
        }
        Processes::Confined { confiner, network } => {
            let private = toolgate_confine::PrivateDirs::new().map_err(|e| {
                CallError::failed(format!("{tool}: could not make a private tmp dir: {e}"))
            })?;
            let policy = toolgate_confine::Policy::new(Some(cwd), &private).with_network(*network);
            let cmd = confiner.command(&policy, program.as_os_str(), args);
            dirs = Some(private);
            tokio::process::Command::from(cmd)
        }
    };
    if matches!(processes, Processes::Unconfined) {
        cmd.args(args);
    }
    cmd.current_dir(cwd)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = cmd.spawn().map_err(|e| {
        let message = format!("{tool}: cannot start \"{}\": {e}", program.display());
        if e.kind() == std::io::ErrorKind::NotFound {
            CallError::NotFound { message }
        } else {
            CallError::failed(message)
        }
    })?;
    // From here on, however this future ends (finished, timed out, dropped), the group dies.
    let group = GroupGuard(child.id());
    let (Some(out), Some(err)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(CallError::failed(format!(
            "{tool}: could not capture the output"
        )));
    };
    let out_task = tokio::spawn(read_capped(out, cap));
    let err_task = tokio::spawn(read_capped(err, cap));
    let status = match tokio::time::timeout(limit, child.wait()).await {
        Ok(Ok(status)) => status,
        Ok(Err(e)) => {
            return Err(CallError::failed(format!(
                "{tool}: waiting for the command failed: {e}"
            )));
        }
        Err(_) => {
            drop(group);
            let _ = child.wait().await;
            out_task.abort();
            err_task.abort();
            return Err(CallError::Timeout {
                tool: tool.to_owned(),
                seconds: limit.as_secs_f64(),
            });
        }
    };
    // The program is done: whatever it left running goes too (it would hold the pipes open,
    // and nothing may outlive the call).
    drop(group);
    let (stdout, stdout_total) = out_task.await.unwrap_or_default();
    let (stderr, stderr_total) = err_task.await.unwrap_or_default();
    drop(dirs);
    let code = status.code().unwrap_or_else(|| {
        use std::os::unix::process::ExitStatusExt;
        status.signal().map_or(-1, |s| -s)
    });
    Ok(RunOutput {
        stdout,
        stdout_total,
        stderr,
        stderr_total,
        code,
    })
}

impl RunOutput {
    /// The summary line and the `{stdout, stderr, returncode}` result every process tool gives.
    pub fn report(&self, cap: usize) -> (String, serde_json::Value) {
        let (stdout, out_cut) = crate::cap::cap_bytes(&self.stdout, self.stdout_total, cap);
        let (stderr, err_cut) = crate::cap::cap_bytes(&self.stderr, self.stderr_total, cap);
        let mut summary = format!(
            "Exit code {}; {} bytes on stdout, {} on stderr.",
            self.code, self.stdout_total, self.stderr_total
        );
        if out_cut || err_cut {
            summary.push_str(&format!(" Output cut at {cap} bytes per stream."));
        }
        let data = serde_json::json!({"stdout": stdout, "stderr": stderr, "returncode": self.code});
        (summary, data)
    }
}

/// `program` itself when it names a path (relative to `cwd`), else the first executable of that
/// name on `path`.
fn find_program(
    program: &std::path::Path,
    cwd: &std::path::Path,
    path: Option<&std::ffi::OsStr>,
) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |p: &std::path::Path| {
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.components().count() > 1 || program.is_absolute() {
        let p = cwd.join(program);
        return runnable(&p).then_some(p);
    }
    std::env::split_paths(path?)
        .filter(|d| d.is_absolute())
        .map(|d| d.join(program))
        .find(|p| runnable(p))
}

/// Kills a child's process group when dropped.
struct GroupGuard(Option<u32>);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        kill_group(self.0.take());
    }
}
