//! The agent loop and model clients (OpenAI-compatible chat completions, Anthropic Messages, text-protocol fallback).
//!
//! - [`client`]: the [`ModelClient`] trait and [`HttpModel`] (both protocols, streaming,
//!   timeouts, bounded retries with exponential backoff; API keys read from the environment
//!   variable named in [`ModelConfig`], never logged).
//! - [`call_parse`]: the one tolerant parser for tool calls written into reply text (fenced
//!   JSON, bare JSON, `<tool_call>` tags, `<|python_tag|>` / `[TOOL_CALLS]` prefixes, the common
//!   name/arguments shapes), used by the loop when a reply has no native `tool_calls` and by
//!   the text protocol.
//! - [`text_protocol`]: tool calls as fenced JSON for models without native tool calling.
//! - [`agent_loop`]: [`AgentLoop::run`] — priming, the four Debrief tools, every call through
//!   the surface's registry and policy, confirmations via the caller's [`Confirmer`], a JSONL
//!   transcript per conversation, and [`AgentEvent`]s for a UI.
//!
//! [`Confirmer`]: toolgate_core::flow::Confirmer

#![warn(unreachable_pub)]
pub mod agent_loop;
mod anthropic;
pub mod ask;
pub mod call_parse;
pub mod client;
pub mod constrain;
pub mod grounded;
mod openai;
pub mod rank;
pub mod refs;
pub mod small;
pub mod text_protocol;
pub mod transcript;
pub mod values;

pub use agent_loop::{
    AgentConfig, AgentEvent, AgentLoop, CallRecord, CallStatus, CancelToken, Conversation, PRIMING,
    RunOutcome, Stop, surface_settings,
};
pub use ask::Ask;
pub use client::{
    ChatRequest, ChatResponse, HttpModel, Message, ModelClient, ModelConfig, ModelError, Provider,
    Role, ToolCallRequest, ToolDef, Usage,
};
pub use small::{Levers, Profile, Stage, UnknownLever};
pub use text_protocol::TextProtocol;

/// Build the client a configuration describes; `text_tools` wraps it in the text protocol.
pub fn build_client(config: ModelConfig, text_tools: bool) -> std::sync::Arc<dyn ModelClient> {
    let http = HttpModel::new(config);
    if text_tools {
        std::sync::Arc::new(TextProtocol::new(http))
    } else {
        std::sync::Arc::new(http)
    }
}
