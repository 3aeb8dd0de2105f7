//! CodeAct sandbox (in progress).
