//! Session state in PostgreSQL, for `toolgate serve --state postgres://…`: the journal a
//! session records its changes in ([`PgJournal`], a [`toolgate_plot::journal::Journal`]) and
//! the change notifications that wake every instance's live views ([`Listener`]).
//!
//! Tables (created when missing, under an advisory lock so instances starting together do not
//! race):
//!
//! - `toolgate_session_ops (session, seq, op, at)`: one row per change, `seq` = 1, 2, … per
//!   session, primary key `(session, seq)` — an append with a taken number fails with a unique
//!   violation, which is the journal's [`JournalError::Conflict`]. `op` is the
//!   [`SessionOp`] as JSON text.
//! - `toolgate_plot_content (sha256, body)`: the FeatureCollection each journaled open or revert
//!   started from, keyed by its file's SHA-256, so a replay never depends on the file being
//!   unchanged.
//!
//! Each append and its `pg_notify('toolgate_session_changes', '<session>:<seq>')` are one
//! transaction: a listener hears of a change only once it is stored.
//!
//! Threads: the synchronous client runs its own small runtime, which must not be entered from an
//! async runtime's thread, and a session calls its journal from any thread under a std mutex.
//! So the journal's connection lives on a thread of its own and each call is a message to it
//! (one round trip, answered within [`CALL_TIMEOUT`]); the listener is a second thread with a
//! second connection.

#![warn(unreachable_pub)]
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use postgres::error::SqlState;
use postgres::fallible_iterator::FallibleIterator;
use postgres::{Client, NoTls};
use toolgate_plot::journal::{Journal, JournalError, SessionOp};

/// The channel every change is announced on.
pub const CHANNEL: &str = "toolgate_session_changes";

/// How long one journal call may take before the session is told the store failed.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(30);

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS toolgate_session_ops (
    session text NOT NULL,
    seq bigint NOT NULL CHECK (seq > 0),
    op text NOT NULL,
    at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (session, seq)
);
CREATE TABLE IF NOT EXISTS toolgate_plot_content (
    sha256 text PRIMARY KEY,
    body bytea NOT NULL,
    at timestamptz NOT NULL DEFAULT now()
);
";

#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error(
        "cannot connect to the session state database ({dsn}): {source}. Start PostgreSQL or pass another --state postgres://user@host:port/db"
    )]
    Connect {
        dsn: String,
        #[source]
        source: postgres::Error,
    },
    #[error("cannot create the session state tables: {0}")]
    Schema(#[source] postgres::Error),
    #[error("the session state thread could not start: {0}")]
    Thread(#[source] std::io::Error),
}

/// The connection string without its password (for messages and logs).
pub fn redact(dsn: &str) -> String {
    match (dsn.find("://"), dsn.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let userinfo = &dsn[scheme + 3..at];
            match userinfo.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &dsn[..scheme + 3], &dsn[at..]),
                None => dsn.to_owned(),
            }
        }
        _ => dsn.to_owned(),
    }
}

fn connect(dsn: &str) -> Result<Client, StateError> {
    Client::connect(dsn, NoTls).map_err(|source| StateError::Connect {
        dsn: redact(dsn),
        source,
    })
}

type Job = Box<dyn FnOnce(&mut Conn) + Send>;

/// The journal thread's connection, reopened when it broke.
struct Conn {
    dsn: String,
    client: Option<Client>,
}

impl Conn {
    fn client(&mut self) -> Result<&mut Client, JournalError> {
        if self.client.as_ref().is_none_or(Client::is_closed) {
            self.client = None;
            let c = connect(&self.dsn).map_err(|e| JournalError::Store(e.to_string()))?;
            self.client = Some(c);
        }
        self.client
            .as_mut()
            .ok_or_else(|| JournalError::Store("no connection".to_owned()))
    }
}

fn store_error(e: &postgres::Error) -> JournalError {
    JournalError::Store(e.to_string())
}

/// One session's journal in PostgreSQL (see the crate docs).
#[derive(Debug)]
pub struct PgJournal {
    session: String,
    /// The journal thread's queue, shared by every session's journal made from one connection.
    jobs: mpsc::Sender<Job>,
}

