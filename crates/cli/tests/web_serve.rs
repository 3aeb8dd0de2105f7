//! `toolgate serve`: the workbench and the MCP endpoint from one process, one shared session.
//! The chat panel is answered by the agent loop against a scripted model server; an edit an MCP
//! client makes (stateless, 2026-07-28) shows up in the workbench's state for a person to save.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use serde_json::{Value, json};
use toolgate_test_support::{MockModel, Reply};

/// The access token the server answers to (`TOOLGATE_TOKEN`).
const TOKEN: &str = "web-serve-test-token-0123456789";

type Serve = support::Served;

fn serve(extra: &[String]) -> Serve {
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let server = support::serve(&extra, TOKEN);
    let [first, second, third] = &server.banner[..] else {
        panic!("banner: {:?}", server.banner)
    };
    assert!(
        first.starts_with("Workbench: http://127.0.0.1:")
            && first.ends_with(&format!("/?token={TOKEN}")),
        "{first}"
    );
    assert!(
        second.starts_with("MCP endpoint: http://127.0.0.1:") && second.ends_with("/mcp"),
        "{second}"
    );
    assert_eq!(*third, format!("MCP header: Authorization: Bearer {TOKEN}"));
    server
}

/// A one-shot HTTP/1.1 request; returns (status, body).
fn http(addr: &str, method: &str, path: &str, body: Option<&Value>) -> (u16, String) {
    let r = support::http_request(addr, method, path, TOKEN, body);
    (r.status, r.body)
}

fn state(addr: &str) -> Value {
    let (status, body) = http(addr, "GET", "/api/state", None);
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chat_panel_runs_the_agent_loop_on_the_workbench_session() {
    let model = MockModel::sequence(vec![
        Reply::tool(
            "debrief_searchPlots",
            json!({"text": "Alpha — Day 1", "open": true}),
        ),
        Reply::text("I opened Exercise Alpha — Day 1."),
    ])
    .await
    .unwrap();
    let server = serve(&[
        "--model-url".into(),
        model.url(),
        "--model".into(),
        "mock-model".into(),
    ]);
    let addr = server.addr.clone();
    let (status, body) = tokio::task::spawn_blocking(move || {
        http(
            &addr,
            "POST",
            "/api/chat",
            Some(&json!({"utterance": "open the Exercise Alpha day-1 plot"})),
        )
    })
    .await
    .unwrap();
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains("toolCallStarted") && body.contains("debrief_searchPlots"),
        "{body}"
    );
    assert!(body.contains("I opened Exercise Alpha"), "{body}");
    let st = state(&server.addr);
    assert_eq!(
        st["activePlot"], "stac://demo/alpha-day1/item.json",
        "the page sees what the chat opened: {st}"
    );
    assert_eq!(model.chat_requests().len(), 2);
}

#[test]
fn an_mcp_clients_edit_appears_in_the_workbench_unsaved() {
    let Some(python) = support::mcp_python() else {
        return;
    };
    let server = serve(&[]);
    let body = format!("{}{}", support::OPEN_DAY1, support::RECOLOUR_NELSON);
    let stdout = support::mcp_program(&python, &server.addr, TOKEN, None, &body);
    assert!(stdout.contains("dirty"), "{stdout}");
    let st = state(&server.addr);
    let plots = st["plots"].as_array().unwrap();
    let day1 = plots
        .iter()
        .find(|p| p["plotId"] == "stac://demo/alpha-day1/item.json")
        .unwrap_or_else(|| panic!("the workbench does not show the plot the agent opened: {st}"));
    assert_eq!(day1["dirty"], true, "{st}");
    // a person saves it from the workbench
    let (status, body) = http(
        &server.addr,
        "POST",
        "/api/save",
        Some(&json!({"plotId": "stac://demo/alpha-day1/item.json"})),
    );
    assert_eq!(status, 200, "{body}");
}
