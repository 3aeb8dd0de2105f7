//! Track manipulation: derived courses and speeds, trimming to a time window.

use serde_json::{Map, Value, json};
use toolgate_core::{CallError, ToolCall, ToolOutcome, ToolSpec};

use super::common::{
    Def, Track, bbox, change, format_time, humanise, modified_data, multi, name_list, opt_str,
    parse_time, props_mut, round_to, select_multi, subject,
};

pub(crate) const GENERATE_COURSES_SPEEDS: &str = "generate-courses-speeds";
pub(crate) const TRIM_TRACK: &str = "trim-track";

const COURSES_SPEEDS: &str = "mutation/track/courses_speeds";
const TRIMMED: &str = "mutation/track/trimmed";
const TRACK: &[&str] = &["TRACK"];

pub(crate) fn generate_courses_speeds_spec() -> ToolSpec {
    Def {
        id: GENERATE_COURSES_SPEEDS,
        description: "Recompute every position's course (great-circle bearing, degrees true) and speed (knots) of one or more TRACK features from consecutive positions and times, overwriting recorded values.",
        output_kind: COURSES_SPEEDS,
        category: "track",
        requirements: multi(TRACK),
        properties: json!({}),
        required: &[],
    }
    .build()
}

pub(crate) fn trim_track_spec() -> ToolSpec {
    Def {
        id: TRIM_TRACK,
        description: "Trim one or more TRACK features to a time window, permanently removing positions before start_time or after end_time (both inclusive ISO-8601 times).",
        output_kind: TRIMMED,
        category: "track",
        requirements: multi(TRACK),
        properties: json!({
            "start_time": {
                "type": "string",
                "description": "Start of the window to keep, ISO-8601 with offset, e.g. 1995-12-12T06:00:00Z.",
                "format": "date-time",
            },
            "end_time": {
                "type": "string",
                "description": "End of the window to keep (inclusive), ISO-8601 with offset, e.g. 1995-12-12T08:30:00Z.",
                "format": "date-time",
            },
        }),
        required: &["start_time", "end_time"],
    }
    .build()
}

fn position_mut(positions: &mut [Value], i: usize) -> Option<&mut Map<String, Value>> {
    positions.get_mut(i).and_then(Value::as_object_mut)
}

pub(crate) fn generate_courses_speeds(call: &ToolCall) -> Result<ToolOutcome, CallError> {
    let title = humanise(GENERATE_COURSES_SPEEDS);
    let features = subject(call)?;
    let selection = select_multi(&title, &features, TRACK)?;
    let mut changed = Vec::with_capacity(selection.matched.len());
    let mut names = Vec::new();
    let mut too_short = Vec::new();
    let mut legs_total = 0usize;
    for f in &selection.matched {
        let track = Track::parse(f);
        track.require_parallel(&title)?;
        let n = track.len();
        if n < 2 {
            too_short.push(track.name.clone());
            continue;
        }
        // Derive first so an unreadable time fails before anything is cloned.
        let mut legs = Vec::with_capacity(n);
        for i in 0..n - 1 {
            let leg = track.leg(i).ok_or_else(|| {
                CallError::invalid(format!(
                    "{title} cannot use TRACK \"{}\": position {} or {} has no readable ISO-8601 time",
                    track.name,
                    i,
                    i + 1
                ))
            })?;
            legs.push((round_to(leg.course, 2), round_to(leg.speed_kn, 2)));
        }
        if let Some(last) = legs.last().copied() {
            legs.push(last); // the last position carries the previous leg forward
        }
        let mut feature = (*f).clone();
        let props = props_mut(&mut feature)?;
        let Some(positions) = props.get_mut("positions").and_then(Value::as_array_mut) else {
            return Err(CallError::failed("positions vanished while cloning"));
        };
        for (i, (course, speed)) in legs.into_iter().enumerate() {
            let Some(p) = position_mut(positions, i) else {
                return Err(CallError::invalid(format!(
                    "{title} cannot use TRACK \"{}\": position {i} is not an object",
                    track.name
                )));
            };
            p.insert("course".into(), json!(course));
            p.insert("speed".into(), json!(speed));
        }
        legs_total += n;
        names.push(track.name.clone());
        changed.push(feature);
    }
    if changed.is_empty() {
        return Err(CallError::invalid(format!(
            "{title} needs a TRACK with at least two positions; {} has fewer",
            name_list(&too_short)
        )));
    }
    let label = format!(
        "Generated courses and speeds for {} ({legs_total} positions)",
        name_list(&names)
    );
    let mut summary = format!("{label}{}", selection.skipped_note());
    if !too_short.is_empty() {
        summary.push_str(&format!(
            "; left {} unchanged (fewer than two positions)",
            name_list(&too_short)
        ));
    }
    let data = modified_data(&changed);
    Ok(change(COURSES_SPEEDS, summary, label, changed, data))
}

