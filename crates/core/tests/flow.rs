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

/// A provider whose tool is a pure function of its parameters: it reads `minutes` written with
/// units before validation, refuses a `when` it cannot place, and dry-runs the edit so the
/// preview can say what it will do (issue 32 item 1).
#[derive(Default)]
struct Checking {
    calls: AtomicUsize,
    checks: AtomicUsize,
}

#[async_trait]
impl Provider for Checking {
    fn name(&self) -> &str {
        "checking"
    }
    async fn list_tools(&self) -> Result<Vec<ToolSpec>, ProviderError> {
        Ok(vec![ToolSpec {
            id: "trim".into(),
            title: "Trim".into(),
            description: String::new(),
            input_schema: json!({"type": "object", "additionalProperties": false,
                "properties": {"minutes": {"type": "number"}, "when": {"type": "string"}}}),
            output_kind: Some(OutputKind::new("mutation/track/trimmed")),
            category: "track".into(),
            annotations: Map::new(),
        }])
    }
    fn normalise(
        &self,
        _tool_id: &str,
        params: &Map<String, Value>,
    ) -> Result<toolgate_core::provider::Normalised, Vec<String>> {
        let mut out = params.clone();
        let mut notes = Vec::new();
        if let Some(Value::String(s)) = params.get("minutes") {
            let Some(h) = s.strip_suffix(" h").and_then(|n| n.parse::<f64>().ok()) else {
                return Err(vec![format!(
                    "parameter \"minutes\" cannot be read: \"{s}\""
                )]);
            };
            out.insert("minutes".into(), json!(h * 60.0));
            notes.push(format!("minutes: \"{s}\" read as {}", h * 60.0));
        }
        Ok(toolgate_core::provider::Normalised { params: out, notes })
    }
    async fn check(
        &self,
        call: &ToolCall,
        dry_run: bool,
    ) -> Result<toolgate_core::provider::Checked, toolgate_core::provider::CheckError> {
        use toolgate_core::provider::{CheckError, Checked};
        self.checks.fetch_add(1, Ordering::SeqCst);
        let mut params = call.params.clone();
        let mut notes = Vec::new();
        match params.get("when").and_then(Value::as_str) {
            Some("yesterday") => {
                return Err(CheckError::Params(vec![
                    "parameter \"when\" must be a time; got \"yesterday\"".into(),
                ]));
            }
            Some("late") => {
                return Err(CheckError::Call(CallError::invalid("nothing is that late")));
            }
            Some("05:00") => {
                params.insert("when".into(), json!("2026-03-01T05:00:00Z"));
                notes.push("when: \"05:00\" read as 2026-03-01T05:00:00Z".to_owned());
            }
            _ => {}
        }
        let outcome = dry_run.then(|| ToolOutcome {
            kind: OutputKind::new("mutation/track/trimmed"),
            summary: "trimmed".into(),
            data: Value::Null,
            change_set: Some(ChangeSet {
                label: "trim".into(),
                edits: vec![Edit::Upsert {
                    id: "track-1".into(),
                    item: json!({"when": params.get("when")}),
                }],
            }),
        });
        Ok(Checked {
            params: Some(params),
            notes,
            effect: vec!["remove 240 of 361 positions of HMS Nelson (keep 121)".into()],
            outcome,
        })
    }
    async fn call(&self, _call: &ToolCall) -> Result<ToolOutcome, CallError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Err(CallError::failed(
            "the dry run's outcome should have been applied",
        ))
    }
}

