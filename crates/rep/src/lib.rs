//! Debrief REP ("Replay") import: pure parsing of REP text into GeoJSON features.
//!
//! [`parse_rep`] takes the text of one `.rep` file and returns a [`RepImport`]: typed features
//! (tracks, narratives, annotations, sensors) that serialise to GeoJSON `Feature` objects shaped
//! like Debrief's own importer output (see `core--boat1/features.geojson` in the Debrief
//! sample store), plus the platforms, bounding box and time span a STAC item needs. It does no
//! I/O. [`RepImport::write_feature_collection`] streams the GeoJSON `FeatureCollection` to a
//! writer without building `serde_json::Value`s; [`RepImport::features`] builds them, for
//! callers that want them.
//!
//! # Input
//!
//! * Position lines: `YYMMDD HHMMSS[.sss] TRACK SYMBOL LAT_D LAT_M LAT_S N|S LON_D LON_M LON_S
//!   E|W COURSE SPEED DEPTH [LABEL…]`. Years 50–99 are 19xx, 00–49 are 20xx; `YYYYMMDD` is also
//!   accepted. Track names containing spaces are enclosed in double quotes. Degrees, minutes
//!   and seconds may all be decimal; a hemisphere glued to the longitude degrees (`N021`) is
//!   accepted, as is a depth of `NaN` (then the position has no `depth`). Fields are separated
//!   by any ASCII whitespace; CRLF and a missing final newline are fine.
//! * `;` lines: `;NARRATIVE:`, `;NARRATIVE2:`, `;TEXT:`, `;TIMETEXT:`, `;PERIODTEXT:`,
//!   `;CIRCLE:`, `;LINE:`, `;RECT:`, `;POLY:`, `;POLYLINE:`, `;VECTOR:`, `;ELLIPSE:`,
//!   `;ELLIPSE2:`, `;WHEEL:`, `;BRG:`, `;SENSOR:`, `;SENSOR2:`, `;SENSOR3:`, `;SENSORARC`
//!   (with or without its colon, or as `;SENSOR_ARC:` — legacy Debrief writes all three),
//!   `;DYNAMIC_RECT:`, `;DYNAMIC_CIRCLE:`, `;DYNAMIC_POLY:`, `;TMA_POS:`, `;TMA_RB:`,
//!   `;FORMAT_FIX:`, `;FORMAT_TRACK_NAME_AT_END:` and `;FORMAT_LAYER_HIDE:` (command names are
//!   matched case-insensitively). `;;` lines and `;` followed by anything but a letter are
//!   comments. Any other `;KEYWORD` line (Debrief's plug-in kinds such as `;TA_COG_ABS:`,
//!   `;TRACKSPLIT`, …) is not imported but never dropped silently: [`RepImport::unhandled`]
//!   counts each kind with its first line number. The property list of every kind is in
//!   `docs/rep-features.md`.
//! * Bytes: [`decode_rep`] reads UTF-8 and falls back to Windows-1252 (a superset of
//!   Latin-1's printable characters, what legacy Debrief files were written in).
//! * Blank lines are skipped. Any malformed line aborts the import with a [`RepError`].
//!
//! # Output
//!
//! Features come in this order, each group in file order: TRACKs (first-seen order),
//! NARRATIVEs, annotations, SENSOR features for sensor data whose host track has no
//! position lines, SENSOR_ARCs, dynamic shapes (`dynamic-<n>`), TMA_SOLUTIONs (`tma-<n>`),
//! then FORMATs (`format-<n>`). Ids are deterministic and unique within one import:
//!
//! * `track-<slug>` (lowercase ASCII letters/digits, other runs → `-`; a clash gets `-2`, `-3`…),
//! * `narrative-<n>` and `shape-<n>` (1-based, in file order),
//! * `sensor-<slug>` for the orphan sensor features,
//! * `sensorarc-<n>` (1-based, in file order).
//!
//! TRACK properties: `kind`, `platform_id` and `platform_name` (both the track name),
//! `track_type` (always `CONTACT`, as Debrief's importer does: REP carries no ownship flag),
//! `start_time`, `end_time`, `positions` (`{time, course, speed, depth}` parallel to the
//! LineString coordinates, sorted by time), `style` (`line.color` and `point` from the colour
//! letter of the track's first position), `default_position_style`, `symbol_interval` `PT15M`,
//! `label_interval` `PT1H`; `position_style_overrides` (`{label}` or null per position) when any
//! position line has a label; `sensors` (`SensorData[]`) when the file has sensor lines for the
//! track. A track with a single position repeats it so the LineString stays valid.
//!
//! Sensor lines (`;SENSOR:` `DATE TIME TRACK SYMBOL ORIGIN|NULL BEARING RANGE|NULL SENSOR
//! [LABEL]`, `;SENSOR2:` `… ORIGIN|NULL BEARING|NULL AMBIGUOUS_BEARING|NULL FREQUENCY|NULL
//! RANGE|NULL SENSOR [LABEL]`, field order as in legacy Debrief's importers) become
//! `SensorData` entries `{name, color, contacts}` in the host track's `properties.sensors`,
//! one per sensor name in first-seen order, contacts sorted by time. A contact has `time` and,
//! when given, `bearing`, `ambiguous_bearing`, `frequency` (Hz), `range` (metres), `origin`
//! (`[lon, lat]`), `label` and `comment` (text after `//` in the label). Sensor data for a track
//! name without position lines becomes a `SENSOR` feature (null geometry) with `platform_id`
//! and `sensors`.
//!
//! SENSOR_ARC features (`;SENSORARC:` `START_DATE START_TIME|NULL END_DATE END_TIME|NULL TRACK
//! SYMBOL (LEFT RIGHT INNER OUTER)… SENSOR`, read as Debrief reads it; null geometry, since a
//! sector's place depends on the host's position and heading at each time) have `track_name`,
//! `track_id` (when the track has position lines), `sensor_name`, `color`, `start_time` and
//! `end_time` (each absent for `NULL`) and `arcs`: `{left_bearing, right_bearing, min_range,
//! max_range}` per sector, bearings in degrees relative to the host's heading, ranges in metres.
//!
//! Annotations (`shape-<n>`, each with `style` from its symbology code and `label` when given):
//! CIRCLE (Point, `center`, `radius`), LINE (LineString), RECTANGLE from `;RECT:` (Polygon),
//! POLY (Polygon, closed, `vertex_count`), POLYLINE (LineString, `vertex_count`), VECTOR
//! (LineString origin → end on a spherical earth, `origin`, `range`, `bearing`), TEXT (Point,
//! `text`), TIMETEXT (Point, `text`, `time`), PERIODTEXT (Point, `text`, `start_time`,
//! `end_time`), ELLIPSE (Point at the centre, `center`, `time`, `orientation`, `maxima`,
//! `minima`). NARRATIVE features (`narrative-<n>`, null geometry) have `time`, `text`,
//! `track_name`, `track_id` (the id of the TRACK with that name, when there is one) and, for
//! `;NARRATIVE2:`, `entry_type`.
//!
//! Times are RFC 3339 with `+00:00`, with fractional seconds only when non-zero (3, 6 or 9
//! digits). Distances in REP annotations and sensor ranges are yards; they are converted to
//! metres (`radius`, `range`, `maxima`, `minima`).
//!
//! Inputs of 4 MiB and more are parsed on up to 8 scoped threads when
//! `std::thread::available_parallelism` is at least 4 (on smaller machines the parse stays on
//! the calling thread, which is faster there); the output is identical to a single-threaded
//! parse. Call it from a blocking context (e.g. `spawn_blocking`).

