//! Converting the whole 43-agent Compound Engineering plugin (goal: ≤ 20 ms).
//!
//! - `parse_map_emit_43_agents/<target>`: in memory — parse every agent's frontmatter, map its
//!   tools, emit the target file.
//! - `plugin_in_memory/copilot`: the whole plugin from disk (read, parse, map, emit), no writes.
//! - `plugin_to_disk/copilot`: the whole pipeline from a plugin directory on disk (read, convert,
//!   write into a temporary directory, rename into place).
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(clippy::disallowed_methods)]

use std::fs;
use std::hint::black_box;
use std::path::{Path, PathBuf};

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use toolgate_convert::{Options, Target, convert, parse_agent};

fn fixtures() -> Vec<(PathBuf, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ce-agents");
    let mut v: Vec<(PathBuf, String)> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("ce-"))
        .map(|p| {
            let text = fs::read_to_string(&p).unwrap();
            (p, text)
        })
        .collect();
    v.sort();
    assert_eq!(v.len(), 43);
    v
}

struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn bench(c: &mut Criterion) {
    let agents = fixtures();
    let mut group = c.benchmark_group("parse_map_emit_43_agents");
    for target in [Target::Copilot, Target::Claude, Target::Codex] {
        group.bench_function(target.name(), |b| {
            b.iter(|| {
                let mut bytes = 0;
                for (path, text) in &agents {
                    let agent = parse_agent(path, text).unwrap();
                    bytes += agent.convert(target).unwrap().content.len();
                }
                black_box(bytes)
            });
        });
    }
    group.finish();

    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("plugin");
    fs::create_dir_all(src.join(".claude-plugin")).unwrap();
    fs::create_dir_all(src.join("agents")).unwrap();
    fs::write(
        src.join(".claude-plugin/plugin.json"),
        r#"{"name": "compound-engineering", "version": "2.0.0"}"#,
    )
    .unwrap();
    for (path, text) in &agents {
        fs::write(src.join("agents").join(path.file_name().unwrap()), text).unwrap();
    }
    c.bench_function("plugin_in_memory/copilot", |b| {
        b.iter(|| {
            let plan = toolgate_convert::plan(&src, &Options::new(Target::Copilot)).unwrap();
            black_box(plan.files.len())
        });
    });
    let mut n = 0u64;
    c.bench_function("plugin_to_disk/copilot", |b| {
        b.iter_batched(
            || {
                n += 1;
                tmp.path().join(format!("out-{n}"))
            },
            |dst| {
                let report = convert(&src, &dst, &Options::new(Target::Copilot)).unwrap();
                assert_eq!(report.agents.len(), 43);
                // Removed after timing, when criterion drops the routine's output.
                RemoveOnDrop(dst)
            },
            BatchSize::PerIteration,
        );
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
