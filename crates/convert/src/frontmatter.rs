//! Markdown files with YAML frontmatter: split, parse (with file:line errors) and emit.
//!
//! Parsing and emitting both go through `serde_yaml_ng` (libyaml underneath), so the emitter's
//! quoting decisions are made by the same grammar that reads them back: strings that start with
//! `@` or a backtick, contain ` #` or `: `, have edge spaces, look like booleans/numbers/null, or
//! hold line breaks are quoted or block-scalared as needed. Tests judge every emitted block again
//! with a second, independent YAML implementation.

use std::path::Path;

use serde_yaml_ng::{Mapping, Value};

use crate::error::{ConvertError, Result};

/// A markdown document split at its frontmatter.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    /// The parsed frontmatter, or `None` when the file has no `---` block.
    pub frontmatter: Option<Mapping>,
    /// 1-based line number of the first YAML line (the line after the opening `---`).
    pub yaml_first_line: usize,
    /// The raw YAML text between the `---` lines (empty without frontmatter).
    pub yaml: String,
    /// Everything after the closing `---` line, byte for byte.
    pub body: String,
}

impl Document {
    /// The 1-based file line where top-level `key` is written, or the first YAML line when it
    /// cannot be found (e.g. a key written in flow style).
    #[must_use]
    pub fn key_line(&self, key: &str) -> usize {
        for (i, line) in self.yaml.lines().enumerate() {
            let (unquoted, quote) = match line.chars().next() {
                Some(q @ ('"' | '\'')) => (&line[1..], Some(q)),
                _ => (line, None),
            };
            let Some(rest) = unquoted.strip_prefix(key) else {
                continue;
            };
            let rest = match quote {
                Some(q) => match rest.strip_prefix(q) {
                    Some(r) => r,
                    None => continue,
                },
                None => rest,
            };
            if rest.trim_start().starts_with(':') {
                return self.yaml_first_line + i;
            }
        }
        self.yaml_first_line
    }
}

fn is_delimiter(line: &str) -> bool {
    line.trim_end() == "---"
}

/// Split `text` (the contents of `path`) into frontmatter and body and parse the frontmatter.
///
/// A file whose first line is not `---` has no frontmatter (the whole text is the body). A `---`
/// block that is never closed, YAML that does not parse, or YAML that is not a mapping is an error
/// naming `path` and the file line.
pub fn parse_document(path: &Path, text: &str) -> Result<Document> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let Some(first) = lines.next() else {
        return Ok(no_frontmatter(text));
    };
    if !is_delimiter(first) {
        return Ok(no_frontmatter(text));
    }
    let yaml_start = first.len();
    let mut offset = yaml_start;
    let mut closing = None;
    for line in lines {
        if is_delimiter(line) {
            closing = Some((offset, offset + line.len()));
            break;
        }
        offset += line.len();
    }
    let Some((yaml_end, body_start)) = closing else {
        return Err(ConvertError::UnclosedFrontmatter {
            path: path.to_path_buf(),
            line: 1,
        });
    };
    let yaml = &text[yaml_start..yaml_end];
    let body = &text[body_start..];
    let frontmatter = parse_yaml_mapping(path, yaml, 2)?;
    Ok(Document {
        frontmatter: Some(frontmatter),
        yaml_first_line: 2,
        yaml: yaml.to_string(),
        body: body.to_string(),
    })
}

fn no_frontmatter(text: &str) -> Document {
    Document {
        frontmatter: None,
        yaml_first_line: 1,
        yaml: String::new(),
        body: text.to_string(),
    }
}

