//! Annotation shapes: translate along a great circle, scale about an origin.

use serde_json::{Value, json};
use toolgate_core::{CallError, ToolCall, ToolOutcome, ToolSpec};
use toolgate_feature::Feature;

use super::common::{
    Coord, Def, METRES_PER_KM, SHAPE_KINDS, change, coord_prop, describe, destination, f64_or,
    geometry_coords, humanise, map_geometry, map_positions, modified_data, multi, name_list,
    normalise_lon, number_prop, props_mut, select_multi, subject, vertex_mean,
};

pub(crate) const MOVE_SHAPE: &str = "move-shape";
pub(crate) const ENLARGE_SHAPE: &str = "enlarge-shape";

const TRANSLATED: &str = "mutation/shape/translated";
const SCALED: &str = "mutation/shape/scaled";
const SCALE_FACTORS: &[f64] = &[0.25, 0.5, 1.5, 2.0, 3.0, 5.0];

pub(crate) fn move_shape_spec() -> ToolSpec {
    Def {
        id: MOVE_SHAPE,
        description: "Move one or more annotation shapes (CIRCLE, RECTANGLE, LINE, TEXT, VECTOR) a distance in km along a compass bearing, e.g. \"move the circle 5 km east\".",
        output_kind: TRANSLATED,
        category: "shape",
        requirements: multi(SHAPE_KINDS),
        properties: json!({
            "direction": {
                "type": "number",
                "description": "Compass bearing to move along, degrees true (0 north, 90 east, 180 south, 270 west).",
                "minimum": 0,
                "maximum": 360,
                "default": 90,
            },
            "distance_km": {
                "type": "number",
                "description": "Distance to move, in kilometres (0 or more).",
                "minimum": 0,
                "default": 5,
            },
        }),
        required: &[],
    }
    .build()
}

pub(crate) fn enlarge_shape_spec() -> ToolSpec {
    Def {
        id: ENLARGE_SHAPE,
        description: "Scale one or more annotation shapes (CIRCLE, RECTANGLE, LINE, TEXT, VECTOR) by a factor about their centre or a given origin; a CIRCLE's radius and a VECTOR's range scale too.",
        output_kind: SCALED,
        category: "shape",
        requirements: multi(SHAPE_KINDS),
        properties: json!({
            "scale_factor": {
                "type": "number",
                "description": "Scale factor: above 1 enlarges, below 1 shrinks.",
                "enum": SCALE_FACTORS,
                "default": 3.0,
            },
            "origin": {
                "type": ["array", "string"],
                "description": "Point to scale about, [longitude, latitude] (a JSON string of that array is also accepted). Default: each shape's own centre.",
                "items": {"type": "number"},
                "minItems": 2,
                "maxItems": 2,
            },
        }),
        required: &[],
    }
    .build()
}

pub(crate) fn move_shape(call: &ToolCall) -> Result<ToolOutcome, CallError> {
    let title = humanise(MOVE_SHAPE);
    let direction = f64_or(call, "direction", 90.0)?.rem_euclid(360.0);
    let distance_km = f64_or(call, "distance_km", 5.0)?;
    if distance_km < 0.0 {
        return Err(CallError::invalid(format!(
            "Parameter \"distance_km\" must be 0 or more; got {distance_km}"
        )));
    }
    let features = subject(call)?;
    let selection = select_multi(&title, &features, SHAPE_KINDS)?;
    let metres = distance_km * METRES_PER_KM;
    let names: Vec<String> = selection.matched.iter().map(|f| describe(f)).collect();
    if metres == 0.0 {
        let label = format!("Moved nothing: distance_km is 0 for {}", name_list(&names));
        let summary = format!("{label}{}", selection.skipped_note());
        return Ok(change(
            TRANSLATED,
            summary,
            label,
            Vec::new(),
            json!({"modified": []}),
        ));
    }
    let mut shift = |c: Coord| destination(c, direction, metres);
    let mut changed = Vec::with_capacity(selection.matched.len());
    for f in &selection.matched {
        let mut feature = (*f).clone();
        if let Some(g) = feature.get_mut("geometry") {
            map_geometry(g, &mut shift);
        }
        let props = props_mut(&mut feature)?;
        for key in ["center", "origin"] {
            if let Some(v) = props.get_mut(key) {
                map_positions(v, &mut shift);
            }
        }
        changed.push(feature);
    }
    let label = format!(
        "Moved {} {} km on {:03.0}°",
        name_list(&names),
        trim_number(distance_km),
        direction
    );
    let summary = format!("{label}{}", selection.skipped_note());
    let data = modified_data(&changed);
    Ok(change(TRANSLATED, summary, label, changed, data))
}

