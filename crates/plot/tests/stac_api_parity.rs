//! The STAC API catalogue backend against a real pgstac (issue 21): the same plots loaded into a
//! folder store and into stac-fastapi-pgstac give identical `debrief_searchPlots` replies for
//! every search the eval scenarios replay and the search tests ask (criteria, caps, "N more not
//! shown", errors); opening gives the same plot; saving writes back through the Transactions
//! extension; a server without transactions is read-only; assets elsewhere are refused.
//!
//! Needs PostgreSQL 15 + PostGIS, pypgstac and stac-fastapi-pgstac (`bash .ci/install-test-clients`
//! installs them; `tests/support/pgstac.sh` starts a private one per test). Without them each
//! test prints why and passes, unless TOOLGATE_REQUIRE_TEST_CLIENTS=1 (CI), where it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(clippy::disallowed_methods)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use toolgate_core::Registry;
use toolgate_core::telemetry::MemorySink;
use toolgate_plot::debrief::{Debrief, Settings};
use toolgate_plot::search::{Criteria, SearchQuery, TotalIs, search};
use toolgate_plot::session::Session;
use toolgate_plot::stac_api::{ApiStore, search_catalogues};
use toolgate_plot::store::StacStore;
use toolgate_plot::{demo, import};
use toolgate_test_support::pg::Pgstac;

/// The API as a store, its features mirrored under `mirror`.
fn api_store(pg: &Pgstac, mirror: &Path) -> ApiStore {
    ApiStore::connect(None, &pg.url, Duration::from_secs(30))
        .unwrap()
        .with_mirror(mirror)
}

fn rep_fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../rep/tests/fixtures/rep/valid")
        .join(name)
}

/// The plots both backends hold: the demo plots, the spike's plot, REP fixtures imported, and
/// 60 generated plots (undated ones among them) so the cap of 50 and "N more" are exercised.
/// Written in item-id order: the API backend lists matches in item-id order, the folder store
/// in catalogue order, and here the two are the same.
fn parity_folder(dir: &Path) -> StacStore {
    let mut plots: Vec<(String, Value, Value)> = Vec::new();
    let mut take = |store: &StacStore| {
        for e in &store.items {
            let item: Value =
                serde_json::from_slice(&std::fs::read(store.root.join(&e.item_path)).unwrap())
                    .unwrap();
            let features = store.load_features(e).unwrap().collection;
            plots.push((item["id"].as_str().unwrap().to_owned(), item, features));
        }
    };
    let tmp = tempfile::tempdir().unwrap();
    take(&demo::ensure_demo_store(&tmp.path().join("demo")).unwrap());
    take(&demo::spike_replay_store(&tmp.path().join("spike")).unwrap());
    let mut reps = StacStore::create("reps", &tmp.path().join("reps"), "reps").unwrap();
    for f in ["boat1.rep", "boat2.rep", "narrative.rep"] {
        let source = import::RepSource::read(&rep_fixture(f)).unwrap();
        let plot = import::prepare_plot(std::slice::from_ref(&source), None).unwrap();
        reps.add_prepared(&plot, false).unwrap();
    }
    take(&reps);
    let t0 = chrono::DateTime::parse_from_rfc3339("2024-05-01T00:00:00Z")
        .unwrap()
        .with_timezone(&chrono::Utc);
    for i in 0..60 {
        let id = format!("gen-{i:03}");
        let lon = -10.0 + f64::from(i) * 0.25;
        let span = (i % 7 != 0).then(|| {
            let s = t0 + chrono::Duration::hours(i64::from(i) * 5);
            (s, s + chrono::Duration::hours(3))
        });
        let role = if i % 3 == 0 { "submarine" } else { "frigate" };
        let item = demo::item_with_extent(
            &id,
            &format!("Exercise Generated {i} — Leg {}", i % 4),
            &format!("Generated plot {i} of the parity test, 50% of it in the north_east"),
            &["generated", if i % 2 == 0 { "even" } else { "odd" }],
            json!([{"id": format!("P{i}"), "name": format!("HMS Gen {i}"), "vessel_role": role}]),
            Some([lon, 50.0, lon + 0.5, 51.0]),
            span,
        );
        plots.push((
            id,
            item,
            json!({"type": "FeatureCollection", "features": []}),
        ));
    }
    plots.sort_by(|a, b| a.0.cmp(&b.0));
    let mut store = StacStore::create("debrief", dir, "parity").unwrap();
    for (id, item, features) in &plots {
        store.add_item(id, item, features).unwrap();
    }
    store
}

