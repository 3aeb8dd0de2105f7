//! `sensor/*`: sensor-contact analysis (Doppler, range plots, inflection points, arcs, merging)
//! and bearing-ambiguity calibration. Sensor features carry their contacts as `cuts`
//! (`time`, `bearing`, optional `ambiguous_bearing`, `frequency`, `range`, `origin`).

use serde_json::{Map, Value, json};

use toolgate_tool_catalogue::common::multi;
use toolgate_tool_catalogue::model::{
    self, cuts, file_safe, fix_at, fixes, format_time, haversine_m, id_of, parse_time, prop,
    prop_str, py_num, py_value, round_to,
};
use toolgate_tool_catalogue::{Body, CalcInput, Entry, Item, ToolError};

pub(crate) const TOOLS: &[Entry] = &[
    // sensor/analysis
    Entry {
        id: "doppler-curve",
        spec_category: "sensor/analysis",
        spec_version: "1.0",
        description: "Predicted Doppler frequency over time for a source frequency, from an ownship track and a target track (first two TRACK features): per time step the radial velocity along the line of sight and the observed frequency, with min/max/shift statistics and a CPA estimate at the Doppler zero-crossing. Use it to compare a track solution with measured frequencies.",
        output_kind: "artifact/analysis/doppler_curve",
        requirements: two_tracks,
        params: doppler_params,
        required: &["source_frequency_hz"],
        run: doppler_curve,
    },
    Entry {
        id: "generate-new-sensor-contact",
        spec_category: "sensor/analysis",
        spec_version: "1.0",
        description: "Add a manual contact (time, bearing, optional range, frequency, label) to the first SENSOR feature, in time order; its origin is interpolated from the cuts either side. Use it to record a contact the sensor did not log.",
        output_kind: "addition/sensor/contact",
        requirements: sensors,
        params: new_contact_params,
        required: &["contact"],
        run: generate_new_sensor_contact,
    },
    Entry {
        id: "generate-sensor-range-plot",
        spec_category: "sensor/analysis",
        spec_version: "1.0",
        description: "Range (metres) from ownship to each target track at every cut time of each SENSOR feature, with min/max/mean statistics: one range-vs-time dataset per sensor-target pair. The ownship is the track named by the sensor's host_track_id (else the first track).",
        output_kind: "artifact/analysis/sensor_range_plot",
        requirements: sensors_and_tracks,
        params: no_params,
        required: &[],
        run: generate_sensor_range_plot,
    },
    Entry {
        id: "inflection-point-detector",
        spec_category: "sensor/analysis",
        spec_version: "1.0",
        description: "Zero-crossings of FREQUENCY_RESIDUALS features (measured minus predicted frequency), each with a confidence score; positive-to-negative crossings are CPA candidates. Crossings below min_confidence are reported separately as likely noise.",
        output_kind: "artifact/analysis/inflection_points",
        requirements: residuals,
        params: inflection_params,
        required: &[],
        run: inflection_point_detector,
    },
    Entry {
        id: "insert-sensor-arc",
        spec_category: "sensor/analysis",
        spec_version: "1.0",
        description: "Insert an arc contact (time, bearing, arc width, optional range and frequency) into the first SENSOR feature's contacts, in time order. Use it to mark a bearing sector a sensor held a contact in.",
        output_kind: "addition/sensor/arc",
        requirements: sensors,
        params: arc_params,
        required: &["arc_params"],
        run: insert_sensor_arc,
    },
    Entry {
        id: "merge-contacts",
        spec_category: "sensor/analysis",
        spec_version: "1.0",
        description: "Merge the contacts of two or more SENSOR features into one new sensor (contacts sorted by time, each tagged with its source_sensor). Use it to combine several arrays' detections of one target.",
        output_kind: "addition/sensor/merged",
        requirements: two_sensors,
        params: merge_params,
        required: &[],
        run: merge_contacts,
    },
    // sensor/calibration
    Entry {
        id: "ambiguity-resolver",
        spec_category: "sensor/calibration",
        spec_version: "1.0",
        description: "Resolve port/starboard bearing ambiguity of SENSOR cuts leg by leg: within each ownship leg (leg_id, start_time, end_time) the bearing sequence (primary or ambiguous) with the steadier bearing rate is taken as the true one. Use it when no target track is known yet.",
        output_kind: "mutation/sensor/resolved",
        requirements: sensors,
        params: legs_params,
        required: &["ownship_legs"],
        run: ambiguity_resolver,
    },
    Entry {
        id: "delete-ambiguous-bearings",
        spec_category: "sensor/calibration",
        spec_version: "1.0",
        description: "Remove every contact flagged ambiguous from each SENSOR feature's contacts (contacts without the flag are kept); the removed contact ids are listed. Use it to clean a sensor before analysis.",
        output_kind: "mutation/sensor/filtered",
        requirements: sensors,
        params: no_params,
        required: &[],
        run: delete_ambiguous_bearings,
    },
    Entry {
        id: "resolve-ambiguity",
        spec_category: "sensor/calibration",
        spec_version: "1.0",
        description: "Resolve port/starboard bearing ambiguity of SENSOR cuts against a target TRACK: for each ambiguous cut, the bearing (primary or ambiguous) nearer the true bearing from the cut's origin to the target at that time is kept as resolved_bearing. The target is the first track that is not the sensor's host.",
        output_kind: "mutation/sensor/resolved",
        requirements: sensors_and_a_track,
        params: no_params,
        required: &[],
        run: resolve_ambiguity,
    },
];

fn two_tracks() -> Value {
    json!([{"kind": "TRACK", "min": 2}])
}

fn sensors() -> Value {
    multi(&["SENSOR"])
}

fn sensors_and_tracks() -> Value {
    json!([{"kind": "SENSOR", "min": 1}, {"kind": "TRACK", "min": 2}])
}

fn two_sensors() -> Value {
    json!([{"kind": "SENSOR", "min": 2}])
}

fn sensors_and_a_track() -> Value {
    json!([{"kind": "SENSOR", "min": 1}, {"kind": "TRACK", "min": 1}])
}

fn residuals() -> Value {
    multi(&["FREQUENCY_RESIDUALS"])
}

fn no_params() -> Value {
    json!({})
}

/// An artifact item `artifact://{tool}/{href}` carrying a JSON document, with `debrief:href`.
pub(super) fn json_artifact(
    tool: &str,
    href: &str,
    data: Value,
    result_type: &str,
    sources: Vec<String>,
    label: String,
) -> Item {
    Item::resource(
        format!("artifact://{tool}/{href}"),
        "application/json",
        Body::Json(data),
        result_type,
        sources,
        label,
    )
    .with_annotation("debrief:href", json!(href))
}

/// `1 point` / `3 points`.
pub(super) fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// A whole number of minutes as an integer, else a float (Python's `7` vs `7.5`).
pub(super) fn minutes_value(ms: i64) -> Value {
    if ms % 60_000 == 0 {
        json!(ms / 60_000)
    } else {
        json!(ms as f64 / 60_000.0)
    }
}

fn required_features(input: &CalcInput) -> Result<(), ToolError> {
    if input.features.is_empty() {
        Err(ToolError::invalid("Input features required"))
    } else {
        Ok(())
    }
}

fn time_param(text: &str, what: &str) -> Result<i64, ToolError> {
    parse_time(text).ok_or_else(|| {
        ToolError::invalid(format!(
            "{what} \"{text}\" is not an ISO-8601 time; use e.g. 2024-01-15T10:30:00Z"
        ))
    })
}

pub(super) fn cut_time(cut: &Value) -> Option<i64> {
    cut.get("time").and_then(Value::as_str).and_then(parse_time)
}

