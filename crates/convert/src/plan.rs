//! Planning a conversion in memory: read the source (an agent file, a directory of agents, or a
//! Claude Code plugin), convert every component, and list the files to write. Nothing touches the
//! destination here, so every error surfaces before anything is written.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value as Json, json};
use serde_yaml_ng::{Mapping, Value};

use crate::agent::{AgentReport, normalize_name, parse_agent};
use crate::error::{ConvertError, Result};
use crate::frontmatter::{parse_document, render_document};
use crate::target::Target;

/// Options of one conversion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    pub target: Target,
    /// Wrap the converted plugin in a local marketplace of this name (plugin sources only).
    pub marketplace: Option<String>,
    /// Replace an existing destination.
    pub force: bool,
}

impl Options {
    #[must_use]
    pub fn new(target: Target) -> Self {
        Options {
            target,
            marketplace: None,
            force: false,
        }
    }
}

/// What the source was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SourceKind {
    AgentFile,
    AgentDirectory,
    Plugin,
}

/// The bytes of a planned file.
#[derive(Debug, Clone, PartialEq)]
pub enum FileContent {
    Text(String),
    /// Copied byte for byte from this source file.
    Copy(PathBuf),
}

/// One file to write, relative to the destination.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedFile {
    pub path: PathBuf,
    pub content: FileContent,
}

/// Everything a conversion did (and `--json` prints).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub source: String,
    pub destination: String,
    pub kind: SourceKind,
    /// The source host when it is not Claude Code (`--from copilot|vscode|opencode`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    pub target: Target,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plugin: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub marketplace: Option<String>,
    /// Files written, relative to the destination (for a single agent file: the path written).
    pub files: Vec<String>,
    pub agents: Vec<AgentReport>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skills: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<String>,
    /// Plugin-level expected losses.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Plugin-level things to look at (skipped files, hooks dropped, …).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl Report {
    /// Every warning, plugin-level and per agent (prefixed with the agent's name).
    #[must_use]
    pub fn all_warnings(&self) -> Vec<String> {
        let mut out = self.warnings.clone();
        for a in &self.agents {
            out.extend(a.warnings.iter().map(|w| format!("{}: {w}", a.name)));
        }
        out
    }

    /// The closing line of the text report: agents converted, the expected losses (`lost:`)
    /// and in how many agents, the plugin's own, and the warnings to look at.
    #[must_use]
    pub fn summary(&self) -> String {
        let agents = self.agents.len();
        let losses: usize = self.agents.iter().map(|a| a.notes.len()).sum();
        let losing = self.agents.iter().filter(|a| !a.notes.is_empty()).count();
        let plugin = self.notes.len();
        let lost = match (losses, plugin) {
            (0, 0) => "nothing lost".to_string(),
            (0, p) => format!(
                "nothing lost in the agents, {} for the plugin",
                count(p, "loss")
            ),
            (l, p) => {
                let mut t = count(l, "loss");
                if agents > 1 {
                    t.push_str(&format!(" in {losing} of them"));
                }
                if p > 0 {
                    t.push_str(&format!(" and {p} for the plugin"));
                }
                t
            }
        };
        let warnings = match self.all_warnings().len() {
            0 => "no warnings".to_string(),
            w => format!("{} to look at", count(w, "warning")),
        };
        format!("Converted {}; {lost}; {warnings}.", count(agents, "agent"))
    }

    /// A short human-readable summary.
    #[must_use]
    pub fn render_human(&self) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        let what = match self.kind {
            SourceKind::AgentFile => "agent file",
            SourceKind::AgentDirectory => "agents directory",
            SourceKind::Plugin => "plugin",
        };
        let plugin = self
            .plugin
            .as_deref()
            .map(|p| format!(" (plugin `{p}`)"))
            .unwrap_or_default();
        let host = self
            .from
            .as_deref()
            .map(|f| format!("{f} "))
            .unwrap_or_default();
        let _ = writeln!(
            s,
            "Converted {host}{what} {}{plugin} -> {}: {} file(s) written to {}",
            self.source,
            self.target,
            self.files.len(),
            self.destination
        );
        if let Some(m) = &self.marketplace {
            let _ = writeln!(s, "  marketplace: {m}");
        }
        let _ = writeln!(
            s,
            "  agents: {}, skills: {}, commands: {}",
            self.agents.len(),
            self.skills.len(),
            self.commands.len()
        );
        for a in &self.agents {
            let tools = match (&a.tools_in, &a.tools_out) {
                (None, None) => "no tools declared (host defaults)".to_string(),
                (Some(i), Some(o)) => format!("[{}] -> [{}]", i.join(", "), o.join(", ")),
                // The target file has no tool list (Codex): its `lost:` line says what that means.
                (Some(i), None) => format!("[{}] -> no tool list written", i.join(", ")),
                (None, Some(o)) => format!("-> [{}]", o.join(", ")),
            };
            let _ = writeln!(s, "  {} -> {}: {tools}", a.name, a.output);
            // Each loss once: a dropped key is its `lost:` line (or, when unknown, a warning
            // below), and dropped tools are among the warnings.
            for n in &a.notes {
                let _ = writeln!(s, "    lost: {n}");
            }
        }
        for n in &self.notes {
            let _ = writeln!(s, "  lost: {n}");
        }
        let warnings = self.all_warnings();
        if !warnings.is_empty() {
            let _ = writeln!(s, "{} warning(s):", warnings.len());
            for w in &warnings {
                let _ = writeln!(s, "  warning: {w}");
            }
        }
        let _ = writeln!(s, "{}", self.summary());
        if let Some(next) = crate::next::next_steps(self) {
            let _ = writeln!(s, "{next}");
        }
        s
    }
}

/// `n` and the noun, plural unless `n` is 1 (`1 agent`, `7 losses`).
fn count(n: usize, noun: &str) -> String {
    match (n, noun.ends_with('s')) {
        (1, _) => format!("1 {noun}"),
        (_, true) => format!("{n} {noun}es"),
        (_, false) => format!("{n} {noun}s"),
    }
}

/// A conversion planned in memory.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub files: Vec<PlannedFile>,
    pub report: Report,
}

fn read_text(path: &Path) -> Result<String> {
    fs::read_to_string(path).map_err(|e| ConvertError::io(path, "read", e))
}

