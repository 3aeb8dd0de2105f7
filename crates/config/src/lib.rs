//! toolgate-config: what a user and a project configure for CodeAct, and whether the project
//! may widen it.
//!
//! - [`CodeactConfig`] layers the built-in defaults, the user's `config.toml`, the project's
//!   `.toolgate/config.toml` ([`PROJECT_CONFIG`]) and the environment into the tool filter, the
//!   program [`Limits`], the workspace tools' switches, the command tools ([`CommandToolDecl`])
//!   and the custom-tool folders; [`ConfigFile`] is one file, with typed errors that name the
//!   file and the key (`toml_typed.rs` keeps the `toml` crate's messages out of the decision).
//!   The layering and the file format are documented in `config.rs`.
//! - [`trust`]: `<user config dir>/trusted.toml`, the workspaces the user trusts to *widen*
//!   their configuration, each with a SHA-256 of the project's configuration files.
//! - [`regular_file`]: the one way a file a repository brings is read (no links, no devices or
//!   FIFOs, bounded).
//! - [`Limits`]: what one program may use; the configuration sets it and `toolgate_sandbox`
//!   enforces it.
//!
//! # Why custom tools are not here
//!
//! A custom tool is a Python file that runs in the sandbox: loading one probes it with the
//! interpreter (does it define `TOOL` and a function?) and calling one runs a nested program on
//! the calling host. Both need monty, so the custom-tool provider is composed where the sandbox
//! and this configuration meet: `toolgate_codeact::PythonTools` (`custom_tools.rs`, beside the
//! command tools). This crate holds what decides *which* custom tools load: the folders
//! ([`CodeactConfig::tool_dirs`], [`PROJECT_TOOLS_DIR`]), the trust that gates a project's
//! folder, the reader for their files and the schema of their parameters
//! ([`parameters_schema`]). So this crate does not depend on monty and builds on the workspace's
//! Rust 1.95, and code that only reads configuration (the hook, `toolgate trust`, the Debrief
//! CLI's tool lists) can depend on it without the interpreter.

#![warn(unreachable_pub)]

mod config;
mod limits;
pub mod regular_file;
mod toml_typed;
pub mod trust;

pub use config::{
    ArgPiece, ArgTemplateError, CodeactConfig, CommandToolDecl, ConfigError, ConfigFile,
    DEFAULT_BASH_MAX_TIMEOUT_SECS, DEFAULT_BASH_TIMEOUT_SECS, DEFAULT_OUTPUT_CAP_BYTES, HookTable,
    LimitsTable, PROJECT_CONFIG, PROJECT_TOOLS_DIR, ParametersError, ProjectTrust, Size,
    ToolsTable, WorkspaceTable, parameters_schema, parse_arg,
};
pub use limits::{
    DEFAULT_MAX_MEMORY_BYTES, DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_MAX_RECURSION_DEPTH,
    DEFAULT_MAX_TOOL_CALLS, DEFAULT_TIMEOUT, Limits, SizeError, parse_size,
};