fn sensor_name(f: &Value) -> String {
    prop_str(f, "sensor_name")
        .map(str::to_owned)
        .or_else(|| id_of(f))
        .unwrap_or_else(|| "Unknown".to_owned())
}

fn platform_name(f: &Value) -> String {
    prop_str(f, "platform_name")
        .map(str::to_owned)
        .unwrap_or_else(|| model::track_name(f))
}

// ---------------------------------------------------------------- doppler-curve

fn doppler_params() -> Value {
    json!({
        "source_frequency_hz": {"type": "number", "exclusiveMinimum": 0, "description": "Frequency the target radiates, in Hz (must be positive)."},
        "speed_of_sound_kts": {"type": "number", "default": 3032, "description": "Speed of sound in water, knots (default 3032)."},
    })
}

fn doppler_curve(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    required_features(input)?;
    let f0 = match input.f64_param("source_frequency_hz") {
        Some(f) if f > 0.0 && f.is_finite() => f,
        _ => {
            return Err(ToolError::invalid(
                "source_frequency_hz must be a positive number",
            ));
        }
    };
    let c = input
        .f64_param("speed_of_sound_kts")
        .filter(|c| *c > 0.0 && c.is_finite())
        .unwrap_or(3032.0);
    let c_value = input
        .param("speed_of_sound_kts")
        .filter(|v| v.as_f64() == Some(c))
        .cloned()
        .unwrap_or_else(|| json!(3032));
    let tracks = model::of_kind(input.features, "TRACK");
    if tracks.len() < 2 {
        return Err(ToolError::invalid(
            "Two track features required (ownship and target)",
        ));
    }
    let (own, tgt) = (tracks[0], tracks[1]);
    let (of, tf) = (fixes(own), fixes(tgt));
    let steps = merge_time_steps(&of, &tf);
    if steps.is_empty() {
        return Err(ToolError::not_found(
            "No overlapping time steps between tracks",
        ));
    }
    let mut series = Vec::new();
    let mut rows: Vec<(i64, f64, f64)> = Vec::new(); // time, frequency, range
    for t in steps {
        let (Some(o), Some(g)) = (fix_at(&of, t), fix_at(&tf, t)) else {
            continue;
        };
        let (Some(oc), Some(os), Some(gc), Some(gs)) = (o.course, o.speed, g.course, g.speed)
        else {
            continue;
        };
        let bearing = model::bearing_deg(o.coord, g.coord);
        let range_m = haversine_m(o.coord, g.coord);
        // Receiver speed towards the target, source speed towards the receiver.
        let v_receiver = os * (oc - bearing).to_radians().cos();
        let v_source = gs
            * (gc - (bearing + 180.0).rem_euclid(360.0))
                .to_radians()
                .cos();
        // Range rate: positive = opening.
        let radial = -(v_receiver + v_source);
        let f = f0 * (c + v_receiver) / (c - v_source);
        let f = round_to(f, 3);
        let range_m = round_to(range_m, 1);
        series.push(json!({
            "time": format_time(t),
            "predicted_frequency_hz": f,
            "radial_velocity_kts": round_to(radial, 2),
            "range_m": range_m,
            "bearing_deg": round_to(bearing, 1),
        }));
        rows.push((t, f, range_m));
    }
    if rows.is_empty() {
        return Err(ToolError::not_found(
            "No Doppler data could be computed; each track needs course and speed at its positions",
        ));
    }
    let min = rows.iter().map(|r| r.1).fold(f64::INFINITY, f64::min);
    let max = rows.iter().map(|r| r.1).fold(f64::NEG_INFINITY, f64::max);
    let mut stats = json!({
        "min_frequency_hz": min,
        "max_frequency_hz": max,
        "frequency_shift_hz": round_to(max - f0, 3),
        "data_points": rows.len(),
    });
    if let Some(cpa) = doppler_cpa(&rows, f0) {
        stats["cpa_estimate"] = cpa;
    }
    let (on, tn) = (platform_name(own), platform_name(tgt));
    let f0_text = input
        .param("source_frequency_hz")
        .map(py_value)
        .unwrap_or_else(|| py_num(f0));
    let data = json!({
        "title": format!("Doppler Curve: {on} vs {tn}"),
        "source_frequency_hz": input.param("source_frequency_hz").cloned().unwrap_or(json!(f0)),
        "speed_of_sound_kts": c_value,
        "ownship": on,
        "target": tn,
        "time_series": series,
        "statistics": stats,
    });
    let href = format!("{}-{}-doppler.json", file_safe(&on), file_safe(&tn));
    let label = format!(
        "Doppler curve for {on} vs {tn}: {}, f_source={f0_text}Hz, {}",
        plural(rows.len(), "point", "points"),
        describe_shift(min - f0, max - f0)
    );
    Ok(vec![json_artifact(
        "doppler-curve",
        &href,
        data,
        "artifact/analysis/doppler_curve",
        vec![
            id_of(own).unwrap_or_default(),
            id_of(tgt).unwrap_or_default(),
        ],
        label,
    )])
}

/// Every fix time of either track inside the span both tracks cover, sorted, unique.
fn merge_time_steps(a: &[model::Fix], b: &[model::Fix]) -> Vec<i64> {
    let span = |f: &[model::Fix]| {
        let lo = f.iter().map(|x| x.time).min()?;
        let hi = f.iter().map(|x| x.time).max()?;
        Some((lo, hi))
    };
    let (Some((a0, a1)), Some((b0, b1))) = (span(a), span(b)) else {
        return Vec::new();
    };
    let (start, end) = (a0.max(b0), a1.min(b1));
    if start > end {
        return Vec::new();
    }
    let mut times: Vec<i64> = a
        .iter()
        .chain(b)
        .map(|f| f.time)
        .filter(|t| (start..=end).contains(t))
        .collect();
    times.sort_unstable();
    times.dedup();
    times
}

fn doppler_cpa(rows: &[(i64, f64, f64)], f0: f64) -> Option<Value> {
    rows.windows(2).find_map(|w| {
        let (sa, sb) = (w[0].1 - f0, w[1].1 - f0);
        if (sa > 0.0 && sb < 0.0) || (sa < 0.0 && sb > 0.0) {
            let frac = sa.abs() / (sa.abs() + sb.abs());
            let t = w[0].0 + ((w[1].0 - w[0].0) as f64 * frac / 1000.0).round() as i64 * 1000;
            let r = w[0].2 + frac * (w[1].2 - w[0].2);
            Some(json!({
                "time": format_time(t),
                "range_m": round_to(r, 1),
                "note": "Estimated from Doppler zero-crossing",
            }))
        } else {
            None
        }
    })
}

fn signed(x: f64) -> String {
    let x = if x.abs() < 0.0005 { 0.0 } else { x };
    format!("{x:+.3}")
}

fn describe_shift(min_shift: f64, max_shift: f64) -> String {
    if min_shift.abs() < 0.001 && max_shift.abs() < 0.001 {
        "zero Doppler shift (parallel tracks)".to_owned()
    } else if signed(min_shift) == signed(max_shift) {
        format!("shift {}Hz", signed(min_shift))
    } else {
        format!("shift {} to {}Hz", signed(min_shift), signed(max_shift))
    }
}

// ---------------------------------------------------------------- generate-new-sensor-contact

fn new_contact_params() -> Value {
    json!({
        "contact": {
            "type": "object",
            "description": "The contact to add: time (ISO-8601, required), bearing (degrees true, 0 to <360, required), and optionally range, frequency (Hz), label.",
            "properties": {
                "time": {"type": "string", "format": "date-time"},
                "bearing": {"type": "number"},
                "range": {"type": "number"},
                "frequency": {"type": "number"},
                "label": {"type": "string"},
            },
        },
    })
}