/// Files under `dir`, recursively, sorted by path; symlinks are skipped (reported in `skipped`),
/// as are `.git` and other hidden directories.
fn walk(dir: &Path, skipped: &mut Vec<String>) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = fs::read_dir(&d).map_err(|e| ConvertError::io(&d, "list", e))?;
        for entry in entries {
            let entry = entry.map_err(|e| ConvertError::io(&d, "list", e))?;
            let path = entry.path();
            let ft = entry
                .file_type()
                .map_err(|e| ConvertError::io(&path, "inspect", e))?;
            if ft.is_symlink() {
                skipped.push(format!("{}: a symlink; not followed", path.display()));
            } else if ft.is_dir() {
                if !entry.file_name().to_string_lossy().starts_with('.') {
                    stack.push(path);
                }
            } else if ft.is_file() {
                out.push(path);
            }
        }
    }
    out.sort();
    Ok(out)
}

fn is_md(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("md"))
}

/// Give `name` a unique file name among `taken` (`-2`, `-3`, … on a collision).
fn unique(taken: &mut BTreeSet<String>, name: &str, warnings: &mut Vec<String>) -> String {
    if taken.insert(name.to_string()) {
        return name.to_string();
    }
    let (stem, ext) = split_ext(name);
    for n in 2.. {
        let candidate = format!("{stem}-{n}{ext}");
        if taken.insert(candidate.clone()) {
            warnings.push(format!(
                "two sources map to `{name}`; the later one is written as `{candidate}`"
            ));
            return candidate;
        }
    }
    unreachable!("an unbounded range always yields a free name")
}

fn split_ext(name: &str) -> (&str, &str) {
    for ext in [".agent.md", ".md", ".toml", ".json"] {
        if let Some(stem) = name.strip_suffix(ext) {
            return (stem, ext);
        }
    }
    (name, "")
}

struct AgentsOut {
    files: Vec<PlannedFile>,
    reports: Vec<AgentReport>,
}

/// Convert agent files into `dir` (relative to the destination).
fn convert_agents(
    paths: &[PathBuf],
    target: Target,
    dir: &Path,
    warnings: &mut Vec<String>,
) -> Result<AgentsOut> {
    let mut taken = BTreeSet::new();
    let mut out = AgentsOut {
        files: Vec::new(),
        reports: Vec::new(),
    };
    for path in paths {
        let text = read_text(path)?;
        let agent = parse_agent(path, &text)?;
        if !agent.has_frontmatter {
            warnings.push(format!(
                "{}: skipped: no YAML frontmatter, so not an agent definition",
                path.display()
            ));
            continue;
        }
        let mut converted = agent.convert(target)?;
        let file_name = unique(&mut taken, &converted.file_name, warnings);
        let rel = dir.join(&file_name);
        converted.report.output = rel.display().to_string();
        out.files.push(PlannedFile {
            path: rel,
            content: FileContent::Text(converted.content),
        });
        out.reports.push(converted.report);
    }
    Ok(out)
}

/// Plan the conversion of `src` (an agent file, a directory of agents, or a plugin directory).
pub fn plan(src: &Path, options: &Options) -> Result<Plan> {
    let meta = fs::metadata(src).map_err(|_| ConvertError::SourceMissing(src.to_path_buf()))?;
    if meta.is_file() {
        if options.marketplace.is_some() {
            return Err(ConvertError::Usage(
                "--marketplace needs a plugin directory as the source (one with \
                 .claude-plugin/plugin.json)"
                    .into(),
            ));
        }
        return plan_agent_file(src, options.target);
    }
    let manifest = src.join(".claude-plugin").join("plugin.json");
    if manifest.is_file() {
        return plan_plugin(src, &manifest, options);
    }
    let markers: Vec<&str> = [
        ".claude-plugin",
        "agents",
        "skills",
        "commands",
        ".mcp.json",
    ]
    .into_iter()
    .filter(|m| src.join(m).exists())
    .collect();
    if !markers.is_empty() {
        return Err(ConvertError::MissingManifest {
            dir: src.to_path_buf(),
            manifest,
            found: markers.join(", "),
        });
    }
    if options.marketplace.is_some() {
        return Err(ConvertError::Usage(
            "--marketplace needs a plugin directory as the source (one with \
             .claude-plugin/plugin.json)"
                .into(),
        ));
    }
    plan_agent_dir(src, options.target)
}

/// Plan the conversion of `src`, written for `source`, into `options.target`. A Claude source is
/// [`plan`]; Copilot, VS Code and OpenCode sources (an agent file or a directory of them) convert
/// back to Claude Code only.
pub fn plan_from(src: &Path, source: crate::target::Source, options: &Options) -> Result<Plan> {
    use crate::target::Source;
    if source == Source::Claude {
        return plan(src, options);
    }
    if options.target != Target::Claude {
        return Err(ConvertError::Usage(format!(
            "--from {source} converts to Claude Code only; use --to claude"
        )));
    }
    if options.marketplace.is_some() {
        return Err(ConvertError::Usage(format!(
            "--marketplace needs a Claude Code plugin source, not --from {source}"
        )));
    }
    let meta = fs::metadata(src).map_err(|_| ConvertError::SourceMissing(src.to_path_buf()))?;
    let kind = if meta.is_file() {
        SourceKind::AgentFile
    } else {
        SourceKind::AgentDirectory
    };
    let mut report = empty_report(src, kind, Target::Claude);
    report.from = Some(source.name().to_owned());
    let paths: Vec<PathBuf> = if meta.is_file() {
        vec![src.to_path_buf()]
    } else {
        walk(src, &mut report.warnings)?
            .into_iter()
            .filter(|p| is_md(p))
            .collect()
    };
    let mut taken = BTreeSet::new();
    let mut files = Vec::new();
    for path in &paths {
        let text = read_text(path)?;
        let agent = crate::reverse::parse_source_agent(source, path, &text)?;
        if !agent.has_frontmatter && kind == SourceKind::AgentDirectory {
            report.warnings.push(format!(
                "{}: skipped: no YAML frontmatter, so not an agent definition",
                path.display()
            ));
            continue;
        }
        let mut converted = crate::reverse::to_claude(source, &agent)?;
        let file_name = if kind == SourceKind::AgentFile {
            converted.file_name.clone()
        } else {
            unique(&mut taken, &converted.file_name, &mut report.warnings)
        };
        converted.report.output = file_name.clone();
        files.push(PlannedFile {
            path: PathBuf::from(&file_name),
            content: FileContent::Text(converted.content),
        });
        report.agents.push(converted.report);
    }
    if files.is_empty() {
        return Err(ConvertError::NothingToConvert(src.to_path_buf()));
    }
    Ok(Plan { files, report })
}

