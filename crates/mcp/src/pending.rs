//! Bounded holding of what waits for a person's out-of-band confirmation.
//!
//! A `run_code` program's previewed plot change is kept until the client comes back with the
//! MRTR answer or the token ([`crate::server`]); a client that repeats `run_code` and never
//! confirms made the server keep every one of them for the whole confirmation lifetime (~39 MB
//! each for a bulk edit of a large plot: RSS 1.2 → 2.8 GB after 40 calls). [`Pending`] holds
//! them with a cap per session and per server, by count and by bytes; the oldest is evicted
//! first, and an evicted key is remembered (a bounded list of keys only) so the client that
//! presents it is told it expired early to bound memory — not that it was forged or unknown.

use std::collections::VecDeque;
use std::time::Instant;

/// How much may wait for a confirmation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PendingLimits {
    /// Per session (one client's plot session): a person confirms one change at a time, so a
    /// handful is plenty; more is a client that previews and never asks.
    pub per_session: usize,
    /// Per server, all sessions together (bounds many clients, or one opening many sessions).
    pub per_server: usize,
    /// Per server, the estimated size of everything held (serialized change sets, programs and
    /// envelopes).
    pub max_bytes: usize,
}

impl PendingLimits {
    /// 16: four times more than a person could be asked about at once, far fewer than the 40
    /// calls that took the server to 2.8 GB.
    pub const DEFAULT_PER_SESSION: usize = 16;
    /// 64: the default cap of HTTP sessions ([`crate::SessionLimits::DEFAULT_MAX_SESSIONS`]),
    /// one waiting change each.
    pub const DEFAULT_PER_SERVER: usize = 64;
    /// 64 MiB (serialized; the in-memory form is a few times larger): room for a few bulk edits
    /// of the largest demo plots, a bounded fraction of a laptop's memory.
    pub const DEFAULT_MAX_BYTES: usize = 64 << 20;
}

impl Default for PendingLimits {
    fn default() -> Self {
        Self {
            per_session: Self::DEFAULT_PER_SESSION,
            per_server: Self::DEFAULT_PER_SERVER,
            max_bytes: Self::DEFAULT_MAX_BYTES,
        }
    }
}

/// How many evicted keys are remembered (keys only, ~100 bytes each), so their clients hear
/// "evicted" rather than "unknown".
const REMEMBERED_EVICTIONS: usize = 1024;

struct Entry<T> {
    key: String,
    owner: usize,
    bytes: usize,
    expires: Instant,
    value: T,
}

/// What [`Pending::take`] found.
#[derive(Debug)]
pub enum Taken<T> {
    Found(T),
    /// It was held, and evicted to bound memory before its lifetime ended.
    Evicted,
    /// Never held, taken already, or past its lifetime.
    Gone,
}

/// Why [`Pending::insert`] did not keep a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "the change is about {bytes} bytes, more than the {limit} bytes this server holds while waiting for a confirmation; nothing was applied. Make a smaller change per program (fewer features or a narrower scope)"
)]
pub struct TooLarge {
    pub bytes: usize,
    pub limit: usize,
}

/// Values waiting for a confirmation, oldest first, within [`PendingLimits`].
pub struct Pending<T> {
    limits: PendingLimits,
    entries: VecDeque<Entry<T>>,
    bytes: usize,
    evicted: VecDeque<String>,
}

impl<T> Pending<T> {
    pub fn new(limits: PendingLimits) -> Self {
        Self {
            limits,
            entries: VecDeque::new(),
            bytes: 0,
            evicted: VecDeque::new(),
        }
    }

    pub fn limits(&self) -> PendingLimits {
        self.limits
    }

    pub fn set_limits(&mut self, limits: PendingLimits) {
        self.limits = limits;
    }

    /// How many are held.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The estimated bytes held.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// How many `owner` holds.
    pub fn held_by(&self, owner: usize) -> usize {
        self.entries.iter().filter(|e| e.owner == owner).count()
    }

    /// Drop what has expired now (a paused program is stopped when dropped, so its worker is
    /// freed at its time, not at the next insert).
    pub fn sweep(&mut self) {
        self.drop_expired(Instant::now());
    }

    fn drop_expired(&mut self, now: Instant) {
        let bytes = &mut self.bytes;
        self.entries.retain(|e| {
            let keep = e.expires > now;
            if !keep {
                *bytes -= e.bytes;
            }
            keep
        });
    }

    fn evict_at(&mut self, i: usize) {
        if let Some(e) = self.entries.remove(i) {
            self.bytes -= e.bytes;
            tracing::info!(
                key = %e.key,
                bytes = e.bytes,
                "a change waiting for confirmation was evicted to bound memory"
            );
            if self.evicted.len() >= REMEMBERED_EVICTIONS {
                self.evicted.pop_front();
            }
            self.evicted.push_back(e.key);
        }
    }

