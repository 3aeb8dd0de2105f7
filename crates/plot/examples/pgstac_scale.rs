//! `debrief_searchPlots` latency on a STAC API catalogue, for `benches/pgstac-scale.sh`:
//! `cargo run -p toolgate-plot --example pgstac_scale -- URL QUERIES SEED`. Prints one JSON line
//! per query kind with p50/p99/max in milliseconds, the mean match count and how many of the
//! counts were the server's estimates (`about`) or lower bounds (`at_least`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolgate_core::Registry;
use toolgate_core::telemetry::NullSink;
use toolgate_plot::debrief::{Debrief, Settings};
use toolgate_plot::session::Session;
use toolgate_plot::stac_api::ApiStore;

/// A query kind: its name and how to make one query.
type Kind = (&'static str, fn(&mut Rng) -> Value);

/// The generator's word list (benches/pgstac-scale.sh writes the same one).
const WORDS: usize = 500;

fn word(i: u64) -> String {
    format!("w{:03}", i % WORDS as u64)
}

/// A small deterministic generator (xorshift), so runs are comparable.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn unit(&mut self) -> f64 {
        (self.next() % 1_000_000) as f64 / 1_000_000.0
    }
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1000.0
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let url = args
        .get(1)
        .expect("usage: pgstac_scale URL [QUERIES] [SEED]");
    let n: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(200);
    let seed: u64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(7);
    let mirror = tempfile::tempdir().unwrap();
    let api = ApiStore::connect(None, url, Duration::from_secs(60))
        .unwrap()
        .with_mirror(mirror.path());
    let d = Debrief::new(
        Arc::new(Mutex::new(
            Session::new(Vec::new()).with_api_stores(vec![api]),
        )),
        Arc::new(Registry::new()),
        Arc::new(NullSink),
        Settings::default(),
    );
    let mut rng = Rng(seed.max(1));
    let kinds: [Kind; 4] = [
        ("text", |r| json!({"text": word(r.next())})),
        ("time", |r| {
            let day = 2000.0 * 365.25 + r.unit() * 25.0 * 365.25;
            let start =
                chrono::DateTime::from_timestamp(((day - 1970.0 * 365.25) * 86400.0) as i64, 0)
                    .unwrap();
            let end = start + chrono::Duration::days(7);
            json!({"startTime": start.to_rfc3339(), "endTime": end.to_rfc3339()})
        }),
        ("bbox", |r| {
            let w = -30.0 + r.unit() * 58.0;
            let s = 30.0 + r.unit() * 38.0;
            json!({"bbox": [w, s, w + 2.0, s + 2.0]})
        }),
        ("text+time+bbox", |r| {
            let day = 2000.0 * 365.25 + r.unit() * 24.0 * 365.25;
            let start =
                chrono::DateTime::from_timestamp(((day - 1970.0 * 365.25) * 86400.0) as i64, 0)
                    .unwrap();
            let end = start + chrono::Duration::days(365);
            let w = -30.0 + r.unit() * 40.0;
            let s = 30.0 + r.unit() * 20.0;
            json!({"text": word(r.next()), "startTime": start.to_rfc3339(), "endTime": end.to_rfc3339(),
                   "bbox": [w, s, w + 20.0, s + 20.0]})
        }),
    ];
    // One warm-up call (connection pool, caches).
    let _ = d.search_plots(&json!({"text": "w001"})).await;
    // KINDS=text+time+bbox,time picks the query kinds (default: all four).
    let only = std::env::var("KINDS").ok();
    for (name, make) in kinds {
        if only
            .as_deref()
            .is_some_and(|k| !k.split(',').any(|k| k == name))
        {
            continue;
        }
        let mut times = Vec::with_capacity(n);
        let mut totals = 0u64;
        let (mut about, mut at_least) = (0usize, 0usize);
        for _ in 0..n {
            let q = make(&mut rng);
            let t = Instant::now();
            let r = d.search_plots(&q).await;
            times.push(t.elapsed());
            let v: Value = serde_json::from_str(&r.text).unwrap_or(Value::Null);
            assert!(v.get("total").is_some(), "query {q}: {}", r.text);
            totals += v["total"].as_u64().unwrap_or(0);
            match v["totalIs"].as_str() {
                Some("about") => about += 1,
                Some("atLeast") => at_least += 1,
                _ => {}
            }
        }
        times.sort();
        println!(
            "{}",
            json!({"query": name, "n": n, "p50_ms": percentile(&times, 0.5),
                   "p99_ms": percentile(&times, 0.99), "max_ms": percentile(&times, 1.0),
                   "mean_total": totals as f64 / n as f64, "about": about, "at_least": at_least})
        );
    }
}
