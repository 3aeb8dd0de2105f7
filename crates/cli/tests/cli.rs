//! The real binary, end to end: --version, tools list, import, catalog search, plot summary,
//! plot run (confirm/save rules), demo.
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(clippy::disallowed_methods)]

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../rep/tests/fixtures/rep")
}

use support::toolgate_with_data as toolgate;

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn version_and_tools_list() {
    let d = tempfile::tempdir().unwrap();
    let o = toolgate(d.path(), &["--version"]);
    assert!(o.status.success());
    assert!(text(&o).0.starts_with("toolgate "));
    let o = toolgate(d.path(), &["tools", "list", "--json"]);
    assert!(o.status.success(), "{:?}", text(&o));
    let manifest: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let tools = manifest.as_array().unwrap();
    assert!(tools.len() >= 15);
    let stc = tools
        .iter()
        .find(|t| t["name"] == "set-track-color")
        .unwrap();
    assert_eq!(stc["effect"], "mutating");
    assert_eq!(stc["parameters"]["required"][0], "color");
    let o = toolgate(d.path(), &["tools", "list", "--markdown"]);
    let md = text(&o).0;
    assert!(
        md.contains("## `trim-track`") && md.contains("(**modifies**)"),
        "{md}"
    );
    // TOOLGATE_DISABLE hides a tool everywhere
    let o = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["tools", "list", "--json"])
        .env("TOOLGATE_DATA_DIR", d.path())
        .env("TOOLGATE_DISABLE", "set-*")
        .env("TOOLGATE_CONFIG", d.path().join("none.toml"))
        .output()
        .unwrap();
    let manifest: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(
        manifest
            .as_array()
            .unwrap()
            .iter()
            .all(|t| !t["name"].as_str().unwrap().starts_with("set-"))
    );
}

