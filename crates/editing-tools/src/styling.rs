//! `track/styling`: track colour, position symbols and labels, label/symbol intervals, hiding
//! positions in a time window, and shading sonar cuts by time.
//!
//! Every tool here is a mutation: it answers one item per modified feature (the whole
//! feature, restyled) and never touches its input. Features of other kinds are skipped.
//! `set-track-color`, `apply-symbol-style`, `label-interval` and `symbol-interval` were
//! toolgate tools before the catalogue; their parameters (named colours, `#rrggbb`, the
//! `PT15M` default interval) keep working.

use serde_json::{Map, Value, json};

use toolgate_tool_catalogue::common::{
    DURATION_PATTERN, DURATION_PRESETS, NAMED_COLOURS, duration_seconds, multi,
};
use toolgate_tool_catalogue::model::{id_of, is_kind, is_track, key_for, parse_time, prop_str};
use toolgate_tool_catalogue::{CalcInput, Entry, Item, ToolError};

const CAT: &str = "track/styling";
const V1: &str = "1.0";
const STYLED: &str = "mutation/track/styled";
const SHADED: &str = "mutation/sensor/shaded";
const SYMBOLS: &[&str] = &["circle", "square", "diamond", "triangle", "cross"];
const FIX_SYMBOLS: &[&str] = &["SQUARE", "CIRCLE", "DIAMOND", "TRIANGLE", "CROSS"];
const MODES: &[&str] = &["RAINBOW_SHADE", "BLUE_RED_SPECTRUM", "CLEAR_SHADE"];
/// Debrief's default line and contact colour.
const DEFAULT_COLOUR: &str = "#3388ff";

fn tracks() -> Value {
    multi(&["TRACK"])
}

fn sensors() -> Value {
    multi(&["SENSOR"])
}

pub(crate) const TOOLS: &[Entry] = &[
    Entry {
        id: "set-track-color",
        spec_category: CAT,
        spec_version: V1,
        description: "Set the line colour of one or more TRACK features (properties.style.line.color), e.g. \"make NELSON red\".",
        output_kind: STYLED,
        requirements: tracks,
        params: set_track_color_params,
        required: &["color"],
        run: set_track_color,
    },
    Entry {
        id: "apply-symbol-style",
        spec_category: CAT,
        spec_version: V1,
        description: "Set the position-marker symbol (shape, radius, fill colour) of one or more TRACK features, e.g. \"show NELSON's positions as squares\".",
        output_kind: STYLED,
        requirements: tracks,
        params: apply_symbol_style_params,
        required: &[],
        run: apply_symbol_style,
    },
    Entry {
        id: "label-interval",
        spec_category: CAT,
        spec_version: V1,
        description: "Set how often position labels are shown along one or more TRACK features (properties.label_interval) and turn labels on, e.g. \"label NELSON every hour\".",
        output_kind: STYLED,
        requirements: tracks,
        params: label_interval_params,
        required: &[],
        run: label_interval,
    },
    Entry {
        id: "symbol-interval",
        spec_category: CAT,
        spec_version: V1,
        description: "Set how often position symbols are drawn along one or more TRACK features (properties.symbol_interval) and turn symbols on, e.g. \"show a symbol every 5 minutes\".",
        output_kind: STYLED,
        requirements: tracks,
        params: symbol_interval_params,
        required: &[],
        run: symbol_interval,
    },
    Entry {
        id: "hide-reveal-objects",
        spec_category: CAT,
        spec_version: V1,
        description: "Hide (visible false, the default) or show (visible true) every position of one or more TRACK features whose time lies in [start_time, end_time], e.g. \"hide NELSON's fixes between 10:00 and 10:30\".",
        output_kind: STYLED,
        requirements: tracks,
        params: hide_reveal_params,
        required: &["start_time", "end_time"],
        run: hide_reveal_objects,
    },
    Entry {
        id: "rainbow-shade-sonar-cuts",
        spec_category: CAT,
        spec_version: V1,
        description: "Colour the sonar contacts (cuts) of one or more SENSOR features by time: RAINBOW_SHADE (hue from first to last cut, the default), BLUE_RED_SPECTRUM (blue to red), or CLEAR_SHADE (back to the default colour).",
        output_kind: SHADED,
        requirements: sensors,
        params: rainbow_params,
        required: &[],
        run: rainbow_shade_sonar_cuts,
    },
    Entry {
        id: "reformat-fixes",
        spec_category: CAT,
        spec_version: V1,
        description: "Give every position (fix) of one or more TRACK features one symbol (SQUARE, CIRCLE, DIAMOND, TRIANGLE, CROSS) and show or hide their labels (show_label, default true).",
        output_kind: STYLED,
        requirements: tracks,
        params: reformat_fixes_params,
        required: &["symbol"],
        run: reformat_fixes,
    },
];

// ---------------------------------------------------------------- parameter schemas

