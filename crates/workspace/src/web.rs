//! web_fetch: http(s) only, public addresses only, every hop vetted before connecting.
//!
//! The host name is resolved here, every address is checked (private, loopback, link-local,
//! unique-local, unspecified, multicast, documentation and other special ranges are refused, for
//! IPv4, IPv6 and IPv4 embedded in IPv6), and the connection is made to exactly those vetted
//! addresses through a pinned resolver, so a second DNS answer cannot switch the target
//! (rebinding). Redirects are followed by hand, at most five, each hop vetted the same way.

use std::io::Read;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};
use std::time::Duration;

use std::cell::{Cell, RefCell};

use html5ever::tendril::StrTendril;
use html5ever::tokenizer::states::RawKind;
use html5ever::tokenizer::{
    BufferQueue, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts,
};
use serde_json::{Map, Value};
use toolgate_core::{CallError, ToolOutcome};
use ureq::config::Config;
use ureq::http;
use ureq::unversioned::resolver::{ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{DefaultConnector, NextTimeout};
use url::{Host, Url};

use crate::cap::cap_chars;
use crate::params::Params;
use crate::specs::{kinds, web_methods};
use crate::{Inner, outcome};

/// Redirects followed at most.
pub(crate) const MAX_REDIRECTS: usize = 5;

/// Is this address on the public internet? Everything special-purpose is refused.
pub fn is_public_ip(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    let special = ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local() // 169.254/16, incl. the 169.254.169.254 metadata service
        || ip.is_multicast()
        || ip.is_broadcast()
        || ip.is_documentation()
        || a == 0 // "this network"
        || (a == 100 && (64..128).contains(&b)) // 100.64/10 shared address space (CGNAT)
        || (a == 192 && b == 0 && c == 0) // 192.0.0/24 IETF protocol assignments
        || (a == 198 && (b == 18 || b == 19)) // 198.18/15 benchmarking
        || a >= 240; // 240/4 reserved
    !special
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    // IPv4 inside IPv6: mapped (::ffff:a.b.c.d), compatible (::a.b.c.d), NAT64 (64:ff9b::/96)
    // and 6to4 (2002::/16) are judged by the IPv4 address they carry.
    if let Some(v4) = ip.to_ipv4_mapped() {
        return is_public_v4(v4);
    }
    let seg = ip.segments();
    if seg[..6] == [0, 0, 0, 0, 0, 0] && !ip.is_unspecified() && !ip.is_loopback() {
        return is_public_v4(Ipv4Addr::from_bits(ip.to_bits() as u32));
    }
    if seg[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return is_public_v4(Ipv4Addr::from_bits(ip.to_bits() as u32));
    }
    if seg[0] == 0x2002 {
        let v4 = Ipv4Addr::new(
            (seg[1] >> 8) as u8,
            seg[1] as u8,
            (seg[2] >> 8) as u8,
            seg[2] as u8,
        );
        return is_public_v4(v4);
    }
    let special = ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast() // ff00::/8
        || (seg[0] & 0xfe00) == 0xfc00 // fc00::/7 unique local
        || (seg[0] & 0xffc0) == 0xfe80 // fe80::/10 link-local
        || (seg[0] & 0xffc0) == 0xfec0 // fec0::/10 site-local (deprecated)
        || (seg[0] == 0x2001 && seg[1] == 0x0db8) // 2001:db8::/32 documentation
        || (seg[0] == 0x0100 && seg[1..4] == [0, 0, 0]) // 100::/64 discard-only
        || (seg[0] == 0x2001 && seg[1] < 0x0200); // 2001::/23 IETF protocol assignments (Teredo, ORCHID…)
    !special
}

fn refused(message: String) -> CallError {
    CallError::PermissionDenied { message }
}

/// Check a URL's form: http or https, a host, no credentials. Does not resolve it.
pub fn vet_url(raw: &str) -> Result<Url, CallError> {
    let url = Url::parse(raw.trim()).map_err(|e| {
        CallError::invalid(format!(
            "web_fetch: \"{raw}\" is not a valid URL ({e}); give a full http:// or https:// URL."
        ))
    })?;
    match url.scheme() {
        "http" | "https" => {}
        other => {
            return Err(refused(format!(
                "web_fetch: the URL scheme \"{other}:\" is not allowed; only http:// and https:// URLs can be fetched."
            )));
        }
    }
    if url.host().is_none() {
        return Err(CallError::invalid(format!(
            "web_fetch: \"{raw}\" has no host."
        )));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(CallError::invalid(
            "web_fetch: credentials in the URL (user:password@) are not allowed; send an Authorization header instead.",
        ));
    }
    Ok(url)
}

/// Which addresses a fetch may reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reach {
    /// Public internet only (always, outside tests).
    Public,
    /// Public and loopback: tests use a local server as "the web".
    PublicAndLoopback,
}

impl Reach {
    fn allows(self, ip: IpAddr) -> bool {
        is_public_ip(ip) || (self == Reach::PublicAndLoopback && ip.is_loopback())
    }
}

