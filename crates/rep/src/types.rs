//! The typed result of an import, and its GeoJSON serialisation.
//!
//! Each feature type implements [`Serialize`] by hand, writing exactly the JSON Debrief's own
//! importer writes (keys in its order), straight from the parsed values: no intermediate
//! `serde_json::Value`, and no allocation per position (times are formatted on the stack).

use chrono::{DateTime, Utc};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};

use super::lex::Rfc3339;
use super::symbology::Symbol;

/// `[lon, lat]` in decimal degrees (GeoJSON order).
pub type LonLat = [f64; 2];

/// One position line of a track.
#[derive(Debug, Clone, PartialEq)]
pub struct Position {
    pub time: DateTime<Utc>,
    pub lon: f64,
    pub lat: f64,
    /// Degrees.
    pub course: f64,
    /// Knots.
    pub speed: f64,
    /// Metres; `None` when the file says `NaN`.
    pub depth: Option<f64>,
    /// The text after the depth, when there is any.
    pub label: Option<Box<str>>,
}

/// A TRACK feature: one per track name, in first-seen order.
#[derive(Debug, Clone, PartialEq)]
pub struct TrackFeature {
    /// `track-<slug>`, unique within the import.
    pub id: String,
    /// The track name: the feature's `platform_id` and `platform_name`.
    pub name: String,
    /// CSS colour from the colour letter of the track's first position line.
    pub colour: &'static str,
    /// Sorted by time. A lone position is written twice, so the LineString stays valid.
    pub positions: Vec<Position>,
    /// `properties.sensors`, written when not empty.
    pub sensors: Vec<SensorData>,
}

/// `SensorData`: the contacts of one sensor on one host track.
#[derive(Debug, Clone, PartialEq)]
pub struct SensorData {
    pub name: String,
    /// CSS colour from the symbology of the sensor's first line.
    pub colour: &'static str,
    /// Sorted by time.
    pub contacts: Vec<SensorContact>,
}

/// One `;SENSOR:` / `;SENSOR2:` line.
#[derive(Debug, Clone, PartialEq)]
pub struct SensorContact {
    pub time: DateTime<Utc>,
    /// Degrees.
    pub bearing: Option<f64>,
    /// Degrees.
    pub ambiguous_bearing: Option<f64>,
    /// Hz.
    pub frequency: Option<f64>,
    /// Degrees (`;SENSOR3:` only).
    pub bearing_accuracy: Option<f64>,
    /// Hz (`;SENSOR3:` only).
    pub frequency_accuracy: Option<f64>,
    /// Metres.
    pub range: Option<f64>,
    pub origin: Option<LonLat>,
    pub label: Option<String>,
    /// The text after `//` in the label.
    pub comment: Option<String>,
}

/// A SENSOR feature (null geometry): sensor data whose host track has no position lines.
#[derive(Debug, Clone, PartialEq)]
pub struct SensorFeature {
    /// `sensor-<slug>`, unique within the import.
    pub id: String,
    /// The host track name.
    pub platform_id: String,
    pub sensors: Vec<SensorData>,
}

/// A NARRATIVE feature (null geometry).
#[derive(Debug, Clone, PartialEq)]
pub struct NarrativeFeature {
    /// `narrative-<n>`, 1-based in file order.
    pub id: String,
    pub time: DateTime<Utc>,
    pub text: String,
    pub track_name: String,
    /// The id of the TRACK called `track_name`, when there is one.
    pub track_id: Option<String>,
    /// The type of a `;NARRATIVE2:` entry.
    pub entry_type: Option<String>,
}

/// An annotation feature.
#[derive(Debug, Clone, PartialEq)]
pub struct ShapeFeature {
    /// `shape-<n>`, 1-based in file order.
    pub id: String,
    /// The annotation's symbology code, which gives its `style`.
    pub symbol: Symbol,
    /// Written for the shapes that take one (not TEXT, TIMETEXT or PERIODTEXT).
    pub label: Option<String>,
    pub shape: Shape,
}

