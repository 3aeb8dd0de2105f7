//! Which few tools a request is about: a lexical ranker over the registry's own words.
//!
//! A small local model cannot pick one tool id out of seventy (it runs the listing's first), so
//! the small profile offers it the top few by this ranking. Each tool is a document made of its
//! id (weighted most), title, output kind, parameter names and description; a request is matched
//! with BM25 after lower-casing, British → American spelling, stop-word removal and Snowball
//! stemming (`rust-stemmers`). A small domain lexicon adds the words a request implies but does
//! not say (a colour name implies `color`; "how far apart" implies `range`; "slower than" implies
//! a speed filter). The lexicon names concepts of the tools' own vocabulary, not tool ids, so a
//! new tool whose description uses those words is ranked by them too.
//!
//! Hand-written BM25 rather than a search-engine crate: the corpus is ~80 short documents built
//! once per process, and tantivy or similar would add an index, a schema and a large dependency
//! for a sort over eighty scores.

use std::collections::{BTreeMap, HashMap};

use rust_stemmers::{Algorithm, Stemmer};
use toolgate_core::spec::ToolSpec;

/// BM25's term-frequency saturation and length normalisation (the usual values).
const K1: f64 = 1.2;
const B: f64 = 0.75;

/// Words that say nothing about which tool is meant.
const STOP: &[&str] = &[
    "a", "an", "the", "of", "to", "in", "on", "for", "and", "or", "is", "it", "its", "me", "my",
    "i", "we", "our", "you", "your", "please", "pls", "can", "could", "would", "do", "does", "did",
    "was", "were", "be", "been", "this", "that", "these", "those", "what", "whats", "which",
    "when", "where", "how", "with", "from", "by", "at", "as", "up", "there", "here", "some", "one",
    "ones", "get", "give", "show", "want", "like", "need", "just", "now", "then", "so", "track",
    "tracks", "plot", "tool", "tools", "run", "use", "s", "d", "ll", "hms", "about", "all", "any",
    "them", "they", "their", "let", "lets", "make", "set", "into",
    // How a track moved, not a tool's action ("how quick was it moving" is no `move-shape`).
    "moving", "going", "went", "gone",
];

/// British spellings read as the American ones the tool specs use.
const SPELLING: &[(&str, &str)] = &[
    ("colour", "color"),
    ("colours", "colors"),
    ("coloured", "colored"),
    ("recolour", "color"),
    ("grey", "gray"),
    ("metre", "meter"),
    ("metres", "meters"),
    ("centre", "center"),
    ("travelled", "traveled"),
    ("analyse", "analyze"),
];

/// Colour names a request may use as a value (CSS's common ones).
const COLOURS: &[&str] = &[
    "red", "green", "blue", "yellow", "orange", "purple", "pink", "black", "white", "gray",
    "brown", "cyan", "magenta", "navy", "teal", "lime", "maroon", "olive", "violet", "gold",
    "silver", "crimson",
];

/// Words a request uses → the tool-vocabulary words it implies (added to the query, stemmed).
const LEXICON: &[(&[&str], &[&str])] = &[
    (&["paint", "draw", "drawn", "recolor"], &["color", "style"]),
    (
        &["crop", "cut", "shorten", "trim", "clip", "window"],
        &["trim", "time", "window"],
    ),
    (
        &[
            "far", "distance", "travel", "traveled", "covered", "long", "length",
        ],
        &["distance", "traveled"],
    ),
    (
        &["apart", "separation", "close", "closest", "rng", "range"],
        &["range", "bearing"],
    ),
    (&["bearing", "brg"], &["bearing", "range"]),
    (
        &[
            "average", "avg", "mean", "overall", "fast", "quick", "speed", "spd",
        ],
        &["average", "speed", "statistics"],
    ),
    (
        &[
            "slower", "faster", "below", "under", "above", "over", "less", "more", "least", "most",
            "<=",
        ],
        &["filter", "speed", "knots"],
    ),
    (&["knots", "knot", "kts", "kt", "kn"], &["knots", "speed"]),
    (
        &[
            "symbol", "marker", "markers", "square", "triangle", "diamond", "cross",
        ],
        &["symbol", "style"],
    ),
    (&["export", "csv", "gpx", "spreadsheet"], &["export"]),
    (&["hide", "reveal", "unhide"], &["hide", "reveal"]),
    (&["label", "labels"], &["label"]),
    (&["area", "extent", "region", "size"], &["area", "extent"]),
    (&["interpolate", "resample", "regular"], &["interpolate"]),
    (&["merge", "combine", "join"], &["merge"]),
    (&["split", "legs", "leg"], &["split", "legs"]),
    (&["jump", "jumps", "glitch", "spike"], &["jumps"]),
];

