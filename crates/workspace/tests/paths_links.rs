//! Hard links made inside the workspace (by bash, say) to a file outside are not read
//! (issue 14, item 4): `view`, `grep` and `edit` refuse a file with more than one link.
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(clippy::disallowed_methods)]

use serde_json::{Value, json};
use toolgate_core::{CallError, Provider, ToolCall, ToolOutcome};
use toolgate_workspace::{WorkspaceConfig, WorkspaceTools};

const SECRET: &str = "HARDLINKED-SECRET-91c2";

async fn call(t: &WorkspaceTools, tool: &str, params: Value) -> Result<ToolOutcome, CallError> {
    let Value::Object(map) = params else {
        panic!("object expected")
    };
    t.call(&ToolCall::new(tool, map)).await
}

#[tokio::test]
async fn hard_linked_files_are_refused_for_reading() {
    let parent = tempfile::tempdir().unwrap();
    let ws = parent.path().join("ws");
    std::fs::create_dir_all(ws.join("src")).unwrap();
    let secret = parent.path().join("secret.txt");
    std::fs::write(&secret, format!("{SECRET} = 1\n")).unwrap();
    std::fs::hard_link(&secret, ws.join("src/linked.txt")).unwrap();
    std::fs::write(ws.join("src/plain.txt"), "plain = 1\n").unwrap();
    let t = WorkspaceTools::new(WorkspaceConfig::new(&ws).unwrap()).unwrap();

    for params in [
        json!({"path": "src/linked.txt"}),
        json!({"path": "src/linked.txt", "view_range": [1, -1]}),
    ] {
        match call(&t, "view", params).await {
            Err(CallError::PermissionDenied { message }) => {
                assert!(message.contains("hard links"), "{message}");
                assert!(!message.contains(SECRET));
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
    }
    let err = call(
        &t,
        "edit",
        json!({"path": "src/linked.txt", "old_str": "= 1", "new_str": "= 2"}),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, CallError::PermissionDenied { .. }), "{err}");
    assert_eq!(
        std::fs::read_to_string(&secret).unwrap(),
        format!("{SECRET} = 1\n")
    );
    let err = call(
        &t,
        "grep",
        json!({"pattern": "SECRET", "paths": "src/linked.txt"}),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, CallError::PermissionDenied { .. }), "{err}");
    // A directory search skips it and says so; the plain file is still searched.
    let o = call(&t, "grep", json!({"pattern": "= 1", "paths": "src"}))
        .await
        .unwrap();
    assert_eq!(
        o.data,
        json!([{"file": "src/plain.txt", "line": 1, "text": "plain = 1"}])
    );
    assert!(o.summary.contains("hard link"), "{}", o.summary);
    // A file with one link is fine again once the other link is gone.
    std::fs::remove_file(&secret).unwrap();
    assert!(
        call(&t, "view", json!({"path": "src/linked.txt"}))
            .await
            .is_ok()
    );
}
