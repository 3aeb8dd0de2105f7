//! Who changed which plot, in which session: the activity log of a served instance and the
//! directory of its sessions (the workbench's own and every MCP client's), so a person can see,
//! review, save or revert what any agent did.
//!
//! - [`ActivityLog`]: a bounded list of applied edits, undos, redos, saves and reverts, each with
//!   who did it (the chat, the page's tool palette, an MCP client's name, the CLI), what (the
//!   undo step's label), on which plot, in which session and when.
//! - [`SessionDirectory`]: the sessions of one served instance by id, with their client's name
//!   and how it connected. A session stays listed while its client holds it, afterwards while
//!   it has unsaved edits (so an agent's work can still be saved after it disconnects), and ten
//!   minutes more once clean.
//! - [`acting_as`]: runs a future with the name the log records for edits made inside it (the
//!   MCP server wraps each call in its client's name); edits outside take the session's default.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde::Serialize;

use crate::debrief::Debrief;

/// Most entries the log keeps (older ones are dropped first).
pub const MAX_ENTRIES: usize = 500;

/// Most sessions the directory lists; past it, the oldest disconnected clean ones go first.
pub const MAX_SESSIONS: usize = 128;

/// How long a session nobody holds and with nothing unsaved stays listed (so a person who just
/// saved an agent's work still sees it, marked saved).
pub const KEEP_CLEAN: std::time::Duration = std::time::Duration::from_secs(10 * 60);

tokio::task_local! {
    static ACTOR: String;
}

/// Run `fut` with `who` as the actor the activity log records for edits made inside it.
pub async fn acting_as<F: Future>(who: impl Into<String>, fut: F) -> F::Output {
    ACTOR.scope(who.into(), fut).await
}

/// The actor set by [`acting_as`] for the current task, if any.
pub fn current_actor() -> Option<String> {
    ACTOR.try_with(Clone::clone).ok()
}

/// What happened to a plot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Edit,
    Undo,
    Redo,
    Save,
    Revert,
    /// A plot imported into the catalogue (from the page).
    Import,
}

/// One line of the activity log.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ActivityEntry {
    /// Increasing from 1 within the process.
    pub seq: u64,
    /// RFC 3339, UTC.
    pub at: String,
    /// The chat, the tool palette, an MCP client's name, the CLI.
    pub who: String,
    /// The session's id in the [`SessionDirectory`] (`workbench` for the page's own).
    pub session: String,
    pub action: Action,
    pub plot_id: String,
    pub plot_title: String,
    /// What was done, e.g. the undo step's label.
    pub what: String,
}

/// A bounded log of applied changes, shared by every session of one instance.
#[derive(Debug, Default)]
pub struct ActivityLog {
    next: AtomicU64,
    entries: Mutex<VecDeque<ActivityEntry>>,
}

impl ActivityLog {
    fn lock(&self) -> MutexGuard<'_, VecDeque<ActivityEntry>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Append an entry (its `seq` and `at` are filled in here) and return its seq.
    pub fn push(&self, mut entry: ActivityEntry) -> u64 {
        let seq = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        entry.seq = seq;
        entry.at = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        let mut entries = self.lock();
        entries.push_back(entry);
        while entries.len() > MAX_ENTRIES {
            entries.pop_front();
        }
        seq
    }

    /// The entries, oldest first.
    pub fn entries(&self) -> Vec<ActivityEntry> {
        self.lock().iter().cloned().collect()
    }

    /// The seq of the newest entry (0 when none): changes whenever something is logged.
    pub fn last_seq(&self) -> u64 {
        self.next.load(Ordering::Relaxed)
    }
}

/// Where a [`Debrief`] logs its changes: the log, its session's id and who acts when no
/// [`acting_as`] names anyone.
#[derive(Debug, Clone)]
pub struct ActivityHook {
    pub log: Arc<ActivityLog>,
    pub session: String,
    pub default_actor: String,
}

impl ActivityHook {
    /// Log `action` on `plot` by `who` (or the current actor, or the default).
    pub fn record(
        &self,
        who: Option<&str>,
        action: Action,
        plot_id: &str,
        plot_title: &str,
        what: &str,
    ) {
        let who = who
            .map(str::to_owned)
            .or_else(current_actor)
            .unwrap_or_else(|| self.default_actor.clone());
        self.log.push(ActivityEntry {
            seq: 0,
            at: String::new(),
            who,
            session: self.session.clone(),
            action,
            plot_id: plot_id.to_owned(),
            plot_title: plot_title.to_owned(),
            what: what.to_owned(),
        });
    }
}

/// One listed session.
#[derive(Clone)]
pub struct Listed {
    pub id: String,
    /// The client's name (e.g. `claude-code/2.1.0`), or `workbench` for the page's own.
    pub client: String,
    /// How it reached the server, e.g. `MCP over HTTP (2025-11-25)`.
    pub via: String,
    /// RFC 3339, UTC.
    pub created_at: String,
    pub debrief: Arc<Debrief>,
    /// When it was last held by its client or had unsaved changes.
    touched: std::time::Instant,
}

impl Listed {
    /// Whether something besides the directory still holds the session (its client's handler,
    /// or the workbench).
    pub fn connected(&self) -> bool {
        Arc::strong_count(&self.debrief) > 2
    }
}

/// The sessions of one served instance (see the module docs).
#[derive(Default)]
pub struct SessionDirectory {
    log: Arc<ActivityLog>,
    next: AtomicU64,
    sessions: Mutex<Vec<Listed>>,
}

