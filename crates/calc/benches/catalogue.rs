//! Catalogue benches: the whole conformance suite's inputs, run through `calc`.

use criterion::{Criterion, criterion_group, criterion_main};

fn bench(c: &mut Criterion) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/catalogue/tools");
    let mut cases = Vec::new();
    for entry in walk(&root) {
        let name = entry
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        let Some(stem) = name.strip_suffix(".input.json") else {
            continue;
        };
        let tool = stem.split('.').next().unwrap_or_default().to_owned();
        if !toolgate_calc::tool_ids().contains(&tool.as_str()) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&entry) else {
            continue;
        };
        let Ok(input) = serde_json::from_str::<serde_json::Value>(&text) else {
            continue;
        };
        cases.push((tool, input));
    }
    c.bench_function(
        "conformance suite (every implemented tool's golden inputs)",
        |b| {
            b.iter(|| {
                for (tool, input) in &cases {
                    let _ = toolgate_calc::calc(tool, input, &[]);
                }
            });
        },
    );
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

criterion_group!(benches, bench);
criterion_main!(benches);
