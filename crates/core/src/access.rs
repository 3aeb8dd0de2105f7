//! The secret a local server (`toolgate serve`) asks of every request.
//!
//! Anything on the machine can connect to 127.0.0.1, so a listening port is not a permission:
//! the person who started the server gets a random token (or sets one with `TOOLGATE_TOKEN`)
//! and only requests that present it are served. The token is compared in constant time (as
//! SHA-256 digests, so not even its length leaks through timing) and never shown by `Debug`,
//! so it cannot end up in a log line by accident.

use std::fmt;
use std::sync::Arc;

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The shortest secret accepted from the environment: 16 characters of the allowed alphabet
/// (about 95 bits even from hex digits alone).
pub const MIN_TOKEN_LEN: usize = 16;

/// The longest one (it travels in a header and a cookie).
pub const MAX_TOKEN_LEN: usize = 256;

#[derive(Debug, thiserror::Error)]
pub enum AccessTokenError {
    #[error(
        "the access token is {len} characters long; use {MIN_TOKEN_LEN} to {MAX_TOKEN_LEN} (for example the output of `openssl rand -hex 32`), or unset TOOLGATE_TOKEN to get a random one"
    )]
    Length { len: usize },
    #[error(
        "the access token contains {found:?}; use only letters, digits and - . _ ~ (it travels in an HTTP header and a cookie), for example the output of `openssl rand -hex 32`"
    )]
    Character { found: char },
    #[error(
        "the operating system's random number generator failed ({0}); cannot make an access token"
    )]
    Random(String),
}

/// A server's access secret. Cheap to clone; `Debug` never prints it.
#[derive(Clone)]
pub struct AccessToken {
    secret: Arc<str>,
    digest: [u8; 32],
}

impl AccessToken {
    /// A fresh token: 32 bytes from the operating system's CSPRNG, as 64 hex digits.
    pub fn generate() -> Result<Self, AccessTokenError> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(|e| AccessTokenError::Random(e.to_string()))?;
        let mut hex = String::with_capacity(64);
        for b in bytes {
            use fmt::Write;
            let _ = write!(hex, "{b:02x}");
        }
        Self::new(&hex)
    }

    /// A token the person chose (`TOOLGATE_TOKEN`): 16–256 characters of `[A-Za-z0-9._~-]`.
    pub fn new(secret: &str) -> Result<Self, AccessTokenError> {
        let len = secret.chars().count();
        if !(MIN_TOKEN_LEN..=MAX_TOKEN_LEN).contains(&len) {
            return Err(AccessTokenError::Length { len });
        }
        if let Some(found) = secret
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '~')))
        {
            return Err(AccessTokenError::Character { found });
        }
        Ok(Self {
            secret: Arc::from(secret),
            digest: Sha256::digest(secret.as_bytes()).into(),
        })
    }

    /// Whether `presented` is this token, in time independent of where they differ.
    pub fn matches(&self, presented: &str) -> bool {
        let theirs: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
        self.digest.ct_eq(&theirs).into()
    }

    /// Whether an `Authorization` header value is `Bearer <this token>` (scheme
    /// case-insensitive, as RFC 9110 says).
    pub fn matches_bearer(&self, authorization: &str) -> bool {
        bearer(authorization).is_some_and(|t| self.matches(t))
    }

    /// The secret itself: only for the one place that shows it to the person (the URL the
    /// server prints) and the cookie the workbench sets.
    pub fn reveal(&self) -> &str {
        &self.secret
    }
}

impl fmt::Debug for AccessToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AccessToken(<redacted>)")
    }
}

/// The credentials of `Bearer <credentials>`, if that is the scheme.
pub fn bearer(authorization: &str) -> Option<&str> {
    let (scheme, rest) = authorization.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| rest.trim())
        .filter(|t| !t.is_empty())
}

/// The host names a local server answers to by default (anything else in `Host` may be a DNS
/// rebinding attack: a page of another site whose name resolves to 127.0.0.1).
pub const LOOPBACK_HOSTS: [&str; 3] = ["127.0.0.1", "localhost", "[::1]"];

