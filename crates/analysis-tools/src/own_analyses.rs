//! toolgate's own read-only analyses, outside Debrief's catalogue: track statistics, range and
//! bearing, area summary, speed filter. They take a registry call (`ToolCall`) rather than a
//! catalogue input; a catalogue tool with the same id replaces one of them in the listing.

use geo::{ConvexHull, GeodesicArea};
use serde_json::{Map, Value, json};
use toolgate_core::{CallError, ToolCall, ToolOutcome, ToolSpec};
use toolgate_feature::Feature;

use toolgate_tool_catalogue::common::{
    Coord, Def, METRES_PER_KM, METRES_PER_MILE, METRES_PER_NM, Track, analysis, bbox, bearing_deg,
    bool_or, coord_prop, describe, destination, distance_m, format_time, geometry_coords, humanise,
    multi, name_list, number_prop, opt_f64, round_to, select_exactly, select_multi, select_single,
    single, str_or, subject, unwrap_lon, vertex_mean,
};

pub(crate) const TRACK_STATS: &str = "track-stats";
pub(crate) const RANGE_BEARING: &str = "range-bearing";
pub(crate) const AREA_SUMMARY: &str = "area-summary";
pub(crate) const SPEED_FILTER: &str = "speed-filter";

const STATISTICS: &str = "track/statistics";
const RANGE_SERIES: &str = "dataset/range_bearing_series";
const REGION_STATISTICS: &str = "region/statistics";
const SPEED_FILTERED: &str = "dataset/speed_filtered_positions";

const TRACK: &[&str] = &["TRACK"];
/// What range-bearing measures between: tracks, or any feature with a position.
const RANGE_KINDS: &[&str] = &[
    "TRACK",
    "POINT",
    "CIRCLE",
    "RECTANGLE",
    "LINE",
    "TEXT",
    "VECTOR",
    "POLY",
    "ZONE",
];
const AREA_KINDS: &[&str] = &["TRACK", "POINT", "RECTANGLE", "CIRCLE", "ZONE", "POLY"];

pub(crate) fn track_stats_spec() -> ToolSpec {
    Def {
        id: TRACK_STATS,
        description: "Compute one TRACK's point count, time span, distance travelled (great-circle, in nm, km or mi) and average speed in knots.",
        output_kind: STATISTICS,
        category: "analysis",
        requirements: single(TRACK),
        properties: json!({
            "distance_unit": {
                "type": "string",
                "description": "Unit for the distance: nm (nautical miles), km or mi (statute miles).",
                "enum": ["nm", "km", "mi"],
                "default": "nm",
            },
        }),
        required: &[],
    }
    .build()
}

pub(crate) fn range_bearing_spec() -> ToolSpec {
    Def {
        id: RANGE_BEARING,
        description: "Compute the range and true bearing (degrees) from the first selected feature to the second over time: two TRACKs at the first track's times within their common period, or a TRACK and a fixed POINT or shape. Ranges are in `units` (nm, yd, m or km; nautical miles by default — toolgate passes the analyst's unit setting), keyed range_<unit>.",
        output_kind: RANGE_SERIES,
        category: "analysis",
        requirements: Value::Array(
            RANGE_KINDS
                .iter()
                .map(|k| json!({"kind": k, "min": 1, "max": 2}))
                .collect(),
        ),
        properties: json!({
            "units": {
                "type": "string",
                "enum": ["nm", "yd", "m", "km"],
                "default": "nm",
                "description": "Distance unit of the ranges: nm (nautical miles, the default), yd, m or km.",
            },
        }),
        required: &[],
    }
    .build()
}

pub(crate) fn area_summary_spec() -> ToolSpec {
    Def {
        id: AREA_SUMMARY,
        description: "Summarise the extent of the selected features (TRACK, POINT, RECTANGLE, CIRCLE, ZONE, POLY): bounding box, width and height in nm, bounding-box and convex-hull areas in square nm, and the centre.",
        output_kind: REGION_STATISTICS,
        category: "analysis",
        requirements: multi(AREA_KINDS),
        properties: json!({
            "include_centroid": {
                "type": "boolean",
                "description": "Include the centre of the bounding box in the result.",
                "default": true,
            },
        }),
        required: &[],
    }
    .build()
}

