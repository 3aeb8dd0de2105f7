//! A private PostgreSQL cluster for a test (crates/plot/tests/support/pgstac.sh `start-pg`):
//! initdb in a temporary directory, postgres on a free 127.0.0.1 port, stopped and removed when
//! dropped. [`Postgres::start`] returns `None` (after saying why) when PostgreSQL is not
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

impl Postgres {
    pub fn start() -> Option<Self> {
        let check = Command::new("bash")
            .arg(script())
            .arg("check-pg")
            .output()
            .unwrap();
        if !check.status.success() {
            let why = String::from_utf8_lossy(&check.stdout).trim().to_owned();
            assert_ne!(
                std::env::var("TOOLGATE_REQUIRE_TEST_CLIENTS").as_deref(),
                Ok("1"),
                "PostgreSQL is required here: {why}"
            );
            eprintln!("SKIP: {why}");
            return None;
        }
        let dir = std::env::temp_dir().join(format!(
            "toolgate-pg-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        let out = Command::new("bash")
            .arg(script())
            .arg("start-pg")
            .arg(&dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "pgstac.sh start-pg: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let dsn = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        Some(Self { dir, dsn })
    }

    /// Stop the server now (what a crash of the database looks like to its clients).
    pub fn stop(&self) {
        let _ = Command::new("bash")
            .arg(script())
            .arg("stop")
            .arg(&self.dir)
            .status();
    }
}

static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl Drop for Postgres {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
