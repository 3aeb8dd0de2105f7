//! The nine tools as a model sees them: ids, schemas, descriptions, output kinds.

use serde_json::{Map, Value, json};
use toolgate_core::{OutputKind, ToolSpec};

use crate::WorkspaceConfig;

/// Output kinds. Reads are `read/*` (the core classifies them read-only); writes, execution and
/// SQL are `workspace/*` (mutating: a confirmation is needed).
pub mod kinds {
    pub const FILE: &str = "read/file";
    pub const GLOB: &str = "read/glob";
    pub const GREP: &str = "read/grep";
    pub const WEB: &str = "read/web";
    pub const GITHUB: &str = "read/github";
    pub const WRITE: &str = "workspace/write";
    pub const EXEC: &str = "workspace/exec";
    pub const SQL: &str = "workspace/sql";
    /// web_fetch when write methods are enabled.
    pub const WEB_WRITE: &str = "workspace/web";
    /// github_api when write methods are enabled.
    pub const GITHUB_WRITE: &str = "workspace/github";
}

/// The directories glob leaves out unless `exclude_dirs` says otherwise (the anchor's set).
pub const DEFAULT_EXCLUDE_DIRS: &[&str] = &[
    ".venv",
    "venv",
    "node_modules",
    "__pycache__",
    ".git",
    ".tox",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    "target",
    "dist",
    "build",
    ".next",
    ".nuxt",
];

/// HTTP methods each network tool accepts.
pub fn web_methods(writes: bool) -> &'static [&'static str] {
    if writes {
        &["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"]
    } else {
        &["GET", "HEAD"]
    }
}

pub fn github_methods(writes: bool) -> &'static [&'static str] {
    if writes {
        &["GET", "POST", "PUT", "PATCH", "DELETE"]
    } else {
        &["GET"]
    }
}

