//! Property: whatever a program edits and whatever the person answers, no plot change reaches
//! the session unless the person approved exactly that commit — the exec path (`Runtime::run`
//! on a scratch copy, then `Runtime::commit` through the gate).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use proptest::prelude::*;
use toolgate_codeact::{Executor, Host, Runtime, Surface, Tools};
use toolgate_core::flow::{Answer, Confirmer};
use toolgate_core::telemetry::MemorySink;
use toolgate_core::{CallDigest, Preview};
use toolgate_plot::demo;
use toolgate_plot::session::Session;
use toolgate_plot::store::StacStore;
use toolgate_plot::transaction::{COMMIT_TOOL, Committed, PlotTransaction};
use toolgate_sandbox::ExecRequest;

const PLOT: &str = "stac://demo/alpha-day1/item.json";
const TRACKS: [&str; 3] = ["HMS Nelson", "HMS Collingwood", "Contact"];
const COLORS: [&str; 4] = ["red", "blue", "#00ff00", "yellow"];

#[derive(Debug, Clone)]
enum Step {
    Color(usize, usize),
    Trim(usize, u32, u32),
    Stats(usize),
}

impl Step {
    fn python(&self) -> String {
        match self {
            Step::Color(t, c) => format!(
                "set_track_color(color={:?}, feature_names=[{:?}])",
                COLORS[*c], TRACKS[*t]
            ),
            Step::Trim(t, a, b) => format!(
                "trim_track(start_time=\"2026-03-01T{:02}:00:00Z\", end_time=\"2026-03-01T{:02}:00:00Z\", feature_names=[{:?}])",
                a.min(b),
                a.max(b) + 1,
                TRACKS[*t]
            ),
            Step::Stats(t) => format!("track_stats(feature_names=[{:?}])", TRACKS[*t]),
        }
    }
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (0..3usize, 0..4usize).prop_map(|(t, c)| Step::Color(t, c)),
        (0..3usize, 0..12u32, 0..12u32).prop_map(|(t, a, b)| Step::Trim(t, a, b)),
        (0..3usize).prop_map(Step::Stats),
    ]
}

/// What the person does with the one preview.
#[derive(Debug, Clone, Copy)]
enum Reply {
    Approve,
    Decline,
    /// Approves only some other call's digest (a stale or forged approval).
    ApproveOther,
}

struct Person {
    reply: Reply,
    asked: Mutex<Vec<Preview>>,
}

#[async_trait]
impl Confirmer for Person {
    async fn confirm(&self, _preview: &Preview) -> Answer {
        // A commit must be confirmed with its digest.
        Answer::Decline
    }

    async fn confirm_call(&self, preview: &Preview, digest: &CallDigest) -> Answer {
        self.asked.lock().unwrap().push(preview.clone());
        match self.reply {
            Reply::Approve => Answer::Approve,
            Reply::Decline => Answer::Decline,
            Reply::ApproveOther => {
                let other = CallDigest::of(
                    COMMIT_TOOL,
                    &serde_json::Map::new(),
                    &serde_json::json!({"plot": PLOT}),
                );
                if other == *digest {
                    Answer::Approve
                } else {
                    Answer::Decline
                }
            }
        }
    }
}

struct World {
    store: StacStore,
    runtime: Runtime,
    sink: Arc<MemorySink>,
    rt: tokio::runtime::Runtime,
    _dirs: (tempfile::TempDir, tempfile::TempDir),
}

fn world() -> World {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let store = demo::ensure_demo_store(dir.path()).unwrap();
    let host = Host {
        user_config: dir.path().join("none.toml"),
        warn: |_| {},
    };
    let tools = rt.block_on(Tools::open(ws.path(), &host)).unwrap();
    let sink = Arc::new(MemorySink::default());
    let runtime = tools.runtime(Surface::Exec, sink.clone(), Executor::InProcess);
    World {
        store,
        runtime,
        sink,
        rt,
        _dirs: (dir, ws),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    #[test]
    fn no_unconfirmed_change_is_ever_applied(
        steps in proptest::collection::vec(step(), 1..5),
        reply in prop_oneof![Just(Reply::Approve), Just(Reply::Decline), Just(Reply::ApproveOther)],
    ) {
        static WORLD: std::sync::OnceLock<Mutex<World>> = std::sync::OnceLock::new();
        let w = WORLD.get_or_init(|| Mutex::new(world())).lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let session = Arc::new(Mutex::new(Session::new(vec![w.store.clone()])));
        session.lock().unwrap().open(PLOT).unwrap();
        let before = session.lock().unwrap().plot(PLOT).unwrap().doc.to_bytes();
        // A trim outside a track's span raises ValueError; the program carries on without it.
        let program: Vec<String> = steps
            .iter()
            .map(|s| format!("try:\n    {}\nexcept ValueError:\n    pass", s.python()))
            .collect();
        let tx = PlotTransaction::begin(session.clone(), PLOT).unwrap();
        let person = Arc::new(Person { reply, asked: Mutex::new(Vec::new()) });
        let records_before = w.sink.records().iter().filter(|r| r.tool == COMMIT_TOOL).count();
        let env = w.rt.block_on(w.runtime.run(ExecRequest::new(program.join("\n")), person.clone(), Some(&tx)));
        prop_assert!(env.success, "{:?}", env);
        prop_assert!(person.asked.lock().unwrap().is_empty(), "asked during the program");
        prop_assert_eq!(&session.lock().unwrap().plot(PLOT).unwrap().doc.to_bytes(), &before, "the program alone changed the plot");
        let expected = tx.finish();
        let committed = w.rt.block_on(w.runtime.commit(&tx, person.as_ref()));
        let s = session.lock().unwrap();
        let doc = &s.plot(PLOT).unwrap().doc;
        let asked = person.asked.lock().unwrap().len();
        let records = w.sink.records().into_iter().filter(|r| r.tool == COMMIT_TOOL).count() - records_before;
        match (expected, reply) {
            (None, _) => {
                prop_assert_eq!(committed, Committed::NoChanges);
                prop_assert_eq!(asked, 0);
                prop_assert_eq!(records, 0);
                prop_assert_eq!(doc.to_bytes(), before);
            }
            (Some(commit), Reply::Approve) => {
                prop_assert!(matches!(committed, Committed::Applied { .. }), "{:?}", committed);
                prop_assert_eq!(asked, 1);
                prop_assert_eq!(records, 1);
                prop_assert!(doc.is_dirty());
                // Exactly the previewed change: every touched feature as the scratch left it.
                for edit in &commit.change.edits {
                    match edit {
                        toolgate_core::Edit::Upsert { id, item } => prop_assert_eq!(doc.feature(id), Some(item)),
                        toolgate_core::Edit::Remove { id } => prop_assert!(doc.feature(id).is_none()),
                    }
                }
            }
            (Some(_), _) => {
                prop_assert!(matches!(committed, Committed::Declined { .. }), "{:?}", committed);
                prop_assert_eq!(asked, 1);
                prop_assert_eq!(records, 1);
                prop_assert_eq!(doc.to_bytes(), before, "declined, yet the plot changed");
                prop_assert!(!doc.is_dirty());
            }
        }
    }
}
