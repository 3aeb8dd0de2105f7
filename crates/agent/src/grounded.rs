//! Replies that state only what the turn's tools returned (the small profile's last guard).
//!
//! A weak model's dangerous failure is a helpful-sounding paragraph where an action should have
//! been: "done, the track is now red" when no tool ran, or an average speed read from a summary
//! that holds none. [`false_claims`] finds the two kinds a program can check — a number that no
//! tool result of the turn (nor the analyst's own words) contains, and a change verb when nothing
//! was applied — and [`grounded_reply`] composes the sentence that replaces such a reply from the
//! turn's own results. The eval runs the same checker over every transcript.

use toolgate_core::Status;

/// What a reply claimed that the turn does not support.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FalseClaim {
    /// A number that appears in no tool result of the turn and not in the request.
    Number(String),
    /// A sentence saying something changed, when the turn applied no change.
    Change(String),
}

impl std::fmt::Display for FalseClaim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FalseClaim::Number(n) => write!(f, "the number {n} comes from no tool result"),
            FalseClaim::Change(s) => write!(f, "says something changed, but nothing was: {s:?}"),
        }
    }
}

/// One call of the turn, as the checker needs it.
#[derive(Debug, Clone, Copy)]
pub struct TurnCall<'a> {
    pub tool: &'a str,
    pub status: Status,
    pub result: &'a str,
}

/// Past-tense change verbs (and "is now …") that claim an edit was made.
const CHANGE_WORDS: &[&str] = &[
    "changed",
    "applied",
    "colored",
    "coloured",
    "recolored",
    "recoloured",
    "painted",
    "trimmed",
    "updated",
    "removed",
    "deleted",
    "moved",
    "restyled",
    "renamed",
    "set to",
    "is now",
    "are now",
    "has been",
    "have been",
    "i've made",
    "i have made",
    "done",
];

/// Words that make a sentence a denial, not a claim ("nothing was changed").
const NEGATIONS: &[&str] = &[
    "not", "no", "nothing", "n't", "never", "declined", "refused", "without", "cannot",
];

/// The numbers written in `text`, normalised (thousands separators dropped, trailing zeros of a
/// decimal dropped): "1,200.50 nm" → ["1200.5"].
pub fn numbers(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        let next_digit = chars.get(i + 1).is_some_and(char::is_ascii_digit);
        if c.is_ascii_digit() || ((c == '.' || c == ',') && !cur.is_empty() && next_digit) {
            if c != ',' {
                cur.push(c);
            }
        } else if !cur.is_empty() {
            out.push(normalise(&std::mem::take(&mut cur)));
        }
    }
    if !cur.is_empty() {
        out.push(normalise(&cur));
    }
    out
}

fn normalise(n: &str) -> String {
    if n.contains('.') {
        let t = n.trim_end_matches('0').trim_end_matches('.');
        if t.is_empty() {
            "0".to_owned()
        } else {
            t.to_owned()
        }
    } else {
        let t = n.trim_start_matches('0');
        if t.is_empty() {
            "0".to_owned()
        } else {
            t.to_owned()
        }
    }
}

/// Whether `n` (from a reply) is supported by `known` (from results and the request): equal,
/// or the same value rounded to the reply's precision (a result's 12.34 supports a reply's 12.3).
fn supported(n: &str, known: &[String]) -> bool {
    if known.iter().any(|k| k == n) {
        return true;
    }
    let Ok(v) = n.parse::<f64>() else {
        return false;
    };
    let decimals = n.split_once('.').map_or(0, |(_, d)| d.len());
    let scale = 10f64.powi(i32::try_from(decimals).unwrap_or(0));
    known
        .iter()
        .filter_map(|k| k.parse::<f64>().ok())
        .any(|k| ((k * scale).round() - v * scale).abs() < 0.5)
}

