//! Fixtures shared by the agent tests: the spike's replay store, a Debrief surface over it, and
//! a confirmer that answers from a script.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

pub mod plumbing;

use std::path::Path;
use std::sync::{Arc, Mutex};

use toolgate_agent::surface_settings;
use toolgate_core::Registry;
use toolgate_core::telemetry::MemorySink;
use toolgate_plot::debrief::Debrief;
use toolgate_plot::session::Session;
use toolgate_plot::store::StacStore;
use toolgate_plot::tools::NativeTools;

pub const PLOT: &str = toolgate_plot::demo::SPIKE_PLOT;

/// The spike's replay store (`toolgate_plot::demo::spike_replay_store`).
pub fn spike_store(dir: &Path) -> StacStore {
    toolgate_plot::demo::spike_replay_store(dir).unwrap()
}

pub struct Harness {
    pub debrief: Arc<Debrief>,
    pub sink: Arc<MemorySink>,
    pub dir: tempfile::TempDir,
}

pub async fn harness(model: &str, open: bool) -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let store = spike_store(&dir.path().join("store"));
    let mut registry = Registry::new().with_discovery_hint("Call debrief_listTools first.");
    registry.register(Arc::new(NativeTools)).await.unwrap();
    let sink = Arc::new(MemorySink::default());
    let mut session = Session::new(vec![store]);
    if open {
        session.open(PLOT).unwrap();
    }
    let debrief = Arc::new(Debrief::new(
        Arc::new(Mutex::new(session)),
        Arc::new(registry),
        sink.clone(),
        surface_settings("test", model, true),
    ));
    Harness { debrief, sink, dir }
}

/// A Debrief surface over the demo store (Exercise Alpha Day 1 and Day 2, Bulk Tracks), with
/// `open` opened in that order (the last one active).
pub async fn demo_harness(model: &str, open: &[&str]) -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let store = toolgate_plot::demo::ensure_demo_store(&dir.path().join("demo")).unwrap();
    let mut registry = Registry::new().with_discovery_hint("Call debrief_listTools first.");
    registry.register(Arc::new(NativeTools)).await.unwrap();
    let sink = Arc::new(MemorySink::default());
    let mut session = Session::new(vec![store]);
    for id in open {
        session.open(id).unwrap();
    }
    let debrief = Arc::new(Debrief::new(
        Arc::new(Mutex::new(session)),
        Arc::new(registry),
        sink.clone(),
        surface_settings("test", model, true),
    ));
    Harness { debrief, sink, dir }
}

/// Answers from a script (decline when it runs out) and records what it was shown.
#[allow(unused_imports)]
pub use toolgate_core::flow::Scripted;

/// Hash of every file under a directory, names and contents.
pub fn hash_tree(root: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files = Vec::new();
    let mut stack = vec![root.to_owned()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else {
                files.push((
                    e.path().display().to_string(),
                    std::fs::read(e.path()).unwrap(),
                ));
            }
        }
    }
    files.sort();
    files
}
