//! One confirmation per CodeAct program: a program's plot edits land on a scratch copy (later
//! reads see them), then the net change goes through the gate as one `codeact-commit` call —
//! previewed once (every feature, every edit), confirmed with the call digest, applied through
//! the session at the base version as one undo step, recorded once.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use toolgate_codeact::{Executor, Host, Runtime, Surface, Tools};
use toolgate_core::flow::{Answer, Confirmer};
use toolgate_core::telemetry::MemorySink;
use toolgate_core::{CallDigest, Preview};
use toolgate_plot::demo;
use toolgate_plot::session::Session;
use toolgate_plot::transaction::{COMMIT_TOOL, Committed, PlotTransaction};
use toolgate_sandbox::ExecRequest;

mod support;

const PLOT: &str = "stac://demo/alpha-day1/item.json";

const PROGRAM: &str = r#"
set_track_color(color="red", feature_names=["HMS Nelson"])
trim_track(start_time="2026-03-01T01:00:00Z", end_time="2026-03-01T11:00:00Z", feature_names=["Contact"])
stats = track_stats(feature_names=["Contact"])
stats
"#;

/// Answers as told and remembers what it was shown, with the digest.
struct Asking(Mutex<Vec<(Preview, Option<String>)>>, Answer);

#[async_trait]
impl Confirmer for Asking {
    async fn confirm(&self, preview: &Preview) -> Answer {
        self.0.lock().unwrap().push((preview.clone(), None));
        self.1
    }

    async fn confirm_call(&self, preview: &Preview, digest: &CallDigest) -> Answer {
        self.0
            .lock()
            .unwrap()
            .push((preview.clone(), Some(digest.as_str().to_owned())));
        self.1
    }
}

struct Fixture {
    session: Arc<Mutex<Session>>,
    before: Vec<u8>,
    runtime: Runtime,
    sink: Arc<MemorySink>,
    _dirs: (tempfile::TempDir, tempfile::TempDir),
}

async fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let store = demo::ensure_demo_store(dir.path()).unwrap();
    let session = Arc::new(Mutex::new(Session::new(vec![store])));
    session.lock().unwrap().open(PLOT).unwrap();
    let before = session.lock().unwrap().plot(PLOT).unwrap().doc.to_bytes();
    let host = Host {
        user_config: dir.path().join("no-config.toml"),
        warn: |_| {},
    };
    let tools = Tools::open(ws.path(), &host).await.unwrap();
    let sink = Arc::new(MemorySink::default());
    let runtime = tools.runtime(Surface::Exec, sink.clone(), Executor::InProcess);
    Fixture {
        session,
        before,
        runtime,
        sink,
        _dirs: (dir, ws),
    }
}

async fn run_program(f: &Fixture, answer: Answer) -> (Committed, serde_json::Value, Asking) {
    let tx = PlotTransaction::begin(f.session.clone(), PLOT).unwrap();
    // Inside the program nobody is asked: edits only touch the scratch copy.
    let confirmer = Arc::new(Asking(Mutex::new(Vec::new()), answer));
    let env = f
        .runtime
        .run(ExecRequest::new(PROGRAM), confirmer.clone(), Some(&tx))
        .await;
    assert!(env.success, "{env:?}");
    assert!(confirmer.0.lock().unwrap().is_empty(), "asked mid-program");
    // Nothing reached the session while the program ran.
    assert_eq!(
        f.session.lock().unwrap().plot(PLOT).unwrap().doc.to_bytes(),
        f.before
    );
    let asking = Asking(Mutex::new(Vec::new()), answer);
    let committed = f.runtime.commit(&tx, &asking).await;
    (committed, env.return_value, asking)
}

fn commit_records(sink: &MemorySink) -> Vec<serde_json::Value> {
    sink.records()
        .into_iter()
        .filter(|r| r.tool == COMMIT_TOOL)
        .map(|r| serde_json::to_value(&r).unwrap())
        .collect()
}

