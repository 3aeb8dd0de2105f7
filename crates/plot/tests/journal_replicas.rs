//! Sessions sharing a journal (crate::journal) behave as one session: two "instances" in one
//! process, each with its own `Session` over the same catalogue and one `MemoryJournal`, are
//! driven with random changes; after every change the other one (and, at the end, a third one
//! built from the journal alone, as a restarted instance is) holds exactly the same open plots,
//! versions, selections, undo/redo stacks, unsaved edits and saved state.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use proptest::prelude::*;
use serde_json::{Value, json};
use toolgate_core::{ChangeSet, Edit};
use toolgate_plot::journal::{Journal, JournalError, MemoryJournal, SessionOp};
use toolgate_plot::session::{Session, SessionError};
use toolgate_plot::store::StacStore;

const PLOTS: [&str; 2] = [
    "stac://demo/alpha-day1/item.json",
    "stac://demo/alpha-day2/item.json",
];

fn store(dir: &std::path::Path) -> StacStore {
    toolgate_plot::demo::ensure_demo_store(dir).unwrap()
}

fn replica(dir: &std::path::Path, journal: Arc<dyn Journal>) -> Session {
    Session::new(vec![store(dir)])
        .with_journal(journal)
        .unwrap()
}

/// Everything a surface can see of a session.
fn observe(s: &mut Session) -> Value {
    s.sync().unwrap();
    let plots: Vec<Value> = s
        .open_plots()
        .iter()
        .map(|p| {
            json!({
                "id": p.id,
                "version": p.doc.version(),
                "dirty": p.doc.is_dirty(),
                "canUndo": p.doc.can_undo(),
                "canRedo": p.doc.can_redo(),
                "undoLabel": p.doc.undo_label(),
                "selection": p.selection_raw(),
                "disk": p.doc.disk_sha256(),
                "features": toolgate_plot::sha256_hex(&p.doc.to_bytes()),
            })
        })
        .collect();
    json!({"active": s.active_id(), "plots": plots})
}

/// A change set that renames feature `i` of the active plot.
fn rename(s: &Session, plot: &str, i: usize, n: u32) -> Option<(ChangeSet, u64)> {
    let p = s.plot(plot).ok()?;
    let features = p.doc.features();
    let mut f = features.get(i % features.len().max(1))?.clone();
    let id = f["id"].as_str()?.to_owned();
    f["properties"]["journal_test"] = json!(n);
    Some((
        ChangeSet {
            label: format!("rename {id} #{n}"),
            edits: vec![Edit::Upsert { id, item: f }],
        },
        p.doc.version(),
    ))
}

#[derive(Debug, Clone)]
enum Step {
    Open(usize),
    Focus(usize),
    Close(usize),
    Select(usize, usize),
    Edit(usize, usize),
    StaleEdit(usize),
    Undo(usize),
    Redo(usize),
    Revert(usize),
    Save(usize),
}

fn step() -> impl Strategy<Value = (bool, Step)> {
    let plot = 0..PLOTS.len();
    let s = prop_oneof![
        3 => plot.clone().prop_map(Step::Open),
        1 => plot.clone().prop_map(Step::Focus),
        1 => plot.clone().prop_map(Step::Close),
        2 => (plot.clone(), 0..4usize).prop_map(|(p, i)| Step::Select(p, i)),
        4 => (plot.clone(), 0..6usize).prop_map(|(p, i)| Step::Edit(p, i)),
        1 => plot.clone().prop_map(Step::StaleEdit),
        2 => plot.clone().prop_map(Step::Undo),
        1 => plot.clone().prop_map(Step::Redo),
        1 => plot.clone().prop_map(Step::Revert),
        1 => plot.prop_map(Step::Save),
    ];
    (any::<bool>(), s)
}