/// The geometry and specific properties of an annotation (distances in metres, angles in
/// degrees).
#[derive(Debug, Clone, PartialEq)]
pub enum Shape {
    /// `;CIRCLE:` — a Point at the centre.
    Circle { center: LonLat, radius: f64 },
    /// `;LINE:` — a two-point LineString.
    Line { from: LonLat, to: LonLat },
    /// `;RECT:` — the Polygon spanned by two opposite corners.
    Rectangle { a: LonLat, b: LonLat },
    /// `;POLY:` — a Polygon, closed on output when the last vertex is not the first.
    Poly { vertices: Vec<LonLat> },
    /// `;POLYLINE:` — a LineString.
    Polyline { vertices: Vec<LonLat> },
    /// `;VECTOR:` — a LineString from `origin` to `end` (computed on a spherical earth).
    Vector {
        origin: LonLat,
        end: LonLat,
        range: f64,
        bearing: f64,
    },
    /// `;TEXT:` — a Point.
    Text { at: LonLat, text: String },
    /// `;TIMETEXT:` — a Point.
    TimeText {
        at: LonLat,
        text: String,
        time: DateTime<Utc>,
    },
    /// `;PERIODTEXT:` — a Point.
    PeriodText {
        at: LonLat,
        text: String,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
    },
    /// `;ELLIPSE:` — a Point at the centre.
    Ellipse {
        center: LonLat,
        time: DateTime<Utc>,
        orientation: f64,
        maxima: f64,
        minima: f64,
    },
    /// `;ELLIPSE2:` — an ELLIPSE shown for an interval: a Point at the centre.
    PeriodEllipse {
        center: LonLat,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
        orientation: f64,
        maxima: f64,
        minima: f64,
    },
    /// `;WHEEL:` — a Point at the centre of a ring between two radii (metres).
    Wheel {
        center: LonLat,
        time: DateTime<Utc>,
        inner_radius: f64,
        outer_radius: f64,
    },
    /// `;BRG:` — a bearing line: a LineString from `origin` to `end`.
    Bearing {
        origin: LonLat,
        end: LonLat,
        time: DateTime<Utc>,
        bearing: f64,
        range: f64,
    },
}

impl Shape {
    /// The feature's `kind`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Circle { .. } => "CIRCLE",
            Self::Line { .. } => "LINE",
            Self::Rectangle { .. } => "RECTANGLE",
            Self::Poly { .. } => "POLY",
            Self::Polyline { .. } => "POLYLINE",
            Self::Vector { .. } => "VECTOR",
            Self::Text { .. } => "TEXT",
            Self::TimeText { .. } => "TIMETEXT",
            Self::PeriodText { .. } => "PERIODTEXT",
            Self::Ellipse { .. } | Self::PeriodEllipse { .. } => "ELLIPSE",
            Self::Wheel { .. } => "WHEEL",
            Self::Bearing { .. } => "BEARING",
        }
    }
}

// ---------------------------------------------------------------- serialisation helpers

/// `{"type": "Feature", "id", "geometry", "properties"}`.
fn feature<S: Serializer>(
    serializer: S,
    id: &str,
    geometry: &impl Serialize,
    properties: &impl Serialize,
) -> Result<S::Ok, S::Error> {
    let mut map = serializer.serialize_map(Some(4))?;
    map.serialize_entry("type", "Feature")?;
    map.serialize_entry("id", id)?;
    map.serialize_entry("geometry", geometry)?;
    map.serialize_entry("properties", properties)?;
    map.end()
}

/// A GeoJSON geometry: `{"type", "coordinates"}`.
struct Geometry<C>(&'static str, C);

impl<C: Serialize> Serialize for Geometry<C> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("type", self.0)?;
        map.serialize_entry("coordinates", &self.1)?;
        map.end()
    }
}

/// `null` (the geometry of NARRATIVE and SENSOR features).
const NULL: Option<()> = None;

/// A track's LineString coordinates (a lone position twice).
struct TrackCoordinates<'a>(&'a [Position]);

impl Serialize for TrackCoordinates<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let lone = self.0.len() == 1;
        let mut seq = serializer.serialize_seq(Some(self.0.len() + usize::from(lone)))?;
        for p in self.0 {
            seq.serialize_element(&[p.lon, p.lat])?;
        }
        if lone && let Some(p) = self.0.first() {
            seq.serialize_element(&[p.lon, p.lat])?;
        }
        seq.end()
    }
}