#![warn(unreachable_pub)]
mod error;
mod json;
mod lex;
mod output;
mod parser;
mod symbology;
#[cfg(test)]
mod tests;
mod types;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

pub use error::RepError;
pub use symbology::{DEFAULT_COLOUR, Symbol, colour_for_letter};
pub use types::{
    ArcSector, DynamicShape, DynamicShapeFeature, FormatFeature, LonLat, NarrativeFeature,
    Position, SensorArcFeature, SensorContact, SensorData, SensorFeature, Shape, ShapeFeature,
    TmaEllipse, TmaFeature, TmaFix, TrackFeature,
};

/// A platform seen in the file: one per track. Only `id` (the track name) is known from REP;
/// the other fields are for callers that enrich it from a platform registry.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlatformRecord {
    /// The track name; equals the TRACK feature's `platform_id`.
    pub id: String,
    /// Human-readable name (REP has none, so the importer leaves it `None`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// ISO 3166 alpha-2 code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nationality: Option<String>,
    /// e.g. `surface/warship/frigate/type23`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vessel_class: Option<String>,
    /// Leaf of the class, e.g. `type23`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vessel_type: Option<String>,
    /// Parent of the type, e.g. `frigate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vessel_role: Option<String>,
    /// `surface`, `subsurface` or `unknown`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
}

