//! The plain-language confirmation a person judges before a mutating call runs.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// What the preview is built from. Targets and parameters must already be resolved and
/// validated: a person must never approve a call that then fails.
#[derive(Debug, Clone)]
pub struct PreviewInput<'a> {
    /// The tool's title, e.g. "Set Track Color".
    pub tool_title: &'a str,
    /// The document's title; `None` reads as "the current plot".
    pub plot_title: Option<&'a str>,
    /// The targets by name, e.g. "HMS Nelson, Contact" or "all 12 features in Exercise Alpha".
    pub target: &'a str,
    pub params: &'a Map<String, Value>,
    /// The consequence sentence; `None` uses [`DEFAULT_CONSEQUENCE`].
    pub consequence: Option<&'a str>,
    /// Values read differently from how they were written (`end_time: "05:00" read as
    /// 2026-03-01T05:00:00Z`), one line each after the parameters.
    pub notes: &'a [String],
    /// What the call will do, in numbers, from a dry run (`remove 240 of 361 positions of HMS
    /// Nelson (keep 121)`): one `Effect:` line each.
    pub effect: &'a [String],
}

pub const DEFAULT_CONSEQUENCE: &str = "The change is applied to the open plot and left unsaved (undo or revert to discard, save to keep).";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Preview {
    /// `Run <Tool> on <Plot>`.
    pub title: String,
    /// Markdown body: what is modified, the target, one line per parameter, the consequence.
    pub body: String,
}

impl Preview {
    pub fn build(input: &PreviewInput<'_>) -> Self {
        let tool = input.tool_title;
        let plot = input.plot_title.unwrap_or("the current plot");
        let mut body = format!("**{tool}** will modify **{plot}**.\n\n");
        body.push_str(&format!("- Target: {}\n", input.target));
        if input.params.is_empty() {
            body.push_str("- Parameters: (defaults)\n");
        } else {
            for (k, v) in input.params {
                body.push_str(&format!("- {k}: {}\n", raw_value(v)));
            }
        }
        for note in input.notes {
            body.push_str(&format!("- Note: {note}\n"));
        }
        for line in input.effect {
            body.push_str(&format!("- Effect: {line}\n"));
        }
        body.push('\n');
        body.push_str(input.consequence.unwrap_or(DEFAULT_CONSEQUENCE));
        // Sanitise the assembled text, not the parts: concatenation can create `{"` (a key `"`
        // after an object's `{`), which a property test found.
        Self {
            // "Run Shell Command on …", not "Run Run Shell Command on …".
            title: sanitize(&if tool.starts_with("Run ") {
                format!("{tool} on {plot}")
            } else {
                format!("Run {tool} on {plot}")
            }),
            body: sanitize(&body),
        }
    }

    /// The preview without Markdown emphasis, for terminals.
    pub fn plain_text(&self) -> String {
        format!("{}\n\n{}", self.title, self.body.replace("**", ""))
    }
}

/// A parameter value in plain language: `(none)` for null, arrays as their items joined with
/// ", ", strings as they are, numbers and booleans as text, objects as `{k1, k2}` (key names
/// only). Never raw JSON.
pub fn format_value(v: &Value) -> String {
    sanitize(&raw_value(v))
}

fn raw_value(v: &Value) -> String {
    match v {
        Value::Null => "(none)".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.clone(),
        Value::Array(items) => items.iter().map(raw_value).collect::<Vec<_>>().join(", "),
        Value::Object(m) => format!(
            "{{{}}}",
            m.keys().map(String::as_str).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// Text that arrives from a model or a file could itself look like JSON; a preview must never
/// show `{"`, so break that sequence up.
fn sanitize(s: &str) -> String {
    // Replacing `{"` with `{ "` cannot create a new `{"`, so one pass suffices.
    if s.contains("{\"") {
        s.replace("{\"", "{ \"")
    } else {
        s.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn matches_the_reference_layout() {
        let params = json!({"color": "red"});
        let p = Preview::build(&PreviewInput {
            tool_title: "Set Track Color",
            plot_title: Some("Exercise Alpha — Day 1"),
            target: "HMS Nelson",
            params: params.as_object().unwrap(),
            consequence: None,
            notes: &[],
            effect: &[],
        });
        assert_eq!(p.title, "Run Set Track Color on Exercise Alpha — Day 1");
        assert_eq!(
            p.body,
            format!(
                "**Set Track Color** will modify **Exercise Alpha — Day 1**.\n\n- Target: HMS Nelson\n- color: red\n\n{DEFAULT_CONSEQUENCE}"
            )
        );
    }

    #[test]
    fn values_in_plain_language() {
        assert_eq!(format_value(&json!(null)), "(none)");
        assert_eq!(format_value(&json!([1, "a", true])), "1, a, true");
        assert_eq!(format_value(&json!({"lon": 1, "lat": 2})), "{lon, lat}");
        assert_eq!(format_value(&json!(2.5)), "2.5");
        assert_eq!(format_value(&json!("{\"a\":1}")), "{ \"a\":1}");
        let empty = Map::new();
        let p = Preview::build(&PreviewInput {
            tool_title: "T",
            plot_title: None,
            target: "x",
            params: &empty,
            consequence: Some("Done."),
            notes: &[],
            effect: &[],
        });
        assert!(p.body.contains("- Parameters: (defaults)"));
        assert!(p.title.ends_with("on the current plot"));
    }
}
