//! Issue 30 ("Safely", round three), items 3 and 8, against the real `toolgate exec`:
//! `sql` opens only regular single-link files (the database and its `-journal`/`-wal`
//! companions), and a `[[command_tools]]` value never becomes an option.
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(clippy::disallowed_methods)]

use std::path::{Path, PathBuf};

use serde_json::Value;

mod support;

/// Run `code` in `ws` with the isolated home `home`; the parsed envelope.
fn exec(home: &Path, ws: &Path, code: &str) -> Value {
    let out = support::isolated_toolgate(home)
        .args(["exec", "--workspace"])
        .arg(ws)
        .args(["--code", code])
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no envelope ({e}); stdout: {}; stderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn error_message(env: &Value) -> String {
    assert_eq!(env["success"], false, "{env:#}");
    env["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

struct Dirs {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    ws: PathBuf,
    outside: PathBuf,
}

fn dirs() -> Dirs {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let (home, ws, outside) = (root.join("home"), root.join("ws"), root.join("outside"));
    for d in [&home, &ws, &outside] {
        std::fs::create_dir_all(d).unwrap();
    }
    Dirs {
        _tmp: tmp,
        home,
        ws,
        outside,
    }
}

/// Reproduction: `ln /outside/o.db ws/hard.db`, then an INSERT on `hard.db` wrote into
/// `/outside/o.db` (`view` refused the same file: "has 2 hard links").
#[test]
fn sql_refuses_a_hard_linked_database() {
    let d = dirs();
    let made = exec(
        &d.home,
        &d.outside,
        r#"sql(query="create table t(a); insert into t values(0)", db_path="o.db")"#,
    );
    assert_eq!(made["success"], true, "{made:#}");
    let before = std::fs::read(d.outside.join("o.db")).unwrap();
    std::fs::hard_link(d.outside.join("o.db"), d.ws.join("hard.db")).unwrap();

    let env = exec(
        &d.home,
        &d.ws,
        r#"sql(query="insert into t values(1)", db_path="hard.db")"#,
    );
    let msg = error_message(&env);
    assert!(msg.contains("\"hard.db\" has 2 hard links"), "{msg}");
    assert!(msg.contains("Copy the file"), "says what would work: {msg}");
    // Reading is refused as well: the file may be a secret linked in.
    let env = exec(
        &d.home,
        &d.ws,
        r#"sql(query="select * from t", db_path="hard.db")"#,
    );
    assert!(error_message(&env).contains("hard links"), "{env:#}");
    assert_eq!(std::fs::read(d.outside.join("o.db")).unwrap(), before);
    assert!(!d.ws.join("hard.db-journal").exists());

    // A database that does not exist yet is still created, and a single-link one is used.
    let env = exec(
        &d.home,
        &d.ws,
        r#"sql(query="create table t(a); insert into t values(1); select count(*) from t", db_path="data/new.db")"#,
    );
    assert_eq!(env["success"], true, "{env:#}");
    assert!(d.ws.join("data/new.db").is_file());
}

/// The same through the companions: a hard-linked `-journal` (written in PERSIST mode) or
/// `-wal` (of a WAL-mode database) beside a normal database was written into.
#[test]
fn sql_refuses_hard_linked_journal_and_wal_companions() {
    let d = dirs();
    for (db, setup, companion) in [
        ("j.db", "create table t(a)", "j.db-journal"),
        (
            "w.db",
            "pragma journal_mode=wal; create table t(a)",
            "w.db-wal",
        ),
    ] {
        let made = exec(
            &d.home,
            &d.ws,
            &format!(r#"sql(query="{setup}", db_path="{db}")"#),
        );
        assert_eq!(made["success"], true, "{made:#}");
        assert!(!d.ws.join(companion).exists(), "{companion} left behind");
        let outside = d.outside.join(format!("{companion}.secret"));
        // A first byte of 0 makes SQLite take an existing journal as not hot and reuse it
        // in PERSIST mode: it wrote its journal into this file before the fix.
        let mut secret = vec![0xA5u8; 64 * 1024];
        secret[0] = 0;
        std::fs::write(&outside, &secret).unwrap();
        std::fs::hard_link(&outside, d.ws.join(companion)).unwrap();

        let env = exec(
            &d.home,
            &d.ws,
            &format!(
                r#"sql(query="pragma journal_mode=persist; insert into t values(1)", db_path="{db}")"#
            ),
        );
        let msg = error_message(&env);
        assert!(
            msg.contains(&format!(
                "\"{companion}\" beside the database has 2 hard links"
            )),
            "{msg}"
        );
        assert!(msg.contains("Remove"), "says what would work: {msg}");
        assert_eq!(
            std::fs::read(&outside).unwrap(),
            secret,
            "{companion}: the file outside is unchanged"
        );
        std::fs::remove_file(d.ws.join(companion)).unwrap();
        let env = exec(
            &d.home,
            &d.ws,
            &format!(r#"sql(query="insert into t values(1)", db_path="{db}")"#),
        );
        assert_eq!(env["success"], true, "{companion} removed: {env:#}");
    }
}

fn command_tools_config(home: &Path) {
    let path = home.join("config/toolgate/config.toml");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(
        &path,
        r#"
[workspace]
unconfined_processes = true   # only where this machine has no confinement

[[command_tools]]
name = "list_txt"
argv = ["/usr/bin/find", "{dir}", "-name", "*.txt"]
parameters = { dir = { type = "string", required = true } }

[[command_tools]]
name = "list_many"
argv = ["/usr/bin/find", "{dirs}", "-name", "*.txt"]
parameters = { dirs = { type = "array", items = { type = "string" }, required = true } }

[[command_tools]]
name = "joined"
argv = ["/usr/bin/find", "{dir}/", "-name", "*.txt"]
parameters = { dir = { type = "string", required = true } }

[[command_tools]]
name = "show_args"
argv = ["/bin/sh", "-c", "printf '%s|' \"$@\"", "sh", "{flag}", "{n}"]
parameters = { flag = { type = "string", allow_options = true }, n = { type = "integer" } }
"#,
    )
    .unwrap();
}

/// Reproduction: `argv = ["/usr/bin/find", "{dir}", "-name", "*.txt"]` and
/// `list_txt(dir="-delete")` deleted the whole workspace. A value that starts with `-` is
/// refused unless its parameter says `allow_options = true`; `{param}` stays one argument.
#[test]
fn command_tool_values_never_become_options() {
    let d = dirs();
    command_tools_config(&d.home);
    std::fs::create_dir_all(d.ws.join("sub dir")).unwrap();
    std::fs::write(d.ws.join("a.txt"), "a").unwrap();
    std::fs::write(d.ws.join("sub dir/b.txt"), "b").unwrap();
    std::fs::write(d.ws.join("keep.md"), "k").unwrap();
    let all_there = |d: &Dirs| {
        for f in ["a.txt", "sub dir/b.txt", "keep.md"] {
            assert!(d.ws.join(f).is_file(), "{f} was deleted");
        }
    };

    for code in [
        r#"list_txt(dir="-delete")"#,
        r#"list_many(dirs=["sub dir", "-delete"])"#,
        r#"joined(dir="-delete")"#,
        r#"show_args(flag="ok", n=-1)"#,
    ] {
        let env = exec(&d.home, &d.ws, code);
        let msg = error_message(&env);
        assert!(msg.contains("starts with \"-\""), "{code}: {msg}");
        assert!(msg.contains("allow_options = true"), "{code}: {msg}");
        all_there(&d);
    }

    // A value with spaces is one argument: find gets the directory "sub dir".
    let env = exec(&d.home, &d.ws, r#"list_txt(dir="sub dir")["stdout"]"#);
    assert_eq!(env["return_value"], "sub dir/b.txt\n", "{env:#}");
    // A parameter that opts in passes a leading dash through, as one argument.
    let env = exec(&d.home, &d.ws, r#"show_args(flag="-n x", n=2)["stdout"]"#);
    assert_eq!(env["return_value"], "-n x|2|", "{env:#}");
    all_there(&d);
}
