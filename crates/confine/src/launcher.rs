//! The two launcher stages, run inside toolgate's own binary (`toolgate __confine …`, `toolgate
//! __confine-exec …`). Both must run before any thread or async runtime starts (a new user
//! namespace needs a single-threaded process), so the binary dispatches them first thing.

use std::ffi::OsString;

use crate::{CONFINE_FAILED, EXEC_SUBCOMMAND, GUARD_SUBCOMMAND, split_args};

/// Run a launcher stage: `subcommand` is [`GUARD_SUBCOMMAND`] or [`EXEC_SUBCOMMAND`], `args`
/// what follows it. Returns the exit code to exit with (stage 2 does not return when the
/// program starts).
pub fn main(subcommand: &str, args: &[OsString]) -> i32 {
    let result = match subcommand {
        GUARD_SUBCOMMAND => guard(args),
        EXEC_SUBCOMMAND => exec(args),
        other => Err(format!("unknown launcher stage {other:?}")),
    };
    result.unwrap_or_else(|message| {
        // stderr is the child's stderr: the tool reports it with the exit code.
        eprintln!("toolgate: the process could not be confined, so it was not run: {message}");
        CONFINE_FAILED
    })
}

#[cfg(target_os = "linux")]
fn guard(args: &[OsString]) -> Result<i32, String> {
    use std::os::unix::process::ExitStatusExt;

    split_args(args)?;
    let parent = nix::unistd::getppid();
    let pid_namespace = crate::linux::enter_namespaces();
    let exe = std::env::current_exe().map_err(|e| format!("finding toolgate's binary: {e}"))?;
    let mut child = std::process::Command::new(exe)
        .arg(EXEC_SUBCOMMAND)
        .args(args)
        .spawn()
        .map_err(|e| format!("starting the confined process: {e}"))?;
    // If toolgate dies without killing us, the program must not live on: while waiting, look
    // for our parent changing (re-parenting happens only when the whole parent process is
    // gone). No thread: a process that has unshared its PID namespace cannot make one.
    let status = wait_or_orphaned(&mut child, parent)?;
    if !pid_namespace {
        crate::linux::reap_all();
    }
    if let Some(code) = status.code() {
        return Ok(code);
    }
    Ok(status.signal().map_or(CONFINE_FAILED, |s| 128 + s))
}

/// Wait for `child`; kill it when our parent goes away. Waits on a pidfd (woken the moment the
/// child exits) with a 100 ms timeout to look at the parent.
#[cfg(target_os = "linux")]
fn wait_or_orphaned(
    child: &mut std::process::Child,
    parent: nix::unistd::Pid,
) -> Result<std::process::ExitStatus, String> {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};

    let pid = i32::try_from(child.id())
        .ok()
        .and_then(rustix::process::Pid::from_raw)
        .ok_or("the confined process has no valid pid")?;
    let pidfd = rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()).ok();
    let tick = Timespec {
        tv_sec: 0,
        tv_nsec: 100_000_000,
    };
    loop {
        if let Some(status) = child
            .try_wait()
            .map_err(|e| format!("waiting for the confined process: {e}"))?
        {
            return Ok(status);
        }
        if nix::unistd::getppid() != parent {
            let _ = child.kill();
            let _ = child.wait();
            std::process::exit(137);
        }
        match &pidfd {
            Some(fd) => {
                let mut fds = [PollFd::new(fd, PollFlags::IN)];
                let _ = poll(&mut fds, Some(&tick));
            }
            None => std::thread::sleep(std::time::Duration::from_millis(5)),
        }
    }
}

#[cfg(target_os = "linux")]
fn exec(args: &[OsString]) -> Result<i32, String> {
    use std::os::unix::process::CommandExt;

    let (policy, program, rest) = split_args(args)?;
    crate::linux::restrict(&policy)?;
    let err = std::process::Command::new(&program)
        .args(&rest)
        .env("HOME", &policy.home)
        .env("TMPDIR", &policy.tmp)
        .exec();
    eprintln!(
        "toolgate: could not start {}: {err}",
        program.to_string_lossy()
    );
    Ok(127)
}

#[cfg(not(target_os = "linux"))]
fn guard(_: &[OsString]) -> Result<i32, String> {
    Err("OS confinement is implemented for Linux only".to_owned())
}

#[cfg(not(target_os = "linux"))]
fn exec(_: &[OsString]) -> Result<i32, String> {
    Err("OS confinement is implemented for Linux only".to_owned())
}
