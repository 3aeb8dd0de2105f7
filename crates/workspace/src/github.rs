//! github_api: HTTPS to api.github.com only. The token comes from the environment variable the
//! config names; it is sent as a header and never logged, returned or put in an error.

use std::time::Duration;

use serde_json::{Map, Value};
use toolgate_core::{CallError, ToolOutcome};
use url::Url;

use crate::cap::cap_bytes;
use crate::params::Params;
use crate::specs::{github_methods, kinds};
use crate::web::{Hop, Reach, fetch};
use crate::{Inner, outcome};

pub(crate) const API_BASE: &str = "https://api.github.com";

/// Check the endpoint and build the URL. The endpoint is a path (with an optional query) that is
/// appended to the API base; anything that could change the host is refused.
pub(crate) fn endpoint_url(base: &str, endpoint: &str) -> Result<Url, CallError> {
    let path_given = endpoint.trim();
    let bad = |why: &str| {
        CallError::invalid(format!(
            "github_api: endpoint \"{endpoint}\" {why}. Give an API path such as \"/repos/owner/repo/issues\"."
        ))
    };
    if path_given.is_empty() {
        return Err(bad("is empty"));
    }
    if path_given.contains("://") || path_given.starts_with("//") {
        return Err(CallError::PermissionDenied {
            message: format!(
                "github_api: endpoint \"{endpoint}\" is a full URL; github_api only calls {API_BASE}. Give the path alone."
            ),
        });
    }
    if path_given
        .chars()
        .any(|c| c.is_control() || c == '\\' || c == '#')
    {
        return Err(bad(
            "contains characters that are not allowed in an API path",
        ));
    }
    let path = if path_given.starts_with('/') {
        path_given.to_owned()
    } else {
        format!("/{path_given}")
    };
    let (path_part, _) = path.split_once('?').unwrap_or((&path, ""));
    if path_part
        .split('/')
        .any(|seg| seg == ".." || seg == "." || seg.eq_ignore_ascii_case("%2e%2e"))
    {
        return Err(bad("contains \"..\" or \".\" segments"));
    }
    let url = Url::parse(&format!("{base}{path}"))
        .map_err(|err| bad(&format!("is not a valid path ({err})")))?;
    let base_url = Url::parse(base)
        .map_err(|err| CallError::failed(format!("github_api: bad base URL: {err}")))?;
    if url.origin() != base_url.origin() {
        return Err(CallError::PermissionDenied {
            message: format!("github_api: endpoint \"{endpoint}\" leaves {API_BASE}."),
        });
    }
    Ok(url)
}

