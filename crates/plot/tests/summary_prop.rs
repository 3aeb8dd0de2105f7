//! Properties of the summary on random plots: `tokens` is the real count of exactly the text
//! returned, every listed feature is one row of its type's section, rows have as many cells as
//! their header has columns (names with `|`, quotes, line breaks or any script cannot break the
//! table), and a name left out is one the id spells.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use chrono::{TimeZone, Utc};
use proptest::prelude::*;
use serde_json::{Value, json};
use toolgate_core::TokenCounter;
use toolgate_plot::demo::{self, TrackSpec};
use toolgate_plot::session::Session;
use toolgate_plot::store::StacStore;
use toolgate_plot::summary::{SummaryRequest, summarize};

#[derive(Debug, Clone)]
enum Spec {
    Track {
        name: String,
        minutes: i64,
        start: (f64, f64),
    },
    Point {
        name: String,
        at: (f64, f64),
    },
}

fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        "[A-Z][a-z]{0,8}( [0-9]{1,3})?",
        "[A-Za-z0-9 |\"'\\\\\n\t—é漢-]{1,16}",
    ]
}

fn spec() -> impl Strategy<Value = Spec> {
    prop_oneof![
        (name(), 6i64..400, (-6.0f64..-2.0, 49.0f64..52.0)).prop_map(|(name, minutes, start)| {
            Spec::Track {
                name,
                minutes,
                start,
            }
        }),
        (name(), (-6.0f64..-2.0, 49.0f64..52.0)).prop_map(|(name, at)| Spec::Point { name, at }),
    ]
}

fn feature(i: usize, s: &Spec) -> Value {
    match s {
        Spec::Track {
            name,
            minutes,
            start,
        } => demo::track(&TrackSpec {
            id: &format!("track-{i}"),
            platform_id: &name.to_uppercase(),
            name,
            track_type: "OWNSHIP",
            color: "#FF0000",
            start: *start,
            course: 45.0,
            speed_kn: 8.0,
            minutes: *minutes,
            step_minutes: 3,
            t0: Utc.with_ymd_and_hms(2026, 3, 1, 0, 0, 0).unwrap(),
            seed: i as u64 + 1,
        }),
        Spec::Point { name, at } => json!({
            "type": "Feature",
            "id": format!("point-{i}"),
            "geometry": {"type": "Point", "coordinates": [at.0, at.1]},
            "properties": {"kind": "POINT", "name": name}
        }),
    }
}

/// Split a row on the `|` that are not escaped as `\|` (`\\` is a backslash).
fn cells(row: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut chars = row.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if matches!(chars.peek(), Some('|' | '\\')) => {
                let escaped = chars.next().unwrap();
                out.last_mut().unwrap().push(escaped);
            }
            '|' => out.push(String::new()),
            c => out.last_mut().unwrap().push(c),
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn the_summary_is_an_exact_table_with_an_exact_token_count(
        specs in prop::collection::vec(spec(), 1..30),
        cap in 1usize..40,
    ) {
        let features: Vec<Value> = specs.iter().enumerate().map(|(i, s)| feature(i, s)).collect();
        let dir = tempfile::tempdir().unwrap();
        let mut store = StacStore::create("prop", dir.path(), "prop").unwrap();
        let item = demo::item("p", "Random plot", "", &[], json!([]), &features);
        store
            .add_item("p", &item, &json!({"type": "FeatureCollection", "features": features}))
            .unwrap();
        let mut session = Session::new(vec![store]);
        let id = "stac://prop/p/item.json";
        session.open(id).unwrap();
        let counter = TokenCounter::default();
        let (view, text) = summarize(
            &session,
            session.plot(id).unwrap(),
            &SummaryRequest { cap: Some(cap), ..SummaryRequest::default() },
            &counter,
        );
        prop_assert_eq!(view.tokens, counter.count(&text));
        let reply: Value = serde_json::from_str(&text).unwrap();
        prop_assert_eq!(reply["tokens"].as_u64().unwrap() as usize, view.tokens);
        prop_assert_eq!(view.total, features.len());
        prop_assert_eq!(view.listed, features.len().min(cap));
        prop_assert_eq!(view.truncated, features.len() > cap);
        prop_assert_eq!(reply.get("listed").is_some(), view.truncated);

        // Walk the sections: a header `TYPE col|col…`, then its rows.
        let mut rows_seen = Vec::new();
        let mut columns: Vec<String> = Vec::new();
        for line in view.features.lines() {
            let kind = line.split(' ').next().unwrap_or("");
            if (kind == "TRACK" || kind == "POINT") && !line.starts_with("track-") {
                let rest = &line[kind.len() + 1..];
                let cols = rest.split(" (all: ").next().unwrap();
                columns = cols.split('|').map(str::to_owned).collect();
                prop_assert_eq!(&columns[0], "id", "{}", line);
                continue;
            }
            let c = cells(line);
            prop_assert_eq!(c.len(), columns.len(), "row {:?} under {:?}", line, columns);
            rows_seen.push((c[0].clone(), columns.iter().position(|h| h == "name").map(|i| c[i].clone())));
        }
        prop_assert_eq!(rows_seen.len(), view.listed);
        for (i, (row_id, shown)) in rows_seen.iter().enumerate() {
            let f = features.iter().find(|f| f["id"] == row_id.as_str());
            prop_assert!(f.is_some(), "row {} names no feature: {}", i, row_id);
            let f = f.unwrap();
            let real = toolgate_plot::model::display_name(f);
            match shown.as_deref() {
                Some(n) if !n.is_empty() => {
                    let clean: String =
                        real.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
                    prop_assert_eq!(n, clean.as_str());
                    let _ = &real;
                }
                _ => prop_assert!(
                    real == *row_id || real.to_lowercase().replace(' ', "-") == *row_id,
                    "a name is left out only when the id spells it: {:?} for {}", real, row_id
                ),
            }
        }
    }
}
