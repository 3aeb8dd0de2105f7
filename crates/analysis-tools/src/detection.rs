//! `sensor/detection`: detection-likelihood buffer zones around a track.

use serde_json::{Value, json};

use toolgate_tool_catalogue::common::single;
use toolgate_tool_catalogue::model::{id_of, is_track, line_coords};
use toolgate_tool_catalogue::{CalcInput, Entry, Item, ToolError};

pub(crate) const TOOLS: &[Entry] = &[
    // sensor/detection
    Entry {
        id: "buffer-zone-generator",
        spec_category: "sensor/detection",
        spec_version: "1.0",
        description: "Add a ZONE feature around one TRACK with three concentric detection-likelihood zones (75%, 50%, 25%) at increasing distances in nautical miles (default 3, 6 and 12 nm).",
        output_kind: "addition/feature",
        requirements: one_track,
        params: buffer_params,
        required: &[],
        run: buffer_zone_generator,
    },
];

// ---------------------------------------------------------------------------------------------
// sensor/detection: buffer-zone-generator

fn one_track() -> Value {
    single(&["TRACK"])
}

fn buffer_params() -> Value {
    json!({
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
    })
}

/// (name, [distances nm]) presets of the `interval` parameter.
const INTERVALS: &[(&str, [f64; 3])] = &[
    ("small", [1.0, 2.0, 4.0]),
    ("medium", [2.0, 4.0, 8.0]),
    ("large", [3.0, 6.0, 12.0]),
];
/// The stub sensor model's zones, innermost first: likelihood, colour, fill opacity.
const ZONES: [(u32, &str, f64); 3] = [
    (75, "#9C27B0", 0.25),
    (50, "#F44336", 0.18),
    (25, "#FF9800", 0.12),
];
/// Offset bearings per track position (every 10°).
const BEARINGS: u32 = 36;
const EARTH_RADIUS_KM: f64 = 6371.0;
const KM_PER_NM: f64 = 1.852;

fn zone_style(colour: &str, fill_opacity: f64) -> Value {
    json!({
        "fill": true, "fill_color": colour, "fill_opacity": fill_opacity,
        "stroke": true, "color": colour, "weight": 2, "opacity": 1.0, "dash_array": "6, 4",
    })
}

/// The spec's spherical destination (6371 km earth), longitude normalised to [-180, 180).
fn translate(c: [f64; 2], bearing: f64, km: f64) -> [f64; 2] {
    let (lat1, lon1) = (c[1].to_radians(), c[0].to_radians());
    let brng = bearing.to_radians();
    let d = km / EARTH_RADIUS_KM;
    let lat2 = (lat1.sin() * d.cos() + lat1.cos() * d.sin() * brng.cos()).asin();
    let lon2 = lon1 + (brng.sin() * d.sin() * lat1.cos()).atan2(d.cos() - lat1.sin() * lat2.sin());
    [
        (lon2.to_degrees() + 180.0).rem_euclid(360.0) - 180.0,
        lat2.to_degrees(),
    ]
}

/// Andrew's monotone chain: the convex hull, counter-clockwise from the lowest-longitude point,
/// collinear points dropped, not closed.
fn convex_hull(mut points: Vec<[f64; 2]>) -> Vec<[f64; 2]> {
    points.sort_by(|a, b| a[0].total_cmp(&b[0]).then(a[1].total_cmp(&b[1])));
    points.dedup();
    if points.len() <= 1 {
        return points;
    }
    let cross = |o: [f64; 2], a: [f64; 2], b: [f64; 2]| {
        (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])
    };
    let chain = |iter: &mut dyn Iterator<Item = [f64; 2]>| {
        let mut out: Vec<[f64; 2]> = Vec::new();
        for p in iter {
            while out.len() >= 2 && cross(out[out.len() - 2], out[out.len() - 1], p) <= 0.0 {
                out.pop();
            }
            out.push(p);
        }
        out.pop();
        out
    };
    let mut lower = chain(&mut points.iter().copied());
    let upper = chain(&mut points.iter().rev().copied());
    lower.extend(upper);
    lower
}

/// The closed ring of the convex hull of every position offset `nm` on 36 bearings. A track
/// spanning more than 180° of longitude is worked in [0, 360) and normalised back.
fn buffer_ring(coords: &[[f64; 2]], nm: f64) -> Vec<[f64; 2]> {
    let (lo, hi) = coords
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), c| {
            (lo.min(c[0]), hi.max(c[0]))
        });
    let shifted = hi - lo > 180.0;
    let shift = |lon: f64| {
        if shifted && lon < 0.0 {
            lon + 360.0
        } else {
            lon
        }
    };
    let km = nm * KM_PER_NM;
    let mut cloud = Vec::with_capacity(coords.len() * BEARINGS as usize);
    for c in coords {
        for b in 0..BEARINGS {
            let d = translate(*c, f64::from(b) * 10.0, km);
            cloud.push([shift(d[0]), d[1]]);
        }
    }
    let mut ring: Vec<[f64; 2]> = convex_hull(cloud)
        .into_iter()
        .map(|[x, y]| {
            if shifted {
                [(x + 180.0).rem_euclid(360.0) - 180.0, y]
            } else {
                [x, y]
            }
        })
        .collect();
    if let Some(first) = ring.first().copied() {
        ring.push(first);
    }
    ring
}

