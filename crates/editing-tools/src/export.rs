//! `dataset/export`: tracks and sensor cuts as text artifacts (UK Track Exchange CSV, GPX,
//! tab-separated tables for the clipboard) and REP text pasted in as tracks.
//!
//! The clipboard tools need no desktop clipboard: the artifact *is* the tab-separated text a
//! client puts on (or took from) its clipboard.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use toolgate_tool_catalogue::common::multi;
use toolgate_tool_catalogue::model::{
    self, cuts, id_of, line_coords, parse_time, positions_raw, prop_str, py_value,
};
use toolgate_tool_catalogue::{Body, CalcInput, Entry, Item, ToolError};

pub(crate) const TOOLS: &[Entry] = &[
    Entry {
        id: "export-track-as-csv",
        spec_category: "dataset/export",
        spec_version: "1.0",
        description: "The first TRACK as UK Track Exchange Format V1.0 CSV (header comments, one row per position with the export metadata in every row). Use it to hand a track to another system.",
        output_kind: "artifact/dataset/exported_csv",
        requirements: tracks,
        params: csv_params,
        required: &[],
        run: export_track_as_csv,
    },
    Entry {
        id: "export-track-to-gpx",
        spec_category: "dataset/export",
        spec_version: "1.0",
        description: "Every TRACK as one GPX 1.1 document (a trk per track; elevation = minus depth; course and speed as Debrief extensions). Use it to open tracks in GPS and GIS tools.",
        output_kind: "artifact/dataset/exported_gpx",
        requirements: tracks,
        params: no_params,
        required: &[],
        run: export_track_to_gpx,
    },
    Entry {
        id: "copy-bearings-to-clipboard",
        spec_category: "dataset/export",
        spec_version: "1.0",
        description: "The first SENSOR's cuts as a tab-separated table (Time, Bearing, Frequency), sorted by time, ready to paste into a spreadsheet.",
        output_kind: "artifact/dataset/bearing_table",
        requirements: sensors,
        params: no_params,
        required: &[],
        run: copy_bearings_to_clipboard,
    },
    Entry {
        id: "copy-time-data-to-clipboard",
        spec_category: "dataset/export",
        spec_version: "1.0",
        description: "Every TRACK's positions as one tab-separated table (Track, Time, Lat, Lon, Course, Speed, Depth), each track sorted by time, ready to paste into a spreadsheet.",
        output_kind: "artifact/dataset/time_series_table",
        requirements: tracks,
        params: no_params,
        required: &[],
        run: copy_time_data_to_clipboard,
    },
    Entry {
        id: "paste-rep-clipboard",
        spec_category: "dataset/export",
        spec_version: "1.0",
        description: "Turn pasted REP text into new TRACK features, one per platform: the catalogue's `;SYM: PLATFORM YYMMDD HHMMSS lat lon course speed depth` lines, or, when there are none, standard Debrief REP position lines. Needs no selected features.",
        output_kind: "addition/track/imported",
        requirements: nothing,
        params: paste_params,
        required: &["clipboard_text"],
        run: paste_rep_clipboard,
    },
];

fn tracks() -> Value {
    multi(&["TRACK"])
}

fn sensors() -> Value {
    multi(&["SENSOR"])
}

fn nothing() -> Value {
    json!([])
}

fn no_params() -> Value {
    json!({})
}

fn required_features(input: &CalcInput) -> Result<(), ToolError> {
    if input.features.is_empty() {
        Err(ToolError::invalid("Input features required"))
    } else {
        Ok(())
    }
}

fn text_item(
    uri: String,
    mime: &str,
    text: String,
    result_type: &str,
    sources: Vec<String>,
    label: String,
) -> Item {
    Item::resource(uri, mime, Body::Text(text), result_type, sources, label)
}

/// A number field as the specs print it (`45.0`, `12`), "" when absent or null.
fn num_text(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::Number(n)) => {
            let x = n.as_f64().unwrap_or_default();
            if x == 0.0 {
                // Never "-0.0".
                py_value(&json!(if n.is_f64() { json!(0.0) } else { json!(0) }))
            } else {
                py_value(&Value::Number(n.clone()))
            }
        }
        Some(other) => py_value(other),
    }
}

