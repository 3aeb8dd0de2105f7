#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Issue 19 item 5: a Claude Code plugin's hooks become Copilot CLI hooks for the events Copilot
//! has (the shape toolgate's own Copilot install writes), and every loss is reported.
#![allow(clippy::disallowed_methods)]

use std::fs;

use serde_json::{Value, json};
use toolgate_convert::{Options, Target, convert};

#[test]
fn claude_hooks_become_copilot_hooks_for_the_events_copilot_has() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("plugin");
    fs::create_dir_all(src.join(".claude-plugin")).unwrap();
    fs::create_dir_all(src.join("hooks")).unwrap();
    fs::write(
        src.join(".claude-plugin/plugin.json"),
        r#"{"name": "guard", "version": "1.0.0", "description": "d"}"#,
    )
    .unwrap();
    let hooks = json!({"hooks": {
        "PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "guard pre", "timeout": 5}]}],
        "PostToolUse": [{"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/fmt.sh"}]}],
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "guard prompt"}]}],
        "SessionStart": [{"hooks": [{"type": "command", "command": "guard start"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "guard stop"}]}],
        "Notification": [{"hooks": [{"type": "prompt", "prompt": "x"}]}]
    }});
    fs::write(src.join("hooks/hooks.json"), hooks.to_string()).unwrap();
    let dst = tmp.path().join("out");
    let report = convert(&src, &dst, &Options::new(Target::Copilot)).unwrap();
    let out: Value =
        serde_json::from_str(&fs::read_to_string(dst.join("hooks.json")).unwrap()).unwrap();
    assert_eq!(
        out,
        json!({"version": 1, "hooks": {
            "preToolUse": [{"type": "command", "bash": "guard pre", "timeoutSec": 5}],
            "postToolUse": [{"type": "command", "bash": "${CLAUDE_PLUGIN_ROOT}/fmt.sh"}],
            "userPromptSubmitted": [{"type": "command", "bash": "guard prompt"}],
            "sessionStart": [{"type": "command", "bash": "guard start"}]
        }})
    );
    let manifest: Value =
        serde_json::from_str(&fs::read_to_string(dst.join("plugin.json")).unwrap()).unwrap();
    assert_eq!(manifest["hooks"], "hooks.json");
    let w = report.all_warnings();
    let has = |s: &str| w.iter().any(|x| x.contains(s));
    assert!(
        has("hook event `Stop` not converted: Copilot CLI has no such event"),
        "{w:?}"
    );
    assert!(has("hook event `Notification` not converted"), "{w:?}");
    assert!(
        has("`PostToolUse` hook matcher `Edit|Write` dropped"),
        "{w:?}"
    );
    assert!(
        has("uses ${CLAUDE_PLUGIN_ROOT}, which Copilot CLI does not set"),
        "{w:?}"
    );
    assert!(!has("port them by hand"), "{w:?}");
    assert!(
        report.notes.iter().any(|n| n.contains("Copilot's payload")),
        "{:?}",
        report.notes
    );
    // Other targets still say the hooks were not ported.
    let report = convert(
        &src,
        &tmp.path().join("oc"),
        &Options::new(Target::Opencode),
    )
    .unwrap();
    assert!(
        report
            .all_warnings()
            .iter()
            .any(|x| x.contains("port them by hand"))
    );
}
