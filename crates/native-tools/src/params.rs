//! Parameters as a person writes them, read before a tool runs and before anyone is asked to
//! approve it (issue 32 item 1): times in any ISO-8601 form or as a time of day on the targets'
//! day, durations and speeds and distances with their units — each read into the form the
//! tool's schema takes, or refused with a sentence that says what would be read. And the effect
//! of an edit in numbers, from its change set, for the preview.
//!
//! What a parameter measures is read from its schema: `format: date-time` is a time (also
//! inside object and array parameters), a number named `…_seconds` is a duration in seconds, a
//! string with the ISO-8601 duration pattern is a duration, a number named `…_kn`/`…_kts` or
//! described in knots is a speed in knots, a number named `…_nm`/`…_km` (or described in
//! nautical miles or kilometres) is a distance in that unit.

use chrono::{DateTime, Duration, FixedOffset, NaiveDate, NaiveTime, Utc};
use serde_json::{Map, Value, json};
use toolgate_core::{ChangeSet, Edit, Normalised};
use toolgate_feature::Feature;

use toolgate_tool_catalogue::common::{
    DURATION_PATTERN, KNOTS_PER_MPS, METRES_PER_NM, duration_seconds,
};
use toolgate_tool_catalogue::model::{format_time, parse_time, positions_raw};

/// What one parameter measures, and in which unit the tool takes it.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Quantity {
    /// An instant, as ISO-8601 UTC text.
    Time,
    /// A duration, as a number of seconds.
    Seconds,
    /// A duration, as ISO-8601 duration text (`PT15M`).
    IsoDuration,
    /// A speed, as a number of knots.
    Knots,
    /// A distance, as a number of this many metres per unit (1852 for nautical miles).
    Distance(f64, &'static str),
}

impl Quantity {
    fn of(name: &str, schema: &Value) -> Option<Self> {
        let text = |k: &str| schema.get(k).and_then(Value::as_str).unwrap_or_default();
        if text("format") == "date-time" {
            return Some(Quantity::Time);
        }
        let ty = text("type");
        let description = text("description").to_ascii_lowercase();
        if ty == "string" && text("pattern") == DURATION_PATTERN {
            return Some(Quantity::IsoDuration);
        }
        if ty != "number" && ty != "integer" {
            return None;
        }
        let has = |word: &str| {
            description
                .split(|c: char| !c.is_ascii_alphanumeric())
                .any(|w| w == word)
        };
        if name.ends_with("_seconds") {
            Some(Quantity::Seconds)
        } else if name.ends_with("_kn") || name.ends_with("_kts") || has("knots") {
            Some(Quantity::Knots)
        } else if name.ends_with("_nm") || description.contains("nautical miles") {
            Some(Quantity::Distance(METRES_PER_NM, "nautical miles"))
        } else if name.ends_with("_km") || has("kilometres") {
            Some(Quantity::Distance(1000.0, "kilometres"))
        } else {
            None
        }
    }

    fn unit(self) -> &'static str {
        match self {
            Quantity::Seconds => "seconds",
            Quantity::Knots => "knots",
            Quantity::Distance(_, unit) => unit,
            Quantity::Time | Quantity::IsoDuration => "",
        }
    }

    fn examples(self) -> &'static str {
        match self {
            Quantity::Seconds | Quantity::IsoDuration => {
                "\"90 s\", \"5 min\", \"1 h 30 min\" or PT1H"
            }
            Quantity::Knots => "\"12 kn\", \"6 m/s\" or \"20 km/h\"",
            Quantity::Distance(..) => "\"5 nm\", \"2000 yd\", \"3 km\" or \"500 m\"",
            Quantity::Time => "",
        }
    }
}

/// The parameters of `tool_id`, with every value written with units or in another ISO-8601
/// form read into the form the schema takes, before validation. A time of day stays as
/// written (placing it needs the targets: [`resolve`]); so does anything this cannot read, for
/// the validator or [`resolve`] to refuse. `Err` lists values that name a quantity this cannot
/// read (`"5 furlongs"` for a distance in nautical miles).
pub fn normalise(tool_id: &str, params: &Map<String, Value>) -> Result<Normalised, Vec<String>> {
    let Some(spec) = crate::spec(tool_id) else {
        return Ok(Normalised {
            params: params.clone(),
            notes: Vec::new(),
        });
    };
    let mut reader = Reader::default();
    let out = reader.object(&spec.input_schema, params, "", None);
    if reader.problems.is_empty() {
        Ok(Normalised {
            params: out,
            notes: reader.notes,
        })
    } else {
        Err(reader.problems)
    }
}

