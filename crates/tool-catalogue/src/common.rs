//! Plumbing shared by the tools: spec building, feature views, parameters, time and geodesy.

use std::cell::OnceCell;

use chrono::{DateTime, NaiveDateTime, SecondsFormat};
use geo::{Bearing, Destination, Distance, Haversine, Point};
use serde_json::{Map, Value, json};
use toolgate_core::{CallError, OutputKind, ToolCall, ToolOutcome, ToolSpec};
use toolgate_feature::Feature;

pub const METRES_PER_NM: f64 = 1852.0;
pub const METRES_PER_KM: f64 = 1000.0;
pub const METRES_PER_MILE: f64 = 1609.344;
/// Knots per (metre per second).
pub const KNOTS_PER_MPS: f64 = 3600.0 / METRES_PER_NM;
pub(crate) const TOOL_VERSION: &str = "1.0.0";

/// The named colours of Debrief's `NamedColorEnum`.
pub const NAMED_COLOURS: &[&str] = &[
    "red", "green", "blue", "yellow", "orange", "purple", "cyan", "magenta", "white", "black",
    "grey",
];

/// Kinds a shape tool works on.
pub const SHAPE_KINDS: &[&str] = &["CIRCLE", "RECTANGLE", "LINE", "TEXT", "VECTOR"];

// ---------------------------------------------------------------------------------------------
// Specs

/// What a tool declares; [`Def::build`] turns it into a [`ToolSpec`].
pub struct Def {
    pub id: &'static str,
    pub description: &'static str,
    pub output_kind: &'static str,
    pub category: &'static str,
    /// `debrief:selectionRequirements`.
    pub requirements: Value,
    /// The `properties` object of the input schema.
    pub properties: Value,
    pub required: &'static [&'static str],
}

impl Def {
    pub fn build(self) -> ToolSpec {
        let mut schema = Map::new();
        schema.insert("type".into(), json!("object"));
        schema.insert("properties".into(), self.properties);
        if !self.required.is_empty() {
            schema.insert("required".into(), json!(self.required));
        }
        schema.insert("additionalProperties".into(), json!(false));
        let mut annotations = Map::new();
        annotations.insert("debrief:selectionRequirements".into(), self.requirements);
        annotations.insert("debrief:version".into(), json!(TOOL_VERSION));
        annotations.insert("debrief:outputKind".into(), json!(self.output_kind));
        ToolSpec {
            id: self.id.to_owned(),
            title: humanise(self.id),
            description: self.description.to_owned(),
            input_schema: Value::Object(schema),
            output_kind: Some(OutputKind::new(self.output_kind)),
            category: self.category.to_owned(),
            annotations,
        }
    }
}

