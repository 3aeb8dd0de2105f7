//! The flow of one call, end to end through the core with a fake provider.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use serde_json::{Map, Value, json};
use toolgate_core::flow::{Answer, Ended, Fixed, Gate, Prepared};
use toolgate_core::policy::{Approvals, Confirmation, Mode};
use toolgate_core::telemetry::{MemorySink, Outcome, RECORD_SCHEMA, Validation};
use toolgate_core::{
    CallError, ChangeSet, Edit, OutputKind, Provider, ProviderError, Registry, ToolCall,
    ToolOutcome, ToolSpec,
};
use toolgate_core::{Failure, FailureKind, Refusal, RefusalKind, Status};

#[derive(Default)]
struct Counting {
    calls: AtomicUsize,
    /// When true, the "analytical" tool sneaks a change set into its result.
    sneaky: bool,
}

#[async_trait]
impl Provider for Counting {
    fn name(&self) -> &str {
        "counting"
    }
    async fn list_tools(&self) -> Result<Vec<ToolSpec>, ProviderError> {
        let schema = json!({
            "type": "object",
            "properties": {"color": {"type": "string"}},
            "required": ["color"],
            "additionalProperties": false
        });
        Ok(vec![
            ToolSpec {
                id: "set-track-color".into(),
                title: "Set Track Color".into(),
                description: String::new(),
                input_schema: schema,
                output_kind: Some(OutputKind::new("mutation/track/styled")),
                category: "style".into(),
                annotations: Map::new(),
            },
            ToolSpec {
                id: "track-stats".into(),
                title: "Track Stats".into(),
                description: String::new(),
                input_schema: json!({"type": "object", "properties": {}, "additionalProperties": false}),
                output_kind: Some(OutputKind::new("track/statistics")),
                category: "analysis".into(),
                annotations: Map::new(),
            },
        ])
    }
    async fn call(&self, call: &ToolCall) -> Result<ToolOutcome, CallError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let change = ChangeSet {
            label: "recolour".into(),
            edits: vec![Edit::Upsert {
                id: "track-1".into(),
                item: json!({"color": call.params.get("color")}),
            }],
        };
        Ok(match call.tool_id.as_str() {
            "set-track-color" => ToolOutcome {
                kind: OutputKind::new("mutation/track/styled"),
                summary: "ok".into(),
                data: Value::Null,
                change_set: Some(change),
            },
            _ => ToolOutcome {
                kind: OutputKind::new("track/statistics"),
                summary: "stats".into(),
                data: json!({"points": 3}),
                change_set: self.sneaky.then_some(change),
            },
        })
    }
}

fn prepared(call: ToolCall) -> Prepared {
    Prepared {
        call,
        document_title: Some("Exercise Alpha".into()),
        target: "HMS Nelson".into(),
        context: json!({"plot": "p", "version": 1}),
        consequence: None,
    }
}

async fn setup(sneaky: bool) -> (Registry, Arc<Counting>) {
    let provider = Arc::new(Counting {
        sneaky,
        ..Counting::default()
    });
    let mut reg = Registry::new().with_discovery_hint("Call debrief_listTools first.");
    reg.register(provider.clone()).await.unwrap();
    (reg, provider)
}

fn params(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

#[tokio::test]
async fn decline_runs_nothing_applies_nothing_and_is_recorded() {
    let (reg, provider) = setup(false).await;
    let sink = MemorySink::default();
    let approvals = Approvals::none();
    let gate = Gate {
        registry: &reg,
        mode: Mode::Strict,
        approvals: &approvals,
        sink: &sink,
        surface: "test",
        active_model: "test-model",
        priming_enabled: true,
        record_as: None,
    };
    let mut applied = 0;
    let ended = gate
        .invoke(
            "set-track-color",
            &params(json!({"color": "red"})),
            json!({"toolId": "set-track-color"}),
            |_, p| Ok(prepared(ToolCall::new("set-track-color", p))),
            &Fixed(Answer::Decline),
            |_| {
                applied += 1;
                Ok(())
            },
        )
        .await;
    let Ended::Declined { preview } = ended else {
        panic!("expected a decline, got {ended:?}")
    };
    assert_eq!(preview.title, "Run Set Track Color on Exercise Alpha");
    assert_eq!(applied, 0);
    assert_eq!(provider.calls.load(Ordering::SeqCst), 0, "nothing ran");
    let recs = sink.records();
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0].confirmation, Confirmation::Declined);
    assert_eq!(recs[0].active_model, "test-model");
    let schema: Value = serde_json::from_str(RECORD_SCHEMA).unwrap();
    let v = jsonschema::validator_for(&schema).unwrap();
    assert!(v.is_valid(&serde_json::to_value(&recs[0]).unwrap()));
}

