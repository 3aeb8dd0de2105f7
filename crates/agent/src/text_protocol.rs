//! The text-protocol fallback for models without native tool calling: the tools are described
//! in the system prompt, and the model calls one by replying with a fenced JSON object
//! (`{"tool": "<name>", "arguments": {…}}`). The parser is lenient about what small models
//! actually emit: ```json / ```tool / bare fences, `<tool_call>` tags, a bare JSON object in
//! prose, `name`/`function`/`tool_name` for the name, `arguments`/`args`/`parameters`/`input`
//! for the arguments (an object, or a string holding JSON), and the OpenAI nesting
//! `{"function": {"name", "arguments"}}`.

use async_trait::async_trait;
use serde_json::{Value, json};

use crate::client::{
    ChatRequest, ChatResponse, DeltaSink, Message, ModelClient, ModelError, Role, ToolCallRequest,
    ToolDef,
};

/// A tool call found in a text reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextCall {
    pub name: String,
    /// Raw argument text (JSON when well formed).
    pub arguments: String,
    /// The reply without the call.
    pub prose: String,
}

const NAME_KEYS: [&str; 4] = ["tool", "name", "tool_name", "function"];
const ARG_KEYS: [&str; 4] = ["arguments", "args", "parameters", "input"];

/// Interpret a parsed JSON object as a call: `(name, raw arguments, has an arguments key)`.
fn interpret(v: &Value) -> Option<(String, String, bool)> {
    let obj = v.as_object()?;
    if let Some(f) = obj.get("function").and_then(Value::as_object)
        && let Some(name) = f.get("name").and_then(Value::as_str)
    {
        let args = f.get("arguments").cloned().unwrap_or_else(|| json!({}));
        return Some((name.to_owned(), args_text(&args), true));
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

/// Byte ranges `(whole, inner)` of fenced blocks and `<tool_call>` tags.
fn blocks(text: &str) -> Vec<((usize, usize), (usize, usize))> {
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(start) = text[i..].find("```").map(|s| s + i) {
        let body_start = start + 3;
        // skip the language tag line
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
        let Some(end) = text[inner_start..].find("```").map(|e| e + inner_start) else {
            out.push(((start, text.len()), (inner_start, text.len())));
            break;
        };
        out.push(((start, end + 3), (inner_start, end)));
        i = end + 3;
    }
    let mut i = 0;
    while let Some(start) = text[i..].find("<tool_call>").map(|s| s + i) {
        let inner_start = start + "<tool_call>".len();
        let end = text[inner_start..]
            .find("</tool_call>")
            .map_or(text.len(), |e| e + inner_start);
        let whole_end = (end + "</tool_call>".len()).min(text.len());
        out.push(((start, whole_end), (inner_start, end)));
        i = whole_end;
    }
    out
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
            None => break,
        }
    }
    out
}

fn remove(text: &str, range: (usize, usize)) -> String {
    let mut s = String::with_capacity(text.len());
    s.push_str(&text[..range.0]);
    s.push_str(&text[range.1..]);
    s.trim().to_owned()
}

/// Find the tool call in a reply. `known` are the advertised tool names: a bare JSON object in
/// prose only counts when it names one of them; a fenced or tagged block counts whenever it has
/// the call shape (an unknown name is then reported to the model). A fenced block that does not
/// parse but names a known tool is returned with its raw text, so the model hears its JSON was
/// malformed instead of being taken at its prose.
pub fn parse_tool_call(text: &str, known: &[String]) -> Option<TextCall> {
    let is_known = |n: &str| known.iter().any(|k| k == n);
    let mut fallback: Option<TextCall> = None;
    for (whole, inner) in blocks(text) {
        let body = text[inner.0..inner.1].trim();
        match serde_json::from_str::<Value>(body) {
            Ok(v) => {
                if let Some((name, arguments, has_args)) = interpret(&v)
                    && (is_known(&name) || has_args)
                {
                    return Some(TextCall {
                        name,
                        arguments,
                        prose: remove(text, whole),
                    });
                }
            }
            Err(_) => {
                // Maybe prose around an object inside the block.
                for (s, e) in bare_objects(body) {
                    if let Ok(v) = serde_json::from_str::<Value>(&body[s..e])
                        && let Some((name, arguments, has_args)) = interpret(&v)
                        && (is_known(&name) || has_args)
                    {
                        return Some(TextCall {
                            name,
                            arguments,
                            prose: remove(text, whole),
                        });
                    }
                }
                if fallback.is_none()
                    && let Some(name) = known.iter().find(|k| body.contains(k.as_str()))
                {
                    fallback = Some(TextCall {
                        name: name.clone(),
                        arguments: body.to_owned(),
                        prose: remove(text, whole),
                    });
                }
            }
        }
    }
    for (s, e) in bare_objects(text) {
        if let Ok(v) = serde_json::from_str::<Value>(&text[s..e])
            && let Some((name, arguments, _)) = interpret(&v)
            && is_known(&name)
        {
            return Some(TextCall {
                name,
                arguments,
                prose: remove(text, (s, e)),
            });
        }
    }
    fallback
}