/// A ranked tool.
#[derive(Debug, Clone, PartialEq)]
pub struct Ranked {
    pub id: String,
    pub score: f64,
}

/// The registry's tools as BM25 documents.
pub struct ToolRanker {
    stemmer: Stemmer,
    docs: Vec<(String, HashMap<String, f64>, f64)>,
    idf: HashMap<String, f64>,
    avg_len: f64,
}

impl std::fmt::Debug for ToolRanker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRanker")
            .field("tools", &self.docs.len())
            .finish()
    }
}

impl ToolRanker {
    /// Index `specs` (the registry's runnable tools).
    pub fn new<'a>(specs: impl IntoIterator<Item = &'a ToolSpec>) -> Self {
        let stemmer = Stemmer::create(Algorithm::English);
        let mut docs = Vec::new();
        for spec in specs {
            let mut tf: HashMap<String, f64> = HashMap::new();
            let mut add = |text: &str, weight: f64| {
                for t in terms(&stemmer, text) {
                    *tf.entry(t).or_default() += weight;
                }
            };
            add(&spec.id.replace('-', " "), 3.0);
            add(&spec.title, 2.0);
            if let Some(kind) = &spec.output_kind {
                add(&kind.as_str().replace(['/', '_'], " "), 1.5);
            }
            for p in spec.params() {
                add(&p.name.replace('_', " "), 1.5);
                add(&p.description, 0.5);
            }
            add(&spec.description, 1.0);
            let len = tf.values().sum();
            docs.push((spec.id.clone(), tf, len));
        }
        let n = docs.len().max(1) as f64;
        let mut df: HashMap<String, f64> = HashMap::new();
        for (_, tf, _) in &docs {
            for t in tf.keys() {
                *df.entry(t.clone()).or_default() += 1.0;
            }
        }
        let idf = df
            .into_iter()
            .map(|(t, d)| (t, ((n - d + 0.5) / (d + 0.5) + 1.0).ln()))
            .collect();
        let avg_len = docs.iter().map(|(_, _, l)| *l).sum::<f64>() / n;
        Self {
            stemmer,
            docs,
            idf,
            avg_len: avg_len.max(1.0),
        }
    }

    /// The query terms of `utterance`: its own stemmed words, plus what the lexicon says they
    /// imply (each implied term once, at half weight).
    pub fn query(&self, utterance: &str) -> BTreeMap<String, f64> {
        let lower = utterance.to_lowercase();
        let words = raw_words(&lower);
        let mut q: BTreeMap<String, f64> = BTreeMap::new();
        for t in terms(&self.stemmer, &lower) {
            *q.entry(t).or_default() += 1.0;
        }
        let mut implied: Vec<&str> = Vec::new();
        let has_colour = words.iter().any(|w| COLOURS.contains(&w.as_str()))
            || lower.split_whitespace().any(is_hex_colour);
        if has_colour {
            implied.extend(["color", "style"]);
        }
        for (cues, adds) in LEXICON {
            if words.iter().any(|w| cues.contains(&w.as_str()))
                || cues
                    .iter()
                    .any(|c| !c.chars().all(char::is_alphanumeric) && lower.contains(c))
            {
                implied.extend(adds.iter());
            }
        }
        for w in implied {
            for t in terms(&self.stemmer, w) {
                q.entry(t).or_insert(0.5);
            }
        }
        q
    }

    /// Every tool with a positive score, best first (ties by id, so the order is stable).
    pub fn rank(&self, utterance: &str) -> Vec<Ranked> {
        let q = self.query(utterance);
        let mut out: Vec<Ranked> = self
            .docs
            .iter()
            .map(|(id, tf, len)| {
                let score = q
                    .iter()
                    .map(|(t, qw)| {
                        let f = tf.get(t).copied().unwrap_or(0.0);
                        if f == 0.0 {
                            return 0.0;
                        }
                        let idf = self.idf.get(t).copied().unwrap_or(0.0);
                        qw * idf * f * (K1 + 1.0) / (f + K1 * (1.0 - B + B * len / self.avg_len))
                    })
                    .sum();
                Ranked {
                    id: id.clone(),
                    score,
                }
            })
            .filter(|r| r.score > 0.0)
            .collect();
        out.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.id.cmp(&b.id)));
        out
    }

    /// The ids of the best `k` tools for `utterance` (fewer when fewer score at all).
    pub fn top(&self, utterance: &str, k: usize) -> Vec<String> {
        self.rank(utterance)
            .into_iter()
            .take(k)
            .map(|r| r.id)
            .collect()
    }

    /// [`ToolRanker::top`] with the request's references to the plot's features taken out
    /// first: `names` are the open plot's feature names and platform ids ("Contact",
    /// "SSK-RED"). A name says *what* to act on, not *which tool*: "SSK-RED" is no colour, and
    /// "Contact" is no sensor contact.
    pub fn top_for(&self, utterance: &str, names: &[String], k: usize) -> Vec<String> {
        self.top(&without_names(utterance, names), k)
    }
}

