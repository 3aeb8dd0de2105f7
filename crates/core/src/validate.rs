//! Parameter validation with the `jsonschema` crate, reported as plain sentences.

use std::sync::{Arc, OnceLock};

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::{ValidationError, Validator};
use serde_json::{Map, Value};

/// A tool's schema was rejected at registration.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("tool \"{tool}\" has an invalid input schema at {pointer}: {message}")]
pub struct SchemaError {
    pub tool: String,
    /// JSON pointer into the tool's input schema ("" is the schema root).
    pub pointer: String,
    pub message: String,
}

/// A validator for one tool's parameters.
///
/// The schema is checked when the validator is made; the `jsonschema` validator itself is
/// compiled when the tool is first called ([`ParamValidator::deferred`] also defers the
/// meta-schema check to then). A process that registers dozens of tools and calls one —
/// `toolgate exec` — compiles one schema, not all of them.
#[derive(Debug, Clone)]
pub struct ParamValidator {
    tool: Arc<str>,
    schema: Arc<Value>,
    /// Checked against the meta-schema already (else that happens with the compilation).
    checked: bool,
    compiled: OnceLock<Result<Validator, SchemaError>>,
    /// Declared property order, so problems are reported in the order a person reads the schema.
    declared: Vec<String>,
}

fn schema_error(tool: &str, pointer: &str, message: String) -> SchemaError {
    SchemaError {
        tool: tool.to_owned(),
        pointer: if pointer.is_empty() {
            "/".to_owned()
        } else {
            pointer.to_owned()
        },
        message,
    }
}

/// The checks every tool schema must pass: valid against its meta-schema, and an object schema.
fn check(tool: &str, schema: &Value) -> Result<(), SchemaError> {
    if let Err(e) = jsonschema::meta::validate(schema) {
        return Err(schema_error(
            tool,
            e.instance_path().as_str(),
            e.to_string(),
        ));
    }
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err(schema_error(
            tool,
            "/type",
            "a tool's parameters must be described by an object schema (\"type\": \"object\")"
                .to_owned(),
        ));
    }
    Ok(())
}

impl ParamValidator {
    /// Check the schema against its meta-schema now (the error names the JSON pointer of the
    /// first problem); it is compiled at the first [`validate`](Self::validate). For schemas
    /// that come from outside toolgate: a configured tool, an upstream server.
    pub fn compile(tool: &str, schema: &Value) -> Result<Self, SchemaError> {
        check(tool, schema)?;
        Ok(Self::new(tool, schema, true))
    }

    /// Check and compile the schema at the first [`validate`](Self::validate) only: for
    /// toolgate's own tools, whose schemas are fixed in the code (and checked by its tests), so
    /// a process pays for the schemas of the tools it calls. A schema that fails the checks makes
    /// every call of the tool fail with the [`SchemaError`]'s sentence.
    #[must_use]
    pub fn deferred(tool: &str, schema: &Value) -> Self {
        Self::new(tool, schema, false)
    }

    fn new(tool: &str, schema: &Value, checked: bool) -> Self {
        let declared = schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default();
        Self {
            tool: tool.into(),
            schema: Arc::new(schema.clone()),
            checked,
            compiled: OnceLock::new(),
            declared,
        }
    }

    /// The compiled validator (compiling it the first time), or why the schema is unusable.
    pub fn compiled(&self) -> Result<&Validator, &SchemaError> {
        self.compiled
            .get_or_init(|| {
                if !self.checked {
                    check(&self.tool, &self.schema)?;
                }
                jsonschema::validator_for(&self.schema).map_err(|e| {
                    schema_error(&self.tool, e.instance_path().as_str(), e.to_string())
                })
            })
            .as_ref()
    }

