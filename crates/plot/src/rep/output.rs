//! Turning the parsed records into GeoJSON features.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use super::lex::{fmt_time, slug};
use super::parser::{Contact, Fix, Parser, Sensor, Track};
use super::symbology::Symbol;
use super::{PlatformRecord, RepImport};

/// Mean earth radius (IUGG), for placing the far end of a VECTOR.
const EARTH_RADIUS_M: f64 = 6_371_008.8;

fn num(v: f64) -> Value {
    Value::from(v)
}

fn point(at: [f64; 2]) -> Value {
    Value::Array(vec![num(at[0]), num(at[1])])
}

fn geometry(kind: &str, coordinates: Value) -> Value {
    let mut g = Map::with_capacity(2);
    g.insert("type".to_owned(), Value::from(kind));
    g.insert("coordinates".to_owned(), coordinates);
    Value::Object(g)
}

fn feature(id: String, geometry: Value, properties: Map<String, Value>) -> Value {
    let mut f = Map::with_capacity(4);
    f.insert("type".to_owned(), Value::from("Feature"));
    f.insert("id".to_owned(), Value::String(id));
    f.insert("geometry".to_owned(), geometry);
    f.insert("properties".to_owned(), Value::Object(properties));
    Value::Object(f)
}

fn props(kind: &str) -> Map<String, Value> {
    let mut p = Map::new();
    p.insert("kind".to_owned(), Value::from(kind));
    p
}

fn put_label(p: &mut Map<String, Value>, label: Option<String>) {
    if let Some(l) = label {
        p.insert("label".to_owned(), Value::String(l));
    }
}

/// TEXT, TIMETEXT and PERIODTEXT: a Point with `text` and any timestamps.
pub(super) fn text_feature(
    id: String,
    kind: &str,
    symbol: &Symbol,
    at: [f64; 2],
    text: &str,
    times: &[(&str, DateTime<Utc>)],
) -> Value {
    let mut p = props(kind);
    p.insert("text".to_owned(), Value::from(text));
    for (key, t) in times {
        p.insert((*key).to_owned(), Value::String(fmt_time(t)));
    }
    p.insert("style".to_owned(), symbol.point_style());
    feature(id, geometry("Point", point(at)), p)
}

/// CIRCLE: a Point at the centre, with `center` and `radius` (metres).
pub(super) fn circle_feature(
    id: String,
    symbol: &Symbol,
    centre: [f64; 2],
    radius: f64,
    label: Option<String>,
) -> Value {
    let mut p = props("CIRCLE");
    p.insert("center".to_owned(), point(centre));
    p.insert("radius".to_owned(), num(radius));
    put_label(&mut p, label);
    p.insert("style".to_owned(), symbol.area_style());
    feature(id, geometry("Point", point(centre)), p)
}

/// LINE: a two-point LineString.
pub(super) fn line_feature(
    id: String,
    symbol: &Symbol,
    points: &[[f64; 2]],
    label: Option<String>,
) -> Value {
    let mut p = props("LINE");
    put_label(&mut p, label);
    p.insert("style".to_owned(), symbol.line_style());
    let coords = points.iter().map(|&c| point(c)).collect();
    feature(id, geometry("LineString", Value::Array(coords)), p)
}

/// RECT → RECTANGLE: the Polygon spanned by two opposite corners.
pub(super) fn rect_feature(
    id: String,
    symbol: &Symbol,
    a: [f64; 2],
    b: [f64; 2],
    label: Option<String>,
) -> Value {
    let mut p = props("RECTANGLE");
    put_label(&mut p, label);
    p.insert("style".to_owned(), symbol.area_style());
    let ring = [a, [b[0], a[1]], b, [a[0], b[1]], a];
    let ring = Value::Array(ring.iter().map(|&c| point(c)).collect());
    feature(id, geometry("Polygon", Value::Array(vec![ring])), p)
}

/// POLY (closed Polygon) and POLYLINE (LineString), with `vertex_count`.
pub(super) fn poly_feature(
    id: String,
    kind: &str,
    symbol: &Symbol,
    vertices: &[[f64; 2]],
    label: Option<String>,
) -> Value {
    let mut p = props(kind);
    p.insert("vertex_count".to_owned(), Value::from(vertices.len()));
    put_label(&mut p, label);
    let mut coords: Vec<Value> = vertices.iter().map(|&c| point(c)).collect();
    let geom = if kind == "POLY" {
        p.insert("style".to_owned(), symbol.area_style());
        if let (Some(first), Some(last)) = (vertices.first(), vertices.last())
            && first != last
        {
            coords.push(point(*first));
        }
        geometry("Polygon", Value::Array(vec![Value::Array(coords)]))
    } else {
        p.insert("style".to_owned(), symbol.line_style());
        geometry("LineString", Value::Array(coords))
    };
    feature(id, geom, p)
}

