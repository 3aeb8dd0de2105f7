//! Evaluation harness: scenario replay, trajectory-scored routing probe, token budgets, CodeAct arm comparison.
