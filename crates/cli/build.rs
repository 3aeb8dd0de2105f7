//! Links the `toolgate` binary with packed relative relocations (`DT_RELR`) where the toolchain
//! and the C library on this machine support them.
//!
//! Why: the binary is position-independent, so every pointer in its static tables (monty's and
//! html5ever's atom and entity tables, the tokenizer's, llama.cpp's) is a relative relocation the
//! loader applies at every start — about 50,000 of them. As classic `RELA` entries they take 24
//! bytes each (1.2 MB of `.rela.dyn`, read at every process start: the `exec` hook runs on every
//! tool call a host makes); packed as `RELR` they take a few kilobytes. glibc 2.36+ reads `RELR`
//! (and a binary that uses it names the `GLIBC_ABI_DT_RELR` version, so an older glibc refuses it
//! by name rather than misbehaving); GNU ld 2.38+, lld and mold write it. Measured in
//! benches/README.md ("Packed relative relocations").
//!
//! The probe links and runs a tiny C program with the flag: if the linker does not know it, or the
//! program it wrote does not start on this machine's C library, the binary is linked as before.
//! Cross builds are never probed (the program could not run here).

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

const FLAG: &str = "-Wl,-z,pack-relative-relocs";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=TOOLGATE_NO_RELR");
    if std::env::var_os("TOOLGATE_NO_RELR").is_some() {
        return;
    }
    let target = std::env::var("TARGET").unwrap_or_default();
    let host = std::env::var("HOST").unwrap_or_default();
    if target != host || !target.contains("-linux-gnu") {
        return;
    }
    if probe() {
        println!("cargo:rustc-link-arg-bins={FLAG}");
    } else {
        println!(
            "cargo:warning=linking toolgate without packed relative relocations: this linker or C library does not support {FLAG} (the binary works; it is larger and starts slightly slower)"
        );
    }
}

/// Links `int main(void) { return 0; }` as a position-independent executable with the flag, with
/// linker warnings fatal (an unknown `-z` option is only a warning to GNU ld), and runs it.
fn probe() -> bool {
    let Some(out_dir) = std::env::var_os("OUT_DIR").map(PathBuf::from) else {
        return false;
    };
    let program = out_dir.join("relr_probe");
    // A pointer in writable static data gives the linker a relative relocation to pack. The
    // source goes in on standard input (`-x c -`): nothing to write beside the program.
    let code = "static const char *p = \"x\"; int main(void) { return p[0] == 'x' ? 0 : 1; }\n";
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    let child = Command::new(cc)
        .args(["-fPIE", "-pie", FLAG, "-Wl,--fatal-warnings", "-o"])
        .arg(&program)
        .args(["-x", "c", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    let Ok(mut child) = child else {
        return false;
    };
    let written = child
        .stdin
        .take()
        .is_some_and(|mut stdin| stdin.write_all(code.as_bytes()).is_ok());
    let linked = child.wait().is_ok_and(|status| status.success()) && written;
    linked
        && Command::new(&program)
            .output()
            .is_ok_and(|o| o.status.success())
}