/// A position's `[lon, lat]` as JSON values: its own `coordinates`, else the geometry's.
fn position_coords(p: &Value, line: &[[f64; 2]], index: usize) -> Option<(Value, Value)> {
    if let Some(c) = p.get("coordinates").and_then(Value::as_array)
        && c.len() >= 2
        && c[0].is_number()
        && c[1].is_number()
    {
        return Some((c[0].clone(), c[1].clone()));
    }
    line.get(index).map(|c| (json!(c[0]), json!(c[1])))
}

fn platform_or_id(f: &Value) -> String {
    prop_str(f, "platform_name")
        .map(str::to_owned)
        .or_else(|| id_of(f))
        .unwrap_or_else(|| "track".to_owned())
}

// ---------------------------------------------------------------- export-track-as-csv

const CSV_META: &[(&str, &str)] = &[
    (
        "unit_name",
        "Unit name (default: the track's platform_name).",
    ),
    ("case_number", "Case number."),
    (
        "classification",
        "Security classification, e.g. UNCLASSIFIED.",
    ),
    ("type", "Platform type (default: the track's track_type)."),
    ("flag", "Flag state, e.g. GBR."),
    ("sensor", "Sensor that produced the track."),
    ("supplied_by", "Supplier of the data."),
    ("provenance", "Where the data came from."),
    ("info_cutoff_date", "Information cut-off date."),
    ("purpose", "Purpose of the export."),
    ("distribution_statement", "Distribution statement."),
];

fn csv_params() -> Value {
    let fields: Map<String, Value> = CSV_META
        .iter()
        .map(|(k, d)| ((*k).to_owned(), json!({"type": "string", "description": d})))
        .collect();
    json!({
        "metadata": {
            "type": "object",
            "description": "Export metadata written into the header and every row; every field optional.",
            "properties": fields,
            "additionalProperties": false,
        },
    })
}

fn export_track_as_csv(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    required_features(input)?;
    let track = input
        .features
        .iter()
        .find(|f| model::is_track(f))
        .ok_or_else(|| ToolError::invalid("No track feature found in input"))?;
    let tid = id_of(track).unwrap_or_default();
    let positions = positions_raw(track);
    if positions.is_empty() {
        return Err(ToolError::invalid("Track has no positions to export").affecting(vec![tid]));
    }
    let meta = input.param("metadata").and_then(Value::as_object);
    let field = |k: &str| -> String {
        meta.and_then(|m| m.get(k))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .or_else(|| match k {
                "unit_name" => prop_str(track, "platform_name").map(str::to_owned),
                "type" => prop_str(track, "track_type").map(str::to_owned),
                _ => None,
            })
            .unwrap_or_default()
    };
    let m: BTreeMap<&str, String> = CSV_META.iter().map(|(k, _)| (*k, field(k))).collect();
    let get = |k: &str| m.get(k).map(String::as_str).unwrap_or_default();
    let mut lines = vec![
        "// UK Track Exchange Format V1.0".to_owned(),
        "// Exported from Debrief".to_owned(),
        format!("// Unit Name: {}", get("unit_name")),
        format!("// Case Number: {}", get("case_number")),
        format!("// Classification: {}", get("classification")),
        "Lat,Long,DTG,UnitName,CaseNumber,Type,Flag,Sensor,MajorAxis,SemiMajorAxis,SemiMinorAxis,Course,Speed,Depth,Likelihood,Confidence,SuppliedBy,Provenance,InfoCutoffDate,Purpose,Classification,DistributionStatement".to_owned(),
    ];
    let line = line_coords(track);
    for (i, p) in positions.iter().enumerate() {
        let (lon, lat) = position_coords(p, &line, i).ok_or_else(|| {
            ToolError::invalid(format!(
                "Position {i} of the track has no coordinates [lon, lat]"
            ))
            .affecting(vec![tid.clone()])
        })?;
        let pf = |k: &str| num_text(p.get(k));
        let row = [
            num_text(Some(&lat)),
            num_text(Some(&lon)),
            p.get("time")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            get("unit_name").to_owned(),
            get("case_number").to_owned(),
            get("type").to_owned(),
            get("flag").to_owned(),
            get("sensor").to_owned(),
            pf("major_axis"),
            pf("semi_major_axis"),
            pf("semi_minor_axis"),
            pf("course"),
            pf("speed"),
            pf("depth"),
            pf("likelihood"),
            pf("confidence"),
            get("supplied_by").to_owned(),
            get("provenance").to_owned(),
            get("info_cutoff_date").to_owned(),
            get("purpose").to_owned(),
            get("classification").to_owned(),
            get("distribution_statement").to_owned(),
        ];
        lines.push(row.join(","));
    }
    let unit = get("unit_name").to_owned();
    let href = format!("{unit}.csv");
    Ok(vec![
        text_item(
            format!("artifact://export-track-as-csv/{href}"),
            "text/csv",
            lines.join("\n"),
            "artifact/dataset/exported_csv",
            vec![tid],
            format!(
                "Exported track {unit} as CSV ({} positions)",
                positions.len()
            ),
        )
        .with_annotation("debrief:href", json!(href)),
    ])
}

