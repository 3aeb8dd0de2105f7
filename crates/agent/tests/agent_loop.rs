//! The agent loop end to end against the scripted mock model over real HTTP and the real
//! registry, policy and session: grounding then acting, declines, corrective messages for
//! unknown tools and malformed arguments, turn limits, hangs, garbage, cancellation, priming on
//! and off, the text protocol, events and transcripts.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use toolgate_agent::{
    AgentConfig, AgentEvent, AgentLoop, CallStatus, Conversation, HttpModel, ModelConfig, PRIMING,
    Provider, Stop, TextProtocol,
};
use toolgate_core::flow::{Answer, Fixed};
use toolgate_plot::debrief::{LIST_TOOLS, RUN_TOOL, SUMMARIZE};
use toolgate_test_support::{MockModel, Reply};

use common::{PLOT, Scripted, harness, hash_tree};

/// One run with a fixed approving confirmer and no event sink: most tests need only the outcome.
async fn run_plain(
    client: Arc<HttpModel>,
    h: &common::Harness,
    cfg: AgentConfig,
    conversation: &str,
    utterance: &str,
) -> toolgate_agent::RunOutcome {
    AgentLoop::new(client, h.debrief.clone(), cfg)
        .run(
            &mut Conversation::new(conversation),
            utterance,
            &Fixed(Answer::Approve),
            |_| {},
        )
        .await
}

fn client(mock: &MockModel, stream: bool) -> Arc<HttpModel> {
    let mut c = ModelConfig::new(Provider::OpenAi, mock.url(), "mock-model");
    c.stream = stream;
    c.timeout = Duration::from_secs(10);
    c.backoff = Duration::from_millis(10);
    Arc::new(HttpModel::new(c))
}

fn colour(h: &common::Harness) -> Value {
    h.debrief
        .session()
        .plot(PLOT)
        .unwrap()
        .doc
        .feature("track-1")
        .unwrap()["properties"]["style"]["line"]["color"]
        .clone()
}

fn ground_then_act() -> Vec<Reply> {
    vec![
        Reply::tool(SUMMARIZE, json!({})),
        Reply::tool(LIST_TOOLS, json!({})),
        Reply::tool(
            RUN_TOOL,
            json!({"toolId": "set-track-color", "params": {"color": "red"}, "featureNames": ["HMS Nelson"], "utterance": "colour the submarine track red"}),
        ),
        Reply::text("Done: HMS Nelson is red. The plot is unsaved."),
    ]
}

#[tokio::test]
async fn grounds_then_acts_with_confirmation_events_transcript_and_telemetry() {
    let mock = MockModel::sequence(ground_then_act()).await.unwrap();
    let h = harness("mock-model", true).await;
    let disk = hash_tree(&h.dir.path().join("store"));
    let agent = AgentLoop::new(
        client(&mock, true),
        h.debrief.clone(),
        AgentConfig::default(),
    );
    let mut conv = Conversation::new("c1")
        .with_transcript(&h.dir.path().join("t"))
        .unwrap();
    let approve = Scripted::new(vec![Answer::Approve]);
    let mut events = Vec::new();
    let out = agent
        .run(&mut conv, "colour the submarine track red", &approve, |e| {
            events.push(e);
        })
        .await;
    assert_eq!(out.stop, Stop::Final);
    assert_eq!(out.turns, 4);
    let tools: Vec<&str> = out.calls.iter().map(|c| c.tool.as_str()).collect();
    assert_eq!(tools, [SUMMARIZE, LIST_TOOLS, RUN_TOOL]);
    assert!(
        out.calls[2]
            .result
            .starts_with("Applied Set Track Color to 1 feature(s)"),
        "{}",
        out.calls[2].result
    );
    assert_eq!(out.confirmations.len(), 1);
    assert!(out.confirmations[0].1);
    assert_eq!(colour(&h), "red");
    assert!(h.debrief.session().plot(PLOT).unwrap().doc.is_dirty());
    assert_eq!(
        hash_tree(&h.dir.path().join("store")),
        disk,
        "nothing written to disk"
    );
    assert!(out.usage.prompt_tokens > 0 && out.usage.completion_tokens > 0);

    // Events: deltas of the final text, then the calls in order with the confirmation inside.
    let kinds: Vec<String> = events
        .iter()
        .filter(|e| !matches!(e, AgentEvent::TextDelta { .. }))
        .map(|e| {
            serde_json::to_value(e).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "toolCallStarted",
            "toolCallFinished",
            "toolCallStarted",
            "toolCallFinished",
            "toolCallStarted",
            "confirmationAsked",
            "confirmationAnswered",
            "toolCallFinished",
            "final"
        ]
    );
    let streamed: String = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(streamed, "Done: HMS Nelson is red. The plot is unsaved.");

    // The model saw the tool results: the 4th request carries three tool messages.
    let reqs = mock.requests();
    let last = reqs[3].body["messages"].as_array().unwrap();
    assert_eq!(last.iter().filter(|m| m["role"] == "tool").count(), 3);
    assert_eq!(last[0]["role"], "system");
    assert_eq!(last[0]["content"], PRIMING);

    // Telemetry: every call recorded with the model id.
    let recs = h.sink.records();
    assert_eq!(recs.len(), 3);
    assert!(recs.iter().all(|r| r.active_model == "mock-model"));

    // Transcript: JSONL with model turns, calls, results, the confirmation and the end.
    let text = std::fs::read_to_string(conv.transcript_path().unwrap()).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let count = |k: &str| lines.iter().filter(|l| l["kind"] == k).count();
    assert_eq!(count("model_turn"), 4);
    assert_eq!(count("call"), 3);
    assert_eq!(count("result"), 3);
    assert_eq!(count("confirmation"), 1);
    assert_eq!(count("end"), 1);
    let turn = lines.iter().find(|l| l["kind"] == "model_turn").unwrap();
    assert_eq!(turn["model"], "mock-model");
    assert!(turn["promptTokens"].as_u64().unwrap() > 0);
    assert!(turn["latencyMs"].as_f64().is_some());
    assert!(
        lines
            .iter()
            .all(|l| l["conversation"] == "c1" && l["ts"].is_string())
    );
}