/// The point `range` metres from `origin` along the great circle starting at `bearing`
/// (degrees true), on a spherical earth.
pub(super) fn destination(origin: [f64; 2], range: f64, bearing: f64) -> [f64; 2] {
    let (lon1, lat1) = (origin[0].to_radians(), origin[1].to_radians());
    let delta = range / EARTH_RADIUS_M;
    let theta = bearing.to_radians();
    let lat2 = (lat1.sin() * delta.cos() + lat1.cos() * delta.sin() * theta.cos()).asin();
    let lon2 = lon1
        + (theta.sin() * delta.sin() * lat1.cos()).atan2(delta.cos() - lat1.sin() * lat2.sin());
    let mut lon = lon2.to_degrees();
    if lon > 180.0 {
        lon -= 360.0;
    } else if lon < -180.0 {
        lon += 360.0;
    }
    [lon, lat2.to_degrees()]
}

/// VECTOR: a LineString from the origin to the computed end, with `origin`, `range` (metres)
/// and `bearing` (degrees).
pub(super) fn vector_feature(
    id: String,
    symbol: &Symbol,
    origin: [f64; 2],
    end: [f64; 2],
    range: f64,
    bearing: f64,
    label: Option<String>,
) -> Value {
    let mut p = props("VECTOR");
    p.insert("origin".to_owned(), point(origin));
    p.insert("range".to_owned(), num(range));
    p.insert("bearing".to_owned(), num(bearing));
    put_label(&mut p, label);
    p.insert("style".to_owned(), symbol.line_style());
    let coords = Value::Array(vec![point(origin), point(end)]);
    feature(id, geometry("LineString", coords), p)
}

pub(super) struct Ellipse {
    pub time: DateTime<Utc>,
    pub centre: [f64; 2],
    pub orientation: f64,
    /// Metres, as given (Debrief's "maxima"/"minima").
    pub maxima: f64,
    pub minima: f64,
}

/// ELLIPSE: a Point at the centre with `center`, `time`, `orientation` (degrees), and
/// `maxima`/`minima` (metres, the axis values exactly as Debrief names them).
pub(super) fn ellipse_feature(
    id: String,
    symbol: &Symbol,
    e: &Ellipse,
    label: Option<String>,
) -> Value {
    let mut p = props("ELLIPSE");
    p.insert("time".to_owned(), Value::String(fmt_time(&e.time)));
    p.insert("center".to_owned(), point(e.centre));
    p.insert("orientation".to_owned(), num(e.orientation));
    p.insert("maxima".to_owned(), num(e.maxima));
    p.insert("minima".to_owned(), num(e.minima));
    put_label(&mut p, label);
    p.insert("style".to_owned(), symbol.area_style());
    feature(id, geometry("Point", point(e.centre)), p)
}

/// `base`, or `base-2`, `base-3`… — the first not yet used.
fn unique_id(base: String, used: &mut HashSet<String>) -> String {
    let mut id = base.clone();
    let mut n = 2usize;
    while used.contains(&id) {
        id = format!("{base}-{n}");
        n += 1;
    }
    used.insert(id.clone());
    id
}

fn contact_json(c: &Contact<'_>) -> Value {
    let mut m = Map::new();
    m.insert("time".to_owned(), Value::String(fmt_time(&c.time)));
    let optional = [
        ("bearing", c.bearing),
        ("ambiguous_bearing", c.ambiguous_bearing),
        ("frequency", c.frequency),
        ("range", c.range),
    ];
    for (key, value) in optional {
        if let Some(v) = value {
            m.insert(key.to_owned(), num(v));
        }
    }
    if let Some(o) = c.origin {
        m.insert("origin".to_owned(), point(o));
    }
    if let Some(l) = c.label {
        m.insert("label".to_owned(), Value::from(l));
    }
    if let Some(c) = c.comment {
        m.insert("comment".to_owned(), Value::from(c));
    }
    Value::Object(m)
}

/// `SensorData`: `{name, color, contacts}` with contacts in time order.
fn sensor_json(mut s: Sensor<'_>) -> Value {
    s.contacts.sort_by_key(|c| c.time);
    let mut m = Map::new();
    m.insert("name".to_owned(), Value::from(s.name));
    m.insert("color".to_owned(), Value::from(s.colour));
    let contacts = s.contacts.iter().map(contact_json).collect();
    m.insert("contacts".to_owned(), Value::Array(contacts));
    Value::Object(m)
}