/// Every `debrief_searchPlots` input the eval scenarios replay.
fn scenario_searches() -> Vec<Value> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../eval/scenarios");
    let mut out = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let doc: toml::Value = toml::from_str(&text).unwrap();
        for r in doc
            .get("replay")
            .and_then(|r| r.as_array())
            .into_iter()
            .flatten()
        {
            if r.get("tool").and_then(|t| t.as_str()) == Some("debrief_searchPlots") {
                out.push(serde_json::to_value(r.get("input").unwrap()).unwrap());
            }
        }
    }
    assert!(out.len() >= 5, "the scenarios' searches: {out:?}");
    out
}

/// The search tests' queries and more: phrases, words in any order, platforms, time, bbox,
/// undated plots, the cap and bad input.
fn more_searches() -> Vec<Value> {
    vec![
        json!({}),
        json!({"text": "western approaches"}),
        json!({"text": "prosecution"}),
        json!({"platforms": ["submarine"], "startTime": "2026-03-02T01:00:00Z"}),
        json!({"startTime": "2026-03-01", "endTime": "2026-03-01"}),
        json!({"bbox": [100.0, 10.0, 101.0, 11.0]}),
        json!({"text": "alpha day-1"}),
        json!({"text": "day 1 alpha"}),
        json!({"text": "alph"}),
        json!({"text": "ha day"}),
        json!({"text": "Alpha — Day 1"}),
        json!({"text": "50%"}),
        json!({"text": "north_east"}),
        json!({"text": "—"}),
        json!({"text": "generated"}),
        json!({"text": "generated", "platforms": ["submarine"]}),
        json!({"text": "generated leg 2", "startTime": "2024-05-03", "endTime": "2024-05-09"}),
        json!({"platforms": ["nelson", "gen 1"]}),
        json!({"platforms": ["P4"]}),
        json!({"bbox": [-9.0, 50.2, -6.0, 50.8]}),
        json!({"bbox": [-9.0, 50.2, -6.0, 50.8], "startTime": "2024-05-02T00:00:00Z"}),
        json!({"bbox": [-10.0, 51.0, -9.9, 52.0]}),
        json!({"endTime": "1995-12-12T06:00:00Z"}),
        json!({"startTime": "March"}),
        json!({"startTime": "2026-03-02", "endTime": "2026-03-01"}),
    ]
}

