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
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolgate_core::flow::{Answer, Confirmer};
use toolgate_core::{Preview, Refusal, RefusalKind, Reply, TokenCounter};
use toolgate_plot::debrief::{Debrief, Settings, agent_tool_specs};

use crate::call_parse;
use crate::client::{ChatRequest, Message, ModelClient, Role, ToolCallRequest, ToolDef, Usage};
use crate::constrain::{self, Choices, Step};
use crate::grounded;
use crate::small::{self, Levers, Offer, Profile, Stage};
use crate::transcript::Transcript;
use crate::values;

/// The domain priming file shipped in the repository (`crates/agent/priming/debrief.md`).
pub const PRIMING: &str = include_str!("../priming/debrief.md");

/// How many ranked tools a constrained run step offers when the request names none: the
/// ranker's recall@5 on the panel's dev wordings is 20/20 (`crates/eval/tests/ranker.rs`), and a
/// 0.5B model chooses among five far better than among seventy.
pub const RANKED_TOOLS: usize = 5;

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
    /// The small-model parts switched on ([`Levers::LARGE`] sends the requests toolgate always
    /// sent; see [`crate::small`]).
    #[serde(default = "large_levers")]
    pub levers: Levers,
    /// The model's context window in tokens, overriding what the server reports (used by the
    /// compaction lever).
    #[serde(default)]
    pub context: Option<usize>,
}

fn large_levers() -> Levers {
    Levers::LARGE
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self {
            priming: true,
            max_turns: 8,
            max_corrections: 3,
            levers: Levers::LARGE,
            context: None,
        }
    }
}