/// Parse `yaml` (which starts on file line `first_line` of `path`) as a mapping. Empty YAML is an
/// empty mapping.
pub fn parse_yaml_mapping(path: &Path, yaml: &str, first_line: usize) -> Result<Mapping> {
    if yaml.trim().is_empty() {
        return Ok(Mapping::new());
    }
    // The YAML is parsed as it stands in the file — after the lines above it, left blank — so
    // the positions the crate reports, in its location and in its own message, are the file's.
    // (Its message has no form without them, and cutting them out would mean reading its text.)
    let in_file = format!("{}{yaml}", "\n".repeat(first_line.saturating_sub(1)));
    let value: Value = serde_yaml_ng::from_str(&in_file).map_err(|e| {
        let (line, column) = e
            .location()
            .map_or((first_line, 1), |l| (l.line(), l.column()));
        ConvertError::Frontmatter {
            path: path.to_path_buf(),
            line,
            column,
            message: e.to_string(),
        }
    })?;
    match value {
        Value::Mapping(m) => Ok(m),
        Value::Null => Ok(Mapping::new()),
        other => Err(ConvertError::FrontmatterNotMapping {
            path: path.to_path_buf(),
            line: first_line,
            found: kind_of(&other),
        }),
    }
}

/// A short name of a YAML value's kind, for messages.
#[must_use]
pub fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Sequence(_) => "list",
        Value::Mapping(_) => "mapping",
        Value::Tagged(_) => "tagged value",
    }
}

/// Emit `map` as a YAML block (no `---` lines), one `key: value` per top-level key, in order.
///
/// The emitter is deliberately conservative, because the files it writes are read by several YAML
/// implementations (libyaml, js-yaml, yaml-rust) that disagree on edge cases: a string is written
/// plain only when it is unambiguous in YAML 1.1 and 1.2 alike (starts with a letter, digit-free
/// first character, no ` #`, `: `, edge spaces, reserved words or special whitespace); every other
/// string is double-quoted with escapes, so line breaks, `\u{2028}`, `@`, backticks and the like
/// can never change meaning. Lists of scalars use flow style (`[read, search]`).
pub fn emit_yaml(map: &Mapping) -> Result<String> {
    let mut out = String::new();
    emit_mapping(map, 0, &mut out)?;
    Ok(out)
}

fn serialise_error(message: String) -> ConvertError {
    ConvertError::Serialise {
        what: "frontmatter".into(),
        message,
    }
}

fn indent(out: &mut String, n: usize) {
    out.extend(std::iter::repeat_n(' ', n));
}

fn is_scalar(v: &Value) -> bool {
    !matches!(v, Value::Sequence(_) | Value::Mapping(_) | Value::Tagged(_))
}

fn emit_mapping(map: &Mapping, level: usize, out: &mut String) -> Result<()> {
    for (k, v) in map {
        indent(out, level);
        let key = match k {
            Value::Sequence(_) | Value::Mapping(_) | Value::Tagged(_) => {
                return Err(serialise_error(format!(
                    "a {} used as a mapping key cannot be written",
                    kind_of(k)
                )));
            }
            other => scalar_text(other, false),
        };
        if key.chars().count() > 1000 {
            // Implicit keys are limited to 1024 characters; use an explicit one.
            out.push_str("? ");
            out.push_str(&key);
            out.push('\n');
            indent(out, level);
            out.push(':');
        } else {
            out.push_str(&key);
            out.push(':');
        }
        emit_value(v, level, out)?;
    }
    Ok(())
}

/// Emit the value after `key:` (the colon is already written).
fn emit_value(v: &Value, level: usize, out: &mut String) -> Result<()> {
    match v {
        Value::Mapping(m) if m.is_empty() => out.push_str(" {}\n"),
        Value::Mapping(m) => {
            out.push('\n');
            emit_mapping(m, level + 2, out)?;
        }
        Value::Sequence(items) if items.iter().all(is_scalar) => {
            out.push_str(" [");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&scalar_text(item, true));
            }
            out.push_str("]\n");
        }
        Value::Sequence(items) => {
            out.push('\n');
            for item in items {
                match item {
                    Value::Mapping(m) if !m.is_empty() => {
                        // `- key: value` with the other keys aligned under the first.
                        let mut inner = String::new();
                        emit_mapping(m, level + 4, &mut inner)?;
                        indent(out, level + 2);
                        out.push_str("- ");
                        out.push_str(&inner[level + 4..]);
                    }
                    _ => {
                        indent(out, level + 2);
                        out.push('-');
                        emit_value(item, level + 2, out)?;
                    }
                }
            }
        }
        Value::Tagged(t) => {
            let tag = t.tag.to_string();
            let simple = tag.len() > 1
                && tag[1..]
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./:".contains(c));
            if !simple {
                return Err(serialise_error(format!(
                    "the YAML tag `{tag}` cannot be written"
                )));
            }
            out.push(' ');
            out.push_str(&tag);
            emit_value(&t.value, level, out)?;
        }
        scalar => {
            out.push(' ');
            out.push_str(&scalar_text(scalar, false));
            out.push('\n');
        }
    }
    Ok(())
}

