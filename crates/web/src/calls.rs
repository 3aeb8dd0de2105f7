//! Tool calls from the page: a chat turn (`POST /api/chat`, through the backend seam a model loop
//! plugs into), the Tools tab's run (`POST /api/tools/run`), and the confirmer both use, which
//! turns a mutating call's preview into a dialog on the page and waits for the answer
//! (`POST /api/chat/confirm`). Both stream the same events to the page.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use std::convert::Infallible;

use async_trait::async_trait;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use toolgate_core::Preview;
use toolgate_core::flow::{Answer, Confirmer};
use toolgate_plot::activity::acting_as;

use crate::error::{ApiError, ApiJson, Shape};
use crate::{PALETTE_ACTOR, WebState};

/// One event of a chat turn, streamed to the page as a server-sent event whose `event` is the
/// `type` tag and whose `data` is this value as JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ChatEvent {
    /// A piece of the model's reply text.
    TextDelta { text: String },
    /// The model called a tool (shown as it happens).
    ToolCallStarted { tool: String, input: Value },
    /// The tool's result exactly as the model sees it (errors and refusals included), with how
    /// the call ended (`ok`, `refused`, `declined`, `failed`) and why (`no_plot`, `target`, …):
    /// the page styles refusals from `status`, never from the wording.
    ToolCallFinished {
        tool: String,
        result: String,
        status: toolgate_core::Status,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A mutating call needs the person's answer: the page shows the preview with Approve and
    /// Decline, and POSTs the answer to `/api/chat/confirm` with this id.
    ConfirmationAsked { id: String, preview: Preview },
    /// The confirmation was answered (or timed out, or the page went away: declined).
    ConfirmationClosed { id: String, approved: bool },
    /// The turn's final reply.
    Final { text: String },
    /// The turn failed; the message is what the person should read.
    Error { message: String },
}

impl ChatEvent {
    /// The SSE event name: the `type` tag.
    pub fn name(&self) -> &'static str {
        match self {
            Self::TextDelta { .. } => "textDelta",
            Self::ToolCallStarted { .. } => "toolCallStarted",
            Self::ToolCallFinished { .. } => "toolCallFinished",
            Self::ConfirmationAsked { .. } => "confirmationAsked",
            Self::ConfirmationClosed { .. } => "confirmationClosed",
            Self::Final { .. } => "final",
            Self::Error { .. } => "error",
        }
    }
}

/// What answers the chat panel: a model loop over the workbench's `Debrief` tools.
///
/// `send` runs one turn for `utterance`, streaming [`ChatEvent`]s into `events` (a send error
/// means the page went away: stop early). Mutating tool calls must go through `confirmer`, which
/// asks the person on the page. The turn ends when `send` returns; a turn should end with
/// [`ChatEvent::Final`] or [`ChatEvent::Error`].
#[async_trait]
pub trait ChatBackend: Send + Sync {
    async fn send(
        &self,
        utterance: String,
        confirmer: Arc<dyn Confirmer>,
        events: mpsc::Sender<ChatEvent>,
    );

    /// A short description for the panel, e.g. the model's name.
    fn describe(&self) -> String {
        "a chat model".to_owned()
    }
}

/// Confirmations waiting for an answer from the page, by id.
#[derive(Default)]
pub struct Pending {
    next: AtomicU64,
    waiting: Mutex<HashMap<String, oneshot::Sender<Answer>>>,
}

impl Pending {
    fn register(&self, tx: oneshot::Sender<Answer>) -> String {
        let n = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        // A per-process salt so ids from an earlier server are not mistaken for current ones.
        let salt = std::process::id();
        let id = format!("confirm-{salt:x}-{n}");
        self.lock().insert(id.clone(), tx);
        id
    }

