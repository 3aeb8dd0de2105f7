//! `eval arms`: the CodeAct comparison from host logs. Reads Copilot CLI
//! `--output-format json` JSONL transcripts of a baseline arm and a CodeAct arm per prompt and
//! reports turns, tool calls, input/output tokens, estimated cost, durations and whether CodeAct
//! was invoked, per prompt and in total.
//!
//! Event shapes relied on (inferred from the CLI's output, not a documented schema; see
//! `crates/eval/arms-sample/README.md`):
//!
//! | `type` | fields read |
//! |---|---|
//! | `assistant.message` | `data.inputTokens`, `data.outputTokens`, `data.content`, `data.toolRequests[]` (`name` or `toolName`; `arguments` or `toolInput`) — one API turn each |
//! | `tool.execution_start` | `data.toolName`, `data.arguments.command` (CodeAct evidence) |
//! | `tool.execution_complete` | `data.result.content` or `data.result` (bytes of tool output fed back) |
//! | `tool.execution_partial_result` | `data.partialOutput` (bytes) |
//! | `result` | `data.usage` or `usage`: `premiumRequests`, `totalApiDurationMs`, `sessionDurationMs` |
//! | `_prompt_tokens` (made up by harnesses from the CLI's process log) | `data.total` replaces the summed input tokens |
//!
//! Every event may carry `timestamp` (RFC 3339); the first-to-last span is reported as the wall
//! duration when the `result` event has no session duration. Lines that are not JSON objects are
//! counted and skipped.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use crate::EvalError;

/// Prices for the cost estimate, in dollars per million tokens.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Prices {
    pub input_per_m: f64,
    pub output_per_m: f64,
}