fn generate_new_sensor_contact(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    required_features(input)?;
    let sensor = input
        .features
        .iter()
        .find(|f| model::is_kind(f, "SENSOR"))
        .ok_or_else(|| ToolError::invalid("No sensor feature found in input"))?;
    let sid = id_of(sensor).unwrap_or_default();
    let err = |m: &str| ToolError::invalid(m).affecting(vec![sid.clone()]);
    let contact = input
        .param("contact")
        .and_then(Value::as_object)
        .ok_or_else(|| err("Contact parameters required"))?;
    let time_text = contact
        .get("time")
        .and_then(Value::as_str)
        .ok_or_else(|| err("Contact time is required"))?;
    let time = time_param(time_text, "Contact time").map_err(|e| e.affecting(vec![sid.clone()]))?;
    let bearing = contact
        .get("bearing")
        .and_then(Value::as_f64)
        .ok_or_else(|| err("Contact bearing is required"))?;
    if !(0.0..360.0).contains(&bearing) {
        return Err(err("Bearing must be between 0 and 360 degrees"));
    }
    let existing = cuts(sensor);
    let mut origin = None;
    if existing.len() >= 2 {
        let before = existing
            .iter()
            .rfind(|c| cut_time(c).is_some_and(|t| t <= time));
        let after = existing
            .iter()
            .find(|c| cut_time(c).is_some_and(|t| t >= time));
        if let (Some(b), Some(a)) = (before, after) {
            let coord = |c: &Value| -> Option<[f64; 2]> {
                let o = c.get("origin")?.as_array()?;
                Some([o.first()?.as_f64()?, o.get(1)?.as_f64()?])
            };
            if let (Some(ob), Some(oa), Some(tb), Some(ta)) =
                (coord(b), coord(a), cut_time(b), cut_time(a))
            {
                let frac = if ta == tb {
                    0.5
                } else {
                    (time - tb) as f64 / (ta - tb) as f64
                };
                origin = Some(json!([
                    ob[0] + (oa[0] - ob[0]) * frac,
                    ob[1] + (oa[1] - ob[1]) * frac
                ]));
            }
        }
    }
    let mut cut = Map::new();
    cut.insert("time".into(), json!(time_text));
    cut.insert("bearing".into(), contact["bearing"].clone());
    for key in ["range", "frequency", "label"] {
        if let Some(v) = contact.get(key).filter(|v| !v.is_null()) {
            cut.insert(key.into(), v.clone());
        }
    }
    if let Some(o) = origin {
        cut.insert("origin".into(), o);
    }
    let mut all: Vec<Value> = existing.to_vec();
    all.push(Value::Object(cut));
    // Stable: a contact at the time of an existing cut goes after it.
    all.sort_by_key(|c| cut_time(c).unwrap_or(i64::MIN));
    let mut out = sensor.clone();
    let key = model::key_for(sensor, "cuts");
    if let Some(p) = out.get_mut("properties").and_then(Value::as_object_mut) {
        p.remove("debrief:cuts");
        p.remove("cuts");
        p.insert(key, Value::Array(all));
    }
    let mut label = "Added manual contact".to_owned();
    if let Some(l) = contact.get("label").and_then(Value::as_str) {
        label.push_str(&format!(" '{l}'"));
    }
    label.push_str(&format!(
        " to sensor {} at {time_text}",
        prop_str(sensor, "sensor_name").unwrap_or("Unknown")
    ));
    Ok(vec![Item::feature(
        out,
        "addition/sensor/contact",
        vec![sid],
        label,
    )])
}

// ---------------------------------------------------------------- generate-sensor-range-plot

fn generate_sensor_range_plot(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    required_features(input)?;
    let sensors = model::of_kind(input.features, "SENSOR");
    let tracks = model::of_kind(input.features, "TRACK");
    if sensors.is_empty() {
        return Err(ToolError::invalid("No sensor features found in input"));
    }
    if tracks.len() < 2 {
        return Err(ToolError::invalid(
            "Both ownship and target tracks required",
        ));
    }
    struct Plot {
        sensor: String,
        target: String,
        sources: Vec<String>,
        data: Value,
        count: usize,
        min: f64,
        max: f64,
    }
    let mut plots = Vec::new();
    for sensor in &sensors {
        let host = prop_str(sensor, "host_track_id");
        let own = tracks
            .iter()
            .find(|t| host.is_some() && id_of(t).as_deref() == host)
            .copied()
            .unwrap_or(tracks[0]);
        let own_id = id_of(own);
        let of = fixes(own);
        for target in tracks.iter().filter(|t| id_of(t) != own_id) {
            let tf = fixes(target);
            let mut series = Vec::new();
            let mut ranges = Vec::new();
            for cut in cuts(sensor) {
                let Some(t) = cut_time(cut) else { continue };
                let (Some(o), Some(g)) = (fix_at(&of, t), fix_at(&tf, t)) else {
                    continue;
                };
                let r = round_to(haversine_m(o.coord, g.coord), 1);
                ranges.push(r);
                series.push(json!({
                    "time": cut["time"],
                    "range_m": r,
                    "bearing": cut.get("bearing").cloned().unwrap_or(Value::Null),
                    "ownship_position": o.coord,
                    "target_position": g.coord,
                }));
            }
            if ranges.is_empty() {
                continue;
            }
            let min = ranges.iter().copied().fold(f64::INFINITY, f64::min);
            let max = ranges.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let mean = ranges.iter().sum::<f64>() / ranges.len() as f64;
            let (sn, tn) = (sensor_name(sensor), platform_name(target));
            let data = json!({
                "title": format!("Sensor Range Plot: {sn} vs {tn}"),
                "sensor_name": sn,
                "ownship": platform_name(own),
                "target": tn,
                "time_series": series,
                "statistics": {
                    "min_range_m": min,
                    "max_range_m": max,
                    "mean_range_m": round_to(mean, 1),
                    "data_points": ranges.len(),
                },
            });
            plots.push(Plot {
                sensor: sn,
                target: tn,
                sources: vec![
                    id_of(sensor).unwrap_or_default(),
                    own_id.clone().unwrap_or_default(),
                    id_of(target).unwrap_or_default(),
                ],
                data,
                count: ranges.len(),
                min,
                max,
            });
        }
    }
    if plots.is_empty() {
        return Err(ToolError::not_found(
            "No range data could be computed; check time overlap between sensor and tracks",
        ));
    }
    // One plot: named by its sensor alone (the goldens' form); several: by sensor and target.
    let single = plots.len() == 1;
    Ok(plots
        .into_iter()
        .map(|mut p| {
            let (href, title, subject) = if single {
                (
                    format!("{}-range-plot.json", file_safe(&p.sensor)),
                    format!("Sensor Range Plot: {}", p.sensor),
                    p.sensor.clone(),
                )
            } else {
                (
                    format!(
                        "{}-{}-range-plot.json",
                        file_safe(&p.sensor),
                        file_safe(&p.target)
                    ),
                    format!("Sensor Range Plot: {} vs {}", p.sensor, p.target),
                    format!("{} vs {}", p.sensor, p.target),
                )
            };
            p.data["title"] = json!(title);
            let range = if p.min.round() == p.max.round() {
                format!("{}", p.min.round())
            } else {
                format!("{}-{}", p.min.round(), p.max.round())
            };
            let label = format!(
                "Generated range plot for {subject}: {}, range {range}m",
                plural(p.count, "data point", "data points")
            );
            json_artifact(
                "generate-sensor-range-plot",
                &href,
                p.data,
                "artifact/analysis/sensor_range_plot",
                p.sources,
                label,
            )
        })
        .collect())
}

