//! Bounds on what MCP clients can make the server hold:
//!
//! - [`CappedSessions`]: rmcp's in-memory session manager for streamable HTTP with a cap on the
//!   number of sessions (default [`SessionLimits::DEFAULT_MAX_SESSIONS`]) and idle expiry. When
//!   the cap is reached, the least recently used session with no request in flight is closed to
//!   make room; when every session is busy, the new one is refused with 503 naming the cap.
//! - [`UniqueRequestIds`]: one JSON-RPC request id in flight at a time per connection. rmcp
//!   keys its in-flight requests by id, so a second request with the id of one still running
//!   replaced the first's entry: both ran and one response was lost. The second is now answered
//!   at once with `-32600 duplicate request id in flight`, and the first is unaffected.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use futures_util::stream::Stream;
use rmcp::RoleServer;
use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, ErrorData, RequestId, ServerJsonRpcMessage,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, SessionConfig,
};
use rmcp::transport::streamable_http_server::session::{
    ServerSseMessage, SessionId, SessionManager,
};

/// How many HTTP sessions the server keeps and how long an idle one lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionLimits {
    pub max_sessions: usize,
    /// A session with no message in either direction for this long is closed.
    pub idle_timeout: Duration,
}

impl SessionLimits {
    pub const DEFAULT_MAX_SESSIONS: usize = 64;
    /// Longer than the longest wait for a person's confirmation (the elicitation timeout).
    pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(10 * 60);
}

impl Default for SessionLimits {
    fn default() -> Self {
        Self {
            max_sessions: Self::DEFAULT_MAX_SESSIONS,
            idle_timeout: Self::DEFAULT_IDLE_TIMEOUT,
        }
    }
}

/// Most requests one connection may have in flight at once (each holds a task and its input).
pub const MAX_REQUESTS_IN_FLIGHT: usize = 256;

/// Text the 503 rewrite recognises in rmcp's error body (see [`full_answers_503`]).
const FULL_MARKER: &str = "toolgate-sessions-full";

#[derive(Debug, thiserror::Error)]
pub enum SessionsError {
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
    #[error(
        "[{FULL_MARKER}] This MCP server already holds its maximum of {max} sessions, and every one has a request in flight, so no new session was created. End a session you no longer use (HTTP DELETE /mcp with its Mcp-Session-Id), retry when a request finishes, or start the server with a higher --max-sessions."
    )]
    Full { max: usize },
}

/// The JSON-RPC ids of the requests a connection has in flight.
#[derive(Debug, Default)]
pub struct InFlight {
    ids: Mutex<HashSet<RequestId>>,
}

/// Why a request was not admitted.
enum Refusal {
    Duplicate,
    TooMany,
}

impl InFlight {
    fn begin(&self, id: &RequestId) -> Result<(), Refusal> {
        let mut ids = self.ids.lock().unwrap_or_else(PoisonError::into_inner);
        if ids.contains(id) {
            return Err(Refusal::Duplicate);
        }
        if ids.len() >= MAX_REQUESTS_IN_FLIGHT {
            return Err(Refusal::TooMany);
        }
        ids.insert(id.clone());
        Ok(())
    }

    fn end(&self, id: &RequestId) {
        self.ids
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
    }

    fn is_idle(&self) -> bool {
        self.ids
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_empty()
    }
}

fn refusal_error(refusal: &Refusal, id: &RequestId) -> ServerJsonRpcMessage {
    let message = match refusal {
        Refusal::Duplicate => format!(
            "duplicate request id in flight: a request with id {id} is still running on this connection. Use a new id for each request; this one was not run."
        ),
        Refusal::TooMany => format!(
            "too many requests in flight: {MAX_REQUESTS_IN_FLIGHT} are still running on this connection; this one (id {id}) was not run. Wait for answers before sending more."
        ),
    };
    ServerJsonRpcMessage::error(ErrorData::invalid_request(message, None), Some(id.clone()))
}

/// A transport that admits one request per id at a time (see the module docs). On stdio it
/// checks each request as it arrives; under [`CappedSessions`] the session manager checks
/// before a request reaches the session, and this side only notes when each is answered.
pub struct UniqueRequestIds<T> {
    inner: T,
    in_flight: Arc<InFlight>,
    check_arrivals: bool,
}

impl<T> UniqueRequestIds<T> {
    /// For a transport whose requests arrive only through [`Transport::receive`] (stdio).
    pub fn new(inner: T) -> Self {
        Self {
            inner,
            in_flight: Arc::default(),
            check_arrivals: true,
        }
    }

