//! Compiles the scenario files in `scenarios/` into the library (`BUILTIN_SCENARIOS`).

use std::fmt::Write as _;

fn main() {
    // Read at run time, not `env!`: a build script binary can be shared between checkouts that
    // use one target folder, and must list the scenarios of the crate it is building.
    let manifest = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".to_owned());
    let dir = std::path::Path::new(&manifest).join("scenarios");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "toml"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    let mut out = String::from("&[\n");
    for f in &files {
        println!("cargo:rerun-if-changed={}", f.display());
        let name = f
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "    ({name:?}, include_str!({:?})),",
            f.display().to_string()
        );
    }
    out.push(']');
    let out_dir = std::env::var("OUT_DIR").unwrap_or_default();
    let target = std::path::Path::new(&out_dir).join("scenarios.rs");
    if let Err(e) = std::fs::write(&target, out) {
        panic!("writing {}: {e}", target.display());
    }
    // The panel set: `panel/test/*.toml` (frozen) and `panel/dev/*.toml`.
    let mut panel = String::from("&[\n");
    for split in ["test", "dev"] {
        let dir = std::path::Path::new(&manifest).join("panel").join(split);
        println!("cargo:rerun-if-changed={}", dir.display());
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .map(|rd| {
                rd.filter_map(Result::ok)
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|x| x == "toml"))
                    .collect()
            })
            .unwrap_or_default();
        files.sort();
        for f in &files {
            println!("cargo:rerun-if-changed={}", f.display());
            let name = f
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let _ = writeln!(
                panel,
                "    ({split:?}, {name:?}, include_str!({:?})),",
                f.display().to_string()
            );
        }
    }
    panel.push(']');
    let target = std::path::Path::new(&out_dir).join("panel.rs");
    if let Err(e) = std::fs::write(&target, panel) {
        panic!("writing {}: {e}", target.display());
    }
}
