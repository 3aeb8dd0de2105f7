//! Constrained decoding: which servers offer it, and the JSON schema that admits exactly one
//! currently allowed tool call (with that tool's own closed argument schema, enums from the
//! live session) or a final reply.
//!
//! llama.cpp's server, vLLM and Ollama all accept an OpenAI `response_format` of type
//! `json_schema` and decode only strings the schema admits. The reply then is one JSON object,
//! `{"name": TOOL, "arguments": {...}}` or `{"reply": TEXT}`, read by [`read_reply`].

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use toolgate_plot::debrief::{LIST_TOOLS, RUN_TOOL, SEARCH, SUMMARIZE};

use crate::small::Offer;

/// The kind of server behind an OpenAI-compatible URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ServerKind {
    LlamaCpp,
    Vllm,
    Ollama,
    /// A model running inside toolgate (`--model-file`): llama.cpp's grammar sampler decodes
    /// under the schema.
    InProcess,
    /// Not recognised (a cloud API, LM Studio, a proxy…): nothing is assumed.
    #[default]
    Unknown,
}

/// What toolgate learnt about a model server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerInfo {
    pub kind: ServerKind,
    /// The context window in tokens, when the server says.
    pub n_ctx: Option<usize>,
    /// The model's parameter count, when the server says (llama.cpp's `/v1/models` `meta`).
    #[serde(default)]
    pub n_params: Option<u64>,
}

impl ServerInfo {
    /// The server decodes under a `response_format` JSON schema.
    pub fn json_schema(&self) -> bool {
        matches!(
            self.kind,
            ServerKind::LlamaCpp | ServerKind::Vllm | ServerKind::Ollama | ServerKind::InProcess
        )
    }
}

fn as_ctx(v: &Value) -> Option<usize> {
    v.as_u64()
        .and_then(|n| usize::try_from(n).ok())
        .filter(|n| *n > 0)
}

/// Recognise a server from its `GET /props` body (llama.cpp only) and its `GET /v1/models`
/// body (`owned_by`: `llamacpp`, `vllm`, `library`/`ollama`).
pub fn detect(props: Option<&Value>, models: Option<&Value>) -> ServerInfo {
    let mut info = ServerInfo::default();
    if let Some(p) = props
        && let Some(n) = p
            .pointer("/default_generation_settings/n_ctx")
            .or_else(|| p.get("n_ctx"))
            .and_then(as_ctx)
    {
        info = ServerInfo {
            kind: ServerKind::LlamaCpp,
            n_ctx: Some(n),
            // The GGUF's file name usually states the size ("…-0.5b-instruct-q8_0.gguf").
            n_params: p
                .get("model_path")
                .and_then(Value::as_str)
                .and_then(|path| path.rsplit('/').next())
                .and_then(crate::small::params_in_name),
        };
    }
    let first = models.and_then(|m| m.pointer("/data/0"));
    if let Some(m) = first {
        let owner = m["owned_by"].as_str().unwrap_or_default().to_lowercase();
        let kind = match owner.as_str() {
            "llamacpp" | "llama.cpp" => ServerKind::LlamaCpp,
            "vllm" => ServerKind::Vllm,
            "library" | "ollama" => ServerKind::Ollama,
            _ => ServerKind::Unknown,
        };
        if info.kind == ServerKind::Unknown {
            info.kind = kind;
        }
        info.n_params = m
            .pointer("/meta/n_params")
            .and_then(Value::as_u64)
            .or(info.n_params);
        if info.n_ctx.is_none() {
            info.n_ctx = m
                .pointer("/meta/n_ctx")
                .or_else(|| m.get("max_model_len"))
                .and_then(as_ctx);
        }
    }
    info
}

/// What a constrained turn may choose from: what the live session contributes to the schema.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Choices {
    /// Display names of the active plot's features (targets for `featureNames`).
    pub feature_names: Vec<String>,
    /// Something is selected on the active plot.
    pub has_selection: bool,
    /// Ids of the open plots.
    pub open_plots: Vec<String>,
    /// Years the catalogue's plots span (dates outside them can match nothing).
    pub years: Vec<i32>,
    /// The request names a month or a date ([`names_a_date`]): the search offers a time window.
    pub dates: bool,
    /// The registry's runnable tools: id and input schema.
    pub tools: Vec<(String, Value)>,
    /// The request's targets are settled in code (named, or the selection it points at): a run
    /// call carries no `featureNames`/`scope` to decode; the loop fills them.
    pub settled_targets: bool,
    /// Parameters the analyst's words fill in code (a colour, a time window, speed bounds): left
    /// out of a run call's schema, so the model spends no tokens on them.
    pub settled_params: Vec<String>,
}

