//! Issue 35 through the real binary: `toolgate catalog load --pgstac DSN` writes plots into the
//! pgstac database behind a STAC API through pgstac's bulk path (COPY into the partitions), with
//! the features of folder plots on the API's asset store, then builds toolgate's search indexes;
//! the catalogue then answers `catalog search` as a folder store holding the same plots does, a
//! second load replaces the plots, and NDJSON items (`--items`) load the same way. Against a
//! private pgstac served by stac-fastapi-pgstac (crates/plot/tests/support/pgstac.sh); without it
//! installed the test prints why and passes, unless TOOLGATE_REQUIRE_TEST_CLIENTS=1 (CI).
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(clippy::disallowed_methods)]

mod support;

use std::path::Path;
use std::process::{Command, Output};

use support::toolgate_with_data as toolgate;
use toolgate_test_support::pg::Pgstac;

fn rep_fixture(rel: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../rep/tests/fixtures/rep/valid")
        .join(rel)
        .to_string_lossy()
        .into_owned()
}

fn ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// psql's answer to one query against the pgstac database.
fn sql(pg: &Pgstac, q: &str) -> String {
    let o = Command::new("psql")
        .args([pg.dsn.as_str(), "-qAtc", q])
        .output()
        .unwrap();
    ok(&o).trim().to_owned()
}

#[test]
fn the_bulk_path_loads_what_a_folder_store_holds_and_indexes_it() {
    let Some(pg) = Pgstac::start(true) else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let data = work.path().join("data");
    // A folder store named like the API's collection (the same plot ids): REP imports and the
    // demo plots.
    let folder = work.path().join("debrief");
    let folder_s = folder.to_string_lossy().into_owned();
    let (b1, b2) = (rep_fixture("boat1.rep"), rep_fixture("boat2.rep"));
    ok(&toolgate(
        &data,
        &["import", "--store", &folder_s, &b1, &b2],
    ));
    let demo = toolgate_plot::demo::ensure_demo_store(&work.path().join("demo")).unwrap();
    let mut store = toolgate_plot::store::StacStore::open("debrief", &folder).unwrap();
    for e in &demo.items {
        let item: serde_json::Value =
            serde_json::from_slice(&std::fs::read(demo.root.join(&e.item_path)).unwrap()).unwrap();
        let features = demo.load_features(e).unwrap().collection;
        store
            .add_item(item["id"].as_str().unwrap(), &item, &features)
            .unwrap();
    }

    let load = |extra: &[&str]| {
        let mut args = vec!["catalog", "load", "--store", &pg.url, "--pgstac", &pg.dsn];
        args.extend(extra);
        ok(&toolgate(&data, &args))
    };
    let out = load(&[&folder_s]);
    let n = store.items.len();
    assert!(
        out.contains(&format!("loaded {n} plot(s)")) && out.contains("through pgstac's bulk path"),
        "{out}"
    );
    // toolgate's indexes, a year-partitioned collection, every plot in the database.
    assert_eq!(
        sql(
            &pg,
            "SELECT count(*) FROM pg_indexes WHERE schemaname = 'pgstac' AND tablename = 'items'
               AND indexname IN ('toolgate_search_text_trgm', 'toolgate_platform_text_trgm')"
        ),
        "2"
    );
    assert_eq!(
        sql(
            &pg,
            "SELECT partition_trunc FROM pgstac.collections WHERE id = 'debrief'"
        ),
        "year"
    );
    assert_eq!(sql(&pg, "SELECT count(*) FROM pgstac.items"), n.to_string());

    // The same answers as the folder store.
    for q in [
        vec![],
        vec!["--text", "boat"],
        vec!["--text", "alpha day-1"],
        vec!["--platform", "submarine", "--start", "2026-03-02T01:00:00Z"],
        vec!["--bbox", "-5,50,0,55"],
    ] {
        let run = |store: &str| {
            let mut args = vec!["catalog", "search", "--store", store, "--json"];
            args.extend(q.iter().copied());
            let v: serde_json::Value = serde_json::from_str(&ok(&toolgate(&data, &args))).unwrap();
            v
        };
        let (mut l, mut r) = (run(&folder_s), run(&pg.url));
        for v in [&mut l, &mut r] {
            v["matches"]
                .as_array_mut()
                .unwrap()
                .sort_by_key(|m| m["plotId"].as_str().unwrap().to_owned());
        }
        assert_eq!(l, r, "catalog search {q:?}");
    }
    // A plot opens: its features went to the API's asset store.
    let summary = |store: &str| {
        ok(&toolgate(
            &data,
            &[
                "plot",
                "summary",
                "--store",
                store,
                "--plot",
                "stac://debrief/boat1/item.json",
            ],
        ))
    };
    assert_eq!(summary(&folder_s), summary(&pg.url));

    // A second load replaces the plots.
    let out = load(&[&folder_s]);
    assert!(out.contains(&format!("; {n} replaced")), "{out}");
    assert_eq!(sql(&pg, "SELECT count(*) FROM pgstac.items"), n.to_string());

    // NDJSON items (their features assets already somewhere), one a line.
    let items = work.path().join("items.ndjson");
    let mut text = String::new();
    for i in 0..3 {
        let mut item = toolgate_plot::demo::item_with_extent(
            &format!("nd-{i}"),
            &format!("Exercise Ndjson {i}"),
            "from an NDJSON file",
            &["ndjson"],
            serde_json::json!([{"id": "P9", "name": "HMS Ndjson"}]),
            Some([1.0, 50.0, 2.0, 51.0]),
            Some((
                chrono::DateTime::parse_from_rfc3339("2020-06-01T00:00:00Z")
                    .unwrap()
                    .to_utc(),
                chrono::DateTime::parse_from_rfc3339("2020-06-01T06:00:00Z")
                    .unwrap()
                    .to_utc(),
            )),
        );
        item["assets"]["features"]["href"] =
            serde_json::json!(format!("/assets/debrief/nd-{i}/features.geojson"));
        text.push_str(&item.to_string());
        text.push('\n');
    }
    std::fs::write(&items, text).unwrap();
    let out = load(&["--items", items.to_str().unwrap()]);
    assert!(out.contains("loaded 3 plot(s)"), "{out}");
    let found = ok(&toolgate(
        &data,
        &[
            "catalog", "search", "--store", &pg.url, "--text", "ndjson", "--json",
        ],
    ));
    let v: serde_json::Value = serde_json::from_str(&found).unwrap();
    assert_eq!(v["total"], 3, "{found}");
    assert_eq!(
        v["matches"][0]["plotId"], "stac://debrief/nd-0/item.json",
        "{found}"
    );
    // A duplicate id in the input is refused before anything is written.
    std::fs::write(
        &items,
        format!(
            "{}\n{}\n",
            std::fs::read_to_string(&items)
                .unwrap()
                .lines()
                .next()
                .unwrap(),
            std::fs::read_to_string(&items)
                .unwrap()
                .lines()
                .next()
                .unwrap()
        ),
    )
    .unwrap();
    let o = toolgate(
        &data,
        &[
            "catalog",
            "load",
            "--store",
            &pg.url,
            "--pgstac",
            &pg.dsn,
            "--items",
            items.to_str().unwrap(),
        ],
    );
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("is given twice"),
        "{o:?}"
    );
}
