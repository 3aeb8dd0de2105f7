//! Scenarios as data (`crates/eval/scenarios/*.toml`), validated at load: an unknown tool or an
//! assertion no run could satisfy is an error naming `file:line`.
//!
//! ```toml
//! utterance = "colour the submarine track red"
//! tags = ["routing"]
//! [initial]
//! store = "demo"                                  # "spike" (the spike's replay fixture) or "demo"
//! open = ["stac://demo/alpha-day1/item.json"]     # opened in order; the last is active
//! selection = ["track-contact"]                   # on the active plot
//! registry = "native"                             # "native" (default), "unavailable" or "failing"
//! [[accept]]                                      # acceptable trajectories: ordered tools, the
//! tools = ["debrief_summarizeCurrentPlot", "debrief_listTools", "debrief_runTool"]
//! terminal_input = { toolId = "set-track-color" } # last = terminal; earlier ones are optional grounding
//! [[replay]]                                      # the canned calls `eval replay` makes
//! tool = "debrief_runTool"
//! input = { toolId = "set-track-color", params = { color = "red" }, featureNames = ["Contact"] }
//! confirm = ["approve"]                           # answers to confirmations, in order (default: approve)
//! [expect]
//! result_contains = ["dirty"]                     # in a result of a terminal tool
//! dirty = true
//! [[expect.feature]]
//! id = "track-contact"
//! pointer = "/properties/style/line/color"
//! equals = "red"
//! ```

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::Deserialize;
use serde_json::Value;
use toml::Spanned;
use toolgate_core::flow::Answer;
use toolgate_plot::debrief::{LIST_TOOLS, RUN_TOOL, SEARCH, SUMMARIZE};

/// The four tools a scenario may name.
pub const TOOLS: [&str; 4] = [SEARCH, SUMMARIZE, LIST_TOOLS, RUN_TOOL];

