//! Fixture builders shared by the plot integration tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::{Value, json};
use toolgate_core::flow::{Answer, Confirmer};
use toolgate_core::telemetry::MemorySink;
use toolgate_core::{
    CallError, Preview, Provider, ProviderError, Registry, ToolCall, ToolOutcome, ToolSpec,
};
use toolgate_plot::agent::{Debrief, Settings};
use toolgate_plot::session::Session;
use toolgate_plot::store::StacStore;
use toolgate_plot::tools::NativeTools;

pub const PLOT: &str = "stac://store-1/items/alpha-day1/item.json";

/// The spike's replay fixture (reference §11.4): store `store-1`, item
/// `items/alpha-day1/item.json` "Exercise Alpha — Day 1" with `track-1` (HMS Nelson / NELSON,
/// 3 positions) and `point-1` (label "Datum A").
pub fn spike_store(dir: &Path) -> StacStore {
    let mut store = StacStore::create("store-1", dir, "Spike store").unwrap();
    let features = json!({"type": "FeatureCollection", "features": [
        {"type": "Feature", "id": "track-1",
         "geometry": {"type": "LineString", "coordinates": [[-4.0, 51.0], [-3.9, 51.05], [-3.8, 51.1]]},
         "properties": {"kind": "TRACK", "platform_id": "NELSON", "platform_name": "HMS Nelson", "track_type": "SOLUTION",
            "start_time": "2026-03-01T00:00:00+00:00", "end_time": "2026-03-01T06:00:00+00:00",
            "positions": [
                {"time": "2026-03-01T00:00:00+00:00", "course": 50.0, "speed": 4.0},
                {"time": "2026-03-01T03:00:00+00:00", "course": 50.0, "speed": 3.0},
                {"time": "2026-03-01T06:00:00+00:00", "course": 50.0, "speed": 6.0}],
            "style": {"line": {"color": "#0000FF"}, "point": {"shape": "circle", "radius": 3.0, "fill_color": "#0000FF", "color": "#0000FF"}},
            "default_position_style": {"show_symbol": false, "symbol": "circle", "show_label": false}}},
        {"type": "Feature", "id": "point-1", "geometry": {"type": "Point", "coordinates": [-2.5, 52.5]},
         "properties": {"kind": "POINT", "label": "Datum A"}}
    ]});
    let item = json!({
        "type": "Feature", "stac_version": "1.0.0", "id": "exercise-alpha-day1",
        "geometry": {"type": "Polygon", "coordinates": [[[-5.0, 50.0], [0.0, 50.0], [0.0, 55.0], [-5.0, 55.0], [-5.0, 50.0]]]},
        "bbox": [-5.0, 50.0, 0.0, 55.0],
        "properties": {"title": "Exercise Alpha — Day 1", "description": "Day one of Exercise Alpha.",
            "datetime": "2026-03-01T00:00:00Z", "start_datetime": "2026-03-01T00:00:00Z", "end_datetime": "2026-03-01T12:00:00Z",
            "debrief:platforms": [{"id": "NELSON", "name": "HMS Nelson", "vessel_role": "submarine"}],
            "debrief:tags": ["exercise"]},
        "links": [],
        "assets": {"features": {"href": "./features.geojson", "type": "application/geo+json", "roles": ["data"]}}
    });
    store
        .add_item("items/alpha-day1", &item, &features)
        .unwrap();
    store
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

/// Answers from a script and records every preview it was shown.
pub struct Scripted {
    pub answers: Mutex<Vec<Answer>>,
    pub asked: Mutex<Vec<Preview>>,
}

impl Scripted {
    pub fn new(answers: Vec<Answer>) -> Self {
        Self {
            answers: Mutex::new(answers),
            asked: Mutex::new(Vec::new()),
        }
    }
    pub fn asked(&self) -> Vec<Preview> {
        self.asked.lock().unwrap().clone()
    }
}

#[async_trait]
impl Confirmer for Scripted {
    async fn confirm(&self, preview: &Preview) -> Answer {
        self.asked.lock().unwrap().push(preview.clone());
        let mut a = self.answers.lock().unwrap();
        if a.is_empty() {
            Answer::Decline
        } else {
            a.remove(0)
        }
    }
}

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
    toolgate_plot::fsio::sha256_hex(&all)
}

pub fn parse(reply: &str) -> Value {
    serde_json::from_str(reply).unwrap_or_else(|e| panic!("reply is not JSON ({e}): {reply}"))
}
