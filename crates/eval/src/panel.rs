//! The offline panel's evaluation set (`crates/eval/panel/`): requests an analyst makes, grouped
//! in *families* of one intent with many wordings, split into a frozen **test** half and a
//! **dev** half that tuning may look at.
//!
//! A family file is a scenario ([`crate::scenario`]) without `utterance`, plus:
//!
//! ```toml
//! family = "restyle"            # the family's name (one file per family per split)
//! heldout_family = false        # true: the whole family is in the test split, none in dev
//! # … [initial], [[accept]], [[replay]], [expect] as in a scenario …
//! [[wording]]
//! text = "paint Nelson's track green"
//! [[wording]]
//! text = "make it green"
//! selection = ["track-nelson"]  # this wording refers to the selection
//! ```
//!
//! Each wording becomes one [`Scenario`] (id `panel-<split>-<family>-<n>`, tags `panel`,
//! `panel-<split>`, `family:<family>`, and `heldout-family` for the whole held-out families), so
//! the same replay, probe and scoring apply. `panel/test/` is frozen: it was committed before any
//! tuning against it and must stay untouched (see `panel/README.md`); `panel/dev/` is the set to
//! tune on.

use std::path::Path;

use crate::scenario::{self, Scenario, ScenarioError};

/// The two halves of the panel set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Split {
    /// Frozen before tuning; scored only to report a result.
    Test,
    /// The wordings tuning may look at.
    Dev,
    /// Written after the first measurement by a writer who had read neither the panel's code
    /// nor the other halves, and frozen in its own commit: new wordings of the same intents,
    /// scored only to report a result (`panel/README.md`).
    Fresh,
    /// A second such split (104 wordings), written by another writer under the same rules after
    /// the fresh split had been tuned on, and frozen before its first run.
    Fresh2,
    /// A third (104 wordings), by a third writer under the same rules after `fresh2` had been
    /// tuned on, frozen before its first run.
    Fresh3,
}

impl Split {
    pub fn as_str(self) -> &'static str {
        match self {
            Split::Test => "test",
            Split::Dev => "dev",
            Split::Fresh => "fresh",
            Split::Fresh2 => "fresh2",
            Split::Fresh3 => "fresh3",
        }
    }

    pub fn parse(s: &str) -> Option<Split> {
        match s {
            "test" => Some(Split::Test),
            "dev" => Some(Split::Dev),
            "fresh" => Some(Split::Fresh),
            "fresh2" => Some(Split::Fresh2),
            "fresh3" => Some(Split::Fresh3),
            _ => None,
        }
    }
}

/// One wording of one family, as a scenario.
#[derive(Debug, Clone)]
pub struct PanelCase {
    pub family: String,
    pub split: Split,
    /// The whole family is held out (in the test split only).
    pub heldout_family: bool,
    pub scenario: Scenario,
}

/// The panel files shipped in `crates/eval/panel/{test,dev,fresh,fresh2,fresh3}`, as `(split, file name, text)`.
const BUILTIN: &[(&str, &str, &str)] = include!(concat!(env!("OUT_DIR"), "/panel.rs"));

/// The shipped panel cases of `split` (both when `None`), family by family in file order.
pub fn builtin(split: Option<Split>) -> Result<Vec<PanelCase>, ScenarioError> {
    let mut out = Vec::new();
    for (dir, name, src) in BUILTIN {
        let Some(s) = Split::parse(dir) else { continue };
        if split.is_some_and(|want| want != s) {
            continue;
        }
        let file = Path::new("crates/eval/panel").join(dir).join(name);
        out.extend(parse_family(&file, s, src)?);
    }
    Ok(out)
}

