//! Streaming an import as a GeoJSON FeatureCollection, compact or pretty-printed.
//!
//! The output is byte for byte what `serde_json::to_writer` (compact) or
//! `serde_json::to_writer_pretty` (pretty) writes for
//! `{"type": "FeatureCollection", "features": import.features()}`. TRACK features, which hold
//! nearly all the bytes, are written by hand here: their positions and coordinates as fixed
//! text around numbers and times (numbers as serde_json formats an `f64` — by its own
//! `write_f64`, or directly for whole numbers and tenths, which come out the same — and times
//! on the stack). Everything else goes through the features' `Serialize` impls (with [`Pretty`], a
//! faster twin of serde_json's `PrettyFormatter` that can start at any indentation level, or
//! serde_json's compact formatter). Every fixed piece of text exists in both layouts, chosen at
//! compile time by the `P` (pretty) parameter, so the compact path pays nothing for the other.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::ser::{CompactFormatter, Formatter};

use super::lex::{TIME_LEN, fmt_time, write_time};
use super::types::{Overrides, Position, TrackFeature, TrackStyle};
use super::{JsonLayout, RepImport};

/// For a writer, output is collected in a buffer and handed over in pieces of about this size.
const CHUNK: usize = 1 << 16;

/// Where the text goes: the buffer it is written into is either the whole result or flushed
/// to a writer in chunks.
trait Sink {
    fn flush_if_full(&mut self, out: &mut Vec<u8>) -> io::Result<()>;
}

/// The buffer is the result.
struct InMemory;

impl Sink for InMemory {
    #[inline]
    fn flush_if_full(&mut self, _out: &mut Vec<u8>) -> io::Result<()> {
        Ok(())
    }
}

/// The buffer is handed to a writer every [`CHUNK`] bytes.
struct Chunked<W>(W);

impl<W: Write> Sink for Chunked<W> {
    #[inline]
    fn flush_if_full(&mut self, out: &mut Vec<u8>) -> io::Result<()> {
        if out.len() >= CHUNK {
            self.0.write_all(out)?;
            out.clear();
        }
        Ok(())
    }
}

/// One of two byte strings: the pretty layout's (`P`) or the compact one's.
macro_rules! lit {
    ($p:expr, $pretty:expr, $compact:expr) => {
        if $p { &$pretty[..] } else { &$compact[..] }
    };
}

/// Writes `import` as a FeatureCollection to `w` (see the module docs).
pub(super) fn write_feature_collection<W: Write>(
    import: &RepImport,
    w: W,
    layout: JsonLayout,
) -> io::Result<()> {
    let mut out = Vec::with_capacity(2 * CHUNK);
    let mut sink = Chunked(w);
    match layout {
        JsonLayout::Pretty => write::<true, _>(import, &mut out, &mut sink, None)?,
        JsonLayout::Compact => write::<false, _>(import, &mut out, &mut sink, None)?,
    }
    sink.0.write_all(&out)
}

/// The FeatureCollection in memory, in a buffer allocated once (from the number of positions).
pub(super) fn feature_collection_bytes(
    import: &RepImport,
    layout: JsonLayout,
) -> io::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(capacity_hint(import, layout));
    let split = tail_split(import);
    match layout {
        JsonLayout::Pretty => write::<true, _>(import, &mut out, &mut InMemory, split)?,
        JsonLayout::Compact => write::<false, _>(import, &mut out, &mut InMemory, split)?,
    }
    Ok(out)
}

/// [`feature_collection_bytes`] with the tracks split at `split` (tests pin that the split
/// changes no byte).
#[cfg(test)]
pub(super) fn bytes_with_split(
    import: &RepImport,
    layout: JsonLayout,
    split: Option<usize>,
) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    match layout {
        JsonLayout::Pretty => write::<true, _>(import, &mut out, &mut InMemory, split)?,
        JsonLayout::Compact => write::<false, _>(import, &mut out, &mut InMemory, split)?,
    }
    Ok(out)
}

