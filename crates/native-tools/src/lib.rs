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
pub mod dataset;
pub mod params;
pub mod units;

#[cfg(test)]
mod tests;

use async_trait::async_trait;
use serde_json::{Value, json};
use toolgate_analysis_tools::{OWN_TOOLS, OwnTool};
use toolgate_core::{
    CallError, ChangeSet, CheckError, Checked, Edit, Normalised, OutputKind, Provider,
    ProviderError, ToolCall, ToolOutcome, ToolSpec,
};
use toolgate_tool_catalogue::common::subject;
use toolgate_tool_catalogue::{Body, CalcInput, Entry, ErrorCategory, Item, ToolError};

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
        return call_entry(entry, call);
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

/// Run a catalogue tool on a registry call (its `subject`: the target features) and turn its
/// items into the registry's outcome ([`outcome`]).
pub fn call_entry(entry: &Entry, call: &ToolCall) -> Result<ToolOutcome, CallError> {
    let features: Vec<serde_json::Value> = subject(call)?.into_iter().cloned().collect();
    let input = CalcInput::new(&features, &call.params);
    outcome(entry, (entry.run)(&input))
}

/// The registry's outcome of a catalogue run: feature items of mutations and additions become
/// upserts of one change set (labelled by the items' labels); everything else is data.
pub fn outcome(
    entry: &Entry,
    result: Result<Vec<Item>, ToolError>,
) -> Result<ToolOutcome, CallError> {
    let items = result.map_err(|e| match e.category {
        ErrorCategory::ResourceNotFound => CallError::NotFound { message: e.message },
        ErrorCategory::InvalidInput => CallError::InvalidInput { message: e.message },
        ErrorCategory::AlgorithmFailure => CallError::failed(e.message),
    })?;
    let kind = items
        .first()
        .map(|i| i.result_type.clone())
        .unwrap_or_else(|| entry.output_kind.to_owned());
    let labels: Vec<&str> = {
        let mut seen: Vec<&str> = Vec::new();
        for i in &items {
            if !seen.contains(&i.label.as_str()) {
                seen.push(&i.label);
            }
        }
        seen
    };
    let summary = labels.join("; ");
    let changes = OutputKind::new(kind.clone()).is_mutation();
    if changes {
        let edits: Vec<Edit> = items
            .iter()
            .filter_map(|i| match &i.body {
                Body::Feature(f) => Some(Edit::Upsert {
                    id: toolgate_tool_catalogue::model::id_of(f).unwrap_or_default(),
                    item: f.clone(),
                }),
                _ => None,
            })
            .collect();
        // What a program or a model reads back: the ids the change touches, as the legacy tools
        // reported them (`modified` for mutations, `added` for additions).
        let ids: Vec<&str> = edits.iter().map(Edit::id).collect();
        let key = if kind.starts_with("addition/") {
            "added"
        } else {
            "modified"
        };
        let data = json!({ key: ids });
        Ok(ToolOutcome {
            kind: OutputKind::new(kind),
            summary: summary.clone(),
            data,
            change_set: Some(ChangeSet {
                label: undo_label(&summary, &edits),
                edits,
            }),
        })
    } else {
        let data: Vec<Value> = items
            .iter()
            .map(|i| match &i.body {
                Body::Feature(v) | Body::Json(v) => dataset::dataset_of(v),
                Body::Text(t) => json!({"mimeType": i.mime_type, "text": t}),
            })
            .collect();
        Ok(ToolOutcome {
            kind: OutputKind::new(kind),
            summary,
            data: if data.len() == 1 {
                data.into_iter().next().unwrap_or_default()
            } else {
                Value::Array(data)
            },
            change_set: None,
        })
    }
}

/// The undo step's name: the tool's label and the features it touches by the names people use
/// (the catalogue's labels count features — "for 1 track(s)" — rather than naming them).
fn undo_label(summary: &str, edits: &[Edit]) -> String {
    let names: Vec<String> = edits
        .iter()
        .filter_map(|e| match e {
            Edit::Upsert { item, .. } => Some(toolgate_feature::Feature(item).display_name()),
            Edit::Remove { .. } => None,
        })
        .collect();
    match names.len() {
        0 => summary.to_owned(),
        1..=3 => format!("{summary} — {}", names.join(", ")),
        n => format!("{summary} — {} and {} more", names[..3].join(", "), n - 3),
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