pub(crate) fn speed_filter_spec() -> ToolSpec {
    Def {
        id: SPEED_FILTER,
        description: "List the positions of one or more TRACKs whose speed is at most max_knots and/or at least min_knots (recorded speed, else derived from consecutive positions), e.g. \"positions below 5 kn\" is max_knots 5; give at least one of the two.",
        output_kind: SPEED_FILTERED,
        category: "analysis",
        requirements: multi(TRACK),
        properties: json!({
            "max_knots": {
                "type": "number",
                "description": "Keep positions with speed at or below this many knots.",
                "minimum": 0,
            },
            "min_knots": {
                "type": "number",
                "description": "Keep positions with speed at or above this many knots.",
                "minimum": 0,
            },
        }),
        required: &[],
    }
    .build()
}

// ---------------------------------------------------------------------------------------------
// track-stats

pub(crate) fn track_stats(call: &ToolCall) -> Result<ToolOutcome, CallError> {
    let title = humanise(TRACK_STATS);
    let unit = str_or(call, "distance_unit", "nm")?;
    let per_unit = match unit {
        "nm" => METRES_PER_NM,
        "km" => METRES_PER_KM,
        "mi" => METRES_PER_MILE,
        other => {
            return Err(CallError::invalid(format!(
                "Parameter \"distance_unit\" must be one of nm, km, mi; got \"{other}\""
            )));
        }
    };
    let features = subject(call)?;
    let feature = select_single(&title, &features, TRACK)?;
    let track = Track::parse(feature);
    let metres: f64 = track
        .coords
        .windows(2)
        .map(|w| match w {
            [a, b] => distance_m(*a, *b),
            _ => 0.0,
        })
        .sum();
    let span = track.time_span();
    let hours = span.map_or(0.0, |(a, b)| (b - a) as f64 / 3_600_000.0);
    let average_kn = if hours > 0.0 {
        metres / METRES_PER_NM / hours
    } else {
        0.0
    };
    let distance = metres / per_unit;
    let data = json!({
        "feature_id": track.id,
        "name": track.name,
        "point_count": track.len(),
        "start_time": span.map(|(a, _)| format_time(a)),
        "end_time": span.map(|(_, b)| format_time(b)),
        "duration_hours": round_to(hours, 3),
        "distance": round_to(distance, 3),
        "distance_unit": unit,
        "distance_m": round_to(metres, 1),
        "average_speed_kn": round_to(average_kn, 2),
    });
    let summary = format!(
        "{}: {} points over {:.1} h, {:.1} {unit}, average {:.1} kn",
        track.name,
        track.len(),
        hours,
        distance,
        average_kn
    );
    Ok(analysis(STATISTICS, summary, data))
}

// ---------------------------------------------------------------------------------------------
// range-bearing

/// A feature as range-bearing sees it: a timed track or a fixed point.
enum Subject<'a> {
    Moving(Track<'a>),
    Fixed { name: String, at: Coord },
}

impl Subject<'_> {
    fn name(&self) -> &str {
        match self {
            Subject::Moving(t) => &t.name,
            Subject::Fixed { name, .. } => name,
        }
    }
}

/// The position a fixed feature stands for: its `center` / `origin`, a Point, or the mean of
/// its vertices.
fn fixed_point(f: &Value) -> Option<Coord> {
    coord_prop(f, "center")
        .or_else(|| coord_prop(f, "origin"))
        .or_else(|| {
            let coords = f.get("geometry").map(geometry_coords).unwrap_or_default();
            vertex_mean(&coords)
        })
}