/// Expand one family file into its cases.
pub fn parse_family(file: &Path, split: Split, src: &str) -> Result<Vec<PanelCase>, ScenarioError> {
    let err = |message: String| ScenarioError {
        file: file.to_owned(),
        line: 0,
        message,
    };
    let mut table: toml::Table = toml::from_str(src).map_err(|e| err(e.message().to_owned()))?;
    let family = match table.remove("family") {
        Some(toml::Value::String(f)) if !f.is_empty() => f,
        _ => return Err(err("a panel family needs `family = \"name\"`".to_owned())),
    };
    let heldout_family = match table.remove("heldout_family") {
        None => false,
        Some(toml::Value::Boolean(b)) => b,
        Some(_) => return Err(err("`heldout_family` is true or false".to_owned())),
    };
    if heldout_family && split == Split::Dev {
        return Err(err(format!(
            "family \"{family}\" is held out whole, so it has no dev wordings"
        )));
    }
    if table.contains_key("utterance") || table.contains_key("id") {
        return Err(err(
            "a panel family has [[wording]] entries, not `utterance` or `id`".to_owned(),
        ));
    }
    let Some(toml::Value::Array(wordings)) = table.remove("wording") else {
        return Err(err(
            "a panel family needs at least one [[wording]]".to_owned()
        ));
    };
    let mut out = Vec::new();
    for (n, w) in wordings.into_iter().enumerate() {
        let toml::Value::Table(mut w) = w else {
            return Err(err(format!("wording {} is not a table", n + 1)));
        };
        let Some(toml::Value::String(text)) = w.remove("text") else {
            return Err(err(format!("wording {} needs `text`", n + 1)));
        };
        let mut one = table.clone();
        one.insert("utterance".to_owned(), toml::Value::String(text.clone()));
        let id = format!("panel-{}-{family}-{}", split.as_str(), n + 1);
        one.insert("id".to_owned(), toml::Value::String(id));
        let mut tags = match one.remove("tags") {
            Some(toml::Value::Array(t)) => t,
            _ => Vec::new(),
        };
        for t in [
            "panel".to_owned(),
            format!("panel-{}", split.as_str()),
            format!("family:{family}"),
        ] {
            tags.push(toml::Value::String(t));
        }
        if heldout_family {
            tags.push(toml::Value::String("heldout-family".to_owned()));
        }
        one.insert("tags".to_owned(), toml::Value::Array(tags));
        if let Some(sel) = w.remove("selection") {
            let initial = one
                .entry("initial")
                .or_insert_with(|| toml::Value::Table(toml::Table::new()));
            if let toml::Value::Table(i) = initial {
                i.insert("selection".to_owned(), sel);
            }
        }
        if let Some(k) = w.keys().next() {
            return Err(err(format!(
                "wording {} (\"{text}\") has an unknown key \"{k}\"; use text and selection",
                n + 1
            )));
        }
        let rendered = toml::to_string(&one).map_err(|e| err(e.to_string()))?;
        let scenario = scenario::parse(file, &rendered).map_err(|e| ScenarioError {
            message: format!("wording {} (\"{text}\"): {}", n + 1, e.message),
            ..e
        })?;
        out.push(PanelCase {
            family: family.clone(),
            split,
            heldout_family,
            scenario,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{BTreeMap, BTreeSet};

    #[test]
    fn the_set_has_twelve_families_of_eight_wordings_and_three_whole_families_held_out() {
        let all: Vec<PanelCase> = builtin(None)
            .unwrap()
            .into_iter()
            .filter(|c| !matches!(c.split, Split::Fresh | Split::Fresh2 | Split::Fresh3))
            .collect();
        assert!(all.len() >= 120, "{} wordings", all.len());
        let mut per_family: BTreeMap<&str, usize> = BTreeMap::new();
        for c in &all {
            *per_family.entry(c.family.as_str()).or_default() += 1;
        }
        assert!(per_family.len() >= 12, "{per_family:?}");
        assert!(per_family.values().all(|n| *n >= 8), "{per_family:?}");
        let heldout: BTreeSet<&str> = all
            .iter()
            .filter(|c| c.heldout_family)
            .map(|c| c.family.as_str())
            .collect();
        assert!(heldout.len() >= 3, "{heldout:?}");
        // Every other family has wordings on both sides, and at least half in test.
        for (family, n) in &per_family {
            if heldout.contains(family) {
                continue;
            }
            let test = all
                .iter()
                .filter(|c| c.family == *family && c.split == Split::Test)
                .count();
            assert!(
                2 * test >= *n && test < *n,
                "{family}: {test} of {n} in test"
            );
        }
        // No wording appears twice (in one split or across them).
        let texts: BTreeSet<String> = all
            .iter()
            .map(|c| c.scenario.utterance.to_lowercase())
            .collect();
        assert_eq!(texts.len(), all.len());
    }

    #[test]
    fn a_wording_inherits_the_family_and_may_name_a_selection() {
        let src = r#"
family = "f"
[initial]
store = "demo"
open = ["stac://demo/alpha-day1/item.json"]
[[accept]]
tools = ["debrief_summarizeCurrentPlot"]
[[replay]]
tool = "debrief_summarizeCurrentPlot"
[expect]
result_contains = ["HMS Nelson"]
unchanged = true
[[wording]]
text = "what is here"
[[wording]]
text = "describe it"
selection = ["track-nelson"]
"#;
        let cases = parse_family(Path::new("f.toml"), Split::Dev, src).unwrap();
        assert_eq!(cases.len(), 2);
        assert_eq!(cases[0].scenario.utterance, "what is here");
        assert!(cases[0].scenario.initial.selection.is_empty());
        assert_eq!(cases[1].scenario.initial.selection, vec!["track-nelson"]);
        assert!(cases[1].scenario.tags.contains(&"family:f".to_owned()));
        let bad = src.replace("selection =", "selected =");
        assert!(parse_family(Path::new("f.toml"), Split::Dev, &bad).is_err());
        let heldout = src.replace("family = \"f\"", "family = \"f\"\nheldout_family = true");
        assert!(parse_family(Path::new("f.toml"), Split::Dev, &heldout).is_err());
    }
}
