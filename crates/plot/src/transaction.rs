//! One confirmation per CodeAct program: the plot tools a program calls edit a *scratch copy* of
//! the plot (so later reads in the same program see the edits); when the program ends, the net
//! change becomes one [`Commit`], which goes through the gate like any single edit
//! ([`Commit::invoke`]: policy, a confirmation bound to the digest of plot id + base version +
//! the net change, the guard, `Session::apply` at the base version, one telemetry record) — or
//! is dropped.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use serde_json::{Map, Value, json};
use toolgate_core::flow::{Confirmer, Ended, Gate, Prepared};
use toolgate_core::policy::{Approvals, Mode};
use toolgate_core::telemetry::TelemetrySink;
use toolgate_core::{
    CallDigest, CallError, ChangeSet, CheckError, Checked, Edit, Failure, FailureKind, Normalised,
    OutputKind, Preview, PreviewInput, Provider, ProviderError, Refusal, Registry, Status,
    ToolCall, ToolOutcome, ToolSpec,
};

use crate::model;
use crate::run::{self, TargetKeys, TargetRequest};
use crate::session::{OpenPlot, Session, SessionError};
use crate::tools;
use crate::tools::units::Units;

/// The provider name of the scratch plot tools; sandbox hosts pre-approve it (its edits only
/// touch the scratch copy; the commit is what a person confirms).
pub const SCRATCH_PROVIDER: &str = "plot-scratch";

/// The id of the synthetic tool a program's commit runs as (telemetry records it under this
/// name; its effect is mutating).
pub const COMMIT_TOOL: &str = "codeact-commit";

/// Its output kind (not a known read kind, so mutating).
const COMMIT_KIND: &str = "plot/codeact-commit";

const COMMIT_TITLE: &str = "CodeAct program";

const COMMIT_CONSEQUENCE: &str = "All of the program's edits are applied to the open plot as one change and left unsaved (undo or revert to discard, save to keep).";

/// How a program's commit ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Committed {
    /// The program changed nothing.
    NoChanges,
    /// Approved and applied as one undo step.
    Applied { features: usize, preview: Preview },
    /// Declined: nothing was applied.
    Declined { preview: Preview },
    /// Refused before anyone was asked (policy): nothing was applied.
    Refused(Refusal),
    /// Approved but not applied (the plot changed since the program started — `Conflict` —, or
    /// the guard refused): nothing was applied.
    Failed(Failure),
}

impl Committed {
    /// Whether the plot is as the program left it (applied, or nothing to apply).
    pub fn is_ok(&self) -> bool {
        matches!(self, Committed::NoChanges | Committed::Applied { .. })
    }

    /// The commit's status as every surface maps it (exit code, `isError`).
    pub fn status(&self) -> Status {
        match self {
            Committed::NoChanges | Committed::Applied { .. } => Status::Ok,
            Committed::Declined { .. } => Status::Declined,
            Committed::Refused(_) => Status::Refused,
            Committed::Failed(_) => Status::Failed,
        }
    }

    /// The word the CodeAct envelope carries under `plot.status`.
    pub fn status_word(&self) -> &'static str {
        match self {
            Committed::NoChanges => "unchanged",
            Committed::Applied { .. } => "applied",
            Committed::Declined { .. } => "declined",
            Committed::Refused(_) => "refused",
            Committed::Failed(_) => "failed",
        }
    }

    /// One sentence for the model and the person.
    pub fn message(&self, plot_id: &str) -> String {
        match self {
            Committed::NoChanges => format!("The program changed nothing on {plot_id}."),
            Committed::Applied { features, .. } => format!(
                "Applied the program's edits to {features} feature(s) of {plot_id} as one undo step. The plot is now dirty (unsaved) — undo/revert to discard, or save to keep."
            ),
            Committed::Declined { .. } => "Declined: the program's plot edits were dropped; nothing was applied. Do not retry unless the user asks again.".to_owned(),
            Committed::Refused(r) => {
                format!("The program's plot edits were not applied: {}", r.message)
            }
            Committed::Failed(f) => {
                format!("The program's plot edits were not applied: {}", f.message)
            }
        }
    }

    /// `{"status", "reason"?, "plot", "message"}`: what the CodeAct envelope carries under `plot`.
    pub fn report(&self, plot_id: &str) -> Value {
        let mut v = json!({"status": self.status_word(), "plot": plot_id, "message": self.message(plot_id)});
        let reason = match self {
            Committed::Refused(r) => Some(r.kind.as_str()),
            Committed::Failed(f) => Some(f.kind.as_str()),
            _ => None,
        };
        if let (Some(reason), Some(obj)) = (reason, v.as_object_mut()) {
            obj.insert("reason".to_owned(), Value::String(reason.to_owned()));
        }
        v
    }
}

