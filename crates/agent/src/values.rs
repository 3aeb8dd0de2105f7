//! Values grounded in code from the analyst's own words, before (and instead of) a small model's
//! guess: a colour ("green", "#00ff00"), speed bounds ("below 5 knots", "faster than ten kts"),
//! and a time window relative to the plot ("between 0200 and 0400", "from 2am to 4am", "after
//! 0300", "the last half hour", "the first ten minutes off").
//!
//! [`repair_run`] fills a `debrief_runTool` call's parameters from them by parameter name — a
//! tool with a `color` parameter gets the colour, `start_time`/`end_time` the window,
//! `max_knots`/`min_knots` the bounds — so a value the model omitted or invented is replaced by
//! the one the analyst said. What the words do not settle is left as the model wrote it.

use chrono::{DateTime, Datelike, Duration, NaiveDate, NaiveTime, Utc};
use serde_json::{Map, Value};

/// CSS colour names an analyst is likely to say (a value, not a cue: "red" in "SSK-RED" is a
/// name, which callers remove first).
pub const COLOUR_NAMES: &[&str] = &[
    "red", "green", "blue", "yellow", "orange", "purple", "pink", "black", "white", "gray", "grey",
    "brown", "cyan", "magenta", "navy", "teal", "lime", "maroon", "olive", "violet", "gold",
    "silver", "crimson",
];

const NUMBER_WORDS: &[(&str, f64)] = &[
    ("zero", 0.0),
    ("one", 1.0),
    ("two", 2.0),
    ("three", 3.0),
    ("four", 4.0),
    ("five", 5.0),
    ("six", 6.0),
    ("seven", 7.0),
    ("eight", 8.0),
    ("nine", 9.0),
    ("ten", 10.0),
    ("eleven", 11.0),
    ("twelve", 12.0),
    ("fifteen", 15.0),
    ("twenty", 20.0),
    ("thirty", 30.0),
    ("forty", 40.0),
    ("forty-five", 45.0),
    ("fifty", 50.0),
    ("sixty", 60.0),
    ("ninety", 90.0),
];

fn words(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split(|c: char| {
            !(c.is_alphanumeric()
                || c == '.'
                || c == ':'
                || c == '#'
                || c == '-'
                || c == '<'
                || c == '>'
                || c == '=')
        })
        .filter(|w| !w.is_empty())
        .map(|w| w.trim_end_matches(['.', ':', '-']).to_owned())
        .filter(|w| !w.is_empty())
        .collect()
}

fn number(w: &str) -> Option<f64> {
    let t = w.trim_end_matches(|c: char| c.is_alphabetic());
    if let Ok(v) = t.parse::<f64>() {
        return Some(v);
    }
    NUMBER_WORDS.iter().find(|(n, _)| *n == w).map(|(_, v)| *v)
}

/// Ordinals an analyst uses for an exercise day ("the second day").
const ORDINALS: &[(&str, u32)] = &[
    ("first", 1),
    ("1st", 1),
    ("second", 2),
    ("2nd", 2),
    ("third", 3),
    ("3rd", 3),
    ("fourth", 4),
    ("4th", 4),
    ("fifth", 5),
    ("5th", 5),
];

/// The exercise day `utterance` names, in any of the ways analysts say it: "day 2", "day2",
/// "Day-2", "day two", "the second day", "2nd day". `None` when it names no day, or two.
pub fn day_number(utterance: &str) -> Option<u32> {
    let w: Vec<String> = utterance
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect();
    let small = |x: &str| -> Option<u32> {
        number(x)
            .filter(|v| v.fract() == 0.0 && (1.0..=31.0).contains(v))
            .map(|v| v as u32)
    };
    let mut found: Vec<u32> = Vec::new();
    for (i, x) in w.iter().enumerate() {
        let n = if let Some(rest) = x.strip_prefix("day").filter(|r| !r.is_empty()) {
            small(rest)
        } else if let Some(rest) = x
            .strip_prefix('d')
            .filter(|r| (1..=2).contains(&r.len()) && r.chars().all(|c| c.is_ascii_digit()))
        {
            // "alpha d2": the day as analysts abbreviate it.
            small(rest)
        } else if x == "day" {
            w.get(i + 1).and_then(|n| small(n)).or_else(|| {
                w.get(i.wrapping_sub(1))
                    .and_then(|o| ORDINALS.iter().find(|(name, _)| name == o))
                    .map(|(_, v)| *v)
            })
        } else {
            None
        };
        if let Some(n) = n
            && !found.contains(&n)
        {
            found.push(n);
        }
    }
    match found.as_slice() {
        [one] => Some(*one),
        _ => None,
    }
}

