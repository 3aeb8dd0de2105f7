//! Detection zones and reference points: buffer zones around a track, reference points inside
//! a shape, and classifying points by the zone they fall in.

use std::collections::HashMap;

use geo::{ConvexHull, Intersects};
use serde_json::{Value, json};
use toolgate_core::{CallError, ToolCall, ToolOutcome, ToolSpec};
use toolgate_feature::Feature;

use super::common::{
    Coord, Def, METRES_PER_NM, Track, analysis, bbox, change, coord_prop, describe, destination,
    distance_m, geometry_coords, humanise, multi, name_list, normalise_lon, number_prop, opt_f64,
    opt_u64, polygons, round_to, select_single, single, str_or, subject, unwrap_lon,
};

pub(crate) const BUFFER_ZONE_GENERATOR: &str = "buffer-zone-generator";
pub(crate) const POINT_IN_ZONE_CLASSIFIER: &str = "point-in-zone-classifier";
pub(crate) const GENERATE_REFERENCE_POINTS: &str = "generate-reference-points";

const ADDED_ZONE: &str = "addition/feature";
const CLASSIFIED: &str = "dataset/classified_points";
const ADDED_POINTS: &str = "addition/reference_points";

/// Bearings per offset circle (every 10°), as debrief-calc.
const BEARINGS: u32 = 36;
/// (name, [distances nm]) presets of the `interval` parameter.
const INTERVALS: &[(&str, [f64; 3])] = &[
    ("small", [1.0, 2.0, 4.0]),
    ("medium", [2.0, 4.0, 8.0]),
    ("large", [3.0, 6.0, 12.0]),
];
/// Detection likelihood of each zone, innermost first (debrief-calc's default sensor model).
const LIKELIHOODS: [u32; 3] = [75, 50, 25];
/// Purple (inner), red (middle), orange (outer).
const ZONE_COLOURS: [&str; 3] = ["#9C27B0", "#F44336", "#FF9800"];
const ZONE_OPACITY: [f64; 3] = [0.25, 0.18, 0.12];
const OUTSIDE: &str = "none";
const OUTSIDE_COLOUR: &str = "#666666";
/// Decimal places kept in generated coordinates (about 0.1 m).
const PLACES: i32 = 6;

pub(crate) fn buffer_zone_generator_spec() -> ToolSpec {
    Def {
        id: BUFFER_ZONE_GENERATOR,
        description: "Add a ZONE feature around one TRACK with three concentric detection-likelihood zones (75%, 50%, 25%) at increasing distances in nautical miles.",
        output_kind: ADDED_ZONE,
        category: "analysis",
        requirements: single(&["TRACK"]),
        properties: json!({
            "interval": {
                "type": "string",
                "description": "Zone spacing preset: small (1/2/4 nm), medium (2/4/8 nm), large (3/6/12 nm).",
                "enum": ["small", "medium", "large"],
                "default": "large",
            },
            "distance_1_nm": {
                "type": "number",
                "description": "Innermost (75%) zone distance in nautical miles; overrides the preset.",
                "exclusiveMinimum": 0,
            },
            "distance_2_nm": {
                "type": "number",
                "description": "Middle (50%) zone distance in nautical miles; overrides the preset.",
                "exclusiveMinimum": 0,
            },
            "distance_3_nm": {
                "type": "number",
                "description": "Outermost (25%) zone distance in nautical miles; overrides the preset.",
                "exclusiveMinimum": 0,
            },
        }),
        required: &[],
    }
    .build()
}

pub(crate) fn point_in_zone_classifier_spec() -> ToolSpec {
    Def {
        id: POINT_IN_ZONE_CLASSIFIER,
        description: "Classify every point of the selected POINT features (e.g. generated reference points) by the innermost selected ZONE polygon that contains it; returns a dataset, changes nothing.",
        output_kind: CLASSIFIED,
        category: "analysis",
        requirements: multi(&["POINT", "ZONE"]),
        properties: json!({}),
        required: &[],
    }
    .build()
}

