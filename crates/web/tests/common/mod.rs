//! Shared by the workbench's integration tests: a workbench over a temporary demo store, and a
//! scripted chat backend that stands in for a model by calling `Debrief::run_tool` itself.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]
#![allow(clippy::disallowed_methods)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use toolgate_core::Registry;
use toolgate_core::flow::Confirmer;
use toolgate_core::telemetry::NullSink;
use toolgate_plot::debrief::{Debrief, Settings};
use toolgate_plot::session::Session;
use toolgate_web::{ChatBackend, ChatEvent, WebState};

pub const ALPHA: &str = "stac://demo/alpha-day1/item.json";
pub const BULK: &str = "stac://demo/bulk-tracks/item.json";

/// The demo store in `dir`, with the submarine contact of Exercise Alpha drawn grey (in the
/// generated store it is already red, which would hide a "colour it red" edit).
pub fn demo_store(dir: &std::path::Path) -> toolgate_plot::store::StacStore {
    toolgate_plot::demo::ensure_demo_store(dir).unwrap();
    let path = dir.join("alpha-day1").join("features.geojson");
    let mut fc: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    for f in fc["features"].as_array_mut().unwrap() {
        if f["id"] == "track-contact" {
            f["properties"]["style"]["line"]["color"] = json!("#708090");
            f["properties"]["style"]["point"]["color"] = json!("#708090");
            f["properties"]["style"]["point"]["fill_color"] = json!("#708090");
        }
    }
    std::fs::write(&path, serde_json::to_vec_pretty(&fc).unwrap()).unwrap();
    toolgate_plot::demo::ensure_demo_store(dir).unwrap()
}

/// A `Debrief` over the demo store in `dir`, with the native tools registered as the CLI does.
pub async fn debrief(dir: &std::path::Path) -> Arc<Debrief> {
    let store = demo_store(dir);
    let mut registry = Registry::new().with_discovery_hint("Call debrief_listTools first.");
    registry
        .register(Arc::new(toolgate_plot::tools::NativeTools))
        .await
        .unwrap();
    Arc::new(Debrief::new(
        Arc::new(Mutex::new(Session::new(vec![store]))),
        Arc::new(registry),
        Arc::new(NullSink),
        Settings {
            surface: "workbench".to_owned(),
            ..Settings::default()
        },
    ))
}

/// The access token the test workbenches answer to.
pub const TOKEN: &str = "workbench-test-token-0123456789";

/// `Authorization: Bearer <TOKEN>`.
pub fn bearer() -> String {
    format!("Bearer {TOKEN}")
}

pub async fn state(dir: &std::path::Path, chat: bool) -> WebState {
    let d = debrief(dir).await;
    let token = toolgate_core::AccessToken::new(TOKEN).unwrap();
    let mut st = WebState::new(d.clone(), token)
        .unwrap()
        .with_poll_interval(Duration::from_millis(25))
        .with_confirm_timeout(Duration::from_secs(60));
    if chat {
        st = st.with_chat(Arc::new(Scripted { debrief: d }));
    }
    st
}

const COLOURS: &[&str] = &[
    "red", "green", "blue", "yellow", "orange", "purple", "cyan", "magenta", "white", "black",
    "grey",
];

/// Stands in for a model: reads the utterance with fixed rules and calls the real agent tool
/// (`Debrief::run_tool`) through the confirmer it is given, streaming what a model loop streams.
///
/// - "range … bearing" → `range-bearing` from HMS Nelson to Contact (analytical, no dialog);
/// - a colour word → `set-track-color` on the selection ("submarine" names Contact instead when
///   nothing is selected; "selected" insists on the selection, so an empty one is refused);
/// - "crash" → the backend panics (the server must turn that into an error event);
/// - anything else → a reply without a tool call.
pub struct Scripted {
    pub debrief: Arc<Debrief>,
}

#[async_trait]
impl ChatBackend for Scripted {
    async fn send(
        &self,
        utterance: String,
        confirmer: Arc<dyn Confirmer>,
        events: mpsc::Sender<ChatEvent>,
    ) {
        let lower = utterance.to_lowercase();
        if lower.split_whitespace().any(|w| w == "crash") {
            panic!("scripted backend crash");
        }
        let words: Vec<&str> = lower
            .split(|ch: char| !ch.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .collect();
        let input = if words.contains(&"range") {
            json!({"toolId": "range-bearing", "featureIds": ["track-nelson", "track-contact"], "utterance": utterance})
        } else if let Some(c) = COLOURS.iter().find(|c| words.contains(c)) {
            let nothing_selected = self
                .debrief
                .session()
                .active()
                .map(|p| p.selected_ids().is_empty())
                .unwrap_or(true);
            if words.contains(&"submarine") && nothing_selected {
                json!({"toolId": "set-track-color", "params": {"color": c}, "featureNames": ["Contact"], "utterance": utterance})
            } else if words.contains(&"selected") {
                json!({"toolId": "set-track-color", "params": {"color": c}, "scope": "selection", "utterance": utterance})
            } else {
                json!({"toolId": "set-track-color", "params": {"color": c}, "utterance": utterance})
            }
        } else {
            let _ = events
                .send(ChatEvent::TextDelta {
                    text: "I can colour tracks or compute range and bearing.".to_owned(),
                })
                .await;
            let _ = events
                .send(ChatEvent::Final {
                    text: "I can colour tracks or compute range and bearing.".to_owned(),
                })
                .await;
            return;
        };
        let _ = events
            .send(ChatEvent::TextDelta {
                text: "Checking the plot… ".to_owned(),
            })
            .await;
        let _ = events
            .send(ChatEvent::ToolCallStarted {
                tool: "debrief_runTool".to_owned(),
                input: input.clone(),
            })
            .await;
        let reply = self.debrief.run_tool(&input, confirmer.as_ref()).await;
        let result = reply.text.clone();
        let _ = events
            .send(ChatEvent::ToolCallFinished {
                tool: "debrief_runTool".to_owned(),
                result: result.clone(),
                status: reply.status,
                reason: reply.reason,
            })
            .await;
        let _ = events
            .send(ChatEvent::Final {
                text: format!("Done. {result}"),
            })
            .await;
    }

    fn describe(&self) -> String {
        "scripted test backend".to_owned()
    }
}