// ---------------------------------------------------------------- inflection-point-detector

fn inflection_params() -> Value {
    json!({
        "min_confidence": {"type": "number", "minimum": 0.0, "maximum": 1.0, "default": 0.5, "description": "Confidence (0-1) a zero-crossing needs to be reported; weaker crossings are listed as filtered noise (default 0.5)."},
    })
}

fn sign(x: f64) -> i8 {
    if x > 0.0 {
        1
    } else if x < 0.0 {
        -1
    } else {
        0
    }
}

fn crossing_confidence(r: &[f64], i: usize) -> f64 {
    let (before, after) = (r[i], r[i + 1]);
    let magnitude = (before.abs() + after.abs()) / 2.0;
    let magnitude_score = (magnitude / 0.05).min(1.0);
    let mut trend = if i >= 2 {
        if sign(r[i - 1]) == sign(before) && sign(r[i - 2]) == sign(before) {
            1.0
        } else {
            0.5
        }
    } else {
        0.7
    };
    if i + 3 < r.len() {
        if !(sign(r[i + 2]) == sign(after) && sign(r[i + 3]) == sign(after)) {
            trend *= 0.5;
        }
    } else {
        trend *= 0.8;
    }
    (0.6 * magnitude_score + 0.4 * trend).clamp(0.0, 1.0)
}

fn inflection_point_detector(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    required_features(input)?;
    let min_conf = input.f64_param("min_confidence").unwrap_or(0.5);
    if !(0.0..=1.0).contains(&min_conf) {
        return Err(ToolError::invalid(
            "min_confidence must be between 0.0 and 1.0",
        ));
    }
    let features = model::of_kind(input.features, "FREQUENCY_RESIDUALS");
    if features.is_empty() {
        return Err(ToolError::invalid(
            "No frequency residual features found in input",
        ));
    }
    let mut items = Vec::new();
    for f in features {
        let fid = id_of(f).unwrap_or_default();
        let mut points: Vec<(i64, f64)> = prop(f, "residuals")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|r| {
                        let t = r.get("time").and_then(Value::as_str).and_then(parse_time)?;
                        let v = r.get("residual_hz").and_then(Value::as_f64)?;
                        v.is_finite().then_some((t, v))
                    })
                    .collect()
            })
            .unwrap_or_default();
        if points.len() < 3 {
            return Err(ToolError::invalid(
                "At least 3 residual data points required for inflection analysis",
            )
            .affecting(vec![fid]));
        }
        points.sort_by_key(|p| p.0);
        let r: Vec<f64> = points.iter().map(|p| p.1).collect();
        let mut accepted = Vec::new();
        let mut filtered = Vec::new();
        let mut cpa_counter = 0;
        for i in 0..points.len() - 1 {
            let ((ta, ra), (tb, rb)) = (points[i], points[i + 1]);
            let p2n = ra > 0.0 && rb < 0.0;
            if !(p2n || (ra < 0.0 && rb > 0.0)) {
                continue;
            }
            let frac = ra.abs() / (ra.abs() + rb.abs());
            let t = ta + (((tb - ta) as f64 * frac) / 1000.0).round() as i64 * 1000;
            let dt_min = (tb - ta) as f64 / 60_000.0;
            let rate = if dt_min > 0.0 {
                (rb - ra) / dt_min
            } else {
                0.0
            };
            let confidence = round_to(crossing_confidence(&r, i), 2);
            let mut c = json!({
                "time": format_time(t),
                "interpolated_residual_hz": 0.0,
                "type": "zero_crossing",
                "direction": if p2n { "positive_to_negative" } else { "negative_to_positive" },
                "confidence": confidence,
                "estimated_cpa": p2n,
                "surrounding_rate_hz_per_min": round_to(rate, 3),
                "before_index": i,
                "after_index": i + 1,
            });
            if confidence >= min_conf {
                if p2n {
                    cpa_counter += 1;
                    c["label"] = json!(format!("CPA-{cpa_counter}"));
                }
                accepted.push(c);
            } else {
                c["note"] = json!(format!(
                    "Filtered: confidence {} below threshold {} (noise-induced oscillation)",
                    py_num(confidence),
                    py_num(min_conf)
                ));
                filtered.push(c);
            }
        }
        let cpa_count = accepted
            .iter()
            .filter(|c| c["estimated_cpa"] == json!(true))
            .count();
        let (start, end) = (points[0].0, points[points.len() - 1].0);
        let mut summary = json!({
            "total_inflection_points": accepted.len(),
            "cpa_candidates": cpa_count,
            "analysis_window": {
                "start": format_time(start),
                "end": format_time(end),
                "duration_minutes": minutes_value(end - start),
            },
            "data_points": points.len(),
        });
        if !filtered.is_empty() {
            summary["filtered_count"] = json!(filtered.len());
            summary["note"] = json!(format!(
                "{} low-confidence zero-crossings filtered (likely noise)",
                filtered.len()
            ));
        }
        if accepted.is_empty() && filtered.is_empty() {
            let increasing = r.windows(2).all(|w| w[1] >= w[0]);
            let decreasing = r.windows(2).all(|w| w[1] <= w[0]);
            summary["note"] = json!(if r.iter().all(|v| *v == 0.0) {
                "Constant zero residuals; no zero-crossings detected".to_owned()
            } else if increasing || decreasing {
                let dir = if r[r.len() - 1] > r[0] {
                    "increasing"
                } else {
                    "decreasing"
                };
                format!("Monotonically {dir} residuals; no zero-crossings detected")
            } else {
                "No zero-crossings detected in residual data".to_owned()
            });
        }
        if accepted.len() > 2 {
            summary["note"] =
                json!("Multiple CPA detections suggest target manoeuvring or multiple passes");
        }
        let name = sensor_name(f);
        let mut data = json!({
            "title": format!("Inflection Points: {name}"),
            "sensor_name": name,
            "source_frequency_hz": prop(f, "source_frequency_hz").cloned().unwrap_or(Value::Null),
            "min_confidence": input.param("min_confidence").cloned().unwrap_or(json!(0.5)),
            "inflection_points": accepted,
            "summary": summary,
        });
        if !filtered.is_empty() {
            data["filtered_inflection_points"] = json!(filtered);
        }
        let label = if accepted.is_empty() {
            format!(
                "Detected 0 inflection point(s) in {name} frequency residuals; monotonic data, no CPA candidates"
            )
        } else {
            let mut l = format!(
                "Detected {} inflection point(s) in {name} frequency residuals; {cpa_count} CPA candidate(s)",
                accepted.len()
            );
            if !filtered.is_empty() {
                l.push_str(&format!(
                    " ({} noise-induced crossings filtered)",
                    filtered.len()
                ));
            }
            l
        };
        items.push(json_artifact(
            "inflection-point-detector",
            &format!("{}-inflections.json", file_safe(&name)),
            data,
            "artifact/analysis/inflection_points",
            vec![fid],
            label,
        ));
    }
    Ok(items)
}

/// `{prefix}-001`, numbered after the ids already using the prefix.
pub(super) fn next_id<'a>(prefix: &str, existing: impl IntoIterator<Item = &'a Value>) -> String {
    let taken = existing
        .into_iter()
        .filter_map(|c| c.get("id").and_then(Value::as_str))
        .filter(|id| id.starts_with(&format!("{prefix}-")))
        .count();
    format!("{prefix}-{:03}", taken + 1)
}