    /// Validate parameters. `null` values count as absent (models often send `"x": null` for
    /// "not given") and are removed from the returned map. Every problem is listed.
    pub fn validate(&self, params: &Map<String, Value>) -> Result<Map<String, Value>, Vec<String>> {
        let cleaned: Map<String, Value> = params
            .iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let instance = Value::Object(cleaned);
        let validator = self.compiled().map_err(|e| {
            vec![format!(
                "{e}; the tool cannot be called until its definition is fixed"
            )]
        })?;
        let mut problems: Vec<(u8, usize, String)> = Vec::new();
        for error in validator.iter_errors(&instance) {
            self.describe(&error, params, &mut problems);
        }
        if problems.is_empty() {
            let Value::Object(map) = instance else {
                return Err(vec!["parameters must be an object".to_owned()]);
            };
            return Ok(map);
        }
        problems.sort_by_key(|(class, order, _)| (*class, *order));
        problems.dedup_by(|a, b| a.2 == b.2);
        Err(problems.into_iter().map(|(_, _, m)| m).collect())
    }

    fn order_of(&self, name: &str) -> usize {
        self.declared
            .iter()
            .position(|d| d == name)
            .unwrap_or(self.declared.len())
    }

    fn describe(
        &self,
        error: &ValidationError<'_>,
        supplied: &Map<String, Value>,
        out: &mut Vec<(u8, usize, String)>,
    ) {
        let path = error.instance_path().as_str();
        let top = path.trim_start_matches('/').split('/').next().unwrap_or("");
        let name = path.trim_start_matches('/').replace('/', ".");
        let order = self.order_of(top);
        match error.kind() {
            ValidationErrorKind::AdditionalProperties { unexpected }
            | ValidationErrorKind::UnevaluatedProperties { unexpected } => {
                for key in unexpected {
                    let msg = if path.is_empty() {
                        format!("unknown parameter \"{key}\"")
                    } else {
                        format!("parameter \"{name}\" has an unknown field \"{key}\"")
                    };
                    let pos = supplied.keys().position(|k| k == key).unwrap_or(0);
                    out.push((0, pos, msg));
                }
            }
            ValidationErrorKind::Required { property } => {
                let prop = property
                    .as_str()
                    .map_or_else(|| property.to_string(), str::to_owned);
                let msg = if path.is_empty() {
                    format!("missing required parameter \"{prop}\"")
                } else {
                    format!("parameter \"{name}\" is missing the field \"{prop}\"")
                };
                out.push((1, self.order_of(&prop), msg));
            }
            ValidationErrorKind::Enum { options } => {
                let choices = options
                    .as_array()
                    .map(|a| a.iter().map(plain).collect::<Vec<_>>().join(", "))
                    .unwrap_or_else(|| plain(options));
                out.push((
                    2,
                    order,
                    format!("parameter \"{name}\" must be one of: {choices}"),
                ));
            }
            ValidationErrorKind::Constant { expected_value } => {
                let v = plain(expected_value);
                out.push((2, order, format!("parameter \"{name}\" must be {v}")));
            }
            ValidationErrorKind::Type { kind } => {
                let expected = match kind {
                    TypeKind::Single(t) => article(&t.to_string()),
                    TypeKind::Multiple(ts) => ts
                        .iter()
                        .map(|t| article(&t.to_string()))
                        .collect::<Vec<_>>()
                        .join(" or "),
                };
                out.push((2, order, format!("parameter \"{name}\" must be {expected}")));
            }
            ValidationErrorKind::Minimum { limit } => {
                let l = plain(limit);
                out.push((
                    2,
                    order,
                    format!("parameter \"{name}\" must be at least {l}"),
                ));
            }
            ValidationErrorKind::Maximum { limit } => {
                let l = plain(limit);
                out.push((
                    2,
                    order,
                    format!("parameter \"{name}\" must be at most {l}"),
                ));
            }
            ValidationErrorKind::ExclusiveMinimum { limit } => {
                let l = plain(limit);
                out.push((
                    2,
                    order,
                    format!("parameter \"{name}\" must be greater than {l}"),
                ));
            }
            ValidationErrorKind::ExclusiveMaximum { limit } => {
                let l = plain(limit);
                out.push((
                    2,
                    order,
                    format!("parameter \"{name}\" must be less than {l}"),
                ));
            }
            _ => {
                let subject = if path.is_empty() {
                    "parameters".to_owned()
                } else {
                    format!("parameter \"{name}\"")
                };
                out.push((2, order, format!("{subject}: {error}")));
            }
        }
    }
}