fn object(properties: Value, required: &[&str]) -> Value {
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

fn spec(id: &str, title: &str, kind: &str, description: String, schema: Value) -> ToolSpec {
    ToolSpec {
        id: id.to_owned(),
        title: title.to_owned(),
        description,
        input_schema: schema,
        output_kind: Some(OutputKind::new(kind)),
        category: "workspace".to_owned(),
        annotations: Map::new(),
    }
}

/// Every tool's spec for this configuration.
pub fn all(config: &WorkspaceConfig) -> Vec<ToolSpec> {
    let writes = config.http_writes_enabled;
    let view = spec(
        "view",
        "View",
        kinds::FILE,
        format!(
            "Read a text file, or list a directory. Returns a string. For a file: its text \
             (lines keep their line endings, no line numbers); view_range=[start, end] selects \
             lines numbered from 1, inclusive, end -1 = to the end of the file. Text over {} \
             bytes is cut and ends with \"…[truncated N bytes]\" (read the rest with \
             view_range). For a directory: its entries (hidden ones too), one per line as \
             workspace-relative paths, sorted, subdirectories ending in \"/\"; not recursive. \
             Paths are relative to the workspace root and must stay inside it.",
            config.read_cap_bytes
        ),
        object(
            json!({
                "path": {"type": "string", "description": "File or directory, relative to the workspace root."},
                "view_range": {
                    "type": "array",
                    "items": {"type": "integer"},
                    "minItems": 2,
                    "maxItems": 2,
                    "description": "[start, end]: 1-based inclusive line range; end -1 means the last line."
                }
            }),
            &["path"],
        ),
    );
    let create = spec(
        "create",
        "Create File",
        kinds::WRITE,
        "Create a new file with the given text; missing parent directories are made. Fails \
         with FileExistsError if the path exists (use edit to change a file). Returns \
         \"Created <path> (<N> bytes)\". The write is atomic."
            .to_owned(),
        object(
            json!({
                "path": {"type": "string", "description": "New file, relative to the workspace root."},
                "file_text": {"type": "string", "description": "The whole content of the file."}
            }),
            &["path", "file_text"],
        ),
    );
    let edit = spec(
        "edit",
        "Edit File",
        kinds::WRITE,
        "Replace exactly one occurrence of old_str with new_str in a file. old_str must occur \
         exactly once (include surrounding lines to make it unique); 0 or several matches fail \
         with a ValueError that gives the count. Returns \"Edited <path>\". The write is atomic."
            .to_owned(),
        object(
            json!({
                "path": {"type": "string", "description": "File to change, relative to the workspace root."},
                "old_str": {"type": "string", "minLength": 1, "description": "Exact text to replace; must occur once."},
                "new_str": {"type": "string", "description": "Replacement text (may be empty)."}
            }),
            &["path", "old_str", "new_str"],
        ),
    );
    let glob = spec(
        "glob",
        "Find Files",
        kinds::GLOB,
        format!(
            "Find files by glob pattern. Returns a sorted list of workspace-relative file paths \
             (regular files only). `*` stays within one directory, `**` crosses directories, \
             `{{a,b}}` gives alternatives: \"**/*.py\", \"src/*.{{js,ts}}\". The pattern is \
             relative to `paths` (a directory inside the workspace); `..` and absolute patterns \
             are refused. Directories named in exclude_dirs are skipped (matched on path parts \
             below `paths`); by default {}; pass [] to search everything. At most {} paths; a \
             longer list ends with the entry \"…[truncated N more paths]\".",
            DEFAULT_EXCLUDE_DIRS.join(", "),
            config.glob_max_results
        ),
        object(
            json!({
                "pattern": {"type": "string", "default": "**/*", "description": "Glob relative to `paths`."},
                "paths": {"type": "string", "default": ".", "description": "Base directory, relative to the workspace root."},
                "exclude_dirs": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "Directory names to skip; replaces the default set. [] turns exclusion off."
                }
            }),
            &[],
        ),
    );
    let grep = spec(
        "grep",
        "Search File Contents",
        kinds::GREP,
        format!(
            "Search file contents with a regular expression (Rust regex syntax, like ripgrep). \
             Returns a list of {{\"file\", \"line\", \"text\"}} (workspace-relative path, 1-based \
             line number, the line without its newline), in file order. `paths` is a file or \
             directory (or a list of them) inside the workspace; directories are searched \
             recursively, skipping hidden files, .gitignore'd files and binary files. `glob` \
             filters file names (e.g. \"*.py\", \"!*_test.py\"). context_lines adds lines around \
             each match, marked \"context\": true. At most {} results; a longer list ends with a \
             result whose file is \"…[truncated N more results]\". The pattern is only ever a \
             pattern (never an option).",
            config.grep_max_results
        ),
        object(
            json!({
                "pattern": {"type": "string", "minLength": 1, "description": "Regular expression."},
                "paths": {
                    "type": ["string", "array"],
                    "items": {"type": "string"},
                    "default": ".",
                    "description": "File or directory (or a list), relative to the workspace root."
                },
                "glob": {"type": "string", "default": "", "description": "Only search files whose names match this glob; a leading ! excludes."},
                "context_lines": {"type": "integer", "minimum": 0, "maximum": 20, "default": 0, "description": "Lines of context before and after each match."},
                "ignore_case": {"type": "boolean", "default": false, "description": "Match case-insensitively."}
            }),
            &["pattern"],
        ),
    );
    let bash = spec(
        "bash",
        "Run Shell Command",
        kinds::EXEC,
        format!(
            "Run a shell command with bash -c in the workspace root. Returns {{\"stdout\", \
             \"stderr\", \"returncode\"}}; a non-zero exit does not raise. The environment holds \
             only {}; stdin is empty. After `timeout` seconds (default {}, at most {}) the command \
             and everything it started are killed and the call fails with a timeout error. \
             stdout and stderr are each cut at {} bytes, ending with \"…[truncated N bytes]\".",
            config.env_allow.join(", "),
            config.bash_timeout.as_secs_f64(),
            config.bash_max_timeout.as_secs_f64(),
            config.output_cap_bytes
        ),
        object(
            json!({
                "command": {"type": "string", "minLength": 1, "description": "Shell command line."},
                "timeout": {
                    "type": "number",
                    "exclusiveMinimum": 0,
                    "maximum": config.bash_max_timeout.as_secs_f64(),
                    "default": config.bash_timeout.as_secs_f64(),
                    "description": "Seconds before the command is killed."
                }
            }),
            &["command"],
        ),
    );
    let mut bash = bash;
    bash.annotations.insert("risk".to_owned(), json!("high"));
    let sql = spec(
        "sql",
        "Run SQL",
        kinds::SQL,
        format!(
            "Run SQL on a SQLite database file inside the workspace (default \"{}\", created if \
             missing; \":memory:\" is a scratch database that lasts for this one call). Several \
             statements separated by ';' run in order; the result describes the last one: \
             {{\"columns\": [names], \"rows\": [[values]]}} for a query, {{\"rows_affected\": N}} \
             otherwise (N = rows changed by all of the call's statements). Each call commits. ATTACH/DETACH and load_extension are refused. At \
             most {} rows; a longer result has \"truncated\": \"…[truncated after N rows]\".",
            config.sql_default_db.display(),
            config.sql_max_rows
        ),
        object(
            json!({
                "query": {"type": "string", "minLength": 1, "description": "SQL text."},
                "db_path": {
                    "type": "string",
                    "default": config.sql_default_db.to_string_lossy(),
                    "description": "Database file relative to the workspace root, or \":memory:\"."
                }
            }),
            &["query"],
        ),
    );
    let web_fetch = spec(
        "web_fetch",
        "Fetch URL",
        if writes { kinds::WEB_WRITE } else { kinds::WEB },
        format!(
            "Fetch an http(s) URL and return the body as a string; HTML is converted to plain \
             text (scripts and styles dropped). {} Only public internet hosts are reachable \
             (private, loopback and link-local addresses are refused, redirects too); at most 5 \
             redirects. An HTTP error status or a network failure raises an error naming it. \
             Text longer than max_length characters is cut and ends with \"…[truncated at N \
             chars; …]\".{}",
            if config.web_fetch_enabled {
                ""
            } else {
                "DISABLED in this workspace: calls fail until a person sets `web_fetch = true` in the `[workspace]` table of the user config file."
            },
            if writes {
                ""
            } else {
                " Only GET and HEAD are allowed."
            }
        ),
        object(
            json!({
                "url": {"type": "string", "minLength": 1, "description": "http:// or https:// URL."},
                "method": {"type": "string", "enum": web_methods(writes), "default": "GET"},
                "headers": {
                    "type": "object",
                    "additionalProperties": {"type": "string"},
                    "description": "Extra request headers."
                },
                "data": {"type": "string", "default": "", "description": "Request body (form-encoded unless a Content-Type header says otherwise); not with GET/HEAD."},
                "max_length": {"type": "integer", "minimum": 1, "maximum": config.read_cap_bytes, "default": 20000, "description": "Maximum characters returned."}
            }),
            &["url"],
        ),
    );
    let github_api = spec(
        "github_api",
        "GitHub API",
        if writes {
            kinds::GITHUB_WRITE
        } else {
            kinds::GITHUB
        },
        format!(
            "Call the GitHub REST API at https://api.github.com. endpoint is the path, e.g. \
             \"/repos/owner/repo/issues?state=open\". Returns the response body as a string of \
             JSON text (use json.loads). A non-2xx status raises an error with the status and \
             GitHub's message. Authenticated with the token in ${} when set.{}",
            config.github_token_env,
            if writes {
                " body is the JSON request body for POST/PUT/PATCH/DELETE."
            } else {
                " Only GET is allowed in this workspace."
            }
        ),
        object(
            json!({
                "endpoint": {"type": "string", "minLength": 1, "description": "API path starting with /, with an optional query string."},
                "method": {"type": "string", "enum": github_methods(writes), "default": "GET"},
                "body": {
                    "type": ["string", "object", "array"],
                    "default": "",
                    "description": "JSON request body (a JSON string or an object)."
                }
            }),
            &["endpoint"],
        ),
    );
    let mut all = vec![
        view, create, edit, glob, grep, bash, sql, web_fetch, github_api,
    ];
    for spec in &mut all {
        if let Some(schema) = output_schema(&spec.id) {
            spec.annotations.insert("outputSchema".to_owned(), schema);
        }
    }
    all
}

