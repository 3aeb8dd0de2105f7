//! An analysis's artifact as the dataset the Results panel, `plot run` and models read.

use serde_json::{Map, Value};

/// An artifact as a dataset the Results panel, `plot run` and models read: a measurement
/// feature's properties without the `debrief:` prefix (a plain JSON artifact as it is), plus —
/// when it holds values over time (an array of objects with `time`, `time_start` or
/// `timestamp`, found up to three levels down) — those rows as `series`, each with a `time`, so
/// a time series is charted over time, tabulated and exported as CSV.
pub fn dataset_of(v: &Value) -> Value {
    let body = if v.get("type").and_then(Value::as_str) == Some("Feature") {
        match v.get("properties").and_then(Value::as_object) {
            Some(p) => Value::Object(
                p.iter()
                    .map(|(k, v)| {
                        (
                            k.strip_prefix("debrief:").unwrap_or(k).to_owned(),
                            v.clone(),
                        )
                    })
                    .collect(),
            ),
            None => v.clone(),
        }
    } else {
        v.clone()
    };
    let Value::Object(mut out) = body else {
        return body;
    };
    if !out.contains_key("series")
        && let Some(rows) = timed_rows(&Value::Object(out.clone()), 3)
    {
        out.insert("series".into(), Value::Array(rows));
    }
    Value::Object(out)
}

fn time_of(row: &Map<String, Value>) -> Option<&Value> {
    ["time", "time_start", "timestamp"]
        .iter()
        .find_map(|k| row.get(*k).filter(|v| v.is_string()))
}

/// The first array of objects that each carry a time, as rows with `time` first.
fn timed_rows(v: &Value, depth: usize) -> Option<Vec<Value>> {
    match v {
        Value::Array(a) if a.len() >= 2 => {
            let rows: Option<Vec<Value>> = a
                .iter()
                .map(|r| {
                    let o = r.as_object()?;
                    let t = time_of(o)?.clone();
                    let mut row = Map::new();
                    row.insert("time".into(), t);
                    for (k, v) in o {
                        if k != "time" && !v.is_object() && !v.is_array() {
                            row.insert(k.clone(), v.clone());
                        }
                    }
                    Some(Value::Object(row))
                })
                .collect();
            rows.or_else(|| {
                (depth > 0)
                    .then(|| a.iter().find_map(|x| timed_rows(x, depth - 1)))
                    .flatten()
            })
        }
        Value::Object(o) if depth > 0 => o.values().find_map(|x| timed_rows(x, depth - 1)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_measurement_over_time_becomes_a_series() {
        let f = json!({"type": "Feature", "id": "m", "geometry": null, "properties": {
            "debrief:kind": "measurement", "debrief:unit": "kn/s^2",
            "debrief:values": [{"time": "2024-01-15T10:00:00Z", "value": 0.1},
                               {"time": "2024-01-15T10:01:00Z", "value": 0.2}]}});
        let d = dataset_of(&f);
        assert_eq!(d["unit"], "kn/s^2");
        assert_eq!(d["series"][1]["value"], 0.2);
        assert_eq!(d["series"][0]["time"], "2024-01-15T10:00:00Z");
        let rates = json!({"rates": [{"time_start": "2024-01-15T10:00:00Z", "rate": 1.0},
                                     {"time_start": "2024-01-15T10:01:00Z", "rate": 2.0}]});
        assert_eq!(
            dataset_of(&rates)["series"][1]["time"],
            "2024-01-15T10:01:00Z"
        );
        let single = json!({"type": "Feature", "properties": {"debrief:value": 3}});
        assert!(dataset_of(&single).get("series").is_none());
    }
}