/// The result of importing one REP file. Its features, in output order, are the
/// [`tracks`](Self::tracks), [`narratives`](Self::narratives), [`shapes`](Self::shapes) and
/// [`sensors`](Self::sensors); each serialises to one GeoJSON `Feature` (see the module docs
/// for ids and properties).
#[derive(Debug, Clone, PartialEq)]
pub struct RepImport {
    /// TRACK features, in first-seen order.
    pub tracks: Vec<TrackFeature>,
    /// NARRATIVE features, in file order.
    pub narratives: Vec<NarrativeFeature>,
    /// Annotation features, in file order.
    pub shapes: Vec<ShapeFeature>,
    /// SENSOR features for sensor data whose host track has no position lines.
    pub sensors: Vec<SensorFeature>,
    /// SENSOR_ARC features, one per `;SENSORARC:` line, in file order.
    pub sensor_arcs: Vec<SensorArcFeature>,
    /// DYNAMIC_RECT / DYNAMIC_CIRCLE / DYNAMIC_POLY features, one per line, in file order.
    pub dynamic_shapes: Vec<DynamicShapeFeature>,
    /// TMA_SOLUTION features, one per `;TMA_POS:` / `;TMA_RB:` line, in file order.
    pub tma: Vec<TmaFeature>,
    /// FORMAT features (display directives), one per line, in file order.
    pub formats: Vec<FormatFeature>,
    /// One per track, in the same order as the TRACK features.
    pub platforms: Vec<PlatformRecord>,
    /// `[west, south, east, north]` over every coordinate of every feature geometry (and sensor
    /// origins); `None` when there is no geometry.
    pub bbox: Option<[f64; 4]>,
    /// Earliest and latest time in the file (positions, narratives, sensor contacts and timed
    /// annotations); `None` when there is none.
    pub time_span: Option<(DateTime<Utc>, DateTime<Utc>)>,
    /// Number of position lines read.
    pub position_count: usize,
    /// The `;KEYWORD` line kinds the importer skipped, in first-seen order: what the features
    /// do not show. Empty when every line was read. At most 100 kinds are named; the lines of
    /// any further kind are counted in one last entry, `(any other ;KEYWORD)`.
    pub unhandled: Vec<Unhandled>,
}

/// One kind of `;KEYWORD` line that [`parse_rep`] does not import (e.g. `;SENSORARC`), with how
/// many such lines the file has and where the first one is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unhandled {
    /// The keyword, upper-cased, with its `;` and without its `:` (e.g. `;SENSORARC`); one over
    /// 64 bytes is clipped there and ends `…(N bytes)`.
    pub keyword: String,
    /// How many lines of this kind the file has.
    pub count: usize,
    /// The 1-based line number of the first one.
    pub first_line: usize,
}

impl std::fmt::Display for Unhandled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} line(s) of kind {} not imported (first at line {})",
            self.count, self.keyword, self.first_line
        )
    }
}

