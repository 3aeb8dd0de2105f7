//! The analyst's one unit setting (issue 32 item 3): distances in nautical miles, yards,
//! metres or kilometres and speeds in knots, metres per second or kilometres per hour —
//! nautical miles and knots unless changed. Surfaces fill it into a tool call that leaves its
//! unit parameter out ([`Units::fill`]), so previews, results and the undo labels all speak one
//! unit, and convert a result's unit-suffixed values (`range_m`, `average_speed_kn`) into it for
//! a person ([`Units::present`]).

use serde_json::{Map, Value, json};
use toolgate_core::ToolSpec;

use toolgate_tool_catalogue::common::{KNOTS_PER_MPS, METRES_PER_NM};

/// The distance unit of the setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Distance {
    /// Nautical miles (the default).
    #[default]
    Nm,
    /// Yards.
    Yd,
    /// Metres.
    M,
    /// Kilometres.
    Km,
}

impl Distance {
    /// The unit's short name: `nm`, `yd`, `m`, `km`.
    pub fn as_str(self) -> &'static str {
        match self {
            Distance::Nm => "nm",
            Distance::Yd => "yd",
            Distance::M => "m",
            Distance::Km => "km",
        }
    }

    /// Metres in one of this unit.
    pub fn metres(self) -> f64 {
        match self {
            Distance::Nm => METRES_PER_NM,
            Distance::Yd => 0.9144,
            Distance::M => 1.0,
            Distance::Km => 1000.0,
        }
    }

    fn parse(word: &str) -> Option<Self> {
        match word {
            "nm" | "nmi" | "nautical-miles" | "nautical_miles" => Some(Distance::Nm),
            "yd" | "yds" | "yards" => Some(Distance::Yd),
            "m" | "metres" | "meters" => Some(Distance::M),
            "km" | "kilometres" | "kilometers" => Some(Distance::Km),
            _ => None,
        }
    }

    /// How a tool's unit parameter spells this unit (`yds` in Debrief's catalogue).
    fn spellings(self) -> &'static [&'static str] {
        match self {
            Distance::Nm => &["nm"],
            Distance::Yd => &["yds", "yd"],
            Distance::M => &["m"],
            Distance::Km => &["km"],
        }
    }
}

/// The speed unit of the setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Speed {
    /// Knots (the default).
    #[default]
    Kn,
    /// Metres per second.
    Mps,
    /// Kilometres per hour.
    Kmh,
}

impl Speed {
    /// The unit's short name: `kn`, `m/s`, `km/h`.
    pub fn as_str(self) -> &'static str {
        match self {
            Speed::Kn => "kn",
            Speed::Mps => "m/s",
            Speed::Kmh => "km/h",
        }
    }

    /// Knots in one of this unit.
    pub fn knots(self) -> f64 {
        match self {
            Speed::Kn => 1.0,
            Speed::Mps => KNOTS_PER_MPS,
            Speed::Kmh => 1000.0 / METRES_PER_NM,
        }
    }

    fn parse(word: &str) -> Option<Self> {
        match word {
            "kn" | "kt" | "kts" | "knots" => Some(Speed::Kn),
            "m/s" | "mps" => Some(Speed::Mps),
            "km/h" | "kmh" | "kph" => Some(Speed::Kmh),
            _ => None,
        }
    }

    /// How a range-rate parameter spells this unit.
    fn rate_spellings(self) -> &'static [&'static str] {
        match self {
            Speed::Kn => &["kts", "kn"],
            Speed::Mps => &["m/s"],
            Speed::Kmh => &["km/h"],
        }
    }

    /// The key suffix of a value in this unit (`_kn`, `_mps`, `_kmh`).
    fn suffix(self) -> &'static str {
        match self {
            Speed::Kn => "kn",
            Speed::Mps => "mps",
            Speed::Kmh => "kmh",
        }
    }
}

/// The unit setting: one distance unit and one speed unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Units {
    pub distance: Distance,
    pub speed: Speed,
}

