//! One confirmation per CodeAct program: the plot tools a program calls edit a *scratch copy* of
//! the plot (so later reads in the same program see the edits); when the program ends, the net
//! change is previewed once and applied to the session as one undo step — or dropped.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use serde_json::{Map, Value, json};
use toolgate_core::flow::{Answer, Confirmer};
use toolgate_core::{
    CallError, ChangeSet, Edit, Preview, PreviewInput, Provider, ProviderError, ToolCall,
    ToolOutcome, ToolSpec,
};

use crate::model;
use crate::session::{OpenPlot, Session, SessionError};
use crate::targeting::{self, Scope, TargetRequest};
use crate::tools;

/// The provider name of the scratch plot tools; sandbox hosts pre-approve it (its edits only
/// touch the scratch copy; the commit is what a person confirms).
pub const SCRATCH_PROVIDER: &str = "plot-scratch";

/// How a transaction ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Committed {
    /// The program changed nothing.
    NoChanges,
    /// Approved and applied as one undo step.
    Applied { features: usize, preview: Preview },
    /// Declined: nothing was applied.
    Declined { preview: Preview },
}

pub struct PlotTransaction {
    session: Arc<Mutex<Session>>,
    plot_id: String,
    base_version: u64,
    original: Vec<Value>,
    scratch: Mutex<OpenPlot>,
    calls: Mutex<Vec<String>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl PlotTransaction {
    /// Start a transaction on an open plot.
    pub fn begin(session: Arc<Mutex<Session>>, plot_id: &str) -> Result<Arc<Self>, SessionError> {
        let plot = lock(&session).plot(plot_id)?.clone();
        Ok(Arc::new(Self {
            plot_id: plot_id.to_owned(),
            base_version: plot.doc.version(),
            original: plot.doc.features().to_vec(),
            scratch: Mutex::new(plot),
            calls: Mutex::new(Vec::new()),
            session,
        }))
    }

    /// The plot tools as a provider over the scratch copy.
    pub fn provider(self: &Arc<Self>) -> ScratchTools {
        ScratchTools {
            tx: Arc::clone(self),
        }
    }

    /// Apply one tool's change set to the scratch copy (the sandbox host's applier).
    pub fn apply_to_scratch(&self, cs: &ChangeSet) -> Result<(), toolgate_core::Failure> {
        lock(&self.scratch).doc.apply(cs).map(|_| ()).map_err(|e| {
            toolgate_core::Failure::new(toolgate_core::FailureKind::Apply, e.to_string())
        })
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
        let calls = lock(&self.calls);
        ChangeSet {
            label: format!("CodeAct program: {}", calls.join(", ")),
            edits,
        }
    }

    /// Preview the net change once and, on approval, apply it to the session as one undo step.
    pub async fn commit(&self, confirmer: &dyn Confirmer) -> Result<Committed, String> {
        let net = self.net_change();
        if net.is_empty() {
            return Ok(Committed::NoChanges);
        }
        let (title, target) = {
            let scratch = lock(&self.scratch);
            let names: Vec<String> = net
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
            (scratch.title.clone(), names.join(", "))
        };
        let mut params = Map::new();
        params.insert("tool calls".to_owned(), json!(lock(&self.calls).clone()));
        let preview = Preview::build(&PreviewInput {
            tool_title: "CodeAct program",
            plot_title: Some(&title),
            target: &target,
            params: &params,
            consequence: Some(
                "All of the program's edits are applied to the open plot as one change and left unsaved (undo or revert to discard, save to keep).",
            ),
        });
        match confirmer.confirm(&preview).await {
            Answer::Decline => Ok(Committed::Declined { preview }),
            Answer::Approve => {
                let features = net.touched_ids().len();
                lock(&self.session)
                    .apply(&self.plot_id, &net, self.base_version)
                    .map_err(|e| e.to_string())?;
                Ok(Committed::Applied { features, preview })
            }
        }
    }
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

const TARGET_KEYS: [&str; 3] = ["feature_names", "feature_ids", "scope"];

#[async_trait]
impl Provider for ScratchTools {
    fn name(&self) -> &str {
        SCRATCH_PROVIDER
    }

    async fn list_tools(&self) -> Result<Vec<ToolSpec>, ProviderError> {
        Ok(scratch_specs())
    }

    async fn call(&self, call: &ToolCall) -> Result<ToolOutcome, CallError> {
        let strings = |k: &str| -> Vec<String> {
            call.params
                .get(k)
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default()
        };
        let req = TargetRequest {
            feature_ids: strings("feature_ids"),
            feature_names: strings("feature_names"),
            scope: match call.params.get("scope").and_then(Value::as_str) {
                Some("all") => Some(Scope::All),
                Some("selection") => Some(Scope::Selection),
                _ => None,
            },
        };
        let subject = {
            let scratch = lock(&self.tx.scratch);
            // Analytical tools default to every feature; edits need named targets, a selection
            // or an explicit scope "all" (toolgate does not guess what to change).
            let intent = if tools::specs()
                .iter()
                .find(|s| s.id == call.tool_id)
                .is_some_and(|s| s.effect().is_mutating())
            {
                targeting::Intent::Mutate
            } else {
                targeting::Intent::Analyse
            };
            let targets = targeting::resolve(&scratch, &req, intent).map_err(CallError::invalid)?;
            targets
                .ids
                .iter()
                .filter_map(|id| scratch.doc.feature(id).cloned())
                .collect::<Vec<_>>()
        };
        let mut params = call.params.clone();
        for k in TARGET_KEYS {
            params.remove(k);
        }
        let inner = ToolCall::new(call.tool_id.clone(), params).with_subject(Value::Array(subject));
        let outcome = tools::run(&inner)?;
        if outcome.change_set.as_ref().is_some_and(|c| !c.is_empty()) {
            lock(&self.tx.calls).push(call.tool_id.clone());
        }
        Ok(outcome)
    }
}
