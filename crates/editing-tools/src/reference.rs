//! `reference/*`: generating reference points (a grid or a reproducible scatter over a bounding
//! box) and classifying them by the detection zone they fall in.

use std::time::{SystemTime, UNIX_EPOCH};

use geo::Intersects;
use serde_json::{Map, Value, json};

use toolgate_tool_catalogue::common::{bbox, geometry_coords, multi, polygons};
use toolgate_tool_catalogue::model::{
    id_of, is_kind, kind_of, prop, prop_str, properties, track_name,
};
use toolgate_tool_catalogue::{CalcInput, Entry, Item, ToolError};

const OUTSIDE: &str = "none";
const OUTSIDE_COLOUR: &str = "#666666";
/// Shapes whose bounding box can stand in for `bounds`.
const SHAPES: &[&str] = &["RECTANGLE", "POLY", "CIRCLE", "ZONE"];

fn shapes() -> Value {
    multi(SHAPES)
}

fn points_and_zones() -> Value {
    multi(&["POINT", "ZONE"])
}

pub(crate) const TOOLS: &[Entry] = &[
    Entry {
        id: "generate-reference-points",
        spec_category: "reference/generation",
        spec_version: "1.0",
        description: "Add a POINT feature (locationType REFERENCE) holding a grid (rows x cols, edges included) or a reproducible scatter (count points, seeded) of reference points over a bounding box [west, south, east, north], or over the selected shape's bounding box.",
        output_kind: "addition/reference/generated_points",
        requirements: shapes,
        params: reference_params,
        required: &["pattern"],
        run: generate_reference_points,
    },
    Entry {
        id: "point-in-zone-classifier",
        spec_category: "reference/classification",
        spec_version: "1.0",
        description: "Classify every point of a reference POINT feature (e.g. generated reference points) by the innermost zone of a ZONE feature that contains it, writing zone and colour into its pointMetadata and a pointColors array.",
        output_kind: "mutation/reference/classified_points",
        requirements: points_and_zones,
        params: no_params,
        required: &[],
        run: point_in_zone_classifier,
    },
];

fn no_params() -> Value {
    json!({})
}

fn reference_params() -> Value {
    json!({
        "pattern": {"type": "string", "enum": ["grid", "scatter"], "description": "grid: evenly spaced rows and columns including the edges; scatter: pseudo-random positions."},
        "bounds": {"type": "array", "items": {"type": "number"}, "minItems": 4, "maxItems": 4, "description": "Bounding box [west, south, east, north] in decimal degrees (west > east crosses the antimeridian). Default: the selected shape's bounding box."},
        "rows": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 5, "description": "Grid rows (grid only)."},
        "cols": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 5, "description": "Grid columns (grid only)."},
        "count": {"type": "integer", "minimum": 1, "maximum": 10000, "default": 25, "description": "Number of points (scatter only)."},
        "seed": {"type": "integer", "minimum": 0, "maximum": 4_294_967_295_u64, "description": "Seed of the scatter (the same seed gives the same points). Default: a time-based seed."},
    })
}

// ---------------------------------------------------------------------------------------------
// generate-reference-points

const LCG_MULTIPLIER: u64 = 1_664_525;
const LCG_INCREMENT: u64 = 1_013_904_223;
const LCG_MODULUS: u64 = 1 << 32;

/// The spec's cross-language LCG (Numerical Recipes constants).
fn lcg_next(state: u64) -> u64 {
    (LCG_MULTIPLIER
        .wrapping_mul(state)
        .wrapping_add(LCG_INCREMENT))
        % LCG_MODULUS
}

fn wrap(lon: f64) -> f64 {
    if lon > 180.0 { lon - 360.0 } else { lon }
}

fn grid(b: [f64; 4], rows: u64, cols: u64) -> Vec<[f64; 2]> {
    let [west, south, east, north] = b;
    let east = if west > east { east + 360.0 } else { east };
    let mut out = Vec::new();
    for r in 0..rows {
        let lat = if rows == 1 {
            (south + north) / 2.0
        } else {
            south + r as f64 * (north - south) / (rows - 1) as f64
        };
        for c in 0..cols {
            let lon = if cols == 1 {
                (west + east) / 2.0
            } else {
                west + c as f64 * (east - west) / (cols - 1) as f64
            };
            out.push([wrap(lon), lat]);
        }
    }
    out
}

fn scatter(b: [f64; 4], count: u64, seed: u64) -> Vec<[f64; 2]> {
    let [west, south, east, north] = b;
    let east = if west > east { east + 360.0 } else { east };
    let mut state = seed % LCG_MODULUS;
    (0..count)
        .map(|_| {
            state = lcg_next(state);
            let lon_frac = state as f64 / LCG_MODULUS as f64;
            state = lcg_next(state);
            let lat_frac = state as f64 / LCG_MODULUS as f64;
            [
                wrap(west + lon_frac * (east - west)),
                south + lat_frac * (north - south),
            ]
        })
        .collect()
}

