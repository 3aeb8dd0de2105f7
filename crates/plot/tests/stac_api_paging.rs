//! Issue 35: a search of a STAC API catalogue reads only the page it shows, never every match,
//! and says how exact its count is. Against a tiny fake STAC API (std sockets, no server to
//! install) that counts the requests it answers and, like pgstac with `context: auto`, gives an
//! exact `numberMatched` below the asked threshold and an estimate above it; and against a
//! folder store, whose counts are always exact.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use toolgate_core::Registry;
use toolgate_core::telemetry::MemorySink;
use toolgate_plot::debrief::{Debrief, Settings};
use toolgate_plot::search::{SearchQuery, TotalIs, total_phrase};
use toolgate_plot::session::Session;
use toolgate_plot::stac_api::{ApiStore, search_catalogues};

/// How the fake server counts.
#[derive(Clone, Copy)]
enum Count {
    /// pgstac's `context: auto`: exact below `context_estimated_count`, else 3 % high.
    Pgstac,
    /// No `numberMatched` at all.
    None,
}

/// What the fake server saw.
#[derive(Default)]
struct Seen {
    searches: AtomicUsize,
    /// The `limit` of every search request, in order.
    limits: Mutex<Vec<u64>>,
    /// The `conf` of every search request (pgstac's settings), in order.
    confs: Mutex<Vec<Value>>,
}

/// A STAC API over `n` items `p00000…`, titled "Exercise Alpha day N" for even N and "Exercise
/// Alpha N" for odd N, in item-id order, paged by `next` links with a POST body (as
/// stac-fastapi-pgstac pages). It ignores filters: every item is a candidate.
fn fake_api(n: usize, count: Count) -> (String, Arc<Seen>) {
    fake_api_slow(n, count, Duration::ZERO)
}

/// [`fake_api`] whose every search takes `delay` to answer; connections are served at once, each
/// on a thread of its own (as a real server serves them).
fn fake_api_slow(n: usize, count: Count, delay: Duration) -> (String, Arc<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let seen = Arc::new(Seen::default());
    let s = seen.clone();
    let root = url.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let (s, root) = (s.clone(), root.clone());
            std::thread::spawn(move || serve(stream, &root, n, count, delay, &s));
        }
    });
    (url, seen)
}

fn serve(
    mut stream: std::net::TcpStream,
    root: &str,
    n: usize,
    count: Count,
    delay: Duration,
    s: &Seen,
) {
    {
        {
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            if reader.read_line(&mut line).is_err() {
                return;
            }
            let mut length = 0usize;
            loop {
                let mut h = String::new();
                reader.read_line(&mut h).unwrap();
                if h.trim().is_empty() {
                    break;
                }
                let lower = h.to_ascii_lowercase();
                if let Some(v) = lower.strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap();
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            let reply = if line.starts_with("GET /conformance") {
                json!({"conformsTo": [
                    "https://api.stacspec.org/v1.0.0/item-search",
                    "https://api.stacspec.org/v1.0.0-rc.2/item-search#filter",
                    "http://www.opengis.net/spec/cql2/1.0/conf/cql2-json",
                    "https://api.stacspec.org/v1.0.0/item-search#fields",
                    "https://api.stacspec.org/v1.1.0/item-search#sort",
                ]})
            } else if line.starts_with("POST /search") {
                let req: Value = serde_json::from_slice(&body).unwrap();
                std::thread::sleep(delay);
                search_reply(root, n, count, &req, s)
            } else {
                json!({"code": "NotFound"})
            };
            let text = reply.to_string();
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                text.len()
            );
        }
    }
}