/// `set-track-color` → "Set Track Color".
pub fn humanise(id: &str) -> String {
    id.split('-')
        .filter(|w| !w.is_empty())
        .map(|w| {
            let mut chars = w.chars();
            match chars.next() {
                Some(first) => first.to_uppercase().chain(chars).collect::<String>(),
                None => String::new(),
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `[{"kind": K, "min": 1}]` for each kind (debrief-calc's `multi` projection).
pub fn multi(kinds: &[&str]) -> Value {
    Value::Array(kinds.iter().map(|k| json!({"kind": k, "min": 1})).collect())
}

/// `[{"kind": K, "min": 1, "max": 1}]` for each kind (debrief-calc's `single` projection).
pub fn single(kinds: &[&str]) -> Value {
    Value::Array(
        kinds
            .iter()
            .map(|k| json!({"kind": k, "min": 1, "max": 1}))
            .collect(),
    )
}

/// An ISO-8601 duration of weeks, days, hours, minutes and seconds (`PT15M`, `PT1H`, `P1D`).
pub const DURATION_PATTERN: &str =
    r"^P(?:\d+W)?(?:\d+D)?(?:T(?:\d+H)?(?:\d+M)?(?:\d+(?:\.\d+)?S)?)?$";

/// Debrief's `DurationPresetEnum`, offered as examples.
pub const DURATION_PRESETS: &[&str] = &[
    "PT1M", "PT5M", "PT15M", "PT30M", "PT1H", "PT2H", "PT6H", "PT12H", "PT24H",
];

// ---------------------------------------------------------------------------------------------
// Features

/// The subject as a list of features. Accepts an array of features (the normal case), a
/// FeatureCollection, a single Feature, or null (no features).
pub fn subject(call: &ToolCall) -> Result<Vec<&Value>, CallError> {
    match &call.subject {
        Value::Null => Ok(Vec::new()),
        Value::Array(items) => Ok(items.iter().collect()),
        Value::Object(obj) => match obj.get("type").and_then(Value::as_str) {
            Some("FeatureCollection") => Ok(obj
                .get("features")
                .and_then(Value::as_array)
                .map(|a| a.iter().collect())
                .unwrap_or_default()),
            _ => Ok(vec![&call.subject]),
        },
        other => Err(CallError::invalid(format!(
            "The subject must be an array of GeoJSON features; got {}",
            json_type(other)
        ))),
    }
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// `POINT "Datum A"`.
pub fn describe(f: &Value) -> String {
    let k = Feature(f).kind();
    let k = if k.is_empty() {
        "feature without a kind"
    } else {
        k
    };
    format!("{k} \"{}\"", Feature(f).display_name())
}

/// "A", "A and B", "A, B and C", "A, B, C, D, E and 3 more".
pub fn name_list(names: &[String]) -> String {
    const SHOWN: usize = 5;
    match names {
        [] => "nothing".to_owned(),
        [one] => one.clone(),
        _ if names.len() > SHOWN => format!(
            "{} and {} more",
            names
                .iter()
                .take(SHOWN)
                .cloned()
                .collect::<Vec<_>>()
                .join(", "),
            names.len() - SHOWN
        ),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

fn kinds_phrase(kinds: &[&str]) -> String {
    match kinds {
        [] => "matching".to_owned(),
        [one] => (*one).to_owned(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

fn got_phrase(features: &[&Value]) -> String {
    if features.is_empty() {
        return "got no features".to_owned();
    }
    let described: Vec<String> = features.iter().map(|f| describe(f)).collect();
    format!("got {}", name_list(&described))
}

/// The features a `multi` tool will work on, and the ones it skips.
pub struct Selection<'a> {
    pub matched: Vec<&'a Value>,
    pub skipped: Vec<&'a Value>,
}

impl Selection<'_> {
    /// " (skipped POINT "Datum A")" or "".
    pub fn skipped_note(&self) -> String {
        if self.skipped.is_empty() {
            return String::new();
        }
        let described: Vec<String> = self.skipped.iter().map(|f| describe(f)).collect();
        format!(" (skipped {})", name_list(&described))
    }
}

fn require_ids(title: &str, features: &[&Value]) -> Result<(), CallError> {
    match features.iter().find(|f| Feature(f).id().is_none()) {
        Some(f) => Err(CallError::invalid(format!(
            "{title} cannot change {} because it has no id; every feature needs a string \"id\"",
            describe(f)
        ))),
        None => Ok(()),
    }
}

/// At least one feature of `kinds`; others are skipped (debrief-calc's `multi` context).
pub fn select_multi<'a>(
    title: &str,
    features: &[&'a Value],
    kinds: &[&str],
) -> Result<Selection<'a>, CallError> {
    let (matched, skipped): (Vec<&Value>, Vec<&Value>) = features
        .iter()
        .partition(|f| kinds.contains(&Feature(f).kind()));
    if matched.is_empty() {
        return Err(CallError::invalid(format!(
            "{title} needs at least one {} feature; {}",
            kinds_phrase(kinds),
            got_phrase(features)
        )));
    }
    require_ids(title, &matched)?;
    Ok(Selection { matched, skipped })
}

/// Exactly one feature, of one of `kinds` (debrief-calc's `single` context).
pub fn select_single<'a>(
    title: &str,
    features: &[&'a Value],
    kinds: &[&str],
) -> Result<&'a Value, CallError> {
    match features {
        [one] if kinds.contains(&Feature(one).kind()) => {
            require_ids(title, features)?;
            Ok(one)
        }
        _ => Err(CallError::invalid(format!(
            "{title} needs exactly one {} feature; {}",
            kinds_phrase(kinds),
            got_phrase(features)
        ))),
    }
}

/// Exactly `n` features, each of one of `kinds`.
pub fn select_exactly<'a>(
    title: &str,
    features: &[&'a Value],
    kinds: &[&str],
    n: usize,
) -> Result<Vec<&'a Value>, CallError> {
    if features.len() == n && features.iter().all(|f| kinds.contains(&Feature(f).kind())) {
        return Ok(features.to_vec());
    }
    Err(CallError::invalid(format!(
        "{title} needs exactly {n} features, each a {}; {}",
        kinds_phrase(kinds),
        got_phrase(features)
    )))
}

// ---------------------------------------------------------------------------------------------
// Parameters

fn param<'a>(call: &'a ToolCall, name: &str) -> Option<&'a Value> {
    call.params.get(name).filter(|v| !v.is_null())
}

pub fn opt_f64(call: &ToolCall, name: &str) -> Result<Option<f64>, CallError> {
    match param(call, name) {
        None => Ok(None),
        Some(v) => v
            .as_f64()
            .filter(|x| x.is_finite())
            .map(Some)
            .ok_or_else(|| CallError::invalid(format!("Parameter \"{name}\" must be a number"))),
    }
}

pub(crate) fn opt_str<'a>(call: &'a ToolCall, name: &str) -> Result<Option<&'a str>, CallError> {
    match param(call, name) {
        None => Ok(None),
        Some(v) => v
            .as_str()
            .map(Some)
            .ok_or_else(|| CallError::invalid(format!("Parameter \"{name}\" must be a string"))),
    }
}

pub fn str_or<'a>(call: &'a ToolCall, name: &str, default: &'a str) -> Result<&'a str, CallError> {
    Ok(opt_str(call, name)?.unwrap_or(default))
}

pub fn bool_or(call: &ToolCall, name: &str, default: bool) -> Result<bool, CallError> {
    match param(call, name) {
        None => Ok(default),
        Some(v) => v.as_bool().ok_or_else(|| {
            CallError::invalid(format!("Parameter \"{name}\" must be true or false"))
        }),
    }
}

/// Seconds in an ISO-8601 duration of W/D/H/M/S (`PT15M` → 900). `None` when malformed.
pub fn duration_seconds(text: &str) -> Option<f64> {
    let rest = text.strip_prefix('P')?;
    let (date, time) = match rest.split_once('T') {
        Some((d, t)) => (d, Some(t)),
        None => (rest, None),
    };
    let mut total = 0.0;
    let mut any = false;
    let mut parse = |part: &str, units: &[(char, f64)]| -> Option<()> {
        let mut number = String::new();
        let mut unit_index = 0;
        for c in part.chars() {
            if c.is_ascii_digit() || c == '.' {
                number.push(c);
                continue;
            }
            let pos = units.iter().skip(unit_index).position(|(u, _)| *u == c)?;
            let (_, scale) = units.get(unit_index + pos)?;
            let value: f64 = number.parse().ok()?;
            total += value * scale;
            any = true;
            number.clear();
            unit_index += pos + 1;
        }
        number.is_empty().then_some(())
    };
    parse(date, &[('W', 604_800.0), ('D', 86_400.0)])?;
    if let Some(t) = time {
        if t.is_empty() {
            return None;
        }
        parse(t, &[('H', 3600.0), ('M', 60.0), ('S', 1.0)])?;
    }
    any.then_some(total)
}

// ---------------------------------------------------------------------------------------------
// Time

/// Epoch milliseconds of an ISO-8601 / RFC 3339 time. A time without an offset is read as UTC.
pub fn parse_time(text: &str) -> Option<i64> {
    let text = text.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Some(t.timestamp_millis());
    }
    NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f")
        .ok()
        .map(|t| t.and_utc().timestamp_millis())
}

/// `1995-12-12T05:00:00Z`.
pub fn format_time(ms: i64) -> String {
    DateTime::from_timestamp_millis(ms)
        .map(|t| t.to_rfc3339_opts(SecondsFormat::Secs, true))
        .unwrap_or_else(|| format!("{ms} ms"))
}

// ---------------------------------------------------------------------------------------------
// Geometry

pub type Coord = [f64; 2];

fn coord_of(v: &Value) -> Option<Coord> {
    let arr = v.as_array()?;
    let x = arr.first()?.as_f64()?;
    let y = arr.get(1)?.as_f64()?;
    (x.is_finite() && y.is_finite()).then_some([x, y])
}

/// A position is an array whose first element is a number.
fn is_position(v: &Value) -> bool {
    v.as_array()
        .and_then(|a| a.first())
        .is_some_and(Value::is_number)
}

/// Every [lon, lat] in a geometry (any GeoJSON type), in order.
pub fn geometry_coords(geometry: &Value) -> Vec<Coord> {
    fn walk(v: &Value, out: &mut Vec<Coord>) {
        if is_position(v) {
            if let Some(c) = coord_of(v) {
                out.push(c);
            }
        } else if let Some(items) = v.as_array() {
            for item in items {
                walk(item, out);
            }
        }
    }
    let mut out = Vec::new();
    if let Some(coords) = geometry.get("coordinates") {
        walk(coords, &mut out);
    }
    if let Some(geoms) = geometry.get("geometries").and_then(Value::as_array) {
        for g in geoms {
            out.extend(geometry_coords(g));
        }
    }
    out
}

/// Apply `f` to every position of a geometry in place (extra dimensions are kept). Returns how
/// many positions were changed.
pub fn map_geometry(geometry: &mut Value, f: &mut dyn FnMut(Coord) -> Coord) -> usize {
    let mut n = 0;
    if let Some(coords) = geometry.get_mut("coordinates") {
        n += map_positions(coords, f);
    }
    if let Some(geoms) = geometry.get_mut("geometries").and_then(Value::as_array_mut) {
        for g in geoms {
            n += map_geometry(g, f);
        }
    }
    n
}

/// Apply `f` to a position or nested arrays of positions in place.
pub fn map_positions(v: &mut Value, f: &mut dyn FnMut(Coord) -> Coord) -> usize {
    if is_position(v) {
        let Some(c) = coord_of(v) else { return 0 };
        let [x, y] = f(c);
        if let Some(arr) = v.as_array_mut() {
            if let Some(slot) = arr.get_mut(0) {
                *slot = json!(x);
            }
            if let Some(slot) = arr.get_mut(1) {
                *slot = json!(y);
            }
        }
        1
    } else if let Some(items) = v.as_array_mut() {
        items.iter_mut().map(|item| map_positions(item, f)).sum()
    } else {
        0
    }
}

/// A `[lon, lat]` property (CIRCLE `center`, VECTOR `origin`).
pub fn coord_prop(f: &Value, key: &str) -> Option<Coord> {
    Feature(f)
        .properties()
        .and_then(|p| p.get(key))
        .and_then(coord_of)
}

pub fn number_prop(f: &Value, key: &str) -> Option<f64> {
    Feature(f)
        .properties()
        .and_then(|p| p.get(key))
        .and_then(Value::as_f64)
        .filter(|x| x.is_finite())
}

/// The polygons of a Polygon / MultiPolygon geometry as `geo` polygons (exterior and holes).
pub fn polygons(geometry: &Value) -> Vec<geo::Polygon<f64>> {
    fn ring(v: &Value) -> Option<geo::LineString<f64>> {
        let pts: Vec<geo::Coord<f64>> = v
            .as_array()?
            .iter()
            .filter_map(coord_of)
            .map(|[x, y]| geo::Coord { x, y })
            .collect();
        (pts.len() >= 3).then(|| geo::LineString::new(pts))
    }
    fn polygon(v: &Value) -> Option<geo::Polygon<f64>> {
        let mut rings = v.as_array()?.iter().filter_map(ring);
        let exterior = rings.next()?;
        Some(geo::Polygon::new(exterior, rings.collect()))
    }
    let coords = geometry.get("coordinates");
    match geometry.get("type").and_then(Value::as_str) {
        Some("Polygon") => coords.and_then(polygon).into_iter().collect(),
        Some("MultiPolygon") => coords
            .and_then(Value::as_array)
            .map(|ps| ps.iter().filter_map(polygon).collect())
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// Longitude into [-180, 180).
pub fn normalise_lon(lon: f64) -> f64 {
    (lon + 180.0).rem_euclid(360.0) - 180.0
}

/// `lon` shifted by whole turns to lie within 180° of `reference`.
pub fn unwrap_lon(lon: f64, reference: f64) -> f64 {
    reference + normalise_lon(lon - reference)
}

fn point(c: Coord) -> Point<f64> {
    Point::new(c[0], c[1])
}

/// Great-circle (haversine) distance in metres.
pub fn distance_m(a: Coord, b: Coord) -> f64 {
    Haversine.distance(point(a), point(b))
}

/// Initial great-circle bearing in degrees true, [0, 360).
pub fn bearing_deg(a: Coord, b: Coord) -> f64 {
    let b = Haversine.bearing(point(a), point(b));
    if b >= 360.0 { b - 360.0 } else { b }
}

/// The point `metres` from `origin` along the great circle with initial bearing `bearing`.
pub fn destination(origin: Coord, bearing: f64, metres: f64) -> Coord {
    let p = Haversine.destination(point(origin), bearing, metres);
    [normalise_lon(p.x()), p.y()]
}

/// Bounding box `[west, south, east, north]` (no antimeridian handling).
pub fn bbox(coords: &[Coord]) -> Option<[f64; 4]> {
    let first = coords.first()?;
    let mut b = [first[0], first[1], first[0], first[1]];
    for c in coords {
        b[0] = b[0].min(c[0]);
        b[1] = b[1].min(c[1]);
        b[2] = b[2].max(c[0]);
        b[3] = b[3].max(c[1]);
    }
    Some(b)
}

/// Mean of the vertices; a closed ring's repeated last vertex counts once.
pub fn vertex_mean(coords: &[Coord]) -> Option<Coord> {
    let vertices = match coords {
        [first, init @ .., last] if !init.is_empty() && first == last => {
            coords.get(..coords.len() - 1).unwrap_or(coords)
        }
        _ => coords,
    };
    if vertices.is_empty() {
        return None;
    }
    let n = vertices.len() as f64;
    let reference = vertices.first().map_or(0.0, |c| c[0]);
    let (sx, sy) = vertices.iter().fold((0.0, 0.0), |(sx, sy), c| {
        (sx + unwrap_lon(c[0], reference), sy + c[1])
    });
    Some([normalise_lon(sx / n), sy / n])
}

pub fn round_to(x: f64, places: i32) -> f64 {
    let scale = 10f64.powi(places);
    (x * scale).round() / scale
}

// ---------------------------------------------------------------------------------------------
// Tracks

/// A read-only view of a TRACK feature: flattened coordinates, and each position's time parsed
/// at most once (only when a tool needs all of them; the time span parses just the ends).
pub struct Track<'a> {
    pub id: String,
    pub name: String,
    /// `[lon, lat]` of every vertex (a MultiLineString is flattened in order).
    pub coords: Vec<Coord>,
    /// `properties.positions` (parallel to `coords`); empty when absent.
    pub positions: &'a [Value],
    /// A legacy epoch-ms 4th coordinate element, per coordinate.
    legacy_times: Vec<Option<i64>>,
    /// Every coordinate's time, parsed on first use.
    times: OnceCell<Vec<Option<i64>>>,
}

impl<'a> Track<'a> {
    pub fn parse(feature: &'a Value) -> Track<'a> {
        let geometry = feature.get("geometry").unwrap_or(&Value::Null);
        let mut coords = Vec::new();
        let mut legacy_times = Vec::new();
        let mut push = |v: &Value| {
            if let Some(c) = coord_of(v) {
                coords.push(c);
                legacy_times.push(
                    v.as_array()
                        .and_then(|a| a.get(3))
                        .and_then(Value::as_f64)
                        .map(|ms| ms as i64),
                );
            }
        };
        let lines: Vec<&Value> = match (
            geometry.get("type").and_then(Value::as_str),
            geometry.get("coordinates"),
        ) {
            (Some("LineString"), Some(Value::Array(pts))) => pts.iter().collect(),
            (Some("MultiLineString"), Some(Value::Array(ls))) => ls
                .iter()
                .filter_map(Value::as_array)
                .flat_map(|l| l.iter())
                .collect(),
            (Some("Point"), Some(p)) => vec![p],
            _ => Vec::new(),
        };
        for v in lines {
            push(v);
        }
        let positions: &[Value] = Feature(feature)
            .properties()
            .and_then(|p| p.get("positions"))
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice);
        Track {
            id: Feature(feature).id().unwrap_or_default(),
            name: Feature(feature).display_name(),
            coords,
            positions,
            legacy_times,
            times: OnceCell::new(),
        }
    }

    /// Epoch ms of coordinate `i`: the position's `time`, else a legacy 4th coordinate element.
    fn parse_time_at(&self, i: usize) -> Option<i64> {
        self.positions
            .get(i)
            .and_then(|p| p.get("time"))
            .and_then(Value::as_str)
            .and_then(parse_time)
            .or_else(|| self.legacy_times.get(i).copied().flatten())
    }

    /// Every coordinate's time (`None` when unreadable), parsed once.
    pub fn times(&self) -> &[Option<i64>] {
        self.times
            .get_or_init(|| (0..self.len()).map(|i| self.parse_time_at(i)).collect())
    }

    fn time_at(&self, i: usize) -> Option<i64> {
        match self.times.get() {
            Some(times) => times.get(i).copied().flatten(),
            None => self.parse_time_at(i),
        }
    }

    pub fn len(&self) -> usize {
        self.coords.len()
    }

    pub fn is_empty(&self) -> bool {
        self.coords.is_empty()
    }

    /// The recorded speed (knots) of position `i`.
    pub fn recorded_speed(&self, i: usize) -> Option<f64> {
        self.positions
            .get(i)
            .and_then(|p| p.get("speed"))
            .and_then(Value::as_f64)
            .filter(|s| s.is_finite())
    }

    /// First and last readable times.
    pub fn time_span(&self) -> Option<(i64, i64)> {
        let n = self.len();
        let first = (0..n).find_map(|i| self.time_at(i))?;
        let last = (0..n).rev().find_map(|i| self.time_at(i))?;
        Some((first, last))
    }

    /// Speed over ground (knots) from position `i` to `i + 1`, derived from
    /// the coordinates and times. `None` when either time is unreadable.
    pub fn leg(&self, i: usize) -> Option<Leg> {
        let a = *self.coords.get(i)?;
        let b = *self.coords.get(i + 1)?;
        let times = self.times();
        let ta = (*times.get(i)?)?;
        let tb = (*times.get(i + 1)?)?;
        let metres = distance_m(a, b);
        let seconds = (tb - ta) as f64 / 1000.0;
        let speed_kn = if metres == 0.0 || seconds <= 0.0 {
            0.0
        } else {
            metres / seconds * KNOTS_PER_MPS
        };
        Some(Leg {
            metres,
            seconds,
            speed_kn,
        })
    }
}

/// One leg between consecutive positions.
#[derive(Debug, Clone, Copy)]
pub struct Leg {
    pub metres: f64,
    pub seconds: f64,
    pub speed_kn: f64,
}

// ---------------------------------------------------------------------------------------------
// Outcomes

/// An analysis: data only.
pub fn analysis(kind: &str, summary: String, data: Value) -> ToolOutcome {
    ToolOutcome {
        kind: OutputKind::new(kind),
        summary,
        data,
        change_set: None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn humanise_ids() {
        assert_eq!(humanise("set-track-color"), "Set Track Color");
        assert_eq!(humanise("track-stats"), "Track Stats");
    }

    #[test]
    fn durations() {
        assert_eq!(duration_seconds("PT15M"), Some(900.0));
        assert_eq!(duration_seconds("PT1H30M"), Some(5400.0));
        assert_eq!(duration_seconds("P1D"), Some(86_400.0));
        assert_eq!(duration_seconds("P1DT1S"), Some(86_401.0));
        assert_eq!(duration_seconds("PT"), None);
        assert_eq!(duration_seconds("P"), None);
        assert_eq!(duration_seconds("PT15"), None);
        assert_eq!(duration_seconds("PT1M1H"), None, "units out of order");
        assert_eq!(duration_seconds("15M"), None);
    }

    #[test]
    fn times_parse_once_and_format() {
        let ms = parse_time("1995-12-12T05:00:00+00:00").unwrap();
        assert_eq!(format_time(ms), "1995-12-12T05:00:00Z");
        assert_eq!(parse_time("1995-12-12T05:00:00"), Some(ms));
        assert_eq!(parse_time("1995-12-12T06:00:00+01:00"), Some(ms));
        assert_eq!(parse_time("yesterday"), None);
    }

    #[test]
    fn names_and_lists() {
        let p = json!({"id": "p1", "properties": {"kind": "POINT", "name": "Datum A"}});
        assert_eq!(describe(&p), "POINT \"Datum A\"");
        let n: Vec<String> = (1..=7).map(|i| format!("T{i}")).collect();
        assert_eq!(name_list(&n[..1]), "T1");
        assert_eq!(name_list(&n[..3]), "T1, T2 and T3");
        assert_eq!(name_list(&n), "T1, T2, T3, T4, T5 and 2 more");
    }

    #[test]
    fn geodesy_basics() {
        // 1 nm along the equator is 1/60 degree of longitude on a sphere of 1852*60*180/pi m.
        let d = distance_m([0.0, 0.0], [1.0 / 60.0, 0.0]);
        assert!((d - 1853.3).abs() < 1.0, "{d}");
        assert!((bearing_deg([0.0, 0.0], [1.0, 0.0]) - 90.0).abs() < 1e-9);
        assert!((bearing_deg([0.0, 0.0], [0.0, -1.0]) - 180.0).abs() < 1e-9);
        let p = destination([179.99, 0.0], 90.0, 5000.0);
        assert!(p[0] < -179.9, "{p:?} wraps the antimeridian");
        let m = vertex_mean(&[[0.0, 0.0], [2.0, 0.0], [2.0, 2.0], [0.0, 0.0]]).unwrap();
        assert!(
            (m[0] - 4.0 / 3.0).abs() < 1e-9 && (m[1] - 2.0 / 3.0).abs() < 1e-9,
            "{m:?}"
        );
        let m = vertex_mean(&[[179.0, 0.0], [-179.0, 0.0]]).unwrap();
        assert!(
            (m[0].abs() - 180.0).abs() < 1e-9,
            "across the antimeridian: {m:?}"
        );
    }
}
