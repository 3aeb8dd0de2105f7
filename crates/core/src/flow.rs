//! The flow of one call (DESIGN.md, "the flow of one mutating call"), shared by every surface:
//! resolve → normalise + validate → prepare (domain: targets, subject) → check (provider:
//! values placed against the subject, a dry run's effect) → policy → confirm → run (or the dry
//! run's outcome) → guard → apply → telemetry. Domain crates supply the prepare and apply steps; surfaces supply the
//! confirmer.

use std::time::Instant;

use async_trait::async_trait;
use serde_json::{Map, Value};

use crate::digest::CallDigest;
use crate::outcome::{Failure, FailureKind, Refusal, RefusalKind, Status};
use crate::policy::{self, Approvals, Confirmation, Decision, Mode};
use crate::preview::{Preview, PreviewInput};
use crate::provider::{ChangeSet, CheckError, ToolCall, ToolOutcome};
use crate::registry::{Registry, RegistryError, ResolvedTool};
use crate::telemetry::{Outcome, TelemetryRecord, TelemetrySink, Validation};

/// A person's answer to a preview — or that nobody could be asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    Approve,
    Decline,
    /// Nobody was asked: this surface has no way to reach a person for this call (no terminal,
    /// a client without elicitation). The call is *refused* (`RefusalKind::Confirmation`),
    /// never reported as declined by the user.
    Unasked,
}

/// Asks a person (workbench dialog, MCP elicitation, terminal prompt) about one preview.
#[async_trait]
pub trait Confirmer: Send + Sync {
    async fn confirm(&self, preview: &Preview) -> Answer;

    /// Like [`Confirmer::confirm`], with the digest of the exact call (tool, validated params,
    /// document and version, targets). Surfaces that confirm out of band (an MCP confirmation
    /// token, an MRTR round trip) bind the answer to this digest, so an approval can never apply
    /// to a different call or to a document that changed since the preview.
    async fn confirm_call(&self, preview: &Preview, _digest: &CallDigest) -> Answer {
        self.confirm(preview).await
    }
}

/// Always answers the same (tests, `--yes`, non-interactive refusals).
#[derive(Debug, Clone, Copy)]
pub struct Fixed(pub Answer);

#[async_trait]
impl Confirmer for Fixed {
    async fn confirm(&self, _preview: &Preview) -> Answer {
        self.0
    }
}

/// Answers from a script in order, then `then` (decline, unless changed) once the script has run
/// out; records every preview it was shown. For replays, scripted runs and tests.
#[derive(Debug)]
pub struct Scripted {
    answers: std::sync::Mutex<std::collections::VecDeque<Answer>>,
    then: Answer,
    asked: std::sync::Mutex<Vec<Preview>>,
}