impl AgentConfig {
    /// The defaults with a profile's levers.
    pub fn for_profile(profile: Profile) -> Self {
        Self {
            levers: Levers::for_profile(profile),
            ..Self::default()
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
    /// Small profile: the same call as one already answered in this utterance; answered from
    /// that result, not dispatched again.
    Repeated,
    /// Small profile: a tool not offered at this step; refused, not dispatched.
    NotOffered,
    /// Small profile: a run whose target the request does not settle (nothing named or
    /// selected, or a phrase that fits several features); not dispatched, the analyst is asked.
    TargetAsked,
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
    /// The question or refusal the small profile made in code instead of a call, when the
    /// utterance ended in one (its words are the final answer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ask: Option<crate::Ask>,
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
    /// Small profile: the stage the last utterance ended in and the plot it was about.
    stage: Option<(Stage, Option<String>)>,
    /// The last utterance, when it ended in a question the next one may answer ("Which time
    /// window should Trim Track keep?" → "0200-0400Z").
    pending: Option<(String, crate::Ask)>,
}

impl Conversation {
    pub fn new(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            messages: Vec::new(),
            transcript: None,
            cancel: CancelToken::default(),
            stage: None,
            pending: None,
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
    ///
    /// An utterance that answers the question the previous one ended in (which track, which of
    /// two, which time window) is read together with it: "trim nelson's track to the
    /// interesting bit" asked for a window, so "0200-0400Z" trims HMS Nelson to it.
    pub async fn run(
        &self,
        conversation: &mut Conversation,
        utterance: &str,
        confirmer: &dyn Confirmer,
        events: impl FnMut(AgentEvent) + Send,
    ) -> RunOutcome {
        let pending = conversation.pending.take();
        let request = match pending {
            Some((asked, ask)) if self.answers(&ask, utterance) => {
                let whole = format!("{asked} {utterance}");
                conversation.log(
                    "followUp",
                    json!({"answer": utterance, "to": asked, "read as": whole}),
                );
                whole
            }
            _ => utterance.to_owned(),
        };
        let out = self
            .run_one(conversation, &request, confirmer, events)
            .await;
        conversation.pending = out
            .ask
            .as_ref()
            .filter(|a| {
                matches!(
                    a,
                    crate::Ask::WhichWindow { .. }
                        | crate::Ask::WhichFeature { .. }
                        | crate::Ask::Ambiguous { .. }
                )
            })
            .map(|a| (request.clone(), a.clone()));
        out
    }

    /// Whether `answer` is a reply to `ask` rather than a request of its own: a few words with
    /// no verb of a change or a search of their own, giving what was asked for — a time window
    /// for [`crate::Ask::WhichWindow`], one of the candidates (or the selection) for the
    /// questions about features.
    fn answers(&self, ask: &crate::Ask, answer: &str) -> bool {
        if answer.split_whitespace().count() > 8 || small::leads_with_change(answer) {
            return false;
        }
        if matches!(
            small::Intent::from_words(answer),
            Some(small::Intent::ListTools | small::Intent::DescribePlot | small::Intent::FindPlots)
        ) {
            return false;
        }
        match ask {
            crate::Ask::WhichWindow { .. } => {
                let (words, span) = self.words_and_span(answer);
                span.is_some_and(|s| values::time_window(&words, s).is_some())
            }
            crate::Ask::WhichFeature { candidates, .. }
            | crate::Ask::Ambiguous { candidates, .. } => {
                let session = self.debrief.session();
                let Ok(plot) = session.active() else {
                    return false;
                };
                let all = crate::refs::candidates(plot.doc.features(), &plot.entry.platforms);
                let selected = !plot.selected_ids().is_empty();
                drop(session);
                match crate::refs::resolve(answer, &all, selected, false) {
                    crate::refs::Refs::Named(names) => names.iter().any(|n| candidates.contains(n)),
                    crate::refs::Refs::Selection => true,
                    _ => false,
                }
            }
            _ => false,
        }
    }

    async fn run_one(
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
            ask: None,
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
        // Each open plot's document version when the utterance arrived: a reply may say that
        // something changed only if one of them moved (read from the session, never from text).
        let versions = self.plot_versions();
        let mut corrections = 0usize;
        let mut nudged = false;
        let mut small = self.small_start(conversation).await;
        if small.state.is_some() && small.levers.intent {
            // Plain words first; the model is asked only when they do not say (and it can
            // answer under a schema).
            if let Some(intent) = small::Intent::from_words(utterance) {
                small.intent = Some(intent);
                conversation.log("intent", json!({"intent": intent, "from": "words"}));
            } else if small.constrained {
                let (intent, usage) = self.classify(conversation, &cancel).await;
                small.intent = intent;
                out.usage.add(usage);
            }
        }
        if small.levers.planning
            && small.state == Some(Stage::NoPlot)
            && matches!(
                small.intent,
                Some(small::Intent::DescribePlot | small::Intent::ListTools)
            )
            && self.names_a_plot(utterance)
        {
            // "show me the Alpha plot from 2 March" with nothing open: the words name a plot
            // of the catalogue, so the request is to find and open it.
            small.intent = Some(small::Intent::FindPlots);
            conversation.log(
                "intent",
                json!({"intent": small.intent, "from": "catalogue"}),
            );
        }
        out.stop = loop {
            if cancel.is_cancelled() {
                break Stop::Cancelled;
            }
            if out.turns >= self.config.max_turns {
                break Stop::TurnLimit;
            }
            out.turns += 1;
            if out.turns == 1
                && self.config.levers.grounding
                && let Some(ask) = self.invented_tool(utterance)
            {
                let text = ask.to_string();
                out.ask = Some(ask);
                // Refused in code, before any model is asked: a tool that does not exist is
                // never replaced by another one (a small model runs whatever it is offered).
                conversation.log("grounding", json!({"inventedTool": text}));
                conversation
                    .messages
                    .push(Message::assistant(text.clone(), Vec::new()));
                emit(&events, AgentEvent::Final { text: text.clone() });
                out.final_text = Some(text);
                break Stop::Final;
            }
            let t = Instant::now();
            let turn = self.small_turn(&mut small, conversation, out.calls.len());
            // A constrained turn streams JSON (`{"name": …}` or `{"reply": …}`), not words for
            // the analyst: nothing of it is shown as it arrives; a reply reaches the surface as
            // the final answer once the JSON is read.
            let constrained = turn.as_ref().is_some_and(|t| t.response_format.is_some());
            let planned = if small.levers.planning {
                self.planned_step(&mut small, turn.as_ref(), utterance, &out.calls, &versions)
            } else {
                None
            };
            let was_planned = planned.is_some();
            let reply = if let Some(step) = planned {
                // Settled in code: no model request.
                out.turns -= 1;
                conversation.log(
                    "planned",
                    json!({"text": step.text, "toolCalls": step.tool_calls}),
                );
                step
            } else {
                let on_delta = |d: &str| {
                    if !constrained {
                        emit(&events, AgentEvent::TextDelta { text: d.to_owned() });
                    }
                };
                let request = match &turn {
                    None => ChatRequest {
                        messages: &conversation.messages,
                        tools: &self.tools,
                        response_format: None,
                    },
                    Some(t) => ChatRequest {
                        messages: &t.messages,
                        tools: &t.tools,
                        response_format: t.response_format.as_ref(),
                    },
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
                reply
            };
            let mut reply = reply;
            let mut read_constrained = was_planned;
            if constrained && !was_planned && reply.tool_calls.is_empty() {
                // Decoded under the step schema: one call or one reply, as JSON.
                match constrain::read_reply(&reply.text) {
                    Some(Step::Call { name, arguments }) => {
                        reply.tool_calls = vec![ToolCallRequest {
                            id: format!("schema-call-{}", conversation.messages.len()),
                            name,
                            arguments: arguments.to_string(),
                        }];
                        reply.text.clear();
                        read_constrained = true;
                    }
                    Some(Step::Reply(text)) => {
                        reply.text = text;
                        read_constrained = true;
                    }
                    None => {}
                }
            }
            if reply.tool_calls.is_empty() && self.config.levers.parsing && !read_constrained {
                // Small models write their call into the text (a ```json fence, a <tool_call>
                // tag, …) instead of `tool_calls`; a reply with native calls is never re-read.
                let offered: Vec<String> = match &turn {
                    Some(t) => t.offered.clone(),
                    None => self.tools.iter().map(|t| t.name.clone()).collect(),
                };
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
                if self.config.levers.grounding {
                    self.ground_reply(
                        conversation,
                        utterance,
                        &out.calls,
                        &versions,
                        &mut reply.text,
                    );
                }
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
            let mut target_question_asked: Option<crate::Ask> = None;
            for call in &reply.tool_calls {
                let t = Instant::now();
                let raw = call.arguments.trim();
                let parsed: Result<Value, _> = if raw.is_empty() {
                    Ok(json!({}))
                } else {
                    serde_json::from_str(raw)
                };
                let parsed = parsed.map(|v| {
                    if !small.levers.arguments {
                        return v;
                    }
                    let repaired = if call.name == toolgate_plot::debrief::SEARCH {
                        small::repair_search(&v, utterance)
                    } else if call.name == toolgate_plot::debrief::RUN_TOOL {
                        self.repair_run(&v, utterance)
                    } else {
                        return v;
                    };
                    if repaired != v {
                        conversation.log(
                            "repaired",
                            json!({"tool": call.name, "from": v, "to": repaired}),
                        );
                    }
                    repaired
                });
                // The small profile settles the targets in code: a run whose request names
                // nothing resolvable (or names several at once) is asked about, not dispatched.
                let target_question = match &parsed {
                    Ok(v)
                        if small.levers.arguments
                            && call.name == toolgate_plot::debrief::RUN_TOOL =>
                    {
                        self.target_question(v, utterance)
                    }
                    _ => None,
                };
                if target_question.is_some() {
                    target_question_asked.clone_from(&target_question);
                }
                let (input, reply, status) = match parsed {
                    Ok(input) if target_question.is_some() => (
                        input,
                        Reply::refused(Refusal::new(
                            RefusalKind::Target,
                            target_question
                                .as_ref()
                                .map(ToString::to_string)
                                .unwrap_or_default(),
                        )),
                        CallStatus::TargetAsked,
                    ),
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
                    Ok(input) if small.offer_refuses(&turn, &call.name) => {
                        corrections += 1;
                        let msg = small::not_offered_message(
                            &call.name,
                            turn.as_ref().map_or(&[][..], |t| &t.offered[..]),
                        );
                        (
                            input,
                            Reply::refused(Refusal::new(RefusalKind::UnknownTool, msg)),
                            CallStatus::NotOffered,
                        )
                    }
                    Ok(input) if small.is_repeat(&call.name, &input) => (
                        input,
                        Reply::refused(Refusal::new(
                            RefusalKind::InvalidParameters,
                            small::repeated_call_message(&call.name),
                        )),
                        CallStatus::Repeated,
                    ),
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
                            Err(refusal) => {
                                corrections += 1;
                                (input, Reply::refused(refusal), CallStatus::UnknownTool)
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
                let mut shown =
                    self.small_after_call(&mut small, call, &input, status, outcome, &result);
                if small.levers.planning
                    && call.name == toolgate_plot::debrief::LIST_TOOLS
                    && status == CallStatus::Dispatched
                {
                    // The model is offered only the few tools the request is about; their
                    // lines are what it needs to fill the call.
                    let few: Vec<String> = self
                        .choices(utterance, &small.failed)
                        .tools
                        .into_iter()
                        .map(|(id, _)| id)
                        .collect();
                    if let Some(listing) = small::compact_listing_of(&result, &few) {
                        shown = listing;
                    }
                }
                conversation.messages.push(Message::tool(call, &shown));
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
            if let Some(question) = out
                .calls
                .iter()
                .rev()
                .find(|c| c.status == CallStatus::TargetAsked)
                .map(|c| c.result.clone())
            {
                // The question goes to the analyst, as the answer of this utterance.
                conversation
                    .messages
                    .push(Message::assistant(question.clone(), Vec::new()));
                emit(
                    &events,
                    AgentEvent::Final {
                        text: question.clone(),
                    },
                );
                out.final_text = Some(question);
                out.ask = target_question_asked.take();
                break Stop::Final;
            }
            if corrections > self.config.max_corrections {
                break Stop::TooManyCorrections;
            }
        };
        conversation.stage = small.state.map(|s| (s, self.active_plot()));
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

    /// The targets of the active plot a run call may name, the tool's selection requirements
    /// (any; tracks only), and whether something is selected.
    fn run_targets(
        &self,
        tool: &str,
    ) -> Option<(Vec<crate::refs::Candidate>, bool, bool, Vec<String>)> {
        let spec = self
            .debrief
            .registry()
            .specs()
            .find(|s| s.id == tool)?
            .clone();
        let kinds: Vec<String> = spec
            .annotations
            .get("debrief:selectionRequirements")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|r| r["kind"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        let session = self.debrief.session();
        let plot = session.active().ok()?;
        let candidates = crate::refs::candidates(plot.doc.features(), &plot.entry.platforms);
        let selected = plot.selected_ids();
        let tracks_only = !kinds.is_empty() && kinds.iter().all(|k| k == "TRACK");
        Some((candidates, !kinds.is_empty(), tracks_only, selected))
    }

    /// The question to ask instead of running `input` (a `debrief_runTool` call), when the
    /// request does not settle its targets ([`crate::refs::resolve`]): nothing named or
    /// selected, or a phrase that fits several features. `None`: run it.
    fn target_question(&self, input: &Value, utterance: &str) -> Option<crate::Ask> {
        if let Some(other) = self.other_plot_named(utterance) {
            return Some(other);
        }
        let tool = input.get("toolId").and_then(Value::as_str)?;
        let (candidates, needs_targets, tracks_only, selected) = self.run_targets(tool)?;
        if needs_targets {
            let refs =
                crate::refs::resolve_with_selection(utterance, &candidates, &selected, tracks_only);
            if let Some(ask) = crate::refs::question(&refs, &candidates, tracks_only) {
                return Some(ask);
            }
        }
        self.window_question(tool, utterance)
    }

    /// The request's words without the active plot's feature names and platform ids ("SSK-RED"
    /// names a track, not a colour), and the plot's time span (its tracks' first and last
    /// times) that clock times are read against.
    fn words_and_span(&self, utterance: &str) -> (String, Option<values::Span>) {
        let session = self.debrief.session();
        let (names, span) = session.active().map_or((Vec::new(), None), |p| {
            let features = p.doc.features();
            let mut names = toolgate_plot::debrief::feature_names(features);
            let mut span: Option<values::Span> = None;
            for f in features {
                let props = &f["properties"];
                if let Some(id) = props["platform_id"].as_str() {
                    names.push(id.to_owned());
                }
                let time = |k: &str| {
                    props[k]
                        .as_str()
                        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
                        .map(|t| t.with_timezone(&Utc))
                };
                if let (Some(a), Some(b)) = (time("start_time"), time("end_time")) {
                    span = Some(span.map_or((a, b), |(x, y)| (x.min(a), y.max(b))));
                }
            }
            (names, span)
        });
        drop(session);
        (crate::rank::without_names(utterance, &names), span)
    }

    /// A run of a tool that needs a time window the words do not state: asked about, never run
    /// with the model's guess ([`values::window_unstated`]).
    fn window_question(&self, tool: &str, utterance: &str) -> Option<crate::Ask> {
        let spec = self.debrief.registry().specs().find(|s| s.id == tool)?;
        let (words, span) = self.words_and_span(utterance);
        values::window_unstated(&spec.input_schema, &words, span?).then(|| {
            crate::Ask::WhichWindow {
                tool: spec.title.clone(),
            }
        })
    }

    /// A run call's parameters filled from what the analyst said ([`values::repair_run`]): the
    /// colour, the time window (read against the active plot's time span) and speed bounds,
    /// for the parameters the named tool declares. Feature names are taken out of the words
    /// first ("SSK-RED" names a track, not a colour).
    fn repair_run(&self, input: &Value, utterance: &str) -> Value {
        let Some(tool) = input.get("toolId").and_then(Value::as_str) else {
            return input.clone();
        };
        let Some(schema) = self
            .debrief
            .registry()
            .specs()
            .find(|s| s.id == tool)
            .map(|s| s.input_schema.clone())
        else {
            return input.clone();
        };
        let (words, span) = self.words_and_span(utterance);
        let ctx = values::RunContext { span };
        let mut out = values::repair_run(input, &schema, &words, &ctx);
        // Optional parameters the words do not give are left to the tool's defaults.
        let filled: Vec<String> = values::repair_run(&json!({"params": {}}), &schema, &words, &ctx)
            ["params"]
            .as_object()
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default();
        out = values::ground_params(&out, &schema, utterance, &filled);
        // The targets the request names, resolved in code, replace the model's choice.
        if let Some((candidates, true, tracks_only, selected)) = self.run_targets(tool)
            && let Some(obj) = out.as_object_mut()
        {
            match crate::refs::resolve_with_selection(
                utterance,
                &candidates,
                &selected,
                tracks_only,
            ) {
                crate::refs::Refs::Named(names) => {
                    obj.insert("featureNames".into(), json!(names));
                    obj.remove("scope");
                }
                crate::refs::Refs::Selection => {
                    obj.insert("scope".into(), json!("selection"));
                    obj.remove("featureNames");
                }
                crate::refs::Refs::Ambiguous { .. } | crate::refs::Refs::Nothing => {}
            }
        }
        out
    }

    /// The answer to a request that names a tool the registry does not have
    /// ([`crate::rank::invented_tool`]): that it was not run, and the nearest real tools.
    fn invented_tool(&self, utterance: &str) -> Option<crate::Ask> {
        let specs: Vec<(String, String, String)> = self
            .debrief
            .registry()
            .specs()
            .map(|s| (s.id.clone(), s.title.clone(), s.description.clone()))
            .collect();
        let names: Vec<String> = {
            let session = self.debrief.session();
            session.active().map_or_else(
                |_| Vec::new(),
                |p| {
                    let features = p.doc.features();
                    let mut n = toolgate_plot::debrief::feature_names(features);
                    n.extend(features.iter().filter_map(|f| {
                        f.pointer("/properties/platform_id")
                            .and_then(Value::as_str)
                            .map(str::to_owned)
                    }));
                    n
                },
            )
        };
        let invented = crate::rank::invented_tool(utterance, &specs, &names)?;
        let ranker = crate::rank::ToolRanker::new(self.debrief.registry().specs());
        let nearest = ranker.top_for(&invented.replace('-', " "), &names, 3);
        let nearest = if nearest.is_empty() {
            ranker.top_for(utterance, &names, 3)
        } else {
            nearest
        };
        Some(crate::Ask::InventedTool {
            id: invented,
            nearest,
        })
    }

    /// The step the request already settles, made in code instead of a model request
    /// (planning lever): the only step offered when it has nothing to choose (a summary, a
    /// listing), a run whose tool and required parameters the words settle
    /// ([`Self::settled_run`]), and the answer after a run, composed from its result. `None`:
    /// the model chooses.
    fn planned_step(
        &self,
        run: &mut SmallRun,
        turn: Option<&SmallTurn>,
        utterance: &str,
        calls: &[CallRecord],
        versions: &[(String, u64)],
    ) -> Option<crate::ChatResponse> {
        use toolgate_plot::debrief::{LIST_TOOLS, RUN_TOOL, SUMMARIZE};
        let turn = turn?;
        let stage = run.state?;
        let call = |name: &str, arguments: Value| crate::ChatResponse {
            text: String::new(),
            tool_calls: vec![ToolCallRequest {
                id: format!("planned-call-{}", calls.len()),
                name: name.to_owned(),
                arguments: arguments.to_string(),
            }],
            usage: None,
            model: "planned".to_owned(),
            finish_reason: Some("planned".to_owned()),
        };
        if !turn.reply
            && let [only] = turn.offered.as_slice()
        {
            for tool in [SUMMARIZE, LIST_TOOLS] {
                if only == tool && !run.planned.contains(&tool) {
                    run.planned.push(tool);
                    let selection_only = tool == SUMMARIZE
                        && self.has_selection()
                        && crate::refs::points_at_selection(utterance);
                    let args = if selection_only {
                        json!({"selectionOnly": true})
                    } else {
                        json!({})
                    };
                    return Some(call(tool, args));
                }
            }
        }
        if run.intent == Some(small::Intent::RunTool)
            && turn.offered.iter().any(|t| t == RUN_TOOL)
            && !run.planned.contains(&RUN_TOOL)
            && let Some(input) = self.settled_run(utterance, &run.failed)
        {
            run.planned.push(RUN_TOOL);
            return Some(call(RUN_TOOL, input));
        }
        // A description: the summary told in a sentence from its own names and numbers.
        if run.intent == Some(small::Intent::DescribePlot)
            && turn.reply
            && run.levers.grounding
            && let Some(last) = calls.last()
            && last.tool == SUMMARIZE
            && last.status == CallStatus::Dispatched
            && let Some(text) = grounded::describe(&last.result)
        {
            return Some(planned_reply(text));
        }
        // Asked to open a plot and the search found several: the analyst's own words that the
        // catalogue knows may single one out ("the prosecution day of Alpha").
        if stage == Stage::Searched
            && !run.planned.contains(&toolgate_plot::debrief::SEARCH)
            && let Some(last) = calls.last()
            && last.tool == toolgate_plot::debrief::SEARCH
            && last.status == CallStatus::Dispatched
            && last.input.get("open").and_then(Value::as_bool) == Some(true)
            && let Some(input) = self.refine_search(&last.input, utterance)
        {
            run.planned.push(toolgate_plot::debrief::SEARCH);
            return Some(call(toolgate_plot::debrief::SEARCH, input));
        }
        // A search that opened a plot: say which.
        if run.intent == Some(small::Intent::FindPlots)
            && turn.reply
            && run.levers.grounding
            && let Some(last) = calls.last()
            && last.tool == toolgate_plot::debrief::SEARCH
            && last.status == CallStatus::Dispatched
            && last.result.contains("\"opened\"")
        {
            return Some(planned_reply(grounded::plain_words(&last.result)));
        }
        // A search that opened nothing: what it found (or the near matches it suggests) is the
        // answer; a second search with the model's same words finds the same.
        let searched = stage == Stage::Searched
            && calls.last().is_some_and(|c| {
                c.tool == toolgate_plot::debrief::SEARCH && c.status == CallStatus::Dispatched
            });
        // Asked about, or to change, a plot while none is open: the session's own answer ("No
        // plot is open … search first") is the reply.
        let no_plot = stage == Stage::NoPlot
            && calls.last().is_some_and(|c| {
                c.tool != toolgate_plot::debrief::SEARCH
                    && c.status == CallStatus::Dispatched
                    && c.outcome != toolgate_core::Status::Ok
            });
        if (searched || no_plot || (stage == Stage::Ran && turn.offered.is_empty() && turn.reply))
            && run.levers.grounding
        {
            let applied = self.plot_versions() != versions;
            let dispatched: Vec<grounded::TurnCall<'_>> = calls
                .iter()
                .filter(|c| c.status == CallStatus::Dispatched)
                .map(|c| grounded::TurnCall {
                    tool: &c.tool,
                    status: c.outcome,
                    result: &c.result,
                })
                .collect();
            return Some(planned_reply(grounded::grounded_reply(
                &dispatched,
                applied,
            )));
        }
        None
    }

    /// A `debrief_runTool` call the request settles by itself: exactly one tool fits (named, or
    /// the only one taking the values the analyst stated), every parameter it requires is filled
    /// from the words ([`values::repair_run`]), and the features named are resolved
    /// ([`crate::refs::resolve`]; a request that names nothing or something ambiguous is then
    /// asked about by the target check, as a model's call would be).
    fn settled_run(&self, utterance: &str, excluded: &[String]) -> Option<Value> {
        let choices = self.choices(utterance, excluded);
        let [(id, schema)] = choices.tools.as_slice() else {
            return None;
        };
        let mut input = self.repair_run(&json!({"toolId": id, "params": {}}), utterance);
        let filled = input
            .get("params")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let required_filled = schema
            .get("required")
            .and_then(Value::as_array)
            .is_none_or(|r| {
                r.iter()
                    .filter_map(Value::as_str)
                    .all(|name| filled.contains_key(name))
            });
        if !required_filled {
            return None;
        }
        if let Some((candidates, true, tracks_only, selected)) = self.run_targets(id)
            && let crate::refs::Refs::Named(names) =
                crate::refs::resolve_with_selection(utterance, &candidates, &selected, tracks_only)
            && let Some(o) = input.as_object_mut()
        {
            o.insert("featureNames".to_owned(), json!(names));
        }
        Some(input)
    }

    /// Whether the request names a plot of the catalogue: a distinctive word of some plot's
    /// title (not "exercise", "day", "plot"), or an exercise day with a title word.
    fn names_a_plot(&self, utterance: &str) -> bool {
        const GENERIC: [&str; 14] = [
            "exercise", "day", "plot", "plots", "track", "tracks", "the", "and", "of", "for",
            "with", "this", "that", "all",
        ];
        let session = self.debrief.session();
        let Ok(found) = toolgate_plot::search::search(
            session.stores(),
            &toolgate_plot::search::SearchQuery {
                limit: Some(10_000),
                ..Default::default()
            },
        ) else {
            return false;
        };
        let said: Vec<String> = utterance
            .to_lowercase()
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.len() >= 3 && !GENERIC.contains(w))
            .map(str::to_owned)
            .collect();
        found.matches.iter().any(|m| {
            m.title
                .to_lowercase()
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| w.len() >= 3 && !GENERIC.contains(w))
                .any(|w| said.iter().any(|s| s == w))
        })
    }

    /// A search `input` that matched several plots, narrowed by one more word of the analyst's
    /// own that the catalogue knows, when that leaves exactly one: the input with that word
    /// added (and `open`). Each word is one search of the session's stores; at most eight.
    fn refine_search(&self, input: &Value, utterance: &str) -> Option<Value> {
        const SKIP: [&str; 16] = [
            "show", "give", "bring", "screen", "want", "need", "please", "could", "would", "this",
            "that", "with", "from", "plot", "plots", "load",
        ];
        let text = input
            .get("text")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let have = text.to_lowercase();
        let query = |t: String| toolgate_plot::search::SearchQuery {
            text: Some(t),
            limit: Some(2),
            ..input
                .as_object()
                .map(toolgate_plot::search::SearchQuery::from_arguments)
                .unwrap_or_default()
        };
        let lower = utterance.to_lowercase();
        let words: Vec<&str> = lower
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.len() >= 4 && !SKIP.contains(w) && !have.contains(w))
            .take(8)
            .collect();
        let session = self.debrief.session();
        for w in words {
            let t = format!("{text} {w}").trim().to_owned();
            if let Ok(r) = toolgate_plot::search::search(session.stores(), &query(t.clone()))
                && r.total == 1
            {
                let mut out = input.clone();
                if let Some(o) = out.as_object_mut() {
                    o.insert("text".into(), Value::String(t));
                    o.insert("open".into(), Value::Bool(true));
                }
                return Some(out);
            }
        }
        None
    }

    /// The request names a plot of the catalogue other than the active one — its exercise day
    /// ("the contact on day 2" with Day 1 active) or a word only that plot's title has — so a
    /// run would act on the wrong plot: asked about instead ([`crate::Ask::OtherPlot`]).
    fn other_plot_named(&self, utterance: &str) -> Option<crate::Ask> {
        const GENERIC: [&str; 6] = ["exercise", "day", "plot", "track", "tracks", "the"];
        let words = |t: &str| -> Vec<String> {
            t.to_lowercase()
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| w.len() >= 3 && !GENERIC.contains(w))
                .map(str::to_owned)
                .collect()
        };
        let session = self.debrief.session();
        let active = session.active().ok()?;
        let active_title = active.title.clone();
        let active_day = values::day_number(&active_title);
        let said = words(&crate::rank::without_names(
            utterance,
            &toolgate_plot::debrief::feature_names(active.doc.features()),
        ));
        let said_day = values::day_number(utterance);
        let found = toolgate_plot::search::search(
            session.stores(),
            &toolgate_plot::search::SearchQuery {
                limit: Some(10_000),
                ..Default::default()
            },
        )
        .ok()?;
        let active_words = words(&active_title);
        let named = found.matches.iter().find(|m| {
            if m.plot_id == active.id || m.title == active_title {
                return false;
            }
            let other_day = values::day_number(&m.title);
            let by_day = said_day.is_some()
                && said_day != active_day
                && other_day == said_day
                && words(&m.title)
                    .iter()
                    .all(|w| active_words.contains(w) || said.contains(w));
            let own: Vec<String> = words(&m.title)
                .into_iter()
                .filter(|w| !active_words.contains(w))
                .collect();
            let by_word = !own.is_empty() && own.iter().any(|w| said.contains(w));
            by_day || by_word
        })?;
        let open = session.open_plots().iter().any(|p| p.id == named.plot_id);
        Some(crate::Ask::OtherPlot {
            id: named.plot_id.clone(),
            named: named.title.clone(),
            active: active_title,
            open,
        })
    }

    fn plot_versions(&self) -> Vec<(String, u64)> {
        self.debrief
            .session()
            .open_plots()
            .iter()
            .map(|p| (p.id.clone(), p.doc.version()))
            .collect()
    }

    /// The small profile's last guard: a final reply that states a number no tool of this
    /// utterance returned, says something changed when nothing was applied, or repeats one of
    /// the loop's own guard messages is replaced by a sentence composed from the results.
    fn ground_reply(
        &self,
        conversation: &mut Conversation,
        utterance: &str,
        calls: &[CallRecord],
        versions: &[(String, u64)],
        text: &mut String,
    ) {
        let applied = self.plot_versions() != versions;
        let dispatched: Vec<&CallRecord> = calls
            .iter()
            .filter(|c| c.status == CallStatus::Dispatched)
            .collect();
        let turn: Vec<grounded::TurnCall<'_>> = dispatched
            .iter()
            .map(|c| grounded::TurnCall {
                tool: &c.tool,
                status: c.outcome,
                result: &c.result,
            })
            .collect();
        let mut claims: Vec<String> = grounded::false_claims(text, utterance, &turn, applied)
            .iter()
            .map(ToString::to_string)
            .collect();
        // The loop's own corrections (repeat guard, not offered, malformed) are for the model.
        let internal = calls.iter().any(|c| {
            c.status != CallStatus::Dispatched
                && c.result
                    .get(..c.result.len().min(60))
                    .is_some_and(|head| !head.is_empty() && text.contains(head))
        });
        if internal {
            claims.push("repeats an internal guard message".to_owned());
        }
        if claims.is_empty() {
            return;
        }
        let replaced = grounded::grounded_reply(&turn, applied);
        conversation.log(
            "grounding",
            json!({"reply": text.as_str(), "claims": claims, "replacedBy": replaced}),
        );
        *text = replaced;
    }

    fn has_selection(&self) -> bool {
        self.debrief
            .session()
            .active()
            .is_ok_and(|p| !p.selected_ids().is_empty())
    }

    fn active_plot(&self) -> Option<String> {
        self.debrief.session().active_id().map(str::to_owned)
    }

    /// What the live session contributes to a step schema: the active plot's feature names,
    /// whether something is selected, the open plots, the catalogue's years, the registry's
    /// tools.
    /// What a constrained turn may choose from; `excluded`: tools that already failed in this
    /// utterance (offered again, a small model runs them again).
    fn choices(&self, utterance: &str, excluded: &[String]) -> Choices {
        let session = self.debrief.session();
        let (mut feature_names, has_selection) = session
            .active()
            .map(|p| {
                (
                    toolgate_plot::debrief::feature_names(p.doc.features()),
                    !p.selected_ids().is_empty(),
                )
            })
            .unwrap_or_default();
        feature_names.sort();
        feature_names.dedup();
        // What a request may call the features by: names and platform ids (kept out of the
        // tool ranking below; a name says what to act on, not which tool).
        let mut references = feature_names.clone();
        if let Ok(p) = session.active() {
            references.extend(p.doc.features().iter().filter_map(|f| {
                f.pointer("/properties/platform_id")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            }));
        }
        // The kinds of the features the request is about (named, or the selection it points
        // at); `None` when it settles none (then every tool stays on offer).
        let target_kinds: Option<Vec<String>> = session.active().ok().and_then(|p| {
            let features = p.doc.features();
            let candidates = crate::refs::candidates(features, &p.entry.platforms);
            let selected = p.selected_ids();
            let ids: Vec<String> =
                match crate::refs::resolve(utterance, &candidates, !selected.is_empty(), false) {
                    crate::refs::Refs::Named(names) => candidates
                        .iter()
                        .filter(|c| names.contains(&c.name))
                        .map(|c| c.id.clone())
                        .collect(),
                    crate::refs::Refs::Selection => {
                        selected.iter().map(ToString::to_string).collect()
                    }
                    _ => return None,
                };
            let kinds: Vec<String> = features
                .iter()
                .filter(|f| {
                    f.get("id")
                        .and_then(Value::as_str)
                        .is_some_and(|id| ids.iter().any(|i| i == id))
                })
                .map(|f| toolgate_plot::model::kind(f).to_ascii_uppercase())
                .collect();
            (!kinds.is_empty()).then_some(kinds)
        });
        let open_plots = session.open_plots().iter().map(|p| p.id.clone()).collect();
        let mut years: Vec<i32> = toolgate_plot::search::search(
            session.stores(),
            &toolgate_plot::search::SearchQuery {
                limit: Some(10_000),
                ..Default::default()
            },
        )
        .map(|r| {
            r.matches
                .iter()
                .filter_map(|m| m.time_span.as_ref())
                .flat_map(|t| {
                    let y = |s: &str| s.get(..4).and_then(|y| y.parse::<i32>().ok());
                    match (y(&t.start), y(&t.end)) {
                        (Some(a), Some(b)) if a <= b && b - a < 50 => (a..=b).collect(),
                        (a, b) => a.into_iter().chain(b).collect::<Vec<_>>(),
                    }
                })
                .collect()
        })
        .unwrap_or_default();
        drop(session);
        years.sort_unstable();
        years.dedup();
        let mut tools: Vec<(String, Value)> = self
            .debrief
            .registry()
            .specs()
            .map(|s| (s.id.clone(), s.input_schema.clone()))
            .collect();
        tools.retain(|(id, _)| !excluded.contains(id));
        let ids: Vec<&str> = tools.iter().map(|(id, _)| id.as_str()).collect();
        let named = constrain::tools_named(utterance, &ids);
        if !named.is_empty() {
            tools.retain(|(id, _)| named.contains(id));
        } else {
            // No tool named: offer the few the request is about, best first, instead of all
            // seventy (a small model runs the first of a long list). Nothing ranked (no word
            // in common with any tool): the full list stays, as before.
            let ranker = crate::rank::ToolRanker::new(self.debrief.registry().specs());
            // Values the request states that only some tools take (a colour, speed bounds, a
            // time window) narrow the offer to those tools, best ranked first.
            let words = crate::rank::without_names(utterance, &references);
            let needed = values::parameters_for(&words);
            let fitting: Vec<String> = if needed.is_empty() {
                Vec::new()
            } else {
                let ranked: Vec<String> = ranker.rank(&words).into_iter().map(|r| r.id).collect();
                let mut fit: Vec<&(String, Value)> = tools
                    .iter()
                    .filter(|(_, schema)| values::takes_any(schema, &needed))
                    .collect();
                fit.sort_by_key(|(id, _)| {
                    ranked.iter().position(|r| r == id).unwrap_or(usize::MAX)
                });
                fit.into_iter().map(|(id, _)| id.clone()).collect()
            };
            // Grounded in the registry: a question about a quantity is answered by a tool that
            // computes, never by one that edits; a tool the request's targets cannot satisfy
            // (two tracks needed, one named) is not offered.
            let question = small::asks_quantity(utterance);
            let kinds = &target_kinds;
            let registry = self.debrief.registry();
            let fits = |id: &str| {
                registry.specs().find(|s| s.id == id).is_none_or(|s| {
                    (!question || !s.effect().is_mutating())
                        && kinds
                            .as_ref()
                            .is_none_or(|k| toolgate_plot::debrief::applies_to(s, k))
                })
            };
            let top: Vec<String> = if fitting.is_empty() {
                ranker
                    .top_for(utterance, &references, usize::MAX)
                    .into_iter()
                    .filter(|id| fits(id))
                    .take(RANKED_TOOLS)
                    .collect()
            } else {
                fitting
                    .into_iter()
                    .filter(|id| fits(id))
                    .take(RANKED_TOOLS)
                    .collect()
            };
            if !top.is_empty() {
                tools = top
                    .iter()
                    .filter_map(|id| tools.iter().find(|(t, _)| t == id).cloned())
                    .collect();
            }
        }
        let settled_params: Vec<String> = if self.config.levers.arguments {
            values::parameters_for(&crate::rank::without_names(utterance, &references))
                .iter()
                .flat_map(|g| g.iter().map(|p| (*p).to_owned()))
                .collect()
        } else {
            Vec::new()
        };
        Choices {
            feature_names,
            has_selection,
            open_plots,
            years,
            dates: constrain::names_a_date(utterance),
            tools,
            settled_targets: self.config.levers.arguments && target_kinds.is_some(),
            settled_params,
        }
    }

    /// The small-profile state for one utterance (all off under [`Levers::LARGE`], and then
    /// no request is sent that the large profile would not send).
    async fn small_start(&self, conversation: &Conversation) -> SmallRun {
        let levers = self.config.levers;
        let mut run = SmallRun {
            levers,
            state: None,
            constrained: false,
            budget: None,
            intent: None,
            answered: Vec::new(),
            blocked: Vec::new(),
            run_tried: false,
            active: self.active_plot(),
            planned: Vec::new(),
            failed: Vec::new(),
        };
        if !run.reshapes() {
            return run;
        }
        let ask = levers.constraints || (levers.compaction && self.config.context.is_none());
        let info = if ask {
            self.client.server_info().await
        } else {
            constrain::ServerInfo::default()
        };
        run.constrained = levers.constraints && info.json_schema();
        if levers.compaction {
            run.budget = self.config.context.or(info.n_ctx).map(small::budget_for);
        }
        if levers.state_machine {
            let (previous, plot) = match &conversation.stage {
                Some((s, p)) => (Some(*s), p.clone()),
                None => (None, None),
            };
            run.state = Some(Stage::begin(
                previous,
                run.active.is_some(),
                plot != run.active,
            ));
        }
        run
    }

    /// One constrained classification request: what the utterance asks for. `None` when the
    /// reply cannot be read or the request failed (the state machine then runs unnarrowed).
    async fn classify(
        &self,
        conversation: &mut Conversation,
        cancel: &CancelToken,
    ) -> (Option<small::Intent>, Usage) {
        let mut messages = constrained_view(&conversation.messages);
        messages.push(Message::user(small::Intent::QUESTION));
        let format = constrain::response_format(&small::Intent::schema());
        let request = ChatRequest {
            messages: &messages,
            tools: &[],
            response_format: Some(&format),
        };
        let t = Instant::now();
        let reply = tokio::select! {
            r = self.client.complete(&request, &|_| {}) => r.ok(),
            () = cancel.cancelled() => None,
        };
        let intent = reply.as_ref().and_then(|r| {
            serde_json::from_str::<Value>(r.text.trim())
                .ok()
                .and_then(|v| v["intent"].as_str().and_then(small::Intent::parse))
        });
        let usage = reply.as_ref().and_then(|r| r.usage).unwrap_or_default();
        conversation.log(
            "intent",
            json!({"intent": intent, "latencyMs": ms(t), "promptTokens": usage.prompt_tokens,
                "completionTokens": usage.completion_tokens}),
        );
        (intent, usage)
    }

    /// The request of one small-profile turn: the offered tools (or none and a step schema),
    /// the messages fitted to the budget. `None`: send the conversation as it is.
    fn small_turn(
        &self,
        run: &mut SmallRun,
        conversation: &mut Conversation,
        calls: usize,
    ) -> Option<SmallTurn> {
        if !run.reshapes() {
            return None;
        }
        let offer = match run.state {
            Some(s) => {
                let o = s.offer(calls, self.has_selection());
                let o = match run.intent {
                    // After a run was tried, an answer may say how it went.
                    Some(small::Intent::RunTool) if run.run_tried => o,
                    Some(i) => i.narrow(s, calls, o),
                    None => o,
                };
                o.without(&run.blocked)
            }
            None => Offer {
                tools: small::ALL_TOOLS.to_vec(),
                reply: !run.constrained || calls > 0,
            },
        };
        run.blocked.clear();
        let offered: Vec<String> = offer.tools.iter().map(|t| (*t).to_owned()).collect();
        let (mut messages, tools, response_format) = if run.constrained {
            let utterance = conversation
                .messages
                .iter()
                .rev()
                .find(|m| m.role == Role::User)
                .map_or("", |m| m.content.as_str());
            let schema = constrain::call_schema(&offer, &self.choices(utterance, &run.failed));
            (
                constrained_view(&conversation.messages),
                Vec::new(),
                Some(constrain::response_format(&schema)),
            )
        } else if run.state.is_some() {
            let tools: Vec<ToolDef> = self
                .tools
                .iter()
                .filter(|t| offered.contains(&t.name))
                .cloned()
                .collect();
            (conversation.messages.clone(), tools, None)
        } else {
            (conversation.messages.clone(), self.tools.clone(), None)
        };
        let mut dropped = 0usize;
        if let Some(budget) = run.budget {
            let tools_cost: usize = tools
                .iter()
                .map(|t| {
                    self.counter.count(
                        &json!({"name": t.name, "description": t.description, "parameters": t.parameters})
                            .to_string(),
                    )
                })
                .sum();
            let before = messages.len();
            let fitted =
                small::fit_to_budget(&self.counter, &messages, budget.saturating_sub(tools_cost));
            dropped = before - fitted.len()
                + fitted
                    .iter()
                    .filter(|m| m.content == small::DROPPED)
                    .count();
            messages = fitted;
        }
        conversation.log(
            "offer",
            json!({"stage": run.state, "intent": run.intent, "tools": offered, "reply": offer.reply,
                "constrained": run.constrained, "budget": run.budget, "dropped": dropped,
                "promptTokens": small::messages_tokens(&self.counter, &messages)}),
        );
        Some(SmallTurn {
            messages,
            tools,
            response_format,
            offered,
            reply: offer.reply,
        })
    }

    /// After a call ended: the stage moves, the answer is remembered for the repeat guard, and
    /// the text the model is shown comes back (compact under the compaction lever).
    fn small_after_call(
        &self,
        run: &mut SmallRun,
        call: &ToolCallRequest,
        input: &Value,
        status: CallStatus,
        outcome: toolgate_core::Status,
        result: &str,
    ) -> String {
        if run.levers.state_machine {
            match status {
                CallStatus::Repeated => run.blocked.push(call.name.clone()),
                CallStatus::Dispatched => {
                    let ok = outcome == toolgate_core::Status::Ok;
                    // A failed run is remembered too: the identical call again would fail
                    // again (small models retry it until the turn limit).
                    if small::cacheable(&call.name)
                        || (!ok && call.name == toolgate_plot::debrief::RUN_TOOL)
                    {
                        run.answered.push((call.name.clone(), input.clone()));
                    }
                    if call.name == toolgate_plot::debrief::RUN_TOOL {
                        run.run_tried = true;
                        if run.levers.planning
                            && outcome == toolgate_core::Status::Failed
                            && let Some(id) = input.get("toolId").and_then(Value::as_str)
                        {
                            run.failed.push(id.to_owned());
                        }
                    }
                    if ok && call.name == toolgate_plot::debrief::RUN_TOOL {
                        // An edit may change what a summary or listing says.
                        run.answered.clear();
                    }
                    let active = self.active_plot();
                    let changed = active != run.active;
                    run.state = run
                        .state
                        .map(|s| s.after(&call.name, ok, active.is_some(), changed));
                    run.active = active;
                }
                _ => {}
            }
        }
        if run.levers.compaction && status == CallStatus::Dispatched {
            small::compact_result(&call.name, result)
        } else {
            result.to_owned()
        }
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

/// The small-profile state of one utterance.
struct SmallRun {
    levers: Levers,
    /// The state machine's stage (state-machine lever on).
    state: Option<Stage>,
    /// Requests carry a step schema (constraints lever on and the server decodes under one).
    constrained: bool,
    /// Tokens a request may use (compaction lever on and the context window known).
    budget: Option<usize>,
    /// What the utterance asks for (intent lever).
    intent: Option<small::Intent>,
    /// Calls already answered in this utterance (tool, arguments).
    answered: Vec<(String, Value)>,
    /// Tools left out of the next offer (their identical call was just repeated).
    blocked: Vec<String>,
    /// A run was attempted in this utterance (a run request may then be answered).
    run_tried: bool,
    active: Option<String>,
    /// Tools already called in code this utterance (planning lever): each at most once.
    planned: Vec<&'static str>,
    /// Tools whose run failed in this utterance (planning lever): not offered again.
    failed: Vec<String>,
}

impl SmallRun {
    /// Any lever that changes what a request carries.
    fn reshapes(&self) -> bool {
        self.levers.constraints || self.levers.state_machine || self.levers.compaction
    }

    fn is_repeat(&self, tool: &str, input: &Value) -> bool {
        self.levers.state_machine && self.answered.iter().any(|(t, i)| t == tool && i == input)
    }

    /// One of the agent tools, but not offered at this step.
    fn offer_refuses(&self, turn: &Option<SmallTurn>, tool: &str) -> bool {
        self.state.is_some()
            && small::ALL_TOOLS.contains(&tool)
            && turn
                .as_ref()
                .is_some_and(|t| !t.offered.iter().any(|o| o == tool))
    }
}

/// One small-profile request.
struct SmallTurn {
    messages: Vec<Message>,
    tools: Vec<ToolDef>,
    response_format: Option<Value>,
    offered: Vec<String>,
    /// A final answer without a call is acceptable at this step.
    reply: bool,
}

/// An answer made in code (planning lever), in the shape of a model's reply.
fn planned_reply(text: String) -> crate::ChatResponse {
    crate::ChatResponse {
        text,
        tool_calls: Vec::new(),
        usage: None,
        model: "planned".to_owned(),
        finish_reason: Some("planned".to_owned()),
    }
}

/// The conversation as a constrained model sees it: the answer format added to the system
/// prompt, earlier calls as the JSON objects the schema admits, results as user messages.
fn constrained_view(messages: &[Message]) -> Vec<Message> {
    let mut out = Vec::with_capacity(messages.len() + 1);
    let mut system = false;
    for m in messages {
        match m.role {
            Role::System if !system => {
                system = true;
                out.push(Message::system(format!(
                    "{}\n\n{}",
                    m.content,
                    constrain::CONSTRAINED_INSTRUCTIONS
                )));
            }
            Role::Assistant if !m.tool_calls.is_empty() => {
                let calls: Vec<String> = m
                    .tool_calls
                    .iter()
                    .map(|c| {
                        let args: Value =
                            serde_json::from_str(&c.arguments).unwrap_or_else(|_| json!({}));
                        format!("{{\"name\": {}, \"arguments\": {args}}}", json!(c.name))
                    })
                    .collect();
                out.push(Message::assistant(calls.join("\n"), Vec::new()));
            }
            Role::Assistant => {
                out.push(Message::assistant(
                    json!({"reply": m.content}).to_string(),
                    Vec::new(),
                ));
            }
            Role::Tool => out.push(Message::user(format!(
                "Result of {}:\n{}",
                m.name.as_deref().unwrap_or("the tool"),
                m.content
            ))),
            _ => out.push(m.clone()),
        }
    }
    if !system {
        out.insert(0, Message::system(constrain::CONSTRAINED_INSTRUCTIONS));
    }
    out
}
