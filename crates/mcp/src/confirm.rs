//! Confirmations over MCP.
//!
//! Three ways to ask, chosen per call from what the client declared:
//! 1. **Legacy elicitation** (protocol ≤ 2025-11-25, client declares `elicitation`): the server
//!    sends `elicitation/create` with the plain-language preview and waits for the answer.
//! 2. **MRTR** (protocol 2026-07-28, client declares `elicitation`): the call returns an
//!    input-required result with an elicitation and a sealed `requestState` (HMAC, expiry,
//!    single-use nonce, bound to the digest of the exact call and plot version); the client retries
//!    with the answer.
//! 3. **Token fallback** (no elicitation): fail closed. The reply is the preview and a single-use,
//!    time-limited token bound to the same digest; the change applies only when the call is
//!    repeated with `confirm: <token>` (and it still lands unsaved).
//!
//! The digest comes from the core gate ([`Confirmer::confirm_call`]): an approval can never apply
//! to a different call, different targets, or a plot that changed since the preview.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use rmcp::model::{RequestStateCodec, RequestStateError};
use serde::{Deserialize, Serialize};
use toolgate_core::{Answer, CallDigest, Confirmer, Preview};

/// How long a confirmation token or a sealed MRTR state stays valid.
pub const CONFIRM_TTL: Duration = Duration::from_secs(300);

/// Most confirmation tokens outstanding per server (each is a few hundred bytes; a client that
/// asks for previews and never confirms mints one per call). The oldest is evicted first.
pub const MAX_TOKENS: usize = 1024;

/// How many evicted tokens are remembered (so their clients hear "evicted", not "unknown").
const REMEMBERED_EVICTED_TOKENS: usize = 1024;

/// Process-wide confirmation state: outstanding tokens, used MRTR nonces, the sealing key.
/// Shared by every MCP session of the process (a stateless HTTP request may land on a fresh
/// handler).
pub struct ConfirmState {
    tokens: Mutex<Tokens>,
    /// Used MRTR nonces with the expiry (seconds) of their state: a nonce is forgotten once its
    /// state has expired, since `open` refuses an expired state before looking for it.
    used_nonces: Mutex<HashMap<String, u64>>,
    codec: RequestStateCodec,
    ttl: Duration,
}

/// Outstanding tokens in minting order (oldest first), and the ones evicted to bound memory.
#[derive(Default)]
struct Tokens {
    live: HashMap<String, PendingToken>,
    order: VecDeque<String>,
    evicted: VecDeque<String>,
}

impl Tokens {
    fn remove(&mut self, token: &str) -> Option<PendingToken> {
        let p = self.live.remove(token)?;
        self.order.retain(|t| t != token);
        Some(p)
    }

    fn was_evicted(&mut self, token: &str) -> bool {
        match self.evicted.iter().position(|t| t == token) {
            Some(i) => {
                self.evicted.remove(i);
                true
            }
            None => false,
        }
    }

    /// Why a token that is not outstanding was not accepted.
    fn missing(&mut self, token: &str) -> ConfirmRejected {
        if self.was_evicted(token) {
            ConfirmRejected::Evicted
        } else {
            ConfirmRejected::UnknownToken
        }
    }
}

#[derive(Debug, Clone)]
struct PendingToken {
    digest: String,
    expires: SystemTime,
}

/// What the sealed MRTR `requestState` carries.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct SealedConfirm {
    /// Digest of the exact call (tool, params, plot, version, targets).
    pub digest: String,
    /// Single-use.
    pub nonce: String,
    /// Seconds since the epoch.
    pub expires: u64,
}