// ---------------------------------------------------------------- export-track-to-gpx

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;")
}

fn export_track_to_gpx(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    required_features(input)?;
    let tracks = model::of_kind(input.features, "TRACK");
    if tracks.is_empty() {
        return Err(ToolError::invalid("No track features found in input"));
    }
    let mut out = vec![
        r#"<?xml version="1.0" encoding="UTF-8"?>"#.to_owned(),
        r#"<gpx version="1.1" creator="Debrief" xmlns="http://www.topografix.com/GPX/1/1" xmlns:debrief="http://www.debrief.info/gpx/extensions">"#.to_owned(),
    ];
    let mut total = 0;
    for t in &tracks {
        out.push("  <trk>".into());
        out.push(format!(
            "    <name>{}</name>",
            xml_escape(&platform_or_id(t))
        ));
        if let Some(kind) = prop_str(t, "track_type").filter(|k| !k.is_empty()) {
            out.push(format!("    <type>{}</type>", xml_escape(kind)));
        }
        out.push("    <trkseg>".into());
        let line = line_coords(t);
        for (i, p) in positions_raw(t).iter().enumerate() {
            let Some((lon, lat)) = position_coords(p, &line, i) else {
                continue;
            };
            let ele = match p.get("depth").and_then(Value::as_f64) {
                Some(d) if d != 0.0 => model::py_num(-d),
                _ => "0.0".to_owned(),
            };
            out.push(format!(
                "      <trkpt lat=\"{}\" lon=\"{}\">",
                num_text(Some(&lat)),
                num_text(Some(&lon))
            ));
            out.push(format!("        <ele>{ele}</ele>"));
            if let Some(time) = p.get("time").and_then(Value::as_str) {
                out.push(format!("        <time>{}</time>", xml_escape(time)));
            }
            let (course, speed) = (
                p.get("course").filter(|v| !v.is_null()),
                p.get("speed").filter(|v| !v.is_null()),
            );
            if course.is_some() || speed.is_some() {
                out.push("        <extensions>".into());
                if course.is_some() {
                    out.push(format!(
                        "          <debrief:course>{}</debrief:course>",
                        num_text(course)
                    ));
                }
                if speed.is_some() {
                    out.push(format!(
                        "          <debrief:speed>{}</debrief:speed>",
                        num_text(speed)
                    ));
                }
                out.push("        </extensions>".into());
            }
            out.push("      </trkpt>".into());
            total += 1;
        }
        out.push("    </trkseg>".into());
        out.push("  </trk>".into());
    }
    out.push("</gpx>".into());
    let (href, label) = if tracks.len() == 1 {
        let name = platform_or_id(tracks[0]);
        (
            format!("{name}.gpx"),
            format!("Exported track {name} as GPX ({total} trackpoints)"),
        )
    } else {
        (
            "tracks_export.gpx".to_owned(),
            format!(
                "Exported {} tracks as GPX ({total} trackpoints)",
                tracks.len()
            ),
        )
    };
    Ok(vec![
        text_item(
            format!("artifact://export-track-to-gpx/{href}"),
            "application/gpx+xml",
            out.join("\n"),
            "artifact/dataset/exported_gpx",
            model::ids_of(tracks.iter().copied()),
            label,
        )
        .with_annotation("debrief:href", json!(href)),
    ])
}

