//! sql: SQLite through rusqlite, confined to the workspace.
//!
//! The database path goes through the path guard. An authorizer refuses ATTACH and DETACH (the
//! anchor's escape: `ATTACH DATABASE '/tmp/x.db'` created a file anywhere), any call of a
//! function named `load_extension`, and the pragmas that point SQLite at other directories.
//! Extension loading stays disabled, the attached-database limit is 1 (for VACUUM's private temp
//! database, the only ATTACH allowed), and the connection runs
//! in defensive mode with an untrusted schema.
//!
//! Only regular files with one hard link are opened: the database and any `-journal`, `-wal`
//! or `-shm` beside it. A hard link inside the workspace may name a file from anywhere (Landlock
//! sees only the path), so `ln /outside/o.db ws/hard.db` wrote into `/outside/o.db`. Each file
//! is checked early through the path guard (for a clear refusal before SQLite starts) and again
//! by `sql_open` on the very descriptor SQLite then uses, which closes the race: a link swapped
//! in after the early check, or a journal linked in before SQLite creates it at the first
//! write, is refused when SQLite opens it.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::fallible_iterator::FallibleIterator;
use rusqlite::hooks::{AuthAction, AuthContext, Authorization};
use rusqlite::limits::Limit;
use rusqlite::types::ValueRef;
use rusqlite::{Batch, Connection, OpenFlags, config::DbConfig};
use serde_json::{Map, Value, json};
use toolgate_core::{CallError, ToolOutcome};

use crate::cap::cap_str;
use crate::guard::{GuardError, check_readable};
use crate::params::Params;
use crate::specs::kinds;
use crate::sql_open::{Refusal, RefusalKind, Scope};
use crate::{Inner, outcome};

const MEMORY: &str = ":memory:";

/// The largest string or blob a statement may make (SQLITE_LIMIT_LENGTH).
const MAX_VALUE_BYTES: i32 = 64 * 1024 * 1024;
/// SQLite's heap in this process at most (`PRAGMA hard_heap_limit`).
const HEAP_LIMIT_BYTES: i64 = 256 * 1024 * 1024;

/// Pragmas that would make SQLite write outside the workspace or weaken its own checks.
const DENIED_PRAGMAS: &[&str] = &[
    "temp_store_directory",
    "data_store_directory",
    "writable_schema",
    "trusted_schema",
];

/// Decide one action; `Some(reason)` refuses it.
fn refuse(action: &AuthAction<'_>) -> Option<String> {
    match action {
        // An empty name is SQLite's private temporary database (plain VACUUM uses one).
        AuthAction::Attach { filename: "" } => None,
        AuthAction::Attach { filename } => Some(format!(
            "ATTACH and VACUUM INTO are not allowed (they would open \"{filename}\", possibly outside the workspace); give the database as db_path instead"
        )),
        AuthAction::Detach { .. } => Some("DETACH is not allowed".to_owned()),
        AuthAction::Function { function_name }
            if function_name.eq_ignore_ascii_case("load_extension") =>
        {
            Some("load_extension() is not allowed: SQLite extensions cannot be loaded".to_owned())
        }
        AuthAction::Pragma { pragma_name, .. }
            if DENIED_PRAGMAS
                .iter()
                .any(|p| pragma_name.eq_ignore_ascii_case(p)) =>
        {
            Some(format!("PRAGMA {pragma_name} is not allowed"))
        }
        _ => None,
    }
}

/// What SQLite may create or open beside a database: a companion at one of these names that is
/// hard-linked (or no regular file) refuses the database before SQLite touches it.
const COMPANIONS: [&str; 3] = ["-journal", "-wal", "-shm"];

