//! Every shipped scenario replayed with its canned calls against the real registry, policy and
//! session: its expectations hold, and the set covers the spike's corpus, every tool and every
//! fail-safe.
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(clippy::disallowed_methods)]

use std::collections::BTreeSet;
use std::path::Path;

use toolgate_eval::replay;
use toolgate_eval::scenario::{self, TOOLS};

#[tokio::test]
async fn every_shipped_scenario_replays() {
    let list = scenario::builtin().unwrap();
    let results = replay::replay_all(&list).await.unwrap();
    let failed: Vec<_> = results.iter().filter(|r| !r.passed).collect();
    assert!(failed.is_empty(), "{}", replay::markdown(&results));
    assert_eq!(results.len(), list.len());
}

#[test]
fn the_corpus_covers_the_spike_every_tool_and_the_fail_safes() {
    let list = scenario::builtin().unwrap();
    assert!(list.len() >= 20, "{} scenarios", list.len());
    let tagged = |t: &str| {
        list.iter()
            .filter(|s| s.tags.iter().any(|x| x == t))
            .count()
    };
    assert_eq!(tagged("routing"), 8, "the spike's 8 routing prompts");
    assert_eq!(tagged("spike-replay"), 8, "the spike's 8 replay scenarios");
    assert!(tagged("fail-safe") >= 10);
    let used: BTreeSet<&str> = list
        .iter()
        .flat_map(|s| s.replay.iter().map(|(t, _)| t.as_str()))
        .collect();
    assert_eq!(
        used,
        TOOLS.iter().copied().collect(),
        "every tool is exercised"
    );
    // The routing prompts are the spike's, word for word.
    let routing: BTreeSet<&str> = list
        .iter()
        .filter(|s| s.tags.iter().any(|x| x == "routing"))
        .map(|s| s.utterance.as_str())
        .collect();
    for p in [
        "open the Exercise Alpha day-1 plot",
        "what's in this plot?",
        "which Debrief tools can I run right now?",
        "colour the submarine track red",
        "run speed-filter below 5 knots on the selection",
        "summarise the selection",
        "find plots from March involving a submarine",
        "list the tools available for the current selection",
    ] {
        assert!(routing.contains(p), "missing routing prompt {p:?}");
    }
}

#[test]
fn the_folder_on_disk_is_what_is_compiled_in() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let from_disk = scenario::load_dir(&dir).unwrap();
    let builtin = scenario::builtin().unwrap();
    let ids = |v: &[toolgate_eval::Scenario]| v.iter().map(|s| s.id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&from_disk), ids(&builtin));
}

#[test]
fn a_bad_file_in_a_folder_is_reported_with_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let good = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/spike-h2-whats-in-plot.toml"),
    )
    .unwrap();
    std::fs::write(dir.path().join("a.toml"), &good).unwrap();
    std::fs::write(
        dir.path().join("b.toml"),
        good.replace(
            "tool = \"debrief_summarizeCurrentPlot\"",
            "tool = \"debrief_summarise\"",
        ),
    )
    .unwrap();
    let e = scenario::load_dir(dir.path()).unwrap_err();
    let line = good
        .lines()
        .position(|l| l == "tool = \"debrief_summarizeCurrentPlot\"")
        .unwrap()
        + 1;
    assert_eq!(
        e.to_string(),
        format!(
            "{}:{line}: unknown tool \"debrief_summarise\"; the tools are debrief_searchPlots, debrief_summarizeCurrentPlot, debrief_listTools, debrief_runTool",
            dir.path().join("b.toml").display()
        )
    );
    std::fs::write(
        dir.path().join("b.toml"),
        good.replace(
            "unchanged = true",
            "unchanged = true\ndisk_untouched = false",
        ),
    )
    .unwrap();
    let e = scenario::load_dir(dir.path()).unwrap_err();
    assert!(e.to_string().contains("b.toml:"), "{e}");
    assert!(e.message.starts_with("impossible"), "{e}");
}

/// The fail-safe scenarios with the fail-safe's cause removed: each must then fail, so their
/// assertions really check the fail-safe.
#[tokio::test]
async fn the_fail_safe_scenarios_fail_when_the_cause_is_removed() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
    let cases = [
        // the empty plot swapped for one with features: the colour is applied
        (
            "own-f14-empty-plot-all.toml",
            read("own-f14-empty-plot-all.toml")
                .replace(
                    "open = [\"stac://store-1/items/harbour-drill/item.json\"]",
                    "open = [\"stac://store-1/items/alpha-day1/item.json\"]",
                )
                .replace(
                    "active_plot = \"stac://store-1/items/harbour-drill/item.json\"\n",
                    "",
                ),
        ),
        // a working registry: the tools are listed
        (
            "own-f15-registry-unavailable.toml",
            read("own-f15-registry-unavailable.toml")
                .replace("registry = \"unavailable\"", "registry = \"native\""),
        ),
        // no failing tool server: the id is unknown, so the error text is not the tool's
        (
            "own-f16-tool-failure.toml",
            read("own-f16-tool-failure.toml")
                .replace("registry = \"failing\"", "registry = \"native\""),
        ),
    ];
    for (name, src) in cases {
        let s = scenario::parse(Path::new(name), &src).unwrap();
        let r = replay::replay_one(&s).await.unwrap();
        assert!(!r.passed, "{name} still passed without its cause");
    }
    // and as shipped, each passes with the exact texts
    let list = scenario::builtin().unwrap();
    for id in [
        "own-f14-empty-plot-all",
        "own-f15-registry-unavailable",
        "own-f16-tool-failure",
    ] {
        let s = list.iter().find(|s| s.id == id).unwrap();
        assert!(s.tags.iter().any(|t| t == "fail-safe"), "{id}");
        let r = replay::replay_one(s).await.unwrap();
        assert!(r.passed, "{id}: {:?}", r.failures);
    }
    let empty = list
        .iter()
        .find(|s| s.id == "own-f14-empty-plot-all")
        .unwrap();
    assert!(
        empty
            .expect
            .result_contains
            .iter()
            .any(|t| t == toolgate_plot::run::EMPTY_PLOT)
    );
    let failing = list
        .iter()
        .find(|s| s.id == "own-f16-tool-failure")
        .unwrap();
    assert!(
        failing
            .expect
            .result_contains
            .iter()
            .any(|t| t == toolgate_eval::fixture::FAILING_TOOL_ERROR)
    );
}

/// Every wording of the panel set (both splits) replays its family's canned call and meets the
/// family's expectations: the set asks for outcomes that the real tools can produce.
#[tokio::test]
async fn every_panel_wording_replays() {
    let cases = toolgate_eval::panel::builtin(None).unwrap();
    let list: Vec<_> = cases.into_iter().map(|c| c.scenario).collect();
    let results = replay::replay_all(&list).await.unwrap();
    let failed: Vec<_> = results.iter().filter(|r| !r.passed).collect();
    assert!(failed.is_empty(), "{}", replay::markdown(&results));
}
