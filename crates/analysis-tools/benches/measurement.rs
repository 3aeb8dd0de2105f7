//! Every `track/measurement` catalogue tool on the 402-position boat1 track (and, for the
//! two-track tools, a second track: boat1 shifted 0.05° north-east, turned 30°, one knot
//! faster), at a time between two fixes so the interpolation runs. The goal is ≤ 1 ms a tool.
//!
//! ```text
//! cargo bench -p toolgate-analysis-tools --bench measurement -- --quick
//! ```

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Map, Value, json};
use toolgate_analysis_tools::MEASUREMENT;
use toolgate_tool_catalogue::CalcInput;

use toolgate_tool_catalogue::testing::BOAT1 as FIXTURE;

fn boat1() -> Value {
    let text = std::fs::read_to_string(FIXTURE).unwrap_or_else(|e| panic!("read {FIXTURE}: {e}"));
    let fc: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("parse {FIXTURE}: {e}"));
    fc.pointer("/features/0")
        .cloned()
        .unwrap_or_else(|| panic!("{FIXTURE} has no feature"))
}

/// boat1 moved 0.05° north-east, turned 30° and one knot faster.
fn shadow(track: &Value) -> Value {
    let mut t = track.clone();
    t["id"] = json!("boat1-shadow");
    if let Some(coords) = t
        .pointer_mut("/geometry/coordinates")
        .and_then(Value::as_array_mut)
    {
        for c in coords.iter_mut() {
            if let (Some(lon), Some(lat)) = (c[0].as_f64(), c[1].as_f64()) {
                *c = json!([lon + 0.05, lat + 0.05]);
            }
        }
    }
    if let Some(positions) = t
        .pointer_mut("/properties/positions")
        .and_then(Value::as_array_mut)
    {
        for p in positions.iter_mut() {
            if let Some(c) = p["course"].as_f64() {
                p["course"] = json!((c + 30.0) % 360.0);
            }
            if let Some(s) = p["speed"].as_f64() {
                p["speed"] = json!(s + 1.0);
            }
        }
    }
    t
}

fn measurement(c: &mut Criterion) {
    let primary = boat1();
    let times: Vec<&str> = primary
        .pointer("/properties/positions")
        .and_then(Value::as_array)
        .map(|p| p.iter().filter_map(|x| x["time"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(times.len(), 402, "boat1 has 402 positions");
    // halfway between fixes 200 and 201
    let (a, b) = (
        chrono::DateTime::parse_from_rfc3339(times[200]).unwrap_or_else(|e| panic!("{e}")),
        chrono::DateTime::parse_from_rfc3339(times[201]).unwrap_or_else(|e| panic!("{e}")),
    );
    let mid = a + (b - a) / 2;
    let time = mid
        .to_utc()
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let two = vec![primary.clone(), shadow(&primary)];

    let mut group = c.benchmark_group("measurement (boat1, 402 positions)");
    for entry in MEASUREMENT {
        let mut params = Map::new();
        match entry.id {
            "position-range-bearing" => {
                params.insert("selected_position_index".into(), json!(200));
            }
            _ => {
                params.insert("time".into(), json!(time));
            }
        }
        let input = CalcInput::new(&two, &params);
        // Time the tool's answer, not an error path.
        if let Err(e) = (entry.run)(&input) {
            panic!("{} failed on boat1: {}", entry.id, e.message);
        }
        group.bench_function(entry.id, |bench| {
            bench.iter(|| black_box((entry.run)(black_box(&input))));
        });
    }
    group.finish();
}

criterion_group!(benches, measurement);
criterion_main!(benches);
