//! Every failure the workbench answers with: a status code and a JSON body
//! `{"error": "<what went wrong and what would work>", "code": "<machine tag>"}` — never a
//! stack trace. The one HTML answer is [`unauthorized_page`]: a browser that opens the
//! workbench without a valid credential shows a person what to do, not raw JSON.

use axum::Json;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;
use serde_json::json;
use toolgate_plot::session::SessionError;

/// An error answer of the workbench API.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
        }
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, "conflict", message)
    }

    /// A request without the server's access token (or with a wrong one). The message says how
    /// to get in; it never echoes what was presented.
    pub fn unauthorized() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "This workbench needs its access token. Open the workbench URL `toolgate serve` printed (http://127.0.0.1:PORT/?token=…; it sets a session cookie that lasts until the server stops), or send `Authorization: Bearer <token>`. Set TOOLGATE_TOKEN before starting the server to choose the token.",
        )
    }
}

/// The page a browser gets for the workbench without a valid credential: the bare URL, a
/// token or session cookie from an earlier start. Static text (it never echoes the request),
/// no script, nothing loaded.
const UNAUTHORIZED_PAGE: &str = r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>toolgate workbench: open the current URL</title>
</head>
<body>
<h1>Open the workbench URL <code>toolgate serve</code> printed</h1>
<p>This workbench answers only the person who started it. Open the <strong>Workbench:</strong>
URL that <code>toolgate serve</code> printed when it started
(<code>http://127.0.0.1:PORT/?token=…</code>): it signs this browser in until that server stops.</p>
<p>A URL or sign-in from an earlier start no longer works: after a restart, copy the URL again
from the new output of <code>toolgate serve</code>.</p>
<p>MCP clients send <code>Authorization: Bearer &lt;token&gt;</code> instead (the
<code>MCP header:</code> line of the same output).</p>
</body>
</html>
"#;

/// 401 with [`UNAUTHORIZED_PAGE`].
pub fn unauthorized_page() -> Response {
    let mut res = (StatusCode::UNAUTHORIZED, UNAUTHORIZED_PAGE).into_response();
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    h.insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static(r#"Bearer realm="toolgate workbench""#),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
        ),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    res
}

/// Most bytes of an error message sent to a client. Messages quote at most 200 bytes of any
/// input; this catches one that does not (a 10 MB line once made a 60 MB error body).
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024;

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let message = toolgate_core::clip::clip_middle(&self.message, MAX_MESSAGE_BYTES);
        (
            self.status,
            Json(json!({"error": message, "code": self.code})),
        )
            .into_response()
    }
}

impl From<SessionError> for ApiError {
    fn from(e: SessionError) -> Self {
        let message = e.to_string();
        match e {
            SessionError::NoPlotOpen => Self::new(StatusCode::CONFLICT, "no_plot_open", message),
            SessionError::UnknownPlot(_) | SessionError::NotOpen(_) => {
                Self::new(StatusCode::NOT_FOUND, "unknown_plot", message)
            }
            SessionError::NothingToUndo(_) | SessionError::NothingToRedo(_) => {
                Self::new(StatusCode::CONFLICT, "nothing_to_do", message)
            }
            SessionError::Conflict { .. } => {
                Self::new(StatusCode::CONFLICT, "changed_on_disk", message)
            }
            SessionError::VersionMismatch { .. } => {
                Self::new(StatusCode::CONFLICT, "version_mismatch", message)
            }
            SessionError::MissingFeature(_) => {
                Self::new(StatusCode::UNPROCESSABLE_ENTITY, "missing_feature", message)
            }
            SessionError::ReadTimedOut { .. } | SessionError::StoreBusy(_) => Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "store_unavailable",
                message,
            ),
            SessionError::Api(toolgate_plot::stac_api::ApiError::ReadOnly { .. }) => {
                Self::new(StatusCode::CONFLICT, "read_only_catalogue", message)
            }
            SessionError::Api(toolgate_plot::stac_api::ApiError::Changed { .. }) => {
                Self::new(StatusCode::CONFLICT, "changed_on_server", message)
            }
            SessionError::Api(toolgate_plot::stac_api::ApiError::UnknownPlot { .. }) => {
                Self::new(StatusCode::NOT_FOUND, "unknown_plot", message)
            }
            SessionError::Api(_) => {
                Self::new(StatusCode::BAD_GATEWAY, "catalogue_unavailable", message)
            }
            SessionError::Journal(toolgate_plot::journal::JournalError::Conflict { .. }) => {
                Self::new(StatusCode::CONFLICT, "changed_elsewhere", message)
            }
            SessionError::Journal(_) => Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "state_unavailable",
                message,
            ),
            SessionError::Store(_) | SessionError::Write { .. } | SessionError::Reader(_) => {
                tracing::warn!(error = %message, "workbench storage error");
                Self::new(StatusCode::INTERNAL_SERVER_ERROR, "storage", message)
            }
        }
    }
}

/// A JSON body; a malformed one is answered with a JSON error naming the expected shape.
pub struct ApiJson<T>(pub T);

/// What a request body looks like, for the error message of a malformed one.
pub trait Shape {
    const SHAPE: &'static str;
}

impl<T, S> FromRequest<S> for ApiJson<T>
where
    T: DeserializeOwned + Shape,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        match Json::<T>::from_request(req, state).await {
            Ok(Json(v)) => Ok(Self(v)),
            Err(rejection) => Err(json_rejection(&rejection, T::SHAPE)),
        }
    }
}

fn json_rejection(rejection: &JsonRejection, shape: &str) -> ApiError {
    let status = rejection.status();
    let code = match rejection {
        JsonRejection::MissingJsonContentType(_) => "unsupported_media_type",
        JsonRejection::JsonSyntaxError(_) => "malformed_json",
        JsonRejection::JsonDataError(_) => "invalid_body",
        _ => "bad_request",
    };
    ApiError::new(
        status,
        code,
        format!(
            "{} Send a JSON body (Content-Type: application/json) like {shape}.",
            // serde quotes a string of the wrong type whole, and says where it is at the end.
            toolgate_core::clip::clip_middle(
                rejection.body_text().trim_end_matches('.'),
                toolgate_core::clip::QUOTE_MAX * 2
            )
        ),
    )
}

/// Query parameters; malformed ones are answered with a JSON error.
pub struct ApiQuery<T>(pub T);

impl<T, S> FromRequestParts<S> for ApiQuery<T>
where
    T: DeserializeOwned + Shape,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match axum::extract::Query::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Query(v)) => Ok(Self(v)),
            Err(rejection) => Err(query_rejection(&rejection, T::SHAPE)),
        }
    }
}

fn query_rejection(rejection: &QueryRejection, shape: &str) -> ApiError {
    ApiError::new(
        rejection.status(),
        "invalid_query",
        format!(
            "{} Expected query parameters like {shape}.",
            toolgate_core::clip::clip_middle(
                rejection.body_text().trim_end_matches('.'),
                toolgate_core::clip::QUOTE_MAX * 2
            )
        ),
    )
}
