//! Upstream MCP servers reached over streamable HTTP, plain and over TLS, driven end to end: the
//! reference server (npm `@modelcontextprotocol/server-everything`, `streamableHttp`) behind a
//! TLS terminator (a few lines of Node's `tls`), with a certificate from a test CA made by the
//! `openssl` command; `toolgate tools list --upstream` must list the server's tools.
//!
//! The https case failed before rmcp's reqwest was built with a TLS backend: reqwest refused the
//! `https://` scheme, so no https upstream could ever connect. Certificates are verified against
//! the system's roots (rustls-platform-verifier), which honour `SSL_CERT_FILE`; a server whose
//! certificate no root vouches for is refused.
//!
//! Node and the reference server are installed by `.ci/install-test-clients` into `.tools/`;
//! without them these tests say so and pass, unless `TOOLGATE_REQUIRE_TEST_CLIENTS=1` (CI).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]
#![allow(clippy::disallowed_methods)]

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use toolgate_test_support::{Killed, free_port, missing_client, tools_dir};

const BIN: &str = env!("CARGO_BIN_EXE_toolgate");

fn everything_js() -> PathBuf {
    tools_dir()
        .join("mcp-clients/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
}

fn installed() -> bool {
    let js = everything_js();
    if !js.exists() {
        missing_client(&format!(
            "server-everything is not installed at {}",
            js.display()
        ));
        return false;
    }
    true
}

/// The https tests also need the `openssl` command (to make their CA).
fn openssl_installed() -> bool {
    let ok = Command::new("openssl")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        missing_client("the openssl command (Debian package openssl) is not installed");
    }
    ok
}

/// Start `cmd` and wait (at most a minute) for a line on `stream` that `ready` accepts; returns
/// the child and that line. The rest of the stream is drained so the child never blocks on it.
fn start_until(mut cmd: Command, stderr: bool, ready: fn(&str) -> bool) -> (Killed, String) {
    if stderr {
        cmd.stdout(Stdio::null()).stderr(Stdio::piped());
    } else {
        cmd.stdout(Stdio::piped()).stderr(Stdio::inherit());
    }
    let mut child = cmd.spawn().unwrap();
    let stream: Box<dyn Read + Send> = if stderr {
        Box::new(child.stderr.take().unwrap())
    } else {
        Box::new(child.stdout.take().unwrap())
    };
    let child = Killed(child);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut sent = false;
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            if !sent && ready(&line) {
                let _ = tx.send(line);
                sent = true;
            }
        }
    });
    let line = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the server never said it was listening");
    (child, line)
}

/// The reference server over streamable HTTP on a port of its own.
fn everything_http() -> (Killed, u16) {
    let port = free_port();
    let mut cmd = Command::new("node");
    cmd.arg(everything_js())
        .arg("streamableHttp")
        .env("PORT", port.to_string());
    let (child, _) = start_until(cmd, true, |l| l.contains("listening on port"));
    (child, port)
}

/// A test CA and a certificate for `localhost` and 127.0.0.1 signed by it: (CA file, key, cert).
fn certificates(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let openssl = |args: &[&str]| {
        toolgate_test_support::succeeded(
            Command::new("openssl").args(args).current_dir(dir),
            &format!("openssl {args:?}"),
        );
    };
    openssl(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "2",
        "-subj",
        "/CN=toolgate test CA",
    ]);
    openssl(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
        "-subj",
        "/CN=localhost",
    ]);
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n\
         keyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    openssl(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "server.pem",
        "-days",
        "2",
        "-extfile",
        "server.ext",
    ]);
    (
        dir.join("ca.pem"),
        dir.join("server.key"),
        dir.join("server.pem"),
    )
}

