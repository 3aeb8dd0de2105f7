//! Every failure the workbench answers with: a status code and a JSON body
//! `{"error": "<what went wrong and what would work>", "code": "<machine tag>"}` — never a
//! stack trace, never an HTML page.

use axum::Json;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
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
            "This workbench needs its access token. Open the workbench URL `toolgate serve` printed (http://127.0.0.1:PORT/?token=…; it sets a cookie), or send `Authorization: Bearer <token>`. Set TOOLGATE_TOKEN before starting the server to choose the token.",
        )
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (
            self.status,
            Json(json!({"error": self.message, "code": self.code})),
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
            rejection.body_text().trim_end_matches('.')
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
            rejection.body_text().trim_end_matches('.')
        ),
    )
}