fn debrief(session: Session) -> Debrief {
    Debrief::new(
        Arc::new(Mutex::new(session)),
        Arc::new(Registry::new()),
        Arc::new(MemorySink::default()),
        Settings::default(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn searches_open_and_saves_match_the_folder_store() {
    let Some(pg) = Pgstac::start(true) else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let folder = parity_folder(&work.path().join("folder"));
    let mut api = api_store(&pg, &work.path().join("mirror"));
    // Small pages, so searches follow the `next` link several times.
    api.page_limit = 7;
    assert!(api.transactions && api.filter, "{api:?}");
    assert_eq!(api.id, "debrief", "the store id is the collection's name");
    for e in &folder.items {
        let id = api.put_folder_plot(&folder, e).unwrap();
        assert_eq!(id, e.plot_id, "the same plot id in both backends");
    }

    // The search function: identical results for every query, errors included.
    let queries: Vec<Value> = scenario_searches()
        .into_iter()
        .chain(more_searches())
        .collect();
    let mut matched = 0;
    for q in &queries {
        let query = SearchQuery {
            text: q["text"].as_str().map(str::to_owned),
            start_time: q["startTime"].as_str().map(str::to_owned),
            end_time: q["endTime"].as_str().map(str::to_owned),
            platforms: q["platforms"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|p| p.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default(),
            bbox: q["bbox"].as_array().map(|b| {
                let v: Vec<f64> = b.iter().filter_map(Value::as_f64).collect();
                [v[0], v[1], v[2], v[3]]
            }),
            limit: None,
        };
        let local = search(std::slice::from_ref(&folder), &query);
        let remote = search_catalogues(&[], std::slice::from_ref(&api), &query);
        match (&local, &remote) {
            (Ok(l), Ok(r)) => {
                assert_eq!(l, r, "query {q}");
                matched += usize::from(l.total > 0);
            }
            (Err(l), Err(r)) => assert_eq!(l.to_string(), r.to_string(), "query {q}"),
            _ => panic!("query {q}: folder {local:?} vs API {remote:?}"),
        }
        if q.as_object().unwrap().is_empty() {
            let l = local.unwrap();
            assert_eq!((l.total, l.matches.len()), (folder.items.len(), 50));
            assert!(
                l.more
                    .unwrap()
                    .starts_with(&format!("{} more not shown", folder.items.len() - 50))
            );
        }
    }

    assert!(matched >= 20, "most queries match something: {matched}");

    // Issue 35: a search reads one page (the cap and one more) and asks pgstac for the count
    // (`context: auto` through the request's `conf`): exact below the threshold, the planner's
    // estimate above it, said so.
    let fresh = api_store(&pg, &work.path().join("mirror4"));
    let every = Criteria::new(&SearchQuery::default()).unwrap();
    let page = fresh.search_page(&every, 50).unwrap();
    assert_eq!(page.requests, 2, "one page and the count");
    assert_eq!(page.entries.len(), 51);
    assert_eq!(
        (page.total, page.total_is),
        (folder.items.len(), TotalIs::Exact)
    );
    // Statistics for the planner's estimate (pgstac counts exactly below the threshold, here 1),
    // and pgstac's cached estimates dropped (it keeps a query's first estimate for good), as
    // `toolgate catalog load --pgstac` does after a load.
    let dsn = pg.dsn.clone();
    let analyzed = Command::new("psql")
        .args([
            dsn.as_str(),
            "-qc",
            "ANALYZE pgstac.items; DELETE FROM pgstac.search_wheres",
        ])
        .status()
        .unwrap();
    assert!(analyzed.success());
    let mut estimating = fresh.clone();
    estimating.exact_count_below = 1;
    let r = search_catalogues(&[], &[estimating], &SearchQuery::default()).unwrap();
    assert_eq!(r.total_is, TotalIs::About, "{r:?}");
    assert!(
        r.more.as_deref().unwrap().starts_with("about ")
            && r.more
                .as_deref()
                .unwrap()
                .contains("the catalogue server's estimate"),
        "{:?}",
        r.more
    );

    // debrief_searchPlots through the agent tool: identical replies (open included).
    for q in &queries {
        let local = debrief(Session::new(vec![folder.clone()]));
        let remote = debrief(Session::new(Vec::new()).with_api_stores(vec![api.clone()]));
        let l = local.search_plots(q).await;
        let r = remote.search_plots(q).await;
        assert_eq!(l.text, r.text, "debrief_searchPlots {q}");
        assert_eq!(l.status, r.status, "debrief_searchPlots {q}");
        let lopen: Vec<String> = local
            .session()
            .open_plots()
            .iter()
            .map(|p| p.id.clone())
            .collect();
        let ropen: Vec<String> = remote
            .session()
            .open_plots()
            .iter()
            .map(|p| p.id.clone())
            .collect();
        assert_eq!(lopen, ropen, "opened by {q}");
    }

    // Opening: the same features and summary.
    let plot = "stac://debrief/alpha-day1/item.json";
    let local = debrief(Session::new(vec![folder.clone()]));
    let remote = debrief(Session::new(Vec::new()).with_api_stores(vec![api.clone()]));
    local.open_plot(plot).await.unwrap();
    remote.open_plot(plot).await.unwrap();
    let summary = json!({"plotId": plot});
    assert_eq!(
        local.summarize(&summary).text,
        remote.summarize(&summary).text
    );

    // Saving: an edit saved through the API session is on the server for the next reader.
    {
        rename_first(&mut remote.session(), plot, "Renamed through the API");
    }
    remote.save_plot(plot).await.unwrap();
    let fetched = api.fetch(plot).unwrap();
    let fc: Value = serde_json::from_slice(&fetched.features).unwrap();
    assert_eq!(
        fc["features"][0]["properties"]["name"],
        "Renamed through the API"
    );
    let again = debrief(
        Session::new(Vec::new())
            .with_api_stores(vec![api_store(&pg, &work.path().join("mirror2"))]),
    );
    again.open_plot(plot).await.unwrap();
    assert_eq!(
        again.session().plot(plot).unwrap().doc.features()[0]["properties"]["name"],
        "Renamed through the API"
    );
    // The saved item is still found by the same searches (its derived properties rewritten).
    let r = remote.search_plots(&json!({"text": "alpha day-1"})).await;
    assert!(r.text.contains(plot), "{}", r.text);

    // Someone else's change on the server since this session opened the plot: a save is
    // refused (as the folder store refuses over a changed file) and the server keeps theirs.
    let other = api_store(&pg, &work.path().join("mirror3"));
    let theirs = other.fetch(plot).unwrap();
    let mut fc: Value = serde_json::from_slice(&theirs.features).unwrap();
    fc["features"][0]["properties"]["name"] = json!("Their change");
    let bytes = serde_json::to_vec(&fc).unwrap();
    other.put_plot(&theirs.item, &bytes).unwrap();
    {
        rename_first(&mut remote.session(), plot, "Our second change");
    }
    let e = remote.save_plot(plot).await.unwrap_err().to_string();
    assert!(
        e.contains("changed on the server since it was opened"),
        "{e}"
    );
    let now: Value = serde_json::from_slice(&api.fetch(plot).unwrap().features).unwrap();
    assert_eq!(now["features"][0]["properties"]["name"], "Their change");
    assert!(
        remote.session().plot(plot).unwrap().doc.is_dirty(),
        "our edits are kept"
    );

    // An unknown plot says so, as the folder store does.
    let e = remote
        .open_plot("stac://debrief/nope/item.json")
        .await
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("No plot \"stac://debrief/nope/item.json\""),
        "{e}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_transactions_the_catalogue_is_read_only_and_foreign_assets_are_refused() {
    let Some(pg) = Pgstac::start(false) else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let api = api_store(&pg, &work.path().join("mirror"));
    assert!(!api.transactions);
    let item = demo::item_with_extent("p", "P", "", &[], json!([]), None, None);
    let e = api.put_plot(&item, b"{}").unwrap_err().to_string();
    assert!(
        e.contains("is read-only") && e.contains("Transactions extension"),
        "{e}"
    );

    // Items put straight into pgstac (as `pypgstac load` does): one plot's asset on another
    // host, one's not over http.
    let dsn = pg.dsn.clone();
    let mut ndjson = String::new();
    for (id, href) in [
        ("elsewhere", "http://example.com/features.geojson"),
        ("local-file", "file:///etc/passwd"),
    ] {
        let mut it = toolgate_plot::stac_api::item_for_api(
            &demo::item_with_extent(id, id, "", &[], json!([]), Some([0.0, 0.0, 1.0, 1.0]), None),
            "debrief",
            href,
        )
        .unwrap();
        it["assets"]["features"]["href"] = json!(href);
        ndjson.push_str(&serde_json::to_string(&it).unwrap());
        ndjson.push('\n');
    }
    let collection = json!({"type": "Collection", "stac_version": "1.0.0", "id": "debrief",
        "description": "d", "license": "other", "links": [],
        "extent": {"spatial": {"bbox": [[-180, -90, 180, 90]]}, "temporal": {"interval": [[null, null]]}}});
    std::fs::write(work.path().join("c.json"), collection.to_string()).unwrap();
    std::fs::write(work.path().join("i.ndjson"), ndjson).unwrap();
    let pypgstac = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.tools/venv/bin/pypgstac");
    for (table, file) in [("collections", "c.json"), ("items", "i.ndjson")] {
        let st = Command::new(&pypgstac)
            .args(["load", table, "--dsn", &dsn, "--method", "upsert"])
            .arg(work.path().join(file))
            .status()
            .unwrap();
        assert!(st.success(), "pypgstac load {table}");
    }
    let session = debrief(Session::new(Vec::new()).with_api_stores(vec![api.clone()]));
    let r = session.search_plots(&json!({})).await;
    assert!(r.text.contains("\"total\":2"), "{}", r.text);
    for id in ["elsewhere", "local-file"] {
        let plot = format!("stac://debrief/{id}/item.json");
        let e = session.open_plot(&plot).await.unwrap_err().to_string();
        assert!(
            e.contains("is not fetched") && e.contains("own origin"),
            "{e}"
        );
    }
}

/// Renames the plot's first feature as one unsaved edit.
fn rename_first(s: &mut toolgate_plot::session::Session, plot: &str, name: &str) {
    let mut first = s.plot(plot).unwrap().doc.features()[0].clone();
    first["properties"]["name"] = json!(name);
    let change = toolgate_core::ChangeSet {
        label: "rename".to_owned(),
        edits: vec![toolgate_core::Edit::Upsert {
            id: first["id"].as_str().unwrap().to_owned(),
            item: first,
        }],
    };
    let version = s.plot(plot).unwrap().doc.version();
    s.apply(plot, &change, version).unwrap();
}
