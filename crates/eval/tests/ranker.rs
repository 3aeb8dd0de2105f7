//! The tool ranker's recall on the panel set: for every wording whose family ends in one named
//! tool, is that tool among the ranker's top k over the real registry? A tool missing from the
//! top k cannot be chosen by a model that is offered only those k.
//!
//! Only the dev split is asserted (it is the one tuning may look at); the frozen test split is
//! printed for the report (`cargo test -p toolgate-eval --test ranker -- --nocapture`).
#![allow(clippy::unwrap_used, clippy::expect_used)]
// The recall table is this test's report (`-- --nocapture`).
#![allow(clippy::print_stdout)]

use toolgate_agent::rank::ToolRanker;
use toolgate_eval::fixture::Fixture;
use toolgate_eval::panel::{self, Split};
use toolgate_plot::debrief::Settings;

/// recall@k for k in KS, per split, with the wordings whose tool is not ranked first.
const KS: [usize; 4] = [1, 3, 5, 8];

async fn recall(split: Split) -> (usize, [usize; 4], Vec<String>) {
    let cases = panel::builtin(Some(split)).unwrap();
    let first = cases.first().unwrap();
    let fx = Fixture::build(&first.scenario, Settings::default())
        .await
        .unwrap();
    let ranker = ToolRanker::new(fx.debrief.registry().specs());
    // The open plot's feature names and platform ids, as the panel grounds them.
    let names: Vec<String> = toolgate_plot::demo::exercise_day(1)
        .iter()
        .flat_map(|f| {
            let p = &f["properties"];
            [
                &p["platform_name"],
                &p["platform_id"],
                &p["name"],
                &p["label"],
            ]
            .into_iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect::<Vec<_>>()
        })
        .collect();
    let mut total = 0;
    let mut hits = [0; 4];
    let mut misses = Vec::new();
    for c in &cases {
        let Some(want) = c
            .scenario
            .accept
            .iter()
            .find_map(|a| a.terminal_input.as_ref()?.get("toolId")?.as_str())
        else {
            continue;
        };
        if fx.debrief.registry().specs().all(|s| s.id != want) {
            continue; // an invented tool: nothing to recall
        }
        total += 1;
        let top = ranker.top_for(&c.scenario.utterance, &names, KS[KS.len() - 1]);
        for (i, k) in KS.iter().enumerate() {
            if top.iter().take(*k).any(|t| t == want) {
                hits[i] += 1;
            }
        }
        if top.first().is_none_or(|t| t != want) {
            misses.push(format!(
                "{:?} wants {want}, got {top:?}",
                c.scenario.utterance
            ));
        }
    }
    (total, hits, misses)
}

fn report(name: &str, (total, hits, misses): &(usize, [usize; 4], Vec<String>), show: bool) {
    let cells: Vec<String> = KS
        .iter()
        .zip(hits)
        .map(|(k, h)| format!("recall@{k} {h}/{total}"))
        .collect();
    println!("{name}: {}", cells.join(", "));
    // The frozen split's misses are never printed: tuning must not see which wordings fail.
    for m in misses.iter().filter(|_| show) {
        println!("  miss: {m}");
    }
}

#[tokio::test]
async fn the_named_tool_is_in_the_rankers_top_five_on_the_dev_wordings() {
    let dev = recall(Split::Dev).await;
    report("dev", &dev, true);
    let test = recall(Split::Test).await;
    report("test (frozen; counts only)", &test, false);
    let (total, hits, _) = dev;
    assert!(total >= 20, "{total} dev wordings end in a named tool");
    // recall@5 on dev: every dev wording's tool is offered.
    assert_eq!(hits[2], total, "recall@5 on dev");
}