/// A CSS colour: a named colour, `#rgb`, `#rgba`, `#rrggbb`, `#rrggbbaa`, or an `rgb()`,
/// `rgba()`, `hsl()`, `hsla()` function.
fn css_colour_pattern() -> String {
    format!(
        r"^(?:{}|#(?:[0-9A-Fa-f]{{3,4}}|[0-9A-Fa-f]{{6}}|[0-9A-Fa-f]{{8}})|(?:rgba?|hsla?)\(\s*[0-9.%+-]+(?:\s*[,/ ]\s*[0-9.%+-]+){{2,3}}\s*\))$",
        NAMED_COLOURS.join("|")
    )
}

/// Whether `c` is a colour [`css_colour_pattern`] accepts (the schema checked already;
/// this is defence for callers that bypass it).
pub(crate) fn is_css_colour(c: &str) -> bool {
    let hex =
        |h: &str| matches!(h.len(), 3 | 4 | 6 | 8) && h.chars().all(|x| x.is_ascii_hexdigit());
    if let Some(h) = c.strip_prefix('#') {
        return hex(h);
    }
    if NAMED_COLOURS.contains(&c) {
        return true;
    }
    let Some((name, rest)) = c.split_once('(') else {
        return false;
    };
    let Some(args) = rest.strip_suffix(')') else {
        return false;
    };
    let parts: Vec<&str> = args
        .split(|ch: char| ch == ',' || ch == '/' || ch.is_whitespace())
        .filter(|p| !p.is_empty())
        .collect();
    matches!(name, "rgb" | "rgba" | "hsl" | "hsla")
        && (3..=4).contains(&parts.len())
        && parts.iter().all(|p| {
            let n = p.strip_suffix('%').unwrap_or(p);
            n.parse::<f64>().is_ok_and(f64::is_finite)
        })
}

fn colour_schema(description: &str) -> Value {
    json!({
        "type": "string",
        "description": format!(
            "{description} One of {}, a CSS hex colour (\"#FF0000\", \"#f00\", \"#FF000080\") or rgb()/rgba()/hsl()/hsla() (\"rgb(255,0,0)\").",
            NAMED_COLOURS.join(", ")
        ),
        "pattern": css_colour_pattern(),
        "examples": ["red", "#FF0000", "rgb(255,0,0)"],
    })
}

fn set_track_color_params() -> Value {
    json!({ "color": colour_schema("Line colour to apply.") })
}

fn apply_symbol_style_params() -> Value {
    json!({
        "symbol": {"type": "string", "enum": SYMBOLS, "default": "circle", "description": "Marker shape."},
        "radius": {"type": "number", "exclusiveMinimum": 0, "description": "Marker radius in pixels (greater than 0); unchanged when omitted (4 for a track without a point style)."},
        "fill_color": colour_schema("Marker fill colour; defaults to the existing fill colour, else the track's line colour."),
    })
}

fn interval_schema(what: &str) -> Value {
    json!({
        "interval": {
            "type": "string",
            "description": format!(
                "Time between {what} as an ISO-8601 duration, e.g. PT15M (15 minutes), PT1H or P1DT12H; presets: {}.",
                DURATION_PRESETS.join(", ")
            ),
            "pattern": DURATION_PATTERN,
            "examples": DURATION_PRESETS,
            "default": "PT15M",
        }
    })
}

fn label_interval_params() -> Value {
    interval_schema("labelled positions")
}

fn symbol_interval_params() -> Value {
    interval_schema("position symbols")
}

fn hide_reveal_params() -> Value {
    json!({
        "start_time": {"type": "string", "format": "date-time", "description": "Start of the time window, ISO-8601 (inclusive), e.g. 2024-01-01T10:00:00Z."},
        "end_time": {"type": "string", "format": "date-time", "description": "End of the time window, ISO-8601 (inclusive); not before start_time."},
        "visible": {"type": "boolean", "default": false, "description": "true shows the positions in the window, false (default) hides them."},
    })
}

fn rainbow_params() -> Value {
    json!({
        "mode": {"type": "string", "enum": MODES, "default": "RAINBOW_SHADE", "description": "RAINBOW_SHADE: hue runs from red (first cut) round the colour wheel (last cut); BLUE_RED_SPECTRUM: blue (first) to red (last); CLEAR_SHADE: every cut back to the default colour."},
    })
}

fn reformat_fixes_params() -> Value {
    json!({
        "symbol": {"type": "string", "enum": FIX_SYMBOLS, "description": "Symbol for every fix."},
        "show_label": {"type": "boolean", "default": true, "description": "Show (true, default) or hide (false) every fix's label."},
    })
}

// ---------------------------------------------------------------- shared helpers

/// `map[key]` as an object, created from `default` when absent, null or not an object
/// (always `Some`; an `Option` so that no code path can panic).
fn object_at<'m>(
    map: &'m mut Map<String, Value>,
    key: &str,
    default: impl FnOnce() -> Value,
) -> Option<&'m mut Map<String, Value>> {
    let entry = map.entry(key).or_insert(Value::Null);
    if !entry.is_object() {
        *entry = match default() {
            Value::Object(m) => Value::Object(m),
            _ => Value::Object(Map::new()),
        };
    }
    entry.as_object_mut()
}