/// `{time, course, speed, depth?}`.
struct PositionJson<'a>(&'a Position);

impl Serialize for PositionJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let p = self.0;
        let mut map = serializer.serialize_map(Some(3 + usize::from(p.depth.is_some())))?;
        map.serialize_entry("time", &Rfc3339(&p.time))?;
        map.serialize_entry("course", &p.course)?;
        map.serialize_entry("speed", &p.speed)?;
        if let Some(depth) = p.depth {
            map.serialize_entry("depth", &depth)?;
        }
        map.end()
    }
}

/// `properties.positions`, parallel to the coordinates.
struct Positions<'a>(&'a [Position]);

impl Serialize for Positions<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let lone = self.0.len() == 1;
        let mut seq = serializer.serialize_seq(Some(self.0.len() + usize::from(lone)))?;
        for p in self.0 {
            seq.serialize_element(&PositionJson(p))?;
        }
        if lone && let Some(p) = self.0.first() {
            seq.serialize_element(&PositionJson(p))?;
        }
        seq.end()
    }
}

/// `properties.position_style_overrides`: `{label}` or null per position (and null for the
/// copy of a lone position).
pub(super) struct Overrides<'a>(pub &'a [Position]);

struct LabelOverride<'a>(&'a str);

impl Serialize for LabelOverride<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry("label", self.0)?;
        map.end()
    }
}

impl Serialize for Overrides<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let lone = self.0.len() == 1;
        let mut seq = serializer.serialize_seq(Some(self.0.len() + usize::from(lone)))?;
        for p in self.0 {
            seq.serialize_element(&p.label.as_deref().map(LabelOverride))?;
        }
        if lone {
            seq.serialize_element(&NULL)?;
        }
        seq.end()
    }
}

/// A track's `style`: `{line: {color}, point: {shape, radius, fill_color, color}}`.
pub(super) struct TrackStyle(pub &'static str);

struct LineColour(&'static str);

impl Serialize for LineColour {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry("color", self.0)?;
        map.end()
    }
}

struct TrackPoint(&'static str);

impl Serialize for TrackPoint {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(4))?;
        map.serialize_entry("shape", "circle")?;
        map.serialize_entry("radius", &3.0)?;
        map.serialize_entry("fill_color", self.0)?;
        map.serialize_entry("color", self.0)?;
        map.end()
    }
}

impl Serialize for TrackStyle {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("line", &LineColour(self.0))?;
        map.serialize_entry("point", &TrackPoint(self.0))?;
        map.end()
    }
}

/// `default_position_style`: `{show_symbol: false, symbol: "circle", show_label: false}`.
struct DefaultPositionStyle;

impl Serialize for DefaultPositionStyle {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(3))?;
        map.serialize_entry("show_symbol", &false)?;
        map.serialize_entry("symbol", "circle")?;
        map.serialize_entry("show_label", &false)?;
        map.end()
    }
}

// ---------------------------------------------------------------- features

struct TrackProperties<'a>(&'a TrackFeature);

impl Serialize for TrackProperties<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let t = self.0;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("kind", "TRACK")?;
        map.serialize_entry("platform_id", &t.name)?;
        map.serialize_entry("platform_name", &t.name)?;
        map.serialize_entry("track_type", "CONTACT")?;
        if let (Some(first), Some(last)) = (t.positions.first(), t.positions.last()) {
            map.serialize_entry("start_time", &Rfc3339(&first.time))?;
            map.serialize_entry("end_time", &Rfc3339(&last.time))?;
        }
        map.serialize_entry("positions", &Positions(&t.positions))?;
        if t.positions.iter().any(|p| p.label.is_some()) {
            map.serialize_entry("position_style_overrides", &Overrides(&t.positions))?;
        }
        map.serialize_entry("style", &TrackStyle(t.colour))?;
        map.serialize_entry("default_position_style", &DefaultPositionStyle)?;
        map.serialize_entry("symbol_interval", "PT15M")?;
        map.serialize_entry("label_interval", "PT1H")?;
        if !t.sensors.is_empty() {
            map.serialize_entry("sensors", &t.sensors)?;
        }
        map.end()
    }
}