/// Put a commit's report (`{"status", "plot", "message", …}`) under `plot` in a CodeAct
/// envelope (JSON). `success` becomes false unless the edits were applied, there were none, or
/// they wait for a confirmation: a declined plan never reads as done.
pub fn attach_report(envelope: &mut Value, report: Value) {
    let ok = matches!(
        report.get("status").and_then(Value::as_str),
        Some("applied" | "unchanged" | "confirmation_needed")
    );
    if let Some(obj) = envelope.as_object_mut() {
        if !ok {
            obj.insert("success".to_owned(), Value::Bool(false));
        }
        obj.insert("plot".to_owned(), report);
    }
}

/// One edit a program made on the scratch copy, for the preview.
#[derive(Debug, Clone)]
struct Note {
    tool_id: String,
    text: String,
}

pub struct PlotTransaction {
    session: Arc<Mutex<Session>>,
    plot_id: String,
    base_version: u64,
    original: Vec<Value>,
    scratch: Mutex<OpenPlot>,
    notes: Mutex<Vec<Note>>,
    /// The unit setting, filled into a plot function's call that leaves its unit out.
    units: Mutex<Units>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl PlotTransaction {
    /// Start a transaction on an open plot.
    pub fn begin(session: Arc<Mutex<Session>>, plot_id: &str) -> Result<Arc<Self>, SessionError> {
        let plot = {
            let mut s = lock(&session);
            s.sync()?;
            s.plot(plot_id)?.clone()
        };
        Ok(Arc::new(Self {
            plot_id: plot_id.to_owned(),
            base_version: plot.doc.version(),
            original: plot.doc.features().to_vec(),
            scratch: Mutex::new(plot),
            notes: Mutex::new(Vec::new()),
            units: Mutex::new(Units::default()),
            session,
        }))
    }

    /// The unit setting the program's plot functions use where a call leaves its unit out
    /// (nautical miles and knots unless set; a surface passes its own, e.g.
    /// [`Debrief::units`](crate::debrief::Debrief::units)).
    pub fn set_units(&self, units: Units) {
        *lock(&self.units) = units;
    }

    /// The plot this transaction edits a copy of.
    pub fn plot_id(&self) -> &str {
        &self.plot_id
    }

    /// The session the commit applies to.
    pub fn session(&self) -> &Arc<Mutex<Session>> {
        &self.session
    }

    /// The plot tools as a provider over the scratch copy.
    pub fn provider(self: &Arc<Self>) -> ScratchTools {
        ScratchTools {
            tx: Arc::clone(self),
        }
    }

    /// Apply one tool's change set to the scratch copy (the sandbox host's applier).
    pub fn apply_to_scratch(&self, cs: &ChangeSet) -> Result<(), toolgate_core::Failure> {
        lock(&self.scratch)
            .doc
            .apply(cs)
            .map(|_| ())
            .map_err(SessionError::into_apply_failure)
    }

    /// The net change of the program: every feature whose final state differs from the start.
    pub fn net_change(&self) -> ChangeSet {
        let scratch = lock(&self.scratch);
        let mut edits = Vec::new();
        for f in scratch.doc.features() {
            let id = model::feature_id(f);
            let before = self.original.iter().find(|o| model::feature_id(o) == id);
            if before != Some(f) {
                edits.push(Edit::Upsert {
                    id,
                    item: f.clone(),
                });
            }
        }
        for o in &self.original {
            let id = model::feature_id(o);
            if scratch.doc.feature(&id).is_none() {
                edits.push(Edit::Remove { id });
            }
        }
        let notes = lock(&self.notes);
        let calls: Vec<&str> = notes.iter().map(|n| n.tool_id.as_str()).collect();
        ChangeSet {
            label: format!("CodeAct program: {}", calls.join(", ")),
            edits,
        }
    }

    /// The program's net change as one commit, or `None` when it changed nothing.
    pub fn finish(&self) -> Option<Commit> {
        let change = self.net_change();
        if change.is_empty() {
            return None;
        }
        let scratch = lock(&self.scratch);
        let features = change
            .touched_ids()
            .iter()
            .map(|id| {
                scratch
                    .doc
                    .feature(id)
                    .or_else(|| self.original.iter().find(|o| model::feature_id(o) == *id))
                    .map_or_else(|| (*id).to_owned(), model::display_name)
            })
            .collect();
        let effect = tools::params::effect(&self.original, &change);
        Some(Commit {
            plot_id: self.plot_id.clone(),
            plot_title: scratch.title.clone(),
            base_version: self.base_version,
            edits: lock(&self.notes).iter().map(|n| n.text.clone()).collect(),
            features,
            change,
            effect,
        })
    }
}

/// Where a commit's gate call is recorded and under which policy mode.
pub struct CommitGate<'a> {
    pub sink: &'a dyn TelemetrySink,
    pub surface: &'a str,
    pub active_model: &'a str,
    pub mode: Mode,
}

