//! The escape suite: every way out of the workspace the anchor had (reference §2.2, §9, §12),
//! tried against a temporary workspace. Each test ends by checking that nothing was created
//! outside the workspace: the temp parent directory holds exactly what the test put there.
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(clippy::disallowed_methods)]

use std::collections::BTreeSet;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use toolgate_core::{CallError, Provider, ToolCall, ToolOutcome};
use toolgate_workspace::{WorkspaceConfig, WorkspaceTools};

/// A temp parent `P` with the workspace `P/ws`, a secret `P/secret.txt` beside it and a
/// directory `P/outside/`.
struct Fixture {
    parent: tempfile::TempDir,
    tools: WorkspaceTools,
    before: BTreeSet<PathBuf>,
}

fn listing(dir: &Path) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            if p.starts_with(dir.join("ws")) {
                continue; // inside the workspace anything goes
            }
            out.insert(p.strip_prefix(dir).unwrap().to_path_buf());
            if e.file_type().unwrap().is_dir() {
                stack.push(p);
            }
        }
    }
    out
}

impl Fixture {
    fn new() -> Self {
        Self::with(|_| {})
    }

    fn with(tweak: impl FnOnce(&mut WorkspaceConfig)) -> Self {
        let parent = tempfile::tempdir().unwrap();
        let ws = parent.path().join("ws");
        std::fs::create_dir_all(ws.join("src")).unwrap();
        std::fs::write(ws.join("src/app.py"), "print('hi')\n# TODO: one\n").unwrap();
        std::fs::write(parent.path().join("secret.txt"), "TOP SECRET root:x:0:0\n").unwrap();
        std::fs::create_dir(parent.path().join("outside")).unwrap();
        let mut config = WorkspaceConfig::new(&ws).unwrap();
        // These escapes are the tools' own (cleared environment, process-group kill, paths);
        // OS confinement of bash has its own tests (crates/confine, the CLI's exec tests), and
        // without it bash is off by default.
        config.processes = toolgate_workspace::Processes::Unconfined;
        tweak(&mut config);
        let tools = WorkspaceTools::new(config).unwrap();
        let before = listing(parent.path());
        Fixture {
            parent,
            tools,
            before,
        }
    }

    fn root(&self) -> &Path {
        &self.tools.config().root
    }

    fn outside(&self) -> PathBuf {
        self.parent.path().canonicalize().unwrap()
    }

    async fn call(&self, tool: &str, params: Value) -> Result<ToolOutcome, CallError> {
        let Value::Object(map) = params else {
            panic!("params must be an object")
        };
        self.tools.call(&ToolCall::new(tool, map)).await
    }

    async fn denied(&self, tool: &str, params: Value) -> String {
        match self.call(tool, params.clone()).await {
            Err(CallError::PermissionDenied { message }) => message,
            other => panic!("{tool} {params}: expected PermissionDenied, got {other:?}"),
        }
    }

    /// Nothing was created (or removed) outside the workspace.
    fn untouched(&self) {
        assert_eq!(
            listing(self.parent.path()),
            self.before,
            "something changed outside the workspace"
        );
        assert_eq!(
            std::fs::read_to_string(self.parent.path().join("secret.txt")).unwrap(),
            "TOP SECRET root:x:0:0\n"
        );
    }
}

fn assert_inside_message(msg: &str) {
    assert!(
        msg.contains("must stay inside the workspace"),
        "the refusal says why: {msg}"
    );
}

// ---------------------------------------------------------------------------------------------
// Paths

#[tokio::test]
async fn dotdot_traversal_is_refused_by_every_path_tool() {
    let f = Fixture::new();
    let msg = f.denied("view", json!({"path": "../secret.txt"})).await;
    assert_inside_message(&msg);
    assert!(msg.contains("../secret.txt"), "names the path: {msg}");
    f.denied("view", json!({"path": "src/../../secret.txt"}))
        .await;
    f.denied("view", json!({"path": ".."})).await;
    f.denied("create", json!({"path": "../evil.txt", "file_text": "x"}))
        .await;
    f.denied(
        "create",
        json!({"path": "src/../../outside/evil.txt", "file_text": "x"}),
    )
    .await;
    f.denied(
        "edit",
        json!({"path": "../secret.txt", "old_str": "TOP", "new_str": "PWNED"}),
    )
    .await;
    f.denied("glob", json!({"pattern": "../*"})).await;
    f.denied("glob", json!({"pattern": "src/../../*"})).await;
    f.denied("glob", json!({"paths": ".."})).await;
    f.denied("grep", json!({"pattern": "SECRET", "paths": ".."}))
        .await;
    f.denied(
        "grep",
        json!({"pattern": "SECRET", "paths": ["src", "../secret.txt"]}),
    )
    .await;
    f.denied(
        "sql",
        json!({"query": "CREATE TABLE t(x)", "db_path": "../x.db"}),
    )
    .await;
    f.untouched();
}

