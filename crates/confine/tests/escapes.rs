//! A confined child tries every way out the security issue found: files outside the workspace,
//! the parent's environment through /proc, a 127.0.0.1 listener, a daemon that outlives the
//! call, children left running when the call is killed. Each must fail.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(clippy::disallowed_methods)]

use std::io::Read;
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use toolgate_confine::{Confiner, FORCE_SUBREAPER_ENV, Policy, PrivateDirs};

const LAUNCHER: &str = env!("CARGO_BIN_EXE_toolgate-confine-launcher");

struct Fixture {
    _dir: tempfile::TempDir,
    ws: std::path::PathBuf,
    outside: std::path::PathBuf,
    dirs: PrivateDirs,
    confiner: Confiner,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(outside.join(".ssh")).unwrap();
    std::fs::write(outside.join("secret.txt"), "PLANTED-SECRET-OUTSIDE").unwrap();
    std::fs::write(outside.join(".ssh/id_ed25519"), "PLANTED-SSH-KEY").unwrap();
    std::fs::write(ws.join("mine.txt"), "inside").unwrap();
    let confiner = Confiner::detect(LAUNCHER).expect("this kernel offers Landlock + seccomp");
    Fixture {
        ws,
        outside,
        dirs: PrivateDirs::new().unwrap(),
        confiner,
        _dir: dir,
    }
}

impl Fixture {
    fn policy(&self) -> Policy {
        Policy::new(Some(&self.ws), &self.dirs)
    }

    fn command(&self, policy: &Policy, script: &str) -> Command {
        let mut cmd = self
            .confiner
            .command(policy, "/bin/bash".as_ref(), ["-c", script]);
        cmd.current_dir(&self.ws)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", self.outside.as_os_str())
            .stdin(Stdio::null());
        cmd
    }

