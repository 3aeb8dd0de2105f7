//! A cloned repository's project configuration may be anything a filesystem can hold (issue 30,
//! item 6): `.toolgate/config.toml` as a symbolic link to `/dev/zero`, a FIFO, a directory, a
//! 50 MB file. None of it may hang or exhaust an entry point: the file is read only when it is
//! a regular file (not followed through a link) of at most 1 MiB, and anything else is ignored
//! with a warning naming the path. Every test runs the real binary under a deadline, so a hang
//! fails the test instead of hanging CI.
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(clippy::disallowed_methods)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use toolgate_test_support::Killed;

use serde_json::{Value, json};

mod support;

/// Far above what `exec --code 1` takes in a debug build (well under a second), far below a
/// CI job's timeout.
const DEADLINE: Duration = Duration::from_secs(30);

struct Repo {
    dir: tempfile::TempDir,
}

impl Repo {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("r/.toolgate")).unwrap();
        Self { dir }
    }

    fn root(&self) -> PathBuf {
        self.dir.path().join("r")
    }

    fn config(&self) -> PathBuf {
        self.root().join(".toolgate/config.toml")
    }

    fn command(&self, args: &[&str]) -> std::process::Command {
        let mut cmd = support::isolated_toolgate(self.dir.path());
        cmd.args(args);
        cmd
    }
}

/// Wait for `child` at most `DEADLINE`; a child still running then is killed and the test fails.
fn finish(mut child: Child, what: &str) -> Output {
    let started = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if started.elapsed() > DEADLINE {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "{what} did not finish within {DEADLINE:?} (hung on the project config); stderr: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `toolgate exec --workspace r --code 1` finishes, succeeds, and warns about the config path.
fn exec_finishes_with_a_warning(repo: &Repo, why: &str) {
    let root = repo.root().display().to_string();
    let child = repo
        .command(&["exec", "--workspace", &root, "--code", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let out = finish(child, "toolgate exec");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "exec failed: {}; stderr: {stderr}",
        String::from_utf8_lossy(&out.stdout)
    );
    let env: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(env["success"], true, "{env}");
    assert_eq!(env["return_value"], 1, "{env}");
    let path = repo.config().display().to_string();
    assert!(
        stderr.contains(&path) && stderr.contains(why) && stderr.contains("ignored"),
        "the warning names {path} and says it is {why:?} and ignored: {stderr}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "exec took {:?}",
        started.elapsed()
    );
}

fn mkfifo(path: &Path) {
    let ok = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap()
        .success();
    assert!(ok, "mkfifo {}", path.display());
}

#[test]
fn a_dev_zero_symlink_as_project_config_does_not_hang_exec() {
    let repo = Repo::new();
    std::os::unix::fs::symlink("/dev/zero", repo.config()).unwrap();
    exec_finishes_with_a_warning(&repo, "symbolic link");
}

#[test]
fn a_symlink_to_a_regular_file_as_project_config_is_not_followed() {
    // The link could point anywhere on the machine (a file outside the workspace, one that
    // changes after `toolgate trust`): a repository has no need for it, so it is refused.
    let repo = Repo::new();
    let outside = repo.dir.path().join("outside.toml");
    std::fs::write(&outside, "[tools]\ndeny = [\"view\"]\n").unwrap();
    std::os::unix::fs::symlink(&outside, repo.config()).unwrap();
    exec_finishes_with_a_warning(&repo, "symbolic link");
}

#[test]
fn a_fifo_as_project_config_does_not_block_exec() {
    let repo = Repo::new();
    mkfifo(&repo.config());
    exec_finishes_with_a_warning(&repo, "FIFO");
}

#[test]
fn a_directory_as_project_config_is_ignored() {
    let repo = Repo::new();
    std::fs::create_dir_all(repo.config()).unwrap();
    exec_finishes_with_a_warning(&repo, "directory");
}

#[test]
fn a_50_mb_project_config_is_refused_by_its_size_before_reading() {
    let repo = Repo::new();
    let f = std::fs::File::create(repo.config()).unwrap();
    f.set_len(50 * 1024 * 1024).unwrap();
    drop(f);
    exec_finishes_with_a_warning(&repo, "larger than");
}

#[test]
fn a_fifo_custom_tool_in_a_trusted_project_does_not_block() {
    // `toolgate trust` hashes the project's files and the loader reads them: neither may block
    // on a FIFO that appears in `.toolgate/tools/` (a repository can ship one).
    let repo = Repo::new();
    std::fs::write(repo.config(), "[tools]\ndeny = []\n").unwrap();
    std::fs::create_dir_all(repo.root().join(".toolgate/tools")).unwrap();
    let root = repo.root().display().to_string();
    let out = finish(
        repo.command(&["trust", &root])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
        "toolgate trust",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // After trusting: the FIFO changes the project (untrusted again), and nothing blocks.
    mkfifo(&repo.root().join(".toolgate/tools/late.py"));
    let child = repo
        .command(&["exec", "--workspace", &root, "--code", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = finish(child, "toolgate exec");
    let env: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no envelope ({e}); stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert_eq!(env["return_value"], 1, "{env}");
}

/// Lines of a child's stdout, read on a thread (so a hung child cannot block the test).
fn lines_of(child: &mut Child) -> mpsc::Receiver<String> {
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

#[test]
fn mcp_starts_with_a_dev_zero_or_fifo_project_config() {
    for fifo in [false, true] {
        let repo = Repo::new();
        if fifo {
            mkfifo(&repo.config());
        } else {
            std::os::unix::fs::symlink("/dev/zero", repo.config()).unwrap();
        }
        let root = repo.root().display().to_string();
        let mut child = repo
            .command(&["mcp", "--workspace", &root, "--surface", "codeact"])
            .current_dir(repo.root())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let rx = lines_of(&mut child);
        let _guard = Killed(child);
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "special-config-test", "version": "1"}}});
        writeln!(stdin, "{init}").unwrap();
        stdin.flush().unwrap();
        let line = rx
            .recv_timeout(DEADLINE)
            .unwrap_or_else(|_| panic!("mcp did not answer initialize (fifo: {fifo})"));
        let v: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["result"]["serverInfo"]["name"], "toolgate", "{v}");
    }
}

#[test]
fn serve_starts_with_a_dev_zero_project_config() {
    let repo = Repo::new();
    std::os::unix::fs::symlink("/dev/zero", repo.config()).unwrap();
    let root = repo.root().display().to_string();
    let mut child = repo
        .command(&["serve", "--port", "0", "--workspace", &root])
        .current_dir(repo.root())
        .env("TOOLGATE_TOKEN", "special-config-test-token")
        .env_remove("TOOLGATE_MODEL_URL")
        .env_remove("TOOLGATE_MODEL")
        .env_remove("TOOLGATE_MCP_SERVERS")
        .env_remove("TOOLGATE_STATE")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let rx = lines_of(&mut child);
    let _guard = Killed(child);
    let line = rx
        .recv_timeout(DEADLINE)
        .expect("serve printed no banner (hung on the project config)");
    assert!(line.starts_with("Workbench: http://"), "{line}");
}
