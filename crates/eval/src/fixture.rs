//! A scenario's initial state, freshly built in a temporary folder: the store (the spike's
//! replay fixture or the demo store), open plots, the selection, and the Debrief surface over
//! them with the real registry (native tools), policy and session.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::json;
use toolgate_core::Registry;
use toolgate_core::telemetry::MemorySink;
use toolgate_plot::agent::{Debrief, Settings};
use toolgate_plot::session::Session;
use toolgate_plot::store::StacStore;
use toolgate_plot::tools::NativeTools;

use crate::EvalError;
use crate::scenario::{Scenario, StoreKind};

/// The spike's replay plot (reference §8.1 / §11.4).
pub const SPIKE_PLOT: &str = "stac://store-1/items/alpha-day1/item.json";

/// The spike's replay store: `store-1`, item `items/alpha-day1` "Exercise Alpha — Day 1" with
/// `track-1` (HMS Nelson / NELSON, a submarine, 3 positions) and `point-1` (label "Datum A").
pub fn spike_store(dir: &Path) -> Result<StacStore, EvalError> {
    let mut store = StacStore::create("store-1", dir, "Spike store")?;
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
    store.add_item("items/alpha-day1", &item, &features)?;
    Ok(store)
}

/// The demo store is generated once per process and copied for each run.
fn demo_template() -> Result<&'static Path, EvalError> {
    static TEMPLATE: OnceLock<Result<tempfile::TempDir, String>> = OnceLock::new();
    let t = TEMPLATE.get_or_init(|| {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        toolgate_plot::demo::ensure_demo_store(dir.path()).map_err(|e| e.to_string())?;
        Ok(dir)
    });
    match t {
        Ok(d) => Ok(d.path()),
        Err(e) => Err(EvalError::Setup(format!("generating the demo store: {e}"))),
    }
}

fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        let target = to.join(e.file_name());
        if e.file_type()?.is_dir() {
            copy_tree(&e.path(), &target)?;
        } else {
            std::fs::copy(e.path(), &target)?;
        }
    }
    Ok(())
}

/// A fingerprint of every file under a folder: path, size and modification time. Any write
/// (the session saves by temp file + rename) changes it; reading never does.
pub fn hash_tree(root: &Path) -> String {
    let mut files = Vec::new();
    let mut stack = vec![root.to_owned()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let meta = e.metadata().ok();
                let modified = meta
                    .as_ref()
                    .and_then(|m| m.modified().ok())
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_nanos());
                files.push(format!(
                    "{}\t{}\t{modified}",
                    p.display(),
                    meta.map_or(0, |m| m.len())
                ));
            }
        }
    }
    files.sort();
    files.join("\n")
}

/// A scenario's world, ready for a run.
pub struct Fixture {
    pub debrief: Arc<Debrief>,
    pub sink: Arc<MemorySink>,
    pub store_root: PathBuf,
    pub disk_before: String,
    /// The active plot's id and bytes before the run.
    pub initial_doc: Option<(String, Vec<u8>)>,
    _dir: tempfile::TempDir,
}

impl Fixture {
    pub async fn build(s: &Scenario, settings: Settings) -> Result<Self, EvalError> {
        let dir = tempfile::tempdir().map_err(|e| EvalError::Setup(e.to_string()))?;
        let root = dir.path().join("store");
        let store = match s.initial.store {
            StoreKind::Spike => spike_store(&root)?,
            StoreKind::Demo => {
                copy_tree(demo_template()?, &root)
                    .map_err(|e| EvalError::Setup(format!("copying the demo store: {e}")))?;
                StacStore::open(toolgate_plot::demo::DEMO_STORE_ID, &root)?
            }
        };
        let mut session = Session::new(vec![store]);
        for p in &s.initial.open {
            session
                .open(p)
                .map_err(|e| EvalError::Setup(format!("opening {p}: {e}")))?;
        }
        if let Some(active) = s.initial.open.last()
            && !s.initial.selection.is_empty()
        {
            session
                .select(active, s.initial.selection.clone())
                .map_err(|e| EvalError::Setup(e.to_string()))?;
        }
        let initial_doc = session
            .active()
            .ok()
            .map(|p| (p.id.clone(), p.doc.to_bytes()));
        let mut registry = Registry::new().with_discovery_hint("Call debrief_listTools first.");
        registry
            .register(Arc::new(NativeTools))
            .await
            .map_err(|e| EvalError::Setup(format!("registering the native tools: {e}")))?;
        let sink = Arc::new(MemorySink::default());
        let debrief = Arc::new(Debrief::new(
            Arc::new(Mutex::new(session)),
            Arc::new(registry),
            sink.clone(),
            settings,
        ));
        Ok(Self {
            debrief,
            sink,
            disk_before: hash_tree(&root),
            store_root: root,
            initial_doc,
            _dir: dir,
        })
    }

    pub fn disk_hash(&self) -> String {
        hash_tree(&self.store_root)
    }
}