    fn bash(&self, script: &str) -> Output {
        self.command(&self.policy(), script).output().unwrap()
    }
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn the_workspace_is_readable_and_writable() {
    let f = fixture();
    let o = f.bash("cat mine.txt; echo made > new.txt; cat new.txt; echo $HOME; echo $TMPDIR");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", text(&o));
    assert!(out.starts_with("inside"), "{out}");
    assert!(out.contains("made"), "{out}");
    assert_eq!(
        std::fs::read_to_string(f.ws.join("new.txt")).unwrap(),
        "made\n"
    );
    // HOME and TMPDIR are private, not the caller's.
    assert!(out.contains(&f.dirs.home().display().to_string()), "{out}");
    assert!(out.contains(&f.dirs.tmp().display().to_string()), "{out}");
}

#[test]
fn files_outside_the_workspace_are_neither_read_nor_written() {
    let f = fixture();
    let secret = f.outside.join("secret.txt");
    std::os::unix::fs::symlink(&secret, f.ws.join("link.txt")).unwrap();
    std::fs::hard_link(&secret, f.dirs.tmp().join("x")).ok();
    let script = format!(
        "cat {s}; cat link.txt; cat {o}/.ssh/id_ed25519; cat ~/.ssh/id_ed25519; cat /etc/shadow; \
         ls {o}; echo pwned > {o}/written.txt; ln -s {s} ln2 && cat ln2; cp {s} . ; \
         ln {s} hard 2>&1; cat hard",
        s = secret.display(),
        o = f.outside.display()
    );
    let o = f.bash(&script);
    let all = text(&o);
    assert!(!all.contains("PLANTED-SECRET-OUTSIDE"), "{all}");
    assert!(!all.contains("PLANTED-SSH-KEY"), "{all}");
    assert!(!all.contains("root:"), "{all}");
    assert!(!f.outside.join("written.txt").exists());
    assert!(all.contains("Permission denied"), "{all}");
}

#[test]
fn the_parents_environment_is_out_of_reach() {
    let f = fixture();
    // The secret is in this (the parent) process's environment, not the child's.
    let mut cmd = f.command(
        &f.policy(),
        "cat /proc/$PPID/environ; cat /proc/1/environ; for e in /proc/*/environ; do cat $e; done; \
         cat /proc/self/environ; env",
    );
    cmd.env("TOOLGATE_TEST_VISIBLE", "fine");
    // The test runner's environment (CARGO_* variables) is the parent's secret here: the child
    // starts with a cleared environment, so only /proc could show it.
    let o = cmd.output().unwrap();
    let all = text(&o);
    let parent_env = std::fs::read_to_string(format!("/proc/{}/environ", std::process::id()))
        .unwrap_or_default();
    // Anything of the parent's environment (PATH of the test runner, CARGO_*) must not appear.
    for var in parent_env.split('\0').filter(|v| v.starts_with("CARGO_")) {
        assert!(!all.contains(var), "leaked {var}: {all}");
    }
    assert!(all.contains("TOOLGATE_TEST_VISIBLE=fine"), "{all}");
}

#[test]
fn a_loopback_listener_gets_no_connection() {
    let f = fixture();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let script = format!(
        "echo hello > /dev/tcp/127.0.0.1/{port}; (command -v curl && curl -s -m 2 http://127.0.0.1:{port}/); \
         (command -v python3 && python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 2)'); true"
    );
    let o = f.bash(&script);
    assert!(o.status.success(), "{}", text(&o));
    // bash has exited, so any connection it made is already queued (the kernel completes the
    // handshake without `accept`): nothing to wait for.
    match listener.accept() {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        other => panic!("the listener got a connection: {other:?}; {}", text(&o)),
    }
    assert!(text(&o).contains("not permitted"), "{}", text(&o));
}

#[test]
fn the_network_is_there_when_the_policy_allows_it() {
    let f = fixture();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let policy = f.policy().with_network(true);
    let o = f
        .command(&policy, &format!("echo hello > /dev/tcp/127.0.0.1/{port}"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let (mut s, _) = listener.accept().unwrap();
    let mut got = String::new();
    s.read_to_string(&mut got).unwrap();
    assert_eq!(got, "hello\n");
}

/// Processes whose command line contains `marker`, from the host's /proc.
fn running(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmd) = std::fs::read(e.path().join("cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if cmd.contains(marker) && !cmd.contains("bash -c") {
                found.push(format!("{}: {cmd}", e.file_name().to_string_lossy()));
            }
        }
    }
    found
}

fn none_left(marker: &str) -> Vec<String> {
    let start = Instant::now();
    loop {
        let left = running(marker);
        if left.is_empty() || start.elapsed() > Duration::from_secs(3) {
            return left;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn unique(tag: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("tgmark-{tag}-{}-{nanos}", std::process::id())
}

/// The escapes of a program that a setsid daemon and a double fork make, then "started".
fn escaping_script(marker: &str) -> String {
    format!(
        "echo pid=$$ switch=${{{FORCE_SUBREAPER_ENV}:-unset}}; \
         setsid bash -c 'touch started-a; exec -a {marker}-a sleep 300' < /dev/null > /dev/null 2>&1 & \
         ( ( touch started-b; exec -a {marker}-b sleep 301 ) & ) ; sleep 0.3; echo started"
    )
}

fn daemons_do_not_outlive_the_program(fallback: bool) {
    let f = fixture();
    let marker = unique(if fallback { "fb-daemon" } else { "daemon" });
    let mut cmd = f.command(&f.policy(), &escaping_script(&marker));
    if fallback {
        cmd.env(FORCE_SUBREAPER_ENV, "1");
    }
    let o = cmd.output().unwrap();
    let out = text(&o);
    assert!(out.contains("started"), "{out}");
    // The program is PID 1 of its namespace, or (fallback) an ordinary pid below the reaper;
    // the test switch never reaches the program.
    assert_eq!(out.contains("pid=1 "), !fallback, "{out}");
    assert!(out.contains("switch=unset"), "{out}");
    // Both escapes really started (and wrote their mark in the workspace)…
    assert!(f.ws.join("started-a").exists() && f.ws.join("started-b").exists());
    // …and neither is running now that the program is done.
    let left = none_left(&marker);
    assert!(left.is_empty(), "fallback={fallback}: survivors: {left:?}");
}

#[test]
fn a_setsid_daemon_does_not_outlive_the_program() {
    daemons_do_not_outlive_the_program(false);
}

/// The subreaper fallback (a machine without unprivileged user namespaces), forced with the
/// launcher's test switch: a `setsid` daemon and a double-forked orphan die when the program
/// ends, not when toolgate exits.
#[test]
fn without_a_pid_namespace_a_setsid_daemon_does_not_outlive_the_program() {
    daemons_do_not_outlive_the_program(true);
}

fn killing_the_call_kills_all(fallback: bool) {
    let f = fixture();
    for kill_group in [true, false] {
        let marker = unique(match (fallback, kill_group) {
            (false, true) => "group",
            (false, false) => "guard",
            (true, true) => "fb-group",
            (true, false) => "fb-guard",
        });
        let script = format!(
            "echo $$ > pid.txt; (exec -a {marker}-a sleep 300) & \
             setsid bash -c 'exec -a {marker}-b sleep 301' & \
             ( ( exec -a {marker}-d sleep 303 ) & ) ; exec -a {marker}-c sleep 302"
        );
        let mut cmd = f.command(&f.policy(), &script);
        if fallback {
            cmd.env(FORCE_SUBREAPER_ENV, "1");
        }
        let mut child = cmd
            .process_group(0)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let start = Instant::now();
        while running(&marker).len() < 4 && start.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(running(&marker).len(), 4, "the program did not start");
        let pid = std::fs::read_to_string(f.ws.join("pid.txt")).unwrap();
        assert_eq!(pid.trim() == "1", !fallback, "the program's pid: {pid}");
        if kill_group {
            // What toolgate does when a call times out or ends.
            let group = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
            rustix::process::kill_process_group(group, rustix::process::Signal::KILL).unwrap();
        } else {
            // The guard alone dies (e.g. toolgate's own kill_on_drop): PID 1 (or the
            // fallback's reaper) follows it.
            child.kill().unwrap();
        }
        let killed = Instant::now();
        let _ = child.wait();
        assert!(
            killed.elapsed() < Duration::from_secs(5),
            "the guard outlived the kill"
        );
        let left = none_left(&marker);
        assert!(
            left.is_empty(),
            "fallback={fallback} kill_group={kill_group}: survivors {left:?}"
        );
    }
}

#[test]
fn killing_the_call_kills_everything_it_started() {
    killing_the_call_kills_all(false);
}

#[test]
fn without_a_pid_namespace_killing_the_call_kills_everything_it_started() {
    killing_the_call_kills_all(true);
}

/// The fallback confines as much as the namespace does: files and the network stay out of
/// reach.
#[test]
fn without_a_pid_namespace_files_and_network_stay_out_of_reach() {
    let f = fixture();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let script = format!(
        "cat {}/secret.txt; echo hi > {}/written.txt; echo x > /dev/tcp/127.0.0.1/{port}; echo done",
        f.outside.display(),
        f.outside.display()
    );
    let o = f
        .command(&f.policy(), &script)
        .env(FORCE_SUBREAPER_ENV, "1")
        .output()
        .unwrap();
    let out = text(&o);
    assert!(out.contains("done"), "{out}");
    assert!(!out.contains("PLANTED-SECRET-OUTSIDE"), "{out}");
    assert!(!f.outside.join("written.txt").exists());
    assert!(listener.accept().is_err(), "the listener got a connection");
}

#[test]
fn no_ptrace_no_namespaces_no_io_uring() {
    let f = fixture();
    let o = f.bash("unshare -U true; echo rc=$?");
    let all = text(&o);
    assert!(
        all.contains("rc=1") || all.contains("not permitted"),
        "{all}"
    );
}

#[test]
fn a_missing_program_is_reported() {
    let f = fixture();
    let o = f
        .confiner
        .command(
            &f.policy(),
            "/nonexistent/prog".as_ref(),
            Vec::<String>::new(),
        )
        .current_dir(&f.ws)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(127), "{}", text(&o));
    assert!(text(&o).contains("could not start /nonexistent/prog"));
}

#[test]
fn detect_refuses_a_missing_launcher() {
    let err = Confiner::detect(Path::new("/nonexistent/toolgate")).unwrap_err();
    assert!(err.to_string().contains("/nonexistent/toolgate"), "{err}");
}