/// Why a unit setting was refused; each message names what would be accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnitsError {
    #[error("no unit given; give {UNITS_HELP}")]
    Empty,
    #[error("unknown unit \"{0}\"; give {UNITS_HELP}")]
    UnknownUnit(String),
    #[error("the units must be an object {{\"distance\": …, \"speed\": …}}; {UNITS_HELP}")]
    NotAnObject,
    /// The value given for `distance`, as JSON.
    #[error("unknown distance unit {0}; use nm, yd, m or km")]
    UnknownDistance(Value),
    /// The value given for `speed`, as JSON.
    #[error("unknown speed unit {0}; use kn, m/s or km/h")]
    UnknownSpeed(Value),
    #[error("unknown field \"{0}\"; the units are {{\"distance\": …, \"speed\": …}}")]
    UnknownField(String),
}

/// What [`Units::parse`] accepts, for messages.
pub const UNITS_HELP: &str = "a distance unit (nm, yd, m or km) and/or a speed unit (kn, m/s or km/h), e.g. \"nm\", \"yd,kn\" or \"m m/s\"";

impl Units {
    /// `nm`, `yd,kn`, `m m/s`, `km/h`: a distance unit, a speed unit or both (the other stays
    /// at its default).
    pub fn parse(text: &str) -> Result<Self, UnitsError> {
        let mut units = Units::default();
        let words: Vec<String> = text
            .split(|c: char| c == ',' || c.is_whitespace() || c == ';')
            .filter(|w| !w.is_empty())
            .map(str::to_ascii_lowercase)
            .collect();
        if words.is_empty() {
            return Err(UnitsError::Empty);
        }
        for w in &words {
            if let Some(d) = Distance::parse(w) {
                units.distance = d;
            } else if let Some(s) = Speed::parse(w) {
                units.speed = s;
            } else {
                return Err(UnitsError::UnknownUnit(w.clone()));
            }
        }
        Ok(units)
    }

    /// `{"distance": "nm", "speed": "kn"}`.
    pub fn to_json(self) -> Value {
        json!({"distance": self.distance.as_str(), "speed": self.speed.as_str()})
    }

    /// From `{"distance": …, "speed": …}` (either may be left out: it keeps its default).
    pub fn from_json(v: &Value) -> Result<Self, UnitsError> {
        let mut units = Units::default();
        let Some(obj) = v.as_object() else {
            return Err(UnitsError::NotAnObject);
        };
        for (k, x) in obj {
            let word = x.as_str().map(str::to_ascii_lowercase).unwrap_or_default();
            match k.as_str() {
                "distance" => {
                    units.distance = Distance::parse(&word)
                        .ok_or_else(|| UnitsError::UnknownDistance(x.clone()))?;
                }
                "speed" => {
                    units.speed =
                        Speed::parse(&word).ok_or_else(|| UnitsError::UnknownSpeed(x.clone()))?;
                }
                other => return Err(UnitsError::UnknownField(other.to_owned())),
            }
        }
        Ok(units)
    }

    /// `nm and kn`.
    pub fn label(self) -> String {
        format!("{} and {}", self.distance.as_str(), self.speed.as_str())
    }

    /// Put the setting into a call that leaves a tool's unit parameter out: a parameter named
    /// `units`, `distance_unit` or `…_units` whose choices include the setting's unit as that
    /// tool spells it (`yds` for yards; a range rate takes the speed unit, `kts` for knots).
    /// Returns the names filled. A parameter given, or a tool without the unit, is left alone.
    pub fn fill(self, spec: &ToolSpec, params: &mut Map<String, Value>) -> Vec<String> {
        let Some(props) = spec
            .input_schema
            .get("properties")
            .and_then(Value::as_object)
        else {
            return Vec::new();
        };
        let mut filled = Vec::new();
        for (name, schema) in props {
            let unit_param = name == "units" || name == "distance_unit" || name.ends_with("_units");
            if !unit_param || params.get(name).is_some_and(|v| !v.is_null()) {
                continue;
            }
            let Some(choices) = schema.get("enum").and_then(Value::as_array) else {
                continue;
            };
            let choices: Vec<&str> = choices.iter().filter_map(Value::as_str).collect();
            let rate = choices.iter().any(|c| c.contains('/'));
            let wanted = if rate {
                self.speed.rate_spellings()
            } else {
                self.distance.spellings()
            };
            if let Some(choice) = wanted.iter().find(|w| choices.contains(w)) {
                params.insert(name.clone(), json!(choice));
                filled.push(name.clone());
            }
        }
        filled
    }