/// The one colour `utterance` names: a CSS name from [`COLOUR_NAMES`] (grey as gray) or a hex
/// `#rrggbb`/`#rgb`. None when it names none, or two different ones.
pub fn colour(utterance: &str) -> Option<String> {
    let mut found: Vec<String> = Vec::new();
    for w in words(utterance) {
        let hex = w
            .strip_prefix('#')
            .filter(|h| (h.len() == 6 || h.len() == 3) && h.chars().all(|c| c.is_ascii_hexdigit()));
        let c = if let Some(h) = hex {
            Some(format!("#{h}"))
        } else {
            COLOUR_NAMES.iter().find(|n| **n == w).map(|n| {
                if *n == "grey" {
                    "gray".to_owned()
                } else {
                    (*n).to_owned()
                }
            })
        };
        if let Some(c) = c
            && !found.contains(&c)
        {
            found.push(c);
        }
    }
    match found.as_slice() {
        [one] => Some(one.clone()),
        _ => None,
    }
}

/// A colour name of five or more letters misspelt by one letter ("grean", "yelow", "purpel"),
/// when the words name no colour exactly; None for two different ones. Shorter names and the
/// English words one letter from a colour ("while", "block", "alive", "grown", …) are left
/// alone: "gold" is one letter from "hold", "lime" from "time".
pub fn misspelt_colour(utterance: &str) -> Option<String> {
    const NOT_COLOURS: &[&str] = &[
        "while", "whine", "write", "block", "slack", "blank", "clack", "alive", "grown", "crown",
        "drown", "brows", "greet", "greek", "preen", "greed", "violent", "sliver", "fellow",
        "bellow", "mellow", "range", "blacks", "whites", "browns", "greens", "yellows",
    ];
    let mut found: Vec<&str> = Vec::new();
    for w in words(utterance) {
        if w.len() < 5 || NOT_COLOURS.contains(&w.as_str()) || COLOUR_NAMES.contains(&w.as_str()) {
            continue;
        }
        for name in COLOUR_NAMES.iter().filter(|n| n.len() >= 5) {
            if strsim::osa_distance(&w, name) == 1 && !found.contains(name) {
                found.push(name);
            }
        }
    }
    match found.as_slice() {
        [one] => Some((*one).to_owned()),
        _ => None,
    }
}

/// Speed bounds in knots: `max` from "below/under/slower than/less than/at most/up to N kn" or
/// "N knots or less", `min` from "above/over/faster than/more than/at least N kn" or "N knots or
/// more". Only numbers followed by a knot unit (knots, kts, kt, kn) count.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct SpeedBounds {
    pub max: Option<f64>,
    pub min: Option<f64>,
}

pub fn speed_bounds(utterance: &str) -> SpeedBounds {
    let w = words(utterance);
    let unit = |s: &str| matches!(s, "knots" | "knot" | "kts" | "kt" | "kn");
    let mut out = SpeedBounds::default();
    for i in 0..w.len() {
        // "5kts" as one word, or "5 kts".
        let (value, after) = match number(&w[i]) {
            Some(v)
                if w[i].ends_with("kts")
                    || w[i].ends_with("kt")
                    || w[i].ends_with("kn")
                    || w[i].ends_with("knots") =>
            {
                (v, i + 1)
            }
            Some(v) if w.get(i + 1).is_some_and(|u| unit(u)) => (v, i + 2),
            _ => continue,
        };
        let before: Vec<&str> = w[i.saturating_sub(3)..i]
            .iter()
            .map(String::as_str)
            .collect();
        let next: Vec<&str> = w[after.min(w.len())..(after + 2).min(w.len())]
            .iter()
            .map(String::as_str)
            .collect();
        let has = |list: &[&str], set: &[&str]| list.iter().any(|x| set.contains(x));
        let below = [
            "below", "under", "slower", "less", "most", "<=", "<", "beneath", "max", "maximum",
            "to",
        ];
        let above = [
            "above",
            "over",
            "faster",
            "more",
            "least",
            ">=",
            ">",
            "exceeding",
            "min",
            "minimum",
        ];
        if next == ["or", "less"]
            || next == ["or", "slower"]
            || next == ["or", "below"]
            || next == ["or", "under"]
            || next == ["and", "under"]
            || next == ["and", "below"]
            || (has(&before, &below) && !has(&before, &above))
        {
            out.max = Some(value);
        } else if next == ["or", "more"]
            || next == ["or", "faster"]
            || next == ["or", "above"]
            || next == ["or", "over"]
            || next == ["and", "over"]
            || next == ["and", "above"]
            || has(&before, &above)
        {
            out.min = Some(value);
        }
    }
    out
}

/// A clock time in one word: "0200", "02:00", "0200z", "2am", "2pm", "14:30", and an hour
/// with the zone letter ("02z").
fn clock(w: &str) -> Option<NaiveTime> {
    let zulu = w.ends_with('z');
    let w = w.trim_end_matches('z');
    let (digits, pm, am) = if let Some(d) = w.strip_suffix("pm") {
        (d, true, false)
    } else if let Some(d) = w.strip_suffix("am") {
        (d, false, true)
    } else {
        (w, false, false)
    };
    let (h, m) = if let Some((h, m)) = digits.split_once(':') {
        (h.parse::<u32>().ok()?, m.parse::<u32>().ok()?)
    } else if digits.len() == 4 && digits.chars().all(|c| c.is_ascii_digit()) {
        (digits[..2].parse().ok()?, digits[2..].parse().ok()?)
    } else if (am || pm || zulu)
        && !digits.is_empty()
        && digits.len() <= 2
        && digits.chars().all(|c| c.is_ascii_digit())
    {
        (digits.parse().ok()?, 0)
    } else {
        return None;
    };
    let h = match (am, pm, h) {
        (true, _, 12) => 0,
        (_, true, h) if h < 12 => h + 12,
        (_, _, h) => h,
    };
    NaiveTime::from_hms_opt(h, m, 0)
}