/// A program's net change on one plot, ready to go through the gate as one call of the
/// synthetic [`COMMIT_TOOL`]. Plain data: a surface that confirms out of band (an MCP token, an
/// MRTR round) keeps it and applies exactly what was previewed, without re-running the program.
#[derive(Debug, Clone, PartialEq)]
pub struct Commit {
    pub plot_id: String,
    pub plot_title: String,
    /// The plot version the program started from; the commit applies only at this version.
    pub base_version: u64,
    /// Every edit the program made, in order ("Set Track Color (color: red) on HMS Nelson").
    pub edits: Vec<String>,
    /// The display names of the features the net change touches.
    pub features: Vec<String>,
    pub change: ChangeSet,
    /// What the net change does in numbers (`remove 240 of 361 positions of HMS Nelson (keep
    /// 121)`), counted against the plot as the program found it.
    pub effect: Vec<String>,
}

impl Commit {
    /// The commit tool's parameters: one line per edit of the program (the preview shows them).
    fn params(&self) -> Map<String, Value> {
        self.edits
            .iter()
            .enumerate()
            .map(|(i, e)| (format!("edit {}", i + 1), Value::String(e.clone())))
            .collect()
    }

    /// What binds an approval to this commit: the plot, the version it starts from, the change.
    fn context(&self) -> Value {
        json!({
            "plot": self.plot_id,
            "version": self.base_version,
            "change": serde_json::to_value(&self.change).unwrap_or(Value::Null),
        })
    }

    fn target(&self) -> String {
        self.features.join(", ")
    }

    /// The digest an approval of this commit is bound to (the gate computes the same).
    pub fn digest(&self) -> CallDigest {
        CallDigest::of(COMMIT_TOOL, &self.params(), &self.context())
    }

    /// The preview a person sees: every feature the change touches and every edit.
    pub fn preview(&self) -> Preview {
        Preview::build(&PreviewInput {
            tool_title: COMMIT_TITLE,
            plot_title: Some(&self.plot_title),
            target: &self.target(),
            params: &self.params(),
            consequence: Some(COMMIT_CONSEQUENCE),
            notes: &[],
            effect: &self.effect,
        })
    }