/// Hyphenated words that are ordinary English, not tool names.
const HYPHENATED_WORDS: &[&str] = &[
    "anti-submarine",
    "re-run",
    "e-mail",
    "x-axis",
    "y-axis",
    "day-one",
    "day-two",
    "left-hand",
    "right-hand",
    "real-time",
    "up-to-date",
    "follow-up",
    "set-up",
    "built-in",
    "so-called",
];

/// A tool the request names that the registry does not have: a hyphenated, id-like word
/// ("wake-analysis") that is no tool id, feature name or platform id, or the words just before
/// "tool" ("the CPA alarm tool") when none of them occurs in any tool's id or title. Such a
/// request is refused with the nearest real tools; it is never given to another tool.
pub fn invented_tool(
    utterance: &str,
    specs: &[(String, String, String)],
    names: &[String],
) -> Option<String> {
    let lower = without_names(utterance, names);
    let ids: Vec<String> = specs.iter().map(|(id, _, _)| id.to_lowercase()).collect();
    let vocabulary: Vec<String> = specs
        .iter()
        .flat_map(|(id, title, _)| {
            format!("{id} {title}")
                .to_lowercase()
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| w.len() > 2)
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect();
    let tokens: Vec<&str> = lower
        .split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '?' | '!' | '"' | '(' | ')'))
        .map(|t| t.trim_matches(|c: char| !c.is_alphanumeric() && c != '-'))
        .filter(|t| !t.is_empty())
        .collect();
    // A request names a tool by an id-like token ("wake-analysis") or by a noun phrase headed by
    // a word for a tool ("the wake analysis", "a CPA alarm tool", "the sonar predictor"); a
    // request to run or use something may name it by an id-like token alone.
    let asks_to_run = tokens
        .iter()
        .any(|t| *t == "tool" || *t == "calc" || COMPUTE_VERBS.contains(t));
    let norm = |w: &str| {
        w.replace("colour", "color")
            .trim_end_matches('s')
            .to_owned()
    };
    for t in &tokens {
        let parts: Vec<&str> = t.split('-').collect();
        let id_like = parts.len() >= 2
            && parts
                .iter()
                .all(|p| p.len() >= 2 && p.chars().all(|c| c.is_ascii_alphabetic()));
        // A spelling of a real id ("set-track-colour", "track-trim") is that tool.
        let spelled = ids.iter().any(|id| {
            let own: Vec<String> = id.split('-').map(norm).collect();
            parts.iter().all(|p| own.contains(&norm(p)))
        });
        let headed = parts.iter().any(|p| TOOL_NOUNS.contains(p));
        if id_like && !spelled && !HYPHENATED_WORDS.contains(t) && (asks_to_run || headed) {
            return Some((*t).to_owned());
        }
    }
    // "<words> tool|analysis|calculator|…": the one or two words before the head noun, stopping
    // at articles, verbs, determiners and common adjectives.
    for (at, head) in tokens.iter().enumerate() {
        if !TOOL_NOUNS.contains(head) {
            continue;
        }
        let named: Vec<&str> = tokens[at.saturating_sub(2)..at]
            .iter()
            .rev()
            .take_while(|w| !PHRASE_STOP.contains(w) && !TOOL_NOUNS.contains(w))
            .copied()
            .collect();
        if named.is_empty() {
            continue;
        }
        let known = named.iter().any(|w| {
            let stem = norm(w);
            stem.len() < 3
                || vocabulary
                    .iter()
                    .any(|v| v.starts_with(stem.as_str()) || stem.starts_with(v.as_str()))
        });
        if !known {
            return Some(named.iter().rev().copied().collect::<Vec<_>>().join(" "));
        }
    }
    // "<verb> <noun phrase>" asking for a computation the tools do not name: "compute the
    // radiated noise footprint", "do a fuel burn estimate", "run an IR signature assessment".
    // The phrase runs from the verb to a preposition (or a second article: "the distance the sub
    // covered" is about a distance). It is invented when none of its words is in a tool's id or
    // title and its head (last word) is no word of any tool's description — "the total distance
    // travelled" is what a real tool measures, in words it does not have in its name.
    let described: Vec<String> = specs
        .iter()
        .flat_map(|(_, _, description)| {
            description
                .to_lowercase()
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| w.len() > 2)
                .map(&norm)
                .collect::<Vec<_>>()
        })
        .collect();
    let in_names = |w: &str| {
        let stem = norm(w);
        vocabulary
            .iter()
            .any(|v| v.starts_with(stem.as_str()) || stem.starts_with(v.as_str()))
    };
    for (at, verb) in tokens.iter().enumerate() {
        if !COMPUTE_VERBS.contains(verb) {
            continue;
        }
        let mut object: Vec<&str> = Vec::new();
        for w in &tokens[at + 1..] {
            let article = matches!(*w, "the" | "a" | "an");
            if OBJECT_END.contains(w)
                || COMPUTE_VERBS.contains(w)
                || (article && object.iter().any(|o| !PHRASE_STOP.contains(o)))
            {
                break;
            }
            object.push(w);
        }
        if object.first().is_none_or(|w| WH_WORDS.contains(w)) {
            continue;
        }
        let content: Vec<&str> = object
            .iter()
            .filter(|w| {
                w.len() >= 3
                    // A value ("0200-0400", "5kn") is no name of anything.
                    && w.chars().all(|c| c.is_alphabetic() || c == '-')
                    && !PHRASE_STOP.contains(w)
                    && !TOOL_NOUNS.contains(w)
                    && !w.ends_with("'s")
            })
            .copied()
            .collect();
        // Only generic words ("a quick analysis of the range"): what it is about follows.
        let Some(head) = content.last() else {
            continue;
        };
        if !content.iter().any(|w| in_names(w)) && !described.contains(&norm(head)) {
            return Some(content.join(" "));
        }
    }
    None
}