#[tokio::test]
async fn parameters_are_resolved_and_the_effect_counted_before_anyone_is_asked() {
    let provider = Arc::new(Checking::default());
    let mut reg = Registry::new();
    reg.register(provider.clone()).await.unwrap();
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
    let run = |p: Value| {
        let gate = &gate;
        async move {
            let asked = toolgate_core::flow::Scripted::new([Answer::Approve]);
            let mut applied = Vec::new();
            let ended = gate
                .invoke(
                    "trim",
                    &params(p),
                    json!({}),
                    |_, p| Ok(prepared(ToolCall::new("trim", p))),
                    &asked,
                    |cs| {
                        applied.push(cs.clone());
                        Ok(())
                    },
                )
                .await;
            (ended, asked.asked(), applied)
        }
    };

    // A time nobody can place is refused before the question, as an invalid parameter.
    let (ended, asked, applied) = run(json!({"when": "yesterday"})).await;
    let Ended::Refused(r) = ended else {
        panic!("{ended:?}")
    };
    assert_eq!(r.kind, RefusalKind::InvalidParameters);
    assert!(r.message.contains("\"yesterday\""), "{}", r.message);
    assert!(asked.is_empty() && applied.is_empty());

    // A value written with units the schema cannot take is read before validation.
    let (ended, asked, _) = run(json!({"minutes": "two"})).await;
    let Ended::Refused(r) = ended else {
        panic!("{ended:?}")
    };
    assert_eq!(r.kind, RefusalKind::InvalidParameters);
    assert!(r.message.contains("cannot be read"), "{}", r.message);
    assert!(asked.is_empty());

    // A call whose dry run fails is not put to a person either.
    let (ended, asked, applied) = run(json!({"when": "late"})).await;
    let Ended::Failed(f) = ended else {
        panic!("{ended:?}")
    };
    assert_eq!(f.kind, FailureKind::Tool);
    assert!(f.message.contains("nothing is that late"), "{}", f.message);
    assert!(asked.is_empty() && applied.is_empty());

    // A sloppy time is corrected; the preview shows the corrected values, what was read how,
    // and the effect in numbers; the approved change is the dry run's, not a second run.
    let (ended, asked, applied) = run(json!({"minutes": "1.5 h", "when": "05:00"})).await;
    assert!(ended.is_done(), "{ended:?}");
    assert_eq!(asked.len(), 1);
    let body = &asked[0].body;
    assert!(body.contains("- when: 2026-03-01T05:00:00Z\n"), "{body}");
    assert!(body.contains("- minutes: 90"), "{body}");
    assert!(
        body.contains("\"05:00\" read as 2026-03-01T05:00:00Z"),
        "{body}"
    );
    assert!(body.contains("\"1.5 h\" read as 90"), "{body}");
    assert!(
        body.find("- Note: minutes:") < body.find("- Note: when:"),
        "notes in the parameters' order: {body}"
    );
    assert!(
        body.contains("- Effect: remove 240 of 361 positions of HMS Nelson (keep 121)\n"),
        "{body}"
    );
    assert_eq!(applied.len(), 1);
    assert_eq!(
        applied[0].edits[0],
        Edit::Upsert {
            id: "track-1".into(),
            item: json!({"when": "2026-03-01T05:00:00Z"}),
        }
    );
    assert_eq!(provider.calls.load(Ordering::SeqCst), 0, "no second run");

    // The approval is bound to the resolved call: the digest a confirmer is given is the
    // digest of the corrected parameters.
    struct Digests(std::sync::Mutex<Vec<toolgate_core::CallDigest>>);
    #[async_trait]
    impl toolgate_core::Confirmer for Digests {
        async fn confirm(&self, _p: &toolgate_core::Preview) -> Answer {
            Answer::Decline
        }
        async fn confirm_call(
            &self,
            _p: &toolgate_core::Preview,
            d: &toolgate_core::CallDigest,
        ) -> Answer {
            self.0.lock().unwrap().push(d.clone());
            Answer::Decline
        }
    }
    let digests = Digests(std::sync::Mutex::new(Vec::new()));
    let ended = gate
        .invoke(
            "trim",
            &params(json!({"minutes": "1.5 h", "when": "05:00"})),
            json!({}),
            |_, p| Ok(prepared(ToolCall::new("trim", p))),
            &digests,
            |_| Ok(()),
        )
        .await;
    assert!(matches!(ended, Ended::Declined { .. }), "{ended:?}");
    let resolved = toolgate_core::CallDigest::of(
        "trim",
        &params(json!({"minutes": 90.0, "when": "2026-03-01T05:00:00Z"})),
        &json!({"plot": "p", "version": 1}),
    );
    assert_eq!(*digests.0.lock().unwrap(), vec![resolved]);
}
