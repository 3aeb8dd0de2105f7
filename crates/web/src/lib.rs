//! The workbench: an offline web editor for plots with the natural-language panel.
//!
//! [`router`] serves one page (HTML, CSS and JS embedded in the binary, nothing fetched from
//! anywhere else) and a JSON API over the workbench's [`Debrief`] — the same session MCP clients
//! attached to the workbench drive — so a person sees, selects, undoes and saves what they and
//! any agent did:
//!
//! | method + path | what |
//! |---|---|
//! | `GET /` | the page |
//! | `GET /api/config` | whether a chat backend is configured, and how to configure one |
//! | `GET /api/state` | active plot; per open plot version, dirty, undo/redo, selection |
//! | `GET /api/events` | server-sent `state` events whenever that state changes (live updates) |
//! | `POST /api/catalog/search` | catalogue search `{text?, startTime?, endTime?, platforms?, bbox?, limit?}` |
//! | `POST /api/plots/open` | `{plotId}` opens (or focuses) a plot |
//! | `GET /api/plot?plotId=&view=` | a plot's features (GeoJSON), bbox and inventory; default the active plot; `view=map` trims track positions to their times, with `position_courses`/`position_speeds` arrays beside them |
//! | `POST /api/select` | `{plotId?, ids}` sets the selection the agent tools use |
//! | `POST /api/undo`, `/api/redo`, `/api/revert`, `/api/save` | `{plotId?}`; save is a person's action only |
//! | `GET /api/datasets` | analytical results for the Results panel |
//! | `GET /api/settings`, `POST /api/settings` | `{"units": {"distance": "nm"\|"yd"\|"m"\|"km", "speed": "kn"\|"m/s"\|"km/h"}}`: the one unit setting (nautical miles and knots unless changed) filled into every tool run that leaves its unit out; POST changes it and answers the settings in force |
//! | `POST /api/chat` | `{utterance}` → server-sent [`ChatEvent`]s of one turn |
//! | `POST /api/chat/confirm` | `{id, answer: "approve" \| "decline"}` answers a confirmation (the chat's and the palette's) |
//! | `GET /api/tools` | the registry's tools for the palette: id, title, description, JSON Schema, whether it modifies the plot |
//! | `POST /api/tools/run` | `{toolId, params?, featureIds?, scope?, plotId?}` → server-sent events of one run through the same gate as the agents (`confirmationAsked` for a mutation, then `toolCallFinished`, `final`) |
//! | `GET /api/sessions` | every session of this instance: the page's own and each MCP client's (client, how it connected, open plots with dirty state) |
//! | `POST /api/import` | `{files: [{name, contentBase64}], plot?, replace?}` imports one or several REP files as ONE plot into the catalogue (as `toolgate import A.rep B.rep --plot NAME`); refuses to replace an existing plot unless `replace`, and never replaces one open here with unsaved edits |
//! | `GET /api/activity` | the activity log: each applied edit, undo, redo, save and revert (who, what, plot, session, when) |
//!
//! `GET /api/plot` and the undo/redo/revert/save bodies take an optional `session` (an id from
//! `/api/sessions`) to review or act on another session's plot; the default is the page's own.
//!
//! Every error is a 4xx/5xx with `{"error": "...", "code": "..."}`.
//!
//! Every request — the page, its assets, the API and the live stream — must carry a credential:
//! the server's [`AccessToken`] as `Authorization: Bearer <token>`, or the workbench session
//! cookie a visit to `/?token=<token>` sets. That cookie holds a per-start session secret, never
//! the token (browsers send cookies to every port of a host, and `/mcp` does not accept the
//! secret; see [`SESSION_COOKIE`]); it is HttpOnly, SameSite=Strict, and the visit is redirected
//! to the same URL without the token, so it does not stay in the address bar or the history.
//! Anything else gets 401: a small HTML page saying how to get the current URL for a page a
//! browser opens, `{"code": "unauthorized"}` for the API and the assets.

#![warn(unreachable_pub)]
pub mod calls;
pub mod error;
pub mod views;

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use futures_util::Stream;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::Notify;
use toolgate_core::AccessToken;
use toolgate_core::access::authority_host;
use toolgate_plot::activity::{Action, SessionDirectory};
use toolgate_plot::debrief::Debrief;
use toolgate_plot::search::SearchQuery;
use toolgate_plot::session::Session;

pub use calls::{ChatBackend, ChatEvent, Pending, WebConfirmer};
pub use error::ApiError;
use error::{ApiJson, ApiQuery, Shape};
pub use views::{InventoryRow, PlotState, SessionBrief, SessionView, StateView};

/// The id of the page's own session in the session list.
pub const WORKBENCH_SESSION: &str = "workbench";

/// Who the activity log names for runs from the page's tool palette.
pub const PALETTE_ACTOR: &str = "tool palette (this page)";

/// What the chat panel says when no model is configured.
pub const DEFAULT_CHAT_HINT: &str = "No chat model is configured, so the chat panel is off (the rest of the workbench works). Start the workbench with a local OpenAI-compatible model server, e.g. `toolgate serve --model-url http://127.0.0.1:8080/v1 --model <name>`; MCP clients (VS Code, Claude Code) can also drive this plot through the MCP endpoint.";

const INDEX_HTML: &str = include_str!("../assets/index.html");
/// The workbench's script: native ES modules served as written (no bundler, no build step), each
/// at `/assets/<name>`. `app.js` is the entry the page loads; it imports the rest, and
/// `tests/script_modules.rs` checks this list is exactly what it imports.
pub const SCRIPT_MODULES: &[(&str, &str)] = &[
    ("app.js", include_str!("../assets/app.js")),
    ("catalogue.js", include_str!("../assets/catalogue.js")),
    ("chat.js", include_str!("../assets/chat.js")),
    ("features.js", include_str!("../assets/features.js")),
    ("format.js", include_str!("../assets/format.js")),
    ("live.js", include_str!("../assets/live.js")),
    ("map.js", include_str!("../assets/map.js")),
    ("plot.js", include_str!("../assets/plot.js")),
    ("results.js", include_str!("../assets/results.js")),
    ("sessions.js", include_str!("../assets/sessions.js")),
    ("state.js", include_str!("../assets/state.js")),
    ("time.js", include_str!("../assets/time.js")),
    ("tools.js", include_str!("../assets/tools.js")),
];
const APP_CSS: &str = include_str!("../assets/app.css");
/// Natural Earth's 1:50m land (public domain), converted by `assets/land/make-land.js`; the map
/// draws the coastline from it. Its notice is served beside it.
const LAND_50M: &[u8] = include_bytes!("../assets/land/land-50m.bin");
const LAND_NOTICE: &str = include_str!("../assets/land/NOTICE.md");
const CSP: &str = "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'";