fn search_reply(root: &str, n: usize, count: Count, req: &Value, seen: &Seen) -> Value {
    seen.searches.fetch_add(1, Ordering::SeqCst);
    let limit = req["limit"].as_u64().unwrap_or(10);
    seen.limits.lock().unwrap().push(limit);
    seen.confs
        .lock()
        .unwrap()
        .push(req.get("conf").cloned().unwrap_or(Value::Null));
    let from = req["token"]
        .as_str()
        .and_then(|t| t.strip_prefix("next:"))
        .map_or(0, |t| t.parse::<usize>().unwrap());
    let to = (from + limit as usize).min(n);
    let t0 = chrono::DateTime::parse_from_rfc3339("2020-01-01T00:00:00Z").unwrap();
    let features: Vec<Value> = (from..to)
        .map(|i| {
            let start = t0 + chrono::Duration::hours(i as i64);
            let end = start + chrono::Duration::hours(1);
            let title = if i % 2 == 0 {
                format!("Exercise Alpha day {i}")
            } else {
                format!("Exercise Alpha {i}")
            };
            json!({"type": "Feature", "id": format!("p{i:05}"), "bbox": [0.0, 50.0, 1.0, 51.0],
                   "properties": {"title": title, "datetime": start.to_rfc3339(),
                                  "start_datetime": start.to_rfc3339(), "end_datetime": end.to_rfc3339()}})
        })
        .collect();
    let mut links = Vec::new();
    if to < n {
        let mut body = req.clone();
        body["token"] = json!(format!("next:{to}"));
        links.push(
            json!({"rel": "next", "method": "POST", "href": format!("{root}search"), "body": body}),
        );
    }
    let mut reply = json!({"type": "FeatureCollection", "features": features, "links": links,
                           "numberReturned": to - from});
    if let Count::Pgstac = count {
        let conf = &req["conf"];
        if conf["context"] == "auto" || conf["context"] == "on" {
            let threshold = conf["context_estimated_count"].as_u64().unwrap_or(100_000) as usize;
            reply["numberMatched"] = json!(if n >= threshold { n * 103 / 100 } else { n });
        }
    }
    reply
}

/// The store, its count asked for only after the page (so the requests come in a fixed order
/// whatever the machine's load; `a_slow_first_page_…` tests the other way).
fn api(url: &str) -> ApiStore {
    let mut api = ApiStore::connect(None, url, Duration::from_secs(10)).unwrap();
    api.count_after = Duration::from_secs(3600);
    api
}

fn debrief(api: ApiStore) -> Debrief {
    Debrief::new(
        Arc::new(Mutex::new(
            Session::new(Vec::new()).with_api_stores(vec![api]),
        )),
        Arc::new(Registry::new()),
        Arc::new(MemorySink::default()),
        Settings::default(),
    )
}

#[test]
fn a_broad_search_reads_one_page_and_asks_the_server_for_the_count() {
    let (url, seen) = fake_api(5000, Count::Pgstac);
    let r = search_catalogues(&[], &[api(&url)], &SearchQuery::default()).unwrap();
    // One page of the cap plus one (to know that more exist), then one count request: never
    // the 5000 matches (5 pages of 1000 before).
    assert_eq!(seen.searches.load(Ordering::SeqCst), 2, "{r:?}");
    assert_eq!(seen.limits.lock().unwrap()[0], 51);
    // The page asks no count of pgstac; the count request asks `context: auto`, exact below
    // the threshold, never a cached count.
    let confs = seen.confs.lock().unwrap();
    assert_eq!(confs[0], Value::Null);
    assert_eq!(confs[1]["context"], "auto");
    assert_eq!(confs[1]["context_stats_ttl"], "0");
    drop(confs);
    assert_eq!((r.total, r.total_is), (5000, TotalIs::Exact));
    assert_eq!(r.matches.len(), 50);
    assert_eq!(r.matches[0].plot_id, "stac://debrief/p00000/item.json");
    assert_eq!(r.matches[49].plot_id, "stac://debrief/p00049/item.json");
    assert!(
        r.more
            .as_deref()
            .unwrap()
            .starts_with("4950 more not shown;"),
        "{:?}",
        r.more
    );
    let json = serde_json::to_value(&r).unwrap();
    assert!(
        json.get("totalIs").is_none(),
        "an exact total says nothing more"
    );
}

#[test]
fn a_slow_first_page_has_its_count_asked_for_at_the_same_time() {
    // Every search takes 600 ms: asked in turn, the page and the count would take 1.2 s.
    let (url, seen) = fake_api_slow(5000, Count::Pgstac, Duration::from_millis(600));
    let store = ApiStore::connect(None, &url, Duration::from_secs(10)).unwrap();
    let started = std::time::Instant::now();
    let r = search_catalogues(&[], &[store], &SearchQuery::default()).unwrap();
    let took = started.elapsed();
    assert_eq!(seen.searches.load(Ordering::SeqCst), 2);
    assert_eq!((r.total, r.total_is), (5000, TotalIs::Exact));
    assert!(took < Duration::from_millis(1100), "{took:?}");
}

