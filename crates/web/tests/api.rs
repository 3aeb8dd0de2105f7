//! Every workbench endpoint, through the router (and once over real TCP with `serve_on`).
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(clippy::disallowed_methods)]

mod common;

use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use futures_util::StreamExt;
use serde_json::{Value, json};
use toolgate_core::flow::{Answer, Fixed};
use toolgate_web::{WebState, router};
use tower::ServiceExt;

use common::{ALPHA, BULK};

struct Reply {
    status: StatusCode,
    content_type: String,
    body: Vec<u8>,
}

impl Reply {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// `req` with the workbench's access token (every request needs it; `tests/auth.rs` checks
/// what happens without).
fn authed(mut req: Request<Body>) -> Request<Body> {
    req.headers_mut()
        .insert(header::AUTHORIZATION, common::bearer().parse().unwrap());
    req
}

async fn send(st: &WebState, req: Request<Body>) -> Reply {
    let res = router(st.clone()).oneshot(authed(req)).await.unwrap();
    let status = res.status();
    let content_type = res
        .headers()
        .get(header::CONTENT_TYPE)
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let body = axum::body::to_bytes(res.into_body(), usize::MAX)
        .await
        .unwrap()
        .to_vec();
    Reply {
        status,
        content_type,
        body,
    }
}

async fn get(st: &WebState, path: &str) -> Reply {
    send(st, Request::get(path).body(Body::empty()).unwrap()).await
}

async fn post(st: &WebState, path: &str, body: Value) -> Reply {
    send(
        st,
        Request::post(path)
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(body.to_string()))
            .unwrap(),
    )
    .await
}

async fn ok(st: &WebState, path: &str, body: Value) -> Value {
    let r = post(st, path, body).await;
    assert_eq!(r.status, StatusCode::OK, "{path}: {}", r.text());
    r.json()
}

async fn plot(st: &WebState) -> Value {
    let r = get(st, "/api/plot").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    r.json()
}

fn feature<'a>(plot: &'a Value, id: &str) -> &'a Value {
    plot["featureCollection"]["features"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == id)
        .unwrap_or_else(|| panic!("no feature {id}"))
}