/// Verbs that ask for something to be worked out or run.
const COMPUTE_VERBS: &[&str] = &[
    "run",
    "use",
    "apply",
    "launch",
    "execute",
    "do",
    "perform",
    "try",
    "compute",
    "calculate",
    "produce",
    "generate",
    "estimate",
    "predict",
    "overlay",
    "calc",
    // "… using dead reckoning": the method named is the thing to run.
    "using",
];

/// Words that end the object of such a verb: prepositions, and adverbs of place and time.
const OBJECT_END: &[&str] = &[
    "for", "on", "of", "to", "with", "from", "between", "against", "over", "across", "at", "in",
    "by", "during", "here", "now", "there", "then", "next", "and",
];

/// An object starting with these is a question, not a thing to run ("work out how far").
const WH_WORDS: &[&str] = &[
    "how", "what", "where", "when", "which", "who", "whether", "if", "out", "it", "them",
    // "do we have anything from …" asks, it runs nothing.
    "we", "you", "i", "they",
];

/// Words that head a noun phrase naming a tool ("the wake analysis", "a CPA alarm tool").
const TOOL_NOUNS: &[&str] = &[
    "tool",
    "analysis",
    "analyses",
    "analyser",
    "analyzer",
    "calc",
    "calculation",
    "calculator",
    "detector",
    "predictor",
    "generator",
    "algorithm",
    "routine",
];

/// Words that end such a phrase on its left: articles, verbs, determiners, prepositions and the
/// adjectives people put before any analysis ("a quick analysis", "the full calculation").
const PHRASE_STOP: &[&str] = &[
    "the", "a", "an", "run", "use", "apply", "launch", "execute", "do", "perform", "try", "this",
    "that", "your", "my", "our", "any", "some", "please", "on", "for", "of", "to", "with", "and",
    "or", "quick", "full", "complete", "detailed", "basic", "simple", "new", "proper", "standard",
    "thorough", "brief", "overall", "whole", "same", "other", "another", "can", "you", "could",
    "would", "me", "i", "we", "what", "which", "is", "are", "there",
];

