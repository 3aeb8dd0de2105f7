//! The agent loop: one utterance in, model turns and tool calls until a final answer, a turn
//! limit, too many invalid calls, a model error or cancellation. Every tool call goes through
//! [`Debrief::call`] (registry, validation, policy, confirmation, guard, session apply), so the
//! loop cannot apply a change a person did not confirm.
//!
//! A reply without native `tool_calls` is read by [`crate::call_parse`]: calls to offered tools
//! written into the text are dispatched exactly like native ones (same gate, same confirmation);
//! a reply that meant a call but cannot be read gets one corrective user message per utterance,
//! counted against [`AgentConfig::max_corrections`]. Replies with native calls are never re-read.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolgate_core::flow::{Answer, Confirmer};
use toolgate_core::{Preview, Refusal, RefusalKind, Reply, TokenCounter};
use toolgate_plot::agent::{Debrief, Settings, agent_tool_specs};

use crate::call_parse;
use crate::client::{ChatRequest, Message, ModelClient, Role, ToolCallRequest, ToolDef, Usage};
use crate::transcript::Transcript;

/// The domain priming file shipped in the repository (`crates/agent/priming/debrief.md`).
pub const PRIMING: &str = include_str!("../priming/debrief.md");

/// Limits and switches of the loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentConfig {
    /// Send the priming file as the system prompt.
    pub priming: bool,
    /// Model requests per utterance.
    pub max_turns: usize,
    /// Invalid calls (unknown tool, malformed arguments, a call in the text that cannot be read)
    /// tolerated per utterance; one more stops the loop.
    pub max_corrections: usize,
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self {
            priming: true,
            max_turns: 8,
            max_corrections: 3,
        }
    }
}

/// What the loop reports while it runs (serialisable for the workbench).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum AgentEvent {
    TextDelta {
        text: String,
    },
    ToolCallStarted {
        tool: String,
        input: Value,
    },
    ToolCallFinished {
        tool: String,
        result: String,
        /// The call ran (and any change was applied): a refusal, a decline or a failure is not ok.
        ok: bool,
        /// How it ended (`ok`, `refused`, `declined`, `failed`) and why (`no_plot`, `target`, …).
        status: toolgate_core::Status,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    ConfirmationAsked {
        preview: Preview,
    },
    ConfirmationAnswered {
        approved: bool,
    },
    Final {
        text: String,
    },
    Error {
        message: String,
    },
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Stop {
    /// The model answered without calling a tool.
    Final,
    TurnLimit,
    Cancelled,
    /// The model kept making invalid calls.
    TooManyCorrections,
    /// The model could not be reached, hung, or answered garbage.
    ModelError {
        message: String,
    },
}

/// What became of one tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum CallStatus {
    /// Dispatched to the surface (its reply may still be a refusal).
    Dispatched,
    UnknownTool,
    MalformedArguments,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallRecord {
    pub tool: String,
    /// Parsed arguments (or the raw text, as a string, when they were malformed).
    pub input: Value,
    pub result: String,
    pub status: CallStatus,
    /// How the surface ended the call (a refusal is dispatched but not ok); the loop's own
    /// corrections (unknown tool, malformed arguments) count as refused.
    pub outcome: toolgate_core::Status,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub ms: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunOutcome {
    pub stop: Stop,
    pub final_text: Option<String>,
    pub calls: Vec<CallRecord>,
    /// Model requests made.
    pub turns: usize,
    pub usage: Usage,
    /// Confirmations asked, with the answer given.
    pub confirmations: Vec<(Preview, bool)>,
    pub wall_ms: f64,
}

/// Cancels a running conversation from anywhere (another task, a signal handler).
#[derive(Debug, Clone, Default)]
pub struct CancelToken(Arc<(AtomicBool, tokio::sync::Notify)>);

impl CancelToken {
    pub fn cancel(&self) {
        self.0.0.store(true, Ordering::SeqCst);
        self.0.1.notify_waiters();
    }
    pub fn is_cancelled(&self) -> bool {
        self.0.0.load(Ordering::SeqCst)
    }
    /// Clear a cancellation so the conversation can go on.
    pub fn reset(&self) {
        self.0.0.store(false, Ordering::SeqCst);
    }
    async fn cancelled(&self) {
        loop {
            let notified = self.0.1.notified();
            if self.is_cancelled() {
                return;
            }
            notified.await;
        }
    }
}

/// The messages of one conversation, its transcript and its cancel switch.
#[derive(Debug)]
pub struct Conversation {
    pub id: String,
    pub messages: Vec<Message>,
    transcript: Option<Transcript>,
    cancel: CancelToken,
}

impl Conversation {
    pub fn new(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            messages: Vec::new(),
            transcript: None,
            cancel: CancelToken::default(),
        }
    }

    /// Also write a JSONL transcript to `<dir>/<id>.jsonl`.
    pub fn with_transcript(mut self, dir: &Path) -> std::io::Result<Self> {
        self.transcript = Some(Transcript::create(dir, &self.id)?);
        Ok(self)
    }

    pub fn transcript_path(&self) -> Option<&Path> {
        self.transcript.as_ref().map(Transcript::path)
    }

    pub fn cancel_token(&self) -> CancelToken {
        self.cancel.clone()
    }

    fn log(&mut self, kind: &str, fields: Value) {
        if let Some(t) = self.transcript.as_mut() {
            t.write(kind, fields);
        }
    }
}

/// The loop over one model and one Debrief surface.
pub struct AgentLoop {
    client: Arc<dyn ModelClient>,
    debrief: Arc<Debrief>,
    config: AgentConfig,
    tools: Vec<ToolDef>,
    counter: TokenCounter,
}

/// Settings for a [`Debrief`] driven by this loop: the model id and priming switch go into every
/// telemetry record.
pub fn surface_settings(surface: &str, model_id: &str, priming: bool) -> Settings {
    Settings {
        surface: surface.to_owned(),
        active_model: model_id.to_owned(),
        priming_enabled: priming,
        ..Settings::default()
    }
}

type Events<'a> = Mutex<&'a mut (dyn FnMut(AgentEvent) + Send)>;

fn emit(events: &Events<'_>, e: AgentEvent) {
    let mut f = events
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    (*f)(e);
}

/// Reports confirmations as events and remembers them.
struct Observed<'a> {
    inner: &'a dyn Confirmer,
    events: &'a Events<'a>,
    asked: Mutex<Vec<(Preview, bool)>>,
}

