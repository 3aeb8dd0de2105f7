//! The hyperlight backend's usability check (feature `hyperlight`).
//!
//! Hyperlight runs a guest in a KVM micro-VM. This build checks the host side for real (opens
//! `/dev/kvm`, checks the API version, creates and drops a VM) and then reports that no Python
//! guest ships with it: the published high-level hyperlight crates are placeholders, so there is
//! nothing to start in the VM yet. `auto` therefore falls back to monty, and an explicit
//! `--backend hyperlight` fails with the reason.

use std::path::Path;

use crate::backend::HyperlightUnusable;

/// Why hyperlight cannot run a program here, or `Ok` if it could.
pub fn probe() -> Result<(), HyperlightUnusable> {
    probe_kvm(Path::new("/dev/kvm"))?;
    Err(HyperlightUnusable::NoGuest)
}

/// Open a KVM device and create (then drop) one VM.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
pub fn probe_kvm(device: &Path) -> Result<(), HyperlightUnusable> {
    use std::io::ErrorKind;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

    // _IO(KVMIO = 0xAE, 0x00) and _IO(KVMIO, 0x01).
    const KVM_GET_API_VERSION: u64 = 0xAE00;
    const KVM_CREATE_VM: u64 = 0xAE01;
    const KVM_API_VERSION: i32 = 12;

    let kvm = toolgate_fs::open::open_device(device, true).map_err(|e| match e.kind() {
        ErrorKind::NotFound => HyperlightUnusable::DeviceMissing {
            device: device.to_owned(),
        },
        ErrorKind::PermissionDenied => HyperlightUnusable::DeviceDenied {
            device: device.to_owned(),
        },
        _ => HyperlightUnusable::DeviceOpen {
            device: device.to_owned(),
            source: e,
        },
    })?;
    let fd = kvm.as_raw_fd();
    // SAFETY: `fd` is an open descriptor owned by `kvm`, alive for the whole call;
    // KVM_GET_API_VERSION takes no argument and only returns an integer.
    let version = unsafe { libc::ioctl(fd, KVM_GET_API_VERSION as _, 0) };
    if version != KVM_API_VERSION {
        return Err(HyperlightUnusable::ApiVersion {
            device: device.to_owned(),
            version,
            expected: KVM_API_VERSION,
        });
    }
    // SAFETY: as above; KVM_CREATE_VM with machine type 0 returns a new descriptor or -1.
    let vm = unsafe { libc::ioctl(fd, KVM_CREATE_VM as _, 0) };
    if vm < 0 {
        return Err(HyperlightUnusable::CreateVm(std::io::Error::last_os_error()));
    }
    // SAFETY: `vm` is a fresh descriptor returned to us by the kernel and owned by nobody else.
    drop(unsafe { OwnedFd::from_raw_fd(vm) });
    Ok(())
}

#[cfg(not(target_os = "linux"))]
pub fn probe_kvm(_device: &Path) -> Result<(), HyperlightUnusable> {
    Err(HyperlightUnusable::NotLinux)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_device_is_named() {
        let err = probe_kvm(Path::new("/nonexistent/kvm"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("missing") || err.contains("Linux"), "{err}");
    }
}
