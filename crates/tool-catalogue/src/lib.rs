//! The shape of a Debrief catalogue tool (debrief-future `shared/tools/**`, spec 041's
//! ToolResult architecture), and what every tool shares.
//!
//! A catalogue tool is a plain function from a [`CalcInput`] (the input features and the
//! parameters) to the content items of a ToolResponse ([`Item`]s), or a [`ToolError`] — exactly
//! the shape Debrief's golden fixtures record, so `toolgate calc` can print it unchanged and the
//! conformance test can compare it with the goldens. The same functions serve the registry:
//! `toolgate-native-tools` (the provider) runs them and turns their items into the registry's
//! outcome (mutations and additions become a change set the session applies as one undo step;
//! artifacts become data), so agents, CodeAct programs and the workbench palette run the
//! implementation the goldens check.
//!
//! The tools themselves live in the crates named for Debrief's categories
//! (`toolgate-analysis-tools`, `toolgate-editing-tools`), each category one `TOOLS` table of
//! [`Entry`]s; `toolgate-native-tools` chains the tables into the registry. Here: the types
//! those tables are made of, the fixtures' two property namings and the specs' geodesy
//! ([`model`]), and the schema, selection, geometry and time helpers of [`common`].
#![warn(unreachable_pub)]

use serde_json::{Map, Value, json};
use toolgate_core::ToolSpec;

use crate::common::{Def, humanise};

pub mod common;
pub mod model;
#[cfg(feature = "testing")]
pub mod testing;

/// What a catalogue tool receives: the input features (in input order) and the parameters
/// (defaults not yet applied: each tool applies its spec's defaults).
#[derive(Debug, Clone, Copy)]
pub struct CalcInput<'a> {
    pub features: &'a [Value],
    pub params: &'a Map<String, Value>,
}

impl<'a> CalcInput<'a> {
    pub fn new(features: &'a [Value], params: &'a Map<String, Value>) -> Self {
        Self { features, params }
    }

    /// A parameter, `None` when absent or `null`.
    pub fn param(&self, name: &str) -> Option<&'a Value> {
        self.params.get(name).filter(|v| !v.is_null())
    }

    pub fn str_param(&self, name: &str) -> Option<&'a str> {
        self.param(name).and_then(Value::as_str)
    }

    pub fn f64_param(&self, name: &str) -> Option<f64> {
        self.param(name).and_then(Value::as_f64)
    }
}

/// The payload of one content item, as the `text` (or `data`) of the item.
#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    /// A GeoJSON feature (mutations, additions, measurement features): serialised compactly.
    Feature(Value),
    /// Any other JSON document (datasets, plots): serialised compactly.
    Json(Value),
    /// Plain text (CSV, GPX, tab-separated tables).
    Text(String),
}

impl Body {
    /// The text the item carries.
    pub fn text(&self) -> String {
        match self {
            Body::Feature(v) | Body::Json(v) => v.to_string(),
            Body::Text(t) => t.clone(),
        }
    }
}

/// One content item of a ToolResponse.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    /// MCP content type; `resource` for every catalogue item so far.
    pub content_type: &'static str,
    /// `feature://<id>`, `artifact://<name>`, ….
    pub uri: String,
    pub mime_type: String,
    pub body: Body,
    /// `debrief:resultType`, e.g. `artifact/measurement/range`.
    pub result_type: String,
    /// `debrief:sourceFeatures`.
    pub source_features: Vec<String>,
    /// `debrief:label`.
    pub label: String,
    /// Further `debrief:*` annotations, in the order the spec lists them.
    pub annotations: Map<String, Value>,
}

impl Item {
    /// A GeoJSON feature item (`feature://<id>`, `application/geo+json`).
    pub fn feature(
        feature: Value,
        result_type: &str,
        source_features: Vec<String>,
        label: impl Into<String>,
    ) -> Self {
        let id = model::id_of(&feature).unwrap_or_default();
        Self {
            content_type: "resource",
            uri: format!("feature://{id}"),
            mime_type: "application/geo+json".into(),
            body: Body::Feature(feature),
            result_type: result_type.to_owned(),
            source_features,
            label: label.into(),
            annotations: Map::new(),
        }
    }

