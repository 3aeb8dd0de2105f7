//! Issue 32 item 3 (units): one unit setting — nautical miles and knots unless changed — is
//! filled into every tool run that leaves its unit out, through `debrief_runTool` and a
//! program's plot functions alike; a unit the caller gives stays.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use toolgate_core::flow::{Answer, Fixed};
use toolgate_core::telemetry::MemorySink;
use toolgate_core::{Provider, Registry, Status, ToolCall};
use toolgate_plot::debrief::{Debrief, Settings};
use toolgate_plot::session::Session;
use toolgate_plot::tools::NativeTools;
use toolgate_plot::tools::units::Units;
use toolgate_plot::transaction::PlotTransaction;

const ALPHA: &str = "stac://demo/alpha-day1/item.json";

async fn workbench(dir: &std::path::Path) -> Debrief {
    let store = toolgate_plot::demo::ensure_demo_store(dir).unwrap();
    let mut registry = Registry::new();
    registry.register(Arc::new(NativeTools)).await.unwrap();
    let d = Debrief::new(
        Arc::new(Mutex::new(Session::new(vec![store]))),
        Arc::new(registry),
        Arc::new(MemorySink::default()),
        Settings::default(),
    );
    d.open_plot(ALPHA).await.unwrap();
    d
}

async fn result(d: &Debrief, tool: &str, params: Value) -> Value {
    let reply = d
        .run_tool(
            &json!({"toolId": tool, "params": params,
                "featureIds": ["track-nelson", "track-contact"]}),
            &Fixed(Answer::Decline),
        )
        .await;
    assert_eq!(reply.status, Status::Ok, "{}", reply.text);
    let id = reply.dataset.unwrap();
    d.datasets().into_iter().find(|x| x.id == id).unwrap().data
}

#[tokio::test]
async fn every_run_speaks_the_one_unit_setting() {
    let dir = tempfile::tempdir().unwrap();
    let d = workbench(dir.path()).await;
    assert_eq!(d.units(), Units::default());

    // Nautical miles by default, where Debrief's range-calc alone would say yards.
    let nm = result(&d, "range-calc", json!({})).await;
    assert_eq!(nm["units"], "nm", "{nm}");
    let rb = result(&d, "range-bearing", json!({})).await;
    assert!(
        rb["series"][0]["range_nm"].is_number(),
        "{}",
        rb["series"][0]
    );
    assert_eq!(
        result(&d, "delta-rate-calc", json!({})).await["units"],
        "kts"
    );

    // The setting changes every later run; a unit the caller names stays.
    d.set_units(Units::parse("yd").unwrap());
    let yd = result(&d, "range-calc", json!({})).await;
    assert_eq!(yd["units"], "yds");
    let ratio = yd["value"].as_f64().unwrap() / nm["value"].as_f64().unwrap();
    assert!((ratio - 1852.0 / 0.9144).abs() < 0.01, "{ratio}");
    assert!(result(&d, "range-bearing", json!({})).await["series"][0]["range_yd"].is_number());
    assert_eq!(
        result(&d, "range-calc", json!({"units": "km"})).await["units"],
        "km"
    );

    // A program's plot functions use the setting their surface gives the transaction.
    let tx = PlotTransaction::begin(d.session_handle(), ALPHA).unwrap();
    tx.set_units(Units::parse("m").unwrap());
    let mut params = serde_json::Map::new();
    params.insert(
        "feature_ids".into(),
        json!(["track-nelson", "track-contact"]),
    );
    let out = tx
        .provider()
        .call(&ToolCall::new("range-calc", params))
        .await
        .unwrap();
    assert_eq!(out.data["units"], "m", "{}", out.data);
}
