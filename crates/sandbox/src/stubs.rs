//! What a model reads before writing a program: Python signatures of the tools and a Markdown
//! reference of the sandbox.

use std::fmt::Write as _;

use serde_json::Value;
use toolgate_core::ToolSpec;

use crate::backend::Backend;
use crate::limits::TRUNCATION_MARKER;
use toolgate_config::{
    DEFAULT_MAX_MEMORY_BYTES, DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_MAX_RECURSION_DEPTH,
    DEFAULT_MAX_TOOL_CALLS, DEFAULT_TIMEOUT,
};

const KEYWORDS: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "match", "case", "nonlocal", "not", "or", "pass", "raise", "return",
    "try", "while", "with", "yield", "type",
];

/// Builtins a tool must not shadow: the interpreter resolves them before asking the host.
const BUILTINS: &[&str] = &[
    "abs",
    "all",
    "any",
    "bin",
    "bool",
    "chr",
    "dict",
    "divmod",
    "enumerate",
    "eval",
    "exec",
    "filter",
    "float",
    "format",
    "getattr",
    "hasattr",
    "hash",
    "hex",
    "id",
    "input",
    "int",
    "isinstance",
    "iter",
    "len",
    "list",
    "locals",
    "map",
    "max",
    "min",
    "next",
    "oct",
    "open",
    "ord",
    "pow",
    "print",
    "range",
    "repr",
    "reversed",
    "round",
    "set",
    "setattr",
    "sorted",
    "str",
    "sum",
    "tuple",
    "zip",
];

/// The Python name of a tool or parameter id: characters that cannot appear in an identifier
/// become `_` (`set-track-color` → `set_track_color`); a leading digit gets a `_` prefix; a
/// keyword or builtin gets a `_` suffix (`open` → `open_`).
pub fn python_identifier(id: &str) -> String {
    let mut s: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) {
        s.insert(0, '_');
    }
    if KEYWORDS.contains(&s.as_str()) || BUILTINS.contains(&s.as_str()) {
        s.push('_');
    }
    s
}

fn py_type_of(schema: &Value) -> String {
    if let Some(choices) = schema.get("enum").and_then(Value::as_array) {
        let lits: Vec<String> = choices.iter().map(py_literal).collect();
        return format!("Literal[{}]", lits.join(", "));
    }
    if let Some(c) = schema.get("const") {
        return format!("Literal[{}]", py_literal(c));
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(alts) = schema.get(key).and_then(Value::as_array) {
            let mut parts: Vec<String> = Vec::new();
            for a in alts {
                let t = py_type_of(a);
                if !parts.contains(&t) {
                    parts.push(t);
                }
            }
            if !parts.is_empty() {
                return parts.join(" | ");
            }
        }
    }
    match schema.get("type") {
        Some(Value::String(t)) => json_type(t, schema),
        Some(Value::Array(ts)) => {
            let parts: Vec<String> = ts
                .iter()
                .filter_map(Value::as_str)
                .map(|t| json_type(t, schema))
                .collect();
            if parts.is_empty() {
                "Any".to_owned()
            } else {
                parts.join(" | ")
            }
        }
        _ => "Any".to_owned(),
    }
}

fn json_type(t: &str, schema: &Value) -> String {
    match t {
        "string" => "str".to_owned(),
        "integer" => "int".to_owned(),
        "number" => "float".to_owned(),
        "boolean" => "bool".to_owned(),
        "null" => "None".to_owned(),
        "object" => "dict".to_owned(),
        "array" => match schema.get("items") {
            Some(items) if items.is_object() => format!("list[{}]", py_type_of(items)),
            _ => "list".to_owned(),
        },
        _ => "Any".to_owned(),
    }
}