/// Resolve the URL's host and vet every address. Refuses when any address is not allowed (a
/// name that resolves to both a public and a private address is refused).
pub(crate) fn resolve_vetted(url: &Url, reach: Reach) -> Result<Vec<SocketAddr>, CallError> {
    let port = url
        .port_or_known_default()
        .ok_or_else(|| CallError::invalid(format!("web_fetch: no port for {url}")))?;
    let host_text = url.host_str().unwrap_or_default().to_owned();
    // RFC 6761: "localhost" and its subdomains are loopback, whatever a resolver says.
    let name = host_text.trim_end_matches('.').to_ascii_lowercase();
    if (name == "localhost" || name.ends_with(".localhost")) && reach == Reach::Public {
        return Err(refused(format!(
            "web_fetch: refused to connect to \"{host_text}\": it is a loopback name, a non-public address. Only public internet hosts can be fetched."
        )));
    }
    let addrs: Vec<SocketAddr> = match url.host() {
        Some(Host::Ipv4(ip)) => vec![SocketAddr::new(IpAddr::V4(ip), port)],
        Some(Host::Ipv6(ip)) => vec![SocketAddr::new(IpAddr::V6(ip), port)],
        Some(Host::Domain(name)) => (name, port)
            .to_socket_addrs()
            .map_err(|e| {
                CallError::failed(format!("web_fetch: could not resolve host \"{name}\": {e}"))
            })?
            .collect(),
        None => Vec::new(),
    };
    if addrs.is_empty() {
        return Err(CallError::failed(format!(
            "web_fetch: host \"{host_text}\" has no addresses."
        )));
    }
    if let Some(bad) = addrs.iter().find(|a| !reach.allows(a.ip())) {
        return Err(refused(format!(
            "web_fetch: refused to connect to \"{host_text}\": it resolves to {}, a private, loopback, link-local or otherwise non-public address. Only public internet hosts can be fetched.",
            bad.ip()
        )));
    }
    Ok(addrs)
}

/// A resolver that only ever answers with addresses vetted beforehand, for one host.
#[derive(Debug)]
pub(crate) struct Pinned {
    pub host: String,
    pub addrs: Vec<SocketAddr>,
}

impl Resolver for Pinned {
    fn resolve(
        &self,
        uri: &http::Uri,
        _config: &Config,
        _timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let asked = uri
            .host()
            .unwrap_or_default()
            .trim_start_matches('[')
            .trim_end_matches(']');
        if !asked.eq_ignore_ascii_case(self.host.trim_start_matches('[').trim_end_matches(']')) {
            return Err(ureq::Error::HostNotFound);
        }
        let mut out = self.empty();
        for a in self.addrs.iter().take(16) {
            out.push(*a);
        }
        Ok(out)
    }
}

/// One request and where it goes.
pub(crate) struct Hop<'a> {
    pub method: &'a str,
    pub url: Url,
    pub headers: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
}

/// The response of the last hop.
pub(crate) struct Fetched {
    pub status: u16,
    pub reason: String,
    pub url: Url,
    pub content_type: String,
    pub body: Vec<u8>,
    pub body_total_known: bool,
    pub cut: bool,
}

fn agent_for(host: &str, addrs: Vec<SocketAddr>, timeout: Duration) -> ureq::Agent {
    let config = Config::builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .proxy(None)
        .timeout_global(Some(timeout))
        .user_agent("toolgate-workspace/0.1")
        .build();
    ureq::Agent::with_parts(
        config,
        DefaultConnector::default(),
        Pinned {
            host: host.to_owned(),
            addrs,
        },
    )
}

fn send(agent: &ureq::Agent, hop: &Hop<'_>) -> Result<http::Response<ureq::Body>, ureq::Error> {
    let mut builder = http::Request::builder()
        .method(hop.method)
        .uri(hop.url.as_str());
    for (k, v) in &hop.headers {
        builder = builder.header(k.as_str(), v.as_str());
    }
    match &hop.body {
        Some(body) => agent.run(builder.body(body.clone()).map_err(ureq::Error::from)?),
        None => agent.run(builder.body(()).map_err(ureq::Error::from)?),
    }
}

