//! The small-model profile against the scripted mock model over real HTTP: the large profile's
//! requests are the ones toolgate always sent; the small profile offers tools by stage,
//! answers repeated calls from the earlier result, shows compact results, fits the context
//! budget, and — when the server is llama.cpp (the mock answers `GET /props` like it) — sends a
//! step schema and reads the JSON reply it admits.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use toolgate_agent::small::DROPPED;
use toolgate_agent::{
    AgentConfig, AgentLoop, CallStatus, Conversation, HttpModel, Levers, ModelConfig, PRIMING,
    Profile, Provider, Stop,
};
use toolgate_core::flow::{Answer, Fixed};
use toolgate_plot::debrief::{LIST_TOOLS, RUN_TOOL, SEARCH, SUMMARIZE, agent_tool_specs};
use toolgate_test_support::{MockModel, Recorded, Reply};

use common::{PLOT, harness};

fn client(mock: &MockModel) -> Arc<HttpModel> {
    let mut c = ModelConfig::new(Provider::OpenAi, mock.url(), "mock-model");
    c.timeout = Duration::from_secs(10);
    c.backoff = Duration::from_millis(10);
    Arc::new(HttpModel::new(c))
}

fn ground_then_act() -> Vec<Reply> {
    vec![
        Reply::tool(SUMMARIZE, json!({})),
        Reply::tool(LIST_TOOLS, json!({})),
        Reply::tool(
            RUN_TOOL,
            json!({"toolId": "set-track-color", "params": {"color": "red"}, "featureNames": ["HMS Nelson"]}),
        ),
        Reply::text("Done: HMS Nelson is red."),
    ]
}

async fn run(cfg: AgentConfig, script: Vec<Reply>) -> (toolgate_agent::RunOutcome, Vec<Recorded>) {
    run_selected(cfg, script, &[]).await
}

/// One run with `selected` feature ids selected on the open plot.
async fn run_selected(
    cfg: AgentConfig,
    script: Vec<Reply>,
    selected: &[&str],
) -> (toolgate_agent::RunOutcome, Vec<Recorded>) {
    let mock = MockModel::sequence(script).await.unwrap();
    let h = harness("mock-model", true).await;
    if !selected.is_empty() {
        h.debrief
            .session()
            .select(PLOT, selected.iter().map(|s| (*s).to_owned()).collect())
            .unwrap();
    }
    let out = AgentLoop::new(client(&mock), h.debrief.clone(), cfg)
        .run(
            &mut Conversation::new("small"),
            "colour the submarine track red",
            &Fixed(Answer::Approve),
            |_| {},
        )
        .await;
    (out, mock.requests())
}

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The large profile (the default) sends what toolgate always sent: only chat requests (no
/// server probing), every one with the four tools and their full schemas, `tool_choice: auto`,
/// no `response_format`, the whole conversation with every result in full.
#[tokio::test]
async fn the_large_profile_sends_the_requests_toolgate_always_sent() {
    assert_eq!(
        AgentConfig::default(),
        AgentConfig::for_profile(Profile::Large)
    );
    assert_eq!(AgentConfig::default().levers, Levers::LARGE);
    let (out, requests) = run(AgentConfig::default(), ground_then_act()).await;
    assert_eq!(out.stop, Stop::Final);
    assert_eq!(requests.len(), 4, "four chat requests and nothing else");
    let specs = agent_tool_specs();
    for (i, r) in requests.iter().enumerate() {
        assert_eq!(r.path, "/v1/chat/completions");
        let b = &r.body;
        let keys: Vec<&str> = b.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            ["model", "messages", "tools", "tool_choice", "temperature"],
            "request {i} carries exactly the fields it always did"
        );
        assert_eq!(b["tool_choice"], "auto");
        let tools = b["tools"].as_array().unwrap();
        assert_eq!(tools.len(), specs.len());
        for (t, s) in tools.iter().zip(&specs) {
            assert_eq!(
                t,
                &json!({"type": "function", "function": {"name": s.id, "description": s.description, "parameters": s.input_schema}})
            );
        }
        let msgs = b["messages"].as_array().unwrap();
        assert_eq!(
            msgs.len(),
            2 + 2 * i,
            "the whole conversation, nothing dropped"
        );
        assert_eq!(msgs[0], json!({"role": "system", "content": PRIMING}));
        assert_eq!(
            msgs[1],
            json!({"role": "user", "content": "colour the submarine track red"})
        );
        // Every tool result as the tool gave it.
        for (k, call) in out.calls.iter().enumerate().take(i) {
            assert_eq!(msgs[3 + 2 * k]["content"], call.result.as_str());
        }
    }
    // The same with the levers named explicitly.
    let (_, again) = run(
        AgentConfig {
            levers: Levers::parse("parsing").unwrap(),
            ..AgentConfig::default()
        },
        ground_then_act(),
    )
    .await;
    let bodies = |r: &[Recorded]| r.iter().map(|r| r.body.clone()).collect::<Vec<_>>();
    assert_eq!(bodies(&again), bodies(&requests));
}

