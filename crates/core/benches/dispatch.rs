//! `dispatch`: registry lookup + parameter validation + policy decision for a typical call.
//! Target: ≤ 5 µs median (issue #2).

use std::hint::black_box;
use std::sync::Arc;

use async_trait::async_trait;
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Map, Value, json};
use toolgate_core::policy::{Approvals, Mode, decide};
use toolgate_core::{
    CallDigest, CallError, OutputKind, Preview, PreviewInput, Provider, ProviderError, Registry,
    ToolCall, ToolOutcome, ToolSpec,
};

struct Tools(Vec<ToolSpec>);

#[async_trait]
impl Provider for Tools {
    fn name(&self) -> &str {
        "bench"
    }
    async fn list_tools(&self) -> Result<Vec<ToolSpec>, ProviderError> {
        Ok(self.0.clone())
    }
    async fn call(&self, _call: &ToolCall) -> Result<ToolOutcome, CallError> {
        Err(CallError::failed("not run in this bench"))
    }
}

fn registry() -> Registry {
    // A registry the size of debrief-calc's plus padding: 40 tools.
    let mut specs = Vec::new();
    for i in 0..40 {
        specs.push(ToolSpec {
            id: if i == 0 { "set-track-color".to_owned() } else { format!("tool-{i}") },
            title: "Set Track Color".to_owned(),
            description: "Set the line colour of the selected tracks.".to_owned(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "color": {"type": "string", "enum": ["red", "green", "blue", "yellow", "orange", "purple", "cyan", "magenta", "white", "black", "grey"]},
                    "weight": {"type": "number", "minimum": 0, "default": 3}
                },
                "required": ["color"],
                "additionalProperties": false
            }),
            output_kind: Some(OutputKind::new("mutation/track/styled")),
            category: "style".to_owned(),
            annotations: Map::new(),
        });
    }
    let mut r = Registry::new();
    r.register_specs(Arc::new(Tools(Vec::new())), specs)
        .unwrap_or_else(|e| panic!("bench registry: {e}"));
    r
}

fn bench(c: &mut Criterion) {
    let reg = registry();
    let params: Map<String, Value> = json!({"color": "red"})
        .as_object()
        .cloned()
        .unwrap_or_default();
    let ctx = json!({"plot": "stac://demo/alpha/item.json", "version": 3, "targets": ["track-1"]});
    let approvals = Approvals::none();
    c.bench_function(
        "dispatch: resolve + validate + policy (mutating, strict)",
        |b| {
            b.iter(|| {
                let tool = reg
                    .resolve(black_box("set-track-color"))
                    .unwrap_or_else(|e| panic!("{e}"));
                let params = tool
                    .validate(black_box(&params))
                    .unwrap_or_else(|e| panic!("{e}"));
                let digest = CallDigest::of(&tool.spec.id, &params, &ctx);
                let d = decide(
                    &tool.spec.id,
                    tool.effect,
                    &digest,
                    Mode::Strict,
                    &approvals,
                    || {
                        Preview::build(&PreviewInput {
                            tool_title: &tool.spec.title,
                            plot_title: Some("Exercise Alpha"),
                            target: "HMS Nelson",
                            params: &params,
                            consequence: None,
                            notes: &[],
                            effect: &[],
                        })
                    },
                );
                black_box(d)
            });
        },
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