fn position_json(f: &Fix<'_>) -> Value {
    let mut m = Map::with_capacity(4);
    m.insert("time".to_owned(), Value::String(fmt_time(&f.time)));
    m.insert("course".to_owned(), num(f.course));
    m.insert("speed".to_owned(), num(f.speed));
    if !f.depth.is_nan() {
        m.insert("depth".to_owned(), num(f.depth));
    }
    Value::Object(m)
}

/// Below this many positions a track's JSON is built on the calling thread.
const PARALLEL_MIN_FIXES: usize = 1 << 16;

/// The LineString coordinates and the parallel `positions` entries of `fixes`, built on
/// several threads when there are many (allocation dominates, and the allocator scales).
fn coordinates_and_positions(fixes: &[Fix<'_>]) -> (Vec<Value>, Vec<Value>) {
    fn fill(coordinates: &mut [Value], positions: &mut [Value], fixes: &[Fix<'_>]) {
        for ((c, p), f) in coordinates.iter_mut().zip(positions.iter_mut()).zip(fixes) {
            *c = point([f.lon, f.lat]);
            *p = position_json(f);
        }
    }
    // Room for the copy of a lone position (see `track_feature`).
    let mut coordinates = Vec::with_capacity(fixes.len() + 1);
    let mut positions = Vec::with_capacity(fixes.len() + 1);
    let threads = if fixes.len() < PARALLEL_MIN_FIXES {
        1
    } else {
        std::thread::available_parallelism().map_or(1, |n| n.get().min(8))
    };
    if threads < 2 {
        for f in fixes {
            coordinates.push(point([f.lon, f.lat]));
            positions.push(position_json(f));
        }
        return (coordinates, positions);
    }
    // Each thread fills its own slice of the final vectors.
    coordinates.resize(fixes.len(), Value::Null);
    positions.resize(fixes.len(), Value::Null);
    let chunk = fixes.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let mut parts = coordinates
            .chunks_mut(chunk)
            .zip(positions.chunks_mut(chunk))
            .zip(fixes.chunks(chunk));
        let first = parts.next();
        for ((c, p), f) in parts {
            scope.spawn(move || fill(c, p, f));
        }
        if let Some(((c, p), f)) = first {
            fill(c, p, f);
        }
    });
    (coordinates, positions)
}

/// A TRACK feature shaped like Debrief's own importer output. `fixes` are in time order.
fn track_feature(id: String, track: Track<'_>, sensors: Vec<Value>) -> Value {
    let Track {
        name,
        symbol,
        fixes,
    } = track;
    let (mut coordinates, mut positions) = coordinates_and_positions(&fixes);
    // A LineString needs two positions: repeat a lone fix (as Debrief's importer does).
    let lone = fixes.len() == 1;
    if lone && let (Some(c), Some(p)) = (coordinates.first().cloned(), positions.first().cloned()) {
        coordinates.push(c);
        positions.push(p);
    }
    let mut p = props("TRACK");
    p.insert("platform_id".to_owned(), Value::from(name));
    p.insert("platform_name".to_owned(), Value::from(name));
    p.insert("track_type".to_owned(), Value::from("CONTACT"));
    if let (Some(first), Some(last)) = (fixes.first(), fixes.last()) {
        p.insert(
            "start_time".to_owned(),
            Value::String(fmt_time(&first.time)),
        );
        p.insert("end_time".to_owned(), Value::String(fmt_time(&last.time)));
    }
    p.insert("positions".to_owned(), Value::Array(positions));
    if fixes.iter().any(|f| f.label.is_some()) {
        let mut overrides: Vec<Value> = fixes
            .iter()
            .map(|f| match f.label {
                Some(l) => {
                    let mut o = Map::new();
                    o.insert("label".to_owned(), Value::from(l));
                    Value::Object(o)
                }
                None => Value::Null,
            })
            .collect();
        if lone {
            overrides.push(Value::Null);
        }
        p.insert(
            "position_style_overrides".to_owned(),
            Value::Array(overrides),
        );
    }
    let colour = symbol.colour;
    let mut line = Map::new();
    line.insert("color".to_owned(), Value::from(colour));
    let mut pt = Map::new();
    pt.insert("shape".to_owned(), Value::from("circle"));
    pt.insert("radius".to_owned(), num(3.0));
    pt.insert("fill_color".to_owned(), Value::from(colour));
    pt.insert("color".to_owned(), Value::from(colour));
    let mut style = Map::new();
    style.insert("line".to_owned(), Value::Object(line));
    style.insert("point".to_owned(), Value::Object(pt));
    p.insert("style".to_owned(), Value::Object(style));
    let mut dps = Map::new();
    dps.insert("show_symbol".to_owned(), Value::from(false));
    dps.insert("symbol".to_owned(), Value::from("circle"));
    dps.insert("show_label".to_owned(), Value::from(false));
    p.insert("default_position_style".to_owned(), Value::Object(dps));
    p.insert("symbol_interval".to_owned(), Value::from("PT15M"));
    p.insert("label_interval".to_owned(), Value::from("PT1H"));
    if !sensors.is_empty() {
        p.insert("sensors".to_owned(), Value::Array(sensors));
    }
    feature(id, geometry("LineString", Value::Array(coordinates)), p)
}

