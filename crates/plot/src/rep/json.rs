//! Streaming an import as a pretty-printed GeoJSON FeatureCollection.
//!
//! The output is byte for byte what `serde_json::to_writer_pretty` writes for
//! `{"type": "FeatureCollection", "features": import.features()}`. TRACK features, which hold
//! nearly all the bytes, are written by hand here: their positions and coordinates as fixed
//! text around numbers and times (numbers formatted by serde_json's own `write_f64`, times on
//! the stack). Everything else goes through the features' `Serialize` impls with [`Pretty`], a
//! faster twin of serde_json's `PrettyFormatter` that can start at any indentation level.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::ser::{CompactFormatter, Formatter};

use super::RepImport;
use super::lex::{TIME_LEN, fmt_time, write_time};
use super::types::{Overrides, Position, TrackFeature, TrackStyle};

/// Output is collected in a buffer and handed to the writer in pieces of about this size.
const CHUNK: usize = 1 << 16;

/// Writes `import` as a FeatureCollection to `w` (see the module docs).
pub(super) fn write_feature_collection<W: Write>(import: &RepImport, mut w: W) -> io::Result<()> {
    let mut out = Vec::with_capacity(2 * CHUNK);
    out.extend_from_slice(b"{\n  \"type\": \"FeatureCollection\",\n  \"features\": ");
    if import.feature_count() == 0 {
        out.extend_from_slice(b"[]");
    } else {
        out.push(b'[');
        let mut first = true;
        let mut next = |out: &mut Vec<u8>| {
            out.extend_from_slice(if first { b"\n    " } else { b",\n    " });
            first = false;
        };
        for track in &import.tracks {
            next(&mut out);
            write_track(&mut out, &mut w, track)?;
        }
        let others = (import.narratives.iter().map(|f| f as &dyn ErasedFeature))
            .chain(import.shapes.iter().map(|f| f as &dyn ErasedFeature))
            .chain(import.sensors.iter().map(|f| f as &dyn ErasedFeature));
        for feature in others {
            next(&mut out);
            feature.write(&mut out, 2)?;
            flush_if_full(&mut out, &mut w)?;
        }
        out.extend_from_slice(b"\n  ]");
    }
    out.extend_from_slice(b"\n}");
    w.write_all(&out)
}

/// A feature serialised with [`Pretty`] (object-safe, so the kinds can share one loop).
trait ErasedFeature {
    fn write(&self, out: &mut Vec<u8>, level: usize) -> io::Result<()>;
}

impl<T: Serialize> ErasedFeature for T {
    fn write(&self, out: &mut Vec<u8>, level: usize) -> io::Result<()> {
        pretty(out, self, level)
    }
}

/// `value` pretty-printed as if its first line were indented `level` times.
fn pretty(out: &mut Vec<u8>, value: &impl Serialize, level: usize) -> io::Result<()> {
    let mut serializer = serde_json::Serializer::with_formatter(out, Pretty::at(level));
    value.serialize(&mut serializer).map_err(io::Error::from)
}

fn flush_if_full<W: Write>(out: &mut Vec<u8>, w: &mut W) -> io::Result<()> {
    if out.len() >= CHUNK {
        w.write_all(out)?;
        out.clear();
    }
    Ok(())
}

/// A JSON string (escaped as serde_json escapes it).
fn string(out: &mut Vec<u8>, s: &str) -> io::Result<()> {
    serde_json::to_writer(out, s).map_err(io::Error::from)
}

/// A JSON number as serde_json writes an `f64` (`null` when not finite).
fn number(out: &mut Vec<u8>, v: f64) -> io::Result<()> {
    if v.is_finite() {
        CompactFormatter.write_f64(out, v)
    } else {
        out.extend_from_slice(b"null");
        Ok(())
    }
}