fn required_time(call: &ToolCall, name: &str) -> Result<(i64, String), CallError> {
    let title = humanise(TRIM_TRACK);
    let Some(text) = opt_str(call, name)? else {
        return Err(CallError::invalid(format!(
            "{title} needs both start_time and end_time; \"{name}\" is missing"
        )));
    };
    let ms = parse_time(text).ok_or_else(|| {
        CallError::invalid(format!(
            "Parameter \"{name}\" must be an ISO-8601 date-time such as 1995-12-12T06:00:00Z; got \"{text}\""
        ))
    })?;
    Ok((ms, text.to_owned()))
}

/// Keep the elements of a parallel array whose index is in `keep`.
fn retain_indices(items: &[Value], keep: &[bool]) -> Vec<Value> {
    items
        .iter()
        .zip(keep)
        .filter(|(_, k)| **k)
        .map(|(v, _)| v.clone())
        .collect()
}

pub(crate) fn trim_track(call: &ToolCall) -> Result<ToolOutcome, CallError> {
    let title = humanise(TRIM_TRACK);
    let (start, start_text) = required_time(call, "start_time")?;
    let (end, end_text) = required_time(call, "end_time")?;
    if start >= end {
        return Err(CallError::invalid(format!(
            "start_time must be before end_time (got {start_text} - {end_text})"
        )));
    }
    let features = subject(call)?;
    let selection = select_multi(&title, &features, TRACK)?;
    let mut changed = Vec::new();
    let mut lines = Vec::new();
    let mut unchanged = Vec::new();
    for f in &selection.matched {
        let track = Track::parse(f);
        track.require_parallel(&title)?;
        let mut keep = Vec::with_capacity(track.len());
        for (i, t) in track.times().iter().enumerate() {
            let Some(t) = t else {
                return Err(CallError::invalid(format!(
                    "{title} cannot trim TRACK \"{}\": position {i} has no readable ISO-8601 time",
                    track.name
                )));
            };
            keep.push(*t >= start && *t <= end);
        }
        let retained = keep.iter().filter(|k| **k).count();
        let removed = track.len() - retained;
        if retained == 0 {
            let span = track
                .time_span()
                .map(|(a, b)| format!(" (it runs {} - {})", format_time(a), format_time(b)))
                .unwrap_or_default();
            return Err(CallError::invalid(format!(
                "Trimming TRACK \"{}\" to {start_text} - {end_text} would remove all {} of its positions{span}; choose a window that overlaps it",
                track.name,
                track.len()
            )));
        }
        if removed == 0 {
            unchanged.push(track.name.clone());
            continue;
        }
        lines.push(format!(
            "Trimmed {} to {start_text} - {end_text} ({retained} positions retained, {removed} removed)",
            track.name
        ));
        changed.push(trimmed_feature(f, &track, &keep)?);
    }
    let mut label = if lines.is_empty() {
        format!(
            "Trim to {start_text} - {end_text} changed nothing: {} already lie within it",
            name_list(&unchanged)
        )
    } else {
        lines.join("; ")
    };
    if !lines.is_empty() && !unchanged.is_empty() {
        label.push_str(&format!("; {} unchanged", name_list(&unchanged)));
    }
    let summary = format!("{label}{}", selection.skipped_note());
    let data = modified_data(&changed);
    Ok(change(TRIMMED, summary, label, changed, data))
}

