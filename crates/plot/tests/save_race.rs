//! The symlink-swap race against saving (issue 14, items 4 and 9): a thread swaps the plot
//! item's directory between the real one and a symbolic link to an outside folder holding an
//! identical copy (`renameat2(RENAME_EXCHANGE)`, as fast as it can), while the plot is saved
//! over and over. A save that checks and writes by name follows the swap out of the store; one
//! that works through a descriptor of the directory opened beneath the store root cannot.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(clippy::disallowed_methods)]

#[allow(unused)]
mod common;

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use toolgate_plot::session::{Session, SessionError};
use toolgate_test_support::race::Swapper;

use common::{PLOT, spike_store};

const SAVES: usize = 2000;

/// Every name in `dir` with its inode and contents (a rename over a file changes the inode).
fn snapshot(dir: &Path) -> BTreeMap<String, (u64, Vec<u8>)> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let ino = e.metadata().unwrap().ino();
            let bytes = std::fs::read(e.path()).unwrap_or_default();
            (e.file_name().to_string_lossy().into_owned(), (ino, bytes))
        })
        .collect()
}

#[test]
fn saving_while_the_item_directory_is_swapped_for_a_link_never_writes_outside() {
    let dir = tempfile::tempdir().unwrap();
    let store = spike_store(&dir.path().join("store"));
    let mut session = Session::new(vec![store]);
    session.open(PLOT).unwrap();
    // One save first, so the file holds exactly what every later save writes.
    session.save(PLOT).unwrap();
    let features = session.plot(PLOT).unwrap().doc.path().to_owned();
    let item_dir = features.parent().unwrap().to_owned();
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    for e in std::fs::read_dir(&item_dir).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), outside.join(e.file_name())).unwrap();
    }
    let swap = item_dir.with_file_name("swap");
    std::os::unix::fs::symlink(&outside, &swap).unwrap();
    let before = snapshot(&outside);

    let swapper = Swapper::start(item_dir.clone(), swap);
    let (mut saved, mut conflicts, mut errors) = (0usize, 0usize, BTreeMap::<String, usize>::new());
    for _ in 0..SAVES {
        match session.save(PLOT) {
            Ok(()) => saved += 1,
            Err(SessionError::Conflict { .. }) => conflicts += 1,
            Err(e) => {
                let kind: String = e.to_string().chars().take(70).collect();
                *errors.entry(kind).or_default() += 1;
            }
        }
    }
    let swaps = swapper.stop();
    let after = snapshot(&outside);
    let changed: Vec<&String> = after
        .iter()
        .filter(|(k, v)| before.get(*k) != Some(*v))
        .map(|(k, _)| k)
        .collect();
    eprintln!(
        "{} swaps; {SAVES} saves: {saved} written, {conflicts} conflicts; outside files created or replaced: {}; errors: {errors:?}",
        swaps,
        changed.len()
    );
    assert!(swaps > 1000, "the swapper barely ran");
    assert!(saved > 0, "no save succeeded: {errors:?}");
    assert!(
        changed.is_empty(),
        "saves wrote {} files outside the store, e.g. {:?}",
        changed.len(),
        &changed[..changed.len().min(5)]
    );
    // The conflict check still works through the descriptor: a change on disk is refused…
    std::fs::write(
        &features,
        b"{\"type\":\"FeatureCollection\",\"features\":[]}",
    )
    .unwrap();
    assert!(matches!(
        session.save(PLOT),
        Err(SessionError::Conflict { .. })
    ));
    // …and no temp file is left in the item's directory.
    let temps: Vec<String> = std::fs::read_dir(&item_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp-"))
        .collect();
    assert!(temps.is_empty(), "{temps:?}");
}