#[tokio::test]
async fn a_declined_edit_changes_nothing() {
    let mock = MockModel::sequence(ground_then_act()).await.unwrap();
    let h = harness("mock-model", true).await;
    let before = h.debrief.session().plot(PLOT).unwrap().doc.to_bytes();
    let agent = AgentLoop::new(
        client(&mock, false),
        h.debrief.clone(),
        AgentConfig::default(),
    );
    let mut conv = Conversation::new("c2");
    let out = agent
        .run(
            &mut conv,
            "colour the submarine track red",
            &Fixed(Answer::Decline),
            |_| {},
        )
        .await;
    assert_eq!(out.stop, Stop::Final);
    assert!(
        out.calls[2].result.contains("declined"),
        "{}",
        out.calls[2].result
    );
    assert_eq!(out.confirmations.len(), 1);
    assert!(!out.confirmations[0].1);
    let s = h.debrief.session();
    assert_eq!(s.plot(PLOT).unwrap().doc.to_bytes(), before);
    assert!(!s.plot(PLOT).unwrap().doc.is_dirty());
}

/// Three edits, answered decline / approve / decline: exactly the approved one lands.
#[tokio::test]
async fn only_confirmed_changes_are_applied() {
    let edit = |c: &str| {
        Reply::tool(
            RUN_TOOL,
            json!({"toolId": "set-track-color", "params": {"color": c}, "featureIds": ["track-1"]}),
        )
    };
    let mock = MockModel::sequence(vec![
        edit("red"),
        edit("green"),
        edit("yellow"),
        Reply::text("ok"),
    ])
    .await
    .unwrap();
    let h = harness("mock-model", true).await;
    let agent = AgentLoop::new(
        client(&mock, false),
        h.debrief.clone(),
        AgentConfig::default(),
    );
    let answers = Scripted::new(vec![Answer::Decline, Answer::Approve, Answer::Decline]);
    let out = agent
        .run(
            &mut Conversation::new("c3"),
            "try colours",
            &answers,
            |_| {},
        )
        .await;
    assert_eq!(
        out.confirmations.iter().map(|c| c.1).collect::<Vec<_>>(),
        [false, true, false]
    );
    assert_eq!(colour(&h), "green");
    let mut s = h.debrief.session();
    s.undo(PLOT).unwrap();
    assert!(s.undo(PLOT).is_err(), "exactly one change was applied");
}