impl PgJournal {
    /// Connect, create the tables when missing, and start the journal's thread. (Everything,
    /// the first connection included, happens on that thread: callable from async code.)
    pub fn connect(dsn: &str, session: &str) -> Result<Arc<Self>, StateError> {
        let (tx, rx) = mpsc::channel::<Job>();
        let (ready_tx, ready_rx) = mpsc::sync_channel::<Result<(), StateError>>(1);
        let dsn = dsn.to_owned();
        std::thread::Builder::new()
            .name(format!("toolgate-state-{session}"))
            .spawn(move || {
                let first = connect(&dsn).and_then(|mut client| {
                    create_schema(&mut client).map_err(StateError::Schema)?;
                    Ok(client)
                });
                let mut conn = match first {
                    Ok(client) => {
                        let _ = ready_tx.send(Ok(()));
                        Conn {
                            dsn,
                            client: Some(client),
                        }
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                // Ends when the journal (the only sender) is dropped.
                for job in rx {
                    job(&mut conn);
                }
            })
            .map_err(StateError::Thread)?;
        ready_rx
            .recv()
            .map_err(|_| StateError::Thread(std::io::Error::other("the thread stopped")))??;
        Ok(Arc::new(Self {
            session: session.to_owned(),
            jobs: tx,
        }))
    }

    /// The journal of another session on the same connection and thread (one connection serves
    /// every session of an instance, however many clients name sessions).
    pub fn session_journal(&self, session: &str) -> Arc<Self> {
        Arc::new(Self {
            session: session.to_owned(),
            jobs: self.jobs.clone(),
        })
    }

    /// Run `f` on the journal's connection and wait for its answer.
    fn call<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Client) -> Result<T, JournalError> + Send + 'static,
    ) -> Result<T, JournalError> {
        let (tx, rx) = mpsc::sync_channel(1);
        let job: Job = Box::new(move |conn: &mut Conn| {
            let result = conn.client().and_then(f);
            if matches!(result, Err(JournalError::Store(_)))
                && conn.client.as_ref().is_some_and(Client::is_closed)
            {
                conn.client = None;
            }
            let _ = tx.send(result);
        });
        self.jobs
            .send(job)
            .map_err(|_| JournalError::Store("the session state thread stopped".to_owned()))?;
        rx.recv_timeout(CALL_TIMEOUT).map_err(|e| match e {
            mpsc::RecvTimeoutError::Timeout => JournalError::Store(format!(
                "no answer from the database within {} s",
                CALL_TIMEOUT.as_secs()
            )),
            mpsc::RecvTimeoutError::Disconnected => {
                JournalError::Store("the session state thread stopped".to_owned())
            }
        })?
    }
}

fn create_schema(client: &mut Client) -> Result<(), postgres::Error> {
    // Two instances starting at once would race on CREATE TABLE IF NOT EXISTS (a unique
    // violation on the catalog): one creates, the other waits.
    let mut tx = client.transaction()?;
    tx.execute(
        "SELECT pg_advisory_xact_lock(hashtext('toolgate-state-schema'))",
        &[],
    )?;
    tx.batch_execute(SCHEMA)?;
    tx.commit()
}

impl Journal for PgJournal {
    fn session(&self) -> &str {
        &self.session
    }

    fn since(&self, after: u64) -> Result<Vec<(u64, SessionOp)>, JournalError> {
        let session = self.session.clone();
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        self.call(move |c| {
            let rows = c
                .query(
                    "SELECT seq, op FROM toolgate_session_ops WHERE session = $1 AND seq > $2 ORDER BY seq LIMIT 1000",
                    &[&session, &after],
                )
                .map_err(|e| store_error(&e))?;
            rows.iter()
                .map(|row| {
                    let seq: i64 = row.get(0);
                    let text: &str = row.get(1);
                    let op = serde_json::from_str(text).map_err(|e| {
                        JournalError::Corrupt(format!("entry {seq} of session {session}: {e}"))
                    })?;
                    Ok((u64::try_from(seq).unwrap_or_default(), op))
                })
                .collect()
        })
    }