/// The parameters after [`resolve`]: every time ISO-8601 UTC, and what was read how.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    pub params: Map<String, Value>,
    pub notes: Vec<String>,
}

/// The parameters of `tool_id` resolved against its targets: a time of day (`05:00`) is placed
/// on the targets' day — the one UTC day their times cover, or the one day of several on which
/// that time falls inside them — and a time that cannot be read is refused, with the targets'
/// span in the sentence. Everything [`normalise`] reads is read here too.
pub fn resolve(
    tool_id: &str,
    params: &Map<String, Value>,
    subject: &[Value],
) -> Result<Resolved, Vec<String>> {
    let Some(spec) = crate::spec(tool_id) else {
        return Ok(Resolved {
            params: params.clone(),
            notes: Vec::new(),
        });
    };
    let span = subject_span(subject);
    let mut reader = Reader::default();
    let out = reader.object(&spec.input_schema, params, "", Some(span));
    if reader.problems.is_empty() {
        Ok(Resolved {
            params: out,
            notes: reader.notes,
        })
    } else {
        Err(reader.problems)
    }
}

#[derive(Default)]
struct Reader {
    notes: Vec<String>,
    problems: Vec<String>,
}

/// `None`: no targets known yet (leave times of day); `Some(span)`: place them in `span`.
type Targets = Option<Option<(i64, i64)>>;

impl Reader {
    fn object(
        &mut self,
        schema: &Value,
        params: &Map<String, Value>,
        prefix: &str,
        targets: Targets,
    ) -> Map<String, Value> {
        let props = schema.get("properties").and_then(Value::as_object);
        params
            .iter()
            .map(|(k, v)| {
                let path = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                let value = match props.and_then(|p| p.get(k)) {
                    Some(s) => self.value(k, s, v, &path, targets, prefix.is_empty()),
                    None => v.clone(),
                };
                (k.clone(), value)
            })
            .collect()
    }

    fn value(
        &mut self,
        name: &str,
        schema: &Value,
        v: &Value,
        path: &str,
        targets: Targets,
        top: bool,
    ) -> Value {
        match v {
            Value::Object(m) if schema.get("properties").is_some() => {
                Value::Object(self.object(schema, m, path, targets))
            }
            Value::Array(items) if schema.get("items").is_some_and(Value::is_object) => {
                let item_schema = &schema["items"];
                Value::Array(
                    items
                        .iter()
                        .enumerate()
                        .map(|(i, x)| {
                            self.value(
                                name,
                                item_schema,
                                x,
                                &format!("{path}[{i}]"),
                                targets,
                                false,
                            )
                        })
                        .collect(),
                )
            }
            Value::String(text) => match Quantity::of(name, schema) {
                Some(Quantity::Time) => self.time(path, text, targets),
                // Units only at the top level: nested numbers carry no unit in their schemas.
                Some(q) if top => self.measure(path, schema, text, q),
                _ => v.clone(),
            },
            _ => v.clone(),
        }
    }

    fn time(&mut self, path: &str, text: &str, targets: Targets) -> Value {
        let keep = Value::String(text.to_owned());
        match read_time(text) {
            Written::At(ms) => {
                let iso = format_time(ms);
                if iso != text {
                    self.notes.push(format!("{path}: \"{text}\" read as {iso}"));
                }
                Value::String(iso)
            }
            Written::TimeOfDay(tod, offset) => {
                let Some(span) = targets else { return keep };
                match place(tod, offset, span) {
                    Ok(ms) => {
                        let iso = format_time(ms);
                        self.notes.push(format!(
                            "{path}: \"{text}\" read as {iso} (the targets' day)"
                        ));
                        Value::String(iso)
                    }
                    Err(why) => {
                        self.problems
                            .push(format!("parameter \"{path}\": \"{text}\" {why}"));
                        keep
                    }
                }
            }
            Written::Unreadable => {
                let Some(span) = targets else { return keep };
                let day = span
                    .map(|(s, _)| format_time(s).chars().take(10).collect::<String>())
                    .unwrap_or_else(|| "2024-01-15".to_owned());
                let within = span
                    .map(|s| format!(" (the targets' times run {})", span_text(s)))
                    .unwrap_or_default();
                self.problems.push(format!(
                    "parameter \"{path}\" must be a time: ISO-8601 such as {day}T05:00:00Z (or {day} 05:00), or a time of day on the targets' day such as 05:00; got \"{text}\"{within}"
                ));
                keep
            }
        }
    }

