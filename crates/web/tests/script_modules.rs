//! The workbench's script is native ES modules served by the binary (no bundler): the page loads
//! one entry, `/assets/app.js`, which imports the rest. Every module the entry reaches through
//! its `import … from "./x.js"` lines is served (200, JavaScript, the page's CSP), and nothing is
//! served that no module imports; every module parses as a module (`node --check`, where node
//! is installed).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::Path;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use toolgate_web::{SCRIPT_MODULES, WebState, router};
use tower::ServiceExt;

struct Reply {
    status: StatusCode,
    headers: axum::http::HeaderMap,
    body: String,
}

async fn get(st: &WebState, path: &str) -> Reply {
    let mut req = Request::get(path).body(Body::empty()).unwrap();
    req.headers_mut()
        .insert(header::AUTHORIZATION, common::bearer().parse().unwrap());
    let res = router(st.clone()).oneshot(req).await.unwrap();
    let status = res.status();
    let headers = res.headers().clone();
    let body = axum::body::to_bytes(res.into_body(), usize::MAX)
        .await
        .unwrap();
    Reply {
        status,
        headers,
        body: String::from_utf8(body.to_vec()).unwrap(),
    }
}

/// `specifier` (`./x.js`, `../y.js`, `/assets/z.js`) as a path, from the module at `from`.
fn resolve(from: &str, specifier: &str) -> String {
    if specifier.starts_with('/') {
        return specifier.to_owned();
    }
    assert!(
        specifier.starts_with("./") || specifier.starts_with("../"),
        "{from} imports {specifier:?}: only relative paths on this server load offline"
    );
    let mut parts: Vec<&str> = from.split('/').collect();
    parts.pop();
    for part in specifier.split('/') {
        match part {
            "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    parts.join("/")
}

/// The modules `source` imports (static `import … from '…'`, `export … from '…'` and
/// `import '…'`), as written.
fn imports_of(path: &str, source: &str) -> Vec<String> {
    assert!(
        !source.contains("import("),
        "{path} imports dynamically; this test follows only static imports"
    );
    let mut out = Vec::new();
    for (i, _) in source.match_indices("from ") {
        let rest = &source[i + "from ".len()..];
        let Some(quote) = rest.chars().next().filter(|c| *c == '\'' || *c == '"') else {
            continue;
        };
        let end = rest[1..].find(quote).unwrap();
        out.push(rest[1..=end].to_owned());
    }
    for line in source.lines() {
        let line = line.trim_start();
        for quote in ['\'', '"'] {
            if let Some(rest) = line.strip_prefix(&format!("import {quote}")) {
                out.push(rest[..rest.find(quote).unwrap()].to_owned());
            }
        }
    }
    out
}

#[tokio::test]
async fn every_module_the_entry_imports_is_served_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let st = common::state(dir.path(), false).await;

    // The page loads the entry as a module and runs no inline script (its CSP allows none):
    // the only other script element is the JSON data block.
    let page = get(&st, "/").await;
    assert_eq!(page.status, StatusCode::OK);
    let page_csp = page.headers[header::CONTENT_SECURITY_POLICY]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(page_csp.contains("script-src 'self'"), "{page_csp}");
    let mut entries = Vec::new();
    for (i, _) in page.body.match_indices("<script") {
        let tag = &page.body[i..i + page.body[i..].find('>').unwrap()];
        if tag.contains("type=\"application/json\"") {
            continue;
        }
        assert!(tag.contains("type=\"module\""), "a classic script: {tag}");
        let src = tag
            .split("src=\"")
            .nth(1)
            .expect("an inline script")
            .to_owned();
        entries.push(src[..src.find('"').unwrap()].to_owned());
    }
    assert_eq!(entries, ["/assets/app.js"], "the page's one entry module");

    // Follow the imports from the entry: each module is served as JavaScript with the page's
    // headers.
    let mut reached = BTreeMap::new();
    let mut queue = VecDeque::from(entries);
    while let Some(path) = queue.pop_front() {
        if reached.contains_key(&path) {
            continue;
        }
        let r = get(&st, &path).await;
        assert_eq!(
            r.status,
            StatusCode::OK,
            "{path} is imported but not served"
        );
        let content_type = r.headers[header::CONTENT_TYPE].to_str().unwrap();
        assert_eq!(content_type, "text/javascript; charset=utf-8", "{path}");
        assert_eq!(
            r.headers[header::X_CONTENT_TYPE_OPTIONS],
            "nosniff",
            "{path}"
        );
        assert_eq!(
            r.headers[header::CONTENT_SECURITY_POLICY].to_str().unwrap(),
            page_csp,
            "{path}"
        );
        assert_eq!(r.headers[header::CACHE_CONTROL], "no-cache", "{path}");
        for specifier in imports_of(&path, &r.body) {
            queue.push_back(resolve(&path, &specifier));
        }
        reached.insert(path, r.body);
    }

    // What is served is what is imported: no module is served that nothing imports.
    let served: BTreeSet<String> = SCRIPT_MODULES
        .iter()
        .map(|(name, _)| format!("/assets/{name}"))
        .collect();
    let imported: BTreeSet<String> = reached.keys().cloned().collect();
    assert_eq!(
        served.difference(&imported).collect::<Vec<_>>(),
        Vec::<&String>::new(),
        "served, but no module imports them"
    );
    assert_eq!(served, imported);

    // Every module written in assets/ is in the list (none left behind), served as written.
    let assets = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets");
    let on_disk: BTreeSet<String> = std::fs::read_dir(&assets)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".js"))
        .map(|n| format!("/assets/{n}"))
        .collect();
    assert_eq!(on_disk, imported, "assets/*.js and the modules served");
    for (path, body) in &reached {
        let file = std::fs::read_to_string(assets.join(&path["/assets/".len()..])).unwrap();
        assert_eq!(&file, body, "{path} is served as written");
        // Offline: the only absolute URL is the SVG namespace (an identifier, never fetched).
        let stripped = body.replace("http://www.w3.org/2000/svg", "");
        assert!(
            !stripped.contains("http://") && !stripped.contains("https://"),
            "{path} refers to another site"
        );
    }

    // A name that is no module is not found (no catch-all under /assets/).
    assert_eq!(
        get(&st, "/assets/nothing.js").await.status,
        StatusCode::NOT_FOUND
    );
}

/// `node --check` of each module as a module (`--input-type=module`: a `.js` file given by name
/// outside a `"type": "module"` package is not always checked as one).
#[test]
fn every_module_parses_as_a_module() {
    if std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_err()
    {
        let msg = "\n\n!!!!!!!! SKIPPING the modules' syntax check: node is not on PATH.\n";
        if std::env::var("TOOLGATE_REQUIRE_TEST_CLIENTS").is_ok_and(|v| v == "1") {
            panic!("{msg}TOOLGATE_REQUIRE_TEST_CLIENTS=1, so this is a failure.");
        }
        eprintln!("{msg}");
        return;
    }
    for (name, source) in SCRIPT_MODULES {
        let mut child = std::process::Command::new("node")
            .args(["--input-type=module", "--check"])
            .stdin(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(source.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{name} does not parse as a module:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