#[tokio::test]
async fn a_program_is_confirmed_once_through_the_gate_and_applied_as_one_undo_step() {
    let f = fixture().await;
    let (committed, stats, asked) = run_program(&f, Answer::Approve).await;
    // The read after the edits saw the scratch copy: the trimmed track has fewer points.
    let points = stats["point_count"]
        .as_u64()
        .unwrap_or_else(|| panic!("{stats}"));
    assert!(
        points < 361,
        "track-stats saw the trimmed scratch track: {points}"
    );
    let asked = asked.0.into_inner().unwrap();
    assert_eq!(asked.len(), 1, "one confirmation for the whole program");
    let (preview, digest) = &asked[0];
    assert!(
        digest.is_some(),
        "the confirmation carries the call digest (confirm_call)"
    );
    let Committed::Applied {
        features,
        preview: applied,
    } = committed
    else {
        panic!("{committed:?}")
    };
    assert_eq!(&applied, preview);
    assert_eq!(features, 2);
    assert_eq!(
        preview.title,
        "Run CodeAct program on Exercise Alpha — Day 1"
    );
    for needle in [
        "- Target: HMS Nelson, Contact",
        "- edit 1: Set Track Color (color: red) on HMS Nelson",
        "- edit 2: Trim Track (",
        ") on Contact",
    ] {
        assert!(preview.body.contains(needle), "{needle}: {}", preview.body);
    }
    // Exactly one telemetry record for the commit, with the real confirmation.
    let records = commit_records(&f.sink);
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0]["confirmation"], "approved", "{}", records[0]);
    assert_eq!(records[0]["surface"], "exec");
    assert_eq!(records[0]["outcome"], "ok", "{}", records[0]);
    let mut s = f.session.lock().unwrap();
    {
        let plot = s.plot(PLOT).unwrap();
        assert!(plot.doc.is_dirty());
        let nelson = plot.doc.feature("track-nelson").unwrap();
        assert_eq!(nelson["properties"]["style"]["line"]["color"], "red");
        let contact = plot.doc.feature("track-contact").unwrap();
        assert_eq!(
            contact["properties"]["positions"].as_array().unwrap().len() as u64,
            points
        );
    }
    s.undo(PLOT).unwrap();
    assert_eq!(
        s.plot(PLOT).unwrap().doc.to_bytes(),
        f.before,
        "one undo removes the whole program's change"
    );
    assert!(s.undo(PLOT).is_err(), "it was a single step");
}

#[tokio::test]
async fn a_declined_program_changes_nothing_and_is_recorded_as_declined() {
    let f = fixture().await;
    let (committed, _, asked) = run_program(&f, Answer::Decline).await;
    assert_eq!(asked.0.into_inner().unwrap().len(), 1);
    assert!(matches!(committed, Committed::Declined { .. }));
    assert!(!committed.is_ok());
    let s = f.session.lock().unwrap();
    assert_eq!(s.plot(PLOT).unwrap().doc.to_bytes(), f.before);
    assert!(!s.plot(PLOT).unwrap().doc.is_dirty());
    let records = commit_records(&f.sink);
    assert_eq!(records.len(), 1);
    assert_eq!(records[0]["confirmation"], "declined");
}

/// The commit applies at the version the program started from: an edit that lands meanwhile
/// makes it fail, and nothing of the program is applied.
#[tokio::test]
async fn a_concurrent_edit_refuses_the_commit() {
    let f = fixture().await;
    let tx = PlotTransaction::begin(f.session.clone(), PLOT).unwrap();
    let confirmer = Arc::new(Asking(Mutex::new(Vec::new()), Answer::Approve));
    let env = f
        .runtime
        .run(ExecRequest::new(PROGRAM), confirmer.clone(), Some(&tx))
        .await;
    assert!(env.success, "{env:?}");
    // Someone else edits the plot (one undo step of its own).
    let other = toolgate_core::ChangeSet {
        label: "someone else".into(),
        edits: vec![toolgate_core::Edit::Remove {
            id: "track-collingwood".into(),
        }],
    };
    let version = f.session.lock().unwrap().plot(PLOT).unwrap().doc.version();
    f.session
        .lock()
        .unwrap()
        .apply(PLOT, &other, version)
        .unwrap();
    let after_other = f.session.lock().unwrap().plot(PLOT).unwrap().doc.to_bytes();
    let committed = f.runtime.commit(&tx, confirmer.as_ref()).await;
    assert!(
        matches!(committed, Committed::Failed { .. }),
        "{committed:?}"
    );
    assert_eq!(
        f.session.lock().unwrap().plot(PLOT).unwrap().doc.to_bytes(),
        after_other,
        "nothing of the program was applied"
    );
}