impl Serialize for TrackFeature {
    /// A TRACK feature shaped like Debrief's own importer output.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let geometry = Geometry("LineString", TrackCoordinates(&self.positions));
        feature(serializer, &self.id, &geometry, &TrackProperties(self))
    }
}

impl Serialize for SensorContact {
    /// `{time, bearing?, ambiguous_bearing?, frequency?, range?, origin?, label?, comment?}`.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("time", &Rfc3339(&self.time))?;
        let optional = [
            ("bearing", self.bearing),
            ("ambiguous_bearing", self.ambiguous_bearing),
            ("frequency", self.frequency),
            ("bearing_accuracy", self.bearing_accuracy),
            ("frequency_accuracy", self.frequency_accuracy),
            ("range", self.range),
        ];
        for (key, value) in optional {
            if let Some(v) = value {
                map.serialize_entry(key, &v)?;
            }
        }
        if let Some(o) = &self.origin {
            map.serialize_entry("origin", o)?;
        }
        if let Some(l) = &self.label {
            map.serialize_entry("label", l)?;
        }
        if let Some(c) = &self.comment {
            map.serialize_entry("comment", c)?;
        }
        map.end()
    }
}

impl Serialize for SensorData {
    /// `{name, color, contacts}`.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(3))?;
        map.serialize_entry("name", &self.name)?;
        map.serialize_entry("color", self.colour)?;
        map.serialize_entry("contacts", &self.contacts)?;
        map.end()
    }
}

struct SensorProperties<'a>(&'a SensorFeature);

impl Serialize for SensorProperties<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(3))?;
        map.serialize_entry("kind", "SENSOR")?;
        map.serialize_entry("platform_id", &self.0.platform_id)?;
        map.serialize_entry("sensors", &self.0.sensors)?;
        map.end()
    }
}

impl Serialize for SensorFeature {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        feature(serializer, &self.id, &NULL, &SensorProperties(self))
    }
}

struct NarrativeProperties<'a>(&'a NarrativeFeature);

impl Serialize for NarrativeProperties<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let n = self.0;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("kind", "NARRATIVE")?;
        map.serialize_entry("time", &Rfc3339(&n.time))?;
        map.serialize_entry("text", &n.text)?;
        map.serialize_entry("track_name", &n.track_name)?;
        if let Some(id) = &n.track_id {
            map.serialize_entry("track_id", id)?;
        }
        if let Some(t) = &n.entry_type {
            map.serialize_entry("entry_type", t)?;
        }
        map.end()
    }
}

impl Serialize for NarrativeFeature {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        feature(serializer, &self.id, &NULL, &NarrativeProperties(self))
    }
}

/// A POLY's ring: the vertices, closed when the last is not the first.
struct ClosedRing<'a>(&'a [LonLat]);

impl Serialize for ClosedRing<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let close = match (self.0.first(), self.0.last()) {
            (Some(first), Some(last)) if first != last => Some(first),
            _ => None,
        };
        let mut seq =
            serializer.serialize_seq(Some(self.0.len() + usize::from(close.is_some())))?;
        for v in self.0 {
            seq.serialize_element(v)?;
        }
        if let Some(first) = close {
            seq.serialize_element(first)?;
        }
        seq.end()
    }
}

struct ShapeGeometry<'a>(&'a Shape);

impl Serialize for ShapeGeometry<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Shape::Circle { center: at, .. }
            | Shape::Ellipse { center: at, .. }
            | Shape::PeriodEllipse { center: at, .. }
            | Shape::Wheel { center: at, .. }
            | Shape::Text { at, .. }
            | Shape::TimeText { at, .. }
            | Shape::PeriodText { at, .. } => Geometry("Point", at).serialize(serializer),
            Shape::Line { from, to } => Geometry("LineString", [from, to]).serialize(serializer),
            Shape::Rectangle { a, b } => {
                let ring = [*a, [b[0], a[1]], *b, [a[0], b[1]], *a];
                Geometry("Polygon", [ring]).serialize(serializer)
            }
            Shape::Poly { vertices } => {
                Geometry("Polygon", [ClosedRing(vertices)]).serialize(serializer)
            }
            Shape::Polyline { vertices } => Geometry("LineString", vertices).serialize(serializer),
            Shape::Vector { origin, end, .. } | Shape::Bearing { origin, end, .. } => {
                Geometry("LineString", [origin, end]).serialize(serializer)
            }
        }
    }
}

