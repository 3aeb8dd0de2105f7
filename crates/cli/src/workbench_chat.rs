//! The workbench's chat panel answered by the agent loop.

use std::sync::Arc;

use async_trait::async_trait;
use tokio::sync::mpsc;
use toolgate_agent::{AgentEvent, AgentLoop, Conversation, Stop};
use toolgate_core::Confirmer;
use toolgate_web::{ChatBackend, ChatEvent};

/// One conversation per workbench process (the page's chat), driven turn by turn.
pub struct AgentChat {
    agent: AgentLoop,
    conversation: tokio::sync::Mutex<Conversation>,
    model: String,
}

impl AgentChat {
    pub fn new(agent: AgentLoop, conversation: Conversation, model: String) -> Self {
        Self {
            agent,
            conversation: tokio::sync::Mutex::new(conversation),
            model,
        }
    }
}

/// The page's events for one loop event. Confirmations are shown by the page's own confirmer
/// (it emits its own asked/closed events with the id the page answers to), so those loop events
/// are not repeated.
fn to_chat(event: AgentEvent) -> Option<ChatEvent> {
    match event {
        AgentEvent::TextDelta { text } => Some(ChatEvent::TextDelta { text }),
        AgentEvent::ToolCallStarted { tool, input } => {
            Some(ChatEvent::ToolCallStarted { tool, input })
        }
        AgentEvent::ToolCallFinished {
            tool,
            result,
            status,
            reason,
            ..
        } => Some(ChatEvent::ToolCallFinished {
            tool,
            result,
            status,
            reason,
        }),
        AgentEvent::Final { text } => Some(ChatEvent::Final { text }),
        AgentEvent::Error { message } => Some(ChatEvent::Error { message }),
        AgentEvent::ConfirmationAsked { .. } | AgentEvent::ConfirmationAnswered { .. } => None,
    }
}

#[async_trait]
impl ChatBackend for AgentChat {
    async fn send(
        &self,
        utterance: String,
        confirmer: Arc<dyn Confirmer>,
        events: mpsc::Sender<ChatEvent>,
    ) {
        // The loop reports synchronously; forward in order through an unbounded hop so a slow
        // page never blocks the loop and no text delta is dropped.
        let (tx, mut rx) = mpsc::unbounded_channel::<ChatEvent>();
        let forward = {
            let events = events.clone();
            tokio::spawn(async move {
                while let Some(e) = rx.recv().await {
                    if events.send(e).await.is_err() {
                        break;
                    }
                }
            })
        };
        let mut conversation = self.conversation.lock().await;
        let mut ended = false;
        let outcome = self
            .agent
            .run(&mut conversation, &utterance, confirmer.as_ref(), |e| {
                if matches!(e, AgentEvent::Final { .. } | AgentEvent::Error { .. }) {
                    ended = true;
                }
                if let Some(c) = to_chat(e) {
                    let _ = tx.send(c);
                }
            })
            .await;
        if !ended {
            let message = match outcome.stop {
                Stop::Final => None,
                Stop::TurnLimit => Some("The model used its turn limit without a final answer.".to_owned()),
                Stop::Cancelled => Some("Cancelled.".to_owned()),
                Stop::TooManyCorrections => Some(
                    "The model kept making invalid tool calls; stopped. Rephrase or try another model."
                        .to_owned(),
                ),
                Stop::ModelError { message } => Some(message),
            };
            let _ = tx.send(match message {
                Some(message) => ChatEvent::Error { message },
                None => ChatEvent::Final {
                    text: outcome.final_text.unwrap_or_default(),
                },
            });
        }
        drop(tx);
        let _ = forward.await;
    }

    fn describe(&self) -> String {
        self.model.clone()
    }
}
