//! Issue 14, item 4, end to end: while this test swaps `ws/real` between a real directory and
//! a symbolic link to an outside folder as fast as it can (`renameat2(RENAME_EXCHANGE)`), a
//! CodeAct program run by `toolgate exec` calls `view`, `create` and `edit` 3,000 times each on
//! paths under `real/`. Nothing outside may be read, created or replaced.
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(clippy::disallowed_methods)]

use std::collections::BTreeSet;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;
use toolgate_test_support::race::Swapper;

const SECRET: &str = "PLANTED-OUTSIDE-SECRET-c41d";

const PROGRAM: &str = r#"
hits = 0
ok = [0, 0, 0]
for i in range(3000):
    try:
        text = view(path='real/secret.txt')
        ok[0] += 1
        if 'PLANTED' in str(text):
            hits += 1
    except Exception as err:
        pass
for i in range(3000):
    try:
        create(path='real/new-' + str(i) + '.txt', file_text='x')
        ok[1] += 1
    except Exception as err:
        pass
for i in range(3000):
    try:
        edit(path='real/e.txt', old_str='value', new_str='value')
        ok[2] += 1
    except Exception as err:
        pass
{'hits': hits, 'view_ok': ok[0], 'create_ok': ok[1], 'edit_ok': ok[2]}
"#;

fn names(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn a_program_racing_a_symlink_swap_never_reaches_outside() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(ws.join("real")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(ws.join("real/secret.txt"), "harmless inside text\n").unwrap();
    std::fs::write(ws.join("real/e.txt"), "value = 1\n").unwrap();
    std::fs::write(outside.join("secret.txt"), format!("{SECRET}\n")).unwrap();
    std::fs::write(outside.join("e.txt"), format!("value = {SECRET}\n")).unwrap();
    std::os::unix::fs::symlink(&outside, ws.join("swap")).unwrap();
    let before = names(&outside);
    let e_inode = std::fs::metadata(outside.join("e.txt")).unwrap().ino();

    let swapper = Swapper::start(ws.join("real"), ws.join("swap"));
    let out = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["exec", "--workspace"])
        .arg(&ws)
        .args([
            "--code",
            PROGRAM,
            "--timeout",
            "600",
            "--max-tool-calls",
            "10000",
        ])
        .env("HOME", dir.path())
        .env("TOOLGATE_CONFIG", dir.path().join("config.toml"))
        .env("TOOLGATE_DATA_DIR", dir.path().join("data"))
        .env("TOOLGATE_TELEMETRY", dir.path().join("telemetry.jsonl"))
        .env_remove("XDG_CONFIG_HOME")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let swaps = swapper.stop();

    let stdout = String::from_utf8_lossy(&out.stdout);
    let envelope: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "no envelope ({e}): {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let result = envelope
        .get("return_value")
        .filter(|v| v.is_object())
        .cloned()
        .unwrap_or_else(|| panic!("no result: {envelope}"));
    let after = names(&outside);
    let created: Vec<&String> = after.difference(&before).collect();
    let e_replaced = std::fs::metadata(outside.join("e.txt")).unwrap().ino() != e_inode;
    eprintln!(
        "swaps={swaps} result={result} created_outside={created:?} outside_e_replaced={e_replaced}"
    );
    assert!(
        !stdout.contains(SECRET),
        "the outside secret reached the program's output"
    );
    assert_eq!(result["hits"], 0, "view read the outside file");
    assert!(created.is_empty(), "created outside: {created:?}");
    assert!(!e_replaced, "edit replaced the outside file");
    assert_eq!(
        std::fs::read_to_string(outside.join("secret.txt")).unwrap(),
        format!("{SECRET}\n")
    );
    for k in ["view_ok", "create_ok", "edit_ok"] {
        assert!(
            result[k].as_u64().unwrap() > 0,
            "{k}: the tools still work: {result}"
        );
    }
    assert!(swaps > 1000, "the swap really raced");
}
