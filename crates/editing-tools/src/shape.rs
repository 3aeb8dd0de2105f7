//! `shape/manipulation`: moving and scaling annotation shapes (CIRCLE, RECTANGLE, LINE, TEXT,
//! VECTOR). Non-annotation features in the selection are skipped.

use serde_json::{Value, json};

use toolgate_tool_catalogue::common::{
    Coord, SHAPE_KINDS as SHAPES, map_geometry, map_positions, multi, normalise_lon, vertex_mean,
};
use toolgate_tool_catalogue::model::{id_of, kind_of};
use toolgate_tool_catalogue::{CalcInput, Entry, Item, ToolError};

/// The spec's preset scale factors, plus 1.0 (its documented identity).
const SCALE_FACTORS: &[f64] = &[0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 5.0];
/// The move spec's earth radius in kilometres.
const EARTH_RADIUS_KM: f64 = 6371.0;

fn shapes() -> Value {
    multi(SHAPES)
}

pub(crate) const TOOLS: &[Entry] = &[
    Entry {
        id: "enlarge-shape",
        spec_category: "shape/manipulation",
        spec_version: "1.0",
        description: "Scale one or more annotation shapes (CIRCLE, RECTANGLE, LINE, TEXT, VECTOR) by a factor about each shape's centroid or a given origin; a CIRCLE's centre and radius and a VECTOR's origin follow (its range and bearing are kept).",
        output_kind: "mutation/shape/scaled",
        requirements: shapes,
        params: enlarge_params,
        required: &[],
        run: enlarge_shape,
    },
    Entry {
        id: "move-shape",
        spec_category: "shape/manipulation",
        spec_version: "1.0",
        description: "Move one or more annotation shapes (CIRCLE, RECTANGLE, LINE, TEXT, VECTOR) a distance in km along a compass bearing, e.g. \"move the circle 5 km east\".",
        output_kind: "mutation/shape/translated",
        requirements: shapes,
        params: move_params,
        required: &[],
        run: move_shape,
    },
];

fn enlarge_params() -> Value {
    json!({
        "scale_factor": {
            "type": "number",
            "description": "Scale factor: above 1 enlarges, below 1 shrinks, 1 changes nothing.",
            "enum": SCALE_FACTORS,
            "default": 3.0,
        },
        "origin": {
            "type": ["array", "string"],
            "description": "Point to scale about, [longitude, latitude] (a JSON string of that array is also accepted). Default: each shape's centroid (the mean of its vertices).",
            "items": {"type": "number"},
            "minItems": 2,
            "maxItems": 2,
        },
    })
}

fn move_params() -> Value {
    json!({
        "direction": {
            "type": "number",
            "description": "Compass bearing to move along, degrees true (0 north, 90 east, 180 south, 270 west); other values are taken modulo 360.",
            "default": 90,
        },
        "distance_km": {
            "type": "number",
            "description": "Distance to move, in kilometres (0 or more).",
            "minimum": 0,
            "default": 5,
        },
    })
}

/// A number as Python prints it (`3.0`, `0.25`): the catalogue's labels are Python f-strings.
fn py_float(x: f64) -> String {
    if x.is_finite() && x.fract() == 0.0 && x.abs() < 1e16 {
        format!("{x:.1}")
    } else {
        format!("{x}")
    }
}

/// A parameter as the caller wrote it: an integer stays an integer (`5`), a float prints as
/// Python would (`5.0`).
fn py_value(v: Option<&Value>, default: &str) -> String {
    match v {
        Some(Value::Number(n)) if n.is_i64() || n.is_u64() => n.to_string(),
        Some(Value::Number(n)) => n.as_f64().map_or_else(|| n.to_string(), py_float),
        _ => default.to_owned(),
    }
}

/// The annotation features of the selection, or the spec's errors.
fn annotations<'a>(input: &CalcInput<'a>) -> Result<Vec<&'a Value>, ToolError> {
    if input.features.is_empty() {
        return Err(ToolError::invalid("Input features required"));
    }
    let found: Vec<&Value> = input
        .features
        .iter()
        .filter(|f| SHAPES.contains(&kind_of(f).as_str()))
        .collect();
    if found.is_empty() {
        return Err(ToolError::invalid(format!(
            "No annotation features found (kinds {})",
            SHAPES.join(", ")
        )));
    }
    Ok(found)
}

fn ids(features: &[&Value]) -> Vec<String> {
    features.iter().filter_map(|f| id_of(f)).collect()
}

/// Apply `map` to the geometry and to a CIRCLE's `center` / VECTOR's `origin`.
fn map_shape(f: &Value, map: &mut dyn FnMut(Coord) -> Coord) -> Value {
    let mut feature = f.clone();
    if let Some(g) = feature.get_mut("geometry") {
        map_geometry(g, map);
    }
    if let Some(p) = feature.get_mut("properties").and_then(Value::as_object_mut) {
        for key in ["center", "origin", "debrief:center", "debrief:origin"] {
            if let Some(v) = p.get_mut(key) {
                map_positions(v, map);
            }
        }
    }
    feature
}