    /// The commit as one gate call: policy, confirmation with the digest, guard, apply through
    /// `session` at the base version (a concurrent edit is refused), one telemetry record.
    pub async fn invoke(
        &self,
        session: &Mutex<Session>,
        gate: &CommitGate<'_>,
        confirmer: &dyn Confirmer,
    ) -> Committed {
        let mut registry = Registry::new();
        let tool = Arc::new(CommitTool {
            change: self.change.clone(),
            effect: self.effect.clone(),
        });
        if let Err(e) = registry.register_specs(tool, vec![commit_spec()]) {
            return Committed::Failed(Failure::new(
                FailureKind::Apply,
                format!("internal: the commit tool could not be registered: {e}"),
            ));
        }
        let approvals = Approvals::none();
        let g = Gate {
            registry: &registry,
            mode: gate.mode,
            approvals: &approvals,
            sink: gate.sink,
            surface: gate.surface,
            active_model: gate.active_model,
            priming_enabled: false,
            record_as: None,
        };
        let params = self.params();
        let input = json!({
            "plot": self.plot_id,
            "baseVersion": self.base_version,
            "edits": self.edits,
            "features": self.features,
        });
        let ended = g
            .invoke(
                COMMIT_TOOL,
                &params,
                input,
                |tool, params| {
                    Ok(Prepared {
                        call: ToolCall::new(tool.spec.id.clone(), params),
                        document_title: Some(self.plot_title.clone()),
                        target: self.target(),
                        context: self.context(),
                        consequence: Some(COMMIT_CONSEQUENCE.to_owned()),
                    })
                },
                confirmer,
                |cs| {
                    lock(session)
                        .apply(&self.plot_id, cs, self.base_version)
                        .map(|_| ())
                        .map_err(SessionError::into_apply_failure)
                },
            )
            .await;
        match ended {
            Ended::Done { .. } => Committed::Applied {
                features: self.change.touched_ids().len(),
                preview: self.preview(),
            },
            Ended::Declined { preview } => Committed::Declined { preview },
            Ended::Refused(r) => Committed::Refused(r),
            Ended::Failed(f) => Committed::Failed(f),
        }
    }
}

fn commit_spec() -> ToolSpec {
    ToolSpec {
        id: COMMIT_TOOL.to_owned(),
        title: COMMIT_TITLE.to_owned(),
        description: "Apply a CodeAct program's net plot change as one undo step.".to_owned(),
        input_schema: json!({"type": "object", "additionalProperties": {"type": "string"}}),
        output_kind: Some(OutputKind::new(COMMIT_KIND)),
        category: "codeact".to_owned(),
        annotations: Map::new(),
    }
}

/// The synthetic commit tool: its result is the program's net change.
struct CommitTool {
    change: ChangeSet,
    effect: Vec<String>,
}

#[async_trait]
impl Provider for CommitTool {
    fn name(&self) -> &str {
        "codeact"
    }

    fn builtin_specs(&self) -> bool {
        true
    }

    async fn list_tools(&self) -> Result<Vec<ToolSpec>, ProviderError> {
        Ok(vec![commit_spec()])
    }

    /// The net change is known before anyone is asked: its effect goes into the question.
    async fn check(&self, _call: &ToolCall, _dry_run: bool) -> Result<Checked, CheckError> {
        Ok(Checked {
            effect: self.effect.clone(),
            ..Checked::default()
        })
    }

    async fn call(&self, _call: &ToolCall) -> Result<ToolOutcome, CallError> {
        Ok(ToolOutcome {
            kind: OutputKind::new(COMMIT_KIND),
            summary: self.change.label.clone(),
            data: Value::Null,
            change_set: Some(self.change.clone()),
        })
    }
}

/// The ids of [`scratch_specs`], without building a spec (a program with no plot open names
/// them only to be told why they are unavailable).
pub fn scratch_ids() -> Vec<&'static str> {
    tools::ids()
}