/// Run one step on `s`; errors a surface would show are fine (they must leave nothing behind).
fn run(s: &mut Session, step: &Step, n: u32) {
    let _ = match step {
        Step::Open(p) => s.open(PLOTS[*p]).map(|_| ()),
        Step::Focus(p) => {
            s.focus_if_open(PLOTS[*p]);
            Ok(())
        }
        Step::Close(p) => s.close(PLOTS[*p]),
        Step::Select(p, i) => {
            let ids: Vec<String> = s
                .plot(PLOTS[*p])
                .map(|pl| {
                    pl.doc
                        .features()
                        .iter()
                        .take(*i)
                        .filter_map(|f| f["id"].as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default();
            s.select(PLOTS[*p], ids)
        }
        Step::Edit(p, i) => match rename(s, PLOTS[*p], *i, n) {
            Some((cs, v)) => s.apply(PLOTS[*p], &cs, v).map(|_| ()),
            None => Ok(()),
        },
        Step::StaleEdit(p) => match rename(s, PLOTS[*p], 0, n) {
            Some((cs, v)) => {
                let r = s.apply(PLOTS[*p], &cs, v.wrapping_sub(1));
                assert!(
                    matches!(r, Err(SessionError::VersionMismatch { .. })),
                    "{r:?}"
                );
                Ok(())
            }
            None => Ok(()),
        },
        Step::Undo(p) => s.undo(PLOTS[*p]).map(|_| ()),
        Step::Redo(p) => s.redo(PLOTS[*p]).map(|_| ()),
        Step::Revert(p) => s.revert(PLOTS[*p]),
        Step::Save(p) => s.save(PLOTS[*p]),
    };
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn two_instances_on_one_journal_hold_the_same_session(steps in proptest::collection::vec(step(), 1..24)) {
        let dir = tempfile::tempdir().unwrap();
        let journal = MemoryJournal::new("workbench");
        let mut a = replica(dir.path(), Arc::new(journal.clone()));
        let mut b = replica(dir.path(), Arc::new(journal.clone()));
        for (n, (on_a, step)) in steps.iter().enumerate() {
            let (this, other) = if *on_a { (&mut a, &mut b) } else { (&mut b, &mut a) };
            run(this, step, n as u32);
            let seen_here = observe(this);
            prop_assert_eq!(&observe(other), &seen_here, "after {:?}", step);
        }
        // A restarted instance (nothing but the journal and the catalogue) gets it all back,
        // even the plots whose files were saved over since they were opened.
        let mut restarted = replica(dir.path(), Arc::new(journal));
        prop_assert_eq!(observe(&mut restarted), observe(&mut a));
    }
}

/// A journal where another instance takes the next entry just before this one's first append.
#[derive(Debug)]
struct Racing {
    inner: MemoryJournal,
    intruder: Mutex<Option<SessionOp>>,
}

impl Journal for Racing {
    fn session(&self) -> &str {
        self.inner.session()
    }
    fn since(&self, after: u64) -> Result<Vec<(u64, SessionOp)>, JournalError> {
        self.inner.since(after)
    }
    fn append(&self, seq: u64, op: &SessionOp) -> Result<(), JournalError> {
        if let Some(first) = self.intruder.lock().unwrap().take() {
            self.inner.append(seq, &first)?;
        }
        self.inner.append(seq, op)
    }
    fn has_content(&self, sha256: &str) -> Result<bool, JournalError> {
        self.inner.has_content(sha256)
    }
    fn put_content(&self, sha256: &str, bytes: &[u8]) -> Result<(), JournalError> {
        self.inner.put_content(sha256, bytes)
    }
    fn content(&self, sha256: &str) -> Result<Option<Vec<u8>>, JournalError> {
        self.inner.content(sha256)
    }
}

#[test]
fn a_change_that_loses_the_race_is_checked_again_on_the_winners_state() {
    let dir = tempfile::tempdir().unwrap();
    let journal = MemoryJournal::new("workbench");
    let mut a = replica(dir.path(), Arc::new(journal.clone()));
    a.open(PLOTS[0]).unwrap();
    let (first, v) = rename(&a, PLOTS[0], 0, 1).unwrap();
    let (second, _) = rename(&a, PLOTS[0], 1, 2).unwrap();
    let racing = Arc::new(Racing {
        inner: journal,
        intruder: Mutex::new(Some(SessionOp::Apply {
            plot_id: PLOTS[0].into(),
            expected_version: v,
            change_set: first,
        })),
    });
    let mut b = replica(dir.path(), racing.clone());
    // B prepared its edit against version v, but the intruder's edit took entry n first: B
    // replays it, and its own edit (still at v) is refused as stale — never applied on top.
    let r = b.apply(PLOTS[0], &second, v);
    assert!(
        matches!(r, Err(SessionError::VersionMismatch { .. })),
        "{r:?}"
    );
    assert_eq!(observe(&mut b), observe(&mut a));
    assert_eq!(a.plot(PLOTS[0]).unwrap().doc.version(), v + 1);
    // An undo that loses the race is retried after the replay and undoes the newest step.
    racing.intruder.lock().unwrap().replace(SessionOp::Select {
        plot_id: PLOTS[0].into(),
        ids: vec!["x".into()],
    });
    assert!(b.undo(PLOTS[0]).unwrap().starts_with("rename"));
    assert_eq!(observe(&mut b), observe(&mut a));
    assert!(!a.plot(PLOTS[0]).unwrap().doc.is_dirty());
    assert_eq!(a.plot(PLOTS[0]).unwrap().selection_raw(), ["x"]);
}

/// A journal that stores nothing (its database is down).
#[derive(Debug)]
struct Down(MemoryJournal);

impl Journal for Down {
    fn session(&self) -> &str {
        self.0.session()
    }
    fn since(&self, after: u64) -> Result<Vec<(u64, SessionOp)>, JournalError> {
        self.0.since(after)
    }
    fn append(&self, _: u64, _: &SessionOp) -> Result<(), JournalError> {
        Err(JournalError::Store("connection refused".into()))
    }
    fn has_content(&self, sha256: &str) -> Result<bool, JournalError> {
        self.0.has_content(sha256)
    }
    fn put_content(&self, sha256: &str, bytes: &[u8]) -> Result<(), JournalError> {
        self.0.put_content(sha256, bytes)
    }
    fn content(&self, sha256: &str) -> Result<Option<Vec<u8>>, JournalError> {
        self.0.content(sha256)
    }
}

#[test]
fn nothing_changes_that_could_not_be_journaled() {
    let dir = tempfile::tempdir().unwrap();
    let journal = MemoryJournal::new("workbench");
    let mut a = replica(dir.path(), Arc::new(journal.clone()));
    a.open(PLOTS[0]).unwrap();
    let mut b = replica(dir.path(), Arc::new(Down(journal.clone())));
    let before = observe(&mut b);
    let (cs, v) = rename(&b, PLOTS[0], 0, 1).unwrap();
    let e = b.apply(PLOTS[0], &cs, v).unwrap_err();
    assert!(
        e.to_string().contains("nothing was applied") && e.to_string().contains("--state"),
        "{e}"
    );
    assert!(b.select(PLOTS[0], vec!["x".into()]).is_err());
    assert!(b.close(PLOTS[0]).is_err());
    assert_eq!(observe(&mut b), before);
    assert_eq!(journal.len(), 1, "only A's open is journaled");
}
