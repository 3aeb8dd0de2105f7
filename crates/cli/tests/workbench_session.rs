//! Issue 30, item 1: the workbench never keeps the MCP bearer token in a cookie.
//!
//! Browsers send a host's cookies to every port of that host, so any other server on 127.0.0.1
//! the person visits reads the workbench's cookie. The cookie therefore holds a per-start
//! workbench session secret, not the token `toolgate serve` prints, and `/mcp` refuses it in
//! any form. The bare URL, and a URL or cookie from an earlier start, answer a small HTML page
//! that says how to get the current URL. And the Host check parses the authority strictly:
//! `[::1]evil.com` and `localhost:N@evil.com` are other hosts.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

mod support;
use support::HttpReply as Reply;

const TOKEN: &str = "workbench-session-test-token-0123456789";

/// One HTTP/1.1 request on a fresh connection, with `host` as the Host header.
fn http_as(
    addr: &str,
    host: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Reply {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    if !body.is_empty() {
        req.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let raw = String::from_utf8_lossy(&raw).into_owned();
    Reply::parse(&raw).unwrap_or(Reply {
        status: 0,
        head: raw,
        body: String::new(),
    })
}

fn http(addr: &str, method: &str, path: &str, headers: &[(&str, &str)]) -> Reply {
    http_as(addr, addr, method, path, headers, "")
}

/// An MCP `initialize` (2025-06-18) with `headers` added, addressed to `host`.
fn initialize_as(addr: &str, host: &str, headers: &[(&str, &str)]) -> Reply {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "cookie-thief", "version": "1"}}})
    .to_string();
    let mut all = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    all.extend_from_slice(headers);
    http_as(addr, host, "POST", "/mcp", &all, &body)
}

fn initialize(addr: &str, headers: &[(&str, &str)]) -> Reply {
    initialize_as(addr, addr, headers)
}

/// The `name=value` pair of a Set-Cookie header.
fn cookie_pair(set_cookie: &str) -> (String, String) {
    let pair = set_cookie.split(';').next().unwrap().trim();
    let (name, value) = pair.split_once('=').unwrap();
    (name.to_owned(), value.to_owned())
}

/// Visit the printed URL; the Set-Cookie header it answers with.
fn visit(addr: &str) -> String {
    let r = http(addr, "GET", &format!("/?token={TOKEN}"), &[]);
    assert_eq!(r.status, 303, "{}\n{}", r.head, r.body);
    r.header("set-cookie")
        .unwrap_or_else(|| panic!("no cookie: {}", r.head))
}

/// Every way a cookie's value could be tried on `/mcp`: as the bearer, and as the cookie itself.
fn assert_useless_on_mcp(addr: &str, name: &str, value: &str) {
    let as_bearer = format!("Bearer {value}");
    let r = initialize(addr, &[("Authorization", &as_bearer)]);
    assert_eq!(
        r.status, 401,
        "the cookie {name} as a bearer opens /mcp: {}",
        r.body
    );
    let as_cookie = format!("{name}={value}");
    let r = initialize(addr, &[("Cookie", &as_cookie)]);
    assert_eq!(
        r.status, 401,
        "the cookie {name} as a cookie opens /mcp: {}",
        r.body
    );
    assert_ne!(value, TOKEN, "the cookie {name} carries the MCP token");
    assert!(
        !value.contains(TOKEN),
        "the cookie {name} carries the MCP token"
    );
}

fn assert_html_401(r: &Reply, what: &str) {
    assert_eq!(r.status, 401, "{what}: {}\n{}", r.head, r.body);
    let ct = r.header("content-type").unwrap_or_default();
    assert!(ct.starts_with("text/html"), "{what}: {ct}");
    assert!(r.body.contains("toolgate serve"), "{what}: {}", r.body);
    assert!(!r.body.contains(TOKEN), "{what}: {}", r.body);
}

