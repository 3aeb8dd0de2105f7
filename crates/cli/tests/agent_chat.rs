//! `toolgate chat` driven through a pipe against the scripted mock model: streaming replies,
//! the inline confirmation, /plots, /undo, /save, and the transcript.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::json;
use toolgate_test_support::{MockModel, Reply};

struct Run {
    stdout: String,
    stderr: String,
    code: i32,
}

async fn chat(mock: &MockModel, data: &Path, input: &str, extra: &[&str]) -> Run {
    let mut args = vec![
        "chat".to_owned(),
        "--model-url".to_owned(),
        mock.url(),
        "--model".to_owned(),
        "mock-model".to_owned(),
    ];
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    let data = data.to_owned();
    let input = input.to_owned();
    tokio::task::spawn_blocking(move || {
        let out = toolgate_test_support::run_with_input(
            Command::new(env!("CARGO_BIN_EXE_toolgate"))
                .args(&args)
                .env("HOME", data.join("home"))
                .env("XDG_CONFIG_HOME", data.join("home/.config"))
                .env("TOOLGATE_DATA_DIR", data.join("data"))
                .env("TOOLGATE_TELEMETRY", data.join("telemetry.jsonl"))
                .env_remove("TOOLGATE_STORE")
                .env_remove("TOOLGATE_MODEL_URL"),
            &input,
        )
        .unwrap();
        Run {
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            code: out.status.code().unwrap_or(-1),
        }
    })
    .await
    .unwrap()
}

fn script() -> Vec<Reply> {
    vec![
        Reply::tool(
            "debrief_searchPlots",
            json!({"text": "Day 1", "open": true}),
        ),
        Reply::tool(
            "debrief_runTool",
            json!({"toolId": "set-track-color", "params": {"color": "red"}, "featureNames": ["Contact"], "utterance": "colour the submarine track red"}),
        ),
        Reply::text("The Contact track is now red; the plot is unsaved."),
    ]
}

fn contact_colour(data: &Path) -> String {
    let text =
        std::fs::read_to_string(data.join("data/demo-store/alpha-day1/features.geojson")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    toolgate_test_support::feature_by_id(&v, "track-contact").unwrap()["properties"]["style"]["line"]["color"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_confirms_inline_streams_and_undoes() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockModel::sequence(script()).await.unwrap();
    let r = chat(
        &mock,
        dir.path(),
        "colour the submarine track red\ny\n/plots\n/undo\n/plots\n/quit\n",
        &[],
    )
    .await;
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let o = &r.stdout;
    assert!(o.contains("→ debrief_searchPlots"), "{o}");
    assert!(
        o.contains("│ Run Set Track Color on Exercise Alpha — Day 1"),
        "{o}"
    );
    assert!(o.contains("│ - Target: Contact"), "{o}");
    assert!(o.contains("Apply this change? [y/N]"), "{o}");
    assert!(
        o.contains("← Applied Set Track Color to 1 feature(s)"),
        "{o}"
    );
    assert!(
        o.contains("The Contact track is now red; the plot is unsaved."),
        "{o}"
    );
    let first = o
        .find("(open, dirty: unsaved changes)")
        .expect("dirty after the edit");
    let undo = o.find("Undid \"").expect("undo reported");
    let clean = o.rfind("(open, clean)").expect("clean after undo");
    assert!(first < undo && undo < clean, "{o}");
    assert_eq!(contact_colour(dir.path()), "#FF0000", "nothing was saved");
    // Streaming was on: the request asked for it.
    assert_eq!(mock.chat_requests()[0].body["stream"], true);
    // A transcript and telemetry with the model id.
    let tdir = dir.path().join("data/transcripts");
    let files: Vec<_> = std::fs::read_dir(&tdir).unwrap().collect();
    assert_eq!(files.len(), 1);
    let transcript = std::fs::read_to_string(files[0].as_ref().unwrap().path()).unwrap();
    assert!(transcript.contains("\"kind\":\"confirmation\""));
    assert!(transcript.contains("\"approved\":true"));
    let telemetry = std::fs::read_to_string(dir.path().join("telemetry.jsonl")).unwrap();
    assert!(
        telemetry
            .lines()
            .all(|l| l.contains("\"activeModel\":\"mock-model\"")),
        "{telemetry}"
    );
    assert!(telemetry.contains("\"surface\":\"chat\""));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declined_edit_is_not_applied_and_save_writes_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    // Declined: answer "n".
    let mock = MockModel::sequence(script()).await.unwrap();
    let r = chat(
        &mock,
        dir.path(),
        "colour the submarine track red\nn\n/plots\n/save\n",
        &[],
    )
    .await;
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("Declined; nothing was changed."),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("declined Set Track Color"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("(open, clean)"), "{}", r.stdout);
    assert_eq!(contact_colour(dir.path()), "#FF0000");
    // Approved and saved by the analyst: now the file changes.
    let mock = MockModel::sequence(script()).await.unwrap();
    let r = chat(
        &mock,
        dir.path(),
        "colour the submarine track red\ny\n/save\n/quit\n",
        &["--no-stream"],
    )
    .await;
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stdout
            .contains("Saved stac://demo/alpha-day1/item.json to disk."),
        "{}",
        r.stdout
    );
    assert_eq!(contact_colour(dir.path()), "red");
    assert!(mock.chat_requests()[0].body.get("stream").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_without_a_model_says_what_to_pass() {
    let dir = tempfile::tempdir().unwrap();
    let out = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_toolgate"))
            .arg("chat")
            .env("HOME", dir.path())
            .env("TOOLGATE_DATA_DIR", dir.path().join("data"))
            .env_remove("TOOLGATE_MODEL_URL")
            .env_remove("TOOLGATE_MODEL")
            .stdin(Stdio::null())
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("pass --model-url URL and --model ID"));
}