#[tokio::test]
async fn unknown_tools_and_malformed_arguments_get_corrective_messages() {
    let mock = MockModel::sequence(vec![
        Reply::tool("debrief_colourTrack", json!({"colour": "red"})),
        Reply::tool_raw(RUN_TOOL, "{\"toolId\": \"set-track-color\", "),
        Reply::tool(LIST_TOOLS, json!({})),
        Reply::text("I listed the tools."),
    ])
    .await
    .unwrap();
    let h = harness("mock-model", true).await;
    let agent = AgentLoop::new(
        client(&mock, false),
        h.debrief.clone(),
        AgentConfig::default(),
    );
    let out = agent
        .run(
            &mut Conversation::new("c4"),
            "colour it",
            &Fixed(Answer::Approve),
            |_| {},
        )
        .await;
    assert_eq!(out.stop, Stop::Final);
    assert_eq!(out.calls[0].status, CallStatus::UnknownTool);
    assert!(
        out.calls[0]
            .result
            .starts_with("Unknown tool \"debrief_colourTrack\""),
        "{}",
        out.calls[0].result
    );
    assert_eq!(out.calls[1].status, CallStatus::MalformedArguments);
    assert!(
        out.calls[1].result.contains("not valid JSON"),
        "{}",
        out.calls[1].result
    );
    assert_eq!(out.calls[2].status, CallStatus::Dispatched);
    // The corrections went back to the model as tool results.
    let reqs = mock.requests();
    let m = reqs[2].body["messages"].as_array().unwrap();
    let tool_msgs: Vec<&str> = m
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(tool_msgs.len(), 2);
    assert!(tool_msgs[0].contains("debrief_listTools"));
    assert!(tool_msgs[1].contains("not valid JSON"));
    assert!(!h.debrief.session().plot(PLOT).unwrap().doc.is_dirty());
}

#[tokio::test]
async fn corrections_and_turns_are_bounded() {
    let mock = MockModel::sequence(vec![Reply::tool("nope", json!({})); 10])
        .await
        .unwrap();
    let h = harness("mock-model", true).await;
    let cfg = AgentConfig {
        max_corrections: 2,
        ..AgentConfig::default()
    };
    let agent = AgentLoop::new(client(&mock, false), h.debrief.clone(), cfg);
    let mut events = Vec::new();
    let out = agent
        .run(
            &mut Conversation::new("c5"),
            "x",
            &Fixed(Answer::Approve),
            |e| events.push(e),
        )
        .await;
    assert_eq!(out.stop, Stop::TooManyCorrections);
    assert_eq!(out.calls.len(), 3);
    assert!(
        matches!(events.last(), Some(AgentEvent::Error { message }) if message.contains("3 invalid tool calls"))
    );

    let mock = MockModel::sequence(vec![Reply::tool(LIST_TOOLS, json!({})); 10])
        .await
        .unwrap();
    let cfg = AgentConfig {
        max_turns: 3,
        ..AgentConfig::default()
    };
    let out = run_plain(client(&mock, false), &h, cfg, "c6", "x").await;
    assert_eq!(out.stop, Stop::TurnLimit);
    assert_eq!(out.turns, 3);
    assert_eq!(mock.requests().len(), 3);
}

#[tokio::test]
async fn a_hang_or_garbage_ends_the_run_with_a_clean_error() {
    let mock = MockModel::sequence(vec![Reply::hang(Duration::from_secs(5))])
        .await
        .unwrap();
    let h = harness("mock-model", true).await;
    let mut c = ModelConfig::new(Provider::OpenAi, mock.url(), "mock-model");
    c.timeout = Duration::from_millis(300);
    let agent = AgentLoop::new(
        Arc::new(HttpModel::new(c)),
        h.debrief.clone(),
        AgentConfig::default(),
    );
    let out = agent
        .run(
            &mut Conversation::new("c7"),
            "x",
            &Fixed(Answer::Approve),
            |_| {},
        )
        .await;
    assert!(
        matches!(&out.stop, Stop::ModelError { message } if message.contains("did not answer within")),
        "{:?}",
        out.stop
    );
    assert!(out.calls.is_empty());

    let mock = MockModel::sequence(vec![Reply::Status(200, "Internal garbage".into())])
        .await
        .unwrap();
    let agent = AgentLoop::new(
        client(&mock, false),
        h.debrief.clone(),
        AgentConfig::default(),
    );
    let out = agent
        .run(
            &mut Conversation::new("c8"),
            "x",
            &Fixed(Answer::Approve),
            |_| {},
        )
        .await;
    assert!(
        matches!(&out.stop, Stop::ModelError { message } if message.contains("could not be read")),
        "{:?}",
        out.stop
    );
}