/// A scenario file that cannot be used, with where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}:{line}: {message}", file.display())]
pub struct ScenarioError {
    pub file: PathBuf,
    pub line: usize,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StoreKind {
    /// The spike's replay fixture: `stac://store-1/items/alpha-day1/item.json` with `track-1`
    /// (HMS Nelson) and `point-1` (Datum A), and `stac://store-1/items/harbour-drill/item.json`
    /// with no features.
    Spike,
    /// The built-in demo store (Exercise Alpha day 1 and 2, and a 260-feature bulk plot).
    Demo,
}

/// Which tool providers the run's registry has.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RegistryKind {
    /// The native Debrief tools.
    #[default]
    Native,
    /// The only provider is a tool server whose command cannot start, so its listing fails and
    /// the registry is empty (reference §3 "Registry unavailable").
    Unavailable,
    /// The native tools plus an external (stdio) tool server whose one tool,
    /// [`crate::fixture::FAILING_TOOL`], always answers with an error (reference §3 "Python or
    /// tool failure").
    Failing,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Initial {
    pub store: StoreKind,
    pub open: Vec<String>,
    pub selection: Vec<String>,
    pub registry: RegistryKind,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Trajectory {
    /// Ordered tools; the last is the terminal call, the others optional grounding before it.
    pub tools: Vec<String>,
    /// A subset the terminal call's input must contain.
    pub terminal_input: Option<Value>,
}

impl Trajectory {
    pub fn terminal(&self) -> &str {
        self.tools.last().map_or("", String::as_str)
    }
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct FeatureCheck {
    pub id: String,
    pub pointer: String,
    pub equals: Value,
}

#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Expect {
    pub result_contains: Vec<String>,
    pub result_not_contains: Vec<String>,
    pub dirty: Option<bool>,
    pub unchanged: Option<bool>,
    pub disk_untouched: bool,
    pub active_plot: Option<String>,
    pub asked: Option<usize>,
    pub datasets: Option<usize>,
    pub feature: Vec<FeatureCheck>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Scenario {
    pub id: String,
    pub file: PathBuf,
    pub utterance: String,
    pub tags: Vec<String>,
    pub source: Option<String>,
    pub initial: Initial,
    pub accept: Vec<Trajectory>,
    pub replay: Vec<(String, Value)>,
    #[serde(skip)]
    pub confirm: Vec<Answer>,
    pub expect: Expect,
}

impl Scenario {
    /// Tools that end some acceptable trajectory.
    pub fn terminals(&self) -> BTreeSet<&str> {
        self.accept.iter().map(Trajectory::terminal).collect()
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    id: Option<String>,
    utterance: Spanned<String>,
    #[serde(default)]
    tags: Vec<String>,
    source: Option<String>,
    #[serde(default)]
    initial: Option<Spanned<RawInitial>>,
    accept: Option<Spanned<Vec<RawTrajectory>>>,
    replay: Option<Spanned<Vec<RawCall>>>,
    #[serde(default)]
    confirm: Vec<Spanned<String>>,
    expect: Spanned<RawExpect>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawInitial {
    store: Option<Spanned<String>>,
    #[serde(default)]
    open: Vec<Spanned<String>>,
    #[serde(default)]
    selection: Vec<Spanned<String>>,
    registry: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTrajectory {
    tools: Spanned<Vec<Spanned<String>>>,
    terminal_input: Option<toml::Table>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCall {
    tool: Spanned<String>,
    #[serde(default)]
    input: Option<toml::Table>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExpect {
    #[serde(default)]
    result_contains: Vec<String>,
    #[serde(default)]
    result_not_contains: Vec<String>,
    dirty: Option<Spanned<bool>>,
    unchanged: Option<Spanned<bool>>,
    disk_untouched: Option<Spanned<bool>>,
    active_plot: Option<Spanned<String>>,
    asked: Option<Spanned<usize>>,
    datasets: Option<Spanned<usize>>,
    #[serde(default)]
    feature: Vec<Spanned<RawFeature>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFeature {
    id: String,
    pointer: String,
    equals: toml::Value,
}

/// Plot ids and, per plot, feature ids of a store kind (computed once, without touching disk).
pub fn catalogue(kind: StoreKind) -> &'static [(String, Vec<String>)] {
    static SPIKE: OnceLock<Vec<(String, Vec<String>)>> = OnceLock::new();
    static DEMO: OnceLock<Vec<(String, Vec<String>)>> = OnceLock::new();
    let ids = |features: Vec<Value>| -> Vec<String> {
        features
            .iter()
            .filter_map(|f| f["id"].as_str().map(str::to_owned))
            .collect()
    };
    match kind {
        StoreKind::Spike => SPIKE.get_or_init(|| {
            vec![
                (
                    crate::fixture::SPIKE_PLOT.to_owned(),
                    vec!["track-1".to_owned(), "point-1".to_owned()],
                ),
                (crate::fixture::EMPTY_PLOT.to_owned(), Vec::new()),
            ]
        }),
        StoreKind::Demo => DEMO.get_or_init(|| {
            vec![
                (
                    "stac://demo/alpha-day1/item.json".to_owned(),
                    ids(toolgate_plot::demo::exercise_day(1)),
                ),
                (
                    "stac://demo/alpha-day2/item.json".to_owned(),
                    ids(toolgate_plot::demo::exercise_day(2)),
                ),
                (
                    "stac://demo/bulk-tracks/item.json".to_owned(),
                    ids(toolgate_plot::demo::bulk(250, 10)),
                ),
            ]
        }),
    }
}

fn line_of(src: &str, offset: usize) -> usize {
    src.get(..offset.min(src.len()))
        .map_or(1, |s| s.matches('\n').count() + 1)
}

fn to_json(t: toml::Table) -> Value {
    serde_json::to_value(t).unwrap_or(Value::Null)
}

/// Whether `actual` contains everything in `expected` (objects recursively; other values equal).
pub fn subset(expected: &Value, actual: &Value) -> bool {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => e
            .iter()
            .all(|(k, v)| a.get(k).is_some_and(|av| subset(v, av))),
        (Value::Number(e), Value::Number(a)) => e.as_f64() == a.as_f64(),
        _ => expected == actual,
    }
}

/// Parse and validate one scenario file's text.
pub fn parse(file: &Path, src: &str) -> Result<Scenario, ScenarioError> {
    let err = |offset: usize, message: String| ScenarioError {
        file: file.to_owned(),
        line: line_of(src, offset),
        message,
    };
    let raw: RawScenario = toml::from_str(src).map_err(|e| {
        err(
            e.span().map_or(0, |s| s.start),
            e.message().trim().to_owned(),
        )
    })?;
    let known_tool = |s: &Spanned<String>| -> Result<String, ScenarioError> {
        if TOOLS.contains(&s.get_ref().as_str()) {
            Ok(s.get_ref().clone())
        } else {
            Err(err(
                s.span().start,
                format!(
                    "unknown tool \"{}\"; the tools are {}",
                    s.get_ref(),
                    TOOLS.join(", ")
                ),
            ))
        }
    };
    // initial state
    let (initial, initial_span) = match raw.initial {
        Some(i) => {
            let span = i.span().start;
            (i.into_inner(), span)
        }
        None => (RawInitial::default(), 0),
    };
    let store = match initial
        .store
        .as_ref()
        .map(|s| (s.get_ref().as_str(), s.span().start))
    {
        None | Some(("spike", _)) => StoreKind::Spike,
        Some(("demo", _)) => StoreKind::Demo,
        Some((other, at)) => {
            return Err(err(
                at,
                format!("unknown store \"{other}\"; use \"spike\" or \"demo\""),
            ));
        }
    };
    let cat = catalogue(store);
    let mut open = Vec::new();
    for p in &initial.open {
        if !cat.iter().any(|(id, _)| id == p.get_ref()) {
            return Err(err(
                p.span().start,
                format!(
                    "plot \"{}\" is not in the {store:?} store; it has {}",
                    p.get_ref(),
                    cat.iter()
                        .map(|(id, _)| id.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
        open.push(p.get_ref().clone());
    }
    let active_features: Vec<String> = open
        .last()
        .and_then(|a| cat.iter().find(|(id, _)| id == a))
        .map(|(_, f)| f.clone())
        .unwrap_or_default();
    let mut selection = Vec::new();
    for s in &initial.selection {
        if open.is_empty() {
            return Err(err(
                s.span().start,
                "a selection needs an open plot (set initial.open)".to_owned(),
            ));
        }
        if !active_features.contains(s.get_ref()) {
            return Err(err(
                s.span().start,
                format!(
                    "selected feature \"{}\" is not in the active plot",
                    s.get_ref()
                ),
            ));
        }
        selection.push(s.get_ref().clone());
    }
    let _ = initial_span;
    let registry = match initial
        .registry
        .as_ref()
        .map(|s| (s.get_ref().as_str(), s.span().start))
    {
        None | Some(("native", _)) => RegistryKind::Native,
        Some(("unavailable", _)) => RegistryKind::Unavailable,
        Some(("failing", _)) => RegistryKind::Failing,
        Some((other, at)) => {
            return Err(err(
                at,
                format!(
                    "unknown registry \"{other}\"; use \"native\", \"unavailable\" or \"failing\""
                ),
            ));
        }
    };
    // trajectories
    let raw_accept = match raw.accept {
        Some(a) if !a.get_ref().is_empty() => a.into_inner(),
        _ => {
            return Err(err(
                raw.utterance.span().start,
                "no acceptable trajectory: add at least one [[accept]] with tools = [...]"
                    .to_owned(),
            ));
        }
    };
    let mut accept = Vec::new();
    for t in raw_accept {
        if t.tools.get_ref().is_empty() {
            return Err(err(
                t.tools.span().start,
                "an accepted trajectory needs at least its terminal tool".to_owned(),
            ));
        }
        let tools = t
            .tools
            .get_ref()
            .iter()
            .map(&known_tool)
            .collect::<Result<Vec<_>, _>>()?;
        accept.push(Trajectory {
            tools,
            terminal_input: t.terminal_input.map(to_json),
        });
    }
    let (replay_span, raw_replay) = match raw.replay {
        Some(r) => (r.span().start, r.into_inner()),
        None => (raw.utterance.span().start, Vec::new()),
    };
    let mut replay = Vec::new();
    for c in raw_replay {
        let tool = known_tool(&c.tool)?;
        replay.push((
            tool,
            c.input
                .map_or_else(|| Value::Object(Default::default()), to_json),
        ));
    }
    let mut confirm = Vec::new();
    for a in &raw.confirm {
        confirm.push(match a.get_ref().as_str() {
            "approve" => Answer::Approve,
            "decline" => Answer::Decline,
            other => {
                return Err(err(
                    a.span().start,
                    format!("confirm answers are \"approve\" or \"decline\", not \"{other}\""),
                ));
            }
        });
    }
    // expectations, and the ones no run could satisfy
    let expect_at = raw.expect.span().start;
    let e = raw.expect.into_inner();
    let terminals: BTreeSet<&str> = accept.iter().map(Trajectory::terminal).collect();
    let edits = terminals.contains(RUN_TOOL);
    let can_open = !open.is_empty() || accept.iter().any(|t| t.tools.iter().any(|x| x == SEARCH));
    if let (Some(d), Some(u)) = (&e.dirty, &e.unchanged)
        && *d.get_ref()
        && *u.get_ref()
    {
        return Err(err(
            u.span().start,
            "impossible: a plot cannot be dirty and unchanged at once".to_owned(),
        ));
    }
    if let Some(d) = &e.dirty
        && *d.get_ref()
        && !edits
    {
        return Err(err(
            d.span().start,
            format!(
                "impossible: dirty = true, but no accepted trajectory ends in {RUN_TOOL}, the only tool that edits"
            ),
        ));
    }
    if let Some(d) = e.dirty.as_ref().or(e.unchanged.as_ref())
        && !can_open
    {
        return Err(err(
            d.span().start,
            "impossible: no plot is open and no trajectory searches for one, so there is no plot to check".to_owned(),
        ));
    }
    if let Some(d) = &e.disk_untouched
        && !*d.get_ref()
    {
        return Err(err(
            d.span().start,
            "impossible: the agent tools never write to disk (saving is a person's action)"
                .to_owned(),
        ));
    }
    if let Some(a) = &e.asked
        && *a.get_ref() > 0
        && !edits
    {
        return Err(err(
            a.span().start,
            format!(
                "impossible: only {RUN_TOOL} asks for confirmation, and no trajectory ends in it"
            ),
        ));
    }
    if let Some(a) = &e.datasets
        && *a.get_ref() > 0
        && !edits
    {
        return Err(err(
            a.span().start,
            format!("impossible: datasets come only from {RUN_TOOL}, and no trajectory ends in it"),
        ));
    }
    if registry == RegistryKind::Unavailable {
        let no_tool_runs = "impossible: with registry = \"unavailable\" no tool can run";
        if let Some(d) = &e.dirty
            && *d.get_ref()
        {
            return Err(err(
                d.span().start,
                format!("{no_tool_runs}, so nothing can make the plot dirty"),
            ));
        }
        if let Some(a) = &e.asked
            && *a.get_ref() > 0
        {
            return Err(err(
                a.span().start,
                format!("{no_tool_runs}, so nothing asks for confirmation"),
            ));
        }
        if let Some(a) = &e.datasets
            && *a.get_ref() > 0
        {
            return Err(err(
                a.span().start,
                format!("{no_tool_runs}, so no dataset can appear"),
            ));
        }
    }
    if let Some(p) = &e.active_plot
        && !cat.iter().any(|(id, _)| id == p.get_ref())
    {
        return Err(err(
            p.span().start,
            format!("impossible: plot \"{}\" is not in the store", p.get_ref()),
        ));
    }
    let subject_plot = e
        .active_plot
        .as_ref()
        .map(|p| p.get_ref().clone())
        .or_else(|| open.last().cloned());
    let subject_features: Vec<String> = subject_plot
        .as_ref()
        .and_then(|a| cat.iter().find(|(id, _)| id == a))
        .map(|(_, f)| f.clone())
        .unwrap_or_default();
    let mut feature = Vec::new();
    for f in e.feature {
        let at = f.span().start;
        let f = f.into_inner();
        if !subject_features.contains(&f.id) {
            return Err(err(
                at,
                format!(
                    "impossible: feature \"{}\" is not in the plot the scenario ends on",
                    f.id
                ),
            ));
        }
        if !f.pointer.starts_with('/') {
            return Err(err(
                at,
                format!(
                    "pointer \"{}\" must be a JSON pointer starting with /",
                    f.pointer
                ),
            ));
        }
        feature.push(FeatureCheck {
            id: f.id,
            pointer: f.pointer,
            equals: serde_json::to_value(f.equals).unwrap_or(Value::Null),
        });
    }
    let expect = Expect {
        result_contains: e.result_contains,
        result_not_contains: e.result_not_contains,
        dirty: e.dirty.map(Spanned::into_inner),
        unchanged: e.unchanged.map(Spanned::into_inner),
        disk_untouched: true,
        active_plot: e.active_plot.map(Spanned::into_inner),
        asked: e.asked.map(Spanned::into_inner),
        datasets: e.datasets.map(Spanned::into_inner),
        feature,
    };
    let doing_nothing_fails = !expect.result_contains.is_empty()
        || expect.dirty == Some(true)
        || !expect.feature.is_empty()
        || expect.asked.is_some_and(|n| n > 0)
        || expect.datasets.is_some_and(|n| n > 0)
        || (expect.active_plot.is_some() && expect.active_plot.as_ref() != open.last());
    if !doing_nothing_fails {
        return Err(err(
            expect_at,
            "vacuous: an agent that did nothing would satisfy these expectations; add result_contains, a feature check, dirty = true, datasets or active_plot".to_owned(),
        ));
    }
    let id = raw.id.unwrap_or_else(|| {
        file.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    });
    let scenario = Scenario {
        id,
        file: file.to_owned(),
        utterance: raw.utterance.into_inner(),
        tags: raw.tags,
        source: raw.source,
        initial: Initial {
            store,
            open,
            selection,
            registry,
        },
        accept,
        replay,
        confirm,
        expect,
    };
    if scenario.replay.is_empty() {
        return Err(err(
            replay_span,
            "no [[replay]] calls: every scenario needs the canned calls `eval replay` makes"
                .to_owned(),
        ));
    }
    let canned: Vec<crate::score::CallView> = scenario
        .replay
        .iter()
        .map(|(t, i)| crate::score::CallView {
            tool: t.clone(),
            input: i.clone(),
            dispatched: true,
        })
        .collect();
    if !crate::score::sequence_ok(&scenario, &canned) {
        return Err(err(
            replay_span,
            "the [[replay]] calls do not follow any [[accept]] trajectory".to_owned(),
        ));
    }
    Ok(scenario)
}

/// Every `*.toml` in a folder, sorted by file name; the first bad file is an error.
pub fn load_dir(dir: &Path) -> Result<Vec<Scenario>, ScenarioError> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| ScenarioError {
            file: dir.to_owned(),
            line: 0,
            message: format!("cannot list the scenario folder: {e}"),
        })?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let src = std::fs::read_to_string(&f).map_err(|e| ScenarioError {
            file: f.clone(),
            line: 0,
            message: format!("cannot read: {e}"),
        })?;
        out.push(parse(&f, &src)?);
    }
    check_unique(&out)?;
    Ok(out)
}

/// The scenarios shipped in the repository (compiled in).
pub fn builtin() -> Result<Vec<Scenario>, ScenarioError> {
    let mut out = Vec::new();
    for (name, src) in crate::BUILTIN_SCENARIOS {
        out.push(parse(&Path::new("crates/eval/scenarios").join(name), src)?);
    }
    check_unique(&out)?;
    Ok(out)
}

fn check_unique(list: &[Scenario]) -> Result<(), ScenarioError> {
    let mut seen = BTreeSet::new();
    for s in list {
        if !seen.insert(s.id.as_str()) {
            return Err(ScenarioError {
                file: s.file.clone(),
                line: 1,
                message: format!("scenario id \"{}\" is used twice", s.id),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
utterance = "colour the submarine track red"
[initial]
store = "demo"
open = ["stac://demo/alpha-day1/item.json"]
[[accept]]
tools = ["debrief_summarizeCurrentPlot", "debrief_listTools", "debrief_runTool"]
terminal_input = { toolId = "set-track-color" }
[[replay]]
tool = "debrief_runTool"
input = { toolId = "set-track-color", params = { color = "red" }, featureNames = ["Contact"] }
[expect]
dirty = true
"#;

    fn bad(src: &str) -> ScenarioError {
        parse(Path::new("x.toml"), src).unwrap_err()
    }

    #[test]
    fn a_good_file_loads() {
        let s = parse(Path::new("dir/colour.toml"), GOOD).unwrap();
        assert_eq!(s.id, "colour");
        assert_eq!(s.initial.store, StoreKind::Demo);
        assert_eq!(s.accept[0].terminal(), RUN_TOOL);
        assert_eq!(s.replay[0].1["params"]["color"], "red");
        assert!(s.expect.disk_untouched);
    }

    #[test]
    fn an_unknown_tool_is_named_with_its_line() {
        let e = bad(&GOOD.replace(
            "tools = [\"debrief_summarizeCurrentPlot\"",
            "tools = [\"debrief_colourTrack\"",
        ));
        assert_eq!(e.line, 7, "{e}");
        assert!(
            e.to_string()
                .starts_with("x.toml:7: unknown tool \"debrief_colourTrack\""),
            "{e}"
        );
        let e = bad(&GOOD.replace("tool = \"debrief_runTool\"", "tool = \"run\""));
        assert_eq!(e.line, 10, "{e}");
    }

    #[test]
    fn impossible_assertions_are_rejected_with_their_line() {
        let e = bad(&format!("{GOOD}unchanged = true\n"));
        assert_eq!(e.line, 14);
        assert!(e.message.contains("dirty and unchanged"), "{e}");
        let e = bad(&format!("{GOOD}disk_untouched = false\n"));
        assert!(e.message.contains("never write to disk"), "{e}");
        let e = bad(&format!(
            "{GOOD}[[expect.feature]]\nid = \"track-9\"\npointer = \"/id\"\nequals = \"x\"\n"
        ));
        assert!(e.message.contains("feature \"track-9\""), "{e}");
        assert_eq!(e.line, 14, "the [[expect.feature]] table");
        let e = bad(&GOOD
            .replace("debrief_runTool\"]", "debrief_listTools\"]")
            .replace("tool = \"debrief_runTool\"", "tool = \"debrief_listTools\""));
        assert!(e.message.contains("dirty = true"), "{e}");
        let e = bad(&GOOD.replace("dirty = true", "dirty = false"));
        assert!(e.message.starts_with("vacuous"), "{e}");
        let e = bad(&GOOD.replace(
            "open = [\"stac://demo/alpha-day1/item.json\"]",
            "open = [\"stac://demo/nope/item.json\"]",
        ));
        assert_eq!(e.line, 5);
        let e = bad(&GOOD.replace(
            "{ toolId = \"set-track-color\" }",
            "{ toolId = \"track-stats\" }",
        ));
        assert!(e.message.contains("do not follow any [[accept]]"), "{e}");
    }

    #[test]
    fn the_registry_option_is_validated() {
        assert_eq!(
            parse(Path::new("x.toml"), GOOD).unwrap().initial.registry,
            RegistryKind::Native
        );
        let with = |r: &str| GOOD.replace("[[accept]]", &format!("registry = \"{r}\"\n[[accept]]"));
        let s = parse(Path::new("x.toml"), &with("failing")).unwrap();
        assert_eq!(s.initial.registry, RegistryKind::Failing);
        let e = bad(&with("broken"));
        assert_eq!(e.line, 6, "{e}");
        assert!(e.message.starts_with("unknown registry \"broken\""), "{e}");
        // nothing can run with no registry: dirty, a question or a dataset is impossible
        let e = bad(&with("unavailable"));
        assert!(e.message.contains("nothing can make the plot dirty"), "{e}");
        let e = bad(&with("unavailable").replace(
            "dirty = true",
            "result_contains = [\"toolsUnavailable\"]\nasked = 1",
        ));
        assert!(e.message.contains("asks for confirmation"), "{e}");
        let e = bad(&with("unavailable").replace(
            "dirty = true",
            "result_contains = [\"toolsUnavailable\"]\ndatasets = 1",
        ));
        assert!(e.message.contains("no dataset"), "{e}");
        let s = parse(
            Path::new("x.toml"),
            &with("unavailable").replace(
                "dirty = true",
                "result_contains = [\"toolsUnavailable\"]\nasked = 0",
            ),
        )
        .unwrap();
        assert_eq!(s.initial.registry, RegistryKind::Unavailable);
    }

    #[test]
    fn the_spike_store_has_an_empty_plot() {
        let cat = catalogue(StoreKind::Spike);
        assert!(
            cat.iter()
                .any(|(id, f)| id == crate::fixture::EMPTY_PLOT && f.is_empty())
        );
        let src = GOOD
            .replace("store = \"demo\"", "store = \"spike\"")
            .replace(
                "stac://demo/alpha-day1/item.json",
                crate::fixture::EMPTY_PLOT,
            )
            .replace("dirty = true", "result_contains = [\"no features\"]");
        parse(Path::new("x.toml"), &src).unwrap();
        let e = bad(&format!(
            "{src}[[expect.feature]]\nid = \"track-1\"\npointer = \"/id\"\nequals = \"x\"\n"
        ));
        assert!(e.message.contains("feature \"track-1\""), "{e}");
    }

    #[test]
    fn syntax_and_shape_errors_have_lines() {
        let e = bad("utterance = \"x\"\n\n[expect\n");
        assert_eq!(e.line, 3, "{e}");
        let e = bad("utterance = \"x\"\nbogus = 1\n");
        assert_eq!(e.line, 2, "{e}");
    }

    #[test]
    fn subset_matching() {
        use serde_json::json;
        assert!(subset(
            &json!({"toolId": "a"}),
            &json!({"toolId": "a", "params": {}})
        ));
        assert!(subset(
            &json!({"params": {"max_knots": 5}}),
            &json!({"params": {"max_knots": 5.0}})
        ));
        assert!(!subset(&json!({"toolId": "a"}), &json!({"toolId": "b"})));
        assert!(!subset(&json!({"toolId": "a"}), &json!({})));
    }
}