    /// Hold `value` under `key` for `owner` (a session) until `expires`, evicting the oldest of
    /// the owner's, then the oldest of all, until it fits. A value larger than the byte cap on
    /// its own is not held.
    pub fn insert(
        &mut self,
        key: &str,
        owner: usize,
        bytes: usize,
        expires: Instant,
        value: T,
    ) -> Result<(), TooLarge> {
        if bytes > self.limits.max_bytes {
            return Err(TooLarge {
                bytes,
                limit: self.limits.max_bytes,
            });
        }
        let now = Instant::now();
        self.drop_expired(now);
        if let Some(i) = self.entries.iter().position(|e| e.key == key)
            && let Some(old) = self.entries.remove(i)
        {
            self.bytes -= old.bytes;
        }
        self.evicted.retain(|k| k != key);
        while self.held_by(owner) >= self.limits.per_session.max(1) {
            match self.entries.iter().position(|e| e.owner == owner) {
                Some(i) => self.evict_at(i),
                None => break,
            }
        }
        while !self.entries.is_empty()
            && (self.entries.len() >= self.limits.per_server.max(1)
                || self.bytes + bytes > self.limits.max_bytes)
        {
            self.evict_at(0);
        }
        self.bytes += bytes;
        self.entries.push_back(Entry {
            key: key.to_owned(),
            owner,
            bytes,
            expires,
            value,
        });
        Ok(())
    }

    /// Take what is held under `key` (single use).
    pub fn take(&mut self, key: &str) -> Taken<T> {
        self.drop_expired(Instant::now());
        if let Some(i) = self.entries.iter().position(|e| e.key == key)
            && let Some(e) = self.entries.remove(i)
        {
            self.bytes -= e.bytes;
            return Taken::Found(e.value);
        }
        if let Some(i) = self.evicted.iter().position(|k| k == key) {
            self.evicted.remove(i);
            return Taken::Evicted;
        }
        Taken::Gone
    }
}

/// The serialized size of `value`, counted without building the text.
pub fn json_size<V: serde::Serialize + ?Sized>(value: &V) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut c = Count(0);
    // Unserializable (never for plain data): what was written still counts.
    let _ = serde_json::to_writer(&mut c, value);
    c.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn later() -> Instant {
        Instant::now() + Duration::from_secs(300)
    }

    fn limits(per_session: usize, per_server: usize, max_bytes: usize) -> PendingLimits {
        PendingLimits {
            per_session,
            per_server,
            max_bytes,
        }
    }

    #[test]
    fn per_session_count_cap_evicts_that_sessions_oldest() {
        let mut p = Pending::new(limits(3, 100, 1 << 20));
        p.insert("other", 2, 10, later(), 0).unwrap();
        for i in 0..10 {
            p.insert(&format!("k{i}"), 1, 10, later(), i).unwrap();
            assert!(p.held_by(1) <= 3);
        }
        assert_eq!(p.len(), 4);
        assert!(matches!(p.take("k0"), Taken::Evicted));
        // said once: the key is forgotten after that
        assert!(matches!(p.take("k0"), Taken::Gone));
        assert!(matches!(p.take("k9"), Taken::Found(9)));
        // another session's is untouched
        assert!(matches!(p.take("other"), Taken::Found(0)));
        assert!(matches!(p.take("never"), Taken::Gone));
    }

    #[test]
    fn per_server_count_and_byte_caps_evict_the_oldest() {
        let mut p = Pending::new(limits(100, 4, 1000));
        for i in 0..10 {
            p.insert(&format!("k{i}"), i, 100, later(), i).unwrap();
            assert!(p.len() <= 4);
        }
        assert!(matches!(p.take("k5"), Taken::Evicted));
        assert!(matches!(p.take("k6"), Taken::Found(6)));
        let mut p = Pending::new(limits(100, 100, 1000));
        for i in 0..10 {
            p.insert(&format!("k{i}"), i, 300, later(), i).unwrap();
            assert!(p.bytes() <= 1000, "{} bytes held", p.bytes());
        }
        assert_eq!(p.len(), 3);
        assert!(matches!(p.take("k6"), Taken::Evicted));
        assert_eq!(
            p.insert("huge", 1, 1001, later(), 0),
            Err(TooLarge {
                bytes: 1001,
                limit: 1000
            })
        );
        assert_eq!(p.len(), 3, "a value over the cap evicts nothing");
    }

    #[test]
    fn expired_values_are_gone_and_free_their_bytes() {
        let mut p = Pending::new(PendingLimits::default());
        p.insert("a", 1, 500, Instant::now(), 1).unwrap();
        p.insert("b", 1, 500, later(), 2).unwrap();
        assert_eq!(p.bytes(), 500);
        assert!(matches!(p.take("a"), Taken::Gone));
        assert!(matches!(p.take("b"), Taken::Found(2)));
        assert_eq!(p.bytes(), 0);
    }

    #[test]
    fn json_size_is_the_serialized_length() {
        let v = serde_json::json!({"a": [1, 2, "x"]});
        assert_eq!(json_size(&v), v.to_string().len());
    }
}
