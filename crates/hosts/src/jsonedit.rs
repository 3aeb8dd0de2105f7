//! Add or remove the one entry toolgate owns in a JSON file it shares with the user, keeping
//! every other key (and their order).
//!
//! VS Code's `mcp.json` is JSONC (comments and trailing commas are normal there), and the user's
//! layout must survive an install: [`splice_set`] and [`splice_remove`] edit the text itself and
//! leave every byte outside toolgate's entry as it was. No JSONC crate is in the lockfile, and the
//! grammar we need is tiny: [`blank_jsonc`] overwrites comments and trailing commas with spaces
//! (same byte offsets), serde_json validates the result, and a small span walker over the blanked
//! text finds where members start and end.

use serde_json::{Map, Value};

use crate::install::EntryKey;

/// The object at `container` (created as needed when `create`), as a `Value` (object or array).
fn container_mut<'a>(
    doc: &'a mut Value,
    container: &[String],
    array: bool,
) -> Option<&'a mut Value> {
    let mut cur = doc;
    for (i, key) in container.iter().enumerate() {
        let last = i + 1 == container.len();
        let obj = cur.as_object_mut()?;
        if !obj.contains_key(key) {
            let fresh = if last && array {
                Value::Array(Vec::new())
            } else {
                Value::Object(Map::new())
            };
            obj.insert(key.clone(), fresh);
        }
        cur = obj.get_mut(key)?;
    }
    Some(cur)
}

/// The current value of the entry, if present.
pub fn get<'a>(doc: &'a Value, container: &[String], key: &EntryKey) -> Option<&'a Value> {
    let mut cur = doc;
    for k in container {
        cur = cur.get(k)?;
    }
    match key {
        EntryKey::Object(name) => cur.as_object()?.get(name),
        EntryKey::ArrayName(name) => cur
            .as_array()?
            .iter()
            .find(|v| v.get("name").and_then(Value::as_str) == Some(name)),
    }
}

/// Set the entry to `value`. `Err` says why the document's shape does not allow it.
pub fn set(
    doc: &mut Value,
    container: &[String],
    key: &EntryKey,
    value: Value,
) -> Result<(), String> {
    let shape_err = || {
        format!(
            "\"{}\" is not {}",
            container.join("."),
            match key {
                EntryKey::Object(_) => "an object",
                EntryKey::ArrayName(_) => "an array",
            }
        )
    };
    if !doc.is_object() {
        return Err("the top level is not a JSON object".to_owned());
    }
    let array = matches!(key, EntryKey::ArrayName(_));
    let c = container_mut(doc, container, array).ok_or_else(shape_err)?;
    match key {
        EntryKey::Object(name) => {
            let obj = c.as_object_mut().ok_or_else(shape_err)?;
            obj.insert(name.clone(), value);
        }
        EntryKey::ArrayName(name) => {
            let arr = c.as_array_mut().ok_or_else(shape_err)?;
            match arr
                .iter_mut()
                .find(|v| v.get("name").and_then(Value::as_str) == Some(name))
            {
                Some(slot) => *slot = value,
                None => arr.push(value),
            }
        }
    }
    Ok(())
}

/// Remove the entry; `true` if it was there.
pub fn remove(doc: &mut Value, container: &[String], key: &EntryKey) -> bool {
    let mut cur = doc;
    for k in container {
        match cur.get_mut(k) {
            Some(next) => cur = next,
            None => return false,
        }
    }
    match key {
        EntryKey::Object(name) => cur
            .as_object_mut()
            .is_some_and(|o| o.shift_remove(name).is_some()),
        EntryKey::ArrayName(name) => match cur.as_array_mut() {
            Some(arr) => {
                let before = arr.len();
                arr.retain(|v| v.get("name").and_then(Value::as_str) != Some(name));
                arr.len() != before
            }
            None => false,
        },
    }
}