/// Which day a time names, when the words say: a DTG's day of the month ("010200Z") or an
/// ISO-8601 date ("2026-03-01T02:00Z").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DayRef {
    OfMonth(u32),
    Date(NaiveDate),
}

/// A time the analyst said: where in the words, the clock time, and the day if one was given.
#[derive(Debug, Clone, Copy)]
struct Said {
    at: usize,
    time: NaiveTime,
    day: Option<DayRef>,
}

/// A date-time group as signals write it, `DDHHMMZ` ("010200Z" is 02:00 on the 1st; the month
/// and year words after it are the span's): six digits and the zone letter, never a bare number.
fn dtg(w: &str) -> Option<(u32, NaiveTime)> {
    let digits = w.strip_suffix('z')?;
    if digits.len() != 6 || !digits.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let day: u32 = digits[..2].parse().ok()?;
    let time = NaiveTime::from_hms_opt(digits[2..4].parse().ok()?, digits[4..].parse().ok()?, 0)?;
    (1..=31).contains(&day).then_some((day, time))
}

/// An ISO-8601 date and time in one word ("2026-03-01t02:00z", lower-cased).
fn iso_date_time(w: &str) -> Option<(NaiveDate, NaiveTime)> {
    let (date, time) = w.split_once('t')?;
    let date = NaiveDate::parse_from_str(date, "%Y-%m-%d").ok()?;
    let time = time.trim_end_matches('z');
    let time = NaiveTime::parse_from_str(time, "%H:%M:%S")
        .or_else(|_| NaiveTime::parse_from_str(time, "%H:%M"))
        .ok()?;
    Some((date, time))
}

/// Words that put a spoken hour in the morning or the afternoon ("two till four in the
/// morning", "from 2 to 4 pm").
fn meridiem(w: &str) -> Option<bool> {
    match w {
        "am" | "morning" => Some(false),
        "pm" | "afternoon" | "evening" => Some(true),
        _ => None,
    }
}