    /// A result's values in the setting's units, for a person: every number whose key names a
    /// distance or speed unit (`range_m`, `width_nm`, `distance_km`, `average_speed_kn`,
    /// `speed_mps`) is converted and its key renamed (`range_nm`), and a measurement's
    /// `{"value": …, "units": "yds"}` becomes the setting's unit. Depths stay as they are (a
    /// depth in nautical miles helps nobody); everything else is unchanged.
    pub fn present(self, data: &Value) -> Value {
        match data {
            Value::Array(a) => Value::Array(a.iter().map(|x| self.present(x)).collect()),
            Value::Object(m) => {
                let mut out = Map::new();
                let measured = m
                    .get("units")
                    .and_then(Value::as_str)
                    .and_then(|u| self.factor(u));
                // `{"distance": 67.4, "distance_unit": "nm"}`: a value beside its unit's name.
                let beside = |k: &str| {
                    m.get(&format!("{k}_unit"))
                        .and_then(Value::as_str)
                        .and_then(|u| self.factor(u))
                };
                for (k, v) in m {
                    if let (Some((scale, _)), Some(x)) = (beside(k), v.as_f64()) {
                        out.insert(k.clone(), json!(round(x * scale)));
                        continue;
                    }
                    if let Some(base) = k.strip_suffix("_unit")
                        && m.get(base).is_some_and(Value::is_number)
                        && let Some((_, unit)) = v.as_str().and_then(|u| self.factor(u))
                    {
                        out.insert(k.clone(), json!(unit));
                        continue;
                    }
                    match (k.as_str(), measured, v.as_f64()) {
                        ("value", Some((scale, _)), Some(x)) => {
                            out.insert(k.clone(), json!(round(x * scale)));
                            continue;
                        }
                        ("units", Some((_, unit)), _) => {
                            out.insert(k.clone(), json!(unit));
                            continue;
                        }
                        _ => {}
                    }
                    match (self.rename(k), v.as_f64()) {
                        (Some((key, scale)), Some(x)) => {
                            out.insert(key, json!(round(x * scale)));
                        }
                        _ => {
                            out.insert(k.clone(), self.present(v));
                        }
                    }
                }
                Value::Object(out)
            }
            other => other.clone(),
        }
    }

    /// The factor from a unit named in a result (`yds`, `kts`) to the setting's, and the
    /// setting's unit name; `None` when the result is in the setting's unit already (its own
    /// spelling, `yds`, stays).
    fn factor(self, unit: &str) -> Option<(f64, &'static str)> {
        let u = unit.to_ascii_lowercase();
        if let Some(d) = Distance::parse(&u) {
            return (d != self.distance)
                .then(|| (d.metres() / self.distance.metres(), self.distance.as_str()));
        }
        let s = Speed::parse(&u)?;
        (s != self.speed).then(|| (s.knots() / self.speed.knots(), self.speed.as_str()))
    }

    /// The key in the setting's unit and the factor to it, for a key that names a unit.
    fn rename(self, key: &str) -> Option<(String, f64)> {
        let (base, suffix) = key.rsplit_once('_')?;
        if base.is_empty() || base.contains("depth") {
            return None;
        }
        // `bbox_area_sq_nm`: an area; left as the tool gave it.
        if base.ends_with("_sq") {
            return None;
        }
        let metres = match suffix {
            "m" => Some(1.0),
            "km" => Some(1000.0),
            "nm" => Some(METRES_PER_NM),
            "yd" | "yds" => Some(0.9144),
            _ => None,
        };
        if let Some(m) = metres {
            let d = self.distance;
            return Some((format!("{base}_{}", d.as_str()), m / d.metres()));
        }
        let knots = match suffix {
            "kn" | "kts" => Some(1.0),
            "mps" => Some(KNOTS_PER_MPS),
            "kmh" => Some(1000.0 / METRES_PER_NM),
            _ => None,
        }?;
        let s = self.speed;
        Some((format!("{base}_{}", s.suffix()), knots / s.knots()))
    }
}