fn trimmed_feature(f: &Value, track: &Track<'_>, keep: &[bool]) -> Result<Value, CallError> {
    let mut feature = f.clone();
    // Geometry: a LineString keeps the retained vertices; a MultiLineString keeps them per
    // line (positions are parallel to the flattened lines) and drops lines left empty.
    if let Some(geometry) = feature.get_mut("geometry").and_then(Value::as_object_mut) {
        let kind = geometry.get("type").and_then(Value::as_str).unwrap_or("");
        match kind {
            "LineString" => {
                if let Some(Value::Array(pts)) = geometry.get("coordinates") {
                    let kept = retain_indices(pts, keep);
                    geometry.insert("coordinates".into(), Value::Array(kept));
                }
            }
            "MultiLineString" => {
                if let Some(Value::Array(lines)) = geometry.get("coordinates") {
                    let mut offset = 0;
                    let mut kept_lines = Vec::with_capacity(lines.len());
                    for line in lines {
                        let pts = line.as_array().map_or(&[][..], Vec::as_slice);
                        let slice = keep.get(offset..offset + pts.len()).unwrap_or(&[]);
                        offset += pts.len();
                        let kept = retain_indices(pts, slice);
                        if !kept.is_empty() {
                            kept_lines.push(Value::Array(kept));
                        }
                    }
                    geometry.insert("coordinates".into(), Value::Array(kept_lines));
                }
            }
            _ => {}
        }
    }
    let kept_coords: Vec<[f64; 2]> = track
        .coords
        .iter()
        .zip(keep)
        .filter(|(_, k)| **k)
        .map(|(c, _)| *c)
        .collect();
    if let (Some(Value::Array(_)), Some(b)) = (feature.get("bbox"), bbox(&kept_coords))
        && let Some(obj) = feature.as_object_mut()
    {
        obj.insert("bbox".into(), json!(b));
    }
    let kept_positions = retain_indices(track.positions, keep);
    let first_time = kept_positions.first().and_then(|p| p.get("time")).cloned();
    let last_time = kept_positions.last().and_then(|p| p.get("time")).cloned();
    let props = props_mut(&mut feature)?;
    if let Some(Value::Array(overrides)) = props.get("position_style_overrides")
        && overrides.len() == keep.len()
    {
        let kept = retain_indices(overrides, keep);
        props.insert("position_style_overrides".into(), Value::Array(kept));
    }
    props.insert("positions".into(), Value::Array(kept_positions));
    if let Some(t) = first_time {
        props.insert("start_time".into(), t);
    }
    if let Some(t) = last_time {
        props.insert("end_time".into(), t);
    }
    Ok(feature)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::tests::{boat1, call, edited, point, track, track_from};

    #[test]
    fn due_east_one_minute_apart() {
        // 1 nm (1852 m) east per minute on the equator: 60 kn on 090.
        let step = 1852.0 / 6_371_008.8_f64 * 180.0 / std::f64::consts::PI;
        let coords: Vec<[f64; 2]> = (0..4).map(|i| [f64::from(i) * step, 0.0]).collect();
        let t = track_from("t1", "EAST", &coords, 60);
        let subject = json!([t]);
        let before = subject.clone();
        let out =
            generate_courses_speeds(&call(GENERATE_COURSES_SPEEDS, json!({}), &subject)).unwrap();
        assert_eq!(subject, before, "input unchanged");
        let f = &edited(&out)[0];
        let positions = f["properties"]["positions"].as_array().unwrap();
        assert_eq!(positions.len(), 4);
        for p in positions {
            assert!((p["course"].as_f64().unwrap() - 90.0).abs() < 0.01, "{p}");
            assert!((p["speed"].as_f64().unwrap() - 60.0).abs() < 0.01, "{p}");
        }
        assert_eq!(out.kind.as_str(), COURSES_SPEEDS);
    }

    #[test]
    fn courses_speeds_on_boat1_and_north() {
        let coords = [[0.0, 0.0], [0.0, 0.01], [0.0, 0.01]];
        let out = generate_courses_speeds(&call(
            GENERATE_COURSES_SPEEDS,
            json!({}),
            &json!([track_from("n", "NORTH", &coords, 120)]),
        ))
        .unwrap();
        let positions = edited(&out)[0]["properties"]["positions"].clone();
        assert_eq!(positions[0]["course"], 0.0);
        // 0.01 degree of latitude = 1111.95 m in 120 s = 18.01 kn
        assert!((positions[0]["speed"].as_f64().unwrap() - 18.01).abs() < 0.01);
        assert_eq!(positions[1]["speed"], 0.0, "no movement, no speed");
        assert_eq!(positions[2]["speed"], 0.0, "last carries forward");

        let out =
            generate_courses_speeds(&call(GENERATE_COURSES_SPEEDS, json!({}), &boat1())).unwrap();
        let p = &edited(&out)[0]["properties"]["positions"];
        assert_eq!(p.as_array().unwrap().len(), 402);
        assert!(
            p[0]["speed"].as_f64().unwrap() > 5.0,
            "recorded 2.0 overwritten"
        );
    }

    #[test]
    fn courses_speeds_errors() {
        let err = generate_courses_speeds(&call(
            GENERATE_COURSES_SPEEDS,
            json!({}),
            &json!([track("t", "SOLO", 1)]),
        ))
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("at least two positions") && err.contains("SOLO"),
            "{err}"
        );
        let mut t = track("t", "BADTIME", 3);
        t["properties"]["positions"][1]["time"] = json!("noon");
        let err = generate_courses_speeds(&call(GENERATE_COURSES_SPEEDS, json!({}), &json!([t])))
            .unwrap_err()
            .to_string();
        assert!(err.contains("BADTIME") && err.contains("time"), "{err}");
    }

    fn trim(subject: &Value, start: &str, end: &str) -> Result<ToolOutcome, CallError> {
        trim_track(&call(
            TRIM_TRACK,
            json!({"start_time": start, "end_time": end}),
            subject,
        ))
    }

    #[test]
    fn trim_keeps_the_window_inclusive() {
        // track(): positions at 00:00, 00:01, … 00:04
        let mut t = track("t1", "NELSON", 5);
        t["properties"]["position_style_overrides"] =
            json!([null, {"label": "b"}, {"label": "c"}, null, {"label": "e"}]);
        t["bbox"] = json!([0, 0, 1, 1]);
        let subject = json!([t, point("p", "Datum A")]);
        let before = subject.clone();
        let out = trim(
            &subject,
            "2026-03-01T00:01:00Z",
            "2026-03-01T00:03:00+00:00",
        )
        .unwrap();
        assert_eq!(subject, before, "input unchanged");
        assert_eq!(out.kind.as_str(), TRIMMED);
        let f = &edited(&out)[0];
        let props = &f["properties"];
        let times: Vec<&str> = props["positions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["time"].as_str().unwrap())
            .collect();
        assert_eq!(
            times,
            [
                "2026-03-01T00:01:00Z",
                "2026-03-01T00:02:00Z",
                "2026-03-01T00:03:00Z"
            ]
        );
        assert_eq!(f["geometry"]["coordinates"].as_array().unwrap().len(), 3);
        assert_eq!(
            f["geometry"]["coordinates"][0],
            before[0]["geometry"]["coordinates"][1]
        );
        assert_eq!(props["start_time"], "2026-03-01T00:01:00Z");
        assert_eq!(props["end_time"], "2026-03-01T00:03:00Z");
        assert_eq!(
            props["position_style_overrides"],
            json!([{"label": "b"}, {"label": "c"}, null])
        );
        assert_eq!(f["bbox"][0], f["geometry"]["coordinates"][0][0]);
        assert_eq!(
            out.change_set.unwrap().label,
            "Trimmed NELSON to 2026-03-01T00:01:00Z - 2026-03-01T00:03:00+00:00 (3 positions retained, 2 removed)"
        );
    }

    #[test]
    fn trim_boat1_and_multilinestring() {
        let out = trim(&boat1(), "1995-12-12T06:00:00Z", "1995-12-12T07:00:00Z").unwrap();
        let f = &edited(&out)[0];
        assert_eq!(f["properties"]["positions"].as_array().unwrap().len(), 61);
        assert_eq!(f["properties"]["start_time"], "1995-12-12T06:00:00+00:00");

        let mut t = track("m", "MULTI", 4);
        let c = t["geometry"]["coordinates"].clone();
        t["geometry"] =
            json!({"type": "MultiLineString", "coordinates": [[c[0], c[1]], [c[2], c[3]]]});
        let out = trim(&json!([t]), "2026-03-01T00:02:00Z", "2026-03-01T00:09:00Z").unwrap();
        let g = &edited(&out)[0]["geometry"];
        assert_eq!(
            g["coordinates"],
            json!([[c[2], c[3]]]),
            "empty first line dropped"
        );
    }

    #[test]
    fn trim_errors() {
        let subject = json!([track("t1", "NELSON", 5)]);
        let err = trim(&subject, "2026-03-01T00:03:00Z", "2026-03-01T00:01:00Z")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("start_time must be before end_time"),
            "{err}"
        );
        let err = trim(&subject, "2026-03-01T00:03:00Z", "2026-03-01T00:03:00Z").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("start_time must be before end_time")
        );
        let err = trim(&subject, "2026-03-02T00:00:00Z", "2026-03-03T00:00:00Z")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("\"NELSON\"") && err.contains("remove all 5"),
            "{err}"
        );
        let err = trim(&subject, "last tuesday", "2026-03-03T00:00:00Z")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("start_time") && err.contains("last tuesday"),
            "{err}"
        );
        let err = trim(
            &json!([point("p", "Datum A")]),
            "2026-03-01T00:00:00Z",
            "2026-03-01T01:00:00Z",
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            err,
            "Trim Track needs at least one TRACK feature; got POINT \"Datum A\""
        );
        let err = trim_track(&call(
            TRIM_TRACK,
            json!({"start_time": "2026-03-01T00:00:00Z"}),
            &subject,
        ))
        .unwrap_err()
        .to_string();
        assert!(err.contains("end_time"), "{err}");
    }

    #[test]
    fn trim_with_nothing_to_remove_changes_nothing() {
        let out = trim(
            &json!([track("t1", "NELSON", 3)]),
            "2026-01-01T00:00:00Z",
            "2026-12-31T00:00:00Z",
        )
        .unwrap();
        assert!(out.change_set.unwrap().edits.is_empty());
        assert!(out.summary.contains("changed nothing"), "{}", out.summary);
    }
}
