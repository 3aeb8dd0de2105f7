//! Add or remove the one entry toolgate owns in a JSON file it shares with the user, keeping
//! every other key (and their order).
//!
//! VS Code's `mcp.json` is JSONC (comments and trailing commas are normal there), and the user's
//! layout must survive an install: [`splice_set`] and [`splice_remove`] edit the file through
//! `jsonc-parser`'s concrete syntax tree, which keeps every comment, blank and comma, so every
//! byte outside toolgate's entry stays as it was. Only the text of toolgate's own value is ours:
//! serde_json's pretty printer with the file's indentation unit and line ends (the CST would
//! write `"args": ["serve"]` on one line and copy the file's trailing commas into the entry).
//! This replaced a hand-written JSONC scanner (comment blanking plus a span walker, about 250
//! lines); the crate costs 1 crate in the build graph and the tests below (the same bytes
//! expected as before) pass unchanged against it.

use jsonc_parser::ParseOptions;
use jsonc_parser::cst::{CstInputValue, CstObject, CstObjectProp, CstRootNode};
use serde_json::{Map, Value};

use crate::install::EntryKey;

/// Why a shared JSON(C) file cannot take toolgate's entry, or cannot be read at all.
#[derive(Debug, thiserror::Error)]
pub enum JsonEditError {
    /// Not JSONC: the parser's message names the line and column.
    #[error("{0}")]
    Syntax(#[from] jsonc_parser::errors::ParseError),
    /// Nothing but whitespace and comments.
    #[error("the file holds no JSON value")]
    Empty,
    #[error("the top level is not a JSON object")]
    TopLevelNotObject,
    /// A container on the way to the entry has another type.
    #[error("\"{container}\" is not {}", if *.array { "an array" } else { "an object" })]
    NotContainer { container: String, array: bool },
}

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
pub(crate) fn get<'a>(doc: &'a Value, container: &[String], key: &EntryKey) -> Option<&'a Value> {
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
pub(crate) fn set(
    doc: &mut Value,
    container: &[String],
    key: &EntryKey,
    value: Value,
) -> Result<(), JsonEditError> {
    let array = matches!(key, EntryKey::ArrayName(_));
    let shape_err = || JsonEditError::NotContainer {
        container: container.join("."),
        array,
    };
    if !doc.is_object() {
        return Err(JsonEditError::TopLevelNotObject);
    }
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
pub(crate) fn remove(doc: &mut Value, container: &[String], key: &EntryKey) -> bool {
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

/// JSONC as VS Code writes it: JSON plus comments and trailing commas, nothing looser (no
/// single quotes, bare keys or hexadecimal numbers, which VS Code's own parser rejects too).
const JSONC: ParseOptions = ParseOptions {
    allow_comments: true,
    allow_trailing_commas: true,
    allow_loose_object_property_names: false,
    allow_missing_commas: false,
    allow_single_quoted_strings: false,
    allow_hexadecimal_numbers: false,
    allow_unary_plus_numbers: false,
    allow_bare_decimal_point_numbers: false,
    allow_non_finite_numbers: false,
    allow_extended_string_escapes: false,
};

/// Parse JSONC (comments, trailing commas) into a value, keys in file order.
pub fn parse_jsonc(text: &str) -> Result<Value, JsonEditError> {
    let value: Value = jsonc_parser::parse_to_serde_value(text, &JSONC)?;
    // The parser reads an empty file as `null`; tell the two apart (parsed again only then).
    if value.is_null() && jsonc_parser::parse_to_value(text, &JSONC)?.is_none() {
        return Err(JsonEditError::Empty);
    }
    Ok(value)
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

/// Give `prop` the value `v`, written by [`render`] and indented from the member's own line.
/// The CST places the member (commas, line, indentation); its value goes in as raw text through
/// a string-literal placeholder, the CST's one way to take text verbatim.
fn write_value(prop: &CstObjectProp, v: &Value, unit: &str, nl: &str) {
    prop.set_value(CstInputValue::String(String::new()));
    let base = prop.indent_text().unwrap_or_default();
    if let Some(lit) = prop.value().and_then(|n| n.as_string_lit()) {
        lit.set_raw_value(render(v, unit, &base, nl));
    }
}

/// Set `container[name]` to `value` by editing `text` (JSONC) in place: an existing entry's value
/// is replaced, a new one is added after the last member (or into the missing containers),
/// indented like its neighbours. Every other byte is kept.
pub(crate) fn splice_set(
    text: &str,
    container: &[String],
    name: &str,
    value: &Value,
) -> Result<String, JsonEditError> {
    let root = CstRootNode::parse(text, &JSONC)?;
    let mut obj = root
        .object_value()
        .ok_or(JsonEditError::TopLevelNotObject)?;
    let nl = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let unit = indent_unit(text);
    // Walk down the containers that exist; what is missing is added as one nested member.
    let mut path: Vec<&str> = container.iter().map(String::as_str).collect();
    path.push(name);
    for (depth, key) in path.iter().enumerate() {
        let Some(prop) = obj.get(key) else {
            let mut v = value.clone();
            for k in path[depth + 1..].iter().rev() {
                let mut m = Map::new();
                m.insert((*k).to_owned(), v);
                v = Value::Object(m);
            }
            let prop = obj.append(key, CstInputValue::Null);
            write_value(&prop, &v, &unit, nl);
            break;
        };
        if depth + 1 == path.len() {
            write_value(&prop, value, &unit, nl);
            break;
        }
        obj = prop
            .object_value()
            .ok_or_else(|| JsonEditError::NotContainer {
                container: path[..=depth].join("."),
                array: false,
            })?;
    }
    Ok(root.to_string())
}

/// Take `container[name]` out of `text` (JSONC): the member, the comma that joined it to its
/// neighbour, and the blanks in front of it; comments around it stay. `None` when it is absent
/// or the text is not JSONC.
pub(crate) fn splice_remove(text: &str, container: &[String], name: &str) -> Option<String> {
    let root = CstRootNode::parse(text, &JSONC).ok()?;
    let mut obj: CstObject = root.object_value()?;
    for key in container {
        obj = obj.get(key)?.object_value()?;
    }
    let prop = obj.get(name)?;
    // The CST keeps the blank after a first member's comma (`{"a": 1, /* c */ "b": 2}` would
    // become `{ /* c */ "b": 2}`); the blank belonged to the separator, so it goes with it.
    if prop.previous_property().is_none()
        && let Some(blank) = prop
            .trailing_comma()
            .and_then(|comma| comma.next_sibling())
            .filter(|n| n.is_whitespace())
    {
        blank.remove();
    }
    prop.remove();
    Some(root.to_string())
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
                .to_string()
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

    fn quoted(key: &str) -> String {
        Value::String(key.to_owned()).to_string()
    }

    fn servers() -> Vec<String> {
        vec!["servers".to_owned()]
    }

    /// The hand-written scanner this module had blanked comments and trailing commas before
    /// serde_json read the text; the same cases now go through `jsonc-parser`.
    #[test]
    fn parse_jsonc_reads_comments_and_strings() {
        let doc = parse_jsonc(VSCODE_MCP).unwrap();
        assert_eq!(
            doc["servers"]["github"]["url"],
            json!("https://api.githubcopilot.com/mcp/")
        );
        assert_eq!(doc["inputs"][0]["id"], json!("gh-token"));
        assert!(doc["servers"].get("disabled").is_none());
        // Keys in file order.
        let keys: Vec<&String> = doc.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["inputs", "servers"]);
        // An escaped quote does not end a string early; `/*` inside one is not a comment.
        let tricky = r#"{"a": "x\" // y /* z", /* c */ "b": [1,2,],}"#;
        assert_eq!(
            parse_jsonc(tricky).unwrap(),
            json!({"a": "x\" // y /* z", "b": [1, 2]})
        );
        // Nothing to read is an error, as serde_json's was; a literal `null` is a value.
        assert!(matches!(
            parse_jsonc(" // only a comment\n"),
            Err(JsonEditError::Empty)
        ));
        assert_eq!(parse_jsonc("null").unwrap(), Value::Null);
        // Looser JSON5 forms stay refused.
        for bad in ["{'a': 1}", "{a: 1}", "{\"a\": 0x1}", "{\"a\": 1} x"] {
            assert!(
                matches!(parse_jsonc(bad), Err(JsonEditError::Syntax(_))),
                "{bad}"
            );
        }
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
                .to_string()
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