/// A time as a JSON string (it never needs escaping).
fn time(out: &mut Vec<u8>, t: &chrono::DateTime<chrono::Utc>) {
    let mut buf = [0; TIME_LEN];
    out.push(b'"');
    match write_time(t, &mut buf) {
        Some(text) => out.extend_from_slice(text.as_bytes()),
        None => out.extend_from_slice(fmt_time(t).as_bytes()),
    }
    out.push(b'"');
}

/// One `[lon, lat]` of the LineString, as an element of the coordinates array.
fn coordinate(out: &mut Vec<u8>, p: &Position, first: bool) -> io::Result<()> {
    // Elements sit five levels deep (10 spaces), their numbers six (12).
    out.extend_from_slice(if first {
        b"\n          [\n            "
    } else {
        b",\n          [\n            "
    });
    number(out, p.lon)?;
    out.extend_from_slice(b",\n            ");
    number(out, p.lat)?;
    out.extend_from_slice(b"\n          ]");
    Ok(())
}

/// One `{time, course, speed, depth?}` of `properties.positions`.
fn position(out: &mut Vec<u8>, p: &Position, first: bool) -> io::Result<()> {
    out.extend_from_slice(if first {
        b"\n          {\n            \"time\": "
    } else {
        b",\n          {\n            \"time\": "
    });
    time(out, &p.time);
    out.extend_from_slice(b",\n            \"course\": ");
    number(out, p.course)?;
    out.extend_from_slice(b",\n            \"speed\": ");
    number(out, p.speed)?;
    if let Some(depth) = p.depth {
        out.extend_from_slice(b",\n            \"depth\": ");
        number(out, depth)?;
    }
    out.extend_from_slice(b"\n          }");
    Ok(())
}

/// A TRACK feature as an element of the `features` array (two levels deep); the same text as
/// its `Serialize` impl gives there.
fn write_track<W: Write>(out: &mut Vec<u8>, w: &mut W, t: &TrackFeature) -> io::Result<()> {
    // A lone position is written twice, so the LineString has two points.
    let lone = t.positions.len() == 1;
    let repeated = t
        .positions
        .iter()
        .chain(t.positions.first().filter(|_| lone));

    out.extend_from_slice(b"{\n      \"type\": \"Feature\",\n      \"id\": ");
    string(out, &t.id)?;
    out.extend_from_slice(
        b",\n      \"geometry\": {\n        \"type\": \"LineString\",\n        \"coordinates\": ",
    );
    if t.positions.is_empty() {
        out.extend_from_slice(b"[]");
    } else {
        out.push(b'[');
        for (i, p) in repeated.clone().enumerate() {
            coordinate(out, p, i == 0)?;
            flush_if_full(out, w)?;
        }
        out.extend_from_slice(b"\n        ]");
    }
    out.extend_from_slice(
        b"\n      },\n      \"properties\": {\n        \"kind\": \"TRACK\",\n        \"platform_id\": ",
    );
    string(out, &t.name)?;
    out.extend_from_slice(b",\n        \"platform_name\": ");
    string(out, &t.name)?;
    out.extend_from_slice(b",\n        \"track_type\": \"CONTACT\"");
    if let (Some(first), Some(last)) = (t.positions.first(), t.positions.last()) {
        out.extend_from_slice(b",\n        \"start_time\": ");
        time(out, &first.time);
        out.extend_from_slice(b",\n        \"end_time\": ");
        time(out, &last.time);
    }
    out.extend_from_slice(b",\n        \"positions\": ");
    if t.positions.is_empty() {
        out.extend_from_slice(b"[]");
    } else {
        out.push(b'[');
        for (i, p) in repeated.enumerate() {
            position(out, p, i == 0)?;
            flush_if_full(out, w)?;
        }
        out.extend_from_slice(b"\n        ]");
    }
    if t.positions.iter().any(|p| p.label.is_some()) {
        out.extend_from_slice(b",\n        \"position_style_overrides\": ");
        pretty(out, &Overrides(&t.positions), 4)?;
        flush_if_full(out, w)?;
    }
    out.extend_from_slice(b",\n        \"style\": ");
    pretty(out, &TrackStyle(t.colour), 4)?;
    out.extend_from_slice(
        b",\n        \"default_position_style\": {\n          \"show_symbol\": false,\n          \"symbol\": \"circle\",\n          \"show_label\": false\n        },\n        \"symbol_interval\": \"PT15M\",\n        \"label_interval\": \"PT1H\"",
    );
    if !t.sensors.is_empty() {
        out.extend_from_slice(b",\n        \"sensors\": ");
        pretty(out, &t.sensors, 4)?;
    }
    out.extend_from_slice(b"\n      }\n    }");
    flush_if_full(out, w)
}