pub(crate) fn github_api(
    inner: &Inner,
    map: &Map<String, Value>,
    deadline: Option<Duration>,
) -> Result<ToolOutcome, CallError> {
    let config = &inner.config;
    let p = Params::new("github_api", map);
    let endpoint = p.str_req("endpoint")?;
    let method = p.str_or("method", "GET")?.to_ascii_uppercase();
    let allowed = github_methods(config.http_writes_enabled);
    let Some(method) = allowed.iter().find(|m| **m == method) else {
        return Err(CallError::PermissionDenied {
            message: format!(
                "github_api: method {method} is not allowed here; allowed: {}.{}",
                allowed.join(", "),
                if config.http_writes_enabled {
                    ""
                } else {
                    crate::web::ENABLE_HTTP_WRITES
                }
            ),
        });
    };
    let body: Option<Vec<u8>> = match p.value("body") {
        None => None,
        Some(Value::String(s)) if s.trim().is_empty() => None,
        Some(Value::String(s)) => {
            serde_json::from_str::<Value>(s).map_err(|e| {
                CallError::invalid(format!("github_api: body is not valid JSON: {e}"))
            })?;
            Some(s.as_bytes().to_vec())
        }
        Some(v @ (Value::Object(_) | Value::Array(_))) => Some(v.to_string().into_bytes()),
        Some(_) => {
            return Err(CallError::invalid(
                "github_api: body must be a JSON string, an object or an array.",
            ));
        }
    };
    if body.is_some() && *method == "GET" {
        return Err(CallError::invalid(
            "github_api: a body is only sent with POST, PUT, PATCH or DELETE.",
        ));
    }
    let url = endpoint_url(&inner.github_base, endpoint)?;
    let mut headers = vec![
        (
            "Accept".to_owned(),
            "application/vnd.github+json".to_owned(),
        ),
        ("X-GitHub-Api-Version".to_owned(), "2022-11-28".to_owned()),
    ];
    if body.is_some() {
        headers.push(("Content-Type".to_owned(), "application/json".to_owned()));
    }
    let token = (inner.env)(&config.github_token_env).filter(|t| !t.trim().is_empty());
    if let Some(token) = &token {
        headers.push((
            "Authorization".to_owned(),
            format!("Bearer {}", token.trim()),
        ));
    }
    let base = Url::parse(&inner.github_base)
        .map_err(|e| CallError::failed(format!("github_api: bad base URL: {e}")))?;
    let vet = move |u: &Url| {
        if u.origin() == base.origin() {
            Ok(())
        } else {
            Err(CallError::PermissionDenied {
                message: format!(
                    "github_api: refused a redirect away from {API_BASE} (to {}).",
                    u.origin().ascii_serialization()
                ),
            })
        }
    };
    let reach = if inner.allow_loopback {
        Reach::PublicAndLoopback
    } else {
        Reach::Public
    };
    let timeout = deadline.map_or(config.http_timeout, |d| d.min(config.http_timeout));
    let shown = format!("{method} {}", endpoint.trim());
    let fetched = fetch(
        Hop {
            method,
            url,
            headers,
            body,
        },
        reach,
        &vet,
        timeout,
        config.read_cap_bytes,
        "github_api",
    )
    .map_err(|e| scrub(e, token.as_deref()))?;
    let text = String::from_utf8_lossy(&fetched.body).into_owned();
    if !(200..300).contains(&fetched.status) {
        let message = serde_json::from_str::<Value>(&text)
            .ok()
            .and_then(|v| v.get("message").and_then(Value::as_str).map(str::to_owned))
            .unwrap_or_else(|| text.chars().take(300).collect());
        let hint = match fetched.status {
            401 => format!(" Set a valid token in ${}.", config.github_token_env),
            403 | 429 => " (rate limit or missing permission)".to_owned(),
            404 => " (wrong path, or a private resource the token cannot see)".to_owned(),
            _ => String::new(),
        };
        let err = CallError::failed(format!(
            "github_api: {shown} returned HTTP {} {}: {message}{hint}",
            fetched.status, fetched.reason
        ));
        return Err(scrub(err, token.as_deref()));
    }
    let (data, cut) = if fetched.cut {
        cap_bytes(&fetched.body, fetched.body.len() + 1, config.read_cap_bytes)
    } else {
        (text, false)
    };
    let mut summary = format!(
        "{shown}: HTTP {} ({} bytes).",
        fetched.status,
        fetched.body.len()
    );
    if cut {
        summary.push_str(" The response was cut; it is not complete JSON. Ask for fewer items (per_page) or a narrower path.");
    }
    let kind = if config.http_writes_enabled {
        kinds::GITHUB_WRITE
    } else {
        kinds::GITHUB
    };
    Ok(outcome(kind, summary, Value::String(data)))
}