/// Why a token or sealed state was not accepted (said to the model as is).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfirmRejected {
    #[error(
        "the confirmation token is unknown or was already used; nothing was applied. Call again without \"confirm\" to get a fresh preview and token"
    )]
    UnknownToken,
    #[error(
        "the confirmation token has expired; nothing was applied. Call again without \"confirm\" to get a fresh preview and token"
    )]
    Expired,
    #[error(
        "the confirmation has expired: it was evicted before its time to bound the server's memory (the server holds only so many changes waiting for confirmation, per session and in all, and more were previewed since); nothing was applied. Run the call again without \"confirm\" to get a fresh preview and token, and confirm it before previewing many others"
    )]
    Evicted,
    #[error(
        "the confirmation token was issued for a different call or the plot changed since the preview; nothing was applied. Call again without \"confirm\" to see the current preview"
    )]
    Mismatch,
    #[error("the confirmation state was tampered with or is unreadable; nothing was applied")]
    Tampered,
    #[error("this confirmation was already used; nothing was applied")]
    Replayed,
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn random_hex() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

impl ConfirmState {
    /// A state with a fresh random sealing key (process lifetime).
    pub fn new() -> Self {
        Self::with_ttl(CONFIRM_TTL)
    }

    pub fn with_ttl(ttl: Duration) -> Self {
        let key = format!("{}{}", random_hex(), random_hex());
        let codec = match RequestStateCodec::try_new(key.into_bytes()) {
            Ok(c) => c,
            // A 64-byte key is always accepted; keep a deterministic fallback rather than panic.
            Err(_) => fallback_codec(),
        };
        Self {
            tokens: Mutex::new(Tokens::default()),
            used_nonces: Mutex::new(HashMap::new()),
            codec,
            ttl,
        }
    }

    /// How long a token or sealed state lives (a paused program is kept as long).
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// Mint a single-use token for this digest.
    pub fn mint_token(&self, digest: &CallDigest) -> String {
        let token = format!("confirm-{}", &random_hex()[..20]);
        let mut tokens = self
            .tokens
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = SystemTime::now();
        let Tokens { live, order, .. } = &mut *tokens;
        live.retain(|_, p| p.expires > now);
        order.retain(|t| live.contains_key(t));
        while tokens.live.len() >= MAX_TOKENS {
            let Some(oldest) = tokens.order.pop_front() else {
                break;
            };
            tokens.live.remove(&oldest);
            if tokens.evicted.len() >= REMEMBERED_EVICTED_TOKENS {
                tokens.evicted.pop_front();
            }
            tokens.evicted.push_back(oldest);
        }
        tokens.live.insert(
            token.clone(),
            PendingToken {
                digest: digest.as_str().to_owned(),
                expires: now + self.ttl,
            },
        );
        tokens.order.push_back(token.clone());
        token
    }

    /// The digest an outstanding, unexpired token was minted for, without redeeming it (to find
    /// what a confirming call refers to; [`ConfirmState::redeem_token`] still decides).
    /// An evicted token says so ([`ConfirmRejected::Evicted`]), once.
    pub fn token_digest(&self, token: &str) -> Result<String, ConfirmRejected> {
        let mut tokens = self
            .tokens
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match tokens.live.get(token) {
            Some(p) if p.expires > SystemTime::now() => Ok(p.digest.clone()),
            Some(_) => Err(ConfirmRejected::Expired),
            None => Err(tokens.missing(token)),
        }
    }

    /// Forget a token (a confirming call that misused it: tokens are single-use).
    pub fn revoke_token(&self, token: &str) {
        self.tokens
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(token);
    }

    /// Redeem a token for this digest. Single-use: any redemption attempt consumes it, so a
    /// token guessed wrong once cannot be retried against another call.
    pub fn redeem_token(&self, token: &str, digest: &CallDigest) -> Result<(), ConfirmRejected> {
        let pending = {
            let mut tokens = self
                .tokens
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            match tokens.remove(token) {
                Some(p) => p,
                None => return Err(tokens.missing(token)),
            }
        };
        if pending.expires <= SystemTime::now() {
            return Err(ConfirmRejected::Expired);
        }
        if pending.digest != digest.as_str() {
            return Err(ConfirmRejected::Mismatch);
        }
        Ok(())
    }

    /// Seal an MRTR state for this digest.
    pub fn seal(&self, digest: &CallDigest) -> Result<String, RequestStateError> {
        let state = SealedConfirm {
            digest: digest.as_str().to_owned(),
            nonce: random_hex(),
            expires: now_secs() + self.ttl.as_secs(),
        };
        self.codec.seal_json(&state)
    }

