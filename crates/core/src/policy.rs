//! The policy: a pure function from (tool effect, call, mode, approvals already given) to a
//! decision. No I/O, no async runtime, no clock: every surface asks the same question the same way.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::digest::CallDigest;
use crate::preview::Preview;
use crate::provider::ToolOutcome;
use crate::spec::Effect;

/// How much a surface may do without asking.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Reads run; every mutating or unknown-effect call needs a confirmation, unless an
    /// approval already given covers exactly that call. The default.
    #[default]
    Strict,
    /// Reads run; mutations are refused.
    ReadOnly,
    /// A person pre-approved every mutation of this session (e.g. `--yes` at a terminal).
    /// Mutations are recorded as pre-approved, never as plain "allow".
    AutoApprove,
}

/// One approval that covers a listed set of calls (CodeAct: one approval for a program's plan).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchApproval {
    pub id: String,
    pub calls: BTreeSet<CallDigest>,
}

/// Approvals already given in this session.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Approvals {
    batches: Vec<BatchApproval>,
}

impl Approvals {
    pub fn none() -> Self {
        Self::default()
    }

    pub fn add(&mut self, batch: BatchApproval) {
        self.batches.push(batch);
    }

    /// The approval covering this call, if any.
    pub fn covering(&self, digest: &CallDigest) -> Option<&BatchApproval> {
        self.batches.iter().find(|b| b.calls.contains(digest))
    }

    /// Use up the approval of one call: an approval covers a call once.
    pub fn consume(&mut self, digest: &CallDigest) -> Option<String> {
        let batch = self.batches.iter_mut().find(|b| b.calls.contains(digest))?;
        batch.calls.remove(digest);
        Some(batch.id.clone())
    }
}

/// What the policy decided for one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// A read: run it without asking.
    Allow,
    /// A mutation already approved (by a batch approval or the session's mode).
    PreApproved { approval: String },
    /// Ask a person first, showing this preview.
    Confirm(Preview),
    /// Refuse, with a reason the model can act on.
    Deny { reason: String },
}

/// Decide one call. `preview` is only evaluated when a confirmation is needed, so reads stay cheap.
pub fn decide(
    tool_id: &str,
    effect: Effect,
    digest: &CallDigest,
    mode: Mode,
    approvals: &Approvals,
    preview: impl FnOnce() -> Preview,
) -> Decision {
    match (effect, mode) {
        (Effect::Read, _) => Decision::Allow,
        (Effect::Mutating, Mode::ReadOnly) => Decision::Deny {
            reason: format!(
                "Tool \"{tool_id}\" changes the plot, and this session is read-only. Use an analytical tool, or ask a person to enable edits."
            ),
        },
        (Effect::Mutating, Mode::AutoApprove) => Decision::PreApproved {
            approval: "session".to_owned(),
        },
        (Effect::Mutating, Mode::Strict) => match approvals.covering(digest) {
            Some(batch) => Decision::PreApproved {
                approval: batch.id.clone(),
            },
            None => Decision::Confirm(preview()),
        },
    }
}

/// How a call got past the policy; recorded in telemetry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Confirmation {
    Approved,
    Declined,
    NotRequired,
    PreApproved,
}

impl Confirmation {
    pub fn permits_changes(self) -> bool {
        matches!(self, Confirmation::Approved | Confirmation::PreApproved)
    }
}

/// A result changed something although the call was not confirmed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "Tool \"{tool}\" produced a mutating result ({kind}) but was not gated by a confirmation. Refusing to apply an unconfirmed edit."
)]
pub struct GuardError {
    pub tool: String,
    pub kind: String,
}

/// The post-run guard: a result that carries changes (or declares a mutating kind) is only
/// acceptable when the call was approved or pre-approved.
pub fn guard(
    tool_id: &str,
    confirmation: Confirmation,
    outcome: &ToolOutcome,
) -> Result<(), GuardError> {
    let mutates =
        outcome.change_set.as_ref().is_some_and(|c| !c.is_empty()) || outcome.kind.is_mutation();
    if mutates && !confirmation.permits_changes() {
        return Err(GuardError {
            tool: tool_id.to_owned(),
            kind: outcome.kind.as_str().to_owned(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::{ChangeSet, Edit};
    use crate::spec::OutputKind;
    use proptest::prelude::*;
    use serde_json::{Value, json};

    fn preview() -> Preview {
        Preview {
            title: "t".into(),
            body: "b".into(),
        }
    }

    fn digest(n: u32) -> CallDigest {
        CallDigest::of("tool", json!({"n": n}).as_object().unwrap(), &Value::Null)
    }

    #[test]
    fn batch_approval_covers_listed_calls_once() {
        let mut approvals = Approvals::none();
        approvals.add(BatchApproval {
            id: "plan-1".into(),
            calls: [digest(1), digest(2)].into_iter().collect(),
        });
        let d = decide(
            "t",
            Effect::Mutating,
            &digest(1),
            Mode::Strict,
            &approvals,
            preview,
        );
        assert_eq!(
            d,
            Decision::PreApproved {
                approval: "plan-1".into()
            }
        );
        assert!(matches!(
            decide(
                "t",
                Effect::Mutating,
                &digest(3),
                Mode::Strict,
                &approvals,
                preview
            ),
            Decision::Confirm(_)
        ));
        assert_eq!(approvals.consume(&digest(1)).as_deref(), Some("plan-1"));
        assert!(approvals.consume(&digest(1)).is_none());
    }

    #[test]
    fn guard_refuses_unconfirmed_changes() {
        let outcome = ToolOutcome {
            kind: OutputKind::new("mutation/track/styled"),
            summary: String::new(),
            data: Value::Null,
            change_set: Some(ChangeSet {
                label: String::new(),
                edits: vec![Edit::Remove { id: "a".into() }],
            }),
        };
        let err = guard("x", Confirmation::NotRequired, &outcome).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("Tool \"x\" produced a mutating result (mutation/track/styled)")
        );
        assert!(guard("x", Confirmation::Approved, &outcome).is_ok());
        let mut sneaky = outcome;
        sneaky.kind = OutputKind::new("dataset/innocent");
        assert!(
            guard("x", Confirmation::NotRequired, &sneaky).is_err(),
            "change set counts even under a read kind"
        );
    }

    fn any_mode() -> impl Strategy<Value = Mode> {
        prop_oneof![
            Just(Mode::Strict),
            Just(Mode::ReadOnly),
            Just(Mode::AutoApprove)
        ]
    }

    proptest! {
        /// Under strict mode a mutating or unknown-effect tool is never plain `Allow`, whatever
        /// approvals exist; under any mode a mutation is never `Allow`.
        #[test]
        fn mutations_are_never_plain_allow(
            kind in proptest::option::of("[a-z]{0,8}(/[a-z_]{0,8}){0,3}"),
            mode in any_mode(),
            approved in proptest::collection::vec(0u32..20, 0..5),
            call in 0u32..20,
        ) {
            let effect = crate::spec::effect_of(kind.as_deref());
            let mut approvals = Approvals::none();
            approvals.add(BatchApproval { id: "b".into(), calls: approved.iter().map(|n| digest(*n)).collect() });
            let d = decide("t", effect, &digest(call), mode, &approvals, preview);
            if effect == Effect::Mutating {
                prop_assert_ne!(&d, &Decision::Allow);
                if mode == Mode::Strict && !approved.contains(&call) {
                    prop_assert!(matches!(d, Decision::Confirm(_)));
                }
            } else {
                prop_assert_eq!(d, Decision::Allow);
            }
        }
    }
}