#[test]
fn the_workbench_cookie_is_a_session_secret_that_mcp_refuses() {
    let server = support::serve(&[], TOKEN);
    let addr = server.addr.as_str();
    let set_cookie = visit(addr);
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(set_cookie.contains(attribute), "{set_cookie}");
    }
    assert!(
        !set_cookie.to_ascii_lowercase().contains("domain="),
        "host-only: {set_cookie}"
    );
    let (name, value) = cookie_pair(&set_cookie);
    let port = addr.rsplit_once(':').unwrap().1;
    assert!(
        name.ends_with(&format!("_{port}")),
        "named per port: {name}"
    );
    assert!(value.len() >= 43, "a 256-bit secret: {value}");
    // it lets the page and its API in ...
    let pair = format!("{name}={value}");
    for path in ["/", "/api/state", "/api/config", "/assets/app.js"] {
        let r = http(addr, "GET", path, &[("Cookie", &pair)]);
        assert_eq!(r.status, 200, "{path} with the cookie: {}", r.body);
    }
    // ... and nothing on /mcp, in any form
    assert_useless_on_mcp(addr, &name, &value);
    // the MCP token still opens both
    let auth = format!("Bearer {TOKEN}");
    assert_eq!(
        initialize(addr, &[("Authorization", &auth)]).status,
        200,
        "the token opens /mcp"
    );
    assert_eq!(
        http(addr, "GET", "/api/state", &[("Authorization", &auth)]).status,
        200
    );
    // the secret is never accepted as a bearer on the workbench either (it is a cookie only)
    let r = http(
        addr,
        "GET",
        "/api/state",
        &[("Authorization", &format!("Bearer {value}"))],
    );
    assert_eq!(r.status, 401, "{}", r.body);

    // A second start with the same token makes another secret: the first start's cookie,
    // presented there, is an expired one and gets the page that says what to do.
    let second = support::serve(&[], TOKEN);
    let (name2, value2) = cookie_pair(&visit(&second.addr));
    assert_ne!(value2, value, "a new secret every start");
    let stale = format!("{name2}={value}");
    let r = http(
        &second.addr,
        "GET",
        "/",
        &[("Cookie", &stale), ("Accept", "text/html")],
    );
    assert_html_401(&r, "a cookie from an earlier start");
}

#[test]
fn the_bare_url_and_a_stale_token_answer_an_html_page_naming_toolgate_serve() {
    let server = support::serve(&[], TOKEN);
    let addr = server.addr.as_str();
    let html = [(
        "Accept",
        "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
    )];
    assert_html_401(&http(addr, "GET", "/", &html), "the bare URL");
    assert_html_401(&http(addr, "GET", "/", &[]), "the bare URL (curl)");
    let stale = "0123456789abcdef0123456789abcdef";
    let r = http(addr, "GET", &format!("/?token={stale}"), &html);
    assert_html_401(&r, "a token from an earlier start");
    assert!(r.header("set-cookie").is_none());
    assert!(!r.body.contains(stale), "never echoes it: {}", r.body);
    // the API and the MCP endpoint keep their JSON 401
    let r = http(addr, "GET", "/api/state", &html);
    assert_eq!(r.status, 401);
    assert_eq!(r.json()["code"], "unauthorized");
    let r = initialize(addr, &[]);
    assert_eq!(r.status, 401);
    assert_eq!(r.json()["code"], "unauthorized");
}

#[test]
fn a_host_with_anything_after_the_loopback_name_is_another_host() {
    let server = support::serve(&[], TOKEN);
    let addr = server.addr.as_str();
    let port = addr.rsplit_once(':').unwrap().1;
    let auth = format!("Bearer {TOKEN}");
    let bad = [
        "[::1]evil.com".to_owned(),
        format!("[::1]evil.com:{port}"),
        format!("localhost:{port}@evil.com"),
        "localhost:8080@evil.com".to_owned(),
        format!("127.0.0.1:{port}@evil.com"),
        "localhost.evil.com".to_owned(),
        format!("localhost:{port}:1"),
        "localhost:".to_owned(),
        "localhost:80x".to_owned(),
        "[::1".to_owned(),
        "user@localhost".to_owned(),
    ];
    for host in &bad {
        for path in ["/api/state", "/"] {
            let r = http_as(addr, host, "GET", path, &[("Authorization", &auth)], "");
            assert!(
                r.status == 403 || r.status == 400,
                "Host {host:?} on {path}: {} {}",
                r.status,
                r.body
            );
        }
        let r = initialize_as(addr, host, &[("Authorization", &auth)]);
        assert!(
            r.status == 403 || r.status == 400,
            "Host {host:?} on /mcp: {} {}",
            r.status,
            r.body
        );
    }
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
        "LOCALHOST".to_owned(),
        "127.0.0.1".to_owned(),
    ] {
        let r = http_as(
            addr,
            &host,
            "GET",
            "/api/state",
            &[("Authorization", &auth)],
            "",
        );
        assert_eq!(r.status, 200, "Host {host:?}: {}", r.body);
    }
}

