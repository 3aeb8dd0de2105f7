//! toolgate over the Model Context Protocol (official Rust SDK `rmcp`, pinned exactly; its
//! types stay inside this crate).
//!
//! - [`server`]: the MCP server for toolgate's surfaces (the four Debrief tools, `run_code`), with
//!   confirmations by elicitation, MRTR or a token fallback ([`confirm`]).
//! - [`transport`]: stdio (`toolgate mcp`) and streamable HTTP (`toolgate serve`).
//! - [`upstream`]: other MCP servers as a toolgate [`toolgate_core::Provider`], namespaced
//!   `server__tool`.

#![warn(unreachable_pub)]
pub mod confirm;
pub mod paused;
pub mod pending;
pub mod server;
pub mod sessions;
pub mod stdio_guard;
pub mod surface;
pub mod transport;
pub mod upstream;

pub use paused::{CodeProgress, PAUSED_LIMITS, PausedCode};
pub use pending::PendingLimits;
pub use server::{
    CodeRunner, DirectError, DirectTools, McpShared, SESSION_HEADER, STATUS_META, SessionFactory,
    ToolgateServer,
};
pub use surface::{RUN_CODE, surface_specs, tool_list_json};
/// Which tools a server serves (`--surface`).
pub use toolgate_core::ToolSet;
