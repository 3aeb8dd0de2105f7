//! OpenAI-compatible chat completions: request bodies, replies, and streamed chunks.

use std::io::{BufReader, Read};

use serde_json::{Value, json};

use crate::client::{
    ChatRequest, ChatResponse, MAX_TOOL_CALLS_PER_REPLY, Message, ModelConfig, ModelError, Role,
    ToolCallRequest, Usage, for_each_sse, too_many_tool_calls,
};

fn message(m: &Message) -> Value {
    match m.role {
        Role::System => json!({"role": "system", "content": m.content}),
        Role::User => json!({"role": "user", "content": m.content}),
        Role::Assistant => {
            let mut v = json!({"role": "assistant", "content": if m.content.is_empty() && !m.tool_calls.is_empty() { Value::Null } else { Value::String(m.content.clone()) }});
            if !m.tool_calls.is_empty() {
                v["tool_calls"] = m
                    .tool_calls
                    .iter()
                    .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
                    .collect();
            }
            v
        }
        Role::Tool => {
            json!({"role": "tool", "tool_call_id": m.tool_call_id, "name": m.name, "content": m.content})
        }
    }
}

pub(crate) fn request_body(config: &ModelConfig, request: &ChatRequest<'_>) -> Value {
    let mut body = json!({
        "model": config.model,
        "messages": request.messages.iter().map(message).collect::<Vec<_>>(),
    });
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}))
            .collect();
        body["tool_choice"] = json!("auto");
    }
    if let Some(f) = request.response_format {
        body["response_format"] = f.clone();
    }
    if let Some(t) = config.temperature {
        body["temperature"] = json!(t);
    }
    if let Some(m) = config.max_tokens {
        body["max_tokens"] = json!(m);
    }
    if config.stream {
        body["stream"] = json!(true);
        body["stream_options"] = json!({"include_usage": true});
    }
    body
}

