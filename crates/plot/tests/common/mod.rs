//! Fixture builders shared by the plot integration tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::Value;
use toolgate_core::telemetry::MemorySink;
use toolgate_core::{
    CallError, Provider, ProviderError, Registry, ToolCall, ToolOutcome, ToolSpec,
};
use toolgate_plot::debrief::{Debrief, Settings};
use toolgate_plot::session::Session;
use toolgate_plot::store::StacStore;
use toolgate_plot::tools::NativeTools;

pub const PLOT: &str = toolgate_plot::demo::SPIKE_PLOT;

/// The spike's replay store (`toolgate_plot::demo::spike_replay_store`).
pub fn spike_store(dir: &Path) -> StacStore {
    toolgate_plot::demo::spike_replay_store(dir).unwrap()
}

/// Wraps the native tools and counts how many calls reached a provider (the stand-in for "a
/// process was spawned" in the spike's assertions).
pub struct Counting {
    pub calls: AtomicUsize,
}

#[async_trait]
impl Provider for Counting {
    fn name(&self) -> &str {
        "counting-native"
    }
    async fn list_tools(&self) -> Result<Vec<ToolSpec>, ProviderError> {
        NativeTools.list_tools().await
    }
    async fn call(&self, call: &ToolCall) -> Result<ToolOutcome, CallError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        NativeTools.call(call).await
    }
}

pub use toolgate_core::flow::Scripted;

pub struct Harness {
    pub debrief: Debrief,
    pub provider: Arc<Counting>,
    pub sink: Arc<MemorySink>,
    pub dir: tempfile::TempDir,
}

pub async fn harness() -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let store = spike_store(dir.path());
    let provider = Arc::new(Counting {
        calls: AtomicUsize::new(0),
    });
    let mut registry = Registry::new().with_discovery_hint("Call debrief_listTools first.");
    registry.register(provider.clone()).await.unwrap();
    let sink = Arc::new(MemorySink::default());
    let debrief = Debrief::new(
        Arc::new(Mutex::new(Session::new(vec![store]))),
        Arc::new(registry),
        sink.clone(),
        Settings {
            surface: "test".into(),
            active_model: "test-model".into(),
            ..Settings::default()
        },
    );
    Harness {
        debrief,
        provider,
        sink,
        dir,
    }
}

/// Hash of every file under a directory, names and contents.
pub fn hash_tree(root: &Path) -> String {
    let mut files = Vec::new();
    let mut stack = vec![root.to_owned()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else {
                files.push(e.path());
            }
        }
    }
    files.sort();
    let mut all = Vec::new();
    for f in files {
        all.extend_from_slice(f.to_string_lossy().as_bytes());
        all.extend_from_slice(&std::fs::read(&f).unwrap());
    }
    toolgate_plot::sha256_hex(&all)
}

pub fn parse(reply: &str) -> Value {
    serde_json::from_str(reply).unwrap_or_else(|e| panic!("reply is not JSON ({e}): {reply}"))
}