/// How a call is written back into the conversation (and how the model is told to write one).
pub fn render_call(name: &str, arguments: &str) -> String {
    let args: Value = serde_json::from_str(arguments).unwrap_or_else(|_| json!({}));
    format!("```json\n{}\n```", json!({"tool": name, "arguments": args}))
}

/// The instructions appended to the system prompt.
pub fn instructions(tools: &[ToolDef]) -> String {
    let mut s = String::from(
        "You can call tools. To call one, reply with only a fenced JSON block, one call per reply:\n```json\n{\"tool\": \"<tool name>\", \"arguments\": {…}}\n```\nYou then receive the tool's result. When you are done, reply in plain text with no JSON block.\n\nTools:\n",
    );
    for t in tools {
        s.push_str(&format!(
            "- {}: {}\n  arguments (JSON Schema): {}\n",
            t.name, t.description, t.parameters
        ));
    }
    s
}

/// The conversation rewritten for a model without native tool calling.
pub fn to_text_messages(messages: &[Message], tools: &[ToolDef]) -> Vec<Message> {
    let mut out = Vec::with_capacity(messages.len() + 1);
    let extra = instructions(tools);
    let mut added = false;
    for m in messages {
        match m.role {
            Role::System if !added => {
                out.push(Message::system(format!("{}\n\n{extra}", m.content)));
                added = true;
            }
            Role::Assistant if !m.tool_calls.is_empty() => {
                let mut text = m.content.clone();
                for c in &m.tool_calls {
                    if !text.is_empty() {
                        text.push('\n');
                    }
                    text.push_str(&render_call(&c.name, &c.arguments));
                }
                out.push(Message::assistant(text, Vec::new()));
            }
            Role::Tool => out.push(Message::user(format!(
                "Result of {}:\n{}",
                m.name.as_deref().unwrap_or("the tool"),
                m.content
            ))),
            _ => out.push(m.clone()),
        }
    }
    if !added {
        out.insert(0, Message::system(extra));
    }
    out
}

/// Wraps a client so that tools travel as text (see the module docs).
pub struct TextProtocol<C> {
    inner: C,
}

impl<C> TextProtocol<C> {
    pub fn new(inner: C) -> Self {
        Self { inner }
    }
}

#[async_trait]
impl<C: ModelClient> ModelClient for TextProtocol<C> {
    fn model_id(&self) -> &str {
        self.inner.model_id()
    }