/// The English month names, January first.
pub const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// The runnable tools `utterance` names: a tool's id as written (`speed-filter`), or every
/// distinctive word of its id (`set-track-color` ← "colour … red": `color`, with British
/// spellings and plurals read as the id's). Empty when it names none; the constrained schema
/// then admits every tool, else only these (a small model otherwise runs the listing's first).
pub fn tools_named(utterance: &str, ids: &[&str]) -> Vec<String> {
    // Words in many ids that say nothing about which tool is meant.
    const GENERIC: [&str; 9] = [
        "set", "calc", "tool", "track", "tracks", "get", "show", "to", "by",
    ];
    let norm = |w: &str| -> String {
        let w = w.to_lowercase().replace("colour", "color");
        w.strip_suffix('s')
            .filter(|r| r.len() > 3)
            .map_or(w.clone(), str::to_owned)
    };
    let lower = utterance.to_lowercase();
    let words: Vec<String> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(norm)
        .collect();
    ids.iter()
        .filter(|id| {
            if lower.contains(&id.to_lowercase()) {
                return true;
            }
            let own: Vec<String> = id
                .split('-')
                .filter(|w| !GENERIC.contains(w))
                .map(norm)
                .collect();
            !own.is_empty() && own.iter().all(|w| words.contains(w))
        })
        .map(|id| (*id).to_owned())
        .collect()
}

/// The request names a month (English name or three-letter abbreviation) or a date (a year
/// like 2026, or an ISO date).
pub fn names_a_date(utterance: &str) -> bool {
    let lower = utterance.to_lowercase();
    lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .any(|w| {
            MONTHS
                .iter()
                // "may" is left out: it is far more often the verb.
                .any(|m| w != "may" && (w == *m || (w.len() == 3 && m.starts_with(w))))
                || (w.len() == 4
                    && w.chars().all(|c| c.is_ascii_digit())
                    && w.starts_with(['1', '2']))
        })
        || (w_has_iso_date(&lower))
}

fn w_has_iso_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.windows(10).any(|w| {
        w[..4].iter().all(u8::is_ascii_digit)
            && w[4] == b'-'
            && w[5..7].iter().all(u8::is_ascii_digit)
            && w[7] == b'-'
            && w[8..].iter().all(u8::is_ascii_digit)
    })
}

/// Longest reply text the schema admits.
pub const REPLY_MAX: usize = 300;

fn obj(props: Map<String, Value>, required: &[&str]) -> Value {
    let mut o = json!({"type": "object", "additionalProperties": false, "properties": props});
    if !required.is_empty() {
        o["required"] = json!(required);
    }
    o
}

fn date_schema(years: &[i32]) -> Value {
    if years.is_empty() {
        return json!({"type": "string", "maxLength": 25});
    }
    let ys: Vec<String> = years.iter().map(i32::to_string).collect();
    json!({"type": "string", "pattern": format!(
        "^({})-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])(T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]Z)?$",
        ys.join("|")
    )})
}