#[tokio::test]
async fn absolute_paths_outside_are_refused() {
    let f = Fixture::new();
    let secret = f.outside().join("secret.txt");
    let evil = f.outside().join("evil.txt");
    f.denied("view", json!({"path": "/etc/passwd"})).await;
    f.denied("view", json!({"path": secret})).await;
    f.denied("create", json!({"path": evil, "file_text": "x"}))
        .await;
    f.denied(
        "edit",
        json!({"path": secret, "old_str": "TOP", "new_str": "PWNED"}),
    )
    .await;
    f.denied("glob", json!({"paths": "/etc"})).await;
    f.denied("grep", json!({"pattern": "root", "paths": "/etc/passwd"}))
        .await;
    f.denied(
        "sql",
        json!({"query": "CREATE TABLE t(x)", "db_path": f.outside().join("x.db")}),
    )
    .await;
    // A sibling whose name extends the root's (the anchor's C1 prefix bug).
    let sibling = format!("{}_attacker/x.txt", f.root().display());
    f.denied("create", json!({"path": sibling, "file_text": "x"}))
        .await;
    // Absolute paths inside the workspace are fine.
    let inside = f.root().join("src/app.py");
    assert!(f.call("view", json!({"path": inside})).await.is_ok());
    f.untouched();
}

