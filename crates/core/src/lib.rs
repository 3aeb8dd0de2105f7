//! toolgate-core: the one path every tool call takes, whichever surface it arrives by.
//!
//! The flow of one call (see `ARCHITECTURE.md`):
//! 1. [`Registry::resolve`] — unknown ids get a corrective message listing the valid ids.
//! 2. [`Registry::validate`] — arguments checked against the tool's JSON Schema, every problem at once.
//! 3. the surface resolves its targets (domain crates, e.g. `toolgate-plot`).
//! 4. [`policy::decide`] — a pure function: allow, pre-approved, confirm with a plain-language
//!    [`Preview`], or deny.
//! 5. the [`Provider`] runs the tool and returns a [`ToolOutcome`]; a mutation carries a
//!    [`ChangeSet`] that only a session may apply.
//! 6. [`policy::guard`] — a change set from a call that was not confirmed is refused.
//! 7. [`telemetry`] — one record per invocation, declines included.

#![warn(unreachable_pub)]
pub mod access;
pub mod clip;
pub mod digest;
pub mod filter;
pub mod flow;
pub mod outcome;
pub mod policy;
pub mod preview;
pub mod provider;
pub mod registry;
pub mod spec;
pub mod telemetry;
pub mod tokens;
pub mod tool_set;
pub mod validate;

pub use access::{AccessToken, AccessTokenError};
pub use digest::CallDigest;
pub use filter::{FilterError, ToolFilter};
pub use flow::{Answer, Confirmer, Ended, Gate, Prepared};
pub use outcome::{Failure, FailureKind, Refusal, RefusalKind, Reply, Status};
pub use policy::{Approvals, BatchApproval, Decision, Mode};
pub use preview::{Preview, PreviewInput};
pub use provider::{
    CallError, ChangeSet, CheckError, Checked, Edit, Normalised, Provider, ProviderError, ToolCall,
    ToolOrigin, ToolOutcome,
};
pub use registry::{Registry, RegistryError, ResolvedTool, ToolListing};
pub use spec::{Effect, OutputKind, ParamInfo, ToolSpec};
pub use tokens::{Encoding, TokenCounter};
pub use tool_set::{ToolSet, UnknownToolSet};
pub use validate::{ParamValidator, SchemaError};
