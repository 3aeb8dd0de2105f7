//! One confirmation per CodeAct program: a program's plot edits land on a scratch copy (later
//! reads see them), then the net change is previewed once and applied as one undo step.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use toolgate_core::flow::{Answer, Confirmer, Fixed};
use toolgate_core::{Preview, Registry};
use toolgate_plot::demo;
use toolgate_plot::session::Session;
use toolgate_plot::transaction::{Committed, PlotTransaction, SCRATCH_PROVIDER};
use toolgate_sandbox::{ExecRequest, RegistryHost};

const PLOT: &str = "stac://demo/alpha-day1/item.json";

const PROGRAM: &str = r#"
set_track_color(color="red", feature_names=["Contact"])
trim_track(start_time="2026-03-01T01:00:00Z", end_time="2026-03-01T11:00:00Z", feature_names=["Contact"])
stats = track_stats(feature_names=["Contact"])
stats
"#;

struct Recording(Mutex<Vec<Preview>>, Answer);

#[async_trait]
impl Confirmer for Recording {
    async fn confirm(&self, preview: &Preview) -> Answer {
        self.0.lock().unwrap().push(preview.clone());
        self.1
    }
}

async fn run_program(
    answer: Answer,
) -> (
    Arc<Mutex<Session>>,
    Vec<u8>,
    Committed,
    serde_json::Value,
    usize,
    tempfile::TempDir,
) {
    let dir = tempfile::tempdir().unwrap();
    let store = demo::ensure_demo_store(dir.path()).unwrap();
    let session = Arc::new(Mutex::new(Session::new(vec![store])));
    session.lock().unwrap().open(PLOT).unwrap();
    let before = session.lock().unwrap().plot(PLOT).unwrap().doc.to_bytes();
    let tx = PlotTransaction::begin(session.clone(), PLOT).unwrap();
    let mut registry = Registry::new();
    registry.register(Arc::new(tx.provider())).await.unwrap();
    let applier_tx = tx.clone();
    // Inside the program nobody is asked (the confirmer would refuse): edits only touch the scratch copy.
    let host = RegistryHost::new(Arc::new(registry), Arc::new(Fixed(Answer::Decline)))
        .unwrap()
        .auto_approve_provider(SCRATCH_PROVIDER)
        .with_applier(move |cs| applier_tx.apply_to_scratch(cs));
    let env = toolgate_sandbox::run(ExecRequest::new(PROGRAM), &host).await;
    assert!(env.success, "{env:?}");
    // Nothing reached the session while the program ran.
    assert_eq!(
        session.lock().unwrap().plot(PLOT).unwrap().doc.to_bytes(),
        before
    );
    let confirmer = Recording(Mutex::new(Vec::new()), answer);
    let committed = tx.commit(&confirmer).await.unwrap();
    let asked = confirmer.0.lock().unwrap().len();
    (session, before, committed, env.return_value, asked, dir)
}

#[tokio::test]
async fn a_program_is_confirmed_once_and_applied_as_one_undo_step() {
    let (session, before, committed, stats, asked, _dir) = run_program(Answer::Approve).await;
    // The read after the edits saw the scratch copy: the trimmed track has fewer points.
    let points = stats["point_count"]
        .as_u64()
        .unwrap_or_else(|| panic!("{stats}"));
    assert!(
        points < 361,
        "track-stats saw the trimmed scratch track: {points}"
    );
    assert_eq!(asked, 1, "one confirmation for the whole program");
    let Committed::Applied { features, preview } = committed else {
        panic!("{committed:?}")
    };
    assert_eq!(features, 1);
    assert_eq!(
        preview.title,
        "Run CodeAct program on Exercise Alpha — Day 1"
    );
    assert!(
        preview.body.contains("- Target: Contact"),
        "{}",
        preview.body
    );
    assert!(
        preview.body.contains("set-track-color, trim-track"),
        "{}",
        preview.body
    );
    let mut s = session.lock().unwrap();
    {
        let plot = s.plot(PLOT).unwrap();
        assert!(plot.doc.is_dirty());
        let contact = plot.doc.feature("track-contact").unwrap();
        assert_eq!(contact["properties"]["style"]["line"]["color"], "red");
        assert_eq!(
            contact["properties"]["positions"].as_array().unwrap().len() as u64,
            points
        );
    }
    s.undo(PLOT).unwrap();
    assert_eq!(
        s.plot(PLOT).unwrap().doc.to_bytes(),
        before,
        "one undo removes the whole program's change"
    );
    assert!(s.undo(PLOT).is_err(), "it was a single step");
}

#[tokio::test]
async fn a_declined_program_changes_nothing() {
    let (session, before, committed, _, asked, _dir) = run_program(Answer::Decline).await;
    assert_eq!(asked, 1);
    assert!(matches!(committed, Committed::Declined { .. }));
    let s = session.lock().unwrap();
    assert_eq!(s.plot(PLOT).unwrap().doc.to_bytes(), before);
    assert!(!s.plot(PLOT).unwrap().doc.is_dirty());
}

/// The same through the binary: `toolgate exec --plot … --yes --save` writes the net change;
/// without a terminal or `--yes` the program's edits are dropped.
#[test]
fn exec_with_a_plot_confirms_once_and_saves_only_when_asked() {
    let d = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let file = d.path().join("demo-store/alpha-day1/features.geojson");
    let run = |extra: &[&str]| {
        let mut args = vec![
            "exec",
            "--workspace",
            ws.path().to_str().unwrap(),
            "--plot",
            PLOT,
            "--raw",
            "--code",
            "set_track_color(color=\"red\", feature_names=[\"Contact\"])",
        ];
        args.extend_from_slice(extra);
        std::process::Command::new(env!("CARGO_BIN_EXE_toolgate"))
            .args(&args)
            .env("TOOLGATE_DATA_DIR", d.path())
            .env("TOOLGATE_CONFIG", d.path().join("none.toml"))
            .env("HOME", d.path())
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    };
    let o = run(&[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("Declined: the program's plot edits were dropped."),
        "{err}"
    );
    assert!(!std::fs::read_to_string(&file).unwrap().contains("\"red\""));
    let o = run(&["--yes", "--save"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success() && err.contains("as one undo step") && err.contains("Saved"),
        "{err}"
    );
    assert!(std::fs::read_to_string(&file).unwrap().contains("\"red\""));
}
