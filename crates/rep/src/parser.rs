//! The line-by-line pass: accumulates tracks, narratives, annotations and sensor contacts.

use std::collections::HashMap;

use chrono::{DateTime, NaiveDate, Utc};

use super::error::{LineCtx, Res};
use super::lex::{
    self, Cursor, Tok, is_null, number, parse_date, parse_latlon, parse_time, parse_timestamp,
};
use super::output;
use super::symbology::Symbol;
use super::types::{
    ArcSector, DynamicShape, DynamicShapeFeature, FormatFeature, Position, SensorContact, Shape,
    ShapeFeature, TmaEllipse, TmaFix,
};

/// Metres in an international yard: REP ranges, radii and axes are in yards.
pub(super) const YARDS_TO_METRES: f64 = 0.9144;

pub(super) const POSITION_EXPECTED: &str = "15 fields: YYMMDD HHMMSS[.sss] TRACK SYMBOL \
     LAT_DEG LAT_MIN LAT_SEC N|S LONG_DEG LONG_MIN LONG_SEC E|W COURSE SPEED DEPTH [LABEL]";

pub(super) struct Track<'a> {
    pub name: &'a str,
    /// Colour of the track's first position.
    pub symbol: Symbol,
    pub fixes: Vec<Position>,
    /// The track whose position line last followed one of this track's: tracks usually report
    /// in turn, so this finds the next line's track without a lookup.
    next: Option<usize>,
}

pub(super) struct Narrative<'a> {
    pub time: DateTime<Utc>,
    pub track: &'a str,
    pub entry_type: Option<&'a str>,
    pub text: &'a str,
}

/// The contacts of one sensor on one host track.
pub(super) struct Sensor<'a> {
    pub host: &'a str,
    pub name: &'a str,
    pub colour: &'static str,
    pub contacts: Vec<SensorContact>,
}

/// One `;SENSORARC:` line (numbered and linked to its track by `output::finish`).
pub(super) struct SensorArc<'a> {
    pub host: &'a str,
    pub name: String,
    pub colour: &'static str,
    pub start: Option<DateTime<Utc>>,
    pub end: Option<DateTime<Utc>>,
    pub arcs: Vec<ArcSector>,
}

/// One `;TMA_POS:` / `;TMA_RB:` line (numbered, linked to its track and placed by
/// `output::finish`).
pub(super) struct Tma<'a> {
    pub host: &'a str,
    pub solution: &'a str,
    pub colour: &'static str,
    pub time: DateTime<Utc>,
    pub fix: TmaFix,
    pub ellipse: Option<TmaEllipse>,
    pub course: f64,
    pub speed: f64,
    pub depth: f64,
    pub label: Option<String>,
}

/// Which sensor line format.
#[derive(Clone, Copy, PartialEq, Eq)]
enum SensorLine {
    V1,
    V2,
    V3,
}

/// Running `[west, south, east, north]`.
pub(super) struct Bounds {
    pub west: f64,
    pub south: f64,
    pub east: f64,
    pub north: f64,
}

impl Bounds {
    fn new() -> Self {
        Self {
            west: f64::INFINITY,
            south: f64::INFINITY,
            east: f64::NEG_INFINITY,
            north: f64::NEG_INFINITY,
        }
    }

    pub(crate) fn add(&mut self, [lon, lat]: [f64; 2]) {
        self.west = self.west.min(lon);
        self.east = self.east.max(lon);
        self.south = self.south.min(lat);
        self.north = self.north.max(lat);
    }

    pub(crate) fn get(&self) -> Option<[f64; 4]> {
        (self.west <= self.east).then_some([self.west, self.south, self.east, self.north])
    }
}

/// The `;` commands the importer understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Command {
    Narrative,
    Narrative2,
    Text,
    Circle,
    Line,
    Rect,
    Poly,
    Polyline,
    Vector,
    Ellipse,
    TimeText,
    PeriodText,
    Sensor,
    Sensor2,
    Sensor3,
    SensorArc,
    DynamicRect,
    DynamicCircle,
    DynamicPoly,
    TmaPos,
    TmaRb,
    Wheel,
    Bearing,
    Ellipse2,
    FormatFix,
    FormatNameAtEnd,
    FormatLayerHide,
}

/// Each line kind's keyword as legacy Debrief's importers and files spell it. Most end with a
/// colon; a sensor arc is written three ways: `;SENSORARC` (Debrief's own sample data,
/// `sensor_arcs.rep`, and `ImportSensorArc`'s type in most of its history), `;SENSORARC:` (that
/// importer's type at other times) and `;SENSOR_ARC:` (the keyword Debrief's "Paste REP" looks
/// for), so all of them — and `;SENSOR_ARC` — are read. `docs/rep-features.md` lists every
/// kind's spellings in legacy Debrief and debrief-future.
const COMMANDS: [(&str, Command); 30] = [
    (";NARRATIVE:", Command::Narrative),
    (";NARRATIVE2:", Command::Narrative2),
    (";TEXT:", Command::Text),
    (";CIRCLE:", Command::Circle),
    (";LINE:", Command::Line),
    (";RECT:", Command::Rect),
    (";POLY:", Command::Poly),
    (";POLYLINE:", Command::Polyline),
    (";VECTOR:", Command::Vector),
    (";ELLIPSE:", Command::Ellipse),
    (";TIMETEXT:", Command::TimeText),
    (";PERIODTEXT:", Command::PeriodText),
    (";SENSOR:", Command::Sensor),
    (";SENSOR2:", Command::Sensor2),
    (";SENSOR3:", Command::Sensor3),
    (";SENSORARC:", Command::SensorArc),
    (";SENSORARC", Command::SensorArc),
    (";SENSOR_ARC:", Command::SensorArc),
    (";SENSOR_ARC", Command::SensorArc),
    (";DYNAMIC_RECT:", Command::DynamicRect),
    (";DYNAMIC_CIRCLE:", Command::DynamicCircle),
    (";DYNAMIC_POLY:", Command::DynamicPoly),
    (";TMA_POS:", Command::TmaPos),
    (";TMA_RB:", Command::TmaRb),
    (";WHEEL:", Command::Wheel),
    (";BRG:", Command::Bearing),
    (";ELLIPSE2:", Command::Ellipse2),
    (";FORMAT_FIX:", Command::FormatFix),
    (";FORMAT_TRACK_NAME_AT_END:", Command::FormatNameAtEnd),
    (";FORMAT_LAYER_HIDE:", Command::FormatLayerHide),
];