pub(crate) fn generate_reference_points_spec() -> ToolSpec {
    Def {
        id: GENERATE_REFERENCE_POINTS,
        description: "Add a POINT feature holding a grid or scatter of reference points inside one RECTANGLE, POLY or CIRCLE shape.",
        output_kind: ADDED_POINTS,
        category: "analysis",
        requirements: single(&["RECTANGLE", "POLY", "CIRCLE"]),
        properties: json!({
            "pattern": {
                "type": "string",
                "description": "grid: evenly spaced rows and columns; scatter: pseudo-random positions.",
                "enum": ["grid", "scatter"],
            },
            "count": {
                "type": "integer",
                "description": "Number of points to place inside the shape.",
                "minimum": 1,
                "maximum": 10000,
                "default": 20,
            },
            "seed": {
                "type": "integer",
                "description": "Seed of the scatter pattern (the same seed gives the same points); ignored for grid.",
                "minimum": 0,
                "maximum": 4_294_967_295_u64,
                "default": 1,
            },
        }),
        required: &["pattern"],
    }
    .build()
}

// ---------------------------------------------------------------------------------------------
// buffer-zone-generator

fn round_coord(c: Coord) -> Value {
    json!([round_to(c[0], PLACES), round_to(c[1], PLACES)])
}

/// The convex hull of `points` as a closed ring (planar in lon/lat).
fn hull_ring(points: Vec<geo::Point<f64>>) -> Vec<Coord> {
    let hull = geo::MultiPoint::from(points).convex_hull();
    hull.exterior().coords().map(|c| [c.x, c.y]).collect()
}

pub(crate) fn buffer_zone_generator(call: &ToolCall) -> Result<ToolOutcome, CallError> {
    let title = humanise(BUFFER_ZONE_GENERATOR);
    let interval = str_or(call, "interval", "large")?;
    let Some((_, preset)) = INTERVALS.iter().find(|(name, _)| *name == interval) else {
        return Err(CallError::invalid(format!(
            "Parameter \"interval\" must be one of small, medium, large; got \"{interval}\""
        )));
    };
    let mut distances = *preset;
    for (i, slot) in distances.iter_mut().enumerate() {
        let name = format!("distance_{}_nm", i + 1);
        if let Some(d) = opt_f64(call, &name)? {
            if d <= 0.0 {
                return Err(CallError::invalid(format!(
                    "Parameter \"{name}\" must be greater than 0 nautical miles; got {d}"
                )));
            }
            *slot = d;
        }
    }
    distances.sort_by(f64::total_cmp);

    let features = subject(call)?;
    let source = select_single(&title, &features, &["TRACK"])?;
    let track = Track::parse(source);
    let Some(first) = track.coords.first() else {
        return Err(CallError::invalid(format!(
            "{title} cannot use TRACK \"{}\": it has no coordinates",
            track.name
        )));
    };
    // Offsetting the hull's vertices gives the same hull as offsetting every position, for a
    // fraction of the work. Longitudes are unwrapped around the first position so a track that
    // crosses the antimeridian stays in one piece.
    let reference = first[0];
    let unwrapped: Vec<geo::Point<f64>> = track
        .coords
        .iter()
        .map(|c| geo::Point::new(unwrap_lon(c[0], reference), c[1]))
        .collect();
    let mut core = hull_ring(unwrapped);
    if core.len() > 1 {
        core.pop(); // the closing vertex repeats the first
    }
    let mut multi_polygon = Vec::with_capacity(3);
    let mut zones = Vec::with_capacity(3);
    for (i, nm) in distances.iter().enumerate() {
        let metres = nm * METRES_PER_NM;
        let mut offsets = Vec::with_capacity(core.len() * BEARINGS as usize);
        for c in &core {
            for b in 0..BEARINGS {
                let d = destination(*c, f64::from(b) * 360.0 / f64::from(BEARINGS), metres);
                offsets.push(geo::Point::new(unwrap_lon(d[0], reference), d[1]));
            }
        }
        let ring: Vec<Value> = hull_ring(offsets)
            .into_iter()
            .map(|[x, y]| round_coord([normalise_lon(x), y]))
            .collect();
        multi_polygon.push(json!([ring]));
        let likelihood = LIKELIHOODS.get(i).copied().unwrap_or(25);
        let colour = ZONE_COLOURS.get(i).copied().unwrap_or("#FF9800");
        zones.push(json!({
            "name": format!("{likelihood}%"),
            "detection_likelihood_pct": likelihood,
            "buffer_distance_nm": nm,
            "style": zone_style(colour, ZONE_OPACITY.get(i).copied().unwrap_or(0.12)),
        }));
    }
    let described: Vec<String> = distances
        .iter()
        .zip(LIKELIHOODS)
        .map(|(d, l)| format!("{l}% {} nm", round_to(*d, 2)))
        .collect();
    let new_id = format!("{}-buffer", track.id);
    let zone = json!({
        "type": "Feature",
        "id": new_id,
        "geometry": {"type": "MultiPolygon", "coordinates": multi_polygon},
        "properties": {
            "kind": "ZONE",
            "name": format!("Detection Zones (75%, 50%, 25%) around {}", track.name),
            "style": zone_style(ZONE_COLOURS[0], ZONE_OPACITY[0]),
            "zones": zones,
            "source_tool": BUFFER_ZONE_GENERATOR,
            "source_features": [track.id],
        },
    });
    let label = format!(
        "Generated 3 detection zones ({}) around {}",
        described.join(", "),
        track.name
    );
    let data = json!({"created": [new_id], "distances_nm": distances});
    Ok(change(ADDED_ZONE, label.clone(), label, vec![zone], data))
}