/// Check an existing database file, or a companion of it, by what the guard opens beneath the
/// root (never following a link out): a regular file with one link. `Ok` also when nothing is
/// there (SQLite may create it). Only for a clear early answer: [`crate::sql_open`] checks every
/// file again on the very descriptor SQLite uses, which is what closes the race.
fn precheck(inner: &Inner, user_path: &str, db_rel: &str) -> Result<(), CallError> {
    let opened = match inner.guard.open_path(user_path) {
        Ok(o) => o,
        Err(GuardError::NotFound { .. }) => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    let kind = match opened.file_type() {
        rustix::fs::FileType::RegularFile => match check_readable(&opened) {
            Ok(()) => return Ok(()),
            Err(GuardError::HardLinked { links, .. }) => RefusalKind::HardLinked(links),
            Err(e) => return Err(e.into()),
        },
        rustix::fs::FileType::Directory => RefusalKind::NotRegular("a directory"),
        _ => RefusalKind::NotRegular("a FIFO, socket or device"),
    };
    let refusal = Refusal {
        rel: opened.rel,
        reason: kind,
    };
    Err(refused(&refusal, db_rel))
}

fn refused(refusal: &Refusal, db_rel: &str) -> CallError {
    CallError::PermissionDenied {
        message: format!("sql: {}", refusal.message(db_rel)),
    }
}

fn open(inner: &Inner, db_arg: &str, scope: &Scope<'_>) -> Result<(Connection, String), CallError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    if db_arg == MEMORY {
        let conn = Connection::open_in_memory_with_flags(flags).map_err(|e| {
            CallError::failed(format!("sql: could not open an in-memory database: {e}"))
        })?;
        return Ok((conn, MEMORY.to_owned()));
    }
    // The folders are made and the name checked beneath the workspace root's descriptor. SQLite
    // then opens the file (and its journal) by path itself; SQLITE_OPEN_NOFOLLOW makes it refuse
    // a path with any symbolic link in it at that moment, this thread's Landlock domain (see
    // `sql`) refuses whatever a swap in between makes the name resolve to outside, and the
    // checked open (`sql_open`) refuses a hard link or special file swapped in.
    let slot = inner.guard.slot(db_arg, true)?;
    let rel = slot.rel;
    precheck(inner, db_arg, &rel)?;
    for suffix in COMPANIONS {
        precheck(inner, &format!("{db_arg}{suffix}"), &rel)?;
    }
    let path = inner.guard.root().join(inner.guard.lexical_rel(db_arg)?);
    // No SQLITE_OPEN_URI: the path is a plain file name, never a `file:` URI with options.
    let conn =
        Connection::open_with_flags(&path, flags | OpenFlags::SQLITE_OPEN_NOFOLLOW).map_err(|e| {
            if let Some(r) = scope.take_refusal() {
                return refused(&r, &rel);
            }
            CallError::failed(format!(
                "sql: could not open \"{rel}\": {e}. A db_path may not go through a symbolic link; give the real path inside the workspace."
            ))
        })?;
    Ok((conn, rel))
}

fn harden(conn: &mut Connection, denied: Arc<Mutex<Option<String>>>) -> rusqlite::Result<()> {
    conn.pragma_update(None, "temp_store", "MEMORY")?;
    conn.busy_timeout(Duration::from_secs(5))?;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_DEFENSIVE, true)?;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_TRUSTED_SCHEMA, false)?;
    // One slot: plain VACUUM attaches SQLite's private temporary database (the authorizer lets
    // only that one through).
    conn.set_limit(Limit::SQLITE_LIMIT_ATTACHED, 1)?;
    // Bound what one value may grow to (randomblob(1e9) would otherwise be allocated whole) and
    // SQLite's heap in this process (sorts and temp tables live in memory: temp_store=MEMORY).
    // The heap limit is process-wide and can only be lowered by a query, never raised.
    conn.set_limit(Limit::SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)?;
    conn.pragma_update(None, "hard_heap_limit", HEAP_LIMIT_BYTES)?;
    conn.authorizer(Some(move |ctx: AuthContext<'_>| {
        match refuse(&ctx.action) {
            Some(reason) => {
                if let Ok(mut slot) = denied.lock() {
                    slot.get_or_insert(reason);
                }
                Authorization::Deny
            }
            None => Authorization::Allow,
        }
    }))?;
    Ok(())
}

fn value_json(v: ValueRef<'_>, cell_cap: usize) -> Value {
    match v {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => json!(i),
        ValueRef::Real(f) => serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number),
        ValueRef::Text(t) => Value::String(cap_str(&String::from_utf8_lossy(t), cell_cap).0),
        ValueRef::Blob(b) => {
            let shown = &b[..b.len().min(cell_cap / 2)];
            let mut hex: String = shown.iter().map(|x| format!("{x:02x}")).collect();
            if shown.len() < b.len() {
                hex.push_str(&crate::cap::bytes_marker(b.len() - shown.len()));
            }
            json!({"blob_hex": hex, "bytes": b.len()})
        }
    }
}

enum Last {
    Nothing,
    Query {
        columns: Vec<String>,
        rows: Vec<Value>,
        more: usize,
        /// The byte cap stopped the query: rows after these were not read.
        cut_at_bytes: bool,
    },
    Statement,
}