#[test]
fn import_valid_files_and_refuse_invalid_ones_writing_nothing() {
    let d = tempfile::tempdir().unwrap();
    let store = d.path().join("store");
    let valid: Vec<String> = ["boat1.rep", "boat2.rep", "narrative.rep"]
        .iter()
        .map(|f| {
            fixtures()
                .join("valid")
                .join(f)
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    let mut args = vec!["import", "--store", store.to_str().unwrap()];
    args.extend(valid.iter().map(String::as_str));
    let o = toolgate(d.path(), &args);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    assert_eq!(
        out.lines().filter(|l| l.starts_with("imported ")).count(),
        3,
        "{out}"
    );
    assert!(store.join("boat1/features.geojson").exists());
    let o = toolgate(
        d.path(),
        &[
            "catalog",
            "search",
            "--store",
            store.to_str().unwrap(),
            "--text",
            "boat1",
            "--json",
        ],
    );
    let result: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(result["total"], 1, "{result}");
    assert_eq!(
        result["matches"][0]["plotId"],
        "stac://store/boat1/item.json"
    );

    let before: Vec<_> = std::fs::read_dir(&store)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    let catalog_before = std::fs::read(store.join("catalog.json")).unwrap();
    for (file, expect) in [
        (
            "bad_coordinates.rep",
            "bad_coordinates.rep:2:30: invalid latitude degrees \"91\"",
        ),
        (
            "bad_timestamp.rep",
            "bad_timestamp.rep:2:3: invalid month \"13\"",
        ),
        (
            "truncated.rep",
            "truncated.rep:1:53: missing longitude seconds",
        ),
    ] {
        let path = fixtures().join("invalid").join(file);
        let o = toolgate(
            d.path(),
            &[
                "import",
                "--store",
                store.to_str().unwrap(),
                path.to_str().unwrap(),
            ],
        );
        assert!(!o.status.success());
        let (_, err) = text(&o);
        assert!(err.contains(expect), "{err}");
    }
    let after: Vec<_> = std::fs::read_dir(&store)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        before.len(),
        after.len(),
        "nothing written for a failed file"
    );
    assert_eq!(
        std::fs::read(store.join("catalog.json")).unwrap(),
        catalog_before
    );
}

#[test]
fn plot_run_saves_only_when_a_person_says_so() {
    let d = tempfile::tempdir().unwrap();
    let plot = "stac://demo/alpha-day1/item.json";
    let file = d.path().join("demo-store/alpha-day1/features.geojson");
    // summary creates the demo store
    let o = toolgate(d.path(), &["plot", "summary", "--plot", plot, "--json"]);
    assert!(o.status.success(), "{:?}", text(&o));
    let summary: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(summary["title"], "Exercise Alpha — Day 1");
    let original = std::fs::read(&file).unwrap();

    // no terminal, no --yes: declined, nothing written
    let o = toolgate(
        d.path(),
        &[
            "plot",
            "run",
            "set-track-color",
            "--plot",
            plot,
            "-p",
            "color=red",
            "--feature",
            "Contact",
        ],
    );
    let (out, err) = text(&o);
    assert!(
        err.contains("Run Set Track Color on Exercise Alpha — Day 1")
            && err.contains("Target: Contact"),
        "{err}"
    );
    // Nobody was asked (no terminal): the message says so and what would work.
    assert!(
        out.contains("there is no terminal to ask on") && out.contains("Pass --yes"),
        "{out}"
    );
    assert!(!out.contains("analyst"), "{out}");
    assert_eq!(o.status.code(), Some(4), "a decline has its own exit code");
    assert_eq!(std::fs::read(&file).unwrap(), original);

    // refusals exit 3, typed (not from the wording); nothing written
    for (args, needle) in [
        (
            // a mutation with no target named and nothing selected is not guessed (the
            // refusal names the command line's flags, issue 32 item 4)
            vec!["-p", "color=red"],
            "toolgate does not guess",
        ),
        (
            vec!["-p", "colour=red", "--scope", "all"],
            "unknown parameter \"colour\"",
        ),
        (
            vec!["-p", "color=red", "--feature", "Nobody"],
            "Could not find the features",
        ),
    ] {
        let mut full = vec!["plot", "run", "set-track-color", "--plot", plot, "--yes"];
        full.extend(args);
        let o = toolgate(d.path(), &full);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(3), "{full:?}: {out}{err}");
        assert!(out.contains(needle), "{full:?}: {out}");
    }
    let o = toolgate(d.path(), &["plot", "run", "make-it-pretty", "--plot", plot]);
    assert_eq!(o.status.code(), Some(3), "{:?}", text(&o));
    assert_eq!(std::fs::read(&file).unwrap(), original);

    // --yes without --save: applied in memory, discarded at exit
    let o = toolgate(
        d.path(),
        &[
            "plot",
            "run",
            "set-track-color",
            "--plot",
            plot,
            "-p",
            "color=red",
            "--feature",
            "Contact",
            "--yes",
        ],
    );
    let (out, err) = text(&o);
    assert!(out.contains("Applied Set Track Color"), "{out}{err}");
    assert!(err.contains("Not saved"), "{err}");
    assert_eq!(std::fs::read(&file).unwrap(), original);

    // --yes --save: written
    let o = toolgate(
        d.path(),
        &[
            "plot",
            "run",
            "set-track-color",
            "--plot",
            plot,
            "-p",
            "color=red",
            "--feature",
            "Contact",
            "--yes",
            "--save",
        ],
    );
    assert!(o.status.success(), "{:?}", text(&o));
    let saved: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let contact = toolgate_test_support::feature_by_id(&saved, "track-contact").unwrap();
    assert_eq!(contact["properties"]["style"]["line"]["color"], "red");

    // telemetry was written for every call, declines included
    let tel = std::fs::read_to_string(d.path().join("telemetry.jsonl")).unwrap();
    let recs: Vec<serde_json::Value> = tel
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(recs.iter().any(|r| r["confirmation"] == "declined"));
    // the telemetry outcome is the real one: declined, refused with its kind
    assert!(
        recs.iter().any(|r| r["outcome"]["status"] == "declined"),
        "{tel}"
    );
    assert!(
        recs.iter()
            .any(|r| r["outcome"]["status"] == "refused" && r["outcome"]["reason"] == "target"),
        "{tel}"
    );
    assert!(
        recs.iter().any(
            |r| r["outcome"]["status"] == "refused" && r["outcome"]["reason"] == "unknown_tool"
        ),
        "{tel}"
    );
    for r in &recs {
        assert!(
            toolgate_core::telemetry::schema_problems(r).is_empty(),
            "{r}"
        );
    }
}