/// The claims in `reply` that the turn does not support. `applied`: whether the turn applied a
/// change to a plot (read from the session, not from any text).
pub fn false_claims(
    reply: &str,
    utterance: &str,
    calls: &[TurnCall<'_>],
    applied: bool,
) -> Vec<FalseClaim> {
    let mut known: Vec<String> = numbers(utterance);
    for c in calls {
        known.extend(numbers(c.result));
    }
    let mut out: Vec<FalseClaim> = Vec::new();
    for n in numbers(reply) {
        // Single digits are ordinals and counts in ordinary prose ("the 2 frigates", "step 1");
        // the claims that mislead are measurements.
        if n.len() == 1 && !n.contains('.') {
            continue;
        }
        if !supported(&n, &known) && !out.contains(&FalseClaim::Number(n.clone())) {
            out.push(FalseClaim::Number(n));
        }
    }
    if !applied {
        // Quoted words are a quotation (a search's own words), not an assertion.
        let unquoted: String = reply
            .split('"')
            .enumerate()
            .filter(|(i, _)| i % 2 == 0)
            .map(|(_, part)| part)
            .collect::<Vec<_>>()
            .join("\"\"");
        for sentence in unquoted.split(['.', '!', '\n', ';']) {
            let lower = sentence.to_lowercase();
            let words: Vec<&str> = lower
                .split(|c: char| !c.is_alphanumeric() && c != '\'')
                .filter(|w| !w.is_empty())
                .collect();
            let negated = NEGATIONS.iter().any(|n| {
                words
                    .iter()
                    .any(|w| w == n || (n.starts_with('n') && w.ends_with(n) && *n == "n't"))
            });
            if negated {
                continue;
            }
            let claims = CHANGE_WORDS.iter().any(|c| {
                if c.contains(' ') {
                    lower.contains(c)
                } else {
                    words.contains(c)
                }
            });
            if claims {
                out.push(FalseClaim::Change(sentence.trim().to_owned()));
            }
        }
    }
    out
}

/// The first `n` sentences of `text` (sentences end at ". " or a line break).
fn sentences(text: &str, n: usize) -> String {
    let mut out = String::new();
    let mut count = 0;
    for part in text
        .split_inclusive(['\n'])
        .flat_map(|l| l.split_inclusive(". "))
    {
        let p = part.trim();
        if p.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(p);
        count += 1;
        if count >= n {
            break;
        }
    }
    out
}

/// The quoted titles of a search result's plots listed under `key` (`matches`, `nearMatches`).
fn quoted_titles(v: &serde_json::Value, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(serde_json::Value::as_array)
        .map(|m| {
            m.iter()
                .filter_map(|x| x.get("title").and_then(serde_json::Value::as_str))
                .map(|t| format!("\"{t}\""))
                .collect()
        })
        .unwrap_or_default()
}

/// A result in words for the analyst: a JSON result (a search, a refusal with a hint) by its own
/// message, or its matches by title; plain text as it is. Never the raw JSON.
pub fn plain_words(result: &str) -> String {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(result) else {
        return result.to_owned();
    };
    let titles = quoted_titles(&v, "matches");
    if let Some(opened) = v.get("opened").and_then(serde_json::Value::as_str) {
        let title = v
            .get("matches")
            .and_then(serde_json::Value::as_array)
            .and_then(|m| {
                m.iter()
                    .find(|x| x.get("plotId").and_then(serde_json::Value::as_str) == Some(opened))
            })
            .and_then(|x| x.get("title").and_then(serde_json::Value::as_str))
            .unwrap_or(opened);
        return format!("Opened \"{title}\". Ask what it holds, or what to run on it.");
    }
    let total = v
        .get("total")
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(titles.len() as u64);
    // A STAC API catalogue's count may be its server's estimate or a lower bound (issue 35).
    let total_is = v.get("totalIs").and_then(serde_json::Value::as_str);
    match titles.as_slice() {
        [] => {}
        [one] if total <= 1 && total_is.is_none() => return format!("One plot matches: {one}."),
        many => {
            let shown = many.len() as u64;
            let (count, more) = match total_is {
                Some("about") => (
                    format!("About {total}"),
                    format!(" (about {} more not shown)", total.saturating_sub(shown)),
                ),
                Some(_) => (
                    format!("More than {}", total.saturating_sub(1)),
                    " (more not shown)".to_owned(),
                ),
                None if total > shown => (
                    total.to_string(),
                    format!(" ({} more not shown)", total - shown),
                ),
                None => (total.to_string(), String::new()),
            };
            return format!(
                "{count} plots match: {}{more}. Say which one to open.",
                many.join(", ")
            );
        }
    }
    // Nothing matched, but some plots share words with the request: name them and ask, rather
    // than stop at "no plots matched" (the analyst meant one of them more often than not).
    let near = quoted_titles(&v, "nearMatches");
    if titles.is_empty() && !near.is_empty() {
        return format!(
            "No plot matched exactly. Did you mean {}? Say which one to open.",
            near.join(" or ")
        );
    }
    for key in ["message", "hint", "error"] {
        if let Some(m) = v.get(key).and_then(serde_json::Value::as_str) {
            return m.to_owned();
        }
    }
    if let Some(title) = v.get("title").and_then(serde_json::Value::as_str) {
        return format!("The open plot is \"{title}\".");
    }
    "The tool answered; its result is in the Results panel.".to_owned()
}

/// A plot summary (`debrief_summarizeCurrentPlot`'s result) told in a sentence, every name and
/// number from the summary itself: the title and time span, then each kind of feature with its
/// count and names (platform ids beside track names). `None` when `result` is not a summary.
pub fn describe(result: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(result).ok()?;
    let title = v.get("title")?.as_str()?;
    let table = v.get("features")?.as_str()?;
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    let mut columns: Vec<String> = Vec::new();
    let mut common_platform: Option<String> = None;
    for line in table.lines() {
        let first = line.split([' ', '|']).next().unwrap_or_default();
        let header = !first.is_empty()
            && first.chars().all(|c| c.is_ascii_uppercase() || c == '_')
            && line[first.len()..].trim_start().starts_with("id|");
        if header {
            let rest = line[first.len()..].trim_start();
            let (cols, all) = match rest.split_once(" (all: ") {
                Some((c, a)) => (c, a.trim_end_matches(')')),
                None => (rest, ""),
            };
            columns = cols.split('|').map(str::to_owned).collect();
            common_platform = all
                .split(", ")
                .find_map(|p| p.strip_prefix("platform "))
                .map(str::to_owned);
            groups.push((first.to_lowercase().replace('_', " "), Vec::new()));
            continue;
        }
        let Some((_, names)) = groups.last_mut() else {
            continue;
        };
        let cells: Vec<&str> = line.split('|').collect();
        let cell = |name: &str| {
            columns
                .iter()
                .position(|c| c == name)
                .and_then(|i| cells.get(i))
                .map(|s| s.trim())
                .filter(|s| !s.is_empty())
        };
        let name = cell("name").or_else(|| cell("id")).unwrap_or_default();
        let platform = cell("platform")
            .map(str::to_owned)
            .or_else(|| common_platform.clone());
        names.push(match platform {
            Some(p) if !p.eq_ignore_ascii_case(name) => format!("{name} ({p})"),
            _ => name.to_owned(),
        });
    }
    let parts: Vec<String> = groups
        .iter()
        .filter(|(_, n)| !n.is_empty())
        .map(|(kind, names)| {
            let noun = if kind == "narrative" {
                if names.len() == 1 {
                    "narrative entry".to_owned()
                } else {
                    "narrative entries".to_owned()
                }
            } else if names.len() == 1 {
                kind.clone()
            } else {
                format!("{kind}s")
            };
            if kind == "narrative" {
                format!("{} {noun}", names.len())
            } else {
                format!("{} {noun} — {}", names.len(), names.join(", "))
            }
        })
        .collect();
    let span = v
        .get("span")
        .and_then(serde_json::Value::as_str)
        .map(|s| format!(" ({s})"))
        .unwrap_or_default();
    let selection = v.get("selectionOnly").and_then(serde_json::Value::as_bool) == Some(true);
    Some(if parts.is_empty() {
        if selection {
            format!("Nothing is selected in \"{title}\"{span}.")
        } else {
            format!("\"{title}\"{span} holds no features.")
        }
    } else if selection {
        format!("Selected in \"{title}\"{span}: {}.", parts.join("; "))
    } else {
        format!("\"{title}\"{span} holds {}.", parts.join("; "))
    })
}

/// What to tell the analyst from the turn's own results, when the model's reply cannot be
/// trusted: the last call's outcome in its own words (its status line; a refusal's corrective
/// sentences), or — when no tool ran — that nothing was done and what to ask instead.
pub fn grounded_reply(calls: &[TurnCall<'_>], applied: bool) -> String {
    let Some(last) = calls.last() else {
        return "I did not run any tool for that, so nothing was changed or measured. Say which \
                track and what to do (for example \"colour HMS Nelson red\" or \"average speed of \
                the Contact\"), or ask which tools apply."
            .to_owned();
    };
    let plain = plain_words(last.result);
    let said = match last.status {
        Status::Ok => sentences(&plain, 2),
        Status::Refused | Status::Failed | Status::Declined => sentences(&plain, 3),
    };
    let tail = if applied {
        ""
    } else if last.status == Status::Ok {
        " Nothing on the plot was changed."
    } else {
        " Nothing was changed."
    };
    format!("{said}{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(tool: &'static str, status: Status, result: &'static str) -> TurnCall<'static> {
        TurnCall {
            tool,
            status,
            result,
        }
    }

    #[test]
    fn a_json_result_is_told_in_words_never_as_json() {
        let near = r#"{"matches":[],"total":0,"nearMatches":[{"plotId":"stac://demo/alpha-day2/item.json","title":"Exercise Alpha — Day 2"}],"message":"No plots matched. Searched for the text \"alpha d9\". Near matches: Exercise Alpha — Day 2 (stac://demo/alpha-day2/item.json). Search again with words from one of these titles (or its id) to open it."}"#;
        assert_eq!(
            grounded_reply(&[call("debrief_searchPlots", Status::Ok, near)], false),
            "No plot matched exactly. Did you mean \"Exercise Alpha — Day 2\"? Say which one to open. Nothing on the plot was changed."
        );
        let none = r#"{"matches":[],"total":0,"message":"No plots matched. Searched for the text \"Bravo\"."}"#;
        assert_eq!(
            plain_words(none),
            "No plots matched. Searched for the text \"Bravo\"."
        );
        let two = r#"{"matches":[{"plotId":"a","title":"Exercise Alpha — Day 1"},{"plotId":"b","title":"Exercise Alpha — Day 2"}],"total":2}"#;
        assert_eq!(
            plain_words(two),
            "2 plots match: \"Exercise Alpha — Day 1\", \"Exercise Alpha — Day 2\". Say which one to open."
        );
        let reply = grounded_reply(&[call("debrief_searchPlots", Status::Ok, none)], false);
        assert!(!reply.contains('{'), "{reply}");
        assert_eq!(plain_words("Ran Speed Calc."), "Ran Speed Calc.");
        // A STAC API catalogue's estimated count, or a lower bound, is said to be one.
        let about = r#"{"matches":[{"plotId":"a","title":"Exercise w001"},{"plotId":"b","title":"Exercise w002"}],"total":6000,"totalIs":"about"}"#;
        assert_eq!(
            plain_words(about),
            "About 6000 plots match: \"Exercise w001\", \"Exercise w002\" (about 5998 more not shown). Say which one to open."
        );
        let at_least =
            r#"{"matches":[{"plotId":"a","title":"Exercise w001"}],"total":2,"totalIs":"atLeast"}"#;
        assert_eq!(
            plain_words(at_least),
            "More than 1 plots match: \"Exercise w001\" (more not shown). Say which one to open."
        );
        let opened = r#"{"matches":[{"plotId":"b","title":"Exercise Alpha — Day 2"}],"total":1,"opened":"b"}"#;
        assert_eq!(
            plain_words(opened),
            "Opened \"Exercise Alpha — Day 2\". Ask what it holds, or what to run on it."
        );
    }

    #[test]
    fn a_summary_is_told_from_its_own_names_and_numbers() {
        let summary = r#"{"title":"Exercise Alpha — Day 1","span":"2026-03-01 00:00-12:00","features":"TRACK id|name|platform|where (all: span =, points 361)\ntrack-nelson|HMS Nelson|NELSON|E wide\ntrack-contact|Contact|SSK-RED|S wide\nPOINT id|name|where\npoint-rv|RV Point|S\nNARRATIVE id|span\nnarrative-1|00:05\nnarrative-2|03:10","total":5}"#;
        assert_eq!(
            describe(summary).unwrap(),
            "\"Exercise Alpha — Day 1\" (2026-03-01 00:00-12:00) holds 2 tracks — HMS Nelson (NELSON), Contact (SSK-RED); 1 point — RV Point; 2 narrative entries."
        );
        let selected = r#"{"title":"Exercise Alpha — Day 1","span":"2026-03-01 00:00-12:00","features":"TRACK id|name (all: platform SSK-RED, span =, points 361, where S wide)\ntrack-contact|Contact","total":1,"selectionOnly":true}"#;
        assert_eq!(
            describe(selected).unwrap(),
            "Selected in \"Exercise Alpha — Day 1\" (2026-03-01 00:00-12:00): 1 track — Contact (SSK-RED)."
        );
        assert!(describe("Ran Speed Calc.").is_none());
        // Every number it states is in the summary: the checker finds no false claim.
        let text = describe(summary).unwrap();
        let turn = [call("debrief_summarizeCurrentPlot", Status::Ok, summary)];
        assert!(false_claims(&text, "describe it", &turn, false).is_empty());
    }

    #[test]
    fn quoted_words_are_not_claims() {
        let search = [call("debrief_searchPlots", Status::Ok, "{}")];
        let quoted = "No plots matched. Searched for the text \"submarine has been moved\".";
        assert!(false_claims(quoted, "find it", &search, false).is_empty());
        let claimed = "The submarine track has been moved.";
        assert!(!false_claims(claimed, "find it", &search, false).is_empty());
    }

    #[test]
    fn numbers_are_read_as_values() {
        assert_eq!(
            numbers("1,200.50 nm at 12 kn, 0.5"),
            ["1200.5", "12", "0.5"]
        );
        assert_eq!(numbers("Day 2, 02:00"), ["2", "2", "0"]);
        assert!(numbers("no digits").is_empty());
    }

    #[test]
    fn an_invented_speed_is_a_false_claim_and_a_rounded_result_is_not() {
        let summary = [call(
            "debrief_summarizeCurrentPlot",
            Status::Ok,
            "3 tracks: HMS Nelson (361 positions)",
        )];
        let claims = false_claims(
            "The contact averaged 18.5 km/h.",
            "average speed of the contact",
            &summary,
            false,
        );
        assert_eq!(claims, [FalseClaim::Number("18.5".to_owned())]);
        let stats = [call(
            "debrief_runTool",
            Status::Ok,
            "Contact: 59.93 nm in 12 h, average 4.99 kn",
        )];
        assert!(
            false_claims(
                "About 59.9 nm at an average of 5.0 kn.",
                "how fast",
                &stats,
                false
            )
            .is_empty()
        );
        assert!(
            false_claims(
                "Positions below 5 knots: 12.",
                "below 5 knots",
                &[call("debrief_runTool", Status::Ok, "12 positions")],
                false
            )
            .is_empty()
        );
    }

    #[test]
    fn a_change_claimed_when_nothing_was_applied_is_false_and_a_denial_is_not() {
        let summary = [call("debrief_summarizeCurrentPlot", Status::Ok, "3 tracks")];
        assert!(matches!(
            false_claims(
                "Done! HMS Nelson's track is now green.",
                "paint nelson green",
                &summary,
                false
            )[..],
            [FalseClaim::Change(_), ..]
        ));
        assert!(
            false_claims(
                "Nothing was changed: the name is ambiguous.",
                "x",
                &summary,
                false
            )
            .is_empty()
        );
        assert!(false_claims("I haven't changed anything.", "x", &summary, false).is_empty());
        assert!(false_claims("The track is now green.", "x", &summary, true).is_empty());
    }

    #[test]
    fn the_grounded_reply_quotes_the_tool_and_says_nothing_changed() {
        assert!(grounded_reply(&[], false).starts_with("I did not run any tool"));
        let refused = [call(
            "debrief_runTool",
            Status::Refused,
            "\"HMS\" is ambiguous: HMS Nelson (track-nelson), HMS Collingwood (track-collingwood). Name one.",
        )];
        let r = grounded_reply(&refused, false);
        assert!(
            r.contains("ambiguous") && r.ends_with("Nothing was changed."),
            "{r}"
        );
        let applied = [call(
            "debrief_runTool",
            Status::Ok,
            "Applied Set Track Color to 1 feature(s). The plot is now dirty (unsaved).",
        )];
        assert!(!grounded_reply(&applied, true).contains("Nothing"));
    }
}