/// `utterance` with every whole-word, case-insensitive occurrence of `names` blanked (longest
/// names first, so "HMS Nelson" goes before "Nelson").
pub fn without_names(utterance: &str, names: &[String]) -> String {
    let mut names: Vec<String> = names
        .iter()
        .map(|n| n.trim().to_lowercase())
        .filter(|n| !n.is_empty())
        .collect();
    names.sort_by_key(|n| std::cmp::Reverse(n.len()));
    let mut text = utterance.to_lowercase();
    for name in &names {
        let mut from = 0;
        while let Some(at) = text.get(from..).and_then(|t| t.find(name.as_str())) {
            let start = from + at;
            let end = start + name.len();
            let word_edge = |c: Option<char>| c.is_none_or(|c| !c.is_alphanumeric());
            if word_edge(text[..start].chars().next_back()) && word_edge(text[end..].chars().next())
            {
                text.replace_range(start..end, &" ".repeat(name.len()));
            }
            from = end;
        }
    }
    text
}

fn is_hex_colour(w: &str) -> bool {
    let w = w.trim_matches(|c: char| !c.is_ascii_alphanumeric() && c != '#');
    w.strip_prefix('#')
        .is_some_and(|h| (h.len() == 6 || h.len() == 3) && h.chars().all(|c| c.is_ascii_hexdigit()))
}

/// Lower-case alphanumeric words with British spellings mapped (no stemming, stop words kept).
fn raw_words(lower: &str) -> Vec<String> {
    lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| {
            SPELLING
                .iter()
                .find(|(gb, _)| *gb == w)
                .map_or_else(|| w.to_owned(), |(_, us)| (*us).to_owned())
        })
        .collect()
}