#[async_trait]
impl Confirmer for Observed<'_> {
    async fn confirm(&self, preview: &Preview) -> Answer {
        emit(
            self.events,
            AgentEvent::ConfirmationAsked {
                preview: preview.clone(),
            },
        );
        let answer = self.inner.confirm(preview).await;
        let approved = answer == Answer::Approve;
        emit(self.events, AgentEvent::ConfirmationAnswered { approved });
        if let Ok(mut a) = self.asked.lock() {
            a.push((preview.clone(), approved));
        }
        answer
    }
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1000.0
}

impl AgentLoop {
    pub fn new(client: Arc<dyn ModelClient>, debrief: Arc<Debrief>, config: AgentConfig) -> Self {
        let tools = agent_tool_specs().iter().map(ToolDef::from_spec).collect();
        Self {
            client,
            debrief,
            config,
            tools,
            counter: TokenCounter::default(),
        }
    }

    pub fn debrief(&self) -> &Arc<Debrief> {
        &self.debrief
    }

    pub fn config(&self) -> &AgentConfig {
        &self.config
    }

    pub fn model_id(&self) -> &str {
        self.client.model_id()
    }

    /// The tools advertised to the model.
    pub fn tools(&self) -> &[ToolDef] {
        &self.tools
    }

    /// Run one utterance to its end. `confirmer` is asked about every mutating call; `events`
    /// sees text deltas, calls, confirmations, the final answer and errors as they happen.
    pub async fn run(
        &self,
        conversation: &mut Conversation,
        utterance: &str,
        confirmer: &dyn Confirmer,
        mut events: impl FnMut(AgentEvent) + Send,
    ) -> RunOutcome {
        let events: Events<'_> = Mutex::new(&mut events);
        let observed = Observed {
            inner: confirmer,
            events: &events,
            asked: Mutex::new(Vec::new()),
        };
        let started = Instant::now();
        let mut out = RunOutcome {
            stop: Stop::Final,
            final_text: None,
            calls: Vec::new(),
            turns: 0,
            usage: Usage::default(),
            confirmations: Vec::new(),
            wall_ms: 0.0,
        };
        if conversation.messages.is_empty() && self.config.priming {
            conversation.messages.push(Message::system(PRIMING));
            conversation.log(
                "message",
                json!({"role": "system", "content": PRIMING, "priming": true}),
            );
        }
        conversation.messages.push(Message::user(utterance));
        conversation.log("message", json!({"role": "user", "content": utterance}));
        let cancel = conversation.cancel_token();
        let mut corrections = 0usize;
        let mut nudged = false;
        out.stop = loop {
            if cancel.is_cancelled() {
                break Stop::Cancelled;
            }
            if out.turns >= self.config.max_turns {
                break Stop::TurnLimit;
            }
            out.turns += 1;
            let t = Instant::now();
            let on_delta = |d: &str| {
                emit(&events, AgentEvent::TextDelta { text: d.to_owned() });
            };
            let request = ChatRequest {
                messages: &conversation.messages,
                tools: &self.tools,
            };
            let reply = tokio::select! {
                r = self.client.complete(&request, &on_delta) => Some(r),
                () = cancel.cancelled() => None,
            };
            let Some(reply) = reply else {
                break Stop::Cancelled;
            };
            let latency = ms(t);
            let reply = match reply {
                Ok(r) => r,
                Err(e) => {
                    let message = e.to_string();
                    conversation.log(
                        "model_error",
                        json!({"model": self.client.model_id(), "error": message, "latencyMs": latency}),
                    );
                    break Stop::ModelError { message };
                }
            };
            let (usage, estimated) = match reply.usage {
                Some(u) => (u, false),
                None => (self.estimate(&conversation.messages, &reply.text), true),
            };
            out.usage.add(usage);
            conversation.log(
                "model_turn",
                json!({"model": reply.model, "turn": out.turns, "latencyMs": latency,
                    "promptTokens": usage.prompt_tokens, "completionTokens": usage.completion_tokens,
                    "tokensEstimated": estimated, "finishReason": reply.finish_reason}),
            );
            let mut reply = reply;
            if reply.tool_calls.is_empty() {
                // Small models write their call into the text (a ```json fence, a <tool_call>
                // tag, …) instead of `tool_calls`; a reply with native calls is never re-read.
                let offered: Vec<String> = self.tools.iter().map(|t| t.name.clone()).collect();
                let found = call_parse::extract(&reply.text, &offered);
                if !found.calls.is_empty() {
                    let base = conversation.messages.len();
                    reply.tool_calls = found
                        .calls
                        .into_iter()
                        .enumerate()
                        .map(|(i, c)| ToolCallRequest {
                            id: format!("content-call-{base}-{i}"),
                            name: c.name,
                            arguments: c.arguments,
                        })
                        .collect();
                    reply.text = found.prose;
                } else if found.intended_call() && !nudged {
                    // One corrective turn per utterance: the model meant to call a tool but no
                    // call could be read. Counted as a correction like an invalid native call.
                    nudged = true;
                    corrections += 1;
                    let correction = call_parse::corrective_message(&found, &offered);
                    conversation
                        .messages
                        .push(Message::assistant(reply.text.clone(), Vec::new()));
                    conversation.log(
                        "message",
                        json!({"role": "assistant", "content": reply.text}),
                    );
                    conversation
                        .messages
                        .push(Message::user(correction.clone()));
                    conversation.log("correction", json!({"role": "user", "content": correction}));
                    if corrections > self.config.max_corrections {
                        break Stop::TooManyCorrections;
                    }
                    continue;
                }
            }
            if reply.tool_calls.is_empty() {
                conversation
                    .messages
                    .push(Message::assistant(reply.text.clone(), Vec::new()));
                conversation.log(
                    "message",
                    json!({"role": "assistant", "content": reply.text}),
                );
                emit(
                    &events,
                    AgentEvent::Final {
                        text: reply.text.clone(),
                    },
                );
                out.final_text = Some(reply.text);
                break Stop::Final;
            }
            conversation.messages.push(Message::assistant(
                reply.text.clone(),
                reply.tool_calls.clone(),
            ));
            conversation.log(
                "message",
                json!({"role": "assistant", "content": reply.text, "toolCalls": reply.tool_calls}),
            );
            for call in &reply.tool_calls {
                let t = Instant::now();
                let raw = call.arguments.trim();
                let parsed: Result<Value, _> = if raw.is_empty() {
                    Ok(json!({}))
                } else {
                    serde_json::from_str(raw)
                };
                let (input, reply, status) = match parsed {
                    Err(e) => {
                        corrections += 1;
                        (
                            Value::String(call.arguments.clone()),
                            Reply::refused(Refusal::new(
                                RefusalKind::InvalidParameters,
                                format!(
                                    "The arguments of your {} call are not valid JSON ({e}). Call {} again with one JSON object that matches its schema.",
                                    call.name, call.name
                                ),
                            )),
                            CallStatus::MalformedArguments,
                        )
                    }
                    Ok(input) => {
                        emit(
                            &events,
                            AgentEvent::ToolCallStarted {
                                tool: call.name.clone(),
                                input: input.clone(),
                            },
                        );
                        conversation.log(
                            "call",
                            json!({"id": call.id, "tool": call.name, "input": input}),
                        );
                        match self.debrief.call(&call.name, &input, &observed).await {
                            Ok(r) => (input, r, CallStatus::Dispatched),
                            Err(msg) => {
                                corrections += 1;
                                (
                                    input,
                                    Reply::refused(Refusal::new(RefusalKind::UnknownTool, msg)),
                                    CallStatus::UnknownTool,
                                )
                            }
                        }
                    }
                };
                let took = ms(t);
                for (preview, approved) in observed
                    .asked
                    .lock()
                    .map(|mut a| std::mem::take(&mut *a))
                    .unwrap_or_default()
                {
                    conversation.log(
                        "confirmation",
                        json!({"tool": call.name, "title": preview.title, "body": preview.body, "approved": approved}),
                    );
                    out.confirmations.push((preview, approved));
                }
                let Reply {
                    status: outcome,
                    reason,
                    text: result,
                    ..
                } = reply;
                emit(
                    &events,
                    AgentEvent::ToolCallFinished {
                        tool: call.name.clone(),
                        result: result.clone(),
                        ok: outcome == toolgate_core::Status::Ok,
                        status: outcome,
                        reason: reason.clone(),
                    },
                );
                conversation.log(
                    "result",
                    json!({"id": call.id, "tool": call.name, "status": status, "outcome": outcome,
                        "reason": reason, "result": result,
                        "ms": took, "resultTokens": self.counter.count(&result)}),
                );
                conversation.messages.push(Message::tool(call, &result));
                out.calls.push(CallRecord {
                    tool: call.name.clone(),
                    input,
                    result,
                    status,
                    outcome,
                    reason,
                    ms: took,
                });
            }
            if corrections > self.config.max_corrections {
                break Stop::TooManyCorrections;
            }
        };
        match &out.stop {
            Stop::Final => {}
            Stop::TurnLimit => emit(
                &events,
                AgentEvent::Error {
                    message: format!(
                        "Stopped after {} model turns without a final answer.",
                        self.config.max_turns
                    ),
                },
            ),
            Stop::Cancelled => emit(
                &events,
                AgentEvent::Error {
                    message: "Cancelled.".to_owned(),
                },
            ),
            Stop::TooManyCorrections => emit(
                &events,
                AgentEvent::Error {
                    message: format!(
                        "Stopped: the model made {corrections} invalid tool calls (unknown tools, malformed arguments or calls in its text that could not be read)."
                    ),
                },
            ),
            Stop::ModelError { message } => emit(
                &events,
                AgentEvent::Error {
                    message: message.clone(),
                },
            ),
        }
        out.wall_ms = ms(started);
        conversation.log(
            "end",
            json!({"stop": out.stop, "turns": out.turns, "toolCalls": out.calls.len(),
                "promptTokens": out.usage.prompt_tokens, "completionTokens": out.usage.completion_tokens,
                "wallMs": out.wall_ms}),
        );
        out
    }

    /// Token counts when the server reports none (o200k over the text sent and received).
    fn estimate(&self, messages: &[Message], reply: &str) -> Usage {
        let prompt: usize = messages
            .iter()
            .map(|m| {
                self.counter.count(&m.content)
                    + m.tool_calls
                        .iter()
                        .map(|c| self.counter.count(&c.arguments) + self.counter.count(&c.name))
                        .sum::<usize>()
                    + if m.role == Role::Tool { 4 } else { 3 }
            })
            .sum::<usize>()
            + self
                .tools
                .iter()
                .map(|t| {
                    self.counter
                        .count(&json!({"name": t.name, "description": t.description, "parameters": t.parameters}).to_string())
                })
                .sum::<usize>();
        Usage {
            prompt_tokens: prompt as u64,
            completion_tokens: self.counter.count(reply) as u64,
        }
    }
}