// ---------------------------------------------------------------- insert-sensor-arc

fn arc_params() -> Value {
    json!({
        "arc_params": {
            "type": "object",
            "description": "The arc: time (ISO-8601), bearing (degrees true, 0-360), arc_width (degrees, > 0), optional range (m) and frequency (Hz).",
            "properties": {
                "time": {"type": "string", "format": "date-time"},
                "bearing": {"type": "number"},
                "arc_width": {"type": "number"},
                "range": {"type": ["number", "null"]},
                "frequency": {"type": ["number", "null"]},
            },
        },
    })
}

fn insert_sensor_arc(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    required_features(input)?;
    let arc = input
        .param("arc_params")
        .and_then(Value::as_object)
        .ok_or_else(|| ToolError::invalid("arc_params is required"))?;
    let time_text = arc
        .get("time")
        .and_then(Value::as_str)
        .ok_or_else(|| ToolError::invalid("arc_params.time is required"))?;
    let time = time_param(time_text, "arc_params.time")?;
    arc.get("bearing")
        .and_then(Value::as_f64)
        .filter(|b| (0.0..=360.0).contains(b))
        .ok_or_else(|| {
            ToolError::invalid("arc_params.bearing must be between 0 and 360 degrees")
        })?;
    arc.get("arc_width")
        .and_then(Value::as_f64)
        .filter(|w| *w > 0.0 && w.is_finite())
        .ok_or_else(|| ToolError::invalid("arc_params.arc_width must be a positive number"))?;
    let sensor = input
        .features
        .iter()
        .find(|f| model::is_kind(f, "SENSOR"))
        .ok_or_else(|| ToolError::invalid("No sensor feature found in input"))?;
    let mut contacts: Vec<Value> = prop(sensor, "contacts")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let get = |k: &str| arc.get(k).cloned().unwrap_or(Value::Null);
    let contact = json!({
        "id": next_id("arc-generated", &contacts),
        "time": time_text,
        "bearing": get("bearing"),
        "arc_width": get("arc_width"),
        "range": get("range"),
        "frequency": get("frequency"),
        "contact_type": "ARC",
    });
    let at = contacts
        .iter()
        .take_while(|c| cut_time(c).is_some_and(|t| t <= time))
        .count();
    contacts.insert(at, contact);
    let mut out = sensor.clone();
    let key = model::key_for(sensor, "contacts");
    if let Some(p) = out.get_mut("properties").and_then(Value::as_object_mut) {
        p.insert(key, Value::Array(contacts));
    }
    let mut label = format!(
        "Inserted sensor arc at bearing {} deg",
        py_value(&arc["bearing"])
    );
    if let Some(r) = arc.get("range").filter(|r| !r.is_null()) {
        label.push_str(&format!(", range {}m", py_value(r)));
    }
    label.push_str(&format!(" on {}", sensor_name(sensor)));
    Ok(vec![Item::feature(
        out,
        "addition/sensor/arc",
        vec![id_of(sensor).unwrap_or_default()],
        label,
    )])
}

// ---------------------------------------------------------------- merge-contacts

fn merge_params() -> Value {
    json!({
        "target_sensor_name": {"type": "string", "default": "Merged Contacts", "description": "Name of the merged sensor (default \"Merged Contacts\")."},
    })
}

fn merge_contacts(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    required_features(input)?;
    let name = input
        .str_param("target_sensor_name")
        .filter(|n| !n.is_empty())
        .unwrap_or("Merged Contacts");
    let sensors = model::of_kind(input.features, "SENSOR");
    if sensors.len() < 2 {
        return Err(ToolError::invalid(
            "At least 2 sensor features required for merging",
        ));
    }
    let mut all = Vec::new();
    for s in &sensors {
        let source = sensor_name(s);
        for c in prop(s, "contacts")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
        {
            let mut c = c.clone();
            if let Some(o) = c.as_object_mut() {
                o.insert("source_sensor".into(), json!(source));
            }
            all.push(c);
        }
    }
    // Stable: equal times keep their sensor and in-sensor order.
    all.sort_by_key(|c| cut_time(c).unwrap_or(i64::MIN));
    let first = sensors[0];
    let taken: Vec<Value> = input
        .features
        .iter()
        .map(|f| json!({"id": id_of(f)}))
        .collect();
    let merged = json!({
        "type": "Feature",
        "id": next_id("merged-sensor", &taken),
        "geometry": {"type": "GeometryCollection", "geometries": []},
        "properties": {
            "kind": "SENSOR",
            "sensor_name": name,
            "platform_id": prop(first, "platform_id").cloned().unwrap_or(Value::Null),
            "sensor_type": prop(first, "sensor_type").cloned().unwrap_or(Value::Null),
            "contacts": all,
        },
    });
    let label = format!(
        "Merged {} contacts from {} sensors into {name}",
        merged["properties"]["contacts"]
            .as_array()
            .map_or(0, Vec::len),
        sensors.len()
    );
    Ok(vec![Item::feature(
        merged,
        "addition/sensor/merged",
        model::ids_of(sensors.iter().copied()),
        label,
    )])
}

// ---------------------------------------------------------------- sensor/calibration

/// A copy of `sensor` whose `key` list (cuts or contacts) is `list`, in the sensor's naming.
fn with_list(sensor: &Value, key: &str, list: Vec<Value>) -> Value {
    let mut out = sensor.clone();
    let key = if prop(sensor, key).is_some()
        && model::properties(sensor).is_some_and(|p| p.contains_key(&format!("debrief:{key}")))
    {
        format!("debrief:{key}")
    } else {
        model::key_for(sensor, key)
    };
    if let Some(p) = out.get_mut("properties").and_then(Value::as_object_mut) {
        p.insert(key, Value::Array(list));
    }
    out
}

fn is_ambiguous(cut: &Value) -> bool {
    cut.get("ambiguous").and_then(Value::as_bool) == Some(true)
}

fn legs_params() -> Value {
    json!({
        "ownship_legs": {
            "type": "array",
            "minItems": 1,
            "description": "Ownship legs (steady course and speed): each {leg_id, start_time, end_time, course, speed}.",
            "items": {
                "type": "object",
                "properties": {
                    "leg_id": {"type": "string"},
                    "start_time": {"type": "string", "format": "date-time"},
                    "end_time": {"type": "string", "format": "date-time"},
                    "course": {"type": "number"},
                    "speed": {"type": "number"},
                },
                "required": ["leg_id", "start_time", "end_time"],
            },
        },
    })
}

/// Degrees per minute between consecutive cuts of `field`, the change taken the short way.
fn bearing_rates(cuts: &[(i64, f64, f64)], primary: bool) -> Vec<f64> {
    cuts.windows(2)
        .map(|w| {
            let (a, b) = if primary {
                (w[0].1, w[1].1)
            } else {
                (w[0].2, w[1].2)
            };
            let mut d = b - a;
            if d > 180.0 {
                d -= 360.0;
            } else if d < -180.0 {
                d += 360.0;
            }
            let minutes = (w[1].0 - w[0].0) as f64 / 60_000.0;
            if minutes > 0.0 { d / minutes } else { 0.0 }
        })
        .collect()
}

/// Sample variance; infinite below two values.
fn variance(v: &[f64]) -> f64 {
    if v.len() < 2 {
        return f64::INFINITY;
    }
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (v.len() - 1) as f64
}

