//! What a real model must show whatever it chooses (plumbing, never routing): shared by the
//! server plumbing test here and the in-process one (`crates/local-model/tests`, which includes
//! this file by path).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use toolgate_agent::{CallStatus, Profile, RunOutcome, Stop};
use toolgate_plot::debrief::{LIST_TOOLS, RUN_TOOL, SEARCH, SUMMARIZE};

/// Every request answered, the turn limit held, usage reported; under the small profile
/// (constrained decoding) the first step is a dispatched call and every call is a well-formed
/// call of an agent tool.
pub fn assert_plumbing(out: &RunOutcome, profile: Profile, max_turns: usize) {
    assert!(
        !matches!(out.stop, Stop::ModelError { .. }),
        "{profile:?}: the model answered every request: {:?}",
        out.stop
    );
    assert!(
        out.turns >= 1 && out.turns <= max_turns,
        "the turn limit holds"
    );
    assert!(out.usage.prompt_tokens > 0, "usage is reported");
    if profile == Profile::Small {
        // The first step admits exactly one call, so a call is parsed and dispatched whatever
        // the model's choice, and every call names an agent tool with arguments its schema admits.
        assert!(!out.calls.is_empty(), "a call was made");
        assert_eq!(out.calls[0].status, CallStatus::Dispatched);
        for call in &out.calls {
            assert!(
                [SEARCH, SUMMARIZE, LIST_TOOLS, RUN_TOOL].contains(&call.tool.as_str()),
                "{}",
                call.tool
            );
            assert!(
                !matches!(
                    call.status,
                    CallStatus::MalformedArguments | CallStatus::UnknownTool
                ),
                "constrained calls are well formed: {call:?}"
            );
        }
    }
}
