//! The PostgreSQL journal against a real server (a private cluster started by
//! crates/plot/tests/support/pgstac.sh start-pg): entry numbering and conflicts, content by
//! SHA-256, notifications, and two sessions on one database racing from threads.
//! Without PostgreSQL installed the tests print why and pass, unless
//! TOOLGATE_REQUIRE_TEST_CLIENTS=1 (CI), where they fail.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use toolgate_plot::journal::{Journal, JournalError, SessionOp};
use toolgate_plot::session::Session;
use toolgate_state::{Changed, Listener, PgJournal};

use toolgate_test_support::pg::Postgres as Pg;

fn focus(p: &str) -> SessionOp {
    SessionOp::Focus { plot_id: p.into() }
}

#[test]
fn entries_are_numbered_and_a_taken_number_is_a_conflict() {
    let Some(pg) = Pg::start() else { return };
    let a = PgJournal::connect(&pg.dsn, "w1").unwrap();
    let b = PgJournal::connect(&pg.dsn, "w1").unwrap();
    let other = PgJournal::connect(&pg.dsn, "w2").unwrap();
    a.append(1, &focus("p1")).unwrap();
    assert!(matches!(
        b.append(1, &focus("p2")),
        Err(JournalError::Conflict { seq: 1, .. })
    ));
    b.append(2, &focus("p2")).unwrap();
    other.append(1, &focus("q")).unwrap();
    assert_eq!(
        a.since(0).unwrap(),
        vec![(1, focus("p1")), (2, focus("p2"))]
    );
    assert_eq!(b.since(1).unwrap(), vec![(2, focus("p2"))]);
    assert_eq!(other.since(0).unwrap(), vec![(1, focus("q"))]);
    // content by file hash, stored once
    assert!(!a.has_content("abc").unwrap());
    a.put_content("abc", b"{\"type\":\"FeatureCollection\"}")
        .unwrap();
    b.put_content("abc", b"other bytes are ignored").unwrap();
    assert!(b.has_content("abc").unwrap());
    assert_eq!(
        b.content("abc").unwrap().unwrap(),
        b"{\"type\":\"FeatureCollection\"}"
    );
    assert_eq!(b.content("nope").unwrap(), None);
}

#[test]
fn every_stored_entry_is_announced_and_a_dead_database_is_an_error_not_a_hang() {
    let Some(pg) = Pg::start() else { return };
    let (tx, rx) = std::sync::mpsc::channel();
    let listener = Listener::start(&pg.dsn, move |c| {
        let _ = tx.send(c);
    })
    .unwrap();
    // the (re)connect catch-up signal comes first
    let first = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(first.seq, 0);
    let j = PgJournal::connect(&pg.dsn, "workbench").unwrap();
    for seq in 1..=3 {
        j.append(seq, &focus("p")).unwrap();
    }
    let mut heard = Vec::new();
    while heard.len() < 3 {
        heard.push(rx.recv_timeout(Duration::from_secs(10)).unwrap());
    }
    assert_eq!(
        heard,
        (1..=3)
            .map(|seq| Changed {
                session: "workbench".into(),
                seq
            })
            .collect::<Vec<_>>()
    );
    // a refused append is not announced
    assert!(j.append(2, &focus("p")).is_err());
    assert!(rx.recv_timeout(Duration::from_millis(500)).is_err());
    drop(listener);
    // the database goes away: calls fail with a message that says what to do
    pg.stop();
    let e = j.append(4, &focus("p")).unwrap_err();
    assert!(matches!(e, JournalError::Store(_)), "{e:?}");
    assert!(e.to_string().contains("--state"), "{e}");
}

#[test]
fn two_sessions_racing_from_threads_agree_and_lose_nothing() {
    let Some(pg) = Pg::start() else { return };
    let catalogue = tempfile::tempdir().unwrap();
    let store = toolgate_plot::demo::ensure_demo_store(catalogue.path()).unwrap();
    const PLOT: &str = "stac://demo/alpha-day1/item.json";
    let replica = || {
        let j: Arc<dyn Journal> = PgJournal::connect(&pg.dsn, "workbench").unwrap();
        Session::new(vec![store.clone()]).with_journal(j).unwrap()
    };
    let mut first = replica();
    first.open(PLOT).unwrap();
    let ids: Vec<String> = first
        .plot(PLOT)
        .unwrap()
        .doc
        .features()
        .iter()
        .filter_map(|f| f["id"].as_str().map(str::to_owned))
        .collect();
    let threads: Vec<_> = (0..2)
        .map(|t| {
            let mut s = replica();
            let ids = ids.clone();
            std::thread::spawn(move || {
                let mut done = Vec::new();
                for i in 0..25 {
                    let pick = vec![format!("{}#{t}-{i}", ids[i % ids.len()])];
                    s.select(PLOT, pick.clone()).unwrap();
                    done.push(pick);
                }
                (s, done)
            })
        })
        .collect();
    let mut replicas = Vec::new();
    for t in threads {
        replicas.push(t.join().unwrap());
    }
    // 1 open + 50 selections, numbered without gaps, none lost
    let j = PgJournal::connect(&pg.dsn, "workbench").unwrap();
    let all = j.since(0).unwrap();
    assert_eq!(all.len(), 51);
    assert!(
        all.iter()
            .enumerate()
            .all(|(i, (seq, _))| *seq == i as u64 + 1)
    );
    for (_, done) in &replicas {
        for pick in done {
            assert!(
                all.iter()
                    .any(|(_, op)| matches!(op, SessionOp::Select { ids, .. } if ids == pick)),
                "an acknowledged selection {pick:?} is missing"
            );
        }
    }
    // every replica (and a new one) ends with the same selection: the last entry's
    let SessionOp::Select { ids: last, .. } = &all[50].1 else {
        panic!("{:?}", all[50])
    };
    for (s, _) in &mut replicas {
        s.sync().unwrap();
        assert_eq!(s.plot(PLOT).unwrap().selection_raw(), last.as_slice());
    }
    let fresh = replica();
    assert_eq!(fresh.plot(PLOT).unwrap().selection_raw(), last.as_slice());
    assert_eq!(fresh.journal_seq(), 51);
}