fn range_subject<'a>(title: &str, f: &'a Value) -> Result<Subject<'a>, CallError> {
    if Feature(f).kind() == "TRACK" {
        let track = Track::parse(f);
        let timed = track.times().iter().filter(|t| t.is_some()).count();
        if timed == 0 {
            return Err(CallError::invalid(format!(
                "{title} cannot use TRACK \"{}\": none of its positions has a readable time",
                track.name
            )));
        }
        return Ok(Subject::Moving(track));
    }
    let at = fixed_point(f).ok_or_else(|| {
        CallError::invalid(format!(
            "{title} cannot use {}: it has no position",
            describe(f)
        ))
    })?;
    Ok(Subject::Fixed {
        name: Feature(f).display_name(),
        at,
    })
}

/// `(time, coord)` of every timed position, sorted by time.
fn timed_positions(track: &Track<'_>) -> Vec<(i64, Coord)> {
    let mut out: Vec<(i64, Coord)> = track
        .times()
        .iter()
        .zip(&track.coords)
        .filter_map(|(t, c)| t.map(|t| (t, *c)))
        .collect();
    out.sort_by_key(|(t, _)| *t);
    out
}

/// The position at `t`, interpolated linearly between the neighbouring fixes; `None` outside
/// the track's time span.
fn position_at(timed: &[(i64, Coord)], t: i64) -> Option<Coord> {
    let i = timed.partition_point(|(ti, _)| *ti < t);
    let (t1, c1) = *timed.get(i)?;
    if t1 == t {
        return Some(c1);
    }
    let (t0, c0) = *timed.get(i.checked_sub(1)?)?;
    let f = (t - t0) as f64 / (t1 - t0) as f64;
    let lon1 = unwrap_lon(c1[0], c0[0]);
    Some([
        toolgate_tool_catalogue::common::normalise_lon(c0[0] + (lon1 - c0[0]) * f),
        c0[1] + (c1[1] - c0[1]) * f,
    ])
}