    fn remove(&self, id: &str) {
        self.lock().remove(id);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, oneshot::Sender<Answer>>> {
        self.waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Deliver a person's answer. False when no confirmation with that id is waiting.
    pub fn answer(&self, id: &str, answer: Answer) -> bool {
        match self.lock().remove(id) {
            Some(tx) => tx.send(answer).is_ok(),
            None => false,
        }
    }

    /// Ids of the confirmations still waiting.
    pub fn waiting_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.lock().keys().cloned().collect();
        ids.sort();
        ids
    }
}

/// Asks the person on the page: emits [`ChatEvent::ConfirmationAsked`] and waits for the answer
/// POSTed back. No answer within the timeout, or the page gone (its event stream closed), is a
/// decline.
pub struct WebConfirmer {
    pending: Arc<Pending>,
    events: mpsc::Sender<ChatEvent>,
    timeout: Duration,
}

impl WebConfirmer {
    pub fn new(pending: Arc<Pending>, events: mpsc::Sender<ChatEvent>, timeout: Duration) -> Self {
        Self {
            pending,
            events,
            timeout,
        }
    }
}

#[async_trait]
impl Confirmer for WebConfirmer {
    async fn confirm(&self, preview: &Preview) -> Answer {
        let (tx, rx) = oneshot::channel();
        let id = self.pending.register(tx);
        let asked = ChatEvent::ConfirmationAsked {
            id: id.clone(),
            preview: preview.clone(),
        };
        if self.events.send(asked).await.is_err() {
            self.pending.remove(&id);
            return Answer::Decline;
        }
        let answer = tokio::select! {
            got = tokio::time::timeout(self.timeout, rx) => match got {
                Ok(Ok(a)) => a,
                Ok(Err(_)) | Err(_) => Answer::Decline,
            },
            // The page closed the stream: nobody can answer any more.
            () = self.events.closed() => Answer::Decline,
        };
        self.pending.remove(&id);
        // The page may be gone; the answer stands either way.
        let _ = self
            .events
            .send(ChatEvent::ConfirmationClosed {
                id,
                approved: answer == Answer::Approve,
            })
            .await;
        answer
    }
}

// ------------------------------------------------------------------------------------------------
// the endpoints that run tools: a chat turn, the palette's run, and the answer to a confirmation

/// A turn's or a run's events as the server-sent-event stream the page reads (`live.js`
/// `readSse`), kept alive while a confirmation waits for the person.
fn event_stream(rx: mpsc::Receiver<ChatEvent>) -> Response {
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        let ev = rx.recv().await?;
        let data = serde_json::to_string(&ev).unwrap_or_default();
        let event = Event::default().event(ev.name()).data(data);
        Some((Ok::<_, Infallible>(event), rx))
    });
    Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response()
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ChatBody {
    utterance: String,
}

impl Shape for ChatBody {
    const SHAPE: &'static str = r#"{"utterance": "colour the submarine track red"}"#;
}