/// The workbench's shared state: the session (through [`Debrief`]), the optional chat backend
/// and the confirmations waiting on the page.
#[derive(Clone)]
pub struct WebState {
    debrief: Arc<Debrief>,
    chat: Option<Arc<dyn ChatBackend>>,
    chat_hint: String,
    pending: Arc<Pending>,
    changed: Arc<Notify>,
    turn: Arc<tokio::sync::Mutex<()>>,
    poll: Duration,
    confirm_timeout: Duration,
    allowed_hosts: Vec<String>,
    /// What every request may present as a bearer (the MCP token `toolgate serve` prints).
    token: AccessToken,
    /// This start's workbench session secret: what the cookie carries (see [`SESSION_COOKIE`]).
    session: AccessToken,
    /// Serialised plot bodies, newest last.
    plot_cache: Arc<std::sync::Mutex<Vec<CachedBody>>>,
    /// Every session of this instance and the activity log.
    directory: Arc<SessionDirectory>,
}

type CachedBody = (CacheKey, Arc<[u8]>);

#[derive(Debug, Clone, PartialEq, Eq)]
struct CacheKey {
    session: String,
    plot_id: String,
    map_only: bool,
    version: u64,
    file_modified: Option<std::time::SystemTime>,
}

impl WebState {
    /// A workbench over `debrief` without a chat backend, answering only requests that present
    /// `token` as a bearer or the session cookie a visit with `token` sets. Fails only when the
    /// operating system's random number generator does (the session secret is made here).
    pub fn new(
        debrief: Arc<Debrief>,
        token: AccessToken,
    ) -> Result<Self, toolgate_core::AccessTokenError> {
        // 32 fresh random bytes, unrelated to the token: a cookie read by another port reveals
        // nothing about the MCP endpoint's key.
        let session = AccessToken::generate()?;
        let directory = Arc::new(SessionDirectory::new());
        directory.register(
            Some(WORKBENCH_SESSION),
            "workbench",
            "this page (chat and tool palette)",
            "chat",
            debrief.clone(),
        );
        Ok(Self {
            debrief,
            chat: None,
            chat_hint: DEFAULT_CHAT_HINT.to_owned(),
            pending: Arc::new(Pending::default()),
            changed: Arc::new(Notify::new()),
            turn: Arc::new(tokio::sync::Mutex::new(())),
            poll: Duration::from_millis(200),
            confirm_timeout: Duration::from_secs(600),
            allowed_hosts: toolgate_core::access::LOOPBACK_HOSTS
                .iter()
                .map(|h| (*h).to_owned())
                .collect(),
            token,
            session,
            plot_cache: Arc::default(),
            directory,
        })
    }

    /// Every session of this instance and the activity log: give it to the MCP server
    /// (`McpShared::directory`) so its clients' sessions are listed on the page.
    pub fn directory(&self) -> &Arc<SessionDirectory> {
        &self.directory
    }

    /// The session `id` names (`None` or `workbench`: the page's own).
    fn debrief_for(&self, id: Option<&str>) -> Result<Arc<Debrief>, ApiError> {
        match id {
            None | Some(WORKBENCH_SESSION) => Ok(self.debrief.clone()),
            Some(id) => self.directory.get(id).ok_or_else(|| {
                ApiError::not_found(format!(
                    "No session \"{id}\" is listed (it may have ended with nothing unsaved). GET /api/sessions lists the sessions."
                ))
            }),
        }
    }

    /// The session list.
    pub fn session_views(&self) -> Vec<SessionView> {
        self.directory
            .sessions()
            .iter()
            .map(|l| SessionView::of(l, Arc::ptr_eq(&l.debrief, &self.debrief)))
            .collect()
    }

    /// Answer the chat panel with `backend`.
    #[must_use]
    pub fn with_chat(mut self, backend: Arc<dyn ChatBackend>) -> Self {
        self.chat = Some(backend);
        self
    }

    /// What the panel says when no backend is configured.
    #[must_use]
    pub fn with_chat_hint(mut self, hint: impl Into<String>) -> Self {
        self.chat_hint = hint.into();
        self
    }

    /// How often the live stream looks at the session for changes made elsewhere (MCP).
    #[must_use]
    pub fn with_poll_interval(mut self, every: Duration) -> Self {
        self.poll = every.max(Duration::from_millis(10));
        self
    }

    /// How long a confirmation waits for the person before it counts as declined.
    #[must_use]
    pub fn with_confirm_timeout(mut self, timeout: Duration) -> Self {
        self.confirm_timeout = timeout;
        self
    }

    /// Also answer requests whose `Host` is `host` (default: only 127.0.0.1, localhost and
    /// [::1], which keeps other web sites from reaching the workbench by DNS rebinding).
    #[must_use]
    pub fn allow_host(mut self, host: impl Into<String>) -> Self {
        self.allowed_hosts.push(host.into().to_ascii_lowercase());
        self
    }

    pub fn debrief(&self) -> &Arc<Debrief> {
        &self.debrief
    }

    /// Confirmations waiting for the page.
    pub fn pending(&self) -> &Arc<Pending> {
        &self.pending
    }

    /// Wake the live streams now (they also notice changes on their own within the poll
    /// interval).
    pub fn notify_changed(&self) {
        self.changed.notify_waiters();
    }

    fn session(&self) -> std::sync::MutexGuard<'_, Session> {
        self.debrief.session()
    }

    /// The state the live stream sends.
    pub fn snapshot(&self) -> StateView {
        let datasets = self.debrief.dataset_count();
        let mut view = StateView::of(&self.session(), datasets);
        view.sessions = self
            .session_views()
            .iter()
            .map(SessionView::brief)
            .collect();
        view.activity = self.directory.log().last_seq();
        view
    }
}

/// The workbench's routes over `state`.
pub fn router(state: WebState) -> Router {
    let mut router = Router::new();
    for &(name, body) in SCRIPT_MODULES {
        router = router.route(
            &format!("/assets/{name}"),
            get(move || async move { asset(body, "text/javascript; charset=utf-8") }),
        );
    }
    router
        .route("/", get(index))
        .route("/index.html", get(index))
        .route("/assets/app.css", get(app_css))
        .route("/assets/land-50m.bin", get(land_50m))
        .route("/assets/land-NOTICE.md", get(land_notice))
        .route("/api/config", get(config))
        .route("/api/state", get(get_state))
        .route("/api/events", get(events))
        .route("/api/catalog/search", post(catalog_search))
        .route("/api/plots/open", post(open_plot))
        .route("/api/plot", get(get_plot))
        .route("/api/select", post(select))
        .route("/api/undo", post(undo))
        .route("/api/redo", post(redo))
        .route("/api/revert", post(revert))
        .route("/api/save", post(save))
        .route("/api/datasets", get(datasets))
        .route("/api/settings", get(get_settings).post(set_settings))
        .route("/api/chat", post(calls::chat))
        .route("/api/chat/confirm", post(calls::confirm))
        .route("/api/tools", get(tools))
        .route("/api/tools/run", post(calls::run_tool))
        .route("/api/sessions", get(sessions))
        .route("/api/activity", get(activity))
        .route(
            "/api/import",
            post(import_rep).layer(axum::extract::DefaultBodyLimit::max(IMPORT_BODY_LIMIT)),
        )
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(middleware::from_fn_with_state(state.clone(), guard))
        .with_state(state)
}