fn trim_number(x: f64) -> String {
    let s = format!("{x:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

fn parse_origin(value: Option<&Value>) -> Result<Option<Coord>, CallError> {
    let bad = |what: &str| {
        CallError::invalid(format!(
            "Parameter \"origin\" must be [longitude, latitude], e.g. [-21.7, 22.2]; got {what}"
        ))
    };
    let parsed;
    let v = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(text)) => {
            parsed = serde_json::from_str::<Value>(text).map_err(|_| bad(text))?;
            &parsed
        }
        Some(v) => v,
    };
    let pair = v
        .as_array()
        .filter(|a| a.len() == 2)
        .ok_or_else(|| bad(&v.to_string()))?;
    match (
        pair.first().and_then(Value::as_f64),
        pair.get(1).and_then(Value::as_f64),
    ) {
        (Some(lon), Some(lat))
            if (-180.0..=180.0).contains(&lon) && (-90.0..=90.0).contains(&lat) =>
        {
            Ok(Some([lon, lat]))
        }
        _ => Err(bad(&v.to_string())),
    }
}

pub(crate) fn enlarge_shape(call: &ToolCall) -> Result<ToolOutcome, CallError> {
    let title = humanise(ENLARGE_SHAPE);
    let k = f64_or(call, "scale_factor", 3.0)?;
    if k.is_nan() || k <= 0.0 {
        return Err(CallError::invalid(format!(
            "Parameter \"scale_factor\" must be greater than 0; got {k}"
        )));
    }
    let origin = parse_origin(call.params.get("origin"))?;
    let features = subject(call)?;
    let selection = select_multi(&title, &features, SHAPE_KINDS)?;
    let mut changed = Vec::with_capacity(selection.matched.len());
    let mut names = Vec::with_capacity(selection.matched.len());
    for f in &selection.matched {
        let centre = match origin {
            Some(o) => o,
            None => shape_centre(f).ok_or_else(|| {
                CallError::invalid(format!(
                    "{title} cannot scale {}: it has no coordinates to find its centre",
                    describe(f)
                ))
            })?,
        };
        let mut scale = |c: Coord| {
            let dx = normalise_lon(c[0] - centre[0]);
            [
                normalise_lon(centre[0] + dx * k),
                (centre[1] + (c[1] - centre[1]) * k).clamp(-90.0, 90.0),
            ]
        };
        let mut feature = (*f).clone();
        if let Some(g) = feature.get_mut("geometry") {
            map_geometry(g, &mut scale);
        }
        let shape_kind = Feature(f).kind().to_owned();
        let props = props_mut(&mut feature)?;
        for key in ["center", "origin"] {
            if let Some(v) = props.get_mut(key) {
                map_positions(v, &mut scale);
            }
        }
        let length_key = match shape_kind.as_str() {
            "CIRCLE" => Some("radius"),
            "VECTOR" => Some("range"),
            _ => None,
        };
        if let Some(key) = length_key
            && let Some(len) = number_prop(f, key)
        {
            props.insert(key.into(), json!(len * k));
        }
        names.push(describe(f));
        changed.push(feature);
    }
    let about = match origin {
        Some(o) => format!("about [{}, {}]", o[0], o[1]),
        None => "about each shape's centre".to_owned(),
    };
    let label = format!("Scaled {} by {} {about}", name_list(&names), trim_number(k));
    let summary = format!("{label}{}", selection.skipped_note());
    let data = modified_data(&changed);
    Ok(change(SCALED, summary, label, changed, data))
}

