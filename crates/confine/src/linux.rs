//! The Linux mechanisms: Landlock rules, the seccomp filter, namespaces, reaping.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope,
    path_beneath_rules,
};
use nix::sched::CloneFlags;
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use toolgate_fs::open::write_procfs;

use crate::{ConfineError, Level, Policy, Unavailable};

/// The newest Landlock ABI these rules were written and tested for. Newer kernels get exactly
/// these rights (the crate's advice: never build rules from a runtime-detected ABI).
const TESTED_ABI: ABI = ABI::V7;

/// The system's directories a child may read and execute (never write). `/etc` is added entry
/// by entry, without the files that hold secrets (see [`etc_entries`]).
const SYSTEM_READ_ONLY: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt",
];

/// Device files every program expects; readable and writable, nothing else in `/dev`.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// Entries of `/etc` that hold secrets or credentials: password hashes, host keys, private
/// TLS keys, sudo rules, stored network passwords, Kerberos keys. Everything else in `/etc`
/// is readable (programs need it: ld.so.cache, passwd, nsswitch.conf, locale, bash.bashrc…).
const ETC_SECRETS: &[&str] = &[
    "shadow",
    "shadow-",
    "gshadow",
    "gshadow-",
    "sudoers",
    "sudoers.d",
    "ssh",
    "ssl",
    "pki",
    "security",
    "credstore",
    "credstore.encrypted",
    "krb5.keytab",
    "NetworkManager",
    "wireguard",
    "ppp",
    "ipsec.secrets",
    "ipsec.d",
    "letsencrypt",
    "docker",
    "containerd",
    "kubernetes",
    ".pwd.lock",
];

/// Public certificate stores and OpenSSL's configuration inside otherwise-secret `/etc`
/// directories (Node and Python read `openssl.cnf` at start).
const ETC_PUBLIC: &[&str] = &[
    "/etc/ssl/certs",
    "/etc/ssl/openssl.cnf",
    "/etc/pki/tls/certs",
    "/etc/pki/tls/openssl.cnf",
    "/etc/pki/ca-trust",
];

pub(crate) fn probe() -> Result<Level, Unavailable> {
    let (abi, crate_knows_up_to) = landlock_abi();
    if abi == 0 {
        return Err(Unavailable::NoLandlock {
            detail: "the kernel reports no Landlock ABI".to_owned(),
        });
    }
    // The filters themselves are compiled in the launcher, just before they are installed (a
    // failure there refuses the call); compiling them here too would cost every `exec` a
    // millisecond for nothing.
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    if !status.lines().any(|l| l.starts_with("Seccomp:")) {
        return Err(Unavailable::NoSeccomp {
            detail: "this kernel reports no seccomp support".to_owned(),
        });
    }
    let userns = nix::unistd::geteuid().is_root()
        || std::fs::read_to_string("/proc/sys/user/max_user_namespaces")
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .is_some_and(|n| n > 0);
    Ok(Level {
        landlock_abi: abi,
        crate_knows_up_to,
        seccomp: true,
        pid_namespace: userns,
    })
}

/// The kernel's Landlock ABI version (0 for none), and the newest the crate knows when the
/// kernel's is newer. A [`landlock::RestrictSelf`] with no flags and no `no_new_privs` asks
/// the kernel (`landlock_create_ruleset(NULL, 0, VERSION)`) and changes nothing: with nothing
/// to enforce it makes no `landlock_restrict_self` call.
fn landlock_abi() -> (u8, Option<u8>) {
    let status = landlock::RestrictSelf::default()
        .no_new_privs(false)
        .apply();
    match status.map(|s| s.landlock) {
        Ok(landlock::LandlockStatus::Available {
            effective_abi,
            kernel_abi,
        }) => {
            let known = u8::try_from(effective_abi as i32).unwrap_or(0);
            match kernel_abi.map(|k| u8::try_from(k).unwrap_or(u8::MAX)) {
                Some(kernel) if kernel > known => (kernel, Some(known)),
                _ => (known, None),
            }
        }
        _ => (0, None),
    }
}