/// A tool's own schema, closed: every object that lists properties admits no others.
pub fn closed(schema: &Value) -> Value {
    match schema {
        Value::Object(m) => {
            let mut out = Map::new();
            for (k, v) in m {
                let v = match k.as_str() {
                    "properties" => match v {
                        Value::Object(props) => Value::Object(
                            props.iter().map(|(p, s)| (p.clone(), closed(s))).collect(),
                        ),
                        other => other.clone(),
                    },
                    "items" | "anyOf" | "oneOf" | "allOf" => closed(v),
                    _ => v.clone(),
                };
                out.insert(k.clone(), v);
            }
            let is_object = out.get("type").and_then(Value::as_str) == Some("object")
                || out.contains_key("properties");
            if is_object && !out.contains_key("additionalProperties") {
                out.insert("additionalProperties".into(), Value::Bool(false));
            }
            if is_object && !out.contains_key("properties") {
                out.insert("properties".into(), json!({}));
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(closed).collect()),
        other => other.clone(),
    }
}

/// The argument schema of one agent tool, closed and narrowed to the live session.
pub fn arguments_schema(tool: &str, s: &Choices) -> Value {
    let mut p = Map::new();
    match tool {
        SEARCH => {
            // Words are required (a search for everything opens nothing and answers nothing);
            // dates only when the request names a month or a date (else small models invent
            // them), within the catalogue's years.
            p.insert(
                "text".into(),
                json!({"type": "string", "minLength": 2, "maxLength": 60}),
            );
            if s.dates {
                p.insert("startTime".into(), date_schema(&s.years));
                p.insert("endTime".into(), date_schema(&s.years));
            }
            p.insert(
                "platforms".into(),
                json!({"type": "array", "items": {"type": "string", "minLength": 2, "maxLength": 40}, "minItems": 1, "maxItems": 3}),
            );
            p.insert("open".into(), json!({"type": "boolean"}));
            obj(p, &["text"])
        }
        SUMMARIZE => {
            if s.has_selection {
                p.insert("selectionOnly".into(), json!({"type": "boolean"}));
            }
            if s.open_plots.len() > 1 {
                p.insert("plotId".into(), json!({"enum": s.open_plots}));
            }
            obj(p, &[])
        }
        LIST_TOOLS => obj(p, &[]),
        RUN_TOOL => {
            let branches: Vec<Value> = s
                .tools
                .iter()
                .map(|(id, schema)| {
                    // Targets before parameters: the model names what it acts on first. With
                    // nothing selected a call must name its features (else it is refused).
                    let mut p = Map::new();
                    p.insert("toolId".into(), json!({"const": id}));
                    let mut required = vec!["toolId"];
                    if !s.feature_names.is_empty() && !s.settled_targets {
                        p.insert(
                            "featureNames".into(),
                            json!({"type": "array", "items": {"enum": s.feature_names}, "minItems": 1, "maxItems": 5}),
                        );
                        if !s.has_selection {
                            required.push("featureNames");
                        }
                    }
                    if s.has_selection && !s.settled_targets {
                        p.insert("scope".into(), json!({"enum": ["all", "selection"]}));
                    }
                    let mut params = closed(schema);
                    if let Some(o) = params.as_object_mut() {
                        if let Some(props) = o.get_mut("properties").and_then(Value::as_object_mut)
                        {
                            props.retain(|k, _| !s.settled_params.contains(k));
                        }
                        if let Some(req) = o.get_mut("required").and_then(Value::as_array_mut) {
                            req.retain(|k| {
                                k.as_str().is_none_or(|k| !s.settled_params.iter().any(|x| x == k))
                            });
                        }
                    }
                    p.insert("params".into(), params);
                    required.push("params");
                    obj(p, &required)
                })
                .collect();
            match branches.len() {
                // No runnable tool: a call that can never be valid is left out by `call_schema`.
                0 => json!({"not": {}}),
                1 => branches.into_iter().next().unwrap_or(Value::Null),
                _ => json!({"anyOf": branches}),
            }
        }
        _ => json!({"not": {}}),
    }
}

/// The schema of one reply under `offer`: exactly one offered tool's call (`name` and that
/// tool's closed `arguments`), or — when the offer allows it — a final `reply`.
pub fn call_schema(offer: &Offer, s: &Choices) -> Value {
    let mut branches: Vec<Value> = Vec::new();
    for &tool in &offer.tools {
        if tool == RUN_TOOL && s.tools.is_empty() {
            continue;
        }
        let mut p = Map::new();
        p.insert("name".into(), json!({"const": tool}));
        p.insert("arguments".into(), arguments_schema(tool, s));
        branches.push(obj(p, &["name", "arguments"]));
    }
    if offer.reply || branches.is_empty() {
        let mut p = Map::new();
        p.insert(
            "reply".into(),
            json!({"type": "string", "minLength": 1, "maxLength": REPLY_MAX}),
        );
        branches.push(obj(p, &["reply"]));
    }
    if branches.len() == 1 {
        branches.into_iter().next().unwrap_or(Value::Null)
    } else {
        json!({"anyOf": branches})
    }
}

/// The `response_format` body field for a schema.
pub fn response_format(schema: &Value) -> Value {
    json!({"type": "json_schema", "json_schema": {"name": "toolgate_step", "strict": true, "schema": schema}})
}

/// The instructions a constrained turn adds to the system prompt: the answer shape and the
/// four tools in one line each (the same text every turn, so a server's prompt cache holds).
pub const CONSTRAINED_INSTRUCTIONS: &str = "Answer with exactly one JSON object and nothing else.\n\
To call a tool: {\"name\": \"<tool>\", \"arguments\": {...}}. To answer the analyst: {\"reply\": \"<text>\"}.\n\
Tools:\n\
- debrief_searchPlots: find plots in the catalogue (text, startTime, endTime, platforms); open:true opens the one match.\n\
- debrief_summarizeCurrentPlot: what the open plot contains (features, names, times); selectionOnly:true for the selected features only.\n\
- debrief_listTools: the analysis and editing tools and their parameters.\n\
- debrief_runTool: run one tool by toolId with its params, on featureNames or the selection.\n\
Use only arguments the analyst's words give; leave out everything else. Reply only after the tool results answer the request; never claim an edit that no tool made.";

/// What a constrained reply says.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    Call { name: String, arguments: Value },
    Reply(String),
}