#[tokio::test]
async fn a_symlink_to_etc_inside_the_workspace_leads_nowhere() {
    let f = Fixture::new();
    std::os::unix::fs::symlink("/etc", f.root().join("etc_link")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", f.root().join("src/passwd")).unwrap();
    std::os::unix::fs::symlink(f.outside().join("outside"), f.root().join("out_link")).unwrap();

    let msg = f.denied("view", json!({"path": "etc_link/passwd"})).await;
    assert!(msg.contains("symbolic link"), "{msg}");
    f.denied("view", json!({"path": "etc_link"})).await;
    f.denied("view", json!({"path": "src/passwd"})).await;
    f.denied(
        "edit",
        json!({"path": "src/passwd", "old_str": "root", "new_str": "toor"}),
    )
    .await;
    // Create through the link: refused, and nothing appears at the target.
    f.denied(
        "create",
        json!({"path": "etc_link/toolgate_evil.conf", "file_text": "x"}),
    )
    .await;
    assert!(!Path::new("/etc/toolgate_evil.conf").exists());
    f.denied(
        "create",
        json!({"path": "out_link/new/evil.txt", "file_text": "x"}),
    )
    .await;
    f.denied(
        "sql",
        json!({"query": "CREATE TABLE t(x)", "db_path": "out_link/x.db"}),
    )
    .await;
    f.denied("glob", json!({"paths": "etc_link"})).await;
    f.denied("grep", json!({"pattern": "root", "paths": "etc_link"}))
        .await;
    f.denied("grep", json!({"pattern": "root", "paths": "src/passwd"}))
        .await;

    // Expansion never follows the links out.
    let all = f
        .call("glob", json!({"pattern": "**/*", "exclude_dirs": []}))
        .await
        .unwrap();
    let listed: Vec<&str> = all
        .data
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(listed, ["src/app.py"], "glob stayed inside: {listed:?}");
    let found = f
        .call("grep", json!({"pattern": "root|SECRET", "paths": "."}))
        .await
        .unwrap();
    assert_eq!(found.data, json!([]), "grep stayed inside");
    let found = f
        .call(
            "grep",
            json!({"pattern": "root", "paths": ".", "glob": "passwd"}),
        )
        .await
        .unwrap();
    assert_eq!(found.data, json!([]));
    f.untouched();
}

#[tokio::test]
async fn dangling_links_cannot_be_created_through() {
    let f = Fixture::new();
    let target = f.outside().join("outside/created-through-link.txt");
    std::os::unix::fs::symlink(&target, f.root().join("dangling")).unwrap();
    f.denied("create", json!({"path": "dangling", "file_text": "x"}))
        .await;
    f.denied(
        "sql",
        json!({"query": "CREATE TABLE t(x)", "db_path": "dangling"}),
    )
    .await;
    assert!(!target.exists());
    f.untouched();
}

// ---------------------------------------------------------------------------------------------
// SQL

#[tokio::test]
async fn sql_attach_and_load_extension_are_refused() {
    let f = Fixture::new();
    let tmp_x = Path::new("/tmp/x.db");
    let existed = tmp_x.exists();
    let msg = f
        .denied("sql", json!({"query": "ATTACH DATABASE '/tmp/x.db' AS x"}))
        .await;
    assert!(msg.contains("ATTACH"), "{msg}");
    assert_eq!(tmp_x.exists(), existed, "/tmp/x.db was not created");
    let beside = f.outside().join("attached.db");
    f.denied(
        "sql",
        json!({"query": format!("ATTACH '{}' AS a; CREATE TABLE a.t(x)", beside.display())}),
    )
    .await;
    f.denied(
        "sql",
        json!({"query": format!("ATTACH 'file:{}?mode=rwc' AS a", beside.display())}),
    )
    .await;
    let msg = f
        .denied("sql", json!({"query": "SELECT load_extension('x')"}))
        .await;
    assert!(msg.contains("load_extension"), "{msg}");
    f.denied(
        "sql",
        json!({"query": "SELECT load_extension('/tmp/evil.so', 'sqlite3_evil_init')", "db_path": ":memory:"}),
    )
    .await;
    // VACUUM INTO writes a copy of the database to any path: it must not reach outside.
    let copy = f.outside().join("copy.db");
    let r = f
        .call(
            "sql",
            json!({"query": format!("CREATE TABLE t(x); VACUUM INTO '{}'", copy.display())}),
        )
        .await;
    assert!(r.is_err(), "VACUUM INTO outside must fail: {r:?}");
    assert!(!copy.exists());
    // The database itself lives inside the workspace.
    assert!(f.root().join(".toolgate/workspace.db").is_file());
    f.untouched();
}

// ---------------------------------------------------------------------------------------------
// grep: the pattern is never an option

#[tokio::test]
async fn grep_patterns_that_look_like_options_are_patterns() {
    let f = Fixture::new();
    std::fs::write(
        f.root().join("notes.txt"),
        "plain line\nuse --pre=sh to preprocess\npass -f/etc/passwd here\n",
    )
    .unwrap();
    let o = f
        .call("grep", json!({"pattern": "--pre=sh"}))
        .await
        .unwrap();
    assert_eq!(
        o.data,
        json!([{"file": "notes.txt", "line": 2, "text": "use --pre=sh to preprocess"}])
    );
    let o = f
        .call("grep", json!({"pattern": "-f/etc/passwd"}))
        .await
        .unwrap();
    assert_eq!(
        o.data,
        json!([{"file": "notes.txt", "line": 3, "text": "pass -f/etc/passwd here"}])
    );
    // And nothing from /etc/passwd came back.
    let o = f.call("grep", json!({"pattern": "root:"})).await.unwrap();
    assert_eq!(o.data, json!([]));
    f.untouched();
}

// ---------------------------------------------------------------------------------------------
// web_fetch

fn web() -> Fixture {
    Fixture::with(|c| c.web_fetch_enabled = true)
}

#[tokio::test]
async fn web_fetch_is_disabled_by_default() {
    let f = Fixture::new();
    let msg = f
        .denied("web_fetch", json!({"url": "https://example.com/"}))
        .await;
    assert!(msg.contains("disabled"), "{msg}");
    f.untouched();
}

#[tokio::test]
async fn web_fetch_refuses_other_schemes() {
    let f = web();
    for url in [
        "file:///etc/passwd",
        "ftp://example.com/x",
        "gopher://example.com/",
    ] {
        let msg = f.denied("web_fetch", json!({"url": url})).await;
        assert!(msg.contains("only http:// and https://"), "{url}: {msg}");
    }
    f.untouched();
}

#[tokio::test]
async fn web_fetch_refuses_internal_addresses_before_connecting() {
    let f = web();
    for url in [
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]/",
        "http://[::ffff:127.0.0.1]/",
        "http://localhost/",
        "http://10.0.0.1/",
        "http://192.168.0.1/",
        "http://0.0.0.0/",
        "http://[fd00::1]/",
        "http://[fe80::1]/",
        // Other spellings of loopback that URL parsers normalize.
        "http://2130706433/",
        "http://0x7f000001/",
        "http://127.1/",
        "http://LOCALHOST./",
    ] {
        let msg = f.denied("web_fetch", json!({"url": url})).await;
        assert!(msg.contains("non-public"), "{url}: {msg}");
    }
    // A real listener on loopback: refused, and it never sees a connection.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    f.denied(
        "web_fetch",
        json!({"url": format!("http://127.0.0.1:{port}/")}),
    )
    .await;
    f.denied(
        "web_fetch",
        json!({"url": format!("http://localhost:{port}/")}),
    )
    .await;
    assert!(
        listener.accept().is_err(),
        "no connection reached the loopback listener"
    );
    f.untouched();
}

// ---------------------------------------------------------------------------------------------
// bash

