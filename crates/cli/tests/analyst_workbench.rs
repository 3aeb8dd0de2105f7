//! Issue 32 through the real binary: legacy Debrief's own sample file added to the plot that
//! holds its tracks (`import --into`, short plot names, your plots kept apart from the demo);
//! refusals in the CLI's own words; series and lists as tables no wider than the terminal.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::Path;
use std::process::Output;

use support::toolgate_with_data as toolgate;

fn rep_fixture(rel: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../rep/tests/fixtures/rep")
        .join(rel)
        .to_string_lossy()
        .into_owned()
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn features(path: &Path) -> Vec<serde_json::Value> {
    let fc: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    fc["features"].as_array().unwrap().clone()
}

/// Every plot id a catalogue folder's root catalog links to.
fn linked_items(store: &Path) -> Vec<String> {
    let catalog: serde_json::Value =
        serde_json::from_slice(&std::fs::read(store.join("catalog.json")).unwrap()).unwrap();
    catalog["links"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["rel"] == "item")
        .map(|l| l["href"].as_str().unwrap().to_owned())
        .collect()
}

/// Two boats as one plot of your own (no --store), then legacy Debrief's `sensor_arcs.rep`
/// (`;SENSORARC` without the colon; arcs of NELSON and COLLINGWOOD) added to it by its short
/// name: every arc is imported and attached to its track, the demo store is untouched.
#[test]
fn legacy_sensor_arcs_join_the_plot_that_has_their_tracks() {
    let d = tempfile::tempdir().unwrap();
    let data = d.path();
    let o = toolgate(
        data,
        &[
            "import",
            &rep_fixture("valid/boat1.rep"),
            &rep_fixture("valid/boat2.rep"),
            "--plot",
            "Exercise",
        ],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    assert!(
        out.starts_with("imported boat1.rep, boat2.rep → stac://plots/exercise/item.json"),
        "{out}"
    );
    // Your plots, not the demo's.
    assert_eq!(linked_items(&data.join("plots")), ["./exercise/item.json"]);

    // The sample file alone still imports (every line is read now) …
    let arcs = rep_fixture("legacy/sensor_arcs.rep");
    let o = toolgate(data, &["import", &arcs]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    assert!(!err.contains("not imported"), "{err}");
    assert!(out.contains(": 46 SENSOR_ARC"), "{out}");

    // … and added to the plot with the tracks, named by its short name, its arcs are theirs.
    let o = toolgate(data, &["import", &arcs, "--into", "exercise"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [
            "added sensor_arcs.rep → stac://plots/exercise/item.json (\"Exercise\"): 46 SENSOR_ARC",
            "  attached to the plot's tracks: NELSON 43, COLLINGWOOD 3",
        ]
    );
    assert!(err.is_empty(), "{err}");
    let fs = features(&data.join("plots/exercise/features.geojson"));
    assert_eq!(fs.len(), 48);
    let on = |track: &str| {
        fs.iter()
            .filter(|f| {
                f["properties"]["kind"] == "SENSOR_ARC" && f["properties"]["track_id"] == track
            })
            .count()
    };
    assert_eq!((on("track-nelson"), on("track-collingwood")), (43, 3));

    // The plot opens by its short name wherever a plot is taken.
    let o = toolgate(data, &["plot", "summary", "--plot", "Exercise"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    assert!(out.contains("SENSOR_ARC (46)"), "{out}");
    let o = toolgate(data, &["plot", "summary", "--plot", "sensor_arcs"]);
    assert!(o.status.success(), "{:?}", text(&o));

    // The demo store holds only the demo's plots.
    let demo = linked_items(&data.join("demo-store"));
    assert!(
        demo.iter()
            .all(|h| !h.contains("exercise") && !h.contains("sensor")),
        "{demo:?}"
    );
}

#[test]
fn into_a_plot_that_is_not_there_or_is_the_demos_changes_nothing() {
    let d = tempfile::tempdir().unwrap();
    let data = d.path();
    let arcs = rep_fixture("legacy/sensor_arcs.rep");
    let o = toolgate(data, &["import", &arcs, "--into", "nowhere"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(
        err.contains("no plot called \"nowhere\"") && err.contains("--plot NAME"),
        "{err}"
    );
    // A demo plot is not changed by an import: the person is told how to make their own.
    let o = toolgate(data, &["import", &arcs, "--into", "alpha-day1"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(err.contains("is a demo plot"), "{err}");
    let o = toolgate(data, &["import", &arcs, "--into", "x", "--plot", "y"]);
    assert_eq!(o.status.code(), Some(2), "{:?}", text(&o));
    // An unknown short name for plot summary says how to find one.
    let o = toolgate(data, &["plot", "summary", "--plot", "nowhere"]);
    let (out, err) = text(&o);
    assert!(!o.status.success(), "{out}{err}");
    assert!(
        err.contains("no plot is called \"nowhere\"") && err.contains("toolgate catalog search"),
        "{err}"
    );
}