#[tokio::test]
async fn cancellation_stops_a_waiting_run() {
    let mock = MockModel::sequence(vec![Reply::hang(Duration::from_secs(5))])
        .await
        .unwrap();
    let h = harness("mock-model", true).await;
    let agent = AgentLoop::new(
        client(&mock, false),
        h.debrief.clone(),
        AgentConfig::default(),
    );
    let mut conv = Conversation::new("c9");
    let token = conv.cancel_token();
    // Cancel once the model has the request (the run is waiting on it), not after a guess.
    let cancel = async {
        while mock.chat_requests().is_empty() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        token.cancel();
    };
    let (out, ()) = tokio::join!(
        agent.run(&mut conv, "x", &Fixed(Answer::Approve), |_| {}),
        cancel
    );
    assert_eq!(out.stop, Stop::Cancelled);
}

#[tokio::test]
async fn priming_can_be_switched_off() {
    let mock = MockModel::sequence(vec![Reply::text("a"), Reply::text("b")])
        .await
        .unwrap();
    let h = harness("mock-model", true).await;
    let off = AgentLoop::new(
        client(&mock, false),
        h.debrief.clone(),
        AgentConfig {
            priming: false,
            ..AgentConfig::default()
        },
    );
    let mut conv = Conversation::new("c10");
    off.run(&mut conv, "hello", &Fixed(Answer::Approve), |_| {})
        .await;
    // A second utterance continues the same conversation.
    off.run(&mut conv, "again", &Fixed(Answer::Approve), |_| {})
        .await;
    let reqs = mock.requests();
    assert_eq!(reqs[0].body["messages"][0]["role"], "user");
    let second = reqs[1].body["messages"].as_array().unwrap();
    assert_eq!(second.len(), 3, "user, assistant, user");
    assert!(PRIMING.contains("debrief_listTools"));
}

#[tokio::test]
async fn the_text_protocol_drives_models_without_native_tool_calls() {
    let mock = MockModel::sequence(vec![
        Reply::text("Let me look.\n```json\n{\"tool\": \"debrief_summarizeCurrentPlot\", \"arguments\": {}}\n```"),
        Reply::text("The plot has one track and one point."),
    ])
    .await
    .unwrap();
    let h = harness("mock-model", true).await;
    let mut c = ModelConfig::new(Provider::OpenAi, mock.url(), "smollm2");
    c.timeout = Duration::from_secs(10);
    let agent = AgentLoop::new(
        Arc::new(TextProtocol::new(HttpModel::new(c))),
        h.debrief.clone(),
        AgentConfig::default(),
    );
    let out = agent
        .run(
            &mut Conversation::new("c11"),
            "what's in this plot?",
            &Fixed(Answer::Approve),
            |_| {},
        )
        .await;
    assert_eq!(out.stop, Stop::Final);
    assert_eq!(out.calls.len(), 1);
    assert_eq!(out.calls[0].tool, SUMMARIZE);
    assert!(out.calls[0].result.contains("HMS Nelson"));
    let reqs = mock.requests();
    assert!(
        reqs[0].body.get("tools").is_none(),
        "no native tools are sent"
    );
    let sys = reqs[0].body["messages"][0]["content"].as_str().unwrap();
    assert!(sys.starts_with(PRIMING.trim_end()) || sys.contains("Working inside Debrief"));
    assert!(sys.contains("fenced JSON block"));
    let second = reqs[1].body["messages"].as_array().unwrap();
    assert!(second.iter().any(|m| {
        m["role"] == "user"
            && m["content"]
                .as_str()
                .unwrap()
                .starts_with("Result of debrief_summarizeCurrentPlot:")
    }));
}

#[tokio::test]
async fn the_anthropic_client_drives_the_loop() {
    let mock = MockModel::sequence(ground_then_act()).await.unwrap();
    let h = harness("claude-haiku-4-5", true).await;
    let mut c = ModelConfig::new(Provider::Anthropic, mock.origin(), "claude-haiku-4-5");
    c.stream = true;
    let agent = AgentLoop::new(
        Arc::new(HttpModel::new(c)),
        h.debrief.clone(),
        AgentConfig::default(),
    );
    let out = agent
        .run(
            &mut Conversation::new("c12"),
            "colour the submarine track red",
            &Fixed(Answer::Approve),
            |_| {},
        )
        .await;
    assert_eq!(out.stop, Stop::Final);
    assert_eq!(colour(&h), "red");
    let reqs = mock.requests();
    assert_eq!(reqs[3].body["system"], PRIMING);
    let msgs = reqs[3].body["messages"].as_array().unwrap();
    assert!(
        msgs.iter()
            .any(|m| m["content"][0]["type"] == "tool_result")
    );
}

