//! `eval tokens`: what the summary and the advertised tools cost in a model's context — the
//! summary of synthetic plots of 8, 32, 100 and 250 features (built as
//! `crates/plot/examples/summary_tokens.rs` builds them) and of the demo plots, against 4k, 8k
//! and 32k windows, plus the tool list and the priming file. Counts are real o200k tokens.

use serde::Serialize;
use serde_json::{Value, json};
use toolgate_core::TokenCounter;
use toolgate_plot::debrief::agent_tool_specs;
use toolgate_plot::demo;
use toolgate_plot::session::Session;
use toolgate_plot::store::StacStore;
use toolgate_plot::summary::{SummaryRequest, summarize};

use crate::EvalError;

pub const WINDOWS: [usize; 3] = [4096, 8192, 32768];
/// (tracks, points) per synthetic plot: 8, 32, 100 and 250 features.
pub const SIZES: [(usize, usize); 4] = [(3, 5), (12, 20), (40, 60), (250, 0)];

#[derive(Debug, Clone, Serialize)]
pub struct PlotCost {
    pub plot: String,
    pub features: usize,
    pub listed: usize,
    pub truncated: bool,
    pub tokens: usize,
    pub tokens_per_feature: f64,
    /// Share of each window in [`WINDOWS`], in percent.
    pub window_pct: Vec<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ToolCost {
    pub name: String,
    pub tokens: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct TokenReport {
    pub encoding: String,
    pub windows: Vec<usize>,
    pub plots: Vec<PlotCost>,
    pub tools: Vec<ToolCost>,
    /// Summary cost split from the untruncated probe plots (8 and 100 features): tokens each
    /// added feature costs, and the per-plot part (title, span, counts, type headers).
    pub marginal_tokens_per_feature: f64,
    pub per_plot_tokens: f64,
    /// The four tools as an OpenAI `tools` array.
    pub tool_list_tokens: usize,
    pub priming_tokens: usize,
    /// What a `debrief_listTools` reply costs: every native tool, and what applies on each
    /// demo plot (the reply narrowed by the plot's feature kinds).
    pub list_tools: Vec<ToolCost>,
}

#[allow(clippy::cast_precision_loss)]
fn pct(tokens: usize, window: usize) -> f64 {
    (tokens as f64 * 1000.0 / window as f64).round() / 10.0
}

fn cost(
    session: &Session,
    id: &str,
    label: &str,
    counter: &TokenCounter,
) -> Result<PlotCost, EvalError> {
    let plot = session
        .plot(id)
        .map_err(|e| EvalError::Setup(e.to_string()))?;
    let (view, text) = summarize(session, plot, &SummaryRequest::default(), counter);
    let tokens = counter.count(&text);
    #[allow(clippy::cast_precision_loss)]
    let per = tokens as f64 / view.listed.max(1) as f64;
    Ok(PlotCost {
        plot: label.to_owned(),
        features: plot.doc.features().len(),
        listed: view.listed,
        truncated: view.truncated,
        tokens,
        tokens_per_feature: (per * 10.0).round() / 10.0,
        window_pct: WINDOWS.iter().map(|w| pct(tokens, *w)).collect(),
    })
}

pub fn report() -> Result<TokenReport, EvalError> {
    let counter = TokenCounter::default();
    let dir = tempfile::tempdir().map_err(|e| EvalError::Setup(e.to_string()))?;
    let mut store = StacStore::create("probe", &dir.path().join("probe"), "probe")?;
    for (t, p) in SIZES {
        let features = demo::bulk(t, p);
        let name = format!("plot-{}", t + p);
        let item = demo::item(
            &name,
            &format!("Probe {}", t + p),
            "",
            &[],
            json!([]),
            &features,
        );
        store.add_item(
            &name,
            &item,
            &json!({"type": "FeatureCollection", "features": features}),
        )?;
    }
    let demo_store = demo::ensure_demo_store(&dir.path().join("demo"))?;
    let mut session = Session::new(vec![store, demo_store]);
    let mut plots = Vec::new();
    for (t, p) in SIZES {
        let id = format!("stac://probe/plot-{}/item.json", t + p);
        session
            .open(&id)
            .map_err(|e| EvalError::Setup(e.to_string()))?;
        plots.push(cost(
            &session,
            &id,
            &format!("synthetic {} features", t + p),
            &counter,
        )?);
        // Each plot is measured alone: with several open the reply also lists them all.
        session
            .close(&id)
            .map_err(|e| EvalError::Setup(e.to_string()))?;
    }
    let native = toolgate_plot::tools::specs();
    // Each listing twice: in full, and as the reply sends it (shortened to the budget).
    let listing_costs = |label: String, specs: Vec<&toolgate_core::ToolSpec>| {
        let listing: Vec<toolgate_core::ToolListing> = specs
            .into_iter()
            .map(toolgate_core::ToolListing::of)
            .collect();
        let full = counter.count(&serde_json::to_string(&listing).unwrap_or_default());
        let sent = counter.count(&toolgate_plot::debrief::fit_listing(
            &listing,
            toolgate_plot::debrief::LIST_TOKEN_BUDGET,
            &counter,
        ));
        [
            ToolCost {
                name: format!("{label}, in full"),
                tokens: full,
            },
            ToolCost {
                name: format!(
                    "{label}, as sent (budget {})",
                    toolgate_plot::debrief::LIST_TOKEN_BUDGET
                ),
                tokens: sent,
            },
        ]
    };
    let mut list_tools: Vec<ToolCost> = listing_costs(
        format!("every native tool ({}), all=true", native.len()),
        native.iter().collect(),
    )
    .into();
    for (id, label) in [
        (
            "stac://demo/alpha-day1/item.json",
            "demo: Exercise Alpha — Day 1",
        ),
        ("stac://demo/bulk-tracks/item.json", "demo: Bulk Tracks"),
    ] {
        session
            .open(id)
            .map_err(|e| EvalError::Setup(e.to_string()))?;
        plots.push(cost(&session, id, label, &counter)?);
        let kinds: Vec<String> = session
            .plot(id)
            .map(|p| {
                p.doc
                    .features()
                    .iter()
                    .map(|f| toolgate_plot::model::Feature(f).kind().to_ascii_uppercase())
                    .collect()
            })
            .unwrap_or_default();
        let applicable: Vec<&toolgate_core::ToolSpec> = native
            .iter()
            .filter(|s| toolgate_plot::debrief::applies_to(s, &kinds))
            .collect();
        list_tools.extend(listing_costs(
            format!("{label}: the {} tools that apply", applicable.len()),
            applicable,
        ));
        session
            .close(id)
            .map_err(|e| EvalError::Setup(e.to_string()))?;
    }
    let specs = agent_tool_specs();
    let as_sent: Vec<Value> = specs
        .iter()
        .map(|s| json!({"type": "function", "function": {"name": s.id, "description": s.description, "parameters": s.input_schema}}))
        .collect();
    let tools = specs
        .iter()
        .zip(&as_sent)
        .map(|(s, v)| ToolCost {
            name: s.id.clone(),
            tokens: counter.count(&v.to_string()),
        })
        .collect();
    // A straight line through the 8- and 100-feature probes (both untruncated).
    #[allow(clippy::cast_precision_loss)]
    let (marginal, per_plot) = match (plots.first(), plots.get(2)) {
        (Some(a), Some(b)) if b.features > a.features => {
            let slope =
                (b.tokens as f64 - a.tokens as f64) / (b.features as f64 - a.features as f64);
            (slope, a.tokens as f64 - slope * a.features as f64)
        }
        _ => (0.0, 0.0),
    };
    Ok(TokenReport {
        marginal_tokens_per_feature: (marginal * 10.0).round() / 10.0,
        per_plot_tokens: per_plot.round(),
        encoding: "o200k_base".to_owned(),
        windows: WINDOWS.to_vec(),
        plots,
        tools,
        tool_list_tokens: counter.count(&Value::Array(as_sent).to_string()),
        priming_tokens: counter.count(toolgate_agent::PRIMING),
        list_tools,
    })
}

impl TokenReport {
    pub fn markdown(&self) -> String {
        let mut md = format!(
            "# Token budget ({})\n\n| plot | features | listed | truncated | tokens | tokens/feature | 4k | 8k | 32k |\n|---|---:|---:|:---:|---:|---:|---:|---:|---:|\n",
            self.encoding
        );
        for p in &self.plots {
            md.push_str(&format!(
                "| {} | {} | {} | {} | {} | {:.1} | {:.1}% | {:.1}% | {:.1}% |\n",
                p.plot,
                p.features,
                p.listed,
                if p.truncated { "yes" } else { "no" },
                p.tokens,
                p.tokens_per_feature,
                p.window_pct[0],
                p.window_pct[1],
                p.window_pct[2]
            ));
        }
        md.push_str(&format!(
            "\nSummary cost: {:.1} tokens per added feature plus about {:.0} per plot (title, span, counts, type headers), from the 8- and 100-feature plots.\n",
            self.marginal_tokens_per_feature, self.per_plot_tokens
        ));
        md.push_str("\n| advertised tool | tokens |\n|---|---:|\n");
        for t in &self.tools {
            md.push_str(&format!("| `{}` | {} |\n", t.name, t.tokens));
        }
        md.push_str(&format!(
            "| **all four (as a `tools` array)** | **{}** |\n| priming file (system prompt) | {} |\n",
            self.tool_list_tokens, self.priming_tokens
        ));
        md.push_str("\n| `debrief_listTools` reply | tokens |\n|---|---:|\n");
        for t in &self.list_tools {
            md.push_str(&format!("| {} | {} |\n", t.name, t.tokens));
        }
        let fixed = self.tool_list_tokens + self.priming_tokens;
        md.push_str(&format!(
            "\nFixed cost per request (tools + priming): {fixed} tokens = {:.1}% of 4k, {:.1}% of 8k, {:.1}% of 32k.\n",
            pct(fixed, 4096),
            pct(fixed, 8192),
            pct(fixed, 32768)
        ));
        md
    }
}