impl RepImport {
    /// How many features the import has.
    pub fn feature_count(&self) -> usize {
        self.tracks.len()
            + self.narratives.len()
            + self.shapes.len()
            + self.sensors.len()
            + self.sensor_arcs.len()
            + self.dynamic_shapes.len()
            + self.tma.len()
            + self.formats.len()
    }

    /// How many features of each `kind` the import has, in output order of first appearance
    /// (e.g. `[("TRACK", 2), ("NARRATIVE", 19), ("SENSOR_ARC", 47)]`): what `toolgate import`
    /// reports, so a person sees what the plot holds.
    pub fn kind_counts(&self) -> Vec<(&'static str, usize)> {
        let mut counts: Vec<(&'static str, usize)> = Vec::new();
        let mut add = |kind: &'static str| match counts.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, n)) => *n += 1,
            None => counts.push((kind, 1)),
        };
        self.tracks.iter().for_each(|_| add("TRACK"));
        self.narratives.iter().for_each(|_| add("NARRATIVE"));
        self.shapes.iter().for_each(|s| add(s.shape.kind()));
        self.sensors.iter().for_each(|_| add("SENSOR"));
        self.sensor_arcs.iter().for_each(|_| add("SENSOR_ARC"));
        self.dynamic_shapes.iter().for_each(|d| add(d.shape.kind()));
        self.tma.iter().for_each(|_| add("TMA_SOLUTION"));
        self.formats.iter().for_each(|_| add("FORMAT"));
        counts
    }

    /// How many sensor contacts (`;SENSOR:`, `;SENSOR2:`, `;SENSOR3:` lines) the import holds,
    /// on tracks and on SENSOR features.
    pub fn contact_count(&self) -> usize {
        let on_tracks = self.tracks.iter().flat_map(|t| &t.sensors);
        let orphans = self.sensors.iter().flat_map(|s| &s.sensors);
        on_tracks.chain(orphans).map(|s| s.contacts.len()).sum()
    }

    /// The features as `serde_json::Value`s, in output order (built on demand: this allocates
    /// several times per position; prefer [`write_feature_collection`](Self::write_feature_collection)
    /// to write them out).
    pub fn features(&self) -> Vec<serde_json::Value> {
        fn value(f: &impl Serialize) -> serde_json::Value {
            // Our features only have string keys, so this cannot fail.
            serde_json::to_value(f).unwrap_or_default()
        }
        let mut out = Vec::with_capacity(self.feature_count());
        out.extend(self.tracks.iter().map(value));
        out.extend(self.narratives.iter().map(value));
        out.extend(self.shapes.iter().map(value));
        out.extend(self.sensors.iter().map(value));
        out.extend(self.sensor_arcs.iter().map(value));
        out.extend(self.dynamic_shapes.iter().map(value));
        out.extend(self.tma.iter().map(value));
        out.extend(self.formats.iter().map(value));
        out
    }

    /// Writes `{"type": "FeatureCollection", "features": [...]}` in `layout` with no trailing
    /// newline — byte for byte what `serde_json::to_writer` (compact) or
    /// `serde_json::to_writer_pretty` (pretty, a two-space indent) writes for that object built
    /// from [`features`](Self::features), without building any `Value` and without allocating
    /// per position. The text is handed to `w` in pieces of about 64 KiB, so `w` needs no
    /// buffering.
    ///
    /// # Errors
    ///
    /// Whatever `w` returns.
    pub fn write_feature_collection<W: std::io::Write>(
        &self,
        w: W,
        layout: JsonLayout,
    ) -> std::io::Result<()> {
        json::write_feature_collection(self, w, layout)
    }

    /// [`write_feature_collection`](Self::write_feature_collection)'s text in a `Vec`,
    /// allocated once at about the right size and written straight into (no chunks to copy):
    /// what `toolgate import` writes to `features.geojson`.
    ///
    /// # Errors
    ///
    /// None in practice: serialising the features cannot fail.
    pub fn feature_collection_bytes(&self, layout: JsonLayout) -> std::io::Result<Vec<u8>> {
        json::feature_collection_bytes(self, layout)
    }
}