struct ShapeProperties<'a>(&'a ShapeFeature);

impl Serialize for ShapeProperties<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let f = self.0;
        let symbol = &f.symbol;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("kind", f.shape.kind())?;
        let label = |map: &mut S::SerializeMap| match &f.label {
            Some(l) => map.serialize_entry("label", l),
            None => Ok(()),
        };
        match &f.shape {
            Shape::Text { text, .. } => {
                map.serialize_entry("text", text)?;
                map.serialize_entry("style", &symbol.point_style())?;
            }
            Shape::TimeText { text, time, .. } => {
                map.serialize_entry("text", text)?;
                map.serialize_entry("time", &Rfc3339(time))?;
                map.serialize_entry("style", &symbol.point_style())?;
            }
            Shape::PeriodText {
                text, start, end, ..
            } => {
                map.serialize_entry("text", text)?;
                map.serialize_entry("start_time", &Rfc3339(start))?;
                map.serialize_entry("end_time", &Rfc3339(end))?;
                map.serialize_entry("style", &symbol.point_style())?;
            }
            Shape::Circle { center, radius } => {
                map.serialize_entry("center", center)?;
                map.serialize_entry("radius", radius)?;
                label(&mut map)?;
                map.serialize_entry("style", &symbol.area_style())?;
            }
            Shape::Line { .. } => {
                label(&mut map)?;
                map.serialize_entry("style", &symbol.line_style())?;
            }
            Shape::Rectangle { .. } => {
                label(&mut map)?;
                map.serialize_entry("style", &symbol.area_style())?;
            }
            Shape::Poly { vertices } => {
                map.serialize_entry("vertex_count", &vertices.len())?;
                label(&mut map)?;
                map.serialize_entry("style", &symbol.area_style())?;
            }
            Shape::Polyline { vertices } => {
                map.serialize_entry("vertex_count", &vertices.len())?;
                label(&mut map)?;
                map.serialize_entry("style", &symbol.line_style())?;
            }
            Shape::Vector {
                origin,
                range,
                bearing,
                ..
            } => {
                map.serialize_entry("origin", origin)?;
                map.serialize_entry("range", range)?;
                map.serialize_entry("bearing", bearing)?;
                label(&mut map)?;
                map.serialize_entry("style", &symbol.line_style())?;
            }
            Shape::Ellipse {
                center,
                time,
                orientation,
                maxima,
                minima,
            } => {
                map.serialize_entry("time", &Rfc3339(time))?;
                map.serialize_entry("center", center)?;
                map.serialize_entry("orientation", orientation)?;
                map.serialize_entry("maxima", maxima)?;
                map.serialize_entry("minima", minima)?;
                label(&mut map)?;
                map.serialize_entry("style", &symbol.area_style())?;
            }
            Shape::PeriodEllipse {
                center,
                start,
                end,
                orientation,
                maxima,
                minima,
            } => {
                map.serialize_entry("start_time", &Rfc3339(start))?;
                map.serialize_entry("end_time", &Rfc3339(end))?;
                map.serialize_entry("center", center)?;
                map.serialize_entry("orientation", orientation)?;
                map.serialize_entry("maxima", maxima)?;
                map.serialize_entry("minima", minima)?;
                label(&mut map)?;
                map.serialize_entry("style", &symbol.area_style())?;
            }
            Shape::Wheel {
                center,
                time,
                inner_radius,
                outer_radius,
            } => {
                map.serialize_entry("time", &Rfc3339(time))?;
                map.serialize_entry("center", center)?;
                map.serialize_entry("inner_radius", inner_radius)?;
                map.serialize_entry("outer_radius", outer_radius)?;
                label(&mut map)?;
                map.serialize_entry("style", &symbol.area_style())?;
            }
            Shape::Bearing {
                origin,
                time,
                bearing,
                range,
                ..
            } => {
                map.serialize_entry("time", &Rfc3339(time))?;
                map.serialize_entry("origin", origin)?;
                map.serialize_entry("bearing", bearing)?;
                map.serialize_entry("range", range)?;
                label(&mut map)?;
                map.serialize_entry("style", &symbol.line_style())?;
            }
        }
        map.end()
    }
}

