//! Track styling: colour, symbols, label and symbol intervals (`mutation/track/styled`).

use serde_json::{Value, json};
use toolgate_core::{CallError, ToolCall, ToolOutcome, ToolSpec};
use toolgate_feature::Feature;

use super::common::{
    DURATION_PATTERN, DURATION_PRESETS, Def, check_colour, colour_schema, duration_seconds,
    modified_data, multi, name_list, object_entry, opt_str, props_mut, select_multi, str_or,
    subject,
};

pub(crate) const SET_TRACK_COLOR: &str = "set-track-color";
pub(crate) const APPLY_SYMBOL_STYLE: &str = "apply-symbol-style";
pub(crate) const LABEL_INTERVAL: &str = "label-interval";
pub(crate) const SYMBOL_INTERVAL: &str = "symbol-interval";

const STYLED: &str = "mutation/track/styled";
const TRACK: &[&str] = &["TRACK"];
const SYMBOLS: &[&str] = &["circle", "square", "triangle", "diamond", "cross"];

pub(crate) fn set_track_color_spec() -> ToolSpec {
    Def {
        id: SET_TRACK_COLOR,
        description: "Set the line colour of one or more TRACK features (properties.style.line.color), e.g. \"make NELSON red\".",
        output_kind: STYLED,
        category: "style",
        requirements: multi(TRACK),
        properties: json!({
            "color": colour_schema("Line colour to apply."),
        }),
        required: &["color"],
    }
    .build()
}

pub(crate) fn apply_symbol_style_spec() -> ToolSpec {
    Def {
        id: APPLY_SYMBOL_STYLE,
        description: "Set the position-marker symbol (shape, radius, fill colour) of one or more TRACK features, e.g. \"show NELSON's positions as squares\".",
        output_kind: STYLED,
        category: "style",
        requirements: multi(TRACK),
        properties: json!({
            "symbol": {
                "type": "string",
                "description": "Marker shape.",
                "enum": SYMBOLS,
                "default": "square",
            },
            "radius": {
                "type": "number",
                "description": "Marker radius in pixels (greater than 0).",
                "exclusiveMinimum": 0,
                "default": 4,
            },
            "fill_color": colour_schema("Marker fill colour; defaults to the track's line colour."),
        }),
        required: &[],
    }
    .build()
}

fn interval_schema(what: &str) -> Value {
    json!({
        "interval": {
            "type": "string",
            "description": format!(
                "Time between {what} as an ISO-8601 duration, e.g. PT15M (15 minutes) or PT1H; presets: {}.",
                DURATION_PRESETS.join(", ")
            ),
            "pattern": DURATION_PATTERN,
            "examples": DURATION_PRESETS,
            "default": "PT15M",
        }
    })
}

pub(crate) fn label_interval_spec() -> ToolSpec {
    Def {
        id: LABEL_INTERVAL,
        description: "Set how often position labels are shown along one or more TRACK features (properties.label_interval), e.g. \"label NELSON every hour\".",
        output_kind: STYLED,
        category: "style",
        requirements: multi(TRACK),
        properties: interval_schema("labelled positions"),
        required: &[],
    }
    .build()
}

pub(crate) fn symbol_interval_spec() -> ToolSpec {
    Def {
        id: SYMBOL_INTERVAL,
        description: "Set how often position symbols are drawn along one or more TRACK features (properties.symbol_interval), e.g. \"show a symbol every 5 minutes\".",
        output_kind: STYLED,
        category: "style",
        requirements: multi(TRACK),
        properties: interval_schema("position symbols"),
        required: &[],
    }
    .build()
}

/// Clone every selected track, apply `edit` to its properties, and build the outcome.
fn restyle(
    call: &ToolCall,
    title: &str,
    describe_change: &str,
    mut edit: impl FnMut(&mut serde_json::Map<String, Value>) -> Result<(), CallError>,
) -> Result<ToolOutcome, CallError> {
    let features = subject(call)?;
    let selection = select_multi(title, &features, TRACK)?;
    let mut changed = Vec::with_capacity(selection.matched.len());
    let mut names = Vec::with_capacity(selection.matched.len());
    for f in &selection.matched {
        let mut feature = (*f).clone();
        edit(props_mut(&mut feature)?)?;
        names.push(Feature(f).display_name());
        changed.push(feature);
    }
    let label = format!("{describe_change} on {}", name_list(&names));
    let summary = format!("{label}{}", selection.skipped_note());
    let data = modified_data(&changed);
    Ok(super::common::change(STYLED, summary, label, changed, data))
}

