//! OS confinement for every child process toolgate starts on behalf of a program or a model:
//! `bash`, command tools, external tool servers, upstream MCP servers.
//!
//! A confined child is started through toolgate's own binary in two stages (see
//! [`launcher`]), so that no `unsafe` `pre_exec` code runs between `fork` and `exec`:
//!
//! 1. `toolgate __confine POLICY -- PROGRAM ARGS…` (the *guard*) enters a new PID namespace (and
//!    a new user namespace when it is not root), then starts stage 2 as the namespace's first
//!    process and waits.
//!    It kills stage 2 when its own parent dies.
//! 2. `toolgate __confine-exec POLICY -- PROGRAM ARGS…` (PID 1 of the namespace) asks for a
//!    `SIGKILL` when the guard dies, starts a session of its own (`setsid`: no controlling
//!    terminal, so nothing it runs can reach the caller's), sets `PR_SET_NO_NEW_PRIVS`,
//!    restricts itself with Landlock (files: reads only in the system's read-only directories
//!    and the policy's, writes only in the workspace and a private tmp/home, no device nodes,
//!    FIFOs or sockets made there, no device ioctls; no TCP; no signals or abstract sockets
//!    outside) and a seccomp filter (no sockets unless the network is allowed, no ptrace, no
//!    io_uring, no namespace or mount games, no TIOCSTI/TIOCLINUX, no kernel log, clock, host
//!    name, reboot or kexec), drops every capability (bounding set emptied, securebits locked
//!    so that a root `execve` grants none again; the call is refused unless none is left),
//!    then `exec`s the program. A guard that made a user namespace empties its bounding set
//!    first.
//!
//! When PID 1 of a namespace exits the kernel kills every process left in it, so nothing a
//! program starts — `setsid` daemons and double forks included — outlives the call: the caller
//! kills the guard's process group when the call ends or times out; the guard's death kills
//! PID 1 (its parent-death signal: stage 2 has left the group for a session of its own);
//! PID 1's death empties the namespace. Where a PID namespace cannot be made (a kernel
//! or distribution that forbids unprivileged user namespaces), the guard starts a *reaper* in
//! a process group of its own between itself and stage 2: a child subreaper, so orphans and
//! `setsid` daemons are re-parented to it, which kills every process left below it when stage
//! 2 ends or the guard is gone (killed with its group, or left behind by a dead toolgate).
//! [`FORCE_SUBREAPER_ENV`] forces that fallback for tests.
//!
//! Linux only. Elsewhere [`Confiner::detect`] says confinement is unavailable, and the callers
//! turn process-starting tools off unless the user configured them unconfined on purpose.

#![warn(unreachable_pub)]
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub mod launcher;
#[cfg(target_os = "linux")]
mod linux;

/// The hidden subcommand of the guard (stage 1).
pub const GUARD_SUBCOMMAND: &str = "__confine";
/// The hidden subcommand of stage 2 (PID 1 of the namespace).
pub const EXEC_SUBCOMMAND: &str = "__confine-exec";

/// Exit code of a guard or stage 2 that could not confine the program (nothing ran).
pub const CONFINE_FAILED: i32 = 126;

/// Test switch, read by the guard (stage 1) only: set to `1` in the guard's environment, it
/// skips the PID namespace and reaps with the subreaper fallback, as on a machine without
/// unprivileged user namespaces. It selects only that fallback (Landlock and seccomp are the
/// same), and toolgate clears a child's environment before starting the guard, so nothing a
/// program or project controls can set it. It is not passed on to the program.
pub const FORCE_SUBREAPER_ENV: &str = "TOOLGATE_CONFINE_TEST_SUBREAPER";