fn buffer_zone_generator(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    let Some(track) = input.features.iter().find(|f| is_track(f)) else {
        return Err(ToolError::invalid("No track features found in input"));
    };
    let id = id_of(track).unwrap_or_default();
    let interval = input.str_param("interval").unwrap_or("large");
    let Some((_, preset)) = INTERVALS.iter().find(|(name, _)| *name == interval) else {
        return Err(ToolError::invalid(format!(
            "Parameter \"interval\" must be one of small, medium, large; got \"{interval}\""
        )));
    };
    let mut distances = *preset;
    for (i, slot) in distances.iter_mut().enumerate() {
        if let Some(d) = input.param(&format!("distance_{}_nm", i + 1)) {
            *slot = d.as_f64().unwrap_or(f64::NAN);
        }
    }
    if distances.iter().any(|d| d.is_nan() || *d <= 0.0) {
        return Err(ToolError::invalid(format!(
            "All buffer distances must be positive; got {distances:?} nm"
        )));
    }
    distances.sort_by(f64::total_cmp);
    let coords = line_coords(track);
    if coords.is_empty() {
        return Err(ToolError::invalid("Track has no coordinates").affecting(vec![id]));
    }
    let mut polygons = Vec::with_capacity(3);
    let mut zones = Vec::with_capacity(3);
    for (nm, (likelihood, colour, opacity)) in distances.iter().zip(ZONES) {
        polygons.push(json!([buffer_ring(&coords, *nm)]));
        zones.push(json!({
            "name": format!("{likelihood}%"),
            "detection_likelihood_pct": likelihood,
            "buffer_distance_nm": nm,
            "style": zone_style(colour, opacity),
        }));
    }
    let label = "Generated 3 detection zones (75%, 50%, 25%) for track";
    let zone = json!({
        "type": "Feature",
        "id": format!("{id}-buffer"),
        "geometry": {"type": "MultiPolygon", "coordinates": polygons},
        "properties": {
            "kind": "ZONE",
            "name": "Detection Zones (75%, 50%, 25%)",
            "style": zone_style(ZONES[0].1, ZONES[0].2),
            "zones": zones,
            "debrief:resultType": "addition/feature",
            "debrief:sourceFeatures": [id],
            "debrief:label": label,
        },
    });
    Ok(vec![Item::feature(
        zone,
        "addition/feature",
        vec![id],
        label,
    )])
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use toolgate_tool_catalogue::Body;
    use toolgate_tool_catalogue::model::range_nm;

    fn run(features: &[Value], params: Value) -> Result<Vec<Item>, ToolError> {
        let params = params.as_object().cloned().unwrap_or_default();
        buffer_zone_generator(&CalcInput::new(features, &params))
    }

    fn track(coords: &[[f64; 2]]) -> Value {
        json!({"type": "Feature", "id": "t", "geometry": {"type": "LineString", "coordinates": coords},
            "properties": {"kind": "TRACK", "name": "T"}})
    }

    fn rings(items: &[Item]) -> Vec<Vec<[f64; 2]>> {
        let Body::Feature(f) = &items[0].body else {
            panic!()
        };
        f["geometry"]["coordinates"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| serde_json::from_value(p[0].clone()).unwrap())
            .collect()
    }

    #[test]
    fn a_single_point_gives_three_circles_at_the_right_ranges() {
        let out = run(&[track(&[[-4.5, 50.2]])], json!({"interval": "small"})).unwrap();
        for (ring, nm) in rings(&out).iter().zip([1.0, 2.0, 4.0]) {
            assert_eq!(ring.len(), 37, "36 vertices, closed");
            assert_eq!(ring.first(), ring.last());
            for v in ring {
                // 60 nm per degree vs the 6371 km sphere: within 0.2%
                assert!((range_nm([-4.5, 50.2], *v) / nm - 1.0).abs() < 2e-3);
            }
        }
    }

    #[test]
    fn bad_distances_and_inputs_are_errors() {
        let err = run(&[track(&[[0.0, 0.0]])], json!({"distance_2_nm": -1.0})).unwrap_err();
        assert!(
            err.message
                .starts_with("All buffer distances must be positive")
        );
        let err = run(&[], json!({})).unwrap_err();
        assert_eq!(err.message, "No track features found in input");
        let empty = json!({"type": "Feature", "id": "e", "geometry": null, "properties": {"kind": "TRACK"}});
        let err = run(&[empty], json!({})).unwrap_err();
        assert_eq!(err.message, "Track has no coordinates");
    }

    #[test]
    fn the_antimeridian_does_not_wrap_the_zone_round_the_world() {
        let out = run(&[track(&[[179.9, 0.0], [-179.9, 0.0]])], json!({})).unwrap();
        for ring in rings(&out) {
            for w in ring.windows(2) {
                let dlon = (w[1][0] - w[0][0]).abs();
                assert!(!(1.0..=359.0).contains(&dlon), "{w:?}");
            }
        }
    }

    proptest! {
        /// Every track position lies inside the innermost zone, and the zones nest.
        #[test]
        fn zones_contain_the_track_and_nest(pts in proptest::collection::vec((-10.0f64..10.0, 40.0f64..60.0), 1..6)) {
            use geo::{Contains, Coord, LineString, Point, Polygon};
            let coords: Vec<[f64; 2]> = pts.iter().map(|(a, b)| [*a, *b]).collect();
            let out = run(&[track(&coords)], json!({})).unwrap();
            let polys: Vec<Polygon<f64>> = rings(&out).into_iter().map(|r| Polygon::new(LineString::new(r.into_iter().map(|[x, y]| Coord { x, y }).collect()), vec![])).collect();
            for c in &coords {
                prop_assert!(polys[0].contains(&Point::new(c[0], c[1])));
            }
            for v in polys[0].exterior().coords() {
                prop_assert!(polys[1].contains(&Point::new(v.x, v.y)));
            }
        }
    }
}
