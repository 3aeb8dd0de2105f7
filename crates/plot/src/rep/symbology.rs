//! REP symbology codes (`@C`, `VC`, `@BA10`, `CA[LAYER=x]`, …) → colour and line style.
//!
//! A code is `S C [L T F] [\[ATTRS\]]`: symbol type, colour letter, then optionally a line-style
//! letter, a thickness digit and a fill digit, then optional bracketed attributes. A one-letter
//! code is read as the colour.

use serde_json::{Map, Value};

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

/// A parsed symbology code.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Symbol {
    pub colour: &'static str,
    /// SVG dash pattern for the line-style letter, if it is not solid.
    pub dash_array: Option<&'static str>,
    /// Line thickness in pixels, when given.
    pub weight: Option<u8>,
    /// Fill opacity from the fill digit (`1` solid, `2` semi-transparent), when filled.
    pub fill_opacity: Option<f64>,
}

impl Symbol {
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

    fn line_fields(&self, style: &mut Map<String, Value>) {
        style.insert("color".to_owned(), Value::from(self.colour));
        if let Some(w) = self.weight {
            style.insert("weight".to_owned(), Value::from(f64::from(w)));
        }
        if let Some(d) = self.dash_array {
            style.insert("dash_array".to_owned(), Value::from(d));
        }
    }

    /// `LineProperties` for LINE, POLYLINE and VECTOR.
    pub fn line_style(&self) -> Value {
        let mut style = Map::new();
        self.line_fields(&mut style);
        Value::Object(style)
    }

    /// `PolygonProperties` for CIRCLE, RECTANGLE, POLY and ELLIPSE: the line fields, plus a
    /// fill when the code asks for one.
    pub fn area_style(&self) -> Value {
        let mut style = Map::new();
        self.line_fields(&mut style);
        if let Some(opacity) = self.fill_opacity {
            style.insert("fill_color".to_owned(), Value::from(self.colour));
            style.insert("fill_opacity".to_owned(), Value::from(opacity));
        }
        Value::Object(style)
    }

    /// `PointProperties` for TEXT-like annotations.
    pub fn point_style(&self) -> Value {
        let mut style = Map::new();
        style.insert("shape".to_owned(), Value::from("circle"));
        style.insert("radius".to_owned(), Value::from(3.0));
        style.insert("color".to_owned(), Value::from(self.colour));
        style.insert("fill_color".to_owned(), Value::from(self.colour));
        Value::Object(style)
    }
}