/// Roughly what the FeatureCollection takes: a position takes about 240 bytes pretty, 110
/// compact (its coordinates and its `positions` entry; labels add more, and then the buffer
/// grows); the other features are few (about a kilobyte each, a track's fixed properties
/// included).
fn capacity_hint(import: &RepImport, layout: JsonLayout) -> usize {
    let per_position = match layout {
        JsonLayout::Pretty => 256,
        JsonLayout::Compact => 112,
    };
    per_position * (import.position_count + import.tracks.len())
        + 1024 * import.feature_count()
        + 4096
}

/// Imports with at least this many positions have their tracks written on two threads (in
/// memory only)…
const PARALLEL_MIN_POSITIONS: usize = 50_000;

/// …where the machine has two cores or more: the index of the first track the second thread
/// writes (about half the positions on each side), or `None` to write them all on this one.
fn tail_split(import: &RepImport) -> Option<usize> {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    if cores < 2 || import.position_count < PARALLEL_MIN_POSITIONS || import.tracks.len() < 2 {
        return None;
    }
    let half = import.position_count / 2;
    let mut seen = 0;
    for (i, t) in import.tracks.iter().enumerate() {
        seen += t.positions.len();
        if seen >= half {
            return Some((i + 1).min(import.tracks.len() - 1));
        }
    }
    None
}

/// The tracks from `tail` on, each preceded by its separator, as they follow earlier tracks in
/// the `features` array.
fn tracks_text<const P: bool>(tail: &[TrackFeature], capacity: usize) -> io::Result<Vec<u8>> {
    let mut buf = Vec::with_capacity(capacity);
    for track in tail {
        buf.extend_from_slice(lit!(P, b",\n    ", b","));
        write_track::<P, InMemory>(&mut buf, &mut InMemory, track)?;
    }
    Ok(buf)
}

/// Writes the FeatureCollection; with `split`, the tracks from that index on are written on
/// a second thread while this one writes the others, and appended in order (the bytes are the
/// same either way).
fn write<const P: bool, S: Sink>(
    import: &RepImport,
    out: &mut Vec<u8>,
    sink: &mut S,
    split: Option<usize>,
) -> io::Result<()> {
    out.extend_from_slice(lit!(
        P,
        b"{\n  \"type\": \"FeatureCollection\",\n  \"features\": ",
        b"{\"type\":\"FeatureCollection\",\"features\":"
    ));
    if import.feature_count() == 0 {
        out.extend_from_slice(b"[]");
    } else {
        out.push(b'[');
        let mut first = true;
        let mut next = |out: &mut Vec<u8>| {
            out.extend_from_slice(match (first, P) {
                (true, true) => b"\n    ",
                (false, true) => b",\n    ",
                (true, false) => b"",
                (false, false) => b",",
            });
            first = false;
        };
        let (head, tail) = import.tracks.split_at(
            split
                .unwrap_or(import.tracks.len())
                .min(import.tracks.len()),
        );
        std::thread::scope(|scope| -> io::Result<()> {
            let tail_job = (!tail.is_empty()).then(|| {
                let positions: usize = tail.iter().map(|t| t.positions.len()).sum();
                let per_position = if P { 256 } else { 112 };
                scope.spawn(move || tracks_text::<P>(tail, per_position * positions + 4096))
            });
            for track in head {
                next(out);
                write_track::<P, S>(out, sink, track)?;
            }
            if let Some(job) = tail_job {
                let text = job
                    .join()
                    .unwrap_or_else(|e| std::panic::resume_unwind(e))?;
                out.extend_from_slice(&text);
                sink.flush_if_full(out)?;
            }
            Ok(())
        })?;
        let others = (import.narratives.iter().map(|f| f as &dyn ErasedFeature))
            .chain(import.shapes.iter().map(|f| f as &dyn ErasedFeature))
            .chain(import.sensors.iter().map(|f| f as &dyn ErasedFeature))
            .chain(import.sensor_arcs.iter().map(|f| f as &dyn ErasedFeature))
            .chain(
                import
                    .dynamic_shapes
                    .iter()
                    .map(|f| f as &dyn ErasedFeature),
            )
            .chain(import.tma.iter().map(|f| f as &dyn ErasedFeature))
            .chain(import.formats.iter().map(|f| f as &dyn ErasedFeature));
        for feature in others {
            next(out);
            feature.write(out, P, 2)?;
            sink.flush_if_full(out)?;
        }
        out.extend_from_slice(lit!(P, b"\n  ]", b"]"));
    }
    out.extend_from_slice(lit!(P, b"\n}", b"}"));
    Ok(())
}