/// `text` with `//` and `/* */` comments and trailing commas replaced by spaces, byte for byte
/// (newlines kept), so the result is strict JSON at the same offsets. Strings are skipped whole,
/// so a `//` inside a URL stays.
pub fn blank_jsonc(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => i = string_end(b, i),
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    out[i] = b' ';
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let end = text[i + 2..].find("*/").map_or(b.len(), |e| i + 2 + e + 2);
                for o in &mut out[i..end] {
                    if *o != b'\n' && *o != b'\r' {
                        *o = b' ';
                    }
                }
                i = end;
            }
            _ => i += 1,
        }
    }
    // Trailing commas, now that comments are gone.
    let mut i = 0;
    while i < out.len() {
        match out[i] {
            b'"' => i = string_end(&out, i),
            b',' => {
                let next = skip_ws(&out, i + 1);
                if matches!(out.get(next), Some(b'}' | b']')) {
                    out[i] = b' ';
                }
                i += 1;
            }
            _ => i += 1,
        }
    }
    // Only ASCII bytes were overwritten with ASCII spaces, so this cannot fail; the fallback
    // keeps the function total without an unwrap.
    String::from_utf8(out).unwrap_or_else(|_| text.to_owned())
}

/// Parse JSONC (comments, trailing commas) into a value.
pub fn parse_jsonc(text: &str) -> Result<Value, serde_json::Error> {
    serde_json::from_str(&blank_jsonc(text))
}

