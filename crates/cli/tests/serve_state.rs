//! Stateless `toolgate serve`: two instances on one PostgreSQL (`--state`), one catalogue folder,
//! serve the same workbench session. An edit an MCP client makes through one is visible and
//! undoable through the other, the other's live stream announces it, and an instance killed
//! (SIGKILL) in the middle of a run of edits loses none that it acknowledged — neither to the
//! surviving instance nor to one started afterwards.
//!
//! Needs PostgreSQL (crates/plot/tests/support/pgstac.sh start-pg) and the MCP Python SDK in
//! .tools/venv; without them the test says why and passes, except under
//! TOOLGATE_REQUIRE_TEST_CLIENTS=1 (CI), where it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::io::{Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{OPEN_DAY1, RECOLOUR_NELSON, http_request};
use toolgate_test_support::pg::Postgres;

const TOKEN: &str = "serve-state-test-token-0123456789";
const PLOT: &str = "stac://demo/alpha-day1/item.json";

type Serve = support::Served;

fn serve(store: &Path, dsn: &str) -> Serve {
    let store = store.to_str().unwrap();
    // no periodic checks: what reaches a live stream from another instance is pushed
    // (LISTEN/NOTIFY)
    let args = ["--state", dsn, "--store", store, "--live-poll-ms", "600000"];
    support::serve(&args, TOKEN)
}

fn call(s: &Serve, method: &str, path: &str, body: Option<&Value>) -> Value {
    let r = http_request(&s.addr, method, path, TOKEN, body);
    assert_eq!(r.status, 200, "{method} {path}: {}", r.body);
    r.json()
}

fn plot_state(s: &Serve) -> Value {
    let st = call(s, "GET", "/api/state", None);
    st["plots"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["plotId"] == PLOT)
        .cloned()
        .unwrap_or_else(|| panic!("{PLOT} is not open on {}: {st}", s.addr))
}

/// Run `body` in an MCP client through `addr` (see `support::mcp_program`).
fn mcp(python: &Path, addr: &str, session: Option<&str>, body: &str) -> String {
    support::mcp_program(python, addr, TOKEN, session, body)
}

/// The next `state` event on a live stream already opened (headers read), within `within`.
fn next_state_event(stream: &mut std::net::TcpStream, within: Duration) -> Option<Value> {
    let until = Instant::now() + within;
    let mut buf = String::new();
    let mut chunk = [0u8; 65536];
    while Instant::now() < until {
        stream
            .set_read_timeout(Some(
                until
                    .saturating_duration_since(Instant::now())
                    .max(Duration::from_millis(1)),
            ))
            .unwrap();
        match stream.read(&mut chunk) {
            Ok(0) => return None,
            Ok(n) => buf.push_str(&String::from_utf8_lossy(&chunk[..n])),
            Err(_) => return None,
        }
        // events end with a blank line; a chunked body interleaves size lines, which the
        // `data:` filter skips
        while let Some(end) = buf.find("\n\n") {
            let event: String = buf.drain(..end + 2).collect();
            if event.contains("event: state")
                && let Some(data) = event.lines().find_map(|l| l.strip_prefix("data: "))
                && let Ok(v) = serde_json::from_str::<Value>(data)
            {
                return Some(v);
            }
        }
    }
    None
}

fn open_stream(s: &Serve) -> std::net::TcpStream {
    let mut stream = std::net::TcpStream::connect(&s.addr).unwrap();
    write!(
        stream,
        "GET /api/events HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {TOKEN}\r\n\r\n",
        s.addr
    )
    .unwrap();
    stream
}