    /// A non-feature item with an explicit URI and MIME type.
    pub fn resource(
        uri: impl Into<String>,
        mime_type: &str,
        body: Body,
        result_type: &str,
        source_features: Vec<String>,
        label: impl Into<String>,
    ) -> Self {
        Self {
            content_type: "resource",
            uri: uri.into(),
            mime_type: mime_type.to_owned(),
            body,
            result_type: result_type.to_owned(),
            source_features,
            label: label.into(),
            annotations: Map::new(),
        }
    }

    #[must_use]
    pub fn with_annotation(mut self, key: &str, value: Value) -> Self {
        self.annotations.insert(key.to_owned(), value);
        self
    }

    /// The annotations object: resultType, sourceFeatures, label, then the rest.
    pub fn annotations_json(&self) -> Value {
        let mut a = Map::new();
        a.insert("debrief:resultType".into(), json!(self.result_type));
        a.insert("debrief:sourceFeatures".into(), json!(self.source_features));
        a.insert("debrief:label".into(), json!(self.label));
        for (k, v) in &self.annotations {
            a.insert(k.clone(), v.clone());
        }
        Value::Object(a)
    }
}

/// Spec 041's error categories.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCategory {
    InvalidInput,
    AlgorithmFailure,
    ResourceNotFound,
}

impl ErrorCategory {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCategory::InvalidInput => "invalid_input",
            ErrorCategory::AlgorithmFailure => "algorithm_failure",
            ErrorCategory::ResourceNotFound => "resource_not_found",
        }
    }
}

/// A tool's own error response (spec 041 `error`): still a well-formed answer, not a crash.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct ToolError {
    pub message: String,
    pub category: ErrorCategory,
    pub affected: Vec<String>,
    /// JSON-RPC style code; -32000 for every catalogue error so far.
    pub code: i64,
}

impl ToolError {
    pub fn invalid(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            category: ErrorCategory::InvalidInput,
            affected: Vec::new(),
            code: -32000,
        }
    }

    pub fn failure(message: impl Into<String>) -> Self {
        Self {
            category: ErrorCategory::AlgorithmFailure,
            ..Self::invalid(message)
        }
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self {
            category: ErrorCategory::ResourceNotFound,
            ..Self::invalid(message)
        }
    }

    #[must_use]
    pub fn affecting(mut self, ids: Vec<String>) -> Self {
        self.affected = ids;
        self
    }

    /// The `error` object of a ToolResponse.
    pub fn to_json(&self) -> Value {
        json!({
            "code": self.code,
            "message": self.message,
            "data": {
                "debrief:errorCategory": self.category.as_str(),
                "debrief:affectedFeatures": self.affected,
            }
        })
    }
}

pub type RunFn = fn(&CalcInput) -> Result<Vec<Item>, ToolError>;

/// One catalogue tool: what the registry lists and how it runs.
pub struct Entry {
    /// Catalogue id, e.g. `range-calc`.
    pub id: &'static str,
    /// Catalogue path of the spec, e.g. `track/measurement`.
    pub spec_category: &'static str,
    /// The spec's `version`, e.g. `1.0`.
    pub spec_version: &'static str,
    /// The MCP description, for agents.
    pub description: &'static str,
    /// Declared result type (the gate classifies the tool by it before running).
    pub output_kind: &'static str,
    /// `debrief:selectionRequirements` (see [`crate::common::multi`]).
    pub requirements: fn() -> Value,
    /// The `properties` of the parameter schema: types, choices, defaults, descriptions.
    pub params: fn() -> Value,
    pub required: &'static [&'static str],
    pub run: RunFn,
}

impl Entry {
    /// The registry's view: a closed parameter schema plus the catalogue's spec id and version.
    pub fn spec(&self) -> ToolSpec {
        let mut spec = Def {
            id: self.id,
            description: self.description,
            output_kind: self.output_kind,
            category: self.spec_category.split('/').next().unwrap_or("track"),
            requirements: (self.requirements)(),
            properties: (self.params)(),
            required: self.required,
        }
        .build();
        spec.title = humanise(self.id);
        spec.annotations.insert(
            "debrief:specId".into(),
            json!(format!("{}/{}", self.spec_category, self.id)),
        );
        spec.annotations
            .insert("debrief:specVersion".into(), json!(self.spec_version));
        spec
    }
}
