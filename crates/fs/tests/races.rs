//! The symlink-swap and hard-link races against the module itself (each surface runs them
//! again through its own entry point: `workspace/tests/paths_race.rs`, `plot/tests/save_race.rs`,
//! `cli/tests/paths_race.rs`).

#![allow(clippy::disallowed_methods)]

use std::path::Path;

mod common;

use toolgate_fs::{FsError, Links, OFlags, Root};

#[test]
fn a_swapped_link_never_lets_an_open_or_a_write_out() {
    common::swap_race();
}

/// A hard link to a file outside, made inside the root, is refused for reading.
#[test]
fn a_hard_link_to_an_outside_file_is_refused() {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir(d.path().join("root")).unwrap();
    std::fs::write(d.path().join("secret"), "S").unwrap();
    std::fs::hard_link(d.path().join("secret"), d.path().join("root/hl")).unwrap();
    let r = Root::new(d.path().join("root")).unwrap();
    let fd = r
        .open(
            Path::new("hl"),
            OFlags::RDONLY | OFlags::NONBLOCK,
            Links::Inside,
        )
        .unwrap();
    let stat = rustix_stat(&fd);
    let err = toolgate_fs::regular_only(Path::new("hl"), &stat).unwrap_err();
    assert!(matches!(err, FsError::MultiLink { links: 2, .. }), "{err}");
}

fn rustix_stat(fd: &std::os::fd::OwnedFd) -> toolgate_fs::Stat {
    match toolgate_fs::fstat(fd) {
        Ok(st) => st,
        Err(e) => panic!("fstat: {e}"),
    }
}
