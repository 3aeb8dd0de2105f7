//! A scenario's initial state, freshly built in a temporary folder: the store (the spike's
//! replay fixture or the demo store), open plots, the selection, and the Debrief surface over
//! them with the real registry (the native tools, or a broken or failing external tool server as
//! the scenario's `initial.registry` says), policy and session.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde_json::json;
use toolgate_calc::tool_server::StdioToolServer;
use toolgate_core::Registry;
use toolgate_core::telemetry::MemorySink;
use toolgate_plot::debrief::{Debrief, Settings};
use toolgate_plot::session::Session;
use toolgate_plot::store::StacStore;
use toolgate_plot::tools::NativeTools;

use crate::EvalError;
use crate::scenario::{RegistryKind, Scenario, StoreKind};

/// The spike's replay plot (reference §8.1 / §11.4).
pub const SPIKE_PLOT: &str = toolgate_plot::demo::SPIKE_PLOT;

/// A plot in the spike store with no features at all (for the "scope `all` on an empty plot"
/// fail-safe, reference §3).
pub const EMPTY_PLOT: &str = "stac://store-1/items/harbour-drill/item.json";

/// The spike's replay store ([`toolgate_plot::demo::spike_replay_store`]) plus an empty plot,
/// `items/harbour-drill` ([`EMPTY_PLOT`]).
pub fn spike_store(dir: &Path) -> Result<StacStore, EvalError> {
    let mut store = toolgate_plot::demo::spike_replay_store(dir)?;
    let empty = json!({"type": "FeatureCollection", "features": []});
    let item = json!({
        "type": "Feature", "stac_version": "1.0.0", "id": "harbour-drill",
        "geometry": {"type": "Polygon", "coordinates": [[[1.0, 60.0], [2.0, 60.0], [2.0, 61.0], [1.0, 61.0], [1.0, 60.0]]]},
        "bbox": [1.0, 60.0, 2.0, 61.0],
        "properties": {"title": "Harbour drill (nothing recorded)", "description": "A drill whose recording came back empty.",
            "datetime": "2025-06-01T00:00:00Z", "start_datetime": "2025-06-01T00:00:00Z", "end_datetime": "2025-06-01T02:00:00Z",
            "debrief:platforms": [], "debrief:tags": ["drill"]},
        "links": [],
        "assets": {"features": {"href": "./features.geojson", "type": "application/geo+json", "roles": ["data"]}}
    });
    store.add_item("items/harbour-drill", &item, &empty)?;
    Ok(store)
}

/// The one tool of the failing tool server ([`RegistryKind::Failing`]): a mutating tool whose
/// every call fails the way a Python handler exception reaches toolgate.
pub const FAILING_TOOL: &str = "py-smooth-track";

/// The error text [`FAILING_TOOL`] answers with (debrief-calc's handler-exception format).
pub const FAILING_TOOL_ERROR: &str =
    "Tool 'py-smooth-track' execution failed: float division by zero";

/// The analysis tools a run gets. `dir` is a scratch folder outside the store.
async fn registry(kind: RegistryKind, dir: &Path) -> Result<Registry, EvalError> {
    let mut registry = Registry::new().with_discovery_hint("Call debrief_listTools first.");
    if kind != RegistryKind::Unavailable {
        registry
            .register(Arc::new(NativeTools))
            .await
            .map_err(|e| EvalError::Setup(format!("registering the native tools: {e}")))?;
    }
    match kind {
        RegistryKind::Native => {}
        RegistryKind::Unavailable => {
            // The tool server's interpreter is missing: listing fails, nothing is registered.
            let broken = StdioToolServer {
                name: "python-calc".to_owned(),
                list_command: vec![dir.join("missing-python").to_string_lossy().into_owned()],
                call_command: vec![dir.join("missing-python").to_string_lossy().into_owned()],
                timeout: Duration::from_secs(20),
                env: Vec::new(),
                // toolgate's own scripted stand-ins for a Python server (cat and sh on files
                // this fixture wrote), not a server from anyone's config.
                confiner: None,
                network: false,
                unconfined: true,
            };
            match registry.register(Arc::new(broken)).await {
                Ok(n) => {
                    return Err(EvalError::Setup(format!(
                        "the broken tool server listed {n} tool(s); it should not start at all"
                    )));
                }
                Err(e) => tracing::warn!("tool server unavailable (as the scenario sets up): {e}"),
            }
        }
        RegistryKind::Failing => {
            let listing = dir.join("failing-tools.json");
            let response = dir.join("failing-response.json");
            let tools = json!([{
                "name": FAILING_TOOL, "description": "Smooth a track (python).",
                "inputSchema": {"type": "object", "properties": {"features": {"type": "array"},
                    "params": {"type": "object", "properties": {"window": {"type": "number"}}}}},
                "annotations": {"debrief:outputKind": "mutation/track/smoothed", "debrief:category": "track"}
            }]);
            let answer = json!({"error": {"code": -32000, "message": FAILING_TOOL_ERROR,
                "data": {"debrief:errorCategory": "algorithm_failure"}}});
            for (path, v) in [(&listing, tools), (&response, answer)] {
                toolgate_fs::atomic_write(path, v.to_string().as_bytes())
                    .map_err(|e| EvalError::Setup(format!("writing {}: {e}", path.display())))?;
            }
            // One process per call, as debrief-calc: read the request, print the error, exit 1.
            let server = StdioToolServer {
                name: "python-calc".to_owned(),
                list_command: vec!["cat".to_owned(), listing.to_string_lossy().into_owned()],
                call_command: vec![
                    "sh".to_owned(),
                    "-c".to_owned(),
                    "cat >/dev/null; cat \"$0\"; exit 1".to_owned(),
                    response.to_string_lossy().into_owned(),
                ],
                timeout: Duration::from_secs(20),
                env: Vec::new(),
                confiner: None,
                network: false,
                unconfined: true,
            };
            registry.register(Arc::new(server)).await.map_err(|e| {
                EvalError::Setup(format!("registering the failing tool server: {e}"))
            })?;
        }
    }
    Ok(registry)
}

/// The demo store is generated once per process and copied for each run.
fn demo_template() -> Result<&'static Path, EvalError> {
    // The first failure is kept, typed, and reported to every run of this process.
    type Failure = Box<dyn std::error::Error + Send + Sync>;
    static TEMPLATE: OnceLock<Result<tempfile::TempDir, Failure>> = OnceLock::new();
    let t = TEMPLATE.get_or_init(|| {
        let dir = tempfile::tempdir()?;
        toolgate_plot::demo::ensure_demo_store(dir.path())?;
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
        let registry = registry(s.initial.registry, dir.path()).await?;
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