/// TLS in front of `target`: every connection is decrypted and piped to 127.0.0.1:`target`.
const TERMINATOR: &str = r"
const tls = require('tls'), net = require('net'), fs = require('fs');
const [key, cert, target] = process.argv.slice(2);
const server = tls.createServer({ key: fs.readFileSync(key), cert: fs.readFileSync(cert) }, (c) => {
  const up = net.connect(Number(target), '127.0.0.1');
  c.pipe(up).pipe(c);
  c.on('error', () => up.destroy());
  up.on('error', () => c.destroy());
});
server.listen(0, '127.0.0.1', () => console.log('port ' + server.address().port));
";

fn tls_terminator(dir: &Path, key: &Path, cert: &Path, target: u16) -> (Killed, u16) {
    let script = dir.join("terminator.js");
    std::fs::write(&script, TERMINATOR).unwrap();
    let mut cmd = Command::new("node");
    cmd.arg(&script).arg(key).arg(cert).arg(target.to_string());
    let (child, line) = start_until(cmd, false, |l| l.starts_with("port "));
    (child, line["port ".len()..].trim().parse().unwrap())
}

/// The reference server behind TLS with a certificate for `localhost` from a fresh test CA:
/// its `https://` URL, the CA's file, and the two processes (stopped when dropped).
fn everything_https(dir: &Path) -> (String, PathBuf, [Killed; 2]) {
    let (ca, key, cert) = certificates(dir);
    let (server, port) = everything_http();
    let (tls, tls_port) = tls_terminator(dir, &key, &cert, port);
    (
        format!("https://localhost:{tls_port}/mcp"),
        ca,
        [server, tls],
    )
}

/// `toolgate tools list --json --upstream` with one http upstream at `url`.
fn list_tools(dir: &Path, url: &str, ca: Option<&Path>) -> Output {
    let config = dir.join("upstream.mcp.json");
    std::fs::write(
        &config,
        serde_json::json!({"mcpServers": {"everything": {
            "type": "http",
            "url": url,
            "toolgate": {"readOnly": ["get-sum"], "startupTimeoutSecs": 30}
        }}})
        .to_string(),
    )
    .unwrap();
    let mut cmd = Command::new(BIN);
    cmd.args([
        "tools",
        "list",
        "--json",
        "--surface",
        "debrief",
        "--upstream",
    ])
    .arg(&config)
    .env("TOOLGATE_DATA_DIR", dir.join("data"))
    .env_remove("SSL_CERT_FILE")
    .env_remove("SSL_CERT_DIR");
    if let Some(ca) = ca {
        cmd.env("SSL_CERT_FILE", ca);
    }
    cmd.output().unwrap()
}

fn assert_lists_everything(out: &Output) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "tools list failed: {stderr}");
    let manifest: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = manifest
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"everything__echo"), "{names:?}\n{stderr}");
    let sum = manifest
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "everything__get_sum")
        .unwrap();
    assert_eq!(
        sum["effect"], "read",
        "the upstream's toolgate settings apply"
    );
}

#[test]
fn an_http_upstream_lists_its_tools() {
    if !installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (_server, port) = everything_http();
    let out = list_tools(dir.path(), &format!("http://127.0.0.1:{port}/mcp"), None);
    assert_lists_everything(&out);
}

#[test]
fn an_https_upstream_with_a_trusted_certificate_lists_its_tools() {
    if !installed() || !openssl_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (url, ca, _servers) = everything_https(dir.path());
    let out = list_tools(dir.path(), &url, Some(&ca));
    assert_lists_everything(&out);
}

#[test]
fn an_https_upstream_whose_certificate_nobody_vouches_for_is_refused() {
    if !installed() || !openssl_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (url, _ca, _servers) = everything_https(dir.path());
    let out = list_tools(dir.path(), &url, None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // One unreachable upstream does not stop the listing: its tools are left out, with a warning.
    let manifest: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        !manifest.to_string().contains("everything__"),
        "an unverified server's tools were listed"
    );
    let warning = stderr
        .lines()
        .find(|l| l.starts_with("warning: upstream MCP server \"everything\""))
        .unwrap_or_else(|| panic!("no warning about the server: {stderr}"));
    assert!(
        warning.to_lowercase().contains("certificate"),
        "the warning says why (the certificate): {warning}"
    );
}
