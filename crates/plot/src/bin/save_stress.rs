//! Saves the demo store's bulk plot in a loop, alternating a track's colour, printing a line per
//! save. Used by the crash test (tests/invariants.rs) that kills it mid-save.
//! `save_stress <demo store dir>`
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;

use serde_json::json;
use toolgate_core::{ChangeSet, Edit};
use toolgate_plot::demo;
use toolgate_plot::session::Session;

fn main() {
    let dir = std::env::args()
        .nth(1)
        .expect("usage: save_stress <demo store dir>");
    let store = demo::ensure_demo_store(std::path::Path::new(&dir)).unwrap();
    let mut session = Session::new(vec![store]);
    let id = "stac://demo/bulk-tracks/item.json";
    session.open(id).unwrap();
    for i in 0u64.. {
        let plot = session.plot(id).unwrap();
        let mut f = plot.doc.features()[0].clone();
        f["properties"]["style"]["line"]["color"] = json!(if i % 2 == 0 { "red" } else { "green" });
        let version = plot.doc.version();
        let cs = ChangeSet {
            label: "toggle".into(),
            edits: vec![Edit::Upsert {
                id: "track-1".into(),
                item: f,
            }],
        };
        session.apply(id, &cs, version).unwrap();
        session.save(id).unwrap();
        println!("saved {i}");
        std::io::stdout().flush().unwrap();
    }
}