impl Default for Prices {
    /// The prices the reference harness used ($2.50/M input, $15/M output).
    fn default() -> Self {
        Self {
            input_per_m: 2.5,
            output_per_m: 15.0,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ArmMetrics {
    pub turns: u64,
    pub tool_calls: u64,
    pub tools: Vec<String>,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub premium_requests: f64,
    pub api_duration_ms: Option<f64>,
    pub session_duration_ms: Option<f64>,
    /// First to last event timestamp.
    pub wall_ms: Option<f64>,
    /// The best duration known: the session's, else the event span.
    pub duration_ms: Option<f64>,
    pub tool_result_bytes: u64,
    pub codeact_invoked: bool,
    /// A `result` event was seen.
    pub completed: bool,
    pub bad_lines: u64,
}

impl ArmMetrics {
    pub fn cost(&self, p: Prices) -> f64 {
        #[allow(clippy::cast_precision_loss)]
        let c = self.input_tokens as f64 * p.input_per_m / 1e6
            + self.output_tokens as f64 * p.output_per_m / 1e6;
        (c * 1e6).round() / 1e6
    }
}

fn is_word(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Whether a shell command runs CodeAct: the plugin's `scripts/codeact` or a standalone
/// `codeact` word, or toolgate's own `toolgate exec`.
pub fn command_runs_codeact(cmd: &str) -> bool {
    if cmd.contains("toolgate exec") {
        return true;
    }
    let seps = |c: char| c.is_whitespace() || "/&;|`".contains(c);
    cmd.match_indices("codeact").any(|(i, m)| {
        let after = cmd[i + m.len()..].chars().next();
        if after.is_some_and(is_word) {
            return false;
        }
        let before = cmd[..i].chars().next_back();
        cmd[..i].ends_with("scripts/") || before.is_none_or(seps)
    })
}

fn tool_is_codeact(name: &str, args: &Value) -> bool {
    let n = name.to_lowercase();
    if n == "skill" {
        return args["skill"]
            .as_str()
            .is_some_and(|s| s.to_lowercase().contains("codeact"));
    }
    if n.ends_with("run_code") {
        return true;
    }
    if n == "bash" || n == "shell" {
        return args["command"].as_str().is_some_and(command_runs_codeact);
    }
    false
}

fn text_len(v: &Value) -> u64 {
    match v {
        Value::Null => 0,
        Value::String(s) => s.len() as u64,
        other => other.to_string().len() as u64,
    }
}

/// Metrics of one arm's JSONL.
pub fn parse_jsonl(text: &str) -> ArmMetrics {
    let mut m = ArmMetrics::default();
    let mut prompt_total: Option<u64> = None;
    let mut first: Option<chrono::DateTime<chrono::FixedOffset>> = None;
    let mut last: Option<chrono::DateTime<chrono::FixedOffset>> = None;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let Ok(ev) = serde_json::from_str::<Value>(line) else {
            m.bad_lines += 1;
            continue;
        };
        if !ev.is_object() {
            m.bad_lines += 1;
            continue;
        }
        if let Some(t) = ev["timestamp"]
            .as_str()
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        {
            first = Some(first.map_or(t, |f| f.min(t)));
            last = Some(last.map_or(t, |l| l.max(t)));
        }
        let data = &ev["data"];
        match ev["type"].as_str().unwrap_or_default() {
            "assistant.message" => {
                m.turns += 1;
                m.input_tokens += data["inputTokens"].as_u64().unwrap_or(0);
                m.output_tokens += data["outputTokens"].as_u64().unwrap_or(0);
                for r in data["toolRequests"].as_array().into_iter().flatten() {
                    let name = r["name"]
                        .as_str()
                        .or_else(|| r["toolName"].as_str())
                        .unwrap_or("?")
                        .to_owned();
                    let args = if r["arguments"].is_null() {
                        &r["toolInput"]
                    } else {
                        &r["arguments"]
                    };
                    if tool_is_codeact(&name, args) {
                        m.codeact_invoked = true;
                    }
                    m.tool_calls += 1;
                    m.tools.push(name);
                }
            }
            "tool.execution_start"
                if tool_is_codeact(
                    data["toolName"].as_str().unwrap_or_default(),
                    &data["arguments"],
                ) =>
            {
                m.codeact_invoked = true;
            }
            "tool.execution_complete" => {
                let r = &data["result"];
                m.tool_result_bytes += if r["content"].is_null() {
                    text_len(r)
                } else {
                    text_len(&r["content"])
                };
            }
            "tool.execution_partial_result" => {
                m.tool_result_bytes += text_len(&data["partialOutput"]);
            }
            "result" => {
                m.completed = true;
                let u = if data["usage"].is_object() {
                    &data["usage"]
                } else {
                    &ev["usage"]
                };
                m.premium_requests += u["premiumRequests"].as_f64().unwrap_or(0.0);
                m.api_duration_ms = u["totalApiDurationMs"].as_f64().or(m.api_duration_ms);
                m.session_duration_ms = u["sessionDurationMs"].as_f64().or(m.session_duration_ms);
            }
            "_prompt_tokens" => prompt_total = data["total"].as_u64(),
            _ => {}
        }
    }
    if let Some(t) = prompt_total {
        m.input_tokens = t;
    }
    if let (Some(f), Some(l)) = (first, last) {
        #[allow(clippy::cast_precision_loss)]
        let ms = (l - f).num_milliseconds() as f64;
        m.wall_ms = Some(ms);
    }
    m.duration_ms = m.session_duration_ms.or(m.wall_ms);
    m
}

#[derive(Debug, Clone, Serialize)]
pub struct PromptComparison {
    pub prompt: String,
    pub baseline: ArmMetrics,
    pub codeact: ArmMetrics,
    pub baseline_cost: f64,
    pub codeact_cost: f64,
    /// `(baseline − codeact) / baseline × 100` per metric; absent when the baseline is 0.
    pub reduction_pct: BTreeMap<String, f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ArmsReport {
    pub prices: Prices,
    pub prompts: Vec<PromptComparison>,
    pub total: PromptComparison,
}

#[allow(clippy::cast_precision_loss)]
fn reductions(b: &ArmMetrics, c: &ArmMetrics, bc: f64, cc: f64) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    let mut put = |k: &str, b: f64, c: f64| {
        if b > 0.0 {
            out.insert(k.to_owned(), ((b - c) / b * 1000.0).round() / 10.0);
        }
    };
    put("turns", b.turns as f64, c.turns as f64);
    put("toolCalls", b.tool_calls as f64, c.tool_calls as f64);
    put("inputTokens", b.input_tokens as f64, c.input_tokens as f64);
    put(
        "outputTokens",
        b.output_tokens as f64,
        c.output_tokens as f64,
    );
    put("cost", bc, cc);
    put(
        "toolResultBytes",
        b.tool_result_bytes as f64,
        c.tool_result_bytes as f64,
    );
    if let (Some(bd), Some(cd)) = (b.duration_ms, c.duration_ms) {
        put("durationMs", bd, cd);
    }
    out
}

fn sum(list: &[&ArmMetrics]) -> ArmMetrics {
    let add = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (None, None) => None,
        (x, y) => Some(x.unwrap_or(0.0) + y.unwrap_or(0.0)),
    };
    let mut t = ArmMetrics {
        completed: true,
        ..ArmMetrics::default()
    };
    for m in list {
        t.turns += m.turns;
        t.tool_calls += m.tool_calls;
        t.input_tokens += m.input_tokens;
        t.output_tokens += m.output_tokens;
        t.premium_requests += m.premium_requests;
        t.api_duration_ms = add(t.api_duration_ms, m.api_duration_ms);
        t.session_duration_ms = add(t.session_duration_ms, m.session_duration_ms);
        t.wall_ms = add(t.wall_ms, m.wall_ms);
        t.duration_ms = add(t.duration_ms, m.duration_ms);
        t.tool_result_bytes += m.tool_result_bytes;
        t.codeact_invoked |= m.codeact_invoked;
        t.completed &= m.completed;
        t.bad_lines += m.bad_lines;
    }
    t
}

fn compare(prompt: &str, baseline: ArmMetrics, codeact: ArmMetrics, p: Prices) -> PromptComparison {
    let (bc, cc) = (baseline.cost(p), codeact.cost(p));
    PromptComparison {
        prompt: prompt.to_owned(),
        reduction_pct: reductions(&baseline, &codeact, bc, cc),
        baseline,
        codeact,
        baseline_cost: bc,
        codeact_cost: cc,
    }
}

/// Pair `<prompt>.baseline.jsonl` with `<prompt>.codeact.jsonl` in a folder.
pub fn from_dir(dir: &Path, prices: Prices) -> Result<ArmsReport, EvalError> {
    let mut pairs: BTreeMap<String, (Option<PathBuf>, Option<PathBuf>)> = BTreeMap::new();
    let rd = std::fs::read_dir(dir)
        .map_err(|e| EvalError::Input(format!("cannot list {}: {e}", dir.display())))?;
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(p) = name.strip_suffix(".baseline.jsonl") {
            pairs.entry(p.to_owned()).or_default().0 = Some(e.path());
        } else if let Some(p) = name.strip_suffix(".codeact.jsonl") {
            pairs.entry(p.to_owned()).or_default().1 = Some(e.path());
        }
    }
    if pairs.is_empty() {
        return Err(EvalError::Input(format!(
            "no <prompt>.baseline.jsonl / <prompt>.codeact.jsonl files in {}",
            dir.display()
        )));
    }
    let read = |p: &Path| {
        std::fs::read_to_string(p)
            .map_err(|e| EvalError::Input(format!("cannot read {}: {e}", p.display())))
    };
    let mut prompts = Vec::new();
    for (prompt, (b, c)) in pairs {
        let (Some(b), Some(c)) = (b, c) else {
            return Err(EvalError::Input(format!(
                "prompt \"{prompt}\" has only one arm in {}; both <prompt>.baseline.jsonl and <prompt>.codeact.jsonl are needed",
                dir.display()
            )));
        };
        prompts.push(compare(
            &prompt,
            parse_jsonl(&read(&b)?),
            parse_jsonl(&read(&c)?),
            prices,
        ));
    }
    let total = compare(
        "total",
        sum(&prompts.iter().map(|p| &p.baseline).collect::<Vec<_>>()),
        sum(&prompts.iter().map(|p| &p.codeact).collect::<Vec<_>>()),
        prices,
    );
    Ok(ArmsReport {
        prices,
        prompts,
        total,
    })
}

impl ArmsReport {
    pub fn markdown(&self) -> String {
        let mut md = format!(
            "# CodeAct arms (cost at ${}/M input, ${}/M output)\n\n| prompt | arm | turns | tool calls | input tok | output tok | cost $ | API ms | duration ms | tool result bytes | codeact |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|:---:|\n",
            self.prices.input_per_m, self.prices.output_per_m
        );
        let opt = |v: Option<f64>| v.map_or_else(|| "–".to_owned(), |x| format!("{x:.0}"));
        for p in self.prompts.iter().chain(std::iter::once(&self.total)) {
            for (arm, m, cost) in [
                ("baseline", &p.baseline, p.baseline_cost),
                ("codeact", &p.codeact, p.codeact_cost),
            ] {
                md.push_str(&format!(
                    "| {} | {arm} | {} | {} | {} | {} | {cost:.6} | {} | {} | {} | {} |\n",
                    p.prompt,
                    m.turns,
                    m.tool_calls,
                    m.input_tokens,
                    m.output_tokens,
                    opt(m.api_duration_ms),
                    opt(m.duration_ms),
                    m.tool_result_bytes,
                    if m.codeact_invoked { "yes" } else { "no" }
                ));
            }
        }
        md.push_str("\nReduction (baseline → codeact, % of baseline; negative = codeact used more):\n\n| prompt | turns | tool calls | input tok | output tok | cost | duration | tool result bytes |\n|---|---:|---:|---:|---:|---:|---:|---:|\n");
        for p in self.prompts.iter().chain(std::iter::once(&self.total)) {
            let r = |k: &str| {
                p.reduction_pct
                    .get(k)
                    .map_or_else(|| "–".to_owned(), |v| format!("{v:.1}"))
            };
            md.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
                p.prompt,
                r("turns"),
                r("toolCalls"),
                r("inputTokens"),
                r("outputTokens"),
                r("cost"),
                r("durationMs"),
                r("toolResultBytes")
            ));
        }
        md
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codeact_detection() {
        assert!(command_runs_codeact(
            "bash ~/.copilot/plugins/x/scripts/codeact --code 'print(1)'"
        ));
        assert!(command_runs_codeact("cd /w && codeact run.py"));
        assert!(command_runs_codeact("toolgate exec --workspace . prog.py"));
        assert!(!command_runs_codeact("echo codeactivity"));
        assert!(!command_runs_codeact("cat my-codeact.txt"));
        assert!(!command_runs_codeact("grep -rn TODO src"));
        assert!(tool_is_codeact(
            "skill",
            &serde_json::json!({"skill": "codeact"})
        ));
        assert!(tool_is_codeact("toolgate-run_code", &serde_json::json!({})));
    }

