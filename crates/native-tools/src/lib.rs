//! toolgate's native Debrief tools, with debrief-calc semantics, as one provider.
//!
//! [`NativeTools`] is a [`Provider`] named `debrief-native` over Debrief's catalogue (the
//! categories' tables of `toolgate-analysis-tools` and `toolgate-editing-tools`, chained in
//! [`catalogue`]) and toolgate's own analyses that the catalogue does not define. Every tool is a plain synchronous
//! function over GeoJSON features: [`run`] takes a [`ToolCall`] whose `subject` is the JSON array
//! of target features (already resolved by the session) and whose `params` are already
//! validated against the tool's schema (defaults are applied here, not by the validator).
//!
//! * Mutations (`mutation/…`) return the whole modified feature in a [`ChangeSet`] of
//!   [`Edit::Upsert`]s and never touch their input; the session applies the change set.
//! * Additions (`addition/…`) upsert new features whose ids derive from the source id
//!   (`<id>-buffer`, `<id>-ref-grid`), so running a tool twice replaces rather than duplicates.
//! * Analyses (`dataset/…`, `…/statistics`) return the full dataset in `data` and a one-line
//!   summary with the key numbers.
//!
//! Colour parameters (the catalogue's `track/styling` tools) are a plain JSON Schema string with
//! a `pattern` that accepts the named colours (`red`, `green`, `blue`, `yellow`, `orange`,
//! `purple`, `cyan`, `magenta`, `white`, `black`, `grey`), CSS hex colours (`#f00`, `#FF0000`,
//! `#FF000080`) and `rgb()`/`rgba()`/`hsl()`/`hsla()`; the names are repeated in the description
//! so a model sees them.
//!
//! [`ChangeSet`]: toolgate_core::ChangeSet
//! [`Edit::Upsert`]: toolgate_core::Edit::Upsert

#![warn(unreachable_pub)]

pub mod catalogue;
pub mod params;
pub mod units;

#[cfg(test)]
mod tests;

use async_trait::async_trait;
use toolgate_analysis_tools::{OWN_TOOLS, OwnTool};
use toolgate_core::{
    CallError, CheckError, Checked, Normalised, Provider, ProviderError, ToolCall, ToolOutcome,
    ToolSpec,
};
use toolgate_tool_catalogue::common::subject;

/// The provider of the native tools.
#[derive(Debug, Clone, Copy, Default)]
pub struct NativeTools;

/// The provider name used in registry messages.
pub const PROVIDER_NAME: &str = "debrief-native";

/// Every tool's spec, in a stable order: the catalogue's tools (category by category), then
/// toolgate's own tools that the catalogue does not define. A legacy tool whose id the
/// catalogue also defines is replaced by the catalogue's implementation.
pub fn specs() -> Vec<ToolSpec> {
    catalogue::entries()
        .map(catalogue::Entry::spec)
        .chain(legacy().map(|t| (t.spec)()))
        .collect()
}

/// toolgate's own tools that the catalogue does not (yet) define.
fn legacy() -> impl Iterator<Item = &'static OwnTool> {
    OWN_TOOLS
        .iter()
        .filter(|t| catalogue::entry(t.id).is_none())
}

/// One tool's spec, built alone (without building the others).
pub fn spec(id: &str) -> Option<ToolSpec> {
    if let Some(entry) = catalogue::entry(id) {
        return Some(entry.spec());
    }
    legacy().find(|t| t.id == id).map(|t| (t.spec)())
}

/// The ids of every tool, in listing order.
pub fn ids() -> Vec<&'static str> {
    catalogue::entries()
        .map(|e| e.id)
        .chain(legacy().map(|t| t.id))
        .collect()
}

/// Run one call synchronously. [`Provider::call`] delegates here.
pub fn run(call: &ToolCall) -> Result<ToolOutcome, CallError> {
    if let Some(entry) = catalogue::entry(&call.tool_id) {
        return entry.call(call);
    }
    match legacy().find(|t| t.id == call.tool_id) {
        Some(tool) => (tool.run)(call),
        None => Err(CallError::NotFound {
            message: format!(
                "Unknown tool id \"{}\" for provider \"{PROVIDER_NAME}\". Available: {}",
                call.tool_id,
                ids().join(", ")
            ),
        }),
    }
}

#[async_trait]
impl Provider for NativeTools {
    fn name(&self) -> &str {
        PROVIDER_NAME
    }

    fn builtin_specs(&self) -> bool {
        true
    }

    async fn list_tools(&self) -> Result<Vec<ToolSpec>, ProviderError> {
        Ok(specs())
    }

    /// Units and ISO-8601 forms read into what each schema takes ([`params::normalise`]).
    fn normalise(
        &self,
        tool_id: &str,
        params: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<Normalised, Vec<String>> {
        params::normalise(tool_id, params)
    }

    /// Times of day placed on the targets' day ([`params::resolve`]); a mutation is run here on
    /// its subject — every tool is a pure function of the call — and its change set counted
    /// ([`params::effect`]), so the preview says what it will do and the gate applies exactly
    /// that.
    async fn check(&self, call: &ToolCall, dry_run: bool) -> Result<Checked, CheckError> {
        check(call, dry_run)
    }

    async fn call(&self, call: &ToolCall) -> Result<ToolOutcome, CallError> {
        run(call)
    }
}

/// [`Provider::check`] of the native tools, synchronously: parameters resolved against the
/// call's subject, and with `dry_run` the call run and its effect counted.
pub fn check(call: &ToolCall, dry_run: bool) -> Result<Checked, CheckError> {
    let subject: Vec<serde_json::Value> = subject(call)?.into_iter().cloned().collect();
    let resolved =
        params::resolve(&call.tool_id, &call.params, &subject).map_err(CheckError::Params)?;
    let mut checked = Checked {
        params: Some(resolved.params.clone()),
        notes: resolved.notes,
        ..Checked::default()
    };
    if dry_run {
        let mut resolved_call = call.clone();
        resolved_call.params = resolved.params;
        let outcome = run(&resolved_call)?;
        if let Some(cs) = &outcome.change_set {
            checked.effect = params::effect(&subject, cs);
        }
        checked.outcome = Some(outcome);
    }
    Ok(checked)
}