#[tokio::test]
async fn a_refused_call_is_recorded_and_streamed_as_refused_not_ok() {
    let mock = MockModel::sequence(vec![
        Reply::tool(
            RUN_TOOL,
            json!({"toolId": "set-track-color", "params": {"color": "red"}}),
        ),
        Reply::text("Nothing was selected."),
    ])
    .await
    .unwrap();
    let h = harness("mock-model", true).await;
    let agent = AgentLoop::new(
        client(&mock, false),
        h.debrief.clone(),
        AgentConfig::default(),
    );
    let events = std::sync::Mutex::new(Vec::new());
    let out = agent
        .run(
            &mut Conversation::new("c-refused"),
            "colour the track red",
            &Fixed(Answer::Approve),
            |e| events.lock().unwrap().push(e),
        )
        .await;
    assert_eq!(out.calls[0].status, CallStatus::Dispatched);
    assert_eq!(out.calls[0].outcome, toolgate_core::Status::Refused);
    assert_eq!(out.calls[0].reason.as_deref(), Some("target"));
    assert!(
        out.calls[0].result.contains("I will not guess"),
        "{}",
        out.calls[0].result
    );
    assert!(
        out.confirmations.is_empty(),
        "refused before anyone is asked"
    );
    let finished: Vec<(bool, toolgate_core::Status)> = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            toolgate_agent::AgentEvent::ToolCallFinished { ok, status, .. } => Some((*ok, *status)),
            _ => None,
        })
        .collect();
    assert_eq!(finished, [(false, toolgate_core::Status::Refused)]);
    assert!(!h.debrief.session().plot(PLOT).unwrap().doc.is_dirty());
}

/// What Qwen2.5-Coder-0.5B answered under llama.cpp in native mode (local-model trial): the call
/// as a ```json fence in `content`, no `tool_calls`. It must be dispatched, not taken as final.
#[tokio::test]
async fn a_call_fenced_in_content_is_dispatched_like_a_native_one() {
    for stream in [false, true] {
        let mock = MockModel::sequence(vec![
            Reply::text(format!(
                "```json\n{{\"name\": \"{SUMMARIZE}\", \"arguments\": {{}}}}\n```"
            )),
            Reply::text("The plot has one track and one point."),
        ])
        .await
        .unwrap();
        let h = harness("mock-model", true).await;
        let agent = AgentLoop::new(
            client(&mock, stream),
            h.debrief.clone(),
            AgentConfig::default(),
        );
        let out = agent
            .run(
                &mut Conversation::new("c-fenced"),
                "what's in this plot?",
                &Fixed(Answer::Approve),
                |_| {},
            )
            .await;
        assert_eq!(out.stop, Stop::Final);
        assert_eq!(out.calls.len(), 1, "stream={stream}");
        assert_eq!(out.calls[0].tool, SUMMARIZE);
        assert_eq!(out.calls[0].status, CallStatus::Dispatched);
        assert!(out.calls[0].result.contains("HMS Nelson"));
        assert_eq!(
            out.final_text.as_deref(),
            Some("The plot has one track and one point.")
        );
        // The recovered call goes back in the protocol's own shape: an assistant message with
        // tool_calls and a tool message answering it, with native tools still advertised.
        let reqs = mock.requests();
        assert!(
            reqs[1].body["tools"]
                .as_array()
                .is_some_and(|t| !t.is_empty())
        );
        let m = reqs[1].body["messages"].as_array().unwrap();
        let asst = m.iter().find(|m| m["role"] == "assistant").unwrap();
        assert_eq!(asst["tool_calls"][0]["function"]["name"], SUMMARIZE);
        let tool = m.iter().find(|m| m["role"] == "tool").unwrap();
        assert_eq!(tool["tool_call_id"], asst["tool_calls"][0]["id"]);
    }
}

