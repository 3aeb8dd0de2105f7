//! Plot-domain benches (issue #3): REP import throughput on a ≥ 100 MB synthetic REP (goal
//! ≥ 50 MB/s for parsing plus writing the GeoJSON) and the summary of a 39-track ~3 MB plot
//! (goal ≤ 5 ms).

use std::fmt::Write as _;
use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::json;
use toolgate_core::TokenCounter;
use toolgate_plot::demo;
use toolgate_plot::session::Session;
use toolgate_plot::store::StacStore;
use toolgate_plot::summary::{SummaryRequest, summarize};

/// A synthetic REP file of about `target` bytes: 20 tracks reporting once a minute.
fn synthetic_rep(target: usize) -> String {
    let mut s = String::with_capacity(target + 200);
    let mut minute = 0u64;
    while s.len() < target {
        for t in 0..20u64 {
            let total = minute;
            let (day, hh, mm) = (1 + (total / 1440) % 28, (total / 60) % 24, total % 60);
            let lat_m = (t * 3 + minute / 7) % 60;
            let lon_m = (t * 5 + minute / 11) % 60;
            let _ = writeln!(
                s,
                "9512{day:02} {hh:02}{mm:02}00.000 SHIP{t:02} @C 22 {lat_m:02} {:.2} N 021 {lon_m:02} {:.2} W {:.1} {:.1} 0",
                (minute % 60) as f64 * 0.97,
                (minute % 60) as f64 * 0.53,
                (minute * 7 % 360) as f64,
                4.0 + (t % 5) as f64,
            );
        }
        minute += 1;
    }
    s
}

fn rep_import(c: &mut Criterion) {
    let text = synthetic_rep(100 * 1024 * 1024);
    let mut g = c.benchmark_group("rep_import");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(text.len() as u64));
    g.bench_function(
        "parse_rep 100 MB (result dropped outside the timing)",
        |b| {
            b.iter_with_large_drop(|| {
                toolgate_plot::rep::parse_rep("synthetic.rep", black_box(&text)).ok()
            });
        },
    );
    // What `toolgate import` does before writing the file: parse, then stream the pretty
    // (2-space indent) GeoJSON FeatureCollection into a `Vec<u8>` (the import itself is dropped
    // inside the timing, the JSON outside).
    g.bench_function(
        "import 100 MB: parse_rep + feature_collection_bytes (pretty GeoJSON into a Vec<u8>)",
        |b| {
            b.iter_with_large_drop(|| {
                let import =
                    toolgate_plot::rep::parse_rep("synthetic.rep", black_box(&text)).ok()?;
                import
                    .feature_collection_bytes(toolgate_plot::rep::JsonLayout::Pretty)
                    .ok()
            });
        },
    );
    g.finish();
}

fn summary(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let mut store =
        StacStore::create("bench", dir.path(), "bench").unwrap_or_else(|e| panic!("{e}"));
    // 39 tracks × 721 positions ≈ 3 MB of GeoJSON, like core--lightweight-test-tracks.
    let mut features = Vec::new();
    for i in 0..39 {
        let name = format!("Track {}", i + 1);
        let id = format!("track-{}", i + 1);
        let pid = name.to_uppercase();
        features.push(demo::track(&demo::TrackSpec {
            id: &id,
            platform_id: &pid,
            name: &name,
            track_type: "CONTACT",
            color: "#FF0000",
            start: (-5.0 + f64::from(i) * 0.05, 50.0),
            course: f64::from(i * 9),
            speed_kn: 8.0,
            minutes: 720,
            step_minutes: 1,
            t0: chrono::DateTime::parse_from_rfc3339("2026-03-01T00:00:00Z")
                .map(|d| d.to_utc())
                .unwrap_or_default(),
            seed: u64::from(i as u32) + 1,
        }));
    }
    let collection = json!({"type": "FeatureCollection", "features": features});
    let bytes = serde_json::to_vec(&collection)
        .map(|v| v.len())
        .unwrap_or(0);
    let item = demo::item(
        "big",
        "Big",
        "",
        &[],
        json!([]),
        collection["features"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[]),
    );
    store
        .add_item("big", &item, &collection)
        .unwrap_or_else(|e| panic!("{e}"));
    let mut session = Session::new(vec![store]);
    session
        .open("stac://bench/big/item.json")
        .unwrap_or_else(|e| panic!("{e}"));
    let counter = TokenCounter::default();
    let plot = session
        .plot("stac://bench/big/item.json")
        .unwrap_or_else(|e| panic!("{e}"));
    let name = format!("summary of a 39-track plot ({:.1} MB)", bytes as f64 / 1e6);
    c.bench_function(&name, |b| {
        b.iter(|| {
            summarize(
                &session,
                plot,
                black_box(&SummaryRequest::default()),
                &counter,
            )
            .0
            .tokens
        });
    });
}

/// What a restarted `serve --state` instance pays per journaled change: replaying a session of
/// one opened demo plot, 1,000 selections and 100 edits (undo steps) from an in-memory journal
/// (the database's share is measured by benches/README.md's restart row).
fn journal_replay(c: &mut Criterion) {
    use std::sync::Arc;
    use toolgate_plot::journal::{Journal, MemoryJournal};
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let store = demo::ensure_demo_store(dir.path()).unwrap_or_else(|e| panic!("{e}"));
    const PLOT: &str = "stac://demo/alpha-day1/item.json";
    let journal = MemoryJournal::new("bench");
    let mut s = Session::new(vec![store.clone()])
        .with_journal(Arc::new(journal.clone()))
        .unwrap_or_else(|e| panic!("{e}"));
    s.open(PLOT).unwrap_or_else(|e| panic!("{e}"));
    for i in 0..1_000 {
        s.select(PLOT, vec![format!("track-nelson/positions/{i}")])
            .unwrap_or_else(|e| panic!("{e}"));
    }
    for i in 0..100 {
        let plot = s.plot(PLOT).unwrap_or_else(|e| panic!("{e}"));
        let mut f = plot.doc.features()[1].clone();
        f["properties"]["bench"] = json!(i);
        let cs = toolgate_core::ChangeSet {
            label: format!("edit {i}"),
            edits: vec![toolgate_core::Edit::Upsert {
                id: "track-collingwood".into(),
                item: f,
            }],
        };
        let v = plot.doc.version();
        s.apply(PLOT, &cs, v).unwrap_or_else(|e| panic!("{e}"));
    }
    let entries = journal.len();
    let mut g = c.benchmark_group("journal");
    g.throughput(Throughput::Elements(entries as u64));
    g.bench_function("replay_1101_entries", |b| {
        b.iter(|| {
            let j: Arc<dyn Journal> = Arc::new(journal.clone());
            let s = Session::new(vec![store.clone()])
                .with_journal(j)
                .unwrap_or_else(|e| panic!("{e}"));
            black_box(s.journal_seq())
        });
    });
    g.finish();
}

criterion_group!(benches, summary, rep_import, journal_replay);
criterion_main!(benches);