fn article(t: &str) -> String {
    match t {
        "integer" | "array" | "object" => format!("an {t}"),
        "null" => "null".to_owned(),
        _ => format!("a {t}"),
    }
}

/// A value as a person reads it: strings bare, numbers and booleans as text.
fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn validator() -> ParamValidator {
        ParamValidator::compile(
            "enlarge-shape",
            &json!({
                "type": "object",
                "properties": {
                    "color": {"type": "string"},
                    "scale_factor": {"type": "number", "enum": [0.25, 0.5, 1.5]},
                    "count": {"type": "integer", "minimum": 1}
                },
                "required": ["color"],
                "additionalProperties": false
            }),
        )
        .unwrap()
    }

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn every_problem_at_once_in_plain_sentences() {
        let errs = validator()
            .validate(&obj(json!({"radius": 3, "scale_factor": 2, "count": "x"})))
            .unwrap_err();
        assert_eq!(
            errs,
            vec![
                "unknown parameter \"radius\"".to_owned(),
                "missing required parameter \"color\"".to_owned(),
                "parameter \"scale_factor\" must be one of: 0.25, 0.5, 1.5".to_owned(),
                "parameter \"count\" must be an integer".to_owned(),
            ]
        );
    }

    #[test]
    fn numeric_choices_validate_and_nulls_are_absent() {
        let ok = validator()
            .validate(&obj(
                json!({"color": "red", "scale_factor": 1.5, "count": null}),
            ))
            .unwrap();
        assert_eq!(ok.get("scale_factor"), Some(&json!(1.5)));
        assert!(!ok.contains_key("count"));
    }

    #[test]
    fn malformed_schema_names_the_pointer() {
        let err = ParamValidator::compile(
            "broken",
            &json!({"type": "object", "properties": {"x": {"type": "strin"}}}),
        )
        .unwrap_err();
        assert_eq!(err.tool, "broken");
        assert!(err.pointer.starts_with("/properties/x"), "{err}");
        let err = ParamValidator::compile("arr", &json!({"type": "array"})).unwrap_err();
        assert_eq!(err.pointer, "/type");
    }

    #[test]
    fn a_deferred_validator_checks_at_the_first_call() {
        let schema =
            json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
        let v = ParamValidator::deferred("t", &schema);
        assert!(v.compiled.get().is_none(), "nothing compiled before a call");
        let params = |v: Value| v.as_object().cloned().unwrap();
        assert!(v.validate(&params(json!({"n": 1}))).is_ok());
        assert!(v.compiled.get().is_some());
        assert_eq!(
            v.validate(&params(json!({}))).unwrap_err(),
            ["missing required parameter \"n\""]
        );
        // A broken built-in schema fails every call with the registration check's sentence.
        let broken = ParamValidator::deferred(
            "bad",
            &json!({"type": "object", "properties": {"x": {"type": "strin"}}}),
        );
        let problems = broken.validate(&params(json!({}))).unwrap_err();
        assert_eq!(problems.len(), 1);
        assert!(
            problems[0].starts_with("tool \"bad\" has an invalid input schema at /properties/x"),
            "{problems:?}"
        );
        assert!(problems[0].contains("cannot be called"), "{problems:?}");
        let not_object = ParamValidator::deferred("arr", &json!({"type": "array"}));
        assert!(not_object.validate(&Map::new()).unwrap_err()[0].contains("at /type"));
    }
}