/// Most bytes of a `;KEYWORD` kept to name its kind.
const MAX_KEYWORD_BYTES: usize = 64;
/// Most line kinds [`Parser::unhandled`] names one by one; the lines of any further kind are
/// counted together under [`OTHER_KINDS`]. Debrief has a few dozen plug-in kinds; a file of a
/// million made-up ones would otherwise make a million entries, each found by a linear search.
pub(super) const MAX_UNHANDLED_KINDS: usize = 100;
/// The keyword of the entry that counts the lines of kinds past [`MAX_UNHANDLED_KINDS`].
pub(super) const OTHER_KINDS: &str = "(any other ;KEYWORD)";

/// Counts `u` into `list`: into the entry of its kind, else a new entry while there are fewer
/// than [`MAX_UNHANDLED_KINDS`], else the [`OTHER_KINDS`] entry. `u` comes after every line
/// already counted, so an existing entry keeps its first line.
fn add_unhandled(list: &mut Vec<crate::Unhandled>, u: crate::Unhandled) {
    if let Some(m) = list.iter_mut().find(|m| m.keyword == u.keyword) {
        m.count += u.count;
        return;
    }
    if list.len() < MAX_UNHANDLED_KINDS {
        list.push(u);
        return;
    }
    match list.iter_mut().find(|m| m.keyword == OTHER_KINDS) {
        Some(m) => m.count += u.count,
        None => list.push(crate::Unhandled {
            keyword: OTHER_KINDS.to_owned(),
            ..u
        }),
    }
}