/// A JSON value written as a Python literal.
pub fn py_literal(v: &Value) -> String {
    match v {
        Value::Null => "None".to_owned(),
        Value::Bool(true) => "True".to_owned(),
        Value::Bool(false) => "False".to_owned(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => py_str(s),
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(py_literal).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(m) => format!(
            "{{{}}}",
            m.iter()
                .map(|(k, v)| format!("{}: {}", py_str(k), py_literal(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn py_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

fn docstring_text(s: &str) -> String {
    s.trim()
        .replace('\\', "\\\\")
        .replace("\"\"\"", "\\\"\\\"\\\"")
}

/// The Python type a call of this tool returns inside a program (what [`crate::RegistryHost`]
/// hands back: the outcome's data, else its summary as a `str`): from the spec's
/// `outputSchema` annotation (a JSON Schema of the result, e.g. `{"type": "string"}` → `str`,
/// an array of strings → `list[str]`), else the type that leads its `returns` annotation
/// (`"dict: {stdout: str, …}"` → `dict`), else `Any`.
pub fn python_return_type(spec: &ToolSpec) -> String {
    if let Some(schema) = spec.annotations.get(OUTPUT_SCHEMA) {
        return py_type_of(schema);
    }
    spec.annotations
        .get("returns")
        .and_then(Value::as_str)
        .map(|r| r.split(':').next().unwrap_or(r).trim())
        .filter(|r| !r.is_empty())
        .unwrap_or("Any")
        .to_owned()
}

/// The annotation under which a tool declares the JSON Schema of its result (as MCP's
/// `outputSchema`); [`python_return_type`] reads it.
pub const OUTPUT_SCHEMA: &str = "outputSchema";

/// One `def` per tool, from its JSON Schema:
/// `def name(*, p: type = default) -> T: """desc"""`. Required parameters have no default;
/// optional ones without a declared default show `= None`. `T` is [`python_return_type`].
pub fn python_signatures(specs: &[ToolSpec]) -> String {
    let mut out = String::new();
    for spec in specs {
        let name = python_identifier(&spec.id);
        let props = spec
            .input_schema
            .get("properties")
            .and_then(Value::as_object);
        let required: Vec<&str> = spec
            .input_schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut params = Vec::new();
        let mut param_docs = Vec::new();
        if let Some(props) = props {
            for (pname, pschema) in props {
                let py = python_identifier(pname);
                let mut ty = py_type_of(pschema);
                let param = if required.contains(&pname.as_str()) {
                    format!("{py}: {ty}")
                } else if let Some(d) = pschema.get("default") {
                    format!("{py}: {ty} = {}", py_literal(d))
                } else {
                    if !ty.split(" | ").any(|t| t == "None") {
                        ty.push_str(" | None");
                    }
                    format!("{py}: {ty} = None")
                };
                params.push(param);
                if let Some(desc) = pschema.get("description").and_then(Value::as_str) {
                    param_docs.push(format!("{py}: {}", docstring_text(desc)));
                }
            }
        }
        let returns = python_return_type(spec);
        let sig = if params.is_empty() {
            String::new()
        } else {
            format!("*, {}", params.join(", "))
        };
        let _ = writeln!(out, "def {name}({sig}) -> {returns}:");
        let mut doc = docstring_text(if spec.description.trim().is_empty() {
            &spec.title
        } else {
            &spec.description
        });
        if !param_docs.is_empty() {
            doc.push_str("\n\nArgs:\n");
            doc.push_str(
                &param_docs
                    .iter()
                    .map(|d| format!("    {d}"))
                    .collect::<Vec<_>>()
                    .join("\n"),
            );
        }
        let body = doc.replace('\n', "\n    ");
        let _ = writeln!(out, "    \"\"\"{body}\"\"\"\n");
    }
    out
}

/// `name(required=placeholder, …)` for a tool.
fn example_call(spec: &ToolSpec) -> String {
    let args: Vec<String> = spec
        .params()
        .into_iter()
        .filter(|p| p.required)
        .map(|p| {
            let placeholder = match p.value_type.as_str() {
                "enum" => p.choices.first().cloned().unwrap_or(Value::Null),
                "integer" => Value::from(1),
                "number" => Value::from(1.0),
                "boolean" => Value::Bool(true),
                "array" => Value::Array(Vec::new()),
                "object" => Value::Object(serde_json::Map::new()),
                _ => Value::String("example".to_owned()),
            };
            format!(
                "{}={}",
                python_identifier(&p.name),
                py_literal(&placeholder)
            )
        })
        .collect();
    format!("{}({})", python_identifier(&spec.id), args.join(", "))
}

/// One tool as `toolgate tools list --json` prints it and the host installers render it: the one
/// definition both read, so an installed plugin always describes the tools the binary lists.
pub fn manifest_entry(spec: &ToolSpec, backend: Backend) -> Value {
    let risk = match (spec.effect().is_mutating(), spec.category == "workspace") {
        (false, _) => "read-only",
        (true, true) => "workspace-side-effect",
        (true, false) => "modifies-plot",
    };
    serde_json::json!({
        "name": spec.id,
        "python": python_identifier(&spec.id),
        "title": spec.title,
        "description": spec.description,
        "parameters": spec.input_schema,
        "returns": python_return_type(spec),
        "outputSchema": spec.annotations.get(OUTPUT_SCHEMA),
        "outputKind": spec.output_kind.as_ref().map(|k| k.as_str()),
        "effect": spec.effect(),
        "risk": risk,
        "category": spec.category,
        "backend": backend.to_string(),
    })
}

/// An LLM-ready reference: how to call tools, their signatures, idiomatic examples, the limits,
/// and what the monty Python subset does not support.
pub fn markdown_reference(specs: &[ToolSpec], backend: Backend) -> String {
    let names: Vec<String> = specs.iter().map(|s| python_identifier(&s.id)).collect();
    let has = |n: &str| names.iter().any(|x| x == n);
    let mut md = String::new();
    let _ = writeln!(
        md,
        "# Sandbox tools (`toolgate exec`, backend: {backend})\n\nRun one Python program per step with `toolgate exec --code '<python>'` (or `--file F`, or `-` for stdin). The program runs in a sandbox with no file, process, network or environment access of its own: it reaches the outside only through the tools below. Do several tool calls, loops and filtering in one program instead of one tool call per turn. With `--plot PLOT_ID` the program can also call the Debrief plot functions (`toolgate tools list --surface codeact --plot --markdown` lists them).\n"
    );
    md.push_str("## Calling tools\n\n");
    let sample = if has("view") {
        "view(path='README.md')".to_owned()
    } else {
        specs
            .first()
            .map_or_else(|| "tool(name=value)".to_owned(), example_call)
    };
    let _ = writeln!(
        md,
        "- Tools are Python functions; call them with keyword arguments: `{sample}`. Positional arguments map onto the parameters in the order shown."
    );
    md.push_str("- A tool returns JSON data (dict, list, str, int, float, bool, None). Arguments must be JSON data too.\n");
    md.push_str("- A failing tool raises an exception you can catch: `FileNotFoundError` (no such file), `FileExistsError` (`create` on a path that exists), `PermissionError` (outside the workspace, or declined by the user: do not retry), `ValueError` (bad arguments; the message lists every problem), `TimeoutError` (the tool ran past its deadline), `RuntimeError` (anything else).\n");
    md.push_str("- An unknown name raises `NameError` listing the available tools.\n");
    md.push_str("- The result is a JSON envelope: `stdout` holds what you `print()`, `return_value` the value of the program's last expression, `error` the uncaught exception (`type`, `message`, `line`, `column`, `traceback`). `success` is false (and the exit code 1) when the program failed.\n");
    md.push_str("- Concurrency: a tool call written right after `await`, or inside the parentheses of `asyncio.gather(...)`, becomes awaitable and runs concurrently with the others on the host. Any other call returns its result directly.\n\n");

    md.push_str("## Signatures\n\n```python\n");
    md.push_str(python_signatures(specs).trim_end());
    md.push_str("\n```\n\n");
    let mut ex = String::new();
    // Each example runs against a fixture workspace in crates/cli/tests/reference_examples.rs,
    // which asserts what it prints: change an example there too.
    if has("grep") {
        ex.push_str("Find TODOs (grep returns one dict per matching line):\n\n```python\nhits = grep(pattern=\"TODO\", paths=\"src\")\nprint(len(hits), \"TODOs\")\nfor h in hits[:20]:\n    print(h[\"file\"] + \":\" + str(h[\"line\"]) + \": \" + h[\"text\"].strip())\n```\n\n");
    }
    if has("view") && has("glob") {
        ex.push_str("Count lines per file:\n\n```python\ncounts = {}\nfor path in glob(pattern=\"src/**/*.py\"):\n    counts[path] = len(view(path=path).splitlines())\nsorted(counts.items(), key=lambda kv: -kv[1])[:10]\n```\n\n");
        ex.push_str("Read many files concurrently:\n\n```python\nimport asyncio\npaths = glob(pattern=\"docs/*.md\")\ntexts = await asyncio.gather(*[view(path=p) for p in paths])\n{p: len(t) for p, t in zip(paths, texts)}\n```\n\n");
    }
    if has("view") {
        ex.push_str("Handle a missing file:\n\n```python\nimport json\ntry:\n    config = json.loads(view(path=\"config.json\"))\nexcept FileNotFoundError:\n    config = {}\nconfig.get(\"version\")\n```\n\n");
    }
    if has("create") && has("edit") && has("view") {
        ex.push_str("Create a file, or change it when it exists:\n\n```python\ntry:\n    create(path=\"notes/todo.md\", file_text=\"- write docs\\n\")\nexcept FileExistsError:\n    edit(path=\"notes/todo.md\", old_str=\"- write docs\", new_str=\"- write docs\\n- add tests\")\nprint(view(path=\"notes/todo.md\"))\n```\n\n");
    }
    // Without the file tools there is no example whose output a test can know: only the
    // call syntax above.
    if !ex.is_empty() {
        md.push_str("## Examples\n\n");
        md.push_str(&ex);
    }

    let _ = writeln!(
        md,
        "## Limits (defaults)\n\n- wall clock: {} s per program, tool calls included → `TimeoutError`\n- memory: {} MiB → `MemoryError`\n- call depth: {} → `RecursionError`\n- tool calls: {} per program → `RuntimeError`\n- output: {} KiB of stdout + stderr; the rest is cut and marked `{TRUNCATION_MARKER}`. Print summaries, not whole files.\n",
        DEFAULT_TIMEOUT.as_secs(),
        DEFAULT_MAX_MEMORY_BYTES >> 20,
        DEFAULT_MAX_RECURSION_DEPTH,
        DEFAULT_MAX_TOOL_CALLS,
        DEFAULT_MAX_OUTPUT_BYTES >> 10
    );
    md.push_str("## The Python subset (monty)\n\nSupported: functions, closures, lambdas, comprehensions, `try`/`except`/`finally`, f-strings, `match`, `%` and `str.format`, simple classes and `@dataclass`, `async`/`await`, and the modules `json`, `re`, `math`, `datetime`, `collections`, `itertools`, `typing`, `base64`, `hashlib`, `random`, `time`, `copy`, `csv`, `asyncio`.\n\nNot supported:\n\n- class inheritance (so no custom exception classes), `@property`, `@staticmethod`, `@classmethod`\n- generators and `yield`\n- `del`\n- `open()`, `os`/`pathlib` file access, `os.environ`: use the tools (");
    let file_tools: Vec<&str> = ["view", "create", "edit", "glob", "grep"]
        .into_iter()
        .filter(|t| has(t))
        .collect();
    if file_tools.is_empty() {
        md.push_str("listed above");
    } else {
        md.push_str(
            &file_tools
                .iter()
                .map(|t| format!("`{t}`"))
                .collect::<Vec<_>>()
                .join(", "),
        );
    }
    md.push_str(") instead\n- `subprocess`, `__import__`, third-party packages\n");
    md
}

/// The plot functions a program can call when a plot is open (`toolgate exec --plot PLOT_ID`,
/// MCP `run_code` with a plot): how targets are chosen, the one-confirmation rule, the Python
/// signatures of `specs` (the plot tools as the program sees them, e.g.
/// `toolgate_plot::transaction::scratch_specs()`), and an example when the functions it uses
/// are among them. Markdown, to append to [`markdown_reference`] or to a tool description.
pub fn plot_functions_reference(specs: &[ToolSpec]) -> String {
    let names: Vec<String> = specs.iter().map(|s| python_identifier(&s.id)).collect();
    let has = |n: &str| names.iter().any(|x| x == n);
    let mut md = String::from("## Plot functions (`toolgate exec --plot PLOT_ID`)\n\n");
    if specs.is_empty() {
        md.push_str("No plot functions are available.\n");
        return md;
    }
    md.push_str("With a plot open (`toolgate exec --plot stac://…`; ids from `toolgate catalog search`) the program can also call these functions. Choose the features a call works on with `feature_names` (display names: exact, else a unique substring), `feature_ids`, or `scope` (`\"selection\"` or `\"all\"`). An edit with none of these and nothing selected raises `ValueError` (toolgate does not guess what to change); an analysis defaults to every feature.\n\n");
    md.push_str("- Edits land on a scratch copy of the plot: later calls in the same program see them, the plot itself is untouched while the program runs.\n");
    md.push_str("- When the program succeeds, its net change is previewed once and applied as one undo step if the person approves; otherwise nothing is applied. Nothing is saved to disk unless the person asks (`--save`).\n");
    md.push_str("- A function that edits returns `{\"modified\": [feature ids]}`; an analysis returns its result as a dict. A target that matches no feature raises `ValueError`.\n\n");
    md.push_str("```python\n");
    md.push_str(python_signatures(specs).trim_end());
    md.push_str("\n```\n\n");
    // Run with `--plot` on the demo plot by crates/cli/tests/reference_examples.rs, which
    // asserts what it prints.
    if has("set_track_color") && has("track_stats") {
        md.push_str("Recolour a track and read its statistics in the same program:\n\n```python\nchanged = set_track_color(color=\"red\", feature_names=[\"Contact\"])\nstats = track_stats(feature_names=[\"Contact\"])\nprint(changed[\"modified\"], stats[\"name\"], stats[\"point_count\"])\n```\n");
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Map, json};
    use toolgate_core::OutputKind;

    fn spec(id: &str, schema: Value) -> ToolSpec {
        ToolSpec {
            id: id.into(),
            title: id.into(),
            description: format!("Do {id}. Really."),
            input_schema: schema,
            output_kind: Some(OutputKind::new("read/x")),
            category: String::new(),
            annotations: Map::new(),
        }
    }

    #[test]
    fn identifiers_are_python_safe() {
        assert_eq!(python_identifier("set-track-color"), "set_track_color");
        assert_eq!(python_identifier("3d"), "_3d");
        assert_eq!(python_identifier("open"), "open_");
        assert_eq!(python_identifier("class"), "class_");
        assert_eq!(python_identifier("view"), "view");
    }

    #[test]
    fn signatures_follow_the_schema() {
        let s = spec(
            "view",
            json!({"type": "object", "properties": {
                "path": {"type": "string", "description": "File to read"},
                "view_range": {"type": "array", "items": {"type": "integer"}},
                "mode": {"enum": ["a", "b"], "default": "a"},
                "strict": {"type": "boolean", "default": false}
            }, "required": ["path"]}),
        );
        let text = python_signatures(&[s]);
        assert!(
            text.starts_with("def view(*, path: str, view_range: list[int] | None = None, mode: Literal['a', 'b'] = 'a', strict: bool = False) -> Any:"),
            "{text}"
        );
        assert!(text.contains("\"\"\"Do view. Really."), "{text}");
        assert!(text.contains("path: File to read"), "{text}");
    }

    #[test]
    fn return_types_come_from_the_output_schema() {
        let mut s = spec("glob", json!({"type": "object", "properties": {}}));
        assert_eq!(python_return_type(&s), "Any");
        s.annotations.insert(
            "returns".into(),
            json!("dict: {stdout: str, stderr: str, returncode: int}"),
        );
        assert_eq!(python_return_type(&s), "dict");
        s.annotations.insert(
            OUTPUT_SCHEMA.into(),
            json!({"type": "array", "items": {"type": "string"}}),
        );
        assert_eq!(python_return_type(&s), "list[str]");
        assert!(python_signatures(&[s.clone()]).starts_with("def glob() -> list[str]:"));
        assert_eq!(manifest_entry(&s, Backend::Monty)["returns"], "list[str]");
    }

    #[test]
    fn the_plot_reference_lists_every_function_with_its_parameters() {
        let specs = [
            spec(
                "set-track-color",
                json!({"type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]}),
            ),
            spec("track-stats", json!({"type": "object", "properties": {}})),
        ];
        let md = plot_functions_reference(&specs);
        assert!(md.contains("def set_track_color(*, color: str)"), "{md}");
        assert!(md.contains("def track_stats()"), "{md}");
        assert!(md.contains("set_track_color(color=\"red\""), "{md}");
        let md = plot_functions_reference(&specs[1..]);
        assert!(
            !md.contains("set_track_color("),
            "no example for a missing function: {md}"
        );
        assert!(plot_functions_reference(&[]).contains("No plot functions"));
    }
}