/// Enter a new PID namespace for the guard's children (and a user namespace when not root, so
/// that it is allowed). Returns whether it was made; without it the caller starts a reaper
/// (see [`crate::launcher`]) instead. No network namespace: seccomp already refuses every `socket()` when the
/// network is off, and Landlock every TCP bind/connect, and a network namespace would add
/// milliseconds to every call.
pub(crate) fn enter_namespaces() -> bool {
    let mut flags = CloneFlags::CLONE_NEWPID;
    let uid = nix::unistd::geteuid();
    let gid = nix::unistd::getegid();
    if !uid.is_root() {
        flags |= CloneFlags::CLONE_NEWUSER;
    }
    match nix::sched::unshare(flags) {
        Ok(()) => {
            if !uid.is_root() {
                // Map the caller to itself inside the new user namespace; without a map the
                // child would run as the overflow id and could not read its own files.
                let _ = write_procfs(Path::new("/proc/self/setgroups"), b"deny");
                let _ = write_procfs(
                    Path::new("/proc/self/uid_map"),
                    format!("{uid} {uid} 1").as_bytes(),
                );
                let _ = write_procfs(
                    Path::new("/proc/self/gid_map"),
                    format!("{gid} {gid} 1").as_bytes(),
                );
            }
            true
        }
        Err(e) => {
            tracing::debug!("no PID namespace ({e}); reaping as a subreaper instead");
            false
        }
    }
}

/// Restrict the calling process (stage 2, just before `exec`): a session of its own, no new
/// privileges, Landlock, seccomp, no capabilities. Every failure is fatal to the call: nothing
/// runs unconfined by accident.
pub(crate) fn restrict(policy: &Policy) -> Result<(), ConfineError> {
    // Asked for while still in the guard's process group: until `setsid` below, the caller's
    // kill of that group reaches this process directly; from then on the guard's death does.
    nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
        .map_err(ConfineError::os("PR_SET_PDEATHSIG"))?;
    // A new session has no controlling terminal, and nothing started in it can gain the
    // caller's: `/dev/tty` (or a node made for it) names no terminal, TIOCSTI has none to push
    // into, job-control signals reach no shell. Reaping does not rely on the process group:
    // with a PID namespace the guard's death kills this process (above) and with it the
    // namespace; in the fallback the reaper kills everything below it.
    nix::unistd::setsid().map_err(ConfineError::os("setsid (leaving the caller's terminal)"))?;
    nix::sys::prctl::set_no_new_privs().map_err(ConfineError::os("PR_SET_NO_NEW_PRIVS"))?;
    landlock(policy)?;
    for filter in filters(policy.network)? {
        seccompiler::apply_filter(&filter).map_err(ConfineError::os("seccomp"))?;
    }
    // Last, so that the Landlock rules above could still open the policy's paths with the
    // caller's rights; neither filter refuses `prctl` or `capset`.
    drop_capabilities()
}