fn zone_style(colour: &str, fill_opacity: f64) -> Value {
    json!({
        "fill": true, "fill_color": colour, "fill_opacity": fill_opacity,
        "stroke": true, "color": colour, "weight": 2, "opacity": 1.0, "dash_array": "6, 4",
    })
}

// ---------------------------------------------------------------------------------------------
// point-in-zone-classifier

struct Zone {
    name: String,
    colour: String,
    feature_id: String,
    polygon: geo::Polygon<f64>,
}

fn zones_of(f: &Value) -> Vec<Zone> {
    let defs = Feature(f)
        .properties()
        .and_then(|p| p.get("zones"))
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let feature_name = Feature(f).display_name();
    let feature_colour = Feature(f)
        .properties()
        .and_then(|p| p.get("style"))
        .and_then(|s| s.get("fill_color").or_else(|| s.get("color")))
        .and_then(Value::as_str)
        .unwrap_or(OUTSIDE_COLOUR)
        .to_owned();
    let polys = f.get("geometry").map(polygons).unwrap_or_default();
    let many = polys.len() > 1;
    polys
        .into_iter()
        .enumerate()
        .map(|(i, polygon)| {
            let def = defs.get(i);
            let name = def
                .and_then(|d| d.get("name"))
                .and_then(Value::as_str)
                .map(str::to_owned)
                .unwrap_or_else(|| {
                    if many {
                        format!("{feature_name} #{}", i + 1)
                    } else {
                        feature_name.clone()
                    }
                });
            let colour = def
                .and_then(|d| d.get("style"))
                .and_then(|s| s.get("fill_color").or_else(|| s.get("color")))
                .and_then(Value::as_str)
                .map_or_else(|| feature_colour.clone(), str::to_owned);
            Zone {
                name,
                colour,
                feature_id: Feature(f).id().unwrap_or_default(),
                polygon,
            }
        })
        .collect()
}