/// Any error a step of confining reports, for [`ConfineError`]'s sources.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Why confining a process (or inspecting a confined one) failed. Each message names the step.
#[derive(Debug, thiserror::Error)]
pub enum ConfineError {
    /// A system call or OS step failed; `what` names it (`PR_SET_NO_NEW_PRIVS`, `setsid`, …).
    #[error("{what}: {source}")]
    Os {
        what: String,
        #[source]
        source: BoxError,
    },
    #[error("Landlock: {0}")]
    Landlock(#[source] BoxError),
    #[error("Landlock: this kernel enforced none of the rules")]
    LandlockNotEnforced,
    /// Building a seccomp filter failed.
    #[error("{0}")]
    SeccompFilter(#[source] BoxError),
    #[error(
        "capabilities are still held after dropping them (permitted {permitted:#x}, effective {effective:#x}, inheritable {inheritable:#x})"
    )]
    CapabilitiesHeld {
        permitted: u64,
        effective: u64,
        inheritable: u64,
    },
    #[error("bad confinement policy: {0}")]
    Policy(#[source] serde_json::Error),
    #[error("usage: toolgate __confine POLICY -- PROGRAM [ARGS…]")]
    Usage,
    #[error("unknown launcher stage {0:?}")]
    UnknownStage(String),
    #[error("OS confinement is implemented for Linux only")]
    NotLinux,
    #[error("the confined process has no valid pid")]
    NoPid,
    #[error("the confined /bin/cat ended before it could be inspected")]
    InspectedChildEnded,
    #[error("the confined /bin/cat did not start within 10 s")]
    InspectedChildSlow,
    /// An error of the inspected child, with what it wrote on stderr.
    #[error("{source}: {stderr}")]
    WithStderr {
        #[source]
        source: Box<ConfineError>,
        stderr: String,
    },
}

impl ConfineError {
    /// `map_err` for an OS step: `.map_err(ConfineError::os("setsid"))`.
    pub fn os<E: Into<BoxError>>(what: impl Into<String>) -> impl FnOnce(E) -> Self {
        let what = what.into();
        move |e| Self::Os {
            what,
            source: e.into(),
        }
    }
}

/// Why confinement is not available here.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Unavailable {
    #[error(
        "Landlock is not available on this kernel ({detail}); it needs Linux 5.13 or later with Landlock enabled (lsm=landlock)"
    )]
    NoLandlock { detail: String },
    #[error("seccomp filters are not available ({detail})")]
    NoSeccomp { detail: String },
    #[error("OS confinement is implemented for Linux only (this is {os})")]
    NotLinux { os: &'static str },
    #[error("the confinement launcher {} cannot be used: {detail}", path.display())]
    Launcher { path: PathBuf, detail: String },
}

/// What confinement this machine gives a child process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Level {
    /// The Landlock ABI version the kernel offers (0 = none), exactly as the kernel reports it.
    pub landlock_abi: u8,
    /// The newest ABI the `landlock` crate knows, when the kernel's is newer (its rules then
    /// use that one; the kernel's extra rights are not used).
    pub crate_knows_up_to: Option<u8>,
    /// Whether a seccomp filter can be installed.
    pub seccomp: bool,
    /// Whether a PID namespace can be made (else: a child subreaper that kills what is left).
    pub pid_namespace: bool,
}

impl Level {
    /// One line for `toolgate doctor`.
    pub fn describe(&self) -> String {
        let reaping = if self.pid_namespace {
            "PID namespace (nothing outlives a call)"
        } else {
            "child subreaper (no PID namespace here)"
        };
        let abi = match self.crate_knows_up_to {
            Some(known) => format!(
                "{} (rules use ABI {known}, the newest the landlock crate knows)",
                self.landlock_abi
            ),
            None => self.landlock_abi.to_string(),
        };
        format!(
            "Landlock ABI {abi} (files: workspace and private tmp only, no device nodes or FIFOs; no TCP; signals scoped) + seccomp (no sockets, no ptrace, no namespaces, no terminal injection, no kernel log, clock or host name); no capabilities, no terminal (a session of its own); processes: {reaping}"
        )
    }
}

