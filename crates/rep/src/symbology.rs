//! REP symbology codes (`@C`, `VC`, `@BA10`, `CA[LAYER=x]`, …) → colour and line style.
//!
//! A code is `S C [L T F] [\[ATTRS\]]`: symbol type, colour letter, then optionally a line-style
//! letter, a thickness digit and a fill digit, then optional bracketed attributes. A one-letter
//! code is read as the colour.

use serde::ser::{Serialize, SerializeMap, Serializer};

/// Colour letter → CSS colour. `A`–`Q` as in Debrief's current importer
/// (debrief-future `services/io/src/debrief_io/symbology.py`, which matches the legacy
/// `ImportReplay` table); `@` is white as in the legacy table.
const COLOURS: [(u8, &str); 18] = [
    (b'@', "#FFFFFF"),
    (b'A', "#0000FF"),
    (b'B', "#00FF00"),
    (b'C', "#FF0000"),
    (b'D', "#FFFF00"),
    (b'E', "#FF00FF"),
    (b'F', "#FFA500"),
    (b'G', "#800080"),
    (b'H', "#00FFFF"),
    (b'I', "#A52A2A"),
    (b'J', "#90EE90"),
    (b'K', "#FFC0CB"),
    (b'L', "#FFD700"),
    (b'M', "#D3D3D3"),
    (b'N', "#808080"),
    (b'O', "#A9A9A9"),
    (b'P', "#FFFFFF"),
    (b'Q', "#000000"),
];

/// Colour for codes whose letter is not in the table (legacy Debrief also falls back to red).
pub const DEFAULT_COLOUR: &str = "#FF0000";

/// The CSS colour for a colour letter (case-insensitive), or [`DEFAULT_COLOUR`].
pub fn colour_for_letter(letter: u8) -> &'static str {
    let upper = letter.to_ascii_uppercase();
    COLOURS
        .iter()
        .find(|(code, _)| *code == upper)
        .map_or(DEFAULT_COLOUR, |(_, css)| css)
}

/// A parsed symbology code (the colour and line style of an annotation).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Symbol {
    pub colour: &'static str,
    /// SVG dash pattern for the line-style letter, if it is not solid.
    pub dash_array: Option<&'static str>,
    /// Line thickness in pixels, when given.
    pub weight: Option<u8>,
    /// Fill opacity from the fill digit (`1` solid, `2` semi-transparent), when filled.
    pub fill_opacity: Option<f64>,
}

impl Symbol {
    /// Parses a code such as `@C`, `VC`, `@BA10` or `CA[LAYER=x]`; never fails (unknown
    /// letters give [`DEFAULT_COLOUR`] and a solid line).
    pub fn parse(code: &str) -> Self {
        let code = code.split('[').next().unwrap_or_default().as_bytes();
        let colour = match code {
            [] => DEFAULT_COLOUR,
            [only] => colour_for_letter(*only),
            [_, letter, ..] => colour_for_letter(*letter),
        };
        let dash_array = match code.get(2).map(u8::to_ascii_uppercase) {
            Some(b'A') => Some("2, 4"),
            Some(b'B') => Some("8, 4, 2, 4"),
            Some(b'C') => Some("6, 4"),
            Some(b'D') => Some("12, 6"),
            _ => None,
        };
        let weight = code
            .get(3)
            .filter(|d| d.is_ascii_digit() && **d != b'0')
            .map(|d| d - b'0');
        let fill_opacity = match code.get(4) {
            Some(b'1') => Some(1.0),
            Some(b'2') => Some(0.3),
            _ => None,
        };
        Self {
            colour,
            dash_array,
            weight,
            fill_opacity,
        }
    }

    /// `LineProperties` for LINE, POLYLINE and VECTOR: `{color, weight?, dash_array?}`.
    pub fn line_style(&self) -> impl Serialize + '_ {
        Style {
            symbol: self,
            kind: StyleKind::Line,
        }
    }

    /// `PolygonProperties` for CIRCLE, RECTANGLE, POLY and ELLIPSE: the line fields, plus
    /// `fill_color` and `fill_opacity` when the code asks for a fill.
    pub fn area_style(&self) -> impl Serialize + '_ {
        Style {
            symbol: self,
            kind: StyleKind::Area,
        }
    }

    /// `PointProperties` for TEXT-like annotations: `{shape, radius, color, fill_color}`.
    pub fn point_style(&self) -> impl Serialize + '_ {
        Style {
            symbol: self,
            kind: StyleKind::Point,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum StyleKind {
    Line,
    Area,
    Point,
}

/// One of the style objects of a [`Symbol`], serialised with its keys in Debrief's order.
struct Style<'a> {
    symbol: &'a Symbol,
    kind: StyleKind,
}

impl Serialize for Style<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let s = self.symbol;
        let mut map = serializer.serialize_map(None)?;
        if self.kind == StyleKind::Point {
            map.serialize_entry("shape", "circle")?;
            map.serialize_entry("radius", &3.0)?;
            map.serialize_entry("color", s.colour)?;
            map.serialize_entry("fill_color", s.colour)?;
            return map.end();
        }
        map.serialize_entry("color", s.colour)?;
        if let Some(w) = s.weight {
            map.serialize_entry("weight", &f64::from(w))?;
        }
        if let Some(d) = s.dash_array {
            map.serialize_entry("dash_array", d)?;
        }
        if self.kind == StyleKind::Area
            && let Some(opacity) = s.fill_opacity
        {
            map.serialize_entry("fill_color", s.colour)?;
            map.serialize_entry("fill_opacity", &opacity)?;
        }
        map.end()
    }
}