/// Serve the workbench on `listener` until the process ends.
pub async fn serve_on(listener: tokio::net::TcpListener, state: WebState) -> std::io::Result<()> {
    axum::serve(listener, router(state)).await
}

/// Serve the workbench on `listener` until `shutdown` completes.
pub async fn serve_until(
    listener: tokio::net::TcpListener,
    state: WebState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(state))
        .with_graceful_shutdown(shutdown)
        .await
}

// ------------------------------------------------------------------------------------------------
// guards and fallbacks

/// The port of a strictly parsed `host:port` (see [`authority_host`]).
fn authority_port(authority: &str) -> Option<&str> {
    authority_host(authority)?;
    let (_, port) = authority.rsplit_once(':')?;
    port.bytes().all(|b| b.is_ascii_digit()).then_some(port)
}

/// The host of an `Origin` (`scheme://host[:port]`, nothing after it).
fn origin_host(origin: &str) -> Option<String> {
    let rest = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))?;
    authority_host(rest)
}

/// The workbench's cookie, set by a visit of the URL `toolgate serve` printed.
///
/// Why a separate secret and not the MCP token (issue 30): browsers send a host's cookies to
/// every port of that host, so any other server on 127.0.0.1 the person visits receives this
/// cookie. It therefore carries the per-start [`WebState`] session secret — 32 random bytes, not
/// derived from the token — which the workbench's page, assets and API accept and `/mcp` never
/// does (that endpoint reads only `Authorization: Bearer <token>`). A cookie rather than
/// `sessionStorage` and a header because the page, its assets and the live stream
/// (`EventSource`, which cannot send headers) then need no script to authenticate, a reload keeps
/// working, and an XSS could not read the secret (HttpOnly). What remains: a server on another
/// port of this host that the browser visits can replay the cookie against this workbench's page
/// and API until the server stops — no cookie scope (`Path`, `SameSite`, no `Domain`) separates
/// ports — but never against `/mcp`, and never learns the token.
///
/// The port is part of the name so two workbenches on one machine keep their own.
const SESSION_COOKIE: &str = "toolgate_session";

/// The cookie earlier versions set, which carried the MCP token itself: no longer accepted, and
/// expired wherever a browser still sends it.
const LEGACY_TOKEN_COOKIE: &str = "toolgate_token";

fn cookie_name(prefix: &str, host: Option<&str>) -> String {
    match host.and_then(authority_port) {
        Some(port) => format!("{prefix}_{port}"),
        None => prefix.to_owned(),
    }
}

fn host_header(req: &Request) -> Option<&str> {
    req.headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
}

/// The request's cookies as `(name, value)` pairs.
fn cookies(req: &Request) -> impl Iterator<Item = (&str, &str)> {
    req.headers()
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .map(|(name, value)| (name.trim(), value.trim()))
}

fn is_cookie_named(name: &str, prefix: &str) -> bool {
    name == prefix
        || name
            .strip_prefix(prefix)
            .and_then(|rest| rest.strip_prefix('_'))
            .is_some_and(|port| !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()))
}

/// Whether the request carries the MCP token as `Authorization: Bearer`, or this start's
/// session secret in the workbench cookie. The session secret is accepted only as that cookie
/// (and the token never as a cookie), so neither credential turns into the other.
fn authenticated(st: &WebState, req: &Request) -> bool {
    let bearer = req
        .headers()
        .get_all(header::AUTHORIZATION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| st.token.matches_bearer(v));
    bearer
        || cookies(req)
            .any(|(name, value)| is_cookie_named(name, SESSION_COOKIE) && st.session.matches(value))
}

/// The cookie that expires what earlier versions left, when the request still carries it.
fn expire_legacy_cookie(req: &Request) -> Option<HeaderValue> {
    let name = cookies(req)
        .map(|(name, _)| name)
        .find(|name| is_cookie_named(name, LEGACY_TOKEN_COOKIE))?;
    HeaderValue::from_str(&format!(
        "{name}=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict"
    ))
    .ok()
}

/// A page a browser opens (rather than the API or an asset the page loads): a refusal there is
/// the HTML page that says what to do, not JSON.
fn wants_page(req: &Request) -> bool {
    let path = req.uri().path();
    if path == "/api" || path.starts_with("/api/") || path.starts_with("/assets/") {
        return false;
    }
    path == "/"
        || path == "/index.html"
        || req
            .headers()
            .get_all(header::ACCEPT)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .any(|v| v.contains("text/html"))
}

/// The 401 for a request without a valid credential: the HTML page for a page, JSON otherwise.
fn unauthorized(req: &Request) -> Response {
    let mut res = if wants_page(req) {
        error::unauthorized_page()
    } else {
        ApiError::unauthorized().into_response()
    };
    if let Some(expire) = expire_legacy_cookie(req) {
        res.headers_mut().append(header::SET_COOKIE, expire);
    }
    res
}

/// `(token, the rest of the query)` when the query has a `token=` parameter.
fn query_token(query: Option<&str>) -> Option<(&str, String)> {
    let query = query?;
    let mut found = None;
    let mut rest = Vec::new();
    for pair in query.split('&') {
        match pair.strip_prefix("token=") {
            Some(t) if found.is_none() => found = Some(t),
            _ if pair == "token" || pair.starts_with("token=") => {}
            _ => rest.push(pair),
        }
    }
    Some((found?, rest.join("&")))
}

/// The answer to a visit of `…?token=<the token>`: the session cookie (never the token), and a
/// redirect to the same URL without the token.
fn token_redirect(st: &WebState, req: &Request, rest: &str) -> Response {
    // "//host/…" would be a redirect to another site.
    let path = req.uri().path();
    let path = if path.starts_with('/') && !path.starts_with("//") {
        path
    } else {
        "/"
    };
    let location = if rest.is_empty() {
        path.to_owned()
    } else {
        format!("{path}?{rest}")
    };
    let cookie = format!(
        "{}={}; Path=/; HttpOnly; SameSite=Strict",
        cookie_name(SESSION_COOKIE, host_header(req)),
        st.session.reveal()
    );
    let mut res = StatusCode::SEE_OTHER.into_response();
    let h = res.headers_mut();
    if let (Ok(location), Ok(cookie)) = (
        HeaderValue::from_str(&location),
        HeaderValue::from_str(&cookie),
    ) {
        h.insert(header::LOCATION, location);
        h.insert(header::SET_COOKIE, cookie);
    } else {
        return ApiError::bad_request("That URL cannot be redirected; open / with ?token=….")
            .into_response();
    }
    if let Some(expire) = expire_legacy_cookie(req) {
        h.append(header::SET_COOKIE, expire);
    }
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    res
}