    async fn complete(
        &self,
        request: &ChatRequest<'_>,
        deltas: DeltaSink<'_>,
    ) -> Result<ChatResponse, ModelError> {
        let messages = to_text_messages(request.messages, request.tools);
        let mut r = self
            .inner
            .complete(
                &ChatRequest {
                    messages: &messages,
                    tools: &[],
                },
                deltas,
            )
            .await?;
        let known: Vec<String> = request.tools.iter().map(|t| t.name.clone()).collect();
        if r.tool_calls.is_empty()
            && let Some(call) = parse_tool_call(&r.text, &known)
        {
            r.tool_calls.push(ToolCallRequest {
                id: "text-call-0".to_owned(),
                name: call.name,
                arguments: call.arguments,
            });
            r.text = call.prose;
        }
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn known() -> Vec<String> {
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

    fn args(c: &TextCall) -> Value {
        serde_json::from_str(&c.arguments).unwrap()
    }

    #[test]
    fn shapes_small_models_emit() {
        let k = known();
        let c = parse_tool_call(
            "Sure.\n```json\n{\"tool\": \"debrief_listTools\", \"arguments\": {}}\n```",
            &k,
        )
        .unwrap();
        assert_eq!(c.name, "debrief_listTools");
        assert_eq!(c.prose, "Sure.");
        // Qwen-style: name/arguments in a fence without a language tag
        let c = parse_tool_call("```\n{\"name\": \"debrief_runTool\", \"arguments\": {\"toolId\": \"set-track-color\", \"params\": {\"color\": \"red\"}}}\n```", &k).unwrap();
        assert_eq!(args(&c)["params"]["color"], "red");
        // tags
        let c = parse_tool_call("<tool_call>\n{\"name\": \"debrief_summarizeCurrentPlot\", \"arguments\": {}}\n</tool_call>", &k).unwrap();
        assert_eq!(c.name, "debrief_summarizeCurrentPlot");
        // OpenAI nesting, arguments as a string
        let c = parse_tool_call("{\"function\": {\"name\": \"debrief_searchPlots\", \"arguments\": \"{\\\"text\\\": \\\"Alpha\\\"}\"}}", &k).unwrap();
        assert_eq!(args(&c)["text"], "Alpha");
        // bare object in prose, braces inside strings
        let c = parse_tool_call("I'll search: {\"tool\": \"debrief_searchPlots\", \"args\": {\"text\": \"a } b {\"}} then report.", &k).unwrap();
        assert_eq!(args(&c)["text"], "a } b {");
        assert_eq!(c.prose, "I'll search:  then report.");
        // missing arguments → {}
        let c = parse_tool_call("```json\n{\"tool\": \"debrief_listTools\"}\n```", &k).unwrap();
        assert_eq!(c.arguments, "{}");
    }

    #[test]
    fn prose_and_unrelated_json_are_not_calls() {
        let k = known();
        assert_eq!(parse_tool_call("The plot has two tracks.", &k), None);
        assert_eq!(
            parse_tool_call("Here is the data: {\"name\": \"HMS Nelson\"}", &k),
            None,
            "a bare object naming no tool is prose"
        );
    }

    #[test]
    fn fenced_unknown_tool_and_malformed_json_are_reported() {
        let k = known();
        let c = parse_tool_call(
            "```json\n{\"tool\": \"make_it_pretty\", \"arguments\": {}}\n```",
            &k,
        )
        .unwrap();
        assert_eq!(c.name, "make_it_pretty");
        let c = parse_tool_call(
            "```json\n{\"tool\": \"debrief_runTool\", \"arguments\": {\"toolId\": \n```",
            &k,
        )
        .unwrap();
        assert_eq!(c.name, "debrief_runTool");
        assert!(serde_json::from_str::<Value>(&c.arguments).is_err());
    }

    #[test]
    fn conversation_is_rewritten_as_text() {
        let call = ToolCallRequest {
            id: "1".into(),
            name: "debrief_listTools".into(),
            arguments: "{}".into(),
        };
        let tools = vec![ToolDef {
            name: "debrief_listTools".into(),
            description: "List".into(),
            parameters: json!({"type": "object"}),
        }];
        let m = to_text_messages(
            &[
                Message::user("u"),
                Message::assistant("", vec![call.clone()]),
                Message::tool(&call, "[]"),
            ],
            &tools,
        );
        assert_eq!(m[0].role, Role::System);
        assert!(m[0].content.contains("- debrief_listTools: List"));
        assert!(m[2].tool_calls.is_empty());
        let back = parse_tool_call(&m[2].content, &known()).unwrap();
        assert_eq!(back.name, "debrief_listTools");
        assert_eq!(m[3].role, Role::User);
        assert!(m[3].content.starts_with("Result of debrief_listTools:"));
    }

    fn scalar() -> impl Strategy<Value = Value> {
        prop_oneof![
            "[a-zA-Z0-9 {}\"\\\\<>:,-]{0,20}".prop_map(Value::String),
            any::<i32>().prop_map(|i| json!(i)),
            any::<bool>().prop_map(Value::Bool),
        ]
    }

    fn object() -> impl Strategy<Value = Value> {
        prop::collection::btree_map("[a-zA-Z_]{1,8}", scalar(), 0..5)
            .prop_map(|m| Value::Object(m.into_iter().collect()))
    }

    proptest! {
        #[test]
        fn a_rendered_call_in_any_prose_parses_back(
            which in 0usize..4,
            arguments in object(),
            before in "[a-zA-Z .,!?'\n]{0,40}",
            after in "[a-zA-Z .,!?'\n]{0,40}",
            style in 0usize..4,
        ) {
            let k = known();
            let name = &k[which];
            let obj = json!({"tool": name, "arguments": arguments});
            let call = match style {
                0 => render_call(name, &arguments.to_string()),
                1 => format!("```\n{obj}\n```"),
                2 => format!("<tool_call>{obj}</tool_call>"),
                _ => format!("{}", json!({"name": name, "arguments": arguments.to_string()})),
            };
            let text = format!("{before}{call}{after}");
            let c = parse_tool_call(&text, &k).unwrap();
            prop_assert_eq!(&c.name, name);
            prop_assert_eq!(serde_json::from_str::<Value>(&c.arguments).unwrap(), arguments);
        }

        #[test]
        fn never_panics_and_finds_nothing_without_braces(text in "\\PC{0,200}") {
            let k = known();
            let found = parse_tool_call(&text, &k);
            if !text.contains('{') && !text.contains("```") {
                prop_assert!(found.is_none());
            }
        }
    }
}