pub(crate) fn range_bearing(call: &ToolCall) -> Result<ToolOutcome, CallError> {
    let title = humanise(RANGE_BEARING);
    let unit = str_or(call, "units", "nm")?;
    let (per_unit, places) = match unit {
        "nm" => (METRES_PER_NM, 3),
        "yd" => (0.9144, 0),
        "m" => (1.0, 1),
        "km" => (1000.0, 3),
        other => {
            return Err(CallError::invalid(format!(
                "{title}: unknown distance unit \"{other}\"; use nm, yd, m or km"
            )));
        }
    };
    let range_key = format!("range_{unit}");
    let features = subject(call)?;
    let pair = select_exactly(&title, &features, RANGE_KINDS, 2)?;
    let (Some(a), Some(b)) = (pair.first(), pair.get(1)) else {
        return Err(CallError::failed(
            "two features were selected but not found",
        ));
    };
    let from = range_subject(&title, a)?;
    let to = range_subject(&title, b)?;
    // (time or None, from, to)
    let mut samples: Vec<(Option<i64>, Coord, Coord)> = Vec::new();
    match (&from, &to) {
        (Subject::Moving(ta), Subject::Moving(tb)) => {
            let tb_timed = timed_positions(tb);
            for (t, c) in ta.times().iter().zip(&ta.coords) {
                if let Some(t) = t
                    && let Some(other) = position_at(&tb_timed, *t)
                {
                    samples.push((Some(*t), *c, other));
                }
            }
            if samples.is_empty() {
                let span = |t: &Track<'_>| {
                    t.time_span()
                        .map(|(s, e)| format!("{} - {}", format_time(s), format_time(e)))
                        .unwrap_or_default()
                };
                return Err(CallError::invalid(format!(
                    "{title}: TRACK \"{}\" ({}) and TRACK \"{}\" ({}) share no time; choose tracks whose times overlap",
                    ta.name,
                    span(ta),
                    tb.name,
                    span(tb)
                )));
            }
        }
        (Subject::Moving(track), Subject::Fixed { at, .. }) => {
            for (t, c) in track.times().iter().zip(&track.coords) {
                if t.is_some() {
                    samples.push((*t, *c, *at));
                }
            }
        }
        (Subject::Fixed { at, .. }, Subject::Moving(track)) => {
            for (t, c) in track.times().iter().zip(&track.coords) {
                if t.is_some() {
                    samples.push((*t, *at, *c));
                }
            }
        }
        (Subject::Fixed { at: p, .. }, Subject::Fixed { at: q, .. }) => {
            samples.push((None, *p, *q));
        }
    }
    let mut series = Vec::with_capacity(samples.len());
    let mut min: Option<(f64, Option<i64>)> = None;
    let mut max: Option<(f64, Option<i64>)> = None;
    for (t, p, q) in &samples {
        let range = distance_m(*p, *q);
        let bearing = if range == 0.0 {
            0.0
        } else {
            bearing_deg(*p, *q)
        };
        if min.is_none_or(|(m, _)| range < m) {
            min = Some((range, *t));
        }
        if max.is_none_or(|(m, _)| range > m) {
            max = Some((range, *t));
        }
        let mut row = Map::new();
        row.insert("time".into(), json!(t.map(format_time)));
        row.insert(range_key.clone(), json!(round_to(range / per_unit, places)));
        row.insert("bearing_deg".into(), json!(round_to(bearing, 2)));
        series.push(Value::Object(row));
    }
    let at = |x: Option<(f64, Option<i64>)>| {
        x.map(|(r, t)| {
            let mut m = Map::new();
            m.insert(range_key.clone(), json!(round_to(r / per_unit, places)));
            m.insert("time".into(), json!(t.map(format_time)));
            Value::Object(m)
        })
    };
    let describe_extreme = |x: Option<(f64, Option<i64>)>| {
        x.map(|(r, t)| {
            let when = t
                .map(|t| format!(" at {}", format_time(t)))
                .unwrap_or_default();
            let shown = if places == 0 { 0 } else { 2 };
            format!("{:.*} {unit}{when}", shown, r / per_unit)
        })
        .unwrap_or_default()
    };
    let summary = if series.len() == 1 {
        let bearing = samples.first().map_or(0.0, |(_, p, q)| bearing_deg(*p, *q));
        format!(
            "{} to {}: {}, bearing {:03.0}°",
            from.name(),
            to.name(),
            describe_extreme(min),
            bearing
        )
    } else {
        format!(
            "{} to {}: {} samples, closest {}, furthest {}",
            from.name(),
            to.name(),
            series.len(),
            describe_extreme(min),
            describe_extreme(max)
        )
    };
    let data = json!({
        "from": {"id": Feature(a).id(), "name": from.name()},
        "to": {"id": Feature(b).id(), "name": to.name()},
        "count": series.len(),
        "min": at(min),
        "max": at(max),
        "series": series,
    });
    Ok(analysis(RANGE_SERIES, summary, data))
}

// ---------------------------------------------------------------------------------------------
// area-summary

/// Every coordinate of a feature; a CIRCLE stored as centre + radius contributes its extreme
/// points.
fn extent_coords(f: &Value) -> Vec<Coord> {
    let mut coords = f.get("geometry").map(geometry_coords).unwrap_or_default();
    if Feature(f).kind() == "CIRCLE"
        && coords.len() <= 1
        && let (Some(c), Some(r)) = (coord_prop(f, "center"), number_prop(f, "radius"))
    {
        coords.extend(
            [0.0, 90.0, 180.0, 270.0]
                .iter()
                .map(|b| destination(c, *b, r)),
        );
    }
    coords
}

fn sq_nm(polygon: &geo::Polygon<f64>) -> f64 {
    polygon.geodesic_area_unsigned() / (METRES_PER_NM * METRES_PER_NM)
}