    /// Open a sealed MRTR state (integrity and expiry; the nonce is consumed by
    /// [`ConfirmState::consume`] when the approval is used).
    pub fn open(&self, sealed: &str) -> Result<SealedConfirm, ConfirmRejected> {
        let state: SealedConfirm = self
            .codec
            .open_json(sealed)
            .map_err(|_| ConfirmRejected::Tampered)?;
        if state.expires <= now_secs() {
            return Err(ConfirmRejected::Expired);
        }
        if self
            .used_nonces
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains_key(&state.nonce)
        {
            return Err(ConfirmRejected::Replayed);
        }
        Ok(state)
    }

    /// Mark a sealed state used; false when it already was.
    pub fn consume(&self, state: &SealedConfirm) -> bool {
        let mut used = self
            .used_nonces
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Forget nonces whose state has expired: `open` refuses those before asking.
        let now = now_secs();
        used.retain(|_, expires| *expires > now);
        used.insert(state.nonce.clone(), state.expires).is_none()
    }

    /// Outstanding tokens (for tests and diagnostics).
    pub fn outstanding_tokens(&self) -> usize {
        self.tokens.lock().map(|t| t.live.len()).unwrap_or(0)
    }
}

impl Default for ConfirmState {
    fn default() -> Self {
        Self::new()
    }
}

fn fallback_codec() -> RequestStateCodec {
    // Only reachable if rmcp changes its key rules; the key is still process-random.
    let key = format!("toolgate-fallback-key-{}{}", random_hex(), random_hex());
    match RequestStateCodec::try_new(key.into_bytes()) {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(error = %e, "cannot create the MRTR state codec");
            std::process::abort()
        }
    }
}

/// What a recording confirmer saw: the preview and the digest of the call.
#[derive(Debug, Clone)]
pub struct Asked {
    pub preview: Preview,
    pub digest: CallDigest,
}

/// Declines, remembering what it was asked (first round of MRTR and of the token fallback: the
/// call is prepared and previewed, nothing runs).
#[derive(Default)]
pub struct Recording {
    asked: Mutex<Option<Asked>>,
}

impl Recording {
    pub fn take(&self) -> Option<Asked> {
        self.asked.lock().ok().and_then(|mut a| a.take())
    }
}

#[async_trait]
impl Confirmer for Recording {
    async fn confirm(&self, _preview: &Preview) -> Answer {
        Answer::Decline
    }

    async fn confirm_call(&self, preview: &Preview, digest: &CallDigest) -> Answer {
        if let Ok(mut slot) = self.asked.lock() {
            *slot = Some(Asked {
                preview: preview.clone(),
                digest: digest.clone(),
            });
        }
        Answer::Decline
    }
}

/// Approves only the call whose digest was approved out of band (a redeemed token, an accepted
/// MRTR elicitation); anything else is declined and recorded so the caller can re-preview.
pub struct ApprovedDigest {
    pub approved: String,
    pub mismatch: Recording,
}

impl ApprovedDigest {
    pub fn new(approved: impl Into<String>) -> Self {
        Self {
            approved: approved.into(),
            mismatch: Recording::default(),
        }
    }
}

#[async_trait]
impl Confirmer for ApprovedDigest {
    async fn confirm(&self, _preview: &Preview) -> Answer {
        Answer::Decline
    }

    async fn confirm_call(&self, preview: &Preview, digest: &CallDigest) -> Answer {
        if digest.as_str() == self.approved {
            Answer::Approve
        } else {
            self.mismatch.confirm_call(preview, digest).await
        }
    }
}

/// Redeems a token against the digest of the call being confirmed.
pub struct TokenConfirmer<'a> {
    pub state: &'a ConfirmState,
    pub token: String,
    pub rejected: Mutex<Option<ConfirmRejected>>,
    pub asked: Recording,
}