/// A feature serialised with [`Pretty`] or compactly (object-safe, so the kinds can share one
/// loop).
trait ErasedFeature {
    fn write(&self, out: &mut Vec<u8>, pretty: bool, level: usize) -> io::Result<()>;
}

impl<T: Serialize> ErasedFeature for T {
    fn write(&self, out: &mut Vec<u8>, pretty: bool, level: usize) -> io::Result<()> {
        value(out, self, pretty, level)
    }
}

/// `value` pretty-printed as if its first line were indented `level` times, or compact.
fn value(out: &mut Vec<u8>, value: &impl Serialize, pretty: bool, level: usize) -> io::Result<()> {
    if pretty {
        let mut serializer = serde_json::Serializer::with_formatter(out, Pretty::at(level));
        value.serialize(&mut serializer).map_err(io::Error::from)
    } else {
        serde_json::to_writer(out, value).map_err(io::Error::from)
    }
}

/// A JSON string (escaped as serde_json escapes it).
fn string(out: &mut Vec<u8>, s: &str) -> io::Result<()> {
    serde_json::to_writer(out, s).map_err(io::Error::from)
}

/// A JSON number as serde_json writes an `f64` (`null` when not finite).
fn number(out: &mut Vec<u8>, v: f64) -> io::Result<()> {
    if let Some(tenths) = tenths(v) {
        // What serde_json's shortest round-trip formatting writes for these, directly.
        let mut buf = [0u8; 24];
        let mut at = buf.len() - 2;
        buf[at] = b'.';
        buf[at + 1] = b'0' + (tenths % 10) as u8;
        let mut whole = tenths / 10;
        loop {
            at -= 1;
            buf[at] = b'0' + (whole % 10) as u8;
            whole /= 10;
            if whole == 0 {
                break;
            }
        }
        if v.is_sign_negative() {
            out.push(b'-');
        }
        out.extend_from_slice(&buf[at..]);
        Ok(())
    } else if v.is_finite() {
        CompactFormatter.write_f64(out, v)
    } else {
        out.extend_from_slice(b"null");
        Ok(())
    }
}

/// `|v| × 10` when `v` is a whole number or has one decimal (exactly: `v` is the double nearest
/// to that many tenths) and `|v| < 10⁹` — courses, speeds and depths usually are. Its shortest
/// round-trip text is then the tenths with a point before the last digit (`245.0`, `12.5`,
/// `-0.0`), which is what serde_json writes; anything else (including NaN) gives `None`.
fn tenths(v: f64) -> Option<u64> {
    let a = v.abs();
    if a.is_nan() || a >= 1e9 {
        return None;
    }
    // Whole numbers (the commonest) need no division. The casts are exact below 2⁵³.
    let whole = a as u64;
    if whole as f64 == a {
        return Some(whole * 10);
    }
    // Nearest integer (`f64::round` can be a libm call).
    let tenths = (a * 10.0 + 0.5) as u64;
    // `tenths / 10` is correctly rounded, so this holds exactly when `v` is that decimal.
    (tenths as f64 / 10.0 == a).then_some(tenths)
}