/// `bounds`, else the bounding box of the first selected feature with coordinates.
fn bounds_of<'a>(input: &CalcInput<'a>) -> Result<([f64; 4], Option<&'a Value>), ToolError> {
    if let Some(v) = input.param("bounds") {
        let nums: Vec<f64> = v
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_f64).collect())
            .unwrap_or_default();
        let [w, s, e, n] = nums[..] else {
            return Err(ToolError::invalid(format!(
                "bounds must be [west, south, east, north] in decimal degrees, e.g. [-5, 49, 1, 52]; got {v}"
            )));
        };
        return Ok(([w, s, e, n], None));
    }
    let shape = input.features.iter().find(|f| {
        !f.get("geometry")
            .map(geometry_coords)
            .unwrap_or_default()
            .is_empty()
    });
    let b = shape
        .and_then(|f| f.get("geometry"))
        .map(geometry_coords)
        .and_then(|c| bbox(&c));
    match (b, shape) {
        (Some(b), Some(f)) => Ok((b, Some(f))),
        _ => Err(ToolError::invalid(
            "Give bounds [west, south, east, north] (e.g. [-5, 49, 1, 52]) or select a shape to cover",
        )),
    }
}

fn count_param(input: &CalcInput, name: &str, default: u64) -> Result<u64, ToolError> {
    match input.param(name) {
        None => Ok(default),
        Some(v) => v.as_u64().filter(|n| *n > 0).ok_or_else(|| {
            ToolError::invalid(if name == "count" {
                format!("Count must be a positive integer; got {v}")
            } else {
                format!("Grid dimensions must be positive integers; got {name} = {v}")
            })
        }),
    }
}

fn generate_reference_points(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    let pattern = input.str_param("pattern").unwrap_or_default();
    if pattern != "grid" && pattern != "scatter" {
        return Err(ToolError::invalid(format!(
            "Pattern must be 'grid' or 'scatter'; got \"{pattern}\""
        )));
    }
    let (b, shape) = bounds_of(input)?;
    let [west, south, east, north] = b;
    if !b.iter().all(|x| x.is_finite()) || west == east || south == north {
        return Err(ToolError::invalid(format!(
            "Bounding box must have positive area; got [{west}, {south}, {east}, {north}]"
        )));
    }
    if south > north {
        return Err(ToolError::invalid(format!(
            "South ({south}) must be less than north ({north})"
        )));
    }
    let (coords, name) = if pattern == "grid" {
        let rows = count_param(input, "rows", 5)?;
        let cols = count_param(input, "cols", 5)?;
        (
            grid(b, rows, cols),
            format!("Reference Points (grid {rows}x{cols})"),
        )
    } else {
        let count = count_param(input, "count", 25)?;
        let seed = match input.param("seed") {
            Some(v) => v.as_u64().ok_or_else(|| {
                ToolError::invalid(format!(
                    "seed must be a whole number 0 to 4294967295; got {v}"
                ))
            })?,
            None => SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64),
        };
        (
            scatter(b, count, seed),
            format!("Reference Points (scatter {count})"),
        )
    };
    let source = shape.and_then(id_of);
    let id = match &source {
        Some(s) => format!("{s}-ref-{pattern}"),
        None => format!("ref-{pattern}"),
    };
    let metadata: Vec<Value> = (0..coords.len())
        .map(|i| json!({"index": i, "name": format!("Ref {}", i + 1)}))
        .collect();
    let feature = json!({
        "type": "Feature",
        "id": id,
        "geometry": {"type": "MultiPoint", "coordinates": coords},
        "properties": {
            "kind": "POINT",
            "locationType": "REFERENCE",
            "name": name,
            "style": {"shape": "square", "color": OUTSIDE_COLOUR, "radius": 5},
            "pointMetadata": metadata,
        },
    });
    let label = format!(
        "Generated {} reference points ({pattern}) in [{west},{south},{east},{north}]",
        coords.len()
    );
    Ok(vec![Item::feature(
        feature,
        "addition/reference/generated_points",
        source.into_iter().collect(),
        label,
    )])
}

// ---------------------------------------------------------------------------------------------
// point-in-zone-classifier

struct Zone {
    name: String,
    colour: String,
    polygon: geo::Polygon<f64>,
}

fn is_reference(f: &Value) -> bool {
    is_kind(f, "POINT")
        && ["locationType", "location_type"]
            .iter()
            .any(|k| prop_str(f, k).is_some_and(|t| t.eq_ignore_ascii_case("REFERENCE")))
}