/// The name of point `i` of a POINT feature.
fn point_name(f: &Value, i: usize, many: bool) -> String {
    let meta = Feature(f)
        .properties()
        .and_then(|p| p.get("point_metadata").or_else(|| p.get("pointMetadata")));
    meta.and_then(|m| m.get(i))
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .unwrap_or_else(|| {
            if many {
                format!("{} #{}", Feature(f).display_name(), i + 1)
            } else {
                Feature(f).display_name()
            }
        })
}

pub(crate) fn point_in_zone_classifier(call: &ToolCall) -> Result<ToolOutcome, CallError> {
    let title = humanise(POINT_IN_ZONE_CLASSIFIER);
    let features = subject(call)?;
    let points: Vec<&Value> = features
        .iter()
        .copied()
        .filter(|f| Feature(f).kind() == "POINT")
        .collect();
    let zone_features: Vec<&Value> = features
        .iter()
        .copied()
        .filter(|f| Feature(f).kind() == "ZONE")
        .collect();
    if points.is_empty() || zone_features.is_empty() {
        let got: Vec<String> = features.iter().map(|f| describe(f)).collect();
        let got = if got.is_empty() {
            "no features".to_owned()
        } else {
            name_list(&got)
        };
        return Err(CallError::invalid(format!(
            "{title} needs at least one POINT feature and at least one ZONE feature; got {got}"
        )));
    }
    let zones: Vec<Zone> = zone_features.iter().flat_map(|f| zones_of(f)).collect();
    if zones.is_empty() {
        let names: Vec<String> = zone_features.iter().map(|f| describe(f)).collect();
        return Err(CallError::invalid(format!(
            "{title} found no Polygon or MultiPolygon geometry in {}",
            name_list(&names)
        )));
    }
    let mut counts: Vec<usize> = vec![0; zones.len()];
    let mut outside = 0usize;
    let mut rows = Vec::new();
    for f in &points {
        let coords = f.get("geometry").map(geometry_coords).unwrap_or_default();
        let many = coords.len() > 1;
        for (i, c) in coords.iter().enumerate() {
            let p = geo::Point::new(c[0], c[1]);
            let hit = zones.iter().position(|z| z.polygon.intersects(&p));
            let (zone, colour, zone_feature) =
                match hit.and_then(|z| zones.get(z).map(|zz| (z, zz))) {
                    Some((z, zz)) => {
                        if let Some(n) = counts.get_mut(z) {
                            *n += 1;
                        }
                        (
                            zz.name.as_str(),
                            zz.colour.as_str(),
                            Value::from(zz.feature_id.as_str()),
                        )
                    }
                    None => {
                        outside += 1;
                        (OUTSIDE, OUTSIDE_COLOUR, Value::Null)
                    }
                };
            rows.push(json!({
                "feature_id": Feature(f).id(),
                "index": i,
                "name": point_name(f, i, many),
                "lon": c[0],
                "lat": c[1],
                "zone": zone,
                "zone_feature_id": zone_feature,
                "color": colour,
            }));
        }
    }
    // Zones with the same name (one per ZONE feature) are counted together.
    let mut by_name: Vec<(String, usize)> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    for (z, n) in zones.iter().zip(&counts) {
        match index.get(z.name.as_str()) {
            Some(&k) => {
                if let Some(entry) = by_name.get_mut(k) {
                    entry.1 += n;
                }
            }
            None => {
                index.insert(&z.name, by_name.len());
                by_name.push((z.name.clone(), *n));
            }
        }
    }
    let mut count_map = serde_json::Map::new();
    for (name, n) in &by_name {
        count_map.insert(name.clone(), json!(n));
    }
    count_map.insert(OUTSIDE.into(), json!(outside));
    let parts: Vec<String> = by_name
        .iter()
        .map(|(name, n)| format!("{name} {n}"))
        .chain(std::iter::once(format!("outside {outside}")))
        .collect();
    let summary = format!(
        "Classified {} points against {} zones: {}",
        rows.len(),
        zones.len(),
        parts.join(", ")
    );
    let zone_list: Vec<Value> = zones
        .iter()
        .zip(&counts)
        .map(|(z, n)| json!({"name": z.name, "feature_id": z.feature_id, "color": z.colour, "count": n}))
        .collect();
    let data = json!({"zones": zone_list, "counts": count_map, "points": rows});
    Ok(analysis(CLASSIFIED, summary, data))
}