impl Serialize for ShapeFeature {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        feature(
            serializer,
            &self.id,
            &ShapeGeometry(&self.shape),
            &ShapeProperties(self),
        )
    }
}

/// One `;SENSORARC:` line: where a sensor on a host track covers, for an interval, as sectors
/// relative to the host's heading. The geometry is null: where a sector lies depends on the
/// host's position and course at each moment of the interval.
#[derive(Debug, Clone, PartialEq)]
pub struct SensorArcFeature {
    /// `sensorarc-<n>`, 1-based in file order.
    pub id: String,
    /// The host track name.
    pub track_name: String,
    /// The id of the TRACK called `track_name`, when there is one.
    pub track_id: Option<String>,
    /// The sensor's name (the line's label).
    pub sensor_name: String,
    /// `#RRGGBB` from the line's symbology.
    pub colour: &'static str,
    /// Start of the interval; `None` for `NULL` (open-ended).
    pub start: Option<DateTime<Utc>>,
    /// End of the interval; `None` for `NULL` (open-ended).
    pub end: Option<DateTime<Utc>>,
    /// The covered sectors, in line order (at least one).
    pub arcs: Vec<ArcSector>,
}

/// One sector of a sensor arc: bearings in degrees relative to the host's heading (clockwise
/// from `left` to `right`), ranges in metres.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ArcSector {
    pub left: f64,
    pub right: f64,
    pub min_range: f64,
    pub max_range: f64,
}

impl Serialize for ArcSector {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(4))?;
        map.serialize_entry("left_bearing", &self.left)?;
        map.serialize_entry("right_bearing", &self.right)?;
        map.serialize_entry("min_range", &self.min_range)?;
        map.serialize_entry("max_range", &self.max_range)?;
        map.end()
    }
}

struct SensorArcProperties<'a>(&'a SensorArcFeature);

impl Serialize for SensorArcProperties<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let a = self.0;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("kind", "SENSOR_ARC")?;
        map.serialize_entry("track_name", &a.track_name)?;
        if let Some(id) = &a.track_id {
            map.serialize_entry("track_id", id)?;
        }
        map.serialize_entry("sensor_name", &a.sensor_name)?;
        map.serialize_entry("color", a.colour)?;
        if let Some(t) = &a.start {
            map.serialize_entry("start_time", &Rfc3339(t))?;
        }
        if let Some(t) = &a.end {
            map.serialize_entry("end_time", &Rfc3339(t))?;
        }
        map.serialize_entry("arcs", &a.arcs)?;
        map.end()
    }
}

impl Serialize for SensorArcFeature {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        feature(serializer, &self.id, &NULL, &SensorArcProperties(self))
    }
}

// ---------------------------------------------------------------- dynamic shapes

/// One `;DYNAMIC_RECT:`, `;DYNAMIC_CIRCLE:` or `;DYNAMIC_POLY:` line: the state of a named
/// shape from its time until the next state of the same name (or, for the last state, until
/// the file's latest time).
#[derive(Debug, Clone, PartialEq)]
pub struct DynamicShapeFeature {
    /// `dynamic-<n>`, 1-based in file order.
    pub id: String,
    /// The shape's name (the quoted name on the line): the states of one shape share it.
    pub name: String,
    pub symbol: Symbol,
    pub label: Option<String>,
    pub start: DateTime<Utc>,
    /// Set by the importer once every state of the name is known.
    pub end: DateTime<Utc>,
    pub shape: DynamicShape,
}