impl SessionDirectory {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn log(&self) -> &Arc<ActivityLog> {
        &self.log
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Listed>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// List `debrief` under `id` (a fresh `mcp-<n>` when `None`) and make it log its changes
    /// here with `default_actor` as who did them when no [`acting_as`] says. Returns the id.
    pub fn register(
        &self,
        id: Option<&str>,
        client: &str,
        via: &str,
        default_actor: &str,
        debrief: Arc<Debrief>,
    ) -> String {
        let id = id.map_or_else(
            || format!("mcp-{}", self.next.fetch_add(1, Ordering::Relaxed) + 1),
            str::to_owned,
        );
        debrief.attach_activity(ActivityHook {
            log: self.log.clone(),
            session: id.clone(),
            default_actor: default_actor.to_owned(),
        });
        let mut sessions = self.lock();
        sessions.retain(|s| s.id != id);
        sessions.push(Listed {
            id: id.clone(),
            client: client.to_owned(),
            via: via.to_owned(),
            created_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            debrief,
            touched: std::time::Instant::now(),
        });
        Self::prune(&mut sessions);
        id
    }

    /// Drop sessions nobody but the directory holds and that have had nothing unsaved for
    /// [`KEEP_CLEAN`]; past the cap, the oldest of those nobody holds.
    fn prune(sessions: &mut Vec<Listed>) {
        let held = |s: &Listed| Arc::strong_count(&s.debrief) > 1;
        let dirty = |s: &Listed| {
            s.debrief
                .session()
                .open_plots()
                .iter()
                .any(|p| p.doc.is_dirty())
        };
        let now = std::time::Instant::now();
        for s in sessions.iter_mut() {
            if held(s) || dirty(s) {
                s.touched = now;
            }
        }
        sessions.retain(|s| now.duration_since(s.touched) < KEEP_CLEAN);
        while sessions.len() > MAX_SESSIONS {
            match sessions.iter().position(|s| !held(s)) {
                Some(i) => {
                    sessions.remove(i);
                }
                None => break,
            }
        }
    }

    /// The listed sessions, oldest first (pruned first).
    pub fn sessions(&self) -> Vec<Listed> {
        let mut sessions = self.lock();
        Self::prune(&mut sessions);
        sessions.clone()
    }

    /// The session listed under `id`.
    pub fn get(&self, id: &str) -> Option<Arc<Debrief>> {
        self.lock()
            .iter()
            .find(|s| s.id == id)
            .map(|s| s.debrief.clone())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::sync::Mutex as StdMutex;
    use toolgate_core::Registry;
    use toolgate_core::telemetry::NullSink;

    fn debrief() -> Arc<Debrief> {
        Arc::new(Debrief::new(
            Arc::new(StdMutex::new(crate::session::Session::new(Vec::new()))),
            Arc::new(Registry::new()),
            Arc::new(NullSink),
            crate::debrief::Settings::default(),
        ))
    }

    #[tokio::test]
    async fn the_actor_is_the_scope_then_the_given_then_the_default() {
        let log = Arc::new(ActivityLog::default());
        let hook = ActivityHook {
            log: log.clone(),
            session: "mcp-1".to_owned(),
            default_actor: "client/1".to_owned(),
        };
        hook.record(None, Action::Edit, "p", "P", "one");
        acting_as("palette", async {
            hook.record(None, Action::Edit, "p", "P", "two");
        })
        .await;
        acting_as("palette", async {
            hook.record(Some("person"), Action::Save, "p", "P", "three");
        })
        .await;
        let who: Vec<String> = log.entries().into_iter().map(|e| e.who).collect();
        assert_eq!(who, ["client/1", "palette", "person"]);
        assert_eq!(log.last_seq(), 3);
        let e = &log.entries()[2];
        assert_eq!(
            (e.seq, e.action, e.session.as_str()),
            (3, Action::Save, "mcp-1")
        );
        assert!(e.at.ends_with('Z'));
    }

    #[test]
    fn the_log_is_bounded_oldest_first() {
        let log = ActivityLog::default();
        for i in 0..MAX_ENTRIES + 5 {
            log.push(ActivityEntry {
                seq: 0,
                at: String::new(),
                who: "x".to_owned(),
                session: "s".to_owned(),
                action: Action::Edit,
                plot_id: "p".to_owned(),
                plot_title: "P".to_owned(),
                what: i.to_string(),
            });
        }
        let entries = log.entries();
        assert_eq!(entries.len(), MAX_ENTRIES);
        assert_eq!(entries[0].what, "5");
        assert_eq!(entries.last().unwrap().seq, (MAX_ENTRIES + 5) as u64);
    }

    #[test]
    fn a_held_session_is_listed_connected_and_a_released_clean_one_stays_a_while() {
        let dir = SessionDirectory::new();
        let held = debrief();
        let id = dir.register(
            None,
            "client/1",
            "MCP over HTTP (2025-11-25)",
            "client/1",
            held.clone(),
        );
        assert_eq!(id, "mcp-1");
        let listed = dir.sessions();
        assert_eq!(listed.len(), 1);
        assert!(listed[0].connected());
        assert!(dir.get(&id).is_some_and(|d| Arc::ptr_eq(&d, &held)));
        drop(listed);
        drop(held);
        let listed = dir.sessions();
        assert_eq!(
            listed.len(),
            1,
            "kept for KEEP_CLEAN after its client let go"
        );
        assert!(!listed[0].connected());
        // the second registration gets the next id; a given id replaces the listing
        assert_eq!(dir.register(None, "c2", "v", "c2", debrief()), "mcp-2");
        let w = debrief();
        dir.register(Some("workbench"), "workbench", "page", "chat", w.clone());
        dir.register(Some("workbench"), "workbench", "page", "chat", w);
        assert_eq!(
            dir.sessions()
                .iter()
                .filter(|s| s.id == "workbench")
                .count(),
            1
        );
    }
}
