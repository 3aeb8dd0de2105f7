//! toolgate as a Debrief calc engine.
//!
//! * [`Request::from_input`] reads a catalogue-style input. Debrief's golden inputs come in
//!   several layouts, all accepted: a FeatureCollection with `_parameters` (or `parameters`); a
//!   FeatureCollection whose `properties` carry `{tool, params, time}` (the tote calculations);
//!   `{features: <FeatureCollection or array>, <param>: …}`; a bare FeatureCollection or array;
//!   and parameter-only inputs (`{clipboard_text}`, `{bounds, count, …}`).
//! * [`calc`] validates the parameters against the tool's schema (the registry's own
//!   [`ParamValidator`], so a model, a person and Debrief's client get the same answer), runs
//!   the native implementation and returns the ToolResponse (`content` items or `error`).
//! * [`stdio`] answers one debrief-calc stdio request (`{tool, features, params}`, reference
//!   §10.4) in that protocol's shape (nested `resource`, `duration_ms`).
//! * [`tool_server`]: the other side of the same protocol — external tool servers (existing
//!   Python tools) that speak it, as a registry provider.

#![warn(unreachable_pub)]
pub mod tool_server;

use std::time::Instant;

use serde_json::{Map, Value, json};
use toolgate_core::ParamValidator;
use toolgate_native_tools::catalogue::{self, CalcInput, Item, ToolError};

/// A usage error: the request itself cannot be run (unknown tool, input that is not JSON of a
/// known layout). A tool's own error is a ToolResponse, not this.
#[derive(Debug, thiserror::Error)]
pub enum CalcError {
    #[error(
        "unknown tool \"{}\"; run `toolgate calc --list` for the {count} catalogue tools",
        toolgate_core::clip::quote(tool)
    )]
    UnknownTool { tool: String, count: usize },
    #[error("the input is not a catalogue input: {0}")]
    BadInput(String),
    #[error(
        "parameter override \"{}\" is not NAME=VALUE",
        toolgate_core::clip::quote(.0)
    )]
    BadOverride(String),
}

/// One normalised request: the features and the parameters.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Request {
    pub features: Vec<Value>,
    pub params: Map<String, Value>,
}

fn features_of(v: &Value) -> Result<Vec<Value>, CalcError> {
    match v {
        Value::Array(a) => Ok(a.clone()),
        Value::Object(o) => match o.get("features") {
            Some(Value::Array(a)) => Ok(a.clone()),
            _ if o.get("type").and_then(Value::as_str) == Some("Feature") => Ok(vec![v.clone()]),
            _ => Err(CalcError::BadInput(
                "`features` must be an array of GeoJSON features or a FeatureCollection".into(),
            )),
        },
        Value::Null => Ok(Vec::new()),
        _ => Err(CalcError::BadInput(
            "`features` must be an array of GeoJSON features or a FeatureCollection".into(),
        )),
    }
}

fn merge(into: &mut Map<String, Value>, from: Option<&Value>) {
    if let Some(Value::Object(p)) = from {
        for (k, v) in p {
            into.insert(k.clone(), v.clone());
        }
    }
}