fn default_line() -> Value {
    json!({"stroke": true, "color": DEFAULT_COLOUR, "weight": 3, "opacity": 1.0})
}

fn default_point() -> Value {
    json!({"shape": "circle", "radius": 4, "fill": true, "fill_color": DEFAULT_COLOUR,
        "fill_opacity": 0.8, "stroke": true, "color": "#ffffff", "weight": 1, "opacity": 1.0})
}

fn default_style() -> Value {
    json!({"line": default_line(), "point": default_point()})
}

fn default_position_style() -> Value {
    json!({"show_symbol": true, "symbol": "circle", "show_label": false})
}

/// The properties object of a (cloned) feature, created when absent.
fn props_of(f: &mut Value) -> Option<&mut Map<String, Value>> {
    f.as_object_mut()
        .and_then(|o| object_at(o, "properties", || json!({})))
}

/// The input's tracks, each cloned and edited, with their ids (empty when there are none).
fn restyle(input: &CalcInput, mut edit: impl FnMut(&mut Value)) -> Vec<(String, Value)> {
    input
        .features
        .iter()
        .filter(|f| is_track(f))
        .map(|f| {
            let mut out = f.clone();
            edit(&mut out);
            (id_of(f).unwrap_or_default(), out)
        })
        .collect()
}

fn no_tracks() -> ToolError {
    ToolError::invalid("No track features found in input")
}

/// One mutation item per restyled feature, all with the same label.
fn items(changed: Vec<(String, Value)>, result_type: &str, label: &str) -> Vec<Item> {
    changed
        .into_iter()
        .map(|(id, f)| Item::feature(f, result_type, vec![id], label))
        .collect()
}

fn required_colour<'a>(input: &CalcInput<'a>, name: &str) -> Result<Option<&'a str>, ToolError> {
    match input.param(name) {
        None => Ok(None),
        Some(Value::String(c)) if is_css_colour(c) => Ok(Some(c)),
        Some(other) => Err(ToolError::invalid(format!(
            "{name} must be a valid CSS color string (a name such as red, \"#FF0000\" or \"rgb(255,0,0)\"); got {other}"
        ))),
    }
}

// ---------------------------------------------------------------- colour and symbols

fn set_track_color(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    let colour = required_colour(input, "color")?.ok_or_else(|| {
        ToolError::invalid(
            "color must be a valid CSS color string, e.g. {\"color\": \"red\"} or {\"color\": \"#FF0000\"}",
        )
    })?;
    let changed = restyle(input, |f| {
        if let Some(line) = props_of(f)
            .and_then(|p| object_at(p, "style", default_style))
            .and_then(|s| object_at(s, "line", default_line))
        {
            line.insert("color".into(), json!(colour));
        }
    });
    if changed.is_empty() {
        return Err(no_tracks());
    }
    let label = format!("Set color to {colour} for {} track(s)", changed.len());
    Ok(items(changed, STYLED, &label))
}

fn apply_symbol_style(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    if input.features.is_empty() {
        return Err(ToolError::invalid("Input features required"));
    }
    let symbol = input.str_param("symbol").unwrap_or("circle");
    if !SYMBOLS.contains(&symbol) {
        return Err(ToolError::invalid(format!(
            "symbol must be one of: {}; got \"{symbol}\"",
            SYMBOLS.join(", ")
        )));
    }
    let radius = input.param("radius");
    if let Some(r) = radius
        && !r.as_f64().is_some_and(|r| r > 0.0 && r.is_finite())
    {
        return Err(ToolError::invalid(format!(
            "radius must be positive (pixels, e.g. 4); got {r}"
        )));
    }
    let fill = required_colour(input, "fill_color")?;
    let changed = restyle(input, |f| {
        let Some(props) = props_of(f) else {
            return;
        };
        let Some(style) = object_at(props, "style", default_style) else {
            return;
        };
        let line_colour = style
            .get("line")
            .and_then(|l| l.get("color"))
            .filter(|c| !c.is_null())
            .cloned();
        // A new point style takes the track's line colour as its fill (the spec's edge case
        // "no fill_color provided, line color exists").
        let new_point = || {
            let mut p = default_point();
            if let Some(c) = &line_colour {
                p["fill_color"] = c.clone();
            }
            p
        };
        let Some(point) = object_at(style, "point", new_point) else {
            return;
        };
        point.insert("shape".into(), json!(symbol));
        if let Some(r) = radius {
            point.insert("radius".into(), r.clone());
        }
        match (fill, line_colour) {
            (Some(fill), _) => {
                point.insert("fill_color".into(), json!(fill));
            }
            (None, Some(line)) if point.get("fill_color").is_none_or(Value::is_null) => {
                point.insert("fill_color".into(), line);
            }
            _ => {}
        }
        // A renderer reads the per-position default symbol before the point style, so keep
        // the two in step where the track has one (documented deviation).
        if let Some(Value::Object(dps)) = props.get_mut("default_position_style") {
            dps.insert("symbol".into(), json!(symbol));
        }
    });
    if changed.is_empty() {
        return Err(no_tracks());
    }
    let label = format!("Applied {symbol} symbol to {} track(s)", changed.len());
    Ok(items(changed, STYLED, &label))
}

