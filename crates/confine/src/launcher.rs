//! The two launcher stages, run inside toolgate's own binary (`toolgate __confine …`, `toolgate
//! __confine-exec …`). Both must run before any thread or async runtime starts (a new user
//! namespace needs a single-threaded process), so the binary dispatches them first thing.

use std::ffi::OsString;

use crate::{CONFINE_FAILED, ConfineError, EXEC_SUBCOMMAND, GUARD_SUBCOMMAND, split_args};

/// Run a launcher stage: `subcommand` is [`GUARD_SUBCOMMAND`] or [`EXEC_SUBCOMMAND`], `args`
/// what follows it. Returns the exit code to exit with (stage 2 does not return when the
/// program starts).
pub fn main(subcommand: &str, args: &[OsString]) -> i32 {
    let result = match subcommand {
        GUARD_SUBCOMMAND => guard(args),
        EXEC_SUBCOMMAND => exec(args),
        other => Err(ConfineError::UnknownStage(other.to_owned())),
    };
    result.unwrap_or_else(|message| {
        // stderr is the child's stderr: the tool reports it with the exit code.
        eprintln!("toolgate: the process could not be confined, so it was not run: {message}");
        CONFINE_FAILED
    })
}

/// The first argument of stage 2 that makes it the fallback's reaper instead (see [`guard`]).
const REAPER_FLAG: &str = "--reaper";

/// Stage 1. With a PID namespace: start stage 2 as its PID 1 and wait. Without one (the kernel
/// forbids it, or [`crate::FORCE_SUBREAPER_ENV`] asks for the fallback): start a *reaper* in a
/// process group of its own, which is a child subreaper and starts stage 2 back in the
/// guard's group (which stage 2 leaves for a session of its own before the program starts).
/// The caller kills the guard's group when the call ends; the reaper is not in it, so it lives
/// on just long enough to see the guard gone (its pidfd) and kill every process left below it
/// — stage 2, `setsid` daemons and double-forked orphans are re-parented to it, never to init.
#[cfg(target_os = "linux")]
fn guard(args: &[OsString]) -> Result<i32, ConfineError> {
    use crate::FORCE_SUBREAPER_ENV;
    use std::os::unix::process::CommandExt;

    split_args(args)?;
    let parent = nix::unistd::getppid();
    let forced = std::env::var_os(FORCE_SUBREAPER_ENV).is_some_and(|v| v == "1");
    let pid_namespace = !forced && crate::linux::enter_namespaces();
    if pid_namespace && !nix::unistd::geteuid().is_root() {
        // The new user namespace gave this process every capability inside it, and the
        // bounding set it passes on; stage 2 (no longer privileged once it starts) could not
        // empty that set itself.
        crate::linux::drop_capabilities()?;
    }
    let exe = std::env::current_exe().map_err(ConfineError::os("finding toolgate's binary"))?;
    let mut cmd = std::process::Command::new(exe);
    cmd.arg(EXEC_SUBCOMMAND).env_remove(FORCE_SUBREAPER_ENV);
    if !pid_namespace {
        cmd.arg(REAPER_FLAG).process_group(0);
    }
    let mut child = cmd
        .args(args)
        .spawn()
        .map_err(ConfineError::os("starting the confined process"))?;
    // If toolgate dies without killing us, the program must not live on. PID 1 is killed (the
    // namespace dies with it); a reaper is left to see us gone and kill what it holds.
    let on_orphan = if pid_namespace {
        Orphaned::Kill
    } else {
        Orphaned::Leave
    };
    let status = wait_or_orphaned(&mut child, parent, on_orphan)?;
    Ok(exit_code(status))
}