impl Request {
    /// Read any of the catalogue's input layouts.
    pub fn from_input(input: &Value) -> Result<Self, CalcError> {
        let Some(obj) = input.as_object() else {
            return match input {
                Value::Array(a) => Ok(Self {
                    features: a.clone(),
                    params: Map::new(),
                }),
                _ => Err(CalcError::BadInput(
                    "expected a JSON object (a FeatureCollection or {features, …params})".into(),
                )),
            };
        };
        let features = features_of(obj.get("features").unwrap_or(&Value::Null))?;
        let mut params = Map::new();
        if obj.contains_key("_parameters") || obj.contains_key("parameters") {
            merge(&mut params, obj.get("_parameters"));
            merge(&mut params, obj.get("parameters"));
        } else if obj.get("type").and_then(Value::as_str) == Some("FeatureCollection")
            && let Some(Value::Object(props)) = obj.get("properties")
        {
            // The tote calculations: properties {tool, params, time}.
            merge(&mut params, props.get("params"));
            if let Some(t) = props.get("time") {
                params.insert("time".into(), t.clone());
            }
        } else {
            for (k, v) in obj {
                match k.as_str() {
                    "type" | "features" => {}
                    "params" => merge(&mut params, Some(v)),
                    _ => {
                        params.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        Ok(Self { features, params })
    }

    /// Apply `-p name=value` overrides; a value that parses as JSON is taken as JSON, anything
    /// else as a string (`-p units=nm`, `-p interval_seconds=600`, `-p origin=[-1,51]`).
    pub fn override_params(&mut self, overrides: &[String]) -> Result<(), CalcError> {
        for o in overrides {
            let (k, v) = o
                .split_once('=')
                .filter(|(k, _)| !k.trim().is_empty())
                .ok_or_else(|| CalcError::BadOverride(o.clone()))?;
            let value = serde_json::from_str(v).unwrap_or_else(|_| Value::String(v.to_owned()));
            self.params.insert(k.trim().to_owned(), value);
        }
        Ok(())
    }
}

/// The ids of every catalogue tool, in listing order.
pub fn tool_ids() -> Vec<&'static str> {
    catalogue::entries().map(|e| e.id).collect()
}

/// Run a tool: `Ok(items)` or the tool's own error. Parameters are validated first.
pub fn run(tool: &str, request: &Request) -> Result<Result<Vec<Item>, ToolError>, CalcError> {
    let entry = catalogue::entry(tool).ok_or_else(|| CalcError::UnknownTool {
        tool: tool.to_owned(),
        count: tool_ids().len(),
    })?;
    let spec = entry.spec();
    let params = match ParamValidator::compile(entry.id, &spec.input_schema) {
        Ok(v) => match v.validate(&request.params) {
            Ok(p) => p,
            Err(problems) => {
                return Ok(Err(ToolError::invalid(format!(
                    "Invalid parameters for {}: {}",
                    entry.id,
                    problems.join("; ")
                ))));
            }
        },
        Err(e) => return Ok(Err(ToolError::failure(e.to_string()))),
    };
    let input = CalcInput::new(&request.features, &params);
    Ok((entry.run)(&input))
}

/// The ToolResponse in the catalogue's golden form (items flat: `uri`, `mimeType`, `text`).
pub fn response(result: &Result<Vec<Item>, ToolError>) -> Value {
    match result {
        Ok(items) => json!({
            "content": items.iter().map(|i| json!({
                "type": i.content_type,
                "uri": i.uri,
                "mimeType": i.mime_type,
                "text": i.body.text(),
                "annotations": i.annotations_json(),
            })).collect::<Vec<_>>()
        }),
        Err(e) => json!({ "error": e.to_json() }),
    }
}

/// `toolgate calc TOOL`: the golden-form ToolResponse of one input.
pub fn calc(tool: &str, input: &Value, overrides: &[String]) -> Result<Value, CalcError> {
    let mut request = Request::from_input(input)?;
    request.override_params(overrides)?;
    Ok(response(&run(tool, &request)?))
}

/// One debrief-calc stdio request (`{tool, features, params}`) → its response, in that
/// protocol's shape: items with a nested `resource`, and `duration_ms`. Every failure is an
/// error response (the protocol has no other channel): unknown tools and unreadable requests
/// are `invalid_input`, as debrief-calc's executor reports them.
pub fn stdio(request: &Value) -> Value {
    let started = Instant::now();
    let result = (|| {
        let tool = request
            .get("tool")
            .and_then(Value::as_str)
            .ok_or_else(|| ToolError::invalid("Request has no \"tool\" (a catalogue tool id)"))?;
        let features = features_of(request.get("features").unwrap_or(&Value::Null))
            .map_err(|e| ToolError::invalid(e.to_string()))?;
        let params = match request.get("params") {
            Some(Value::Object(p)) => p.clone(),
            None | Some(Value::Null) => Map::new(),
            Some(_) => return Err(ToolError::invalid("\"params\" must be an object")),
        };
        let req = Request { features, params };
        run(tool, &req).map_err(|e| ToolError::invalid(e.to_string()))?
    })();
    let duration_ms = started.elapsed().as_secs_f64() * 1000.0;
    match result {
        Ok(items) => json!({
            "content": items.iter().map(|i| json!({
                "type": i.content_type,
                "resource": {"uri": i.uri, "mimeType": i.mime_type, "text": i.body.text()},
                "annotations": i.annotations_json(),
            })).collect::<Vec<_>>(),
            "duration_ms": duration_ms,
        }),
        Err(e) => json!({"error": e.to_json(), "duration_ms": duration_ms}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 30 item 7: a tool name or override that came in is quoted clipped.
    #[test]
    fn errors_quote_clipped_input() {
        let long = "x".repeat(1_000_000);
        for e in [
            CalcError::UnknownTool {
                tool: long.clone(),
                count: 3,
            },
            CalcError::BadOverride(long),
        ] {
            let msg = e.to_string();
            assert!(
                msg.len() < 400 && msg.contains("(1000000 bytes)"),
                "{}",
                &msg[..300]
            );
        }
    }

    #[test]
    fn every_layout_is_read() {
        let fc = json!({"type": "FeatureCollection", "features": [{"type": "Feature", "id": "a"}]});
        let mut a = fc.clone();
        a["_parameters"] = json!({"x": 1});
        let mut b = fc.clone();
        b["properties"] = json!({"tool": "range-calc", "params": {"x": 1}, "time": "T"});
        let c = json!({"features": fc, "x": 1});
        let d = json!({"features": [{"type": "Feature", "id": "a"}], "params": {"x": 1}});
        for input in [a, c, d] {
            let r = Request::from_input(&input).unwrap();
            assert_eq!(r.features.len(), 1);
            assert_eq!(r.params.get("x"), Some(&json!(1)), "{input}");
        }
        let r = Request::from_input(&b).unwrap();
        assert_eq!(r.params.get("time"), Some(&json!("T")));
        assert_eq!(Request::from_input(&fc).unwrap().params.len(), 0);
        let p = Request::from_input(&json!({"clipboard_text": "x"})).unwrap();
        assert!(p.features.is_empty() && p.params.contains_key("clipboard_text"));
        assert!(Request::from_input(&json!("text")).is_err());
        assert!(Request::from_input(&json!({"features": 3})).is_err());
    }

    #[test]
    fn overrides_parse_json_or_strings() {
        let mut r = Request::default();
        r.override_params(&["units=nm".into(), "n=3".into(), "o=[1,2]".into()])
            .unwrap();
        assert_eq!(r.params["units"], json!("nm"));
        assert_eq!(r.params["n"], json!(3));
        assert_eq!(r.params["o"], json!([1, 2]));
        assert!(r.override_params(&["novalue".into()]).is_err());
    }

    #[test]
    fn unknown_tools_are_usage_errors_and_bad_params_are_tool_errors() {
        assert!(matches!(
            calc("no-such-tool", &json!({"features": []}), &[]),
            Err(CalcError::UnknownTool { .. })
        ));
        let r = calc(
            "range-calc",
            &json!({"features": [], "units": "furlongs"}),
            &[],
        )
        .unwrap();
        assert_eq!(r["error"]["data"]["debrief:errorCategory"], "invalid_input");
    }

    #[test]
    fn stdio_answers_in_the_protocols_shape() {
        let r = stdio(&json!({"tool": "range-calc", "features": [], "params": {}}));
        assert_eq!(r["error"]["message"], "Input features required");
        assert!(r["duration_ms"].is_number());
        let r = stdio(&json!({"features": []}));
        assert_eq!(r["error"]["data"]["debrief:errorCategory"], "invalid_input");
    }
}
