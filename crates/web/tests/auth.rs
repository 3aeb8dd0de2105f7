//! The workbench's access token: nothing is served without a credential; the token as a bearer
//! header, or the session cookie a `?token=` visit sets, lets a request in; the token is taken
//! from a URL only to be swapped for that cookie, which never carries the token itself.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use serde_json::Value;
use toolgate_web::{WebState, router};
use tower::ServiceExt;

async fn send(st: &WebState, req: Request<Body>) -> axum::response::Response {
    router(st.clone()).oneshot(req).await.unwrap()
}

async fn json_body(res: axum::response::Response) -> Value {
    let bytes = axum::body::to_bytes(res.into_body(), 1 << 20)
        .await
        .unwrap();
    serde_json::from_slice(&bytes)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&bytes)))
}

async fn text_body(res: axum::response::Response) -> String {
    let bytes = axum::body::to_bytes(res.into_body(), 1 << 20)
        .await
        .unwrap();
    String::from_utf8_lossy(&bytes).into_owned()
}

fn get(path: &str) -> axum::http::request::Builder {
    Request::get(path).header(header::HOST, "127.0.0.1:8765")
}

#[tokio::test]
async fn every_endpoint_without_the_token_is_401_json() {
    let dir = tempfile::tempdir().unwrap();
    let st = common::state(dir.path(), false).await;
    for (method, path) in [
        ("GET", "/assets/app.js"),
        ("GET", "/api/config"),
        ("GET", "/api/state"),
        ("GET", "/api/events"),
        ("GET", "/api/plot"),
        ("POST", "/api/plots/open"),
        ("POST", "/api/save"),
        ("POST", "/api/chat"),
        ("GET", "/nowhere"),
    ] {
        let req = Request::builder()
            .method(method)
            .uri(path)
            .header(header::HOST, "127.0.0.1:8765")
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from("{}"))
            .unwrap();
        let res = send(&st, req).await;
        assert_eq!(res.status(), StatusCode::UNAUTHORIZED, "{method} {path}");
        let body = json_body(res).await;
        assert_eq!(body["code"], "unauthorized", "{method} {path}: {body}");
        assert!(
            body["error"].as_str().unwrap().contains("?token="),
            "the error says how to get in: {body}"
        );
    }
}

#[tokio::test]
async fn the_page_without_a_credential_is_a_401_html_page_naming_toolgate_serve() {
    let dir = tempfile::tempdir().unwrap();
    let st = common::state(dir.path(), false).await;
    for req in [
        get("/").body(Body::empty()).unwrap(),
        get("/index.html").body(Body::empty()).unwrap(),
        get("/somewhere")
            .header(header::ACCEPT, "text/html,*/*;q=0.8")
            .body(Body::empty())
            .unwrap(),
        get("/?token=not-the-token-of-this-start")
            .body(Body::empty())
            .unwrap(),
        get("/")
            .header(header::COOKIE, "toolgate_session_8765=0123456789abcdef0123")
            .body(Body::empty())
            .unwrap(),
    ] {
        let what = format!("{} {:?}", req.uri(), req.headers());
        let res = send(&st, req).await;
        assert_eq!(res.status(), StatusCode::UNAUTHORIZED, "{what}");
        assert!(
            res.headers()[header::CONTENT_TYPE]
                .to_str()
                .unwrap()
                .starts_with("text/html"),
            "{what}"
        );
        assert!(res.headers().get(header::SET_COOKIE).is_none(), "{what}");
        let body = text_body(res).await;
        assert!(body.contains("toolgate serve"), "{what}: {body}");
        assert!(!body.contains("not-the-token"), "never echoed: {body}");
    }
}
#[tokio::test]
async fn a_wrong_token_is_401_in_any_form() {
    let dir = tempfile::tempdir().unwrap();
    let st = common::state(dir.path(), false).await;
    let wrong = format!("{}x", common::TOKEN);
    let cases = [
        get("/api/state")
            .header(header::AUTHORIZATION, format!("Bearer {wrong}"))
            .body(Body::empty())
            .unwrap(),
        get("/api/state")
            .header(header::AUTHORIZATION, format!("Basic {}", common::TOKEN))
            .body(Body::empty())
            .unwrap(),
        get("/api/state")
            .header(header::COOKIE, format!("toolgate_session_8765={wrong}"))
            .body(Body::empty())
            .unwrap(),
        // the token is never a cookie: not in the session cookie, and no longer in the cookie
        // earlier versions set (browsers send cookies to every port of a host)
        get("/api/state")
            .header(
                header::COOKIE,
                format!("toolgate_session_8765={}", common::TOKEN),
            )
            .body(Body::empty())
            .unwrap(),
        get("/api/state")
            .header(
                header::COOKIE,
                format!("toolgate_token_8765={}", common::TOKEN),
            )
            .body(Body::empty())
            .unwrap(),
        // the right value under another cookie's name does not count
        get("/api/state")
            .header(header::COOKIE, format!("session={}", common::TOKEN))
            .body(Body::empty())
            .unwrap(),
        get(&format!("/?token={wrong}"))
            .body(Body::empty())
            .unwrap(),
    ];
    for req in cases {
        let what = format!("{:?}", req.headers());
        let legacy = what.contains("toolgate_token_8765");
        let res = send(&st, req).await;
        assert_eq!(res.status(), StatusCode::UNAUTHORIZED, "{what}");
        // the only cookie ever set on a refusal expires the legacy one
        for c in res.headers().get_all(header::SET_COOKIE) {
            let c = c.to_str().unwrap();
            assert!(
                legacy && c.starts_with("toolgate_token_8765=;"),
                "{what}: {c}"
            );
            assert!(c.contains("Max-Age=0"), "{c}");
        }
        let body = text_body(res).await;
        assert!(
            !body.contains(&wrong) && !body.contains(common::TOKEN),
            "the answer does not echo what was presented: {body}"
        );
    }
}