/// Make sure a token never reaches an error message.
fn scrub(e: CallError, token: Option<&str>) -> CallError {
    let Some(token) = token.map(str::trim).filter(|t| t.len() >= 4) else {
        return e;
    };
    let clean = |m: String| m.replace(token, "[redacted]");
    match e {
        CallError::InvalidInput { message } => CallError::InvalidInput {
            message: clean(message),
        },
        CallError::NotFound { message } => CallError::NotFound {
            message: clean(message),
        },
        CallError::AlreadyExists { message } => CallError::AlreadyExists {
            message: clean(message),
        },
        CallError::PermissionDenied { message } => CallError::PermissionDenied {
            message: clean(message),
        },
        CallError::Failed { message } => CallError::Failed {
            message: clean(message),
        },
        t @ CallError::Timeout { .. } => t,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;
    use toolgate_core::CallError;

    use super::*;
    use crate::testutil::run;
    use crate::web::tests::{response, serve};

    #[test]
    fn endpoints_stay_on_the_api_host() {
        let u = endpoint_url(API_BASE, "/repos/o/r/issues?state=open").unwrap();
        assert_eq!(
            u.as_str(),
            "https://api.github.com/repos/o/r/issues?state=open"
        );
        assert_eq!(
            endpoint_url(API_BASE, "user").unwrap().as_str(),
            "https://api.github.com/user"
        );
        // The endpoint always becomes a path: "@host" cannot turn into userinfo.
        let u = endpoint_url(API_BASE, "@evil.example/x").unwrap();
        assert_eq!(u.host_str(), Some("api.github.com"));
        let u = endpoint_url(API_BASE, "/search/issues?q=is:open label:bug").unwrap();
        assert_eq!(
            u.as_str(),
            "https://api.github.com/search/issues?q=is:open%20label:bug"
        );
        for bad in [
            "https://evil.example/x",
            "//evil.example/x",
            "/repos/../../x",
            "/a\\b",
            "",
            "/x#frag",
        ] {
            assert!(endpoint_url(API_BASE, bad).is_err(), "{bad}");
        }
    }

    fn tools(port: u16, env: &str, writes: bool) -> (tempfile::TempDir, crate::WorkspaceTools) {
        let secrets = [
            ("TOOLGATE_TEST_GH_TOKEN_A", "ghp_secret_value_123"),
            ("TOOLGATE_TEST_GH_TOKEN_B", "ghp_other_secret_456"),
        ];
        let dir = tempfile::tempdir().unwrap();
        let mut c = crate::WorkspaceConfig::new(dir.path()).unwrap();
        c.github_token_env = env.to_owned();
        c.http_writes_enabled = writes;
        c.http_timeout = Duration::from_secs(10);
        let env_fn = move |k: &str| {
            secrets
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| (*v).to_owned())
        };
        let t = crate::WorkspaceTools::for_tests(
            c,
            Some(format!("http://127.0.0.1:{port}")),
            true,
            Some(std::sync::Arc::new(env_fn)),
        );
        (dir, t)
    }

    #[tokio::test]
    async fn get_sends_token_and_returns_json_text() {
        let env = "TOOLGATE_TEST_GH_TOKEN_A";
        let (port, log) = serve(vec![response(
            "200 OK",
            &[("Content-Type", "application/json")],
            "{\"login\":\"me\"}",
        )]);
        let (_d, t) = tools(port, env, false);
        let o = run(&t, "github_api", json!({"endpoint": "/user"}))
            .await
            .unwrap();
        assert_eq!(o.data, json!("{\"login\":\"me\"}"));
        assert_eq!(o.kind.as_str(), "read/github");
        assert!(!o.summary.contains("ghp_secret"));
        let head = log.lock().unwrap()[0].clone();
        assert!(head.starts_with("GET /user HTTP/1.1"), "{head}");
        assert!(head.contains("ghp_secret_value_123"), "token sent: {head}");
        assert!(
            head.to_ascii_lowercase()
                .contains("accept: application/vnd.github+json")
        );
    }

    #[tokio::test]
    async fn errors_carry_status_and_message_but_no_token() {
        let env = "TOOLGATE_TEST_GH_TOKEN_B";
        let (port, _) = serve(vec![response(
            "404 Not Found",
            &[],
            "{\"message\":\"Not Found ghp_other_secret_456\"}",
        )]);
        let (_d, t) = tools(port, env, false);
        let err = run(&t, "github_api", json!({"endpoint": "/repos/x/y"}))
            .await
            .unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("HTTP 404") && msg.contains("Not Found"),
            "{msg}"
        );
        assert!(!msg.contains("ghp_other_secret_456"), "{msg}");
    }

    #[tokio::test]
    async fn writes_need_the_setting_and_send_json() {
        let (_d, t) = tools(1, "TOOLGATE_TEST_GH_UNSET", false);
        let err = run(
            &t,
            "github_api",
            json!({"endpoint": "/repos/o/r/issues", "method": "POST", "body": {"title": "x"}}),
        )
        .await
        .unwrap_err();
        assert!(matches!(err, CallError::PermissionDenied { .. }), "{err}");
        let (port, log) = serve(vec![response("201 Created", &[], "{\"number\":1}")]);
        let (_d, t) = tools(port, "TOOLGATE_TEST_GH_UNSET", true);
        let o = run(
            &t,
            "github_api",
            json!({"endpoint": "/repos/o/r/issues", "method": "POST", "body": {"title": "x"}}),
        )
        .await
        .unwrap();
        assert_eq!(o.kind.as_str(), "workspace/github");
        let head = log.lock().unwrap()[0].clone();
        assert!(
            head.starts_with("POST /repos/o/r/issues ") && head.ends_with("{\"title\":\"x\"}"),
            "{head}"
        );
        assert!(
            !head.to_ascii_lowercase().contains("authorization"),
            "no token, no header"
        );
        let err = run(
            &t,
            "github_api",
            json!({"endpoint": "/x", "method": "POST", "body": "{not json"}),
        )
        .await
        .unwrap_err();
        assert!(matches!(err, CallError::InvalidInput { .. }), "{err}");
    }

    #[tokio::test]
    async fn redirects_off_the_api_host_are_refused() {
        let (port, _) = serve(vec![response(
            "301 Moved",
            &[("Location", "https://evil.example/steal")],
            "",
        )]);
        let (_d, t) = tools(port, "TOOLGATE_TEST_GH_UNSET", false);
        let err = run(&t, "github_api", json!({"endpoint": "/repos/a/b"}))
            .await
            .unwrap_err();
        assert!(matches!(err, CallError::PermissionDenied { .. }), "{err}");
        assert!(err.to_string().contains("redirect"), "{err}");
    }
}