    fn measure(&mut self, path: &str, schema: &Value, text: &str, q: Quantity) -> Value {
        let keep = Value::String(text.to_owned());
        let trimmed = text.trim();
        if q == Quantity::IsoDuration {
            if trimmed.starts_with('P') && duration_seconds(trimmed).is_some() {
                return keep;
            }
            return match read_seconds(trimmed) {
                Some(s) if s > 0.0 => {
                    let iso = iso_duration(s);
                    self.notes.push(format!("{path}: \"{text}\" read as {iso}"));
                    Value::String(iso)
                }
                _ => {
                    self.problems.push(format!(
                        "parameter \"{path}\" must be a duration such as PT15M, \"15 min\" or \"1 h\"; got \"{text}\""
                    ));
                    keep
                }
            };
        }
        // A plain number written as text is that many of the parameter's unit.
        if let Ok(n) = trimmed.parse::<f64>()
            && n.is_finite()
        {
            return self.number(path, schema, text, n, false);
        }
        let read = match q {
            Quantity::Seconds => read_seconds(trimmed),
            Quantity::Knots => read_speed_knots(trimmed),
            Quantity::Distance(metres, _) => read_distance_m(trimmed).map(|m| m / metres),
            Quantity::Time | Quantity::IsoDuration => None,
        };
        match read {
            Some(n) => self.number(path, schema, text, n, true),
            None => {
                self.problems.push(format!(
                    "parameter \"{path}\" must be a number of {} or a value with its unit such as {}; got \"{text}\"",
                    q.unit(),
                    q.examples()
                ));
                keep
            }
        }
    }

    fn number(&mut self, path: &str, schema: &Value, text: &str, n: f64, note: bool) -> Value {
        let whole = (n - n.round()).abs() < 1e-9;
        if schema.get("type").and_then(Value::as_str) == Some("integer") && !whole {
            self.problems.push(format!(
                "parameter \"{path}\" must be a whole number; \"{text}\" is {}",
                round6(n)
            ));
            return Value::String(text.to_owned());
        }
        let v = if whole && n.abs() < 9e15 {
            json!(n.round() as i64)
        } else {
            json!(round6(n))
        };
        if note {
            self.notes.push(format!("{path}: \"{text}\" read as {v}"));
        }
        v
    }
}

fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

// ---------------------------------------------------------------------------------------------
// Quantities with units

/// `(number, unit)` pairs: `1 h 30 min` → [(1, "h"), (30, "min")]; `12kn` → [(12, "kn")].
fn pairs(text: &str) -> Option<Vec<(f64, String)>> {
    let mut out = Vec::new();
    let mut rest = text.trim();
    while !rest.is_empty() {
        let end = rest
            .char_indices()
            .find(|(i, c)| {
                !(c.is_ascii_digit() || *c == '.' || (*i == 0 && (*c == '-' || *c == '+')))
            })
            .map_or(rest.len(), |(i, _)| i);
        let n: f64 = rest[..end].parse().ok()?;
        rest = rest[end..].trim_start();
        let unit_end = rest
            .char_indices()
            .find(|(_, c)| c.is_ascii_digit() || *c == '-' || *c == '+')
            .map_or(rest.len(), |(i, _)| i);
        let unit = rest[..unit_end]
            .trim()
            .trim_end_matches([',', ';'])
            .trim()
            .to_ascii_lowercase();
        rest = rest[unit_end..].trim_start();
        out.push((n, unit));
    }
    (!out.is_empty()).then_some(out)
}

/// Seconds in `90 s`, `5 min`, `1 h 30 min`, `1h30m`, `2 days` or an ISO-8601 duration.
pub(crate) fn read_seconds(text: &str) -> Option<f64> {
    let upper = text.trim().to_ascii_uppercase();
    if upper.starts_with('P') {
        return duration_seconds(&upper);
    }
    let mut total = 0.0;
    for (n, unit) in pairs(text)? {
        let scale = match unit.as_str() {
            "s" | "sec" | "secs" | "second" | "seconds" => 1.0,
            "m" | "min" | "mins" | "minute" | "minutes" => 60.0,
            "h" | "hr" | "hrs" | "hour" | "hours" => 3600.0,
            "d" | "day" | "days" => 86_400.0,
            "w" | "wk" | "week" | "weeks" => 604_800.0,
            _ => return None,
        };
        total += n * scale;
    }
    total.is_finite().then_some(total)
}

/// Knots in `12 kn`, `12 kts`, `6 m/s`, `20 km/h`, `15 mph`.
pub(crate) fn read_speed_knots(text: &str) -> Option<f64> {
    let [(n, unit)] = pairs(text)?.try_into().ok()?;
    let scale = match unit.as_str() {
        "kn" | "kt" | "kts" | "knot" | "knots" => 1.0,
        "m/s" | "mps" | "m/sec" => KNOTS_PER_MPS,
        "km/h" | "kmh" | "kph" | "km/hr" => 1000.0 / METRES_PER_NM,
        "mph" => 1609.344 / METRES_PER_NM,
        _ => return None,
    };
    Some(n * scale)
}