/// Refuse requests addressed to a host name other than the loopback ones (DNS rebinding),
/// state-changing requests sent from another site's page, and every request without a
/// credential (the token as a bearer, or the session cookie).
async fn guard(State(st): State<WebState>, req: Request, next: Next) -> Response {
    let allowed = |h: &str| st.allowed_hosts.iter().any(|a| a == h);
    if let Some(host) = req.headers().get(header::HOST) {
        let ok = host
            .to_str()
            .ok()
            .and_then(authority_host)
            .is_some_and(|h| allowed(&h));
        if !ok {
            return ApiError::new(
                StatusCode::FORBIDDEN,
                "host_not_allowed",
                "The workbench only answers requests addressed to 127.0.0.1, localhost or [::1] (with an optional :port and nothing else). Open it at the URL `toolgate serve` printed.",
            )
            .into_response();
        }
    }
    if req.method() != Method::GET
        && req.method() != Method::HEAD
        && let Some(origin) = req.headers().get(header::ORIGIN)
    {
        let ok = origin
            .to_str()
            .ok()
            .and_then(origin_host)
            .is_some_and(|h| allowed(&h));
        if !ok {
            return ApiError::new(
                StatusCode::FORBIDDEN,
                "origin_not_allowed",
                "Changes are only accepted from the workbench page itself.",
            )
            .into_response();
        }
    }
    // A token in the URL is only taken from a visit (GET/HEAD), and only to swap it for the
    // session cookie: changes never authenticate by URL.
    if (req.method() == Method::GET || req.method() == Method::HEAD)
        && let Some((presented, rest)) = query_token(req.uri().query())
    {
        if st.token.matches(presented) {
            return token_redirect(&st, &req, &rest);
        }
        return unauthorized(&req);
    }
    if !authenticated(&st, &req) {
        return unauthorized(&req);
    }
    let expire = expire_legacy_cookie(&req);
    // No handler needs the credentials; dropping them here keeps them out of anything that
    // might log a request further in.
    let mut req = req;
    req.headers_mut().remove(header::AUTHORIZATION);
    req.headers_mut().remove(header::COOKIE);
    let mut res = next.run(req).await;
    if let Some(expire) = expire {
        res.headers_mut().append(header::SET_COOKIE, expire);
    }
    res
}

async fn not_found(req: Request) -> ApiError {
    ApiError::not_found(format!(
        "Nothing at {} {}. The page is at / and the API under /api/ (see GET /api/config).",
        req.method(),
        req.uri().path()
    ))
}

async fn method_not_allowed(req: Request) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!(
            "{} is not accepted at {}: reads are GET, changes are POST with a JSON body.",
            req.method(),
            req.uri().path()
        ),
    )
}

// ------------------------------------------------------------------------------------------------
// the page

fn asset(body: &'static str, content_type: &'static str) -> Response {
    let mut res = body.into_response();
    let h = res.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    res
}

/// The page, with the session state and the config embedded as a JSON data block (not a
/// script: the CSP allows none inline), so an open plot's features are asked for at once.
async fn index(State(st): State<WebState>) -> Response {
    let boot = json!({"config": config_value(&st), "state": st.snapshot(), "settings": settings_json(&st)});
    let mut res = asset("", "text/html; charset=utf-8");
    *res.body_mut() = axum::body::Body::from(page_with_boot(&boot));
    res
}

/// The page with `boot` in a JSON data block; `<` is escaped so no text in it (a plot title, a
/// feature name) can close the element.
fn page_with_boot(boot: &Value) -> String {
    let json = serde_json::to_string(boot)
        .unwrap_or_else(|_| "{}".to_owned())
        .replace('<', "\\u003c");
    // The open plot's features are asked for while the page is still being read, not once its
    // script has run: the URL is the one the page's `loadPlot` fetches, byte for byte, so the
    // browser hands that fetch this response.
    let preload = boot["state"]["activePlot"]
        .as_str()
        .map(|id| {
            format!(
                "<link rel=\"preload\" as=\"fetch\" crossorigin=\"anonymous\" href=\"/api/plot?view=map&amp;plotId={}\">\n",
                uri_component(id)
            )
        })
        .unwrap_or_default();
    INDEX_HTML.replacen(
        "<!--BOOT-->",
        &format!("{preload}<script type=\"application/json\" id=\"boot\">{json}</script>"),
        1,
    )
}

/// `s` as JavaScript's `encodeURIComponent` writes it (every byte but `A-Z a-z 0-9 - _ . ! ~ * '
/// ( )` percent-encoded, UTF-8), so a URL built here equals the one the page builds.
fn uri_component(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.!~*'()".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

async fn app_css() -> Response {
    asset(APP_CSS, "text/css; charset=utf-8")
}

async fn land_50m() -> Response {
    let mut res = asset("", "application/octet-stream");
    *res.body_mut() = axum::body::Body::from(LAND_50M);
    res
}

async fn land_notice() -> Response {
    asset(LAND_NOTICE, "text/markdown; charset=utf-8")
}

// ------------------------------------------------------------------------------------------------
// API

async fn config(State(st): State<WebState>) -> Json<Value> {
    Json(config_value(&st))
}

fn config_value(st: &WebState) -> Value {
    json!({
        "name": "toolgate workbench",
        "version": env!("CARGO_PKG_VERSION"),
        "chat": {
            "configured": st.chat.is_some(),
            "description": st.chat.as_ref().map(|c| c.describe()),
            "hint": if st.chat.is_some() { None } else { Some(st.chat_hint.clone()) },
        },
        "pollMs": u64::try_from(st.poll.as_millis()).unwrap_or(u64::MAX),
    })
}

async fn get_state(State(st): State<WebState>) -> Json<StateView> {
    Json(st.snapshot())
}

/// Live updates: a `state` event now and whenever the session's state changes — by the page,
/// by the chat, or by an MCP client driving the same session.
///
/// The state is serialised only when its [`WebState::change_stamp`] moved: the page's own
/// changes wake the stream at once (`notify_changed`); changes made through other surfaces (MCP
/// clients' sessions) are noticed by reading that stamp — a few integers, no serialisation —
/// every poll interval.
async fn events(State(st): State<WebState>) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let stream = futures_util::stream::unfold(
        (st, None::<String>, None::<ChangeStamp>),
        |(st, last, seen)| async move {
            let mut seen = seen;
            loop {
                if last.is_some() {
                    tokio::select! {
                        () = tokio::time::sleep(st.poll) => {}
                        () = st.changed.notified() => {}
                    }
                }
                let stamp = st.change_stamp();
                if seen.as_ref() == Some(&stamp) {
                    continue;
                }
                seen = Some(stamp);
                let snap = serde_json::to_string(&st.snapshot()).unwrap_or_default();
                if last.as_deref() != Some(snap.as_str()) {
                    let event = Event::default().event("state").data(snap.clone());
                    return Some((Ok(event), (st, Some(snap), seen)));
                }
            }
        },
    );
    Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}