/// The JSON Schema of what each tool's call returns to a program (the outcome's data), which
/// the sandbox turns into the return annotation of its Python signature
/// (`toolgate_sandbox::python_return_type`). crates/cli/tests/reference_examples.rs checks each
/// against a real call.
fn output_schema(id: &str) -> Option<Value> {
    let text = json!({"type": "string"});
    Some(match id {
        "view" | "create" | "edit" | "web_fetch" | "github_api" => text,
        "glob" => json!({"type": "array", "items": {"type": "string"}}),
        "grep" => json!({"type": "array", "items": {
            "type": "object",
            "properties": {
                "file": {"type": "string"},
                "line": {"type": "integer"},
                "text": {"type": "string"},
                "context": {"type": "boolean"}
            },
            "required": ["file", "line", "text"]
        }}),
        "bash" => json!({
            "type": "object",
            "properties": {
                "stdout": {"type": "string"},
                "stderr": {"type": "string"},
                "returncode": {"type": "integer"}
            },
            "required": ["stdout", "stderr", "returncode"]
        }),
        "sql" => json!({
            "type": "object",
            "properties": {
                "columns": {"type": "array", "items": {"type": "string"}},
                "rows": {"type": "array", "items": {"type": "array"}},
                "rows_affected": {"type": "integer"},
                "truncated": {"type": "string"}
            }
        }),
        _ => return None,
    })
}