/// Three decimals: what a person reads of a converted value.
fn round(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_setting_is_read_from_words_and_json_and_defaults_to_nm_and_kn() {
        assert_eq!(
            Units::default().to_json(),
            json!({"distance": "nm", "speed": "kn"})
        );
        let u = Units::parse("yd,kn").unwrap();
        assert_eq!((u.distance, u.speed), (Distance::Yd, Speed::Kn));
        let u = Units::parse("m m/s").unwrap();
        assert_eq!((u.distance, u.speed), (Distance::M, Speed::Mps));
        assert_eq!(Units::parse("km/h").unwrap().distance, Distance::Nm);
        assert!(
            Units::parse("furlongs")
                .unwrap_err()
                .to_string()
                .contains("nm, yd, m or km")
        );
        assert_eq!(Units::parse(" ,"), Err(UnitsError::Empty));
        let u = Units::from_json(&json!({"distance": "yd"})).unwrap();
        assert_eq!(u.to_json(), json!({"distance": "yd", "speed": "kn"}));
        // The words a person reads (the workbench's settings request shows them as they are).
        let message = |v: Value| Units::from_json(&v).unwrap_err().to_string();
        assert_eq!(
            message(json!({"distance": "league"})),
            "unknown distance unit \"league\"; use nm, yd, m or km"
        );
        assert_eq!(
            message(json!({"speed": 3})),
            "unknown speed unit 3; use kn, m/s or km/h"
        );
        assert_eq!(
            message(json!({"colour": "red"})),
            "unknown field \"colour\"; the units are {\"distance\": …, \"speed\": …}"
        );
        assert!(message(json!("nm")).starts_with("the units must be an object {\"distance\": …"));
    }

    #[test]
    fn fill_puts_the_setting_into_a_tool_s_unit_parameter_as_the_tool_spells_it() {
        let spec = |id: &str| crate::spec(id).unwrap();
        let mut p = Map::new();
        let yd = Units::parse("yd").unwrap();
        assert_eq!(yd.fill(&spec("range-calc"), &mut p), ["units"]);
        assert_eq!(p["units"], "yds");
        let mut p = Map::new();
        Units::default().fill(&spec("range-calc"), &mut p);
        assert_eq!(p["units"], "nm");
        let mut p = Map::new();
        Units::default().fill(&spec("delta-rate-calc"), &mut p);
        assert_eq!(p["units"], "kts", "a range rate takes the speed unit");
        let mut p = Map::new();
        Units::default().fill(&spec("range-bearing"), &mut p);
        assert_eq!(p["units"], "nm");
        let mut p = Map::new();
        assert!(
            yd.fill(&spec("track-stats"), &mut p).is_empty(),
            "yards are not among track-stats' choices: its own default stays"
        );
        let mut p = json!({"units": "m"}).as_object().unwrap().clone();
        assert!(
            Units::default()
                .fill(&spec("range-calc"), &mut p)
                .is_empty()
        );
        assert_eq!(p["units"], "m", "what the caller asked for stays");
        let mut p = Map::new();
        assert!(
            Units::default()
                .fill(&spec("trim-track"), &mut p)
                .is_empty()
        );
    }

    #[test]
    fn present_converts_unit_suffixed_values_into_the_setting() {
        let data = json!({"min": {"range_m": 1852.0, "time": "t"}, "average_speed_kn": 10.0,
            "depth_m": 50.0, "bbox_area_sq_nm": 4.0, "series": [{"range_m": 3704.0}],
            "value": 2000.0, "units": "yds"});
        let nm = Units::default().present(&data);
        assert_eq!(nm["min"]["range_nm"], 1.0);
        assert_eq!(nm["series"][0]["range_nm"], 2.0);
        assert_eq!(nm["average_speed_kn"], 10.0);
        assert_eq!(nm["depth_m"], 50.0);
        assert_eq!(nm["bbox_area_sq_nm"], 4.0);
        assert_eq!(nm["units"], "nm");
        assert_eq!(nm["value"], 0.987);
        let stats = json!({"distance": 1.0, "distance_unit": "nm", "distance_m": 1852.0});
        let yd = Units::parse("yd").unwrap().present(&stats);
        assert_eq!(
            yd,
            json!({"distance": 2025.372, "distance_unit": "yd", "distance_yd": 2025.372})
        );
        let metric = Units::parse("m m/s").unwrap().present(&data);
        assert_eq!(metric["min"]["range_m"], 1852.0);
        assert_eq!(metric["average_speed_mps"], 5.144);
        assert_eq!(metric["value"], 1828.8);
    }
}