pub(crate) fn area_summary(call: &ToolCall) -> Result<ToolOutcome, CallError> {
    let title = humanise(AREA_SUMMARY);
    let include_centroid = bool_or(call, "include_centroid", true)?;
    let features = subject(call)?;
    let selection = select_multi(&title, &features, AREA_KINDS)?;
    let mut coords = Vec::new();
    let mut by_kind: Map<String, Value> = Map::new();
    for f in &selection.matched {
        coords.extend(extent_coords(f));
        let n = by_kind
            .get(Feature(f).kind())
            .and_then(Value::as_u64)
            .unwrap_or(0);
        by_kind.insert(Feature(f).kind().to_owned(), json!(n + 1));
    }
    let Some([west, south, east, north]) = bbox(&coords) else {
        let names: Vec<String> = selection.matched.iter().map(|f| describe(f)).collect();
        return Err(CallError::invalid(format!(
            "{title} found no coordinates in {}",
            name_list(&names)
        )));
    };
    let mid_lat = (south + north) / 2.0;
    let mid_lon = (west + east) / 2.0;
    let width_nm = distance_m([west, mid_lat], [east, mid_lat]) / METRES_PER_NM;
    let height_nm = distance_m([mid_lon, south], [mid_lon, north]) / METRES_PER_NM;
    let bbox_polygon = geo::Polygon::new(
        geo::LineString::from(vec![
            (west, south),
            (east, south),
            (east, north),
            (west, north),
            (west, south),
        ]),
        vec![],
    );
    let hull = geo::MultiPoint::from(
        coords
            .iter()
            .map(|c| geo::Point::new(c[0], c[1]))
            .collect::<Vec<_>>(),
    )
    .convex_hull();
    let bbox_area = sq_nm(&bbox_polygon);
    let hull_area = sq_nm(&hull);
    let mut data = json!({
        "feature_count": selection.matched.len(),
        "by_kind": by_kind,
        "bbox": [west, south, east, north],
        "width_nm": round_to(width_nm, 3),
        "height_nm": round_to(height_nm, 3),
        "bbox_area_sq_nm": round_to(bbox_area, 3),
        "hull_area_sq_nm": round_to(hull_area, 3),
    });
    if include_centroid && let Some(obj) = data.as_object_mut() {
        obj.insert(
            "centroid".into(),
            json!([round_to(mid_lon, 6), round_to(mid_lat, 6)]),
        );
    }
    let names: Vec<String> = selection
        .matched
        .iter()
        .map(|f| Feature(f).display_name())
        .collect();
    let summary = format!(
        "{}: {:.1} x {:.1} nm, bounding box {:.1} sq nm, hull {:.1} sq nm{}",
        name_list(&names),
        width_nm,
        height_nm,
        bbox_area,
        hull_area,
        if include_centroid {
            format!(", centre {mid_lat:.4}, {mid_lon:.4}")
        } else {
            String::new()
        }
    ) + &selection.skipped_note();
    Ok(analysis(REGION_STATISTICS, summary, data))
}

// ---------------------------------------------------------------------------------------------
// speed-filter

