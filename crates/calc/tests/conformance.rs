//! Conformance with Debrief's tool catalogue: every golden input of every implemented tool is
//! run through `toolgate_calc::calc` (what `toolgate calc` prints) and compared with its golden
//! output.
//!
//! Comparison rules (docs/catalogue.md says the same for people):
//! * strings (labels, ids, URIs, result types, times, error messages and categories): exact;
//! * numbers: a golden number written with `d` decimals matches ours within half a unit of its
//!   last decimal (`7230` ± 0.5, `0.4731` ± 0.00005) — the precision the spec's author wrote;
//! * objects: the same keys; arrays: the same length, element by element;
//! * a content item's `text` holding JSON (GeoJSON, datasets) is parsed and compared the same way;
//! * a golden output that is not a ToolResponse (a bare FeatureCollection or array — spec bugs
//!   listed in INVENTORY.md) is compared with the features of our items.
//!
//! `docs/catalogue.md` lists, for people and for this test, every deviation (tool, case, the
//! paths that differ, why) and every tool not implemented (why). A listed deviation that no
//! longer differs fails the test, so the list stays true.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/catalogue/tools")
}

fn doc_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/catalogue.md")
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(&p, out);
        } else {
            out.push(p);
        }
    }
}

/// Every spec: tool id → (category, [case names]).
fn catalogue() -> BTreeMap<String, (String, Vec<String>)> {
    let mut files = Vec::new();
    walk(&root(), &mut files);
    let mut tools: BTreeMap<String, (String, Vec<String>)> = BTreeMap::new();
    for f in &files {
        let name = f.file_name().unwrap().to_str().unwrap();
        let category = f
            .parent()
            .unwrap()
            .strip_prefix(root())
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if let Some(id) = name.strip_suffix(".1.0.md") {
            tools.entry(id.to_owned()).or_default().0 = category;
        }
    }
    for f in &files {
        let name = f.file_name().unwrap().to_str().unwrap();
        if let Some(stem) = name.strip_suffix(".input.json") {
            let (id, case) = stem.split_once('.').unwrap();
            let out = f.with_file_name(format!("{stem}.output.json").replace(".input", ""));
            let out = out.with_file_name(format!("{id}.{case}.output.json"));
            if out.exists() {
                tools
                    .entry(id.to_owned())
                    .or_default()
                    .1
                    .push(case.to_owned());
            }
        }
    }
    for (_, cases) in tools.values_mut() {
        cases.sort();
    }
    tools
}

fn read(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

struct Doc {
    /// (tool, case or "*") → paths ("*" = whole output), with the reason.
    deviations: BTreeMap<(String, String), (Vec<String>, String)>,
    not_implemented: BTreeMap<String, String>,
}

fn table_rows<'a>(doc: &'a str, heading: &str) -> Vec<Vec<&'a str>> {
    let Some(start) = doc.find(heading) else {
        return Vec::new();
    };
    let rest = &doc[start + heading.len()..];
    let end = rest.find("\n## ").unwrap_or(rest.len());
    rest[..end]
        .lines()
        .filter(|l| l.trim_start().starts_with('|'))
        .map(|l| {
            l.trim()
                .trim_matches('|')
                .split('|')
                .map(|c| c.trim().trim_matches('`'))
                .collect::<Vec<_>>()
        })
        .filter(|cells| {
            !cells
                .iter()
                .all(|c| c.chars().all(|ch| ch == '-' || ch == ':'))
        })
        .skip(1) // the header
        .collect()
}

fn doc() -> Doc {
    let text = std::fs::read_to_string(doc_path()).expect("docs/catalogue.md");
    let mut deviations = BTreeMap::new();
    for row in table_rows(&text, "## Deviations") {
        assert!(
            row.len() >= 4,
            "deviation row needs tool | case | paths | reason: {row:?}"
        );
        assert!(!row[3].is_empty(), "deviation of {} needs a reason", row[0]);
        let paths = row[2]
            .split(',')
            .map(|p| p.trim().trim_matches('`').to_owned())
            .collect();
        deviations.insert(
            (row[0].to_owned(), row[1].to_owned()),
            (paths, row[3].to_owned()),
        );
    }
    let mut not_implemented = BTreeMap::new();
    for row in table_rows(&text, "## Not implemented") {
        assert!(
            row.len() >= 2 && !row[1].is_empty(),
            "not-implemented row needs a reason: {row:?}"
        );
        not_implemented.insert(row[0].to_owned(), row[1].to_owned());
    }
    Doc {
        deviations,
        not_implemented,
    }
}