// ---------------------------------------------------------------- clipboard tables

fn copy_bearings_to_clipboard(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    required_features(input)?;
    let sensor = input
        .features
        .iter()
        .find(|f| model::is_kind(f, "SENSOR"))
        .ok_or_else(|| ToolError::invalid("No sensor feature found in input"))?;
    let sid = id_of(sensor).unwrap_or_default();
    let mut rows: Vec<(i64, &Value)> = cuts(sensor)
        .iter()
        .filter(|c| c.get("bearing").is_some_and(Value::is_number))
        .map(|c| {
            let t = c
                .get("time")
                .and_then(Value::as_str)
                .and_then(parse_time)
                .unwrap_or(i64::MIN);
            (t, c)
        })
        .collect();
    if rows.is_empty() {
        return Err(ToolError::invalid("Sensor has no cuts to copy").affecting(vec![sid]));
    }
    rows.sort_by_key(|r| r.0);
    let name = prop_str(sensor, "sensor_name").unwrap_or("Unknown");
    let mut lines = vec!["Time\tBearing (deg)\tFrequency (Hz)".to_owned()];
    for (_, c) in &rows {
        lines.push(format!(
            "{}\t{}\t{}",
            c.get("time").and_then(Value::as_str).unwrap_or_default(),
            num_text(c.get("bearing")),
            num_text(c.get("frequency"))
        ));
    }
    Ok(vec![text_item(
        format!("artifact://copy-bearings-to-clipboard/{name}"),
        "text/plain",
        lines.join("\n"),
        "artifact/dataset/bearing_table",
        vec![sid],
        format!(
            "Copied {} bearing cuts from sensor {name} to clipboard",
            rows.len()
        ),
    )])
}

fn copy_time_data_to_clipboard(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    required_features(input)?;
    let tracks = model::of_kind(input.features, "TRACK");
    if tracks.is_empty() {
        return Err(ToolError::invalid("No track features found in input"));
    }
    let sources = model::ids_of(tracks.iter().copied());
    let mut lines = vec!["Track\tTime\tLat\tLon\tCourse (deg)\tSpeed (kts)\tDepth (m)".to_owned()];
    let mut total = 0;
    for t in &tracks {
        let name = platform_or_id(t);
        let line = line_coords(t);
        let mut rows: Vec<(i64, &Value, (Value, Value))> = positions_raw(t)
            .iter()
            .enumerate()
            .filter_map(|(i, p)| {
                let time = p.get("time").and_then(Value::as_str).and_then(parse_time)?;
                Some((time, p, position_coords(p, &line, i)?))
            })
            .collect();
        rows.sort_by_key(|r| r.0);
        for (_, p, (lon, lat)) in rows {
            lines.push(
                [
                    name.clone(),
                    p.get("time")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    num_text(Some(&lat)),
                    num_text(Some(&lon)),
                    num_text(p.get("course")),
                    num_text(p.get("speed")),
                    num_text(p.get("depth")),
                ]
                .join("\t"),
            );
            total += 1;
        }
    }
    if total == 0 {
        return Err(ToolError::invalid("Selected tracks have no positions").affecting(sources));
    }
    let suffix = if tracks.len() == 1 {
        platform_or_id(tracks[0])
    } else {
        format!("{}_tracks", tracks.len())
    };
    Ok(vec![text_item(
        format!("artifact://copy-time-data-to-clipboard/{suffix}"),
        "text/plain",
        lines.join("\n"),
        "artifact/dataset/time_series_table",
        sources,
        format!(
            "Copied time data for {} track(s) ({total} positions) to clipboard",
            tracks.len()
        ),
    )])
}

