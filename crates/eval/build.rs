//! Compiles the scenario files in `scenarios/` into the library (`BUILTIN_SCENARIOS`), and the
//! panel set in `panel/test/` (frozen) `panel/dev/`, `panel/fresh/`, `panel/fresh2/` and `panel/fresh3/` (frozen) (`panel::BUILTIN`).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The `*.toml` files of `dir`, sorted, each with its file name; cargo reruns when any changes.
fn toml_files(dir: &Path) -> Vec<(String, PathBuf)> {
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "toml"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
        .into_iter()
        .map(|f| {
            println!("cargo:rerun-if-changed={}", f.display());
            let name = f
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            (name, f)
        })
        .collect()
}

#[expect(
    clippy::disallowed_methods,
    reason = "a build script writes into cargo's OUT_DIR, which only this build reads; toolgate-fs is not a build dependency"
)]
fn write(out_dir: &str, file: &str, text: &str) {
    let target = Path::new(out_dir).join(file);
    if let Err(e) = std::fs::write(&target, text) {
        panic!("writing {}: {e}", target.display());
    }
}

fn main() {
    // Read at run time, not `env!`: a build script binary can be shared between checkouts that
    // use one target folder, and must list the scenarios of the crate it is building.
    let manifest = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".to_owned());
    let out_dir = std::env::var("OUT_DIR").unwrap_or_default();
    let mut out = String::from("&[\n");
    for (name, f) in toml_files(&Path::new(&manifest).join("scenarios")) {
        let _ = writeln!(
            out,
            "    ({name:?}, include_str!({:?})),",
            f.display().to_string()
        );
    }
    out.push(']');
    write(&out_dir, "scenarios.rs", &out);
    let mut panel = String::from("&[\n");
    for split in ["test", "dev", "fresh", "fresh2", "fresh3"] {
        for (name, f) in toml_files(&Path::new(&manifest).join("panel").join(split)) {
            let _ = writeln!(
                panel,
                "    ({split:?}, {name:?}, include_str!({:?})),",
                f.display().to_string()
            );
        }
    }
    panel.push(']');
    write(&out_dir, "panel.rs", &panel);
}
