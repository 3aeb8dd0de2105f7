//! Issue 34 item 2: where a tool runs is a typed origin ([`ToolOrigin`], from its provider), not
//! the `mcp:` prefix of its category. A tool of an upstream MCP server runs without a plot, is
//! not given the unit setting and its question names its server; a tool of toolgate's own
//! whose category happens to start with `mcp:` is a plot tool like any other. And a name that
//! is none of the four Debrief tools is a typed refusal, not a bare message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::{Map, json};
use toolgate_core::flow::{Answer, Confirmer};
use toolgate_core::telemetry::MemorySink;
use toolgate_core::{
    CallError, OutputKind, Preview, Provider, ProviderError, RefusalKind, Registry, Status,
    ToolCall, ToolOrigin, ToolOutcome, ToolSpec,
};
use toolgate_plot::debrief::{Debrief, RUN_TOOL, SEARCH, Settings};
use toolgate_plot::session::Session;

/// One mutating tool with a `units` parameter, of the given origin; its category is `mcp:github`
/// whatever the origin, so only the origin can tell them apart.
struct OneTool(ToolOrigin);

#[async_trait]
impl Provider for OneTool {
    fn name(&self) -> &str {
        "one-tool"
    }
    fn origin(&self) -> ToolOrigin {
        self.0.clone()
    }
    async fn list_tools(&self) -> Result<Vec<ToolSpec>, ProviderError> {
        Ok(vec![ToolSpec {
            id: "create_issue".to_owned(),
            title: "Create issue".to_owned(),
            description: "Open an issue.".to_owned(),
            input_schema: json!({"type": "object", "properties": {
                "title": {"type": "string"},
                "units": {"type": "string", "enum": ["nm", "km"]}
            }}),
            output_kind: None,
            category: "mcp:github".to_owned(),
            annotations: Map::new(),
        }])
    }
    async fn call(&self, call: &ToolCall) -> Result<ToolOutcome, CallError> {
        Ok(ToolOutcome {
            kind: OutputKind::new("issue/created"),
            summary: format!(
                "created with {}",
                serde_json::Value::Object(call.params.clone())
            ),
            data: serde_json::Value::Null,
            change_set: None,
        })
    }
}

/// Declines, keeping the question it was asked.
#[derive(Default)]
struct Keep(Mutex<Vec<String>>);

#[async_trait]
impl Confirmer for Keep {
    async fn confirm(&self, preview: &Preview) -> Answer {
        self.0.lock().unwrap().push(preview.plain_text());
        Answer::Decline
    }
}

async fn debrief(origin: ToolOrigin) -> Debrief {
    let mut registry = Registry::new();
    registry.register(Arc::new(OneTool(origin))).await.unwrap();
    // No store and no plot open: a plot tool has nothing to run against.
    Debrief::new(
        Arc::new(Mutex::new(Session::new(Vec::new()))),
        Arc::new(registry),
        Arc::new(MemorySink::default()),
        Settings::default(),
    )
}

#[tokio::test]
async fn an_upstream_mcp_tool_runs_without_a_plot_and_its_question_names_its_server() {
    let d = debrief(ToolOrigin::UpstreamMcp {
        server: "github".to_owned(),
    })
    .await;
    let asked = Keep::default();
    let reply = d
        .run_tool(
            &json!({"toolId": "create_issue", "params": {"title": "x"}}),
            &asked,
        )
        .await;
    assert_eq!(reply.status, Status::Declined, "{reply:?}");
    let asked = asked.0.lock().unwrap();
    assert_eq!(asked.len(), 1);
    assert!(
        asked[0].contains(
            "The call runs on the external MCP server github; toolgate cannot undo what it does."
        ),
        "{}",
        asked[0]
    );
    // The unit setting is a plot tool's: not filled into another server's call.
    assert!(!asked[0].contains("units"), "{}", asked[0]);
}

#[tokio::test]
async fn a_toolgate_tool_is_a_plot_tool_whatever_its_category_says() {
    let d = debrief(ToolOrigin::Toolgate).await;
    let asked = Keep::default();
    let reply = d
        .run_tool(
            &json!({"toolId": "create_issue", "params": {"title": "x"}}),
            &asked,
        )
        .await;
    assert_eq!(reply.status, Status::Refused, "{reply:?}");
    assert_eq!(reply.reason.as_deref(), Some("no_plot"), "{reply:?}");
    assert!(asked.0.lock().unwrap().is_empty());
}

#[tokio::test]
async fn an_unknown_debrief_tool_is_a_typed_refusal() {
    let d = debrief(ToolOrigin::Toolgate).await;
    let refusal = d
        .call("debrief_openPlot", &json!({}), &Keep::default())
        .await
        .unwrap_err();
    assert_eq!(refusal.kind, RefusalKind::UnknownTool);
    assert_eq!(
        refusal.message,
        format!(
            "Unknown tool \"debrief_openPlot\". The Debrief tools are {SEARCH}, \
             debrief_summarizeCurrentPlot, debrief_listTools and {RUN_TOOL}."
        )
    );
}