pub(super) struct Parser<'a> {
    file: &'a str,
    pub tracks: Vec<Track<'a>>,
    track_index: HashMap<&'a str, usize>,
    last_track: Option<(&'a str, usize)>,
    pub narratives: Vec<Narrative<'a>>,
    /// Annotation features, in file order (numbered by `output::finish`).
    pub shapes: Vec<ShapeFeature>,
    pub sensors: Vec<Sensor<'a>>,
    pub sensor_arcs: Vec<SensorArc<'a>>,
    /// Dynamic shape states, in file order (numbered and given their end by `output::finish`).
    pub dynamic_shapes: Vec<DynamicShapeFeature>,
    pub tma: Vec<Tma<'a>>,
    /// Display format lines, in file order (numbered by `output::finish`).
    pub formats: Vec<FormatFeature>,
    sensor_index: HashMap<(&'a str, &'a str), usize>,
    pub bounds: Bounds,
    pub span: Option<(DateTime<Utc>, DateTime<Utc>)>,
    pub position_count: usize,
    /// `;KEYWORD` line kinds this importer does not read, in first-seen order.
    pub unhandled: Vec<crate::Unhandled>,
    last_date: Option<(&'a str, NaiveDate)>,
}

impl<'a> Parser<'a> {
    pub(crate) fn new(file: &'a str) -> Self {
        Self {
            file,
            tracks: Vec::new(),
            track_index: HashMap::new(),
            last_track: None,
            narratives: Vec::new(),
            shapes: Vec::new(),
            sensors: Vec::new(),
            sensor_arcs: Vec::new(),
            dynamic_shapes: Vec::new(),
            tma: Vec::new(),
            formats: Vec::new(),
            sensor_index: HashMap::new(),
            bounds: Bounds::new(),
            span: None,
            position_count: 0,
            unhandled: Vec::new(),
            last_date: None,
        }
    }

    pub(crate) fn note_time(&mut self, t: DateTime<Utc>) {
        self.span = Some(match self.span {
            None => (t, t),
            Some((lo, hi)) => (lo.min(t), hi.max(t)),
        });
    }

    /// Parses one line (without its line terminator).
    pub(crate) fn line(&mut self, line_no: usize, line: &'a str) -> Res<()> {
        let ctx = LineCtx {
            file: self.file,
            line_no,
            line,
        };
        let mut cur = Cursor::new(line);
        let Some(first) = cur.next_token() else {
            return Ok(()); // blank
        };
        if !first.text.starts_with(';') {
            return self.position(&ctx, cur, first);
        }
        let command = COMMANDS
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(first.text))
            .map(|(_, c)| *c);
        let Some(command) = command else {
            self.note_unhandled(line_no, first.text);
            return Ok(());
        };
        match command {
            Command::Narrative => self.narrative(&ctx, cur, false),
            Command::Narrative2 => self.narrative(&ctx, cur, true),
            Command::Sensor => self.sensor(&ctx, cur, SensorLine::V1),
            Command::Sensor2 => self.sensor(&ctx, cur, SensorLine::V2),
            Command::Sensor3 => self.sensor(&ctx, cur, SensorLine::V3),
            Command::SensorArc => self.sensor_arc(&ctx, cur),
            Command::DynamicRect | Command::DynamicCircle | Command::DynamicPoly => {
                self.dynamic_shape(&ctx, cur, command)
            }
            Command::TmaPos => self.tma(&ctx, cur, false),
            Command::TmaRb => self.tma(&ctx, cur, true),
            Command::FormatFix | Command::FormatNameAtEnd | Command::FormatLayerHide => {
                self.format(&ctx, cur, command)
            }
            _ => self.annotation(&ctx, cur, command),
        }
    }

    /// Counts a `;` line that is not one of [`COMMANDS`]. `;;` lines and `;` followed by
    /// anything but a letter are comments; `;WORD…` is a line kind, reported rather than
    /// dropped silently so that the person importing knows what the plot is missing.
    fn note_unhandled(&mut self, line_no: usize, first: &str) {
        let body = first.get(1..).unwrap_or_default();
        if !body.starts_with(|c: char| c.is_ascii_alphabetic()) {
            return;
        }
        let word = body.split(':').next().unwrap_or_default();
        // A keyword is quoted in warnings: a huge one is clipped like any quoted input.
        let head = word
            .get(..toolgate_core::clip::floor_char_boundary(word, MAX_KEYWORD_BYTES))
            .unwrap_or_default();
        let mut keyword = format!(";{}", head.to_ascii_uppercase());
        if head.len() < word.len() {
            keyword.push_str(&format!("…({} bytes)", word.len()));
        }
        tracing::debug!(
            file = self.file,
            line = line_no,
            command = %toolgate_core::clip::quote(first),
            "unsupported REP line"
        );
        add_unhandled(
            &mut self.unhandled,
            crate::Unhandled {
                keyword,
                count: 1,
                first_line: line_no,
            },
        );
    }

    /// Adds `lines` to the line numbers recorded so far (for a run that followed `lines` lines).
    pub(crate) fn shift_lines(&mut self, lines: usize) {
        for u in &mut self.unhandled {
            u.first_line += lines;
        }
    }

    /// Appends the results of parsing the text that follows this parser's text.
    pub(crate) fn merge(&mut self, other: Parser<'a>) {
        for u in other.unhandled {
            add_unhandled(&mut self.unhandled, u);
        }
        for track in other.tracks {
            let i = self.track_for(track.name, "");
            if let Some(mine) = self.tracks.get_mut(i) {
                if mine.fixes.is_empty() {
                    // New to this parser: it keeps the colour the other one saw first.
                    mine.symbol = track.symbol;
                    mine.fixes = track.fixes;
                } else {
                    mine.fixes.extend(track.fixes);
                }
            }
        }
        self.last_track = None;
        self.narratives.extend(other.narratives);
        self.shapes.extend(other.shapes);
        self.sensor_arcs.extend(other.sensor_arcs);
        self.dynamic_shapes.extend(other.dynamic_shapes);
        self.tma.extend(other.tma);
        self.formats.extend(other.formats);
        for sensor in other.sensors {
            let next = self.sensors.len();
            let i = *self
                .sensor_index
                .entry((sensor.host, sensor.name))
                .or_insert(next);
            if i == next {
                self.sensors.push(sensor);
            } else if let Some(mine) = self.sensors.get_mut(i) {
                mine.contacts.extend(sensor.contacts);
            }
        }
        if let Some(b) = other.bounds.get() {
            self.bounds.add([b[0], b[1]]);
            self.bounds.add([b[2], b[3]]);
        }
        if let Some((lo, hi)) = other.span {
            self.note_time(lo);
            self.note_time(hi);
        }
        self.position_count += other.position_count;
    }

    /// The index of the track called `name`, created (coloured by `symbol`) if new. A few
    /// tracks are found faster by scanning than by hashing.
    fn track_for(&mut self, name: &'a str, symbol: &str) -> usize {
        const SCAN: usize = 16;
        let found = if self.tracks.len() <= SCAN {
            self.tracks.iter().position(|t| t.name == name)
        } else {
            self.track_index.get(name).copied()
        };
        if let Some(i) = found {
            return i;
        }
        let i = self.tracks.len();
        self.tracks.push(Track {
            name,
            symbol: Symbol::parse(symbol),
            fixes: Vec::new(),
            next: None,
        });
        if i == SCAN {
            // Switching to the index: add the tracks scanned so far.
            for (j, t) in self.tracks.iter().enumerate() {
                self.track_index.insert(t.name, j);
            }
        } else if i > SCAN {
            self.track_index.insert(name, i);
        }
        i
    }

    /// A position line: `DATE TIME TRACK SYMBOL LAT LON COURSE SPEED DEPTH [LABEL]`.
    fn position(&mut self, ctx: &LineCtx<'a>, mut cur: Cursor<'a>, date_tok: Tok<'a>) -> Res<()> {
        let date = match self.last_date {
            Some((text, date)) if text == date_tok.text => date,
            _ => {
                let date = parse_date(ctx, date_tok)?;
                self.last_date = Some((date_tok.text, date));
                date
            }
        };
        let time_tok = cur.require(ctx, "time", POSITION_EXPECTED)?;
        let time = parse_time(ctx, time_tok, date)?;
        let name = cur.name(ctx, "track name", POSITION_EXPECTED)?.text;
        let symbol_tok = cur.require(ctx, "symbology", POSITION_EXPECTED)?;
        let [lon, lat] = parse_latlon(ctx, &mut cur, POSITION_EXPECTED)?;
        let course_tok = cur.require(ctx, "course", POSITION_EXPECTED)?;
        let course = number(ctx, course_tok, "course", "a number of degrees")?;
        let speed_tok = cur.require(ctx, "speed", POSITION_EXPECTED)?;
        let speed = number(ctx, speed_tok, "speed", "a number of knots")?;
        let depth_tok = cur.require(ctx, "depth", POSITION_EXPECTED)?;
        let depth = match lex::parse_f64(depth_tok.text) {
            Some(d) if d.is_nan() => None,
            Some(d) if !d.is_infinite() => Some(d),
            _ => return Err(ctx.invalid("depth", depth_tok, "a number of metres or NaN")),
        };
        let rest = cur.rest();
        let label = (!rest.is_empty()).then(|| Box::from(rest));

        let index = match self.last_track {
            Some((last, i)) if last == name => i,
            Some((_, last)) => {
                let hint = self.tracks.get(last).and_then(|t| t.next);
                let i = match hint {
                    Some(i) if self.tracks.get(i).is_some_and(|t| t.name == name) => i,
                    _ => self.track_for(name, symbol_tok.text),
                };
                if let Some(t) = self.tracks.get_mut(last) {
                    t.next = Some(i);
                }
                self.last_track = Some((name, i));
                i
            }
            None => {
                let i = self.track_for(name, symbol_tok.text);
                self.last_track = Some((name, i));
                i
            }
        };
        if let Some(track) = self.tracks.get_mut(index) {
            track.fixes.push(Position {
                time,
                lon,
                lat,
                course,
                speed,
                depth,
                label,
            });
        }
        self.position_count += 1;
        self.bounds.add([lon, lat]);
        // Track times go into the span when the tracks are finished (see `output::finish`).
        Ok(())
    }

    /// `;NARRATIVE: DATE TIME TRACK TEXT` / `;NARRATIVE2: DATE TIME TRACK TYPE TEXT`.
    fn narrative(&mut self, ctx: &LineCtx<'a>, mut cur: Cursor<'a>, typed: bool) -> Res<()> {
        const EXPECTED: &str = "YYMMDD HHMMSS[.sss] TRACK [TYPE] TEXT";
        let time = parse_timestamp(ctx, &mut cur)?;
        let track = cur.name(ctx, "track name", EXPECTED)?.text;
        let entry_type = if typed {
            cur.name(ctx, "narrative entry type", EXPECTED)
                .ok()
                .map(|t| t.text)
        } else {
            None
        };
        let text = cur.rest();
        self.note_time(time);
        self.narratives.push(Narrative {
            time,
            track,
            entry_type,
            text,
        });
        Ok(())
    }

    /// `;SENSORARC: START_DATE START_TIME|NULL END_DATE END_TIME|NULL TRACK SYMBOL (LEFT RIGHT
    /// INNER OUTER)… SENSOR` (bearings in degrees relative to the host's heading, ranges in
    /// yards; a `NULL` time leaves that end of the interval open). The tokens after the
    /// symbology are read as Debrief reads them: groups of four numbers while more than four
    /// remain, then the sensor name.
    fn sensor_arc(&mut self, ctx: &LineCtx<'a>, mut cur: Cursor<'a>) -> Res<()> {
        const EXPECTED: &str = "YYMMDD HHMMSS[.sss]|NULL YYMMDD HHMMSS[.sss]|NULL TRACK SYMBOL \
             LEFT RIGHT INNER OUTER [LEFT RIGHT INNER OUTER…] SENSOR";
        let time = |cur: &mut Cursor<'a>| -> Res<Option<DateTime<Utc>>> {
            match cur.peek() {
                Some(tok) if is_null(tok) => {
                    cur.next_token();
                    Ok(None)
                }
                _ => parse_timestamp(ctx, cur).map(Some),
            }
        };
        let start = time(&mut cur)?;
        let end = time(&mut cur)?;
        let host = cur.name(ctx, "track name", EXPECTED)?.text;
        let symbol = Symbol::parse(cur.require(ctx, "symbology", EXPECTED)?.text);
        let mut rest = Vec::new();
        while cur.peek().is_some() {
            rest.push(cur.name(ctx, "arc", EXPECTED)?);
        }
        if rest.len() < 5 {
            let field = [
                "left bearing",
                "right bearing",
                "inner range",
                "outer range",
                "sensor",
            ];
            let missing = field.get(rest.len()).copied().unwrap_or("sensor");
            return Err(ctx.missing(missing, EXPECTED));
        }
        let groups = (rest.len() - 1) / 4;
        let mut arcs = Vec::with_capacity(groups);
        for group in rest.chunks_exact(4).take(groups) {
            let &[left, right, inner, outer] = group else {
                continue;
            };
            let range = |tok: Tok<'a>, field: &'static str| -> Res<f64> {
                match lex::parse_f64(tok.text) {
                    Some(v) if v.is_finite() && v >= 0.0 => Ok(v * YARDS_TO_METRES),
                    _ => Err(ctx.invalid(field, tok, "a number of yards, 0 or more")),
                }
            };
            arcs.push(ArcSector {
                left: number(ctx, left, "left bearing", "a number of degrees")?,
                right: number(ctx, right, "right bearing", "a number of degrees")?,
                min_range: range(inner, "inner range")?,
                max_range: range(outer, "outer range")?,
            });
        }
        let name = rest
            .get(groups * 4..)
            .unwrap_or_default()
            .iter()
            .map(|t| t.text)
            .collect::<Vec<_>>()
            .join(" ");
        if let Some(t) = start {
            self.note_time(t);
        }
        if let Some(t) = end {
            self.note_time(t);
        }
        self.sensor_arcs.push(SensorArc {
            host,
            name,
            colour: symbol.colour,
            start,
            end,
            arcs,
        });
        Ok(())
    }

    /// `;SENSOR: DATE TIME TRACK SYMBOL ORIGIN|NULL BEARING RANGE|NULL SENSOR LABEL` and
    /// `;SENSOR2: DATE TIME TRACK SYMBOL ORIGIN|NULL BEARING|NULL AMBIG|NULL FREQ|NULL
    /// RANGE|NULL SENSOR LABEL` (ranges in yards; names may be quoted).
    fn sensor(&mut self, ctx: &LineCtx<'a>, mut cur: Cursor<'a>, version: SensorLine) -> Res<()> {
        let expected = match version {
            SensorLine::V1 => {
                "YYMMDD HHMMSS[.sss] TRACK SYMBOL ORIGIN|NULL BEARING RANGE|NULL SENSOR [LABEL]"
            }
            SensorLine::V2 => {
                "YYMMDD HHMMSS[.sss] TRACK SYMBOL ORIGIN|NULL BEARING|NULL \
                 AMBIGUOUS_BEARING|NULL FREQUENCY|NULL RANGE|NULL SENSOR [LABEL]"
            }
            SensorLine::V3 => {
                "YYMMDD HHMMSS[.sss] TRACK SYMBOL ORIGIN|NULL BEARING|NULL \
                 BEARING_ACCURACY|NULL FREQUENCY|NULL FREQUENCY_ACCURACY|NULL RANGE|NULL \
                 SENSOR [LABEL]"
            }
        };
        let time = parse_timestamp(ctx, &mut cur)?;
        let host = cur.name(ctx, "track name", expected)?.text;
        let symbol = Symbol::parse(cur.require(ctx, "symbology", expected)?.text);
        let origin = match cur.peek() {
            Some(tok) if is_null(tok) => {
                cur.next_token();
                None
            }
            _ => Some(parse_latlon(ctx, &mut cur, expected)?),
        };
        let mut optional = |field: &'static str, what: &str| -> Res<Option<f64>> {
            let tok = cur.require(ctx, field, expected)?;
            if is_null(tok) {
                Ok(None)
            } else {
                number(ctx, tok, field, what).map(Some)
            }
        };
        let bearing = optional("bearing", "a number of degrees or NULL")?;
        let (mut ambiguous_bearing, mut frequency) = (None, None);
        let (mut bearing_accuracy, mut frequency_accuracy) = (None, None);
        match version {
            SensorLine::V1 => {}
            SensorLine::V2 => {
                ambiguous_bearing = optional("ambiguous bearing", "a number of degrees or NULL")?;
                frequency = optional("frequency", "a number of Hz or NULL")?;
            }
            SensorLine::V3 => {
                bearing_accuracy = optional("bearing accuracy", "a number of degrees or NULL")?;
                frequency = optional("frequency", "a number of Hz or NULL")?;
                frequency_accuracy = optional("frequency accuracy", "a number of Hz or NULL")?;
            }
        }
        let range = optional("range", "a number of yards or NULL")?.map(|y| y * YARDS_TO_METRES);
        let name = cur.name(ctx, "sensor name", expected)?.text;
        let (label, comment) = split_comment(cur.rest());

        if let Some(o) = origin {
            self.bounds.add(o);
        }
        self.note_time(time);
        let next = self.sensors.len();
        let i = *self.sensor_index.entry((host, name)).or_insert(next);
        if i == next {
            self.sensors.push(Sensor {
                host,
                name,
                colour: symbol.colour,
                contacts: Vec::new(),
            });
        }
        if let Some(sensor) = self.sensors.get_mut(i) {
            sensor.contacts.push(SensorContact {
                time,
                bearing,
                ambiguous_bearing,
                frequency,
                bearing_accuracy,
                frequency_accuracy,
                range,
                origin,
                label: label.map(str::to_owned),
                comment: comment.map(str::to_owned),
            });
        }
        Ok(())
    }

    /// Shapes and text annotations.
    fn annotation(&mut self, ctx: &LineCtx<'a>, mut cur: Cursor<'a>, command: Command) -> Res<()> {
        let expected = match command {
            Command::Text => "SYMBOL LAT LONG TEXT",
            Command::Circle => "SYMBOL LAT LONG RADIUS_YARDS [LABEL]",
            Command::Line | Command::Rect => "SYMBOL LAT LONG LAT LONG [LABEL]",
            Command::Poly | Command::Polyline => "SYMBOL LAT LONG LAT LONG ... [LABEL]",
            Command::Vector => "SYMBOL LAT LONG RANGE_YARDS BEARING [LABEL]",
            Command::Ellipse => "SYMBOL YYMMDD HHMMSS LAT LONG ORIENTATION MAXIMA MINIMA [LABEL]",
            Command::TimeText => "SYMBOL YYMMDD HHMMSS LAT LONG TEXT",
            Command::PeriodText => "SYMBOL YYMMDD HHMMSS YYMMDD HHMMSS LAT LONG TEXT",
            Command::Ellipse2 => {
                "SYMBOL YYMMDD HHMMSS YYMMDD HHMMSS LAT LONG ORIENTATION MAXIMA MINIMA [LABEL]"
            }
            Command::Wheel => "SYMBOL YYMMDD HHMMSS LAT LONG INNER_RADIUS OUTER_RADIUS [LABEL]",
            Command::Bearing => "SYMBOL YYMMDD HHMMSS LAT LONG BEARING RANGE_YARDS [LABEL]",
            _ => "",
        };
        let symbol = Symbol::parse(cur.require(ctx, "symbology", expected)?.text);

        let (shape, label) = match command {
            Command::Text => {
                let at = parse_latlon(ctx, &mut cur, expected)?;
                self.bounds.add(at);
                let text = unescape(cur.rest());
                (Shape::Text { at, text }, None)
            }
            Command::TimeText => {
                let time = parse_timestamp(ctx, &mut cur)?;
                let at = parse_latlon(ctx, &mut cur, expected)?;
                self.bounds.add(at);
                self.note_time(time);
                let text = unescape(cur.rest());
                (Shape::TimeText { at, text, time }, None)
            }
            Command::PeriodText => {
                let start = parse_timestamp(ctx, &mut cur)?;
                let end = parse_timestamp(ctx, &mut cur)?;
                let at = parse_latlon(ctx, &mut cur, expected)?;
                self.bounds.add(at);
                self.note_time(start);
                self.note_time(end);
                let text = unescape(cur.rest());
                (
                    Shape::PeriodText {
                        at,
                        text,
                        start,
                        end,
                    },
                    None,
                )
            }
            Command::Circle => {
                let center = parse_latlon(ctx, &mut cur, expected)?;
                let radius = yards(ctx, &mut cur, "radius", expected)?;
                self.bounds.add(center);
                (Shape::Circle { center, radius }, label(cur.rest()))
            }
            Command::Line | Command::Rect => {
                let a = parse_latlon(ctx, &mut cur, expected)?;
                let b = parse_latlon(ctx, &mut cur, expected)?;
                self.bounds.add(a);
                self.bounds.add(b);
                let shape = if command == Command::Line {
                    Shape::Line { from: a, to: b }
                } else {
                    Shape::Rectangle { a, b }
                };
                (shape, label(cur.rest()))
            }
            Command::Poly | Command::Polyline => {
                let mut vertices = Vec::new();
                while cur.peek().is_some_and(|t| lex::parse_f64(t.text).is_some()) {
                    vertices.push(parse_latlon(ctx, &mut cur, expected)?);
                }
                let min = if command == Command::Poly { 3 } else { 2 };
                if vertices.len() < min {
                    let what = format!("at least {min} vertices: {expected}");
                    return Err(match cur.next_token() {
                        Some(tok) => ctx.invalid("vertex latitude degrees", tok, what),
                        None => ctx.missing("vertex", what),
                    });
                }
                for v in &vertices {
                    self.bounds.add(*v);
                }
                let shape = if command == Command::Poly {
                    Shape::Poly { vertices }
                } else {
                    Shape::Polyline { vertices }
                };
                (shape, label(cur.rest()))
            }
            Command::Vector => {
                let origin = parse_latlon(ctx, &mut cur, expected)?;
                let range = yards(ctx, &mut cur, "range", expected)?;
                let tok = cur.require(ctx, "bearing", expected)?;
                let bearing = number(ctx, tok, "bearing", "a number of degrees")?;
                let end = output::destination(origin, range, bearing);
                self.bounds.add(origin);
                self.bounds.add(end);
                let shape = Shape::Vector {
                    origin,
                    end,
                    range,
                    bearing,
                };
                (shape, label(cur.rest()))
            }
            Command::Ellipse => {
                let time = parse_timestamp(ctx, &mut cur)?;
                let center = parse_latlon(ctx, &mut cur, expected)?;
                let tok = cur.require(ctx, "orientation", expected)?;
                let orientation = number(ctx, tok, "orientation", "a number of degrees")?;
                let maxima = yards(ctx, &mut cur, "maxima", expected)?;
                let minima = yards(ctx, &mut cur, "minima", expected)?;
                self.bounds.add(center);
                self.note_time(time);
                let shape = Shape::Ellipse {
                    center,
                    time,
                    orientation,
                    maxima,
                    minima,
                };
                (shape, label(cur.rest()))
            }
            Command::Ellipse2 => {
                let start = parse_timestamp(ctx, &mut cur)?;
                let end = parse_timestamp(ctx, &mut cur)?;
                let center = parse_latlon(ctx, &mut cur, expected)?;
                let tok = cur.require(ctx, "orientation", expected)?;
                let orientation = number(ctx, tok, "orientation", "a number of degrees")?;
                let maxima = yards(ctx, &mut cur, "maxima", expected)?;
                let minima = yards(ctx, &mut cur, "minima", expected)?;
                self.bounds.add(center);
                self.note_time(start);
                self.note_time(end);
                let shape = Shape::PeriodEllipse {
                    center,
                    start,
                    end,
                    orientation,
                    maxima,
                    minima,
                };
                (shape, label(cur.rest()))
            }
            Command::Wheel => {
                let time = parse_timestamp(ctx, &mut cur)?;
                let center = parse_latlon(ctx, &mut cur, expected)?;
                let inner_radius = yards(ctx, &mut cur, "inner radius", expected)?;
                let outer_radius = yards(ctx, &mut cur, "outer radius", expected)?;
                self.bounds.add(center);
                self.note_time(time);
                let shape = Shape::Wheel {
                    center,
                    time,
                    inner_radius,
                    outer_radius,
                };
                (shape, label(cur.rest()))
            }
            Command::Bearing => {
                let time = parse_timestamp(ctx, &mut cur)?;
                let origin = parse_latlon(ctx, &mut cur, expected)?;
                let tok = cur.require(ctx, "bearing", expected)?;
                let bearing = number(ctx, tok, "bearing", "a number of degrees")?;
                let range = yards(ctx, &mut cur, "range", expected)?;
                let end = output::destination(origin, range, bearing);
                self.bounds.add(origin);
                self.bounds.add(end);
                self.note_time(time);
                let shape = Shape::Bearing {
                    origin,
                    end,
                    time,
                    bearing,
                    range,
                };
                (shape, label(cur.rest()))
            }
            _ => return Ok(()),
        };
        self.shapes.push(ShapeFeature {
            id: String::new(), // numbered by `output::finish`
            symbol,
            label,
            shape,
        });
        Ok(())
    }
}