fn empty_report(src: &Path, kind: SourceKind, target: Target) -> Report {
    Report {
        source: src.display().to_string(),
        destination: String::new(),
        kind,
        from: None,
        target,
        plugin: None,
        marketplace: None,
        files: Vec::new(),
        agents: Vec::new(),
        skills: Vec::new(),
        commands: Vec::new(),
        notes: Vec::new(),
        warnings: Vec::new(),
    }
}

fn plan_agent_file(src: &Path, target: Target) -> Result<Plan> {
    let text = read_text(src)?;
    let agent = parse_agent(src, &text)?;
    let converted = agent.convert(target)?;
    let mut report = empty_report(src, SourceKind::AgentFile, target);
    report.agents.push(converted.report);
    Ok(Plan {
        files: vec![PlannedFile {
            path: PathBuf::from(&converted.file_name),
            content: FileContent::Text(converted.content),
        }],
        report,
    })
}

fn plan_agent_dir(src: &Path, target: Target) -> Result<Plan> {
    let mut report = empty_report(src, SourceKind::AgentDirectory, target);
    let paths: Vec<PathBuf> = walk(src, &mut report.warnings)?
        .into_iter()
        .filter(|p| is_md(p))
        .collect();
    let agents = convert_agents(&paths, target, Path::new(""), &mut report.warnings)?;
    if agents.files.is_empty() {
        return Err(ConvertError::NothingToConvert(src.to_path_buf()));
    }
    report.agents = agents.reports;
    Ok(Plan {
        files: agents.files,
        report,
    })
}

/// A path from the manifest, resolved and confined to the plugin root.
fn confined(root: &Path, manifest: &Path, key: &str, value: &str) -> Result<PathBuf> {
    let rel = Path::new(value);
    let escape = || ConvertError::PathEscape {
        manifest: manifest.to_path_buf(),
        key: key.to_string(),
        value: value.to_string(),
    };
    if !toolgate_fs::is_beneath_lexically(rel) {
        return Err(escape());
    }
    // Resolved beneath the root's descriptor: a link inside the plugin that leads out of it is
    // refused; a path that does not exist yet is fine (it is reported where it is read).
    if let Ok(opened) = toolgate_fs::Root::new(root)
        && let Err(toolgate_fs::FsError::Escapes { .. }) =
            opened.open(rel, toolgate_fs::OFlags::PATH, toolgate_fs::Links::Inside)
    {
        return Err(escape());
    }
    Ok(root.join(rel))
}

fn manifest_paths(
    root: &Path,
    manifest_path: &Path,
    manifest: &Map<String, Json>,
    key: &str,
) -> Result<Vec<PathBuf>> {
    let mut out = vec![root.join(key)];
    let values: Vec<&str> = match manifest.get(key) {
        None => Vec::new(),
        Some(Json::String(s)) => vec![s.as_str()],
        Some(Json::Array(items)) => items.iter().filter_map(Json::as_str).collect(),
        Some(_) => {
            return Err(ConvertError::Manifest {
                path: manifest_path.to_path_buf(),
                message: format!("`{key}` must be a path or a list of paths"),
            });
        }
    };
    for v in values {
        let p = confined(root, manifest_path, key, v)?;
        if !out.contains(&p) {
            out.push(p);
        }
    }
    Ok(out)
}

/// The `.md` files under the given files-or-directories.
fn md_files(roots: &[PathBuf], skipped: &mut Vec<String>) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for r in roots {
        if r.is_file() && is_md(r) {
            out.push(r.clone());
        } else if r.is_dir() {
            out.extend(walk(r, skipped)?.into_iter().filter(|p| is_md(p)));
        }
    }
    out.dedup();
    Ok(out)
}

/// Skill directories (those holding `SKILL.md`) under the given roots.
fn skill_dirs(roots: &[PathBuf], skipped: &mut Vec<String>) -> Result<Vec<PathBuf>> {
    let mut out: Vec<PathBuf> = Vec::new();
    for r in roots {
        if !r.is_dir() {
            continue;
        }
        for f in walk(r, skipped)? {
            if f.file_name().is_some_and(|n| n == "SKILL.md")
                && let Some(dir) = f.parent()
                && !out.iter().any(|d| dir.starts_with(d))
            {
                out.push(dir.to_path_buf());
            }
        }
    }
    Ok(out)
}

fn json_text(value: &Json) -> Result<String> {
    serde_json::to_string_pretty(value)
        .map(|s| s + "\n")
        .map_err(|e| ConvertError::Serialise {
            what: "JSON".into(),
            message: e.to_string(),
        })
}