    fn append(&self, seq: u64, op: &SessionOp) -> Result<(), JournalError> {
        let session = self.session.clone();
        let text = serde_json::to_string(op).map_err(|e| JournalError::Corrupt(e.to_string()))?;
        let seq_i = i64::try_from(seq).map_err(|e| JournalError::Corrupt(e.to_string()))?;
        self.call(move |c| {
            let conflict = |e: postgres::Error| {
                if e.code() == Some(&SqlState::UNIQUE_VIOLATION) {
                    JournalError::Conflict {
                        session: session.clone(),
                        seq,
                    }
                } else {
                    store_error(&e)
                }
            };
            let mut tx = c.transaction().map_err(|e| store_error(&e))?;
            tx.execute(
                "INSERT INTO toolgate_session_ops (session, seq, op) VALUES ($1, $2, $3)",
                &[&session, &seq_i, &text],
            )
            .map_err(conflict)?;
            let payload = format!("{session}:{seq}");
            tx.execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &payload])
                .map_err(|e| store_error(&e))?;
            tx.commit().map_err(conflict)
        })
    }

    fn has_content(&self, sha256: &str) -> Result<bool, JournalError> {
        let key = sha256.to_owned();
        self.call(move |c| {
            c.query_opt(
                "SELECT 1 FROM toolgate_plot_content WHERE sha256 = $1",
                &[&key],
            )
            .map(|row| row.is_some())
            .map_err(|e| store_error(&e))
        })
    }

    fn put_content(&self, sha256: &str, bytes: &[u8]) -> Result<(), JournalError> {
        let key = sha256.to_owned();
        let body = bytes.to_vec();
        self.call(move |c| {
            c.execute(
                "INSERT INTO toolgate_plot_content (sha256, body) VALUES ($1, $2) ON CONFLICT (sha256) DO NOTHING",
                &[&key, &body],
            )
            .map(|_| ())
            .map_err(|e| store_error(&e))
        })
    }

    fn content(&self, sha256: &str) -> Result<Option<Vec<u8>>, JournalError> {
        let key = sha256.to_owned();
        self.call(move |c| {
            c.query_opt(
                "SELECT body FROM toolgate_plot_content WHERE sha256 = $1",
                &[&key],
            )
            .map(|row| row.map(|r| r.get::<_, Vec<u8>>(0)))
            .map_err(|e| store_error(&e))
        })
    }
}

/// A change announced on [`CHANNEL`]: the session's key and the entry's number; `seq` 0 means
/// "the listener (re)connected, changes may have been missed — catch up".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Changed {
    pub session: String,
    pub seq: u64,
}

/// Listens for changes on its own connection and thread, and calls back for each; reconnects
/// (with a growing pause, at most 5 s) when the connection breaks. Stops when dropped.
pub struct Listener {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Listener {
    pub fn start(
        dsn: &str,
        on_change: impl Fn(Changed) + Send + 'static,
    ) -> Result<Self, StateError> {
        // The first connection is waited for, so a wrong --state fails at start, not in a log.
        let dsn = dsn.to_owned();
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let (ready_tx, ready_rx) = mpsc::sync_channel::<Result<(), StateError>>(1);
        let thread = std::thread::Builder::new()
            .name("toolgate-state-listen".to_owned())
            .spawn(move || {
                let mut first = match connect(&dsn) {
                    Ok(c) => {
                        let _ = ready_tx.send(Ok(()));
                        Some(c)
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                let mut pause = Duration::from_millis(100);
                while !stopping.load(Ordering::Relaxed) {
                    let client = match first.take().map_or_else(|| connect(&dsn), Ok) {
                        Ok(c) => c,
                        Err(e) => {
                            tracing::warn!("{e}; retrying in {} ms", pause.as_millis());
                            std::thread::sleep(pause);
                            pause = (pause * 2).min(Duration::from_secs(5));
                            continue;
                        }
                    };
                    pause = Duration::from_millis(100);
                    listen(client, &stopping, &on_change);
                }
            })
            .map_err(StateError::Thread)?;
        ready_rx
            .recv()
            .map_err(|_| StateError::Thread(std::io::Error::other("the thread stopped")))??;
        Ok(Self {
            stop,
            thread: Some(thread),
        })
    }
}

fn listen(mut client: Client, stop: &AtomicBool, on_change: &impl Fn(Changed)) {
    if let Err(e) = client.batch_execute(&format!("LISTEN {CHANNEL}")) {
        tracing::warn!("cannot LISTEN for session changes: {e}");
        return;
    }
    // Anything announced while this connection was not listening was missed.
    on_change(Changed {
        session: String::new(),
        seq: 0,
    });
    while !stop.load(Ordering::Relaxed) {
        let mut notifications = client.notifications();
        let mut it = notifications.timeout_iter(Duration::from_millis(500));
        loop {
            match it.next() {
                Ok(Some(n)) => {
                    let (session, seq) = n.payload().rsplit_once(':').unwrap_or((n.payload(), "0"));
                    on_change(Changed {
                        session: session.to_owned(),
                        seq: seq.parse().unwrap_or_default(),
                    });
                }
                Err(e) => {
                    tracing::warn!("session change notifications stopped: {e}; reconnecting");
                    return;
                }
                Ok(None) => break,
            }
        }
        drop(it);
        drop(notifications);
        if client.is_closed() {
            return;
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_not_shown() {
        assert_eq!(
            redact("postgres://alice:s3cret@db:5432/x"),
            "postgres://alice:***@db:5432/x"
        );
        assert_eq!(redact("postgres://alice@db/x"), "postgres://alice@db/x");
        assert_eq!(redact("host=/tmp user=x"), "host=/tmp user=x");
    }
}