fn ambiguity_resolver(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    required_features(input)?;
    let legs_raw = input
        .param("ownship_legs")
        .and_then(Value::as_array)
        .filter(|l| !l.is_empty())
        .ok_or_else(|| ToolError::invalid("Ownship leg definitions required"))?;
    let mut legs = Vec::new();
    for (i, leg) in legs_raw.iter().enumerate() {
        let time = |k: &str| {
            leg.get(k)
                .and_then(Value::as_str)
                .and_then(parse_time)
                .ok_or_else(|| {
                    ToolError::invalid(format!(
                        "ownship_legs[{i}].{k} must be an ISO-8601 time, e.g. 2024-01-15T10:00:00Z"
                    ))
                })
        };
        let id = leg
            .get("leg_id")
            .map(py_value)
            .unwrap_or_else(|| format!("leg-{}", i + 1));
        legs.push((id, time("start_time")?, time("end_time")?));
    }
    let sensors = model::of_kind(input.features, "SENSOR");
    if sensors.is_empty() {
        return Err(ToolError::invalid("No sensor features found in input"));
    }
    let mut items = Vec::new();
    for sensor in sensors {
        let mut list: Vec<Value> = cuts(sensor).to_vec();
        let mut resolved = 0;
        let mut legs_done = 0;
        let in_leg = |c: &Value, start: i64, end: i64| {
            is_ambiguous(c) && cut_time(c).is_some_and(|t| t >= start && t <= end)
        };
        let mut short_leg = None;
        for (leg_id, start, end) in &legs {
            let idx: Vec<usize> = (0..list.len())
                .filter(|&i| in_leg(&list[i], *start, *end))
                .filter(|&i| {
                    list[i].get("bearing").and_then(Value::as_f64).is_some()
                        && list[i]
                            .get("ambiguous_bearing")
                            .and_then(Value::as_f64)
                            .is_some()
                })
                .collect();
            if idx.len() < 2 {
                short_leg.get_or_insert_with(|| leg_id.clone());
                continue;
            }
            let rows: Vec<(i64, f64, f64)> = idx
                .iter()
                .map(|&i| {
                    let c = &list[i];
                    (
                        cut_time(c).unwrap_or_default(),
                        c["bearing"].as_f64().unwrap_or_default(),
                        c["ambiguous_bearing"].as_f64().unwrap_or_default(),
                    )
                })
                .collect();
            let use_primary =
                variance(&bearing_rates(&rows, true)) <= variance(&bearing_rates(&rows, false));
            for &i in &idx {
                if let Some(c) = list[i].as_object_mut() {
                    let chosen = if use_primary {
                        c["bearing"].clone()
                    } else {
                        c["ambiguous_bearing"].clone()
                    };
                    c.insert("ambiguous".into(), json!(false));
                    c.insert("resolved_bearing".into(), chosen);
                    c.insert("resolution_method".into(), json!("leg_bearing_rate"));
                    c.insert("leg_id".into(), json!(leg_id));
                }
                resolved += 1;
            }
            legs_done += 1;
        }
        let name = sensor_name(sensor);
        let label = if resolved > 0 {
            format!(
                "Resolved ambiguity for {resolved} cut(s) on {name} across {legs_done} leg(s) using bearing rate analysis"
            )
        } else if let Some(leg) = short_leg.filter(|_| list.iter().any(is_ambiguous)) {
            format!(
                "Insufficient data for bearing rate analysis on {name}; leg {leg} has fewer than 2 cuts, 0 cut(s) resolved"
            )
        } else {
            format!(
                "No ambiguous cuts found on {name}; 0 cut(s) resolved across {} leg(s)",
                legs.len()
            )
        };
        items.push(Item::feature(
            with_list(sensor, "cuts", list),
            "mutation/sensor/resolved",
            vec![id_of(sensor).unwrap_or_default()],
            label,
        ));
    }
    Ok(items)
}

fn delete_ambiguous_bearings(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    required_features(input)?;
    let mut items = Vec::new();
    for sensor in model::of_kind(input.features, "SENSOR") {
        let Some(contacts) = prop(sensor, "contacts").and_then(Value::as_array) else {
            continue;
        };
        let (deleted, kept): (Vec<&Value>, Vec<&Value>) =
            contacts.iter().partition(|c| is_ambiguous(c));
        let deleted_ids: Vec<Value> = deleted
            .iter()
            .filter_map(|c| c.get("id").cloned())
            .collect();
        let label = format!(
            "Deleted {} ambiguous bearing(s) from {} ({} contacts remaining)",
            deleted.len(),
            sensor_name(sensor),
            kept.len()
        );
        items.push(
            Item::feature(
                with_list(sensor, "contacts", kept.into_iter().cloned().collect()),
                "mutation/sensor/filtered",
                vec![id_of(sensor).unwrap_or_default()],
                label,
            )
            .with_annotation("debrief:deletedFeatures", Value::Array(deleted_ids)),
        );
    }
    if items.is_empty() {
        return Err(ToolError::invalid("No sensor features found in input"));
    }
    Ok(items)
}