/// Read a reply decoded under [`call_schema`]. `None` when the text is not one of its shapes
/// (a server that ignored the schema); the caller then falls back to the tolerant parser.
pub fn read_reply(text: &str) -> Option<Step> {
    let v: Value = serde_json::from_str(text.trim()).ok()?;
    let o = v.as_object()?;
    if let Some(r) = o.get("reply").and_then(Value::as_str)
        && o.len() == 1
    {
        return Some(Step::Reply(r.to_owned()));
    }
    let name = o.get("name")?.as_str()?.to_owned();
    let arguments = o.get("arguments").cloned().unwrap_or_else(|| json!({}));
    arguments
        .is_object()
        .then_some(Step::Call { name, arguments })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::small::Stage;

    fn choices() -> Choices {
        Choices {
            feature_names: vec!["HMS Nelson".into(), "Contact".into()],
            has_selection: true,
            open_plots: vec!["stac://a".into()],
            years: vec![2026],
            dates: true,
            tools: vec![
                (
                    "set-track-color".into(),
                    json!({"type": "object", "required": ["color"], "properties": {"color": {"type": "string"}}}),
                ),
                (
                    "speed-filter".into(),
                    json!({"type": "object", "properties": {"max_knots": {"type": "number", "minimum": 0}}}),
                ),
            ],
            settled_targets: false,
            settled_params: Vec::new(),
        }
    }

    #[test]
    fn what_code_settles_is_not_decoded() {
        let mut s = choices();
        s.settled_targets = true;
        s.settled_params = vec!["color".into()];
        let a = arguments_schema(RUN_TOOL, &s);
        let text = a.to_string();
        assert!(
            !text.contains("featureNames") && !text.contains("scope"),
            "{text}"
        );
        assert!(!text.contains("\"color\""), "{text}");
        let v = jsonschema::validator_for(&a).unwrap();
        assert!(v.is_valid(&json!({"toolId": "set-track-color", "params": {}})));
    }

    fn validator(offer: &Offer) -> jsonschema::Validator {
        let schema = call_schema(offer, &choices());
        jsonschema::validator_for(&schema).expect("the schema compiles")
    }

    #[test]
    fn a_tool_the_request_names_narrows_the_choice() {
        let ids = [
            "range-calc",
            "speed-filter",
            "set-track-color",
            "set-label-color",
            "trim-track",
            "track-stats",
        ];
        assert_eq!(
            tools_named("run speed-filter below 5 knots on the selection", &ids),
            ["speed-filter"]
        );
        assert_eq!(
            tools_named("colour the submarine track red", &ids),
            ["set-track-color"]
        );
        assert_eq!(
            tools_named("trim the frigate's track", &ids),
            ["trim-track"]
        );
        assert_eq!(tools_named("what ranges are there", &ids), ["range-calc"]);
        assert!(tools_named("do something useful", &ids).is_empty());
    }

    #[test]
    fn the_schema_admits_exactly_the_offered_calls_with_their_own_arguments() {
        let v = validator(&Stage::Listed.offer(2, true));
        for ok in [
            json!({"name": RUN_TOOL, "arguments": {"toolId": "set-track-color", "params": {"color": "red"}, "featureNames": ["Contact"]}}),
            json!({"name": RUN_TOOL, "arguments": {"toolId": "speed-filter", "params": {"max_knots": 5}, "scope": "selection"}}),
            json!({"name": SUMMARIZE, "arguments": {"selectionOnly": true}}),
            json!({"reply": "Done."}),
        ] {
            assert!(v.is_valid(&ok), "should be admitted: {ok}");
        }
        for bad in [
            // A tool not offered in this stage.
            json!({"name": LIST_TOOLS, "arguments": {}}),
            // An invented tool, an invented registry tool id.
            json!({"name": "debrief_colourTrack", "arguments": {}}),
            json!({"name": RUN_TOOL, "arguments": {"toolId": "setTrackColour", "params": {"color": "red"}}}),
            // Another tool's parameter, an invented parameter, a feature that is not in the plot.
            json!({"name": RUN_TOOL, "arguments": {"toolId": "speed-filter", "params": {"color": "red"}}}),
            json!({"name": RUN_TOOL, "arguments": {"toolId": "set-track-color", "params": {"color": "red"}, "bbox": [1, 2, 3, 4]}}),
            json!({"name": RUN_TOOL, "arguments": {"toolId": "set-track-color", "params": {"color": "red"}, "featureNames": ["Submarine"]}}),
            // A required parameter left out; an invented summary argument.
            json!({"name": RUN_TOOL, "arguments": {"toolId": "set-track-color", "params": {}}}),
            json!({"name": SUMMARIZE, "arguments": {"tokenBudget": 50}}),
            // A reply with extra keys, or an empty one.
            json!({"reply": "x", "name": SUMMARIZE}),
            json!({"reply": ""}),
        ] {
            assert!(!v.is_valid(&bad), "should be rejected: {bad}");
        }
    }

    #[test]
    fn the_first_step_has_no_free_reply_and_dates_stay_in_the_catalogue() {
        let v = validator(&Stage::NoPlot.offer(0, true));
        assert!(!v.is_valid(&json!({"reply": "Here are your plots."})));
        assert!(v.is_valid(&json!({"name": SEARCH, "arguments": {"text": "Day 1", "open": true}})));
        assert!(v.is_valid(&json!({"name": SEARCH, "arguments": {"text": "x y", "startTime": "2026-03-01T00:00:00Z", "endTime": "2026-03-31"}})));
        assert!(!v.is_valid(
            &json!({"name": SEARCH, "arguments": {"text": "x y", "startTime": "2023-01-01T00:00:00Z"}})
        ));
        assert!(!v.is_valid(&json!({"name": SEARCH, "arguments": {"bbox": [100, 100, 200, 200]}})));
        assert!(
            !v.is_valid(&json!({"name": SEARCH, "arguments": {"open": true}})),
            "a search has words"
        );
        assert!(!v.is_valid(&json!({"name": SEARCH, "arguments": {"platforms": ["submarine"]}})));
        assert!(v.is_valid(
            &json!({"name": SEARCH, "arguments": {"text": "submarine", "platforms": ["submarine"]}})
        ));
        // A request that names no date gets no time window.
        let mut s = choices();
        s.dates = false;
        let v = jsonschema::validator_for(&call_schema(&Stage::NoPlot.offer(0, true), &s)).unwrap();
        assert!(!v.is_valid(
            &json!({"name": SEARCH, "arguments": {"text": "Alpha", "startTime": "2026-03-01"}})
        ));
        assert!(v.is_valid(&json!({"name": SEARCH, "arguments": {"text": "Alpha", "open": true}})));
        assert!(!v.is_valid(&json!({"name": SUMMARIZE, "arguments": {}})));
        // Only one branch: the schema is that call itself.
        let s = call_schema(&Stage::Opened.offer(0, true), &choices());
        assert_eq!(s["properties"]["name"]["const"], SUMMARIZE);
        // Nothing offered: only the reply.
        let s = call_schema(&Stage::Ran.offer(3, true), &choices());
        assert_eq!(s["required"], json!(["reply"]));
    }

    #[test]
    fn without_a_selection_or_features_the_schema_narrows() {
        let mut s = choices();
        s.has_selection = false;
        s.feature_names.clear();
        let v = jsonschema::validator_for(&call_schema(&Stage::Listed.offer(1, true), &s)).unwrap();
        assert!(!v.is_valid(&json!({"name": SUMMARIZE, "arguments": {"selectionOnly": true}})));
        assert!(!v.is_valid(&json!({"name": RUN_TOOL, "arguments": {"toolId": "speed-filter", "params": {}, "scope": "selection"}})));
        assert!(v.is_valid(
            &json!({"name": RUN_TOOL, "arguments": {"toolId": "speed-filter", "params": {}}})
        ));
        // Features but nothing selected: a call must name its targets.
        s.feature_names = vec!["Contact".into()];
        let v =
            jsonschema::validator_for(&call_schema(&Stage::Listed.offer(1, false), &s)).unwrap();
        assert!(v.is_valid(&json!({"name": RUN_TOOL, "arguments": {"toolId": "speed-filter", "featureNames": ["Contact"], "params": {}}})));
        assert!(!v.is_valid(
            &json!({"name": RUN_TOOL, "arguments": {"toolId": "speed-filter", "params": {}}})
        ));
        s.tools.clear();
        let v = jsonschema::validator_for(&call_schema(&Stage::Listed.offer(1, true), &s)).unwrap();
        assert!(!v.is_valid(
            &json!({"name": RUN_TOOL, "arguments": {"toolId": "speed-filter", "params": {}}})
        ));
    }

    #[test]
    fn dates_are_recognised_in_requests() {
        for yes in [
            "find plots from March",
            "in mar please",
            "plots of 2026",
            "since 2026-03-01",
        ] {
            assert!(names_a_date(yes), "{yes}");
        }
        for no in [
            "open the Exercise Alpha day-1 plot",
            "what's in this plot?",
            "you may go",
            "run speed-filter below 5 knots",
        ] {
            assert!(!names_a_date(no), "{no}");
        }
    }

    #[test]
    fn servers_are_recognised_from_props_and_models() {
        let props = json!({"default_generation_settings": {"n_ctx": 8192}});
        let i = detect(Some(&props), None);
        assert_eq!(i.kind, ServerKind::LlamaCpp);
        assert_eq!(i.n_ctx, Some(8192));
        assert!(i.json_schema());
        let models =
            json!({"data": [{"id": "m", "owned_by": "llamacpp", "meta": {"n_ctx": 4096}}]});
        assert_eq!(
            detect(None, Some(&models)),
            ServerInfo {
                kind: ServerKind::LlamaCpp,
                n_ctx: Some(4096),
                n_params: None,
            }
        );
        let vllm = json!({"data": [{"id": "m", "owned_by": "vllm", "max_model_len": 32768}]});
        assert_eq!(
            detect(None, Some(&vllm)),
            ServerInfo {
                kind: ServerKind::Vllm,
                n_ctx: Some(32768),
                n_params: None,
            }
        );
        let props = json!({"default_generation_settings": {"n_ctx": 8192}, "model_path": "/m/qwen2.5-coder-0.5b-instruct-q8_0.gguf"});
        assert_eq!(detect(Some(&props), None).n_params, Some(500_000_000));
        let meta = json!({"data": [{"id": "m", "owned_by": "llamacpp", "meta": {"n_params": 494_032_768}}]});
        assert_eq!(detect(None, Some(&meta)).n_params, Some(494_032_768));
        let ollama = json!({"data": [{"id": "qwen2.5:0.5b", "owned_by": "library"}]});
        assert_eq!(detect(None, Some(&ollama)).kind, ServerKind::Ollama);
        let openai = json!({"data": [{"id": "gpt", "owned_by": "openai"}]});
        let i = detect(Some(&json!({"error": "not found"})), Some(&openai));
        assert_eq!(i, ServerInfo::default());
        assert!(!i.json_schema());
    }

    #[test]
    fn constrained_replies_are_read() {
        assert_eq!(
            read_reply(r#"{"name": "debrief_listTools", "arguments": {}}"#),
            Some(Step::Call {
                name: LIST_TOOLS.into(),
                arguments: json!({})
            })
        );
        assert_eq!(
            read_reply(" {\"reply\": \"Done.\"} "),
            Some(Step::Reply("Done.".into()))
        );
        assert_eq!(read_reply("Sure, here it is"), None);
        assert_eq!(read_reply(r#"{"name": "x", "arguments": 3}"#), None);
    }
}
