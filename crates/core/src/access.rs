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
}