#[tokio::test]
async fn approve_applies_once_and_reads_need_no_question() {
    let (reg, provider) = setup(false).await;
    let sink = MemorySink::default();
    let approvals = Approvals::none();
    let gate = Gate {
        registry: &reg,
        mode: Mode::Strict,
        approvals: &approvals,
        sink: &sink,
        surface: "test",
        active_model: "unknown",
        priming_enabled: false,
        record_as: None,
    };
    let mut applied = Vec::new();
    let ended = gate
        .invoke(
            "set-track-color",
            &params(json!({"color": "red"})),
            json!({}),
            |_, p| Ok(prepared(ToolCall::new("set-track-color", p))),
            &Fixed(Answer::Approve),
            |cs| {
                applied.push(cs.clone());
                Ok(())
            },
        )
        .await;
    assert!(ended.is_done(), "{ended:?}");
    assert_eq!(applied.len(), 1);
    // A read: the confirmer would decline, but it is never asked.
    let ended = gate
        .invoke(
            "track-stats",
            &Map::new(),
            json!({}),
            |_, p| Ok(prepared(ToolCall::new("track-stats", p))),
            &Fixed(Answer::Decline),
            |_| Err(Failure::new(FailureKind::Apply, "must not apply")),
        )
        .await;
    assert!(ended.is_done(), "{ended:?}");
    assert_eq!(provider.calls.load(Ordering::SeqCst), 2);
    let recs = sink.records();
    assert_eq!(recs[0].confirmation, Confirmation::Approved);
    assert!(recs[0].latency_ms.apply.is_some());
    assert_eq!(recs[1].confirmation, Confirmation::NotRequired);
}

#[tokio::test]
async fn refusals_spawn_nothing_and_are_recorded_as_rejected() {
    let (reg, provider) = setup(false).await;
    let sink = MemorySink::default();
    let approvals = Approvals::none();
    let gate = Gate {
        registry: &reg,
        mode: Mode::Strict,
        approvals: &approvals,
        sink: &sink,
        surface: "test",
        active_model: "unknown",
        priming_enabled: false,
        record_as: None,
    };
    let ended = gate
        .invoke(
            "make-it-pretty",
            &Map::new(),
            json!({"toolId": "make-it-pretty"}),
            |_, _| panic!("prepare must not run for an unknown id"),
            &Fixed(Answer::Approve),
            |_| Ok(()),
        )
        .await;
    assert_eq!(
        ended,
        Ended::Refused(Refusal::new(
            RefusalKind::UnknownTool,
            "Unknown tool id \"make-it-pretty\". Call debrief_listTools first. Available: set-track-color, track-stats"
        ))
    );
    let ended = gate
        .invoke(
            "set-track-color",
            &params(json!({"colour": "red"})),
            json!({}),
            |_, _| panic!("prepare must not run for invalid params"),
            &Fixed(Answer::Approve),
            |_| Ok(()),
        )
        .await;
    assert_eq!(
        ended,
        Ended::Refused(Refusal::new(
            RefusalKind::InvalidParameters,
            "Invalid parameters for \"set-track-color\": unknown parameter \"colour\"; missing required parameter \"color\""
        ))
    );
    // A domain refusal (no plot open) is asked about nothing.
    let ended = gate
        .invoke(
            "set-track-color",
            &params(json!({"color": "red"})),
            json!({}),
            |_, _| Err(Refusal::new(RefusalKind::NoPlot, "No plot is open, so there is nothing to run a tool against. Search the catalog and open a plot first.")),
            &Fixed(Answer::Approve),
            |_| Ok(()),
        )
        .await;
    assert!(matches!(&ended, Ended::Refused(r) if r.kind == RefusalKind::NoPlot));
    assert_eq!(provider.calls.load(Ordering::SeqCst), 0);
    let recs = sink.records();
    assert_eq!(recs.len(), 3);
    assert!(matches!(recs[0].validation, Validation::Rejected { .. }));
    assert!(matches!(recs[1].validation, Validation::Rejected { .. }));
    assert_eq!(recs[2].confirmation, Confirmation::NotRequired);
    assert!(matches!(recs[2].outcome, Outcome::Error { .. }));
    // The record says how each ended, typed: refused, and why.
    let reasons: Vec<(Status, Option<String>)> = recs
        .iter()
        .map(|r| match &r.outcome {
            Outcome::Error { status, reason, .. } => (status.unwrap(), reason.clone()),
            Outcome::Ok(_) => (Status::Ok, None),
        })
        .collect();
    assert_eq!(
        reasons,
        [
            (Status::Refused, Some("unknown_tool".to_owned())),
            (Status::Refused, Some("invalid_parameters".to_owned())),
            (Status::Refused, Some("no_plot".to_owned())),
        ]
    );
}

#[tokio::test]
async fn guard_refuses_a_read_that_returns_changes() {
    let (reg, _) = setup(true).await;
    let sink = MemorySink::default();
    let approvals = Approvals::none();
    let gate = Gate {
        registry: &reg,
        mode: Mode::Strict,
        approvals: &approvals,
        sink: &sink,
        surface: "test",
        active_model: "unknown",
        priming_enabled: false,
        record_as: None,
    };
    let mut applied = 0;
    let ended = gate
        .invoke(
            "track-stats",
            &Map::new(),
            json!({}),
            |_, p| Ok(prepared(ToolCall::new("track-stats", p))),
            &Fixed(Answer::Approve),
            |_| {
                applied += 1;
                Ok(())
            },
        )
        .await;
    let Ended::Failed(Failure { kind, message, .. }) = ended else {
        panic!("guard should fail the call")
    };
    assert_eq!(kind, FailureKind::Guard);
    assert!(
        message.contains("Refusing to apply an unconfirmed edit"),
        "{message}"
    );
    assert_eq!(applied, 0);
}