pub(crate) fn speed_filter(call: &ToolCall) -> Result<ToolOutcome, CallError> {
    let title = humanise(SPEED_FILTER);
    let max = opt_f64(call, "max_knots")?;
    let min = opt_f64(call, "min_knots")?;
    let condition = match (min, max) {
        (None, None) => {
            return Err(CallError::invalid(format!(
                "{title} needs max_knots and/or min_knots, e.g. {{\"max_knots\": 5}} for positions at or below 5 kn"
            )));
        }
        (Some(lo), Some(hi)) if lo > hi => {
            return Err(CallError::invalid(format!(
                "min_knots ({lo}) must not be greater than max_knots ({hi})"
            )));
        }
        (Some(lo), Some(hi)) => format!("{lo}-{hi} kn"),
        (Some(lo), None) => format!(">= {lo} kn"),
        (None, Some(hi)) => format!("<= {hi} kn"),
    };
    let features = subject(call)?;
    let selection = select_multi(&title, &features, TRACK)?;
    let mut tracks = Vec::with_capacity(selection.matched.len());
    let mut parts = Vec::with_capacity(selection.matched.len());
    let mut total = 0usize;
    for f in &selection.matched {
        let track = Track::parse(f);
        let n = track.len();
        let mut positions = Vec::new();
        let mut previous_leg = None;
        for i in 0..n {
            let own = track.leg(i);
            if own.is_some() {
                previous_leg = own;
            }
            let leg = own.or(previous_leg);
            let (speed, source) = match track.recorded_speed(i) {
                Some(s) => (Some(s), "recorded"),
                None => (leg.map(|l| l.speed_kn), "derived"),
            };
            let Some(speed) = speed else { continue };
            let keep = min.is_none_or(|lo| speed >= lo) && max.is_none_or(|hi| speed <= hi);
            if !keep {
                continue;
            }
            let (Some(c), time) = (track.coords.get(i), track.times().get(i).copied().flatten())
            else {
                continue;
            };
            positions.push(json!({
                "index": i,
                "time": time.map(format_time),
                "lon": c[0],
                "lat": c[1],
                "speed_kn": round_to(speed, 2),
                "speed_source": source,
            }));
        }
        total += positions.len();
        parts.push(format!("{} {} of {n}", track.name, positions.len()));
        tracks.push(json!({
            "feature_id": track.id,
            "name": track.name,
            "total": n,
            "matched": positions.len(),
            "positions": positions,
        }));
    }
    let summary = format!(
        "Speed {condition}: {} ({total} positions){}",
        parts.join(", "),
        selection.skipped_note()
    );
    let data = json!({
        "min_knots": min,
        "max_knots": max,
        "matched": total,
        "tracks": tracks,
    });
    Ok(analysis(SPEED_FILTERED, summary, data))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use toolgate_tool_catalogue::testing::{
        boat1, call, circle, point, rectangle, track, track_from,
    };

    #[test]
    fn track_stats_on_boat1() {
        let subject = boat1();
        let before = subject.clone();
        let out = track_stats(&call(TRACK_STATS, json!({}), &subject)).unwrap();
        assert_eq!(subject, before);
        assert_eq!(out.kind.as_str(), STATISTICS);
        assert!(out.change_set.is_none());
        let d = &out.data;
        assert_eq!(d["point_count"], 402);
        assert_eq!(d["start_time"], "1995-12-12T05:00:00Z");
        assert_eq!(d["end_time"], "1995-12-12T11:41:00Z");
        assert!((d["duration_hours"].as_f64().unwrap() - 401.0 / 60.0).abs() < 1e-3);
        // independent haversine sum (python, R = 6371008.8 m): 124 894.95 m = 67.438 nm
        assert!(
            (d["distance_m"].as_f64().unwrap() - 124_894.95).abs() < 1.0,
            "{d}"
        );
        assert!(
            (d["distance"].as_f64().unwrap() - 67.438).abs() < 0.01,
            "{d}"
        );
        assert!(
            (d["average_speed_kn"].as_f64().unwrap() - 10.09).abs() < 0.01,
            "{d}"
        );
        assert_eq!(
            out.summary,
            "NELSON: 402 points over 6.7 h, 67.4 nm, average 10.1 kn"
        );

        let out =
            track_stats(&call(TRACK_STATS, json!({"distance_unit": "km"}), &subject)).unwrap();
        assert!((out.data["distance"].as_f64().unwrap() - 124.895).abs() < 0.001);
        assert!(
            (out.data["average_speed_kn"].as_f64().unwrap() - 10.09).abs() < 0.01,
            "still knots"
        );
    }

    #[test]
    fn track_stats_errors() {
        let err = track_stats(&call(TRACK_STATS, json!({}), &json!([])))
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "Track Stats needs exactly one TRACK feature; got no features"
        );
        let err = track_stats(&call(
            TRACK_STATS,
            json!({}),
            &json!([point("p", "Datum A")]),
        ))
        .unwrap_err()
        .to_string();
        assert_eq!(
            err,
            "Track Stats needs exactly one TRACK feature; got POINT \"Datum A\""
        );
    }

    #[test]
    fn range_bearing_between_tracks_at_shared_times() {
        // A sits at the origin; B is 0.1 degree north, starting a minute later and sampled
        // every 2 minutes, so A's 00:01 and 00:03 coincide with B's fixes and 00:02 is
        // interpolated; 00:00 and 00:04 lie outside B's span.
        let a = track_from("a", "ALPHA", &[[0.0, 0.0]; 5], 60);
        let mut b = track_from("b", "BRAVO", &[[0.0, 0.1], [0.2, 0.1]], 120);
        b["properties"]["positions"][0]["time"] = json!("2026-03-01T00:01:00Z");
        b["properties"]["positions"][1]["time"] = json!("2026-03-01T00:03:00Z");
        let subject = json!([a, b]);
        let before = subject.clone();
        let out = range_bearing(&call(RANGE_BEARING, json!({"units": "m"}), &subject)).unwrap();
        assert_eq!(subject, before);
        assert_eq!(out.kind.as_str(), RANGE_SERIES);
        let series = out.data["series"].as_array().unwrap();
        let times: Vec<&str> = series.iter().map(|s| s["time"].as_str().unwrap()).collect();
        assert_eq!(
            times,
            [
                "2026-03-01T00:01:00Z",
                "2026-03-01T00:02:00Z",
                "2026-03-01T00:03:00Z"
            ]
        );
        let north = distance_m([0.0, 0.0], [0.0, 0.1]);
        assert!((series[0]["range_m"].as_f64().unwrap() - north).abs() < 0.1);
        assert_eq!(series[0]["bearing_deg"], 0.0);
        let mid = distance_m([0.0, 0.0], [0.1, 0.1]);
        assert!((series[1]["range_m"].as_f64().unwrap() - mid).abs() < 0.1);
        assert!((series[1]["bearing_deg"].as_f64().unwrap() - 45.0).abs() < 0.1);
        assert_eq!(out.data["min"]["time"], "2026-03-01T00:01:00Z");
        assert!(
            out.summary
                .starts_with("ALPHA to BRAVO: 3 samples, closest 11119.51 m"),
            "{}",
            out.summary
        );
        // Nautical miles by default, keyed by the unit; yards too.
        let nm = range_bearing(&call(RANGE_BEARING, json!({}), &subject)).unwrap();
        let first = &nm.data["series"][0];
        assert!(first.get("range_m").is_none(), "{first}");
        assert!((first["range_nm"].as_f64().unwrap() - north / 1852.0).abs() < 0.001);
        assert!(nm.summary.contains("closest 6.00 nm"), "{}", nm.summary);
        assert!(nm.data["min"]["range_nm"].is_number(), "{}", nm.data);
        let yd = range_bearing(&call(RANGE_BEARING, json!({"units": "yd"}), &subject)).unwrap();
        assert!(
            (yd.data["series"][0]["range_yd"].as_f64().unwrap() - (north / 0.9144).round()).abs()
                < 1.0
        );
        assert!(yd.summary.contains("closest 12160 yd"), "{}", yd.summary);
        let bad = range_bearing(&call(RANGE_BEARING, json!({"units": "ft"}), &subject));
        assert!(bad.unwrap_err().to_string().contains("nm, yd, m or km"));
    }

    #[test]
    fn range_bearing_track_to_point_and_errors() {
        let mut p = point("p", "Datum A");
        p["geometry"]["coordinates"] = json!([1.0, 0.0]);
        let out = range_bearing(&call(
            RANGE_BEARING,
            json!({}),
            &json!([track("t", "T", 3), p]),
        ))
        .unwrap();
        assert_eq!(out.data["count"], 3);
        let b = out.data["series"][0]["bearing_deg"].as_f64().unwrap();
        assert!((b - 90.0).abs() < 0.01, "{b}");

        let err = range_bearing(&call(
            RANGE_BEARING,
            json!({}),
            &json!([track("t", "T", 3)]),
        ))
        .unwrap_err()
        .to_string();
        assert!(
            err.starts_with("Range Bearing needs exactly 2 features"),
            "{err}"
        );
        let mut later = track("l", "LATER", 3);
        for (i, pos) in later["properties"]["positions"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .enumerate()
        {
            pos["time"] = json!(format!("2027-01-01T00:0{i}:00Z"));
        }
        let err = range_bearing(&call(
            RANGE_BEARING,
            json!({}),
            &json!([track("t", "T", 3), later]),
        ))
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("share no time") && err.contains("LATER"),
            "{err}"
        );
    }

    #[test]
    fn area_summary_of_a_box() {
        let subject = json!([
            rectangle("r", "Box", [0.0, 0.0, 1.0, 1.0]),
            point("p", "Datum A")
        ]);
        let out = area_summary(&call(AREA_SUMMARY, json!({}), &subject)).unwrap();
        assert_eq!(out.kind.as_str(), REGION_STATISTICS);
        let d = &out.data;
        assert_eq!(d["bbox"], json!([0.0, 0.0, 1.0, 1.0]));
        assert!(
            (d["height_nm"].as_f64().unwrap() - 60.04).abs() < 0.05,
            "{d}"
        );
        // a 1x1 degree box at the equator is about 60 x 60 nm
        assert!(
            (d["bbox_area_sq_nm"].as_f64().unwrap() - 3600.0).abs() < 60.0,
            "{d}"
        );
        assert_eq!(d["bbox_area_sq_nm"], d["hull_area_sq_nm"]);
        assert_eq!(d["centroid"], json!([0.5, 0.5]));
        assert_eq!(d["by_kind"], json!({"RECTANGLE": 1, "POINT": 1}));
        let out = area_summary(&call(
            AREA_SUMMARY,
            json!({"include_centroid": false}),
            &json!([circle("c", "C", [0.0, 0.0], 1852.0)]),
        ))
        .unwrap();
        assert!(out.data.get("centroid").is_none());
        assert!((out.data["width_nm"].as_f64().unwrap() - 2.0).abs() < 0.01);
    }

    #[test]
    fn speed_filter_thresholds() {
        // track(): 0.01 degree east per minute on the equator, about 36 kn derived
        let mut t = track("t", "T", 4);
        let speeds = [2.0, 6.0, 10.0];
        for (i, s) in speeds.iter().enumerate() {
            t["properties"]["positions"][i]["speed"] = json!(s);
        }
        let subject = json!([t]);
        let run = |params: Value| speed_filter(&call(SPEED_FILTER, params, &subject));
        let out = run(json!({"max_knots": 5})).unwrap();
        assert_eq!(out.kind.as_str(), SPEED_FILTERED);
        let idx = |o: &ToolOutcome| -> Vec<u64> {
            o.data["tracks"][0]["positions"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p["index"].as_u64().unwrap())
                .collect()
        };
        assert_eq!(idx(&out), [0]);
        let out = run(json!({"min_knots": 6})).unwrap();
        assert_eq!(
            idx(&out),
            [1, 2, 3],
            "the last position's speed is derived (about 36 kn)"
        );
        assert_eq!(
            out.data["tracks"][0]["positions"][2]["speed_source"],
            "derived"
        );
        let out = run(json!({"min_knots": 5, "max_knots": 10})).unwrap();
        assert_eq!(idx(&out), [1, 2]);
        assert_eq!(out.summary, "Speed 5-10 kn: T 2 of 4 (2 positions)");
        assert!(
            run(json!({}))
                .unwrap_err()
                .to_string()
                .contains("max_knots and/or min_knots")
        );
        assert!(run(json!({"min_knots": 9, "max_knots": 3})).is_err());

        let out = speed_filter(&call(SPEED_FILTER, json!({"max_knots": 5}), &boat1())).unwrap();
        assert_eq!(out.data["matched"], 402, "boat1 records 2.0 kn throughout");
    }
}