/// A time as a JSON string (it never needs escaping).
fn time(out: &mut Vec<u8>, t: &chrono::DateTime<chrono::Utc>) {
    let mut buf = [0; TIME_LEN];
    out.push(b'"');
    match write_time(t, &mut buf) {
        Some(text) => out.extend_from_slice(text),
        None => out.extend_from_slice(fmt_time(t).as_bytes()),
    }
    out.push(b'"');
}

/// One `[lon, lat]` of the LineString, as an element of the coordinates array.
fn coordinate<const P: bool>(out: &mut Vec<u8>, p: &Position, first: bool) -> io::Result<()> {
    // Pretty, elements sit five levels deep (10 spaces), their numbers six (12).
    if !first {
        out.push(b',');
    }
    out.extend_from_slice(lit!(P, b"\n          [\n            ", b"["));
    number(out, p.lon)?;
    out.extend_from_slice(lit!(P, b",\n            ", b","));
    number(out, p.lat)?;
    out.extend_from_slice(lit!(P, b"\n          ]", b"]"));
    Ok(())
}

/// One `{time, course, speed, depth?}` of `properties.positions`.
fn position<const P: bool>(out: &mut Vec<u8>, p: &Position, first: bool) -> io::Result<()> {
    if !first {
        out.push(b',');
    }
    out.extend_from_slice(lit!(
        P,
        b"\n          {\n            \"time\": ",
        b"{\"time\":"
    ));
    time(out, &p.time);
    out.extend_from_slice(lit!(P, b",\n            \"course\": ", b",\"course\":"));
    number(out, p.course)?;
    out.extend_from_slice(lit!(P, b",\n            \"speed\": ", b",\"speed\":"));
    number(out, p.speed)?;
    if let Some(depth) = p.depth {
        out.extend_from_slice(lit!(P, b",\n            \"depth\": ", b",\"depth\":"));
        number(out, depth)?;
    }
    out.extend_from_slice(lit!(P, b"\n          }", b"}"));
    Ok(())
}

