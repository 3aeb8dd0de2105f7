//! The one tolerant parser for tool calls that a model wrote into its reply text instead of the
//! protocol's `tool_calls` field. Small open models do this routinely: Qwen2.5-Coder-0.5B under
//! llama.cpp answers with a ```` ```json ```` fence in `content`, so a client that reads only
//! `tool_calls` takes every call for a final answer (0/32 on the offline probe).
//!
//! Formats recognised, in any surrounding prose:
//!
//! - fenced blocks: ```` ```json ````, ```` ``` ````, ```` ```tool_call ```` (any language tag);
//! - `<tool_call>…</tool_call>` tags (Qwen / Hermes templates);
//! - `<|python_tag|>` and `[TOOL_CALLS]` prefixes (Llama 3.x, Mistral), followed by one object or
//!   an array of them;
//! - bare JSON objects in prose;
//! - the shapes `{"name", "arguments"}`, `{"name", "parameters"}`, `{"tool", "args"}`,
//!   `{"tool_name", "input"}`, `{"function": {"name", "arguments"}}`, `{"tool_calls": [...]}`,
//!   or an array of calls; the arguments an object or a string holding JSON.
//!
//! Only a name among the tools offered this turn makes a call; anything else is prose. What
//! looked like a call but did not parse (a block naming an offered tool with broken JSON, a
//! call-shaped block naming an unknown tool, `offered_tool(` in prose) is reported separately so
//! the caller can send one corrective message rather than take it as the answer.
//!
//! Bounded: at most [`MAX_SCAN_BYTES`] of the text are scanned and at most [`MAX_CALLS`] calls
//! are returned; scanning is linear in the scanned length (each brace-balanced candidate is
//! parsed once).

use serde_json::Value;

/// How much of a reply is scanned for calls; a reply longer than this is a runaway generation,
/// and a call after 64 KiB of prose is not one worth dispatching.
pub const MAX_SCAN_BYTES: usize = 64 * 1024;
/// How many calls one reply may yield.
pub const MAX_CALLS: usize = 8;

/// A call found in reply text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContentCall {
    pub name: String,
    /// Raw argument text (JSON when well formed; `{}` when none were given).
    pub arguments: String,
}

/// What [`extract`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Extraction {
    /// Calls to offered tools, in the order they appear.
    pub calls: Vec<ContentCall>,
    /// The text without the consumed calls (and their prefix tokens), trimmed.
    pub prose: String,
    /// Call-shaped fenced or tagged blocks whose name is not offered.
    pub unknown: Vec<ContentCall>,
    /// The first fenced or tagged block that names an offered tool but is not valid JSON; its
    /// raw body is in `arguments`.
    pub malformed: Option<ContentCall>,
    /// An offered tool written as a function call in prose (`debrief_listTools()`).
    pub mentioned_as_call: Option<String>,
}

impl Extraction {
    /// No call parsed, yet the reply looks like the model meant to make one.
    pub fn intended_call(&self) -> bool {
        self.calls.is_empty()
            && (!self.unknown.is_empty()
                || self.malformed.is_some()
                || self.mentioned_as_call.is_some())
    }
}

const NAME_KEYS: [&str; 4] = ["tool", "name", "tool_name", "function"];
const ARG_KEYS: [&str; 4] = ["arguments", "args", "parameters", "input"];
const PREFIXES: [&str; 2] = ["<|python_tag|>", "[TOOL_CALLS]"];
const TAG_OPEN: &str = "<tool_call>";
const TAG_CLOSE: &str = "</tool_call>";

/// One call read from a JSON value: `(name, raw arguments, has an arguments key)`.
type Shape = (String, String, bool);

/// Read every call a JSON value holds: one object, an array of them, or `{"tool_calls": [...]}`.
fn interpret_all(v: &Value, out: &mut Vec<Shape>) {
    match v {
        Value::Array(items) => {
            for item in items.iter().take(MAX_CALLS) {
                if let Some(s) = interpret(item) {
                    out.push(s);
                }
            }
        }
        Value::Object(obj) => {
            if let Some(Value::Array(items)) = obj.get("tool_calls") {
                for item in items.iter().take(MAX_CALLS) {
                    if let Some(s) = interpret(item) {
                        out.push(s);
                    }
                }
            } else if let Some(s) = interpret(v) {
                out.push(s);
            }
        }
        _ => {}
    }
}