/// What a process holds, as the kernel reports it in `/proc/PID/status` and `/proc/PID/stat`
/// (see [`Confiner::inspect_child`]). Capability sets are bit masks (`CAP_*` numbers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Held {
    pub effective: u64,
    pub permitted: u64,
    pub inheritable: u64,
    pub bounding: u64,
    pub ambient: u64,
    /// `PR_SET_NO_NEW_PRIVS` is set.
    pub no_new_privs: bool,
    /// A seccomp filter is installed.
    pub seccomp: bool,
    /// The process leads its own session (so the caller's terminal is not its controlling one).
    pub own_session: bool,
    /// The process has a controlling terminal.
    pub terminal: bool,
}

impl Held {
    /// Whether any capability can be used now or regained by `execve` (the bounding set alone
    /// grants nothing).
    pub fn has_capabilities(&self) -> bool {
        self.effective | self.permitted | self.inheritable | self.ambient != 0
    }

    /// One line: `CapEff none, CapPrm none, CapAmb none, CapBnd none, NoNewPrivs, seccomp, own
    /// session, no terminal` (a set that is not empty is shown in hex, as `/proc` shows it).
    pub fn describe(&self) -> String {
        let set = |bits: u64| {
            if bits == 0 {
                "none".to_owned()
            } else {
                format!("{bits:016x}")
            }
        };
        let mut parts = vec![
            format!("CapEff {}", set(self.effective)),
            format!("CapPrm {}", set(self.permitted)),
            format!("CapAmb {}", set(self.ambient)),
            format!("CapBnd {}", set(self.bounding)),
        ];
        if self.inheritable != 0 {
            parts.push(format!("CapInh {}", set(self.inheritable)));
        }
        parts.push(
            if self.no_new_privs {
                "NoNewPrivs"
            } else {
                "no NoNewPrivs"
            }
            .to_owned(),
        );
        parts.push(
            if self.seccomp {
                "seccomp"
            } else {
                "no seccomp"
            }
            .to_owned(),
        );
        parts.push(
            if self.own_session {
                "own session"
            } else {
                "the caller's session"
            }
            .to_owned(),
        );
        parts.push(
            if self.terminal {
                "a controlling terminal"
            } else {
                "no terminal"
            }
            .to_owned(),
        );
        parts.join(", ")
    }
}

/// Whether this process runs as root (effective uid 0).
pub fn running_as_root() -> bool {
    #[cfg(target_os = "linux")]
    {
        nix::unistd::geteuid().is_root()
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}

/// Drop every capability of the calling **thread** for good (bounding set, securebits locked
/// so that a root `execve` grants none again, ambient, permitted, effective, inheritable), for
/// a process toolgate starts for itself outside the launcher (the sandbox worker). Call it
/// before starting threads. Fails unless the thread ends up holding no capability.
pub fn drop_privileges() -> Result<(), ConfineError> {
    #[cfg(target_os = "linux")]
    {
        linux::drop_capabilities()
    }
    #[cfg(not(target_os = "linux"))]
    {
        Ok(())
    }
}

/// Leave the caller's session for a new one of the calling process's own, with no controlling
/// terminal (`setsid`), for a process toolgate starts for itself outside the launcher (the
/// sandbox worker): the terminal toolgate was started from is then nothing it can reach.
/// Fails for a process-group leader (start it in its parent's group).
pub fn leave_terminal() -> Result<(), ConfineError> {
    #[cfg(target_os = "linux")]
    {
        nix::unistd::setsid()
            .map(|_| ())
            .map_err(ConfineError::os("setsid"))
    }
    #[cfg(not(target_os = "linux"))]
    {
        Ok(())
    }
}

/// What one confined child may touch. Built with [`Policy::new`]; the system's read-only
/// directories are added by the launcher itself.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Policy {
    /// Directories (and files) the child may read and write: the workspace, its private tmp
    /// and home.
    pub read_write: Vec<PathBuf>,
    /// Extra directories (and files) the child may read and execute, beyond the system's.
    pub read_only: Vec<PathBuf>,
    /// Whether the child may use the network (sockets, TCP). Off unless the user's config says.
    pub network: bool,
    /// The private `HOME` the child sees.
    pub home: PathBuf,
    /// The private `TMPDIR` the child sees.
    pub tmp: PathBuf,
}