    fn admitted_elsewhere(inner: T, in_flight: Arc<InFlight>) -> Self {
        Self {
            inner,
            in_flight,
            check_arrivals: false,
        }
    }
}

impl<T> Transport<RoleServer> for UniqueRequestIds<T>
where
    T: Transport<RoleServer>,
{
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        // The id is free again once its answer is on its way.
        match &item {
            ServerJsonRpcMessage::Response(r) => self.in_flight.end(&r.id),
            ServerJsonRpcMessage::Error(e) => {
                if let Some(id) = &e.id {
                    self.in_flight.end(id);
                }
            }
            _ => {}
        }
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            let message = self.inner.receive().await?;
            match &message {
                ClientJsonRpcMessage::Request(r) if self.check_arrivals => {
                    if let Err(refusal) = self.in_flight.begin(&r.id) {
                        tracing::warn!(id = %r.id, "refused a request whose id is in flight");
                        let answer = self.inner.send(refusal_error(&refusal, &r.id));
                        if let Err(e) = answer.await {
                            tracing::warn!(error = %e, "could not answer a refused request");
                        }
                        continue;
                    }
                }
                ClientJsonRpcMessage::Notification(n) => {
                    // A cancelled request is not answered (rmcp drops its response), so its id
                    // is free now.
                    if let ClientNotification::CancelledNotification(c) = &n.notification
                        && let Some(id) = &c.params.request_id
                    {
                        self.in_flight.end(id);
                    }
                }
                _ => {}
            }
            return Some(message);
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

struct Activity {
    last: Instant,
    in_flight: Arc<InFlight>,
}

/// rmcp's [`LocalSessionManager`] with a cap, idle expiry and unique request ids per session.
pub struct CappedSessions {
    inner: LocalSessionManager,
    max: usize,
    activity: Mutex<HashMap<SessionId, Activity>>,
    /// Creating is serialised so two clients arriving together cannot both pass the cap.
    creating: tokio::sync::Mutex<()>,
}

impl CappedSessions {
    pub fn new(limits: SessionLimits) -> Self {
        let mut inner = LocalSessionManager::default();
        inner.session_config = {
            let mut c = SessionConfig::default();
            c.keep_alive = Some(limits.idle_timeout);
            c
        };
        Self {
            inner,
            max: limits.max_sessions.max(1),
            activity: Mutex::new(HashMap::new()),
            creating: tokio::sync::Mutex::new(()),
        }
    }

    fn activity(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Activity>> {
        self.activity.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn touch(&self, id: &SessionId) -> Option<Arc<InFlight>> {
        let mut activity = self.activity();
        let a = activity.get_mut(id)?;
        a.last = Instant::now();
        Some(a.in_flight.clone())
    }

    /// The least recently used session with no request in flight.
    fn eviction_candidate(&self) -> Option<SessionId> {
        self.activity()
            .iter()
            .filter(|(_, a)| a.in_flight.is_idle())
            .min_by_key(|(_, a)| a.last)
            .map(|(id, _)| id.clone())
    }

    /// How many sessions are held now.
    pub async fn session_count(&self) -> usize {
        self.inner.sessions.read().await.len()
    }
}

impl SessionManager for CappedSessions {
    type Error = SessionsError;
    type Transport = UniqueRequestIds<<LocalSessionManager as SessionManager>::Transport>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let _one_at_a_time = self.creating.lock().await;
        while self.session_count().await >= self.max {
            let Some(victim) = self.eviction_candidate() else {
                tracing::warn!(
                    max = self.max,
                    "MCP session cap reached; refusing a session"
                );
                return Err(SessionsError::Full { max: self.max });
            };
            tracing::info!(session = %victim, max = self.max, "MCP session cap reached; closing the least recently used idle session");
            self.close_session(&victim).await?;
        }
        let (id, transport) = self.inner.create_session().await?;
        let in_flight = Arc::new(InFlight::default());
        self.activity().insert(
            id.clone(),
            Activity {
                last: Instant::now(),
                in_flight: in_flight.clone(),
            },
        );
        Ok((
            id,
            UniqueRequestIds::admitted_elsewhere(transport, in_flight),
        ))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.touch(id);
        Ok(self.inner.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.activity().remove(id);
        Ok(self.inner.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let in_flight = self.touch(id);
        let request_id = match &message {
            ClientJsonRpcMessage::Request(r) => Some(r.id.clone()),
            _ => None,
        };
        if let (Some(rid), Some(in_flight)) = (&request_id, &in_flight)
            && let Err(refusal) = in_flight.begin(rid)
        {
            // Answered here, before the session routes the id to this HTTP request (which would
            // take the running request's answer away from it).
            tracing::warn!(session = %id, id = %rid, "refused a request whose id is in flight");
            let answer = ServerSseMessage::from_message(refusal_error(&refusal, rid));
            return Ok(futures_util::stream::iter([answer]).right_stream());
        }
        match self.inner.create_stream(id, message).await {
            Ok(stream) => Ok(stream.left_stream()),
            Err(e) => {
                if let (Some(rid), Some(in_flight)) = (&request_id, &in_flight) {
                    in_flight.end(rid);
                }
                Err(e.into())
            }
        }
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.touch(id);
        Ok(self.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        Ok(self.inner.create_standalone_stream(id).await?)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        Ok(self.inner.resume(id, last_event_id).await?)
    }
}

/// rmcp answers a session manager's error with 500 and the error's text. A refusal for the
/// session cap is the server being temporarily full, not broken: 503 with `Retry-After` and a
/// JSON body that says what to do.
pub async fn full_answers_503(
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::http::{HeaderValue, StatusCode, header};
    let res = next.run(req).await;
    if res.status() != StatusCode::INTERNAL_SERVER_ERROR {
        return res;
    }
    let (parts, body) = res.into_parts();
    // rmcp's error bodies are short texts; anything longer is not ours.
    let Ok(bytes) = axum::body::to_bytes(body, 64 * 1024).await else {
        return axum::response::Response::from_parts(parts, axum::body::Body::empty());
    };
    let text = String::from_utf8_lossy(&bytes);
    let Some(at) = text.find(FULL_MARKER) else {
        return axum::response::Response::from_parts(parts, axum::body::Body::from(bytes));
    };
    let message = text[at + FULL_MARKER.len()..]
        .trim_start_matches(']')
        .trim()
        .to_owned();
    let body = serde_json::json!({"error": message, "code": "too_many_sessions"});
    let mut res = axum::response::Response::new(axum::body::Body::from(body.to_string()));
    *res.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    res.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
    res
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn limits(max_sessions: usize) -> SessionLimits {
        SessionLimits {
            max_sessions,
            idle_timeout: Duration::from_secs(60),
        }
    }

    #[tokio::test]
    async fn the_cap_closes_the_least_recently_used_idle_session() {
        let m = CappedSessions::new(limits(2));
        let (a, _ta) = m.create_session().await.unwrap();
        let (b, _tb) = m.create_session().await.unwrap();
        tokio::time::sleep(Duration::from_millis(5)).await;
        m.touch(&a);
        let (c, _tc) = m.create_session().await.unwrap();
        assert!(m.has_session(&a).await.unwrap(), "recently used: kept");
        assert!(
            !m.has_session(&b).await.unwrap(),
            "least recently used: closed"
        );
        assert!(m.has_session(&c).await.unwrap());
        assert_eq!(m.session_count().await, 2);
    }

    #[tokio::test]
    async fn when_every_session_is_busy_a_new_one_is_refused_naming_the_cap() {
        let m = CappedSessions::new(limits(1));
        let (a, _ta) = m.create_session().await.unwrap();
        let busy = m.touch(&a).unwrap();
        assert!(busy.begin(&RequestId::Number(1)).is_ok());
        let err = m.create_session().await.err().unwrap();
        assert!(matches!(err, SessionsError::Full { max: 1 }), "{err}");
        assert!(err.to_string().contains("--max-sessions"), "{err}");
        assert!(
            m.has_session(&a).await.unwrap(),
            "a busy session is never closed"
        );

        busy.end(&RequestId::Number(1));
        let (b, _tb) = m.create_session().await.unwrap();
        assert!(!m.has_session(&a).await.unwrap());
        assert!(m.has_session(&b).await.unwrap());
    }

    #[test]
    fn an_id_is_admitted_once_until_answered_and_in_flight_requests_are_bounded() {
        let f = InFlight::default();
        let one = RequestId::Number(1);
        assert!(f.begin(&one).is_ok());
        assert!(matches!(f.begin(&one), Err(Refusal::Duplicate)));
        f.end(&one);
        assert!(f.begin(&one).is_ok());
        for n in 2..=i64::try_from(MAX_REQUESTS_IN_FLIGHT).unwrap() {
            assert!(f.begin(&RequestId::Number(n)).is_ok());
        }
        assert!(matches!(
            f.begin(&RequestId::Number(0)),
            Err(Refusal::TooMany)
        ));
        let refused = refusal_error(&Refusal::Duplicate, &one);
        let v = serde_json::to_value(&refused).unwrap();
        assert_eq!(v["error"]["code"], -32600, "{v}");
        assert_eq!(v["id"], 1, "{v}");
    }
}