fn line_colour(plot: &Value, id: &str) -> String {
    feature(plot, id)["properties"]["style"]["line"]["color"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn colour(st: &WebState, ids: &[&str], colour: &str) -> String {
    st.debrief()
        .run_tool(
            &json!({"toolId": "set-track-color", "params": {"color": colour}, "featureIds": ids}),
            &Fixed(Answer::Approve),
        )
        .await
        .text
}

#[tokio::test]
async fn the_page_and_its_assets_are_served_and_fetch_nothing_from_elsewhere() {
    let dir = tempfile::tempdir().unwrap();
    let st = common::state(dir.path(), false).await;
    let page = get(&st, "/").await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.content_type.starts_with("text/html"));
    let html = page.text();
    assert!(html.contains("<canvas id=\"map\""));
    assert!(html.contains("/assets/app.js") && html.contains("/assets/app.css"));
    // the session state and config ride along as a JSON data block
    let start = html
        .find("<script type=\"application/json\" id=\"boot\">")
        .unwrap();
    let rest = &html[start..];
    let json_start = rest.find('>').unwrap() + 1;
    let json_end = rest.find("</script>").unwrap();
    let boot: Value = serde_json::from_str(&rest[json_start..json_end]).unwrap();
    assert_eq!(boot["state"]["activePlot"], Value::Null);
    assert_eq!(boot["config"]["chat"]["configured"], false);
    let html = format!("{}{}", &html[..start], &rest[json_end..]);
    for (path, kind) in [
        ("/assets/app.js", "text/javascript"),
        ("/assets/app.css", "text/css"),
    ] {
        let r = get(&st, path).await;
        assert_eq!(r.status, StatusCode::OK, "{path}");
        assert!(
            r.content_type.starts_with(kind),
            "{path}: {}",
            r.content_type
        );
    }
    // Offline: the only absolute URL in any asset is the SVG namespace (an identifier, never
    // fetched).
    for text in [
        html,
        get(&st, "/assets/app.js").await.text(),
        get(&st, "/assets/app.css").await.text(),
    ] {
        let stripped = text.replace("http://www.w3.org/2000/svg", "");
        assert!(
            !stripped.contains("http://")
                && !stripped.contains("https://")
                && !stripped.contains("//cdn"),
            "an asset refers to another site"
        );
    }
    let res = router(st.clone())
        .oneshot(authed(Request::get("/").body(Body::empty()).unwrap()))
        .await
        .unwrap();
    let csp = res.headers()[header::CONTENT_SECURITY_POLICY]
        .to_str()
        .unwrap();
    assert!(csp.contains("default-src 'self'") && csp.contains("connect-src 'self'"));
}

#[tokio::test]
async fn without_a_backend_the_chat_says_how_to_configure_one() {
    let dir = tempfile::tempdir().unwrap();
    let st = common::state(dir.path(), false).await;
    let c = get(&st, "/api/config").await.json();
    assert_eq!(c["chat"]["configured"], false);
    let hint = c["chat"]["hint"].as_str().unwrap();
    assert!(hint.contains("toolgate serve --model-url") && hint.contains("--model"));
    let r = post(&st, "/api/chat", json!({"utterance": "colour it red"})).await;
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(r.json()["code"], "no_chat_backend");
    assert!(r.json()["error"].as_str().unwrap().contains("--model-url"));

    let st = common::state(dir.path(), true).await;
    let c = get(&st, "/api/config").await.json();
    assert_eq!(c["chat"]["configured"], true);
    assert_eq!(c["chat"]["description"], "scripted test backend");
}

#[tokio::test]
async fn catalogue_search_open_and_plot_features() {
    let dir = tempfile::tempdir().unwrap();
    let st = common::state(dir.path(), false).await;
    let all = ok(&st, "/api/catalog/search", json!({})).await;
    assert_eq!(all["total"], 3);
    let alpha = ok(&st, "/api/catalog/search", json!({"text": "alpha"})).await;
    assert_eq!(alpha["total"], 2);
    let day1 = ok(
        &st,
        "/api/catalog/search",
        json!({"text": "alpha", "startTime": "2026-03-01", "endTime": "2026-03-01T23:00:00Z", "platforms": ["NELSON"]}),
    )
    .await;
    assert_eq!(day1["matches"][0]["plotId"], ALPHA);
    assert_eq!(day1["total"], 1);
    let none = ok(
        &st,
        "/api/catalog/search",
        json!({"text": "no-such-exercise"}),
    )
    .await;
    assert_eq!(none["total"], 0);
    assert_eq!(none["message"], "No plots matched.");

    let state = get(&st, "/api/state").await.json();
    assert_eq!(state["activePlot"], Value::Null);
    let state = ok(&st, "/api/plots/open", json!({"plotId": ALPHA})).await;
    assert_eq!(state["activePlot"], ALPHA);
    assert_eq!(state["plots"][0]["dirty"], false);
    assert_eq!(state["plots"][0]["version"], 1);

    let p = plot(&st).await;
    assert_eq!(p["plotId"], ALPHA);
    assert_eq!(p["title"], "Exercise Alpha — Day 1");
    assert_eq!(p["active"], true);
    assert_eq!(p["featureCollection"]["type"], "FeatureCollection");
    let n = p["featureCollection"]["features"].as_array().unwrap().len();
    assert_eq!(n, 10);
    let inv = p["inventory"].as_array().unwrap();
    assert_eq!(inv.len(), n);
    let nelson = inv.iter().find(|r| r["id"] == "track-nelson").unwrap();
    assert_eq!(nelson["name"], "HMS Nelson");
    assert_eq!(nelson["kind"], "TRACK");
    assert_eq!(nelson["platform"], "HMS Nelson");
    assert!(
        nelson["start"]
            .as_str()
            .unwrap()
            .starts_with("2026-03-01T00:00")
    );
    assert_eq!(nelson["pointCount"], 361);
    let bbox = p["bbox"].as_array().unwrap();
    assert_eq!(bbox.len(), 4);

    // the map view: the same features, track positions cut to their times
    let map = get(&st, "/api/plot?view=map").await.json();
    let mp = feature(&map, "track-nelson")["properties"]["positions"][3].clone();
    let fp = feature(&p, "track-nelson")["properties"]["positions"][3].clone();
    assert_eq!(mp, json!({"time": fp["time"]}));
    assert!(fp["course"].is_number());
    let mprops = &feature(&map, "track-nelson")["properties"];
    assert_eq!(mprops["position_courses"][3], fp["course"]);
    assert_eq!(mprops["position_speeds"][3], fp["speed"]);
    assert_eq!(feature(&map, "point-datum-a"), feature(&p, "point-datum-a"));
    assert_eq!(map["inventory"], p["inventory"]);
    let r = get(&st, "/api/plot?view=tiny").await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.json()["code"], "invalid_query");

    // a second plot becomes active; the first stays open and can be asked for by id
    ok(&st, "/api/plots/open", json!({"plotId": BULK})).await;
    let bulk = plot(&st).await;
    assert!(
        bulk["featureCollection"]["features"]
            .as_array()
            .unwrap()
            .len()
            >= 250
    );
    let r = get(&st, &format!("/api/plot?plotId={}", urlencode(ALPHA))).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.json()["active"], false);
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[tokio::test]
async fn malformed_requests_get_a_4xx_with_a_json_error() {
    let dir = tempfile::tempdir().unwrap();
    let st = common::state(dir.path(), false).await;
    let raw = |method: &str, path: &str, ct: Option<&str>, body: &str| {
        let mut b = Request::builder().method(method).uri(path);
        if let Some(ct) = ct {
            b = b.header(header::CONTENT_TYPE, ct);
        }
        b.body(Body::from(body.to_owned())).unwrap()
    };
    let json_ct = Some("application/json");
    // (request, status, code) before any plot is open
    let cases: Vec<(Request<Body>, u16, &str)> = vec![
        (
            raw("POST", "/api/catalog/search", json_ct, "{"),
            400,
            "malformed_json",
        ),
        (
            raw("POST", "/api/catalog/search", None, "{}"),
            415,
            "unsupported_media_type",
        ),
        (
            raw("POST", "/api/catalog/search", json_ct, r#"{"bogus": 1}"#),
            422,
            "invalid_body",
        ),
        (
            raw("POST", "/api/catalog/search", json_ct, r#"{"text": 5}"#),
            422,
            "invalid_body",
        ),
        (
            raw(
                "POST",
                "/api/catalog/search",
                json_ct,
                r#"{"startTime": "yesterday"}"#,
            ),
            400,
            "bad_request",
        ),
        (
            raw(
                "POST",
                "/api/catalog/search",
                json_ct,
                r#"{"bbox": [1, 2, 3]}"#,
            ),
            422,
            "invalid_body",
        ),
        (
            raw("POST", "/api/plots/open", json_ct, "{}"),
            422,
            "invalid_body",
        ),
        (
            raw("POST", "/api/plots/open", json_ct, "[]"),
            422,
            "invalid_body",
        ),
        (
            raw(
                "POST",
                "/api/plots/open",
                json_ct,
                r#"{"plotId": "stac://nope/x.json"}"#,
            ),
            404,
            "unknown_plot",
        ),
        (raw("GET", "/api/plot", None, ""), 409, "no_plot_open"),
        (
            raw(
                "GET",
                "/api/plot?plotId=stac://demo/none/item.json",
                None,
                "",
            ),
            404,
            "unknown_plot",
        ),
        (
            raw("GET", "/api/plot?zoom=3", None, ""),
            400,
            "invalid_query",
        ),
        (raw("POST", "/api/undo", json_ct, "{}"), 409, "no_plot_open"),
        (
            raw("POST", "/api/save", json_ct, "not json"),
            400,
            "malformed_json",
        ),
        (
            raw("POST", "/api/select", json_ct, r#"{"ids": ["a"]}"#),
            409,
            "no_plot_open",
        ),
        (
            raw("POST", "/api/chat", json_ct, r#"{"utterance": "   "}"#),
            400,
            "bad_request",
        ),
        (
            raw("POST", "/api/chat", json_ct, r#"{"text": "hi"}"#),
            422,
            "invalid_body",
        ),
        (
            raw(
                "POST",
                "/api/chat/confirm",
                json_ct,
                r#"{"id": "x", "answer": "maybe"}"#,
            ),
            422,
            "invalid_body",
        ),
        (
            raw(
                "POST",
                "/api/chat/confirm",
                json_ct,
                r#"{"id": "x", "answer": "approve"}"#,
            ),
            404,
            "not_found",
        ),
        (raw("GET", "/api/nothing-here", None, ""), 404, "not_found"),
        (raw("GET", "/etc/passwd", None, ""), 404, "not_found"),
        (
            raw("DELETE", "/api/save", None, ""),
            405,
            "method_not_allowed",
        ),
        (raw("GET", "/api/save", None, ""), 405, "method_not_allowed"),
        (
            raw("POST", "/api/state", json_ct, "{}"),
            405,
            "method_not_allowed",
        ),
    ];
    for (req, status, code) in cases {
        let what = format!("{} {}", req.method(), req.uri());
        let r = send(&st, req).await;
        assert_error(&r, status, code, &what);
    }
    // with a plot open
    ok(&st, "/api/plots/open", json!({"plotId": ALPHA})).await;
    let cases: Vec<(Request<Body>, u16, &str)> = vec![
        (
            raw("POST", "/api/undo", json_ct, "{}"),
            409,
            "nothing_to_do",
        ),
        (
            raw("POST", "/api/redo", json_ct, "{}"),
            409,
            "nothing_to_do",
        ),
        (
            raw(
                "POST",
                "/api/undo",
                json_ct,
                r#"{"plotId": "stac://demo/bulk-tracks/item.json"}"#,
            ),
            404,
            "unknown_plot",
        ),
        (
            raw("POST", "/api/select", json_ct, r#"{"ids": "track-nelson"}"#),
            422,
            "invalid_body",
        ),
        (
            raw(
                "POST",
                "/api/select",
                json_ct,
                r#"{"ids": ["track-nelson", "no-such-track", "nope/positions/1"]}"#,
            ),
            422,
            "unknown_feature",
        ),
    ];
    for (req, status, code) in cases {
        let what = format!("{} {}", req.method(), req.uri());
        let r = send(&st, req).await;
        assert_error(&r, status, code, &what);
        if code == "unknown_feature" {
            let msg = r.json()["error"].as_str().unwrap().to_owned();
            assert!(
                msg.contains("\"no-such-track\"") && msg.contains("\"nope/positions/1\""),
                "{msg}"
            );
            assert!(!msg.contains("\"track-nelson\""), "{msg}");
        }
    }
    // the selection was not changed by the refused request
    assert_eq!(
        get(&st, "/api/state").await.json()["plots"][0]["selection"],
        json!([])
    );
}

fn assert_error(r: &Reply, status: u16, code: &str, what: &str) {
    assert_eq!(r.status.as_u16(), status, "{what}: {}", r.text());
    assert!(
        r.content_type.starts_with("application/json"),
        "{what}: {}",
        r.content_type
    );
    let v = r.json();
    assert_eq!(v["code"], code, "{what}: {v}");
    let msg = v["error"].as_str().unwrap();
    assert!(!msg.trim().is_empty(), "{what}");
    for bad in ["panicked", "stack backtrace", "RUST_BACKTRACE", "src/"] {
        assert!(!msg.contains(bad), "{what}: {msg}");
    }
}

#[tokio::test]
async fn other_sites_cannot_reach_the_workbench() {
    let dir = tempfile::tempdir().unwrap();
    let st = common::state(dir.path(), false).await;
    let r = send(
        &st,
        Request::get("/api/state")
            .header(header::HOST, "evil.example:8080")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_error(&r, 403, "host_not_allowed", "DNS-rebound host");
    let r = send(
        &st,
        Request::post("/api/plots/open")
            .header(header::HOST, "127.0.0.1:8080")
            .header(header::ORIGIN, "https://evil.example")
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(json!({"plotId": ALPHA}).to_string()))
            .unwrap(),
    )
    .await;
    assert_error(&r, 403, "origin_not_allowed", "cross-site POST");
    assert_eq!(
        get(&st, "/api/state").await.json()["activePlot"],
        Value::Null
    );
    // the page itself (same origin, loopback host) is served
    let r = send(
        &st,
        Request::post("/api/plots/open")
            .header(header::HOST, "localhost:8080")
            .header(header::ORIGIN, "http://localhost:8080")
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(json!({"plotId": ALPHA}).to_string()))
            .unwrap(),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    let allowed = st.clone().allow_host("workbench.lan");
    let r = send(
        &allowed,
        Request::get("/api/state")
            .header(header::HOST, "workbench.lan:80")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK);
}

#[tokio::test]
async fn the_selection_is_the_one_the_agent_tools_use() {
    let dir = tempfile::tempdir().unwrap();
    let st = common::state(dir.path(), false).await;
    ok(&st, "/api/plots/open", json!({"plotId": ALPHA})).await;
    let s = ok(
        &st,
        "/api/select",
        json!({"ids": ["track-nelson", "track-contact/positions/4", "track-nelson/positions/9"]}),
    )
    .await;
    assert_eq!(
        s["plots"][0]["selection"],
        json!([
            "track-nelson",
            "track-contact/positions/4",
            "track-nelson/positions/9"
        ])
    );
    assert_eq!(
        s["plots"][0]["selectedIds"],
        json!(["track-nelson", "track-contact"])
    );
    // the agent tool with no names or ids works on that selection
    let reply = st
        .debrief()
        .run_tool(
            &json!({"toolId": "set-track-color", "params": {"color": "orange"}}),
            &Fixed(Answer::Approve),
        )
        .await
        .text;
    assert!(
        reply.starts_with("Applied Set Track Color to 2 feature(s)"),
        "{reply}"
    );
    let p = plot(&st).await;
    assert_eq!(line_colour(&p, "track-nelson"), "orange");
    assert_eq!(line_colour(&p, "track-contact"), "orange");
    assert_eq!(line_colour(&p, "track-collingwood"), "#008000");
    // the summary tool sees it too
    let summary: Value =
        serde_json::from_str(&st.debrief().summarize(&json!({"selectionOnly": true})).text)
            .unwrap();
    assert_eq!(summary["total"], 2, "{summary}");
    // clearing
    let s = ok(&st, "/api/select", json!({"ids": [], "plotId": ALPHA})).await;
    assert_eq!(s["plots"][0]["selectedIds"], json!([]));
}

#[tokio::test]
async fn undo_redo_revert_and_save() {
    let dir = tempfile::tempdir().unwrap();
    let st = common::state(dir.path(), false).await;
    ok(&st, "/api/plots/open", json!({"plotId": ALPHA})).await;
    let file = dir.path().join("alpha-day1").join("features.geojson");
    let original = std::fs::read(&file).unwrap();

    let reply = colour(&st, &["track-contact"], "red").await;
    assert!(reply.starts_with("Applied"), "{reply}");
    let s = get(&st, "/api/state").await.json();
    assert_eq!(s["plots"][0]["dirty"], true);
    assert_eq!(s["plots"][0]["canUndo"], true);
    assert_eq!(s["plots"][0]["version"], 2);
    assert_eq!(line_colour(&plot(&st).await, "track-contact"), "red");
    // the agent's edit did not touch the file
    assert_eq!(std::fs::read(&file).unwrap(), original);

    let r = ok(&st, "/api/undo", json!({})).await;
    assert!(r["message"].as_str().unwrap().starts_with("Undid"), "{r}");
    assert_eq!(r["state"]["plots"][0]["dirty"], false);
    assert_eq!(r["state"]["plots"][0]["canRedo"], true);
    assert_eq!(line_colour(&plot(&st).await, "track-contact"), "#708090");

    let r = ok(&st, "/api/redo", json!({"plotId": ALPHA})).await;
    assert!(r["message"].as_str().unwrap().starts_with("Redid"), "{r}");
    assert_eq!(r["state"]["plots"][0]["dirty"], true);
    assert_eq!(line_colour(&plot(&st).await, "track-contact"), "red");

    let r = ok(&st, "/api/save", json!({})).await;
    assert!(
        r["message"].as_str().unwrap().starts_with("Saved to "),
        "{r}"
    );
    assert_eq!(r["state"]["plots"][0]["dirty"], false);
    let saved: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let contact = toolgate_test_support::feature_by_id(&saved, "track-contact").unwrap();
    assert_eq!(contact["properties"]["style"]["line"]["color"], "red");
    // atomic write: no temp file left beside the plot
    let leftovers: Vec<_> = std::fs::read_dir(file.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "features.geojson" && n != "item.json")
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    // revert discards an unsaved edit and goes back to the saved file
    colour(&st, &["track-nelson"], "yellow").await;
    assert_eq!(line_colour(&plot(&st).await, "track-nelson"), "yellow");
    let r = ok(&st, "/api/revert", json!({})).await;
    assert_eq!(r["state"]["plots"][0]["dirty"], false);
    let p = plot(&st).await;
    assert_eq!(line_colour(&p, "track-nelson"), "#0000FF");
    assert_eq!(line_colour(&p, "track-contact"), "red");
}

#[tokio::test]
async fn a_plot_closed_and_opened_again_is_not_served_from_a_stale_cache() {
    let dir = tempfile::tempdir().unwrap();
    let st = common::state(dir.path(), false).await;
    ok(&st, "/api/plots/open", json!({"plotId": ALPHA})).await;
    assert_eq!(line_colour(&plot(&st).await, "track-nelson"), "#0000FF");
    colour(&st, &["track-nelson"], "red").await;
    st.debrief().session().save(ALPHA).unwrap();
    st.debrief().session().close(ALPHA).unwrap();
    ok(&st, "/api/plots/open", json!({"plotId": ALPHA})).await;
    let p = plot(&st).await;
    assert_eq!(p["version"], 1);
    assert_eq!(line_colour(&p, "track-nelson"), "red");
}

#[tokio::test]
async fn save_refuses_when_the_file_changed_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let st = common::state(dir.path(), false).await;
    ok(&st, "/api/plots/open", json!({"plotId": ALPHA})).await;
    colour(&st, &["track-nelson"], "red").await;
    let file = dir.path().join("alpha-day1").join("features.geojson");
    let mut theirs = std::fs::read(&file).unwrap();
    theirs.extend_from_slice(b"\n");
    std::fs::write(&file, &theirs).unwrap();

    let r = post(&st, "/api/save", json!({})).await;
    assert_error(&r, 409, "changed_on_disk", "save over a changed file");
    assert!(
        r.json()["error"]
            .as_str()
            .unwrap()
            .contains("changed on disk")
    );
    // nothing written, nothing lost
    assert_eq!(std::fs::read(&file).unwrap(), theirs);
    let s = get(&st, "/api/state").await.json();
    assert_eq!(s["plots"][0]["dirty"], true);
    assert_eq!(line_colour(&plot(&st).await, "track-nelson"), "red");
}

/// Read server-sent events from a response body until `want` accepts one (or time runs out).
async fn next_event(
    stream: &mut (impl futures_util::Stream<Item = Result<axum::body::Bytes, axum::Error>> + Unpin),
    buf: &mut String,
    want: impl Fn(&str, &Value) -> bool,
) -> (String, Value) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        while let Some(cut) = buf.find("\n\n") {
            let block: String = buf.drain(..cut + 2).collect();
            let mut name = String::from("message");
            let mut data = String::new();
            for line in block.lines() {
                if let Some(n) = line.strip_prefix("event:") {
                    name = n.trim().to_owned();
                } else if let Some(d) = line.strip_prefix("data:") {
                    data.push_str(d.strip_prefix(' ').unwrap_or(d));
                }
            }
            if data.is_empty() {
                continue;
            }
            let v: Value = serde_json::from_str(&data).unwrap();
            if want(&name, &v) {
                return (name, v);
            }
        }
        let chunk = tokio::time::timeout_at(deadline, stream.next())
            .await
            .expect("timed out waiting for an event")
            .expect("the stream ended")
            .unwrap();
        buf.push_str(std::str::from_utf8(&chunk).unwrap());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_updates_follow_changes_made_directly_on_the_shared_session() {
    let dir = tempfile::tempdir().unwrap();
    let st = common::state(dir.path(), false).await;
    let res = router(st.clone())
        .oneshot(authed(
            Request::get("/api/events").body(Body::empty()).unwrap(),
        ))
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert!(
        res.headers()[header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let mut stream = res.into_body().into_data_stream();
    let mut buf = String::new();
    let (name, first) = next_event(&mut stream, &mut buf, |_, _| true).await;
    assert_eq!(name, "state");
    assert_eq!(first["activePlot"], Value::Null);

    // An MCP client on the same session opens a plot and edits it: no web request involved.
    let d = st.debrief().clone();
    let reply = d
        .search_plots(&json!({"text": "alpha", "open": true, "startTime": "2026-03-01", "endTime": "2026-03-01T12:00:00Z"}))
        .await.text;
    assert!(reply.contains("\"opened\""), "{reply}");
    let (_, opened) = next_event(&mut stream, &mut buf, |_, v| v["activePlot"] == ALPHA).await;
    assert_eq!(opened["plots"][0]["version"], 1);
    assert_eq!(opened["plots"][0]["dirty"], false);

    let reply = colour(&st, &["track-collingwood"], "purple").await;
    assert!(reply.starts_with("Applied"), "{reply}");
    let (_, edited) = next_event(&mut stream, &mut buf, |_, v| v["plots"][0]["version"] == 2).await;
    assert_eq!(edited["plots"][0]["dirty"], true);
    assert_eq!(edited["plots"][0]["canUndo"], true);

    // a selection change made on the session arrives too
    d.session()
        .select(ALPHA, vec!["track-contact".to_owned()])
        .unwrap();
    let (_, selected) = next_event(&mut stream, &mut buf, |_, v| {
        v["plots"][0]["selectedIds"] == json!(["track-contact"])
    })
    .await;
    assert_eq!(selected["plots"][0]["version"], 2);

    // and an analytical result bumps the Results panel's count
    let reply = d
        .run_tool(
            &json!({"toolId": "range-bearing", "featureIds": ["track-nelson", "track-contact"]}),
            &Fixed(Answer::Decline),
        )
        .await
        .text;
    assert!(reply.starts_with("Ran Range Bearing"), "{reply}");
    let (_, ds) = next_event(&mut stream, &mut buf, |_, v| v["datasets"] == 1).await;
    assert_eq!(ds["plots"][0]["version"], 2);
}

#[tokio::test]
async fn datasets_for_the_results_panel() {
    let dir = tempfile::tempdir().unwrap();
    let st = common::state(dir.path(), false).await;
    assert_eq!(
        get(&st, "/api/datasets").await.json()["datasets"],
        json!([])
    );
    ok(&st, "/api/plots/open", json!({"plotId": ALPHA})).await;
    let reply = st
        .debrief()
        .run_tool(
            &json!({"toolId": "range-bearing", "featureIds": ["track-nelson", "track-contact"]}),
            &Fixed(Answer::Decline),
        )
        .await
        .text;
    assert!(reply.contains("Results panel as result-1"), "{reply}");
    let ds = get(&st, "/api/datasets").await.json();
    let d = &ds["datasets"][0];
    assert_eq!(d["id"], "result-1");
    assert_eq!(d["toolId"], "range-bearing");
    assert_eq!(d["plotId"], ALPHA);
    let series = d["data"]["series"].as_array().unwrap();
    assert!(series.len() > 100);
    assert!(
        series[0]["range_nm"].is_number() && series[0]["bearing_deg"].is_number(),
        "ranges in the unit setting, nautical miles by default: {}",
        series[0]
    );
    assert!(series[0]["time"].is_string());
    assert_eq!(get(&st, "/api/state").await.json()["datasets"], 1);
}

async fn chat(st: &WebState, utterance: &str) -> axum::response::Response {
    router(st.clone())
        .oneshot(authed(
            Request::post("/api/chat")
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(json!({"utterance": utterance}).to_string()))
                .unwrap(),
        ))
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_streams_tool_calls_and_asks_before_an_edit() {
    let dir = tempfile::tempdir().unwrap();
    let st = common::state(dir.path(), true).await;
    ok(&st, "/api/plots/open", json!({"plotId": ALPHA})).await;
    ok(&st, "/api/select", json!({"ids": ["track-contact"]})).await;

    // Approve
    let res = chat(&st, "colour the submarine track red").await;
    assert_eq!(res.status(), StatusCode::OK);
    let mut stream = res.into_body().into_data_stream();
    let mut buf = String::new();
    let (name, delta) = next_event(&mut stream, &mut buf, |_, _| true).await;
    assert_eq!(
        (name.as_str(), delta["type"].as_str()),
        ("textDelta", Some("textDelta"))
    );
    let (_, started) = next_event(&mut stream, &mut buf, |n, _| n == "toolCallStarted").await;
    assert_eq!(started["tool"], "debrief_runTool");
    assert_eq!(started["input"]["toolId"], "set-track-color");
    let (_, asked) = next_event(&mut stream, &mut buf, |n, _| n == "confirmationAsked").await;
    let id = asked["id"].as_str().unwrap().to_owned();
    assert_eq!(
        asked["preview"]["title"],
        "Run Set Track Color on Exercise Alpha — Day 1"
    );
    let body = asked["preview"]["body"].as_str().unwrap();
    assert!(
        body.contains("- Target: Contact") && body.contains("- color: red"),
        "{body}"
    );
    assert!(!body.contains("{\""), "plain language, not JSON: {body}");
    // nothing applied while the person reads
    assert_eq!(
        get(&st, "/api/state").await.json()["plots"][0]["version"],
        1
    );
    // a second turn is refused while this one waits
    let busy = chat(&st, "colour it blue").await;
    assert_eq!(busy.status(), StatusCode::CONFLICT);
    let r = ok(
        &st,
        "/api/chat/confirm",
        json!({"id": id, "answer": "approve"}),
    )
    .await;
    assert_eq!(r["approved"], true);
    let (_, closed) = next_event(&mut stream, &mut buf, |n, _| n == "confirmationClosed").await;
    assert_eq!(closed["approved"], true);
    let (_, finished) = next_event(&mut stream, &mut buf, |n, _| n == "toolCallFinished").await;
    assert!(
        finished["result"]
            .as_str()
            .unwrap()
            .starts_with("Applied Set Track Color to 1 feature(s)"),
        "{finished}"
    );
    let (_, fin) = next_event(&mut stream, &mut buf, |n, _| n == "final").await;
    assert!(fin["text"].as_str().unwrap().contains("dirty"));
    assert!(
        stream.next().await.is_none(),
        "the stream ends with the turn"
    );
    let s = get(&st, "/api/state").await.json();
    assert_eq!(s["plots"][0]["dirty"], true);
    assert_eq!(s["plots"][0]["version"], 2);
    assert_eq!(line_colour(&plot(&st).await, "track-contact"), "red");
    // answering again is a 404: the confirmation is gone
    let r = post(
        &st,
        "/api/chat/confirm",
        json!({"id": id, "answer": "approve"}),
    )
    .await;
    assert_error(&r, 404, "not_found", "stale confirmation");

    // Decline: nothing applied, and the model is told so
    let res = chat(&st, "colour the submarine track green").await;
    let mut stream = res.into_body().into_data_stream();
    let mut buf = String::new();
    let (_, asked) = next_event(&mut stream, &mut buf, |n, _| n == "confirmationAsked").await;
    let id = asked["id"].as_str().unwrap().to_owned();
    ok(
        &st,
        "/api/chat/confirm",
        json!({"id": id, "answer": "decline"}),
    )
    .await;
    let (_, finished) = next_event(&mut stream, &mut buf, |n, _| n == "toolCallFinished").await;
    assert!(
        finished["result"].as_str().unwrap().contains("declined"),
        "{finished}"
    );
    next_event(&mut stream, &mut buf, |n, _| n == "final").await;
    assert!(stream.next().await.is_none());
    let s = get(&st, "/api/state").await.json();
    assert_eq!(s["plots"][0]["version"], 2);
    assert_eq!(line_colour(&plot(&st).await, "track-contact"), "red");

    // A refusal reaches the page as the model sees it
    ok(&st, "/api/select", json!({"ids": []})).await;
    let res = chat(&st, "colour the selected track blue").await;
    assert_eq!(res.status(), StatusCode::OK);
    let mut stream = res.into_body().into_data_stream();
    let mut buf = String::new();
    let (_, finished) = next_event(&mut stream, &mut buf, |n, _| n == "toolCallFinished").await;
    assert!(
        finished["result"]
            .as_str()
            .unwrap()
            .starts_with("Nothing is selected"),
        "{finished}"
    );
    assert_eq!(
        finished["status"], "refused",
        "typed, not matched from the wording"
    );
    assert_eq!(finished["reason"], "target", "{finished}");
    while stream.next().await.is_some() {}

    // An analytical call runs without a dialog and fills the Results panel
    let res = chat(&st, "range and bearing from Nelson to the contact").await;
    let mut stream = res.into_body().into_data_stream();
    let mut buf = String::new();
    let (_, finished) = next_event(&mut stream, &mut buf, |n, _| {
        n == "toolCallFinished" || n == "confirmationAsked"
    })
    .await;
    assert_eq!(finished["type"], "toolCallFinished");
    assert!(
        finished["result"]
            .as_str()
            .unwrap()
            .starts_with("Ran Range Bearing"),
        "{finished}"
    );
    assert_eq!(
        get(&st, "/api/datasets").await.json()["datasets"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    while stream.next().await.is_some() {}

    // A backend that dies mid-turn becomes an error event, and the next turn can start
    let res = chat(&st, "crash please").await;
    let mut stream = res.into_body().into_data_stream();
    let mut buf = String::new();
    let (_, err) = next_event(&mut stream, &mut buf, |n, _| n == "error").await;
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("stopped unexpectedly")
    );
    assert!(!err["message"].as_str().unwrap().contains("panicked"));
    assert!(stream.next().await.is_none());
    let res = chat(&st, "hello").await;
    assert_eq!(res.status(), StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_that_goes_away_declines_its_confirmation() {
    let dir = tempfile::tempdir().unwrap();
    let st = common::state(dir.path(), true).await;
    ok(&st, "/api/plots/open", json!({"plotId": ALPHA})).await;
    ok(&st, "/api/select", json!({"ids": ["track-nelson"]})).await;
    let res = chat(&st, "colour it yellow").await;
    let mut stream = res.into_body().into_data_stream();
    let mut buf = String::new();
    next_event(&mut stream, &mut buf, |n, _| n == "confirmationAsked").await;
    assert_eq!(st.pending().waiting_ids().len(), 1);
    drop(stream);
    // nobody can answer any more: the confirmation ends as a decline, at once
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !st.pending().waiting_ids().is_empty() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "still waiting for a gone page"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // and the turn ended, so a new one can start
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let r = chat(&st, "hello").await;
        if r.status() == StatusCode::OK {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the turn never ended"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let s = get(&st, "/api/state").await.json();
    assert_eq!(s["plots"][0]["version"], 1);
    assert_eq!(s["plots"][0]["dirty"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_on_answers_over_tcp() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().unwrap();
    let st = common::state(dir.path(), false).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(toolgate_web::serve_until(listener, st, async move {
        let _ = stopped.await;
    }));
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    tcp.write_all(
        format!(
            "GET /api/state HTTP/1.1\r\nHost: {addr}\r\nAuthorization: {}\r\nConnection: close\r\n\r\n",
            common::bearer()
        )
        .as_bytes(),
    )
    .await
    .unwrap();
    let mut out = String::new();
    tcp.read_to_string(&mut out).await.unwrap();
    assert!(out.starts_with("HTTP/1.1 200"), "{out}");
    assert!(out.contains("\"activePlot\":null"), "{out}");
    stop.send(()).unwrap();
    server.await.unwrap().unwrap();
}

#[tokio::test]
async fn a_tool_that_fails_leaves_an_error_entry_in_the_results_panel() {
    let dir = tempfile::tempdir().unwrap();
    let st = common::state(dir.path(), false).await;
    ok(&st, "/api/plots/open", json!({"plotId": ALPHA})).await;
    let before = get(&st, "/api/state").await.json();
    assert_eq!(before["datasets"], 0);
    // track-stats measures a track; a reference point makes it fail when it runs.
    let reply = st
        .debrief()
        .run_tool(
            &json!({"toolId": "track-stats", "featureIds": ["point-rv"]}),
            &Fixed(Answer::Approve),
        )
        .await
        .text;
    assert!(!reply.starts_with("Ran "), "{reply}");
    let after = get(&st, "/api/state").await.json();
    assert_eq!(after["datasets"], 1, "{after}");
    let ds = get(&st, "/api/datasets").await.json();
    let entry = &ds["datasets"][0];
    assert_eq!(entry["kind"], "error", "{entry}");
    assert_eq!(entry["toolId"], "track-stats");
    assert_eq!(
        entry["summary"],
        reply.as_str(),
        "the panel shows the model's error text"
    );
    assert_eq!(entry["plotId"], ALPHA);
}

async fn run_from_palette(st: &WebState, body: Value) -> axum::response::Response {
    router(st.clone())
        .oneshot(authed(
            Request::post("/api/tools/run")
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(body.to_string()))
                .unwrap(),
        ))
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_palette_lists_every_tool_and_runs_them_through_the_agents_gate() {
    let dir = tempfile::tempdir().unwrap();
    let st = common::state(dir.path(), false).await;

    // every registry tool, with its description and schema, and whether it asks first
    let tools = get(&st, "/api/tools").await.json();
    let tools = tools["tools"].as_array().unwrap();
    let listing = st.debrief().registry().listing();
    assert_eq!(tools.len(), listing.len());
    let by = |id: &str| tools.iter().find(|t| t["id"] == id).unwrap().clone();
    let stc = by("set-track-color");
    assert_eq!(stc["mutating"], true);
    assert!(!stc["description"].as_str().unwrap().is_empty());
    assert_eq!(stc["inputSchema"]["required"], json!(["color"]));
    let ts = by("track-stats");
    assert_eq!(ts["mutating"], false);
    assert!(
        ts["inputSchema"]["properties"]["distance_unit"]["enum"]
            .as_array()
            .is_some()
    );

    // no plot: the same refusal an agent gets, nothing run
    let res = run_from_palette(&st, json!({"toolId": "track-stats"})).await;
    let mut stream = res.into_body().into_data_stream();
    let mut buf = String::new();
    let (_, fin) = next_event(&mut stream, &mut buf, |n, _| n == "toolCallFinished").await;
    assert_eq!(fin["status"], "refused");
    assert_eq!(fin["reason"], "no_plot");

    ok(&st, "/api/plots/open", json!({"plotId": ALPHA})).await;
    // an analysis: no question, a result scoped to its plot
    let res = run_from_palette(
        &st,
        json!({"toolId": "track-stats", "params": {"distance_unit": "km"}, "featureIds": ["track-nelson"]}),
    )
    .await;
    let mut stream = res.into_body().into_data_stream();
    let mut buf = String::new();
    let (name, fin) = next_event(&mut stream, &mut buf, |n, _| {
        n == "toolCallFinished" || n == "confirmationAsked"
    })
    .await;
    assert_eq!(name, "toolCallFinished", "an analysis asks nothing");
    assert_eq!(fin["status"], "ok", "{fin}");
    let ds = get(&st, "/api/datasets").await.json();
    let d = ds["datasets"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(d["toolId"], "track-stats");
    assert_eq!(d["plotId"], ALPHA);
    assert_eq!(d["data"]["distance_unit"], "km");

    // invalid parameters are refused before any question
    let res = run_from_palette(
        &st,
        json!({"toolId": "set-track-color", "params": {"color": 7}, "featureIds": ["track-nelson"]}),
    )
    .await;
    let mut stream = res.into_body().into_data_stream();
    let mut buf = String::new();
    let (name, fin) = next_event(&mut stream, &mut buf, |n, _| {
        n == "toolCallFinished" || n == "confirmationAsked"
    })
    .await;
    assert_eq!(name, "toolCallFinished");
    assert_eq!(fin["status"], "refused");

    // a mutation: the plain-language question, then one undoable, dirty step
    let res = run_from_palette(
        &st,
        json!({"toolId": "set-track-color", "params": {"color": "red"}, "featureIds": ["track-contact"]}),
    )
    .await;
    let mut stream = res.into_body().into_data_stream();
    let mut buf = String::new();
    let (_, asked) = next_event(&mut stream, &mut buf, |n, _| n == "confirmationAsked").await;
    let body = asked["preview"]["body"].as_str().unwrap();
    assert!(body.contains("Contact") && body.contains("red"), "{body}");
    assert_eq!(
        get(&st, "/api/state").await.json()["plots"][0]["dirty"],
        false
    );
    let id = asked["id"].as_str().unwrap();
    ok(
        &st,
        "/api/chat/confirm",
        json!({"id": id, "answer": "approve"}),
    )
    .await;
    let (_, fin) = next_event(&mut stream, &mut buf, |n, _| n == "toolCallFinished").await;
    assert_eq!(fin["status"], "ok", "{fin}");
    let s = get(&st, "/api/state").await.json();
    assert_eq!(s["plots"][0]["dirty"], true);
    let label = s["plots"][0]["undoLabel"].as_str().unwrap().to_owned();
    assert!(
        label.contains("red") && label.contains("Contact"),
        "{label}"
    );
    assert_eq!(line_colour(&plot(&st).await, "track-contact"), "red");

    // the activity log: who (the palette), what (the step), which plot, which session
    let log = get(&st, "/api/activity").await.json();
    let last = log["entries"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["who"], toolgate_web::PALETTE_ACTOR);
    assert_eq!(last["action"], "edit");
    assert_eq!(last["what"], label);
    assert_eq!(last["plotId"], ALPHA);
    assert_eq!(last["session"], "workbench");
    let undone = ok(&st, "/api/undo", json!({})).await;
    assert_eq!(undone["message"], format!("Undid: {label}"));
    let log = get(&st, "/api/activity").await.json();
    let last = log["entries"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(
        (last["action"].as_str(), last["what"].as_str()),
        (Some("undo"), Some(label.as_str()))
    );

    // a declined mutation applies nothing
    let res = run_from_palette(
        &st,
        json!({"toolId": "set-track-color", "params": {"color": "blue"}, "featureIds": ["track-contact"]}),
    )
    .await;
    let mut stream = res.into_body().into_data_stream();
    let mut buf = String::new();
    let (_, asked) = next_event(&mut stream, &mut buf, |n, _| n == "confirmationAsked").await;
    let v = get(&st, "/api/state").await.json()["plots"][0]["version"].clone();
    ok(
        &st,
        "/api/chat/confirm",
        json!({"id": asked["id"], "answer": "decline"}),
    )
    .await;
    let (_, fin) = next_event(&mut stream, &mut buf, |n, _| n == "toolCallFinished").await;
    assert_eq!(fin["status"], "declined");
    assert_eq!(
        get(&st, "/api/state").await.json()["plots"][0]["version"],
        v
    );
}

/// Issue 32 item 1: the Tools tab's run resolves and checks parameters before the Approve
/// dialog — a time nobody can place is refused with no dialog; a sloppy one is read on the
/// plot's day — and the dialog says what the edit will do in numbers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_palette_checks_times_before_the_dialog_and_the_dialog_counts_positions() {
    let dir = tempfile::tempdir().unwrap();
    let st = common::state(dir.path(), false).await;
    ok(&st, "/api/plots/open", json!({"plotId": ALPHA})).await;
    let version = || async { get(&st, "/api/state").await.json()["plots"][0]["version"].clone() };
    let before = version().await;
    let trim = |start: &str, end: &str| {
        json!({"toolId": "trim-track", "featureIds": ["track-nelson"],
            "params": {"start_time": start, "end_time": end}})
    };

    for (start, end, status) in [
        ("yesterday", "2026-03-01 05:00", "refused"),
        ("13:00", "14:00", "failed"),
    ] {
        let res = run_from_palette(&st, trim(start, end)).await;
        let mut stream = res.into_body().into_data_stream();
        let mut buf = String::new();
        let (name, fin) = next_event(&mut stream, &mut buf, |n, _| {
            n == "toolCallFinished" || n == "confirmationAsked"
        })
        .await;
        assert_eq!(
            name, "toolCallFinished",
            "no dialog for {start}–{end}: {fin}"
        );
        assert_eq!(fin["status"], status, "{fin}");
    }
    assert_eq!(version().await, before, "nothing changed");

    let res = run_from_palette(&st, trim("01:00", "2026-03-01 05:00")).await;
    let mut stream = res.into_body().into_data_stream();
    let mut buf = String::new();
    let (_, asked) = next_event(&mut stream, &mut buf, |n, _| n == "confirmationAsked").await;
    let body = asked["preview"]["body"].as_str().unwrap();
    assert!(
        body.contains("- start_time: 2026-03-01T01:00:00Z\n"),
        "{body}"
    );
    assert!(
        body.contains("- end_time: 2026-03-01T05:00:00Z\n"),
        "{body}"
    );
    assert!(
        body.contains("- Effect: remove 240 of 361 positions of HMS Nelson (keep 121)\n"),
        "{body}"
    );
    ok(
        &st,
        "/api/chat/confirm",
        json!({"id": asked["id"], "answer": "approve"}),
    )
    .await;
    let (_, fin) = next_event(&mut stream, &mut buf, |n, _| n == "toolCallFinished").await;
    assert_eq!(fin["status"], "ok", "{fin}");
    let p = plot(&st).await;
    let nelson = feature(&p, "track-nelson");
    assert_eq!(
        nelson["properties"]["positions"].as_array().unwrap().len(),
        121
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_sessions_edits_are_listed_reviewed_and_saved_from_the_page() {
    let dir = tempfile::tempdir().unwrap();
    let st = common::state(dir.path(), false).await;
    // the page's own session is listed first
    let sessions = get(&st, "/api/sessions").await.json();
    assert_eq!(sessions["sessions"][0]["id"], "workbench");
    assert_eq!(sessions["sessions"][0]["workbench"], true);

    // an MCP client's private session, as the MCP server registers it
    let agent = common::debrief(dir.path()).await;
    let id = st.directory().register(
        None,
        "claude-code/2.1.0",
        "MCP over HTTP (2025-11-25)",
        "claude-code/2.1.0",
        agent.clone(),
    );
    agent.open_plot(ALPHA).await.unwrap();
    let reply = toolgate_plot::activity::acting_as(
        "claude-code/2.1.0",
        agent.run_tool(
            &json!({"toolId": "set-track-color", "params": {"color": "yellow"}, "featureIds": ["track-nelson"]}),
            &Fixed(Answer::Approve),
        ),
    )
    .await;
    assert!(reply.is_ok(), "{}", reply.text);

    let s = get(&st, "/api/state").await.json();
    let brief = s["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["id"] == id)
        .unwrap()
        .clone();
    assert_eq!(brief["dirty"], true);
    assert_eq!(brief["connected"], true);
    let sessions = get(&st, "/api/sessions").await.json();
    let listed = sessions["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["id"] == id)
        .unwrap()
        .clone();
    assert_eq!(listed["client"], "claude-code/2.1.0");
    assert_eq!(listed["via"], "MCP over HTTP (2025-11-25)");
    assert_eq!(listed["activePlot"], ALPHA);
    assert_eq!(listed["plots"][0]["dirty"], true);
    let log = get(&st, "/api/activity").await.json();
    let last = log["entries"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["who"], "claude-code/2.1.0");
    assert_eq!(last["session"], id.as_str());

    // review: that session's copy of the plot, not the page's
    let theirs = get(&st, &format!("/api/plot?session={id}")).await.json();
    assert_eq!(line_colour(&theirs, "track-nelson"), "yellow");
    ok(&st, "/api/plots/open", json!({"plotId": ALPHA})).await;
    assert_ne!(line_colour(&plot(&st).await, "track-nelson"), "yellow");

    // save from the page: that session's edit reaches the file
    let file = dir.path().join("alpha-day1").join("features.geojson");
    ok(&st, "/api/save", json!({"session": id})).await;
    let saved: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let nelson = toolgate_test_support::feature_by_id(&saved, "track-nelson").unwrap();
    assert_eq!(nelson["properties"]["style"]["line"]["color"], "yellow");
    assert!(!agent.session().active().unwrap().doc.is_dirty());
    let log = get(&st, "/api/activity").await.json();
    let last = log["entries"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(
        (last["who"].as_str(), last["action"].as_str()),
        (Some("you (this page)"), Some("save"))
    );

    // disconnected with nothing unsaved, it stays listed for a while, marked so
    drop(agent);
    let sessions = get(&st, "/api/sessions").await.json();
    let listed = sessions["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["id"] == id)
        .unwrap()
        .clone();
    assert_eq!(listed["connected"], false);

    // an unknown session is a clear 404
    let r = post(&st, "/api/save", json!({"session": "mcp-999"})).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert!(
        r.json()["error"]
            .as_str()
            .unwrap()
            .contains("GET /api/sessions")
    );
}

/// Issue 17 item 6: a plot imported into the store while the workbench runs is found by the
/// page's search and opens, without a restart (the page's session is long-lived).
#[tokio::test]
async fn a_plot_imported_while_the_workbench_runs_is_found_and_opens() {
    let dir = tempfile::tempdir().unwrap();
    let st = common::state(dir.path(), false).await;
    let before = ok(&st, "/api/catalog/search", json!({"text": "boat1"})).await;
    assert_eq!(before["total"], 0);
    // Another process (here: the library `toolgate import` uses) adds a plot to the folder.
    let rep = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../rep/tests/fixtures/rep/valid/boat1.rep");
    let mut store = toolgate_plot::store::StacStore::open("demo", dir.path()).unwrap();
    let source = toolgate_plot::import::RepSource::read(&rep).unwrap();
    toolgate_plot::import::import_rep_files(&mut store, &[source], None, false).unwrap();
    let after = ok(&st, "/api/catalog/search", json!({"text": "boat1"})).await;
    assert_eq!(after["total"], 1, "{after}");
    let plot_id = after["matches"][0]["plotId"].as_str().unwrap().to_owned();
    let opened = ok(&st, "/api/plots/open", json!({"plotId": plot_id})).await;
    assert_eq!(opened["activePlot"], json!(plot_id), "{opened}");
    // Nothing changed since: the next search reads nothing again and answers the same.
    let again = ok(&st, "/api/catalog/search", json!({"text": "boat1"})).await;
    assert_eq!(again["total"], 1);
}

/// Issue 17 item 2 from the page: several REP files become ONE plot; the same import again is
/// refused (409) and leaves the store byte-identical; a bad encoding is a 400 naming the file.
#[tokio::test]
async fn the_page_imports_several_rep_files_as_one_plot() {
    use base64::Engine as _;
    let dir = tempfile::tempdir().unwrap();
    let st = common::state(dir.path(), false).await;
    let fixtures =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../rep/tests/fixtures/rep/valid");
    let file = |name: &str| json!({"name": name, "contentBase64": base64::engine::general_purpose::STANDARD.encode(std::fs::read(fixtures.join(name)).unwrap())});
    let body = json!({"files": [file("boat1.rep"), file("boat2.rep"), file("narrative.rep")], "plot": "Exercise Bravo"});
    let reply = ok(&st, "/api/import", body.clone()).await;
    assert_eq!(reply["title"], "Exercise Bravo", "{reply}");
    assert_eq!(reply["files"].as_array().unwrap().len(), 3);
    let found = ok(&st, "/api/catalog/search", json!({"text": "Bravo"})).await;
    assert_eq!(found["total"], 1, "{found}");
    let plot_id = reply["plotId"].as_str().unwrap();
    ok(&st, "/api/plots/open", json!({"plotId": plot_id})).await;
    let tracks = reply["kinds"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["kind"] == "TRACK")
        .map_or(0, |k| k["count"].as_u64().unwrap());
    assert!(
        tracks >= 2,
        "both boats' tracks are in the one plot: {tracks}"
    );
    let log = get(&st, "/api/activity").await.json();
    assert!(
        log["entries"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["action"] == "import" && e["plotId"] == plot_id),
        "{log}"
    );

    let before = std::fs::read(dir.path().join("catalog.json")).unwrap();
    let again = post(&st, "/api/import", body).await;
    assert_eq!(again.status, StatusCode::CONFLICT, "{}", again.text());
    assert!(
        again.text().contains("Replace an existing plot"),
        "{}",
        again.text()
    );
    assert_eq!(
        std::fs::read(dir.path().join("catalog.json")).unwrap(),
        before
    );

    let bad = post(
        &st,
        "/api/import",
        json!({"files": [{"name": "x.rep", "contentBase64": "%%%"}]}),
    )
    .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    assert!(bad.text().contains("x.rep"), "{}", bad.text());
    let unnamed = post(
        &st,
        "/api/import",
        json!({"files": [file("boat1.rep"), file("boat2.rep")]}),
    )
    .await;
    assert_eq!(unnamed.status, StatusCode::BAD_REQUEST);
    assert!(unnamed.text().contains("Plot name"), "{}", unnamed.text());
}

/// Issue 20 item 4: the live stream serialises the state only when the change stamp moves; the
/// stamp stays put while nothing changes (reads, searches of an unchanged catalogue) and moves
/// with an open, a selection, an edit and an undo.
#[tokio::test]
async fn the_change_stamp_moves_only_with_changes() {
    let dir = tempfile::tempdir().unwrap();
    let st = common::state(dir.path(), false).await;
    let s0 = st.change_stamp();
    ok(&st, "/api/catalog/search", json!({})).await;
    get(&st, "/api/state").await;
    assert_eq!(st.change_stamp(), s0, "reads change nothing");
    ok(&st, "/api/plots/open", json!({"plotId": ALPHA})).await;
    let s1 = st.change_stamp();
    assert_ne!(s1, s0, "open");
    plot(&st).await;
    assert_eq!(st.change_stamp(), s1, "reading the plot changes nothing");
    ok(&st, "/api/select", json!({"ids": ["track-contact"]})).await;
    let s2 = st.change_stamp();
    assert_ne!(s2, s1, "selection");
    colour(&st, &["track-contact"], "#ff0000").await;
    let s3 = st.change_stamp();
    assert_ne!(s3, s2, "edit");
    ok(&st, "/api/undo", json!({})).await;
    assert_ne!(st.change_stamp(), s3, "undo");
}

/// Issue 30 item 7: an import error quotes at most 200 bytes of what was sent, whatever its
/// size: a 10 MB line of NULs was a 60 MB 400 body, a huge file or plot name the same.
#[tokio::test]
async fn an_import_error_quotes_a_clipped_excerpt_of_the_input() {
    use base64::Engine as _;
    let dir = tempfile::tempdir().unwrap();
    let st = common::state(dir.path(), false).await;
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    let nul_line = vec![0u8; 10_000_000];
    let boat1 = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../rep/tests/fixtures/rep/valid/boat1.rep"),
    )
    .unwrap();
    let long_name = format!("{}.rep", "n".repeat(1_000_000));
    let long_text = "x".repeat(5_000_000);
    let cases = [
        (
            json!({"files": [{"name": "nul.rep", "contentBase64": b64(&nul_line)}]}),
            "nul.rep:1:1",
        ),
        (
            json!({"files": [{"name": long_name, "contentBase64": "%%%"}]}),
            "bytes",
        ),
        (
            json!({"files": [{"name": long_name, "contentBase64": b64(&nul_line)}]}),
            "at most 255 bytes",
        ),
        (
            json!({"files": [{"name": "b.rep", "contentBase64": b64(&boat1)}], "plot": "!".repeat(1_000_000)}),
            "bytes",
        ),
        (json!({"files": long_text}), "line 1 column"),
    ];
    for (body, expect) in cases {
        let r = post(&st, "/api/import", body).await;
        // 400, or 422 for a body of the wrong shape.
        assert!(r.status.is_client_error(), "{expect}: {}", r.status);
        let text = r.text();
        assert!(
            r.body.len() <= 1500,
            "{expect}: a {} byte body: {}",
            r.body.len(),
            &text[..text.len().min(400)]
        );
        assert!(text.contains(expect), "{expect}: {text}");
    }
}

/// The palette's `toolCallFinished` result for `body`, approving a question when one is asked.
async fn palette_result(st: &WebState, body: Value) -> Value {
    let res = run_from_palette(st, body).await;
    let mut stream = res.into_body().into_data_stream();
    let mut buf = String::new();
    loop {
        let (name, ev) = next_event(&mut stream, &mut buf, |n, _| {
            n == "toolCallFinished" || n == "confirmationAsked"
        })
        .await;
        if name == "toolCallFinished" {
            while stream.next().await.is_some() {}
            return ev;
        }
        let id = ev["id"].as_str().unwrap();
        ok(
            st,
            "/api/chat/confirm",
            json!({"id": id, "answer": "approve"}),
        )
        .await;
    }
}

/// Issue 32 item 4: the palette's refusals name the page's controls ("select a track or pick
/// one"), never the agent's parameters, and an applied change says nothing that a later Save
/// makes untrue (no "now dirty").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_palette_speaks_of_the_pages_controls() {
    let dir = tempfile::tempdir().unwrap();
    let st = common::state(dir.path(), false).await;
    ok(&st, "/api/plots/open", json!({"plotId": ALPHA})).await;
    ok(&st, "/api/select", json!({"ids": []})).await;
    let agent_words = [
        "featureNames",
        "featureIds",
        "scope:\"all\"",
        "debrief_",
        "Do not retry",
        "dirty",
    ];
    let spoken = |fin: &Value| {
        let text = fin["result"].as_str().unwrap().to_owned();
        for w in agent_words {
            assert!(!text.contains(w), "{w:?} in {text}");
        }
        text
    };
    let fin = palette_result(
        &st,
        json!({"toolId": "set-track-color", "params": {"color": "red"}, "scope": "selection"}),
    )
    .await;
    assert_eq!(fin["reason"], "target");
    let text = spoken(&fin);
    assert!(
        text.contains("select a track") && text.contains("Pick features"),
        "{text}"
    );
    let fin = palette_result(
        &st,
        json!({"toolId": "set-track-color", "params": {"color": "red"}, "featureIds": ["nope"]}),
    )
    .await;
    assert_eq!(fin["reason"], "target");
    spoken(&fin);
    let fin = palette_result(
        &st,
        json!({"toolId": "set-track-color", "params": {"color": "red"}, "featureIds": ["track-contact"]}),
    )
    .await;
    assert_eq!(fin["status"], "ok", "{fin}");
    let text = spoken(&fin);
    assert!(text.contains("one undoable step; Save writes it"), "{text}");
    // A plot that is not open: the page's own control, not "ask to summarise".
    let fin = palette_result(
        &st,
        json!({"toolId": "track-stats", "plotId": "stac://demo/nope/item.json", "featureIds": ["track-contact"]}),
    )
    .await;
    assert_eq!(fin["reason"], "unknown_plot", "{fin}");
    let text = spoken(&fin);
    assert!(
        text.contains("Open it from the Catalogue") && !text.contains("summarise"),
        "{text}"
    );
}

/// Issue 32 item 3 (units): the workbench has one unit setting, nautical miles and knots unless
/// changed; the page reads and changes it at `/api/settings`, and every tool run from the page,
/// the chat or an attached agent that leaves its unit out speaks it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_unit_setting_for_every_run() {
    let dir = tempfile::tempdir().unwrap();
    let st = common::state(dir.path(), false).await;
    let s = get(&st, "/api/settings").await;
    assert_eq!(s.status, StatusCode::OK, "{}", s.text());
    assert_eq!(
        s.json(),
        json!({"units": {"distance": "nm", "speed": "kn"}})
    );
    ok(&st, "/api/plots/open", json!({"plotId": ALPHA})).await;
    let range = |st: WebState| async move {
        let reply = st
            .debrief()
            .run_tool(
                &json!({"toolId": "range-calc", "featureIds": ["track-nelson", "track-contact"]}),
                &Fixed(Answer::Decline),
            )
            .await;
        let ds = get(&st, "/api/datasets").await.json();
        let id = reply.dataset.unwrap();
        ds["datasets"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["id"] == id.as_str())
            .unwrap()["data"]
            .clone()
    };
    assert_eq!(range(st.clone()).await["units"], "nm");

    let set = ok(
        &st,
        "/api/settings",
        json!({"units": {"distance": "yd", "speed": "m/s"}}),
    )
    .await;
    assert_eq!(set, json!({"units": {"distance": "yd", "speed": "m/s"}}));
    assert_eq!(get(&st, "/api/settings").await.json(), set);
    assert_eq!(range(st.clone()).await["units"], "yds");

    let bad = post(
        &st,
        "/api/settings",
        json!({"units": {"distance": "furlong"}}),
    )
    .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST, "{}", bad.text());
    assert!(bad.text().contains("nm, yd, m or km"), "{}", bad.text());
    assert_eq!(get(&st, "/api/settings").await.json(), set, "unchanged");
}

/// Issue 32 item 5 from the page: legacy Debrief's `sensor_arcs.rep` (EPL, its notice beside it)
/// added to the open plot that holds NELSON and COLLINGWOOD: every arc attaches to its track,
/// the open plot shows them at once, and a plot with unsaved edits is not changed.
#[tokio::test]
async fn the_page_adds_a_files_layers_to_the_open_plot() {
    use base64::Engine as _;
    let dir = tempfile::tempdir().unwrap();
    let st = common::state(dir.path(), false).await;
    let fixtures =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../rep/tests/fixtures/rep");
    let file = |name: &str| json!({"name": std::path::Path::new(name).file_name().unwrap().to_str().unwrap(), "contentBase64": base64::engine::general_purpose::STANDARD.encode(std::fs::read(fixtures.join(name)).unwrap())});
    let reply = ok(
        &st,
        "/api/import",
        json!({"files": [file("valid/boat1.rep"), file("valid/boat2.rep")], "plot": "Boats"}),
    )
    .await;
    let plot_id = reply["plotId"].as_str().unwrap().to_owned();
    ok(&st, "/api/plots/open", json!({"plotId": plot_id})).await;
    let arcs = json!({"files": [file("legacy/sensor_arcs.rep")], "into": plot_id});
    let added = ok(&st, "/api/import", arcs.clone()).await;
    assert_eq!(added["added"], true, "{added}");
    assert_eq!(added["kinds"], json!([{"kind": "SENSOR_ARC", "count": 46}]));
    assert_eq!(
        added["attached"],
        json!([{"track": "NELSON", "count": 43}, {"track": "COLLINGWOOD", "count": 3}])
    );
    // The open plot shows them: each arc names its host track, so the map draws it there.
    let features = plot(&st).await;
    let arcs_on = |track: &str| {
        features["featureCollection"]["features"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| {
                f["properties"]["kind"] == "SENSOR_ARC" && f["properties"]["track_id"] == track
            })
            .count()
    };
    assert_eq!(
        (arcs_on("track-nelson"), arcs_on("track-collingwood")),
        (43, 3)
    );
    // A short name works too; several at once with a plot name does not.
    let bad = post(
        &st,
        "/api/import",
        json!({"files": [file("legacy/sensor_arcs.rep")], "into": "boats", "plot": "x"}),
    )
    .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST, "{}", bad.text());
    // Unsaved edits on the open plot: nothing is added.
    ok(&st, "/api/select", json!({"ids": ["track-nelson"]})).await;
    let fin = palette_result(
        &st,
        json!({"toolId": "set-track-color", "params": {"color": "red"}, "featureIds": ["track-nelson"]}),
    )
    .await;
    assert_eq!(fin["status"], "ok", "{fin}");
    let refused = post(
        &st,
        "/api/import",
        json!({"files": [file("legacy/sensor_arcs.rep")], "into": "boats"}),
    )
    .await;
    assert_eq!(refused.status, StatusCode::CONFLICT, "{}", refused.text());
    assert!(
        refused.text().contains("unsaved edits"),
        "{}",
        refused.text()
    );
}
