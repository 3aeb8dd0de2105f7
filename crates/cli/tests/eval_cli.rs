//! `toolgate eval replay|probe|tokens|arms` through the real binary.
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(clippy::disallowed_methods)]

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use toolgate_test_support::{MockModel, Reply, Script};

struct Run {
    stdout: String,
    stderr: String,
    code: i32,
}

fn toolgate(args: &[&str], home: &Path) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(args)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("TOOLGATE_DATA_DIR", home.join("data"))
        .env("TOOLGATE_TELEMETRY", home.join("telemetry.jsonl"))
        .env("PATH", "/usr/bin:/bin")
        .env_remove("TOOLGATE_TOOLS_DIR")
        .env_remove("GH_TOKEN")
        .env_remove("GITHUB_TOKEN")
        .env_remove("COPILOT_GITHUB_TOKEN")
        .current_dir(home)
        .output()
        .unwrap();
    Run {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        code: out.status.code().unwrap_or(-1),
    }
}

fn manifest() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn replay_passes_every_shipped_scenario() {
    let home = tempfile::tempdir().unwrap();
    let r = toolgate(&["eval", "replay"], home.path());
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let n = std::fs::read_dir(manifest().join("../eval/scenarios"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "toml")
        })
        .count();
    assert!(
        r.stdout.contains(&format!("{n}/{n} scenarios passed.")),
        "{}",
        r.stdout
    );
    let r = toolgate(
        &[
            "eval",
            "replay",
            "--json",
            "--only",
            "spike-h3-colour-submarine",
        ],
        home.path(),
    );
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v[0]["passed"], true);
    assert_eq!(
        v[0]["calls"],
        serde_json::json!(["debrief_listTools", "debrief_runTool"])
    );
}

