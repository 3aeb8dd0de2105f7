//! `eval arms` on the checked-in sample (crates/eval/arms-sample): the per-prompt and total
//! numbers, worked out by hand from the sample's events.
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(clippy::disallowed_methods)]

use std::path::Path;

use toolgate_eval::arms::{self, Prices};

#[test]
fn the_sample_gives_the_hand_computed_numbers() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("arms-sample");
    let r = arms::from_dir(&dir, Prices::default()).unwrap();
    let names: Vec<&str> = r.prompts.iter().map(|p| p.prompt.as_str()).collect();
    assert_eq!(names, ["env-var-inventory", "todo-in-context"]);

    let todo = &r.prompts[1];
    let (b, c) = (&todo.baseline, &todo.codeact);
    assert_eq!(
        (b.turns, b.tool_calls, b.input_tokens, b.output_tokens),
        (3, 3, 42_500, 970)
    );
    assert_eq!(b.tools, ["bash", "view", "view"]);
    assert_eq!(b.tool_result_bytes, 71);
    assert_eq!(
        (b.api_duration_ms, b.duration_ms),
        (Some(14_000.0), Some(16_000.0))
    );
    assert!(!b.codeact_invoked && b.completed);
    assert!((todo.baseline_cost - 0.1208).abs() < 1e-9);
    assert_eq!(
        (c.turns, c.tool_calls, c.input_tokens, c.output_tokens),
        (3, 2, 43_500, 1_250)
    );
    assert_eq!(c.tool_result_bytes, 71);
    assert!(c.codeact_invoked);
    assert_eq!(c.duration_ms, Some(11_000.0));
    assert!((todo.codeact_cost - 0.1275).abs() < 1e-9);
    assert_eq!(todo.reduction_pct["toolCalls"], 33.3);
    assert_eq!(todo.reduction_pct["durationMs"], 31.3);

    let env = &r.prompts[0];
    let (b, c) = (&env.baseline, &env.codeact);
    assert_eq!(
        (b.turns, b.tool_calls, b.input_tokens, b.output_tokens),
        (2, 1, 19_000, 400),
        "input from _prompt_tokens"
    );
    assert_eq!(b.tool_result_bytes, 25);
    assert_eq!(
        (c.turns, c.tool_calls, c.input_tokens, c.output_tokens),
        (2, 1, 19_900, 400)
    );
    assert_eq!(c.bad_lines, 1);
    assert!(!c.codeact_invoked);
    assert_eq!(c.session_duration_ms, None);
    assert_eq!(c.duration_ms, Some(7_000.0), "the event span stands in");
    assert!((env.baseline_cost - 0.0535).abs() < 1e-9);
    assert!((env.codeact_cost - 0.05575).abs() < 1e-9);

    let t = &r.total;
    assert_eq!(
        (
            t.baseline.turns,
            t.baseline.tool_calls,
            t.baseline.input_tokens,
            t.baseline.output_tokens
        ),
        (5, 4, 61_500, 1_370)
    );
    assert_eq!(
        (
            t.codeact.turns,
            t.codeact.tool_calls,
            t.codeact.input_tokens,
            t.codeact.output_tokens
        ),
        (5, 3, 63_400, 1_650)
    );
    assert!((t.baseline_cost - 0.1743).abs() < 1e-9);
    assert!((t.codeact_cost - 0.18325).abs() < 1e-9);
    assert_eq!(t.baseline.duration_ms, Some(21_000.0));
    assert_eq!(t.codeact.duration_ms, Some(18_000.0));
    assert_eq!(t.reduction_pct["turns"], 0.0);
    assert_eq!(t.reduction_pct["toolCalls"], 25.0);
    assert_eq!(t.reduction_pct["inputTokens"], -3.1);
    assert_eq!(t.reduction_pct["outputTokens"], -20.4);
    assert_eq!(t.reduction_pct["cost"], -5.1);
    assert_eq!(t.reduction_pct["durationMs"], 14.3);
    assert!(t.codeact.codeact_invoked, "invoked in at least one prompt");

    let md = r.markdown();
    assert!(
        md.contains("| total | baseline | 5 | 4 | 61500 | 1370 | 0.174300 |"),
        "{md}"
    );
    assert!(
        md.contains("| total | 0.0 | 25.0 | -3.1 | -20.4 | -5.1 | 14.3 |"),
        "{md}"
    );
}

#[test]
fn a_prompt_with_one_arm_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.baseline.jsonl"), "{}\n").unwrap();
    let e = arms::from_dir(dir.path(), Prices::default()).unwrap_err();
    assert!(e.to_string().contains("only one arm"), "{e}");
}