/// Interpret one JSON object as a call.
fn interpret(v: &Value) -> Option<Shape> {
    let obj = v.as_object()?;
    if let Some(f) = obj.get("function").and_then(Value::as_object)
        && let Some(name) = f.get("name").and_then(Value::as_str)
    {
        let args = ARG_KEYS.iter().find_map(|k| f.get(*k));
        return Some((
            name.trim().to_owned(),
            args.map_or_else(|| "{}".to_owned(), args_text),
            true,
        ));
    }
    let name = NAME_KEYS
        .iter()
        .find_map(|k| obj.get(*k).and_then(Value::as_str))?
        .trim()
        .to_owned();
    if name.is_empty() {
        return None;
    }
    let args = ARG_KEYS.iter().find_map(|k| obj.get(*k));
    Some((
        name,
        args.map_or_else(|| "{}".to_owned(), args_text),
        args.is_some(),
    ))
}

fn args_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "{}".to_owned(),
        other => other.to_string(),
    }
}

/// The largest char boundary at or below `max`.
fn floor_boundary(text: &str, max: usize) -> usize {
    if text.len() <= max {
        return text.len();
    }
    let mut i = max;
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Byte ranges `(whole, inner)` of `<tool_call>` tags, then fenced blocks outside them.
fn blocks(text: &str) -> Vec<((usize, usize), (usize, usize))> {
    let mut out: Vec<((usize, usize), (usize, usize))> = Vec::new();
    let mut i = 0;
    while let Some(start) = text[i..].find(TAG_OPEN).map(|s| s + i) {
        let inner_start = start + TAG_OPEN.len();
        let end = text[inner_start..]
            .find(TAG_CLOSE)
            .map_or(text.len(), |e| e + inner_start);
        let whole_end = (end + TAG_CLOSE.len()).min(text.len());
        out.push(((start, whole_end), (inner_start, end)));
        i = whole_end;
    }
    let (tags, mut tag) = (out.len(), 0);
    let mut i = 0;
    while let Some(start) = text[i..].find("```").map(|s| s + i) {
        let body_start = start + 3;
        // The language tag line (```json, ```tool_call) is not part of the body.
        let inner_start = match text[body_start..].find('\n') {
            Some(nl)
                if text[body_start..body_start + nl]
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') =>
            {
                body_start + nl + 1
            }
            _ => body_start,
        };
        let (whole, inner) = match text[inner_start..].find("```").map(|e| e + inner_start) {
            Some(end) => ((start, end + 3), (inner_start, end)),
            None => ((start, text.len()), (inner_start, text.len())),
        };
        // A fence inside a tag belongs to the tag. Tags are sorted and disjoint, so only the
        // first one ending after this fence starts can overlap it (keeps this linear).
        while tag < tags && out[tag].0.1 <= whole.0 {
            tag += 1;
        }
        if tag >= tags || !overlaps(out[tag].0, whole) {
            out.push((whole, inner));
        }
        i = whole.1;
        if i >= text.len() {
            break;
        }
    }
    out
}

fn overlaps(a: (usize, usize), b: (usize, usize)) -> bool {
    a.0 < b.1 && b.0 < a.1
}

/// Balanced JSON objects in free text (string-aware), as byte ranges.
fn bare_objects(text: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'{' {
            i += 1;
            continue;
        }
        let (mut depth, mut in_str, mut esc) = (0usize, false, false);
        let mut end = None;
        for (j, &b) in bytes.iter().enumerate().skip(i) {
            if in_str {
                match (esc, b) {
                    (true, _) => esc = false,
                    (false, b'\\') => esc = true,
                    (false, b'"') => in_str = false,
                    _ => {}
                }
                continue;
            }
            match b {
                b'"' => in_str = true,
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = Some(j + 1);
                        break;
                    }
                }
                _ => {}
            }
        }
        match end {
            Some(e) => {
                out.push((i, e));
                i = e;
            }
            // An unclosed brace runs to the end; nothing after it can be balanced either.
            None => break,
        }
    }
    out
}

/// The first JSON value at the start of `text` (after whitespace) and the bytes it took.
fn leading_value(text: &str) -> Option<(Value, usize)> {
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    match stream.next() {
        Some(Ok(v)) => Some((v, stream.byte_offset())),
        _ => None,
    }
}

struct Scan<'a> {
    offered: &'a [String],
    found: Vec<(usize, ContentCall)>,
    consumed: Vec<(usize, usize)>,
    ex: Extraction,
}

