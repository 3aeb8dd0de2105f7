//! Stubs and docs for the model, and backend selection.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use async_trait::async_trait;
use serde_json::{Map, Value, json};
use toolgate_core::{OutputKind, ToolSpec};
use toolgate_sandbox::{
    Backend, ExecRequest, HostError, PyExc, ToolHost, detect, hyperlight_status,
    markdown_reference, python_signatures, run,
};

fn spec(id: &str, description: &str, schema: Value) -> ToolSpec {
    ToolSpec {
        id: id.into(),
        title: id.into(),
        description: description.into(),
        input_schema: schema,
        output_kind: Some(OutputKind::new("read/x")),
        category: "workspace".into(),
        annotations: Map::new(),
    }
}

fn returning(mut s: ToolSpec, schema: Value) -> ToolSpec {
    s.annotations.insert("outputSchema".into(), schema);
    s
}

fn workspace_specs() -> Vec<ToolSpec> {
    vec![
        returning(
            spec(
                "view",
                "Read a file, or list a directory.",
                json!({"type": "object", "properties": {
                    "path": {"type": "string", "description": "File or directory"},
                    "view_range": {"type": "array", "items": {"type": "integer"}, "description": "[start, end], 1-based"}
                }, "required": ["path"]}),
            ),
            json!({"type": "string"}),
        ),
        returning(
            spec(
                "glob",
                "Find files by pattern.",
                json!({"type": "object", "properties": {
                    "pattern": {"type": "string", "default": "**/*"},
                    "paths": {"type": "string", "default": "."},
                    "exclude_dirs": {"type": ["array", "null"], "items": {"type": "string"}}
                }}),
            ),
            json!({"type": "array", "items": {"type": "string"}}),
        ),
        returning(
            spec(
                "grep",
                "Search file contents with a regular expression.",
                json!({"type": "object", "properties": {
                    "pattern": {"type": "string"},
                    "paths": {"type": "string", "default": "."},
                    "context_lines": {"type": "integer", "default": 0}
                }, "required": ["pattern"]}),
            ),
            json!({"type": "array", "items": {"type": "object"}}),
        ),
        spec(
            "web-fetch",
            "Fetch a URL. \"\"\"Quotes\"\"\" are escaped.",
            json!({"type": "object", "properties": {
                "url": {"type": "string"},
                "method": {"enum": ["GET", "POST"], "default": "GET"}
            }, "required": ["url"]}),
        ),
    ]
}

#[test]
fn signatures_are_valid_looking_python_from_the_schema() {
    let text = python_signatures(&workspace_specs());
    for line in [
        "def view(*, path: str, view_range: list[int] | None = None) -> str:",
        "def glob(*, pattern: str = '**/*', paths: str = '.', exclude_dirs: list[str] | None = None) -> list[str]:",
        "def grep(*, pattern: str, paths: str = '.', context_lines: int = 0) -> list[dict]:",
        // No output schema: the signature does not pretend to know.
        "def web_fetch(*, url: str, method: Literal['GET', 'POST'] = 'GET') -> Any:",
    ] {
        assert!(text.contains(line), "missing {line:?} in\n{text}");
    }
    assert!(
        text.contains("\"\"\"Read a file, or list a directory."),
        "{text}"
    );
    assert!(text.contains("view_range: [start, end], 1-based"), "{text}");
    assert!(
        !text.contains("\"\"\"Quotes\"\"\""),
        "docstrings cannot be closed early: {text}"
    );
    assert_eq!(text.matches("def ").count(), 4);
}

#[test]
fn the_reference_covers_calls_examples_limits_and_the_subset() {
    let md = markdown_reference(&workspace_specs(), Backend::Monty);
    for needle in [
        "backend: monty",
        "keyword arguments",
        "```python\ndef view(",
        "asyncio.gather",
        "grep(pattern=\"TODO\"",
        "len(view(path=path).splitlines())",
        "FileNotFoundError",
        "class inheritance",
        "`yield`",
        "`del`",
        "@property",
        "`open()`",
        "…[output truncated]",
        "30 s",
        "256 MiB",
    ] {
        assert!(md.contains(needle), "missing {needle:?} in\n{md}");
    }
    // without file tools, no example calls a tool that does not exist (nor one with made-up
    // arguments that would fail)
    let md = markdown_reference(&workspace_specs()[3..], Backend::Monty);
    assert!(!md.contains("view(path"), "{md}");
    assert!(!md.contains("## Examples"), "{md}");
}

/// Answers the documented examples' calls with plausible workspace data.
struct DocHost;

