//! The symlink-swap race (issue 14, item 4): a thread swaps `ws/real` between a real directory
//! and a symbolic link to an outside folder as fast as it can (`renameat2(RENAME_EXCHANGE)`),
//! while `view`, `create`, `edit` and `grep` are called thousands of times on paths under
//! `real/`. A guard that checks a path and then re-opens it by name loses this race; a guard
//! that opens everything beneath a descriptor of the workspace root cannot.
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(clippy::disallowed_methods)]

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Value, json};
use toolgate_core::{Provider, ToolCall};
use toolgate_test_support::race::Swapper;
use toolgate_workspace::{WorkspaceConfig, WorkspaceTools};

const SECRET: &str = "PLANTED-OUTSIDE-SECRET-7f3a";
const CALLS: usize = 3000;

/// Every file under `dir` with its contents (the outside folder, before and after).
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        let bytes = std::fs::read(e.path()).unwrap_or_default();
        out.insert(name, bytes);
    }
    out
}

async fn call(t: &WorkspaceTools, tool: &str, params: Value) -> Result<String, String> {
    let Value::Object(map) = params else {
        panic!("object expected")
    };
    match t.call(&ToolCall::new(tool, map)).await {
        Ok(o) => Ok(format!("{} {}", o.summary, o.data)),
        Err(e) => Err(e.to_string()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn swapping_a_directory_for_a_symlink_never_leaks_or_writes_outside() {
    eprintln!("with openat2:");
    race().await;
    // The fallback for kernels without openat2 must hold the line too. (One test, in order:
    // the switch is process-wide.)
    toolgate_workspace::PathGuard::disable_openat2_for_tests();
    eprintln!("with the O_NOFOLLOW walk:");
    race().await;
}

async fn race() {
    let parent = tempfile::tempdir().unwrap();
    let ws = parent.path().join("ws");
    let outside = parent.path().join("outside");
    std::fs::create_dir_all(ws.join("real")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    // The same names inside and outside: whichever the tool reaches, the call succeeds, so only
    // the content tells where it went.
    std::fs::write(ws.join("real/secret.txt"), "harmless inside text\n").unwrap();
    std::fs::write(ws.join("real/e.txt"), "value = A\n").unwrap();
    std::fs::write(outside.join("secret.txt"), format!("{SECRET}\n")).unwrap();
    std::fs::write(outside.join("e.txt"), format!("value = A {SECRET}\n")).unwrap();
    std::os::unix::fs::symlink(&outside, ws.join("swap")).unwrap();
    let before = snapshot(&outside);

    let tools = WorkspaceTools::new(WorkspaceConfig::new(&ws).unwrap()).unwrap();

    let swapper = Swapper::start(ws.join("real"), ws.join("swap"));

    let mut view_reads = 0usize;
    let mut range_reads = 0usize;
    let mut grep_reads = 0usize;
    let mut view_ok = 0usize;
    for _ in 0..CALLS {
        if let Ok(text) = call(&tools, "view", json!({"path": "real/secret.txt"})).await {
            view_ok += 1;
            if text.contains(SECRET) {
                view_reads += 1;
            }
        }
    }
    for _ in 0..CALLS {
        let r = call(
            &tools,
            "view",
            json!({"path": "real/secret.txt", "view_range": [1, -1]}),
        )
        .await;
        if r.is_ok_and(|t| t.contains(SECRET)) {
            range_reads += 1;
        }
    }
    let mut grep_calls = 0usize;
    for _ in 0..CALLS / 3 {
        grep_calls += 1;
        let r = call(
            &tools,
            "grep",
            json!({"pattern": "PLANTED|value", "paths": "real"}),
        )
        .await;
        if r.is_ok_and(|t| t.contains(SECRET)) {
            grep_reads += 1;
        }
    }
    let mut create_ok = 0usize;
    for i in 0..CALLS {
        let r = call(
            &tools,
            "create",
            json!({"path": format!("real/new-{i}.txt"), "file_text": "x"}),
        )
        .await;
        create_ok += usize::from(r.is_ok());
    }
    let created_by_create = snapshot(&outside)
        .keys()
        .filter(|k| !before.contains_key(*k))
        .count();
    let mut edit_ok = 0usize;
    let mut outside_edits = 0usize;
    let outside_e = std::fs::read(outside.join("e.txt")).unwrap();
    for i in 0..CALLS {
        // Toggle A <-> B so every call has exactly one match inside.
        let (old, new) = if i % 2 == 0 {
            ("= A", "= B")
        } else {
            ("= B", "= A")
        };
        let r = call(
            &tools,
            "edit",
            json!({"path": "real/e.txt", "old_str": old, "new_str": new}),
        )
        .await;
        if let Ok(text) = &r {
            edit_ok += 1;
            assert!(!text.contains(SECRET), "{text}");
        }
        // An edit that reached the outside file: count it and put the file back.
        if std::fs::read(outside.join("e.txt")).ok().as_deref() != Some(&outside_e[..]) {
            outside_edits += 1;
            std::fs::write(outside.join("e.txt"), &outside_e).unwrap();
        }
    }
    let swaps = swapper.stop();

    let after = snapshot(&outside);
    let created_outside: Vec<&String> = after.keys().filter(|k| !before.contains_key(*k)).collect();
    let changed_outside: Vec<&String> = before
        .iter()
        .filter(|(k, v)| after.get(*k) != Some(*v))
        .map(|(k, _)| k)
        .collect();
    let temps_outside = created_outside
        .iter()
        .filter(|n| n.starts_with('.'))
        .count();
    eprintln!(
        "swaps={} view_ok={view_ok}/{CALLS} create_ok={create_ok}/{CALLS} edit_ok={edit_ok}/{CALLS} grep={grep_calls} \
         outside reads: view={view_reads} view_range={range_reads} grep={grep_reads}; \
         files created outside by create={created_by_create}; outside files edited={outside_edits}; \
         created outside in all={} of which temp files={temps_outside}; changed_outside={changed_outside:?}",
        swaps,
        created_outside.len(),
    );
    let outside_reads = view_reads + range_reads + grep_reads;
    assert!(swaps > 1000, "the swapper must really have raced the tools");
    assert!(
        view_ok > 0 && create_ok > 0 && edit_ok > 0,
        "the tools must still work while the directory is in place"
    );
    assert_eq!(outside_reads, 0, "outside content reached a result");
    assert!(
        created_outside.is_empty(),
        "files created outside the workspace: {created_outside:?}"
    );
    assert_eq!(outside_edits, 0, "edit wrote an outside file");
    assert!(
        changed_outside.is_empty(),
        "outside files changed: {changed_outside:?}"
    );
}