#[test]
fn two_instances_on_one_database_serve_one_session_and_a_killed_one_loses_nothing() {
    let Some(pg) = Postgres::start() else { return };
    let Some(python) = support::mcp_python() else {
        return;
    };
    // a folder store's id is its folder's name: plot ids are stac://demo/…
    let root = tempfile::tempdir().unwrap();
    let catalogue = root.path().join("demo");
    toolgate_plot::demo::ensure_demo_store(&catalogue).unwrap();
    let mut a = serve(&catalogue, &pg.dsn);
    let b = serve(&catalogue, &pg.dsn);

    // B's live stream: the first event is the state now (nothing open)
    let mut live_b = open_stream(&b);
    let first = next_state_event(&mut live_b, Duration::from_secs(10)).unwrap();
    assert_eq!(first["activePlot"], Value::Null, "{first}");

    // opened through A: open on B, and B's stream says so
    call(
        &a,
        "POST",
        "/api/plots/open",
        Some(&json!({ "plotId": PLOT })),
    );
    let pushed = next_state_event(&mut live_b, Duration::from_secs(5))
        .expect("B's live stream did not announce A's open");
    assert_eq!(pushed["activePlot"], PLOT, "{pushed}");
    assert_eq!(call(&b, "GET", "/api/state", None)["activePlot"], PLOT);

    // an MCP client's confirmed edit through A: visible through B, unsaved
    let reply = mcp(&python, &a.addr, None, RECOLOUR_NELSON);
    assert!(reply.contains("dirty"), "{reply}");
    let on_b = plot_state(&b);
    assert_eq!(on_b["dirty"], true, "{on_b}");
    assert_eq!(on_b["canUndo"], true, "{on_b}");
    let label = on_b["undoLabel"].as_str().unwrap().to_owned();
    assert_eq!(plot_state(&a)["version"], on_b["version"]);

    // undone through B: undone on A too; redone through A: back on B
    let undone = call(&b, "POST", "/api/undo", Some(&json!({ "plotId": PLOT })));
    assert!(undone.to_string().contains(&label), "{undone}");
    let on_a = plot_state(&a);
    assert_eq!(
        (on_a["dirty"].clone(), on_a["canRedo"].clone()),
        (json!(false), json!(true)),
        "{on_a}"
    );
    call(&a, "POST", "/api/redo", Some(&json!({ "plotId": PLOT })));
    assert_eq!(plot_state(&b)["dirty"], true);

    // a run of edits (selections) through A, killed with SIGKILL part-way: every selection A
    // acknowledged is what B holds, or the one in flight when A died
    let selection = |i: usize| vec![format!("track-nelson/positions/{i}")];
    let addr = a.addr.clone();
    let (acked_tx, acked_rx) = std::sync::mpsc::channel::<usize>();
    let editor = std::thread::spawn(move || {
        for i in 0..10_000 {
            let r = std::panic::catch_unwind(|| {
                http_request(
                    &addr,
                    "POST",
                    "/api/select",
                    TOKEN,
                    Some(&json!({ "plotId": PLOT, "ids": selection(i) })),
                )
            });
            match r {
                Ok(reply) if reply.status == 200 => {
                    if acked_tx.send(i).is_err() {
                        return;
                    }
                }
                _ => return,
            }
        }
    });
    let mut last_acked = None;
    while last_acked.is_none_or(|n| n < 40) {
        last_acked = Some(acked_rx.recv_timeout(Duration::from_secs(30)).unwrap());
    }
    a.child.kill().unwrap(); // SIGKILL, mid-run
    a.child.wait().unwrap();
    editor.join().unwrap();
    while let Ok(i) = acked_rx.try_recv() {
        last_acked = Some(i);
    }
    let last_acked = last_acked.unwrap();
    let held = plot_state(&b)["selection"].clone();
    assert!(
        held == json!(selection(last_acked)) || held == json!(selection(last_acked + 1)),
        "A acknowledged selection {last_acked} before it was killed; B holds {held}"
    );

    // a fresh instance (A restarted) gets the whole session back from the database
    let restarted = serve(&catalogue, &pg.dsn);
    let again = plot_state(&restarted);
    let on_b = plot_state(&b);
    for key in [
        "version",
        "dirty",
        "canUndo",
        "canRedo",
        "undoLabel",
        "selection",
    ] {
        assert_eq!(
            again[key], on_b[key],
            "{key}: restarted {again} vs B {on_b}"
        );
    }
    assert_eq!(again["undoLabel"], label);
    // and its edits reach B as before
    let undone = call(
        &restarted,
        "POST",
        "/api/undo",
        Some(&json!({ "plotId": PLOT })),
    );
    assert!(undone.to_string().contains(&label), "{undone}");
    assert_eq!(plot_state(&b)["dirty"], false);
    // a session a stateless client names is journaled too: opened and edited through
    // B, summarised through the restarted instance (which never saw the client before): the same plot, edited
    let opened = format!("{OPEN_DAY1}{RECOLOUR_NELSON}");
    let edited = mcp(&python, &b.addr, Some("analyst-2"), &opened);
    assert!(edited.contains("dirty"), "{edited}");
    let summary = mcp(
        &python,
        &restarted.addr,
        Some("analyst-2"),
        "        print(text(await c.call_tool(\"debrief_summarizeCurrentPlot\", {})))",
    );
    assert!(
        summary.contains("Exercise Alpha") && summary.contains("\"dirty\":true"),
        "the restarted instance does not hold the named session: {summary}"
    );
    // the workbench's own session is another: its plot is clean (undone above)
    assert_eq!(plot_state(&restarted)["dirty"], false);
}