/// Fetch, following redirects by hand; each hop is vetted by `vet` (scheme/host rules) and its
/// addresses by `reach` before anything connects.
pub(crate) fn fetch(
    mut hop: Hop<'_>,
    reach: Reach,
    vet: &dyn Fn(&Url) -> Result<(), CallError>,
    timeout: Duration,
    body_cap: usize,
    tool: &str,
) -> Result<Fetched, CallError> {
    let started = std::time::Instant::now();
    let mut redirects = 0usize;
    loop {
        vet(&hop.url)?;
        let addrs = resolve_vetted(&hop.url, reach)?;
        let host = hop.url.host_str().unwrap_or_default().to_owned();
        let left = timeout.saturating_sub(started.elapsed());
        if left.is_zero() {
            return Err(CallError::Timeout {
                tool: tool.to_owned(),
                seconds: timeout.as_secs_f64(),
            });
        }
        let agent = agent_for(&host, addrs, left);
        let mut response = send(&agent, &hop).map_err(|e| match e {
            ureq::Error::Timeout(_) => CallError::Timeout {
                tool: tool.to_owned(),
                seconds: timeout.as_secs_f64(),
            },
            other => CallError::failed(format!("{tool}: request to {} failed: {other}", hop.url)),
        })?;
        let status = response.status();
        if status.is_redirection() && status != http::StatusCode::NOT_MODIFIED {
            let location = response
                .headers()
                .get(http::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let Some(location) = location else {
                return Err(CallError::failed(format!(
                    "{tool}: {} answered {status} without a Location header.",
                    hop.url
                )));
            };
            redirects += 1;
            if redirects > MAX_REDIRECTS {
                return Err(CallError::failed(format!(
                    "{tool}: too many redirects (more than {MAX_REDIRECTS}); last one from {} to {location}.",
                    hop.url
                )));
            }
            let next = hop.url.join(&location).map_err(|e| {
                CallError::failed(format!(
                    "{tool}: {} redirected to an invalid location \"{location}\": {e}",
                    hop.url
                ))
            })?;
            if next.origin() != hop.url.origin() {
                // Credentials the caller gave for one origin never follow to another.
                hop.headers.retain(|(k, _)| {
                    !k.eq_ignore_ascii_case("authorization") && !k.eq_ignore_ascii_case("cookie")
                });
            }
            let code = status.as_u16();
            if code == 303 || ((code == 301 || code == 302) && hop.method == "POST") {
                hop.method = if hop.method == "HEAD" { "HEAD" } else { "GET" };
                hop.body = None;
                hop.headers
                    .retain(|(k, _)| !k.eq_ignore_ascii_case("content-type"));
            }
            hop.url = next;
            continue;
        }
        let content_type = response
            .headers()
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let mut body = Vec::new();
        let reader = response.body_mut().with_config().limit(u64::MAX).reader();
        reader
            .take(body_cap as u64 + 1)
            .read_to_end(&mut body)
            .map_err(|e| {
                CallError::failed(format!(
                    "{tool}: reading the response from {} failed: {e}",
                    hop.url
                ))
            })?;
        let cut = body.len() > body_cap;
        body.truncate(body_cap);
        return Ok(Fetched {
            status: status.as_u16(),
            reason: status.canonical_reason().unwrap_or_default().to_owned(),
            url: hop.url,
            content_type,
            body,
            body_total_known: !cut,
            cut,
        });
    }
}

/// Headers a caller may not set (they would confuse framing or the target).
const FORBIDDEN_HEADERS: &[&str] = &[
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "upgrade",
    "te",
    "trailer",
    "proxy-authorization",
    "proxy-connection",
];

/// How a person turns web_fetch on: the key of the CodeAct config file
/// (`toolgate_config`, `[workspace]` table), which is what people edit; the
/// `WorkspaceConfig` field it sets has another name.
pub(crate) const ENABLE_WEB_FETCH: &str = "A person can enable it in the user config file ($TOOLGATE_CONFIG, else ~/.config/toolgate/config.toml) with `web_fetch = true` in its `[workspace]` table (a project's .toolgate/config.toml counts only after `toolgate trust`).";

/// The same for write methods in web_fetch and github_api.
pub(crate) const ENABLE_HTTP_WRITES: &str = " Write methods need `http_writes = true` in the `[workspace]` table of the user config file ($TOOLGATE_CONFIG, else ~/.config/toolgate/config.toml).";

pub(crate) fn web_fetch(
    inner: &Inner,
    map: &Map<String, Value>,
    deadline: Option<Duration>,
) -> Result<ToolOutcome, CallError> {
    let config = &inner.config;
    if !config.web_fetch_enabled {
        return Err(refused(format!(
            "web_fetch is disabled in this workspace: network access is off by default. {ENABLE_WEB_FETCH}"
        )));
    }
    let p = Params::new("web_fetch", map);
    let raw_url = p.str_req("url")?;
    let method = p.str_or("method", "GET")?.to_ascii_uppercase();
    let data = p.str_or("data", "")?;
    let max_length = p.int_opt("max_length")?.unwrap_or(20_000);
    if max_length < 1 {
        return Err(CallError::invalid(
            "web_fetch: max_length must be at least 1.",
        ));
    }
    let allowed = web_methods(config.http_writes_enabled);
    let Some(method) = allowed.iter().find(|m| **m == method) else {
        return Err(refused(format!(
            "web_fetch: method {method} is not allowed here; allowed: {}.{}",
            allowed.join(", "),
            if config.http_writes_enabled {
                ""
            } else {
                ENABLE_HTTP_WRITES
            }
        )));
    };
    if !data.is_empty() && matches!(*method, "GET" | "HEAD") {
        return Err(CallError::invalid(format!(
            "web_fetch: data is only sent with POST, PUT, PATCH or DELETE, not {method}."
        )));
    }
    let mut headers: Vec<(String, String)> = Vec::new();
    if let Some(h) = p.object_opt("headers")? {
        for (k, v) in h {
            let Some(v) = v.as_str() else {
                return Err(CallError::invalid(format!(
                    "web_fetch: header \"{k}\" must have a string value."
                )));
            };
            if FORBIDDEN_HEADERS.iter().any(|f| k.eq_ignore_ascii_case(f)) {
                return Err(CallError::invalid(format!(
                    "web_fetch: header \"{k}\" cannot be set."
                )));
            }
            if http::HeaderName::from_bytes(k.as_bytes()).is_err()
                || http::HeaderValue::from_str(v).is_err()
            {
                return Err(CallError::invalid(format!(
                    "web_fetch: header \"{k}\" is not a valid HTTP header."
                )));
            }
            headers.push((k.clone(), v.to_owned()));
        }
    }
    let body = if data.is_empty() {
        None
    } else {
        if !headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("content-type"))
        {
            headers.push((
                "Content-Type".to_owned(),
                "application/x-www-form-urlencoded".to_owned(),
            ));
        }
        Some(data.as_bytes().to_vec())
    };
    let url = vet_url(raw_url)?;
    let reach = if inner.allow_loopback {
        Reach::PublicAndLoopback
    } else {
        Reach::Public
    };
    let timeout = deadline.map_or(config.http_timeout, |d| d.min(config.http_timeout));
    let fetched = fetch(
        Hop {
            method,
            url,
            headers,
            body,
        },
        reach,
        &|u: &Url| vet_url(u.as_str()).map(|_| ()),
        timeout,
        config.read_cap_bytes,
        "web_fetch",
    )?;
    let text = String::from_utf8_lossy(&fetched.body);
    if !(200..300).contains(&fetched.status) {
        let snippet: String = text.chars().take(300).collect();
        return Err(CallError::failed(format!(
            "web_fetch: {} answered HTTP {} {}. Body starts: {}",
            fetched.url,
            fetched.status,
            fetched.reason,
            snippet.trim()
        )));
    }
    let head: String = text.chars().take(500).collect::<String>().to_lowercase();
    let is_html = fetched.content_type.contains("html")
        || head.contains("<html")
        || head.contains("<!doctype");
    let mut out = if is_html {
        html_to_text(&text)
    } else {
        text.into_owned()
    };
    if fetched.cut {
        out.push_str(&format!(
            "\n\n…[download stopped at {} bytes]",
            config.read_cap_bytes
        ));
    }
    let (out, cut) = cap_chars(&out, max_length as usize);
    let mut summary = format!(
        "Fetched {} (HTTP {}, {} chars{}).",
        fetched.url,
        fetched.status,
        out.chars().count(),
        if is_html { ", HTML as text" } else { "" }
    );
    if cut || !fetched.body_total_known {
        summary.push_str(" The text was cut.");
    }
    let kind = if config.http_writes_enabled {
        kinds::WEB_WRITE
    } else {
        kinds::WEB
    };
    Ok(outcome(kind, summary, Value::String(out)))
}