/// An hour said as a number on its own ("two", "2"), 1 to 12.
fn spoken_hour(w: &str) -> Option<u32> {
    let n = number(w).filter(|n| n.fract() == 0.0 && (1.0..=12.0).contains(n))?;
    if w.chars().any(|c| c.is_ascii_alphabetic()) && !NUMBER_WORDS.iter().any(|(x, _)| *x == w) {
        return None;
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    Some(n as u32)
}

fn on_the_clock(h: u32, pm: bool) -> Option<NaiveTime> {
    let h = match (pm, h) {
        (false, 12) => 0,
        (true, h) if h < 12 => h + 12,
        (_, h) => h,
    };
    NaiveTime::from_hms_opt(h, 0, 0)
}

/// "two till four in the morning", "from 2 to 4am", "between 2 and 4 pm": two hours joined by a
/// range word and followed (within three words) by what puts them on the clock. Without that
/// word they are not times ("between 2 and 3 hours" is a duration).
fn spoken_range(w: &[String], i: usize) -> Option<(NaiveTime, NaiveTime)> {
    let a = spoken_hour(&w[i])?;
    if !matches!(
        w.get(i + 1)?.as_str(),
        "to" | "till" | "til" | "until" | "and" | "through"
    ) {
        return None;
    }
    let second = w.get(i + 2)?;
    if let Some(b) = clock(second)
        && (second.ends_with("am") || second.ends_with("pm"))
    {
        let pm = second.ends_with("pm");
        return Some((on_the_clock(a, pm)?, b));
    }
    let b = spoken_hour(second)?;
    let pm = w.iter().skip(i + 3).take(3).find_map(|x| meridiem(x))?;
    Some((on_the_clock(a, pm)?, on_the_clock(b, pm)?))
}

/// A month's name or its usual abbreviation ("march", "mar", "sept").
fn is_month(w: &str) -> bool {
    w == "sept"
        || crate::constrain::MONTHS
            .iter()
            .any(|m| *m == w || (w.len() == 3 && m.starts_with(w)))
}

/// A four-digit word just after a month ("1 March 2026", "March 1, 2026") is a year, not a
/// clock time ("before 0300 on 1 March 2026" once read 20:26 as a second time).
fn is_year(w: &[String], i: usize) -> bool {
    w[i].len() == 4
        && w[i].chars().all(|c| c.is_ascii_digit())
        && ((i >= 1 && is_month(&w[i - 1])) || (i >= 2 && is_month(&w[i - 2])))
}

/// Every clock time in `utterance`, in order, with the words before it. "2-4am" and
/// "02:00-04:00" count as two times; "2 o'clock" as one; a DTG ("010200Z") and an ISO date-time
/// carry their day.
fn clock_times(utterance: &str) -> Vec<Said> {
    let w = words(&utterance.to_lowercase().replace("o'clock", "oclock"));
    let mut out = Vec::new();
    let plain = |at: usize, time: NaiveTime| Said {
        at,
        time,
        day: None,
    };
    let mut i = 0;
    while i < w.len() {
        let word = &w[i];
        if let Some((day, time)) = dtg(word) {
            out.push(Said {
                at: i,
                time,
                day: Some(DayRef::OfMonth(day)),
            });
        } else if let Some((date, time)) = iso_date_time(word) {
            out.push(Said {
                at: i,
                time,
                day: Some(DayRef::Date(date)),
            });
        } else if let Some((a, b)) = word.split_once('-')
            && let (Some((da, ta)), Some((db, tb))) = (dtg(a), dtg(b))
        {
            // "010200Z-010400Z".
            for (day, time) in [(da, ta), (db, tb)] {
                out.push(Said {
                    at: i,
                    time,
                    day: Some(DayRef::OfMonth(day)),
                });
            }
        } else if let Some((a, b)) = spoken_range(&w, i) {
            out.push(plain(i, a));
            out.push(plain(i + 2, b));
            i += 3;
            continue;
        } else if let Some((a, b)) = word.split_once('-')
            && let Some(tb) = clock(b)
            && let Some(ta) = {
                // "2-4am": the first takes the second's am/pm.
                let suffix: String = b.chars().skip_while(char::is_ascii_digit).collect();
                clock(a).or_else(|| clock(&format!("{a}{suffix}")))
            }
        {
            out.push(plain(i, ta));
            out.push(plain(i, tb));
        } else if let Some(t) = clock(word).filter(|_| !is_year(&w, i)) {
            out.push(plain(i, t));
        } else if w.get(i + 1).is_some_and(|n| n == "oclock")
            && let Some(h) = number(word).filter(|h| (0.0..24.0).contains(h))
        {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            if let Some(t) = NaiveTime::from_hms_opt(h as u32, 0, 0) {
                out.push(plain(i, t));
            }
        }
        i += 1;
    }
    out
}

/// A duration said in words: "half an hour", "the last half hour", "ten minutes", "2 hours".
fn duration(w: &[String]) -> Option<Duration> {
    for i in 0..w.len() {
        if w[i] == "half" && w.get(i + 1).is_some_and(|n| n == "hour" || n == "an") {
            return Some(Duration::minutes(30));
        }
        let Some(n) = number(&w[i]) else { continue };
        #[allow(clippy::cast_possible_truncation)]
        let minutes = match w.get(i + 1).map(String::as_str) {
            Some("minute" | "minutes" | "mins" | "min") => n,
            Some("hour" | "hours" | "hrs" | "hr" | "h") => n * 60.0,
            _ => continue,
        };
        #[allow(clippy::cast_possible_truncation)]
        return Some(Duration::minutes(minutes.round() as i64));
    }
    if w.iter().any(|x| x == "hour") {
        return Some(Duration::hours(1));
    }
    None
}

/// The time window to keep that `utterance` states, relative to `span` (the plot's or the
/// track's first and last time): two clock times → between them; one → from it ("after",
/// "from", "since") or up to it ("before", "until", "to"), flipped when the analyst says what
/// to remove ("remove everything before 0200" keeps from 0200); "the last/first N minutes" (or
/// "half hour") → the end or start of the span, flipped by "off"/"remove"/"cut". Clock times
/// fall on the span's first day (the next day when that puts them before the span starts).
pub fn time_window(
    utterance: &str,
    span: (DateTime<Utc>, DateTime<Utc>),
) -> Option<(DateTime<Utc>, DateTime<Utc>)> {
    let (start, end) = span;
    if start >= end {
        return None;
    }
    let w = words(utterance);
    let removing = w.iter().any(|x| {
        matches!(
            x.as_str(),
            "remove" | "delete" | "drop" | "off" | "cut" | "discard"
        )
    }) && !w
        .iter()
        .any(|x| matches!(x.as_str(), "keep" | "only" | "to" | "down"));
    let day: NaiveDate = start.date_naive();
    // A time on its day: the one the words give (a day of the month: the span's day with that
    // number), else the span's first day (the next day when that puts it before the span starts).
    // A day the span does not contain is no window here: never moved onto another day.
    let at = |said: &Said| -> Option<DateTime<Utc>> {
        let on = |d: NaiveDate| d.and_time(said.time).and_utc();
        match said.day {
            Some(DayRef::Date(d)) => Some(on(d)),
            Some(DayRef::OfMonth(n)) => {
                let mut d = day;
                while d <= end.date_naive() {
                    if d.day() == n {
                        return Some(on(d));
                    }
                    d = d.succ_opt()?;
                }
                None
            }
            None => {
                let mut d = on(day);
                if d < start && d + Duration::days(1) <= end {
                    d += Duration::days(1);
                }
                Some(d)
            }
        }
    };
    let times = clock_times(utterance);
    let clamp = |a: DateTime<Utc>, b: DateTime<Utc>| -> Option<(DateTime<Utc>, DateTime<Utc>)> {
        let (a, b) = (a.max(start), b.min(end));
        (a < b).then_some((a, b))
    };
    match times.as_slice() {
        [a, b, ..] => {
            let (a, b) = (at(a)?, at(b)?);
            return clamp(a.min(b), a.max(b));
        }
        [said] => {
            let t = at(said)?;
            let i = said.at;
            // The direction word nearest the time decides ("to after 0300" is after).
            let direction = w[i.saturating_sub(3)..i]
                .iter()
                .rev()
                .find_map(|x| match x.as_str() {
                    "after" | "from" | "since" | "past" => Some(true),
                    "before" | "until" | "till" | "up" | "to" | "by" => Some(false),
                    _ => None,
                });
            let keep_from = match direction {
                Some(true) => !removing,
                Some(false) => removing,
                None => return None,
            };
            return if keep_from {
                clamp(t, end)
            } else {
                clamp(start, t)
            };
        }
        [] => {}
    }
    let d = duration(&w)?;
    let last = w.iter().any(|x| x == "last" || x == "final");
    let first = w.iter().any(|x| x == "first" || x == "opening");
    match (first, last) {
        (true, false) if removing => clamp(start + d, end),
        (true, false) => clamp(start, start + d),
        (false, true) if removing => clamp(start, end - d),
        (false, true) => clamp(end - d, end),
        _ => None,
    }
}

/// The parameter groups the values `utterance` states would fill: `["color"]` for a colour,
/// `["max_knots", "min_knots"]` for a speed bound, `["start_time", "end_time"]` for a time
/// window. A tool that takes none of a group cannot use what the analyst said.
pub fn parameters_for(utterance: &str) -> Vec<&'static [&'static str]> {
    let mut out: Vec<&'static [&'static str]> = Vec::new();
    if colour(utterance).is_some() {
        out.push(&["color"]);
    }
    if speed_bounds(utterance) != SpeedBounds::default() {
        out.push(&["max_knots", "min_knots"]);
    }
    // Whether the words state a window at all: read against a month of days, so that any day
    // of the month a DTG names is in it.
    let day = DateTime::<Utc>::UNIX_EPOCH;
    if time_window(utterance, (day, day + Duration::days(31))).is_some() {
        out.push(&["start_time", "end_time"]);
    }
    out
}