/// A plain HTTP server on 127.0.0.1:0 that answers every request with a small page and keeps
/// the head of each request it received.
fn other_server() -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let keep = seen.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && head.len() < 64 * 1024 {
                match conn.read(&mut byte) {
                    Ok(1) => head.push(byte[0]),
                    _ => break,
                }
            }
            keep.lock()
                .unwrap()
                .push(String::from_utf8_lossy(&head).into_owned());
            let page = "<!doctype html><title>another local server</title><p>hello";
            let _ = conn.write_all(
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
                    page.len()
                )
                .as_bytes(),
            );
        }
    });
    (addr, seen)
}

/// The reproduction in headless Chromium: open the printed URL, then another server on
/// 127.0.0.1; whatever cookie that server receives (and whatever the browser holds) opens
/// nothing on `/mcp`.
#[test]
fn a_cookie_another_port_receives_in_chromium_never_opens_mcp() {
    let e2e = Path::new(env!("CARGO_MANIFEST_DIR")).join("../web/e2e");
    let chromium =
        std::env::var("TOOLGATE_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".to_owned());
    if !Path::new(&chromium).exists() {
        return toolgate_test_support::missing_client(&format!("no Chromium at {chromium}"));
    }
    if !e2e
        .join("node_modules/playwright-core/package.json")
        .exists()
    {
        return toolgate_test_support::missing_client(
            "crates/web/e2e/node_modules/playwright-core is not installed",
        );
    }
    let server = support::serve(&[], TOKEN);
    let addr = server.addr.clone();
    let (other, seen) = other_server();
    let url = server.banner[0]
        .strip_prefix("Workbench: ")
        .unwrap()
        .to_owned();
    let out = match std::process::Command::new("node")
        .arg(e2e.join("cookie_ports.e2e.js"))
        .current_dir(&e2e)
        .env("WORKBENCH_URL", &url)
        .env("OTHER_URL", format!("http://{other}"))
        .env("CHROMIUM", &chromium)
        .output()
    {
        Ok(out) => out,
        Err(e) => return toolgate_test_support::missing_client(&format!("node: {e}")),
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let report: Value = stdout
        .lines()
        .find_map(|l| l.strip_prefix("COOKIE-PORTS "))
        .map(|j| serde_json::from_str(j).unwrap())
        .unwrap_or_else(|| panic!("no report: {stdout}\n{stderr}"));
    eprintln!("{report:#}");
    // the visit worked: the workbench page is open, the token gone from the address bar, and a
    // reload keeps it
    assert_eq!(report["status"], 200, "{report}");
    assert_eq!(report["title"], "toolgate workbench", "{report}");
    assert_eq!(report["search"], "", "{report}");
    assert_eq!(report["reloadStatus"], 200, "{report}");

    // Every cookie the other server received ...
    let heads = seen.lock().unwrap().clone();
    assert!(
        heads.iter().any(|h| h.starts_with("GET /typed")),
        "the other server was visited: {heads:?}"
    );
    let mut received = Vec::new();
    for head in &heads {
        for line in head.lines() {
            let Some((n, v)) = line.split_once(':') else {
                continue;
            };
            if !n.eq_ignore_ascii_case("cookie") {
                continue;
            }
            for pair in v.split(';') {
                if let Some((name, value)) = pair.trim().split_once('=') {
                    received.push((name.to_owned(), value.to_owned()));
                }
            }
        }
    }
    eprintln!("the other port received: {received:?}");
    // ... and every cookie the browser holds, is useless on /mcp.
    let held = report["cookies"].as_array().unwrap().iter().map(|c| {
        (
            c["name"].as_str().unwrap().to_owned(),
            c["value"].as_str().unwrap().to_owned(),
        )
    });
    for (name, value) in received.iter().cloned().chain(held) {
        assert_useless_on_mcp(&addr, &name, &value);
    }
    // and the browser's whole Cookie header, replayed on /mcp, opens nothing either
    for head in &heads {
        if let Some(line) = head
            .lines()
            .find(|l| l.to_ascii_lowercase().starts_with("cookie:"))
        {
            let value = line.split_once(':').unwrap().1.trim();
            assert_eq!(initialize(&addr, &[("Cookie", value)]).status, 401);
        }
    }
}
