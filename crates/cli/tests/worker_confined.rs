//! The sandbox worker (`toolgate __sandbox-worker`, the process the interpreter runs in) is
//! itself under Landlock: if a bug in the interpreter ever reached the OS, the kernel would
//! refuse every file. Seen from outside: the worker runs with `NoNewPrivs: 1`, which
//! `landlock_restrict_self` requires and which nothing else in the worker sets. It holds no
//! capability either.
#![allow(clippy::unwrap_used)]

mod support;

use std::time::{Duration, Instant};

fn status_field(pid: &str, field: &str) -> Option<String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .map(|v| v.trim().to_owned())
}

fn workers_of(parent: u32) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let pid = e.file_name().to_string_lossy().into_owned();
            let cmd = std::fs::read(e.path().join("cmdline")).ok()?;
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            let ppid = status_field(&pid, "PPid:")?;
            (cmd.contains(toolgate_sandbox::WORKER_SUBCOMMAND) && ppid == parent.to_string())
                .then_some(pid)
        })
        .collect()
}

#[test]
fn the_sandbox_worker_runs_under_landlock() {
    if toolgate_confine::probe().is_err() {
        eprintln!("skipped: no Landlock on this kernel");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let marker = support::marker("worker");
    let mut child = support::isolated_toolgate(dir.path())
        .args(["exec", "--workspace"])
        .arg(&ws)
        .args([
            "--code",
            &format!("bash(command=\"exec -a {marker} sleep 20\")"),
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let workers = loop {
        let w = workers_of(child.id());
        if !w.is_empty() && !support::running(&marker).is_empty() {
            break w;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no worker appeared"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let nnp: Vec<Option<String>> = workers
        .iter()
        .map(|pid| status_field(pid, "NoNewPrivs:"))
        .collect();
    // And it holds no capability (toolgate may run as root); as root it has emptied its
    // bounding set too (without privilege that set cannot be changed, nor used).
    let root =
        status_field("self", "Uid:").is_some_and(|u| u.split_whitespace().nth(1) == Some("0"));
    let mut fields = vec!["CapInh:", "CapPrm:", "CapEff:", "CapAmb:"];
    if root {
        fields.push("CapBnd:");
    }
    let caps: Vec<(String, &str, Option<String>)> = workers
        .iter()
        .flat_map(|pid| {
            fields
                .iter()
                .map(move |f| (pid.clone(), *f, status_field(pid, f)))
        })
        .collect();
    // A session of its own (session id = its pid) and no controlling terminal (tty_nr 0):
    // /proc/PID/stat fields 6 and 7, after the parenthesised command name.
    let sessions: Vec<(String, Option<(String, String)>)> = workers
        .iter()
        .map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let after = stat
                .rsplit_once(')')
                .map(|(_, r)| r.to_owned())
                .unwrap_or_default();
            let f: Vec<&str> = after.split_whitespace().collect();
            (
                pid.clone(),
                f.get(3)
                    .zip(f.get(4))
                    .map(|(s, t)| ((*s).to_owned(), (*t).to_owned())),
            )
        })
        .collect();
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        sessions
            .iter()
            .all(|(pid, st)| st.as_ref().is_some_and(|(s, t)| s == pid && t == "0")),
        "the worker leads its own session with no terminal: {sessions:?}"
    );
    assert!(
        nnp.iter().all(|v| v.as_deref() == Some("1")),
        "the worker restricted itself: {nnp:?}"
    );
    assert!(
        caps.iter()
            .all(|(_, _, v)| v.as_deref() == Some("0000000000000000")),
        "the worker holds capabilities: {caps:?}"
    );
}