/// Tag names that end a line of text.
const BLOCK: &[&str] = &[
    "p",
    "div",
    "br",
    "li",
    "ul",
    "ol",
    "tr",
    "table",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "section",
    "article",
    "header",
    "footer",
    "nav",
    "pre",
    "blockquote",
    "hr",
    "title",
    "dd",
    "dt",
    "td",
    "th",
];

/// Collects the text of the tokens html5ever's tokenizer hands it.
#[derive(Default)]
struct TextSink {
    out: RefCell<String>,
    /// Inside `<script>` or `<style>`: their text is code, not page text.
    in_code: Cell<bool>,
}

impl TokenSink for TextSink {
    type Handle = ();

    fn process_token(&self, token: Token, _line: u64) -> TokenSinkResult<()> {
        match token {
            Token::TagToken(tag) => {
                let name: &str = &tag.name;
                let start = tag.kind == TagKind::StartTag;
                // Without a tree builder the tokenizer is told where text is raw, as the tree
                // builder would tell it: script and style bodies are code, skipped up to their
                // end tag; title and textarea bodies are text even where they look like tags.
                match name {
                    "script" | "style" => {
                        self.in_code.set(start);
                        if start {
                            return TokenSinkResult::RawData(if name == "script" {
                                RawKind::ScriptData
                            } else {
                                RawKind::Rawtext
                            });
                        }
                        return TokenSinkResult::Continue;
                    }
                    _ => {}
                }
                self.out
                    .borrow_mut()
                    .push(if BLOCK.contains(&name) { '\n' } else { ' ' });
                if start && matches!(name, "title" | "textarea") {
                    return TokenSinkResult::RawData(RawKind::Rcdata);
                }
            }
            Token::CharacterTokens(text) if !self.in_code.get() => {
                self.out.borrow_mut().push_str(&text);
            }
            _ => {}
        }
        TokenSinkResult::Continue
    }
}