/// A TRACK feature as an element of the `features` array (two levels deep); the same text as
/// its `Serialize` impl gives there.
fn write_track<const P: bool, S: Sink>(
    out: &mut Vec<u8>,
    sink: &mut S,
    t: &TrackFeature,
) -> io::Result<()> {
    // A lone position is written twice, so the LineString has two points.
    let lone = t.positions.len() == 1;
    let repeated = t
        .positions
        .iter()
        .chain(t.positions.first().filter(|_| lone));

    out.extend_from_slice(lit!(
        P,
        b"{\n      \"type\": \"Feature\",\n      \"id\": ",
        b"{\"type\":\"Feature\",\"id\":"
    ));
    string(out, &t.id)?;
    out.extend_from_slice(lit!(
        P,
        b",\n      \"geometry\": {\n        \"type\": \"LineString\",\n        \"coordinates\": ",
        b",\"geometry\":{\"type\":\"LineString\",\"coordinates\":"
    ));
    if t.positions.is_empty() {
        out.extend_from_slice(b"[]");
    } else {
        out.push(b'[');
        for (i, p) in repeated.clone().enumerate() {
            coordinate::<P>(out, p, i == 0)?;
            sink.flush_if_full(out)?;
        }
        out.extend_from_slice(lit!(P, b"\n        ]", b"]"));
    }
    out.extend_from_slice(lit!(
        P,
        b"\n      },\n      \"properties\": {\n        \"kind\": \"TRACK\",\n        \"platform_id\": ",
        b"},\"properties\":{\"kind\":\"TRACK\",\"platform_id\":"
    ));
    string(out, &t.name)?;
    out.extend_from_slice(lit!(
        P,
        b",\n        \"platform_name\": ",
        b",\"platform_name\":"
    ));
    string(out, &t.name)?;
    out.extend_from_slice(lit!(
        P,
        b",\n        \"track_type\": \"CONTACT\"",
        b",\"track_type\":\"CONTACT\""
    ));
    if let (Some(first), Some(last)) = (t.positions.first(), t.positions.last()) {
        out.extend_from_slice(lit!(P, b",\n        \"start_time\": ", b",\"start_time\":"));
        time(out, &first.time);
        out.extend_from_slice(lit!(P, b",\n        \"end_time\": ", b",\"end_time\":"));
        time(out, &last.time);
    }
    out.extend_from_slice(lit!(P, b",\n        \"positions\": ", b",\"positions\":"));
    let mut labelled = false;
    if t.positions.is_empty() {
        out.extend_from_slice(b"[]");
    } else {
        out.push(b'[');
        for (i, p) in repeated.enumerate() {
            position::<P>(out, p, i == 0)?;
            labelled |= p.label.is_some();
            sink.flush_if_full(out)?;
        }
        out.extend_from_slice(lit!(P, b"\n        ]", b"]"));
    }
    if labelled {
        out.extend_from_slice(lit!(
            P,
            b",\n        \"position_style_overrides\": ",
            b",\"position_style_overrides\":"
        ));
        value(out, &Overrides(&t.positions), P, 4)?;
        sink.flush_if_full(out)?;
    }
    out.extend_from_slice(lit!(P, b",\n        \"style\": ", b",\"style\":"));
    value(out, &TrackStyle(t.colour), P, 4)?;
    out.extend_from_slice(lit!(
        P,
        b",\n        \"default_position_style\": {\n          \"show_symbol\": false,\n          \"symbol\": \"circle\",\n          \"show_label\": false\n        },\n        \"symbol_interval\": \"PT15M\",\n        \"label_interval\": \"PT1H\"",
        b",\"default_position_style\":{\"show_symbol\":false,\"symbol\":\"circle\",\"show_label\":false},\"symbol_interval\":\"PT15M\",\"label_interval\":\"PT1H\""
    ));
    if !t.sensors.is_empty() {
        out.extend_from_slice(lit!(P, b",\n        \"sensors\": ", b",\"sensors\":"));
        value(out, &t.sensors, P, 4)?;
    }
    out.extend_from_slice(lit!(P, b"\n      }\n    }", b"}}"));
    sink.flush_if_full(out)
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

    fn serde_number(v: f64) -> String {
        serde_json::to_string(&v).unwrap()
    }

    fn our_number(v: f64) -> String {
        let mut out = Vec::new();
        super::number(&mut out, v).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn numbers_match_serde_json() {
        let special = [
            0.0,
            -0.0,
            0.1,
            -0.1,
            0.05,
            1.0,
            4.5,
            12.25,
            359.9,
            1e9 - 0.1,
            1e9,
            1e9 + 0.5,
            99_999_999.9,
            123_456_789.1,
            1e15,
            1e16,
            1e-7,
            f64::MAX,
            f64::MIN_POSITIVE,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            -21.583_333_333_333_332,
            0.914_4 * 2000.0,
        ];
        for v in special {
            assert_eq!(our_number(v), serde_number(v), "{v:?}");
        }
    }

    proptest::proptest! {
        #[test]
        fn tenths_match_serde_json(t in -20_000_000_000i64..20_000_000_000, scale in 0u32..4) {
            let v = t as f64 / 10f64.powi(scale as i32);
            proptest::prop_assert_eq!(our_number(v), serde_number(v));
        }

        #[test]
        fn any_double_matches_serde_json(bits: u64) {
            let v = f64::from_bits(bits);
            proptest::prop_assert_eq!(our_number(v), serde_number(v));
        }

        #[test]
        fn parsed_decimals_match_serde_json(s in "-?[0-9]{1,10}\\.[0-9]{0,3}") {
            let v: f64 = s.parse().unwrap();
            proptest::prop_assert_eq!(our_number(v), serde_number(v));
        }
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