/// A private home and tmp for one child, removed when dropped.
#[derive(Debug)]
pub struct PrivateDirs {
    dir: tempfile::TempDir,
}

impl PrivateDirs {
    /// Make `home/` and `tmp/` in a new 0700 directory under the system's temp dir.
    pub fn new() -> std::io::Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("toolgate-child-")
            .tempdir()?;
        std::fs::create_dir(dir.path().join("home"))?;
        std::fs::create_dir(dir.path().join("tmp"))?;
        Ok(Self { dir })
    }

    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    pub fn tmp(&self) -> PathBuf {
        self.dir.path().join("tmp")
    }
}

impl Policy {
    /// Read-write access to `workspace` (when given) and the private dirs; no network.
    pub fn new(workspace: Option<&Path>, dirs: &PrivateDirs) -> Self {
        let mut read_write: Vec<PathBuf> = workspace.map(Path::to_path_buf).into_iter().collect();
        read_write.push(dirs.home());
        read_write.push(dirs.tmp());
        Self {
            read_write,
            read_only: Vec::new(),
            network: false,
            home: dirs.home(),
            tmp: dirs.tmp(),
        }
    }

    /// Allow the network (the user's config said so).
    #[must_use]
    pub fn with_network(mut self, network: bool) -> Self {
        self.network = network;
        self
    }

    /// Also allow reading (and executing) beneath `path`.
    #[must_use]
    pub fn with_read_only(mut self, path: impl Into<PathBuf>) -> Self {
        self.read_only.push(path.into());
        self
    }

    fn encode(&self) -> String {
        // A policy is plain paths and a bool: serialising it cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    fn decode(text: &str) -> Result<Self, ConfineError> {
        serde_json::from_str(text).map_err(ConfineError::Policy)
    }
}

/// The policy for a server process toolgate starts for itself (an upstream MCP server, an
/// external tool server): read-write `cwd` (when given) and a private home/tmp; no network
/// (the caller allows it where the server's kind or the user's config says); read-only the
/// install its program and script arguments come from — for each that names an existing file
/// (the program found on `PATH`; relative arguments against `cwd`, else the current
/// directory), the outermost `node_modules` above it (a Node package), else the folder above
/// its `bin/` or `shims/` (a venv, a pyenv, a Python/Node install, through symbolic links
/// too), else the folder holding it (a script and its siblings). Never `/` itself.
pub fn server_policy(
    command: &str,
    args: &[String],
    cwd: Option<&Path>,
    dirs: &PrivateDirs,
) -> Policy {
    let cwd = cwd.and_then(|c| c.canonicalize().ok());
    let mut policy = Policy::new(cwd.as_deref(), dirs);
    let program = if command.contains('/') {
        Some(PathBuf::from(command))
    } else {
        std::env::var_os("PATH").and_then(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join(command))
                .find(|p| p.is_file())
        })
    };
    let base = cwd.unwrap_or_else(|| PathBuf::from("."));
    // Only the program and its script (the first argument that is not an option and names a
    // file): a later argument such as `--config ~/.ssh/config` names data the server reads, not
    // code it runs, and must not open that folder to it.
    let script = args
        .iter()
        .filter(|a| !a.starts_with('-'))
        .map(|a| base.join(a))
        .find(|p| p.is_file());
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .and_then(|h| h.canonicalize().ok());
    let candidates = program.into_iter().filter(|p| p.is_file()).chain(script);
    for path in candidates {
        for p in [Some(path.clone()), path.canonicalize().ok()]
            .into_iter()
            .flatten()
        {
            let Some(parent) = p.parent() else { continue };
            // A Node package resolves its imports from every node_modules above it: allow the
            // outermost one.
            let node_modules = p
                .ancestors()
                .filter(|a| a.file_name().is_some_and(|n| n == "node_modules"))
                .last();
            let root = if let Some(nm) = node_modules {
                nm
            } else if parent
                .file_name()
                .is_some_and(|n| n == "bin" || n == "shims")
            {
                parent.parent().unwrap_or(parent)
            } else {
                parent
            };
            // A script kept directly in the home folder (or above it) gets itself, not the
            // folder: the home holds the user's keys and tokens.
            let covers_home = home.as_deref().is_some_and(|h| {
                h.starts_with(root) || root.canonicalize().is_ok_and(|r| h.starts_with(r))
            });
            if covers_home {
                policy = policy.with_read_only(p.clone());
            } else if root != Path::new("/") && root != Path::new("") {
                policy = policy.with_read_only(root);
            }
        }
    }
    policy
}