/// About how many bytes a value adds to the JSON result (to stop at the cap while producing).
fn json_size(v: &Value) -> usize {
    match v {
        Value::Null | Value::Bool(_) => 5,
        Value::Number(_) => 24,
        Value::String(s) => s.len() + 3,
        Value::Array(a) => a.iter().map(json_size).sum::<usize>() + 2,
        Value::Object(o) => {
            o.iter()
                .map(|(k, v)| k.len() + 4 + json_size(v))
                .sum::<usize>()
                + 2
        }
    }
}

/// The `sql` tool. SQLite opens its database, journal and WAL by name (its unix VFS resolves
/// every path, `/proc/self/fd/N/…` included, to a textual one and reopens that), so a name
/// checked beneath the workspace could be redirected by a directory swapped for a symbolic
/// link in between. The whole call therefore runs on a thread of its own that Landlock
/// restricts to the workspace root's descriptor before anything is opened: whatever a name
/// resolves to, the kernel refuses every file outside the workspace. On the same thread every
/// file SQLite opens goes through `sql_open`'s checked open (beneath the root, no symbolic
/// links, one hard link, a regular file). Without Landlock (an old kernel) the name checks,
/// `SQLITE_OPEN_NOFOLLOW` and the checked open remain.
pub(crate) fn sql(
    inner: &Inner,
    map: &Map<String, Value>,
    deadline: Option<Duration>,
) -> Result<ToolOutcome, CallError> {
    // Installed here, on a thread Landlock does not restrict, so SQLite seeds its random
    // numbers from /dev/urandom before the worker below can open only the workspace.
    crate::sql_open::install().map_err(|e| CallError::failed(e.to_string()))?;
    std::thread::scope(|scope| {
        let worker = std::thread::Builder::new()
            .name("toolgate-sql".to_owned())
            .spawn_scoped(scope, || {
                match toolgate_confine::restrict_this_thread_to(&[inner.guard.root_fd()]) {
                    Ok(true) => {}
                    Ok(false) => tracing::debug!(
                        "sql: no Landlock here; the database is confined by name checks only"
                    ),
                    Err(e) => {
                        return Err(CallError::failed(format!(
                            "sql: could not confine the database to the workspace ({e}); nothing was opened"
                        )));
                    }
                }
                sql_confined(inner, map, deadline)
            })
            .map_err(|e| CallError::failed(format!("sql: could not start a thread: {e}")))?;
        worker
            .join()
            .unwrap_or_else(|_| Err(CallError::failed("sql: the query thread panicked")))
    })
}