#[tokio::test]
async fn a_tool_call_tag_in_content_is_dispatched() {
    let mock = MockModel::sequence(vec![
        Reply::text(format!(
            "I will list them.\n<tool_call>\n{{\"name\": \"{LIST_TOOLS}\", \"arguments\": \"{{}}\"}}\n</tool_call>"
        )),
        Reply::text("You can run the speed filter."),
    ])
    .await
    .unwrap();
    let h = harness("mock-model", true).await;
    let agent = AgentLoop::new(
        client(&mock, false),
        h.debrief.clone(),
        AgentConfig::default(),
    );
    let out = agent
        .run(
            &mut Conversation::new("c-tag"),
            "which tools can I run?",
            &Fixed(Answer::Approve),
            |_| {},
        )
        .await;
    assert_eq!(out.stop, Stop::Final);
    let tools: Vec<&str> = out.calls.iter().map(|c| c.tool.as_str()).collect();
    assert_eq!(tools, [LIST_TOOLS]);
    assert_eq!(out.calls[0].status, CallStatus::Dispatched);
    let reqs = mock.requests();
    let m = reqs[1].body["messages"].as_array().unwrap();
    let asst = m.iter().find(|m| m["role"] == "assistant").unwrap();
    assert_eq!(asst["content"], "I will list them.");
}

/// A reply that clearly meant to call a tool but cannot be read gets one corrective turn, then
/// the loop goes on; a second unreadable reply is the answer (the correction is bounded).
#[tokio::test]
async fn an_unreadable_call_in_content_gets_one_corrective_turn() {
    let broken = format!("```json\n{{\"name\": \"{RUN_TOOL}\", \"arguments\": {{\"toolId\": \n```");
    let mock = MockModel::sequence(vec![
        Reply::text(broken.clone()),
        Reply::text(format!(
            "{{\"name\": \"{LIST_TOOLS}\", \"arguments\": {{}}}}"
        )),
        Reply::text(broken.clone()),
        Reply::text("unreachable"),
    ])
    .await
    .unwrap();
    let h = harness("mock-model", true).await;
    let agent = AgentLoop::new(
        client(&mock, false),
        h.debrief.clone(),
        AgentConfig::default(),
    );
    let mut conv = Conversation::new("c-nudge")
        .with_transcript(&h.dir.path().join("t"))
        .unwrap();
    let out = agent
        .run(
            &mut conv,
            "filter by speed",
            &Fixed(Answer::Approve),
            |_| {},
        )
        .await;
    assert_eq!(out.stop, Stop::Final);
    assert_eq!(out.turns, 3);
    let tools: Vec<&str> = out.calls.iter().map(|c| c.tool.as_str()).collect();
    assert_eq!(tools, [LIST_TOOLS]);
    assert_eq!(out.final_text.as_deref(), Some(broken.as_str()));
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 3);
    let m = reqs[1].body["messages"].as_array().unwrap();
    let last = m.last().unwrap();
    assert_eq!(last["role"], "user");
    let text = last["content"].as_str().unwrap();
    assert!(
        text.contains("not valid JSON") && text.contains(LIST_TOOLS),
        "{text}"
    );
    let log = std::fs::read_to_string(conv.transcript_path().unwrap()).unwrap();
    assert_eq!(log.matches("\"correction\"").count(), 1);

    // The corrective turn is counted in the corrections budget.
    let mock = MockModel::sequence(vec![Reply::text(broken.clone()); 3])
        .await
        .unwrap();
    let cfg = AgentConfig {
        max_corrections: 0,
        ..AgentConfig::default()
    };
    let out = run_plain(client(&mock, false), &h, cfg, "c-nudge-2", "x").await;
    assert_eq!(out.stop, Stop::TooManyCorrections);
    assert_eq!(mock.requests().len(), 1);
}

/// Prose that merely names a tool is an answer, not a failed call: no corrective turn.
#[tokio::test]
async fn prose_naming_a_tool_is_still_a_final_answer() {
    let mock = MockModel::sequence(vec![Reply::text(format!(
        "I used {LIST_TOOLS}; the speed filter applies."
    ))])
    .await
    .unwrap();
    let h = harness("mock-model", true).await;
    let agent = AgentLoop::new(
        client(&mock, false),
        h.debrief.clone(),
        AgentConfig::default(),
    );
    let out = agent
        .run(
            &mut Conversation::new("c-prose"),
            "x",
            &Fixed(Answer::Approve),
            |_| {},
        )
        .await;
    assert_eq!(out.stop, Stop::Final);
    assert_eq!(out.turns, 1);
    assert!(out.calls.is_empty());
}
