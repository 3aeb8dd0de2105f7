//! Measure the summary's token cost per feature on plots of 8, 32, 100 and 250 features
//! (the spike's token-budget probe sizes). `cargo run --release --ignore-rust-version -p toolgate-plot --example summary_tokens`
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;
use toolgate_core::TokenCounter;
use toolgate_plot::demo;
use toolgate_plot::session::Session;
use toolgate_plot::store::StacStore;
use toolgate_plot::summary::{SummaryRequest, summarize};

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = StacStore::create("probe", dir.path(), "probe").unwrap();
    let sizes = [(3, 5), (12, 20), (40, 60), (250, 0)];
    for (t, p) in sizes {
        let features = demo::bulk(t, p);
        let name = format!("plot-{}", t + p);
        let item = demo::item(
            &name,
            &format!("Probe {}", t + p),
            "",
            &[],
            json!([]),
            &features,
        );
        store
            .add_item(
                &name,
                &item,
                &json!({"type": "FeatureCollection", "features": features}),
            )
            .unwrap();
    }
    let mut session = Session::new(vec![store]);
    let counter = TokenCounter::default();
    println!("| features | listed | truncated | tokens | tokens/feature listed |");
    println!("|---:|---:|:---:|---:|---:|");
    for (t, p) in sizes {
        let id = format!("stac://probe/plot-{}/item.json", t + p);
        session.open(&id).unwrap();
        let plot = session.plot(&id).unwrap();
        let (view, text) = summarize(&session, plot, &SummaryRequest::default(), &counter);
        assert_eq!(view.tokens, counter.count(&text));
        #[allow(clippy::cast_precision_loss)]
        let per = view.tokens as f64 / view.listed as f64;
        println!(
            "| {} | {} | {} | {} | {:.1} |",
            t + p,
            view.listed,
            view.truncated,
            view.tokens,
            per
        );
        if t + p == 8 {
            println!("{text}");
        }
        // Measured alone: with several plots open the reply also lists them all.
        session.close(&id).unwrap();
    }
}
