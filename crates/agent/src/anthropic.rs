//! Anthropic Messages (`/v1/messages`, `anthropic-version: 2023-06-01`): request bodies, replies
//! and streamed events.

use std::collections::HashMap;
use std::io::{BufReader, Read};

use serde_json::{Value, json};

use crate::client::{
    ChatRequest, ChatResponse, MAX_TOOL_CALLS_PER_REPLY, ModelConfig, ModelError, Role,
    ToolCallRequest, Usage, for_each_sse, too_many_tool_calls,
};

/// Default `max_tokens` (the API requires one).
const DEFAULT_MAX_TOKENS: u32 = 1024;

pub(crate) fn request_body(config: &ModelConfig, request: &ChatRequest<'_>) -> Value {
    let system: Vec<&str> = request
        .messages
        .iter()
        .filter(|m| m.role == Role::System)
        .map(|m| m.content.as_str())
        .collect();
    let mut messages: Vec<Value> = Vec::new();
    for m in request.messages {
        match m.role {
            Role::System => {}
            Role::User => messages.push(json!({"role": "user", "content": m.content})),
            Role::Assistant => {
                let mut content = Vec::new();
                if !m.content.is_empty() {
                    content.push(json!({"type": "text", "text": m.content}));
                }
                for c in &m.tool_calls {
                    let input = serde_json::from_str::<Value>(&c.arguments)
                        .ok()
                        .filter(Value::is_object)
                        .unwrap_or_else(|| json!({}));
                    content.push(
                        json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input}),
                    );
                }
                if content.is_empty() {
                    content.push(json!({"type": "text", "text": "(no reply)"}));
                }
                messages.push(json!({"role": "assistant", "content": content}));
            }
            Role::Tool => {
                let block = json!({"type": "tool_result", "tool_use_id": m.tool_call_id, "content": m.content});
                // Consecutive results travel in one user message.
                match messages.last_mut() {
                    Some(last)
                        if last["role"] == "user"
                            && last["content"]
                                .as_array()
                                .is_some_and(|c| c.iter().all(|b| b["type"] == "tool_result")) =>
                    {
                        if let Some(a) = last["content"].as_array_mut() {
                            a.push(block);
                        }
                    }
                    _ => messages.push(json!({"role": "user", "content": [block]})),
                }
            }
        }
    }
    let mut body = json!({
        "model": config.model,
        "max_tokens": config.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        "messages": messages,
    });
    if !system.is_empty() {
        body["system"] = json!(system.join("\n\n"));
    }
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
            .collect();
    }
    if let Some(t) = config.temperature {
        body["temperature"] = json!(t);
    }
    if config.stream {
        body["stream"] = json!(true);
    }
    body
}