impl<'a> Parser<'a> {
    /// `;DYNAMIC_RECT: SYMBOL NAME DATE TIME LAT LONG LAT LONG [LABEL]`, `;DYNAMIC_CIRCLE:
    /// SYMBOL NAME DATE TIME LAT LONG RADIUS_YARDS [LABEL]`, `;DYNAMIC_POLY: SYMBOL NAME DATE
    /// TIME LAT LONG LAT LONG LAT LONG… [LABEL]` (the name may be quoted).
    fn dynamic_shape(
        &mut self,
        ctx: &LineCtx<'a>,
        mut cur: Cursor<'a>,
        command: Command,
    ) -> Res<()> {
        let expected = match command {
            Command::DynamicRect => "SYMBOL NAME YYMMDD HHMMSS[.sss] LAT LONG LAT LONG [LABEL]",
            Command::DynamicCircle => {
                "SYMBOL NAME YYMMDD HHMMSS[.sss] LAT LONG RADIUS_YARDS [LABEL]"
            }
            _ => "SYMBOL NAME YYMMDD HHMMSS[.sss] LAT LONG LAT LONG LAT LONG ... [LABEL]",
        };
        let symbol = Symbol::parse(cur.require(ctx, "symbology", expected)?.text);
        let name = cur.name(ctx, "shape name", expected)?.text;
        let start = parse_timestamp(ctx, &mut cur)?;
        let shape = match command {
            Command::DynamicRect => {
                let a = parse_latlon(ctx, &mut cur, expected)?;
                let b = parse_latlon(ctx, &mut cur, expected)?;
                self.bounds.add(a);
                self.bounds.add(b);
                DynamicShape::Rectangle { a, b }
            }
            Command::DynamicCircle => {
                let center = parse_latlon(ctx, &mut cur, expected)?;
                let radius = yards(ctx, &mut cur, "radius", expected)?;
                self.bounds.add(center);
                DynamicShape::Circle { center, radius }
            }
            _ => {
                let mut vertices = Vec::new();
                while cur.peek().is_some_and(|t| lex::parse_f64(t.text).is_some()) {
                    vertices.push(parse_latlon(ctx, &mut cur, expected)?);
                }
                if vertices.len() < 3 {
                    let what = format!("at least 3 vertices: {expected}");
                    return Err(match cur.next_token() {
                        Some(tok) => ctx.invalid("vertex latitude degrees", tok, what),
                        None => ctx.missing("vertex", what),
                    });
                }
                for v in &vertices {
                    self.bounds.add(*v);
                }
                DynamicShape::Poly { vertices }
            }
        };
        self.note_time(start);
        self.dynamic_shapes.push(DynamicShapeFeature {
            id: String::new(), // numbered by `output::finish`
            name: name.to_owned(),
            symbol,
            label: label(cur.rest()),
            start,
            end: start, // set by `output::finish`
            shape,
        });
        Ok(())
    }

