//! The two server transports.

use std::sync::Arc;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::IntoResponse;
use rmcp::ServiceExt;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use toolgate_core::AccessToken;

use crate::server::{McpShared, ToolgateServer};

/// Largest request body the HTTP endpoint accepts (bounded; larger bodies get 413).
pub const MAX_HTTP_BODY: usize = 4 * 1024 * 1024;

/// Largest JSON-RPC line accepted on stdio (the same bound as HTTP).
pub const MAX_STDIO_LINE: usize = MAX_HTTP_BODY;

#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    #[error("the MCP stdio session could not start: {0}")]
    Start(String),
    #[error("the MCP stdio session ended with an error: {0}")]
    Run(String),
}

/// Serve on stdin/stdout until the client disconnects. Nothing but protocol goes to stdout.
pub async fn serve_stdio(shared: Arc<McpShared>) -> Result<(), TransportError> {
    // Non-blocking pipes when the client launched us with FIFOs (lower latency per message).
    // Lines over the cap or nested too deeply are dropped by the guard (never buffered whole)
    // and answered with a JSON-RPC error by `AnswerDropped`; the connection stays open. rmcp's
    // own cap stays as a backstop just above what the guard hands on (the line and its `\n`).
    let (read, write) = rmcp::transport::stdio_pipes();
    let (dropped_tx, dropped_rx) = tokio::sync::mpsc::unbounded_channel();
    let read = crate::stdio_guard::LineGuard::new(read, MAX_STDIO_LINE, dropped_tx);
    let transport = rmcp::transport::async_rw::AsyncRwTransport::new_server(read, write)
        .with_max_line_length(MAX_STDIO_LINE + 2);
    let transport = crate::stdio_guard::AnswerDropped::new(transport, dropped_rx);
    // One request per JSON-RPC id in flight (a duplicate is answered with an error).
    let transport = crate::sessions::UniqueRequestIds::new(transport);
    let service = ToolgateServer::new(shared)
        .serve(transport)
        .await
        .map_err(|e| TransportError::Start(e.to_string()))?;
    service
        .waiting()
        .await
        .map_err(|e| TransportError::Run(e.to_string()))?;
    Ok(())
}

/// The streamable-HTTP MCP endpoint as an axum router (mount it at `/mcp`). Legacy clients get
/// a session each (and their own plot session); 2026-07-28 clients are served statelessly.
///
/// Every request must carry `Authorization: Bearer <token>`; anything else is answered 401 with
/// a `WWW-Authenticate: Bearer` challenge before rmcp sees it, so no session is created and
/// nothing runs.
pub fn http_router(
    shared: Arc<McpShared>,
    cancel: tokio_util::sync::CancellationToken,
    token: AccessToken,
) -> axum::Router {
    let limits = shared.session_limits();
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(true)
        .with_max_request_body_bytes(MAX_HTTP_BODY)
        .with_cancellation_token(cancel);
    let service = StreamableHttpService::new(
        move || Ok(ToolgateServer::new(shared.clone())),
        // Capped, idle sessions expire, one request per id in flight (see sessions.rs).
        crate::sessions::CappedSessions::new(limits).into(),
        config,
    );
    axum::Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn(session_delete_answers_no_content))
        .layer(axum::middleware::from_fn(crate::sessions::full_answers_503))
        .layer(axum::middleware::from_fn_with_state(token, require_bearer))
        .layer(axum::middleware::from_fn(require_loopback_host))
}

/// Refuse a request whose `Host` is not 127.0.0.1, localhost or [::1] (with an optional port and
/// nothing else) before anything else looks at it. rmcp checks the host too, but through
/// `http::uri::Authority`, which takes `[::1]evil.com` for `[::1]` (issue 30); this parse is
/// strict ([`toolgate_core::access::authority_host`]). A request without `Host` (HTTP/2) is
/// left to rmcp's check of `:authority`.
async fn require_loopback_host(
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let ok = req.headers().get(header::HOST).is_none_or(|h| {
        h.to_str()
            .is_ok_and(toolgate_core::access::is_loopback_authority)
    });
    if ok {
        return next.run(req).await;
    }
    let body = serde_json::json!({
        "error": "This MCP endpoint only answers requests addressed to 127.0.0.1, localhost or [::1] (with an optional :port and nothing else); use the endpoint `toolgate serve` printed.",
        "code": "host_not_allowed",
    });
    let mut res = (StatusCode::FORBIDDEN, body.to_string()).into_response();
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    res
}

/// The 401 of the MCP authorization spec (RFC 6750 §3): a `Bearer` challenge, with
/// `error="invalid_token"` when a credential was sent but is not this server's token. The body
/// says how to get in and never echoes what was presented.
async fn require_bearer(
    axum::extract::State(token): axum::extract::State<AccessToken>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let mut presented = false;
    for value in req.headers().get_all(header::AUTHORIZATION) {
        presented = true;
        if value.to_str().is_ok_and(|v| token.matches_bearer(v)) {
            // rmcp hands the request's parts to handlers and may log them: the secret has
            // done its job, so it goes no further.
            let mut req = req;
            req.headers_mut().remove(header::AUTHORIZATION);
            return next.run(req).await;
        }
    }
    let challenge = if presented {
        r#"Bearer realm="toolgate", error="invalid_token", error_description="not this server's access token""#
    } else {
        r#"Bearer realm="toolgate""#
    };
    let body = serde_json::json!({
        "error": "This MCP endpoint needs the access token `toolgate serve` printed: send `Authorization: Bearer <token>` with every request (set TOOLGATE_TOKEN before starting the server to choose it).",
        "code": "unauthorized",
    });
    let mut res = (StatusCode::UNAUTHORIZED, body.to_string()).into_response();
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    h.insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static(challenge),
    );
    res
}

/// rmcp answers a session's `DELETE` with 202 Accepted; clients (the official Python SDK among
/// them) expect 200 or 204 and log "Session termination failed: 202" otherwise. The session is
/// gone when the answer is sent, so 204 No Content is the truthful status.
async fn session_delete_answers_no_content(
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let delete = req.method() == axum::http::Method::DELETE;
    let mut res = next.run(req).await;
    if delete && res.status() == axum::http::StatusCode::ACCEPTED {
        *res.status_mut() = axum::http::StatusCode::NO_CONTENT;
        *res.body_mut() = axum::body::Body::empty();
    }
    res
}