/// Metres in `5 nm`, `2000 yd`, `3 kyd`, `3 km`, `500 m`, `2 mi`.
pub(crate) fn read_distance_m(text: &str) -> Option<f64> {
    let [(n, unit)] = pairs(text)?.try_into().ok()?;
    let scale = match unit.as_str() {
        "nm" | "nmi" | "nautical mile" | "nautical miles" => METRES_PER_NM,
        "km" | "kilometre" | "kilometres" | "kilometer" | "kilometers" => 1000.0,
        "m" | "metre" | "metres" | "meter" | "meters" => 1.0,
        "yd" | "yds" | "yard" | "yards" => 0.9144,
        "kyd" | "kyds" => 914.4,
        "mi" | "mile" | "miles" => 1609.344,
        "ft" | "feet" | "foot" => 0.3048,
        _ => return None,
    };
    Some(n * scale)
}

/// `PT1H30M` for 5400 seconds.
fn iso_duration(seconds: f64) -> String {
    let total = seconds.round() as i64;
    let (d, rest) = (total / 86_400, total % 86_400);
    let (h, m, s) = (rest / 3600, rest % 3600 / 60, rest % 60);
    let mut out = "P".to_owned();
    if d > 0 {
        out.push_str(&format!("{d}D"));
    }
    if h + m + s > 0 || d == 0 {
        out.push('T');
        for (n, u) in [(h, 'H'), (m, 'M'), (s, 'S')] {
            if n > 0 {
                out.push_str(&format!("{n}{u}"));
            }
        }
        if h + m + s == 0 {
            out.push_str("0S");
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Times

/// How a time was written.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Written {
    /// A full instant (date and time; UTC when no offset is given), epoch milliseconds.
    At(i64),
    /// A time of day with its offset from UTC in seconds (0 when none is given).
    TimeOfDay(NaiveTime, i32),
    Unreadable,
}

/// Read a time written in any ISO-8601 form: extended or basic, `T` or a space between date and
/// time, with or without seconds, fractions and an offset (`Z`, `+01:00`, `+0100`, `+01`); a
/// date alone is its midnight; a time of day alone (`05:00`, `05:00:30`, `T0500`, `0500Z`).
fn read_time(text: &str) -> Written {
    let t = text.trim();
    if let Ok(dt) = DateTime::parse_from_rfc3339(t) {
        return Written::At(dt.timestamp_millis());
    }
    let date_len = if t
        .get(..10)
        .is_some_and(|d| NaiveDate::parse_from_str(d, "%Y-%m-%d").is_ok())
    {
        10
    } else if t.len() >= 8
        && t.as_bytes()[..8].iter().all(u8::is_ascii_digit)
        && t.as_bytes()
            .get(8)
            .is_none_or(|b| matches!(*b, b'T' | b't' | b' '))
    {
        8
    } else {
        0
    };
    if date_len > 0 {
        let fmt = if date_len == 10 { "%Y-%m-%d" } else { "%Y%m%d" };
        let Ok(date) = NaiveDate::parse_from_str(&t[..date_len], fmt) else {
            return Written::Unreadable;
        };
        let rest = t[date_len..].trim_start_matches(['T', 't', ' ']);
        let (tod, offset) = if rest.is_empty() {
            (NaiveTime::MIN, 0)
        } else {
            match time_of_day(rest, true) {
                Some(x) => x,
                None => return Written::Unreadable,
            }
        };
        let Some(offset) = FixedOffset::east_opt(offset) else {
            return Written::Unreadable;
        };
        return match date.and_time(tod).and_local_timezone(offset).single() {
            Some(dt) => Written::At(dt.timestamp_millis()),
            None => Written::Unreadable,
        };
    }
    let marked = t.starts_with(['T', 't']);
    match time_of_day(t.trim_start_matches(['T', 't']), marked) {
        Some((tod, offset)) => Written::TimeOfDay(tod, offset),
        None => Written::Unreadable,
    }
}

/// `05:00`, `05:00:30.5`, `0500`, `050030` with an optional offset. Digits without a colon are
/// read only where the text is plainly a time (after a date or `T`, or with an offset), so a
/// bare `2026` is not 20:26.
fn time_of_day(text: &str, after_marker: bool) -> Option<(NaiveTime, i32)> {
    let (clock, offset, has_offset) = split_offset(text)?;
    let time = if clock.contains(':') {
        ["%H:%M:%S%.f", "%H:%M"]
            .iter()
            .find_map(|f| NaiveTime::parse_from_str(clock, f).ok())?
    } else {
        if !(after_marker || has_offset) || !clock.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        {
            return None;
        }
        match clock.len() {
            2 => NaiveTime::parse_from_str(&format!("{clock}00"), "%H%M").ok()?,
            4 => NaiveTime::parse_from_str(clock, "%H%M").ok()?,
            _ => NaiveTime::parse_from_str(clock, "%H%M%S%.f").ok()?,
        }
    };
    Some((time, offset))
}

/// The clock text, the offset in seconds east of UTC, and whether one was written.
fn split_offset(text: &str) -> Option<(&str, i32, bool)> {
    let t = text.trim();
    for utc in ["Z", "z", " UTC", "UTC", " GMT", "GMT"] {
        if let Some(clock) = t.strip_suffix(utc) {
            return Some((clock.trim(), 0, true));
        }
    }
    let Some(i) = t.rfind(['+', '-']) else {
        return Some((t, 0, false));
    };
    let (clock, off) = (&t[..i], &t[i..]);
    let sign = if off.starts_with('-') { -1 } else { 1 };
    let digits: String = off[1..].chars().filter(|c| *c != ':').collect();
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (h, m) = match digits.len() {
        2 => (digits.parse::<i32>().ok()?, 0),
        4 => (
            digits[..2].parse::<i32>().ok()?,
            digits[2..].parse::<i32>().ok()?,
        ),
        _ => return None,
    };
    if h > 23 || m > 59 {
        return None;
    }
    Some((clock.trim(), sign * (h * 3600 + m * 60), true))
}

/// Why a time of day could not be placed on the targets' day; each message goes after the
/// parameter and the text as written, and says what to write instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum PlaceError {
    #[error(
        "has no date, and the targets carry no times to take the day from; write the date too, e.g. 2026-03-01T05:00:00Z"
    )]
    NoTargetTimes,
    #[error("cannot be placed: the targets' times are out of range")]
    OutOfRange,
    /// Outside a span of several days; `example`: the time on the span's first day.
    #[error(
        "falls outside the targets' times ({}); write the date too, e.g. {}",
        span_text(*.span),
        format_time(*.example)
    )]
    Outside { span: (i64, i64), example: i64 },
    #[error(
        "falls on more than one day of the targets' times ({}); write the date too: {}",
        span_text(*.span),
        .candidates.iter().map(|ms| format_time(*ms)).collect::<Vec<_>>().join(" or ")
    )]
    SeveralDays {
        span: (i64, i64),
        candidates: Vec<i64>,
    },
}