/// The geometry of a dynamic shape state (the static shapes' conventions: metres, degrees).
#[derive(Debug, Clone, PartialEq)]
pub enum DynamicShape {
    /// `;DYNAMIC_RECT:` — the Polygon spanned by two opposite corners.
    Rectangle { a: LonLat, b: LonLat },
    /// `;DYNAMIC_CIRCLE:` — a Point at the centre, radius in metres.
    Circle { center: LonLat, radius: f64 },
    /// `;DYNAMIC_POLY:` — a closed Polygon.
    Poly { vertices: Vec<LonLat> },
}

impl DynamicShape {
    /// The feature's `kind`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Rectangle { .. } => "DYNAMIC_RECT",
            Self::Circle { .. } => "DYNAMIC_CIRCLE",
            Self::Poly { .. } => "DYNAMIC_POLY",
        }
    }
}

struct DynamicGeometry<'a>(&'a DynamicShape);

impl Serialize for DynamicGeometry<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            DynamicShape::Rectangle { a, b } => {
                ShapeGeometry(&Shape::Rectangle { a: *a, b: *b }).serialize(serializer)
            }
            DynamicShape::Circle { center, .. } => Geometry("Point", center).serialize(serializer),
            DynamicShape::Poly { vertices } => {
                Geometry("Polygon", [ClosedRing(vertices)]).serialize(serializer)
            }
        }
    }
}

struct DynamicProperties<'a>(&'a DynamicShapeFeature);

impl Serialize for DynamicProperties<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let f = self.0;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("kind", f.shape.kind())?;
        map.serialize_entry("name", &f.name)?;
        map.serialize_entry("start_time", &Rfc3339(&f.start))?;
        map.serialize_entry("end_time", &Rfc3339(&f.end))?;
        match &f.shape {
            DynamicShape::Circle { center, radius } => {
                map.serialize_entry("center", center)?;
                map.serialize_entry("radius", radius)?;
            }
            DynamicShape::Poly { vertices } => {
                map.serialize_entry("vertex_count", &vertices.len())?;
            }
            DynamicShape::Rectangle { .. } => {}
        }
        if let Some(l) = &f.label {
            map.serialize_entry("label", l)?;
        }
        map.serialize_entry("style", &f.symbol.area_style())?;
        map.end()
    }
}

impl Serialize for DynamicShapeFeature {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        feature(
            serializer,
            &self.id,
            &DynamicGeometry(&self.shape),
            &DynamicProperties(self),
        )
    }
}

// ---------------------------------------------------------------- TMA solutions

/// Where a TMA solution puts the target.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TmaFix {
    /// `;TMA_POS:` — an absolute position.
    Position(LonLat),
    /// `;TMA_RB:` — a bearing (degrees true) and range (metres) from the host track.
    RangeBearing { bearing: f64, range: f64 },
}

/// The uncertainty ellipse of a TMA solution (orientation in degrees from north, axes in
/// metres).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TmaEllipse {
    pub orientation: f64,
    pub maxima: f64,
    pub minima: f64,
}

/// One `;TMA_POS:` or `;TMA_RB:` line: a target motion analysis solution at one time.
#[derive(Debug, Clone, PartialEq)]
pub struct TmaFeature {
    /// `tma-<n>`, 1-based in file order.
    pub id: String,
    /// The host (ownship) track the solution was made from.
    pub track_name: String,
    /// The id of the TRACK called `track_name`, when there is one.
    pub track_id: Option<String>,
    /// The solution's name (e.g. `TRACK_060`).
    pub solution_name: String,
    pub colour: &'static str,
    pub time: DateTime<Utc>,
    pub fix: TmaFix,
    /// For a range/bearing solution: the host's position at `time` (interpolated between its
    /// positions), when the host track covers that time.
    pub origin: Option<LonLat>,
    /// The target's position: the `;TMA_POS:` position, or `origin` moved by the range and
    /// bearing; `None` (null geometry) when there is no origin.
    pub at: Option<LonLat>,
    pub ellipse: Option<TmaEllipse>,
    /// Degrees.
    pub course: f64,
    /// Knots.
    pub speed: f64,
    /// Metres.
    pub depth: f64,
    pub label: Option<String>,
}

impl Serialize for TmaEllipse {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(3))?;
        map.serialize_entry("orientation", &self.orientation)?;
        map.serialize_entry("maxima", &self.maxima)?;
        map.serialize_entry("minima", &self.minima)?;
        map.end()
    }
}