/// Starts confined children through a launcher binary (toolgate itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confiner {
    launcher: PathBuf,
    level: Level,
}

impl Confiner {
    /// Check that this machine can confine children, and that `launcher` (a binary that
    /// dispatches [`GUARD_SUBCOMMAND`] and [`EXEC_SUBCOMMAND`] to [`launcher::main`]) exists.
    /// Cheap: a few system calls, no process is started.
    pub fn detect(launcher: impl Into<PathBuf>) -> Result<Self, Unavailable> {
        let launcher = launcher.into();
        if !launcher.is_file() {
            return Err(Unavailable::Launcher {
                path: launcher,
                detail: "it is not a file".to_owned(),
            });
        }
        let level = probe()?;
        Ok(Self { launcher, level })
    }

    /// The confinement level found by [`Confiner::detect`].
    pub fn level(&self) -> &Level {
        &self.level
    }

    /// A command that runs `program args…` under `policy`. The caller sets the environment
    /// (cleared first, preferably), stdio, the working directory (inside the policy's
    /// read-write paths) and a new process group, and kills that group when the call ends.
    pub fn command<I, S>(&self, policy: &Policy, program: &OsStr, args: I) -> std::process::Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut cmd = std::process::Command::new(&self.launcher);
        cmd.arg(GUARD_SUBCOMMAND)
            .arg(policy.encode())
            .arg("--")
            .arg(program)
            .args(args);
        cmd
    }
}

impl Confiner {
    /// Start one confined child (`/bin/cat`, waiting on its stdin) under a policy with no
    /// workspace and read what it holds from outside: the proof `doctor` shows. The child ends
    /// when its stdin closes.
    pub fn inspect_child(&self) -> Result<Held, ConfineError> {
        #[cfg(target_os = "linux")]
        {
            self.inspect_child_linux()
        }
        #[cfg(not(target_os = "linux"))]
        {
            Err(ConfineError::NotLinux)
        }
    }