fn resolve_ambiguity(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    required_features(input)?;
    let sensors = model::of_kind(input.features, "SENSOR");
    let tracks = model::of_kind(input.features, "TRACK");
    if sensors.is_empty() {
        return Err(ToolError::invalid("No sensor features found in input"));
    }
    if tracks.is_empty() {
        return Err(ToolError::invalid(
            "No target track features found for ambiguity resolution",
        ));
    }
    let mut items = Vec::new();
    for sensor in sensors {
        let host = prop_str(sensor, "host_track_id");
        let Some(target) = tracks
            .iter()
            .find(|t| host.is_none() || id_of(t).as_deref() != host)
        else {
            continue;
        };
        let tf = fixes(target);
        let mut list: Vec<Value> = cuts(sensor).to_vec();
        let had_ambiguous = list.iter().any(is_ambiguous);
        let mut resolved = 0;
        for c in list.iter_mut().filter(|c| is_ambiguous(c)) {
            let origin = c
                .get("origin")
                .and_then(Value::as_array)
                .and_then(|o| Some([o.first()?.as_f64()?, o.get(1)?.as_f64()?]));
            let (Some(origin), Some(t), Some(primary), Some(other)) = (
                origin,
                cut_time(c),
                c.get("bearing").and_then(Value::as_f64),
                c.get("ambiguous_bearing").and_then(Value::as_f64),
            ) else {
                continue;
            };
            let Some(pos) = fix_at(&tf, t) else { continue };
            let truth = model::bearing_deg(origin, pos.coord);
            let chosen = if model::angle_diff(primary, truth).abs()
                <= model::angle_diff(other, truth).abs()
            {
                c["bearing"].clone()
            } else {
                c["ambiguous_bearing"].clone()
            };
            if let Some(o) = c.as_object_mut() {
                o.insert("ambiguous".into(), json!(false));
                o.insert("resolved_bearing".into(), chosen);
            }
            resolved += 1;
        }
        let name = sensor_name(sensor);
        let label = if had_ambiguous {
            format!(
                "Resolved ambiguity for {resolved} cut(s) on {name} using target track {}",
                platform_name(target)
            )
        } else {
            format!("No ambiguous cuts found on {name}; 0 cut(s) resolved")
        };
        items.push(Item::feature(
            with_list(sensor, "cuts", list),
            "mutation/sensor/resolved",
            vec![
                id_of(sensor).unwrap_or_default(),
                id_of(target).unwrap_or_default(),
            ],
            label,
        ));
    }
    if items.is_empty() {
        return Err(ToolError::not_found(
            "No ambiguous sensor data could be resolved: every track is the sensors' own host; add the target's track",
        ));
    }
    Ok(items)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn run(
        f: fn(&CalcInput) -> Result<Vec<Item>, ToolError>,
        features: &[Value],
        params: Value,
    ) -> Result<Vec<Item>, ToolError> {
        let params = params.as_object().cloned().unwrap_or_default();
        f(&CalcInput::new(features, &params))
    }

    fn body(item: &Item) -> Value {
        match &item.body {
            Body::Feature(v) | Body::Json(v) => v.clone(),
            Body::Text(t) => json!(t),
        }
    }

    /// A track at constant course/speed: `n` fixes a minute apart from `start`.
    fn track(id: &str, start: [f64; 2], course: f64, speed: f64, n: usize) -> Value {
        let mut pos = Vec::new();
        let mut at = start;
        for i in 0..n {
            pos.push(json!({"time": format_time(i as i64 * 60_000 + 1_705_312_800_000), "coordinates": at, "course": course, "speed": speed}));
            at = model::destination(at, course, speed / 60.0);
        }
        json!({"type": "Feature", "id": id, "geometry": null, "properties": {"kind": "TRACK", "platform_name": id, "positions": pos}})
    }

    fn sensor(id: &str, cuts: Value) -> Value {
        json!({"type": "Feature", "id": id, "geometry": null, "properties": {"kind": "SENSOR", "sensor_name": id, "cuts": cuts, "contacts": cuts}})
    }

    #[test]
    fn every_tool_rejects_features_of_the_wrong_kind() {
        let shape = json!({"type": "Feature", "id": "c", "geometry": {"type": "Point", "coordinates": [0.0, 0.0]}, "properties": {"kind": "CIRCLE"}});
        let params = json!({"source_frequency_hz": 150.0, "contact": {"time": "2024-01-15T10:00:00Z", "bearing": 10.0},
            "arc_params": {"time": "2024-01-15T10:00:00Z", "bearing": 10.0, "arc_width": 5.0},
            "ownship_legs": [{"leg_id": "l", "start_time": "2024-01-15T10:00:00Z", "end_time": "2024-01-15T11:00:00Z"}]});
        for e in TOOLS {
            let p = params.as_object().cloned().unwrap_or_default();
            assert!(
                (e.run)(&CalcInput::new(std::slice::from_ref(&shape), &p)).is_err(),
                "{}",
                e.id
            );
        }
    }

    #[test]
    fn doppler_rises_while_closing_and_falls_while_opening() {
        // Target 3 nm due north heading south at 10 kt, ownship still: it closes, passes, opens.
        let own = track("own", [0.0, 50.0], 0.0, 0.0, 40);
        let tgt = track("tgt", [0.002, 50.0514], 180.0, 10.0, 40);
        let items = run(
            doppler_curve,
            &[own, tgt],
            json!({"source_frequency_hz": 300.0}),
        )
        .unwrap();
        let data = body(&items[0]);
        let series = data["time_series"].as_array().unwrap();
        let first = series[0]["predicted_frequency_hz"].as_f64().unwrap();
        let last = series[series.len() - 1]["predicted_frequency_hz"]
            .as_f64()
            .unwrap();
        assert!(first > 300.0 && last < 300.0, "{first} → {last}");
        assert!(series[0]["radial_velocity_kts"].as_f64().unwrap() < 0.0);
        assert_eq!(data["speed_of_sound_kts"], json!(3032));
        assert!(data["statistics"]["cpa_estimate"]["time"].is_string());
        // Closing at ~10 kt: f0·(C)/(C − 10) ≈ +0.99 Hz.
        assert!((first - 300.0 * 3032.0 / 3022.0).abs() < 0.05, "{first}");
    }

    #[test]
    fn doppler_needs_a_positive_frequency_and_two_tracks() {
        let own = track("own", [0.0, 50.0], 0.0, 5.0, 3);
        let tgt = track("tgt", [0.1, 50.0], 0.0, 5.0, 3);
        let e = run(
            doppler_curve,
            &[own.clone(), tgt],
            json!({"source_frequency_hz": 0.0}),
        )
        .unwrap_err();
        assert!(e.message.contains("positive"));
        let e = run(
            doppler_curve,
            std::slice::from_ref(&own),
            json!({"source_frequency_hz": 10.0}),
        )
        .unwrap_err();
        assert!(e.message.contains("Two track"));
        let late = json!({"type": "Feature", "id": "late", "properties": {"kind": "TRACK", "positions": [
            {"time": "2030-01-01T00:00:00Z", "coordinates": [0.0, 50.0], "course": 0.0, "speed": 1.0}]}});
        let e = run(
            doppler_curve,
            &[own, late],
            json!({"source_frequency_hz": 10.0}),
        )
        .unwrap_err();
        assert!(e.message.contains("No overlapping"));
    }

    #[test]
    fn inflection_points_sort_their_input_and_need_three_points() {
        let res = |pts: Value| json!({"type": "Feature", "id": "r", "geometry": null, "properties": {"kind": "FREQUENCY_RESIDUALS", "sensor_name": "S", "residuals": pts}});
        let few = res(
            json!([{"time": "2024-01-15T10:00:00Z", "residual_hz": 0.1}, {"time": "2024-01-15T10:01:00Z", "residual_hz": -0.1}]),
        );
        assert!(
            run(inflection_point_detector, &[few], json!({}))
                .unwrap_err()
                .message
                .contains("At least 3")
        );
        // Out of order: sorted, the crossing is 10:01 → 10:02.
        let shuffled = res(json!([
            {"time": "2024-01-15T10:02:00Z", "residual_hz": -0.1},
            {"time": "2024-01-15T10:00:00Z", "residual_hz": 0.2},
            {"time": "2024-01-15T10:01:00Z", "residual_hz": 0.1}]));
        let items = run(
            inflection_point_detector,
            &[shuffled],
            json!({"min_confidence": 0.0}),
        )
        .unwrap();
        let p = &body(&items[0])["inflection_points"][0];
        assert_eq!(p["time"], json!("2024-01-15T10:01:30Z"));
        assert_eq!(p["before_index"], json!(1));
        assert_eq!(p["label"], json!("CPA-1"));
        let bad = run(
            inflection_point_detector,
            &[res(json!([]))],
            json!({"min_confidence": 1.5}),
        )
        .unwrap_err();
        assert!(bad.message.contains("min_confidence"));
    }

    #[test]
    fn merged_contacts_keep_their_order_on_equal_times() {
        let a = sensor(
            "a",
            json!([{"id": "a1", "time": "2024-01-15T10:00:00Z"}, {"id": "a2", "time": "2024-01-15T10:05:00Z"}]),
        );
        let b = sensor("b", json!([{"id": "b1", "time": "2024-01-15T10:00:00Z"}]));
        let items = run(merge_contacts, &[a.clone(), b], json!({})).unwrap();
        let ids: Vec<Value> = items[0]
            .body_contacts()
            .iter()
            .map(|c| c["id"].clone())
            .collect();
        assert_eq!(ids, [json!("a1"), json!("b1"), json!("a2")]);
        assert!(
            run(merge_contacts, &[a], json!({}))
                .unwrap_err()
                .message
                .contains("At least 2")
        );
    }

    trait Contacts {
        fn body_contacts(&self) -> Vec<Value>;
    }
    impl Contacts for Item {
        fn body_contacts(&self) -> Vec<Value> {
            body(self)["properties"]["contacts"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        }
    }

    #[test]
    fn deleting_ambiguous_bearings_keeps_unflagged_contacts() {
        let s = sensor(
            "s",
            json!([{"id": "1", "ambiguous": true}, {"id": "2"}, {"id": "3", "ambiguous": false}]),
        );
        let items = run(delete_ambiguous_bearings, &[s], json!({})).unwrap();
        let kept: Vec<Value> = items[0]
            .body_contacts()
            .iter()
            .map(|c| c["id"].clone())
            .collect();
        assert_eq!(kept, [json!("2"), json!("3")]);
        assert_eq!(
            items[0].annotations["debrief:deletedFeatures"],
            json!(["1"])
        );
    }

    #[test]
    fn resolve_ambiguity_keeps_the_bearing_that_points_at_the_target() {
        let target = track("tgt", [0.0, 50.1], 90.0, 0.0, 3); // due north of the origin
        let cuts = json!([
            {"time": "2024-01-15T10:00:00Z", "bearing": 180.0, "ambiguous_bearing": 2.0, "ambiguous": true, "origin": [0.0, 50.0]},
            {"time": "2024-01-15T10:01:00Z", "bearing": 358.0, "ambiguous_bearing": 182.0, "ambiguous": true, "origin": [0.0, 50.0]},
            {"time": "2024-01-15T10:09:00Z", "bearing": 0.0, "ambiguous_bearing": 180.0, "ambiguous": true, "origin": [0.0, 50.0]}]);
        let items = run(resolve_ambiguity, &[sensor("s", cuts), target], json!({})).unwrap();
        let c = body(&items[0])["properties"]["cuts"].clone();
        assert_eq!(c[0]["resolved_bearing"], json!(2.0));
        assert_eq!(c[1]["resolved_bearing"], json!(358.0));
        // Outside the target's time span: left ambiguous.
        assert_eq!(c[2]["ambiguous"], json!(true));
        assert!(
            items[0]
                .label
                .starts_with("Resolved ambiguity for 2 cut(s)")
        );
    }

    #[test]
    fn the_leg_resolver_prefers_the_steadier_bearing_rate() {
        let cut = |m: i64, b: f64, a: f64| json!({"time": format_time(1_705_312_800_000 + m * 60_000), "bearing": b, "ambiguous_bearing": a, "ambiguous": true});
        // Primary steady (+2/min), ambiguous erratic → primary; and the other way round.
        let steady_primary = sensor(
            "p",
            json!([
                cut(0, 10.0, 300.0),
                cut(1, 12.0, 290.0),
                cut(2, 14.0, 299.0),
                cut(3, 16.0, 280.0)
            ]),
        );
        let steady_ambiguous = sensor(
            "a",
            json!([
                cut(0, 10.0, 300.0),
                cut(1, 30.0, 298.0),
                cut(2, 14.0, 296.0),
                cut(3, 50.0, 294.0)
            ]),
        );
        let legs = json!({"ownship_legs": [{"leg_id": "L1", "start_time": "2024-01-15T10:00:00Z", "end_time": "2024-01-15T10:03:00Z"}]});
        let items = run(
            ambiguity_resolver,
            &[steady_primary, steady_ambiguous],
            legs,
        )
        .unwrap();
        let first = |i: usize| body(&items[i])["properties"]["cuts"][3].clone();
        assert_eq!(first(0)["resolved_bearing"], json!(16.0));
        assert_eq!(first(1)["resolved_bearing"], json!(294.0));
        assert_eq!(first(0)["leg_id"], json!("L1"));
        let none = run(
            ambiguity_resolver,
            &[sensor("x", json!([]))],
            json!({"ownship_legs": []}),
        )
        .unwrap_err();
        assert!(none.message.contains("leg definitions"));
    }

    #[test]
    fn arcs_and_contacts_are_inserted_in_time_order_and_checked() {
        let s = sensor(
            "s",
            json!([{"id": "c1", "time": "2024-01-15T10:00:00Z", "bearing": 1.0, "origin": [0.0, 50.0]},
                                   {"id": "c2", "time": "2024-01-15T10:10:00Z", "bearing": 2.0, "origin": [0.2, 50.0]}]),
        );
        let items = run(insert_sensor_arc, std::slice::from_ref(&s), json!({"arc_params": {"time": "2024-01-15T10:05:00Z", "bearing": 90.0, "arc_width": 4.0}})).unwrap();
        let ids: Vec<Value> = items[0]
            .body_contacts()
            .iter()
            .map(|c| c["id"].clone())
            .collect();
        assert_eq!(ids, [json!("c1"), json!("arc-generated-001"), json!("c2")]);
        let bad = run(insert_sensor_arc, std::slice::from_ref(&s), json!({"arc_params": {"time": "2024-01-15T10:05:00Z", "bearing": 361.0, "arc_width": 4.0}})).unwrap_err();
        assert!(bad.message.contains("between 0 and 360"));
        let bad = run(insert_sensor_arc, std::slice::from_ref(&s), json!({"arc_params": {"time": "2024-01-15T10:05:00Z", "bearing": 1.0, "arc_width": 0.0}})).unwrap_err();
        assert!(bad.message.contains("arc_width"));
        let items = run(
            generate_new_sensor_contact,
            std::slice::from_ref(&s),
            json!({"contact": {"time": "2024-01-15T10:05:00Z", "bearing": 3.0}}),
        )
        .unwrap();
        let cut = &body(&items[0])["properties"]["cuts"][1];
        assert_eq!(cut["origin"], json!([0.1, 50.0]));
        let bad = run(
            generate_new_sensor_contact,
            &[s],
            json!({"contact": {"time": "2024-01-15T10:05:00Z", "bearing": 360.0}}),
        )
        .unwrap_err();
        assert_eq!(bad.affected, ["s"]);
    }

    #[test]
    fn range_plot_names_each_pair_when_there_are_several() {
        let own = track("own", [0.0, 50.0], 0.0, 0.0, 3);
        let far = track("far", [0.0, 50.1], 0.0, 0.0, 3);
        let near = track("near", [0.0, 50.05], 0.0, 0.0, 3);
        let cuts = json!([{"time": "2024-01-15T10:00:00Z", "bearing": 0.0}, {"time": "2024-01-15T10:02:00Z", "bearing": 0.0}]);
        let mut s = sensor("s", cuts);
        s["properties"]["host_track_id"] = json!("own");
        let items = run(
            generate_sensor_range_plot,
            &[s.clone(), far.clone(), own.clone(), near],
            json!({}),
        )
        .unwrap();
        assert_eq!(items.len(), 2);
        assert!(items[0].uri.ends_with("s-far-range-plot.json"));
        let r = body(&items[0])["statistics"]["min_range_m"]
            .as_f64()
            .unwrap();
        assert!((r - 11_119.5).abs() < 0.1, "{r}");
        let one = run(generate_sensor_range_plot, &[s, own, far], json!({})).unwrap();
        assert!(one[0].uri.ends_with("/s-range-plot.json"));
    }

    proptest! {
        #[test]
        fn merging_loses_no_contact_and_sorts_by_time(times in proptest::collection::vec(0i64..1000, 0..12), split in 0usize..12) {
            let contacts: Vec<Value> = times.iter().enumerate().map(|(i, m)| json!({"id": i.to_string(), "time": format_time(1_705_312_800_000 + m * 60_000)})).collect();
            let k = split.min(contacts.len());
            let a = sensor("a", Value::Array(contacts[..k].to_vec()));
            let b = sensor("b", Value::Array(contacts[k..].to_vec()));
            let items = run(merge_contacts, &[a, b], json!({})).unwrap();
            let merged = items[0].body_contacts();
            prop_assert_eq!(merged.len(), contacts.len());
            let t: Vec<i64> = merged.iter().filter_map(cut_time).collect();
            prop_assert!(t.windows(2).all(|w| w[0] <= w[1]));
        }
    }
}