fn sql_confined(
    inner: &Inner,
    map: &Map<String, Value>,
    deadline: Option<Duration>,
) -> Result<ToolOutcome, CallError> {
    let p = Params::new("sql", map);
    let query = p.str_req("query")?;
    let default_db = inner.config.sql_default_db.to_string_lossy();
    let db_arg = p.str_or("db_path", &default_db)?;
    // Declared before the connection, so it ends after the connection has closed.
    let scope = Scope::enter(inner.guard.root(), inner.guard.root_fd())
        .map_err(|e| CallError::failed(e.to_string()))?;
    let (mut conn, shown_db) = open(inner, db_arg, &scope)?;
    let denied: Arc<Mutex<Option<String>>> = Arc::new(Mutex::new(None));
    harden(&mut conn, Arc::clone(&denied)).map_err(|e| match scope.take_refusal() {
        Some(r) => refused(&r, &shown_db),
        None => CallError::failed(format!("sql: could not set up \"{shown_db}\": {e}")),
    })?;

    // Interrupt a statement that runs past the deadline.
    let limit = deadline.map_or(inner.config.sql_timeout, |d| {
        d.min(inner.config.sql_timeout)
    });
    let handle = conn.get_interrupt_handle();
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        if let Err(mpsc::RecvTimeoutError::Timeout) = done_rx.recv_timeout(limit) {
            handle.interrupt();
            true
        } else {
            false
        }
    });
    let result = run_batch(inner, &conn, query);
    let _ = done_tx.send(());
    let timed_out = watchdog.join().unwrap_or(false);

    let (last, affected, statements) = match result {
        Ok(r) => r,
        Err(e) => {
            // A journal or WAL refused by the checked open (a hard link put there meanwhile).
            if let Some(r) = scope.take_refusal() {
                return Err(refused(&r, &shown_db));
            }
            let reason = denied.lock().ok().and_then(|mut s| s.take());
            if let Some(reason) = reason {
                return Err(CallError::PermissionDenied {
                    message: format!("sql: {reason}. The database must stay inside the workspace."),
                });
            }
            if timed_out {
                return Err(CallError::Timeout {
                    tool: "sql".to_owned(),
                    seconds: limit.as_secs_f64(),
                });
            }
            return Err(CallError::invalid(format!("sql error: {e}")));
        }
    };
    let cap = inner.config.sql_max_rows;
    let (data, summary) = match last {
        Last::Query {
            columns,
            rows,
            cut_at_bytes: true,
            ..
        } => {
            let n = rows.len();
            let byte_cap = inner.config.read_cap_bytes;
            let mut data = json!({"columns": columns, "rows": rows});
            if let Some(obj) = data.as_object_mut() {
                obj.insert(
                    "truncated".to_owned(),
                    Value::String(format!(
                        "…[truncated at {byte_cap} bytes after {n} rows; the rest of the query was not run]"
                    )),
                );
            }
            let summary = format!(
                "{n} rows from {shown_db}; cut at {byte_cap} bytes, later rows not read. Select fewer or smaller columns, or add LIMIT/OFFSET."
            );
            (data, summary)
        }
        Last::Query {
            columns,
            rows,
            more,
            ..
        } => {
            let n = rows.len();
            let mut data = json!({"columns": columns, "rows": rows});
            let mut summary = format!("{n} rows from {shown_db}.");
            if more > 0 {
                if let Some(obj) = data.as_object_mut() {
                    obj.insert(
                        "truncated".to_owned(),
                        Value::String(format!(
                            "…[truncated after {cap} rows; {more} more rows not shown]"
                        )),
                    );
                }
                summary = format!(
                    "{} rows from {shown_db}; showing the first {cap}.",
                    n + more
                );
            }
            (data, summary)
        }
        Last::Statement | Last::Nothing => (
            json!({"rows_affected": affected}),
            format!("{statements} statements ran on {shown_db}; {affected} rows affected."),
        ),
    };
    Ok(outcome(kinds::SQL, summary, data))
}