pub(crate) fn set_track_color(call: &ToolCall) -> Result<ToolOutcome, CallError> {
    let title = super::common::humanise(SET_TRACK_COLOR);
    let Some(colour) = opt_str(call, "color")? else {
        return Err(CallError::invalid(format!(
            "{title} needs a \"color\", e.g. {{\"color\": \"red\"}}"
        )));
    };
    check_colour("color", colour)?;
    restyle(
        call,
        &title,
        &format!("Set line colour {colour}"),
        |props| {
            let style = object_entry(props, "style", || json!({}))?;
            let line = object_entry(
                style,
                "line",
                || json!({"stroke": true, "color": "#3388ff", "weight": 3, "opacity": 1.0}),
            )?;
            line.insert("color".into(), json!(colour));
            Ok(())
        },
    )
}

pub(crate) fn apply_symbol_style(call: &ToolCall) -> Result<ToolOutcome, CallError> {
    let title = super::common::humanise(APPLY_SYMBOL_STYLE);
    let symbol = str_or(call, "symbol", "square")?;
    if !SYMBOLS.contains(&symbol) {
        return Err(CallError::invalid(format!(
            "Parameter \"symbol\" must be one of {}; got \"{symbol}\"",
            SYMBOLS.join(", ")
        )));
    }
    let radius = super::common::f64_or(call, "radius", 4.0)?;
    if radius <= 0.0 {
        return Err(CallError::invalid(format!(
            "Parameter \"radius\" must be greater than 0; got {radius}"
        )));
    }
    let fill = opt_str(call, "fill_color")?;
    if let Some(fill) = fill {
        check_colour("fill_color", fill)?;
    }
    let what = format!("Set {symbol} symbols (radius {radius})");
    restyle(call, &title, &what, |props| {
        let style = object_entry(props, "style", || json!({}))?;
        let line_colour = style
            .get("line")
            .and_then(|l| l.get("color"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let default_fill = line_colour.clone().unwrap_or_else(|| "#3388ff".to_owned());
        let point = object_entry(style, "point", || {
            json!({
                "shape": "circle", "radius": 4, "fill": true, "fill_color": default_fill,
                "fill_opacity": 0.8, "stroke": true, "color": "#ffffff", "weight": 1,
                "opacity": 1.0
            })
        })?;
        point.insert("shape".into(), json!(symbol));
        point.insert("radius".into(), json!(radius));
        match (fill, line_colour) {
            (Some(fill), _) => {
                point.insert("fill_color".into(), json!(fill));
            }
            (None, Some(line)) if point.get("fill_color").is_none_or(Value::is_null) => {
                point.insert("fill_color".into(), json!(line));
            }
            _ => {}
        }
        // Only the shape: show_symbol stays as it is so the interval cascade still decides.
        let dps = object_entry(props, "default_position_style", || json!({}))?;
        dps.insert("symbol".into(), json!(symbol));
        Ok(())
    })
}

fn set_interval(call: &ToolCall, id: &str, property: &str) -> Result<ToolOutcome, CallError> {
    let title = super::common::humanise(id);
    let interval = str_or(call, "interval", "PT15M")?;
    match duration_seconds(interval) {
        Some(s) if s > 0.0 => {}
        _ => {
            return Err(CallError::invalid(format!(
                "Parameter \"interval\" must be a non-zero ISO-8601 duration such as PT15M or PT1H; got \"{interval}\""
            )));
        }
    }
    let what = format!("Set {} {interval}", property.replace('_', " "));
    restyle(call, &title, &what, |props| {
        props.insert(property.into(), json!(interval));
        Ok(())
    })
}

pub(crate) fn label_interval(call: &ToolCall) -> Result<ToolOutcome, CallError> {
    set_interval(call, LABEL_INTERVAL, "label_interval")
}

pub(crate) fn symbol_interval(call: &ToolCall) -> Result<ToolOutcome, CallError> {
    set_interval(call, SYMBOL_INTERVAL, "symbol_interval")
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::tests::{call, edited, point, track};
    use toolgate_core::Edit;

    #[test]
    fn colour_is_set_and_input_untouched() {
        let subject = json!([track("t1", "NELSON", 3), point("p1", "Datum A")]);
        let before = subject.clone();
        let out =
            set_track_color(&call(SET_TRACK_COLOR, json!({"color": "red"}), &subject)).unwrap();
        assert_eq!(subject, before, "input unchanged");
        assert_eq!(out.kind.as_str(), STYLED);
        let items = edited(&out);
        assert_eq!(items.len(), 1, "the POINT is skipped");
        assert_eq!(items[0]["properties"]["style"]["line"]["color"], "red");
        assert!(
            out.summary.contains("skipped POINT \"Datum A\""),
            "{}",
            out.summary
        );
        let cs = out.change_set.unwrap();
        assert_eq!(cs.label, "Set line colour red on NELSON");
        assert!(matches!(&cs.edits[0], Edit::Upsert { id, .. } if id == "t1"));
    }

    #[test]
    fn colour_accepts_hex_and_creates_missing_style() {
        let mut t = track("t1", "NELSON", 2);
        t["properties"].as_object_mut().unwrap().remove("style");
        let out = set_track_color(&call(
            SET_TRACK_COLOR,
            json!({"color": "#00ff7F"}),
            &json!([t]),
        ))
        .unwrap();
        let line = &edited(&out)[0]["properties"]["style"]["line"];
        assert_eq!(
            line,
            &json!({"stroke": true, "color": "#00ff7F", "weight": 3, "opacity": 1.0})
        );
    }

    #[test]
    fn colour_errors_name_what_is_needed() {
        let err = set_track_color(&call(
            SET_TRACK_COLOR,
            json!({"color": "red"}),
            &json!([point("p1", "Datum A")]),
        ))
        .unwrap_err()
        .to_string();
        assert_eq!(
            err,
            "Set Track Color needs at least one TRACK feature; got POINT \"Datum A\""
        );
        let err = set_track_color(&call(SET_TRACK_COLOR, json!({"color": "red"}), &json!([])))
            .unwrap_err()
            .to_string();
        assert!(err.ends_with("got no features"), "{err}");
        let err = set_track_color(&call(
            SET_TRACK_COLOR,
            json!({"color": "mauve"}),
            &json!([track("t", "T", 2)]),
        ))
        .unwrap_err()
        .to_string();
        assert!(err.contains("mauve"), "{err}");
    }

    #[test]
    fn symbol_style_defaults_and_fill_from_line() {
        let mut t = track("t1", "NELSON", 2);
        t["properties"]["style"] = json!({"line": {"color": "#FF0000"}});
        let out = apply_symbol_style(&call(APPLY_SYMBOL_STYLE, json!({}), &json!([t]))).unwrap();
        let props = &edited(&out)[0]["properties"];
        assert_eq!(props["style"]["point"]["shape"], "square");
        assert_eq!(props["style"]["point"]["radius"], 4.0);
        assert_eq!(props["style"]["point"]["fill_color"], "#FF0000");
        assert_eq!(props["default_position_style"]["symbol"], "square");
        assert_eq!(
            props["default_position_style"]["show_symbol"], false,
            "show_symbol untouched"
        );

        let out = apply_symbol_style(&call(
            APPLY_SYMBOL_STYLE,
            json!({"symbol": "diamond", "radius": 6, "fill_color": "blue"}),
            &json!([track("t1", "NELSON", 2)]),
        ))
        .unwrap();
        let point = &edited(&out)[0]["properties"]["style"]["point"];
        assert_eq!(point["shape"], "diamond");
        assert_eq!(point["radius"], 6.0);
        assert_eq!(point["fill_color"], "blue");

        let err = apply_symbol_style(&call(
            APPLY_SYMBOL_STYLE,
            json!({"radius": 0}),
            &json!([track("t1", "NELSON", 2)]),
        ))
        .unwrap_err();
        assert!(err.to_string().contains("greater than 0"));
    }

    #[test]
    fn intervals() {
        let subject = json!([track("a", "A", 2), track("b", "B", 2)]);
        let out = label_interval(&call(LABEL_INTERVAL, json!({}), &subject)).unwrap();
        let items = edited(&out);
        assert_eq!(items.len(), 2);
        assert!(
            items
                .iter()
                .all(|f| f["properties"]["label_interval"] == "PT15M")
        );
        let out = symbol_interval(&call(
            SYMBOL_INTERVAL,
            json!({"interval": "PT1H"}),
            &subject,
        ))
        .unwrap();
        assert!(
            edited(&out)
                .iter()
                .all(|f| f["properties"]["symbol_interval"] == "PT1H")
        );
        assert_eq!(
            out.change_set.unwrap().label,
            "Set symbol interval PT1H on A and B"
        );
        let err = label_interval(&call(LABEL_INTERVAL, json!({"interval": "PT0M"}), &subject))
            .unwrap_err();
        assert!(err.to_string().contains("non-zero"), "{err}");
    }
}