/// A tool whose input `schema` requires a time window (`start_time` and `end_time`), asked for
/// by words that state none ([`time_window`] reads nothing against `span`): the window would be
/// the model's guess, so the panel asks instead ("trim nelsons trak 02-04Z" was once offered
/// for approval as 00:00:12 to 12:00).
pub fn window_unstated(
    schema: &Value,
    utterance: &str,
    span: (DateTime<Utc>, DateTime<Utc>),
) -> bool {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    required.contains(&"start_time")
        && required.contains(&"end_time")
        && time_window(utterance, span).is_none()
}

/// Whether a tool with input `schema` takes a parameter of every group in `needed`.
pub fn takes_any(schema: &Value, needed: &[&[&str]]) -> bool {
    needed.iter().all(|group| {
        group
            .iter()
            .any(|p| schema.pointer(&format!("/properties/{p}")).is_some())
    })
}

/// A plot's time span: its tracks' first and last times.
pub type Span = (DateTime<Utc>, DateTime<Utc>);

/// What a run call's parameters are checked against: the plot's time span.
#[derive(Debug, Clone, Default)]
pub struct RunContext {
    pub span: Option<(DateTime<Utc>, DateTime<Utc>)>,
}

/// A `debrief_runTool` call's arguments with the values the analyst said put in place of what
/// the model wrote, for the parameters `schema` (the tool's input schema) declares. Returns the
/// arguments unchanged when the words settle nothing.
pub fn repair_run(input: &Value, schema: &Value, utterance: &str, ctx: &RunContext) -> Value {
    let mut out = input.clone();
    let Some(obj) = out.as_object_mut() else {
        return out;
    };
    let declared = |name: &str| schema.pointer(&format!("/properties/{name}")).is_some();
    let mut params: Map<String, Value> = obj
        .get("params")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let before = params.clone();
    // A colour misspelt by a letter is still the analyst's colour ("recolour it grean" once went
    // to the model, which wrote red).
    if declared("color")
        && let Some(c) = colour(utterance).or_else(|| misspelt_colour(utterance))
    {
        params.insert("color".into(), Value::String(c));
    }
    if declared("start_time")
        && declared("end_time")
        && let Some((a, b)) = ctx.span.and_then(|s| time_window(utterance, s))
    {
        let iso = |t: DateTime<Utc>| t.format("%Y-%m-%dT%H:%M:%SZ").to_string();
        params.insert("start_time".into(), Value::String(iso(a)));
        params.insert("end_time".into(), Value::String(iso(b)));
    }
    let bounds = speed_bounds(utterance);
    for (name, v) in [("max_knots", bounds.max), ("min_knots", bounds.min)] {
        if declared(name)
            && let Some(v) = v
        {
            params.insert(name.into(), serde_json::json!(v));
        }
    }
    if params != before {
        obj.insert("params".into(), Value::Object(params));
    }
    out
}