/// Index just past the string starting at `i` (a `"`).
fn string_end(b: &[u8], mut i: usize) -> usize {
    i += 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    b.len()
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

/// End of the (valid JSON) value starting at `i`.
fn value_end(b: &[u8], i: usize) -> usize {
    match b.get(i) {
        Some(b'"') => string_end(b, i),
        Some(b'{' | b'[') => {
            let mut depth = 0usize;
            let mut j = i;
            while j < b.len() {
                match b[j] {
                    b'"' => {
                        j = string_end(b, j);
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return j + 1;
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            b.len()
        }
        _ => {
            let mut j = i;
            while j < b.len() && !matches!(b[j], b',' | b'}' | b']') && !b[j].is_ascii_whitespace()
            {
                j += 1;
            }
            j
        }
    }
}

struct Member {
    key: String,
    key_start: usize,
    value_start: usize,
    value_end: usize,
}

/// The members of the object whose `{` is at `open`, and the index of its `}`.
fn members(b: &[u8], open: usize) -> (Vec<Member>, usize) {
    let mut out = Vec::new();
    let mut i = skip_ws(b, open + 1);
    while i < b.len() && b[i] == b'"' {
        let key_end = string_end(b, i);
        let key = std::str::from_utf8(&b[i..key_end])
            .ok()
            .and_then(|k| serde_json::from_str::<String>(k).ok())
            .unwrap_or_default();
        let colon = skip_ws(b, key_end);
        let value_start = skip_ws(b, colon + 1);
        let end = value_end(b, value_start);
        out.push(Member {
            key,
            key_start: i,
            value_start,
            value_end: end,
        });
        i = skip_ws(b, end);
        if b.get(i) == Some(&b',') {
            i = skip_ws(b, i + 1);
        }
    }
    (out, i)
}

/// The whitespace that starts the line holding `pos`, and whether only whitespace precedes `pos`.
fn line_indent(text: &str, pos: usize) -> (&str, bool) {
    let start = text[..pos].rfind('\n').map_or(0, |n| n + 1);
    let line = &text[start..pos];
    let ws = line.len() - line.trim_start().len();
    (&line[..ws], ws == line.len())
}

/// The file's indentation unit: the leading whitespace of its first indented line.
fn indent_unit(text: &str) -> String {
    text.lines()
        .map(|l| &l[..l.len() - l.trim_start().len()])
        .find(|ws| !ws.is_empty() && ws.len() < 80)
        .map_or_else(
            || "    ".to_owned(),
            |ws| {
                if ws.starts_with('\t') {
                    "\t".to_owned()
                } else {
                    ws.to_owned()
                }
            },
        )
}

/// `v` pretty-printed with `unit`, every line after the first prefixed with `base`.
fn render(v: &Value, unit: &str, base: &str, nl: &str) -> String {
    use serde::Serialize;
    let mut buf = Vec::new();
    let fmt = serde_json::ser::PrettyFormatter::with_indent(unit.as_bytes());
    let mut ser = serde_json::Serializer::with_formatter(&mut buf, fmt);
    if v.serialize(&mut ser).is_err() {
        return v.to_string();
    }
    String::from_utf8_lossy(&buf).replace('\n', &format!("{nl}{base}"))
}

fn quoted(key: &str) -> String {
    Value::String(key.to_owned()).to_string()
}

/// Set `container[name]` to `value` by editing `text` (JSONC) in place: an existing entry's value
/// is replaced, a new one is added after the last member (or into the missing containers),
/// indented like its neighbours. Every other byte is kept.
pub fn splice_set(
    text: &str,
    container: &[String],
    name: &str,
    value: &Value,
) -> Result<String, String> {
    let clean = blank_jsonc(text);
    let b = clean.as_bytes();
    let nl = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let unit = indent_unit(text);
    let mut open = skip_ws(b, 0);
    if b.get(open) != Some(&b'{') {
        return Err("the top level is not a JSON object".to_owned());
    }
    // Walk down the containers that exist; what is missing is added as one nested member.
    let mut path: Vec<&str> = container.iter().map(String::as_str).collect();
    path.push(name);
    let mut depth = 0;
    loop {
        let (ms, close) = members(b, open);
        let key = path[depth];
        let last = depth + 1 == path.len();
        if let Some(m) = ms.iter().find(|m| m.key == key) {
            if last {
                let (base, _) = line_indent(text, m.key_start);
                let new = render(value, &unit, base, nl);
                return Ok(format!(
                    "{}{new}{}",
                    &text[..m.value_start],
                    &text[m.value_end..]
                ));
            }
            if b.get(m.value_start) != Some(&b'{') {
                return Err(format!("\"{}\" is not an object", path[..=depth].join(".")));
            }
            open = m.value_start;
            depth += 1;
            continue;
        }
        let mut v = value.clone();
        for k in path[depth + 1..].iter().rev() {
            let mut m = Map::new();
            m.insert((*k).to_owned(), v);
            v = Value::Object(m);
        }
        let (cindent, _) = line_indent(text, open);
        return Ok(match ms.last() {
            Some(prev) => {
                let (mindent, own_line) = line_indent(text, prev.key_start);
                let at = prev.value_end;
                let member = if own_line {
                    format!(
                        ",{nl}{mindent}{}: {}",
                        quoted(key),
                        render(&v, &unit, mindent, nl)
                    )
                } else {
                    format!(", {}: {}", quoted(key), v)
                };
                format!("{}{member}{}", &text[..at], &text[at..])
            }
            None => {
                let mindent = format!("{cindent}{unit}");
                let mut member = format!(
                    "{nl}{mindent}{}: {}",
                    quoted(key),
                    render(&v, &unit, &mindent, nl)
                );
                if !text[open + 1..close].contains('\n') {
                    member.push_str(nl);
                    member.push_str(cindent);
                }
                format!("{}{member}{}", &text[..=open], &text[open + 1..])
            }
        });
    }
}

/// Take `container[name]` out of `text` (JSONC): the member, the comma that joined it to the one
/// before, and the whitespace in front of it; comments around it stay. `None` when it is absent.
pub fn splice_remove(text: &str, container: &[String], name: &str) -> Option<String> {
    let clean = blank_jsonc(text);
    let b = clean.as_bytes();
    let mut open = skip_ws(b, 0);
    if b.get(open) != Some(&b'{') {
        return None;
    }
    for key in container {
        let (ms, _) = members(b, open);
        let m = ms.into_iter().find(|m| &m.key == key)?;
        if b.get(m.value_start) != Some(&b'{') {
            return None;
        }
        open = m.value_start;
    }
    let (ms, _) = members(b, open);
    let idx = ms.iter().position(|m| m.key == name)?;
    let m = &ms[idx];
    // Whitespace (not comments) just before the key goes with the member.
    let ws_start = text[..m.key_start].trim_end().len().max(open + 1);
    if idx > 0 {
        let prev = &ms[idx - 1];
        let comma = skip_ws(b, prev.value_end);
        return Some(format!(
            "{}{}{}",
            &text[..comma],
            &text[comma + 1..ws_start],
            &text[m.value_end..]
        ));
    }
    // The first member: take the comma after it and the whitespace up to the next token.
    let after = skip_ws(b, m.value_end);
    let end = if b.get(after) == Some(&b',') {
        let rest = &text[after + 1..];
        if idx + 1 < ms.len() {
            after + 1 + rest.len() - rest.trim_start().len()
        } else {
            after + 1
        }
    } else {
        m.value_end
    };
    let start = if idx + 1 < ms.len() {
        m.key_start
    } else {
        ws_start
    };
    Some(format!("{}{}", &text[..start], &text[end..]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keeps_other_keys_in_order() {
        let mut doc: Value =
            serde_json::from_str(r#"{"z":1,"servers":{"b":{"x":1},"a":{}},"inputs":[]}"#).unwrap();
        let key = EntryKey::Object("toolgate".into());
        let c = vec!["servers".to_owned()];
        set(&mut doc, &c, &key, json!({"command":"t"})).unwrap();
        assert_eq!(
            serde_json::to_string(&doc).unwrap(),
            r#"{"z":1,"servers":{"b":{"x":1},"a":{},"toolgate":{"command":"t"}},"inputs":[]}"#
        );
        assert_eq!(get(&doc, &c, &key), Some(&json!({"command":"t"})));
        assert!(remove(&mut doc, &c, &key));
        assert_eq!(
            serde_json::to_string(&doc).unwrap(),
            r#"{"z":1,"servers":{"b":{"x":1},"a":{}},"inputs":[]}"#
        );
        assert!(!remove(&mut doc, &c, &key));
    }

    #[test]
    fn array_entries_by_name() {
        let mut doc = json!({"plugins":[{"name":"mine"}]});
        let key = EntryKey::ArrayName("toolgate".into());
        let c = vec!["plugins".to_owned()];
        set(&mut doc, &c, &key, json!({"name":"toolgate","v":1})).unwrap();
        set(&mut doc, &c, &key, json!({"name":"toolgate","v":2})).unwrap();
        assert_eq!(
            doc,
            json!({"plugins":[{"name":"mine"},{"name":"toolgate","v":2}]})
        );
        assert!(remove(&mut doc, &c, &key));
        assert_eq!(doc, json!({"plugins":[{"name":"mine"}]}));
        let mut bad = json!({"plugins": {}});
        assert!(
            set(&mut bad, &c, &key, json!({}))
                .unwrap_err()
                .contains("array")
        );
        assert!(set(&mut json!([1]), &c, &key, json!({})).is_err());
    }

    /// A `.vscode/mcp.json` as people write it: line and block comments, trailing commas, a URL
    /// (a `//` inside a string), an input, an existing server.
    const VSCODE_MCP: &str = r#"// MCP servers for this workspace.
// See https://code.visualstudio.com/docs/copilot/chat/mcp-servers
{
    /* Prompted once, stored by VS Code. */
    "inputs": [
        {
            "type": "promptString",
            "id": "gh-token", // used by github below
            "description": "GitHub token",
            "password": true,
        },
    ],
    "servers": {
        "github": {
            "type": "http",
            "url": "https://api.githubcopilot.com/mcp/", // not a comment: "//"
            "headers": { "Authorization": "Bearer ${input:gh-token}" },
        },
        // "disabled": { "command": "old" },
    },
}
"#;

    fn servers() -> Vec<String> {
        vec!["servers".to_owned()]
    }

    #[test]
    fn blank_jsonc_keeps_offsets_and_strings() {
        let clean = blank_jsonc(VSCODE_MCP);
        assert_eq!(clean.len(), VSCODE_MCP.len());
        assert_eq!(clean.lines().count(), VSCODE_MCP.lines().count());
        let doc: Value = serde_json::from_str(&clean).unwrap();
        assert_eq!(
            doc["servers"]["github"]["url"],
            json!("https://api.githubcopilot.com/mcp/")
        );
        assert_eq!(doc["inputs"][0]["id"], json!("gh-token"));
        assert!(doc["servers"].get("disabled").is_none());
        // An escaped quote does not end a string early; `/*` inside one is not a comment.
        let tricky = r#"{"a": "x\" // y /* z", /* c */ "b": [1,2,],}"#;
        assert_eq!(
            parse_jsonc(tricky).unwrap(),
            json!({"a": "x\" // y /* z", "b": [1, 2]})
        );
    }

    #[test]
    fn splice_into_commented_file_keeps_every_other_byte() {
        let value = json!({"type": "stdio", "command": "toolgate", "args": ["serve"]});
        let out = splice_set(VSCODE_MCP, &servers(), "toolgate", &value).unwrap();
        let doc = parse_jsonc(&out).unwrap();
        assert_eq!(doc["servers"]["toolgate"], value);
        assert_eq!(doc["servers"]["github"]["type"], json!("http"));
        // Indented like its neighbour (4 spaces per level), after it, before the comments.
        let added = "\n        \"toolgate\": {\n            \"type\": \"stdio\",\n            \"command\": \"toolgate\",\n            \"args\": [\n                \"serve\"\n            ]\n        }";
        assert!(out.contains(added), "{out}");
        assert_eq!(out.replacen(&format!(",{added}"), "", 1), VSCODE_MCP);
        // Replacing is idempotent and keeps the rest.
        let again = splice_set(&out, &servers(), "toolgate", &value).unwrap();
        assert_eq!(again, out);
        let removed = splice_remove(&out, &servers(), "toolgate").unwrap();
        assert_eq!(removed, VSCODE_MCP);
        assert!(splice_remove(VSCODE_MCP, &servers(), "toolgate").is_none());
    }

    #[test]
    fn splice_with_tabs_creates_missing_servers() {
        let text = "{\n\t// no servers yet\n\t\"inputs\": [],\n}\n";
        let out = splice_set(text, &servers(), "toolgate", &json!({"command": "t"})).unwrap();
        assert_eq!(
            out,
            "{\n\t// no servers yet\n\t\"inputs\": [],\n\t\"servers\": {\n\t\t\"toolgate\": {\n\t\t\t\"command\": \"t\"\n\t\t}\n\t},\n}\n"
        );
        assert_eq!(
            parse_jsonc(&out).unwrap(),
            json!({"inputs": [], "servers": {"toolgate": {"command": "t"}}})
        );
        // An empty `servers` object, with CRLF line ends.
        let text = "{\r\n  \"servers\": {}\r\n}\r\n";
        let out = splice_set(text, &servers(), "toolgate", &json!({"command": "t"})).unwrap();
        assert_eq!(
            out,
            "{\r\n  \"servers\": {\r\n    \"toolgate\": {\r\n      \"command\": \"t\"\r\n    }\r\n  }\r\n}\r\n"
        );
        // The first of several members goes with its comma; comments after it stay.
        let text = "{\"servers\": {\"toolgate\": {}, /* keep */ \"b\": 1}}";
        assert_eq!(
            splice_remove(text, &servers(), "toolgate").unwrap(),
            "{\"servers\": {/* keep */ \"b\": 1}}"
        );
        assert!(splice_set("[1]", &servers(), "toolgate", &json!({})).is_err());
        assert!(
            splice_set("{\"servers\": []}", &servers(), "toolgate", &json!({}))
                .unwrap_err()
                .contains("not an object")
        );
    }

    proptest::proptest! {
        /// Whatever the user's servers, indentation, line ends, comments and trailing commas:
        /// the spliced file parses to theirs plus toolgate's entry, and removing the entry gives
        /// back their bytes.
        #[test]
        fn splice_round_trips(
            names in proptest::collection::btree_set("[a-z]{1,6}( [a-z//*]{0,3})?", 0..4),
            unit in proptest::sample::select(vec!["  ", "    ", "\t"]),
            crlf: bool,
            comment: bool,
            trailing: bool,
        ) {
            let nl = if crlf { "\r\n" } else { "\n" };
            let mut body = String::new();
            for (i, n) in names.iter().enumerate() {
                if i > 0 {
                    body.push(',');
                }
                body.push_str(&format!("{nl}{unit}{unit}{}: {{\"command\": \"//{n}\"}}", quoted(n)));
            }
            if trailing && !names.is_empty() {
                body.push(',');
            }
            if comment {
                body.push_str(&format!("{nl}{unit}{unit}// \"x\": {{}}, /* */"));
            }
            let text = format!("{{{nl}{unit}/* head */{nl}{unit}\"servers\": {{{body}{nl}{unit}}}{nl}}}{nl}");
            let before = parse_jsonc(&text).unwrap();
            let value = json!({"command": "toolgate", "args": ["mcp"]});
            let out = splice_set(&text, &servers(), "toolgate", &value).unwrap();
            let mut expected = before.clone();
            set(&mut expected, &servers(), &EntryKey::Object("toolgate".into()), value.clone()).unwrap();
            proptest::prop_assert_eq!(parse_jsonc(&out).unwrap(), expected);
            proptest::prop_assert_eq!(&splice_set(&out, &servers(), "toolgate", &value).unwrap(), &out);
            if !names.is_empty() {
                // Appended after the existing servers: removal restores every byte.
                proptest::prop_assert_eq!(splice_remove(&out, &servers(), "toolgate").unwrap(), text);
            } else {
                let removed = splice_remove(&out, &servers(), "toolgate").unwrap();
                proptest::prop_assert_eq!(parse_jsonc(&removed).unwrap(), before);
            }
        }
    }
}