/// How the GeoJSON of an import is laid out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum JsonLayout {
    /// No whitespace (serde_json's compact form): about 2.3× smaller than pretty for tracks,
    /// and what `toolgate import` writes unless asked for `--pretty`.
    #[default]
    Compact,
    /// Two-space indent, one value per line (serde_json's pretty form): for reading by eye or
    /// diffing.
    Pretty,
}

/// The text encoding [`decode_rep`] read a file's bytes as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextEncoding {
    /// Valid UTF-8 (the default; a leading byte-order mark is allowed).
    Utf8,
    /// Not valid UTF-8, so decoded as Windows-1252: legacy Debrief tools wrote REP files in
    /// the Windows code page, whose narratives carry `é`, `°` and the like.
    Windows1252,
}

/// Decodes a REP file's bytes: UTF-8 when they are valid UTF-8, else Windows-1252 (every byte
/// sequence decodes, so nothing is refused as a whole; a mis-guess shows as odd characters in
/// the text, not as a lost file).
pub fn decode_rep(bytes: &[u8]) -> (std::borrow::Cow<'_, str>, TextEncoding) {
    match std::str::from_utf8(bytes) {
        Ok(text) => (std::borrow::Cow::Borrowed(text), TextEncoding::Utf8),
        Err(_) => {
            let (text, _) = encoding_rs::WINDOWS_1252.decode_without_bom_handling(bytes);
            (text, TextEncoding::Windows1252)
        }
    }
}

/// Parses the text of a REP file. `source_name` (usually the file name) is only used in error
/// messages. Any error aborts the whole import.
///
/// # Errors
///
/// [`RepError`] for the first malformed line, naming `source_name:line:column`, what is wrong,
/// the offending text and what was expected.
#[allow(clippy::result_large_err)] // errors are rare; the public type keeps plain fields
pub fn parse_rep(source_name: &str, text: &str) -> Result<RepImport, RepError> {
    parse_rep_beside(source_name, text, &[])
}

/// A track already in the plot that a file's lines are added to (`toolgate import --into`):
/// lines of the file that name it attach to it as they would to a track of the file itself.
#[derive(Debug, Clone, PartialEq)]
pub struct KnownTrack {
    /// The track name REP lines use (the TRACK's `platform_id`).
    pub name: String,
    /// The TRACK feature's id in the plot.
    pub id: String,
    /// Its positions `(time, [lon, lat])`, sorted by time: where a `;TMA_RB:` solution's
    /// range and bearing are measured from.
    pub fixes: Vec<(DateTime<Utc>, LonLat)>,
}

/// [`parse_rep`] for a file added to a plot that already holds `known` tracks. The result is
/// what `parse_rep` gives, except that every line naming a known track links to it:
///
/// * a track of the file with a known name gets the known track's id (its positions belong to
///   that track; the caller merges them), and no new track takes a known id;
/// * narratives, sensor arcs and TMA solutions get the known track's id as `track_id`;
/// * a `;TMA_RB:` solution whose host has no positions in the file is placed from the known
///   track's positions;
/// * sensor data for a known track without positions in the file is still a SENSOR feature
///   (`platform_id` = the track name), for the caller to move onto that track.
///
/// # Errors
///
/// As [`parse_rep`].
#[allow(clippy::result_large_err)]
pub fn parse_rep_beside(
    source_name: &str,
    text: &str,
    known: &[KnownTrack],
) -> Result<RepImport, RepError> {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let pieces = if text.len() < PARALLEL_MIN_BYTES || cores < PARALLEL_MIN_CORES {
        1
    } else {
        cores.min(MAX_THREADS)
    };
    parse_in_pieces_beside(source_name, text, pieces, known).map_err(|e| *e)
}