/// Units as analysts say them, by the short value a tool's `enum` uses.
const UNIT_WORDS: &[(&str, &[&str])] = &[
    ("nm", &["nm", "nmi", "nautical"]),
    ("m", &["metres", "meters", "metre", "meter"]),
    (
        "km",
        &[
            "km",
            "kms",
            "kilometres",
            "kilometers",
            "kilometre",
            "kilometer",
        ],
    ),
    ("yds", &["yards", "yard", "yds", "yd"]),
    ("kts", &["knots", "knot", "kts", "kt"]),
    ("degs", &["degrees", "degs", "deg"]),
];

/// A duration the analyst states ("every 5 minutes", "2 hrs", "half an hour"), as ISO 8601
/// (`PT5M`, `PT2H`, `PT30M`).
pub fn iso_duration(utterance: &str) -> Option<String> {
    let d = duration(&words(utterance))?;
    let (h, m) = (d.num_hours(), d.num_minutes() % 60);
    Some(match (h, m) {
        (0, m) => format!("PT{m}M"),
        (h, 0) => format!("PT{h}H"),
        (h, m) => format!("PT{h}H{m}M"),
    })
}

/// A small profile's run parameters held to what the analyst said: an `enum` parameter the
/// words name (a value itself, or a unit by any of its names: "nautical miles" → `nm`) and a
/// duration parameter the words state are set; every other optional parameter the model wrote
/// is kept only when its value is in the words (the same number, or the text itself), else
/// removed so the tool's default applies. Required parameters stay as written. Small models
/// fill optional parameters with invented values (a range in metres nobody asked for, a
/// threshold of 10^15); the default is the honest choice.
pub fn ground_params(input: &Value, schema: &Value, utterance: &str, filled: &[String]) -> Value {
    let mut out = input.clone();
    let Some(params) = out
        .as_object_mut()
        .and_then(|o| o.get_mut("params"))
        .and_then(Value::as_object_mut)
    else {
        return out;
    };
    let said = words(utterance);
    let lower = utterance.to_lowercase();
    let numbers: Vec<f64> = said.iter().filter_map(|w| number(w)).collect();
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let props = schema
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut set: Vec<String> = filled.to_vec();
    for (name, p) in &props {
        if let Some(choices) = p.get("enum").and_then(Value::as_array) {
            let named: Vec<&str> = choices
                .iter()
                .filter_map(Value::as_str)
                .filter(|c| {
                    let c = c.to_lowercase();
                    said.contains(&c)
                        || UNIT_WORDS
                            .iter()
                            .find(|(short, _)| *short == c)
                            .is_some_and(|(_, names)| {
                                said.iter().any(|w| names.contains(&w.as_str()))
                            })
                })
                .collect();
            if let [one] = named.as_slice() {
                params.insert(name.clone(), Value::String((*one).to_owned()));
                set.push(name.clone());
            }
        }
        let is_duration = p
            .get("pattern")
            .and_then(Value::as_str)
            .is_some_and(|pat| pat.starts_with("^P"))
            || p.get("format").and_then(Value::as_str) == Some("duration");
        if is_duration && let Some(d) = iso_duration(utterance) {
            params.insert(name.clone(), Value::String(d));
            set.push(name.clone());
        }
    }
    params.retain(|name, v| {
        if required.contains(&name.as_str()) || set.contains(name) {
            return true;
        }
        match v {
            Value::Number(n) => n
                .as_f64()
                .is_some_and(|x| numbers.iter().any(|y| (x - y).abs() < 1e-9)),
            Value::String(t) => t.len() >= 2 && lower.contains(&t.to_lowercase()),
            _ => false,
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use serde_json::json;

    fn t(h: u32, m: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 3, 1, h, m, 0).single().unwrap()
    }

    fn day() -> (DateTime<Utc>, DateTime<Utc>) {
        (t(0, 0), t(12, 0))
    }

    #[test]
    fn optional_parameters_keep_only_what_the_words_say() {
        let schema = json!({"type": "object", "required": ["threshold"], "properties": {
            "units": {"type": "string", "enum": ["yds", "km", "nm", "m"]},
            "time": {"type": "string"},
            "distance_nm": {"type": "number"},
            "threshold": {"type": "number"},
            "interval": {"type": "string", "pattern": "^P(?:T\\d+M)?$"},
            "primary": {"type": "boolean"}}});
        let input = json!({"toolId": "x", "params": {"units": "m", "time": "2026-03-01T00:00:12Z",
            "distance_nm": 1.0e15, "threshold": 3, "primary": true}});
        let out = ground_params(
            &input,
            &schema,
            "range to the contact in nautical miles every 5 minutes",
            &[],
        );
        assert_eq!(
            out["params"],
            json!({"units": "nm", "threshold": 3, "interval": "PT5M"})
        );
        let kept = ground_params(
            &json!({"params": {"distance_nm": 12}}),
            &schema,
            "zones out to 12 nm",
            &[],
        );
        assert_eq!(kept["params"], json!({"distance_nm": 12, "units": "nm"}));
        assert_eq!(iso_duration("every half hour").as_deref(), Some("PT30M"));
        assert_eq!(iso_duration("over 90 minutes").as_deref(), Some("PT1H30M"));
    }

    #[test]
    fn an_exercise_day_in_every_spelling() {
        for u in [
            "open day 2 of alpha",
            "alpha day2 plot",
            "the Day-2 plot",
            "day two of the exercise",
            "the second day of Alpha",
            "the 2nd day",
            "open alpha d2",
        ] {
            assert_eq!(day_number(u), Some(2), "{u}");
        }
        assert_eq!(day_number("open the alpha plot"), None);
        assert_eq!(day_number("compare day 1 and day 2"), None);
        assert_eq!(day_number("the first 10 minutes"), None);
    }

    #[test]
    fn a_colour_misspelt_by_one_letter_is_read_and_an_invented_one_dropped() {
        assert_eq!(
            misspelt_colour("recolour hms nelson grean").as_deref(),
            Some("green")
        );
        assert_eq!(misspelt_colour("make it yelow").as_deref(), Some("yellow"));
        assert_eq!(misspelt_colour("the range while it was quiet"), None);
        assert_eq!(
            misspelt_colour("hold the time line"),
            None,
            "short names are not guessed"
        );
        assert_eq!(misspelt_colour("trim the track"), None);
        let ctx = RunContext::default();
        let schema = json!({"properties": {"color": {}}});
        let model = json!({"toolId": "set-track-color", "params": {"color": "red"}});
        let r = repair_run(&model, &schema, "recolour hms nelson grean", &ctx);
        assert_eq!(r["params"]["color"], "green");
    }

    #[test]
    fn colours_are_names_or_hex_and_one_at_a_time() {
        assert_eq!(colour("paint Nelson green").as_deref(), Some("green"));
        assert_eq!(colour("make it #00FF00").as_deref(), Some("#00ff00"));
        assert_eq!(colour("grey please").as_deref(), Some("gray"));
        assert_eq!(colour("red or blue?"), None);
        assert_eq!(colour("trim the track"), None);
    }

    #[test]
    fn speed_bounds_read_the_direction_and_the_unit() {
        assert_eq!(
            speed_bounds("where was it slower than 5 knots").max,
            Some(5.0)
        );
        assert_eq!(speed_bounds("positions under five kts").max, Some(5.0));
        assert_eq!(speed_bounds("speed <= 5kt").max, Some(5.0));
        assert_eq!(speed_bounds("5 knots or less").max, Some(5.0));
        assert_eq!(
            speed_bounds("when the SSK's speed was 5 knots or under").max,
            Some(5.0)
        );
        assert_eq!(speed_bounds("10 kts and over").min, Some(10.0));
        let b = speed_bounds("faster than 10 knots");
        assert_eq!((b.max, b.min), (None, Some(10.0)));
        assert_eq!(
            speed_bounds("between 2 and 3 hours"),
            SpeedBounds::default()
        );
    }

    #[test]
    fn clock_times_in_every_spelling() {
        let span = day();
        let w = |u: &str| time_window(u, span);
        assert_eq!(w("trim to between 0200 and 0400"), Some((t(2, 0), t(4, 0))));
        assert_eq!(w("keep 02:00-04:00"), Some((t(2, 0), t(4, 0))));
        assert_eq!(w("from 2am to 4am"), Some((t(2, 0), t(4, 0))));
        assert_eq!(w("shorten it to 2-4am"), Some((t(2, 0), t(4, 0))));
        assert_eq!(
            w("start 2 o'clock, end 4 o'clock"),
            Some((t(2, 0), t(4, 0)))
        );
        assert_eq!(w("only from 0200Z to 0400Z"), Some((t(2, 0), t(4, 0))));
        assert_eq!(
            w("remove everything before 0200 and after 0400"),
            Some((t(2, 0), t(4, 0)))
        );
    }

    /// fresh2's trim failures: a signal's date-time groups, ISO date-times and hours said in
    /// words were not read, so the panel never offered the trim.
    #[test]
    fn date_time_groups_iso_times_and_spoken_hours_are_windows() {
        let span = day();
        let w = |u: &str| time_window(u, span);
        assert_eq!(
            w("crop the selected track to 010200Z MAR 26 - 010400Z MAR 26"),
            Some((t(2, 0), t(4, 0)))
        );
        assert_eq!(
            w("trim nelson 2026-03-01T02:00Z to 2026-03-01T04:00Z"),
            Some((t(2, 0), t(4, 0)))
        );
        assert_eq!(
            w("cut this one to two till four in the morning, 1st March"),
            Some((t(2, 0), t(4, 0)))
        );
        assert_eq!(w("from 2 to 4am"), Some((t(2, 0), t(4, 0))));
        assert_eq!(w("between two and four am"), Some((t(2, 0), t(4, 0))));
        // A day the span does not hold is not moved onto the span's day.
        assert_eq!(w("trim to 020200Z - 020400Z"), None);
        assert_eq!(w("trim to 2026-03-02T02:00Z to 2026-03-02T04:00Z"), None);
        // Not times: a duration, a bare six-digit number.
        assert_eq!(w("between 2 and 3 hours"), None);
        assert_eq!(w("keep 010200 to 010400"), None);
        // A year after a month is no time of day.
        assert_eq!(
            w("trim it to before 0300 on 1 March 2026"),
            Some((t(0, 0), t(3, 0)))
        );
        assert_eq!(
            w("keep after 0300, March 1, 2026"),
            Some((t(3, 0), t(12, 0)))
        );
        // A bare four-digit number is still a time (20:26, clamped to the span's end).
        assert_eq!(w("keep 2026 to 0300"), Some((t(3, 0), t(12, 0))));
        // fresh3: "02-04Z" once became 00:02–00:04.
        assert_eq!(w("trim nelsons trak 02-04Z pls"), Some((t(2, 0), t(4, 0))));
        assert_eq!(w("keep 02Z to 04Z"), Some((t(2, 0), t(4, 0))));
        let trim = json!({"required": ["start_time", "end_time"], "properties": {"start_time": {}, "end_time": {}}});
        assert!(window_unstated(
            &trim,
            "trim nelson to the interesting bit",
            span
        ));
        assert!(!window_unstated(&trim, "trim nelson to 0200-0400", span));
        assert!(!window_unstated(&json!({"required": []}), "trim it", span));
        assert_eq!(
            parameters_for("crop it to 020200Z-020400Z"),
            [&["start_time", "end_time"][..]]
        );
    }

    #[test]
    fn one_time_or_a_duration_is_read_against_the_span() {
        let span = day();
        let w = |u: &str| time_window(u, span);
        assert_eq!(w("trim it to after 0300"), Some((t(3, 0), t(12, 0))));
        assert_eq!(
            w("remove everything before 0300"),
            Some((t(3, 0), t(12, 0)))
        );
        assert_eq!(w("keep it up to 0300"), Some((t(0, 0), t(3, 0))));
        assert_eq!(w("the last half hour"), Some((t(11, 30), t(12, 0))));
        assert_eq!(
            w("trim the first ten minutes off"),
            Some((t(0, 10), t(12, 0)))
        );
        assert_eq!(w("keep the first 2 hours"), Some((t(0, 0), t(2, 0))));
        assert_eq!(w("trim the track"), None);
        assert_eq!(
            w("at 0300"),
            None,
            "one time with no direction is not a window"
        );
    }

    #[test]
    fn stated_values_name_the_parameters_a_tool_must_take() {
        assert_eq!(parameters_for("Nelson in green"), [&["color"][..]]);
        assert_eq!(
            parameters_for("where was it under 5 knots"),
            [&["max_knots", "min_knots"][..]]
        );
        assert_eq!(
            parameters_for("keep Nelson between 0200 and 0400"),
            [&["start_time", "end_time"][..]]
        );
        assert!(parameters_for("how far did it go").is_empty());
        let colour_tool = json!({"properties": {"color": {}}});
        let filter = json!({"properties": {"max_knots": {}, "min_knots": {}}});
        assert!(takes_any(&colour_tool, &parameters_for("paint it red")));
        assert!(!takes_any(&filter, &parameters_for("paint it red")));
        assert!(takes_any(&filter, &parameters_for("below 5 kts")));
    }

    #[test]
    fn a_run_call_gets_the_values_the_analyst_said() {
        let schema = json!({"properties": {"start_time": {}, "end_time": {}}});
        let ctx = RunContext { span: Some(day()) };
        let invented = json!({"toolId": "trim-track", "params": {"start_time": "2026-03-01T00:00:00Z", "end_time": "2026-03-01T00:30:00Z"}});
        let r = repair_run(
            &invented,
            &schema,
            "keep Nelson between 0200 and 0400",
            &ctx,
        );
        assert_eq!(
            r["params"],
            json!({"start_time": "2026-03-01T02:00:00Z", "end_time": "2026-03-01T04:00:00Z"})
        );
        assert_eq!(r["toolId"], "trim-track");
        let colour_schema = json!({"properties": {"color": {}}});
        let r = repair_run(
            &json!({"toolId": "set-track-color", "params": {"color": "red"}}),
            &colour_schema,
            "paint it green",
            &ctx,
        );
        assert_eq!(r["params"]["color"], "green");
        let untouched = json!({"toolId": "set-track-color", "params": {"color": "red"}});
        assert_eq!(
            repair_run(&untouched, &colour_schema, "colour it", &ctx),
            untouched
        );
        let filter = json!({"properties": {"max_knots": {}, "min_knots": {}}});
        let r = repair_run(
            &json!({"toolId": "speed-filter", "params": {"min_knots": 5}}),
            &filter,
            "below 5 knots",
            &ctx,
        );
        assert_eq!(r["params"]["max_knots"], json!(5.0));
    }
}