/// Place a time of day in the targets' span: on the one UTC day it covers, else on the one day
/// of several on which it falls inside the span.
fn place(tod: NaiveTime, offset: i32, span: Option<(i64, i64)>) -> Result<i64, PlaceError> {
    let Some((start, end)) = span else {
        return Err(PlaceError::NoTargetTimes);
    };
    let day = |ms: i64| DateTime::<Utc>::from_timestamp_millis(ms).map(|d| d.date_naive());
    let (Some(first), Some(last)) = (day(start), day(end)) else {
        return Err(PlaceError::OutOfRange);
    };
    let at = |d: NaiveDate| d.and_time(tod).and_utc().timestamp_millis() - i64::from(offset) * 1000;
    let mut inside = Vec::new();
    let mut d = first - Duration::days(1);
    while d <= last + Duration::days(1) {
        let ms = at(d);
        if (start..=end).contains(&ms) {
            inside.push(ms);
        }
        d += Duration::days(1);
    }
    match (inside.as_slice(), first == last) {
        ([one], _) => Ok(*one),
        ([], true) => Ok(at(first)),
        ([], false) => Err(PlaceError::Outside {
            span: (start, end),
            example: at(first),
        }),
        (_, _) => Err(PlaceError::SeveralDays {
            span: (start, end),
            candidates: inside,
        }),
    }
}

/// `2026-03-01 00:00–12:00 UTC`, or with both dates when the span crosses midnight.
fn span_text((start, end): (i64, i64)) -> String {
    let (s, e) = (format_time(start), format_time(end));
    let (sd, st) = (&s[..10.min(s.len())], s.get(11..16).unwrap_or_default());
    let (ed, et) = (&e[..10.min(e.len())], e.get(11..16).unwrap_or_default());
    if sd == ed {
        format!("{sd} {st}–{et} UTC")
    } else {
        format!("{sd} {st} – {ed} {et} UTC")
    }
}

/// Property keys whose values are times, wherever they sit in a feature's properties.
const TIME_KEYS: &[&str] = &[
    "time",
    "start_time",
    "end_time",
    "time_start",
    "time_end",
    "timestamp",
    "debrief:time",
    "debrief:start_time",
    "debrief:end_time",
];

