//! `eval tokens`: the summary cost of the probe plots (8/32/100/250 features), the demo plots,
//! and the advertised tools, with their share of 4k/8k/32k windows.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;
use toolgate_core::TokenCounter;
use toolgate_eval::tokens;
use toolgate_plot::demo;
use toolgate_plot::session::Session;
use toolgate_plot::store::StacStore;
use toolgate_plot::summary::{SummaryRequest, summarize};

#[test]
fn token_report_matches_the_summary_and_stays_within_budget() {
    let r = tokens::report().unwrap();
    let features: Vec<usize> = r.plots.iter().take(4).map(|p| p.features).collect();
    assert_eq!(features, [8, 32, 100, 250]);
    for p in &r.plots[..4] {
        assert_eq!(
            p.listed,
            p.features.min(200),
            "the default cap is 200 entries"
        );
        assert_eq!(p.truncated, p.features > 200);
        // The plot issue's goal: at most 12 tokens per feature (the spike spent ~38–41). It holds
        // from 32 features up; on the 8-feature plot the per-plot header (title, span, counts,
        // the two type headers: ~60 tokens) alone is 7.5 per feature, so that one is held to 16.
        let limit = if p.features >= 32 { 12.0 } else { 16.0 };
        assert!(p.tokens_per_feature <= limit, "{p:?}");
        #[allow(clippy::cast_precision_loss)]
        let pct4k = (p.tokens as f64 * 1000.0 / 4096.0).round() / 10.0;
        assert!((p.window_pct[0] - pct4k).abs() < 1e-9);
    }
    let bulk = r.plots.iter().find(|p| p.plot.contains("Bulk")).unwrap();
    assert_eq!(bulk.features, 260);
    assert!(bulk.truncated, "the 260-feature demo plot hits the 200 cap");
    let day1 = r.plots.iter().find(|p| p.plot.contains("Day 1")).unwrap();
    assert!(day1.tokens > 50 && day1.window_pct[0] < 25.0, "{day1:?}");
    assert_eq!(r.tools.len(), 4);
    let sum: usize = r.tools.iter().map(|t| t.tokens).sum();
    assert!(
        r.tool_list_tokens.abs_diff(sum) < 10,
        "{} vs {sum}",
        r.tool_list_tokens
    );
    assert_eq!(
        r.priming_tokens,
        TokenCounter::default().count(toolgate_agent::PRIMING)
    );
    // The same numbers crates/plot/examples/summary_tokens.rs measures (at this writing 127, 340,
    // 936 and 1459 tokens), recomputed here the way the example does.
    let dir = tempfile::tempdir().unwrap();
    let mut store = StacStore::create("probe", dir.path(), "probe").unwrap();
    for (t, p) in tokens::SIZES {
        let f = demo::bulk(t, p);
        let name = format!("plot-{}", t + p);
        let item = demo::item(&name, &format!("Probe {}", t + p), "", &[], json!([]), &f);
        store
            .add_item(
                &name,
                &item,
                &json!({"type": "FeatureCollection", "features": f}),
            )
            .unwrap();
    }
    let mut session = Session::new(vec![store]);
    for ((t, p), reported) in tokens::SIZES.iter().zip(&r.plots) {
        let id = format!("stac://probe/plot-{}/item.json", t + p);
        session.open(&id).unwrap();
        let (view, _) = summarize(
            &session,
            session.plot(&id).unwrap(),
            &SummaryRequest::default(),
            &TokenCounter::default(),
        );
        assert_eq!(reported.tokens, view.tokens, "{}", reported.plot);
        session.close(&id).unwrap();
    }
    // The line through the 8- and 100-feature plots reproduces them.
    let line = |n: f64| r.per_plot_tokens + r.marginal_tokens_per_feature * n;
    assert!((line(8.0) - r.plots[0].tokens as f64).abs() < 8.0, "{r:?}");
    assert!(
        (line(100.0) - r.plots[2].tokens as f64).abs() < 8.0,
        "{r:?}"
    );
    assert!(r.marginal_tokens_per_feature > 0.0 && r.marginal_tokens_per_feature <= 12.0);
    let md = r.markdown();
    assert!(md.contains("tokens per added feature plus about"), "{md}");
    assert!(
        md.contains("| synthetic 250 features | 250 | 200 | yes |"),
        "{md}"
    );
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["windows"], serde_json::json!([4096, 8192, 32768]));
}