/// A CIRCLE's `center`, else the mean of the geometry's vertices.
fn shape_centre(f: &Value) -> Option<Coord> {
    if Feature(f).kind() == "CIRCLE"
        && let Some(c) = coord_prop(f, "center")
    {
        return Some(c);
    }
    f.get("geometry")
        .map(geometry_coords)
        .and_then(|coords| vertex_mean(&coords))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::super::common::distance_m;
    use super::*;
    use crate::tests::{call, circle, edited, rectangle, track};

    #[test]
    fn move_five_km_east() {
        let lat: f64 = 50.0;
        let subject = json!([
            circle("c1", "Zone", [-4.0, lat], 2000.0),
            track("t", "T", 2)
        ]);
        let before = subject.clone();
        let out = move_shape(&call(MOVE_SHAPE, json!({}), &subject)).unwrap();
        assert_eq!(subject, before, "input unchanged");
        assert_eq!(out.kind.as_str(), TRANSLATED);
        let f = &edited(&out)[0];
        let centre = f["properties"]["center"].as_array().unwrap();
        let dlon = centre[0].as_f64().unwrap() + 4.0;
        let expected = (5000.0 / (6_371_008.8 * lat.to_radians().cos())).to_degrees();
        assert!((dlon - expected).abs() < 1e-6, "{dlon} vs {expected}");
        assert!((centre[1].as_f64().unwrap() - lat).abs() < 1e-3);
        // every vertex moved by 5 km
        let old = before[0]["geometry"]["coordinates"][0].as_array().unwrap();
        let new = f["geometry"]["coordinates"][0].as_array().unwrap();
        for (a, b) in old.iter().zip(new) {
            let a = [a[0].as_f64().unwrap(), a[1].as_f64().unwrap()];
            let b = [b[0].as_f64().unwrap(), b[1].as_f64().unwrap()];
            assert!((distance_m(a, b) - 5000.0).abs() < 0.5);
        }
        assert_eq!(
            f["properties"]["radius"], 2000.0,
            "radius unchanged by a move"
        );
        assert!(out.summary.contains("5 km on 090°"), "{}", out.summary);
        assert!(
            out.summary.contains("skipped TRACK \"T\""),
            "{}",
            out.summary
        );
    }

    #[test]
    fn move_north_and_zero() {
        let out = move_shape(&call(
            MOVE_SHAPE,
            json!({"direction": 0, "distance_km": 10}),
            &json!([rectangle("r1", "Box", [0.0, 0.0, 1.0, 1.0])]),
        ))
        .unwrap();
        let ring = &edited(&out)[0]["geometry"]["coordinates"][0];
        let dlat = ring[0][1].as_f64().unwrap();
        assert!((dlat - (10_000.0f64 / 6_371_008.8).to_degrees()).abs() < 1e-9);
        let out = move_shape(&call(
            MOVE_SHAPE,
            json!({"distance_km": 0}),
            &json!([rectangle("r1", "Box", [0.0, 0.0, 1.0, 1.0])]),
        ))
        .unwrap();
        assert!(out.change_set.unwrap().edits.is_empty());
        let err = move_shape(&call(MOVE_SHAPE, json!({}), &json!([track("t", "T", 2)])))
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "Move Shape needs at least one CIRCLE, RECTANGLE, LINE, TEXT or VECTOR feature; got TRACK \"T\""
        );
    }

    #[test]
    fn enlarge_scales_radius_and_vertices() {
        let subject = json!([circle("c1", "Zone", [10.0, 0.0], 1000.0)]);
        let before = subject.clone();
        let out =
            enlarge_shape(&call(ENLARGE_SHAPE, json!({"scale_factor": 2.0}), &subject)).unwrap();
        assert_eq!(subject, before);
        let f = &edited(&out)[0];
        assert_eq!(f["properties"]["radius"], 2000.0);
        assert_eq!(
            f["properties"]["center"],
            json!([10.0, 0.0]),
            "centre stays"
        );
        let v = &f["geometry"]["coordinates"][0][0];
        let d = distance_m(
            [10.0, 0.0],
            [v[0].as_f64().unwrap(), v[1].as_f64().unwrap()],
        );
        assert!((d - 2000.0).abs() < 5.0, "vertex now {d} m from the centre");

        // default factor 3 about the rectangle's centre
        let out = enlarge_shape(&call(
            ENLARGE_SHAPE,
            json!({}),
            &json!([rectangle("r", "Box", [0.0, 0.0, 1.0, 1.0])]),
        ))
        .unwrap();
        let ring = &edited(&out)[0]["geometry"]["coordinates"][0];
        assert_eq!(ring[0], json!([-1.0, -1.0]));
        assert_eq!(ring[2], json!([2.0, 2.0]));

        // explicit origin, as an array and as JSON text
        for origin in [json!([0.0, 0.0]), json!("[0, 0]")] {
            let out = enlarge_shape(&call(
                ENLARGE_SHAPE,
                json!({"scale_factor": 0.5, "origin": origin}),
                &json!([rectangle("r", "Box", [0.0, 0.0, 1.0, 1.0])]),
            ))
            .unwrap();
            let ring = &edited(&out)[0]["geometry"]["coordinates"][0];
            assert_eq!(ring[2], json!([0.5, 0.5]));
        }
        let err = enlarge_shape(&call(
            ENLARGE_SHAPE,
            json!({"origin": "north"}),
            &json!([rectangle("r", "Box", [0.0, 0.0, 1.0, 1.0])]),
        ))
        .unwrap_err();
        assert!(err.to_string().contains("[longitude, latitude]"), "{err}");
    }
}
