//! The text-protocol fallback for models without native tool calling: the tools are described
//! in the system prompt, and the model calls one by replying with a fenced JSON object
//! (`{"tool": "<name>", "arguments": {…}}`). Replies are read by the one tolerant parser,
//! [`crate::call_parse`], which also accepts the other formats small models emit.

use async_trait::async_trait;
use serde_json::{Value, json};

use crate::call_parse;
use crate::client::{
    ChatRequest, ChatResponse, DeltaSink, Message, ModelClient, ModelError, Role, ToolCallRequest,
    ToolDef,
};

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
                    response_format: request.response_format,
                },
                deltas,
            )
            .await?;
        let offered: Vec<String> = request.tools.iter().map(|t| t.name.clone()).collect();
        if r.tool_calls.is_empty() {
            let found = call_parse::extract(&r.text, &offered);
            if !found.calls.is_empty() {
                r.tool_calls = found
                    .calls
                    .into_iter()
                    .enumerate()
                    .map(|(i, c)| ToolCallRequest {
                        id: format!("text-call-{i}"),
                        name: c.name,
                        arguments: c.arguments,
                    })
                    .collect();
                r.text = found.prose;
            }
        }
        Ok(r)
    }

    async fn server_info(&self) -> crate::constrain::ServerInfo {
        self.inner.server_info().await
    }
}
#[cfg(test)]
mod tests {
    use super::*;

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
        let back = call_parse::extract(&m[2].content, &["debrief_listTools".to_owned()]);
        assert_eq!(back.calls[0].name, "debrief_listTools");
        assert_eq!(back.calls[0].arguments, "{}");
        assert_eq!(m[3].role, Role::User);
        assert!(m[3].content.starts_with("Result of debrief_listTools:"));
    }
}