#[test]
fn demo_runs_and_writes_nothing() {
    let d = tempfile::tempdir().unwrap();
    let o = toolgate(d.path(), &["demo"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    assert!(
        out.contains("Applied Set Track Color to 1 feature(s)"),
        "{out}"
    );
    assert!(
        out.contains("verified by hashing every file before and after"),
        "{out}"
    );
    assert!(out.contains("Unknown tool id \"make-it-pretty\""));
}

/// Issue 17: REP line kinds toolgate cannot import are reported, never dropped silently; a
/// file of nothing but such lines is refused (not an empty plot with a made-up date); a file
/// without times is undated; Windows-1252 text round-trips into the features.
#[test]
fn import_reports_unhandled_line_kinds_refuses_nothing_and_decodes_windows_1252() {
    let d = tempfile::tempdir().unwrap();
    let store = d.path().join("store");
    let arc = ";SENSORARC: 951212 050000 951212 060000 NELSON @A -75 35 0 1000 \"fwd dyn\"";
    let mixed = d.path().join("mixed.rep");
    std::fs::write(
        &mixed,
        format!(
            "951212 050000 NELSON @A 1 0 0 N 1 0 0 E 0 0 0\n;TA_COG_ABS: x\n;TRACKSPLIT x\n{arc}\n\
             ;ta_cog_abs: y\n;; comment\n"
        ),
    )
    .unwrap();
    let arcs = d.path().join("arcs.rep");
    std::fs::write(&arcs, format!("{arc}\n").repeat(47)).unwrap();
    let dynamic = d.path().join("dynamic.rep");
    std::fs::write(&dynamic, ";TA_MODULES: x\n".repeat(47)).unwrap();
    let latin = d.path().join("latin.rep");
    let mut bytes = b"951212 050000 NELSON @A 1 0 0 N 1 0 0 E 0 0 0\n".to_vec();
    bytes.extend(b";NARRATIVE: 951212 050000 NELSON caf\xe9 45\xb0\n");
    std::fs::write(&latin, &bytes).unwrap();
    let undated = d.path().join("undated.rep");
    std::fs::write(&undated, ";CIRCLE: @A 1 0 0 N 1 0 0 E 1000 ring\n").unwrap();

    let s = store.to_str().unwrap();
    let o = toolgate(d.path(), &["import", "--store", s, mixed.to_str().unwrap()]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    assert!(
        err.contains(
            "warning: mixed.rep: 2 line(s) of kind ;TA_COG_ABS not imported (first at line 2)"
        ),
        "{err}"
    );
    assert!(
        err.contains(
            "warning: mixed.rep: 1 line(s) of kind ;TRACKSPLIT not imported (first at line 3)"
        ),
        "{err}"
    );
    assert_eq!(err.matches("not imported").count(), 2, "{err}");

    // A file of 47 sensor arcs is 47 SENSOR_ARC features dated by the file (1995).
    let o = toolgate(d.path(), &["import", "--store", s, arcs.to_str().unwrap()]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    assert!(!err.contains("not imported"), "{err}");
    let features: serde_json::Value =
        serde_json::from_slice(&std::fs::read(store.join("arcs/features.geojson")).unwrap())
            .unwrap();
    let kinds: Vec<_> = features["features"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["properties"]["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["SENSOR_ARC"; 47]);
    let item: serde_json::Value =
        serde_json::from_slice(&std::fs::read(store.join("arcs/item.json")).unwrap()).unwrap();
    assert_eq!(
        item["properties"]["start_datetime"],
        "1995-12-12T05:00:00+00:00"
    );
    assert_eq!(
        item["properties"]["end_datetime"],
        "1995-12-12T06:00:00+00:00"
    );

    // A file of nothing toolgate can import is refused, not an empty plot.
    let o = toolgate(
        d.path(),
        &["import", "--store", s, dynamic.to_str().unwrap()],
    );
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(
        err.contains("47 line(s) of kind ;TA_MODULES not imported (first at line 1)"),
        "{err}"
    );
    assert!(err.contains("dynamic.rep: nothing to import"), "{err}");
    assert!(!store.join("dynamic").exists());
    let empty = d.path().join("empty.rep");
    std::fs::write(&empty, ";; only a comment\n").unwrap();
    let o = toolgate(d.path(), &["import", "--store", s, empty.to_str().unwrap()]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(err.contains("the file is empty or only comments"), "{err}");

    let o = toolgate(d.path(), &["import", "--store", s, latin.to_str().unwrap()]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    assert!(
        err.contains("latin.rep is not UTF-8; read it as Windows-1252"),
        "{err}"
    );
    let features = std::fs::read_to_string(store.join("latin/features.geojson")).unwrap();
    assert!(features.contains("café 45°"), "{features}");

    let o = toolgate(
        d.path(),
        &["import", "--store", s, undated.to_str().unwrap()],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    assert!(err.contains("undated.rep has no times"), "{err}");
    let item: serde_json::Value =
        serde_json::from_slice(&std::fs::read(store.join("undated/item.json")).unwrap()).unwrap();
    assert_eq!(
        item["properties"]["datetime"],
        serde_json::Value::Null,
        "{item}"
    );
    assert!(item["properties"].get("start_datetime").is_none(), "{item}");
    // The dated import keeps its own (1995) times.
    let item: serde_json::Value =
        serde_json::from_slice(&std::fs::read(store.join("mixed/item.json")).unwrap()).unwrap();
    assert_eq!(item["properties"]["datetime"], "1995-12-12T05:00:00+00:00");
}