/// Inputs at least this large are parsed on several threads…
const PARALLEL_MIN_BYTES: usize = 4 << 20;
/// …when the machine has at least this many cores. With fewer, one thread is faster in
/// practice: measured on a busy 2-core machine, two parsing threads took longer than one (the
/// parse waits for whichever thread was descheduled, and merging the runs copies positions
/// again), while one thread alone parses well over 100 MB/s. Measured again on a quiet 2-core
/// machine (`toolgate import` of an 8 MB file, whole process): 80 ms with two parsing threads,
/// 72 ms with one (the GeoJSON writer uses the second core instead).
const PARALLEL_MIN_CORES: usize = 4;
/// At most this many parsing threads.
const MAX_THREADS: usize = 8;

/// Parses `text` as `pieces` runs of whole lines, each on its own thread, and merges the
/// results in file order. The output does not depend on `pieces`.
#[cfg(test)]
fn parse_in_pieces(source_name: &str, text: &str, pieces: usize) -> error::Res<RepImport> {
    parse_in_pieces_beside(source_name, text, pieces, &[])
}

/// [`parse_in_pieces`] beside the `known` tracks of a plot ([`parse_rep_beside`]).
fn parse_in_pieces_beside(
    source_name: &str,
    text: &str,
    pieces: usize,
    known: &[KnownTrack],
) -> error::Res<RepImport> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let runs = split_at_lines(text, pieces);
    if runs.len() <= 1 {
        let (parsed, _) = parse_run(source_name, text);
        return parsed.map(|p| output::finish(p, known));
    }
    let results = std::thread::scope(|scope| {
        let mut runs = runs.iter();
        let first = runs.next().copied().unwrap_or_default();
        let handles: Vec<_> = runs
            .map(|&run| scope.spawn(move || parse_run(source_name, run)))
            .collect();
        let mut results = vec![parse_run(source_name, first)];
        for handle in handles {
            results.push(
                handle
                    .join()
                    .unwrap_or_else(|e| std::panic::resume_unwind(e)),
            );
        }
        results
    });
    // The first error in file order wins; its line number counts the lines of earlier runs.
    let mut lines_before = 0;
    let mut merged: Option<parser::Parser<'_>> = None;
    for (parsed, lines) in results {
        let mut parsed = parsed.map_err(|mut e| {
            e.shift_lines(lines_before);
            e
        })?;
        parsed.shift_lines(lines_before);
        match merged.as_mut() {
            None => merged = Some(parsed),
            Some(m) => m.merge(parsed),
        }
        lines_before += lines;
    }
    Ok(output::finish(
        merged.unwrap_or_else(|| parser::Parser::new(source_name)),
        known,
    ))
}

/// Parses one run of whole lines, numbering them from 1; returns the parser (or the first
/// error) and the number of lines read.
fn parse_run<'a>(source_name: &'a str, run: &'a str) -> (error::Res<parser::Parser<'a>>, usize) {
    let mut parser = parser::Parser::new(source_name);
    let mut count = 0;
    for (index, line) in lex::lines(run).enumerate() {
        count = index + 1;
        if let Err(e) = parser.line(count, line) {
            return (Err(e), count);
        }
    }
    (Ok(parser), count)
}

/// Splits `text` into at most `pieces` runs of whole lines, each ending just after a `\n`
/// (except the last).
fn split_at_lines(text: &str, pieces: usize) -> Vec<&str> {
    let bytes = text.as_bytes();
    let target = text.len() / pieces.max(1);
    let mut runs = Vec::with_capacity(pieces);
    let mut start = 0;
    while start < bytes.len() && runs.len() + 1 < pieces {
        let from = (start + target).min(bytes.len());
        let Some(newline) = bytes.iter().skip(from).position(|&b| b == b'\n') else {
            break;
        };
        let end = from + newline + 1;
        if let Some(run) = text.get(start..end) {
            runs.push(run);
        }
        start = end;
    }
    if let Some(rest) = text.get(start..)
        && !rest.is_empty()
    {
        runs.push(rest);
    }
    runs
}
