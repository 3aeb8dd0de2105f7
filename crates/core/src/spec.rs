//! The tool model: what a tool declares about itself before anything runs.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// What a tool produces, e.g. `mutation/track/styled`, `dataset/range_bearing_series`,
/// `addition/feature`. The effect of a tool is derived from this *declared* kind, so it is known
/// before the tool runs (the Debrief spike classified by UI category and mis-gated three tools).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct OutputKind(pub String);

impl OutputKind {
    pub fn new(kind: impl Into<String>) -> Self {
        Self(kind.into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The effect this kind implies. Only kinds known to be read-only are [`Effect::Read`];
    /// everything else — including kinds we have never seen — is [`Effect::Mutating`]
    /// (over-gate, never under-gate).
    pub fn effect(&self) -> Effect {
        effect_of(Some(self.as_str()))
    }

    /// True when a *result* of this kind changes a document (the post-run guard uses it).
    pub fn is_mutation(&self) -> bool {
        self.effect() == Effect::Mutating
    }
}

/// Read-only kind families. A kind is read-only when its first segment is one of these, or when
/// its last segment is `statistics` (Debrief's `track/statistics`, `region/statistics`).
const READ_PREFIXES: &[&str] = &["dataset", "artifact", "report", "read", "listing", "search"];

/// Derive the effect from an optional declared output kind. `None`, empty and unknown kinds are
/// mutating.
pub fn effect_of(kind: Option<&str>) -> Effect {
    let Some(kind) = kind.map(str::trim).filter(|k| !k.is_empty()) else {
        return Effect::Mutating;
    };
    let mut segments = kind.split('/');
    let first = segments.next().unwrap_or_default();
    let last = kind.rsplit('/').next().unwrap_or_default();
    let has_tail = kind.contains('/') && !last.is_empty();
    if has_tail && (READ_PREFIXES.contains(&first) || last == "statistics") {
        Effect::Read
    } else {
        Effect::Mutating
    }
}

/// Whether running a tool can change anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Effect {
    Read,
    Mutating,
}

impl Effect {
    pub fn is_mutating(self) -> bool {
        self == Effect::Mutating
    }
}

/// One tool as a provider declares it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Stable id, e.g. `set-track-color`.
    pub id: String,
    /// Human title, e.g. "Set Track Color".
    pub title: String,
    pub description: String,
    /// JSON Schema (draft 2020-12 unless `$schema` says otherwise) of the tool's parameters.
    /// Must describe an object; `additionalProperties: false` makes unknown parameters errors.
    pub input_schema: Value,
    /// Declared output kind; `None` counts as mutating.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_kind: Option<OutputKind>,
    /// Grouping for listings, e.g. `style`, `analysis`, `workspace`.
    #[serde(default)]
    pub category: String,
    /// Free-form annotations (selection requirements, versions, hints). Never used for policy.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub annotations: Map<String, Value>,
}

impl ToolSpec {
    pub fn effect(&self) -> Effect {
        effect_of(self.output_kind.as_ref().map(OutputKind::as_str))
    }

    /// The parameters as a listing shows them, in the schema's declared order.
    pub fn params(&self) -> Vec<ParamInfo> {
        ParamInfo::from_schema(&self.input_schema)
    }
}

/// One parameter as a listing shows it: enough for a model to call the tool correctly.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ParamInfo {
    pub name: String,
    /// `string`, `number`, `integer`, `boolean`, `array`, `object`, or `enum` when choices exist.
    pub value_type: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    pub required: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_value: Option<Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub choices: Vec<Value>,
}

impl ParamInfo {
    /// Project every property of an object schema. Nothing is dropped (the spike kept only
    /// "picker" parameters, so agents could not pass radius, distance, …).
    pub fn from_schema(schema: &Value) -> Vec<ParamInfo> {
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let Some(props) = schema.get("properties").and_then(Value::as_object) else {
            return Vec::new();
        };
        props
            .iter()
            .map(|(name, p)| {
                let choices: Vec<Value> = p
                    .get("enum")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                let value_type = if choices.is_empty() {
                    match p.get("type") {
                        Some(Value::String(t)) => t.clone(),
                        Some(Value::Array(ts)) => ts
                            .iter()
                            .filter_map(Value::as_str)
                            .filter(|t| *t != "null")
                            .collect::<Vec<_>>()
                            .join("|"),
                        _ => "any".to_owned(),
                    }
                } else {
                    "enum".to_owned()
                };
                ParamInfo {
                    name: name.clone(),
                    value_type,
                    description: p
                        .get("description")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    required: required.contains(&name.as_str()),
                    default_value: p.get("default").cloned(),
                    choices,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn effect_from_kind() {
        assert_eq!(
            effect_of(Some("dataset/range_bearing_series")),
            Effect::Read
        );
        assert_eq!(effect_of(Some("track/statistics")), Effect::Read);
        assert_eq!(effect_of(Some("region/statistics")), Effect::Read);
        assert_eq!(effect_of(Some("mutation/track/styled")), Effect::Mutating);
        assert_eq!(effect_of(Some("addition/feature")), Effect::Mutating);
        assert_eq!(effect_of(Some("deletion/feature")), Effect::Mutating);
        assert_eq!(
            effect_of(Some("dataset")),
            Effect::Mutating,
            "no tail: unknown"
        );
        assert_eq!(effect_of(Some("something/new")), Effect::Mutating);
        assert_eq!(effect_of(Some("")), Effect::Mutating);
        assert_eq!(effect_of(None), Effect::Mutating);
    }

    #[test]
    fn params_keep_everything_in_order() {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {
                "symbol": {"type": "string", "enum": ["circle", "square"], "default": "square"},
                "radius": {"type": "number", "default": 4, "description": "Symbol radius"},
                "fill_color": {"type": ["string", "null"]}
            },
            "required": ["symbol"]
        });
        let params = ParamInfo::from_schema(&schema);
        let names: Vec<_> = params.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names.len(), 3);
        let symbol = params.iter().find(|p| p.name == "symbol").unwrap();
        assert_eq!(symbol.value_type, "enum");
        assert!(symbol.required);
        let fill = params.iter().find(|p| p.name == "fill_color").unwrap();
        assert_eq!(fill.value_type, "string");
        assert!(!fill.required);
    }
}