// ---------------------------------------------------------------------------------------------
// generate-reference-points

/// Where points may go.
enum Region {
    Polygons(Vec<geo::Polygon<f64>>),
    Circle { centre: Coord, radius_m: f64 },
}

impl Region {
    fn of(f: &Value) -> Option<Region> {
        let polys = f.get("geometry").map(polygons).unwrap_or_default();
        if !polys.is_empty() {
            return Some(Region::Polygons(polys));
        }
        // A CIRCLE stored as a centre and a radius rather than a polygon.
        let centre = coord_prop(f, "center").or_else(|| {
            f.get("geometry")
                .filter(|g| g.get("type").and_then(Value::as_str) == Some("Point"))
                .map(geometry_coords)
                .and_then(|c| c.first().copied())
        })?;
        let radius_m = number_prop(f, "radius").filter(|r| *r > 0.0)?;
        Some(Region::Circle { centre, radius_m })
    }

    fn contains(&self, c: Coord) -> bool {
        match self {
            Region::Polygons(polys) => {
                let p = geo::Point::new(c[0], c[1]);
                polys.iter().any(|poly| poly.intersects(&p))
            }
            Region::Circle { centre, radius_m } => distance_m(*centre, c) <= *radius_m,
        }
    }

    fn bbox(&self) -> Option<[f64; 4]> {
        match self {
            Region::Polygons(polys) => {
                let coords: Vec<Coord> = polys
                    .iter()
                    .flat_map(|p| p.exterior().coords().map(|c| [c.x, c.y]))
                    .collect();
                bbox(&coords)
            }
            Region::Circle { centre, radius_m } => {
                let edge: Vec<Coord> = [0.0, 90.0, 180.0, 270.0]
                    .iter()
                    .map(|b| destination(*centre, *b, *radius_m))
                    .collect();
                bbox(&edge)
            }
        }
    }
}

const LCG_MULTIPLIER: u64 = 1_664_525;
const LCG_INCREMENT: u64 = 1_013_904_223;
const LCG_MODULUS: u64 = 1 << 32;

fn lcg_next(state: u64) -> u64 {
    (LCG_MULTIPLIER
        .wrapping_mul(state)
        .wrapping_add(LCG_INCREMENT))
        % LCG_MODULUS
}

fn grid(region: &Region, b: [f64; 4], count: usize) -> Vec<Coord> {
    let [west, south, east, north] = b;
    let mid_lat = ((south + north) / 2.0).to_radians().cos().max(1e-6);
    let aspect = ((east - west) * mid_lat / (north - south)).clamp(1e-3, 1e3);
    let mut cells = count;
    for _ in 0..24 {
        let cols = ((cells as f64 * aspect).sqrt().ceil() as usize).max(1);
        let rows = cells.div_ceil(cols).max(1);
        let inside: Vec<Coord> = (0..rows)
            .flat_map(|r| (0..cols).map(move |c| (r, c)))
            .map(|(r, c)| {
                [
                    west + (c as f64 + 0.5) * (east - west) / cols as f64,
                    south + (r as f64 + 0.5) * (north - south) / rows as f64,
                ]
            })
            .filter(|c| region.contains(*c))
            .collect();
        if inside.len() >= count {
            // Spread the choice evenly over the rows rather than keeping the first ones.
            return (0..count)
                .filter_map(|i| inside.get(i * inside.len() / count).copied())
                .collect();
        }
        let grow = count as f64 / inside.len().max(1) as f64;
        cells = ((cells as f64 * grow * 1.1).ceil() as usize).max(cells + 1);
    }
    Vec::new()
}