/// State machine and compaction (no constraints): per-step tool lists, a call to a tool not
/// offered is refused, an identical repeat is answered without dispatch and blocks that tool
/// for one turn, listTools is shown compact while the record keeps the tool's full reply.
/// (Something is selected, so a second, selection-only summary stays on offer.)
#[tokio::test]
async fn the_state_machine_offers_tools_by_stage_and_guards_repeats() {
    let cfg = AgentConfig {
        levers: Levers::parse("state,compaction").unwrap(),
        context: Some(32_000),
        ..AgentConfig::default()
    };
    let script = vec![
        Reply::tool(LIST_TOOLS, json!({})),
        Reply::tool(SUMMARIZE, json!({})),
        Reply::tool(SUMMARIZE, json!({})),
        Reply::tool(LIST_TOOLS, json!({})),
        Reply::tool(
            RUN_TOOL,
            json!({"toolId": "set-track-color", "params": {"color": "red"}, "featureNames": ["HMS Nelson"]}),
        ),
        Reply::text("Done: HMS Nelson is red."),
    ];
    let (out, requests) = run_selected(cfg, script, &["track-1"]).await;
    assert_eq!(out.stop, Stop::Final, "{out:?}");
    let statuses: Vec<CallStatus> = out.calls.iter().map(|c| c.status).collect();
    assert_eq!(
        statuses,
        [
            CallStatus::NotOffered,
            CallStatus::Dispatched,
            CallStatus::Repeated,
            CallStatus::Dispatched,
            CallStatus::Dispatched
        ]
    );
    assert!(out.calls[0].result.contains("not available at this step"));
    assert!(out.calls[0].result.contains(SUMMARIZE));
    assert!(out.calls[2].result.contains("already called"));
    let chat: Vec<&Recorded> = requests
        .iter()
        .filter(|r| r.path == "/v1/chat/completions")
        .collect();
    assert!(
        requests.iter().all(|r| r.path != "/props"),
        "a given context needs no probing"
    );
    let offers: Vec<Vec<String>> = chat.iter().map(|r| tool_names(&r.body)).collect();
    assert_eq!(
        offers,
        [
            vec![SUMMARIZE.to_owned()], // a plot is open: summary first
            vec![SUMMARIZE.to_owned()], // the listTools call was refused
            vec![SUMMARIZE.to_owned(), LIST_TOOLS.to_owned()], // summarised
            vec![LIST_TOOLS.to_owned()], // summary repeated: blocked for one turn
            vec![SUMMARIZE.to_owned(), RUN_TOOL.to_owned()], // listed
            vec![],                     // the edit ran: only the answer is left
        ]
    );
    assert!(chat[5].body.get("tools").is_none());
    // The listing: compact for the model, in full in the record.
    let shown = chat[4].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "tool")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(shown.starts_with("Tools (id"), "{shown}");
    assert!(shown.contains("- set-track-color"));
    assert!(shown.len() < out.calls[3].result.len());
    assert!(out.calls[3].result.starts_with('['));
    assert_eq!(out.calls[4].outcome, toolgate_core::Status::Ok);
}

/// The context budget replaces old tool results first and keeps the newest one whole.
#[tokio::test]
async fn the_budget_drops_old_results_first() {
    let cfg = AgentConfig {
        priming: false,
        levers: Levers::parse("compaction").unwrap(),
        context: Some(1_000),
        ..AgentConfig::default()
    };
    let script = vec![
        Reply::tool(SUMMARIZE, json!({})),
        Reply::tool(LIST_TOOLS, json!({})),
        Reply::text("ok"),
    ];
    let (out, requests) = run(cfg, script).await;
    assert_eq!(out.stop, Stop::Final);
    let last = &requests.last().unwrap().body["messages"];
    let tool_msgs: Vec<&Value> = last
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .collect();
    assert_eq!(tool_msgs.len(), 2);
    assert_eq!(tool_msgs[0]["content"], DROPPED, "the older result went");
    assert!(
        tool_msgs[1]["content"]
            .as_str()
            .unwrap()
            .starts_with("Tools (id"),
        "the newest stays"
    );
    // All four tools are still offered (no state machine).
    assert_eq!(tool_names(&requests[0].body).len(), 4);
}