/// What the live stream compares to know whether the state may have changed: the generation of
/// every listed session (the page's own among them), whether each is still connected, the
/// number of analysis results and the activity log's newest entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangeStamp {
    sessions: Vec<(String, u64, bool)>,
    datasets: usize,
    activity: u64,
}

impl WebState {
    /// The current [`ChangeStamp`]: cheap (a lock and a few integers per session).
    pub fn change_stamp(&self) -> ChangeStamp {
        let own = self.debrief.session().generation();
        let mut sessions = vec![(WORKBENCH_SESSION.to_owned(), own, true)];
        for l in self.directory.sessions() {
            if Arc::ptr_eq(&l.debrief, &self.debrief) {
                continue;
            }
            let generation = l.debrief.session().generation();
            sessions.push((l.id.clone(), generation, l.connected()));
        }
        ChangeStamp {
            sessions,
            datasets: self.debrief.dataset_count(),
            activity: self.directory.log().last_seq(),
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SearchBody {
    text: Option<String>,
    start_time: Option<String>,
    end_time: Option<String>,
    #[serde(default)]
    platforms: Vec<String>,
    bbox: Option<[f64; 4]>,
    limit: Option<usize>,
}

impl Shape for SearchBody {
    const SHAPE: &'static str = r#"{"text": "alpha", "startTime": "2026-03-01", "endTime": "2026-03-02", "platforms": ["NELSON"], "bbox": [-6, 49, -3, 51], "limit": 50} (every field optional)"#;
}

async fn catalog_search(
    State(st): State<WebState>,
    ApiJson(body): ApiJson<SearchBody>,
) -> Result<Json<Value>, ApiError> {
    if let Some(b) = body.bbox
        && b.iter().any(|x| !x.is_finite())
    {
        return Err(ApiError::bad_request(
            "\"bbox\" must be four finite numbers [west, south, east, north].",
        ));
    }
    let query = SearchQuery {
        text: body.text.filter(|t| !t.trim().is_empty()),
        start_time: body.start_time.filter(|t| !t.trim().is_empty()),
        end_time: body.end_time.filter(|t| !t.trim().is_empty()),
        platforms: body.platforms,
        bbox: body.bbox,
        limit: body.limit,
    };
    let apis = st.session().api_stores().to_vec();
    let searched = if apis.is_empty() {
        let mut session = st.session();
        session.refresh_stores();
        toolgate_plot::stac_api::search_catalogues(session.stores(), &[], &query)
    } else {
        // A STAC API is asked off the runtime, without the session lock.
        let folders: Vec<toolgate_plot::store::StacStore> = {
            let mut session = st.session();
            session.refresh_stores();
            session
                .stores()
                .iter()
                .filter(|f| !apis.iter().any(|a| a.id == f.id))
                .cloned()
                .collect()
        };
        tokio::task::spawn_blocking(move || {
            toolgate_plot::stac_api::search_catalogues(&folders, &apis, &query)
        })
        .await
        .map_err(|e| ApiError::bad_request(format!("internal: the search stopped ({e})")))?
    };
    let result = searched.map_err(|e| match e {
        e @ (toolgate_plot::stac_api::SearchError::Invalid(_)
        | toolgate_plot::stac_api::SearchError::Stopped { .. }) => {
            ApiError::bad_request(e.to_string())
        }
        api => ApiError::new(
            StatusCode::BAD_GATEWAY,
            "catalogue_unavailable",
            api.to_string(),
        ),
    })?;
    let session = st.session();
    let open: Vec<&str> = session.open_plots().iter().map(|p| p.id.as_str()).collect();
    let mut reply = serde_json::to_value(&result).unwrap_or(Value::Null);
    reply["openPlots"] = json!(open);
    Ok(Json(reply))
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct OpenBody {
    plot_id: String,
}

impl Shape for OpenBody {
    const SHAPE: &'static str = r#"{"plotId": "stac://demo/alpha-day1/item.json"}"#;
}

async fn open_plot(
    State(st): State<WebState>,
    ApiJson(body): ApiJson<OpenBody>,
) -> Result<Json<StateView>, ApiError> {
    // Read off the runtime and without the session lock (a FIFO must not freeze the server).
    st.debrief.open_plot(&body.plot_id).await?;
    st.notify_changed();
    Ok(Json(st.snapshot()))
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PlotQuery {
    plot_id: Option<String>,
    /// A session id from `/api/sessions` (default: the page's own).
    session: Option<String>,
    /// `map`: track positions carry only their times; courses and speeds come as arrays beside
    /// them (what the page draws).
    view: Option<PlotViewKind>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum PlotViewKind {
    Full,
    Map,
}

impl Shape for PlotQuery {
    const SHAPE: &'static str =
        "?plotId=stac://demo/alpha-day1/item.json&view=full|map&session=mcp-1 (all optional)";
}

impl Shape for PlotRef {
    const SHAPE: &'static str = r#"{"plotId": "stac://demo/alpha-day1/item.json", "session": "mcp-1"} (both optional: the active plot of the page's own session)"#;
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PlotRef {
    plot_id: Option<String>,
    /// A session id from `/api/sessions` (default: the page's own).
    session: Option<String>,
}

/// Who the activity log names for the person's own actions on the page.
const PERSON: &str = "you (this page)";

fn target(session: &Session, plot_id: Option<String>) -> Result<String, ApiError> {
    match plot_id {
        Some(id) => {
            session.plot(&id)?;
            Ok(id)
        }
        None => Ok(session.active()?.id.clone()),
    }
}

async fn get_plot(
    State(st): State<WebState>,
    ApiQuery(q): ApiQuery<PlotQuery>,
) -> Result<Response, ApiError> {
    let encode = |e: serde_json::Error| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "serialise",
            format!("could not encode the plot: {e}"),
        )
    };
    let debrief = st.debrief_for(q.session.as_deref())?;
    let session = debrief.session();
    let id = target(&session, q.plot_id)?;
    let plot = session.plot(&id)?;
    // The features only change with the version: serialise them once per version (the page,
    // a reload and a second tab all ask for the same one). A plot closed and opened again starts
    // at version 1 once more, from its file: the file's modification time tells those apart.
    let map_only = q.view == Some(PlotViewKind::Map);
    let key = CacheKey {
        session: q.session.unwrap_or_default(),
        plot_id: id.clone(),
        map_only,
        version: plot.doc.version(),
        file_modified: std::fs::metadata(plot.doc.path())
            .and_then(|m| m.modified())
            .ok(),
    };
    let mut cache = st
        .plot_cache
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let body = match cache.iter().find(|c| c.0 == key) {
        Some(c) => c.1.clone(),
        None => {
            let body: Arc<[u8]> = views::plot_body(plot, map_only).map_err(encode)?.into();
            cache.retain(|c| {
                c.0.plot_id != id || c.0.map_only != map_only || c.0.session != key.session
            });
            cache.push((key, body.clone()));
            if cache.len() > 4 {
                cache.remove(0);
            }
            body
        }
    };
    drop(cache);
    let bytes = views::plot_answer(plot, session.active_id() == Some(id.as_str()), &body)
        .map_err(encode)?;
    drop(session);
    Ok((
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        bytes,
    )
        .into_response())
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SelectBody {
    plot_id: Option<String>,
    ids: Vec<String>,
}

impl Shape for SelectBody {
    const SHAPE: &'static str =
        r#"{"ids": ["track-nelson", "track-contact/positions/4"], "plotId": "…" (optional)}"#;
}

async fn select(
    State(st): State<WebState>,
    ApiJson(body): ApiJson<SelectBody>,
) -> Result<Json<StateView>, ApiError> {
    {
        let mut session = st.session();
        let id = target(&session, body.plot_id)?;
        let plot = session.plot(&id)?;
        let unknown: Vec<&str> = body
            .ids
            .iter()
            .filter(|s| !views::resolves(plot, s))
            .map(String::as_str)
            .collect();
        if !unknown.is_empty() {
            return Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "unknown_feature",
                format!(
                    "No feature in \"{}\" matches {}. Select feature ids from GET /api/plot, or nested paths like <id>/positions/4.",
                    plot.title,
                    unknown
                        .iter()
                        .map(|u| format!("\"{u}\""))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
        session.select(&id, body.ids)?;
    }
    st.notify_changed();
    Ok(Json(st.snapshot()))
}

/// Run a document action on the target plot of the session `session` names and answer with a
/// message and the new state; the action is logged as the person's.
fn act(
    st: &WebState,
    body: PlotRef,
    logged: Action,
    action: impl FnOnce(&mut Session, &str) -> Result<String, ApiError>,
) -> Result<Json<Value>, ApiError> {
    let debrief = st.debrief_for(body.session.as_deref())?;
    let (id, message, label) = {
        let mut session = debrief.session();
        let id = target(&session, body.plot_id)?;
        let label = action(&mut session, &id)?;
        let message = match (logged, label.is_empty()) {
            (Action::Undo, true) => "Undid the last change.".to_owned(),
            (Action::Undo, false) => format!("Undid: {label}"),
            (_, true) => "Redid the change.".to_owned(),
            (_, false) => format!("Redid: {label}"),
        };
        (id, message, label)
    };
    debrief.note_activity(Some(PERSON), logged, &id, &label);
    st.notify_changed();
    Ok(Json(json!({"message": message, "state": st.snapshot()})))
}

async fn undo(
    State(st): State<WebState>,
    ApiJson(body): ApiJson<PlotRef>,
) -> Result<Json<Value>, ApiError> {
    act(&st, body, Action::Undo, |s, id| Ok(s.undo(id)?))
}

async fn redo(
    State(st): State<WebState>,
    ApiJson(body): ApiJson<PlotRef>,
) -> Result<Json<Value>, ApiError> {
    act(&st, body, Action::Redo, |s, id| Ok(s.redo(id)?))
}

async fn revert(
    State(st): State<WebState>,
    ApiJson(body): ApiJson<PlotRef>,
) -> Result<Json<Value>, ApiError> {
    let debrief = st.debrief_for(body.session.as_deref())?;
    let id = target(&debrief.session(), body.plot_id)?;
    // The file is read off the runtime and without the session lock, as for opening.
    debrief.revert_plot(&id).await?;
    debrief.note_activity(
        Some(PERSON),
        Action::Revert,
        &id,
        "discarded the unsaved changes",
    );
    st.notify_changed();
    Ok(Json(json!({
        "message": "Reverted to the saved file; unsaved changes were discarded.",
        "state": st.snapshot()
    })))
}

/// Save is a person's action: only this endpoint (the Save button, Ctrl/Cmd+S) writes a plot.
/// It refuses when the file changed on disk since it was opened.
async fn save(
    State(st): State<WebState>,
    ApiJson(body): ApiJson<PlotRef>,
) -> Result<Json<Value>, ApiError> {
    let debrief = st.debrief_for(body.session.as_deref())?;
    let id = target(&debrief.session(), body.plot_id)?;
    // Checked and written off the runtime and without the session lock.
    debrief.save_plot(&id).await?;
    let path = debrief
        .session()
        .plot(&id)?
        .doc
        .path()
        .display()
        .to_string();
    tracing::info!(plot = %id, %path, "saved");
    debrief.note_activity(Some(PERSON), Action::Save, &id, &format!("saved to {path}"));
    st.notify_changed();
    Ok(Json(
        json!({"message": format!("Saved to {path}."), "state": st.snapshot()}),
    ))
}

async fn datasets(State(st): State<WebState>) -> Json<Value> {
    Json(json!({"datasets": st.debrief.datasets()}))
}

/// `{"units": {"distance": "nm" | "yd" | "m" | "km", "speed": "kn" | "m/s" | "km/h"}}`.
fn settings_json(st: &WebState) -> Value {
    json!({"units": st.debrief.units().to_json()})
}

/// The workbench's settings: the one unit setting every tool run from the page, the chat or an
/// attached agent uses where the call leaves its unit out (nautical miles and knots unless
/// changed), and that the page shows results, charts and CSV in.
async fn get_settings(State(st): State<WebState>) -> Json<Value> {
    Json(settings_json(&st))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SettingsBody {
    units: Value,
}

impl Shape for SettingsBody {
    const SHAPE: &'static str = r#"{"units": {"distance": "nm" | "yd" | "m" | "km", "speed": "kn" | "m/s" | "km/h"}} (either unit may be left out: it goes back to nm or kn)"#;
}

/// Change the unit setting; answers the settings now in force.
async fn set_settings(
    State(st): State<WebState>,
    ApiJson(body): ApiJson<SettingsBody>,
) -> Result<Json<Value>, ApiError> {
    let units = toolgate_plot::tools::units::Units::from_json(&body.units)
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    st.debrief.set_units(units);
    st.changed.notify_waiters();
    Ok(Json(settings_json(&st)))
}

// ------------------------------------------------------------------------------------------------
// the tool palette, the session list and the activity log

/// The registry's tools for the palette, each with its JSON Schema (the page builds the form
/// from it) and whether it modifies the plot (then running it asks first).
async fn tools(State(st): State<WebState>) -> Json<Value> {
    let registry = st.debrief.registry();
    let schemas: std::collections::HashMap<&str, &Value> = registry
        .specs()
        .map(|s| (s.id.as_str(), &s.input_schema))
        .collect();
    let tools: Vec<Value> = registry
        .listing()
        .into_iter()
        .map(|t| {
            json!({
                "id": t.id,
                "title": t.name,
                "description": t.description,
                "category": t.category,
                "mutating": t.mutating,
                "outputKind": t.output_kind,
                "inputSchema": schemas.get(t.id.as_str()).copied().cloned().unwrap_or(json!({})),
            })
        })
        .collect();
    Json(json!({ "tools": tools }))
}

/// Every session of this instance: the page's own and each MCP client's.
async fn sessions(State(st): State<WebState>) -> Json<Value> {
    Json(json!({ "sessions": st.session_views() }))
}

/// The activity log, oldest first.
/// Most bytes one import request may carry (base64 JSON: about 48 MB of REP files). Other
/// requests keep axum's 2 MB default.
pub const IMPORT_BODY_LIMIT: usize = 64 * 1024 * 1024;

/// Most bytes of an imported file's name (`NAME_MAX` of Linux file systems).
pub const MAX_IMPORT_FILE_NAME_BYTES: usize = 255;

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ImportBody {
    files: Vec<ImportFile>,
    plot: Option<String>,
    #[serde(default)]
    replace: bool,
    /// Add the files' layers to this existing plot (its id or short name) instead of making a
    /// new one (`toolgate import --into`).
    into: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ImportFile {
    name: String,
    content_base64: String,
}

impl Shape for ImportBody {
    const SHAPE: &'static str = r#"{"files": [{"name": "ownship.rep", "contentBase64": "..."}, {"name": "contacts.rep", "contentBase64": "..."}], "plot": "Exercise Bravo", "replace": false} or, to add the files to a plot, {"files": [...], "into": "stac://…/item.json"}"#;
}

/// An import's message as the page words it (its "Plot name" field and "Replace" checkbox,
/// not the command line's flags).
fn for_the_page(e: &toolgate_plot::import::ImportError) -> String {
    e.message_for(toolgate_plot::run::Audience::Page)
}

/// The blocking half of an import panicked or was cancelled.
fn import_stopped(e: tokio::task::JoinError) -> ApiError {
    ApiError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        "internal",
        format!("the import stopped: {e}"),
    )
}

/// Each REP file's report as the import box shows it (both a new plot and "Add to the open plot").
fn file_reports(files: &[toolgate_plot::import::FileReport]) -> Vec<Value> {
    files
        .iter()
        .map(|f| {
            json!({
                "name": f.name,
                "windows1252": f.windows_1252,
                "kinds": f.kinds.iter().map(|(k, n)| json!({"kind": k, "count": n})).collect::<Vec<_>>(),
                "positions": f.positions,
                "contacts": f.contacts,
                "notImported": f.unhandled,
                "undated": f.undated,
            })
        })
        .collect()
}

/// Import REP files as one plot into the first catalogue, as a person's action from the page.
async fn import_rep(
    State(st): State<WebState>,
    ApiJson(body): ApiJson<ImportBody>,
) -> Result<Json<Value>, ApiError> {
    use base64::Engine as _;
    use toolgate_core::clip::quote;
    let mut sources = Vec::with_capacity(body.files.len());
    for f in &body.files {
        // A name is quoted in every message about its file: a longer one than a file system
        // allows is refused before anything quotes it whole.
        if f.name.len() > MAX_IMPORT_FILE_NAME_BYTES {
            return Err(ApiError::bad_request(format!(
                "a file name of {} bytes (\"{}\"): a file name is at most {MAX_IMPORT_FILE_NAME_BYTES} bytes. Rename the file.",
                f.name.len(),
                quote(&f.name)
            )));
        }
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(f.content_base64.as_bytes())
            .map_err(|e| {
                ApiError::bad_request(format!(
                    "\"{}\": contentBase64 is not base64 ({e}). Send each file's bytes base64-encoded.",
                    quote(&f.name)
                ))
            })?;
        // Only the file's own name: a path in it says nothing about where the plot goes.
        let name = std::path::Path::new(&f.name)
            .file_name()
            .map_or_else(|| f.name.clone(), |n| n.to_string_lossy().into_owned());
        sources.push(toolgate_plot::import::RepSource {
            name,
            bytes,
            path: None,
        });
    }
    if let Some(into) = body.into.filter(|p| !p.trim().is_empty()) {
        if body.plot.as_deref().is_some_and(|p| !p.trim().is_empty()) || body.replace {
            return Err(ApiError::bad_request(
                "Adding files to a plot takes no plot name and replaces nothing: send \"into\" \
                 alone, or \"plot\"/\"replace\" without it.",
            ));
        }
        return add_to_plot(&st, &into, sources).await;
    }
    let plot_name = body.plot.filter(|p| !p.trim().is_empty());
    let prepared = {
        let sources = sources.clone();
        let plot_name = plot_name.clone();
        tokio::task::spawn_blocking(move || {
            toolgate_plot::import::prepare_plot(&sources, plot_name.as_deref())
        })
        .await
        .map_err(import_stopped)?
        .map_err(|e| ApiError::bad_request(for_the_page(&e)))?
    };
    let mut store = {
        let session = st.session();
        let Some(store) = session.stores().first() else {
            return Err(ApiError::conflict(
                "This workbench has no catalogue to import into; start it with --store DIR.",
            ));
        };
        // A plot open here with unsaved edits is never replaced under the person's feet.
        let plot_id = format!("stac://{}/{}/item.json", store.id, prepared.dir);
        if body.replace
            && session
                .open_plots()
                .iter()
                .any(|p| p.id == plot_id && p.doc.is_dirty())
        {
            return Err(ApiError::conflict(format!(
                "\"{}\" is open with unsaved edits; save or revert them before replacing it. Nothing was imported.",
                prepared.title
            )));
        }
        store.clone()
    };
    let written = {
        let prepared = prepared.clone();
        tokio::task::spawn_blocking(move || {
            store
                .add_prepared(&prepared, body.replace)
                .map(|w| (w, store))
        })
        .await
        .map_err(import_stopped)?
    };
    let (written, _) = written.map_err(|e| match e {
        toolgate_plot::import::ImportError::Exists { .. } => ApiError::conflict(for_the_page(&e)),
        other => ApiError::bad_request(for_the_page(&other)),
    })?;
    st.session().refresh_stores();
    st.directory
        .log()
        .push(toolgate_plot::activity::ActivityEntry {
            seq: 0,
            at: String::new(),
            who: PERSON.to_owned(),
            session: WORKBENCH_SESSION.to_owned(),
            action: Action::Import,
            plot_id: written.plot_id.clone(),
            plot_title: prepared.title.clone(),
            what: format!(
                "import: {} file(s){}",
                prepared.files.len(),
                if written.replaced {
                    ", replacing the plot"
                } else {
                    ""
                }
            ),
        });
    st.notify_changed();
    let files = file_reports(&prepared.files);
    Ok(Json(json!({
        "plotId": written.plot_id,
        "title": prepared.title,
        "replaced": written.replaced,
        "discardedSavedEdits": written.discarded_saved_edits,
        "undated": prepared.undated,
        "kinds": prepared.kinds.iter().map(|(k, n)| json!({"kind": k, "count": n})).collect::<Vec<_>>(),
        "files": files,
    })))
}

/// The files' layers added to an existing plot of this workbench's catalogues (`into`: its id
/// or short name): what names its tracks attaches to them. A plot open here with unsaved edits
/// is not changed under the person's feet; an open plot without them shows the addition.
async fn add_to_plot(
    st: &WebState,
    into: &str,
    sources: Vec<toolgate_plot::import::RepSource>,
) -> Result<Json<Value>, ApiError> {
    use toolgate_core::clip::quote;
    let (plot_id, mut store) = {
        let mut session = st.session();
        let found = session.plots_named(into);
        let plot_id = match found.as_slice() {
            [(id, _)] => id.clone(),
            [] => {
                return Err(ApiError::bad_request(format!(
                    "There is no plot \"{}\" to add the files to. Open the plot and tick \"Add \
                     to the open plot\", or import the files as a new plot.",
                    quote(into)
                )));
            }
            many => {
                return Err(ApiError::bad_request(format!(
                    "\"{}\" could be {} plots ({}); open the one you mean and add the files to it.",
                    quote(into),
                    many.len(),
                    many.iter()
                        .map(|(_, title)| title.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
        };
        if session
            .open_plots()
            .iter()
            .any(|p| p.id == plot_id && p.doc.is_dirty())
        {
            return Err(ApiError::conflict(
                "That plot is open with unsaved edits; save or revert them before adding files \
                 to it. Nothing was added.",
            ));
        }
        let Some((store, _)) = session.find_item(&plot_id) else {
            return Err(ApiError::conflict(
                "That plot is in a catalogue files cannot be added to here (a STAC API); import \
                 the files as a new plot instead.",
            ));
        };
        (plot_id, store.clone())
    };
    let added = {
        let plot_id = plot_id.clone();
        tokio::task::spawn_blocking(move || store.add_to_plot(&plot_id, &sources))
            .await
            .map_err(import_stopped)?
            .map_err(|e| ApiError::bad_request(for_the_page(&e)))?
    };
    {
        let mut session = st.session();
        session.refresh_stores();
        let open_clean = session
            .open_plots()
            .iter()
            .any(|p| p.id == plot_id && !p.doc.is_dirty());
        if open_clean && let Err(e) = session.revert(&plot_id) {
            tracing::warn!("could not show the files added to {plot_id}: {e}");
        }
    }
    st.directory
        .log()
        .push(toolgate_plot::activity::ActivityEntry {
            seq: 0,
            at: String::new(),
            who: PERSON.to_owned(),
            session: WORKBENCH_SESSION.to_owned(),
            action: Action::Import,
            plot_id: added.plot_id.clone(),
            plot_title: added.title.clone(),
            what: format!("import: {} file(s) added to the plot", added.files.len()),
        });
    st.notify_changed();
    let count = |list: &[(String, usize)]| -> Vec<Value> {
        list.iter()
            .map(|(name, n)| json!({"track": name, "count": n}))
            .collect()
    };
    let files = file_reports(&added.files);
    Ok(Json(json!({
        "plotId": added.plot_id,
        "title": added.title,
        "added": true,
        "replaced": false,
        "undated": false,
        "kinds": added.kinds.iter().map(|(k, n)| json!({"kind": k, "count": n})).collect::<Vec<_>>(),
        "positions": added.positions,
        "contacts": added.contacts,
        "attached": count(&added.attached),
        "unattached": count(&added.unattached),
        "files": files,
    })))
}

async fn activity(State(st): State<WebState>) -> Json<Value> {
    Json(json!({ "entries": st.directory.log().entries() }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_boot_block_cannot_be_closed_by_its_content() {
        let boot = json!({"state": {"title": "</script><script>alert(1)</script>"}});
        let html = page_with_boot(&boot);
        assert_eq!(
            html.matches("</script>").count(),
            2,
            "only the data block's and app.js's"
        );
        let start = html.find("id=\"boot\">").unwrap() + "id=\"boot\">".len();
        let end = start + html[start..].find("</script>").unwrap();
        let back: Value = serde_json::from_str(&html[start..end]).unwrap();
        assert_eq!(back, boot);
    }

    #[test]
    fn the_open_plot_is_preloaded_at_the_url_the_page_fetches() {
        let boot = json!({"state": {"activePlot": "stac://demo/a b/it'em.json"}});
        let html = page_with_boot(&boot);
        // encodeURIComponent("stac://demo/a b/it'em.json"), as plot.js's loadPlot writes it
        assert!(html.contains(
            "<link rel=\"preload\" as=\"fetch\" crossorigin=\"anonymous\" href=\"/api/plot?view=map&amp;plotId=stac%3A%2F%2Fdemo%2Fa%20b%2Fit'em.json\">"
        ), "{html}");
        assert!(!page_with_boot(&json!({"state": {"activePlot": null}})).contains("/api/plot?"));
    }

    #[test]
    fn host_names_drop_the_port() {
        assert_eq!(
            origin_host("http://127.0.0.1:5").as_deref(),
            Some("127.0.0.1")
        );
        assert_eq!(
            origin_host("https://evil.example").as_deref(),
            Some("evil.example")
        );
        assert_eq!(origin_host("null"), None);
        assert_eq!(authority_port("127.0.0.1:8080"), Some("8080"));
        assert_eq!(authority_port("[::1]:9"), Some("9"));
        assert_eq!(authority_port("[::1]"), None);
        assert_eq!(authority_port("localhost:80@evil.com"), None);
    }

    #[test]
    fn origins_are_a_scheme_and_an_authority_only() {
        for bad in [
            "http://[::1]evil.com",
            "http://localhost:80@evil.com",
            "http://localhost/x",
            "ftp://localhost",
        ] {
            assert_eq!(origin_host(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn only_the_port_suffixed_names_count_as_the_cookie() {
        assert!(is_cookie_named("toolgate_session", SESSION_COOKIE));
        assert!(is_cookie_named("toolgate_session_8080", SESSION_COOKIE));
        assert!(!is_cookie_named("toolgate_sessionx", SESSION_COOKIE));
        assert!(!is_cookie_named("toolgate_session_", SESSION_COOKIE));
        assert!(!is_cookie_named("toolgate_session_8080x", SESSION_COOKIE));
        assert!(!is_cookie_named("toolgate_token_8080", SESSION_COOKIE));
        assert_eq!(
            cookie_name(SESSION_COOKIE, Some("127.0.0.1:8080")),
            "toolgate_session_8080"
        );
        assert_eq!(
            cookie_name(SESSION_COOKIE, Some("localhost:80@evil.com")),
            "toolgate_session"
        );
    }
}