#[async_trait]
impl ToolHost for DocHost {
    fn tool_names(&self) -> Vec<String> {
        ["view", "glob", "grep"].map(String::from).to_vec()
    }
    async fn call(&self, name: &str, args: Map<String, Value>) -> Result<Value, HostError> {
        let path = args.get("path").and_then(Value::as_str).unwrap_or_default();
        match name {
            "glob" => Ok(json!(["a.py", "b.py"])),
            "view" if path == "config.json" => {
                Err(HostError::new(PyExc::FileNotFoundError, "config.json"))
            }
            "view" => Ok(json!("line1\nline2\n")),
            // What the real grep returns: one dict per matching line.
            "grep" => Ok(json!([
                {"file": "a.py", "line": 1, "text": "# TODO one"},
                {"file": "b.py", "line": 9, "text": "# TODO two"}
            ])),
            _ => Err(HostError::new(PyExc::NameError, name)),
        }
    }
}

#[tokio::test]
async fn every_documented_example_runs() {
    let md = markdown_reference(&workspace_specs(), Backend::Monty);
    let blocks: Vec<&str> = md
        .split("```python\n")
        .skip(1)
        .map(|b| b.split("```").next().unwrap())
        .filter(|b| !b.starts_with("def "))
        .collect();
    assert_eq!(blocks.len(), 4, "{md}");
    for code in &blocks {
        let env = run(ExecRequest::new(*code), &DocHost).await;
        assert!(env.success, "example failed:\n{code}\n{env:?}");
        assert!(env.tool_calls > 0, "{code}");
    }
    // The TODO example counts matches, not characters or lines of a string.
    let env = run(ExecRequest::new(blocks[0]), &DocHost).await;
    assert!(env.stdout.starts_with("2 TODOs\n"), "{}", env.stdout);
}

#[test]
fn backend_selection_honours_flags_and_environment() {
    let none = |_: &str| None;
    let s = detect(Backend::Monty, none).unwrap();
    assert_eq!(s.backend, Backend::Monty);
    let s = detect(Backend::Auto, |k: &str| {
        (k == "TOOLGATE_BACKEND").then(|| "monty".to_owned())
    })
    .unwrap();
    assert_eq!(s.backend, Backend::Monty);
    assert!(s.reason.contains("TOOLGATE_BACKEND"), "{}", s.reason);
    let err = detect(Backend::Auto, |k: &str| {
        (k == "CODEACT_BACKEND").then(|| "wasm".to_owned())
    })
    .unwrap_err()
    .to_string();
    assert!(err.contains("CODEACT_BACKEND"), "{err}");
    assert_eq!("Hyperlight".parse::<Backend>(), Ok(Backend::Hyperlight));
    match hyperlight_status().map_err(|e| e.to_string()) {
        Err(why) => {
            // auto falls back and says why; explicit hyperlight fails and says why
            let s = detect(Backend::Auto, none).unwrap();
            assert_eq!(s.backend, Backend::Monty);
            assert!(s.reason.contains(&why), "{} / {why}", s.reason);
            let err = detect(Backend::Hyperlight, none).unwrap_err().to_string();
            assert!(err.contains(&why), "{err}");
            #[cfg(not(feature = "hyperlight"))]
            assert!(why.contains("not compiled in"), "{why}");
        }
        Ok(()) => {
            assert_eq!(
                detect(Backend::Auto, none).unwrap().backend,
                Backend::Hyperlight
            );
        }
    }
}

/// Hyperlight runtime checks: they need the `hyperlight` feature, a usable /dev/kvm and a
/// Python guest; each prints by name why it did not run.
#[test]
fn hyperlight_runtime_checks() {
    let checks = ["hyperlight_kvm_create_vm", "hyperlight_runs_a_program"];
    #[cfg(not(feature = "hyperlight"))]
    for name in checks {
        eprintln!("{name}: NOT RUN: the `hyperlight` feature is off in this build");
    }
    #[cfg(feature = "hyperlight")]
    {
        match toolgate_sandbox::hyperlight::probe_kvm(std::path::Path::new("/dev/kvm")) {
            Ok(()) => eprintln!("{}: ran: KVM_CREATE_VM succeeded", checks[0]),
            Err(why) => eprintln!("{}: NOT RUN: {why}", checks[0]),
        }
        match hyperlight_status().map_err(|e| e.to_string()) {
            Ok(()) => {
                panic!("hyperlight reports usable, but no hyperlight runner exists in this build")
            }
            Err(why) => {
                assert!(
                    why.contains("/dev/kvm")
                        || why.contains("guest failed to start")
                        || why.contains("KVM"),
                    "{why}"
                );
                eprintln!("{}: NOT RUN: {why}", checks[1]);
            }
        }
    }
}