// ---------------------------------------------------------------- paste-rep-clipboard

fn paste_params() -> Value {
    json!({
        "clipboard_text": {"type": "string", "description": "The pasted text: `;SYM: PLATFORM YYMMDD HHMMSS LAT_D LAT_M LAT_S N|S LON_D LON_M LON_S E|W COURSE SPEED DEPTH` lines, or standard REP position lines."},
    })
}

/// One fix parsed from a `;SYM:` line.
struct SymFix {
    time: i64,
    lon: f64,
    lat: f64,
    course: f64,
    speed: f64,
    depth: f64,
}

fn parse_sym_line(line: &str) -> Option<(String, SymFix)> {
    let f: Vec<&str> = line.split_whitespace().collect();
    if f.len() < 15 || f[0] != ";SYM:" {
        return None;
    }
    let num = |i: usize| f[i].parse::<f64>().ok().filter(|x| x.is_finite());
    let (date, time) = (f[2], f[3]);
    if date.len() != 6 || time.len() < 6 || !date.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let iso = format!(
        "{}-{}-{}T{}:{}:{}Z",
        2000 + date[0..2].parse::<i32>().ok()?,
        &date[2..4],
        &date[4..6],
        time.get(0..2)?,
        time.get(2..4)?,
        time.get(4..6)?
    );
    let t = parse_time(&iso)?;
    let dms = |d: usize, hemi: &str, neg: &str| -> Option<f64> {
        let v = num(d)? + num(d + 1)? / 60.0 + num(d + 2)? / 3600.0;
        Some(if hemi.eq_ignore_ascii_case(neg) {
            -v
        } else {
            v
        })
    };
    let lat = dms(4, f[7], "S")?;
    let lon = dms(8, f[11], "W")?;
    Some((
        f[1].to_owned(),
        SymFix {
            time: t,
            lon,
            lat,
            course: num(12)?,
            speed: num(13)?,
            depth: num(14)?,
        },
    ))
}

fn imported_track(n: usize, platform: &str, mut fixes: Vec<SymFix>) -> Item {
    fixes.sort_by_key(|f| f.time);
    // Round away float noise from the degree-minute-second sums (1e-9 deg is < 1 mm).
    let r = |x: f64| model::round_to(x, 9);
    let coords: Vec<[f64; 2]> = fixes.iter().map(|f| [r(f.lon), r(f.lat)]).collect();
    let geometry = if coords.len() == 1 {
        json!({"type": "Point", "coordinates": coords[0]})
    } else {
        json!({"type": "LineString", "coordinates": coords})
    };
    let positions: Vec<Value> = fixes
        .iter()
        .zip(&coords)
        .map(|(f, c)| {
            json!({"time": model::format_time(f.time), "coordinates": c, "course": f.course, "speed": f.speed, "depth": f.depth})
        })
        .collect();
    let feature = json!({
        "type": "Feature",
        "id": format!("imported-track-{n:03}"),
        "geometry": geometry,
        "properties": {
            "kind": "TRACK",
            "platform_id": platform,
            "platform_name": platform,
            "track_type": "SURFACE",
            "start_time": positions.first().map(|p| p["time"].clone()),
            "end_time": positions.last().map(|p| p["time"].clone()),
            "positions": positions,
        },
    });
    let count = fixes.len();
    Item::feature(
        feature,
        "addition/track/imported",
        Vec::new(),
        format!("Imported track {platform} from REP clipboard ({count} positions)"),
    )
}