impl Scan<'_> {
    fn is_offered(&self, name: &str) -> bool {
        self.offered.iter().any(|k| k == name)
    }

    fn full(&self) -> bool {
        self.found.len() >= MAX_CALLS
    }

    /// Take the calls in `shapes` found at `at`; `block` says whether unknown call shapes there
    /// are worth reporting (a fenced or tagged block is an attempt; a bare object may be data).
    fn take(&mut self, at: usize, shapes: Vec<Shape>, block: bool) -> bool {
        let mut any = false;
        for (name, arguments, has_args) in shapes {
            if self.is_offered(&name) {
                if !self.full() {
                    self.found.push((at, ContentCall { name, arguments }));
                }
                any = true;
            } else if block && has_args && self.ex.unknown.len() < MAX_CALLS {
                self.ex.unknown.push(ContentCall { name, arguments });
            }
        }
        any
    }
}

/// Find the tool calls in `text`; `offered` are the tool names advertised this turn.
pub fn extract(text: &str, offered: &[String]) -> Extraction {
    let scanned = &text[..floor_boundary(text, MAX_SCAN_BYTES)];
    let mut s = Scan {
        offered,
        found: Vec::new(),
        consumed: Vec::new(),
        ex: Extraction::default(),
    };

    for (whole, inner) in blocks(scanned) {
        if s.full() {
            break;
        }
        let body = scanned[inner.0..inner.1].trim();
        let mut shapes = Vec::new();
        if let Ok(v) = serde_json::from_str::<Value>(body) {
            interpret_all(&v, &mut shapes);
        } else {
            // Prose around the object(s) inside the block.
            for (a, b) in bare_objects(body) {
                if let Ok(v) = serde_json::from_str::<Value>(&body[a..b]) {
                    interpret_all(&v, &mut shapes);
                }
            }
            if shapes.is_empty()
                && s.ex.malformed.is_none()
                && let Some(name) = offered.iter().find(|k| body.contains(k.as_str()))
            {
                s.ex.malformed = Some(ContentCall {
                    name: name.clone(),
                    arguments: body.to_owned(),
                });
            }
        }
        if s.take(whole.0, shapes, true) {
            s.consumed.push(whole);
        }
    }

    for prefix in PREFIXES {
        let mut i = 0;
        while !s.full()
            && let Some(start) = scanned[i..].find(prefix).map(|p| p + i)
        {
            let after = start + prefix.len();
            i = after;
            if s.consumed.iter().any(|c| c.0 <= start && start < c.1) {
                continue;
            }
            let Some((v, used)) = leading_value(&scanned[after..]) else {
                continue;
            };
            let mut shapes = Vec::new();
            interpret_all(&v, &mut shapes);
            if s.take(start, shapes, true) {
                s.consumed.push((start, after + used));
                i = after + used;
            }
        }
    }

    for (a, b) in bare_objects(scanned) {
        if s.full() {
            break;
        }
        if s.consumed.iter().any(|c| overlaps(*c, (a, b))) {
            continue;
        }
        if let Ok(v) = serde_json::from_str::<Value>(&scanned[a..b]) {
            let mut shapes = Vec::new();
            interpret_all(&v, &mut shapes);
            if s.take(a, shapes, false) {
                s.consumed.push((a, b));
            }
        }
    }

    if s.found.is_empty() {
        s.ex.mentioned_as_call = offered
            .iter()
            .find(|k| {
                scanned
                    .match_indices(k.as_str())
                    .any(|(p, m)| scanned[p + m.len()..].trim_start().starts_with('('))
            })
            .cloned();
    }

    s.found.sort_by_key(|(at, _)| *at);
    s.ex.calls = s.found.into_iter().map(|(_, c)| c).collect();
    s.ex.prose = if s.consumed.is_empty() {
        text.trim().to_owned()
    } else {
        remove(text, &mut s.consumed)
    };
    s.ex
}

fn remove(text: &str, ranges: &mut [(usize, usize)]) -> String {
    ranges.sort_unstable();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for &(a, b) in ranges.iter() {
        if a > at {
            out.push_str(&text[at..a]);
        }
        at = at.max(b);
    }
    out.push_str(&text[at.min(text.len())..]);
    out.trim().to_owned()
}

