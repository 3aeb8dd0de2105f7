//! Guard for issue 34 item 2, "failures typed end to end", over every crate's production code
//! (`crates/*/src/**/*.rs`, without `#[cfg(test)]` items):
//!
//! (a) no `Result<…, String>` outside the functions clap uses as `value_parser`: a failure that
//!     other code decides on is a typed error (a `thiserror` enum with context);
//! (b) no decision read from message text: no `.contains(` / `.starts_with(` / `.ends_with(` /
//!     `.strip_prefix(` / `.strip_suffix(` / `.find(` / `.split_once(` / `==` applied to something
//!     named like an error or a message (`e.message`, `err`, `msg`, `stderr_tail`,
//!     `….to_string()`, …). The kind is carried to where the decision is made instead.
//!
//! The scanner is a heuristic over the source text (comments and string contents are blanked
//! first, so a message that *mentions* `err.contains(` is not a hit). Its unit tests below run it
//! on the offending lines of the code before the fix, so a scanner that stopped finding them
//! fails. To scan an older commit instead of the working tree (to see the guard fail there):
//! `TOOLGATE_SCAN_REV=<commit> cargo test -p toolgate-core --test no_message_text_decisions`.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// One offending place.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Hit {
    file: String,
    line: usize,
    rule: &'static str,
    text: String,
}

const STRING_RESULT: &str = "Result<_, String>";
const MESSAGE_TEXT: &str = "decision on message text";

/// Methods that decide on a text's content.
const TEXT_TESTS: &[&str] = &[
    "contains",
    "starts_with",
    "ends_with",
    "strip_prefix",
    "strip_suffix",
    "find",
    "rfind",
    "split_once",
    "rsplit_once",
];

/// Names that hold an error or a message (a whole identifier, or its `_`-separated last word).
const MESSAGE_NAMES: &[&str] = &[
    "e", "err", "error", "errors", "msg", "message", "messages", "stderr", "why", "reason",
    "detail", "details", "refusal", "failure", "reply",
];

/// Methods that rewrite or cut a text: a decision on its wording only when the pattern is
/// wording (a string literal with a space in it), not a delimiter such as `","`.
const TEXT_REWRITES: &[&str] = &["split", "splitn", "rsplit", "replace", "replacen"];

/// Fields that hold a kind spelled as text: testing their prefix (`category.starts_with("mcp:")`)
/// decides on text where a typed kind belongs.
const TEXT_KINDS: &[&str] = &["category"];