/// Stemmed content words.
fn terms(stemmer: &Stemmer, text: &str) -> Vec<String> {
    raw_words(&text.to_lowercase())
        .into_iter()
        .filter(|w| !STOP.contains(&w.as_str()) && !w.chars().all(|c| c.is_ascii_digit()))
        .map(|w| stemmer.stem(&w).into_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(id: &str, description: &str, params: serde_json::Value) -> ToolSpec {
        ToolSpec {
            id: id.to_owned(),
            title: id.replace('-', " "),
            description: description.to_owned(),
            input_schema: json!({"type": "object", "properties": params}),
            output_kind: None,
            category: String::new(),
            annotations: serde_json::Map::new(),
        }
    }

    fn corpus() -> Vec<ToolSpec> {
        vec![
            spec(
                "range-calc",
                "Compute the range between two tracks.",
                json!({"units": {"type": "string"}}),
            ),
            spec(
                "set-track-color",
                "Set the line colour of TRACK features.",
                json!({"color": {"type": "string"}}),
            ),
            spec(
                "trim-track",
                "Trim one or more TRACK features to a time window.",
                json!({"start_time": {"type": "string"}, "end_time": {"type": "string"}}),
            ),
            spec(
                "speed-filter",
                "List positions whose speed is at most max_knots.",
                json!({"max_knots": {"type": "number"}}),
            ),
            spec(
                "track-stats",
                "Distance travelled and average speed in knots.",
                json!({}),
            ),
        ]
    }

    #[test]
    fn a_colour_value_ranks_the_colour_tool_first_although_no_verb_says_so() {
        let specs = corpus();
        let r = ToolRanker::new(&specs);
        assert_eq!(r.top("Nelson in green", 1), ["set-track-color"]);
        assert_eq!(r.top("paint the frigate #00ff00", 1), ["set-track-color"]);
        assert_eq!(r.top("colour the contact red", 1), ["set-track-color"]);
    }

    #[test]
    fn the_lexicon_maps_plain_words_to_the_tools_vocabulary() {
        let specs = corpus();
        let r = ToolRanker::new(&specs);
        assert_eq!(r.top("crop it to 0200-0400", 1), ["trim-track"]);
        assert_eq!(
            r.top("how fast was it going on average", 1),
            ["track-stats"]
        );
        assert_eq!(r.top("where was it slower than 5 kts", 1), ["speed-filter"]);
        assert!(
            r.top("zzz qqq", 3).is_empty(),
            "nothing in common, nothing ranked"
        );
    }

    #[test]
    fn feature_names_are_not_tool_words() {
        let specs = corpus();
        let r = ToolRanker::new(&specs);
        let names = vec!["SSK-RED".to_owned(), "Contact".to_owned()];
        assert_eq!(r.top_for("SSK-RED mean speed?", &names, 1), ["track-stats"]);
        assert_eq!(
            without_names("Contacts and the contact's", &names),
            "contacts and the        's"
        );
    }

    #[test]
    fn an_invented_tool_is_named_and_a_real_one_is_not() {
        let specs: Vec<(String, String, String)> = corpus()
            .iter()
            .map(|s| (s.id.clone(), s.title.clone(), s.description.clone()))
            .collect();
        let names = vec!["SSK-RED".to_owned(), "HMS Nelson".to_owned()];
        let inv = |u: &str| invented_tool(u, &specs, &names);
        assert_eq!(
            inv("run the wake-analysis tool on Nelson").as_deref(),
            Some("wake-analysis")
        );
        assert_eq!(
            inv("apply the CPA alarm tool to HMS Nelson").as_deref(),
            Some("cpa alarm")
        );
        assert_eq!(inv("run speed-filter below 5 knots"), None);
        assert_eq!(inv("run set-track-colour on Nelson"), None);
        assert_eq!(
            inv("run zig-zag-predictor on Nelson").as_deref(),
            Some("zig-zag-predictor")
        );
        assert_eq!(inv("use the trim tool on SSK-RED"), None);
        assert_eq!(inv("colour the anti-submarine track red"), None);
        assert_eq!(inv("summarise the north-east area"), None);
        assert_eq!(inv("what was SSK-RED's average speed"), None);
        // A computation asked for in words no tool has: invented; one a tool describes: not.
        for (u, named) in [
            (
                "compute the thermal wake footprint for Nelson",
                "thermal wake footprint",
            ),
            (
                "can you do a fuel burn estimate for HMS Nelson",
                "fuel burn",
            ),
            (
                "run an IR signature assessment on this track",
                "signature assessment",
            ),
        ] {
            assert_eq!(inv(u).as_deref(), Some(named), "{u}");
        }
        for u in [
            "calculate the distance the sub covered",
            "compute the total distance travelled by SSK-RED",
            "do the range and bearing from Nelson to SSK-RED",
            "run a speed filter on SSK-RED",
            "calculate how far it went",
            "compute the average speed of SSK-RED",
            "what tools can I run here?",
        ] {
            assert_eq!(inv(u), None, "{u}");
        }
        // A noun phrase headed by a word for a tool, with or without a run verb; a real tool's
        // words in it make it that tool.
        for (u, named) in [
            ("carry out a wake analysis of Nelson", "wake"),
            ("wake-analysis for SSK-RED", "wake-analysis"),
            (
                "I'd like the wake analysis tool on the selected track",
                "wake",
            ),
            (
                "Nelson: acoustic footprint calculator",
                "acoustic footprint",
            ),
        ] {
            assert_eq!(inv(u).as_deref(), Some(named), "{u}");
        }
        for u in [
            "run a speed analysis on Nelson",
            "do a quick analysis of the range to SSK-RED",
            "run the range calculator on Nelson",
            "which tools can I use?",
            "what analysis can I do on this plot",
        ] {
            assert_eq!(inv(u), None, "{u}");
        }
        // fresh3: a calculation or a method named after other verbs ("calc", "predict …
        // using", "overlay") ran a real tool or none; a value after the verb is no tool name.
        for (u, named) in [
            (
                "calc counter-detection range for Collingwood vs the submarine's passive sonar",
                "counter-detection",
            ),
            (
                "Predict where the SSK will be two hours after FINEX using dead reckoning.",
                "dead reckoning",
            ),
        ] {
            assert_eq!(inv(u).as_deref(), Some(named), "{u}");
        }
        for u in [
            "calc the range from Nelson to SSK-RED",
            "trim Nelson using 0200-0400",
            "calculate the range-calc from Nelson to the contact",
            "Do we have anything from Cold Response in the library?",
        ] {
            assert_eq!(inv(u), None, "{u}");
        }
    }

    #[test]
    fn the_order_is_stable() {
        let specs = corpus();
        let r = ToolRanker::new(&specs);
        let a = r.rank("range of the track");
        let b = r.rank("range of the track");
        assert_eq!(a, b);
    }
}