fn run_batch(
    inner: &Inner,
    conn: &Connection,
    query: &str,
) -> rusqlite::Result<(Last, u64, usize)> {
    let cap = inner.config.sql_max_rows;
    let cell_cap = inner.config.read_cap_bytes;
    // The whole result is held to the read cap while rows are produced, not after.
    let byte_cap = inner.config.read_cap_bytes;
    let before = conn.total_changes();
    let mut batch = Batch::new(conn, query);
    let mut last = Last::Nothing;
    let mut statements = 0usize;
    while let Some(mut stmt) = batch.next()? {
        statements += 1;
        if stmt.column_count() == 0 {
            stmt.execute([])?;
            last = Last::Statement;
            continue;
        }
        let columns: Vec<String> = stmt.column_names().map(str::to_owned).collect();
        let width = columns.len();
        let mut rows_out: Vec<Value> = Vec::new();
        let mut more = 0usize;
        let mut budget = byte_cap.saturating_sub(json_size(&json!(columns)));
        let mut cut_at_bytes = false;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            if rows_out.len() >= cap {
                // Counting costs no memory: nothing of these rows is kept.
                more += 1;
                continue;
            }
            if budget == 0 {
                cut_at_bytes = true;
                break;
            }
            let mut vals = Vec::with_capacity(width);
            for i in 0..width {
                // No cell may take more than what is left of the budget.
                let v = value_json(row.get_ref(i)?, cell_cap.min(budget.max(64)));
                budget = budget.saturating_sub(json_size(&v) + 1);
                vals.push(v);
            }
            rows_out.push(Value::Array(vals));
        }
        last = Last::Query {
            columns,
            rows: rows_out,
            more,
            cut_at_bytes,
        };
    }
    let affected = conn.total_changes().saturating_sub(before);
    Ok((last, affected, statements))
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use toolgate_core::CallError;

    use crate::testutil::{run, ws};

    #[tokio::test]
    async fn default_db_persists_across_calls() {
        let (_d, t) = ws();
        let o = run(&t, "sql", json!({"query": "CREATE TABLE t(a INTEGER, b TEXT); INSERT INTO t VALUES (1, 'x'), (2, NULL)"}))
            .await
            .unwrap();
        assert_eq!(o.data, json!({"rows_affected": 2}));
        assert_eq!(o.kind.as_str(), "workspace/sql");
        assert!(t.config().root.join(".toolgate/workspace.db").is_file());
        let o = run(
            &t,
            "sql",
            json!({"query": "SELECT a, b, 1.5 AS c, x'00ff' AS d FROM t ORDER BY a"}),
        )
        .await
        .unwrap();
        assert_eq!(
            o.data,
            json!({
                "columns": ["a", "b", "c", "d"],
                "rows": [[1, "x", 1.5, {"blob_hex": "00ff", "bytes": 2}], [2, null, 1.5, {"blob_hex": "00ff", "bytes": 2}]]
            })
        );
        let o = run(&t, "sql", json!({"query": "UPDATE t SET b = 'y'"}))
            .await
            .unwrap();
        assert_eq!(o.data, json!({"rows_affected": 2}));
    }

    #[tokio::test]
    async fn memory_db_is_per_call_and_named_files_work() {
        let (_d, t) = ws();
        let o = run(&t, "sql", json!({"query": "CREATE TABLE m(x); INSERT INTO m VALUES (7); SELECT x FROM m", "db_path": ":memory:"}))
            .await
            .unwrap();
        assert_eq!(o.data, json!({"columns": ["x"], "rows": [[7]]}));
        let err = run(
            &t,
            "sql",
            json!({"query": "SELECT x FROM m", "db_path": ":memory:"}),
        )
        .await
        .unwrap_err();
        assert!(err.to_string().contains("no such table"), "{err}");
        run(
            &t,
            "sql",
            json!({"query": "CREATE TABLE z(q)", "db_path": "data/my.db"}),
        )
        .await
        .unwrap();
        assert!(t.config().root.join("data/my.db").is_file());
    }

    #[tokio::test]
    async fn row_cap_has_a_marker() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = crate::WorkspaceConfig::new(dir.path()).unwrap();
        c.sql_max_rows = 3;
        let t = crate::WorkspaceTools::new(c).unwrap();
        let o = run(&t, "sql", json!({"query": "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < 10) SELECT i FROM n", "db_path": ":memory:"}))
            .await
            .unwrap();
        assert_eq!(o.data["rows"], json!([[1], [2], [3]]));
        assert_eq!(
            o.data["truncated"],
            json!("…[truncated after 3 rows; 7 more rows not shown]")
        );
    }

    #[tokio::test]
    async fn errors_are_reported() {
        let (_d, t) = ws();
        let err = run(
            &t,
            "sql",
            json!({"query": "SELEC 1", "db_path": ":memory:"}),
        )
        .await
        .unwrap_err();
        assert!(matches!(err, CallError::InvalidInput { .. }), "{err}");
        assert!(err.to_string().contains("syntax error"), "{err}");
        for q in [
            "PRAGMA temp_store_directory = '/tmp'",
            "PRAGMA writable_schema = ON",
            "DETACH DATABASE main",
            "SELECT LOAD_EXTENSION('/tmp/evil')",
        ] {
            let err = run(&t, "sql", json!({"query": q, "db_path": ":memory:"}))
                .await
                .unwrap_err();
            assert!(
                matches!(err, CallError::PermissionDenied { .. }),
                "{q}: {err}"
            );
        }
        // VACUUM INTO writes anywhere: refused; plain VACUUM works.
        let err = run(&t, "sql", json!({"query": "VACUUM INTO 'copy.db'"}))
            .await
            .unwrap_err();
        assert!(matches!(err, CallError::PermissionDenied { .. }), "{err}");
        run(&t, "sql", json!({"query": "CREATE TABLE v(x); VACUUM"}))
            .await
            .unwrap();
        // Ordinary pragmas still work.
        let o = run(
            &t,
            "sql",
            json!({"query": "PRAGMA user_version", "db_path": ":memory:"}),
        )
        .await
        .unwrap();
        assert_eq!(o.data["rows"], json!([[0]]));
    }

    #[tokio::test]
    async fn runaway_queries_are_interrupted() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = crate::WorkspaceConfig::new(dir.path()).unwrap();
        c.sql_timeout = std::time::Duration::from_millis(300);
        let t = crate::WorkspaceTools::new(c).unwrap();
        let started = std::time::Instant::now();
        let err = run(&t, "sql", json!({"query": "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n) SELECT count(*) FROM n", "db_path": ":memory:"}))
            .await
            .unwrap_err();
        assert!(matches!(err, CallError::Timeout { .. }), "{err}");
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }
}