/// `code` with comments blanked and the contents of string and char literals replaced by `_`
/// (quotes kept), byte for byte the same length, so lines and columns stay where they were.
fn blank(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = b.to_vec();
    let mut i = 0;
    let n = b.len();
    let fill = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in out.iter_mut().take(to).skip(from) {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    while i < n {
        let c = b[i];
        if c == b'/' && i + 1 < n && b[i + 1] == b'/' {
            let end = src[i..].find('\n').map_or(n, |e| i + e);
            fill(&mut out, i, end);
            i = end;
        } else if c == b'/' && i + 1 < n && b[i + 1] == b'*' {
            let mut depth = 1;
            let mut j = i + 2;
            while j < n && depth > 0 {
                if b[j] == b'/' && j + 1 < n && b[j + 1] == b'*' {
                    depth += 1;
                    j += 2;
                } else if b[j] == b'*' && j + 1 < n && b[j + 1] == b'/' {
                    depth -= 1;
                    j += 2;
                } else {
                    j += 1;
                }
            }
            fill(&mut out, i, j);
            i = j;
        } else if c == b'r'
            && (i == 0 || !is_ident(b[i - 1]))
            && i + 1 < n
            && (b[i + 1] == b'"' || b[i + 1] == b'#')
        {
            // A raw string r"…" or r#"…"#; `r#ident` is a raw identifier.
            let mut j = i + 1;
            let mut hashes = 0;
            while j < n && b[j] == b'#' {
                hashes += 1;
                j += 1;
            }
            if j < n && b[j] == b'"' {
                let close: String = std::iter::once('"')
                    .chain(std::iter::repeat_n('#', hashes))
                    .collect();
                let end = src[j + 1..].find(&close).map_or(n, |e| j + 1 + e);
                fill(&mut out, j + 1, end);
                i = end + close.len();
            } else {
                i = j;
            }
        } else if c == b'"' {
            let mut j = i + 1;
            while j < n && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            let end = j.min(n);
            for c in out.iter_mut().take(end).skip(i + 1) {
                if *c != b'\n' {
                    *c = b'_';
                }
            }
            i = end + 1;
        } else if c == b'\'' {
            // A char literal ('x', '\n', '\u{1F600}') — or a lifetime / label, left alone.
            let close = if i + 2 < n && b[i + 1] == b'\\' {
                src[i + 2..].find('\'').map(|e| i + 2 + e)
            } else if i + 2 < n {
                let ch = src[i + 1..].chars().next().map_or(1, char::len_utf8);
                (b.get(i + 1 + ch) == Some(&b'\'')).then_some(i + 1 + ch)
            } else {
                None
            };
            match close {
                Some(end) => {
                    for c in out.iter_mut().take(end).skip(i + 1) {
                        *c = b'_';
                    }
                    i = end + 1;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    String::from_utf8(out).unwrap_or_default()
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// `code` (already blanked) with every `#[cfg(test)]` item blanked too.
fn drop_test_items(code: &str) -> String {
    let mut out = code.as_bytes().to_vec();
    let mut from = 0;
    while let Some(at) = code[from..].find("#[cfg(test)]").map(|a| a + from) {
        // The item ends at its matching `}` or, for an item without a body, at `;`.
        let b = code.as_bytes();
        let mut j = at + "#[cfg(test)]".len();
        while j < b.len() && b[j] != b'{' && b[j] != b';' {
            j += 1;
        }
        if j < b.len() && b[j] == b'{' {
            let mut depth = 0;
            while j < b.len() {
                match b[j] {
                    b'{' => depth += 1,
                    b'}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
        }
        let end = (j + 1).min(b.len());
        for c in out.iter_mut().take(end).skip(at) {
            if *c != b'\n' {
                *c = b' ';
            }
        }
        from = end;
    }
    String::from_utf8(out).unwrap_or_default()
}

/// The names of the functions clap uses as value parsers (`value_parser = NAME`), anywhere.
fn value_parsers(code: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut from = 0;
    while let Some(at) = code[from..].find("value_parser").map(|a| a + from) {
        let rest = code[at + "value_parser".len()..].trim_start();
        if let Some(r) = rest.strip_prefix('=').or_else(|| rest.strip_prefix('(')) {
            let path: String = r
                .trim_start()
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            if let Some(last) = path.rsplit("::").next()
                && !last.is_empty()
            {
                names.insert(last.to_owned());
            }
        }
        from = at + 1;
    }
    names
}

/// The last type argument of the `Result<` starting at `open` (the index of `<`), and where the
/// `>` that closes it is.
fn result_error_type(code: &str, open: usize) -> Option<(String, usize)> {
    let b = code.as_bytes();
    let mut depth = 0usize;
    let mut commas = Vec::new();
    let mut j = open;
    while j < b.len() {
        match b[j] {
            b'<' => depth += 1,
            b'>' if j > 0 && b[j - 1] == b'-' => {} // `->` in a fn type
            b'>' => {
                depth -= 1;
                if depth == 0 {
                    // The last argument, or the one before a trailing comma.
                    let mut end = j;
                    let mut start = *commas.last()? + 1;
                    if code[start..end].trim().is_empty() {
                        end = start - 1;
                        start = commas.iter().rev().nth(1).map_or(open + 1, |c| c + 1);
                    }
                    return Some((code[start..end].trim().to_owned(), j));
                }
            }
            b',' if depth == 1 => commas.push(j),
            b';' | b'{' => return None,
            _ => {}
        }
        j += 1;
    }
    None
}

/// The name of the `fn` whose signature holds byte `at`, if `at` is in a signature.
fn enclosing_signature_fn(code: &str, at: usize) -> Option<String> {
    let before = &code[..at];
    let fn_at = before.rfind("fn ")?;
    // A body (`{`) or an item end (`;`) between the `fn` and `at`: not its signature.
    if before[fn_at..].contains(['{', ';']) {
        return None;
    }
    Some(
        before[fn_at + 3..]
            .trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect(),
    )
}

fn line_of(code: &str, at: usize) -> usize {
    code[..at].matches('\n').count() + 1
}

fn line_text(src: &str, line: usize) -> String {
    src.lines()
        .nth(line - 1)
        .unwrap_or_default()
        .trim()
        .to_owned()
}

/// The receiver expression just before a `.method(` at `dot`: identifiers, field and method
/// chains, calls and indexing, e.g. `e.message`, `stderr_tail`, `err.to_string()`.
fn receiver(code: &str, dot: usize) -> &str {
    let b = code.as_bytes();
    let mut j = dot;
    let mut depth = 0i32;
    while j > 0 {
        let c = b[j - 1];
        match c {
            b')' | b']' => depth += 1,
            b'(' | b'[' if depth > 0 => depth -= 1,
            _ if depth > 0 => {}
            _ if is_ident(c) || c == b'.' || c == b'?' => {}
            // A chain over several lines: whitespace before a `.`.
            _ if c.is_ascii_whitespace() && b[j..].trim_ascii_start().first() == Some(&b'.') => {}
            b':' if j >= 2 && b[j - 2] == b':' => {}
            b':' => break,
            _ => break,
        }
        j -= 1;
    }
    &code[j..dot]
}

/// Whether a receiver expression names an error or a message.
fn names_message(receiver: &str) -> bool {
    if receiver.contains("message()") {
        return true;
    }
    receiver
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .any(|w| {
            // `stderr_tail`, `parse_error`: the first or the last word of a compound name.
            let first = w.split('_').next().unwrap_or(w);
            let last = w.rsplit('_').next().unwrap_or(w);
            MESSAGE_NAMES.contains(&w)
                || (w.contains('_')
                    && (MESSAGE_NAMES.contains(&first) || MESSAGE_NAMES.contains(&last)))
        })
}

/// Whether `receiver` is a plain name bound, on the same line, from an error's variant or an
/// `Err(…)`: `ModelError::Protocol(m) if m.contains(…)`.
fn bound_from_error(line: &str, receiver: &str) -> bool {
    if receiver.is_empty() || !receiver.bytes().all(is_ident) {
        return false;
    }
    let binding = format!("({receiver})");
    line.match_indices(&binding).any(|(at, _)| {
        let head = &line[..at];
        head.ends_with("Err")
            || head
                .rsplit("::")
                .nth(1)
                .is_some_and(|t| t.ends_with("Error"))
    })
}

/// Every offending place in one production source file.
fn scan(file: &str, src: &str, parsers: &BTreeSet<String>) -> Vec<Hit> {
    let code = drop_test_items(&blank(src));
    let mut hits = Vec::new();
    let hit = |at: usize, rule: &'static str| Hit {
        file: file.to_owned(),
        line: line_of(&code, at),
        rule,
        text: line_text(src, line_of(&code, at)),
    };
    // (a)
    let mut from = 0;
    while let Some(at) = code[from..].find("Result<").map(|a| a + from) {
        from = at + 1;
        if at > 0 && is_ident(code.as_bytes()[at - 1]) {
            continue; // `FooResult<`
        }
        let Some((error, _)) = result_error_type(&code, at + "Result".len()) else {
            continue;
        };
        if error != "String" && error != "std::string::String" {
            continue;
        }
        let allowed = enclosing_signature_fn(&code, at).is_some_and(|f| parsers.contains(&f));
        if !allowed {
            hits.push(hit(at, STRING_RESULT));
        }
    }
    // (a) also as an associated error type: `impl FromStr … { type Err = String; }`.
    for assoc in ["type Err", "type Error"] {
        let mut from = 0;
        while let Some(at) = code[from..].find(assoc).map(|a| a + from) {
            from = at + 1;
            let rest = code[at + assoc.len()..].trim_start();
            if let Some(ty) = rest.strip_prefix('=')
                && ty.trim_start().starts_with("String")
                && ty.trim_start()["String".len()..]
                    .trim_start()
                    .starts_with(';')
            {
                hits.push(hit(at, STRING_RESULT));
            }
        }
    }
    // (b)
    for method in TEXT_TESTS {
        let needle = format!(".{method}(");
        let mut from = 0;
        while let Some(dot) = code[from..].find(&needle).map(|a| a + from) {
            from = dot + 1;
            // A single character ('\n', '/', ' ') tests layout or syntax, not a message's wording.
            // A closure (`iter().find(|m| …)`) searches a collection, not a text.
            let arg = code[dot + needle.len()..].trim_start();
            if arg.starts_with('\'') || arg.starts_with('|') {
                continue;
            }
            let recv = receiver(&code, dot);
            let line_start = code[..dot].rfind('\n').map_or(0, |l| l + 1);
            if names_message(recv) || bound_from_error(&code[line_start..dot], recv) {
                hits.push(hit(dot, MESSAGE_TEXT));
            }
        }
    }
    for method in TEXT_REWRITES {
        let needle = format!(".{method}(");
        let mut from = 0;
        while let Some(dot) = code[from..].find(&needle).map(|a| a + from) {
            from = dot + 1;
            let arg = &src[dot + needle.len()..];
            let arg = arg.trim_start();
            let wording = arg.starts_with('"')
                && arg[1..]
                    .find('"')
                    .is_some_and(|end| arg[1..1 + end].contains(' '));
            if wording && names_message(receiver(&code, dot)) {
                hits.push(hit(dot, MESSAGE_TEXT));
            }
        }
    }
    for method in ["starts_with", "strip_prefix"] {
        let needle = format!(".{method}(");
        let mut from = 0;
        while let Some(dot) = code[from..].find(&needle).map(|a| a + from) {
            from = dot + 1;
            let recv = receiver(&code, dot);
            if recv
                .rsplit('.')
                .next()
                .is_some_and(|w| TEXT_KINDS.contains(&w.trim()))
            {
                hits.push(hit(dot, MESSAGE_TEXT));
            }
        }
    }
    for op in ["==", "!="] {
        let mut from = 0;
        while let Some(at) = code[from..].find(op).map(|a| a + from) {
            from = at + 2;
            let left = receiver(&code, code[..at].trim_end().len());
            let right = code[at + 2..].trim_start();
            // Compared with a literal text or a constant: `message == DEADLINE_REACHED`.
            let text_operand = right.starts_with('"')
                || right.chars().next().is_some_and(|c| c.is_ascii_uppercase())
                    && right
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .all(|c| c.is_ascii_uppercase() || c == '_' || c.is_ascii_digit());
            let message_field = left
                .rsplit('.')
                .next()
                .is_some_and(|w| ["message", "msg", "stderr", "reason"].contains(&w));
            if text_operand && message_field {
                hits.push(hit(at, MESSAGE_TEXT));
            }
        }
    }
    hits.sort();
    hits.dedup();
    hits
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// Every production source file (`crates/*/src/**/*.rs`), as (path from the root, text): from
/// the working tree, or from commit `rev` when given.
fn sources(root: &Path, rev: Option<&str>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    match rev {
        Some(rev) => {
            let list = Command::new("git")
                .args(["ls-tree", "-r", "--name-only", rev, "crates"])
                .current_dir(root)
                .output()
                .expect("git ls-tree");
            for path in String::from_utf8_lossy(&list.stdout).lines() {
                if is_production(path) {
                    let show = Command::new("git")
                        .args(["show", &format!("{rev}:{path}")])
                        .current_dir(root)
                        .output()
                        .expect("git show");
                    out.push((
                        path.to_owned(),
                        String::from_utf8_lossy(&show.stdout).into_owned(),
                    ));
                }
            }
        }
        None => {
            let mut stack = vec![root.join("crates")];
            while let Some(dir) = stack.pop() {
                let Ok(entries) = std::fs::read_dir(&dir) else {
                    continue;
                };
                for entry in entries.flatten() {
                    let path = entry.path();
                    let rel = path
                        .strip_prefix(root)
                        .unwrap_or(&path)
                        .to_string_lossy()
                        .replace('\\', "/");
                    if rel.contains("/node_modules") || rel.contains("/target") {
                        continue;
                    }
                    if path.is_dir() {
                        stack.push(path);
                    } else if is_production(&rel) {
                        let text = std::fs::read_to_string(&path).unwrap_or_default();
                        out.push((rel, text));
                    }
                }
            }
        }
    }
    out.sort();
    out
}

/// `crates/<crate>/src/…/*.rs`.
fn is_production(path: &str) -> bool {
    let parts: Vec<&str> = path.split('/').collect();
    parts.len() >= 4 && parts[0] == "crates" && parts[2] == "src" && path.ends_with(".rs")
}

/// The files of modules declared `#[cfg(test)] mod NAME;` in `path`: `NAME.rs` and
/// `NAME/mod.rs` beside a `lib.rs`/`main.rs`/`mod.rs`, else under the file's own directory.
fn test_module_files(path: &str, text: &str) -> Vec<String> {
    let code = blank(text);
    let dir = match path.rsplit_once('/') {
        Some((dir, file)) if ["lib.rs", "main.rs", "mod.rs"].contains(&file) => dir.to_owned(),
        _ => path.trim_end_matches(".rs").to_owned(),
    };
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = code[from..].find("#[cfg(test)]").map(|a| a + from) {
        from = at + 1;
        let rest = code[at + "#[cfg(test)]".len()..].trim_start();
        let rest = rest.strip_prefix("pub(crate) ").unwrap_or(rest);
        if let Some(r) = rest.strip_prefix("mod ") {
            let name: String = r
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if r[name.len()..].trim_start().starts_with(';') {
                out.push(format!("{dir}/{name}.rs"));
                out.push(format!("{dir}/{name}/mod.rs"));
            }
        }
    }
    out
}

/// `crates/<name>` of a source path.
fn crate_of(path: &str) -> &str {
    path.match_indices('/')
        .nth(1)
        .map_or(path, |(at, _)| &path[..at])
}

fn scan_all(files: &[(String, String)]) -> Vec<Hit> {
    // Per crate: a function is a clap value parser only where its own crate names it so (a
    // library function of the same name that a CLI parser wraps is not one).
    let mut parsers: std::collections::BTreeMap<&str, BTreeSet<String>> = Default::default();
    let mut test_files = BTreeSet::new();
    for (path, text) in files {
        parsers
            .entry(crate_of(path))
            .or_default()
            .extend(value_parsers(&blank(text)));
        test_files.extend(test_module_files(path, text));
    }
    let none = BTreeSet::new();
    files
        .iter()
        .filter(|(path, _)| !test_files.contains(path))
        .flat_map(|(path, text)| scan(path, text, parsers.get(crate_of(path)).unwrap_or(&none)))
        .collect()
}

fn report(hits: &[Hit]) -> String {
    let mut s = String::new();
    for rule in [STRING_RESULT, MESSAGE_TEXT] {
        let of: Vec<&Hit> = hits.iter().filter(|h| h.rule == rule).collect();
        s.push_str(&format!("\n{rule}: {}\n", of.len()));
        for h in of {
            s.push_str(&format!("  {}:{}: {}\n", h.file, h.line, h.text));
        }
    }
    s
}

#[test]
fn production_code_has_typed_failures_and_no_decisions_on_message_text() {
    let root = workspace_root();
    let rev = std::env::var("TOOLGATE_SCAN_REV").ok();
    let files = sources(&root, rev.as_deref());
    assert!(
        files.len() > 50,
        "the scan found only {} source files under {}: it would prove nothing",
        files.len(),
        root.display()
    );
    let hits = scan_all(&files);
    assert!(
        hits.is_empty(),
        "production code still carries failures as text (issue 34 item 2); type the failure \
         (a thiserror enum, a kind carried to the decision) instead:{}",
        report(&hits)
    );
}

#[cfg(test)]
mod scanner {
    use super::*;

    fn hits(src: &str) -> Vec<&'static str> {
        let parsers = value_parsers(&blank(src));
        scan("x.rs", src, &parsers)
            .into_iter()
            .map(|h| h.rule)
            .collect()
    }

    /// The offending lines of the code before issue 34's fix, each one a hit.
    #[test]
    fn finds_the_known_decisions_on_message_text() {
        let known = [
            // sandbox/engine.rs, on monty's wording
            r#"fn f() { let monty_limit = error.message.starts_with("feed time limit exceeded"); }"#,
            r#"fn f() { if error.type_ == "TimeoutError" && (error.message == DEADLINE_REACHED || x) {} }"#,
            // sandbox/pool.rs, on the worker's stderr
            r#"fn f() { if stderr_tail.contains("memory allocation of") || code == Some(1) {} }"#,
            r#"fn f() { if stderr_tail.contains("overflowed its stack") {} }"#,
            // agent/client.rs
            r#"fn f() { match e { ModelError::Protocol(m) if m.contains("imeout") || m.contains("timed out") => 1, _ => 2 } }"#,
            // sandbox/custom.rs
            r#"fn f() { x.is_some_and(|e| e.type_ == "NameError" && e.message.contains("'TOOL'")); }"#,
            r#"fn f() { match t { "TimeoutError" if e.message.contains("wall-clock limit") => 1, _ => 2 } }"#,
            // sandbox/config.rs, on the toml crate's error text
            r#"fn f() { if let Some(rest) = message.strip_prefix("unknown field `") {} }"#,
            r#"fn f() { match e { _ if e.starts_with("struct ") => 1, _ => 2 } }"#,
            // an error's text tested through to_string
            r#"fn f() { if err.to_string().contains("not found") {} }"#,
            // cli/debrief_cli.rs, cutting a reply at its wording
            r#"fn f() { line(reply
    .text
    .split(" The plot is now dirty").next()) }"#,
            // web/lib.rs, rewriting the CLI's wording for the page
            r#"fn for_the_page(message: &str) -> String { message
    .replace(
        "with --plot NAME", "in the field") }"#,
            // plot/agent.rs, a tool's origin read from its category's text
            r#"fn f() { if tool.spec.category.starts_with("mcp:") {} }"#,
        ];
        for src in known {
            assert!(
                hits(src).contains(&MESSAGE_TEXT),
                "not found: {src} → {:?}",
                hits(src)
            );
        }
    }

    #[test]
    fn finds_string_results_and_spares_clap_value_parsers() {
        assert_eq!(
            hits("pub fn probe() -> Result<(), String> { Ok(()) }"),
            [STRING_RESULT]
        );
        // multi-line signature, nested generics
        assert_eq!(
            hits(
                "fn f(\n    a: u8,\n) -> Result<\n    HashMap<String, Vec<u8>>,\n    String,\n> {\n}"
            ),
            [STRING_RESULT]
        );
        assert_eq!(
            hits("static T: OnceLock<Result<Dir, String>> = OnceLock::new();"),
            [STRING_RESULT]
        );
        assert_eq!(
            hits("impl FromStr for B {\n    type Err = String;\n}"),
            [STRING_RESULT]
        );
        assert!(hits("fn f() -> Result<String, Error> { todo!() }").is_empty());
        assert!(hits("fn f() -> io::Result<String> { todo!() }").is_empty());
        let clap = "#[arg(long, value_parser = parse_units)]\nunits: Units,\nfn parse_units(s: &str) -> Result<Units, String> { todo!() }";
        assert!(hits(clap).is_empty(), "{:?}", hits(clap));
    }

    #[test]
    fn spares_tests_comments_strings_and_other_names() {
        let src = r#"
/// err.contains("x") in a doc comment
fn f(path: &str, items: &[u8]) -> bool {
    let s = "e.message.contains(\"y\")";
    path.starts_with('/') && items.contains(&1) && s.is_empty()
        && message.split(",").count() > 1 && ms.iter().any(|m| m.starts_with(w))
        && messages.iter().find(|m| m.role == 1).is_some()
}
#[cfg(test)]
mod tests {
    fn g() -> Result<(), String> { assert!(err.contains("z")); Ok(()) }
}
"#;
        assert!(hits(src).is_empty(), "{:?}", hits(src));
    }
}
