//! Output for a person at a terminal: aligned tables and plain lines (the `--json` flags keep
//! the machine-readable forms for scripts).

use serde_json::Value;

/// Columns padded to their widest cell (by characters), two spaces apart, a rule under the
/// header; trailing spaces trimmed.
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let columns = headers.len();
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate().take(columns) {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(cell.chars().count());
            }
        }
    }
    let line = |cells: &mut dyn Iterator<Item = &str>| -> String {
        let mut s = String::new();
        for (i, cell) in cells.enumerate() {
            if i > 0 {
                s.push_str("  ");
            }
            s.push_str(cell);
            let pad = widths
                .get(i)
                .copied()
                .unwrap_or(0)
                .saturating_sub(cell.chars().count());
            s.extend(std::iter::repeat_n(' ', pad));
        }
        s.trim_end().to_owned()
    };
    let mut out = line(&mut headers.iter().copied());
    out.push('\n');
    let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    out.push_str(&line(&mut rule.iter().map(String::as_str)));
    for row in rows {
        out.push('\n');
        out.push_str(&line(&mut row.iter().map(String::as_str)));
    }
    out
}

/// A JSON scalar as a person reads it (strings without quotes, numbers as written, `-` for
/// null); arrays of scalars comma-separated; anything else compact JSON.
pub fn scalar(v: &Value) -> String {
    match v {
        Value::Null => "-".to_owned(),
        Value::String(s) => s.clone(),
        Value::Bool(b) => if *b { "yes" } else { "no" }.to_owned(),
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() && f.fract() != 0.0 => {
                let s = format!("{f:.3}");
                s.trim_end_matches('0').trim_end_matches('.').to_owned()
            }
            _ => n.to_string(),
        },
        Value::Array(items) if items.iter().all(|i| !i.is_object() && !i.is_array()) => {
            items.iter().map(scalar).collect::<Vec<_>>().join(", ")
        }
        other => other.to_string(),
    }
}

/// `{a: {b: 1}, c: [..]}` → `[("a.b", 1), ("c", ..)]`: nested objects flattened into dotted keys.
pub fn flatten(prefix: &str, v: &Value, out: &mut Vec<(String, Value)>) {
    match v {
        Value::Object(map) => {
            for (k, v) in map {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&key, v, out);
            }
        }
        other => out.push((prefix.to_owned(), other.clone())),
    }
}

/// A tool's result data for a person: an object as `key: value` lines (nested keys dotted), a
/// list of objects as a table (one column per key), a list of scalars one per line.
pub fn dataset(data: &Value) -> String {
    match data {
        Value::Array(items) if !items.is_empty() && items.iter().all(Value::is_object) => {
            let flat: Vec<Vec<(String, Value)>> = items
                .iter()
                .map(|i| {
                    let mut f = Vec::new();
                    flatten("", i, &mut f);
                    f
                })
                .collect();
            let mut headers: Vec<String> = Vec::new();
            for row in &flat {
                for (k, _) in row {
                    if !headers.contains(k) {
                        headers.push(k.clone());
                    }
                }
            }
            let rows: Vec<Vec<String>> = flat
                .iter()
                .map(|row| {
                    headers
                        .iter()
                        .map(|h| {
                            row.iter()
                                .find(|(k, _)| k == h)
                                .map_or_else(String::new, |(_, v)| scalar(v))
                        })
                        .collect()
                })
                .collect();
            let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
            table(&headers, &rows)
        }
        Value::Array(items) => items.iter().map(scalar).collect::<Vec<_>>().join("\n"),
        Value::Object(_) => {
            let mut flat = Vec::new();
            flatten("", data, &mut flat);
            let width = flat
                .iter()
                .map(|(k, _)| k.chars().count())
                .max()
                .unwrap_or(0);
            flat.iter()
                .map(|(k, v)| {
                    let pad = width - k.chars().count();
                    format!("{k}:{} {}", " ".repeat(pad), scalar(v))
                })
                .collect::<Vec<_>>()
                .join("\n")
        }
        other => scalar(other),
    }
}

/// A plot summary's `features` text (`TYPE col|col (shared values)` headers, then `|` rows) as
/// one table per feature type.
pub fn summary_features(text: &str) -> String {
    let mut out = String::new();
    let mut header: Option<(String, Vec<String>, String)> = None;
    let mut rows: Vec<Vec<String>> = Vec::new();
    let flush = |out: &mut String,
                 header: &mut Option<(String, Vec<String>, String)>,
                 rows: &mut Vec<Vec<String>>| {
        if let Some((kind, cols, shared)) = header.take() {
            if !out.is_empty() {
                out.push_str("\n\n");
            }
            out.push_str(&format!("{kind} ({})", rows.len()));
            if !shared.is_empty() {
                out.push_str(&format!(" — all {shared}"));
            }
            out.push('\n');
            let cols: Vec<&str> = cols.iter().map(String::as_str).collect();
            out.push_str(&table(&cols, rows));
        }
        rows.clear();
    };
    for line in text.lines() {
        if let Some((kind, rest)) = line.split_once(' ')
            && !kind.is_empty()
            && kind
                .chars()
                .all(|c| c.is_ascii_uppercase() || c == '_' || c.is_ascii_digit())
            && (rest == "id" || rest.starts_with("id|") || rest.starts_with("id "))
        {
            flush(&mut out, &mut header, &mut rows);
            let (cols, shared) = match rest.split_once(" (") {
                Some((c, s)) => (c, s.trim_end_matches(')').trim_start_matches("all: ")),
                None => (rest, ""),
            };
            header = Some((
                kind.to_owned(),
                cols.split('|').map(str::to_owned).collect(),
                shared.to_owned(),
            ));
        } else if header.is_some() {
            rows.push(line.split('|').map(str::to_owned).collect());
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    flush(&mut out, &mut header, &mut rows);
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    #[test]
    fn tables_align_by_characters() {
        let t = table(
            &["name", "n"],
            &[
                vec!["café".into(), "1".into()],
                vec!["x".into(), "22".into()],
            ],
        );
        assert_eq!(t, "name  n\n----  --\ncafé  1\nx     22");
    }

    #[test]
    fn datasets_flatten_nested_values() {
        let d = dataset(&json!({"name": "N", "speed": {"mean": 12.04, "max": 14}}));
        assert_eq!(d, "name:       N\nspeed.mean: 12.04\nspeed.max:  14");
        let d = dataset(&json!([{"a": 1, "b": {"c": null}}, {"a": 2.5}]));
        assert_eq!(d, "a    b.c\n---  ---\n1    -\n2.5");
    }

    #[test]
    fn summary_sections_become_tables() {
        let text = "TRACK id|name (all: span =, points 361)\ntrack-a|A\ntrack-b|Bee\nPOINT id|name\np-1|Datum";
        assert_eq!(
            summary_features(text),
            "TRACK (2) — all span =, points 361\nid       name\n-------  ----\ntrack-a  A\ntrack-b  Bee\n\n\
             POINT (1)\nid   name\n---  -----\np-1  Datum"
        );
    }
}