/// The same through the binary: `toolgate exec --plot … --yes --save` writes the net change;
/// without a terminal or `--yes` the program's edits are dropped, and the envelope and exit code
/// say so. Every run is recorded in the telemetry file.
#[test]
fn exec_with_a_plot_confirms_once_and_saves_only_when_asked() {
    let d = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let telemetry = d.path().join("telemetry.jsonl");
    let file = d.path().join("data/demo-store/alpha-day1/features.geojson");
    let run = |extra: &[&str]| {
        let mut args = vec![
            "exec",
            "--workspace",
            ws.path().to_str().unwrap(),
            "--plot",
            PLOT,
            "--code",
            "set_track_color(color=\"red\", feature_names=[\"Contact\"])",
        ];
        args.extend_from_slice(extra);
        support::isolated_toolgate(d.path())
            .args(&args)
            .env("TOOLGATE_TELEMETRY", &telemetry)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    };
    let commits = || -> Vec<serde_json::Value> {
        std::fs::read_to_string(&telemetry)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .filter(|r| r["tool"] == COMMIT_TOOL)
            .collect()
    };
    let o = run(&[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("Declined: the program's plot edits were dropped"),
        "{err}"
    );
    assert_eq!(o.status.code(), Some(4), "declined → exit 4: {err}");
    let env: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(env["success"], false, "{env}");
    assert_eq!(env["plot"]["status"], "declined", "{env}");
    assert!(!std::fs::read_to_string(&file).unwrap().contains("\"red\""));
    let c = commits();
    assert_eq!(c.len(), 1, "{c:?}");
    assert_eq!(c[0]["confirmation"], "declined");
    assert_eq!(c[0]["surface"], "exec");

    let o = run(&["--yes", "--save"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success() && err.contains("as one undo step") && err.contains("Saved"),
        "{err}"
    );
    let env: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(env["success"], true, "{env}");
    assert_eq!(env["plot"]["status"], "applied", "{env}");
    assert!(std::fs::read_to_string(&file).unwrap().contains("\"red\""));
    let c = commits();
    assert_eq!(c.len(), 2, "{c:?}");
    assert_eq!(c[1]["confirmation"], "approved");
    // The program's own tool call is recorded too (exec wrote no telemetry before).
    let all = std::fs::read_to_string(&telemetry).unwrap();
    assert!(
        all.lines()
            .any(|l| l.contains("\"set-track-color\"") && l.contains("\"exec\"")),
        "{all}"
    );
}

/// Issue 32 items 1 and 3 through `toolgate exec --plot`: a program's plot functions speak the
/// unit setting (TOOLGATE_UNITS, as `plot run --units`; nautical miles unless set) and read a
/// time as a single call does — a time of day on the plot's day, "yesterday" refused where it
/// is written, long before the commit.
#[test]
fn exec_plot_functions_speak_the_unit_setting_and_read_times_on_the_plot_s_day() {
    let d = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let run = |code: &str, units: Option<&str>| {
        let mut cmd = support::isolated_toolgate(d.path());
        cmd.args([
            "exec",
            "--workspace",
            ws.path().to_str().unwrap(),
            "--plot",
            PLOT,
            "--code",
            code,
        ]);
        if let Some(u) = units {
            cmd.env("TOOLGATE_UNITS", u);
        }
        let o = cmd.output().unwrap();
        let env: serde_json::Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)));
        (env, String::from_utf8_lossy(&o.stderr).into_owned())
    };
    let code = "print(range_calc(feature_names=[\"HMS Nelson\", \"Contact\"])[\"units\"])";
    assert_eq!(run(code, None).0["stdout"], "nm\n");
    assert_eq!(run(code, Some("yd")).0["stdout"], "yds\n");

    let (env, _) = run(
        "try:\n    trim_track(start_time=\"yesterday\", end_time=\"05:00\", feature_names=[\"HMS Nelson\"])\nexcept ValueError as e:\n    print(\"refused:\", e)",
        None,
    );
    let out = env["stdout"].as_str().unwrap();
    assert!(
        out.starts_with("refused:") && out.contains("got \"yesterday\""),
        "{env}"
    );
    assert_eq!(env["plot"]["status"], "unchanged", "{env}");

    let (env, err) = run(
        "r = trim_track(start_time=\"01:00\", end_time=\"2026-03-01 05:00\", feature_names=[\"HMS Nelson\"])\nprint(r)",
        None,
    );
    // The times were read: the program ran to its commit (no terminal here: put to nobody;
    // the commit's question and its count are checked in the plot crate's tests).
    assert_eq!(env["success"], false, "{env}");
    assert_eq!(env["stdout"], "{'modified': ['track-nelson']}\n", "{env}");
    assert_eq!(env["plot"]["status"], "declined", "{env}{err}");
}