fn geometry_type(f: &Value) -> &str {
    f.pointer("/geometry/type")
        .and_then(Value::as_str)
        .unwrap_or("none")
}

/// The zones of a ZONE feature, innermost (index 0) first: each polygon's exterior ring, named
/// and coloured by the feature's `zones` metadata.
fn zones_of(f: &Value) -> Vec<Zone> {
    let defs = prop(f, "zones")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let colour_of = |style: Option<&Value>| {
        style
            .and_then(|s| s.get("fill_color").or_else(|| s.get("color")))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let feature_colour = colour_of(prop(f, "style")).unwrap_or_else(|| OUTSIDE_COLOUR.into());
    let polys = f.get("geometry").map(polygons).unwrap_or_default();
    let many = polys.len() > 1;
    polys
        .into_iter()
        .enumerate()
        .map(|(i, p)| {
            let def = defs.get(i);
            Zone {
                name: def
                    .and_then(|d| d.get("name"))
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .unwrap_or_else(|| {
                        if many {
                            format!("{} #{}", track_name(f), i + 1)
                        } else {
                            track_name(f)
                        }
                    }),
                colour: colour_of(def.and_then(|d| d.get("style")))
                    .unwrap_or_else(|| feature_colour.clone()),
                polygon: geo::Polygon::new(p.exterior().clone(), vec![]),
            }
        })
        .collect()
}

fn point_in_zone_classifier(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    let reference = input.features.iter().find(|f| is_reference(f)).or_else(|| {
        input
            .features
            .iter()
            .find(|f| is_kind(f, "POINT") && geometry_type(f) == "MultiPoint")
    });
    let Some(reference) = reference else {
        return Err(ToolError::invalid(
            "No reference point feature found (a POINT feature with locationType REFERENCE, e.g. from generate-reference-points)",
        ));
    };
    let Some(zone) = input.features.iter().find(|f| kind_of(f) == "ZONE") else {
        return Err(ToolError::invalid(
            "No zone feature found (a ZONE feature, e.g. from buffer-zone-generator)",
        ));
    };
    let ref_id = id_of(reference).unwrap_or_default();
    let zone_id = id_of(zone).unwrap_or_default();
    if !matches!(geometry_type(reference), "MultiPoint" | "Point") {
        return Err(
            ToolError::invalid("Reference feature must have MultiPoint geometry")
                .affecting(vec![ref_id]),
        );
    }
    if !matches!(geometry_type(zone), "MultiPolygon" | "Polygon") {
        return Err(
            ToolError::invalid("Zone feature must have MultiPolygon geometry")
                .affecting(vec![zone_id]),
        );
    }
    let coords = reference
        .get("geometry")
        .map(geometry_coords)
        .unwrap_or_default();
    let props = properties(reference).cloned().unwrap_or_default();
    let meta_key = ["pointMetadata", "point_metadata", "debrief:pointMetadata"]
        .into_iter()
        .find(|k| props.contains_key(*k))
        .unwrap_or("pointMetadata");
    let mut metadata: Vec<Value> = match props.get(meta_key).and_then(Value::as_array) {
        Some(m) => m.clone(),
        None => (0..coords.len())
            .map(|i| json!({"index": i, "name": format!("Ref {}", i + 1)}))
            .collect(),
    };
    if metadata.len() != coords.len() {
        return Err(ToolError::invalid(format!(
            "pointMetadata length must match coordinates length ({} entries for {} points)",
            metadata.len(),
            coords.len()
        ))
        .affecting(vec![ref_id]));
    }
    let zones = zones_of(zone);
    let mut counts = vec![0usize; zones.len()];
    let mut outside = 0usize;
    let mut colours = Vec::with_capacity(coords.len());
    for (c, meta) in coords.iter().zip(metadata.iter_mut()) {
        let p = geo::Point::new(c[0], c[1]);
        let hit = zones.iter().position(|z| z.polygon.intersects(&p));
        let (name, colour) = match hit {
            Some(z) => {
                counts[z] += 1;
                (zones[z].name.clone(), zones[z].colour.clone())
            }
            None => {
                outside += 1;
                (OUTSIDE.to_owned(), OUTSIDE_COLOUR.to_owned())
            }
        };
        if !meta.is_object() {
            *meta = Value::Object(Map::new());
        }
        if let Some(o) = meta.as_object_mut() {
            o.insert("zone".into(), json!(name));
            o.insert("color".into(), json!(colour));
        }
        colours.push(json!(colour));
    }
    let mut classified = reference.clone();
    if let Some(p) = classified
        .get_mut("properties")
        .and_then(Value::as_object_mut)
    {
        p.insert(meta_key.into(), Value::Array(metadata));
        p.insert("pointColors".into(), Value::Array(colours));
    }
    // Zones sharing a name count together, in the zones' order.
    let mut parts: Vec<(String, usize)> = Vec::new();
    for (z, n) in zones.iter().zip(&counts) {
        match parts.iter_mut().find(|(name, _)| *name == z.name) {
            Some(entry) => entry.1 += n,
            None => parts.push((z.name.clone(), *n)),
        }
    }
    let mut label_parts: Vec<String> = parts
        .iter()
        .map(|(name, n)| format!("{n} in {name}"))
        .collect();
    label_parts.push(format!("{outside} outside"));
    let label = format!(
        "Classified {} points: {}",
        coords.len(),
        label_parts.join(", ")
    );
    Ok(vec![Item::feature(
        classified,
        "mutation/reference/classified_points",
        vec![ref_id, zone_id],
        label,
    )])
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use toolgate_tool_catalogue::Body;

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

    #[test]
    fn grid_covers_the_bounds_and_crosses_the_antimeridian() {
        let out = run(
            generate_reference_points,
            &[],
            json!({"pattern": "grid", "bounds": [170, -1, -170, 1], "rows": 1, "cols": 3}),
        )
        .unwrap();
        let f = feature(&out[0]);
        assert_eq!(f["id"], "ref-grid");
        assert_eq!(
            f["geometry"]["coordinates"],
            json!([[170.0, 0.0], [180.0, 0.0], [-170.0, 0.0]])
        );
        assert_eq!(f["properties"]["name"], "Reference Points (grid 1x3)");
    }

    #[test]
    fn scatter_is_reproducible_and_inside_the_bounds() {
        let p = json!({"pattern": "scatter", "bounds": [-5, 49, 1, 52], "count": 50, "seed": 7});
        let a = run(generate_reference_points, &[], p.clone()).unwrap();
        let b = run(generate_reference_points, &[], p).unwrap();
        assert_eq!(a, b);
        for c in feature(&a[0])["geometry"]["coordinates"]
            .as_array()
            .unwrap()
        {
            let (x, y) = (c[0].as_f64().unwrap(), c[1].as_f64().unwrap());
            assert!((-5.0..=1.0).contains(&x) && (49.0..=52.0).contains(&y));
        }
    }

    #[test]
    fn reference_point_errors() {
        let err = run(generate_reference_points, &[], json!({"pattern": "grid"})).unwrap_err();
        assert!(err.message.starts_with("Give bounds"), "{}", err.message);
        let err = run(
            generate_reference_points,
            &[],
            json!({"pattern": "grid", "bounds": [0, 2, 1, 1]}),
        )
        .unwrap_err();
        assert_eq!(err.message, "South (2) must be less than north (1)");
        let err = run(
            generate_reference_points,
            &[],
            json!({"pattern": "grid", "bounds": [0, 1, 0, 2]}),
        )
        .unwrap_err();
        assert!(
            err.message
                .starts_with("Bounding box must have positive area")
        );
        let err = run(
            generate_reference_points,
            &[],
            json!({"pattern": "spiral", "bounds": [0, 1, 2, 3]}),
        )
        .unwrap_err();
        assert!(
            err.message
                .starts_with("Pattern must be 'grid' or 'scatter'")
        );
        let err = run(
            generate_reference_points,
            &[],
            json!({"pattern": "grid", "bounds": [0, 1, 2, f64::NAN]}),
        )
        .unwrap_err();
        assert!(err.message.starts_with("bounds must be"), "{}", err.message);
    }

    #[test]
    fn classifier_counts_boundary_points_inside_and_keeps_naming() {
        let refs = json!({"type": "Feature", "id": "r", "geometry": {"type": "MultiPoint", "coordinates": [[0.5, 0.5], [1.0, 0.5], [5.0, 5.0]]},
            "properties": {"kind": "POINT", "location_type": "REFERENCE", "point_metadata": [{"name": "a"}, {"name": "b"}, {"name": "c", "zone": "stale"}]}});
        let zone = json!({"type": "Feature", "id": "z", "geometry": {"type": "Polygon", "coordinates": [[[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0], [0.0, 0.0]]]},
            "properties": {"kind": "ZONE", "name": "Box", "style": {"color": "#123456"}}});
        let out = run(point_in_zone_classifier, &[refs, zone], json!({})).unwrap();
        assert_eq!(out[0].label, "Classified 3 points: 2 in Box, 1 outside");
        let f = feature(&out[0]);
        assert_eq!(f["properties"]["point_metadata"][2]["zone"], "none");
        assert_eq!(
            f["properties"]["pointColors"],
            json!(["#123456", "#123456", "#666666"])
        );
        let err = run(point_in_zone_classifier, &[], json!({})).unwrap_err();
        assert!(err.message.starts_with("No reference point feature found"));
    }
}