/// HTML to readable text: scripts, styles and comments dropped, tags removed (block tags become
/// line breaks), entities decoded, blank runs collapsed.
///
/// The markup is read by html5ever's tokenizer (the WHATWG tokenizer: every named entity, `>`
/// inside quoted attributes, `<` before a non-letter as text) instead of the hand-written tag
/// scanner and seven-entity decoder this had, which needed three panic fixes for slicing inside
/// multi-byte characters. Not `html2text`: it drops `<title>`, writes Markdown marks (`# Head`,
/// `**bold**`) and wraps lines, so `html_becomes_text` fails against it; not `scraper`: it builds
/// a tree and compiles a CSS selector engine this does not need. Measured on a release build
/// with the workspace's profile (LTO, opt-level "s") of a program that only converts one page:
/// 365 KB without a parser, 1,103 KB with html5ever's tokenizer, 1,260 KB with scraper.
/// What it costs every process (measured on the whole binary, release, 2-core machine): its
/// static tables (atoms, named entities) are pointers the loader relocates at each start — the
/// binary's relative relocations went from 39,526 to 50,819 and `.data.rel.ro` grew 258 KB
/// between 872248c and a tree that added html5ever, jsonc-parser and the https client (not
/// split between them), and `toolgate exec --code '1+1'` starts about 0.3 ms later at the
/// median (8.2 → 8.5 ms, 25 alternating runs; `readelf -d BIN | grep RELACOUNT`). Kept: a
/// correct reading of any page is worth a third of a millisecond.
pub(crate) fn html_to_text(html: &str) -> String {
    // Tendrils hold at most u32::MAX bytes; pages are fed in pieces cut at character boundaries.
    const PIECE: usize = 1 << 20;
    let queue = BufferQueue::default();
    let mut rest = html;
    while !rest.is_empty() {
        let mut cut = rest.len().min(PIECE);
        while !rest.is_char_boundary(cut) {
            cut -= 1;
        }
        let (piece, tail) = rest.split_at(cut);
        queue.push_back(StrTendril::from_slice(piece));
        rest = tail;
    }
    let tokenizer = Tokenizer::new(TextSink::default(), TokenizerOpts::default());
    // `Script` is returned only when the sink asks for it, which this one never does, so one
    // call reads the whole queue.
    let _ = tokenizer.feed(&queue);
    tokenizer.end();
    let out = tokenizer.sink.out.take();
    // Collapse spaces within lines and runs of blank lines.
    let mut result = String::with_capacity(out.len());
    let mut blank = 0usize;
    for line in out.lines() {
        let collapsed = line.split_whitespace().collect::<Vec<_>>().join(" ");
        if collapsed.is_empty() {
            blank += 1;
            if blank == 1 && !result.is_empty() {
                result.push('\n');
            }
            continue;
        }
        blank = 0;
        result.push_str(&collapsed);
        result.push('\n');
    }
    result.trim().to_owned()
}

#[cfg(test)]
pub(crate) mod tests {
    use std::io::{BufRead, BufReader, Write};
    use std::net::TcpListener;
    use std::sync::{Arc, Mutex};

    use serde_json::json;
    use toolgate_core::CallError;

    use super::*;
    use crate::testutil::run;