// ---------------------------------------------------------------- intervals

fn set_interval(
    input: &CalcInput,
    property: &str,
    switch: &str,
    what: &str,
) -> Result<Vec<Item>, ToolError> {
    let interval = input.str_param("interval").unwrap_or("PT15M");
    if duration_seconds(interval).is_none() {
        return Err(ToolError::invalid(format!(
            "interval must be a valid ISO 8601 duration (e.g., PT5M, PT1H); got \"{interval}\""
        )));
    }
    let changed = restyle(input, |f| {
        let Some(props) = props_of(f) else {
            return;
        };
        props.insert(property.into(), json!(interval));
        if let Some(dps) = object_at(props, "default_position_style", default_position_style) {
            dps.insert(switch.into(), json!(true));
        }
    });
    if changed.is_empty() {
        return Err(no_tracks());
    }
    let label = format!(
        "Set {what} interval to {interval} for {} track(s)",
        changed.len()
    );
    Ok(items(changed, STYLED, &label))
}

fn label_interval(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    set_interval(input, "label_interval", "show_label", "label")
}

fn symbol_interval(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    set_interval(input, "symbol_interval", "show_symbol", "symbol")
}

// ---------------------------------------------------------------- positions

/// The positions array of a (cloned) track, in the naming the track uses.
fn positions_mut(f: &mut Value) -> Option<&mut Vec<Value>> {
    let key = key_for(f, "positions");
    props_of(f)?.get_mut(&key).and_then(Value::as_array_mut)
}

fn hide_reveal_objects(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    if input.features.is_empty() {
        return Err(ToolError::invalid("Input features required"));
    }
    let time = |name: &str| -> Result<(&str, i64), ToolError> {
        let text = input.str_param(name).unwrap_or_default();
        parse_time(text).map(|t| (text, t)).ok_or_else(|| {
            ToolError::invalid(format!(
                "{name} must be a valid ISO 8601 datetime, e.g. 2024-01-01T10:00:00Z; got \"{text}\""
            ))
        })
    };
    let (start_text, start) = time("start_time")?;
    let (end_text, end) = time("end_time")?;
    if end < start {
        return Err(ToolError::invalid(
            "end_time must be greater than or equal to start_time",
        ));
    }
    let visible = input
        .param("visible")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let mut affected = 0usize;
    let changed = restyle(input, |f| {
        for p in positions_mut(f).into_iter().flatten() {
            let t = p.get("time").and_then(Value::as_str).and_then(parse_time);
            if let (Some(t), Some(p)) = (t, p.as_object_mut())
                && (start..=end).contains(&t)
            {
                p.insert("visible".into(), json!(visible));
                affected += 1;
            }
        }
    });
    if changed.is_empty() {
        return Err(no_tracks());
    }
    let label = format!(
        "{} {affected} object(s) in time period {start_text} to {end_text} across {} track(s)",
        if visible { "Shown" } else { "Hidden" },
        changed.len()
    );
    Ok(items(changed, STYLED, &label))
}

fn reformat_fixes(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    if input.features.is_empty() {
        return Err(ToolError::invalid("Input features required"));
    }
    let symbol = input
        .str_param("symbol")
        .filter(|s| FIX_SYMBOLS.contains(s))
        .ok_or_else(|| {
            ToolError::invalid(format!("symbol must be one of: {}", FIX_SYMBOLS.join(", ")))
        })?;
    let show_label = input
        .param("show_label")
        .and_then(Value::as_bool)
        .unwrap_or(true);
    let changed = restyle(input, |f| {
        for p in positions_mut(f).into_iter().flatten() {
            if let Some(p) = p.as_object_mut() {
                p.insert("symbol".into(), json!(symbol));
                p.insert("show_label".into(), json!(show_label));
            }
        }
        let Some(props) = props_of(f) else {
            return;
        };
        if let Some(dps) = object_at(
            props,
            "default_position_style",
            || json!({"show_symbol": true, "symbol": symbol, "show_label": show_label}),
        ) {
            dps.insert("symbol".into(), json!(symbol));
            dps.insert("show_label".into(), json!(show_label));
        }
        if let Some(Value::Object(point)) = props.get_mut("style").and_then(|s| s.get_mut("point"))
        {
            point.insert("shape".into(), json!(symbol));
        }
    });
    if changed.is_empty() {
        return Err(no_tracks());
    }
    let label = format!(
        "Reformatted fixes to {symbol} symbol, labels {} for {} track(s)",
        if show_label { "shown" } else { "hidden" },
        changed.len()
    );
    Ok(items(changed, STYLED, &label))
}

