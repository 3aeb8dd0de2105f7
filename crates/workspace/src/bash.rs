//! bash: one command line in the workspace root, started as every child process is
//! ([`crate::process::run`]): OS-confined, a cleared environment, a null stdin, a timeout that
//! kills everything it started, and capped output.

use std::time::Duration;

use serde_json::{Map, Value};
use toolgate_core::{CallError, ToolOutcome};

use crate::params::Params;
use crate::process::{Run, run};
use crate::specs::kinds;
use crate::{Inner, outcome};

/// The shell: bash when present, else sh.
fn shell() -> &'static str {
    for candidate in ["/bin/bash", "/usr/bin/bash"] {
        if std::path::Path::new(candidate).exists() {
            return candidate;
        }
    }
    "/bin/sh"
}

pub(crate) async fn bash(
    inner: &Inner,
    map: &Map<String, Value>,
    deadline: Option<Duration>,
) -> Result<ToolOutcome, CallError> {
    let p = Params::new("bash", map);
    let command = p.str_req("command")?;
    let config = &inner.config;
    let asked = match p.num_opt("timeout")? {
        None => config.bash_timeout,
        Some(s) if s.is_finite() && s > 0.0 => Duration::from_secs_f64(s.min(1e9)),
        Some(s) => {
            return Err(CallError::invalid(format!(
                "bash: timeout must be a positive number of seconds (got {s})."
            )));
        }
    };
    if asked > config.bash_max_timeout {
        return Err(CallError::invalid(format!(
            "bash: timeout {} s is above the limit of {} s.",
            asked.as_secs_f64(),
            config.bash_max_timeout.as_secs_f64()
        )));
    }
    let limit = deadline.map_or(asked, |d| d.min(asked));

    let env: Vec<(String, std::ffi::OsString)> = config
        .env_allow
        .iter()
        .filter_map(|name| Some((name.clone(), std::env::var_os(name)?)))
        .collect();
    let cap = config.output_cap_bytes;
    let run = run(
        &config.processes,
        Run {
            tool: "bash",
            program: std::path::Path::new(shell()),
            args: &["-c".to_owned(), command.to_owned()],
            cwd: inner.guard.root(),
            env: &env,
            limit,
            cap,
        },
    )
    .await?;
    let (summary, data) = run.report(cap);
    Ok(outcome(kinds::EXEC, summary, data))
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use serde_json::json;
    use toolgate_core::{CallError, Provider, ToolCall};

    use crate::testutil::{params, run, ws};

    #[tokio::test]
    async fn runs_in_the_root_and_reports_exit_codes() {
        let (_d, t) = ws();
        let o = run(&t, "bash", json!({"command": "pwd; echo err >&2; exit 3"}))
            .await
            .unwrap();
        assert_eq!(
            o.data,
            json!({
                "stdout": format!("{}\n", t.config().root.display()),
                "stderr": "err\n",
                "returncode": 3
            })
        );
        assert_eq!(o.kind.as_str(), "workspace/exec");
    }

    #[tokio::test]
    async fn stdin_is_empty_and_env_is_cleared() {
        let (_d, t) = ws();
        let o = run(
            &t,
            "bash",
            json!({"command": "cat; env | cut -d= -f1 | sort | tr '\\n' ' '"}),
        )
        .await
        .unwrap();
        let out = o.data["stdout"].as_str().unwrap();
        for name in out.split_whitespace() {
            assert!(
                [
                    "PATH", "HOME", "LANG", "TERM", "PWD", "SHLVL", "_", "OLDPWD"
                ]
                .contains(&name),
                "unexpected variable {name} in {out}"
            );
        }
    }

    #[tokio::test]
    async fn timeout_param_and_call_deadline() {
        let (_d, t) = ws();
        let started = Instant::now();
        let err = run(&t, "bash", json!({"command": "sleep 30", "timeout": 0.3}))
            .await
            .unwrap_err();
        assert!(matches!(err, CallError::Timeout { .. }), "{err}");
        assert!(started.elapsed() < Duration::from_secs(5));
        let mut call = ToolCall::new("bash", params(json!({"command": "sleep 30"})));
        call.timeout = Some(Duration::from_millis(300));
        let started = Instant::now();
        assert!(matches!(
            t.call(&call).await.unwrap_err(),
            CallError::Timeout { .. }
        ));
        assert!(started.elapsed() < Duration::from_secs(5));
        let err = run(&t, "bash", json!({"command": "true", "timeout": 100000}))
            .await
            .unwrap_err();
        assert!(matches!(err, CallError::InvalidInput { .. }), "{err}");
    }

    #[tokio::test]
    async fn background_children_do_not_outlive_the_call() {
        let (_d, t) = ws();
        let started = Instant::now();
        let o = run(&t, "bash", json!({"command": "sleep 60 & echo started"}))
            .await
            .unwrap();
        assert_eq!(o.data["stdout"], json!("started\n"));
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "pipes were not held open"
        );
    }
}