/// The earliest and latest time the features carry (positions, contacts, their own times).
pub fn subject_span(subject: &[Value]) -> Option<(i64, i64)> {
    fn walk(v: &Value, depth: usize, span: &mut Option<(i64, i64)>) {
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    if TIME_KEYS.contains(&k.as_str()) {
                        if let Some(ms) = x.as_str().and_then(parse_time) {
                            *span = Some(span.map_or((ms, ms), |(s, e)| (s.min(ms), e.max(ms))));
                        }
                    } else if depth > 0 && (x.is_object() || x.is_array()) {
                        walk(x, depth - 1, span);
                    }
                }
            }
            Value::Array(a) if depth > 0 => {
                for x in a {
                    walk(x, depth - 1, span);
                }
            }
            _ => {}
        }
    }
    let mut span = None;
    for f in subject {
        if let Some(p) = f.get("properties") {
            walk(p, 4, &mut span);
        }
    }
    span
}

// ---------------------------------------------------------------------------------------------
// Effect

/// The most features an effect line names before it counts the rest.
const NAMED: usize = 3;

fn names(list: &[String]) -> String {
    match list.len() {
        0 => String::new(),
        1 => list[0].clone(),
        n if n <= NAMED => format!("{} features: {}", n, list.join(", ")),
        n => format!(
            "{n} features: {} and {} more",
            list[..NAMED].join(", "),
            n - NAMED
        ),
    }
}