impl<'a> TokenConfirmer<'a> {
    pub fn new(state: &'a ConfirmState, token: impl Into<String>) -> Self {
        Self {
            state,
            token: token.into(),
            rejected: Mutex::new(None),
            asked: Recording::default(),
        }
    }

    pub fn rejection(&self) -> Option<ConfirmRejected> {
        self.rejected.lock().ok().and_then(|r| r.clone())
    }
}

#[async_trait]
impl Confirmer for TokenConfirmer<'_> {
    async fn confirm(&self, _preview: &Preview) -> Answer {
        Answer::Decline
    }

    async fn confirm_call(&self, preview: &Preview, digest: &CallDigest) -> Answer {
        match self.state.redeem_token(&self.token, digest) {
            Ok(()) => Answer::Approve,
            Err(e) => {
                if let Ok(mut r) = self.rejected.lock() {
                    *r = Some(e);
                }
                self.asked.confirm_call(preview, digest).await
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn digest(n: u64) -> CallDigest {
        CallDigest::of("t", &serde_json::Map::new(), &json!({"version": n}))
    }

    #[test]
    fn tokens_are_single_use_and_bound_to_the_digest() {
        let s = ConfirmState::new();
        let t = s.mint_token(&digest(1));
        assert_eq!(
            s.redeem_token(&t, &digest(2)),
            Err(ConfirmRejected::Mismatch)
        );
        // consumed by the failed attempt
        assert_eq!(
            s.redeem_token(&t, &digest(1)),
            Err(ConfirmRejected::UnknownToken)
        );
        let t = s.mint_token(&digest(1));
        assert_eq!(s.redeem_token(&t, &digest(1)), Ok(()));
        assert_eq!(
            s.redeem_token(&t, &digest(1)),
            Err(ConfirmRejected::UnknownToken)
        );
    }

    #[test]
    fn tokens_are_capped_and_an_evicted_one_says_so() {
        let s = ConfirmState::new();
        let first = s.mint_token(&digest(0));
        for i in 1..=MAX_TOKENS as u64 {
            s.mint_token(&digest(i));
        }
        assert_eq!(s.outstanding_tokens(), MAX_TOKENS);
        assert_eq!(s.token_digest(&first), Err(ConfirmRejected::Evicted));
        assert_eq!(
            s.redeem_token("confirm-forged", &digest(0)),
            Err(ConfirmRejected::UnknownToken)
        );
        let second = s.mint_token(&digest(9999));
        assert_eq!(s.redeem_token(&second, &digest(9999)), Ok(()));
    }

    #[test]
    fn used_nonces_are_forgotten_once_their_state_expired() {
        let s = ConfirmState::new();
        let old = SealedConfirm {
            digest: "d".into(),
            nonce: "n-old".into(),
            expires: 1,
        };
        assert!(s.consume(&old));
        let sealed = s.seal(&digest(1)).unwrap();
        let state = s.open(&sealed).unwrap();
        assert!(s.consume(&state));
        assert!(!s.consume(&state));
        assert_eq!(
            s.used_nonces.lock().unwrap().len(),
            1,
            "the expired one is gone"
        );
    }

    #[test]
    fn tokens_expire() {
        let s = ConfirmState::with_ttl(Duration::from_secs(0));
        let t = s.mint_token(&digest(1));
        assert_eq!(
            s.redeem_token(&t, &digest(1)),
            Err(ConfirmRejected::Expired)
        );
    }

    #[test]
    fn sealed_state_is_integrity_checked_and_single_use() {
        let s = ConfirmState::new();
        let sealed = s.seal(&digest(3)).unwrap();
        let opened = s.open(&sealed).unwrap();
        assert_eq!(opened.digest, digest(3).as_str());
        assert!(s.consume(&opened));
        assert_eq!(s.open(&sealed), Err(ConfirmRejected::Replayed));
        let mut tampered = sealed.clone();
        tampered.insert(5, 'x');
        assert_eq!(s.open(&tampered), Err(ConfirmRejected::Tampered));
        // another process's key cannot open it
        assert_eq!(
            ConfirmState::new().open(&sealed),
            Err(ConfirmRejected::Tampered)
        );
    }
}