// ---------------------------------------------------------------------------------------------
// enlarge-shape

fn parse_origin(value: Option<&Value>) -> Result<Option<Coord>, ToolError> {
    let bad = |what: &str| {
        ToolError::invalid(format!(
            "Parameter \"origin\" must be [longitude, latitude], e.g. [-1.0, 51.0]; got {what}"
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

/// The spec's centroid: the mean of a Polygon's exterior ring (closing vertex once), of a
/// LineString's vertices, or the Point itself; any other geometry: the mean of all vertices.
fn centroid(f: &Value) -> Option<Coord> {
    let g = f.get("geometry")?;
    let coords = match g.get("type").and_then(Value::as_str) {
        Some("Polygon") => g
            .pointer("/coordinates/0")
            .map(|ring| {
                toolgate_tool_catalogue::common::geometry_coords(&json!({"coordinates": ring}))
            })
            .unwrap_or_default(),
        _ => toolgate_tool_catalogue::common::geometry_coords(g),
    };
    vertex_mean(&coords)
}

fn enlarge_shape(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    let k = input.f64_param("scale_factor").unwrap_or(3.0);
    let found = annotations(input)?;
    if k.is_nan() || k < 0.0 {
        return Err(ToolError::invalid(format!(
            "Scale factor must be non-negative; got {k}"
        )));
    }
    let origin = parse_origin(input.param("origin"))?;
    let mut changed = Vec::with_capacity(found.len());
    for f in &found {
        if k == 1.0 {
            changed.push((*f).clone());
            continue;
        }
        let centre = match origin {
            Some(o) => o,
            None => centroid(f).ok_or_else(|| {
                ToolError::invalid(format!(
                    "Cannot scale {}: it has no coordinates to find its centroid; give an origin [longitude, latitude]",
                    id_of(f).unwrap_or_default()
                ))
                .affecting(id_of(f).into_iter().collect())
            })?,
        };
        let mut scale = |c: Coord| {
            let dx = normalise_lon(c[0] - centre[0]);
            [
                normalise_lon(centre[0] + dx * k),
                (centre[1] + (c[1] - centre[1]) * k).clamp(-90.0, 90.0),
            ]
        };
        let mut feature = map_shape(f, &mut scale);
        // A circle's radius follows its polygon (the spec keeps a vector's range and bearing).
        if kind_of(f) == "CIRCLE"
            && let Some(p) = feature.get_mut("properties").and_then(Value::as_object_mut)
        {
            for key in ["radius", "debrief:radius"] {
                if let Some(r) = p.get(key).and_then(Value::as_f64) {
                    p.insert(key.into(), json!(r * k));
                }
            }
        }
        changed.push(feature);
    }
    let from = match origin {
        Some(o) => format!("[{}, {}]", py_float(o[0]), py_float(o[1])),
        None => "centroid".to_owned(),
    };
    let label = format!(
        "Scaled {} shape(s) by factor {} from {from}",
        changed.len(),
        py_float(k)
    );
    let sources = ids(&found);
    Ok(changed
        .into_iter()
        .map(|f| Item::feature(f, "mutation/shape/scaled", sources.clone(), label.clone()))
        .collect())
}

// ---------------------------------------------------------------------------------------------
// move-shape

/// The point `km` from `c` along `bearing` on the spec's 6371 km sphere.
fn translate(c: Coord, bearing: f64, km: f64) -> Coord {
    let (lat1, lon1) = (c[1].to_radians(), c[0].to_radians());
    let brng = bearing.to_radians();
    let d = km / EARTH_RADIUS_KM;
    let lat2 = (lat1.sin() * d.cos() + lat1.cos() * d.sin() * brng.cos()).asin();
    let lon2 = lon1 + (brng.sin() * d.sin() * lat1.cos()).atan2(d.cos() - lat1.sin() * lat2.sin());
    [normalise_lon(lon2.to_degrees()), lat2.to_degrees()]
}

fn move_shape(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    let direction = input.f64_param("direction").unwrap_or(90.0);
    let km = input.f64_param("distance_km").unwrap_or(5.0);
    let found = annotations(input)?;
    if !direction.is_finite() {
        return Err(ToolError::invalid(format!(
            "Direction must be a compass bearing in degrees (e.g. 90 for east); got {direction}"
        )));
    }
    let direction = direction.rem_euclid(360.0);
    if km.is_nan() || km < 0.0 {
        return Err(ToolError::invalid(format!(
            "Distance must be non-negative; got {km} km"
        )));
    }
    let changed: Vec<Value> = if km == 0.0 {
        found.iter().map(|f| (*f).clone()).collect()
    } else {
        found
            .iter()
            .map(|f| map_shape(f, &mut |c| translate(c, direction, km)))
            .collect()
    };
    let distance = if km == 0.0 {
        "0".to_owned()
    } else {
        py_value(input.param("distance_km"), "5")
    };
    let label = format!(
        "Translated {} shape(s) {distance} km bearing {:03.0}°",
        changed.len(),
        direction
    );
    let sources = ids(&found);
    Ok(changed
        .into_iter()
        .map(|f| {
            Item::feature(
                f,
                "mutation/shape/translated",
                sources.clone(),
                label.clone(),
            )
        })
        .collect())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use toolgate_tool_catalogue::Body;
    use toolgate_tool_catalogue::model::range_nm;

    fn run(
        f: fn(&CalcInput) -> Result<Vec<Item>, ToolError>,
        features: &[Value],
        params: Value,
    ) -> Result<Vec<Item>, ToolError> {
        let params = params.as_object().cloned().unwrap_or_default();
        f(&CalcInput::new(features, &params))
    }

    fn feature(i: &Item) -> &Value {
        match &i.body {
            Body::Feature(f) => f,
            other => panic!("{other:?}"),
        }
    }

    fn circle() -> Value {
        let ring: Vec<[f64; 2]> = (0..=8)
            .map(|i| {
                let a = f64::from(i) * std::f64::consts::FRAC_PI_4;
                [10.0 + 0.01 * a.sin(), 0.01 * a.cos()]
            })
            .collect();
        json!({"type": "Feature", "id": "c", "geometry": {"type": "Polygon", "coordinates": [ring]},
            "properties": {"kind": "CIRCLE", "center": [10.0, 0.0], "radius": 1000.0}})
    }

    #[test]
    fn enlarge_scales_radius_centre_and_keeps_vector_range() {
        let out = run(enlarge_shape, &[circle()], json!({"scale_factor": 2.0})).unwrap();
        let f = feature(&out[0]);
        assert_eq!(f["properties"]["radius"], 2000.0);
        let c = f["properties"]["center"].as_array().unwrap();
        assert!((c[0].as_f64().unwrap() - 10.0).abs() < 1e-12);
        let v = json!({"type": "Feature", "id": "v", "geometry": {"type": "LineString", "coordinates": [[0.0, 0.0], [1.0, 1.0]]},
            "properties": {"kind": "VECTOR", "origin": [0.0, 0.0], "range": 100.0, "bearing": 45}});
        let out = run(
            enlarge_shape,
            &[v],
            json!({"scale_factor": 3.0, "origin": "[0, 0]"}),
        )
        .unwrap();
        let f = feature(&out[0]);
        assert_eq!(f["geometry"]["coordinates"][1], json!([3.0, 3.0]));
        assert_eq!(f["properties"]["range"], 100.0);
        assert_eq!(
            out[0].label,
            "Scaled 1 shape(s) by factor 3.0 from [0.0, 0.0]"
        );
    }

    #[test]
    fn enlarge_errors_name_the_problem() {
        let err = run(enlarge_shape, &[circle()], json!({"origin": "north"})).unwrap_err();
        assert!(
            err.message.contains("[longitude, latitude]"),
            "{}",
            err.message
        );
        let track = json!({"type": "Feature", "id": "t", "geometry": null, "properties": {"kind": "TRACK"}});
        let err = run(enlarge_shape, &[track], json!({})).unwrap_err();
        assert!(
            err.message.starts_with("No annotation features found"),
            "{}",
            err.message
        );
        let err = run(enlarge_shape, &[], json!({})).unwrap_err();
        assert_eq!(err.message, "Input features required");
        let err = run(enlarge_shape, &[circle()], json!({"scale_factor": -1.0})).unwrap_err();
        assert!(err.message.starts_with("Scale factor must be non-negative"));
    }

    #[test]
    fn move_keeps_shape_size_and_normalises_direction() {
        let out = run(
            move_shape,
            &[circle()],
            json!({"direction": -270, "distance_km": 10}),
        )
        .unwrap();
        assert_eq!(out[0].label, "Translated 1 shape(s) 10 km bearing 090°");
        let f = feature(&out[0]);
        let c: Vec<f64> = f["properties"]["center"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        // 10 km east on the 6371 km sphere at the equator, in nm at 60 nm per degree
        let moved_nm = range_nm([10.0, 0.0], [c[0], c[1]]);
        assert!((moved_nm - 10.0 / 6371.0 * 180.0 / std::f64::consts::PI * 60.0).abs() < 1e-9);
        assert_eq!(f["properties"]["radius"], 1000.0, "a move keeps the radius");
        let out = run(move_shape, &[circle()], json!({"distance_km": 0})).unwrap();
        assert_eq!(feature(&out[0]), &circle());
        assert_eq!(out[0].label, "Translated 1 shape(s) 0 km bearing 090°");
        let err = run(move_shape, &[circle()], json!({"distance_km": -1})).unwrap_err();
        assert!(err.message.starts_with("Distance must be non-negative"));
    }
}