fn usage(v: &Value) -> Option<Usage> {
    let u = v.get("usage")?;
    Some(Usage {
        prompt_tokens: u.get("prompt_tokens")?.as_u64()?,
        completion_tokens: u
            .get("completion_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(0),
    })
}

/// A non-streaming reply.
pub(crate) fn parse_response(v: &Value) -> Result<ChatResponse, ModelError> {
    let choice = v
        .get("choices")
        .and_then(|c| c.get(0))
        .ok_or_else(|| ModelError::Protocol(format!("no choices in the reply: {v}")))?;
    let message = &choice["message"];
    let tool_calls = message
        .get("tool_calls")
        .and_then(Value::as_array)
        .map(|calls| {
            calls
                .iter()
                .enumerate()
                .map(|(i, c)| ToolCallRequest {
                    id: c["id"]
                        .as_str()
                        .map_or_else(|| format!("call_{i}"), str::to_owned),
                    name: c["function"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                    arguments: match &c["function"]["arguments"] {
                        Value::String(s) => s.clone(),
                        Value::Null => String::new(),
                        other => other.to_string(),
                    },
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(ChatResponse {
        text: message["content"].as_str().unwrap_or_default().to_owned(),
        tool_calls,
        usage: usage(v),
        model: v["model"].as_str().unwrap_or_default().to_owned(),
        finish_reason: choice["finish_reason"].as_str().map(str::to_owned),
    })
}

/// A streamed reply: text deltas go to `on_text` as they arrive; tool-call fragments are joined
/// by their index.
pub(crate) fn read_stream<R: Read>(
    lines: BufReader<R>,
    on_text: &dyn Fn(&str),
) -> Result<ChatResponse, ModelError> {
    let mut out = ChatResponse::default();
    for_each_sse(lines, |_, data| {
        let v: Value = serde_json::from_str(data)
            .map_err(|e| ModelError::Protocol(format!("a stream chunk is not JSON ({e})")))?;
        if let Some(m) = v["model"].as_str() {
            m.clone_into(&mut out.model);
        }
        if let Some(u) = usage(&v) {
            out.usage = Some(u);
        }
        let Some(choice) = v["choices"].get(0) else {
            return Ok(());
        };
        if let Some(f) = choice["finish_reason"].as_str() {
            out.finish_reason = Some(f.to_owned());
        }
        let delta = &choice["delta"];
        if let Some(t) = delta["content"].as_str().filter(|t| !t.is_empty()) {
            out.text.push_str(t);
            on_text(t);
        }
        for c in delta["tool_calls"].as_array().into_iter().flatten() {
            let raw = c["index"].as_u64().unwrap_or(out.tool_calls.len() as u64);
            // The index comes from the server: bound it before growing the list to it.
            let i = usize::try_from(raw)
                .ok()
                .filter(|i| *i < MAX_TOOL_CALLS_PER_REPLY)
                .ok_or_else(|| too_many_tool_calls("tool call index", raw))?;
            while out.tool_calls.len() <= i {
                let n = out.tool_calls.len();
                out.tool_calls.push(ToolCallRequest {
                    id: format!("call_{n}"),
                    name: String::new(),
                    arguments: String::new(),
                });
            }
            let slot = &mut out.tool_calls[i];
            if let Some(id) = c["id"].as_str() {
                id.clone_into(&mut slot.id);
            }
            if let Some(n) = c["function"]["name"].as_str() {
                slot.name.push_str(n);
            }
            if let Some(a) = c["function"]["arguments"].as_str() {
                slot.arguments.push_str(a);
            }
        }
        Ok(())
    })?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::{Provider, ToolDef};

    fn tool_call_chunk(index: u64) -> String {
        format!(
            "data: {{\"choices\":[{{\"delta\":{{\"tool_calls\":[{{\"index\":{index},\"id\":\"x\",\"function\":{{\"name\":\"t\",\"arguments\":\"{{}}\"}}}}]}}}}]}}\n\n"
        )
    }

    /// The issue's reproduction (`"index": 4000000000` exhausted memory) and the first index
    /// past the bound: both are a protocol error naming the bound; the last index inside it
    /// still works.
    #[test]
    fn stream_tool_call_index_is_bounded() {
        for index in [128_u64, 4_000_000_000, u64::MAX] {
            let sse = tool_call_chunk(index);
            let err = read_stream(BufReader::new(sse.as_bytes()), &|_| {}).unwrap_err();
            assert!(
                matches!(&err, ModelError::Protocol(m) if m.contains(&index.to_string()) && m.contains("at most 128 tool calls")),
                "{err}"
            );
        }
        let sse = tool_call_chunk(127);
        let r = read_stream(BufReader::new(sse.as_bytes()), &|_| {}).unwrap();
        assert_eq!(r.tool_calls.len(), 128);
        assert_eq!(r.tool_calls[127].name, "t");
    }

    #[test]
    fn body_carries_messages_tools_and_stream_options() {
        let mut c = ModelConfig::new(Provider::OpenAi, "http://h/v1", "qwen");
        c.stream = true;
        let call = ToolCallRequest {
            id: "c1".into(),
            name: "t".into(),
            arguments: "{}".into(),
        };
        let msgs = vec![
            Message::system("s"),
            Message::user("u"),
            Message::assistant("", vec![call.clone()]),
            Message::tool(&call, "r"),
        ];
        let tools = vec![ToolDef {
            name: "t".into(),
            description: "d".into(),
            parameters: json!({"type": "object"}),
        }];
        let b = request_body(
            &c,
            &ChatRequest {
                messages: &msgs,
                tools: &tools,
                response_format: None,
            },
        );
        assert_eq!(b["model"], "qwen");
        assert_eq!(b["messages"][2]["content"], Value::Null);
        assert_eq!(b["messages"][2]["tool_calls"][0]["function"]["name"], "t");
        assert_eq!(b["messages"][3]["tool_call_id"], "c1");
        assert_eq!(b["tools"][0]["function"]["parameters"]["type"], "object");
        assert_eq!(b["stream_options"]["include_usage"], true);
    }

    #[test]
    fn stream_joins_fragments() {
        let sse = "data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\n\
data: {\"choices\":[{\"delta\":{\"content\":\"lo\"}}]}\n\n\
data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"x\",\"function\":{\"name\":\"debrief_\",\"arguments\":\"{\\\"a\\\"\"}}]}}]}\n\n\
data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"listTools\",\"arguments\":\":1}\"}}]},\"finish_reason\":\"tool_calls\"}],\"model\":\"m2\"}\n\n\
data: {\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":3}}\n\n\
data: [DONE]\n\n";
        let seen = std::sync::Mutex::new(String::new());
        let r = read_stream(BufReader::new(sse.as_bytes()), &|t| {
            seen.lock().unwrap().push_str(t);
        })
        .unwrap();
        assert_eq!(r.text, "Hello");
        assert_eq!(*seen.lock().unwrap(), "Hello");
        assert_eq!(r.tool_calls[0].name, "debrief_listTools");
        assert_eq!(r.tool_calls[0].arguments, "{\"a\":1}");
        assert_eq!(r.tool_calls[0].id, "x");
        assert_eq!(r.model, "m2");
        assert_eq!(
            r.usage,
            Some(Usage {
                prompt_tokens: 7,
                completion_tokens: 3
            })
        );
    }
}