/// The corrective message for a reply that meant to call a tool but could not be read.
pub fn corrective_message(ex: &Extraction, offered: &[String]) -> String {
    let what = if let Some(c) = &ex.malformed {
        format!(
            "Your reply contains a call to {} that is not valid JSON.",
            c.name
        )
    } else if let Some(c) = ex.unknown.first() {
        format!(
            "Your reply calls {}, which is not an available tool.",
            c.name
        )
    } else if let Some(n) = &ex.mentioned_as_call {
        format!("Your reply writes {n}(…) as code instead of calling it.")
    } else {
        "Your reply looks like a tool call, but no call could be read from it.".to_owned()
    };
    format!(
        "{what} To call a tool, reply with only one JSON object exactly like {{\"name\": \"<tool name>\", \"arguments\": {{…}}}}, using one of: {}. If you need no tool, answer in plain text.",
        offered.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn offered() -> Vec<String> {
        [
            "debrief_searchPlots",
            "debrief_summarizeCurrentPlot",
            "debrief_listTools",
            "debrief_runTool",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect()
    }

    fn args(c: &ContentCall) -> Value {
        serde_json::from_str(&c.arguments).unwrap()
    }

    #[test]
    fn the_formats_small_models_emit() {
        let k = offered();
        // What Qwen2.5-Coder-0.5B wrote under llama.cpp (local-model trial, prompt 8).
        let e = extract(
            "```json\n{\"name\": \"debrief_listTools\", \"arguments\": {\"plotId\": \"stac://x\"}}\n```",
            &k,
        );
        assert_eq!(e.calls.len(), 1);
        assert_eq!(e.calls[0].name, "debrief_listTools");
        assert_eq!(args(&e.calls[0])["plotId"], "stac://x");
        assert_eq!(e.prose, "");

        let e = extract(
            "<tool_call>\n{\"name\": \"debrief_summarizeCurrentPlot\", \"arguments\": {}}\n</tool_call>",
            &k,
        );
        assert_eq!(e.calls[0].name, "debrief_summarizeCurrentPlot");

        let e = extract(
            "<|python_tag|>{\"name\": \"debrief_searchPlots\", \"parameters\": {\"text\": \"Alpha\"}}",
            &k,
        );
        assert_eq!(args(&e.calls[0])["text"], "Alpha");
        assert_eq!(e.prose, "");

        let e = extract(
            "[TOOL_CALLS] [{\"name\": \"debrief_summarizeCurrentPlot\", \"arguments\": {}}, {\"name\": \"debrief_listTools\", \"arguments\": {}}]",
            &k,
        );
        let names: Vec<&str> = e.calls.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["debrief_summarizeCurrentPlot", "debrief_listTools"]);
        assert_eq!(e.prose, "");

        let e = extract(
            "{\"tool_calls\": [{\"type\": \"function\", \"function\": {\"name\": \"debrief_listTools\", \"arguments\": \"{}\"}}]}",
            &k,
        );
        assert_eq!(e.calls[0].name, "debrief_listTools");

        let e = extract(
            "```tool_call\n{\"tool\": \"debrief_runTool\", \"args\": {\"toolId\": \"speed-filter\"}}\n```",
            &k,
        );
        assert_eq!(args(&e.calls[0])["toolId"], "speed-filter");
    }

    #[test]
    fn prose_data_and_unknown_names_are_not_calls() {
        let k = offered();
        let e = extract("The plot has two tracks.", &k);
        assert!(e.calls.is_empty() && !e.intended_call());
        let e = extract("Here is the data: {\"name\": \"HMS Nelson\"}", &k);
        assert!(e.calls.is_empty() && !e.intended_call());
        // Mentioning a tool in prose is not an attempted call.
        let e = extract("I used debrief_listTools to find that.", &k);
        assert!(!e.intended_call());

        let e = extract(
            "```json\n{\"name\": \"make_it_pretty\", \"arguments\": {}}\n```",
            &k,
        );
        assert!(e.calls.is_empty());
        assert_eq!(e.unknown[0].name, "make_it_pretty");
        assert!(e.intended_call());

        let e = extract(
            "```json\n{\"name\": \"debrief_runTool\", \"arguments\": {\"toolId\": \n```",
            &k,
        );
        assert_eq!(e.malformed.as_ref().unwrap().name, "debrief_runTool");
        assert!(e.intended_call());
        assert!(corrective_message(&e, &k).contains("not valid JSON"));

        let e = extract("Call debrief_listTools() to see them.", &k);
        assert_eq!(e.mentioned_as_call.as_deref(), Some("debrief_listTools"));
        assert!(e.intended_call());
    }

    #[test]
    fn the_caps_hold() {
        let k = offered();
        let one = "{\"name\": \"debrief_listTools\", \"arguments\": {}}\n";
        let e = extract(&one.repeat(MAX_CALLS * 3), &k);
        assert_eq!(e.calls.len(), MAX_CALLS);
        // A call past the scanned prefix is not seen.
        let text = format!("{}{one}", "a".repeat(MAX_SCAN_BYTES));
        assert!(extract(&text, &k).calls.is_empty());
        // ... and the cut may fall inside a multi-byte character.
        let text = format!("{}{one}", "é".repeat(MAX_SCAN_BYTES / 2 + 1));
        assert!(extract(&text, &k).calls.is_empty());
    }

    #[test]
    fn pathological_inputs_stay_linear() {
        let k = offered();
        let started = std::time::Instant::now();
        for unit in [
            "{",
            "}",
            "{}",
            "\"",
            "```",
            "```\n{",
            "<tool_call>",
            "<tool_call>```",
            "[TOOL_CALLS]",
            "<|python_tag|>{",
            "debrief_listTools(",
            "{\"name\": \"debrief_listTools\", \"arguments\": ",
        ] {
            let text = unit.repeat(MAX_SCAN_BYTES / unit.len() + 1);
            let e = extract(&text, &k);
            assert!(e.calls.len() <= MAX_CALLS);
        }
        // Generous: this is a complexity guard (quadratic would take minutes), not a benchmark.
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
    }

    fn scalar() -> impl Strategy<Value = Value> {
        prop_oneof![
            "[a-zA-Z0-9 {}\\[\\]\"\\\\<>:,|-]{0,20}".prop_map(Value::String),
            any::<i32>().prop_map(|i| json!(i)),
            any::<bool>().prop_map(Value::Bool),
        ]
    }

    fn object() -> impl Strategy<Value = Value> {
        prop::collection::btree_map("[a-zA-Z_]{1,8}", scalar(), 0..5)
            .prop_map(|m| Value::Object(m.into_iter().collect()))
    }

    /// One call written in one of the supported formats.
    fn render(name: &str, a: &Value, style: usize) -> String {
        let s = a.to_string();
        match style {
            0 => format!("```json\n{}\n```", json!({"name": name, "arguments": a})),
            1 => format!("```\n{}\n```", json!({"name": name, "parameters": a})),
            2 => format!("```tool_call\n{}\n```", json!({"tool": name, "args": a})),
            3 => format!(
                "<tool_call>\n{}\n</tool_call>",
                json!({"name": name, "arguments": a})
            ),
            4 => format!("<|python_tag|>{}", json!({"name": name, "parameters": a})),
            5 => format!("[TOOL_CALLS] [{}]", json!({"name": name, "arguments": a})),
            6 => json!({"function": {"name": name, "arguments": s}}).to_string(),
            7 => json!({"name": name, "arguments": s}).to_string(),
            _ => json!({"tool_name": name, "input": a}).to_string(),
        }
    }

    proptest! {
        #[test]
        fn rendered_calls_in_any_prose_parse_back(
            calls in prop::collection::vec((0usize..4, object(), 0usize..9), 1..4),
            prose in prop::collection::vec("[a-zA-Z .,!?'\n\t]{0,30}", 4),
        ) {
            let k = offered();
            let mut text = prose[0].clone();
            for (i, (which, a, style)) in calls.iter().enumerate() {
                text.push_str(&render(&k[*which], a, *style));
                // Separate calls so a prefix's value does not swallow the next call.
                text.push('\n');
                text.push_str(&prose[(i + 1) % prose.len()]);
            }
            let e = extract(&text, &k);
            prop_assert_eq!(e.calls.len(), calls.len(), "{}", text);
            for (got, (which, a, _)) in e.calls.iter().zip(&calls) {
                prop_assert_eq!(&got.name, &k[*which]);
                prop_assert_eq!(&serde_json::from_str::<Value>(&got.arguments).unwrap(), a);
            }
            prop_assert!(!e.prose.contains("debrief_"), "{}", e.prose);
        }

        #[test]
        fn arbitrary_text_never_panics_nor_names_an_unoffered_tool(
            text in "(\\PC|[{}\\[\\]\"`<>|\n])*",
            junk in "[a-z{}\"`:, \n]{0,60}",
        ) {
            let k = offered();
            for t in [text.clone(), format!("```json\n{junk}"), format!("<tool_call>{junk}{text}")] {
                let e = extract(&t, &k);
                prop_assert!(e.calls.len() <= MAX_CALLS);
                prop_assert!(e.calls.iter().all(|c| k.contains(&c.name)));
            }
        }

        #[test]
        fn names_outside_the_offer_are_never_calls(
            name in "[a-zA-Z_]{1,20}",
            a in object(),
            style in 0usize..9,
        ) {
            let k = offered();
            prop_assume!(!k.contains(&name));
            let e = extract(&render(&name, &a, style), &k);
            prop_assert!(e.calls.is_empty());
        }
    }
}