fn input_text(input: &Value) -> String {
    match input {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

pub(crate) fn parse_response(v: &Value) -> Result<ChatResponse, ModelError> {
    let content = v
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| ModelError::Protocol(format!("no content in the reply: {v}")))?;
    let mut out = ChatResponse {
        model: v["model"].as_str().unwrap_or_default().to_owned(),
        finish_reason: v["stop_reason"].as_str().map(str::to_owned),
        ..ChatResponse::default()
    };
    for block in content {
        match block["type"].as_str() {
            Some("text") => out
                .text
                .push_str(block["text"].as_str().unwrap_or_default()),
            Some("tool_use") => out.tool_calls.push(ToolCallRequest {
                id: block["id"].as_str().unwrap_or_default().to_owned(),
                name: block["name"].as_str().unwrap_or_default().to_owned(),
                arguments: input_text(&block["input"]),
            }),
            _ => {}
        }
    }
    if let Some(u) = v.get("usage") {
        out.usage = Some(Usage {
            prompt_tokens: u["input_tokens"].as_u64().unwrap_or(0),
            completion_tokens: u["output_tokens"].as_u64().unwrap_or(0),
        });
    }
    Ok(out)
}

pub(crate) fn read_stream<R: Read>(
    lines: BufReader<R>,
    on_text: &dyn Fn(&str),
) -> Result<ChatResponse, ModelError> {
    let mut out = ChatResponse::default();
    let mut usage = Usage::default();
    let mut saw_usage = false;
    // content index → tool call index. A map, not a list indexed by the server's number: the
    // index is untrusted (`"index": 4000000000`), and only tool-use blocks get an entry.
    let mut blocks: HashMap<u64, usize> = HashMap::new();
    for_each_sse(lines, |_, data| {
        let v: Value = serde_json::from_str(data)
            .map_err(|e| ModelError::Protocol(format!("a stream event is not JSON ({e})")))?;
        let index = v["index"].as_u64().unwrap_or(0);
        match v["type"].as_str() {
            Some("message_start") => {
                if let Some(m) = v["message"]["model"].as_str() {
                    m.clone_into(&mut out.model);
                }
                if let Some(n) = v["message"]["usage"]["input_tokens"].as_u64() {
                    usage.prompt_tokens = n;
                    saw_usage = true;
                }
            }
            Some("content_block_start") => {
                let b = &v["content_block"];
                if b["type"] == "tool_use" {
                    if out.tool_calls.len() >= MAX_TOOL_CALLS_PER_REPLY {
                        return Err(too_many_tool_calls(
                            "tool call number",
                            out.tool_calls.len() as u64 + 1,
                        ));
                    }
                    out.tool_calls.push(ToolCallRequest {
                        id: b["id"].as_str().unwrap_or_default().to_owned(),
                        name: b["name"].as_str().unwrap_or_default().to_owned(),
                        arguments: String::new(),
                    });
                    blocks.insert(index, out.tool_calls.len() - 1);
                } else {
                    // A later block reusing an index is not a tool call any more.
                    blocks.remove(&index);
                }
            }
            Some("content_block_delta") => {
                let d = &v["delta"];
                match d["type"].as_str() {
                    Some("text_delta") => {
                        let t = d["text"].as_str().unwrap_or_default();
                        out.text.push_str(t);
                        on_text(t);
                    }
                    Some("input_json_delta") => {
                        if let Some(call) = blocks
                            .get(&index)
                            .copied()
                            .and_then(|i| out.tool_calls.get_mut(i))
                        {
                            call.arguments
                                .push_str(d["partial_json"].as_str().unwrap_or_default());
                        }
                    }
                    _ => {}
                }
            }
            Some("message_delta") => {
                if let Some(s) = v["delta"]["stop_reason"].as_str() {
                    out.finish_reason = Some(s.to_owned());
                }
                if let Some(n) = v["usage"]["output_tokens"].as_u64() {
                    usage.completion_tokens = n;
                    saw_usage = true;
                }
            }
            Some("error") => {
                return Err(ModelError::Protocol(format!(
                    "the stream reported an error: {}",
                    v["error"]
                )));
            }
            _ => {}
        }
        Ok(())
    })?;
    // A tool call with no input deltas has empty input: `{}`.
    for c in &mut out.tool_calls {
        if c.arguments.trim().is_empty() {
            "{}".clone_into(&mut c.arguments);
        }
    }
    if saw_usage {
        out.usage = Some(usage);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::{Message, Provider, ToolDef};

    #[test]
    fn body_has_system_tools_and_merged_results() {
        let c = ModelConfig::new(Provider::Anthropic, "http://h", "claude-haiku-4-5");
        let a = ToolCallRequest {
            id: "t1".into(),
            name: "x".into(),
            arguments: "{\"k\":1}".into(),
        };
        let b = ToolCallRequest {
            id: "t2".into(),
            name: "y".into(),
            arguments: "not json".into(),
        };
        let msgs = vec![
            Message::system("prime"),
            Message::user("u"),
            Message::assistant("thinking", vec![a.clone(), b.clone()]),
            Message::tool(&a, "ra"),
            Message::tool(&b, "rb"),
        ];
        let tools = vec![ToolDef {
            name: "x".into(),
            description: "d".into(),
            parameters: json!({"type": "object"}),
        }];
        let body = request_body(
            &c,
            &ChatRequest {
                messages: &msgs,
                tools: &tools,
                response_format: None,
            },
        );
        assert_eq!(body["system"], "prime");
        assert_eq!(body["max_tokens"], 1024);
        assert_eq!(body["messages"].as_array().unwrap().len(), 3);
        assert_eq!(body["messages"][1]["content"][1]["input"], json!({"k": 1}));
        assert_eq!(
            body["messages"][1]["content"][2]["input"],
            json!({}),
            "malformed input is sent as an empty object"
        );
        assert_eq!(body["messages"][2]["content"].as_array().unwrap().len(), 2);
        assert_eq!(body["tools"][0]["input_schema"]["type"], "object");
    }

    fn tool_use_start(index: u64) -> String {
        format!(
            "event: content_block_start\ndata: {{\"type\":\"content_block_start\",\"index\":{index},\"content_block\":{{\"type\":\"tool_use\",\"id\":\"u{index}\",\"name\":\"n\",\"input\":{{}}}}}}\n\n\
event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":{index},\"delta\":{{\"type\":\"input_json_delta\",\"partial_json\":\"{{}}\"}}}}\n\n"
        )
    }

    /// The reproduction: `"index": 4000000000` used to grow a list to that length. It
    /// is now only a key; and a reply with more than 128 tool calls is a protocol error.
    #[test]
    fn stream_block_index_and_tool_call_count_are_bounded() {
        let sse = tool_use_start(4_000_000_000);
        let r = read_stream(BufReader::new(sse.as_bytes()), &|_| {}).unwrap();
        assert_eq!(r.tool_calls.len(), 1);
        assert_eq!(r.tool_calls[0].arguments, "{}");
        let many: String = (0..128).map(tool_use_start).collect();
        let r = read_stream(BufReader::new(many.as_bytes()), &|_| {}).unwrap();
        assert_eq!(r.tool_calls.len(), 128);
        let too_many: String = (0..129).map(tool_use_start).collect();
        let err = read_stream(BufReader::new(too_many.as_bytes()), &|_| {}).unwrap_err();
        assert!(
            matches!(&err, ModelError::Protocol(m) if m.contains("at most 128 tool calls")),
            "{err}"
        );
    }

    #[test]
    fn parses_reply_and_stream() {
        let v = json!({"model": "c", "content": [{"type": "text", "text": "hi"}, {"type": "tool_use", "id": "a", "name": "n", "input": {"q": 2}}], "stop_reason": "tool_use", "usage": {"input_tokens": 10, "output_tokens": 4}});
        let r = parse_response(&v).unwrap();
        assert_eq!(r.text, "hi");
        assert_eq!(r.tool_calls[0].arguments, "{\"q\":2}");
        assert_eq!(r.usage.unwrap().prompt_tokens, 10);
        let sse = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"c\",\"usage\":{\"input_tokens\":9}}}\n\n\
event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"u1\",\"name\":\"n\",\"input\":{}}}\n\n\
event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"a\\\":\"}}\n\n\
event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"3}\"}}\n\n\
event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":5}}\n\n";
        let r = read_stream(BufReader::new(sse.as_bytes()), &|_| {}).unwrap();
        assert_eq!(r.tool_calls[0].arguments, "{\"a\":3}");
        assert_eq!(
            r.usage,
            Some(Usage {
                prompt_tokens: 9,
                completion_tokens: 5
            })
        );
    }
}