    #[cfg(target_os = "linux")]
    fn inspect_child_linux(&self) -> Result<Held, ConfineError> {
        use std::process::Stdio;
        use std::time::{Duration, Instant};

        let dirs = PrivateDirs::new().map_err(ConfineError::os("making a private tmp dir"))?;
        let policy = Policy::new(None, &dirs);
        let mut child = self
            .command(&policy, OsStr::new("/bin/cat"), Vec::<&OsStr>::new())
            .env_clear()
            .current_dir(dirs.tmp())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(ConfineError::os("starting a confined /bin/cat"))?;
        let guard = child.id();
        let start = Instant::now();
        // The program shows up under its own name once stage 2 has restricted itself and
        // called `execve`: everything is in place by then.
        let held = loop {
            let cat = linux::descendants(guard).into_iter().find(|pid| {
                std::fs::read_to_string(format!("/proc/{pid}/comm"))
                    .is_ok_and(|c| c.trim_end() == "cat")
            });
            if let Some(pid) = cat {
                break linux::held_by(pid).map_err(ConfineError::os("reading the child's state"));
            }
            if matches!(child.try_wait(), Ok(Some(_))) {
                break Err(ConfineError::InspectedChildEnded);
            }
            if start.elapsed() > Duration::from_secs(10) {
                let _ = child.kill();
                break Err(ConfineError::InspectedChildSlow);
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        drop(child.stdin.take());
        let out = child
            .wait_with_output()
            .map_err(ConfineError::os("waiting for the confined /bin/cat"))?;
        held.map_err(|e| {
            let why = String::from_utf8_lossy(&out.stderr);
            if why.trim().is_empty() {
                e
            } else {
                ConfineError::WithStderr {
                    source: Box::new(e),
                    stderr: why.trim().to_owned(),
                }
            }
        })
    }
}

/// The confinement this machine offers, or why there is none.
pub fn probe() -> Result<Level, Unavailable> {
    #[cfg(target_os = "linux")]
    {
        linux::probe()
    }
    #[cfg(not(target_os = "linux"))]
    {
        Err(Unavailable::NotLinux {
            os: std::env::consts::OS,
        })
    }
}

/// Restrict the calling **thread** (and threads it starts later; never the rest of the
/// process) with Landlock to files beneath `dirs` (read and write) plus reading
/// `/dev/urandom` and the time zone; no TCP. For work toolgate does in-process on a path a program named, when
/// the library doing it opens files by name (SQLite): whatever a swapped symbolic link makes
/// the name resolve to, the kernel refuses every file outside `dirs`. Use a thread made for
/// the purpose, never a pooled one: the restriction cannot be lifted.
///
/// Returns whether the kernel enforced it (`false`: no Landlock here; nothing was changed).
pub fn restrict_this_thread_to<F: std::os::fd::AsFd>(dirs: &[F]) -> Result<bool, ConfineError> {
    #[cfg(target_os = "linux")]
    {
        linux::restrict_thread(dirs)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = dirs;
        Ok(false)
    }
}

/// Split `POLICY -- PROGRAM ARGS…` as the launcher receives it.
fn split_args(args: &[OsString]) -> Result<(Policy, OsString, Vec<OsString>), ConfineError> {
    let [policy, sep, program, rest @ ..] = args else {
        return Err(ConfineError::Usage);
    };
    if sep != "--" {
        return Err(ConfineError::Usage);
    }
    let policy = Policy::decode(&policy.to_string_lossy())?;
    Ok((policy, program.clone(), rest.to_vec()))
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;

    #[test]
    fn a_policy_survives_the_command_line() {
        let dirs = PrivateDirs::new().unwrap();
        let p = Policy::new(Some(Path::new("/w")), &dirs)
            .with_network(true)
            .with_read_only("/opt/x");
        let args: Vec<OsString> = vec![
            p.encode().into(),
            "--".into(),
            "/bin/sh".into(),
            "-c".into(),
            "echo hi".into(),
        ];
        let (back, program, rest) = split_args(&args).unwrap();
        assert_eq!(back, p);
        assert_eq!(program, "/bin/sh");
        assert_eq!(rest, vec![OsString::from("-c"), OsString::from("echo hi")]);
        assert!(split_args(&args[..2]).is_err());
        let mut bad = args;
        bad[1] = "x".into();
        assert!(split_args(&bad).is_err());
    }

    #[test]
    fn the_level_names_the_exact_abi() {
        let mut level = Level {
            landlock_abi: 7,
            crate_knows_up_to: None,
            seccomp: true,
            pid_namespace: true,
        };
        assert!(
            level.describe().starts_with("Landlock ABI 7 ("),
            "{}",
            level.describe()
        );
        level.landlock_abi = 12;
        level.crate_knows_up_to = Some(10);
        assert!(
            level.describe().starts_with(
                "Landlock ABI 12 (rules use ABI 10, the newest the landlock crate knows)"
            ),
            "{}",
            level.describe()
        );
    }

    #[test]
    fn this_kernels_abi_is_read_exactly() {
        // On a kernel with Landlock the probe reports the kernel's own number (here 7 on Linux
        // 6.15 and later), not a capped "6 or later".
        if let Ok(level) = probe() {
            let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
            let mut parts = release
                .trim()
                .split(['.', '-'])
                .map(|p| p.parse::<u32>().unwrap_or(0));
            let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
            if major == 6 && (15..=19).contains(&minor) {
                assert_eq!(level.landlock_abi, 7);
            }
        }
    }

    #[test]
    fn a_server_may_read_its_program_and_script_but_not_the_folders_of_its_other_arguments() {
        let dirs = PrivateDirs::new().unwrap();
        let tree = tempfile::tempdir().unwrap();
        let (app, data) = (tree.path().join("app"), tree.path().join("secrets"));
        std::fs::create_dir_all(&app).unwrap();
        std::fs::create_dir_all(&data).unwrap();
        std::fs::write(app.join("server.py"), "print(1)").unwrap();
        std::fs::write(data.join("config"), "token=x").unwrap();
        let args = vec![
            "-u".to_owned(),
            app.join("server.py").display().to_string(),
            "--config".to_owned(),
            data.join("config").display().to_string(),
        ];
        let p = server_policy("python3", &args, None, &dirs);
        let canon = |d: &Path| d.canonicalize().unwrap();
        assert!(
            p.read_only.iter().any(|r| r == &app || r == &canon(&app)),
            "{:?}",
            p.read_only
        );
        assert!(
            !p.read_only
                .iter()
                .any(|r| r.starts_with(&data) || r.starts_with(canon(&data))),
            "a data argument opens nothing: {:?}",
            p.read_only
        );
        // A script directly in $HOME gets itself, never the home folder.
        if let Some(home) = std::env::var_os("HOME").map(PathBuf::from) {
            let script = home.join(format!("toolgate-policy-test-{}.py", std::process::id()));
            if std::fs::write(&script, "print(1)").is_ok() {
                let p = server_policy("python3", &[script.display().to_string()], None, &dirs);
                let _ = std::fs::remove_file(&script);
                let home_c = home.canonicalize().unwrap_or(home.clone());
                assert!(
                    !p.read_only.iter().any(|r| r == &home || r == &home_c),
                    "{:?}",
                    p.read_only
                );
                assert!(
                    p.read_only
                        .iter()
                        .any(|r| r.ends_with(script.file_name().unwrap()))
                );
            }
        }
    }

    #[test]
    fn what_a_child_holds_is_described_in_one_line() {
        let mut held = Held {
            effective: 0,
            permitted: 0,
            inheritable: 0,
            bounding: 0,
            ambient: 0,
            no_new_privs: true,
            seccomp: true,
            own_session: true,
            terminal: false,
        };
        assert!(!held.has_capabilities());
        assert_eq!(
            held.describe(),
            "CapEff none, CapPrm none, CapAmb none, CapBnd none, NoNewPrivs, seccomp, own session, no terminal"
        );
        // A bounding set alone grants nothing (not root, no user namespace of its own).
        held.bounding = 0x1ff_ffff_ffff;
        assert!(!held.has_capabilities());
        assert!(held.describe().contains("CapBnd 000001ffffffffff"));
        held.effective = 1 << 21;
        assert!(held.has_capabilities());
        assert!(held.describe().starts_with("CapEff 0000000000200000"));
    }

    #[test]
    fn the_level_says_no_capabilities_and_no_terminal() {
        let level = Level {
            landlock_abi: 7,
            crate_knows_up_to: None,
            seccomp: true,
            pid_namespace: true,
        };
        assert!(
            level.describe().contains("no capabilities, no terminal"),
            "{}",
            level.describe()
        );
    }

    #[test]
    fn private_dirs_exist_and_go_away() {
        let dirs = PrivateDirs::new().unwrap();
        let (home, tmp) = (dirs.home(), dirs.tmp());
        assert!(home.is_dir() && tmp.is_dir());
        drop(dirs);
        assert!(!home.exists() && !tmp.exists());
    }
}
