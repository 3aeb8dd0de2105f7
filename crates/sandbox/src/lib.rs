//! toolgate-sandbox: run a model's Python program ("CodeAct") whose every tool call goes through
//! toolgate's registry and policy.
//!
//! - [`run`] drives the [monty](https://github.com/pydantic/monty) interpreter in this process:
//!   tool calls suspend the program, the [`ToolHost`] answers, the program resumes; an
//!   [`Envelope`] reports the outcome.
//! - [`WorkerPool`] runs each program in a child process (`toolgate __sandbox-worker`) under a
//!   watchdog, for hosts that must survive anything a program does.
//! - [`RegistryHost`] is the host over a [`toolgate_core::Registry`]: resolve → validate →
//!   policy → provider, with core errors turned into Python exceptions.
//! - [`python_signatures`] and [`markdown_reference`] tell a model what it may call.
//! - [`Limits`] are configuration (`toolgate_config`, with the rest of the layered
//!   `config.toml` and project trust); this crate enforces them. Custom Python tools, which run
//!   as nested programs here, are composed in `toolgate_codeact` (`custom_tools.rs`).
//!
//! # Limits ([`Limits`], all on by default)
//!
//! | limit | default | in process | in a worker |
//! | --- | --- | --- | --- |
//! | `timeout` (wall clock) | 30 s | monty's time budget + the host deadline checked before every resume and around every tool call | the same, plus a watchdog that kills the worker at timeout + grace |
//! | `max_memory_bytes` | 256 MiB | monty's pre-checks of large allocations (`'a' * 10**10`, a container doubling past the budget) | the same, plus `RLIMIT_AS` and an RSS watchdog |
//! | `max_recursion_depth` | 200 | monty (catchable `RecursionError`) | same |
//! | `max_tool_calls` | 1000 | counted by the driver; the next call aborts uncatchably | same, and the pool counts again |
//! | `max_output_bytes` | 64 KiB | stdout + stderr (and an oversized return value) cut, marked `…[output truncated]` | same, re-checked by the pool |
//!
//! Residual risks in process: a native operation monty does not interrupt (e.g. a huge integer
//! power) can overshoot the deadline; many small allocations are not counted; an abort inside
//! the interpreter takes the process down. The worker pool closes all three.
//!
//! # Python surface
//!
//! Tools are global functions named by [`python_identifier`] of their id, called with keyword
//! arguments (positional arguments map onto the declared parameters in order). Values cross as
//! JSON data ([`convert`]). A call written after `await` or inside `asyncio.gather(...)` is
//! awaitable and runs concurrently on the host; others return their result directly. `open`,
//! `os`/`pathlib` file access, environment variables and unknown imports raise
//! `PermissionError`.

#![warn(unreachable_pub)]

mod backend;
pub mod convert;
mod engine;
mod envelope;
mod host;
#[cfg(feature = "hyperlight")]
pub mod hyperlight;
mod limits;
mod pause;
mod pool;
pub mod protocol;
mod registry_host;
mod stubs;
mod worker;

pub use backend::{
    BACKEND_ENV, Backend, BackendError, HyperlightUnusable, Selected, UnknownBackend, detect,
    hyperlight_status,
};
pub use engine::run;
pub use envelope::{Envelope, ExecError};
pub use host::{GateEnd, HostError, PyExc, ToolHost};
pub use limits::{ExecRequest, TRUNCATION_MARKER};
pub use pause::{PauseClock, Waiting};
pub use pool::{PoolConfig, WORKER_SUBCOMMAND, WorkerCommand, WorkerPool};
pub use registry_host::{
    CallLog, RegistryHost, WORKSPACE_PROVIDER, call_error_to_host, calling_host,
};
pub use stubs::{
    OUTPUT_SCHEMA, manifest_entry, markdown_reference, plot_functions_reference, py_literal,
    python_identifier, python_return_type, python_signatures,
};
pub use toolgate_config::Limits;
pub use worker::worker_main;