const SECRET_VAR: &str = "TOOLGATE_ESCAPE_TEST_SECRET";
const SECRET_VALUE: &str = "s3cr3t-value-that-must-not-leak";

/// Runs in a child test process whose environment holds the secret from the start (set by the
/// parent below; setting variables inside a threaded test process is not sound).
#[tokio::test]
#[ignore = "run by bash_cannot_see_the_test_process_secrets in a child process"]
async fn child_bash_env_check() {
    assert_eq!(
        std::env::var(SECRET_VAR).as_deref(),
        Ok(SECRET_VALUE),
        "the secret is set in this process"
    );
    let f = Fixture::new();
    let o = f
        .call(
            "bash",
            json!({"command": format!("echo \"[${SECRET_VAR}]\"; env")}),
        )
        .await
        .unwrap();
    let out = o.data["stdout"].as_str().unwrap();
    assert!(out.starts_with("[]\n"), "{out}");
    assert!(!out.contains(SECRET_VALUE), "{out}");
    assert!(out.contains("PATH="), "the allow-list is kept: {out}");
    f.untouched();
}

#[test]
fn bash_cannot_see_the_test_process_secrets() {
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(exe)
        .args([
            "--ignored",
            "--exact",
            "child_bash_env_check",
            "--test-threads=1",
        ])
        .env(SECRET_VAR, SECRET_VALUE)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("1 passed"),
        "child run failed:\n{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn bash_timeout_kills_the_whole_process_group() {
    let f = Fixture::with(|c| c.bash_timeout = Duration::from_secs(1));
    let started = Instant::now();
    let err = f
        .call(
            "bash",
            json!({"command": "sleep 100 & echo $! > bg.pid; sleep 100"}),
        )
        .await
        .unwrap_err();
    let took = started.elapsed();
    assert!(matches!(err, CallError::Timeout { .. }), "{err}");
    assert!(took < Duration::from_secs(10), "took {took:?}");
    let pid = std::fs::read_to_string(f.root().join("bg.pid")).unwrap();
    let pid = pid.trim();
    // The background sleep went with the group (gone, or a zombie awaiting its reaper).
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok();
        let alive = state
            .as_deref()
            .and_then(|s| s.rsplit(')').next())
            .and_then(|rest| rest.split_whitespace().next())
            .is_some_and(|st| st != "Z" && st != "X");
        if !alive {
            break;
        }
        assert!(Instant::now() < deadline, "background sleep {pid} survived");
        std::thread::sleep(Duration::from_millis(50));
    }
    f.untouched();
}

#[tokio::test]
async fn bash_output_flood_is_truncated_with_a_marker() {
    let f = Fixture::new();
    let cap = f.tools.config().output_cap_bytes;
    let o = f
        .call(
            "bash",
            json!({"command": "head -c 5000000 /dev/zero | tr '\\0' 'a'; head -c 300000 /dev/zero | tr '\\0' 'b' >&2"}),
        )
        .await
        .unwrap();
    let out = o.data["stdout"].as_str().unwrap();
    let err = o.data["stderr"].as_str().unwrap();
    let marker = format!("…[truncated {} bytes]", 5_000_000 - cap);
    assert!(out.ends_with(&marker), "{}", &out[out.len() - 60..]);
    assert_eq!(out.len(), cap + marker.len());
    assert!(err.ends_with(&format!("…[truncated {} bytes]", 300_000 - cap)));
    assert_eq!(o.data["returncode"], json!(0));
    f.untouched();
}

#[tokio::test]
async fn bash_runs_in_the_workspace_root_not_the_cwd() {
    let f = Fixture::new();
    let o = f
        .call("bash", json!({"command": "pwd; touch made-here"}))
        .await
        .unwrap();
    assert_eq!(o.data["stdout"], json!(format!("{}\n", f.root().display())));
    assert!(f.root().join("made-here").exists());
    f.untouched();
}

// ---------------------------------------------------------------------------------------------
// Relative paths use the root, never the process cwd

#[tokio::test]
async fn relative_paths_ignore_the_process_cwd() {
    let f = Fixture::new();
    // The test process cwd is the crate directory, which has a Cargo.toml; the workspace
    // does not.
    assert!(Path::new("Cargo.toml").exists());
    let err = f
        .call("view", json!({"path": "Cargo.toml"}))
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::NotFound { .. }), "{err}");
    let o = f.call("glob", json!({})).await.unwrap();
    assert_eq!(o.data, json!(["src/app.py"]));
    f.untouched();
}

#[tokio::test]
async fn params_map_must_not_smuggle_unknown_tools() {
    let f = Fixture::new();
    let err = f
        .tools
        .call(&ToolCall::new("shell", Map::new()))
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::NotFound { .. }), "{err}");
    f.untouched();
}