/// `",\n"` and enough spaces for [`MAX_FAST_LEVEL`] levels of two spaces.
const BREAK: [u8; 2 + 2 * MAX_FAST_LEVEL] = {
    let mut bytes = [b' '; 2 + 2 * MAX_FAST_LEVEL];
    bytes[0] = b',';
    bytes[1] = b'\n';
    bytes
};

/// Deeper levels fall back to writing the indent in pieces.
const MAX_FAST_LEVEL: usize = 32;

/// `serde_json::ser::PrettyFormatter::with_indent(b"  ")`, byte for byte, optionally starting
/// `level` levels deep.
#[derive(Debug, Default)]
pub(super) struct Pretty {
    level: usize,
    has_value: bool,
}

impl Pretty {
    /// For a value whose first line is indented `level` times.
    pub(super) fn at(level: usize) -> Self {
        Self {
            level,
            has_value: false,
        }
    }
}

/// Writes `",\n"` (or `"\n"` when `comma` is false) and the indent for `level`.
fn line_break<W: ?Sized + io::Write>(w: &mut W, comma: bool, level: usize) -> io::Result<()> {
    let start = usize::from(!comma);
    match BREAK.get(start..2 + 2 * level) {
        Some(bytes) => w.write_all(bytes),
        None => {
            w.write_all(if comma { b",\n" } else { b"\n" })?;
            for _ in 0..level {
                w.write_all(b"  ")?;
            }
            Ok(())
        }
    }
}

impl Formatter for Pretty {
    #[inline]
    fn begin_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.level += 1;
        self.has_value = false;
        w.write_all(b"[")
    }

    #[inline]
    fn end_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.level = self.level.saturating_sub(1);
        if self.has_value {
            line_break(w, false, self.level)?;
        }
        w.write_all(b"]")
    }

    #[inline]
    fn begin_array_value<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        line_break(w, !first, self.level)
    }

    #[inline]
    fn end_array_value<W: ?Sized + io::Write>(&mut self, _w: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }

    #[inline]
    fn begin_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.level += 1;
        self.has_value = false;
        w.write_all(b"{")
    }

    #[inline]
    fn end_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.level = self.level.saturating_sub(1);
        if self.has_value {
            line_break(w, false, self.level)?;
        }
        w.write_all(b"}")
    }

    #[inline]
    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        line_break(w, !first, self.level)
    }

    #[inline]
    fn begin_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b": ")
    }

    #[inline]
    fn end_object_value<W: ?Sized + io::Write>(&mut self, _w: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde::Serialize;
    use serde_json::json;

    use super::Pretty;

    fn ours(v: &serde_json::Value) -> Vec<u8> {
        let mut out = Vec::new();
        let mut ser = serde_json::Serializer::with_formatter(&mut out, Pretty::default());
        v.serialize(&mut ser).unwrap();
        out
    }

    #[test]
    fn matches_serde_json_pretty_at_every_depth() {
        let mut v = json!({"a": [1, 2.5, "x\n\"", null, true, [], {}], "b": {"c": [[]]}});
        for _ in 0..40 {
            assert_eq!(ours(&v), serde_json::to_vec_pretty(&v).unwrap());
            v = json!({"deeper": [v, {"k": []}], "n": -0.0});
        }
        for scalar in [json!(1), json!("s"), json!([]), json!({})] {
            assert_eq!(ours(&scalar), serde_json::to_vec_pretty(&scalar).unwrap());
        }
    }
}