/// The host of a `Host` header (or an origin's authority), lower-cased, when the whole value is
/// `host[:port]` and nothing else: `host` a bracketed IPv6 literal or a name of letters, digits,
/// `.` and `-`; `port` 1–5 digits. Anything after the host that is not such a port — a name
/// glued to `[::1]`, `@evil.com` after a port, a second colon, a path — makes the value
/// unparseable, so it names no allowed host. Lenient parsers took `[::1]evil.com` for `[::1]`
/// and `localhost:80@evil.com` for `localhost` (issue 30).
pub fn authority_host(authority: &str) -> Option<String> {
    let (host, port) = if let Some(inner) = authority.strip_prefix('[') {
        let end = inner.find(']')?;
        let literal = &inner[..end];
        if literal.is_empty()
            || !literal
                .bytes()
                .all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.')
        {
            return None;
        }
        let after = &inner[end + 1..];
        let port = if after.is_empty() {
            None
        } else {
            Some(after.strip_prefix(':')?)
        };
        (&authority[..end + 2], port)
    } else {
        let (host, port) = match authority.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        };
        if host.is_empty()
            || !host
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-')
        {
            return None;
        }
        (host, port)
    };
    if let Some(port) = port
        && (port.is_empty() || port.len() > 5 || !port.bytes().all(|b| b.is_ascii_digit()))
    {
        return None;
    }
    Some(host.to_ascii_lowercase())
}

/// Whether a `Host` header value is one of [`LOOPBACK_HOSTS`] with an optional port, parsed
/// strictly ([`authority_host`]).
pub fn is_loopback_authority(authority: &str) -> bool {
    authority_host(authority).is_some_and(|h| LOOPBACK_HOSTS.contains(&h.as_str()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn generated_tokens_are_long_random_and_distinct() {
        let a = AccessToken::generate().unwrap();
        let b = AccessToken::generate().unwrap();
        assert_eq!(a.reveal().len(), 64);
        assert_ne!(a.reveal(), b.reveal());
        assert!(a.matches(a.reveal()));
        assert!(!a.matches(b.reveal()));
    }

    #[test]
    fn chosen_tokens_are_checked() {
        assert!(matches!(
            AccessToken::new("short"),
            Err(AccessTokenError::Length { len: 5 })
        ));
        let e = AccessToken::new("0123456789abcdef;x").unwrap_err();
        assert!(e.to_string().contains("';'"), "{e}");
        let t = AccessToken::new("0123456789abcdef").unwrap();
        assert!(t.matches("0123456789abcdef"));
        assert!(!t.matches("0123456789abcdeF"));
        assert!(!t.matches(""));
        assert!(!t.matches("0123456789abcdef0"));
    }

    #[test]
    fn bearer_headers() {
        let t = AccessToken::new("0123456789abcdef").unwrap();
        assert!(t.matches_bearer("Bearer 0123456789abcdef"));
        assert!(t.matches_bearer("bearer  0123456789abcdef "));
        assert!(!t.matches_bearer("Basic 0123456789abcdef"));
        assert!(!t.matches_bearer("Bearer"));
        assert!(!t.matches_bearer("0123456789abcdef"));
    }

    #[test]
    fn debug_does_not_show_the_secret() {
        let t = AccessToken::new("0123456789abcdef").unwrap();
        assert!(!format!("{t:?}").contains("0123"));
    }

    #[test]
    fn authorities_are_host_and_an_optional_port_only() {
        assert_eq!(
            authority_host("127.0.0.1:8080").as_deref(),
            Some("127.0.0.1")
        );
        assert_eq!(authority_host("LocalHost").as_deref(), Some("localhost"));
        assert_eq!(authority_host("[::1]:9").as_deref(), Some("[::1]"));
        assert_eq!(authority_host("[::1]").as_deref(), Some("[::1]"));
        assert!(is_loopback_authority("localhost:65535"));
        assert!(!is_loopback_authority("evil.example"));
    }

    /// Issue 30: the old parsers took what came before `]`, `@` or the last `:` and ignored the
    /// rest.
    #[test]
    fn anything_after_the_host_but_a_port_is_unparseable() {
        for bad in [
            "[::1]evil.com",
            "[::1]evil.com:80",
            "[::1]:80x",
            "[::1]:",
            "[]",
            "[::1",
            "[evil.com]",
            "localhost:8080@evil.com",
            "127.0.0.1:80@evil.com",
            "user@localhost",
            "localhost:80:81",
            "localhost:",
            "localhost:123456",
            "localhost:8080/x",
            "localhost ",
            "",
            ":80",
        ] {
            assert_eq!(authority_host(bad), None, "{bad:?}");
            assert!(!is_loopback_authority(bad), "{bad:?}");
        }
    }
}