    #[test]
    fn parses_events_and_skips_bad_lines() {
        let jsonl = r#"{"type":"assistant.message","timestamp":"2026-07-01T10:00:00Z","data":{"inputTokens":100,"outputTokens":20,"toolRequests":[{"name":"bash","arguments":{"command":"ls"}}]}}
not json
{"type":"tool.execution_complete","data":{"result":{"content":"abc"}}}
{"type":"assistant.message","timestamp":"2026-07-01T10:00:05Z","data":{"inputTokens":150,"outputTokens":30,"toolRequests":[]}}
{"type":"result","usage":{"premiumRequests":1,"totalApiDurationMs":4000,"sessionDurationMs":5200}}
"#;
        let m = parse_jsonl(jsonl);
        assert_eq!(m.turns, 2);
        assert_eq!(m.tool_calls, 1);
        assert_eq!(m.input_tokens, 250);
        assert_eq!(m.output_tokens, 50);
        assert_eq!(m.tool_result_bytes, 3);
        assert_eq!(m.bad_lines, 1);
        assert_eq!(m.session_duration_ms, Some(5200.0));
        assert_eq!(m.wall_ms, Some(5000.0));
        assert!(m.completed && !m.codeact_invoked);
        let with_total = format!(
            "{jsonl}{{\"type\":\"_prompt_tokens\",\"data\":{{\"per_turn\":[1200],\"total\":1200}}}}\n"
        );
        assert_eq!(parse_jsonl(&with_total).input_tokens, 1200);
    }
}