struct TmaProperties<'a>(&'a TmaFeature);

impl Serialize for TmaProperties<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let t = self.0;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("kind", "TMA_SOLUTION")?;
        let tma_type = match t.fix {
            TmaFix::Position(_) => "TMA_POS",
            TmaFix::RangeBearing { .. } => "TMA_RB",
        };
        map.serialize_entry("tma_type", tma_type)?;
        map.serialize_entry("solution_name", &t.solution_name)?;
        map.serialize_entry("track_name", &t.track_name)?;
        if let Some(id) = &t.track_id {
            map.serialize_entry("track_id", id)?;
        }
        map.serialize_entry("time", &Rfc3339(&t.time))?;
        map.serialize_entry("course", &t.course)?;
        map.serialize_entry("speed", &t.speed)?;
        map.serialize_entry("depth", &t.depth)?;
        if let TmaFix::RangeBearing { bearing, range } = t.fix {
            map.serialize_entry("bearing", &bearing)?;
            map.serialize_entry("range", &range)?;
        }
        if let Some(o) = &t.origin {
            map.serialize_entry("origin", o)?;
        }
        if let Some(e) = &t.ellipse {
            map.serialize_entry("ellipse", e)?;
        }
        if let Some(l) = &t.label {
            map.serialize_entry("label", l)?;
        }
        map.serialize_entry("color", t.colour)?;
        map.end()
    }
}

impl Serialize for TmaFeature {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.at {
            Some(at) => feature(
                serializer,
                &self.id,
                &Geometry("Point", at),
                &TmaProperties(self),
            ),
            None => feature(serializer, &self.id, &NULL, &TmaProperties(self)),
        }
    }
}

// ---------------------------------------------------------------- display formats

/// A `;FORMAT_FIX:`, `;FORMAT_TRACK_NAME_AT_END:` or `;FORMAT_LAYER_HIDE:` line: how Debrief
/// should display the plot (null geometry; kept so the plot loses nothing of the file).
#[derive(Debug, Clone, PartialEq)]
pub struct FormatFeature {
    /// `format-<n>`, 1-based in file order.
    pub id: String,
    /// `FORMAT_FIX`, `FORMAT_TRACK_NAME_AT_END` or `FORMAT_LAYER_HIDE`.
    pub directive: &'static str,
    /// The format's name.
    pub name: String,
    /// FORMAT_FIX: the attribute shown (e.g. `SYMBOL`, `LABEL`, `ARROW`).
    pub attribute: Option<String>,
    /// FORMAT_FIX: the track it applies to (`None`: every track).
    pub track_name: Option<String>,
    /// FORMAT_FIX: the symbology it applies to (`None`: any).
    pub symbology: Option<String>,
    /// FORMAT_FIX: whether at regular times.
    pub regular_intervals: Option<bool>,
    /// FORMAT_FIX: the interval in milliseconds.
    pub interval_ms: Option<u64>,
    /// FORMAT_TRACK_NAME_AT_END / FORMAT_LAYER_HIDE: the tracks or layers named.
    pub layers: Vec<String>,
}

struct FormatProperties<'a>(&'a FormatFeature);

impl Serialize for FormatProperties<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let f = self.0;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("kind", "FORMAT")?;
        map.serialize_entry("directive", f.directive)?;
        map.serialize_entry("name", &f.name)?;
        if let Some(a) = &f.attribute {
            map.serialize_entry("attribute", a)?;
        }
        if let Some(t) = &f.track_name {
            map.serialize_entry("track_name", t)?;
        }
        if let Some(s) = &f.symbology {
            map.serialize_entry("symbology", s)?;
        }
        if let Some(r) = f.regular_intervals {
            map.serialize_entry("regular_intervals", &r)?;
        }
        if let Some(i) = f.interval_ms {
            map.serialize_entry("interval_ms", &i)?;
        }
        if f.directive != "FORMAT_FIX" {
            map.serialize_entry("layers", &f.layers)?;
        }
        map.end()
    }
}

impl Serialize for FormatFeature {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        feature(serializer, &self.id, &NULL, &FormatProperties(self))
    }
}
