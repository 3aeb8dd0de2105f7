//! Every shipped scenario replayed with its canned calls against the real registry, policy and
//! session: its expectations hold, and the set covers the spike's corpus, every tool and every
//! fail-safe.
#![allow(clippy::unwrap_used, clippy::expect_used)]

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