fn paste_rep_clipboard(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    let text = input
        .str_param("clipboard_text")
        .filter(|t| !t.trim().is_empty())
        .ok_or_else(|| ToolError::invalid("clipboard_text is required"))?;
    let mut by_platform: Vec<(String, Vec<SymFix>)> = Vec::new();
    for (platform, fix) in text.lines().filter_map(|l| parse_sym_line(l.trim())) {
        match by_platform.iter_mut().find(|(p, _)| *p == platform) {
            Some((_, list)) => list.push(fix),
            None => by_platform.push((platform, vec![fix])),
        }
    }
    if by_platform.is_empty() {
        // Standard REP position lines, read by toolgate's REP importer.
        if let Ok(import) = toolgate_rep::parse_rep("clipboard", text) {
            for track in import.features().iter().filter(|f| model::is_track(f)) {
                let platform = prop_str(track, "platform_id")
                    .map(str::to_owned)
                    .unwrap_or_else(|| model::track_name(track));
                let fixes: Vec<SymFix> = model::fixes(track)
                    .into_iter()
                    .map(|f| SymFix {
                        time: f.time,
                        lon: f.coord[0],
                        lat: f.coord[1],
                        course: f.course.unwrap_or_default(),
                        speed: f.speed.unwrap_or_default(),
                        depth: f.depth.unwrap_or_default(),
                    })
                    .collect();
                if !fixes.is_empty() {
                    by_platform.push((platform, fixes));
                }
            }
        }
    }
    if by_platform.is_empty() {
        return Err(ToolError::invalid(
            "No valid REP position fixes found in clipboard text",
        ));
    }
    Ok(by_platform
        .into_iter()
        .enumerate()
        .map(|(i, (platform, fixes))| imported_track(i + 1, &platform, fixes))
        .collect())
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

    fn text(item: &Item) -> String {
        item.body.text()
    }

    /// The track of export-track-as-csv's basic fixture (also the input behind the
    /// copy-time-data-to-clipboard golden output, which has no input fixture).
    fn ownship() -> Value {
        json!({"type": "Feature", "id": "track-ownship",
            "geometry": {"type": "LineString", "coordinates": [[-1.0, 50.0], [-1.02, 50.01]]},
            "properties": {"kind": "TRACK", "platform_id": "OWNSHIP", "platform_name": "OWNSHIP", "track_type": "SURFACE",
                "positions": [
                    {"time": "2024-01-15T10:05:00Z", "coordinates": [-1.02, 50.01], "course": 47.0, "speed": 12.5, "depth": 0.0},
                    {"time": "2024-01-15T10:00:00Z", "coordinates": [-1.0, 50.0], "course": 45.0, "speed": 12.0, "depth": 0.0}]}})
    }

    #[test]
    fn copy_time_data_gives_the_catalogue_table() {
        // The golden copy-time-data-to-clipboard.basic.output.json, from its natural input
        // (positions deliberately out of order: the tool sorts them).
        let items = run(copy_time_data_to_clipboard, &[ownship()], json!({})).unwrap();
        assert_eq!(
            items[0].uri,
            "artifact://copy-time-data-to-clipboard/OWNSHIP"
        );
        assert_eq!(items[0].mime_type, "text/plain");
        assert_eq!(items[0].result_type, "artifact/dataset/time_series_table");
        assert_eq!(items[0].source_features, ["track-ownship"]);
        assert_eq!(
            items[0].label,
            "Copied time data for 1 track(s) (2 positions) to clipboard"
        );
        assert_eq!(
            text(&items[0]),
            "Track\tTime\tLat\tLon\tCourse (deg)\tSpeed (kts)\tDepth (m)\nOWNSHIP\t2024-01-15T10:00:00Z\t50.0\t-1.0\t45.0\t12.0\t0.0\nOWNSHIP\t2024-01-15T10:05:00Z\t50.01\t-1.02\t47.0\t12.5\t0.0"
        );
    }

    #[test]
    fn copy_time_data_handles_several_tracks_and_missing_values() {
        let mut other = ownship();
        other["id"] = json!("t2");
        other["properties"]
            .as_object_mut()
            .unwrap()
            .remove("platform_name");
        other["properties"]["positions"] =
            json!([{"time": "2024-01-15T11:00:00Z", "coordinates": [2.5, -10.0]}]);
        let items = run(copy_time_data_to_clipboard, &[ownship(), other], json!({})).unwrap();
        assert_eq!(
            items[0].uri,
            "artifact://copy-time-data-to-clipboard/2_tracks"
        );
        let t = text(&items[0]);
        assert_eq!(
            t.lines().last(),
            Some("t2\t2024-01-15T11:00:00Z\t-10.0\t2.5\t\t\t")
        );
        let mut empty = ownship();
        empty["properties"]["positions"] = json!([]);
        let e = run(copy_time_data_to_clipboard, &[empty], json!({})).unwrap_err();
        assert_eq!(e.message, "Selected tracks have no positions");
        assert_eq!(e.affected, ["track-ownship"]);
    }

    #[test]
    fn gpx_negates_depth_escapes_names_and_omits_empty_extensions() {
        let mut t = ownship();
        t["properties"]["platform_name"] = json!("A&B <sub>");
        t["properties"]["positions"] = json!([
            {"time": "2024-01-15T10:00:00Z", "coordinates": [-1.0, 50.0], "depth": 50.0},
            {"time": "2024-01-15T10:01:00Z", "coordinates": [-1.0, 50.1], "speed": 3.0}]);
        let items = run(export_track_to_gpx, &[t], json!({})).unwrap();
        let g = text(&items[0]);
        assert!(g.contains("<name>A&amp;B &lt;sub&gt;</name>"));
        assert!(g.contains("<ele>-50.0</ele>"));
        assert_eq!(g.matches("<extensions>").count(), 1);
        assert!(g.contains("<debrief:speed>3.0</debrief:speed>") && !g.contains("debrief:course"));
        let two = run(export_track_to_gpx, &[ownship(), ownship()], json!({})).unwrap();
        assert_eq!(
            two[0].annotations["debrief:href"],
            json!("tracks_export.gpx")
        );
        assert_eq!(text(&two[0]).matches("<trk>").count(), 2);
    }

    #[test]
    fn csv_rows_match_the_header_and_metadata_defaults_come_from_the_track() {
        let items = run(
            export_track_as_csv,
            &[ownship()],
            json!({"metadata": {"flag": "GBR"}}),
        )
        .unwrap();
        let csv = text(&items[0]);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines[2], "// Unit Name: OWNSHIP");
        let header = lines[5].split(',').count();
        assert_eq!(header, 22);
        for row in &lines[6..] {
            let cells: Vec<&str> = row.split(',').collect();
            assert_eq!(cells.len(), header, "{row}");
            assert_eq!(
                (cells[3], cells[5], cells[6]),
                ("OWNSHIP", "SURFACE", "GBR")
            );
        }
        // Stored order is kept (this export is not sorted).
        assert!(lines[6].starts_with("50.01,-1.02,2024-01-15T10:05:00Z"));
        let mut none = ownship();
        none["properties"]["positions"] = json!([]);
        let e = run(export_track_as_csv, &[none], json!({})).unwrap_err();
        assert_eq!(e.message, "Track has no positions to export");
    }

    #[test]
    fn bearings_table_sorts_and_skips_cuts_without_a_bearing() {
        let s = json!({"type": "Feature", "id": "s", "properties": {"kind": "SENSOR", "cuts": [
            {"time": "2024-01-15T10:05:00Z", "bearing": 47},
            {"time": "2024-01-15T10:03:00Z"},
            {"time": "2024-01-15T10:00:00Z", "bearing": 45.5, "frequency": 150.25}]}});
        let items = run(copy_bearings_to_clipboard, &[s], json!({})).unwrap();
        assert_eq!(
            text(&items[0]),
            "Time\tBearing (deg)\tFrequency (Hz)\n2024-01-15T10:00:00Z\t45.5\t150.25\n2024-01-15T10:05:00Z\t47\t"
        );
        assert_eq!(
            items[0].uri,
            "artifact://copy-bearings-to-clipboard/Unknown"
        );
        let bare =
            json!({"type": "Feature", "id": "b", "properties": {"kind": "SENSOR", "cuts": []}});
        assert_eq!(
            run(copy_bearings_to_clipboard, &[bare], json!({}))
                .unwrap_err()
                .message,
            "Sensor has no cuts to copy"
        );
    }

    #[test]
    fn pasted_sym_lines_handle_hemispheres_order_and_junk() {
        let text = "junk line\n;SYM: B 240115 100500 10 30 00.00 S 020 15 00.00 E 090.0 5.0 10.0\n;SYM: too few fields\n;SYM: B 240115 100000 10 00 00.00 S 020 00 00.00 E 090.0 5.0 10.0\n";
        let items = run(paste_rep_clipboard, &[], json!({"clipboard_text": text})).unwrap();
        assert_eq!(items.len(), 1);
        let f = match &items[0].body {
            Body::Feature(f) => f.clone(),
            _ => panic!("a feature"),
        };
        assert_eq!(
            f["geometry"]["coordinates"],
            json!([[20.0, -10.0], [20.25, -10.5]])
        );
        assert_eq!(f["properties"]["start_time"], json!("2024-01-15T10:00:00Z"));
        assert_eq!(items[0].result_type, "addition/track/imported");
        let e = run(paste_rep_clipboard, &[], json!({"clipboard_text": "  "})).unwrap_err();
        assert_eq!(e.message, "clipboard_text is required");
        let e = run(paste_rep_clipboard, &[], json!({"clipboard_text": "hello"})).unwrap_err();
        assert_eq!(
            e.message,
            "No valid REP position fixes found in clipboard text"
        );
    }

    #[test]
    fn pasted_standard_rep_lines_are_read_by_the_rep_importer() {
        let rep = "240115 100000 NELSON @A 50 00 00.00 N 001 00 00.00 W 045.0 12.0 0.0\n240115 100500 NELSON @A 50 00 36.00 N 001 01 12.00 W 047.0 12.5 0.0\n";
        let items = run(paste_rep_clipboard, &[], json!({"clipboard_text": rep})).unwrap();
        assert_eq!(
            items[0].label,
            "Imported track NELSON from REP clipboard (2 positions)"
        );
        let f = match &items[0].body {
            Body::Feature(f) => f.clone(),
            _ => panic!("a feature"),
        };
        let c = f["geometry"]["coordinates"][1].clone();
        assert!(
            (c[0].as_f64().unwrap() + 1.02).abs() < 1e-9
                && (c[1].as_f64().unwrap() - 50.01).abs() < 1e-9
        );
    }

    proptest! {
        #[test]
        fn exports_keep_every_position(pts in proptest::collection::vec((-179.0f64..179.0, -80.0f64..80.0, 0u32..86_000), 1..20)) {
            let positions: Vec<Value> = pts.iter().map(|(lon, lat, s)| json!({"time": model::format_time(1_705_276_800_000 + i64::from(*s) * 1000), "coordinates": [lon, lat], "course": 10.0})).collect();
            let t = json!({"type": "Feature", "id": "t", "properties": {"kind": "TRACK", "platform_name": "T", "positions": positions}});
            let gpx = run(export_track_to_gpx, std::slice::from_ref(&t), json!({})).unwrap();
            prop_assert_eq!(text(&gpx[0]).matches("<trkpt ").count(), pts.len());
            let csv = run(export_track_as_csv, std::slice::from_ref(&t), json!({})).unwrap();
            prop_assert_eq!(text(&csv[0]).lines().count(), 6 + pts.len());
            let table = run(copy_time_data_to_clipboard, std::slice::from_ref(&t), json!({})).unwrap();
            let body = text(&table[0]);
            let times: Vec<i64> = body.lines().skip(1).filter_map(|l| l.split('\t').nth(1)).filter_map(parse_time).collect();
            prop_assert_eq!(times.len(), pts.len());
            prop_assert!(times.windows(2).all(|w| w[0] <= w[1]));
        }
    }
}