/// Drop every capability of the calling thread, for good: the securebits that keep a root
/// `execve` from granting them again (locked), every capability out of the bounding set, the
/// ambient set cleared, the permitted, effective and inheritable sets emptied. The bounding
/// set and the securebits need `CAP_SETPCAP`; without it (not root, no user namespace of
/// its own) there is nothing they could take away that `NO_NEW_PRIVS` does not already keep
/// out of reach. Fails unless the permitted, effective and inheritable sets end up empty.
pub(crate) fn drop_capabilities() -> Result<(), ConfineError> {
    use rustix::thread::{
        self as t, CapabilitiesSecureBits as Bits, CapabilitySet, CapabilitySets,
    };
    let held =
        t::capabilities(None).map_err(ConfineError::os("reading the capabilities (capget)"))?;
    if held.effective.contains(CapabilitySet::SETPCAP) {
        let locked = Bits::NO_ROOT
            | Bits::NO_ROOT_LOCKED
            | Bits::NO_SETUID_FIXUP
            | Bits::NO_SETUID_FIXUP_LOCKED
            | Bits::KEEP_CAPS_LOCKED
            | Bits::NO_CAP_AMBIENT_RAISE
            | Bits::NO_CAP_AMBIENT_RAISE_LOCKED;
        let current = t::capabilities_secure_bits().unwrap_or(Bits::empty());
        if !current.contains(locked) {
            // Belt and braces (the bounding set is emptied below, and NO_NEW_PRIVS keeps an
            // `execve` from adding to the permitted set): a bit someone else locked the other
            // way is not worth refusing the call for.
            if let Err(e) = t::set_capabilities_secure_bits((current | locked) - Bits::KEEP_CAPS) {
                tracing::debug!("securebits not set ({e})");
            }
        }
        // PR_CAPBSET_READ answers EINVAL past the kernel's last capability: no need to read
        // /proc/sys/kernel/cap_last_cap (which Landlock no longer allows here).
        for cap in 0..64u32 {
            let one = CapabilitySet::from_bits_retain(1 << cap);
            match t::capability_is_in_bounding_set(one) {
                Ok(true) => t::remove_capability_from_bounding_set(one).map_err(
                    ConfineError::os(format!("dropping capability {cap} from the bounding set")),
                )?,
                Ok(false) => {}
                Err(_) => break,
            }
        }
    }
    // EINVAL only on kernels before 4.3, which have no ambient set to clear.
    let _ = t::clear_ambient_capability_set();
    let none = CapabilitySet::empty();
    t::set_capabilities(
        None,
        CapabilitySets {
            effective: none,
            permitted: none,
            inheritable: none,
        },
    )
    .map_err(ConfineError::os("dropping the capabilities (capset)"))?;
    let after =
        t::capabilities(None).map_err(ConfineError::os("reading the capabilities (capget)"))?;
    if !(after.effective.is_empty() && after.permitted.is_empty() && after.inheritable.is_empty()) {
        return Err(ConfineError::CapabilitiesHeld {
            permitted: after.permitted.bits(),
            effective: after.effective.bits(),
            inheritable: after.inheritable.bits(),
        });
    }
    Ok(())
}

fn landlock(policy: &Policy) -> Result<(), ConfineError> {
    let abi = TESTED_ABI;
    let err = |e: landlock::RulesetError| ConfineError::Landlock(e.into());
    let mut ruleset = landlock::Ruleset::default()
        .handle_access(AccessFs::from_all(abi))
        .map_err(err)?
        .scope(Scope::from_all(abi))
        .map_err(err)?;
    if !policy.network {
        // Handled with no rule: every TCP bind and connect is denied.
        ruleset = ruleset
            .handle_access(AccessNet::from_all(abi))
            .map_err(err)?;
    }
    let read = AccessFs::from_read(abi);
    let device = read | AccessFs::WriteFile | AccessFs::Truncate;
    let status = ruleset
        .create()
        .map_err(err)?
        .add_rules(path_beneath_rules(SYSTEM_READ_ONLY, read))
        .map_err(err)?
        .add_rules(path_beneath_rules(etc_entries(), read))
        .map_err(err)?
        .add_rules(path_beneath_rules(ETC_PUBLIC, read))
        .map_err(err)?
        .add_rules(path_beneath_rules(path_dirs(&policy.home), read))
        .map_err(err)?
        .add_rules(path_beneath_rules(&policy.read_only, read))
        .map_err(err)?
        .add_rules(path_beneath_rules(DEVICES, device))
        .map_err(err)?
        .add_rules(path_beneath_rules(&policy.read_write, read_write(abi)))
        .map_err(err)?
        .restrict_self()
        .map_err(err)?;
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err(ConfineError::LandlockNotEnforced);
    }
    Ok(())
}

/// What the workspace and the private dirs allow: everything but making device nodes, FIFOs
/// and sockets, and device ioctls (handled, so denied). A terminal device made in the workspace
/// (`mknod ./t c 5 0`) was the way to the caller's terminal; a FIFO there would block a reader
/// that expects a file.
fn read_write(abi: ABI) -> landlock::BitFlags<AccessFs> {
    AccessFs::from_all(abi)
        & !(AccessFs::MakeChar
            | AccessFs::MakeBlock
            | AccessFs::MakeFifo
            | AccessFs::MakeSock
            | AccessFs::IoctlDev)
}