pub(crate) async fn chat(
    State(st): State<WebState>,
    ApiJson(body): ApiJson<ChatBody>,
) -> Result<Response, ApiError> {
    let utterance = body.utterance.trim().to_owned();
    if utterance.is_empty() {
        return Err(ApiError::bad_request(
            "\"utterance\" is empty. Type what you want done, e.g. \"colour the submarine track red\".",
        ));
    }
    let Some(backend) = st.chat.clone() else {
        return Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "no_chat_backend",
            st.chat_hint,
        ));
    };
    let guard = st.turn.clone().try_lock_owned().map_err(|_| {
        ApiError::conflict(
            "A chat turn is still running (it may be waiting for your confirmation). Answer it or wait for it to finish, then send again.",
        )
    })?;
    let (tx, rx) = mpsc::channel::<ChatEvent>(64);
    let confirmer = Arc::new(WebConfirmer::new(
        st.pending.clone(),
        tx.clone(),
        st.confirm_timeout,
    ));
    let changed = st.changed.clone();
    tokio::spawn(async move {
        let inner = tx.clone();
        let run = tokio::spawn(async move { backend.send(utterance, confirmer, inner).await });
        if let Err(e) = run.await {
            tracing::error!(error = %e, "chat backend task failed");
            let _ = tx
                .send(ChatEvent::Error {
                    message: "The chat backend stopped unexpectedly; see the server log. Nothing further was changed.".to_owned(),
                })
                .await;
        }
        // Release the turn before the stream ends, so a page that sees the end can send again.
        drop(guard);
        changed.notify_waiters();
        drop(tx);
    });
    Ok(event_stream(rx))
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum AnswerBody {
    Approve,
    Decline,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ConfirmBody {
    id: String,
    answer: AnswerBody,
}

impl Shape for ConfirmBody {
    const SHAPE: &'static str =
        r#"{"id": "<id from the confirmationAsked event>", "answer": "approve" | "decline"}"#;
}

pub(crate) async fn confirm(
    State(st): State<WebState>,
    ApiJson(body): ApiJson<ConfirmBody>,
) -> Result<Json<Value>, ApiError> {
    let answer = match body.answer {
        AnswerBody::Approve => Answer::Approve,
        AnswerBody::Decline => Answer::Decline,
    };
    if st.pending.answer(&body.id, answer) {
        Ok(Json(
            json!({"ok": true, "id": body.id, "approved": answer == Answer::Approve}),
        ))
    } else {
        Err(ApiError::not_found(format!(
            "No confirmation \"{}\" is waiting: it was already answered, timed out, or its chat turn ended.",
            body.id
        )))
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct RunBody {
    tool_id: String,
    #[serde(default)]
    params: serde_json::Map<String, Value>,
    #[serde(default)]
    feature_ids: Vec<String>,
    scope: Option<String>,
    plot_id: Option<String>,
}

impl Shape for RunBody {
    const SHAPE: &'static str = r#"{"toolId": "set-track-color", "params": {"color": "red"}, "featureIds": ["track-contact"], "scope": "all" | "selection", "plotId": "…"} (all but toolId optional)"#;
}

/// Run one tool from the palette through the same gate an agent's `debrief_runTool` goes
/// through: validated, targets resolved, a mutation confirmed on the page (the answer comes
/// back on `/api/chat/confirm`), applied as one undoable step; an analysis fills the Results
/// panel. Streams `confirmationAsked`/`confirmationClosed`, then `toolCallFinished` and `final`.
pub(crate) async fn run_tool(
    State(st): State<WebState>,
    ApiJson(body): ApiJson<RunBody>,
) -> Result<Response, ApiError> {
    let tool_id = body.tool_id.trim().to_owned();
    if tool_id.is_empty() {
        return Err(ApiError::bad_request(
            "\"toolId\" is empty. Choose a tool from GET /api/tools.",
        ));
    }
    let mut input = json!({
        "toolId": tool_id,
        "params": body.params,
        "utterance": format!("{tool_id} run from the workbench tool palette"),
    });
    if !body.feature_ids.is_empty() {
        input["featureIds"] = json!(body.feature_ids);
    }
    if let Some(scope) = body.scope {
        input["scope"] = json!(scope);
    }
    if let Some(plot) = body.plot_id {
        input["plotId"] = json!(plot);
    }
    let (tx, rx) = mpsc::channel::<ChatEvent>(16);
    let confirmer = WebConfirmer::new(st.pending.clone(), tx.clone(), st.confirm_timeout);
    let debrief = st.debrief.clone();
    let changed = st.changed;
    tokio::spawn(async move {
        // Worded for the person at the page: its controls, not the agent's parameters.
        let reply = acting_as(
            PALETTE_ACTOR,
            debrief.run_tool_as(&input, &confirmer, toolgate_plot::debrief::Audience::Page),
        )
        .await;
        let _ = tx
            .send(ChatEvent::ToolCallFinished {
                tool: tool_id,
                result: reply.text.clone(),
                status: reply.status,
                reason: reply.reason.clone(),
            })
            .await;
        let _ = tx.send(ChatEvent::Final { text: reply.text }).await;
        changed.notify_waiters();
    });
    Ok(event_stream(rx))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn preview() -> Preview {
        Preview {
            title: "Run Set Track Color on Exercise Alpha".to_owned(),
            body: "**Set Track Color** will modify **Exercise Alpha**.".to_owned(),
        }
    }

    #[test]
    fn events_serialise_with_a_type_tag() {
        let e = ChatEvent::ToolCallStarted {
            tool: "debrief_runTool".to_owned(),
            input: serde_json::json!({"toolId": "set-track-color"}),
        };
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(v["type"], "toolCallStarted");
        assert_eq!(v["tool"], "debrief_runTool");
        assert_eq!(e.name(), "toolCallStarted");
        let back: ChatEvent = serde_json::from_value(v).unwrap();
        assert_eq!(back, e);
        for e in [
            ChatEvent::TextDelta { text: "a".into() },
            ChatEvent::ToolCallFinished {
                tool: "t".into(),
                result: "r".into(),
                status: toolgate_core::Status::Refused,
                reason: Some("no_plot".into()),
            },
            ChatEvent::ConfirmationAsked {
                id: "c".into(),
                preview: preview(),
            },
            ChatEvent::ConfirmationClosed {
                id: "c".into(),
                approved: true,
            },
            ChatEvent::Final { text: "f".into() },
            ChatEvent::Error {
                message: "m".into(),
            },
        ] {
            let v = serde_json::to_value(&e).unwrap();
            assert_eq!(v["type"], e.name());
        }
    }

    #[tokio::test]
    async fn the_answer_posted_back_is_the_confirmers_answer() {
        let pending = Arc::new(Pending::default());
        let (tx, mut rx) = mpsc::channel(8);
        let c = WebConfirmer::new(pending.clone(), tx, Duration::from_secs(5));
        let asking = tokio::spawn(async move { c.confirm(&preview()).await });
        let Some(ChatEvent::ConfirmationAsked { id, preview: p }) = rx.recv().await else {
            panic!("expected a confirmation event");
        };
        assert_eq!(p, preview());
        assert_eq!(pending.waiting_ids(), vec![id.clone()]);
        assert!(!pending.answer("confirm-other", Answer::Approve));
        assert!(pending.answer(&id, Answer::Approve));
        assert_eq!(asking.await.unwrap(), Answer::Approve);
        assert!(pending.waiting_ids().is_empty());
        assert_eq!(
            rx.recv().await,
            Some(ChatEvent::ConfirmationClosed { id, approved: true })
        );
    }

    #[tokio::test]
    async fn no_answer_or_no_page_is_a_decline() {
        let pending = Arc::new(Pending::default());
        let (tx, mut rx) = mpsc::channel(8);
        let c = WebConfirmer::new(pending.clone(), tx, Duration::from_millis(50));
        let asking = tokio::spawn(async move { c.confirm(&preview()).await });
        assert!(matches!(
            rx.recv().await,
            Some(ChatEvent::ConfirmationAsked { .. })
        ));
        assert_eq!(asking.await.unwrap(), Answer::Decline);
        assert!(pending.waiting_ids().is_empty());

        let (tx, rx) = mpsc::channel(8);
        drop(rx);
        let c = WebConfirmer::new(pending.clone(), tx, Duration::from_secs(5));
        assert_eq!(c.confirm(&preview()).await, Answer::Decline);
        assert!(pending.waiting_ids().is_empty());

        // the page leaves while the question is open
        let (tx, mut rx) = mpsc::channel(8);
        let c = WebConfirmer::new(pending.clone(), tx, Duration::from_secs(30));
        let asking = tokio::spawn(async move { c.confirm(&preview()).await });
        assert!(matches!(
            rx.recv().await,
            Some(ChatEvent::ConfirmationAsked { .. })
        ));
        drop(rx);
        let answer = tokio::time::timeout(Duration::from_secs(5), asking)
            .await
            .expect("a closed page ends the wait at once")
            .unwrap();
        assert_eq!(answer, Answer::Decline);
        assert!(pending.waiting_ids().is_empty());
    }
}
