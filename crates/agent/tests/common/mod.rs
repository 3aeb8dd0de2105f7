//! Fixtures shared by the agent tests: the spike's replay store, a Debrief surface over it, and
//! a confirmer that answers from a script.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::json;
use toolgate_agent::surface_settings;
use toolgate_core::flow::{Answer, Confirmer};
use toolgate_core::telemetry::MemorySink;
use toolgate_core::{Preview, Registry};
use toolgate_plot::agent::Debrief;
use toolgate_plot::session::Session;
use toolgate_plot::store::StacStore;
use toolgate_plot::tools::NativeTools;

pub const PLOT: &str = "stac://store-1/items/alpha-day1/item.json";

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
            "style": {"line": {"color": "#0000FF"}}}},
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

/// Answers from a script (decline when it runs out) and records what it was shown.
pub struct Scripted {
    answers: Mutex<Vec<Answer>>,
    pub asked: Mutex<Vec<Preview>>,
}

impl Scripted {
    pub fn new(answers: Vec<Answer>) -> Self {
        Self {
            answers: Mutex::new(answers),
            asked: Mutex::new(Vec::new()),
        }
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