/// What a restricted thread may still read: randomness, and the time zone (glibc loads it once
/// per process; a load refused here would leave the whole process on UTC).
const THREAD_READ_ONLY: &[&str] = &["/dev/urandom", "/etc/localtime", "/usr/share/zoneinfo"];

/// See [`crate::restrict_this_thread_to`]. `landlock_restrict_self` without the thread-sync
/// flag applies to the calling thread only; `no_new_privs` too is per thread.
pub(crate) fn restrict_thread<F: std::os::fd::AsFd>(dirs: &[F]) -> Result<bool, ConfineError> {
    let abi = TESTED_ABI;
    let err = |e: landlock::RulesetError| ConfineError::Landlock(e.into());
    let status = landlock::Ruleset::default()
        .handle_access(AccessFs::from_all(abi))
        .map_err(err)?
        .handle_access(AccessNet::from_all(abi))
        .map_err(err)?
        .create()
        .map_err(err)?
        .add_rules(dirs.iter().map(|d| {
            Ok::<_, landlock::RulesetError>(landlock::PathBeneath::new(
                d.as_fd(),
                AccessFs::from_all(abi),
            ))
        }))
        .map_err(err)?
        .add_rules(path_beneath_rules(
            THREAD_READ_ONLY.iter().filter(|p| Path::new(p).exists()),
            AccessFs::from_read(abi),
        ))
        .map_err(err)?
        .restrict_self()
        .map_err(err)?;
    Ok(status.ruleset != RulesetStatus::NotEnforced)
}

/// `/etc`'s entries minus [`ETC_SECRETS`], and minus links that lead out of the system's
/// directories (e.g. `/etc/mtab` → `/proc/self/mounts`).
fn etc_entries() -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir("/etc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| !ETC_SECRETS.iter().any(|s| e.file_name() == *s))
        .filter(|e| {
            // Only links need resolving (the rest are what they are): one syscall an entry.
            if !e.file_type().is_ok_and(|t| t.is_symlink()) {
                return true;
            }
            let Ok(target) = e.path().canonicalize() else {
                return false;
            };
            target.starts_with("/etc") || target.starts_with("/usr") || target.starts_with("/lib")
        })
        .map(|e| e.path())
        .collect()
}

/// The directories on the child's `PATH` (so that tools installed outside `/usr`, e.g. a
/// pyenv's shims, can be run), read-only; never the home directory itself or one above it,
/// never a relative entry, never `/`.
fn path_dirs(private_home: &Path) -> Vec<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let Some(path) = std::env::var_os("PATH") else {
        return Vec::new();
    };
    std::env::split_paths(&path)
        .filter(|p| p.is_absolute() && p != Path::new("/"))
        .filter_map(|p| p.canonicalize().ok())
        .filter(|p| p.as_path() != Path::new("/"))
        .filter(|p| !home.as_ref().is_some_and(|h| h.starts_with(p)))
        .filter(|p| !private_home.starts_with(p))
        .collect()
}

