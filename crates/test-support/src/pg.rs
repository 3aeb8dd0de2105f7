//! Private database back-ends for a test, started by crates/plot/tests/support/pgstac.sh in a
//! temporary directory and stopped (and removed) when dropped: [`Postgres`] (`start-pg`: initdb,
//! postgres on a free 127.0.0.1 port) and [`Pgstac`] (`start`: the same plus pgstac and a
//! stac-fastapi-pgstac server). `start` returns `None` (after saying why) when the back-end is not
//! installed — and panics instead under `TOOLGATE_REQUIRE_TEST_CLIENTS=1`, as CI sets.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

pub struct Postgres {
    dir: PathBuf,
    pub dsn: String,
}

/// The script that starts and stops clusters for the tests.
pub fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../plot/tests/support/pgstac.sh")
}

/// `pgstac.sh CHECK` passes, or the test is skipped (`false`, after saying why) — unless CI
/// requires the back-end, where it fails.
fn available(check: &str, what: &str) -> bool {
    let out = Command::new("bash")
        .arg(script())
        .arg(check)
        .output()
        .unwrap();
    if out.status.success() {
        return true;
    }
    let why = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    assert_ne!(
        std::env::var("TOOLGATE_REQUIRE_TEST_CLIENTS").as_deref(),
        Ok("1"),
        "{what} is required here: {why}"
    );
    eprintln!("SKIP: {why}");
    false
}

/// A fresh directory for one back-end under the system's temporary directory.
fn fresh_dir(kind: &str) -> PathBuf {
    std::env::temp_dir().join(format!(
        "toolgate-{kind}-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ))
}

/// Stop the back-end whose directory is `dir`.
fn stop(dir: &Path) {
    let _ = Command::new("bash")
        .arg(script())
        .arg("stop")
        .arg(dir)
        .status();
}

impl Postgres {
    pub fn start() -> Option<Self> {
        if !available("check-pg", "PostgreSQL") {
            return None;
        }
        let dir = fresh_dir("pg");
        let out = crate::succeeded(
            Command::new("bash").arg(script()).arg("start-pg").arg(&dir),
            "pgstac.sh start-pg",
        );
        let dsn = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        Some(Self { dir, dsn })
    }

    /// Stop the server now (what a crash of the database looks like to its clients).
    pub fn stop(&self) {
        stop(&self.dir);
    }
}

static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl Drop for Postgres {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// PostgreSQL with pgstac and a stac-fastapi-pgstac server in front of it.
pub struct Pgstac {
    dir: PathBuf,
    /// The STAC API's root URL.
    pub url: String,
    /// The database the API serves, for loading and checking rows directly.
    pub dsn: String,
}

impl Pgstac {
    /// Start one; `transactions` turns the API's Transactions extension on (the script's
    /// default) or off.
    pub fn start(transactions: bool) -> Option<Self> {
        if !available("check", "the pgstac test backend") {
            return None;
        }
        let dir = fresh_dir("pgstac");
        let out = crate::succeeded(
            Command::new("bash")
                .arg(script())
                .arg("start")
                .arg(&dir)
                .env(
                    "PGSTAC_TRANSACTIONS",
                    if transactions { "true" } else { "false" },
                ),
            "pgstac.sh start",
        );
        let url = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        let dsn = std::fs::read_to_string(dir.join("env"))
            .unwrap()
            .lines()
            .find_map(|l| l.strip_prefix("PGSTAC_DSN=").map(str::to_owned))
            .unwrap();
        Some(Self { dir, url, dsn })
    }

    /// The back-end's directory: its `env` file and the API's asset store (`assets/`).
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for Pgstac {
    fn drop(&mut self) {
        stop(&self.dir);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