/// The decimals a golden number was written with (Rust prints the shortest round-trip form).
fn tolerance(g: &serde_json::Number) -> f64 {
    if g.is_i64() || g.is_u64() {
        return 0.5;
    }
    let s = format!("{}", g.as_f64().unwrap_or_default());
    if s.contains('e') {
        return 0.0;
    }
    let d = s.split_once('.').map(|(_, f)| f.len()).unwrap_or(0) as i32;
    0.5 * 10f64.powi(-d) * (1.0 + 1e-9)
}

fn is_json_mime(m: &str) -> bool {
    m == "application/json" || m.ends_with("+json")
}

fn diff(golden: &Value, ours: &Value, path: &str, out: &mut Vec<(String, String)>) {
    match (golden, ours) {
        (Value::Number(g), Value::Number(o)) => {
            let (gf, of) = (g.as_f64().unwrap(), o.as_f64().unwrap());
            if (gf - of).abs() > tolerance(g) + 1e-12 {
                out.push((path.to_owned(), format!("golden {g}, ours {o}")));
            }
        }
        (Value::Object(g), Value::Object(o)) => {
            for (k, gv) in g {
                let p = format!("{path}/{k}");
                match o.get(k) {
                    Some(ov) => diff(gv, ov, &p, out),
                    None => out.push((p, format!("missing (golden {})", short(gv)))),
                }
            }
            for (k, ov) in o {
                if !g.contains_key(k) {
                    out.push((format!("{path}/{k}"), format!("extra (ours {})", short(ov))));
                }
            }
        }
        (Value::Array(g), Value::Array(o)) => {
            if g.len() != o.len() {
                out.push((
                    path.to_owned(),
                    format!("golden has {} elements, ours {}", g.len(), o.len()),
                ));
            }
            for (i, (gv, ov)) in g.iter().zip(o).enumerate() {
                diff(gv, ov, &format!("{path}/{i}"), out);
            }
        }
        (g, o) if g == o => {}
        (g, o) => out.push((
            path.to_owned(),
            format!("golden {}, ours {}", short(g), short(o)),
        )),
    }
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 160 {
        format!("{}…", s.chars().take(160).collect::<String>())
    } else {
        s
    }
}

/// Content items with their JSON `text` parsed, so the comparison descends into it.
fn expand(response: &Value) -> Value {
    let mut r = response.clone();
    if let Some(items) = r.get_mut("content").and_then(Value::as_array_mut) {
        for item in items {
            let mime = item
                .get("mimeType")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            if is_json_mime(&mime)
                && let Some(text) = item.get("text").and_then(Value::as_str)
                && let Ok(parsed) = serde_json::from_str::<Value>(text)
            {
                item["text"] = parsed;
            }
        }
    }
    r
}

/// A golden that is not a ToolResponse: compare its features with our items' features.
fn legacy_shape(golden: &Value) -> Option<Vec<Value>> {
    match golden {
        Value::Array(a) => Some(a.clone()),
        Value::Object(o) if !o.contains_key("content") && !o.contains_key("error") => {
            o.get("features").and_then(Value::as_array).cloned()
        }
        _ => None,
    }
}

fn compare(golden: &Value, ours: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let ours = expand(ours);
    if let Some(features) = legacy_shape(golden) {
        let ours_features: Vec<Value> = ours
            .get("content")
            .and_then(Value::as_array)
            .map(|items| items.iter().map(|i| i["text"].clone()).collect())
            .unwrap_or_default();
        if ours.get("error").is_some() {
            out.push(("/".into(), format!("ours is an error: {}", short(&ours))));
        }
        diff(
            &Value::Array(features),
            &Value::Array(ours_features),
            "/features",
            &mut out,
        );
    } else {
        diff(&expand(golden), &ours, "", &mut out);
    }
    out
}

fn covered(path: &str, allowed: &[String]) -> bool {
    allowed
        .iter()
        .any(|a| a == "*" || path == a || path.starts_with(&format!("{a}/")))
}