/// The seccomp filters: one that answers `EPERM` to the system calls a confined program has no
/// business making, and one that answers `ENOSYS` to `clone3` (its flags live in memory a
/// filter cannot read, so glibc is made to fall back to `clone`, whose flags the first filter
/// checks).
fn filters(network: bool) -> Result<Vec<BpfProgram>, ConfineError> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|e| ConfineError::SeccompFilter(e.into()))?;
    let e = |e: seccompiler::BackendError| ConfineError::SeccompFilter(e.into());
    let mut denied: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for nr in [
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
        libc::SYS_bpf,
        libc::SYS_perf_event_open,
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_mount,
        libc::SYS_umount2,
        libc::SYS_pivot_root,
        libc::SYS_chroot,
        libc::SYS_setns,
        libc::SYS_unshare,
        libc::SYS_kexec_load,
        libc::SYS_init_module,
        libc::SYS_finit_module,
        libc::SYS_delete_module,
        libc::SYS_open_by_handle_at,
        libc::SYS_name_to_handle_at,
        libc::SYS_userfaultfd,
        libc::SYS_fsopen,
        libc::SYS_fsmount,
        libc::SYS_move_mount,
        libc::SYS_open_tree,
        libc::SYS_swapon,
        libc::SYS_swapoff,
        libc::SYS_reboot,
        libc::SYS_kexec_file_load,
        libc::SYS_acct,
        // The terminal and the kernel's log: `vhangup` hangs up the caller's terminal, `syslog`
        // reads the kernel's log (dmesg).
        libc::SYS_vhangup,
        libc::SYS_syslog,
        // The machine's identity and clock.
        libc::SYS_sethostname,
        libc::SYS_setdomainname,
        libc::SYS_settimeofday,
        libc::SYS_clock_settime,
        libc::SYS_clock_adjtime,
        libc::SYS_adjtimex,
    ] {
        denied.insert(nr, Vec::new());
    }
    if !network {
        // No socket at all: pathname UNIX sockets outside the workspace (a Docker socket, an
        // agent's) are not covered by Landlock before ABI 9. socketpair stays allowed.
        denied.insert(libc::SYS_socket, Vec::new());
    }
    // clone() with a namespace flag: a new user namespace is the usual first step of an escape.
    let mut clone_rules = Vec::new();
    for flag in [
        libc::CLONE_NEWUSER,
        libc::CLONE_NEWNS,
        libc::CLONE_NEWNET,
        libc::CLONE_NEWPID,
        libc::CLONE_NEWIPC,
        libc::CLONE_NEWUTS,
        libc::CLONE_NEWCGROUP,
    ] {
        let flag = u64::from(flag.unsigned_abs());
        clone_rules.push(
            SeccompRule::new(vec![
                SeccompCondition::new(
                    0,
                    SeccompCmpArgLen::Qword,
                    SeccompCmpOp::MaskedEq(flag),
                    flag,
                )
                .map_err(e)?,
            ])
            .map_err(e)?,
        );
    }
    denied.insert(libc::SYS_clone, clone_rules);
    // ioctl(TIOCSTI) pushes bytes into a terminal's input (the caller's shell runs them after
    // the call); TIOCLINUX does the same through the console's selection. The command is an
    // `unsigned int` in the kernel: compare the low 32 bits only.
    let mut ioctl_rules = Vec::new();
    for cmd in [libc::TIOCSTI as u32, libc::TIOCLINUX as u32] {
        ioctl_rules.push(
            SeccompRule::new(vec![
                SeccompCondition::new(1, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, u64::from(cmd))
                    .map_err(e)?,
            ])
            .map_err(e)?,
        );
    }
    denied.insert(libc::SYS_ioctl, ioctl_rules);
    let eperm = SeccompFilter::new(
        denied,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM.unsigned_abs()),
        arch,
    )
    .map_err(e)?;
    let mut clone3 = BTreeMap::new();
    clone3.insert(libc::SYS_clone3, Vec::new());
    let enosys = SeccompFilter::new(
        clone3,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS.unsigned_abs()),
        arch,
    )
    .map_err(e)?;
    Ok(vec![
        BpfProgram::try_from(eperm).map_err(e)?,
        BpfProgram::try_from(enosys).map_err(e)?,
    ])
}

/// Kill (SIGKILL) and reap every process left below this one, for a guard without a PID
/// namespace: orphans are re-parented to it (it is a child subreaper), so it keeps killing its
/// children until none is left. Bounded, in case something keeps forking.
pub(crate) fn reap_all() {
    use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
    let me = std::process::id();
    for _ in 0..1000 {
        for pid in children_of(me) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) => std::thread::sleep(std::time::Duration::from_millis(1)),
            Ok(_) => {}
            Err(_) => return, // ECHILD: nothing is left.
        }
    }
}