/// Assembles the import: tracks (first-seen order), narratives, annotations, then sensors whose
/// host track has no positions.
pub(super) fn finish(parser: Parser<'_>) -> RepImport {
    let Parser {
        mut tracks,
        narratives,
        shapes,
        sensors,
        bounds,
        mut span,
        position_count,
        ..
    } = parser;
    for track in &mut tracks {
        if !track.fixes.is_sorted_by_key(|f| f.time) {
            track.fixes.sort_by_key(|f| f.time);
        }
        if let (Some(first), Some(last)) = (track.fixes.first(), track.fixes.last()) {
            let (lo, hi) = span.unwrap_or((first.time, last.time));
            span = Some((lo.min(first.time), hi.max(last.time)));
        }
    }
    let mut used = HashSet::new();

    // Sensors grouped by host, in first-seen order.
    let mut by_host: Vec<(&str, Vec<Value>)> = Vec::new();
    let mut host_index: HashMap<&str, usize> = HashMap::new();
    for s in sensors {
        let i = *host_index.entry(s.host).or_insert_with(|| {
            by_host.push((s.host, Vec::new()));
            by_host.len() - 1
        });
        if let Some((_, list)) = by_host.get_mut(i) {
            list.push(sensor_json(s));
        }
    }

    let mut features = Vec::with_capacity(tracks.len() + narratives.len() + shapes.len());
    let mut platforms = Vec::with_capacity(tracks.len());
    let mut track_ids: HashMap<&str, String> = HashMap::with_capacity(tracks.len());
    for track in tracks {
        let id = unique_id(format!("track-{}", slug(track.name)), &mut used);
        let sensors = host_index
            .remove(track.name)
            .and_then(|i| by_host.get_mut(i))
            .map(|(_, list)| std::mem::take(list))
            .unwrap_or_default();
        platforms.push(PlatformRecord {
            id: track.name.to_owned(),
            ..PlatformRecord::default()
        });
        track_ids.insert(track.name, id.clone());
        features.push(track_feature(id, track, sensors));
    }

    for (n, narrative) in narratives.into_iter().enumerate() {
        let mut p = props("NARRATIVE");
        p.insert("time".to_owned(), Value::String(fmt_time(&narrative.time)));
        p.insert("text".to_owned(), Value::from(narrative.text));
        p.insert("track_name".to_owned(), Value::from(narrative.track));
        if let Some(id) = track_ids.get(narrative.track) {
            p.insert("track_id".to_owned(), Value::from(id.as_str()));
        }
        if let Some(t) = narrative.entry_type {
            p.insert("entry_type".to_owned(), Value::from(t));
        }
        features.push(feature(format!("narrative-{}", n + 1), Value::Null, p));
    }

    for (n, mut shape) in shapes.into_iter().enumerate() {
        if let Some(object) = shape.as_object_mut() {
            object.insert("id".to_owned(), Value::String(format!("shape-{}", n + 1)));
        }
        features.push(shape);
    }

    // Sensor data whose host track never had a position line.
    for (host, list) in by_host {
        if list.is_empty() || !host_index.contains_key(host) {
            continue;
        }
        let id = unique_id(format!("sensor-{}", slug(host)), &mut used);
        let mut p = props("SENSOR");
        p.insert("platform_id".to_owned(), Value::from(host));
        p.insert("sensors".to_owned(), Value::Array(list));
        features.push(feature(id, Value::Null, p));
    }

    RepImport {
        features,
        platforms,
        bbox: bounds.get(),
        time_span: span,
        position_count,
    }
}