#[tokio::test]
async fn a_bearer_header_lets_the_api_in() {
    let dir = tempfile::tempdir().unwrap();
    let st = common::state(dir.path(), false).await;
    let res = send(
        &st,
        get("/api/state")
            .header(header::AUTHORIZATION, common::bearer())
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(json_body(res).await["activePlot"], Value::Null);
}

#[tokio::test]
async fn the_token_url_sets_a_strict_http_only_cookie_and_redirects_without_the_token() {
    let dir = tempfile::tempdir().unwrap();
    let st = common::state(dir.path(), false).await;
    let res = send(
        &st,
        get(&format!("/?plot=a&token={}&x=1", common::TOKEN))
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let location = res.headers()[header::LOCATION].to_str().unwrap();
    assert_eq!(location, "/?plot=a&x=1", "the token leaves the address bar");
    let cookie = res.headers()[header::SET_COOKIE]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(cookie.starts_with("toolgate_session_8765="), "{cookie}");
    assert!(
        !cookie.contains(common::TOKEN),
        "the cookie never carries the token: {cookie}"
    );
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(cookie.contains(attribute), "{cookie}");
    }
    assert_eq!(res.headers()[header::CACHE_CONTROL], "no-store");

    // the browser sends the cookie back: the page, the API and the live stream answer
    let pair = cookie.split(';').next().unwrap().to_owned();
    for path in ["/", "/api/state", "/api/events"] {
        let res = send(
            &st,
            get(path)
                .header(header::COOKIE, format!("other=1; {pair}"))
                .body(Body::empty())
                .unwrap(),
        )
        .await;
        assert_eq!(res.status(), StatusCode::OK, "{path}");
    }
}

#[tokio::test]
async fn the_redirect_never_leaves_the_site() {
    let dir = tempfile::tempdir().unwrap();
    let st = common::state(dir.path(), false).await;
    let res = send(
        &st,
        get(&format!("//evil.example/x?token={}", common::TOKEN))
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert_eq!(res.headers()[header::LOCATION], "/");
}

#[tokio::test]
async fn changes_never_authenticate_by_url() {
    let dir = tempfile::tempdir().unwrap();
    let st = common::state(dir.path(), false).await;
    let res = send(
        &st,
        Request::post(format!("/api/plots/open?token={}", common::TOKEN))
            .header(header::HOST, "127.0.0.1:8765")
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(format!(r#"{{"plotId": "{}"}}"#, common::ALPHA)))
            .unwrap(),
    )
    .await;
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    assert!(st.debrief().session().active().is_err(), "nothing opened");
}

#[tokio::test]
async fn the_host_and_origin_checks_still_come_first() {
    let dir = tempfile::tempdir().unwrap();
    let st = common::state(dir.path(), false).await;
    let res = send(
        &st,
        Request::get("/api/state")
            .header(header::HOST, "evil.example")
            .header(header::AUTHORIZATION, common::bearer())
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    assert_eq!(json_body(res).await["code"], "host_not_allowed");
    // issue 30: the loopback name with anything glued to it is another host
    for host in [
        "[::1]evil.com",
        "[::1]evil.com:8765",
        "localhost:8765@evil.com",
        "127.0.0.1:8765@evil.com",
        "localhost:8765:1",
    ] {
        let res = send(
            &st,
            Request::get("/api/state")
                .header(header::HOST, host)
                .header(header::AUTHORIZATION, common::bearer())
                .body(Body::empty())
                .unwrap(),
        )
        .await;
        assert_eq!(res.status(), StatusCode::FORBIDDEN, "{host}");
    }
    let res = send(
        &st,
        Request::post("/api/undo")
            .header(header::HOST, "127.0.0.1:8765")
            .header(header::ORIGIN, "http://[::1]evil.com")
            .header(header::AUTHORIZATION, common::bearer())
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from("{}"))
            .unwrap(),
    )
    .await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    assert_eq!(json_body(res).await["code"], "origin_not_allowed");
    let res = send(
        &st,
        Request::post("/api/undo")
            .header(header::HOST, "127.0.0.1:8765")
            .header(header::ORIGIN, "http://evil.example")
            .header(header::AUTHORIZATION, common::bearer())
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from("{}"))
            .unwrap(),
    )
    .await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    assert_eq!(json_body(res).await["code"], "origin_not_allowed");
}