#[test]
fn a_search_that_fits_one_page_is_counted_by_reading_it() {
    let (url, seen) = fake_api(30, Count::Pgstac);
    let r = search_catalogues(&[], &[api(&url)], &SearchQuery::default()).unwrap();
    assert_eq!(seen.searches.load(Ordering::SeqCst), 1, "no count request");
    assert_eq!((r.total, r.total_is, r.more), (30, TotalIs::Exact, None));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_count_is_the_servers_estimate_and_the_reply_says_so() {
    let (url, seen) = fake_api(20_000, Count::Pgstac);
    let r = search_catalogues(&[], &[api(&url)], &SearchQuery::default()).unwrap();
    assert_eq!(seen.searches.load(Ordering::SeqCst), 2);
    // The server estimated 20,600: shown to two significant figures, as an estimate.
    assert_eq!((r.total, r.total_is), (21_000, TotalIs::About));
    assert_eq!(total_phrase(r.total, r.total_is), "about 21000");
    assert!(
        r.more
            .as_deref()
            .unwrap()
            .starts_with("about 21000 more not shown (the catalogue server's estimate);"),
        "{:?}",
        r.more
    );
    // The agent tool's reply says it too.
    let d = debrief(api(&url));
    let reply = d.search_plots(&json!({"open": true})).await;
    let v: Value = serde_json::from_str(&reply.text).unwrap();
    assert_eq!(v["totalIs"], "about", "{}", reply.text);
    assert_eq!(v["total"], 21_000);
    assert!(
        v["notOpened"]
            .as_str()
            .unwrap()
            .contains("about 21000 plots matched"),
        "{}",
        reply.text
    );
}

#[test]
fn without_a_count_from_the_server_the_total_is_a_lower_bound() {
    let (url, seen) = fake_api(5000, Count::None);
    let r = search_catalogues(&[], &[api(&url)], &SearchQuery::default()).unwrap();
    assert_eq!(seen.searches.load(Ordering::SeqCst), 2);
    assert_eq!((r.total, r.total_is), (51, TotalIs::AtLeast));
    assert_eq!(total_phrase(r.total, r.total_is), "more than 50");
    assert!(
        r.more
            .as_deref()
            .unwrap()
            .starts_with("at least 1 more not shown (the catalogue server gave no total);"),
        "{:?}",
        r.more
    );
    assert_eq!(
        serde_json::to_value(&r).unwrap()["totalIs"],
        "atLeast",
        "{r:?}"
    );
}

#[test]
fn a_wider_server_filter_gives_an_estimate_scaled_by_what_the_rule_kept() {
    // "alpha day" is two words: the server's per-word pre-filter is wider than the rule (which
    // wants the phrase, or each word starting a word), so its count is of candidates. Here
    // every item is a candidate and the rule keeps the even half.
    let (url, seen) = fake_api(4000, Count::Pgstac);
    let q = SearchQuery {
        text: Some("alpha day".into()),
        ..SearchQuery::default()
    };
    let r = search_catalogues(&[], &[api(&url)], &q).unwrap();
    // 51 candidates give 26 matches; the next page is twice as large (77 matches of 153), then
    // the count: 4000 candidates, of which the rule kept about half.
    assert_eq!(*seen.limits.lock().unwrap(), [51, 102, 1]);
    assert_eq!((r.total, r.total_is), (2000, TotalIs::About), "{r:?}");
    assert!(r.matches.iter().all(|m| m.title.contains("day")));
    assert_eq!(r.matches.len(), 50);
}

#[test]
fn a_few_candidates_left_are_read_to_count_exactly() {
    // As above, but only 300 items: after the page (153 candidates read), 147 are left, few
    // enough to read and test, so the count is exact.
    let (url, seen) = fake_api(300, Count::Pgstac);
    let q = SearchQuery {
        text: Some("alpha day".into()),
        ..SearchQuery::default()
    };
    let r = search_catalogues(&[], &[api(&url)], &q).unwrap();
    assert_eq!(*seen.limits.lock().unwrap(), [51, 102, 1, 148]);
    assert_eq!((r.total, r.total_is), (150, TotalIs::Exact), "{r:?}");
    assert!(
        r.more
            .as_deref()
            .unwrap()
            .starts_with("100 more not shown;")
    );
}

#[test]
fn the_folder_store_counts_exactly_and_says_nothing_more() {
    let d = tempfile::tempdir().unwrap();
    let s = toolgate_plot::demo::ensure_demo_store(d.path()).unwrap();
    let q = SearchQuery {
        limit: Some(1),
        ..SearchQuery::default()
    };
    let r = search_catalogues(std::slice::from_ref(&s), &[], &q).unwrap();
    assert_eq!(r.total_is, TotalIs::Exact);
    assert_eq!(r.total, s.items.len());
    assert!(
        r.more.as_deref().unwrap().starts_with(&format!(
            "{} more not shown; narrow the search",
            s.items.len() - 1
        )),
        "{:?}",
        r.more
    );
    assert!(
        serde_json::to_value(&r).unwrap().get("totalIs").is_none(),
        "{r:?}"
    );
    assert_eq!(total_phrase(r.total, r.total_is), s.items.len().to_string());
}
