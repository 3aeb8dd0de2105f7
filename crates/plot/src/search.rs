//! Catalogue search (reference §6, fixed): free text over title, description and tags; time
//! overlap; platform; bbox; AND-combined; capped with an explicit "N more not shown".

use chrono::{DateTime, NaiveDate, Utc};
use serde::Serialize;
use serde_json::Value;

use crate::store::{ItemEntry, StacStore};

/// Default cap on matches returned to a model.
pub const SEARCH_RESULT_CAP: usize = 50;

#[derive(Debug, Clone, Default)]
pub struct SearchQuery {
    pub text: Option<String>,
    pub start_time: Option<String>,
    pub end_time: Option<String>,
    pub platforms: Vec<String>,
    pub bbox: Option<[f64; 4]>,
    pub limit: Option<usize>,
}

impl SearchQuery {
    /// The query a `debrief_searchPlots` call's arguments describe (`text`, `startTime`,
    /// `endTime`, `platforms`, `bbox` as four numbers); no limit. Arguments of the wrong type are
    /// ignored (the tool's schema has refused them already).
    pub fn from_arguments(args: &serde_json::Map<String, serde_json::Value>) -> SearchQuery {
        let str_arg = |k: &str| {
            args.get(k)
                .and_then(serde_json::Value::as_str)
                .map(str::to_owned)
        };
        let bbox = args
            .get("bbox")
            .and_then(serde_json::Value::as_array)
            .and_then(|b| {
                let v: Vec<f64> = b.iter().filter_map(serde_json::Value::as_f64).collect();
                <[f64; 4]>::try_from(v).ok()
            });
        SearchQuery {
            text: str_arg("text"),
            start_time: str_arg("startTime"),
            end_time: str_arg("endTime"),
            platforms: args
                .get("platforms")
                .and_then(serde_json::Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(serde_json::Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default(),
            bbox,
            limit: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TimeSpan {
    pub start: String,
    pub end: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlotMatch {
    pub plot_id: String,
    pub title: String,
    pub time_span: Option<TimeSpan>,
    pub platforms: Vec<String>,
    pub bbox: Option<[f64; 4]>,
}

/// How exact a search's `total` is. A folder store counts every match; a STAC API catalogue
/// reads only the page shown and takes the count from its server, which may estimate it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum TotalIs {
    /// Every match counted.
    #[default]
    Exact,
    /// The catalogue server's estimate (rounded to two significant figures).
    About,
    /// A lower bound: at least this many match (the server gave no usable count).
    AtLeast,
}

impl TotalIs {
    pub fn is_exact(&self) -> bool {
        *self == TotalIs::Exact
    }

    /// The less exact of two (for a total summed over several catalogues).
    #[must_use]
    pub fn and(self, other: TotalIs) -> TotalIs {
        match (self, other) {
            (TotalIs::AtLeast, _) | (_, TotalIs::AtLeast) => TotalIs::AtLeast,
            (TotalIs::About, _) | (_, TotalIs::About) => TotalIs::About,
            _ => TotalIs::Exact,
        }
    }
}

/// `n` to two significant figures (5,988 → 6,000; 896 → 900); below 100 as it is. For
/// estimates, which should not look more precise than they are.
pub fn round_estimate(n: usize) -> usize {
    let mut unit = 1usize;
    while n / unit >= 100 {
        unit = unit.saturating_mul(10);
    }
    ((n + unit / 2) / unit).saturating_mul(unit)
}

/// A total as a person reads it: "48", "about 6000", "more than 50".
pub fn total_phrase(total: usize, total_is: TotalIs) -> String {
    match total_is {
        TotalIs::Exact => total.to_string(),
        TotalIs::About => format!("about {total}"),
        TotalIs::AtLeast => format!("more than {}", total.saturating_sub(1)),
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchResult {
    pub matches: Vec<PlotMatch>,
    pub total: usize,
    /// Absent when `total` is exact; `about` for the catalogue server's estimate, `atLeast` for a
    /// lower bound.
    #[serde(skip_serializing_if = "TotalIs::is_exact")]
    pub total_is: TotalIs,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub more: Option<String>,
    pub criteria_applied: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// Why a search query cannot be run: the caller's to fix (the text says how).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    #[error(
        "\"{field}\" must be an ISO-8601 date or date-time such as 2026-03-01 or 2026-03-01T12:00:00Z; got \"{value}\""
    )]
    BadTime { field: String, value: String },
    #[error("\"startTime\" must not be after \"endTime\"")]
    StartAfterEnd,
}

/// Parse an ISO-8601 date-time, or a bare date (its start of day, UTC).
///
/// # Errors
///
/// [`QueryError::BadTime`], naming `field`, when `s` is neither.
pub fn parse_time(field: &str, s: &str) -> Result<DateTime<Utc>, QueryError> {
    let t = s.trim();
    if let Ok(dt) = DateTime::parse_from_rfc3339(t) {
        return Ok(dt.with_timezone(&Utc));
    }
    if let Ok(d) = NaiveDate::parse_from_str(t, "%Y-%m-%d")
        && let Some(dt) = d.and_hms_opt(0, 0, 0)
    {
        return Ok(dt.and_utc());
    }
    Err(QueryError::BadTime {
        field: field.to_owned(),
        value: s.to_owned(),
    })
}

fn iso(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

fn platform_strings(entry: &ItemEntry) -> Vec<String> {
    let mut out = Vec::new();
    for p in &entry.platforms {
        for key in [
            "name",
            "id",
            "vessel_type",
            "vessel_role",
            "vessel_class",
            "domain",
        ] {
            if let Some(s) = p.get(key).and_then(Value::as_str).filter(|s| !s.is_empty())
                && !out.iter().any(|o| o == s)
            {
                out.push(s.to_owned());
            }
        }
    }
    out
}

/// The criteria as sentences, in the reference's order.
pub fn describe(q: &SearchQuery) -> Vec<String> {
    let mut c = Vec::new();
    if let Some(t) = q.text.as_deref().map(str::trim).filter(|t| !t.is_empty()) {
        c.push(format!("text ~ \"{t}\""));
    }
    if q.start_time.is_some() || q.end_time.is_some() {
        c.push(format!(
            "time ∈ [{}, {}]",
            q.start_time.as_deref().unwrap_or("−∞"),
            q.end_time.as_deref().unwrap_or("+∞")
        ));
    }
    if !q.platforms.is_empty() {
        c.push(format!("platform ∈ {{{}}}", q.platforms.join(", ")));
    }
    if let Some(b) = q.bbox {
        c.push(format!("bbox ∩ [{}, {}, {}, {}]", b[0], b[1], b[2], b[3]));
    }
    if c.is_empty() {
        c.push("none (list all)".to_owned());
    }
    c
}

/// Search every store. Bad dates are errors (the spike silently matched nothing).
/// The words of a text: runs of letters and digits ("Day-1" → "day", "1").
fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
}

/// Free-text match (both sides lower-cased): the query as one phrase anywhere in the haystack,
/// or every word of the query starting a word of the haystack, in any order. The second form is
/// how people (and models) write titles back: "Alpha day-1" for "Exercise Alpha — Day 1", which a
/// plain substring test misses.
fn text_matches(hay: &str, query: &str) -> bool {
    if hay.contains(query) {
        return true;
    }
    let mut wanted = words(query).peekable();
    if wanted.peek().is_none() {
        return false;
    }
    let hay_words: Vec<&str> = words(hay).collect();
    wanted.all(|w| hay_words.iter().any(|h| h.starts_with(w)))
}

/// A query checked and normalised once: what [`Criteria::matches`] tests each entry against.
/// The folder store and the STAC API backend ([`crate::stac_api`]) share it, so both apply the
/// same rule to every item.
#[derive(Debug, Clone)]
pub struct Criteria {
    pub start: Option<DateTime<Utc>>,
    pub end: Option<DateTime<Utc>>,
    /// Trimmed and lower-cased; `None` when empty.
    pub text: Option<String>,
    /// Trimmed and lower-cased, empty ones dropped.
    pub platforms: Vec<String>,
    pub bbox: Option<[f64; 4]>,
}

impl Criteria {
    /// # Errors
    ///
    /// A bad date, or a start after the end ([`QueryError`]).
    pub fn new(q: &SearchQuery) -> Result<Self, QueryError> {
        let qs = q
            .start_time
            .as_deref()
            .map(|s| parse_time("startTime", s))
            .transpose()?;
        let qe = q
            .end_time
            .as_deref()
            .map(|s| parse_time("endTime", s))
            .transpose()?;
        if let (Some(s), Some(e)) = (qs, qe)
            && s > e
        {
            return Err(QueryError::StartAfterEnd);
        }
        Ok(Self {
            start: qs,
            end: qe,
            text: q
                .text
                .as_deref()
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(str::to_lowercase),
            platforms: q
                .platforms
                .iter()
                .map(|p| p.trim().to_lowercase())
                .filter(|p| !p.is_empty())
                .collect(),
            bbox: q.bbox,
        })
    }

    /// The match for `entry`, or `None` when a criterion excludes it.
    pub fn matches(&self, entry: &ItemEntry) -> Option<PlotMatch> {
        if let Some(t) = &self.text {
            let hay = search_text(entry);
            if !text_matches(&hay, t) {
                return None;
            }
        }
        if (self.start.is_some() || self.end.is_some())
            && let (Some(s), Some(e)) = (entry.start, entry.end)
        {
            let before_end = self.end.is_none_or(|qe| s <= qe);
            let after_start = self.start.is_none_or(|qs| e >= qs);
            if !(before_end && after_start) {
                return None;
            }
        }
        let platforms = platform_strings(entry);
        if !self.platforms.is_empty() {
            let lower: Vec<String> = platforms.iter().map(|p| p.to_lowercase()).collect();
            if !self
                .platforms
                .iter()
                .any(|w| lower.iter().any(|p| p.contains(w.as_str())))
            {
                return None;
            }
        }
        if let Some(a) = self.bbox {
            let b = entry.bbox?;
            if !(a[0] <= b[2] && a[2] >= b[0] && a[1] <= b[3] && a[3] >= b[1]) {
                return None;
            }
        }
        Some(PlotMatch {
            plot_id: entry.plot_id.clone(),
            title: entry.title.clone(),
            time_span: match (entry.start, entry.end) {
                (Some(s), Some(e)) => Some(TimeSpan {
                    start: iso(s),
                    end: iso(e),
                }),
                _ => None,
            },
            platforms,
            bbox: entry.bbox,
        })
    }
}

/// What free text is matched against: title, description, tags and feature tags, lower-cased.
pub fn search_text(entry: &ItemEntry) -> String {
    format!(
        "{} {} {} {}",
        entry.title,
        entry.description,
        entry.tags.join(" "),
        entry.feature_tags.join(" ")
    )
    .to_lowercase()
}

/// The platform strings a platform criterion is matched against, lower-cased, one per line.
pub fn platform_text(entry: &ItemEntry) -> String {
    platform_strings(entry).join("\n").to_lowercase()
}

/// The words of a free-text query, lower-cased (what a server-side pre-filter may require).
pub fn query_words(text: &str) -> Vec<String> {
    words(&text.to_lowercase()).map(str::to_owned).collect()
}

/// Words that say nothing about which plot is meant, for [`near_matches`].
const NEAR_STOP: &[&str] = &[
    "the", "a", "an", "of", "for", "with", "from", "in", "on", "at", "and", "or", "to", "plot",
    "plots", "any", "all", "me", "show", "find", "open", "load", "search", "bring", "up", "get",
];

/// Spellings an analyst uses for the same thing, read as one: ordinals and number words as
/// digits ("second" → 2, "two" → 2, "2nd" → 2), plurals as the singular, and anti-submarine
/// as ASW.
fn relax(word: &str) -> String {
    const NUMBERS: &[(&str, &str)] = &[
        ("first", "1"),
        ("one", "1"),
        ("1st", "1"),
        ("second", "2"),
        ("two", "2"),
        ("2nd", "2"),
        ("third", "3"),
        ("three", "3"),
        ("3rd", "3"),
        ("fourth", "4"),
        ("four", "4"),
        ("4th", "4"),
        ("fifth", "5"),
        ("five", "5"),
        ("5th", "5"),
        ("antisubmarine", "asw"),
    ];
    let w = word.to_lowercase();
    if let Some((_, d)) = NUMBERS.iter().find(|(n, _)| *n == w) {
        return (*d).to_owned();
    }
    if w.len() > 3 && w.ends_with('s') && !w.ends_with("ss") {
        return w[..w.len() - 1].to_owned();
    }
    w
}

fn relaxed_words(text: &str) -> Vec<String> {
    let lower = text
        .to_lowercase()
        .replace("anti-submarine", "antisubmarine")
        .replace("anti submarine", "antisubmarine");
    words(&lower)
        .filter(|w| !NEAR_STOP.contains(w))
        .map(relax)
        .collect()
}

/// The words of a text read leniently (stop words dropped, ordinals and number words as
/// digits, plurals as the singular, anti-submarine as ASW), each searched on its own to find
/// near matches through any store.
pub fn lenient_words(text: &str) -> Vec<String> {
    let mut out = relaxed_words(text);
    out.dedup();
    out
}

/// The near matches from per-word searches: `hits` counts, per plot id, how many of the
/// `wanted` lenient words found it; plots found by every word first (only those, when there are
/// any), else by the most words; ties by title. At most `n`, as `(plot id, title)`.
pub fn rank_near(
    hits: &[(String, usize)],
    matches: &[PlotMatch],
    wanted: usize,
    n: usize,
) -> Vec<(String, String)> {
    let title = |id: &str| {
        matches
            .iter()
            .find(|m| m.plot_id == id)
            .map(|m| m.title.clone())
            .unwrap_or_default()
    };
    let mut scored: Vec<(usize, String, String)> = hits
        .iter()
        .map(|(id, count)| (*count, title(id), id.clone()))
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let all = scored.first().is_some_and(|s| s.0 >= wanted);
    scored
        .into_iter()
        .filter(|s| !all || s.0 >= wanted)
        .take(n)
        .map(|(_, title, id)| (id, title))
        .collect()
}

/// Plots a text search that matched nothing nearly matches, best first (at most `n`): every
/// word of the text found once plurals, ordinals, number words, stop words and the ASW
/// abbreviation are read leniently; else the plots sharing the most such words. Titles with
/// their ids, for the "no match" reply to suggest (never opened or counted as matches).
pub fn near_matches<'a>(
    entries: impl IntoIterator<Item = &'a ItemEntry>,
    text: &str,
    n: usize,
) -> Vec<(String, String)> {
    let wanted = relaxed_words(text);
    if wanted.is_empty() {
        return Vec::new();
    }
    let mut scored: Vec<(usize, bool, &ItemEntry)> = entries
        .into_iter()
        .filter_map(|e| {
            let hay = relaxed_words(&search_text(e));
            let found = wanted
                .iter()
                .filter(|w| hay.iter().any(|h| h.starts_with(w.as_str())))
                .count();
            (found > 0).then_some((found, found == wanted.len(), e))
        })
        .collect();
    scored.sort_by(|a, b| {
        b.1.cmp(&a.1)
            .then(b.0.cmp(&a.0))
            .then_with(|| a.2.title.cmp(&b.2.title))
    });
    let all_found = scored.first().is_some_and(|s| s.1);
    scored
        .into_iter()
        .filter(|s| s.1 || !all_found)
        .take(n)
        .map(|(_, _, e)| (e.plot_id.clone(), e.title.clone()))
        .collect()
}

/// The cap on matches shown for `q`.
pub fn cap(q: &SearchQuery) -> usize {
    q.limit.unwrap_or(SEARCH_RESULT_CAP).max(1)
}

/// The reply for `hits` (every match, in order) under the query's cap.
pub fn finish(hits: Vec<PlotMatch>, q: &SearchQuery) -> SearchResult {
    let total = hits.len();
    finish_counted(hits, total, TotalIs::Exact, q)
}

/// The reply for `hits` (the first matches in order: at least the cap's worth when there are
/// that many) when `total` matches are counted as `total_is` says. The "N more not shown" says
/// when the count is an estimate or a lower bound.
pub fn finish_counted(
    mut hits: Vec<PlotMatch>,
    total: usize,
    total_is: TotalIs,
    q: &SearchQuery,
) -> SearchResult {
    let cap = cap(q);
    let total = total.max(hits.len());
    const NARROW: &str = "narrow the search (text, time range, platform or bbox).";
    let more = (total > cap || (total_is != TotalIs::Exact && hits.len() > cap)).then(|| {
        let n = total - cap.min(total);
        match total_is {
            TotalIs::Exact => format!("{n} more not shown; {NARROW}"),
            TotalIs::About => format!(
                "about {} more not shown (the catalogue server's estimate); {NARROW}",
                round_estimate(n)
            ),
            TotalIs::AtLeast => format!(
                "at least {} more not shown (the catalogue server gave no total); {NARROW}",
                n.max(1)
            ),
        }
    });
    hits.truncate(cap);
    SearchResult {
        message: (total == 0).then(|| "No plots matched.".to_owned()),
        matches: hits,
        total,
        total_is,
        more,
        criteria_applied: describe(q),
    }
}

/// Search folder stores.
///
/// # Errors
///
/// [`QueryError`] for a query that cannot be run.
pub fn search(stores: &[StacStore], q: &SearchQuery) -> Result<SearchResult, QueryError> {
    let criteria = Criteria::new(q)?;
    let hits = stores
        .iter()
        .flat_map(|s| s.items.iter())
        .filter_map(|entry| criteria.matches(entry))
        .collect();
    Ok(finish(hits, q))
}

#[cfg(test)]
mod text_tests {
    use super::{near_matches, relaxed_words, text_matches};

    #[test]
    fn near_matches_read_ordinals_plurals_and_asw_leniently() {
        let entry =
            |id: &str, title: &str, description: &str, tags: &[&str]| crate::store::ItemEntry {
                plot_id: id.to_owned(),
                item_path: String::new(),
                title: title.to_owned(),
                description: description.to_owned(),
                tags: tags.iter().map(|t| (*t).to_owned()).collect(),
                feature_tags: Vec::new(),
                platforms: Vec::new(),
                bbox: None,
                start: None,
                end: None,
                features_path: None,
            };
        let plots = [
            entry(
                "d1",
                "Exercise Alpha — Day 1",
                "Anti-submarine exercise with frigates.",
                &["ASW"],
            ),
            entry(
                "d2",
                "Exercise Alpha — Day 2",
                "Second day: prosecution of the submarine contact.",
                &["ASW"],
            ),
        ];
        assert_eq!(relaxed_words("the second day"), ["2", "day"]);
        let ids = |text: &str| -> Vec<String> {
            near_matches(&plots, text, 3)
                .into_iter()
                .map(|(id, _)| id)
                .collect()
        };
        assert_eq!(ids("alpha day two"), ["d2"]);
        assert_eq!(ids("Alpha's 2nd day"), ["d2"]);
        assert_eq!(ids("frigates"), ["d1"]);
        assert_eq!(ids("anti-submarine exercises"), ["d1", "d2"]);
        // Nothing found whole: the plots sharing the most words, to suggest.
        assert_eq!(ids("exercise bravo"), ["d1", "d2"]);
        assert!(ids("dynamic mongoose").is_empty());
    }

    #[test]
    fn phrases_and_words_in_any_order_match() {
        let hay = "exercise alpha — day 1 day one of exercise alpha. exercise western-approaches";
        assert!(text_matches(hay, "alpha — day 1"));
        assert!(text_matches(hay, "alpha day 1"));
        assert!(text_matches(hay, "alpha day-1"));
        assert!(text_matches(hay, "day 1 alpha"));
        assert!(text_matches(hay, "western approaches"));
        assert!(text_matches(hay, "alph"));
        assert!(!text_matches(hay, "alpha day 2"));
        assert!(!text_matches(hay, "bravo"));
        // a word must start a word: "ha" is inside "alpha" but starts no word
        assert!(!text_matches(hay, "ha day"));
    }
}