fn scatter(region: &Region, b: [f64; 4], count: usize, seed: u64) -> Vec<Coord> {
    let [west, south, east, north] = b;
    let mut state = seed % LCG_MODULUS;
    let mut out = Vec::with_capacity(count);
    let mut attempts = 0usize;
    while out.len() < count && attempts < count.saturating_mul(1000) {
        attempts += 1;
        state = lcg_next(state);
        let lon_frac = state as f64 / LCG_MODULUS as f64;
        state = lcg_next(state);
        let lat_frac = state as f64 / LCG_MODULUS as f64;
        let c = [
            west + lon_frac * (east - west),
            south + lat_frac * (north - south),
        ];
        if region.contains(c) {
            out.push(c);
        }
    }
    out
}

pub(crate) fn generate_reference_points(call: &ToolCall) -> Result<ToolOutcome, CallError> {
    let title = humanise(GENERATE_REFERENCE_POINTS);
    let pattern = str_or(call, "pattern", "")?;
    if pattern != "grid" && pattern != "scatter" {
        return Err(CallError::invalid(format!(
            "{title} needs \"pattern\": \"grid\" or \"scatter\"; got \"{pattern}\""
        )));
    }
    let count = opt_u64(call, "count")?.unwrap_or(20);
    if !(1..=10_000).contains(&count) {
        return Err(CallError::invalid(format!(
            "Parameter \"count\" must be between 1 and 10000; got {count}"
        )));
    }
    let count = usize::try_from(count).unwrap_or(20);
    let seed = opt_u64(call, "seed")?.unwrap_or(1);
    let features = subject(call)?;
    let shape = select_single(&title, &features, &["RECTANGLE", "POLY", "CIRCLE"])?;
    let region = Region::of(shape).ok_or_else(|| {
        CallError::invalid(format!(
            "{title} cannot use {}: it needs Polygon geometry (or a CIRCLE center and radius)",
            describe(shape)
        ))
    })?;
    let b = region
        .bbox()
        .filter(|b| b[2] > b[0] && b[3] > b[1])
        .ok_or_else(|| {
            CallError::invalid(format!(
                "{title} cannot use {}: it has no area",
                describe(shape)
            ))
        })?;
    let coords = if pattern == "grid" {
        grid(&region, b, count)
    } else {
        scatter(&region, b, count, seed)
    };
    if coords.len() < count {
        return Err(CallError::invalid(format!(
            "{title} could place only {} of {count} points inside {}; the shape is too thin",
            coords.len(),
            describe(shape)
        )));
    }
    let source_id = Feature(shape).id().unwrap_or_default();
    let shape_name = Feature(shape).display_name();
    let new_id = format!("{source_id}-ref-{pattern}");
    let metadata: Vec<Value> = (0..coords.len())
        .map(|i| json!({"index": i, "name": format!("Ref {}", i + 1)}))
        .collect();
    let name = format!("Reference Points ({pattern} {count}) in {shape_name}");
    let feature = json!({
        "type": "Feature",
        "id": new_id,
        "geometry": {
            "type": "MultiPoint",
            "coordinates": coords.iter().map(|c| round_coord(*c)).collect::<Vec<_>>(),
        },
        "properties": {
            "kind": "POINT",
            "name": name,
            "location_type": "REFERENCE",
            "style": {"shape": "square", "color": OUTSIDE_COLOUR, "radius": 5},
            "point_metadata": metadata,
            "source_tool": GENERATE_REFERENCE_POINTS,
            "source_features": [source_id],
        },
    });
    let label = format!("Generated {count} reference points ({pattern}) inside {shape_name}");
    let data = json!({"created": [new_id], "count": count});
    Ok(change(
        ADDED_POINTS,
        label.clone(),
        label,
        vec![feature],
        data,
    ))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::tests::{boat1, call, circle, edited, point, rectangle, track};

    fn zone_from(out: &ToolOutcome) -> Value {
        edited(out).into_iter().next().unwrap()
    }

    #[test]
    fn buffer_zone_has_three_nested_zones() {
        let subject = boat1();
        let before = subject.clone();
        let out = buffer_zone_generator(&call(BUFFER_ZONE_GENERATOR, json!({}), &subject)).unwrap();
        assert_eq!(subject, before, "input unchanged");
        assert_eq!(out.kind.as_str(), ADDED_ZONE);
        let zone = zone_from(&out);
        assert_eq!(zone["id"], "3bc40f1a-93da-472f-ac34-c8e83c147a4c-buffer");
        assert_eq!(zone["properties"]["kind"], "ZONE");
        let polys = zone["geometry"]["coordinates"].as_array().unwrap();
        assert_eq!(polys.len(), 3);
        let zones = zone["properties"]["zones"].as_array().unwrap();
        let names: Vec<&str> = zones.iter().map(|z| z["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["75%", "50%", "25%"]);
        assert_eq!(zones[2]["buffer_distance_nm"], 12.0);
        // Each ring is closed and its vertices lie at least the zone distance from the track.
        let track = Track::parse(&before[0]);
        for (poly, nm) in polys.iter().zip([3.0, 6.0, 12.0]) {
            let ring = poly[0].as_array().unwrap();
            assert_eq!(ring.first(), ring.last());
            for v in ring {
                let v = [v[0].as_f64().unwrap(), v[1].as_f64().unwrap()];
                let nearest = track
                    .coords
                    .iter()
                    .map(|c| distance_m(*c, v))
                    .fold(f64::INFINITY, f64::min);
                assert!(nearest >= nm * 1852.0 * 0.99, "{nearest} m at {nm} nm");
                assert!(nearest <= nm * 1852.0 * 1.01, "{nearest} m at {nm} nm");
            }
        }
        // the track itself is inside the innermost zone
        let polys = polygons(&zone["geometry"]);
        for c in track.coords.iter().step_by(40) {
            assert!(polys[0].intersects(&geo::Point::new(c[0], c[1])));
        }
    }

    #[test]
    fn buffer_zone_overrides_and_errors() {
        let subject = json!([track("t1", "NELSON", 3)]);
        let out = buffer_zone_generator(&call(
            BUFFER_ZONE_GENERATOR,
            json!({"interval": "small", "distance_3_nm": 1.5}),
            &subject,
        ))
        .unwrap();
        let zone = zone_from(&out);
        let d: Vec<f64> = zone["properties"]["zones"]
            .as_array()
            .unwrap()
            .iter()
            .map(|z| z["buffer_distance_nm"].as_f64().unwrap())
            .collect();
        assert_eq!(d, [1.0, 1.5, 2.0], "sorted innermost first");
        assert!(
            out.summary.contains("75% 1 nm, 50% 1.5 nm, 25% 2 nm"),
            "{}",
            out.summary
        );

        let two = json!([track("a", "A", 2), track("b", "B", 2)]);
        let err = buffer_zone_generator(&call(BUFFER_ZONE_GENERATOR, json!({}), &two))
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "Buffer Zone Generator needs exactly one TRACK feature; got TRACK \"A\" and TRACK \"B\""
        );
    }

    #[test]
    fn reference_points_count_and_inside() {
        for pattern in ["grid", "scatter"] {
            for count in [1_u64, 7, 20, 100] {
                let subject = json!([circle("c1", "Area", [-4.0, 50.0], 5000.0)]);
                let out = generate_reference_points(&call(
                    GENERATE_REFERENCE_POINTS,
                    json!({"pattern": pattern, "count": count}),
                    &subject,
                ))
                .unwrap();
                assert_eq!(out.kind.as_str(), ADDED_POINTS);
                let f = zone_from(&out);
                assert_eq!(f["id"], format!("c1-ref-{pattern}"));
                let pts = f["geometry"]["coordinates"].as_array().unwrap();
                assert_eq!(pts.len() as u64, count, "{pattern} {count}");
                for p in pts {
                    let d = distance_m(
                        [-4.0, 50.0],
                        [p[0].as_f64().unwrap(), p[1].as_f64().unwrap()],
                    );
                    assert!(d <= 5000.0 + 1.0, "{pattern}: point {d} m from the centre");
                }
            }
        }
        // default count 20 in a rectangle; scatter is repeatable with the same seed
        let rect = json!([rectangle("r", "Box", [0.0, 0.0, 1.0, 1.0])]);
        let a = generate_reference_points(&call(
            GENERATE_REFERENCE_POINTS,
            json!({"pattern": "scatter", "seed": 7}),
            &rect,
        ))
        .unwrap();
        let b = generate_reference_points(&call(
            GENERATE_REFERENCE_POINTS,
            json!({"pattern": "scatter", "seed": 7}),
            &rect,
        ))
        .unwrap();
        assert_eq!(edited(&a), edited(&b));
        assert_eq!(
            zone_from(&a)["geometry"]["coordinates"]
                .as_array()
                .unwrap()
                .len(),
            20
        );
        let err = generate_reference_points(&call(
            GENERATE_REFERENCE_POINTS,
            json!({"pattern": "grid"}),
            &json!([track("t", "T", 2)]),
        ))
        .unwrap_err()
        .to_string();
        assert!(
            err.starts_with(
                "Generate Reference Points needs exactly one RECTANGLE, POLY or CIRCLE feature"
            ),
            "{err}"
        );
    }

    #[test]
    fn classifier_membership() {
        // zones around a single-point "track" at the origin: 1, 2, 4 nm
        let t = json!({"type": "Feature", "id": "t", "geometry": {"type": "LineString", "coordinates": [[0.0, 0.0]]},
                       "properties": {"kind": "TRACK", "name": "T", "positions": [{"time": "2026-03-01T00:00:00Z"}]}});
        let zone = zone_from(
            &buffer_zone_generator(&call(
                BUFFER_ZONE_GENERATOR,
                json!({"interval": "small"}),
                &json!([t]),
            ))
            .unwrap(),
        );
        let nm = 1.0 / 60.0; // one nautical mile of latitude, near enough
        let refs = json!({"type": "Feature", "id": "refs", "geometry": {"type": "MultiPoint", "coordinates": [
                [0.0, 0.5 * nm], [0.0, 1.5 * nm], [3.0 * nm, 0.0], [0.0, -6.0 * nm]]},
            "properties": {"kind": "POINT", "name": "Refs", "point_metadata": [{"name": "Ref 1"}]}});
        let subject = json!([refs, zone, point("p", "Datum A")]);
        let before = subject.clone();
        let out =
            point_in_zone_classifier(&call(POINT_IN_ZONE_CLASSIFIER, json!({}), &subject)).unwrap();
        assert_eq!(subject, before);
        assert!(out.change_set.is_none(), "a dataset, not a change");
        assert_eq!(out.kind.as_str(), CLASSIFIED);
        let zones: Vec<&str> = out.data["points"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["zone"].as_str().unwrap())
            .collect();
        // refs (4 points) then Datum A at [0.5, 0.5] degrees: far outside
        assert_eq!(zones, ["75%", "50%", "25%", "none", "none"]);
        assert_eq!(out.data["points"][0]["name"], "Ref 1");
        assert_eq!(out.data["points"][1]["name"], "Refs #2");
        assert_eq!(out.data["counts"]["none"], 2);
        assert_eq!(out.data["points"][0]["color"], "#9C27B0");
        assert_eq!(
            out.summary,
            "Classified 5 points against 3 zones: 75% 1, 50% 1, 25% 1, outside 2"
        );
        let err = point_in_zone_classifier(&call(
            POINT_IN_ZONE_CLASSIFIER,
            json!({}),
            &json!([point("p", "Datum A")]),
        ))
        .unwrap_err()
        .to_string();
        assert!(err.contains("at least one ZONE"), "{err}");
    }
}