    /// `;TMA_POS: DATE TIME TRACK SYMBOL LAT LONG SOLUTION (ORIENTATION MAXIMA MINIMA | NULL)
    /// COURSE SPEED DEPTH [LABEL]` and `;TMA_RB: DATE TIME TRACK SYMBOL BEARING RANGE SOLUTION
    /// (ORIENTATION MAXIMA MINIMA | NULL) COURSE SPEED DEPTH [LABEL]` (ranges and axes in yards).
    fn tma(&mut self, ctx: &LineCtx<'a>, mut cur: Cursor<'a>, range_bearing: bool) -> Res<()> {
        let expected = if range_bearing {
            "YYMMDD HHMMSS[.sss] TRACK SYMBOL BEARING RANGE_YARDS SOLUTION \
             (ORIENTATION MAXIMA MINIMA | NULL) COURSE SPEED DEPTH [LABEL]"
        } else {
            "YYMMDD HHMMSS[.sss] TRACK SYMBOL LAT LONG SOLUTION \
             (ORIENTATION MAXIMA MINIMA | NULL) COURSE SPEED DEPTH [LABEL]"
        };
        let time = parse_timestamp(ctx, &mut cur)?;
        let host = cur.name(ctx, "track name", expected)?.text;
        let symbol = Symbol::parse(cur.require(ctx, "symbology", expected)?.text);
        let fix = if range_bearing {
            let tok = cur.require(ctx, "bearing", expected)?;
            let bearing = number(ctx, tok, "bearing", "a number of degrees")?;
            let range = yards(ctx, &mut cur, "range", expected)?;
            TmaFix::RangeBearing { bearing, range }
        } else {
            let at = parse_latlon(ctx, &mut cur, expected)?;
            self.bounds.add(at);
            TmaFix::Position(at)
        };
        let solution = cur.name(ctx, "solution name", expected)?.text;
        let ellipse = match cur.peek() {
            Some(tok) if is_null(tok) => {
                cur.next_token();
                None
            }
            _ => {
                let tok = cur.require(ctx, "ellipse orientation", expected)?;
                let orientation = number(
                    ctx,
                    tok,
                    "ellipse orientation",
                    "a number of degrees or NULL",
                )?;
                let maxima = yards(ctx, &mut cur, "ellipse maxima", expected)?;
                let minima = yards(ctx, &mut cur, "ellipse minima", expected)?;
                Some(TmaEllipse {
                    orientation,
                    maxima,
                    minima,
                })
            }
        };
        let mut field = |name: &'static str, what: &str| -> Res<f64> {
            let tok = cur.require(ctx, name, expected)?;
            number(ctx, tok, name, what)
        };
        let course = field("course", "a number of degrees")?;
        let speed = field("speed", "a number of knots")?;
        let depth = field("depth", "a number of metres")?;
        self.note_time(time);
        self.tma.push(Tma {
            host,
            solution,
            colour: symbol.colour,
            time,
            fix,
            ellipse,
            course,
            speed,
            depth,
            label: label(cur.rest()),
        });
        Ok(())
    }

    /// `;FORMAT_FIX: NAME ATTRIBUTE TRACK|NULL SYMBOLOGY|NULL TRUE|FALSE INTERVAL_MS`,
    /// `;FORMAT_TRACK_NAME_AT_END: NAME [TRACK…]`, `;FORMAT_LAYER_HIDE: NAME [LAYER…]`.
    fn format(&mut self, ctx: &LineCtx<'a>, mut cur: Cursor<'a>, command: Command) -> Res<()> {
        let expected = match command {
            Command::FormatFix => "NAME ATTRIBUTE TRACK|NULL SYMBOLOGY|NULL TRUE|FALSE INTERVAL_MS",
            Command::FormatNameAtEnd => "NAME [TRACK ...]",
            _ => "NAME [LAYER ...]",
        };
        let name = cur.name(ctx, "format name", expected)?.text.to_owned();
        let mut f = FormatFeature {
            id: String::new(), // numbered by `output::finish`
            directive: match command {
                Command::FormatFix => "FORMAT_FIX",
                Command::FormatNameAtEnd => "FORMAT_TRACK_NAME_AT_END",
                _ => "FORMAT_LAYER_HIDE",
            },
            name,
            attribute: None,
            track_name: None,
            symbology: None,
            regular_intervals: None,
            interval_ms: None,
            layers: Vec::new(),
        };
        if command == Command::FormatFix {
            let not_null = |t: &str| (t != "NULL").then(|| t.to_owned());
            f.attribute = Some(cur.require(ctx, "attribute", expected)?.text.to_owned());
            f.track_name = not_null(cur.name(ctx, "track name", expected)?.text);
            f.symbology = not_null(cur.require(ctx, "symbology", expected)?.text);
            let tok = cur.require(ctx, "regular intervals", expected)?;
            f.regular_intervals = Some(match tok.text.to_ascii_lowercase().as_str() {
                "true" => true,
                "false" => false,
                _ => return Err(ctx.invalid("regular intervals", tok, "TRUE or FALSE")),
            });
            let tok = cur.require(ctx, "interval", expected)?;
            f.interval_ms = Some(
                tok.text
                    .parse()
                    .map_err(|_| ctx.invalid("interval", tok, "a whole number of milliseconds"))?,
            );
        } else {
            while cur.peek().is_some() {
                f.layers
                    .push(cur.name(ctx, "layer name", expected)?.text.to_owned());
            }
        }
        self.formats.push(f);
        Ok(())
    }
}

/// A non-negative distance in yards, returned in metres.
fn yards(ctx: &LineCtx<'_>, cur: &mut Cursor<'_>, field: &'static str, expected: &str) -> Res<f64> {
    let tok = cur.require(ctx, field, expected)?;
    match lex::parse_f64(tok.text) {
        Some(v) if v.is_finite() && v >= 0.0 => Ok(v * YARDS_TO_METRES),
        _ => Err(ctx.invalid(field, tok, "a non-negative number of yards")),
    }
}

fn label(rest: &str) -> Option<String> {
    (!rest.is_empty()).then(|| unescape(rest))
}

/// Debrief writes line breaks in annotation labels as a literal `\n`.
fn unescape(text: &str) -> String {
    text.replace("\\n", "\n")
}

/// `LABEL // COMMENT` → (label, comment), each `None` when empty.
fn split_comment(rest: &str) -> (Option<&str>, Option<&str>) {
    let (label, comment) = match rest.split_once("//") {
        Some((l, c)) => (l.trim(), c.trim()),
        None => (rest, ""),
    };
    (
        Some(label).filter(|s| !s.is_empty()),
        Some(comment).filter(|s| !s.is_empty()),
    )
}