impl Scripted {
    pub fn new(answers: impl IntoIterator<Item = Answer>) -> Self {
        Self {
            answers: std::sync::Mutex::new(answers.into_iter().collect()),
            then: Answer::Decline,
            asked: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// The answer once the script has run out.
    #[must_use]
    pub fn then(mut self, answer: Answer) -> Self {
        self.then = answer;
        self
    }

    /// Every preview shown so far, in order.
    pub fn asked(&self) -> Vec<Preview> {
        self.asked
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

#[async_trait]
impl Confirmer for Scripted {
    async fn confirm(&self, preview: &Preview) -> Answer {
        self.asked
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(preview.clone());
        self.answers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .pop_front()
            .unwrap_or(self.then)
    }
}

/// What the domain resolved before anything is asked or run.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The call as the provider will receive it (validated params, resolved subject).
    pub call: ToolCall,
    /// Title of the document the call changes (for the preview).
    pub document_title: Option<String>,
    /// The targets by name (for the preview).
    pub target: String,
    /// What binds an approval to this exact call besides id and params (document id and
    /// version, target ids).
    pub context: Value,
    /// Consequence sentence for the preview; `None` uses the default.
    pub consequence: Option<String>,
}

/// How one invocation ended, for the surface to turn into its reply.
#[derive(Debug, Clone, PartialEq)]
pub enum Ended {
    /// A read ran, or a mutation ran and was applied.
    Done {
        outcome: ToolOutcome,
        confirmation: Confirmation,
    },
    /// Stopped before running: unknown id, invalid params, unresolvable targets, denied.
    Refused(Refusal),
    /// A person declined; nothing ran.
    Declined { preview: Preview },
    /// The tool ran and failed, or its result was refused by the guard or could not be applied.
    Failed(Failure),
}

impl Ended {
    pub fn is_done(&self) -> bool {
        matches!(self, Ended::Done { .. })
    }

    pub fn status(&self) -> Status {
        match self {
            Ended::Done { .. } => Status::Ok,
            Ended::Refused(_) => Status::Refused,
            Ended::Declined { .. } => Status::Declined,
            Ended::Failed(_) => Status::Failed,
        }
    }

    /// The telemetry outcome of this ending: `ok`, or the message with its status and kind.
    pub fn telemetry_outcome(&self) -> Outcome {
        match self {
            Ended::Done { .. } => Outcome::ok(),
            Ended::Refused(r) => Outcome::typed(Status::Refused, Some(r.kind.as_str()), &r.message),
            Ended::Failed(f) => Outcome::typed(Status::Failed, Some(f.kind.as_str()), &f.message),
            Ended::Declined { .. } => {
                Outcome::typed(Status::Declined, None, "declined by the user")
            }
        }
    }
}

/// One invocation's fixed settings.
pub struct Gate<'a> {
    pub registry: &'a Registry,
    pub mode: Mode,
    pub approvals: &'a Approvals,
    pub sink: &'a dyn TelemetrySink,
    pub surface: &'a str,
    pub active_model: &'a str,
    pub priming_enabled: bool,
    /// The name telemetry records the call under when it differs from the tool id (e.g. the
    /// agent tool `debrief_runTool` that ran `set-track-color`).
    pub record_as: Option<&'a str>,
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1000.0
}

impl Gate<'_> {
    /// Run one call through the whole flow. `prepare` resolves the domain side (plot, targets)
    /// and may refuse with a corrective message; `apply` hands an approved change set to the
    /// session (the only place a document changes). Exactly one telemetry record is written.
    pub async fn invoke<P, A>(
        &self,
        tool_id: &str,
        params: &Map<String, Value>,
        input: Value,
        prepare: P,
        confirmer: &dyn Confirmer,
        apply: A,
    ) -> Ended
    where
        P: FnOnce(&ResolvedTool<'_>, Map<String, Value>) -> Result<Prepared, Refusal>,
        A: FnOnce(&ChangeSet) -> Result<(), Failure>,
    {
        let started = Instant::now();
        let mut rec = TelemetryRecord::now(self.surface, self.record_as.unwrap_or(tool_id), input);
        rec.active_model = self.active_model.to_owned();
        rec.priming_enabled = self.priming_enabled;
        let ended = self
            .run(tool_id, params, prepare, confirmer, apply, &mut rec)
            .await;
        rec.latency_ms.total = ms(started);
        rec.outcome = ended.telemetry_outcome();
        self.sink.record(&rec);
        ended
    }

    async fn run<P, A>(
        &self,
        tool_id: &str,
        params: &Map<String, Value>,
        prepare: P,
        confirmer: &dyn Confirmer,
        apply: A,
        rec: &mut TelemetryRecord,
    ) -> Ended
    where
        P: FnOnce(&ResolvedTool<'_>, Map<String, Value>) -> Result<Prepared, Refusal>,
        A: FnOnce(&ChangeSet) -> Result<(), Failure>,
    {
        // 1. resolve
        let t = Instant::now();
        let tool = match self.registry.resolve(tool_id) {
            Ok(tool) => tool,
            Err(e) => {
                let message = e.to_string();
                rec.validation = Validation::rejected(&message);
                return Ended::Refused(Refusal::new(RefusalKind::UnknownTool, message));
            }
        };
        rec.latency_ms.resolve = Some(ms(t));
        // 2. validate, after the provider has read what was written for a person (units, time
        //    formats) into the form the schema takes
        let t = Instant::now();
        let normalised = match tool.normalise(params) {
            Ok(n) => n,
            Err(e) => {
                let message = e.to_string();
                rec.validation = Validation::rejected(&message);
                return Ended::Refused(Refusal::new(RefusalKind::InvalidParameters, message));
            }
        };
        let mut notes = normalised.notes;
        let params = match tool.validate(&normalised.params) {
            Ok(p) => p,
            Err(e) => {
                let message = e.to_string();
                rec.validation = Validation::rejected(&message);
                return Ended::Refused(Refusal::new(RefusalKind::InvalidParameters, message));
            }
        };
        rec.latency_ms.validate = Some(ms(t));
        // 3. domain preparation: plot, targets, subject
        let mut prepared = match prepare(&tool, params) {
            Ok(p) => p,
            Err(refusal) => return Ended::Refused(refusal),
        };
        // 4. the provider's check: values placed against the subject (a time of day on the
        //    plot's day), and for a mutation a dry run whose change set says what it will do —
        //    a call that would fail stops here, before anyone is asked
        let t = Instant::now();
        let dry_run = tool.effect.is_mutating() && self.mode != Mode::ReadOnly;
        let checked = match tool.check(&prepared.call, dry_run).await {
            Ok(c) => c,
            Err(CheckError::Params(problems)) => {
                let message = RegistryError::InvalidParams {
                    id: tool.spec.id.clone(),
                    problems,
                }
                .to_string();
                rec.validation = Validation::rejected(&message);
                return Ended::Refused(Refusal::new(RefusalKind::InvalidParameters, message));
            }
            Err(CheckError::Call(e)) => {
                rec.latency_ms.run = Some(ms(t));
                return Ended::Failed(Failure::from_call(e));
            }
        };
        if let Some(p) = checked.params {
            prepared.call.params = p;
        }
        notes.extend(checked.notes);
        // In the order the parameters are listed, whichever step read them.
        let order = |note: &String| {
            prepared
                .call
                .params
                .keys()
                .position(|k| {
                    note.strip_prefix(k.as_str())
                        .is_some_and(|rest| rest.starts_with([':', '.', '[']))
                })
                .unwrap_or(usize::MAX)
        };
        notes.sort_by_key(order);
        let effect = checked.effect;
        let dry_run = checked.outcome;
        if dry_run.is_some() {
            rec.latency_ms.run = Some(ms(t));
        }
        // 5. policy
        let t = Instant::now();
        let digest = CallDigest::of(tool_id, &prepared.call.params, &prepared.context);
        let decision = policy::decide(
            tool_id,
            tool.effect,
            &digest,
            self.mode,
            self.approvals,
            || {
                Preview::build(&PreviewInput {
                    tool_title: &tool.spec.title,
                    plot_title: prepared.document_title.as_deref(),
                    target: &prepared.target,
                    params: &prepared.call.params,
                    consequence: prepared.consequence.as_deref(),
                    notes: &notes,
                    effect: &effect,
                })
            },
        );
        rec.latency_ms.policy = Some(ms(t));
        let confirmation = match decision {
            Decision::Allow => Confirmation::NotRequired,
            Decision::PreApproved { .. } => Confirmation::PreApproved,
            Decision::Deny { reason } => {
                return Ended::Refused(Refusal::new(RefusalKind::PolicyDenied, reason));
            }
            Decision::Confirm(preview) => {
                let t = Instant::now();
                let answer = confirmer.confirm_call(&preview, &digest).await;
                rec.latency_ms.confirm = Some(ms(t));
                match answer {
                    Answer::Approve => Confirmation::Approved,
                    Answer::Decline => {
                        rec.confirmation = Confirmation::Declined;
                        return Ended::Declined { preview };
                    }
                    Answer::Unasked => {
                        return Ended::Refused(Refusal::new(
                            RefusalKind::Confirmation,
                            format!(
                                "\"{}\" needs a person's confirmation and nobody could be asked here; nothing ran. Run it where the user can confirm it (inside run_code, which pauses for a confirmation, or from a terminal), or have the user pre-approve it",
                                tool.spec.title
                            ),
                        ));
                    }
                }
            }
        };
        rec.confirmation = confirmation;
        // 6. run — or take the dry run's outcome, exactly what the preview described
        let outcome = match dry_run {
            Some(outcome) => outcome,
            None => {
                let t = Instant::now();
                let result = tool.call(&prepared.call).await;
                rec.latency_ms.run = Some(ms(t));
                match result {
                    Ok(o) => o,
                    Err(e) => return Ended::Failed(Failure::from_call(e)),
                }
            }
        };
        // 7. guard
        if let Err(e) = policy::guard(tool_id, confirmation, &outcome) {
            return Ended::Failed(Failure::new(FailureKind::Guard, e.to_string()));
        }
        // 8. apply
        if let Some(cs) = outcome.change_set.as_ref().filter(|c| !c.is_empty()) {
            let t = Instant::now();
            if let Err(failure) = apply(cs) {
                return Ended::Failed(failure);
            }
            rec.latency_ms.apply = Some(ms(t));
        }
        Ended::Done {
            outcome,
            confirmation,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn preview(n: u32) -> Preview {
        Preview {
            title: format!("Run tool {n}"),
            body: String::new(),
        }
    }

    #[tokio::test]
    async fn scripted_answers_in_order_then_falls_back_and_records_every_preview() {
        let s = Scripted::new([Answer::Approve, Answer::Decline]);
        assert_eq!(s.confirm(&preview(1)).await, Answer::Approve);
        assert_eq!(s.confirm(&preview(2)).await, Answer::Decline);
        assert_eq!(
            s.confirm(&preview(3)).await,
            Answer::Decline,
            "declines by default"
        );
        let titles: Vec<String> = s.asked().into_iter().map(|p| p.title).collect();
        assert_eq!(titles, ["Run tool 1", "Run tool 2", "Run tool 3"]);
        let eager = Scripted::new([Answer::Decline]).then(Answer::Approve);
        assert_eq!(eager.confirm(&preview(1)).await, Answer::Decline);
        assert_eq!(eager.confirm(&preview(2)).await, Answer::Approve);
    }
}