#[test]
fn a_bad_scenario_folder_is_rejected_with_file_and_line() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("sc");
    std::fs::create_dir_all(&dir).unwrap();
    let good = std::fs::read_to_string(
        manifest().join("../eval/scenarios/spike-h3-colour-submarine.toml"),
    )
    .unwrap();
    std::fs::write(
        dir.join("x.toml"),
        good.replace("dirty = true", "dirty = true\nunchanged = true"),
    )
    .unwrap();
    let r = toolgate(
        &["eval", "replay", "--scenarios", dir.to_str().unwrap()],
        home.path(),
    );
    assert_eq!(r.code, 1);
    let line = good.lines().position(|l| l == "dirty = true").unwrap() + 2;
    assert!(
        r.stderr.contains(&format!(
            "x.toml:{line}: impossible: a plot cannot be dirty and unchanged"
        )),
        "{}",
        r.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probe_reports_scores_and_gates_on_a_threshold() {
    // Ground-then-act scripts for the routing prompts: 6/8 strict, 8/8 sequence and outcome.
    let list: Vec<_> = toolgate_scenarios();
    let map: HashMap<String, Vec<Reply>> = list
        .iter()
        .map(|(utterance, grounding, terminal)| {
            let mut v: Vec<Reply> = grounding
                .iter()
                .map(|g| Reply::tool(g, serde_json::json!({})))
                .collect();
            v.push(Reply::tool(&terminal.0, terminal.1.clone()));
            v.push(Reply::text("Done."));
            (utterance.clone(), v)
        })
        .collect();
    let mock = MockModel::start(Script::ByUtterance(map)).await.unwrap();
    let url = mock.url();
    let home = tempfile::tempdir().unwrap();
    let h = home.path().to_owned();
    let (strict, sequence, json) = tokio::task::spawn_blocking(move || {
        let base = [
            "eval",
            "probe",
            "--model-url",
            &url,
            "--model",
            "mock-model",
            "--tag",
            "routing",
        ];
        let with = |extra: &[&str]| {
            let mut a: Vec<&str> = base.to_vec();
            a.extend_from_slice(extra);
            toolgate(&a, &h)
        };
        (
            with(&["--threshold", "0.8", "--metric", "strict"]),
            with(&[
                "--threshold",
                "0.8",
                "--metric",
                "sequence",
                "--transcripts",
                h.join("t").to_str().unwrap(),
            ]),
            with(&["--json"]),
        )
    })
    .await
    .unwrap();
    assert_eq!(strict.code, 1, "{}{}", strict.stdout, strict.stderr);
    assert!(
        strict
            .stderr
            .contains("below threshold: Strict rate 0.750 < 0.8"),
        "{}",
        strict.stderr
    );
    assert!(
        strict
            .stdout
            .contains("| on | 6/8 (75%) | 8/8 (100%) | 8/8 (100%) | 8/8 (100%) |"),
        "{}",
        strict.stdout
    );
    assert_eq!(sequence.code, 0, "{}{}", sequence.stdout, sequence.stderr);
    assert_eq!(
        std::fs::read_dir(home.path().join("t")).unwrap().count(),
        8,
        "one transcript per run"
    );
    let v: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(v["totals"][0]["strict"], 6);
    assert_eq!(v["totals"][0]["sequence"], 8);
    assert_eq!(v["totals"][0]["outcome"], 8);
    assert_eq!(v["model"], "mock-model");
}

/// (utterance, grounding tools of the first trajectory, (terminal tool, canned input)) of the
/// routing scenarios.
fn toolgate_scenarios() -> Vec<(String, Vec<String>, (String, serde_json::Value))> {
    let out: Vec<_> = toolgate_eval::scenario::builtin()
        .unwrap()
        .into_iter()
        .filter(|s| s.tags.iter().any(|t| t == "routing"))
        .map(|s| {
            let tools = &s.accept[0].tools;
            (
                s.utterance.clone(),
                tools[..tools.len() - 1].to_vec(),
                s.replay.last().cloned().unwrap(),
            )
        })
        .collect();
    assert_eq!(out.len(), 8);
    out
}

#[test]
fn tokens_and_arms() {
    let home = tempfile::tempdir().unwrap();
    let r = toolgate(&["eval", "tokens", "--json"], home.path());
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["plots"].as_array().unwrap().len(), 6);
    assert_eq!(v["tools"].as_array().unwrap().len(), 4);
    let r = toolgate(&["eval", "tokens"], home.path());
    assert!(
        r.stdout.contains("| plot | features | listed |"),
        "{}",
        r.stdout
    );

    let sample = manifest().join("../eval/arms-sample");
    let r = toolgate(
        &["eval", "arms", "--dir", sample.to_str().unwrap()],
        home.path(),
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout
            .contains("| total | baseline | 5 | 4 | 61500 | 1370 | 0.174300 |"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout
            .contains("| todo-in-context | codeact | 3 | 2 | 43500 | 1250 |"),
        "{}",
        r.stdout
    );
}

#[test]
fn arms_drive_without_a_host_cli_exits_3() {
    let home = tempfile::tempdir().unwrap();
    let prompts = home.path().join("p.json");
    std::fs::write(&prompts, r#"[{"id": "x", "prompt": "count the TODOs"}]"#).unwrap();
    let out = home.path().join("out");
    let r = toolgate(
        &[
            "eval",
            "arms",
            "--drive",
            "--prompts",
            prompts.to_str().unwrap(),
            "--dir",
            out.to_str().unwrap(),
        ],
        home.path(),
    );
    assert_eq!(r.code, 3, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("no host CLI") || r.stderr.contains("no authenticated host CLI"),
        "{}",
        r.stderr
    );
    assert!(!out.exists(), "nothing was written");
}

/// `--model-file`: the probe runs on a model inside the toolgate process (SmolLM2-135M, the
/// in-process plumbing; `.ci/install-test-clients` fetches it). Plumbing only: every request is
/// answered, calls are well formed under the small profile's schema, the turn limit holds.
#[test]
fn probe_runs_on_an_in_process_model_file() {
    let gguf = toolgate_test_support::smollm2_gguf();
    if !gguf.is_file() {
        toolgate_test_support::missing_client(&format!("needs {}", gguf.display()));
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let r = toolgate(
        &[
            "eval",
            "probe",
            "--model-file",
            gguf.to_str().unwrap(),
            "--profile",
            "small",
            "--max-turns",
            "3",
            "--max-tokens",
            "96",
            "--context",
            "4096",
            "--only",
            "routing-2-whats-in-plot",
            "--json",
        ],
        home.path(),
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let report: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(report["model"], "SmolLM2-135M-Instruct.Q4_1", "{report}");
    let t = &report["totals"][0];
    assert_eq!(t["runs"], 1, "{report}");
    assert_eq!(t["model_errors"], 0, "{report}");
    let run = &report["runs"][0];
    assert!(run["turns"].as_u64().unwrap() <= 3, "{run}");
    // Under the step schema the first step is a call, whatever this small model prefers.
    assert!(run["tool_calls"].as_u64().unwrap() >= 1, "{run}");
}
