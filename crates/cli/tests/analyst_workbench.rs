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

/// `toolgate ARGS` as [`toolgate`] does, with `COLUMNS` set (stdout is a pipe, so that is the
/// width the output fits).
fn toolgate_columns(data: &Path, columns: usize, args: &[&str]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(args)
        .env("TOOLGATE_DATA_DIR", data)
        .env("TOOLGATE_TELEMETRY", data.join("telemetry.jsonl"))
        .env_remove("TOOLGATE_STORE")
        .env_remove("TOOLGATE_TOOLS")
        .env_remove("TOOLGATE_DISABLE")
        .env("TOOLGATE_CONFIG", data.join("no-config.toml"))
        .env("COLUMNS", columns.to_string())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

/// A plot of your own with the two boats, for the runs below.
fn boats(data: &Path) {
    let o = toolgate(
        data,
        &[
            "import",
            &rep_fixture("valid/boat1.rep"),
            &rep_fixture("valid/boat2.rep"),
            "--plot",
            "Boats",
        ],
    );
    assert!(o.status.success(), "{:?}", text(&o));
}

/// Item 2: range-bearing's 399-sample series and speed-filter's positions are tables of their
/// first and last rows with a count, and no line is wider than the terminal; `--json` keeps
/// every row.
#[test]
fn series_and_positions_print_as_tables_that_fit_the_terminal() {
    let d = tempfile::tempdir().unwrap();
    let data = d.path();
    boats(data);
    for columns in [60, 100] {
        let o = toolgate_columns(
            data,
            columns,
            &[
                "plot",
                "run",
                "range-bearing",
                "--plot",
                "boats",
                "--feature",
                "NELSON",
                "--feature",
                "COLLINGWOOD",
            ],
        );
        let (out, err) = text(&o);
        assert!(o.status.success(), "{out}{err}");
        let widest = out.lines().map(|l| l.chars().count()).max().unwrap();
        assert!(widest <= columns, "{widest} > {columns}:\n{out}");
        assert!(out.contains("\nseries (399 rows)\ntime"), "{out}");
        assert!(
            out.contains("… 387 more rows (of 399; --json for all) …"),
            "{out}"
        );
        assert!(!out.contains('{'), "{out}");
    }
    // The catalogue's table too: narrowed, its plot ids kept whole.
    let o = toolgate_columns(data, 60, &["catalog", "search"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    assert!(out.lines().all(|l| l.chars().count() <= 60), "{out}");
    assert!(
        out.contains("stac://plots/boats/item.json")
            && out.contains("stac://demo/alpha-day1/item.json"),
        "{out}"
    );
    let o = toolgate_columns(
        data,
        72,
        &[
            "plot",
            "run",
            "speed-filter",
            "--plot",
            "boats",
            "-p",
            "min_knots=3",
        ],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    assert!(out.lines().all(|l| l.chars().count() <= 72), "{out}");
    assert!(
        out.contains("\ntracks[COLLINGWOOD].positions (403 rows)\n"),
        "{out}"
    );
    assert!(
        out.contains("… 391 more rows (of 403; --json for all) …"),
        "{out}"
    );

    let o = toolgate_columns(
        data,
        60,
        &[
            "plot",
            "run",
            "range-bearing",
            "--plot",
            "boats",
            "--feature",
            "NELSON",
            "--feature",
            "COLLINGWOOD",
            "--json",
        ],
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["data"]["series"].as_array().unwrap().len(), 399);
    assert!(
        !v["text"].as_str().unwrap().contains("Results panel"),
        "the command line has no Results panel: {v}"
    );
}

/// Item 4: refusals name the CLI's flags, never the agent's parameters; a decline never tells
/// the person not to retry; after `--save` the JSON says it was saved.
#[test]
fn refusals_and_status_lines_speak_the_command_lines_words() {
    let d = tempfile::tempdir().unwrap();
    let data = d.path();
    boats(data);
    let agent_words = [
        "debrief_listTools",
        "debrief_summarizeCurrentPlot",
        "featureNames",
        "featureIds",
        "scope:\"all\"",
        "Do not retry",
        "dirty",
        "Results panel",
    ];
    let spoken = |o: &Output| {
        let (out, err) = text(o);
        for w in agent_words {
            assert!(
                !out.contains(w) && !err.contains(w),
                "{w:?} in:\n{out}{err}"
            );
        }
        // The lines are wrapped to the terminal: read them as one text.
        out.split_whitespace().collect::<Vec<_>>().join(" ")
    };
    let run = |extra: &[&str]| {
        let mut args = vec!["plot", "run"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--plot", "boats"]);
        toolgate(data, &args)
    };
    let o = run(&["make-it-pretty"]);
    assert_eq!(o.status.code(), Some(3));
    assert!(spoken(&o).contains("`toolgate tools list` lists every tool"));
    let o = run(&["set-track-color", "-p", "color=red"]);
    assert_eq!(o.status.code(), Some(3));
    let out = spoken(&o);
    assert!(
        out.contains("--feature NAME") && out.contains("--scope all"),
        "{out}"
    );
    let o = run(&["set-track-color", "-p", "color=red", "--feature", "NOPE"]);
    assert_eq!(o.status.code(), Some(3));
    assert!(spoken(&o).contains("no feature named \"NOPE\""));
    let o = run(&["set-track-color", "-p", "color=red", "--scope", "selection"]);
    assert_eq!(o.status.code(), Some(3));
    assert!(spoken(&o).contains("--scope all"));
    for extra in [&["--json"][..], &[]] {
        let mut args = vec!["set-track-color", "-p", "color=red", "--feature", "NELSON"];
        args.extend_from_slice(extra);
        let o = run(&args);
        assert_eq!(o.status.code(), Some(4));
        assert!(spoken(&o).contains("Pass --yes to approve it"));
    }
    // Saved: the JSON says so, and nothing in it says the plot is unsaved.
    let o = run(&[
        "set-track-color",
        "-p",
        "color=red",
        "--feature",
        "NELSON",
        "--yes",
        "--save",
        "--json",
    ]);
    assert!(o.status.success(), "{:?}", text(&o));
    spoken(&o);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["saved"], true);
    assert!(
        v["text"]
            .as_str()
            .unwrap()
            .ends_with("Saved to stac://plots/boats/item.json."),
        "{v}"
    );
    let o = run(&[
        "set-track-color",
        "-p",
        "color=blue",
        "--feature",
        "NELSON",
        "--yes",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["saved"], false);
    assert!(v["text"].as_str().unwrap().contains("Not saved"), "{v}");
}

/// Standard base64 (the page sends files so).
fn base64(bytes: &[u8]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ABC[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// `toolgate serve` with no --store: the page's import writes to your plots (never the demo
/// store), and its "Add to the open plot" adds legacy Debrief's arcs to the plot with NELSON.
#[test]
fn the_served_workbench_imports_into_your_plots_and_adds_to_them() {
    const TOKEN: &str = "analyst-workbench-token";
    let server = support::serve(&[], TOKEN);
    let file = |rel: &str| {
        let path = rep_fixture(rel);
        serde_json::json!({
            "name": Path::new(&path).file_name().unwrap().to_str().unwrap(),
            "contentBase64": base64(&std::fs::read(&path).unwrap()),
        })
    };
    let body = serde_json::json!({"files": [file("valid/boat1.rep")]});
    let r = support::http_request(&server.addr, "POST", "/api/import", TOKEN, Some(&body));
    assert_eq!(r.status, 200, "{}", r.body);
    let reply: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(reply["plotId"], "stac://plots/boat1/item.json", "{reply}");
    let body = serde_json::json!({"files": [file("legacy/sensor_arcs.rep")], "into": "boat1"});
    let r = support::http_request(&server.addr, "POST", "/api/import", TOKEN, Some(&body));
    assert_eq!(r.status, 200, "{}", r.body);
    let reply: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(
        reply["attached"],
        serde_json::json!([{"track": "NELSON", "count": 43}])
    );
    assert_eq!(
        reply["unattached"],
        serde_json::json!([{"track": "COLLINGWOOD", "count": 3}])
    );
    // The demo plots are still there beside yours.
    let body = serde_json::json!({"text": "Alpha"});
    let r = support::http_request(
        &server.addr,
        "POST",
        "/api/catalog/search",
        TOKEN,
        Some(&body),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        r.body.contains("stac://demo/alpha-day1/item.json"),
        "{}",
        r.body
    );
}

/// A CodeAct program's plot is named by its short name too (`exec --plot alpha-day1`).
#[test]
fn exec_opens_a_plot_by_its_short_name() {
    let d = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let o = support::isolated_toolgate(d.path())
        .args([
            "exec",
            "--workspace",
            ws.path().to_str().unwrap(),
            "--plot",
            "alpha-day1",
            "--code",
            "set_track_color(color=\"red\", feature_names=[\"Contact\"])",
            "--yes",
        ])
        .output()
        .unwrap();
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    assert!(err.contains("stac://demo/alpha-day1/item.json"), "{err}");
    let o = support::isolated_toolgate(d.path())
        .args([
            "exec",
            "--workspace",
            ws.path().to_str().unwrap(),
            "--plot",
            "nowhere",
            "--code",
            "print(1)",
        ])
        .output()
        .unwrap();
    let (out, err) = text(&o);
    assert!(!o.status.success(), "{out}{err}");
    assert!(err.contains("no plot is called \"nowhere\""), "{err}");
}
