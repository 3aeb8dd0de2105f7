//! The tools manifest (`toolgate tools list --json`) as the installer reads it.

use serde_json::Value;

use crate::HostsError;

/// One parameter of a tool, in the manifest's order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    pub name: String,
    pub required: bool,
}

/// What the rendered files say about one tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolInfo {
    /// The registry id (`view`, `set-track-color`).
    pub name: String,
    /// The Python function name in the sandbox.
    pub python: String,
    /// The first sentence of the description.
    pub summary: String,
    pub params: Vec<Param>,
    /// `risk == "read-only"` in the manifest.
    pub read_only: bool,
}

impl ToolInfo {
    /// `view(path, view_range=None)`: the call shape, keyword names in order.
    pub fn signature(&self) -> String {
        let params: Vec<String> = self
            .params
            .iter()
            .map(|p| {
                if p.required {
                    p.name.clone()
                } else {
                    format!("{}=…", p.name)
                }
            })
            .collect();
        format!("{}({})", self.python, params.join(", "))
    }
}

/// Parse the JSON array printed by `toolgate tools list --json`.
pub fn parse_manifest(json: &str) -> Result<Vec<ToolInfo>, HostsError> {
    let value: Value =
        serde_json::from_str(json).map_err(|e| HostsError::Manifest(format!("not JSON: {e}")))?;
    manifest_from_value(&value)
}

/// The same, from an already parsed value.
pub fn manifest_from_value(value: &Value) -> Result<Vec<ToolInfo>, HostsError> {
    let items = value
        .as_array()
        .ok_or_else(|| HostsError::Manifest("expected a JSON array of tools".to_owned()))?;
    let mut tools = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let name = item
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| HostsError::Manifest(format!("tool #{i} has no \"name\"")))?
            .to_owned();
        let python = item
            .get("python")
            .and_then(Value::as_str)
            .unwrap_or(&name)
            .to_owned();
        let description = item
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or("");
        let required: Vec<&str> = item
            .pointer("/parameters/required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let params = item
            .pointer("/parameters/properties")
            .and_then(Value::as_object)
            .map(|props| {
                props
                    .keys()
                    .map(|k| Param {
                        name: k.clone(),
                        required: required.contains(&k.as_str()),
                    })
                    .collect()
            })
            .unwrap_or_default();
        tools.push(ToolInfo {
            name,
            python,
            summary: first_sentence(description),
            params,
            read_only: item.get("risk").and_then(Value::as_str) == Some("read-only"),
        });
    }
    Ok(tools)
}

/// Up to the first ". " (or the whole text), at most 120 characters.
fn first_sentence(text: &str) -> String {
    let text = text.trim();
    let end = text.find(". ").map(|i| i + 1).unwrap_or(text.len());
    let s = &text[..end];
    if s.chars().count() > 120 {
        let cut: String = s.chars().take(119).collect();
        format!("{}…", cut.trim_end())
    } else {
        s.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_tools_list_shape() {
        let json = r#"[{"name":"view","python":"view","description":"Read a file. More text.","parameters":{"type":"object","properties":{"path":{"type":"string"},"view_range":{"type":"array"}},"required":["path"]},"risk":"read-only"},
                       {"name":"set-track-color","python":"set_track_color","description":"Colour","risk":"modifies-plot"}]"#;
        let tools = parse_manifest(json).unwrap();
        assert_eq!(tools[0].signature(), "view(path, view_range=…)");
        assert_eq!(tools[0].summary, "Read a file.");
        assert!(tools[0].read_only);
        assert_eq!(tools[1].signature(), "set_track_color()");
        assert!(!tools[1].read_only);
        assert!(parse_manifest("{}").is_err());
        assert!(
            parse_manifest("[{}]")
                .unwrap_err()
                .to_string()
                .contains("#0")
        );
    }
}