// ---------------------------------------------------------------- sonar cuts

/// A CSS-like `hsb(h,s,b)` colour as Debrief writes it (hue as a fraction of the wheel).
fn hsb(hue: f64) -> String {
    format!("hsb({hue:.3},0.8,0.7)")
}

/// Blue (first cut) to red (last cut); the two channels always sum to 255.
fn blue_red(proportion: f64) -> String {
    let r = (255.0 * proportion).round().clamp(0.0, 255.0) as u8;
    format!("rgb({r},0,{})", 255 - r)
}

fn rainbow_shade_sonar_cuts(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    if input.features.is_empty() {
        return Err(ToolError::invalid("Input features required"));
    }
    let mode = input.str_param("mode").unwrap_or("RAINBOW_SHADE");
    if !MODES.contains(&mode) {
        return Err(ToolError::invalid(
            "mode must be RAINBOW_SHADE, BLUE_RED_SPECTRUM, or CLEAR_SHADE",
        ));
    }
    let mut out = Vec::new();
    for f in input.features.iter().filter(|f| is_kind(f, "SENSOR")) {
        let key = key_for(f, "contacts");
        let mut feature = f.clone();
        let Some(Value::Array(contacts)) = props_of(&mut feature).and_then(|p| p.get_mut(&key))
        else {
            continue;
        };
        if contacts.is_empty() {
            continue;
        }
        let time_of = |c: &Value| c.get("time").and_then(Value::as_str).and_then(parse_time);
        // Stable: contacts without a readable time keep their order at the end.
        contacts.sort_by_key(|c| time_of(c).unwrap_or(i64::MAX));
        let times: Vec<i64> = contacts.iter().filter_map(time_of).collect();
        let (first, last) = (
            times.first().copied().unwrap_or(0),
            times.last().copied().unwrap_or(0),
        );
        let span = (last - first) as f64;
        for c in contacts.iter_mut() {
            let proportion = match time_of(c) {
                Some(t) if span > 0.0 => (t - first) as f64 / span,
                _ => 0.0,
            };
            let colour = match mode {
                "RAINBOW_SHADE" => hsb(proportion),
                "BLUE_RED_SPECTRUM" => blue_red(proportion),
                _ => DEFAULT_COLOUR.to_owned(),
            };
            if let Some(style) = c
                .as_object_mut()
                .and_then(|c| object_at(c, "style", || json!({})))
            {
                style.insert("color".into(), json!(colour));
            }
        }
        let n = contacts.len();
        let id = id_of(f).unwrap_or_default();
        let name = ["sensor_name", "name"]
            .iter()
            .find_map(|k| prop_str(f, k))
            .map(str::to_owned)
            .unwrap_or_else(|| id.clone());
        // The spec's mode_label("CLEAR_SHADE") is "Cleared shading on", which reads as the
        // whole verb: "Cleared shading on 1 sonar contact(s) on Hull Sonar".
        let label = match mode {
            "RAINBOW_SHADE" => format!("Rainbow shaded {n} sonar contact(s) on {name}"),
            "BLUE_RED_SPECTRUM" => {
                format!("Blue-red spectrum shaded {n} sonar contact(s) on {name}")
            }
            _ => format!("Cleared shading on {n} sonar contact(s) on {name}"),
        };
        out.push(Item::feature(feature, SHADED, vec![id], label));
    }
    if out.is_empty() {
        return Err(ToolError::invalid(
            "No sensor features with contacts found in input",
        ));
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use toolgate_core::{Edit, ParamValidator};
    use toolgate_tool_catalogue::Body;
    use toolgate_tool_catalogue::testing::{call, edited, point, track};

    fn run(
        id: &str,
        params: Value,
        subject: &Value,
    ) -> Result<toolgate_core::ToolOutcome, toolgate_core::CallError> {
        toolgate_native_tools::call_entry(entry(id), &call(id, params, subject))
    }

    fn validator(id: &str) -> ParamValidator {
        let spec = entry(id).spec();
        ParamValidator::compile(id, &spec.input_schema).unwrap()
    }

    fn params(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    /// This category's tool with this id.
    fn entry(id: &str) -> &'static Entry {
        TOOLS.iter().find(|e| e.id == id).unwrap()
    }

    #[test]
    fn colour_is_set_other_kinds_skipped_and_input_untouched() {
        let subject = json!([track("t1", "NELSON", 3), point("p1", "Datum A")]);
        let before = subject.clone();
        let out = run("set-track-color", json!({"color": "red"}), &subject).unwrap();
        assert_eq!(subject, before, "input unchanged");
        assert_eq!(out.kind.as_str(), STYLED);
        let items = edited(&out);
        assert_eq!(items.len(), 1, "the POINT is skipped");
        assert_eq!(items[0]["properties"]["style"]["line"]["color"], "red");
        assert_eq!(
            items[0]["properties"]["style"]["point"]["color"], "#FF0000",
            "the point style is left alone"
        );
        let cs = out.change_set.unwrap();
        assert_eq!(cs.label, "Set color to red for 1 track(s) — NELSON");
        assert!(matches!(&cs.edits[0], Edit::Upsert { id, .. } if id == "t1"));
    }

    #[test]
    fn colour_creates_a_missing_style_or_line() {
        let mut t = track("t1", "NELSON", 2);
        t["properties"].as_object_mut().unwrap().remove("style");
        let out = run("set-track-color", json!({"color": "#00ff7F"}), &json!([t])).unwrap();
        let style = &edited(&out)[0]["properties"]["style"];
        assert_eq!(
            style["line"],
            json!({"stroke": true, "color": "#00ff7F", "weight": 3, "opacity": 1.0})
        );
        assert_eq!(style["point"], default_point());
        let mut t = track("t1", "NELSON", 2);
        t["properties"]["style"] = json!({"point": {"shape": "square"}});
        let out = run("set-track-color", json!({"color": "blue"}), &json!([t])).unwrap();
        let style = &edited(&out)[0]["properties"]["style"];
        assert_eq!(style["line"]["color"], "blue");
        assert_eq!(style["line"]["weight"], 3);
        assert_eq!(style["point"], json!({"shape": "square"}));
    }

    #[test]
    fn colours_accept_css_forms_in_the_schema_and_the_tool() {
        let v = validator("set-track-color");
        let ok = [
            "red",
            "grey",
            "#FF0000",
            "#a1b2c3",
            "#f00",
            "#f008",
            "#FF000080",
            "rgb(255,0,0)",
            "rgb(255, 0, 0)",
            "rgba(255,0,0,0.5)",
            "hsl(120, 100%, 50%)",
            "hsla(120,100%,50%,0.3)",
        ];
        for c in ok {
            assert!(v.validate(&params(json!({"color": c}))).is_ok(), "{c}");
            assert!(is_css_colour(c), "{c}");
        }
        let bad = [
            "mauve",
            "FF0000",
            "Red",
            "#GG0000",
            " red",
            "#ff000",
            "rgb(1,2)",
            "rgb(a,b,c)",
            "notacolor",
            "",
        ];
        for c in bad {
            assert!(v.validate(&params(json!({"color": c}))).is_err(), "{c}");
            assert!(!is_css_colour(c), "{c}");
        }
        assert_eq!(
            v.validate(&params(json!({}))).unwrap_err(),
            ["missing required parameter \"color\""]
        );
        // the tool checks too, for callers that bypass the schema
        let err = set_track_color(&CalcInput::new(
            &[track("t", "T", 2)],
            &params(json!({"color": "mauve"})),
        ))
        .unwrap_err();
        assert!(err.message.contains("mauve"), "{}", err.message);
    }

    #[test]
    fn no_tracks_is_the_specs_error() {
        for id in [
            "set-track-color",
            "apply-symbol-style",
            "label-interval",
            "symbol-interval",
            "reformat-fixes",
        ] {
            let p = match id {
                "set-track-color" => json!({"color": "red"}),
                "reformat-fixes" => json!({"symbol": "CIRCLE"}),
                _ => json!({}),
            };
            let features = [point("p1", "Datum A")];
            let err = (entry(id).run)(&CalcInput::new(&features, &params(p))).unwrap_err();
            assert_eq!(err.message, "No track features found in input", "{id}");
        }
    }

    #[test]
    fn symbol_style_defaults_fill_and_radius() {
        // no point style: a new one, filled with the line colour
        let mut t = track("t1", "NELSON", 2);
        t["properties"]["style"] = json!({"line": {"color": "#00FF00"}});
        let out = run("apply-symbol-style", json!({}), &json!([t])).unwrap();
        let props = &edited(&out)[0]["properties"];
        assert_eq!(
            props["style"]["point"]["shape"], "circle",
            "the spec's default"
        );
        assert_eq!(props["style"]["point"]["radius"], 4);
        assert_eq!(props["style"]["point"]["fill_color"], "#00FF00");
        assert_eq!(props["default_position_style"]["symbol"], "circle");
        assert_eq!(
            props["default_position_style"]["show_symbol"], false,
            "untouched"
        );
        assert_eq!(out.summary, "Applied circle symbol to 1 track(s)");

        let out = run(
            "apply-symbol-style",
            json!({"symbol": "diamond", "radius": 6, "fill_color": "blue"}),
            &json!([track("t1", "NELSON", 2)]),
        )
        .unwrap();
        let props = &edited(&out)[0]["properties"];
        assert_eq!(props["style"]["point"]["shape"], "diamond");
        assert_eq!(props["style"]["point"]["radius"], 6);
        assert_eq!(props["style"]["point"]["fill_color"], "blue");
        assert_eq!(props["default_position_style"]["symbol"], "diamond");

        let t = [track("t1", "NELSON", 2)];
        for bad in [json!({"radius": 0}), json!({"radius": -1})] {
            let err = apply_symbol_style(&CalcInput::new(&t, &params(bad))).unwrap_err();
            assert!(
                err.message.starts_with("radius must be positive"),
                "{}",
                err.message
            );
        }
        let err = apply_symbol_style(&CalcInput::new(&t, &params(json!({"symbol": "star"}))))
            .unwrap_err();
        assert!(
            err.message
                .contains("circle, square, diamond, triangle, cross"),
            "{}",
            err.message
        );
        assert!(
            validator("apply-symbol-style")
                .validate(&params(json!({"radius": 0})))
                .is_err()
        );
    }

    #[test]
    fn intervals_set_the_property_and_switch_on() {
        let subject = json!([track("a", "A", 2), track("b", "B", 2)]);
        let out = run("label-interval", json!({}), &subject).unwrap();
        let items = edited(&out);
        assert_eq!(items.len(), 2);
        for f in &items {
            assert_eq!(f["properties"]["label_interval"], "PT15M");
            assert_eq!(
                f["properties"]["default_position_style"]["show_label"],
                true
            );
            assert_eq!(
                f["properties"]["default_position_style"]["show_symbol"],
                false
            );
        }
        let out = run("symbol-interval", json!({"interval": "PT1H"}), &subject).unwrap();
        for f in &edited(&out) {
            assert_eq!(f["properties"]["symbol_interval"], "PT1H");
            assert_eq!(
                f["properties"]["default_position_style"]["show_symbol"],
                true
            );
        }
        assert_eq!(
            out.change_set.unwrap().label,
            "Set symbol interval to PT1H for 2 track(s) — A, B"
        );
        // no default_position_style: the spec's default, switched on
        let mut t = track("t", "T", 2);
        t["properties"]
            .as_object_mut()
            .unwrap()
            .remove("default_position_style");
        let out = run("label-interval", json!({"interval": "PT0S"}), &json!([t])).unwrap();
        assert_eq!(
            edited(&out)[0]["properties"]["default_position_style"],
            json!({"show_symbol": true, "symbol": "circle", "show_label": true}),
            "zero is accepted (labels on every position)"
        );
        let v = validator("label-interval");
        for ok in ["PT15M", "PT1H", "P1D", "PT30S", "PT1H30M", "P1DT12H"] {
            assert!(v.validate(&params(json!({"interval": ok}))).is_ok(), "{ok}");
        }
        for bad in ["15 minutes", "PT15", "1H"] {
            assert!(
                v.validate(&params(json!({"interval": bad}))).is_err(),
                "{bad}"
            );
            let err = label_interval(&CalcInput::new(
                &[track("t", "T", 2)],
                &params(json!({"interval": bad})),
            ))
            .unwrap_err();
            assert!(err.message.contains("PT5M"), "{}", err.message);
        }
    }

    #[test]
    fn hide_reveal_is_inclusive_and_defaults_to_hide() {
        // positions at 00:00, 00:01, 00:02, 00:03
        let subject = [track("t", "T", 4), point("p", "P")];
        let window = |v: Value| {
            let mut p = params(
                json!({"start_time": "2026-03-01T00:01:00Z", "end_time": "2026-03-01T00:02:00Z"}),
            );
            if !v.is_null() {
                p.insert("visible".into(), v);
            }
            p
        };
        let items = hide_reveal_objects(&CalcInput::new(&subject, &window(Value::Null))).unwrap();
        assert_eq!(items.len(), 1);
        let Body::Feature(f) = &items[0].body else {
            panic!()
        };
        let vis: Vec<Value> = f["properties"]["positions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["visible"].clone())
            .collect();
        assert_eq!(vis, [Value::Null, json!(false), json!(false), Value::Null]);
        assert_eq!(
            items[0].label,
            "Hidden 2 object(s) in time period 2026-03-01T00:01:00Z to 2026-03-01T00:02:00Z across 1 track(s)"
        );
        let items = hide_reveal_objects(&CalcInput::new(&subject, &window(json!(true)))).unwrap();
        assert!(items[0].label.starts_with("Shown 2 object(s)"));
        let reversed = params(
            json!({"start_time": "2026-03-01T00:02:00Z", "end_time": "2026-03-01T00:01:00Z"}),
        );
        let err = hide_reveal_objects(&CalcInput::new(&subject, &reversed)).unwrap_err();
        assert_eq!(
            err.message,
            "end_time must be greater than or equal to start_time"
        );
        let bad = params(json!({"start_time": "noon", "end_time": "2026-03-01T00:01:00Z"}));
        let err = hide_reveal_objects(&CalcInput::new(&subject, &bad)).unwrap_err();
        assert!(
            err.message
                .starts_with("start_time must be a valid ISO 8601 datetime")
        );
        assert_eq!(
            hide_reveal_objects(&CalcInput::new(&[], &window(Value::Null)))
                .unwrap_err()
                .message,
            "Input features required"
        );
    }

    #[test]
    fn reformat_fixes_sets_every_fix_and_the_defaults() {
        let mut t = track("t", "T", 3);
        t["properties"]
            .as_object_mut()
            .unwrap()
            .remove("default_position_style");
        let features = [t];
        let items = reformat_fixes(&CalcInput::new(
            &features,
            &params(json!({"symbol": "CROSS"})),
        ))
        .unwrap();
        let Body::Feature(f) = &items[0].body else {
            panic!()
        };
        for p in f["properties"]["positions"].as_array().unwrap() {
            assert_eq!(p["symbol"], "CROSS");
            assert_eq!(p["show_label"], true);
        }
        assert_eq!(
            f["properties"]["default_position_style"],
            json!({"show_symbol": true, "symbol": "CROSS", "show_label": true})
        );
        assert_eq!(f["properties"]["style"]["point"]["shape"], "CROSS");
        assert_eq!(
            items[0].label,
            "Reformatted fixes to CROSS symbol, labels shown for 1 track(s)"
        );
        let err = reformat_fixes(&CalcInput::new(
            &features,
            &params(json!({"symbol": "STAR"})),
        ))
        .unwrap_err();
        assert_eq!(
            err.message,
            "symbol must be one of: SQUARE, CIRCLE, DIAMOND, TRIANGLE, CROSS"
        );
    }

    fn sensor(id: &str, times: &[&str]) -> Value {
        let contacts: Vec<Value> = times
            .iter()
            .enumerate()
            .map(|(i, t)| json!({"id": format!("{id}-{i}"), "time": t, "bearing": 10.0}))
            .collect();
        json!({"type": "Feature", "id": id, "geometry": null,
            "properties": {"kind": "SENSOR", "sensor_name": "Array", "contacts": contacts}})
    }

    #[test]
    fn sonar_cuts_are_sorted_and_shaded_by_time() {
        let s = sensor(
            "s",
            &[
                "2024-01-15T10:10:00Z",
                "2024-01-15T10:00:00Z",
                "2024-01-15T10:05:00Z",
            ],
        );
        let features = [s, track("t", "T", 2), sensor("empty", &[])];
        let items =
            rainbow_shade_sonar_cuts(&CalcInput::new(&features, &params(json!({})))).unwrap();
        assert_eq!(
            items.len(),
            1,
            "the track and the sensor without cuts are skipped"
        );
        let Body::Feature(f) = &items[0].body else {
            panic!()
        };
        let got: Vec<(&str, &str)> = f["properties"]["contacts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["id"].as_str().unwrap(),
                    c["style"]["color"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("s-1", "hsb(0.000,0.8,0.7)"),
                ("s-2", "hsb(0.500,0.8,0.7)"),
                ("s-0", "hsb(1.000,0.8,0.7)")
            ]
        );
        assert_eq!(items[0].label, "Rainbow shaded 3 sonar contact(s) on Array");
        // one cut: proportion 0, pure blue
        let one = [sensor("s", &["2024-01-15T10:00:00Z"])];
        let items = rainbow_shade_sonar_cuts(&CalcInput::new(
            &one,
            &params(json!({"mode": "BLUE_RED_SPECTRUM"})),
        ))
        .unwrap();
        let Body::Feature(f) = &items[0].body else {
            panic!()
        };
        assert_eq!(
            f["properties"]["contacts"][0]["style"]["color"],
            "rgb(0,0,255)"
        );
        let err =
            rainbow_shade_sonar_cuts(&CalcInput::new(&[track("t", "T", 2)], &params(json!({}))))
                .unwrap_err();
        assert_eq!(
            err.message,
            "No sensor features with contacts found in input"
        );
    }

    proptest! {
        #[test]
        fn blue_red_channels_sum_to_255_and_grow_redder(p in 0.0f64..=1.0, q in 0.0f64..=1.0) {
            let rgb = |s: String| -> Vec<u32> {
                s.trim_start_matches("rgb(").trim_end_matches(')').split(',').map(|x| x.parse().unwrap()).collect()
            };
            let (a, b) = (rgb(blue_red(p)), rgb(blue_red(q)));
            prop_assert_eq!(a[1], 0);
            prop_assert_eq!(a[0] + a[2], 255);
            if p <= q {
                prop_assert!(a[0] <= b[0]);
            }
        }

        #[test]
        fn hex_colours_of_valid_lengths_pass(h in "[0-9a-fA-F]{3}|[0-9a-fA-F]{4}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8}") {
            let c = format!("#{h}");
            prop_assert!(is_css_colour(&c));
            let accepted = validator("set-track-color").validate(&params(json!({"color": c}))).is_ok();
            prop_assert!(accepted);
        }
    }
}