fn read_json(path: &Path) -> Result<Json> {
    let text = read_text(path)?;
    serde_json::from_str(&text).map_err(|e| ConvertError::Json {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

/// The MCP server map: the manifest's `mcpServers` (inline, a path, or paths) or `.mcp.json`.
fn mcp_servers(
    root: &Path,
    manifest_path: &Path,
    manifest: &Map<String, Json>,
) -> Result<Option<Map<String, Json>>> {
    fn unwrap(v: Json) -> Option<Map<String, Json>> {
        match v {
            Json::Object(mut o) => match o.remove("mcpServers") {
                Some(Json::Object(inner)) => Some(inner),
                Some(_) => None,
                None => Some(o),
            },
            _ => None,
        }
    }
    let from_file = |p: &Path| -> Result<Map<String, Json>> {
        unwrap(read_json(p)?).ok_or_else(|| ConvertError::Json {
            path: p.to_path_buf(),
            message: "expected an object of MCP servers (optionally under `mcpServers`)".into(),
        })
    };
    match manifest.get("mcpServers") {
        Some(Json::Object(o)) => Ok(Some(o.clone())),
        Some(Json::String(s)) => Ok(Some(from_file(&confined(
            root,
            manifest_path,
            "mcpServers",
            s,
        )?)?)),
        Some(Json::Array(items)) => {
            let mut merged = Map::new();
            for s in items.iter().filter_map(Json::as_str) {
                merged.extend(from_file(&confined(root, manifest_path, "mcpServers", s)?)?);
            }
            Ok(Some(merged))
        }
        Some(_) => Err(ConvertError::Manifest {
            path: manifest_path.to_path_buf(),
            message: "`mcpServers` must be an object, a path or a list of paths".into(),
        }),
        None => {
            let p = root.join(".mcp.json");
            if p.is_file() {
                Ok(Some(from_file(&p)?))
            } else {
                Ok(None)
            }
        }
    }
}

struct PluginSource {
    root: PathBuf,
    manifest_path: PathBuf,
    manifest: Map<String, Json>,
    name: String,
}

fn load_manifest(root: &Path, manifest_path: &Path) -> Result<PluginSource> {
    let Json::Object(manifest) = read_json(manifest_path)? else {
        return Err(ConvertError::Manifest {
            path: manifest_path.to_path_buf(),
            message: "expected a JSON object".into(),
        });
    };
    let name = manifest
        .get("name")
        .and_then(Json::as_str)
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| ConvertError::Manifest {
            path: manifest_path.to_path_buf(),
            message: "no `name`; add e.g. \"name\": \"my-plugin\"".into(),
        })?
        .to_string();
    Ok(PluginSource {
        root: root.to_path_buf(),
        manifest_path: manifest_path.to_path_buf(),
        manifest,
        name,
    })
}

/// Keys a Copilot `plugin.json` carries over from the Claude manifest.
const COPILOT_MANIFEST_KEYS: &[&str] = &[
    "name",
    "version",
    "description",
    "author",
    "homepage",
    "repository",
    "license",
    "keywords",
    "category",
    "tags",
];

fn plan_plugin(root: &Path, manifest_path: &Path, options: &Options) -> Result<Plan> {
    let target = options.target;
    let src = load_manifest(root, manifest_path)?;
    let mut report = empty_report(root, SourceKind::Plugin, target);
    report.plugin = Some(src.name.clone());
    let mut files: Vec<PlannedFile> = Vec::new();
    let mut skipped = Vec::new();

    if let Some(m) = &options.marketplace {
        if !target.has_plugin_marketplace() {
            return Err(ConvertError::Usage(format!(
                "--marketplace applies to --to claude, copilot or vscode, not {target}"
            )));
        }
        if normalize_name(m) != *m {
            return Err(ConvertError::Usage(format!(
                "marketplace name `{m}` must be lowercase letters, digits, `-` or `_` (e.g. `{}`)",
                normalize_name(m)
            )));
        }
    }

    // Agents.
    let agent_roots = manifest_paths(&src.root, &src.manifest_path, &src.manifest, "agents")?;
    let agent_paths = md_files(&agent_roots, &mut skipped)?;
    let agents = convert_agents(
        &agent_paths,
        target,
        Path::new("agents"),
        &mut report.warnings,
    )?;
    files.extend(agents.files);
    report.agents = agents.reports;

    // Skills: copied whole (every SKILL.md must parse).
    let skill_roots = manifest_paths(&src.root, &src.manifest_path, &src.manifest, "skills")?;
    let mut skill_names = BTreeSet::new();
    for dir in skill_dirs(&skill_roots, &mut skipped)? {
        let skill_md = dir.join("SKILL.md");
        parse_document(&skill_md, &read_text(&skill_md)?)?;
        let base = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let name = unique(
            &mut skill_names,
            &normalize_name(&base),
            &mut report.warnings,
        );
        for f in walk(&dir, &mut skipped)? {
            let Ok(rel) = f.strip_prefix(&dir) else {
                continue;
            };
            files.push(PlannedFile {
                path: Path::new("skills").join(&name).join(rel),
                content: FileContent::Copy(f.clone()),
            });
        }
        report.skills.push(name);
    }

    // Commands.
    let mut kiro_commands = Vec::new();
    let command_roots = manifest_paths(&src.root, &src.manifest_path, &src.manifest, "commands")?;
    for path in md_files(&command_roots, &mut skipped)? {
        let text = read_text(&path)?;
        let doc = parse_document(&path, &text)?;
        let fm = doc.frontmatter.clone().unwrap_or_default();
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let name = fm
            .get("name")
            .and_then(Value::as_str)
            .map_or_else(|| stem.clone(), str::to_string);
        let description = fm
            .get("description")
            .and_then(Value::as_str)
            .map(str::to_string);
        match target {
            Target::Claude => {
                let rel = command_roots
                    .iter()
                    .find_map(|r| path.strip_prefix(r).ok())
                    .map_or_else(|| PathBuf::from(format!("{stem}.md")), Path::to_path_buf);
                files.push(PlannedFile {
                    path: Path::new("commands").join(rel),
                    content: FileContent::Copy(path.clone()),
                });
                report.commands.push(name);
            }
            Target::Copilot | Target::Vscode => {
                let skill = unique(
                    &mut skill_names,
                    &normalize_name(&name),
                    &mut report.warnings,
                );
                let mut out = Mapping::new();
                out.insert("name".into(), skill.clone().into());
                out.insert(
                    "description".into(),
                    description
                        .unwrap_or_else(|| format!("Converted from Claude Code command /{name}"))
                        .into(),
                );
                if let Some(hint) = fm.get("argument-hint") {
                    out.insert("argument-hint".into(), hint.clone());
                }
                files.push(PlannedFile {
                    path: Path::new("skills").join(&skill).join("SKILL.md"),
                    content: FileContent::Text(render_document(&out, &doc.body)?),
                });
                report
                    .notes
                    .push(format!("command /{name} became the skill `{skill}`"));
                report.commands.push(name);
            }
            Target::Gemini => {
                let file = format!("{}.toml", normalize_name(&name));
                files.push(PlannedFile {
                    path: Path::new("commands").join(&file),
                    content: FileContent::Text(gemini_command(
                        &name,
                        description,
                        &fm,
                        &doc.body,
                        &mut report,
                    )?),
                });
                report.commands.push(name);
            }
            Target::Kiro => kiro_commands.push(name),
            Target::Opencode | Target::Codex => {
                let file = format!("{}.md", normalize_name(&name));
                let mut out = Mapping::new();
                if let Some(d) = description {
                    out.insert("description".into(), d.into());
                }
                if let Some(hint) = fm.get("argument-hint") {
                    out.insert("argument-hint".into(), hint.clone());
                }
                let dir = if target == Target::Opencode {
                    "commands"
                } else {
                    "prompts"
                };
                files.push(PlannedFile {
                    path: Path::new(dir).join(file),
                    content: FileContent::Text(render_document(&out, &doc.body)?),
                });
                report.commands.push(name);
            }
        }
    }

    if !kiro_commands.is_empty() {
        report.warnings.push(format!(
            "commands not converted: Kiro CLI agents have no slash-command files this converter \
             can write; port {} by hand (a skill, or the agent's prompt)",
            kiro_commands
                .iter()
                .map(|c| format!("/{c}"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }

    // MCP servers.
    let mut gemini_servers = None;
    if let Some(servers) = mcp_servers(&src.root, &src.manifest_path, &src.manifest)? {
        match target {
            Target::Claude | Target::Copilot | Target::Vscode => files.push(PlannedFile {
                path: PathBuf::from(".mcp.json"),
                content: FileContent::Text(json_text(&json!({ "mcpServers": servers }))?),
            }),
            Target::Opencode => files.push(PlannedFile {
                path: PathBuf::from("opencode.json"),
                content: FileContent::Text(json_text(&opencode_config(&servers, &mut report))?),
            }),
            Target::Codex => files.push(PlannedFile {
                path: PathBuf::from("config.toml"),
                content: FileContent::Text(codex_config(&servers, &mut report)?),
            }),
            Target::Gemini => gemini_servers = Some(gemini_mcp_servers(&servers, &mut report)),
            Target::Kiro => files.push(PlannedFile {
                path: PathBuf::from("settings/mcp.json"),
                content: FileContent::Text(json_text(&kiro_mcp_config(&servers, &mut report))?),
            }),
        }
    }

    // Hooks.
    let mut copilot_hooks_written = false;
    let hooks_json = src.root.join("hooks").join("hooks.json");
    let has_hooks = hooks_json.is_file() || src.manifest.contains_key("hooks");
    if has_hooks {
        if target == Target::Claude {
            if hooks_json.is_file() {
                for f in walk(&src.root.join("hooks"), &mut skipped)? {
                    if let Ok(rel) = f.strip_prefix(&src.root) {
                        files.push(PlannedFile {
                            path: rel.to_path_buf(),
                            content: FileContent::Copy(f.clone()),
                        });
                    }
                }
            }
            if let Some(Json::String(p)) = src.manifest.get("hooks") {
                let from = confined(&src.root, &src.manifest_path, "hooks", p)?;
                if let Ok(rel) = from.strip_prefix(&src.root)
                    && !files.iter().any(|f| f.path == rel)
                {
                    files.push(PlannedFile {
                        path: rel.to_path_buf(),
                        content: FileContent::Copy(from.clone()),
                    });
                }
            }
        } else if target == Target::Copilot && hooks_json.is_file() {
            let text = read_text(&hooks_json)?;
            match serde_json::from_str::<Json>(&text) {
                Ok(v) => {
                    let hooks = copilot_hooks(&v, &mut report);
                    files.push(PlannedFile {
                        path: PathBuf::from("hooks.json"),
                        content: FileContent::Text(json_text(&hooks)?),
                    });
                    copilot_hooks_written = true;
                }
                Err(e) => report.warnings.push(format!(
                    "hooks not converted: {} is not JSON ({e})",
                    hooks_json.display()
                )),
            }
        } else if target == Target::Gemini {
            // google-gemini/gemini-cli docs/hooks/reference.md: an extension's hooks/hooks.json
            // has BeforeTool / AfterTool / BeforeAgent / … events, regex matchers over Gemini tool
            // names, millisecond timeouts and a `decision` output, so a Claude hook's command would
            // read a payload it was not written for.
            report.warnings.push(
                "hooks not converted: Gemini CLI extension hooks (`hooks/hooks.json`) use other \
                 events (BeforeTool, AfterTool, …), Gemini tool names in matchers and another \
                 payload; port them by hand"
                    .into(),
            );
        } else if target == Target::Kiro {
            report.warnings.push(
                "hooks not converted: Kiro CLI hooks belong to each agent's `hooks` field, with \
                 other events and payloads; port them by hand"
                    .into(),
            );
        } else {
            report.warnings.push(format!(
                "hooks not converted: {target} hooks use a different event model; port them by hand"
            ));
        }
    }

    // Manifest.
    let mut manifest_out = src.manifest.clone();
    match target {
        Target::Claude => {
            for key in ["agents", "skills", "commands", "mcpServers"] {
                if manifest_out.remove(key).is_some() {
                    report.notes.push(format!(
                        "manifest `{key}` removed: its components are written to the default \
                         location"
                    ));
                }
            }
            files.push(PlannedFile {
                path: PathBuf::from(".claude-plugin/plugin.json"),
                content: FileContent::Text(json_text(&Json::Object(manifest_out.clone()))?),
            });
        }
        Target::Copilot | Target::Vscode => {
            let mut m = Map::new();
            for (k, v) in &src.manifest {
                if COPILOT_MANIFEST_KEYS.contains(&k.as_str()) {
                    m.insert(k.clone(), v.clone());
                } else if !["agents", "skills", "commands", "mcpServers", "hooks"]
                    .contains(&k.as_str())
                {
                    report.warnings.push(format!(
                        "manifest key `{k}` dropped: a {target} plugin.json has no such field"
                    ));
                }
            }
            if copilot_hooks_written {
                m.insert("hooks".into(), json!("hooks.json"));
            }
            manifest_out = m;
            files.push(PlannedFile {
                path: PathBuf::from("plugin.json"),
                content: FileContent::Text(json_text(&Json::Object(manifest_out.clone()))?),
            });
        }
        Target::Gemini => {
            let m = gemini_extension_manifest(&src, gemini_servers, &mut report);
            files.push(PlannedFile {
                path: PathBuf::from("gemini-extension.json"),
                content: FileContent::Text(json_text(&Json::Object(m))?),
            });
        }
        Target::Opencode | Target::Codex | Target::Kiro => {
            report.notes.push(format!(
                "{target} has no plugin manifest: the output is a `.{target}/`-style directory \
                 of agents, skills and config"
            ));
        }
    }

    // Licence and readme files stay with a plugin (and a Gemini extension).
    if matches!(
        target,
        Target::Claude | Target::Copilot | Target::Vscode | Target::Gemini
    ) && let Ok(entries) = fs::read_dir(&src.root)
    {
        let mut extra: Vec<PathBuf> = entries
            .filter_map(std::result::Result::ok)
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .map(|e| e.path())
            .filter(|p| {
                p.file_name().is_some_and(|n| {
                    let n = n.to_string_lossy().to_ascii_uppercase();
                    [
                        "README",
                        "LICENSE",
                        "LICENCE",
                        "NOTICE",
                        "COPYING",
                        "CHANGELOG",
                    ]
                    .iter()
                    .any(|k| n.starts_with(k))
                })
            })
            .collect();
        extra.sort();
        for p in extra {
            if let Some(n) = p.file_name() {
                files.push(PlannedFile {
                    path: PathBuf::from(n),
                    content: FileContent::Copy(p.clone()),
                });
            }
        }
    }

    report.warnings.extend(skipped);

    // Marketplace wrapping.
    if let Some(market) = &options.marketplace {
        let dir = normalize_name(&src.name);
        let prefix = Path::new("plugins").join(&dir);
        for f in &mut files {
            f.path = prefix.join(&f.path);
        }
        for a in &mut report.agents {
            a.output = prefix.join(&a.output).display().to_string();
        }
        let owner = src
            .manifest
            .get("author")
            .and_then(|a| a.get("name").and_then(Json::as_str).or(a.as_str()))
            .unwrap_or("toolgate convert")
            .to_string();
        let mut entry = Map::new();
        entry.insert("name".into(), Json::String(src.name.clone()));
        entry.insert("source".into(), Json::String(format!("./plugins/{dir}")));
        for k in ["description", "version"] {
            if let Some(v) = src.manifest.get(k) {
                entry.insert(k.into(), v.clone());
            }
        }
        let mut metadata = Map::new();
        metadata.insert(
            "description".into(),
            Json::String(format!(
                "Local marketplace for {} (converted by toolgate)",
                src.name
            )),
        );
        if let Some(v) = src.manifest.get("version") {
            metadata.insert("version".into(), v.clone());
        }
        let market_json = json!({
            "name": market,
            "owner": { "name": owner },
            "metadata": metadata,
            "plugins": [entry],
        });
        let text = json_text(&market_json)?;
        files.push(PlannedFile {
            path: PathBuf::from(".claude-plugin/marketplace.json"),
            content: FileContent::Text(text.clone()),
        });
        files.push(PlannedFile {
            path: PathBuf::from(".github/plugin/marketplace.json"),
            content: FileContent::Text(text),
        });
        report.marketplace = Some(market.clone());
    }

    Ok(Plan { files, report })
}

/// A Claude Code command as a Gemini CLI custom command (google-gemini/gemini-cli
/// `docs/cli/custom-commands.md`): TOML with `description` and `prompt`; `$ARGUMENTS` becomes
/// `{{args}}`. Positional `$1`…`$9`, `` !`cmd` `` shell injection (Gemini writes `!{cmd}`) and the
/// frontmatter Gemini commands have no field for are reported.
fn gemini_command(
    name: &str,
    description: Option<String>,
    fm: &Mapping,
    body: &str,
    report: &mut Report,
) -> Result<String> {
    let prompt = body.trim().replace("$ARGUMENTS", "{{args}}");
    let bytes = prompt.as_bytes();
    if bytes
        .windows(2)
        .any(|w| w[0] == b'$' && w[1].is_ascii_digit())
    {
        report.warnings.push(format!(
            "command /{name}: positional arguments (`$1`, `$2`, …) have no Gemini CLI equivalent \
             (only `{{{{args}}}}`, the whole argument text): edit `commands/{}.toml`",
            normalize_name(name)
        ));
    }
    if prompt.contains("!`") {
        report.warnings.push(format!(
            "command /{name}: Claude's `` !`command` `` shell injection is `!{{command}}` in Gemini \
             CLI commands: edit `commands/{}.toml`",
            normalize_name(name)
        ));
    }
    let dropped: Vec<&str> = fm
        .keys()
        .filter_map(Value::as_str)
        .filter(|k| !["description", "name"].contains(k))
        .collect();
    if !dropped.is_empty() {
        report.notes.push(format!(
            "command /{name}: {} dropped: a Gemini CLI command has only `description` and `prompt`",
            dropped
                .iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let mut table = toml::Table::new();
    table.insert(
        "description".into(),
        toml::Value::String(
            description.unwrap_or_else(|| format!("Converted from Claude Code command /{name}")),
        ),
    );
    table.insert("prompt".into(), toml::Value::String(prompt));
    toml::to_string(&table).map_err(|e| ConvertError::Serialise {
        what: format!("Gemini command /{name}"),
        message: e.to_string(),
    })
}

/// Replace `${CLAUDE_PLUGIN_ROOT}` in every string of `v` with `with`; whether any was found.
fn replace_plugin_root(v: &mut Json, with: &str) -> bool {
    let mut found = false;
    match v {
        Json::String(s) if s.contains("${CLAUDE_PLUGIN_ROOT}") => {
            *s = s.replace("${CLAUDE_PLUGIN_ROOT}", with);
            found = true;
        }
        Json::Array(a) => {
            for x in a {
                found |= replace_plugin_root(x, with);
            }
        }
        Json::Object(o) => {
            for x in o.values_mut() {
                found |= replace_plugin_root(x, with);
            }
        }
        _ => {}
    }
    found
}

/// One Claude MCP server (`command`/`args`/`env`, or `type` + `url`/`headers`) in the shape of a
/// Gemini CLI server (google-gemini/gemini-cli `docs/tools/mcp-server.md`: a `url` is `httpUrl`,
/// streamable HTTP, unless the Claude server is `"type": "sse"`; `cwd` and `timeout` kept) or a
/// Kiro CLI one (kiro.dev/docs/cli/mcp/configuration: `command`, `args` — required, so `[]` when
/// absent — `env`, `url`, `headers`). Claude's `type` is neither host's field; other fields are
/// dropped with a warning, and a server with neither `command` nor `url` is not converted.
pub(crate) fn native_mcp_server(
    target: Target,
    name: &str,
    server: &Json,
    warnings: &mut Vec<String>,
) -> Option<Map<String, Json>> {
    let Some(obj) = server.as_object() else {
        warnings.push(format!(
            "MCP server `{name}` is not an object; not converted"
        ));
        return None;
    };
    let gemini = target == Target::Gemini;
    let sse = obj.get("type").and_then(Json::as_str) == Some("sse");
    let mut s = Map::new();
    for (k, v) in obj {
        match k.as_str() {
            "command" | "args" | "env" | "headers" => {
                s.insert(k.clone(), v.clone());
            }
            "cwd" | "timeout" if gemini => {
                s.insert(k.clone(), v.clone());
            }
            "url" if gemini && !sse => {
                s.insert("httpUrl".into(), v.clone());
            }
            "url" => {
                s.insert("url".into(), v.clone());
            }
            "type" => {}
            other => warnings.push(format!(
                "MCP server `{name}`: `{other}` dropped: not a {target} server field"
            )),
        }
    }
    if !["command", "url", "httpUrl"]
        .iter()
        .any(|k| s.contains_key(*k))
    {
        warnings.push(format!(
            "MCP server `{name}` has neither `command` nor `url`; not converted"
        ));
        return None;
    }
    if !gemini && s.contains_key("command") && !s.contains_key("args") {
        s.insert("args".into(), json!([]));
    }
    Some(s)
}

/// Claude MCP servers as Gemini CLI ones (google-gemini/gemini-cli `docs/tools/mcp-server.md`):
/// `command`/`args`/`env`/`cwd` as they are; a `url` is `httpUrl` (streamable HTTP) unless the
/// Claude server is `"type": "sse"`, which stays `url`; `${CLAUDE_PLUGIN_ROOT}` becomes the
/// extension variable `${extensionPath}` (`docs/extensions/reference.md`).
fn gemini_mcp_servers(servers: &Map<String, Json>, report: &mut Report) -> Map<String, Json> {
    let mut out = Map::new();
    let mut rooted = false;
    for (name, server) in servers {
        let Some(s) = native_mcp_server(Target::Gemini, name, server, &mut report.warnings) else {
            continue;
        };
        let mut v = Json::Object(s);
        rooted |= replace_plugin_root(&mut v, "${extensionPath}");
        out.insert(name.clone(), v);
    }
    if rooted {
        report.notes.push(
            "`${CLAUDE_PLUGIN_ROOT}` in MCP servers became `${extensionPath}`, Gemini CLI's \
             extension directory variable"
                .into(),
        );
    }
    out
}

/// `gemini-extension.json` (google-gemini/gemini-cli `docs/extensions/reference.md`): `name`
/// (lowercase, dashes), `version`, `description`, `mcpServers`. Other Claude manifest keys have
/// no field there and are reported.
fn gemini_extension_manifest(
    src: &PluginSource,
    servers: Option<Map<String, Json>>,
    report: &mut Report,
) -> Map<String, Json> {
    let mut m = Map::new();
    let name = normalize_name(&src.name).replace('_', "-");
    if name != src.name {
        report.notes.push(format!(
            "extension name `{}` written as `{name}`: Gemini CLI extension names are lowercase \
             with dashes (and should match the directory it is installed in)",
            src.name
        ));
    }
    m.insert("name".into(), Json::String(name));
    match src.manifest.get("version") {
        Some(v) => {
            m.insert("version".into(), v.clone());
        }
        None => {
            m.insert("version".into(), json!("0.0.0"));
            report
                .warnings
                .push("the plugin has no `version`: wrote `0.0.0` in gemini-extension.json".into());
        }
    }
    if let Some(d) = src.manifest.get("description") {
        m.insert("description".into(), d.clone());
    }
    if let Some(s) = servers {
        m.insert("mcpServers".into(), Json::Object(s));
    }
    let dropped: Vec<String> = src
        .manifest
        .keys()
        .filter(|k| {
            ![
                "name",
                "version",
                "description",
                "agents",
                "skills",
                "commands",
                "mcpServers",
                "hooks",
            ]
            .contains(&k.as_str())
        })
        .map(|k| format!("`{k}`"))
        .collect();
    if !dropped.is_empty() {
        report.notes.push(format!(
            "manifest {} dropped: gemini-extension.json has no such field",
            dropped.join(", ")
        ));
    }
    m
}

/// Claude MCP servers as a Kiro CLI `mcp.json` (`{"mcpServers": …}`, the layout of
/// `.kiro/settings/mcp.json`; kiro.dev/docs/cli/mcp/configuration): `command`/`args`/`env` or
/// `url`/`headers`; Claude's `type` is not a Kiro field.
fn kiro_mcp_config(servers: &Map<String, Json>, report: &mut Report) -> Json {
    let mut out = Map::new();
    for (name, server) in servers {
        let Some(s) = native_mcp_server(Target::Kiro, name, server, &mut report.warnings) else {
            continue;
        };
        let v = Json::Object(s);
        if v.to_string().contains("${CLAUDE_PLUGIN_ROOT}") {
            report.warnings.push(format!(
                "MCP server `{name}` uses ${{CLAUDE_PLUGIN_ROOT}}, which Kiro CLI does not set: \
                 use a path the server can be found at"
            ));
        }
        out.insert(name.clone(), v);
    }
    report.notes.push(
        "MCP servers written to `settings/mcp.json`: copy it to `.kiro/settings/mcp.json`, and \
         check that the agents load workspace MCP servers (Kiro's agent `useLegacyMcpJson`)"
            .into(),
    );
    json!({ "mcpServers": out })
}

fn opencode_config(servers: &Map<String, Json>, report: &mut Report) -> Json {
    let mut mcp = Map::new();
    for (name, server) in servers {
        let mut out = Map::new();
        if let Some(cmd) = server.get("command").and_then(Json::as_str) {
            let mut command = vec![Json::String(cmd.to_string())];
            if let Some(Json::Array(args)) = server.get("args") {
                command.extend(args.iter().cloned());
            }
            out.insert("type".into(), json!("local"));
            out.insert("command".into(), Json::Array(command));
            if let Some(env) = server.get("env") {
                out.insert("environment".into(), env.clone());
            }
        } else if let Some(url) = server.get("url") {
            out.insert("type".into(), json!("remote"));
            out.insert("url".into(), url.clone());
            if let Some(h) = server.get("headers") {
                out.insert("headers".into(), h.clone());
            }
        } else {
            report.warnings.push(format!(
                "MCP server `{name}` has neither `command` nor `url`; not converted"
            ));
            continue;
        }
        out.insert("enabled".into(), json!(true));
        mcp.insert(name.clone(), Json::Object(out));
    }
    json!({ "$schema": "https://opencode.ai/config.json", "mcp": mcp })
}

fn codex_config(servers: &Map<String, Json>, report: &mut Report) -> Result<String> {
    fn to_toml(v: &Json) -> Option<toml::Value> {
        match v {
            Json::String(s) => Some(toml::Value::String(s.clone())),
            Json::Bool(b) => Some(toml::Value::Boolean(*b)),
            Json::Number(n) => n
                .as_i64()
                .map(toml::Value::Integer)
                .or_else(|| n.as_f64().map(toml::Value::Float)),
            Json::Array(a) => Some(toml::Value::Array(a.iter().filter_map(to_toml).collect())),
            Json::Object(o) => Some(toml::Value::Table(
                o.iter()
                    .filter_map(|(k, v)| to_toml(v).map(|v| (k.clone(), v)))
                    .collect(),
            )),
            Json::Null => None,
        }
    }
    let mut table = toml::Table::new();
    for (name, server) in servers {
        let mut out = toml::Table::new();
        let pairs: &[(&str, &str)] = if server.get("command").is_some() {
            &[("command", "command"), ("args", "args"), ("env", "env")]
        } else if server.get("url").is_some() {
            &[("url", "url"), ("headers", "http_headers")]
        } else {
            report.warnings.push(format!(
                "MCP server `{name}` has neither `command` nor `url`; not converted"
            ));
            continue;
        };
        for (from, to) in pairs {
            if let Some(v) = server.get(*from).and_then(to_toml) {
                out.insert((*to).to_string(), v);
            }
        }
        table.insert(name.clone(), toml::Value::Table(out));
    }
    let mut root = toml::Table::new();
    root.insert("mcp_servers".into(), toml::Value::Table(table));
    toml::to_string(&root).map_err(|e| ConvertError::Serialise {
        what: "Codex config.toml".into(),
        message: e.to_string(),
    })
}

/// Claude Code hook events and Copilot CLI's names for them (the events both hosts have).
const COPILOT_HOOK_EVENTS: &[(&str, &str)] = &[
    ("PreToolUse", "preToolUse"),
    ("PostToolUse", "postToolUse"),
    ("UserPromptSubmit", "userPromptSubmitted"),
    ("SessionStart", "sessionStart"),
    ("SessionEnd", "sessionEnd"),
];

/// A Claude Code `hooks/hooks.json` as a Copilot CLI plugin `hooks.json` (`{"version": 1,
/// "hooks": {"preToolUse": [{"type": "command", "bash": …, "timeoutSec": …}]}}`), the shape
/// toolgate's own Copilot install writes. Events Copilot does not have, matchers (Copilot hooks
/// run for every tool) and `${CLAUDE_PLUGIN_ROOT}` are reported.
fn copilot_hooks(src: &Json, report: &mut Report) -> Json {
    let mut out = Map::new();
    let events = src.get("hooks").and_then(Json::as_object);
    if events.is_none() {
        report
            .warnings
            .push("hooks not converted: hooks.json has no `hooks` object".into());
    }
    for (event, groups) in events.into_iter().flatten() {
        let Some((_, to)) = COPILOT_HOOK_EVENTS.iter().find(|(from, _)| from == event) else {
            report.warnings.push(format!(
                "hook event `{event}` not converted: Copilot CLI has no such event (it has {})",
                COPILOT_HOOK_EVENTS
                    .iter()
                    .map(|(_, c)| *c)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            continue;
        };
        for group in groups.as_array().into_iter().flatten() {
            let matcher = group.get("matcher").and_then(Json::as_str).unwrap_or("");
            if !matches!(matcher, "" | "*") {
                report.warnings.push(format!(
                    "`{event}` hook matcher `{matcher}` dropped: Copilot hooks run for every tool, so the command must check `toolName` itself"
                ));
            }
            for h in group
                .get("hooks")
                .and_then(Json::as_array)
                .into_iter()
                .flatten()
            {
                let command = h.get("command").and_then(Json::as_str);
                let (Some("command"), Some(command)) =
                    (h.get("type").and_then(Json::as_str), command)
                else {
                    report.warnings.push(format!(
                        "a `{event}` hook that is not a `command` hook was dropped: Copilot runs only commands"
                    ));
                    continue;
                };
                if command.contains("${CLAUDE_PLUGIN_ROOT}") {
                    report.warnings.push(format!(
                        "`{event}` hook `{command}` uses ${{CLAUDE_PLUGIN_ROOT}}, which Copilot CLI does not set: use a path the command can find"
                    ));
                }
                let mut entry = Map::new();
                entry.insert("type".into(), json!("command"));
                entry.insert("bash".into(), json!(command));
                if let Some(t) = h.get("timeout").and_then(Json::as_u64) {
                    entry.insert("timeoutSec".into(), json!(t));
                }
                if let Json::Array(list) = out.entry((*to).to_string()).or_insert_with(|| json!([]))
                {
                    list.push(Json::Object(entry));
                }
            }
        }
    }
    if !out.is_empty() {
        report.notes.push(
            "hooks converted to Copilot CLI events: a command now gets Copilot's payload (`toolName`, `toolArgs`) and denies a preToolUse with `permissionDecision`; check that each command reads that shape".into(),
        );
    }
    json!({"version": 1, "hooks": Json::Object(out)})
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 33 item 6: the text report's closing line counts the `lost:` lines and the agents
    /// they are in.
    #[test]
    fn summary_counts_losses_and_the_agents_with_them() {
        let agent = |notes: &[&str], warnings: &[&str]| AgentReport {
            name: "a".into(),
            notes: notes.iter().map(|n| (*n).to_string()).collect(),
            warnings: warnings.iter().map(|w| (*w).to_string()).collect(),
            ..AgentReport::default()
        };
        let mut r = empty_report(Path::new("src"), SourceKind::Plugin, Target::Copilot);
        r.agents = vec![
            agent(&["x", "y"], &[]),
            agent(&[], &["w"]),
            agent(&["z"], &[]),
        ];
        assert_eq!(
            r.summary(),
            "Converted 3 agents; 3 losses in 2 of them; 1 warning to look at."
        );
        r.notes.push("plugin loss".into());
        assert!(
            r.summary()
                .contains("3 losses in 2 of them and 1 for the plugin")
        );
        r.agents = vec![agent(&["x"], &[])];
        r.notes.clear();
        assert_eq!(r.summary(), "Converted 1 agent; 1 loss; no warnings.");
        r.agents = vec![agent(&[], &[])];
        r.notes.push("p".into());
        assert_eq!(
            r.summary(),
            "Converted 1 agent; nothing lost in the agents, 1 loss for the plugin; no warnings."
        );
    }
}