/// The whole small profile (planning on) against a server that decodes under a schema: the
/// model classifies the request; the summary and the description are made in code.
#[tokio::test]
async fn with_planning_a_constrained_turn_is_asked_only_for_the_answer() {
    let mock = MockModel::sequence(vec![Reply::text(r#"{"intent": "describe_plot"}"#)])
        .await
        .unwrap();
    let h = harness("mock-model", true).await;
    let out = AgentLoop::new(
        client(&mock),
        h.debrief.clone(),
        AgentConfig::for_profile(Profile::Small),
    )
    .run(
        &mut Conversation::new("c"),
        "tell me about it",
        &Fixed(Answer::Approve),
        |_| {},
    )
    .await;
    // The description is the summary's own names and numbers, composed in code.
    assert_eq!(
        out.final_text.as_deref(),
        Some(
            "\"Exercise Alpha — Day 1\" (2026-03-01 00:00-12:00) holds 1 track — HMS Nelson (NELSON); 1 point — Datum A."
        )
    );
    assert_eq!(out.calls.len(), 1);
    assert_eq!(out.calls[0].tool, SUMMARIZE);
    assert_eq!(mock.chat_requests().len(), 1, "only the classification");
    assert_eq!(out.turns, 0);
}

/// All levers against a server that reports llama.cpp: a step schema instead of `tools`, the
/// answer format in the system prompt, the JSON reply read as a call or as the final answer.
#[tokio::test]
async fn constrained_turns_send_a_step_schema_and_read_its_reply() {
    let mock = MockModel::sequence(vec![
        Reply::text(r#"{"intent": "describe_plot"}"#),
        Reply::text(r#"{"name": "debrief_summarizeCurrentPlot", "arguments": {}}"#),
        Reply::text(r#"{"reply": "The plot holds HMS Nelson's track."}"#),
    ])
    .await
    .unwrap();
    let h = harness("mock-model", true).await;
    // Planning off: every step is the model's here (with planning, the summary is made in
    // code: `with_planning_a_constrained_turn_is_asked_only_for_the_answer`).
    let cfg = AgentConfig {
        levers: Levers {
            planning: false,
            ..Levers::SMALL
        },
        ..AgentConfig::for_profile(Profile::Small)
    };
    let out = AgentLoop::new(client(&mock), h.debrief.clone(), cfg)
        .run(
            &mut Conversation::new("c"),
            // no plain words state the intent: the model classifies it
            "tell me about it",
            &Fixed(Answer::Approve),
            |_| {},
        )
        .await;
    assert_eq!(out.stop, Stop::Final, "{out:?}");
    assert_eq!(
        out.final_text.as_deref(),
        Some("The plot holds HMS Nelson's track.")
    );
    assert_eq!(out.calls.len(), 1);
    assert_eq!(out.calls[0].tool, SUMMARIZE);
    assert_eq!(out.calls[0].status, CallStatus::Dispatched);
    let requests = mock.requests();
    assert_eq!(
        requests[0].path, "/props",
        "the server was asked what it is"
    );
    let chat: Vec<&Recorded> = requests
        .iter()
        .filter(|r| r.path == "/v1/chat/completions")
        .collect();
    assert_eq!(chat.len(), 3);
    // The classification request: the intent schema, the question after the utterance.
    let intent = &chat[0].body;
    assert_eq!(
        intent["response_format"]["json_schema"]["schema"]["properties"]["intent"]["enum"],
        json!(["find_plots", "describe_plot", "list_tools", "run_tool"])
    );
    let im = intent["messages"].as_array().unwrap();
    assert_eq!(im[1]["content"], "tell me about it");
    assert!(
        im[2]["content"]
            .as_str()
            .unwrap()
            .starts_with("Classify the analyst's last request")
    );
    let chat = &chat[1..];
    for r in chat {
        assert!(r.body.get("tools").is_none(), "a schema, not tools");
        assert_eq!(r.body["response_format"]["type"], "json_schema");
        let system = r.body["messages"][0]["content"].as_str().unwrap();
        assert!(system.starts_with(PRIMING) && system.contains("{\"reply\": \"<text>\"}"));
    }
    // Step 1: a plot is open and not summarised: the schema is that one call.
    let s1 = &chat[0].body["response_format"]["json_schema"]["schema"];
    let v1 = jsonschema::validator_for(s1).unwrap();
    assert!(v1.is_valid(&json!({"name": SUMMARIZE, "arguments": {}})));
    assert!(!v1.is_valid(&json!({"name": SEARCH, "arguments": {}})));
    assert!(!v1.is_valid(&json!({"reply": "It has tracks."})));
    // Step 2: summarised, and the request only describes: the answer alone; the earlier call
    // is shown as the JSON the schema admits and its result as a user message.
    let s2 = &chat[1].body["response_format"]["json_schema"]["schema"];
    let v2 = jsonschema::validator_for(s2).unwrap();
    assert!(v2.is_valid(&json!({"reply": "It has tracks."})));
    assert!(!v2.is_valid(&json!({"name": LIST_TOOLS, "arguments": {}})));
    assert!(!v2.is_valid(
        &json!({"name": RUN_TOOL, "arguments": {"toolId": "set-track-color", "params": {"color": "red"}}})
    ));
    let msgs = chat[1].body["messages"].as_array().unwrap();
    assert_eq!(
        msgs[2],
        json!({"role": "assistant", "content": "{\"name\": \"debrief_summarizeCurrentPlot\", \"arguments\": {}}"})
    );
    assert_eq!(msgs[3]["role"], "user");
    assert!(
        msgs[3]["content"]
            .as_str()
            .unwrap()
            .starts_with("Result of debrief_summarizeCurrentPlot:")
    );
}

/// The arguments lever repairs a search before it is sent: the words that name no plot go.
#[tokio::test]
async fn the_arguments_lever_repairs_a_search_before_it_is_sent() {
    let script = vec![
        Reply::tool(SEARCH, json!({"text": "find the Alpha plot"})),
        Reply::text("ok"),
    ];
    let cfg = |levers: &str| AgentConfig {
        priming: false,
        levers: Levers::parse(levers).unwrap(),
        ..AgentConfig::default()
    };
    let (out, _) = run(cfg("arguments"), script.clone()).await;
    assert_eq!(out.calls[0].input, json!({"text": "Alpha"}));
    assert!(
        out.calls[0].result.contains("Alpha"),
        "{}",
        out.calls[0].result
    );
    let (out, _) = run(cfg("none"), script).await;
    assert_eq!(out.calls[0].input, json!({"text": "find the Alpha plot"}));
}

/// Streams each reply's text to the delta sink before returning it, as a streaming server does.
struct Streaming(Arc<HttpModel>);

#[async_trait::async_trait]
impl toolgate_agent::ModelClient for Streaming {
    fn model_id(&self) -> &str {
        self.0.model_id()
    }
    async fn complete(
        &self,
        request: &toolgate_agent::ChatRequest<'_>,
        deltas: toolgate_agent::client::DeltaSink<'_>,
    ) -> Result<toolgate_agent::ChatResponse, toolgate_agent::ModelError> {
        let r = self.0.complete(request, &|_| {}).await?;
        for piece in r.text.as_bytes().chunks(7) {
            deltas(&String::from_utf8_lossy(piece));
        }
        Ok(r)
    }
    async fn server_info(&self) -> toolgate_agent::constrain::ServerInfo {
        self.0.server_info().await
    }
}

/// The JSON a constrained turn decodes is not the analyst's text: nothing of it streams to the
/// surface (the workbench bubble, the terminal); the reply arrives as the final answer.
#[tokio::test]
async fn constrained_json_never_streams_to_the_surface() {
    let mock = MockModel::sequence(vec![
        Reply::text(r#"{"name": "debrief_summarizeCurrentPlot", "arguments": {}}"#),
        Reply::text(r#"{"reply": "The plot holds HMS Nelson's track."}"#),
    ])
    .await
    .unwrap();
    let h = harness("mock-model", true).await;
    let events = std::sync::Mutex::new(Vec::new());
    // Planning off, so the model writes the call and the answer as constrained JSON.
    let cfg = AgentConfig {
        levers: Levers {
            planning: false,
            ..Levers::SMALL
        },
        ..AgentConfig::for_profile(Profile::Small)
    };
    let out = AgentLoop::new(Arc::new(Streaming(client(&mock))), h.debrief.clone(), cfg)
        .run(
            &mut Conversation::new("c"),
            "what's in this plot?",
            &Fixed(Answer::Approve),
            |e| events.lock().unwrap().push(e),
        )
        .await;
    assert_eq!(out.stop, Stop::Final, "{out:?}");
    let events = events.into_inner().unwrap();
    let streamed: String = events
        .iter()
        .filter_map(|e| match e {
            toolgate_agent::AgentEvent::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(streamed, "", "raw step JSON reached the surface");
    assert!(events.iter().any(|e| matches!(e,
        toolgate_agent::AgentEvent::Final { text } if text == "The plot holds HMS Nelson's track.")));
}

/// The reproduction of issue 31's false claims: the model summarises, then says the change was
/// made (no tool ran) — and, asked a quantity, answers with a number from nowhere. The small
/// profile's grounding replaces both replies with sentences built from the turn's results; the
/// large profile passes the model's words through unchanged (its levers are off).
#[tokio::test]
async fn a_reply_claiming_a_change_or_an_invented_number_is_replaced_by_what_the_tools_said() {
    let cfg = small_without_schemas();
    let claimed = vec![
        Reply::tool(SUMMARIZE, json!({})),
        Reply::text("Done! The submarine track is now red."),
    ];
    let (out, _) = run(cfg, claimed.clone()).await;
    let text = out.final_text.unwrap();
    assert!(!text.contains("now red"), "{text}");
    assert!(text.contains("Nothing on the plot was changed."), "{text}");
    let invented = vec![
        Reply::tool(SUMMARIZE, json!({})),
        Reply::text("The contact averaged 18.7 km/h."),
    ];
    let (out, _) = run(cfg, invented).await;
    let text = out.final_text.unwrap();
    assert!(!text.contains("18.7"), "{text}");
    // A reply the results support is kept as the model wrote it.
    let (out, _) = run(cfg, ground_then_act()).await;
    assert_eq!(out.final_text.as_deref(), Some("Done: HMS Nelson is red."));
    // The large profile is unchanged.
    let (out, _) = run(AgentConfig::default(), claimed).await;
    assert_eq!(
        out.final_text.as_deref(),
        Some("Done! The submarine track is now red.")
    );
}

/// A value the model invented is replaced by the one the analyst said before the call is
/// made: asked for red, a model that writes blue still colours the track red.
#[tokio::test]
async fn the_colour_the_analyst_said_replaces_the_one_the_model_wrote() {
    let cfg = small_without_schemas();
    let script = vec![
        Reply::tool(SUMMARIZE, json!({})),
        Reply::tool(
            RUN_TOOL,
            json!({"toolId": "set-track-color", "params": {"color": "blue"}, "featureNames": ["Contact"]}),
        ),
        Reply::text("Contact is now red."),
    ];
    let (out, _) = run(cfg, script.clone()).await;
    let run_call = out.calls.iter().find(|c| c.tool == RUN_TOOL).unwrap();
    assert_eq!(
        run_call.input["params"]["color"], "red",
        "{:?}",
        run_call.input
    );
    // Without the arguments lever the model's value goes through as written.
    let off = AgentConfig {
        levers: Levers {
            arguments: false,
            ..cfg.levers
        },
        ..cfg
    };
    let (out, _) = run(off, script).await;
    let run_call = out.calls.iter().find(|c| c.tool == RUN_TOOL).unwrap();
    assert_eq!(run_call.input["params"]["color"], "blue");
}

/// A request that names a tool the registry does not have is refused in code with the nearest
/// real tools, before any model is asked — never handed to another tool (issue 31: "run the
/// wake-analysis tool" ended in range-calc over every track).
#[tokio::test]
async fn an_invented_tool_is_refused_with_the_nearest_real_ones_and_nothing_runs() {
    let cfg = small_without_schemas();
    let mock = MockModel::sequence(vec![Reply::tool(
        RUN_TOOL,
        json!({"toolId": "range-calc", "params": {}}),
    )])
    .await
    .unwrap();
    let h = harness("mock-model", true).await;
    let out = AgentLoop::new(client(&mock), h.debrief.clone(), cfg)
        .run(
            &mut Conversation::new("invented"),
            "run the wake-analysis tool on Nelson",
            &Fixed(Answer::Approve),
            |_| {},
        )
        .await;
    let text = out.final_text.unwrap();
    assert!(
        text.starts_with("There is no tool called \"wake-analysis\" here, so nothing was run."),
        "{text}"
    );
    assert!(text.contains("The nearest tools are"), "{text}");
    assert!(out.calls.is_empty(), "{:?}", out.calls);
    assert!(mock.chat_requests().is_empty(), "no model was asked");
}

/// The small profile's levers that work without constrained decoding (the mock's replies are
/// plain tool calls and text): every one but constraints, the intent classification and
/// planning (whose steps made in code would take the scripted replies' place; it has its own
/// tests below).
fn small_without_schemas() -> AgentConfig {
    AgentConfig {
        levers: Levers {
            constraints: false,
            intent: false,
            planning: false,
            ..Levers::SMALL
        },
        ..AgentConfig::for_profile(Profile::Small)
    }
}

/// [`small_without_schemas`] with planning on: the intent from plain words, steps settled in
/// code.
fn planning() -> AgentConfig {
    AgentConfig {
        levers: Levers {
            constraints: false,
            intent: true,
            planning: true,
            ..Levers::SMALL
        },
        ..AgentConfig::for_profile(Profile::Small)
    }
}

async fn say(
    cfg: AgentConfig,
    script: Vec<Reply>,
    utterance: &str,
    selected: &[&str],
) -> (toolgate_agent::RunOutcome, MockModel) {
    let mock = MockModel::sequence(script).await.unwrap();
    let h = harness("mock-model", true).await;
    if !selected.is_empty() {
        h.debrief
            .session()
            .select(PLOT, selected.iter().map(|s| (*s).to_owned()).collect())
            .unwrap();
    }
    let out = AgentLoop::new(client(&mock), h.debrief.clone(), cfg)
        .run(
            &mut Conversation::new("planned"),
            utterance,
            &Fixed(Answer::Approve),
            |_| {},
        )
        .await;
    (out, mock)
}

/// A request that settles its tool, its values and its target is carried out with no model
/// request at all: the summary and the listing (the only steps offered), the one tool that takes
/// a colour, and the answer composed from the tool's own result.
#[tokio::test]
async fn a_request_the_words_settle_is_carried_out_without_asking_the_model() {
    let (out, mock) = say(planning(), Vec::new(), "paint nelsons track green", &[]).await;
    let tools: Vec<&str> = out.calls.iter().map(|c| c.tool.as_str()).collect();
    assert_eq!(tools, [SUMMARIZE, LIST_TOOLS, RUN_TOOL], "{:?}", out.calls);
    let run_call = &out.calls[2];
    assert_eq!(run_call.input["toolId"], "set-track-color");
    assert_eq!(run_call.input["params"]["color"], "green");
    assert_eq!(run_call.input["featureNames"], json!(["HMS Nelson"]));
    assert_eq!(out.turns, 0, "no model request");
    assert!(mock.chat_requests().is_empty());
    assert_eq!(out.confirmations.len(), 1, "the change was still confirmed");
    let text = out.final_text.unwrap();
    assert!(text.contains("HMS Nelson"), "{text}");
    assert!(!text.contains('{'), "{text}");
    // Planning off: the same request asks the model at every step.
    let off = AgentConfig {
        levers: Levers {
            planning: false,
            ..planning().levers
        },
        ..planning()
    };
    let (out, mock) = say(off, ground_then_act(), "paint nelsons track green", &[]).await;
    assert!(mock.chat_requests().len() >= 3, "{:?}", out.calls);
}

/// Where there is a choice (several tools fit), the model makes it — and is shown only the few
/// tools on offer, not the whole listing; optional values it invents are dropped, the units the
/// analyst said are used.
#[tokio::test]
async fn the_model_chooses_among_a_few_and_its_invented_values_are_dropped() {
    let script = vec![
        Reply::tool(
            RUN_TOOL,
            json!({"toolId": "calculate-track-length", "params": {"units": "m", "time": "2026-03-01T00:00:12Z"}, "featureNames": ["HMS Nelson"]}),
        ),
        Reply::text("Done."),
    ];
    let (out, mock) = say(
        planning(),
        script,
        "how long is HMS Nelson's track, in nautical miles",
        &[],
    )
    .await;
    let requests = mock.chat_requests();
    assert!(!requests.is_empty(), "{:?}", out.calls);
    let listing = requests[0].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .find(|c| c.starts_with("Tools (id"))
        .unwrap()
        .to_owned();
    assert!(listing.lines().count() <= 7, "{listing}");
    assert!(listing.contains("calculate-track-length"), "{listing}");
    let run_call = out.calls.iter().find(|c| c.tool == RUN_TOOL).unwrap();
    assert_eq!(
        run_call.input["params"],
        json!({"units": "nm"}),
        "{:?}",
        run_call.input
    );
}

/// A question about a quantity is never answered by a tool that edits the plot, and a tool the
/// named targets cannot satisfy (two tracks needed, one named) is not offered.
#[tokio::test]
async fn a_question_is_offered_only_tools_that_compute_for_what_it_names() {
    let script = vec![Reply::tool(
        RUN_TOOL,
        json!({"toolId": "track-stats", "featureNames": ["Contact"]}),
    )];
    let (out, mock) = say(
        planning(),
        script,
        "how quick was the contact moving overall",
        &[],
    )
    .await;
    let requests = mock.chat_requests();
    assert!(!requests.is_empty(), "{:?}", out.calls);
    let schema =
        requests[0].body["response_format"].to_string() + &requests[0].body["tools"].to_string();
    let listing: String = requests[0].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .filter(|c| c.starts_with("Tools (id"))
        .collect();
    assert!(!listing.is_empty(), "{schema}");
    assert!(!listing.contains("edits the plot"), "{listing}");
    assert!(!listing.contains("doppler"), "{listing}");
}

/// A search that opens nothing is answered from its own result in code, in words (never the
/// search's JSON, never the repeat guard's message).
#[tokio::test]
async fn a_search_that_opens_nothing_is_answered_in_words() {
    let mock = MockModel::sequence(vec![Reply::tool(SEARCH, json!({"text": "Bravo"}))])
        .await
        .unwrap();
    let h = harness("mock-model", false).await;
    let out = AgentLoop::new(client(&mock), h.debrief.clone(), planning())
        .run(
            &mut Conversation::new("search"),
            "find exercise bravo",
            &Fixed(Answer::Approve),
            |_| {},
        )
        .await;
    assert_eq!(mock.chat_requests().len(), 1);
    let text = out.final_text.unwrap();
    assert!(text.starts_with("No plots matched."), "{text}");
    assert!(
        !text.contains('{') && !text.contains("already called"),
        "{text}"
    );
}

const DAY1: &str = "stac://demo/alpha-day1/item.json";
const DAY2: &str = "stac://demo/alpha-day2/item.json";

async fn on_demo(open: &[&str], utterance: &str, script: Vec<Reply>) -> toolgate_agent::RunOutcome {
    let mock = MockModel::sequence(script).await.unwrap();
    let h = common::demo_harness("mock-model", open).await;
    AgentLoop::new(client(&mock), h.debrief.clone(), planning())
        .run(
            &mut Conversation::new("demo"),
            utterance,
            &Fixed(Answer::Approve),
            |_| {},
        )
        .await
}

/// A change that names another plot than the active one ("the contact on day 2" with Day 1 in
/// front of the analyst) is not made on the active plot: the panel says which plot it is about
/// and what to do (open it; switch to it when it is open already).
#[tokio::test]
async fn a_change_about_another_plot_is_not_made_on_the_active_one() {
    use toolgate_agent::Ask;
    let out = on_demo(&[DAY1], "colour the contact on day 2 red", Vec::new()).await;
    assert!(out.confirmations.is_empty(), "{:?}", out.calls);
    assert!(
        matches!(&out.ask, Some(Ask::OtherPlot { open: false, named, .. }) if named == "Exercise Alpha — Day 2"),
        "{:?}",
        out.ask
    );
    let text = out.final_text.unwrap();
    assert!(text.contains("Nothing was changed"), "{text}");
    // Day 2 open but Day 1 active: switch first.
    let out = on_demo(&[DAY2, DAY1], "colour the contact on day 2 red", Vec::new()).await;
    assert!(out.confirmations.is_empty());
    assert!(
        matches!(out.ask, Some(Ask::OtherPlot { open: true, .. })),
        "{:?}",
        out.ask
    );
    // The same day as the active plot, or no day at all, is the active plot.
    let out = on_demo(&[DAY1], "colour the contact on day 1 red", Vec::new()).await;
    assert_eq!(out.confirmations.len(), 1, "{:?}", out.ask);
    let out = on_demo(&[DAY1], "colour the contact red", Vec::new()).await;
    assert_eq!(out.confirmations.len(), 1, "{:?}", out.ask);
}

/// Two tracks of one navy for "the British warship" are asked about, never guessed; a typed
/// question reaches the analyst and nothing is applied.
#[tokio::test]
async fn an_ambiguous_reference_is_asked_about_with_its_candidates() {
    use toolgate_agent::Ask;
    let out = on_demo(&[DAY1], "paint the british warship yellow", Vec::new()).await;
    assert!(out.confirmations.is_empty());
    match &out.ask {
        Some(Ask::Ambiguous { candidates, .. }) => {
            assert!(
                candidates.contains(&"HMS Nelson".to_owned()),
                "{candidates:?}"
            );
            assert!(
                candidates.contains(&"HMS Collingwood".to_owned()),
                "{candidates:?}"
            );
        }
        other => panic!("{other:?}"),
    }
}

/// A request naming an analysis that does not exist is refused before any model is asked,
/// however it is phrased — never replaced by a real tool.
#[tokio::test]
async fn an_invented_analysis_in_any_phrasing_is_refused_before_the_model() {
    use toolgate_agent::Ask;
    for u in [
        "carry out a wake analysis of Nelson",
        "wake-analysis on the contact please",
        "Nelson: acoustic footprint calculator",
    ] {
        let out = on_demo(&[DAY1], u, Vec::new()).await;
        assert!(
            matches!(out.ask, Some(Ask::InventedTool { .. })),
            "{u}: {:?}",
            out.ask
        );
        assert!(out.calls.is_empty(), "{u}: {:?}", out.calls);
    }
}

/// A trim whose window the words do not state is asked about, never run with the model's
/// guess (fresh3: "trim nelsons trak 02-04Z pls" was offered for approval as 00:00:12–12:00);
/// a window the words do state runs.
#[tokio::test]
async fn a_time_window_the_words_do_not_state_is_asked_for_not_guessed() {
    use toolgate_agent::Ask;
    let guessed = || {
        vec![
            Reply::tool(
                RUN_TOOL,
                json!({"toolId": "trim-track", "params": {"start_time": "2026-03-01T00:00:12Z", "end_time": "2026-03-01T12:00:00Z"}, "featureNames": ["HMS Nelson"]}),
            ),
            Reply::text("Trimmed."),
        ]
    };
    let out = on_demo(
        &[DAY1],
        "trim nelson's track to the interesting bit",
        guessed(),
    )
    .await;
    assert!(out.confirmations.is_empty(), "{:?}", out.calls);
    assert!(
        matches!(&out.ask, Some(Ask::WhichWindow { tool }) if tool == "Trim Track"),
        "{:?}",
        out.ask
    );
    assert!(out.final_text.unwrap().contains("Nothing was changed"));
    let out = on_demo(&[DAY1], "trim nelsons trak 02-04Z pls", guessed()).await;
    assert_eq!(out.confirmations.len(), 1, "{:?}", out.ask);
    let run = out.calls.iter().find(|c| c.tool == RUN_TOOL).unwrap();
    assert_eq!(run.input["params"]["start_time"], "2026-03-01T02:00:00Z");
    assert_eq!(run.input["params"]["end_time"], "2026-03-01T04:00:00Z");
}

/// Two utterances of one conversation on the demo's Day 1 (no model: what the words settle).
async fn on_demo_twice(
    first: &str,
    second: &str,
    script: Vec<Reply>,
) -> (toolgate_agent::RunOutcome, toolgate_agent::RunOutcome) {
    let mock = MockModel::sequence(script).await.unwrap();
    let h = common::demo_harness("mock-model", &[DAY1]).await;
    let agent = AgentLoop::new(client(&mock), h.debrief.clone(), planning());
    let mut conversation = Conversation::new("demo");
    let a = agent
        .run(&mut conversation, first, &Fixed(Answer::Approve), |_| {})
        .await;
    let b = agent
        .run(&mut conversation, second, &Fixed(Answer::Approve), |_| {})
        .await;
    (a, b)
}

/// An answer to the panel's question completes the request it asked about, instead of being read
/// alone (the workbench: "trim nelson's track to the interesting bit" → "Which time window…?" →
/// "0200-0400Z" was answered "Which track?"); a request of its own is not joined to the last.
#[tokio::test]
async fn an_answer_to_the_panels_question_completes_the_request() {
    use toolgate_agent::Ask;
    // The model guesses a window each time it is asked; the words decide.
    let guess = || {
        Reply::tool(
            RUN_TOOL,
            json!({"toolId": "trim-track", "params": {"start_time": "2026-03-01T00:00:12Z", "end_time": "2026-03-01T12:00:00Z"}}),
        )
    };
    let (a, b) = on_demo_twice(
        "trim nelson's track to the interesting bit",
        "0200-0400Z",
        vec![guess(), guess(), Reply::text("Trimmed.")],
    )
    .await;
    assert!(
        matches!(a.ask, Some(Ask::WhichWindow { .. })),
        "{:?}",
        a.ask
    );
    assert_eq!(b.confirmations.len(), 1, "{:?}", b.ask);
    let run = b.calls.iter().find(|c| c.tool == RUN_TOOL).unwrap();
    assert_eq!(run.input["params"]["start_time"], "2026-03-01T02:00:00Z");
    assert_eq!(run.input["featureNames"], json!(["HMS Nelson"]));

    let (a, b) = on_demo_twice("colour the RN ship red", "Collingwood", Vec::new()).await;
    assert!(matches!(a.ask, Some(Ask::Ambiguous { .. })), "{:?}", a.ask);
    assert_eq!(b.confirmations.len(), 1, "{:?}", b.ask);
    let run = b.calls.iter().find(|c| c.tool == RUN_TOOL).unwrap();
    assert_eq!(run.input["featureNames"], json!(["HMS Collingwood"]));
    assert_eq!(run.input["params"]["color"], "red");

    // A new request after a question is its own.
    let (_, b) = on_demo_twice(
        "colour the RN ship red",
        "trim the contact to 0200-0400",
        Vec::new(),
    )
    .await;
    let run = b.calls.iter().find(|c| c.tool == RUN_TOOL).unwrap();
    assert_eq!(run.input["toolId"], "trim-track");
    assert_eq!(run.input["featureNames"], json!(["Contact"]));
}
