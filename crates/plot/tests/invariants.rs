//! Property and crash tests for the session's promises: nothing unconfirmed is ever applied, a
//! decline leaves everything byte-identical, saves refuse on-disk conflicts and are atomic.
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(clippy::disallowed_methods)]

mod common;

use std::sync::atomic::Ordering;

use proptest::prelude::*;
use serde_json::json;
use toolgate_core::flow::Answer;
use toolgate_plot::debrief::RUN_TOOL;
use toolgate_plot::session::SessionError;

use common::{PLOT, Scripted, harness, hash_tree};

#[derive(Debug, Clone)]
enum Op {
    Color(&'static str, bool),
    Trim(bool),
    Stats,
    Undo,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (
            prop_oneof![Just("red"), Just("green"), Just("blue")],
            any::<bool>()
        )
            .prop_map(|(c, a)| Op::Color(c, a)),
        any::<bool>().prop_map(Op::Trim),
        Just(Op::Stats),
        Just(Op::Undo),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Random sequences of calls with random approve/decline: a change is applied only when it
    /// was approved; a decline leaves the document byte-identical; the store on disk never
    /// changes without a save.
    #[test]
    fn only_confirmed_changes_are_applied(ops in proptest::collection::vec(op(), 1..10)) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let h = harness().await;
            h.debrief.session().open(PLOT).unwrap();
            let disk = hash_tree(h.dir.path());
            let mut expected_steps = 0usize;
            for op in ops {
                let before = h.debrief.session().plot(PLOT).unwrap().doc.to_bytes();
                let calls_before = h.provider.calls.load(Ordering::SeqCst);
                let (input, approve, mutating) = match &op {
                    Op::Color(c, a) => (json!({"toolId": "set-track-color", "params": {"color": c}, "featureIds": ["track-1"]}), *a, true),
                    Op::Trim(a) => (json!({"toolId": "trim-track", "params": {"start_time": "2026-03-01T01:00:00Z", "end_time": "2026-03-01T06:00:00Z"}, "featureNames": ["HMS Nelson"]}), *a, true),
                    Op::Stats => (json!({"toolId": "track-stats", "featureIds": ["track-1"]}), false, false),
                    Op::Undo => {
                        let undone = h.debrief.session().undo(PLOT).is_ok();
                        if undone { expected_steps -= 1; }
                        continue;
                    }
                };
                let confirmer = Scripted::new(vec![if approve { Answer::Approve } else { Answer::Decline }]);
                let reply = h.debrief.call(RUN_TOOL, &input, &confirmer).await.unwrap().text;
                let after = h.debrief.session().plot(PLOT).unwrap().doc.to_bytes();
                if mutating && !approve {
                    prop_assert_eq!(&after, &before, "declined: byte-identical ({})", reply);
                    prop_assert_eq!(h.provider.calls.load(Ordering::SeqCst), calls_before, "declined: nothing ran");
                }
                if !mutating {
                    prop_assert_eq!(&after, &before, "analytical tools never change the plot");
                }
                if mutating && approve && reply.starts_with("Applied") {
                    expected_steps += 1;
                }
                let mut undo_depth = 0;
                {
                    let mut s = h.debrief.session();
                    let mut probe = s.plot(PLOT).unwrap().doc.clone();
                    while probe.undo().is_some() { undo_depth += 1; }
                    drop(s.plot_mut(PLOT));
                }
                prop_assert_eq!(undo_depth, expected_steps, "every undo step is an approved call");
            }
            prop_assert_eq!(hash_tree(h.dir.path()), disk, "nothing reached disk without a save");
            Ok(())
        })?;
    }
}

#[tokio::test]
async fn save_refuses_when_the_file_changed_on_disk() {
    let h = harness().await;
    h.debrief.session().open(PLOT).unwrap();
    let ask = Scripted::new(vec![Answer::Approve]);
    let r = h.debrief.call(RUN_TOOL, &json!({"toolId": "set-track-color", "params": {"color": "red"}, "featureIds": ["track-1"]}), &ask).await.unwrap().text;
    assert!(r.starts_with("Applied"), "{r}");
    let path = h.dir.path().join("items/alpha-day1/features.geojson");
    let external = std::fs::read_to_string(&path)
        .unwrap()
        .replace("Datum A", "Datum Z");
    std::fs::write(&path, &external).unwrap();
    let err = h.debrief.session().save(PLOT).unwrap_err();
    assert!(matches!(err, SessionError::Conflict { .. }), "{err}");
    assert!(err.to_string().contains("changed on disk"));
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        external,
        "the other change survives"
    );
    assert!(
        h.debrief.session().plot(PLOT).unwrap().doc.is_dirty(),
        "our edit is kept in memory"
    );
    // after a revert (loading the file's version) saving works again
    h.debrief.session().revert(PLOT).unwrap();
    let r = h.debrief.call(RUN_TOOL, &json!({"toolId": "set-track-color", "params": {"color": "green"}, "featureIds": ["track-1"]}), &Scripted::new(vec![Answer::Approve])).await.unwrap().text;
    assert!(r.starts_with("Applied"), "{r}");
    h.debrief.session().save(PLOT).unwrap();
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(
        saved["features"][0]["properties"]["style"]["line"]["color"],
        "green"
    );
    assert!(std::fs::read_to_string(&path).unwrap().contains("Datum Z"));
    assert!(!h.debrief.session().plot(PLOT).unwrap().doc.is_dirty());
}

/// Kill a process that saves in a loop at random moments: the file is always a complete old or
/// new version, never a partial one.
#[test]
fn a_killed_save_leaves_old_or_new_never_partial() {
    let stress = std::path::PathBuf::from(env!("CARGO_BIN_EXE_save_stress"));
    let dir = tempfile::tempdir().unwrap();
    let store = toolgate_plot::demo::ensure_demo_store(dir.path()).unwrap();
    let path = store
        .item("stac://demo/bulk-tracks/item.json")
        .unwrap()
        .features_path
        .clone()
        .unwrap();
    for round in 0..6u64 {
        let mut child = std::process::Command::new(&stress)
            .arg(dir.path())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // wait until it has saved at least once, then kill it at a varying moment mid-loop
        let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        std::io::BufRead::read_line(&mut out, &mut line).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(7 * round + 3));
        child.kill().unwrap();
        child.wait().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("round {round}: partial file ({e})"));
        let color = v["features"][0]["properties"]["style"]["line"]["color"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(
            ["#0000FF", "red", "green"].contains(&color.as_str()),
            "round {round}: {color}"
        );
        assert!(v["features"].as_array().unwrap().len() >= 250);
    }
}