/// The fallback's reaper (between the guard and stage 2): a child subreaper that runs stage 2
/// in the guard's process group, and when stage 2 ends or the guard goes away, kills every
/// process left below it.
#[cfg(target_os = "linux")]
fn reaper(args: &[OsString]) -> Result<i32, ConfineError> {
    use std::os::unix::process::CommandExt;

    split_args(args)?;
    nix::sys::prctl::set_child_subreaper(true)
        .map_err(ConfineError::os("PR_SET_CHILD_SUBREAPER"))?;
    let parent = nix::unistd::getppid();
    let group = nix::unistd::getpgid(Some(parent))
        .map_err(ConfineError::os("the guard's process group"))?;
    let exe = std::env::current_exe().map_err(ConfineError::os("finding toolgate's binary"))?;
    let mut child = std::process::Command::new(exe)
        .arg(EXEC_SUBCOMMAND)
        .args(args)
        .process_group(group.as_raw())
        .spawn()
        .map_err(ConfineError::os("starting the confined process"))?;
    let status = wait_or_orphaned(&mut child, parent, Orphaned::Kill)?;
    crate::linux::reap_all();
    Ok(exit_code(status))
}

#[cfg(target_os = "linux")]
fn exit_code(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .unwrap_or_else(|| status.signal().map_or(CONFINE_FAILED, |s| 128 + s))
}

/// What [`wait_or_orphaned`] does when the parent goes away.
#[cfg(target_os = "linux")]
#[derive(Clone, Copy)]
enum Orphaned {
    /// Kill the child and everything left below us, and exit.
    Kill,
    /// Exit and leave the child (a reaper, which sees us gone and cleans up itself).
    Leave,
}

/// Wait for `child`; when our parent goes away, act as `on_orphan` says. Waits on a pidfd
/// (woken the moment the child exits) with a 100 ms timeout to look at the parent.
#[cfg(target_os = "linux")]
fn wait_or_orphaned(
    child: &mut std::process::Child,
    parent: nix::unistd::Pid,
    on_orphan: Orphaned,
) -> Result<std::process::ExitStatus, ConfineError> {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};

    let pid = i32::try_from(child.id())
        .ok()
        .and_then(rustix::process::Pid::from_raw)
        .ok_or(ConfineError::NoPid)?;
    let pidfd = rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()).ok();
    // The parent too: stage 2 leaves the guard's process group (a session of its own), so in
    // the fallback the caller's kill of that group reaches only the guard, and the reaper must
    // see it gone at once rather than at its next look. `getppid` below still decides (a pidfd
    // opened after the parent died would name another process).
    let parent_fd = rustix::process::Pid::from_raw(parent.as_raw())
        .and_then(|p| rustix::process::pidfd_open(p, rustix::process::PidfdFlags::empty()).ok());
    let tick = Timespec {
        tv_sec: 0,
        tv_nsec: 100_000_000,
    };
    loop {
        if let Some(status) = child
            .try_wait()
            .map_err(ConfineError::os("waiting for the confined process"))?
        {
            return Ok(status);
        }
        if nix::unistd::getppid() != parent {
            if let Orphaned::Kill = on_orphan {
                let _ = child.kill();
                let _ = child.wait();
                crate::linux::reap_all();
            }
            std::process::exit(137);
        }
        match (&pidfd, &parent_fd) {
            (Some(fd), Some(parent_fd)) => {
                let mut fds = [
                    PollFd::new(fd, PollFlags::IN),
                    PollFd::new(parent_fd, PollFlags::IN),
                ];
                let _ = poll(&mut fds, Some(&tick));
            }
            (Some(fd), None) => {
                let mut fds = [PollFd::new(fd, PollFlags::IN)];
                let _ = poll(&mut fds, Some(&tick));
            }
            (None, _) => std::thread::sleep(std::time::Duration::from_millis(5)),
        }
    }
}

#[cfg(target_os = "linux")]
fn exec(args: &[OsString]) -> Result<i32, ConfineError> {
    use std::os::unix::process::CommandExt;

    if args.first().is_some_and(|a| a == REAPER_FLAG) {
        return reaper(&args[1..]);
    }
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
fn guard(_: &[OsString]) -> Result<i32, ConfineError> {
    Err(ConfineError::NotLinux)
}

#[cfg(not(target_os = "linux"))]
fn exec(_: &[OsString]) -> Result<i32, ConfineError> {
    Err(ConfineError::NotLinux)
}