#[test]
fn every_implemented_tool_passes_every_golden_fixture() {
    let catalogue = catalogue();
    let doc = doc();
    let implemented: BTreeSet<&str> = toolgate_calc::tool_ids().into_iter().collect();
    let mut problems = Vec::new();
    let mut table = Vec::new();

    for id in &implemented {
        if !catalogue.contains_key(*id) {
            problems.push(format!("{id}: implemented but not in the catalogue"));
        }
    }
    for (id, (category, cases)) in &catalogue {
        if !implemented.contains(id.as_str()) {
            match doc.not_implemented.get(id) {
                Some(reason) => table.push(format!("{category:<28} {id:<36} not implemented: {reason}")),
                None => problems.push(format!(
                    "{id}: neither implemented nor listed under \"Not implemented\" in docs/catalogue.md"
                )),
            }
            continue;
        }
        if doc.not_implemented.contains_key(id) {
            problems.push(format!(
                "{id}: implemented but still listed under \"Not implemented\""
            ));
        }
        let dir = root().join(category);
        let mut passed = 0;
        let mut deviating = 0;
        for case in cases {
            let input = read(&dir.join(format!("{id}.{case}.input.json")));
            let golden = read(&dir.join(format!("{id}.{case}.output.json")));
            let ours = match toolgate_calc::calc(id, &input, &[]) {
                Ok(v) => v,
                Err(e) => {
                    problems.push(format!("{id}.{case}: usage error: {e}"));
                    continue;
                }
            };
            let diffs = compare(&golden, &ours);
            let allowed = doc
                .deviations
                .get(&(id.clone(), case.clone()))
                .or_else(|| doc.deviations.get(&(id.clone(), "*".to_owned())));
            let allowed_paths: &[String] = allowed.map(|(p, _)| p.as_slice()).unwrap_or_default();
            let unexplained: Vec<_> = diffs
                .iter()
                .filter(|(p, _)| !covered(p, allowed_paths))
                .collect();
            if !unexplained.is_empty() {
                let lines: Vec<String> = unexplained
                    .iter()
                    .take(8)
                    .map(|(p, m)| format!("    {p}: {m}"))
                    .collect();
                problems.push(format!(
                    "{id}.{case}: {} difference(s) from the golden output:\n{}\n  ours: {}",
                    unexplained.len(),
                    lines.join("\n"),
                    short(&ours)
                ));
                continue;
            }
            if let Some((paths, _)) = allowed {
                for p in paths {
                    if p != "*"
                        && !diffs
                            .iter()
                            .any(|(d, _)| covered(d, std::slice::from_ref(p)))
                    {
                        problems.push(format!(
                            "{id}.{case}: the deviation at {p} in docs/catalogue.md no longer differs; remove it"
                        ));
                    }
                }
                if !diffs.is_empty() {
                    deviating += 1;
                }
            }
            passed += 1;
        }
        table.push(format!(
            "{category:<28} {id:<36} {passed}/{} fixtures pass{}",
            cases.len(),
            if deviating > 0 {
                format!(" ({deviating} with a documented deviation)")
            } else {
                String::new()
            }
        ));
    }
    for id in doc.not_implemented.keys() {
        if !catalogue.contains_key(id) {
            problems.push(format!(
                "{id}: listed under \"Not implemented\" but not in the catalogue"
            ));
        }
    }
    eprintln!(
        "\nCatalogue conformance ({} of {} tools implemented):",
        implemented.len(),
        catalogue.len()
    );
    for line in &table {
        eprintln!("  {line}");
    }
    assert!(
        problems.is_empty(),
        "{} problem(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn the_comparison_can_fail() {
    // A golden 7230 accepts 7230.4 but not 7231; a label differs by one character; a missing key.
    let golden = serde_json::json!({"content": [{"type": "resource", "mimeType": "application/json",
        "text": "{\"v\":7230,\"w\":0.47}", "annotations": {"debrief:label": "Range 7230"}}]});
    let near = serde_json::json!({"content": [{"type": "resource", "mimeType": "application/json",
        "text": "{\"v\":7230.4,\"w\":0.474}", "annotations": {"debrief:label": "Range 7230"}}]});
    assert!(compare(&golden, &near).is_empty());
    let far = serde_json::json!({"content": [{"type": "resource", "mimeType": "application/json",
        "text": "{\"v\":7231,\"w\":0.476}", "annotations": {"debrief:label": "Range 7231"}}]});
    let d = compare(&golden, &far);
    let paths: Vec<&str> = d.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        paths,
        [
            "/content/0/text/v",
            "/content/0/text/w",
            "/content/0/annotations/debrief:label"
        ]
    );
    let missing = serde_json::json!({"content": [{"type": "resource", "mimeType": "application/json",
        "text": "{\"v\":7230}", "annotations": {"debrief:label": "Range 7230"}}]});
    assert_eq!(compare(&golden, &missing).len(), 1);
    assert!(covered("/content/0/uri", &["/content/0/uri".into()]));
    assert!(covered("/content/0/text/id", &["/content/0/text".into()]));
    assert!(!covered("/content/0/textual", &["/content/0/text".into()]));
}
