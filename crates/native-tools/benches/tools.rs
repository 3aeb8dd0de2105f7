//! Native tools on the 402-position boat1 track, and the same track-stats computed the
//! debrief-calc way: one `python3` process per call, JSON request on stdin, JSON on stdout.
//!
//! Read the ratio off `track-stats/python3-process-per-call` over `track-stats/native-run`.
//!
//! ```text
//! cargo bench -p toolgate-native-tools --bench tools -- --warm-up-time 1 --measurement-time 3
//! ```

use std::hint::black_box;
use std::io::Write;
use std::process::{Command, Stdio};

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Map, Value, json};
use toolgate_core::ToolCall;
use toolgate_native_tools::run;

use toolgate_tool_catalogue::testing::BOAT1 as FIXTURE;

/// The track-stats computation of debrief-calc, inline: point count, duration, haversine
/// distance, average speed.
const PYTHON_TRACK_STATS: &str = r#"
import sys, json, math
from datetime import datetime
req = json.load(sys.stdin)
f = req["features"][0]
c = f["geometry"]["coordinates"]
pos = f["properties"].get("positions", [])
R = 6371008.8
d = 0.0
for a, b in zip(c, c[1:]):
    p1, p2 = math.radians(a[1]), math.radians(b[1])
    dl, dp = math.radians(b[0] - a[0]), p2 - p1
    h = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    d += 2 * R * math.asin(math.sqrt(h))
t = [datetime.fromisoformat(p["time"].replace("Z", "+00:00")).timestamp() for p in pos]
hours = (t[-1] - t[0]) / 3600 if len(t) > 1 else 0.0
nm = d / 1852
print(json.dumps({"tool": req["tool"], "point_count": len(c), "duration_hours": hours,
                  "distance_nm": nm, "average_speed_kn": nm / hours if hours else 0.0}))
"#;

fn boat1() -> Value {
    let text = std::fs::read_to_string(FIXTURE).unwrap_or_else(|e| panic!("read {FIXTURE}: {e}"));
    let fc: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("parse {FIXTURE}: {e}"));
    fc.get("features").cloned().unwrap_or(Value::Null)
}

fn tool_call(id: &str, subject: &Value) -> ToolCall {
    ToolCall::new(id, Map::new()).with_subject(subject.clone())
}

/// One debrief-calc-style call: spawn the interpreter, write the request, read the response.
fn python_call(python: &str, request: &[u8]) -> Option<Value> {
    let mut child = Command::new(python)
        .args(["-c", PYTHON_TRACK_STATS])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .ok()?;
    child.stdin.take()?.write_all(request).ok()?;
    let out = child.wait_with_output().ok()?;
    if !out.status.success() {
        return None;
    }
    serde_json::from_slice(&out.stdout).ok()
}

/// The interpreter `python3` on PATH resolves to. debrief-calc spawns a configured interpreter
/// path (a `.venv` python or `debrief.calc.pythonPath`), not a version-manager shim, so the
/// benchmark spawns the real executable.
fn python3_executable() -> Option<String> {
    let out = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let path = String::from_utf8(out.stdout).ok()?.trim().to_owned();
    (out.status.success() && !path.is_empty()).then_some(path)
}

fn bench_tools(c: &mut Criterion) {
    let features = boat1();
    let stats_call = tool_call("track-stats", &features);
    let courses_call = tool_call("generate-courses-speeds", &features);

    let native = run(&stats_call).unwrap_or_else(|e| panic!("track-stats: {e}"));
    eprintln!("native track-stats: {}", native.summary);

    let mut group = c.benchmark_group("track-stats");
    group.bench_function("native-run", |b| {
        b.iter(|| run(black_box(&stats_call)));
    });
    match python3_executable() {
        Some(python) => {
            let request = json!({"tool": "track-stats", "features": features, "params": {}});
            let request = serde_json::to_vec(&request).unwrap_or_default();
            match python_call(&python, &request) {
                Some(answer) => {
                    eprintln!("python3 ({python}) track-stats: {answer}");
                    let py = answer.get("distance_nm").and_then(Value::as_f64);
                    let rs = native.data.get("distance").and_then(Value::as_f64);
                    eprintln!("distance nm: python3 {py:?}, native {rs:?}");
                    group.sample_size(20);
                    group.bench_function("python3-process-per-call", |b| {
                        b.iter(|| python_call(&python, black_box(&request)));
                    });
                }
                None => eprintln!("note: {python} failed to run the track-stats script; skipped"),
            }
        }
        None => eprintln!(
            "note: python3 not found on PATH; skipping track-stats/python3-process-per-call"
        ),
    }
    group.finish();

    let mut group = c.benchmark_group("generate-courses-speeds");
    group.bench_function("native-run", |b| {
        b.iter(|| run(black_box(&courses_call)));
    });
    group.finish();
}

criterion_group!(benches, bench_tools);
criterion_main!(benches);
