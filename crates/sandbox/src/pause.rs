//! Time a run spends waiting for a person.
//!
//! A program that calls a tool needing a confirmation stops *at that call* until somebody
//! answers (a terminal prompt, an MCP elicitation, or a later `run_code` round with a token):
//! the interpreter stays suspended in its worker, the calls made before are never made again.
//! The wall-clock limit is for the program's own work, so that wait must not count: the host
//! that waits records it on a [`PauseClock`], and every deadline (the engine's, the worker
//! pool's watchdog) is moved back by [`PauseClock::credit`]. While a run is paused its worker
//! pool slot is free for other programs ([`crate::WorkerPool`]).

use std::sync::Mutex;
use std::time::{Duration, Instant};

#[derive(Debug, Default)]
struct State {
    /// When the wait in progress began (`None`: not waiting). Nested waits (two awaited calls
    /// asking together) count once.
    since: Option<Instant>,
    waiting: usize,
    /// Time of the waits that ended.
    total: Duration,
}

/// Time spent waiting for a person, shared by the host that waits and the deadlines that must
/// not count it.
#[derive(Debug, Default)]
pub struct PauseClock {
    state: Mutex<State>,
}

impl PauseClock {
    pub fn new() -> Self {
        Self::default()
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A wait for a person begins.
    pub fn begin(&self) {
        let mut s = self.state();
        if s.waiting == 0 {
            s.since = Some(Instant::now());
        }
        s.waiting += 1;
    }

    /// A wait ends (however it ended).
    pub fn end(&self) {
        let mut s = self.state();
        s.waiting = s.waiting.saturating_sub(1);
        if s.waiting == 0
            && let Some(since) = s.since.take()
        {
            s.total += since.elapsed();
        }
    }

    /// Whether a wait is in progress.
    pub fn is_paused(&self) -> bool {
        self.state().waiting > 0
    }

    /// All the time waited so far, the wait in progress included.
    pub fn credit(&self) -> Duration {
        let s = self.state();
        s.total + s.since.map_or(Duration::ZERO, |t| t.elapsed())
    }

    /// Raise the ended waits' total to `total` (a worker learns it from the pool's frames; it
    /// never goes down).
    pub fn raise_to(&self, total: Duration) {
        let mut s = self.state();
        if total > s.total {
            s.total = total;
        }
    }

    /// Forget every wait (a worker starting its next program).
    pub fn reset(&self) {
        *self.state() = State::default();
    }

    /// A guard that counts one wait until dropped (so a cancelled wait still ends).
    pub fn waiting(&self) -> Waiting<'_> {
        self.begin();
        Waiting(self)
    }
}

/// See [`PauseClock::waiting`].
#[must_use = "the wait ends when this is dropped"]
pub struct Waiting<'a>(&'a PauseClock);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.end();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_add_up_once_even_when_nested() {
        let c = PauseClock::new();
        assert_eq!(c.credit(), Duration::ZERO);
        assert!(!c.is_paused());
        {
            let _a = c.waiting();
            let _b = c.waiting();
            std::thread::sleep(Duration::from_millis(30));
            assert!(c.is_paused());
            assert!(c.credit() >= Duration::from_millis(30));
        }
        assert!(!c.is_paused());
        let after = c.credit();
        assert!(after >= Duration::from_millis(30) && after < Duration::from_millis(60));
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(c.credit(), after, "time outside a wait is not credited");
        c.raise_to(Duration::from_secs(2));
        assert_eq!(c.credit(), Duration::from_secs(2));
        c.raise_to(Duration::from_secs(1));
        assert_eq!(c.credit(), Duration::from_secs(2), "never goes down");
    }
}