    /// A tiny HTTP server on 127.0.0.1: each connection gets the next scripted response.
    /// Returns the port and a log of the request heads received.
    pub(crate) fn serve(responses: Vec<String>) -> (u16, Arc<Mutex<Vec<String>>>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let log = Arc::new(Mutex::new(Vec::new()));
        let log2 = Arc::clone(&log);
        std::thread::spawn(move || {
            for (stream, resp) in listener.incoming().zip(responses) {
                let mut stream = stream.unwrap();
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut head = String::new();
                let mut content_length = 0usize;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        content_length = v.trim().parse().unwrap_or(0);
                    }
                    head.push_str(&line);
                }
                let mut body = vec![0u8; content_length];
                let _ = std::io::Read::read_exact(&mut reader, &mut body);
                head.push_str(&String::from_utf8_lossy(&body));
                log2.lock().unwrap().push(head);
                let _ = stream.write_all(resp.as_bytes());
            }
        });
        (port, log)
    }

    pub(crate) fn response(status: &str, headers: &[(&str, &str)], body: &str) -> String {
        let mut r = format!(
            "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n",
            body.len()
        );
        for (k, v) in headers {
            r.push_str(&format!("{k}: {v}\r\n"));
        }
        r.push_str("\r\n");
        r.push_str(body);
        r
    }

    fn enabled(allow_loopback: bool, writes: bool) -> (tempfile::TempDir, crate::WorkspaceTools) {
        let dir = tempfile::tempdir().unwrap();
        let mut c = crate::WorkspaceConfig::new(dir.path()).unwrap();
        c.web_fetch_enabled = true;
        c.http_writes_enabled = writes;
        c.http_timeout = Duration::from_secs(10);
        (
            dir,
            crate::WorkspaceTools::for_tests(c, None, allow_loopback, None),
        )
    }

    #[test]
    fn address_classes() {
        let public = [
            "8.8.8.8",
            "1.1.1.1",
            "2606:4700:4700::1111",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
        ];
        for ip in public {
            assert!(is_public_ip(ip.parse().unwrap()), "{ip}");
        }
        let blocked = [
            "127.0.0.1",
            "127.1.2.3",
            "10.0.0.1",
            "172.16.5.4",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "169.254.0.1",
            "0.0.0.0",
            "0.1.2.3",
            "100.64.0.1",
            "224.0.0.1",
            "239.255.255.250",
            "255.255.255.255",
            "240.0.0.1",
            "192.0.0.8",
            "192.0.2.1",
            "198.18.0.1",
            "203.0.113.9",
            "::",
            "::1",
            "fe80::1",
            "fc00::1",
            "fd12:3456::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::ffff:10.0.0.1",
            "::127.0.0.1",
            "64:ff9b::a00:1",
            "2002:7f00:1::",
            "2001:db8::1",
            "fec0::1",
        ];
        for ip in blocked {
            assert!(!is_public_ip(ip.parse().unwrap()), "{ip}");
        }
    }

    #[test]
    fn url_forms() {
        assert!(vet_url("https://example.com/x").is_ok());
        for bad in [
            "file:///etc/passwd",
            "ftp://example.com/",
            "gopher://x/",
            "javascript:alert(1)",
            "data:text/plain,hi",
        ] {
            let err = vet_url(bad).unwrap_err();
            assert!(
                err.to_string().contains("only http:// and https://"),
                "{bad}: {err}"
            );
        }
        assert!(matches!(
            vet_url("not a url").unwrap_err(),
            CallError::InvalidInput { .. }
        ));
        assert!(matches!(
            vet_url("http://user:pw@example.com/").unwrap_err(),
            CallError::InvalidInput { .. }
        ));
    }

    #[test]
    fn pinned_resolver_answers_only_for_its_host() {
        let p = Pinned {
            host: "example.com".to_owned(),
            addrs: vec!["93.184.216.34:443".parse().unwrap()],
        };
        let cfg = Config::builder().build();
        let t = NextTimeout {
            after: ureq::unversioned::transport::time::Duration::NotHappening,
            reason: ureq::Timeout::Global,
            per_read: None,
            per_write: None,
        };
        let uri: http::Uri = "https://example.com/".parse().unwrap();
        assert_eq!(p.resolve(&uri, &cfg, t).unwrap().len(), 1);
        let other: http::Uri = "https://evil.test/".parse().unwrap();
        assert!(p.resolve(&other, &cfg, t).is_err());
    }

    #[test]
    fn html_becomes_text() {
        let html = "<!DOCTYPE html><html><head><title>T</title><style>p{color:red}</style>\
                    <script>var x = '<p>';</script></head><body><h1>Head</h1>\
                    <p>One &amp; two&nbsp;&lt;3&#33; &#x41;</p><!-- hidden --><p>Three   four</p></body></html>";
        assert_eq!(
            html_to_text(html),
            "T\n\nHead\n\nOne & two <3! A\n\nThree four"
        );
    }

    /// What a browser shows, where the hand-written converter this module had did not: every
    /// named entity of HTML (it knew seven), a `>` inside a quoted attribute value (it ended the
    /// tag there and printed the rest of the tag), `<` before a non-letter as text, and the
    /// text of `<title>` and `<textarea>` read as text, not as tags.
    #[test]
    fn html_is_read_as_a_browser_reads_it() {
        assert_eq!(
            html_to_text("<p>Caf&eacute; &mdash; it&rsquo;s &hellip; &copy;&nbsp;2026</p>"),
            "Café — it’s … © 2026"
        );
        assert_eq!(
            html_to_text("<a title=\"a > b\" href=\"/x\">link</a> after"),
            "link after"
        );
        assert_eq!(html_to_text("<p>1 < 2 and 3 <= 4</p>"), "1 < 2 and 3 <= 4");
        assert_eq!(
            html_to_text("<title>a <b> c</title><p>d</p>"),
            "a <b> c\n\nd"
        );
    }

    /// A page longer than one tendril piece (1 MiB), cut inside two-byte characters.
    #[test]
    fn long_pages_are_read_whole() {
        let page = format!("<p>{}</p><p>end &amp; more</p>", "é".repeat(700_001));
        let text = html_to_text(&page);
        assert_eq!(text.chars().filter(|c| *c == 'é').count(), 700_001);
        assert!(
            text.ends_with("\n\nend & more"),
            "{}",
            &text[text.len() - 40..]
        );
    }

    /// The issue's reproductions: a `&` followed by multi-byte characters within the first 12
    /// bytes used to slice inside a character and panic (in the hand-written entity decoder this
    /// module had; html5ever's tokenizer decodes entities now, and the cases stay).
    #[test]
    fn entities_next_to_multibyte_text_do_not_panic() {
        assert_eq!(html_to_text("&日本語の"), "&日本語の");
        assert_eq!(html_to_text("&ééééééé"), "&ééééééé");
        assert_eq!(html_to_text("a&éé;b&amp;c"), "a&éé;b&c");
        assert_eq!(html_to_text("&#x65e5;&#26412;"), "日本");
        assert_eq!(html_to_text("<p>&日本語の</p>"), "&日本語の");
    }

    proptest::proptest! {
        /// No input panics the entity decoding, and text without markup or entities passes
        /// through with only its blanks collapsed.
        #[test]
        fn entity_decoder_never_panics(
            s in proptest::prelude::any::<String>(),
            // Dense in `&`, `;`, `#` and multi-byte characters, where the slicing went wrong.
            dense in "[&;#xX0-9a-fé日本語の😀]{0,40}",
            t in "[a-zA-Z0-9é日本語の😀 .,;:!?()'\"-]{0,60}",
        ) {
            let _ = html_to_text(&s);
            let _ = html_to_text(&dense);
            let _ = html_to_text(&format!("&{s}"));
            let _ = html_to_text(&format!("<p>&{s}</p>"));
            proptest::prop_assert_eq!(
                html_to_text(&t),
                t.split_whitespace().collect::<Vec<_>>().join(" ")
            );
        }

        /// No markup panics the converter: unclosed tags, comments and scripts cut off inside
        /// multi-byte text (`<é` sliced `lower[i+1..len-1]` inside the `é`).
        #[test]
        fn html_to_text_never_panics(
            s in proptest::prelude::any::<String>(),
            // Dense in tag syntax and multi-byte characters.
            markup in "[<>/!\\-a-zA-Z &;#é日本語の😀‹]{0,60}",
            name in "(p|br|script|style|!--|/p|x)?",
            tail in "[é日😀‹a-z ]{0,4}",
        ) {
            let _ = html_to_text(&s);
            let _ = html_to_text(&markup);
            let _ = html_to_text(&format!("<{s}"));
            let _ = html_to_text(&format!("{s}<"));
            let _ = html_to_text(&format!("<{name}{tail}"));
            let _ = html_to_text(&format!("<{name}>{tail}"));
            let _ = html_to_text(&format!("{markup}<{name}{tail}"));
        }
    }

    /// The reproductions: an unclosed tag ending inside a multi-byte character.
    #[test]
    fn unclosed_tags_in_multibyte_text() {
        for html in [
            "<é",
            "x<日",
            "<p>‹é<é",
            "<a href=\"é",
            "<script>é",
            "<!--é",
            "<😀",
        ] {
            let _ = html_to_text(html);
        }
        // `<` before a non-letter is text in HTML (a browser shows `<é`); the hand-written
        // scanner this replaced dropped it as an unclosed tag.
        assert_eq!(html_to_text("été <b>ok</b> <é"), "été ok <é");
    }

    #[tokio::test]
    async fn disabled_by_default() {
        let (_d, t) = crate::testutil::ws();
        let err = run(&t, "web_fetch", json!({"url": "https://example.com/"}))
            .await
            .unwrap_err();
        assert!(matches!(err, CallError::PermissionDenied { .. }), "{err}");
        assert!(err.to_string().contains("disabled"), "{err}");
    }

    #[tokio::test]
    async fn fetches_and_converts_html() {
        let (_d, t) = enabled(true, false);
        let (port, log) = serve(vec![response(
            "200 OK",
            &[("Content-Type", "text/html")],
            "<html><body><p>Hello</p><p>World</p></body></html>",
        )]);
        let o = run(
            &t,
            "web_fetch",
            json!({"url": format!("http://127.0.0.1:{port}/page"), "headers": {"X-Test": "1"}}),
        )
        .await
        .unwrap();
        assert_eq!(o.data, json!("Hello\n\nWorld"));
        assert_eq!(o.kind.as_str(), "read/web");
        let head = log.lock().unwrap()[0].clone();
        assert!(head.starts_with("GET /page HTTP/1.1"), "{head}");
        assert!(head.to_ascii_lowercase().contains("x-test: 1"), "{head}");
    }

    #[tokio::test]
    async fn status_and_transport_errors_are_reported() {
        let (_d, t) = enabled(true, false);
        let (port, _) = serve(vec![response("404 Not Found", &[], "no such page")]);
        let err = run(
            &t,
            "web_fetch",
            json!({"url": format!("http://127.0.0.1:{port}/x")}),
        )
        .await
        .unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("HTTP 404") && msg.contains("no such page"),
            "{msg}"
        );
        // Nothing listens on this port.
        let closed = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let err = run(
            &t,
            "web_fetch",
            json!({"url": format!("http://127.0.0.1:{closed}/")}),
        )
        .await
        .unwrap_err();
        assert!(matches!(err, CallError::Failed { .. }), "{err}");
        assert!(err.to_string().contains("failed"), "{err}");
    }

    #[tokio::test]
    async fn text_is_cut_with_a_marker() {
        let (_d, t) = enabled(true, false);
        let (port, _) = serve(vec![response(
            "200 OK",
            &[("Content-Type", "text/plain")],
            &"a".repeat(100),
        )]);
        let o = run(
            &t,
            "web_fetch",
            json!({"url": format!("http://127.0.0.1:{port}/"), "max_length": 10}),
        )
        .await
        .unwrap();
        let s = o.data.as_str().unwrap();
        assert!(
            s.starts_with("aaaaaaaaaa\n\n…[truncated at 10 chars; 90 more"),
            "{s}"
        );
    }

    #[tokio::test]
    async fn redirects_are_vetted_and_limited() {
        let (_d, t) = enabled(true, false);
        // A redirect to a non-loopback private address is refused before connecting.
        let (port, _) = serve(vec![response(
            "302 Found",
            &[("Location", "http://10.255.255.1/")],
            "",
        )]);
        let err = run(
            &t,
            "web_fetch",
            json!({"url": format!("http://127.0.0.1:{port}/")}),
        )
        .await
        .unwrap_err();
        assert!(matches!(err, CallError::PermissionDenied { .. }), "{err}");
        // A redirect to file:// is refused.
        let (port, _) = serve(vec![response(
            "301 Moved",
            &[("Location", "file:///etc/passwd")],
            "",
        )]);
        let err = run(
            &t,
            "web_fetch",
            json!({"url": format!("http://127.0.0.1:{port}/")}),
        )
        .await
        .unwrap_err();
        assert!(
            err.to_string().contains("only http:// and https://"),
            "{err}"
        );
        // A relative redirect is followed.
        let (port, log) = serve(vec![
            response("302 Found", &[("Location", "/final")], ""),
            response("200 OK", &[("Content-Type", "text/plain")], "done"),
        ]);
        let o = run(
            &t,
            "web_fetch",
            json!({"url": format!("http://127.0.0.1:{port}/start")}),
        )
        .await
        .unwrap();
        assert_eq!(o.data, json!("done"));
        assert!(log.lock().unwrap()[1].starts_with("GET /final "));
        // A loop stops after five redirects.
        let (port, _) = serve(
            (0..7)
                .map(|_| response("302 Found", &[("Location", "/again")], ""))
                .collect(),
        );
        let err = run(
            &t,
            "web_fetch",
            json!({"url": format!("http://127.0.0.1:{port}/")}),
        )
        .await
        .unwrap_err();
        assert!(err.to_string().contains("too many redirects"), "{err}");
    }

    #[tokio::test]
    async fn write_methods_need_the_setting() {
        let (_d, t) = enabled(true, false);
        let err = run(
            &t,
            "web_fetch",
            json!({"url": "http://127.0.0.1:1/", "method": "POST", "data": "a=1"}),
        )
        .await
        .unwrap_err();
        assert!(err.to_string().contains("`http_writes = true`"), "{err}");
        let err = run(
            &t,
            "web_fetch",
            json!({"url": "http://127.0.0.1:1/", "data": "a=1"}),
        )
        .await
        .unwrap_err();
        assert!(matches!(err, CallError::InvalidInput { .. }), "{err}");
        let err = run(
            &t,
            "web_fetch",
            json!({"url": "http://127.0.0.1:1/", "headers": {"Host": "x"}}),
        )
        .await
        .unwrap_err();
        assert!(matches!(err, CallError::InvalidInput { .. }), "{err}");

        let (_d, t) = enabled(true, true);
        let (port, log) = serve(vec![response(
            "200 OK",
            &[("Content-Type", "text/plain")],
            "ok",
        )]);
        let o = run(&t, "web_fetch", json!({"url": format!("http://127.0.0.1:{port}/f"), "method": "POST", "data": "a=1&b=2"}))
            .await
            .unwrap();
        assert_eq!(o.data, json!("ok"));
        assert_eq!(o.kind.as_str(), "workspace/web");
        let head = log.lock().unwrap()[0].clone();
        assert!(
            head.starts_with("POST /f ") && head.ends_with("a=1&b=2"),
            "{head}"
        );
        assert!(
            head.to_ascii_lowercase()
                .contains("content-type: application/x-www-form-urlencoded")
        );
    }

    #[tokio::test]
    async fn loopback_is_refused_outside_tests() {
        let (_d, t) = enabled(false, false);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        listener.set_nonblocking(true).unwrap();
        let err = run(
            &t,
            "web_fetch",
            json!({"url": format!("http://127.0.0.1:{port}/")}),
        )
        .await
        .unwrap_err();
        assert!(matches!(err, CallError::PermissionDenied { .. }), "{err}");
        assert!(listener.accept().is_err(), "no connection was made");
    }
}
