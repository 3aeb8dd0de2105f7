//! Issue 21 through the real binary: `--store <STAC API>` for `import`, `catalog load`,
//! `catalog search`, `plot summary` and `plot run --save`, against a private pgstac served by
//! stac-fastapi-pgstac (crates/plot/tests/support/pgstac.sh), giving the same output as a folder
//! store holding the same plots; an unreachable server says what went wrong and what works.
//! Without the backend installed the pgstac test prints why and passes, unless
//! TOOLGATE_REQUIRE_TEST_CLIENTS=1 (CI), where it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::Path;
use std::process::Output;

fn rep_fixture(rel: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../rep/tests/fixtures/rep/valid")
        .join(rel)
        .to_string_lossy()
        .into_owned()
}

use support::toolgate_with_data as toolgate;
use toolgate_test_support::pg::Pgstac;

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

#[test]
fn the_cli_on_a_stac_api_matches_the_folder_store() {
    let Some(pg) = Pgstac::start(true) else {
        return;
    };
    // The stac+api:// spelling of the same server.
    let alias = pg.url.replacen("http://", "stac+api://", 1);
    let work = tempfile::tempdir().unwrap();
    let data = work.path().join("data");
    // A folder store named like the API's collection, so plot ids are the same.
    let folder = work.path().join("debrief");
    let folder_s = folder.to_string_lossy().into_owned();
    let (b1, b2) = (rep_fixture("boat1.rep"), rep_fixture("boat2.rep"));
    for store in [&folder_s, &pg.url] {
        let out = ok(&toolgate(&data, &["import", "--store", store, &b1, &b2]));
        assert!(out.contains("stac://debrief/boat1/item.json"), "{out}");
        // A second import of the same name is refused (exit 3) in both.
        let again = toolgate(&data, &["import", "--store", store, &b1]);
        assert_eq!(again.status.code(), Some(3), "{again:?}");
    }
    // The demo plots: loaded into the API, imported into the folder from the demo store.
    let out = ok(&toolgate(
        &data,
        &["catalog", "load", "--store", &alias, "--demo"],
    ));
    assert!(out.contains("loaded 3 plot(s)"), "{out}");
    let demo = data.join("demo-store");
    for e in std::fs::read_dir(&demo).unwrap() {
        let e = e.unwrap();
        if e.path().join("item.json").exists() {
            let item: serde_json::Value =
                serde_json::from_slice(&std::fs::read(e.path().join("item.json")).unwrap())
                    .unwrap();
            let features: serde_json::Value =
                serde_json::from_slice(&std::fs::read(e.path().join("features.geojson")).unwrap())
                    .unwrap();
            let mut s = toolgate_plot::store::StacStore::open("debrief", &folder).unwrap();
            s.add_item(&e.file_name().to_string_lossy(), &item, &features)
                .unwrap();
        }
    }
    // Identical search output (JSON and the table), for several queries.
    for q in [
        vec![],
        vec!["--text", "boat"],
        vec!["--text", "alpha day-1"],
        vec!["--platform", "submarine", "--start", "2026-03-02T01:00:00Z"],
        vec!["--bbox", "-5,50,0,55"],
    ] {
        let run = |store: &str, json: bool| {
            let mut args = vec!["catalog", "search", "--store", store];
            args.extend(q.iter().copied());
            if json {
                args.push("--json");
            }
            ok(&toolgate(&data, &args))
        };
        let (l, r) = (run(&folder_s, true), run(&pg.url, true));
        let (mut l, mut r): (serde_json::Value, serde_json::Value) = (
            serde_json::from_str(&l).unwrap(),
            serde_json::from_str(&r).unwrap(),
        );
        // Folder order is catalogue order, the API's item-id order: compare as sets.
        for v in [&mut l, &mut r] {
            v["matches"]
                .as_array_mut()
                .unwrap()
                .sort_by_key(|m| m["plotId"].as_str().unwrap().to_owned());
        }
        assert_eq!(l, r, "catalog search {q:?}");
        // The table for a person: the same rows (the first line names the store).
        let rows = |t: String| {
            let mut lines: Vec<String> = t.lines().skip(1).map(str::to_owned).collect();
            lines.sort();
            lines
        };
        let (lt, rt) = (run(&folder_s, false), run(&pg.url, false));
        assert!(rt.contains(" match ("), "{rt}");
        assert_eq!(rows(lt), rows(rt), "catalog search {q:?} (table)");
    }
    // The same summary.
    let plot = "stac://debrief/boat1/item.json";
    let summary = |store: &str| {
        ok(&toolgate(
            &data,
            &["plot", "summary", "--store", store, "--plot", plot],
        ))
    };
    assert_eq!(summary(&folder_s), summary(&pg.url));
    // An edit saved through the API is read back by the next command.
    let run = toolgate(
        &data,
        &[
            "plot",
            "run",
            "set-track-color",
            "--store",
            &pg.url,
            "--plot",
            plot,
            "--feature",
            "NELSON",
            "-p",
            "color=#123456",
            "--yes",
            "--save",
        ],
    );
    let out = ok(&run) + &String::from_utf8_lossy(&run.stderr);
    assert!(
        out.contains("Saved stac://debrief/boat1/item.json"),
        "{out}"
    );
    let json = ok(&toolgate(
        &data,
        &[
            "plot", "summary", "--store", &alias, "--plot", plot, "--json",
        ],
    ));
    let fresh = work.path().join("fresh-data");
    let again = ok(&toolgate(
        &fresh,
        &[
            "plot", "summary", "--store", &pg.url, "--plot", plot, "--json",
        ],
    ));
    assert_eq!(json, again, "a fresh mirror reads the saved plot");
    let asset =
        std::fs::read_to_string(pg.dir().join("assets/debrief/boat1/features.geojson")).unwrap();
    assert!(
        asset.contains("#123456"),
        "the saved colour is on the server"
    );
}

#[test]
fn an_unreachable_api_says_what_went_wrong_and_what_works() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let data = tempfile::tempdir().unwrap();
    let o = toolgate(
        data.path(),
        &[
            "catalog",
            "search",
            "--store",
            &format!("stac+api://127.0.0.1:{port}/stac"),
        ],
    );
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!(
            "could not reach the STAC API at http://127.0.0.1:{port}/stac/conformance"
        )),
        "{err}"
    );
    assert!(err.contains("catalogue folder"), "{err}");
    let o = toolgate(
        data.path(),
        &["catalog", "load", "--store", data.path().to_str().unwrap()],
    );
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("catalog load writes into a STAC API"),
        "{o:?}"
    );
}