/// What a change set does to the targets, in numbers, one line per kind of change: positions
/// removed or added per track (`remove 240 of 361 positions of HMS Nelson (keep 121)`), the
/// features changed, added and removed.
pub fn effect(subject: &[Value], change: &ChangeSet) -> Vec<String> {
    let before_of = |id: &str| {
        subject
            .iter()
            .find(|f| toolgate_tool_catalogue::model::id_of(f).as_deref() == Some(id))
    };
    let mut lines = Vec::new();
    let (mut changed, mut same, mut added, mut removed) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for edit in &change.edits {
        match edit {
            Edit::Upsert { id, item } => match before_of(id) {
                Some(before) => {
                    let name = Feature(before).display_name();
                    let (n, m) = (positions_raw(before).len(), positions_raw(item).len());
                    if n > 0 && m < n {
                        lines.push(format!(
                            "remove {} of {n} positions of {name} (keep {m})",
                            n - m
                        ));
                    } else if m > n && n > 0 {
                        lines.push(format!("add {} positions to {name} ({n} → {m})", m - n));
                    } else if before == item {
                        same.push(name);
                    } else {
                        changed.push(name);
                    }
                }
                None => added.push(Feature(item).display_name()),
            },
            Edit::Remove { id } => {
                removed
                    .push(before_of(id).map_or_else(|| id.clone(), |f| Feature(f).display_name()));
            }
        }
    }
    if !changed.is_empty() {
        lines.push(format!("change {}", names(&changed)));
    }
    if !added.is_empty() {
        lines.push(format!("add {}", names(&added)));
    }
    if !removed.is_empty() {
        lines.push(format!("remove {}", names(&removed)));
    }
    if !same.is_empty() {
        lines.push(format!(
            "leave {} as {} (nothing differs)",
            names(&same),
            if same.len() == 1 { "it is" } else { "they are" }
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> i64 {
        parse_time(s).unwrap()
    }

    #[test]
    fn times_in_any_iso_form_are_read_as_utc() {
        let five = at("2026-03-01T05:00:00Z");
        for text in [
            "2026-03-01T05:00:00Z",
            "2026-03-01 05:00",
            "2026-03-01T05:00",
            "2026-03-01 05:00:00",
            "2026-03-01T05:00Z",
            "2026-03-01T06:00:00+01:00",
            "2026-03-01T06:00+0100",
            "2026-03-01T00:00-05",
            "20260301T0500Z",
            "20260301T050000",
            "2026-03-01 05:00 UTC",
        ] {
            assert_eq!(read_time(text), Written::At(five), "{text}");
        }
        assert_eq!(
            read_time("2026-03-01"),
            Written::At(at("2026-03-01T00:00:00Z"))
        );
        let tod = |h, m| NaiveTime::from_hms_opt(h, m, 0).unwrap();
        assert_eq!(read_time("05:00"), Written::TimeOfDay(tod(5, 0), 0));
        assert_eq!(read_time("5:00"), Written::TimeOfDay(tod(5, 0), 0));
        assert_eq!(read_time("T0500"), Written::TimeOfDay(tod(5, 0), 0));
        assert_eq!(read_time("0500Z"), Written::TimeOfDay(tod(5, 0), 0));
        assert_eq!(
            read_time("06:00+01:00"),
            Written::TimeOfDay(tod(6, 0), 3600)
        );
        for bad in [
            "yesterday",
            "2026",
            "25:00",
            "2026-02-30 05:00",
            "",
            "now",
            "05:00 tomorrow",
        ] {
            assert_eq!(read_time(bad), Written::Unreadable, "{bad}");
        }
    }

    #[test]
    fn a_time_of_day_is_placed_on_the_targets_day() {
        let day = Some((at("2026-03-01T00:00:00Z"), at("2026-03-01T12:00:00Z")));
        let tod = |h, m| NaiveTime::from_hms_opt(h, m, 0).unwrap();
        assert_eq!(place(tod(5, 0), 0, day), Ok(at("2026-03-01T05:00:00Z")));
        // Outside a one-day span it is still that day (the tool judges the window).
        assert_eq!(place(tod(13, 0), 0, day), Ok(at("2026-03-01T13:00:00Z")));
        assert_eq!(place(tod(6, 0), 3600, day), Ok(at("2026-03-01T05:00:00Z")));
        // Across midnight: the day on which the time falls inside the span.
        let night = Some((at("2026-03-01T22:00:00Z"), at("2026-03-02T04:00:00Z")));
        assert_eq!(place(tod(1, 0), 0, night), Ok(at("2026-03-02T01:00:00Z")));
        assert_eq!(place(tod(23, 0), 0, night), Ok(at("2026-03-01T23:00:00Z")));
        let e = place(tod(12, 0), 0, night).unwrap_err().to_string();
        assert!(
            e.contains("falls outside") && e.contains("2026-03-01 22:00 – 2026-03-02 04:00 UTC"),
            "{e}"
        );
        let long = Some((at("2026-03-01T00:00:00Z"), at("2026-03-03T00:00:00Z")));
        let e = place(tod(5, 0), 0, long).unwrap_err().to_string();
        assert!(
            e.contains("2026-03-01T05:00:00Z or 2026-03-02T05:00:00Z"),
            "{e}"
        );
        assert_eq!(place(tod(5, 0), 0, None), Err(PlaceError::NoTargetTimes));
        assert!(
            PlaceError::NoTargetTimes
                .to_string()
                .contains("write the date")
        );
    }

    #[test]
    fn quantities_are_read_with_their_units() {
        assert_eq!(read_seconds("90 s"), Some(90.0));
        assert_eq!(read_seconds("5 min"), Some(300.0));
        assert_eq!(read_seconds("1h30m"), Some(5400.0));
        assert_eq!(read_seconds("1 h 30 min"), Some(5400.0));
        assert_eq!(read_seconds("PT1H"), Some(3600.0));
        assert_eq!(read_seconds("2 days"), Some(172_800.0));
        assert_eq!(read_seconds("soon"), None);
        assert_eq!(read_speed_knots("12 kn"), Some(12.0));
        assert_eq!(read_speed_knots("12kts"), Some(12.0));
        assert!((read_speed_knots("1 m/s").unwrap() - 1.943_844).abs() < 1e-5);
        assert!((read_speed_knots("18.52 km/h").unwrap() - 10.0).abs() < 1e-9);
        assert_eq!(read_speed_knots("12 furlongs"), None);
        assert_eq!(read_distance_m("2 nm"), Some(3704.0));
        assert_eq!(read_distance_m("1000 yd"), Some(914.4));
        assert_eq!(iso_duration(900.0), "PT15M");
        assert_eq!(iso_duration(5400.0), "PT1H30M");
        assert_eq!(iso_duration(129_600.0), "P1DT12H");
        assert_eq!(iso_duration(86_400.0), "P1D");
    }

    fn p(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn normalise_reads_units_and_iso_forms_before_validation() {
        let n = normalise(
            "split-tracks-into-legs",
            &p(json!({"max_gap_seconds": "1 h"})),
        )
        .unwrap();
        assert_eq!(n.params["max_gap_seconds"], json!(3600));
        assert_eq!(n.notes, ["max_gap_seconds: \"1 h\" read as 3600"]);
        let n = normalise(
            "interpolate-track",
            &p(json!({"interval_seconds": "5 min"})),
        )
        .unwrap();
        assert_eq!(n.params["interval_seconds"], json!(300));
        let e = normalise(
            "interpolate-track",
            &p(json!({"interval_seconds": "90.5 s"})),
        )
        .unwrap_err();
        assert!(e[0].contains("whole number"), "{e:?}");
        let n = normalise(
            "speed-filter",
            &p(json!({"max_knots": "6 m/s", "min_knots": "4"})),
        )
        .unwrap();
        assert!((n.params["max_knots"].as_f64().unwrap() - 11.663_067).abs() < 1e-5);
        assert_eq!(n.params["min_knots"], json!(4));
        let n = normalise(
            "buffer-zone-generator",
            &p(json!({"distance_1_nm": "3704 m"})),
        )
        .unwrap();
        assert_eq!(n.params["distance_1_nm"], json!(2));
        let n = normalise("label-interval", &p(json!({"interval": "30 min"}))).unwrap();
        assert_eq!(n.params["interval"], json!("PT30M"));
        let e = normalise("speed-filter", &p(json!({"max_knots": "fast"}))).unwrap_err();
        assert!(e[0].contains("\"12 kn\""), "{e:?}");
        // Times: every full ISO-8601 form now, a time of day later (it needs the targets).
        let n = normalise(
            "trim-track",
            &p(json!({"start_time": "2026-03-01 01:00", "end_time": "05:00"})),
        )
        .unwrap();
        assert_eq!(n.params["start_time"], json!("2026-03-01T01:00:00Z"));
        assert_eq!(n.params["end_time"], json!("05:00"));
        // Nested times too.
        let n = normalise(
            "generate-new-sensor-contact",
            &p(json!({"contact": {"time": "2026-03-01 05:00", "bearing": 10}})),
        )
        .unwrap();
        assert_eq!(n.params["contact"]["time"], json!("2026-03-01T05:00:00Z"));
        assert_eq!(
            n.notes,
            ["contact.time: \"2026-03-01 05:00\" read as 2026-03-01T05:00:00Z"]
        );
    }

    fn track(id: &str, times: &[&str]) -> Value {
        let positions: Vec<Value> = times.iter().map(|t| json!({"time": t})).collect();
        let coords: Vec<Value> = times.iter().map(|_| json!([0.0, 50.0])).collect();
        json!({"type": "Feature", "id": id, "geometry": {"type": "LineString", "coordinates": coords},
            "properties": {"kind": "TRACK", "platform_name": id.to_uppercase(), "positions": positions,
                "start_time": times[0], "end_time": times[times.len() - 1]}})
    }

    #[test]
    fn resolve_places_times_of_day_and_refuses_what_it_cannot_read() {
        let subject = [track(
            "nelson",
            &[
                "2026-03-01T00:00:00Z",
                "2026-03-01T06:00:00Z",
                "2026-03-01T12:00:00Z",
            ],
        )];
        let r = resolve(
            "trim-track",
            &p(json!({"start_time": "2026-03-01T01:00:00Z", "end_time": "05:00"})),
            &subject,
        )
        .unwrap();
        assert_eq!(r.params["end_time"], json!("2026-03-01T05:00:00Z"));
        assert_eq!(
            r.notes,
            ["end_time: \"05:00\" read as 2026-03-01T05:00:00Z (the targets' day)"]
        );
        let e = resolve(
            "trim-track",
            &p(json!({"start_time": "yesterday", "end_time": "05:00"})),
            &subject,
        )
        .unwrap_err();
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(
            e[0].starts_with("parameter \"start_time\" must be a time"),
            "{e:?}"
        );
        assert!(e[0].contains("got \"yesterday\""), "{e:?}");
        assert!(e[0].contains("2026-03-01 00:00–12:00 UTC"), "{e:?}");
    }

    #[test]
    fn the_effect_of_a_trim_is_counted_from_its_change_set() {
        let times: Vec<String> = (0..10)
            .map(|h| format!("2026-03-01T{h:02}:00:00Z"))
            .collect();
        let refs: Vec<&str> = times.iter().map(String::as_str).collect();
        let subject = [track("nelson", &refs)];
        let params = p(json!({"start_time": "2026-03-01T02:00:00Z", "end_time": "05:00"}));
        let r = resolve("trim-track", &params, &subject).unwrap();
        let call = toolgate_core::ToolCall::new("trim-track", r.params)
            .with_subject(Value::Array(subject.to_vec()));
        let out = crate::run(&call).unwrap();
        let lines = effect(&subject, out.change_set.as_ref().unwrap());
        assert_eq!(lines, ["remove 6 of 10 positions of NELSON (keep 4)"]);
        let cs = ChangeSet {
            label: String::new(),
            edits: vec![
                Edit::Upsert {
                    id: "nelson".into(),
                    item: subject[0].clone(),
                },
                Edit::Upsert {
                    id: "new".into(),
                    item: track("new", &refs),
                },
                Edit::Remove { id: "gone".into() },
            ],
        };
        assert_eq!(
            effect(&subject, &cs),
            [
                "add NEW",
                "remove gone",
                "leave NELSON as it is (nothing differs)"
            ]
        );
    }
}