/// What process `pid` holds, from `/proc/PID/status` and `/proc/PID/stat` (readable from
/// outside: a confined process itself may not read `/proc`).
pub(crate) fn held_by(pid: u32) -> std::io::Result<crate::Held> {
    let bad = |what: &str| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("/proc/{pid}: no {what}"),
        )
    };
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(str::trim)
    };
    let hex = |name: &str| {
        field(name)
            .and_then(|v| u64::from_str_radix(v, 16).ok())
            .ok_or_else(|| bad(name))
    };
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // After the command name (which may hold spaces and parentheses): state ppid pgrp session
    // tty_nr …
    let fields: Vec<&str> = stat
        .rfind(')')
        .map(|i| stat[i + 1..].split_whitespace().collect())
        .unwrap_or_default();
    let session = fields
        .get(3)
        .and_then(|v| v.parse::<u32>().ok())
        .ok_or_else(|| bad("session"))?;
    let tty = fields
        .get(4)
        .and_then(|v| v.parse::<i64>().ok())
        .ok_or_else(|| bad("tty_nr"))?;
    Ok(crate::Held {
        effective: hex("CapEff:")?,
        permitted: hex("CapPrm:")?,
        inheritable: hex("CapInh:")?,
        bounding: hex("CapBnd:")?,
        ambient: hex("CapAmb:")?,
        no_new_privs: field("NoNewPrivs:") == Some("1"),
        seccomp: field("Seccomp:") == Some("2"),
        own_session: session == pid,
        terminal: tty != 0,
    })
}

/// Every process below `ancestor` (children, their children, …), from `/proc`.
pub(crate) fn descendants(ancestor: u32) -> Vec<u32> {
    let mut found = Vec::new();
    let mut next = vec![ancestor];
    while let Some(parent) = next.pop() {
        for child in children_of(parent) {
            if let Ok(child) = u32::try_from(child) {
                found.push(child);
                next.push(child);
            }
        }
    }
    found
}

/// The processes whose parent is `parent` (from `/proc/*/stat`).
fn children_of(parent: u32) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| {
                    // Field 4 is the parent; the command name (field 2) may hold spaces and
                    // parentheses, so count from the last ')'.
                    let rest = &s[s.rfind(')')? + 1..];
                    rest.split_whitespace().nth(1)?.parse::<u32>().ok()
                })
                == Some(parent)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workspace_rule_makes_no_device_nodes_fifos_or_sockets_and_no_device_ioctls() {
        let rw = read_write(TESTED_ABI);
        for denied in [
            AccessFs::MakeChar,
            AccessFs::MakeBlock,
            AccessFs::MakeFifo,
            AccessFs::MakeSock,
            AccessFs::IoctlDev,
        ] {
            assert!(!rw.contains(denied), "{denied:?} is allowed");
            // Handled, so denied rather than left to the kernel's defaults.
            assert!(AccessFs::from_all(TESTED_ABI).contains(denied));
        }
        for allowed in [
            AccessFs::ReadFile,
            AccessFs::WriteFile,
            AccessFs::ReadDir,
            AccessFs::Execute,
            AccessFs::MakeReg,
            AccessFs::MakeDir,
            AccessFs::MakeSym,
            AccessFs::RemoveFile,
            AccessFs::RemoveDir,
            AccessFs::Refer,
            AccessFs::Truncate,
        ] {
            assert!(rw.contains(allowed), "{allowed:?} is not allowed");
        }
    }

    #[test]
    fn the_seccomp_filters_compile_with_and_without_the_network() {
        assert_eq!(filters(false).unwrap().len(), 2);
        assert_eq!(filters(true).unwrap().len(), 2);
    }

    #[test]
    fn a_process_state_is_read_from_proc() {
        // Every field of the test process's own entries parses; a process that is not there
        // is an error, not a clean bill.
        let me = held_by(std::process::id()).unwrap();
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let eff = status
            .lines()
            .find_map(|l| l.strip_prefix("CapEff:"))
            .unwrap();
        assert_eq!(me.effective, u64::from_str_radix(eff.trim(), 16).unwrap());
        assert!(held_by(u32::MAX).is_err());
    }
}