/// The plot tools as a program sees them over a scratch copy ([`ScratchTools`]): the native
/// specs plus the target parameters, and the result schema (every plot tool returns a JSON
/// object) under the `outputSchema` annotation the sandbox's signatures read. Public so that
/// references (`toolgate tools list --plot`, MCP `run_code`) can list them without a plot.
pub fn scratch_specs() -> Vec<ToolSpec> {
    tools::specs()
        .into_iter()
        .map(|mut s| {
            if let Some(props) = s
                .input_schema
                .get_mut("properties")
                .and_then(Value::as_object_mut)
            {
                props.insert("feature_names".into(), json!({"type": "array", "items": {"type": "string"}, "description": "Target features by display name (exact, else unique substring)"}));
                props.insert("feature_ids".into(), json!({"type": "array", "items": {"type": "string"}, "description": "Target features by id"}));
                props.insert("scope".into(), json!({"type": "string", "enum": ["all", "selection"], "description": "Without names/ids: the selection (default when something is selected), or all features (an edit needs a selection or scope \"all\"; analyses default to all)"}));
            }
            s.annotations
                .insert("outputSchema".into(), json!({"type": "object"}));
            s
        })
        .collect()
}

/// The native plot tools over a transaction's scratch copy. Each takes the tool's parameters
/// plus `feature_names`, `feature_ids` and `scope` to choose its targets.
pub struct ScratchTools {
    tx: Arc<PlotTransaction>,
}

#[async_trait]
impl Provider for ScratchTools {
    fn name(&self) -> &str {
        SCRATCH_PROVIDER
    }

    fn builtin_specs(&self) -> bool {
        true
    }

    async fn list_tools(&self) -> Result<Vec<ToolSpec>, ProviderError> {
        Ok(scratch_specs())
    }

    /// Units and ISO-8601 forms read as the native tools read them (the target keys pass
    /// through untouched).
    fn normalise(
        &self,
        tool_id: &str,
        params: &Map<String, Value>,
    ) -> Result<Normalised, Vec<String>> {
        tools::params::normalise(tool_id, params)
    }

    async fn call(&self, call: &ToolCall) -> Result<ToolOutcome, CallError> {
        let req = TargetRequest::from_arguments(&call.params, TargetKeys::PROGRAM);
        let subject = {
            let scratch = lock(&self.tx.scratch);
            // Analytical tools default to every feature; edits need named targets, a selection
            // or an explicit scope "all" (toolgate does not guess what to change).
            let intent = if tools::spec(&call.tool_id).is_some_and(|s| s.effect().is_mutating()) {
                run::Intent::Mutate
            } else {
                run::Intent::Analyse
            };
            let targets = run::resolve(&scratch, &req, intent)
                .map_err(|e| CallError::invalid(e.to_string()))?;
            targets
                .ids
                .iter()
                .filter_map(|id| scratch.doc.feature(id).cloned())
                .collect::<Vec<_>>()
        };
        let mut params = call.params.clone();
        for k in TargetKeys::PROGRAM.all() {
            params.remove(k);
        }
        if let Some(spec) = tools::spec(&call.tool_id) {
            let units = *lock(&self.tx.units);
            units.fill(&spec, &mut params);
        }
        // Times of day placed on the targets' day, as for a single call; a time that cannot
        // be read stops the program's call here, long before its commit is put to anyone.
        let params = tools::params::resolve(&call.tool_id, &params, &subject)
            .map_err(|problems| CallError::invalid(problems.join("; ")))?
            .params;
        let names: Vec<String> = subject.iter().map(model::display_name).collect();
        let shown: Vec<String> = params
            .iter()
            .map(|(k, v)| format!("{k}: {}", toolgate_core::preview::format_value(v)))
            .collect();
        let inner = ToolCall::new(call.tool_id.clone(), params).with_subject(Value::Array(subject));
        let outcome = tools::run(&inner)?;
        if outcome.change_set.as_ref().is_some_and(|c| !c.is_empty()) {
            let title = tools::specs()
                .into_iter()
                .find(|s| s.id == call.tool_id)
                .map_or_else(|| call.tool_id.clone(), |s| s.title);
            let args = if shown.is_empty() {
                String::new()
            } else {
                format!(" ({})", shown.join(", "))
            };
            lock(&self.tx.notes).push(Note {
                tool_id: call.tool_id.clone(),
                text: format!("{title}{args} on {}", names.join(", ")),
            });
        }
        Ok(outcome)
    }
}