fn scalar_text(v: &Value, flow: bool) -> String {
    match v {
        Value::Null => "null".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => {
            let s = n.to_string();
            // `1e20` is a float in YAML 1.2 but a string in 1.1; `1.0e20` is a float in both.
            if n.is_f64() && !s.contains('.') && s.contains('e') {
                s.replacen('e', ".0e", 1)
            } else {
                s
            }
        }
        Value::String(s) => {
            if plain_ok(s, flow) {
                s.clone()
            } else {
                double_quoted(s)
            }
        }
        // Collections never reach here (callers check); write them as an empty string rather
        // than panic.
        _ => "\"\"".to_string(),
    }
}

const RESERVED: &[&str] = &[
    "true", "false", "yes", "no", "y", "n", "on", "off", "null", "~", "inf", "nan", "infinity",
];

/// Whether `s` can be written as a plain scalar that every YAML 1.1/1.2 parser reads back as the
/// same string.
fn plain_ok(s: &str, flow: bool) -> bool {
    let Some(first) = s.chars().next() else {
        return false;
    };
    let first_ok = first.is_ascii_alphabetic()
        || first == '_'
        || first == '/'
        || (!first.is_ascii() && first.is_alphabetic());
    if !first_ok || s.ends_with(' ') || s.ends_with(':') {
        return false;
    }
    if s.contains(": ") || s.contains(" #") || s.contains("\t") {
        return false;
    }
    if RESERVED.iter().any(|r| r.eq_ignore_ascii_case(s)) {
        return false;
    }
    s.chars().all(|c| {
        if c.is_ascii() {
            let flow_indicator = matches!(c, ',' | '[' | ']' | '{' | '}' | ':' | '#');
            (c == ' ' || c.is_ascii_graphic()) && !(flow && flow_indicator)
        } else {
            !c.is_whitespace()
                && !c.is_control()
                && !matches!(c, '\u{feff}' | '\u{fffe}' | '\u{ffff}')
        }
    })
}

