//! Issue 17 items 2 and 6 through the real binary: several REP files as one plot, a replace
//! refused unless asked (store byte-identical), saved edits named before they go, no store
//! created by a failed import; and `catalog search`, `plot summary`, `plot run` written for a
//! person (tables and lines), with `--json` for scripts.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::{Path, PathBuf};
use std::process::Output;

fn rep_fixture(rel: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../rep/tests/fixtures/rep")
        .join(rel)
        .to_string_lossy()
        .into_owned()
}

use support::toolgate_with_data as toolgate;

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Every file under `root` with its bytes, sorted by path.
fn tree(root: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_owned()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push((p.clone(), std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

fn features(path: &Path) -> Vec<serde_json::Value> {
    let fc: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    fc["features"].as_array().unwrap().clone()
}

#[test]
fn several_files_make_one_plot_and_a_replace_is_refused_unless_asked() {
    let d = tempfile::tempdir().unwrap();
    let store = d.path().join("store");
    let s = store.to_str().unwrap();
    let (b1, b2, nar) = (
        rep_fixture("valid/boat1.rep"),
        rep_fixture("valid/boat2.rep"),
        rep_fixture("valid/narrative.rep"),
    );
    let o = toolgate(
        d.path(),
        &[
            "import",
            "--store",
            s,
            &b1,
            &b2,
            &nar,
            "--plot",
            "Saxon Warrior",
        ],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [
            "imported boat1.rep, boat2.rep, narrative.rep → stac://store/saxon-warrior/item.json: \
             2 TRACK, 19 NARRATIVE",
            "  boat1.rep: 1 TRACK (402 positions)",
            "  boat2.rep: 1 TRACK (403 positions)",
            "  narrative.rep: 19 NARRATIVE (0 positions)",
        ]
    );
    let fs = features(&store.join("saxon-warrior/features.geojson"));
    assert_eq!(fs.len(), 21);
    let tracks: Vec<&str> = fs
        .iter()
        .filter(|f| f["properties"]["kind"] == "TRACK")
        .map(|f| f["properties"]["platform_id"].as_str().unwrap())
        .collect();
    assert_eq!(tracks, ["NELSON", "COLLINGWOOD"]);
    let catalog: serde_json::Value =
        serde_json::from_slice(&std::fs::read(store.join("catalog.json")).unwrap()).unwrap();
    let items = catalog["links"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["rel"] == "item")
        .count();
    assert_eq!(items, 1, "one plot, not three");

    // The same name again: refused with exit 3, and the store is byte-identical.
    let before = tree(&store);
    let o = toolgate(
        d.path(),
        &["import", "--store", s, &b1, "--plot", "Saxon Warrior"],
    );
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(3), "{out}{err}");
    assert!(
        err.contains("a plot named \"Saxon Warrior\" already exists")
            && err.contains("Pass --replace"),
        "{err}"
    );
    assert!(!err.contains("saved"), "{err}");
    assert_eq!(tree(&store), before, "a refused import changes nothing");

    // An analyst edits and saves the plot; a replace now says the edits would be lost.
    let plot = "stac://store/saxon-warrior/item.json";
    let o = toolgate(
        d.path(),
        &[
            "plot",
            "run",
            "set-track-color",
            "--store",
            s,
            "--plot",
            plot,
            "-p",
            "color=red",
            "--feature",
            "NELSON",
            "--yes",
            "--save",
        ],
    );
    assert!(o.status.success(), "{:?}", text(&o));
    let before = tree(&store);
    let o = toolgate(
        d.path(),
        &["import", "--store", s, &b1, &b2, "--plot", "Saxon Warrior"],
    );
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(3), "{out}{err}");
    assert!(
        err.contains("with edits saved since it was imported"),
        "{err}"
    );
    assert_eq!(tree(&store), before);
    let o = toolgate(
        d.path(),
        &[
            "import",
            "--store",
            s,
            &b1,
            &b2,
            "--plot",
            "Saxon Warrior",
            "--replace",
        ],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    assert!(out.contains("(replacing the plot of that name)"), "{out}");
    assert!(
        err.contains("had edits saved since it was imported; --replace discarded them"),
        "{err}"
    );
    let fs = features(&store.join("saxon-warrior/features.geojson"));
    assert_eq!(fs.len(), 2, "the replacement holds what was imported now");
    assert!(
        fs.iter()
            .all(|f| f["properties"]["style"]["line"]["color"] != "red")
    );

    // A plot per file without --plot, each refused on its own when it exists.
    let o = toolgate(d.path(), &["import", "--store", s, &b1, &nar]);
    assert!(o.status.success(), "{:?}", text(&o));
    let o = toolgate(d.path(), &["import", "--store", s, &b1]);
    assert_eq!(o.status.code(), Some(3), "{:?}", text(&o));
}

#[test]
fn a_failed_import_creates_no_store_and_writes_no_part_of_a_plot() {
    let d = tempfile::tempdir().unwrap();
    let store = d.path().join("new-store");
    let s = store.to_str().unwrap();
    let bad = rep_fixture("invalid/bad_coordinates.rep");
    let o = toolgate(d.path(), &["import", "--store", s, &bad]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(err.contains("bad_coordinates.rep:2:30"), "{err}");
    assert!(!store.join("catalog.json").exists(), "no empty catalogue");
    // One bad file in a --plot import: nothing at all is written.
    let good = rep_fixture("valid/boat1.rep");
    let o = toolgate(
        d.path(),
        &["import", "--store", s, &good, &bad, "--plot", "p"],
    );
    assert_eq!(o.status.code(), Some(1), "{:?}", text(&o));
    assert!(!store.join("catalog.json").exists());
    let missing = d.path().join("missing.rep");
    let o = toolgate(
        d.path(),
        &[
            "import",
            "--store",
            s,
            &good,
            missing.to_str().unwrap(),
            "--plot",
            "p",
        ],
    );
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        err.contains("missing.rep") && err.contains("no plot was written"),
        "{err}"
    );
    assert!(!store.exists() || tree(&store).is_empty());
}

#[test]
fn every_line_kind_imports_through_the_binary() {
    let d = tempfile::tempdir().unwrap();
    let store = d.path().join("store");
    let every = rep_fixture("kinds/every_kind.rep");
    let o = toolgate(
        d.path(),
        &["import", "--store", store.to_str().unwrap(), &every],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    for part in [
        "2 TRACK",
        "1 SENSOR_ARC",
        "2 DYNAMIC_RECT",
        "1 DYNAMIC_CIRCLE",
        "1 DYNAMIC_POLY",
        "2 TMA_SOLUTION",
        "1 WHEEL",
        "3 FORMAT",
        "3 sensor contact(s)",
    ] {
        assert!(out.contains(part), "{part}: {out}");
    }
    assert!(
        err.contains("1 line(s) of kind ;TA_COG_ABS not imported (first at line 35)"),
        "{err}"
    );
    let item: serde_json::Value =
        serde_json::from_slice(&std::fs::read(store.join("every-kind/item.json")).unwrap())
            .unwrap();
    assert_eq!(
        item["properties"]["start_datetime"],
        "1995-12-12T05:00:00+00:00"
    );
    assert_eq!(
        item["properties"]["debrief:provenance"]["sources"][0]["contacts"],
        3
    );
}

#[test]
fn catalog_search_prints_a_table_and_json_for_scripts() {
    let d = tempfile::tempdir().unwrap();
    let o = toolgate(d.path(), &["catalog", "search", "--bbox", "-5,50,0,55"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("3 plot(s) in ") && lines[0].contains("match (bbox"),
        "{out}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("TITLE ") && l.contains("PLOT ID")),
        "{out}"
    );
    let row = lines
        .iter()
        .find(|l| l.starts_with("Exercise Alpha — Day 1"))
        .unwrap();
    assert!(
        row.contains("2026-03-01 00:00 – 12:00")
            && row.contains("HMS Nelson, HMS Collingwood, Contact")
            && row.ends_with("stac://demo/alpha-day1/item.json"),
        "{row}"
    );
    assert!(!out.contains('{'), "no JSON by default: {out}");

    let o = toolgate(
        d.path(),
        &["catalog", "search", "--bbox", "-5,50,0,55", "--json"],
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["total"], 3);
    let o = toolgate(d.path(), &["catalog", "search", "--bbox", "100,10,110,20"]);
    assert!(text(&o).0.starts_with("0 plot(s)"), "{:?}", text(&o));
    let o = toolgate(d.path(), &["catalog", "search", "--bbox", "-5,50,0"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2));
    assert!(err.contains("west,south,east,north"), "{err}");
    let o = toolgate(d.path(), &["catalog", "search", "--bbox", "-5,55,0,50"]);
    assert_eq!(o.status.code(), Some(2), "south above north is refused");
}

#[test]
fn plot_summary_and_plot_run_speak_to_a_person() {
    let d = tempfile::tempdir().unwrap();
    let plot = "stac://demo/alpha-day1/item.json";
    let o = toolgate(d.path(), &["plot", "summary", "--plot", plot]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "Exercise Alpha — Day 1");
    assert_eq!(lines[1], "Time (UTC): 2026-03-01 00:00-12:00");
    assert_eq!(lines[2], "10 feature(s)");
    assert!(out.contains("\nTRACK (3)"), "{out}");
    let nelson = lines
        .iter()
        .find(|l| l.starts_with("track-nelson "))
        .unwrap();
    assert!(
        nelson.contains("HMS Nelson") && nelson.contains("NELSON"),
        "{nelson}"
    );
    assert!(!out.contains('|') && !out.contains('{'), "{out}");

    let o = toolgate(
        d.path(),
        &[
            "plot",
            "run",
            "track-stats",
            "--plot",
            plot,
            "--feature",
            "HMS Nelson",
        ],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    assert!(
        out.starts_with("Track Stats: HMS Nelson: 361 points"),
        "{out}"
    );
    assert!(out.contains("\npoint_count:      361\n"), "{out}");
    assert!(
        !out.contains("Results panel") && !out.contains('{'),
        "{out}"
    );
    let o = toolgate(
        d.path(),
        &[
            "plot",
            "run",
            "track-stats",
            "--plot",
            plot,
            "--feature",
            "HMS Nelson",
            "--json",
        ],
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["status"], "ok");
    assert_eq!(v["data"]["point_count"], 361);

    // A refusal reads as one, with what would work.
    let o = toolgate(
        d.path(),
        &[
            "plot",
            "run",
            "track-stats",
            "--plot",
            plot,
            "--feature",
            "Nobody",
        ],
    );
    let (out, _) = text(&o);
    assert_eq!(o.status.code(), Some(3));
    assert!(out.starts_with("Not run: "), "{out}");
}

/// Issue 32 item 1: `plot run` resolves and checks a tool's parameters before it asks — a time
/// nobody can place is refused with no question, a sloppy one is read on the plot's day — and
/// the question says what the edit will do in numbers.
#[test]
fn plot_run_checks_times_before_asking_and_the_question_counts_positions() {
    let d = tempfile::tempdir().unwrap();
    let plot = "stac://demo/alpha-day1/item.json";
    let trim = |start: &str, end: &str, yes: bool| {
        let (s, e) = (format!("start_time={start}"), format!("end_time={end}"));
        let mut args = vec![
            "plot",
            "run",
            "trim-track",
            "--plot",
            plot,
            "--feature",
            "HMS Nelson",
            "-p",
            &s,
            "-p",
            &e,
        ];
        if yes {
            args.push("--yes");
        }
        let o = toolgate(d.path(), &args);
        let (out, err) = text(&o);
        (o.status.code(), out, err)
    };

    // Refused before any question: exit 3, no preview, the plot's times named.
    let (code, out, err) = trim("yesterday", "2026-03-01 05:00", true);
    assert_eq!(code, Some(3), "{out}{err}");
    assert!(out.starts_with("Not run: "), "{out}");
    assert!(
        out.contains("got \"yesterday\"") && out.contains("2026-03-01 00:00–12:00 UTC"),
        "{out}"
    );
    assert!(
        !err.contains("Run Trim Track") && !err.contains("approved"),
        "no question: {err}"
    );

    // A window that keeps nothing fails before the question too.
    let (code, out, err) = trim("13:00", "14:00", true);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(!err.contains("Run Trim Track"), "no question: {err}");

    // A sloppy time is read on the plot's day; the question (no terminal here: not run, exit 4)
    // shows the values the tool gets and the positions it removes.
    let (code, out, err) = trim("01:00", "2026-03-01 05:00", false);
    assert_eq!(code, Some(4), "{out}{err}");
    assert!(
        err.contains("- start_time: 2026-03-01T01:00:00Z\n"),
        "{err}"
    );
    assert!(err.contains("- end_time: 2026-03-01T05:00:00Z\n"), "{err}");
    assert!(
        err.contains("- Effect: remove 240 of 361 positions of HMS Nelson (keep 121)\n"),
        "{err}"
    );

    // Approved, exactly that is applied.
    let (code, out, err) = trim("01:00", "2026-03-01 05:00", true);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        err.contains("- Effect: remove 240 of 361 positions"),
        "{err}"
    );
    assert!(out.contains("121"), "{out}");
}

/// Issue 32 item 3 (units): `plot run` speaks one unit setting — nautical miles and knots
/// unless `--units` (or TOOLGATE_UNITS) says otherwise — in the tool's own unit parameter and in
/// the results it prints; a unit given with -p stays.
#[test]
fn plot_run_speaks_one_unit_setting() {
    let d = tempfile::tempdir().unwrap();
    let plot = "stac://demo/alpha-day1/item.json";
    let run = |tool: &str, extra: &[&str]| {
        let mut args = vec![
            "plot",
            "run",
            tool,
            "--plot",
            plot,
            "--feature",
            "HMS Nelson",
            "--feature",
            "Contact",
        ];
        args.extend_from_slice(extra);
        let o = toolgate(d.path(), &args);
        let (out, err) = text(&o);
        assert!(o.status.success(), "{tool} {extra:?}: {out}{err}");
        out
    };
    let field = |out: &str, key: &str| -> String {
        out.lines()
            .find(|l| l.starts_with(&format!("{key}:")))
            .unwrap_or_else(|| panic!("no {key}: {out}"))
            .split_once(':')
            .unwrap()
            .1
            .trim()
            .to_owned()
    };
    // Nautical miles by default — not the yards Debrief's range-calc defaults to.
    let out = run("range-calc", &[]);
    assert!(out.starts_with("Range Calc: Calculated range: "), "{out}");
    assert_eq!(field(&out, "units"), "nm", "{out}");
    let nm: f64 = field(&out, "value").parse().unwrap();
    let out = run("range-calc", &["--units", "yd"]);
    assert_eq!(field(&out, "units"), "yds", "{out}");
    let yd: f64 = field(&out, "value").parse().unwrap();
    assert!(
        (yd / nm - 1852.0 / 0.9144).abs() < 0.1,
        "{nm} nm vs {yd} yd"
    );
    let out = run("range-calc", &["--units", "yd", "-p", "units=km"]);
    assert!(
        out.lines().next().unwrap().ends_with(" km"),
        "a unit given with -p is the tool's: {out}"
    );
    // Results printed in the setting: range-bearing's ranges, track-stats' speed.
    let out = run("range-bearing", &["--units", "m"]);
    assert!(out.contains("range_m"), "{out}");
    assert!(out.contains(" m at "), "the summary says metres: {out}");
    let o = toolgate(
        d.path(),
        &[
            "plot",
            "run",
            "track-stats",
            "--plot",
            plot,
            "--feature",
            "HMS Nelson",
            "--units",
            "m,m/s",
        ],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    assert!(out.contains("average_speed_mps:"), "{out}");
    assert!(!out.contains("average_speed_kn"), "{out}");
    let o = toolgate(
        d.path(),
        &[
            "plot",
            "run",
            "range-calc",
            "--plot",
            plot,
            "--units",
            "furlongs",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "a bad unit is a usage error");
    assert!(text(&o).1.contains("nm, yd, m or km"), "{}", text(&o).1);
}
