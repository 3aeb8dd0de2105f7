//! The swap race, shared by `races.rs` (openat2) and `fallback.rs` (the walk).

#![allow(clippy::disallowed_methods, clippy::unwrap_used)]

use std::path::Path;

use toolgate_fs::{FsError, Links, OFlags, Root, WriteOptions, write_in};
use toolgate_test_support::race::Swapper;

/// `root/dir` is swapped with `root/swap`, a link to a folder outside, as fast as a thread can;
/// every open and write beneath the root meanwhile lands inside or is refused.
pub fn swap_race() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("root");
    let out = d.path().join("out");
    std::fs::create_dir_all(root.join("dir")).unwrap();
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(root.join("dir/f"), "IN").unwrap();
    std::fs::write(out.join("f"), "OUT").unwrap();
    std::os::unix::fs::symlink(&out, root.join("swap")).unwrap();
    let r = Root::new(&root).unwrap();
    let swapper = Swapper::start(root.join("dir"), root.join("swap"));
    let (mut opened, mut refused) = (0u32, 0u32);
    for i in 0..3000 {
        match r.open(Path::new("dir/f"), OFlags::RDONLY, Links::Inside) {
            Ok(fd) => {
                let got = std::io::read_to_string(std::fs::File::from(fd)).unwrap();
                assert_eq!(got, "IN", "read the outside file on try {i}");
                opened += 1;
            }
            Err(FsError::Escapes { .. } | FsError::NotFound { .. } | FsError::Unstable { .. }) => {
                refused += 1;
            }
            Err(e) => panic!("unexpected: {e}"),
        }
        if let Ok(dir) = r.open(
            Path::new("dir"),
            OFlags::PATH | OFlags::DIRECTORY,
            Links::Inside,
        ) {
            let _ = write_in(
                std::os::fd::AsFd::as_fd(&dir),
                "w".as_ref(),
                b"W",
                WriteOptions::default(),
            );
        }
    }
    let swaps = swapper.stop();
    assert!(swaps > 100, "the race ran ({swaps} swaps)");
    assert!(opened > 0, "some opens went through ({refused} refused)");
    assert_eq!(std::fs::read_to_string(out.join("f")).unwrap(), "OUT");
    assert!(!out.join("w").exists(), "a write landed outside");
}