fn double_quoted(s: &str) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control()
                || (!c.is_ascii() && c.is_whitespace())
                || matches!(c, '\u{feff}' | '\u{fffe}' | '\u{ffff}') =>
            {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Render a markdown document: `---`, the YAML of `map`, `---`, then `body` verbatim. With an
/// empty `map` the body is returned alone.
pub fn render_document(map: &Mapping, body: &str) -> Result<String> {
    if map.is_empty() {
        return Ok(body.to_string());
    }
    let yaml = emit_yaml(map)?;
    let mut out = String::with_capacity(yaml.len() + body.len() + 8);
    out.push_str("---\n");
    out.push_str(&yaml);
    if !yaml.ends_with('\n') {
        out.push('\n');
    }
    out.push_str("---\n");
    out.push_str(body);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p() -> &'static Path {
        Path::new("agents/x.md")
    }

    #[test]
    fn splits_frontmatter_and_keeps_body_verbatim() {
        let doc = parse_document(p(), "---\nname: a\ntools: Read, Grep\n---\n\nBody\n").unwrap();
        let fm = doc.frontmatter.unwrap();
        assert_eq!(fm.get("name").unwrap().as_str(), Some("a"));
        assert_eq!(fm.get("tools").unwrap().as_str(), Some("Read, Grep"));
        assert_eq!(doc.body, "\nBody\n");
    }

    #[test]
    fn crlf_and_bom_are_accepted() {
        let doc = parse_document(p(), "\u{feff}---\r\nname: a\r\n---\r\nBody\r\n").unwrap();
        assert_eq!(
            doc.frontmatter.unwrap().get("name").unwrap().as_str(),
            Some("a")
        );
        assert_eq!(doc.body, "Body\r\n");
    }

    #[test]
    fn no_frontmatter_is_all_body() {
        let doc = parse_document(p(), "# Notice\n---\nx: y\n---\n").unwrap();
        assert!(doc.frontmatter.is_none());
        assert_eq!(doc.body, "# Notice\n---\nx: y\n---\n");
    }

    #[test]
    fn empty_frontmatter_is_an_empty_mapping() {
        let doc = parse_document(p(), "---\n---\nbody").unwrap();
        assert!(doc.frontmatter.unwrap().is_empty());
    }

    #[test]
    fn malformed_yaml_names_file_and_line() {
        let text = "---\nname: a\ndescription: \"unterminated\ntools: Read\n---\nbody\n";
        let err = parse_document(p(), text).unwrap_err();
        let msg = err.to_string();
        assert!(msg.starts_with("agents/x.md:"), "{msg}");
        match err {
            ConvertError::Frontmatter { line, .. } => assert!((3..=5).contains(&line), "{line}"),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn a_bad_indent_points_at_its_line() {
        let text = "---\nname: a\ndescription: ok\n  tools: Read\n---\n";
        let err = parse_document(p(), text).unwrap_err();
        match err {
            ConvertError::Frontmatter { line, .. } => assert_eq!(line, 4),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn unclosed_block_is_an_error_at_line_1() {
        let err = parse_document(p(), "---\nname: a\n\nbody\n").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("agents/x.md:1: the frontmatter block"),
            "{err}"
        );
    }

    #[test]
    fn a_scalar_frontmatter_is_rejected() {
        let err = parse_document(p(), "---\njust text\n---\n").unwrap_err();
        assert!(
            err.to_string().contains("is a YAML string, not a mapping"),
            "{err}"
        );
    }

    #[test]
    fn duplicate_keys_are_rejected() {
        let err = parse_document(p(), "---\nname: a\nname: b\n---\n").unwrap_err();
        assert!(matches!(err, ConvertError::Frontmatter { .. }), "{err}");
    }

    #[test]
    fn key_line_finds_the_key() {
        let doc = parse_document(p(), "---\nname: a\n\"tools\": 3\n---\n").unwrap();
        assert_eq!(doc.key_line("name"), 2);
        assert_eq!(doc.key_line("tools"), 3);
    }

    #[test]
    fn tricky_strings_round_trip() {
        for s in [
            "@mention first",
            "`code` first",
            "value #not a comment",
            "key: value",
            " leading space",
            "trailing space ",
            "yes",
            "no",
            "null",
            "~",
            "123",
            "1e3",
            "0x1F",
            "2026-01-01",
            "[not a list]",
            "{not: a map}",
            "*",
            "&anchor",
            "!tag",
            "%directive",
            "| pipe",
            "> fold",
            "- dash",
            "? question",
            "line\nbreak",
            "trailing newline\n",
            "\ttab",
            "quote \" and ' both",
            "ünïcödé — em dash “quotes” 日本語 🚀",
            "\u{85}nel \u{2028} ls \u{2029} ps",
            "",
        ] {
            let mut m = Mapping::new();
            m.insert(Value::from("k"), Value::from(s));
            let doc = render_document(&m, "body").unwrap();
            let back = parse_document(p(), &doc).unwrap();
            assert_eq!(back.frontmatter.unwrap(), m, "{s:?} emitted as {doc:?}");
            assert_eq!(back.body, "body");
        }
    }
}
