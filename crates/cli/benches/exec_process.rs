//! Whole-process cost of running `1+1`: `toolgate exec --code '1+1'` (worker process, the
//! default, and `--in-process`) against `python3 -c '1+1'` (and `python3 -S`, without the `site`
//! imports that .pth files can make slow) and against the PyPI
//! `pydantic-monty` package driven from one Python process. Each sample starts a process and
//! waits for it to exit.
//!
//! The pydantic-monty arm uses a venv at `<target>/bench-venv` (created with
//! `python3 -m venv` + `pip install pydantic-monty` when missing); it is skipped, with a note,
//! when that fails (offline machines).
//!
//! `cargo bench -p toolgate --bench exec_process --ignore-rust-version -j2 -- --warm-up-time 1 --measurement-time 5`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use criterion::{Criterion, criterion_group, criterion_main};

/// The pydantic-monty program: the 1.x pool API, else the 0.0.x single-shot API.
const MONTY_PY: &str = "import pydantic_monty as m
if hasattr(m.Monty, 'checkout'):
    with m.Monty() as pool:
        with pool.checkout() as s:
            assert s.feed_run('1+1') == 2
else:
    assert m.Monty('1+1').run() == 2
";

fn toolgate() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_toolgate"))
}

/// `<target>` (the binary is `<target>/<profile>/toolgate`).
fn target_dir() -> PathBuf {
    toolgate()
        .parent()
        .and_then(Path::parent)
        .map_or_else(|| PathBuf::from("target"), Path::to_path_buf)
}

fn run_ok(cmd: &mut Command) -> bool {
    cmd.stdout(Stdio::null())
        .stderr(Stdio::null())
        .stdin(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The real interpreter behind `python3` (not a pyenv shim, which is a shell script).
fn real_python() -> Option<PathBuf> {
    let out = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .ok()?;
    let path = String::from_utf8(out.stdout).ok()?.trim().to_owned();
    (out.status.success() && !path.is_empty()).then(|| PathBuf::from(path))
}

/// The venv's python with pydantic-monty importable, creating the venv when missing.
fn monty_python(python: &Path) -> Result<PathBuf, String> {
    let venv = target_dir().join("bench-venv");
    let py = venv.join("bin/python");
    let works = |py: &Path| run_ok(Command::new(py).args(["-c", MONTY_PY]));
    if py.exists() && works(&py) {
        return Ok(py);
    }
    if !py.exists() && !run_ok(Command::new(python).args(["-m", "venv"]).arg(&venv)) {
        return Err(format!("python3 -m venv {} failed", venv.display()));
    }
    if !run_ok(Command::new(&py).args(["-m", "pip", "install", "-q", "pydantic-monty"])) {
        return Err("pip install pydantic-monty failed (offline?)".to_owned());
    }
    if works(&py) {
        Ok(py)
    } else {
        Err("pydantic-monty is installed but the 1+1 program fails".to_owned())
    }
}

fn bench(c: &mut Criterion) {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let exec = |extra: &[&str]| {
        let mut cmd = Command::new(toolgate());
        cmd.args(["exec", "--workspace"])
            .arg(&ws)
            .args(["--code", "1+1"])
            .args(extra)
            .env("HOME", tmp.path())
            .env("TOOLGATE_CONFIG", tmp.path().join("config.toml"))
            .env("TOOLGATE_DATA_DIR", tmp.path().join("data"))
            .env_remove("TOOLGATE_TOOLS")
            .env_remove("TOOLGATE_DISABLE");
        cmd
    };
    assert!(run_ok(&mut exec(&[])), "toolgate exec --code '1+1' failed");

    let mut group = c.benchmark_group("exec_process_1plus1");
    group.sample_size(20);
    group.bench_function("toolgate exec (worker)", |b| {
        b.iter(|| assert!(run_ok(&mut exec(&[]))));
    });
    group.bench_function("toolgate exec --in-process", |b| {
        b.iter(|| assert!(run_ok(&mut exec(&["--in-process"]))));
    });
    match real_python() {
        Some(python) => {
            println!("python3 is {}", python.display());
            group.bench_function("python3 -c 1+1", |b| {
                b.iter(|| assert!(run_ok(Command::new(&python).args(["-c", "1+1"]))));
            });
            // The interpreter's floor: no `site` (whose .pth files can import packages).
            group.bench_function("python3 -S -c 1+1", |b| {
                b.iter(|| assert!(run_ok(Command::new(&python).args(["-S", "-c", "1+1"]))));
            });
            match monty_python(&python) {
                Ok(py) => {
                    group.bench_function("python + pydantic-monty", |b| {
                        b.iter(|| assert!(run_ok(Command::new(&py).args(["-c", MONTY_PY]))));
                    });
                }
                Err(why) => println!("note: pydantic-monty arm skipped: {why}"),
            }
        }
        None => println!("note: python3 not found; the python arms are skipped"),
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
