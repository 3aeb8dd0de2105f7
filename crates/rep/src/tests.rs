#![allow(clippy::unwrap_used, clippy::expect_used, clippy::float_cmp)]

use std::collections::HashSet;

use chrono::{DateTime, SecondsFormat, TimeZone, Utc};
use proptest::prelude::*;
use serde_json::{Value, json};

use super::lex::{fmt_time, parse_f64, slug};
use super::{PlatformRecord, RepError, parse_rep};

const BOAT1: &str = include_str!("../tests/fixtures/rep/valid/boat1.rep");
const BOAT2: &str = include_str!("../tests/fixtures/rep/valid/boat2.rep");
const NARRATIVE: &str = include_str!("../tests/fixtures/rep/valid/narrative.rep");
const BAD_COORDINATES: &str = include_str!("../tests/fixtures/rep/invalid/bad_coordinates.rep");
const BAD_TIMESTAMP: &str = include_str!("../tests/fixtures/rep/invalid/bad_timestamp.rep");
const TRUNCATED: &str = include_str!("../tests/fixtures/rep/invalid/truncated.rep");
const BOAT1_GEOJSON: &str = include_str!("../tests/fixtures/core--boat1/features.geojson");
const BOAT1_ITEM: &str = include_str!("../tests/fixtures/core--boat1/item.json");
/// Every command and position-line variant the importer knows, and the features file that the
/// `serde_json::Value`-building importer (before the typed output) wrote for it with
/// `toolgate import`.
const EVERY_COMMAND: &str = include_str!("../tests/fixtures/rep/golden/every_command.rep");
const EVERY_COMMAND_GEOJSON: &str =
    include_str!("../tests/fixtures/rep/golden/every_command.features.geojson");

fn kind(f: &Value) -> &str {
    f["properties"]["kind"].as_str().unwrap()
}

fn of_kind<'a>(features: &'a [Value], k: &str) -> Vec<&'a Value> {
    features.iter().filter(|f| kind(f) == k).collect()
}

fn err(name: &str, text: &str) -> RepError {
    parse_rep(name, text).expect_err("expected an error")
}

fn one_shape(text: &str) -> Value {
    let import = parse_rep("t.rep", text).unwrap();
    assert_eq!(import.features().len(), 1, "{:#?}", import.features());
    import.features().into_iter().next().unwrap()
}

fn coord(v: &Value) -> [f64; 2] {
    [v[0].as_f64().unwrap(), v[1].as_f64().unwrap()]
}

fn close(a: [f64; 2], b: [f64; 2], tol: f64) -> bool {
    (a[0] - b[0]).abs() <= tol && (a[1] - b[1]).abs() <= tol
}

// ---------------------------------------------------------------- the Debrief reference

/// Objects have the same keys in the same order, recursively.
fn assert_same_keys(a: &Value, b: &Value, path: &str) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let kx: Vec<&String> = x.keys().collect();
            let ky: Vec<&String> = y.keys().collect();
            assert_eq!(kx, ky, "keys at {path}");
            for (k, v) in x {
                assert_same_keys(v, &y[k], &format!("{path}.{k}"));
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            assert_eq!(x.len(), y.len(), "length at {path}");
            for (i, (v, w)) in x.iter().zip(y).enumerate() {
                assert_same_keys(v, w, &format!("{path}[{i}]"));
            }
        }
        _ => {}
    }
}

#[test]
fn boat1_matches_debriefs_own_import() {
    let import = parse_rep("boat1.rep", BOAT1).unwrap();
    let reference: Value = serde_json::from_str(BOAT1_GEOJSON).unwrap();
    let expected = &reference["features"][0];
    assert_eq!(import.features().len(), 1);
    let ours = &import.features()[0];

    assert_eq!(ours["type"], "Feature");
    assert_eq!(ours["id"], "track-nelson");
    assert_eq!(ours["geometry"]["type"], expected["geometry"]["type"]);
    let our_coords = ours["geometry"]["coordinates"].as_array().unwrap();
    let ref_coords = expected["geometry"]["coordinates"].as_array().unwrap();
    assert_eq!(our_coords.len(), 402);
    assert_eq!(our_coords.len(), ref_coords.len());
    for (a, b) in our_coords.iter().zip(ref_coords) {
        assert!(close(coord(a), coord(b), 1e-9), "{a} vs {b}");
    }
    assert!(close(coord(&our_coords[0]), coord(&ref_coords[0]), 1e-9));
    assert!(close(
        coord(&our_coords[401]),
        coord(&ref_coords[401]),
        1e-9
    ));

    // Every property Debrief wrote, except its run-specific provenance, is identical
    // (positions included: time, course, speed and depth of all 402).
    let ours_p = ours["properties"].as_object().unwrap();
    let mut ref_p = expected["properties"].as_object().unwrap().clone();
    ref_p.remove("provenance");
    assert_eq!(ours_p, &ref_p);

    // With serde_json's `preserve_order` (which the workspace enables) the keys also come out
    // in Debrief's order at every level.
    let mut same = expected.clone();
    same["properties"]
        .as_object_mut()
        .unwrap()
        .remove("provenance");
    assert_same_keys(ours, &same, "$");

    assert_eq!(import.position_count, 402);
    assert_eq!(
        import.platforms,
        vec![PlatformRecord {
            id: "NELSON".into(),
            ..PlatformRecord::default()
        }]
    );
}

#[test]
fn boat1_bbox_and_span_match_the_stac_item() {
    let import = parse_rep("boat1.rep", BOAT1).unwrap();
    let item: Value = serde_json::from_str(BOAT1_ITEM).unwrap();
    let bbox: Vec<f64> = item["bbox"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    let ours = import.bbox.unwrap();
    for (a, b) in ours.iter().zip(&bbox) {
        assert!((a - b).abs() < 1e-9, "{ours:?} vs {bbox:?}");
    }
    let (start, end) = import.time_span.unwrap();
    assert_eq!(fmt_time(&start), item["properties"]["start_datetime"]);
    assert_eq!(fmt_time(&end), item["properties"]["end_datetime"]);
}

#[test]
fn boat2_parses() {
    let import = parse_rep("boat2.rep", BOAT2).unwrap();
    assert_eq!(import.features().len(), 1);
    let track = &import.features()[0];
    assert_eq!(track["id"], "track-collingwood");
    assert_eq!(track["properties"]["platform_id"], "COLLINGWOOD");
    assert_eq!(track["properties"]["style"]["line"]["color"], "#0000FF");
    let positions = track["properties"]["positions"].as_array().unwrap();
    assert_eq!(positions.len(), 403);
    assert_eq!(import.position_count, 403);
    assert_eq!(
        positions.len(),
        track["geometry"]["coordinates"].as_array().unwrap().len()
    );
    assert_eq!(positions[0]["time"], "1995-12-12T05:03:00+00:00");
    assert_eq!(
        track["properties"]["start_time"],
        "1995-12-12T05:03:00+00:00"
    );
    let first = coord(&track["geometry"]["coordinates"][0]);
    let lat = 21.0 + 53.0 / 60.0 + 39.19 / 3600.0;
    let lon = -(21.0 + 35.0 / 60.0 + 37.59 / 3600.0);
    assert_eq!(first, [lon, lat]);
}

// ---------------------------------------------------------------- streamed output

/// `write_feature_collection`'s bytes.
fn streamed(import: &super::RepImport, layout: super::JsonLayout) -> Vec<u8> {
    let mut out = Vec::new();
    import.write_feature_collection(&mut out, layout).unwrap();
    out
}

#[test]
fn streamed_collection_is_the_features_as_values() {
    let inputs = [
        BOAT1.to_owned(),
        NARRATIVE.to_owned(),
        EVERY_COMMAND.to_owned(),
        format!("{BOAT2}\n{EVERY_COMMAND}\n{}", synthetic_rep(20_000)),
        String::new(),
    ];
    for text in &inputs {
        let import = parse_rep("t.rep", text).unwrap();
        let expected = json!({"type": "FeatureCollection", "features": import.features()});
        for layout in [super::JsonLayout::Pretty, super::JsonLayout::Compact] {
            let bytes = streamed(&import, layout);
            // The same document, keys in the same order at every level…
            let parsed: Value = serde_json::from_slice(&bytes).unwrap();
            assert_eq!(parsed, expected);
            assert_same_keys(&parsed, &expected, "$");
            // …and the same bytes as serde_json's printer writes for the Values.
            assert_eq!(import.feature_collection_bytes(layout).unwrap(), bytes);
            let serde = match layout {
                super::JsonLayout::Pretty => serde_json::to_string_pretty(&expected).unwrap(),
                super::JsonLayout::Compact => serde_json::to_string(&expected).unwrap(),
            };
            assert_eq!(String::from_utf8(bytes).unwrap(), serde, "{layout:?}");
        }
    }
}

#[test]
fn tracks_written_on_two_threads_give_the_same_bytes() {
    let text = format!("{BOAT2}\n{EVERY_COMMAND}\n{}", synthetic_rep(20_000));
    let import = parse_rep("t.rep", &text).unwrap();
    assert!(import.tracks.len() >= 3, "{}", import.tracks.len());
    for layout in [super::JsonLayout::Pretty, super::JsonLayout::Compact] {
        let one = super::json::bytes_with_split(&import, layout, None).unwrap();
        assert_eq!(one, import.feature_collection_bytes(layout).unwrap());
        for split in 1..import.tracks.len() {
            let two = super::json::bytes_with_split(&import, layout, Some(split)).unwrap();
            assert!(one == two, "{layout:?} split at {split} changed the bytes");
        }
    }
}

#[test]
fn every_command_matches_the_value_built_output() {
    let import = parse_rep("every_command.rep", EVERY_COMMAND).unwrap();
    let mut bytes = streamed(&import, super::JsonLayout::Pretty);
    bytes.push(b'\n');
    assert_eq!(String::from_utf8(bytes).unwrap(), EVERY_COMMAND_GEOJSON);
    // TRACK, NARRATIVE, SENSOR and the ten annotation kinds.
    let features = import.features();
    let kinds: HashSet<&str> = features.iter().map(kind).collect();
    assert_eq!(kinds.len(), 13, "{kinds:?}");
}

#[test]
fn typed_fields() {
    let import = parse_rep("every_command.rep", EVERY_COMMAND).unwrap();
    assert_eq!(import.feature_count(), import.features().len());
    let track = &import.tracks[0];
    assert_eq!(track.name, "HMS Two Words");
    assert_eq!(track.positions.len(), 2);
    assert_eq!(track.positions[0].depth, None);
    assert_eq!(track.positions[1].depth, Some(10.0));
    assert_eq!(
        track.positions[0].label.as_deref(),
        Some("label one // note")
    );
    let lone = &import.tracks[1];
    assert_eq!(
        lone.positions.len(),
        1,
        "a lone position is repeated only on output"
    );
    assert_eq!(
        import.features()[1]["properties"]["positions"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert!(matches!(import.shapes[0].shape, super::Shape::Text { .. }));
    assert_eq!(import.sensors[0].platform_id, "GHOST");
}

// ---------------------------------------------------------------- narratives

#[test]
fn narratives_link_to_tracks_by_name() {
    let text = format!("{BOAT1}\n{BOAT2}\n{NARRATIVE}");
    let import = parse_rep("all.rep", &text).unwrap();
    let features = import.features();
    let kinds: Vec<&str> = features.iter().map(kind).collect();
    let mut expected = vec!["TRACK", "TRACK"];
    expected.extend(std::iter::repeat_n("NARRATIVE", 19));
    assert_eq!(kinds, expected);
    assert_eq!(import.platforms.len(), 2);

    let narratives = of_kind(&features, "NARRATIVE");
    let first = narratives[0];
    assert_eq!(first["id"], "narrative-1");
    assert_eq!(first["geometry"], Value::Null);
    assert_eq!(first["properties"]["time"], "1995-12-12T05:00:00+00:00");
    assert_eq!(first["properties"]["text"], "COMEX SERIAL 16D");
    assert_eq!(first["properties"]["track_id"], "track-nelson");
    assert_eq!(first["properties"]["track_name"], "NELSON");
    // Fractional seconds survive; trailing spaces do not.
    assert_eq!(
        narratives[1]["properties"]["time"],
        "1995-12-12T05:01:00.100+00:00"
    );
    assert_eq!(
        narratives[2]["properties"]["text"],
        "BRIEFING HINTED THAT TARGET TO SE"
    );
    let collingwood = narratives[9];
    assert_eq!(
        collingwood["properties"]["text"],
        "SUSPECTED DETECTION OF RED"
    );
    assert_eq!(collingwood["properties"]["track_id"], "track-collingwood");
    // The last line has no newline at all.
    assert_eq!(narratives[18]["properties"]["text"], "RX CONGRATS ON UWT");
}

#[test]
fn narratives_without_their_track_have_no_track_id() {
    let import = parse_rep("narrative.rep", NARRATIVE).unwrap();
    assert_eq!(import.features().len(), 19);
    assert!(import.platforms.is_empty());
    assert_eq!(import.bbox, None);
    assert_eq!(import.position_count, 0);
    let f = &import.features()[0];
    assert_eq!(kind(f), "NARRATIVE");
    assert!(f["properties"].get("track_id").is_none());
    assert_eq!(f["properties"]["track_name"], "NELSON");
    let (start, end) = import.time_span.unwrap();
    assert_eq!(fmt_time(&start), "1995-12-12T05:00:00+00:00");
    assert_eq!(fmt_time(&end), "1995-12-12T11:41:00+00:00");
}

#[test]
fn narrative2_and_quoted_track_names() {
    let text = "\
951212 050000 \"HMS NEL SON\" @C 22 0 0 N 21 0 0 W 90 5 0\n\
;NARRATIVE2: 951212 050500 \"HMS NEL SON\" GenComment2 Mk Rge BAAA R121212\n";
    let import = parse_rep("t.rep", text).unwrap();
    let track = &import.features()[0];
    assert_eq!(track["id"], "track-hms-nel-son");
    assert_eq!(track["properties"]["platform_id"], "HMS NEL SON");
    let n = &import.features()[1];
    assert_eq!(n["properties"]["entry_type"], "GenComment2");
    assert_eq!(n["properties"]["text"], "Mk Rge BAAA R121212");
    assert_eq!(n["properties"]["track_id"], "track-hms-nel-son");
}

// ---------------------------------------------------------------- invalid fixtures

#[test]
fn bad_coordinates_points_at_the_latitude_degrees() {
    let e = err("bad_coordinates.rep", BAD_COORDINATES);
    assert_eq!(
        (e.file(), e.line(), e.column()),
        ("bad_coordinates.rep", 2, 30)
    );
    assert_eq!(
        e.to_string(),
        "bad_coordinates.rep:2:30: invalid latitude degrees \"91\" in \
         \"951212 050300.000 BADSHIP @A 91 53 39.19 ...\"; expected 0–90"
    );
}

#[test]
fn bad_timestamp_points_at_the_month() {
    let e = err("bad_timestamp.rep", BAD_TIMESTAMP);
    assert_eq!((e.line(), e.column()), (2, 3));
    assert_eq!(
        e.to_string(),
        "bad_timestamp.rep:2:3: invalid month \"13\" in \
         \"991399 250300.000 BADSHIP @A 21 53 39.19 ...\"; expected 01–12"
    );
}

#[test]
fn truncated_reports_the_missing_field_at_the_end_of_the_line() {
    let e = err("truncated.rep", TRUNCATED);
    assert_eq!((e.line(), e.column()), (1, 53));
    let msg = e.to_string();
    assert!(
        msg.starts_with(
            "truncated.rep:1:53: missing longitude seconds in \
             \"951212 050300.000 COLLINGWOOD @A 21 53 39.19 N 21 35\"; expected 15 fields: "
        ),
        "{msg}"
    );
    assert!(matches!(
        e,
        RepError::MissingField {
            field: "longitude seconds",
            ..
        }
    ));
}

#[test]
fn error_columns_for_other_fields() {
    let base = "951212 050000.000 NELSON @C 22 11 10.63 N 21 41 52.37 W 269.7 2.0 0";
    let cases = [
        (
            base.replace("22 11", "22 75"),
            "latitude minutes",
            32,
            "0–59",
        ),
        (
            base.replace("10.63", "60.5"),
            "latitude seconds",
            35,
            "0–59",
        ),
        (
            base.replace(" N ", " X "),
            "latitude hemisphere",
            41,
            "N or S",
        ),
        (
            base.replace("21 41", "181 41"),
            "longitude degrees",
            43,
            "0–180",
        ),
        (
            base.replace(" W ", " E2 "),
            "longitude hemisphere",
            55,
            "E or W",
        ),
        (
            base.replace("269.7", "x"),
            "course",
            57,
            "a number of degrees",
        ),
        (
            base.replace("2.0", "fast"),
            "speed",
            63,
            "a number of knots",
        ),
        (
            base.replace("050000.000", "056000.000"),
            "minute",
            10,
            "00–59",
        ),
        (base.replace("050000.000", "250000.000"), "hour", 8, "00–23"),
        (
            base.replace("050000.000", "05000a"),
            "time",
            8,
            "HHMMSS or HHMMSS.sss",
        ),
        (
            base.replace("951212", "950230"),
            "day",
            5,
            "01–28 for 1995-02",
        ),
        (
            base.replace("951212", "95121"),
            "date",
            1,
            "YYMMDD or YYYYMMDD",
        ),
    ];
    for (line, field, column, expected) in cases {
        let text = format!(";; header\n\n{line}\n");
        match err("x.rep", &text) {
            RepError::InvalidField {
                line: 3,
                column: c,
                field: f,
                expected: e,
                ..
            } => {
                assert_eq!((f, c, e.as_str()), (field, column, expected), "{line}");
            }
            other => panic!("{line}: {other}"),
        }
    }
    let over = base.replace("22 11 10.63", "90 0 0.5");
    let e = err("x.rep", &over);
    assert!(
        e.to_string()
            .starts_with("x.rep:1:29: invalid latitude \"90 0 0.5\""),
        "{e}"
    );
}

#[test]
fn any_error_aborts_the_whole_file() {
    let text = format!("{BOAT1}\n951212 050000.000 NELSON @C 22 11 10.63 N\n");
    let e = err("boat1.rep", &text);
    assert_eq!(e.line(), 404);
    assert!(matches!(
        e,
        RepError::MissingField {
            field: "longitude degrees",
            ..
        }
    ));
}

/// Every error quotes at most 200 bytes of the offending text (a token and the line around
/// it), whatever the size of the line, and still names the line and column.
#[test]
fn a_huge_line_is_quoted_clipped_with_its_line_and_column() {
    let first = "951212 050000.000 NELSON @C 22 11 10.63 N 21 41 52.37 W 269.7 2.0 0";
    for fill in ["\0", "x", "é"] {
        let huge = fill.repeat(1_000_000);
        let cases = [
            // One token as long as the line: an invalid date.
            (huge.clone(), "2:1: invalid date"),
            // A huge track name, then nothing: the symbol is missing.
            (format!("951212 050000 {huge}"), ": missing symbology"),
            // An unclosed quote: the rest of the line is the offending text.
            (
                format!("951212 050000 \"{huge}"),
                "2:15: invalid track name",
            ),
            // A huge depth at the end of an otherwise good line.
            (
                format!("{} {huge}", first.trim_end_matches(" 0")),
                ": invalid depth",
            ),
        ];
        for (line, head) in cases {
            let e = err("big.rep", &format!("{first}\n{line}\n"));
            let msg = e.to_string();
            assert!(
                msg.contains(head),
                "{fill:?} {head}: {}",
                &msg[..msg.len().min(300)]
            );
            assert_eq!(e.line(), 2);
            // 200 bytes of text, each NUL escaped as `\0`, plus the fixed words.
            let limit = if fill == "\0" { 700 } else { 450 };
            assert!(
                msg.len() <= limit,
                "{fill:?} {head}: {} bytes: {}",
                msg.len(),
                &msg[..msg.len().min(600)]
            );
            let column = e.column();
            let cut = e.to_string();
            assert!(cut.starts_with(&format!("big.rep:2:{column}: ")), "{cut}");
        }
    }
}

/// The line kinds the importer skips are reported by keyword: a keyword is clipped, and a file
/// of a million made-up kinds keeps a bounded list (each new kind was a linear search).
#[test]
fn unhandled_keywords_are_clipped_and_their_kinds_bounded() {
    let text = format!(";{}: 1\n", "A".repeat(1_000_000));
    let import = parse_rep("k.rep", &text).unwrap();
    assert_eq!(import.unhandled.len(), 1);
    assert!(
        import.unhandled[0].keyword.len() <= 260,
        "{}",
        import.unhandled[0].keyword.len()
    );
    assert!(import.unhandled[0].to_string().len() <= 400);
    let many: String = (0..50_000).map(|i| format!(";K{i}: x\n")).collect();
    let import = parse_rep("k.rep", &many).unwrap();
    assert!(import.unhandled.len() <= 101, "{}", import.unhandled.len());
    let total: usize = import.unhandled.iter().map(|u| u.count).sum();
    assert_eq!(total, 50_000, "every skipped line is still counted");
}

#[test]
fn long_lines_are_shortened_in_messages() {
    let label = "word ".repeat(100);
    let line = format!("951212 050000.000 NELSON @C 22 11 10.63 N 21 41 52.37 W x 2.0 0 {label}");
    let msg = err("x.rep", &line).to_string();
    assert!(msg.contains("W x ...\"; expected"), "{msg}");
    let quote = "951212 050000 \"NEVER CLOSED @C 22 11 10.63 N 21 41 52.37 W 1 2 0";
    let e = err("x.rep", quote);
    assert_eq!(e.column(), 15);
    assert!(e.to_string().contains("a closing double quote"));
}

// ---------------------------------------------------------------- position-line variants

#[test]
fn position_line_variants() {
    let text = "\
\u{feff};; variants\r\n\
\r\n\
20240115 093000.5 \"HMS Two Words\" VC 50 15.5 0 N 4 7.25 0 W 45 12.5 NaN label one // note\r\n\
20240115 093100 \"HMS Two Words\" VC 50 15 30 N004 07 15 W 45 12.5 10\r\n\
\t050115 000000.123456 A @Q 0 0 0 S 180 0 0 E 0 0 -5\n";
    let import = parse_rep("v.rep", text).unwrap();
    assert_eq!(import.position_count, 3);
    let t = &import.features()[0];
    assert_eq!(t["id"], "track-hms-two-words");
    assert_eq!(t["properties"]["style"]["line"]["color"], "#FF0000");
    let positions = t["properties"]["positions"].as_array().unwrap();
    assert_eq!(
        positions[0],
        json!({"time": "2024-01-15T09:30:00.500+00:00", "course": 45.0, "speed": 12.5})
    );
    assert_eq!(positions[1]["depth"], 10.0);
    let coords = t["geometry"]["coordinates"].as_array().unwrap();
    assert_eq!(
        coord(&coords[0]),
        [-(4.0 + 7.25 / 60.0), 50.0 + 15.5 / 60.0]
    );
    assert_eq!(
        coord(&coords[1]),
        [
            -(4.0 + 7.0 / 60.0 + 15.0 / 3600.0),
            50.0 + 15.0 / 60.0 + 30.0 / 3600.0
        ]
    );
    assert_eq!(
        t["properties"]["position_style_overrides"],
        json!([{"label": "label one // note"}, null])
    );
    let a = &import.features()[1];
    assert_eq!(
        a["properties"]["start_time"],
        "2005-01-15T00:00:00.123456+00:00"
    );
    assert_eq!(a["properties"]["style"]["line"]["color"], "#000000");
    // A lone position is repeated so the LineString has two points.
    assert_eq!(
        a["geometry"]["coordinates"],
        json!([[180.0, -0.0], [180.0, -0.0]])
    );
    assert_eq!(a["properties"]["positions"].as_array().unwrap().len(), 2);
    assert_eq!(a["properties"]["positions"][0]["depth"], -5.0);
    let bbox = import.bbox.unwrap();
    let expected = [-(4.0 + 7.25 / 60.0), 0.0, 180.0, 50.0 + 15.5 / 60.0];
    for (a, b) in bbox.iter().zip(expected) {
        assert!((a - b).abs() < 1e-12, "{bbox:?}");
    }
}

#[test]
fn positions_are_sorted_by_time_and_tracks_keep_first_seen_order() {
    let text = "\
951212 050200 B @A 1 0 0 N 1 0 0 E 0 0 0\n\
951212 050100 A @B 2 0 0 N 2 0 0 E 0 0 0\n\
951212 050000 B @C 3 0 0 N 3 0 0 E 0 0 0\n";
    let import = parse_rep("t.rep", text).unwrap();
    let features = import.features();
    let ids: Vec<&str> = features.iter().map(|f| f["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["track-b", "track-a"]);
    let b = &features[0];
    assert_eq!(
        b["geometry"]["coordinates"],
        json!([[3.0, 3.0], [1.0, 1.0]])
    );
    assert_eq!(b["properties"]["start_time"], "1995-12-12T05:00:00+00:00");
    assert_eq!(b["properties"]["end_time"], "1995-12-12T05:02:00+00:00");
    // The colour comes from the track's first line in the file.
    assert_eq!(b["properties"]["style"]["line"]["color"], "#0000FF");
}

#[test]
fn ids_are_unique_and_deterministic() {
    let text = "\
951212 050000 NELSON @A 1 0 0 N 1 0 0 E 0 0 0\n\
951212 050000 Nelson @A 1 0 0 N 1 0 0 E 0 0 0\n\
951212 050000 nelson-2 @A 1 0 0 N 1 0 0 E 0 0 0\n\
951212 050000 \"!!!\" @A 1 0 0 N 1 0 0 E 0 0 0\n\
;NARRATIVE: 951212 050000 Nelson hello\n\
;TEXT: @A 1 0 0 N 1 0 0 E hi\n\
;SENSOR: 951212 050000 GHOST @A NULL 10 NULL sonar\n";
    let a = parse_rep("t.rep", text).unwrap();
    let b = parse_rep("t.rep", text).unwrap();
    let features = a.features();
    assert_eq!(
        serde_json::to_string(&features).unwrap(),
        serde_json::to_string(&b.features()).unwrap()
    );
    let ids: Vec<&str> = features.iter().map(|f| f["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        [
            "track-nelson",
            "track-nelson-2",
            "track-nelson-2-2",
            "track-unnamed",
            "narrative-1",
            "shape-1",
            "sensor-ghost"
        ]
    );
    assert_eq!(ids.iter().collect::<HashSet<_>>().len(), ids.len());
    assert_eq!(features[4]["properties"]["track_id"], "track-nelson-2");
}

#[test]
fn unknown_commands_and_comments_are_skipped() {
    let text = "\
;; a comment\n\
; another\n\
;TA_COG_ABS: whatever 1 2 3\n\
;TRACKSPLIT 951212 051000.000 NELSON\n\
   \n";
    let import = parse_rep("t.rep", text).unwrap();
    assert!(import.features().is_empty());
    assert_eq!(import.bbox, None);
    assert_eq!(import.time_span, None);
    assert!(parse_rep("empty.rep", "").unwrap().features().is_empty());
}

// ---------------------------------------------------------------- annotations

#[test]
fn circle() {
    let f = one_shape(";CIRCLE: @BA10 21.8 0 0 N 21.0 0 0 W 2000 test circle");
    assert_eq!(f["id"], "shape-1");
    assert_eq!(kind(&f), "CIRCLE");
    assert_eq!(
        f["geometry"],
        json!({"type": "Point", "coordinates": [-21.0, 21.8]})
    );
    assert_eq!(f["properties"]["center"], json!([-21.0, 21.8]));
    assert_eq!(f["properties"]["radius"], 2000.0 * 0.9144);
    assert_eq!(f["properties"]["label"], "test circle");
    assert_eq!(
        f["properties"]["style"],
        json!({"color": "#00FF00", "weight": 1.0, "dash_array": "2, 4"})
    );
}

#[test]
fn line_rect_poly_polyline() {
    let line = one_shape(";LINE: @B 20 50 0 N 21 10 0 W 22 0 0 N 21 10 0 W test line");
    assert_eq!(kind(&line), "LINE");
    let c = &line["geometry"]["coordinates"];
    assert_eq!(coord(&c[0]), [-(21.0 + 10.0 / 60.0), 20.0 + 50.0 / 60.0]);
    assert_eq!(coord(&c[1]), [-(21.0 + 10.0 / 60.0), 22.0]);
    assert_eq!(line["properties"]["style"], json!({"color": "#00FF00"}));

    let rect = one_shape(";RECT: @A 21.4 0 0 N 21.5 0 0 W 21.5 0 0 N 21.6 0 0 W test rectangle");
    assert_eq!(kind(&rect), "RECTANGLE");
    assert_eq!(rect["geometry"]["type"], "Polygon");
    assert_eq!(
        rect["geometry"]["coordinates"],
        json!([[
            [-21.5, 21.4],
            [-21.6, 21.4],
            [-21.6, 21.5],
            [-21.5, 21.5],
            [-21.5, 21.4]
        ]])
    );
    assert_eq!(rect["properties"]["label"], "test rectangle");

    let poly = one_shape(
        ";POLY: @GA32 21.9 0 0 N 21.5 0 0 W 22 0 0 N 21.8 0 0 W 22.1 0 0 N 21.5 0 0 W test\\npoly",
    );
    assert_eq!(kind(&poly), "POLY");
    assert_eq!(poly["properties"]["vertex_count"], 3);
    assert_eq!(poly["properties"]["label"], "test\npoly");
    assert_eq!(
        poly["properties"]["style"],
        json!({"color": "#800080", "weight": 3.0, "dash_array": "2, 4",
               "fill_color": "#800080", "fill_opacity": 0.3})
    );
    let ring = poly["geometry"]["coordinates"][0].as_array().unwrap();
    assert_eq!(ring.len(), 4);
    assert_eq!(ring[0], ring[3]);

    let pl = one_shape(";POLYLINE: @C 1 0 0 N 1 0 0 E 2 0 0 N 2 0 0 E 3 0 0 N 3 0 0 E");
    assert_eq!(kind(&pl), "POLYLINE");
    assert_eq!(pl["geometry"]["type"], "LineString");
    assert_eq!(
        pl["geometry"]["coordinates"],
        json!([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]])
    );
    assert!(pl["properties"].get("label").is_none());

    let e = err(
        "p.rep",
        ";POLY: @A 1 0 0 N 1 0 0 E 2 0 0 N 2 0 0 E only two",
    );
    assert_eq!(e.column(), 43);
    assert!(e.to_string().contains("at least 3 vertices"), "{e}");
}

#[test]
fn vector() {
    let f = one_shape(";VECTOR: @C 21.6 12 0 N 21.5 11 0 W 5000 270 test vector");
    assert_eq!(kind(&f), "VECTOR");
    let origin = [-(21.5 + 11.0 / 60.0), 21.6 + 12.0 / 60.0];
    assert_eq!(coord(&f["properties"]["origin"]), origin);
    assert_eq!(f["properties"]["range"], 5000.0 * 0.9144);
    assert_eq!(f["properties"]["bearing"], 270.0);
    let end = coord(&f["geometry"]["coordinates"][1]);
    // Due west: same latitude (to first order), 4572 m further west.
    let expected_dlon = 4572.0 / (6_371_008.8 * origin[1].to_radians().cos()) * 57.295_779_5;
    assert!((end[1] - origin[1]).abs() < 1e-4, "{end:?}");
    assert!(
        ((origin[0] - end[0]) - expected_dlon).abs() < 1e-6,
        "{end:?}"
    );
    assert_eq!(f["properties"]["style"]["color"], "#FF0000");
}

#[test]
fn text_timetext_periodtext_ellipse() {
    let text = "\
;TEXT: @E 21.7 0 0 N 21.5 0 0 W test text\n\
;TEXT: CA[LAYER=Special_Layer] 21.42 0 0 N 21.88 0 0 W Other layer\n\
;TIMETEXT: @C 951212 050200 21.7 0 0 N 21.7 0 0 W test timetext\n\
;PERIODTEXT: @C 951212 050200 951212 060200 21.7 0 0 N 21.2 0 0 W test period 1\n\
;ELLIPSE: @F[LAYER=TUAs] 951212 055200 21.4 0 0 N 21.1 0 0 W 65.0 5000 3000 test ellipse\n";
    let import = parse_rep("t.rep", text).unwrap();
    let f = &import.features();
    assert_eq!(f.len(), 5);
    assert_eq!(kind(&f[0]), "TEXT");
    assert_eq!(f[0]["properties"]["text"], "test text");
    assert_eq!(f[0]["geometry"]["coordinates"], json!([-21.5, 21.7]));
    assert_eq!(f[0]["properties"]["style"]["color"], "#FF00FF");
    assert_eq!(f[1]["properties"]["style"]["color"], "#0000FF");
    assert_eq!(kind(&f[2]), "TIMETEXT");
    assert_eq!(f[2]["properties"]["time"], "1995-12-12T05:02:00+00:00");
    assert_eq!(kind(&f[3]), "PERIODTEXT");
    assert_eq!(
        f[3]["properties"]["start_time"],
        "1995-12-12T05:02:00+00:00"
    );
    assert_eq!(f[3]["properties"]["end_time"], "1995-12-12T06:02:00+00:00");
    assert_eq!(f[3]["properties"]["text"], "test period 1");
    assert_eq!(kind(&f[4]), "ELLIPSE");
    assert_eq!(f[4]["properties"]["orientation"], 65.0);
    assert_eq!(f[4]["properties"]["maxima"], 5000.0 * 0.9144);
    assert_eq!(f[4]["properties"]["minima"], 3000.0 * 0.9144);
    assert_eq!(f[4]["properties"]["label"], "test ellipse");
    assert_eq!(f[4]["properties"]["style"]["color"], "#FFA500");
    let ids: Vec<&str> = f.iter().map(|x| x["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["shape-1", "shape-2", "shape-3", "shape-4", "shape-5"]);
    let (start, end) = import.time_span.unwrap();
    assert_eq!(fmt_time(&start), "1995-12-12T05:02:00+00:00");
    assert_eq!(fmt_time(&end), "1995-12-12T06:02:00+00:00");
}

#[test]
fn tracks_then_narratives_then_shapes() {
    let text = "\
;TEXT: @E 21.7 0 0 N 21.5 0 0 W first in file\n\
;NARRATIVE: 951212 050000 B hello\n\
951212 050000 B @A 1 0 0 N 1 0 0 E 0 0 0\n";
    let import = parse_rep("t.rep", text).unwrap();
    let features = import.features();
    let kinds: Vec<&str> = features.iter().map(kind).collect();
    assert_eq!(kinds, ["TRACK", "NARRATIVE", "TEXT"]);
    assert_eq!(features[1]["properties"]["track_id"], "track-b");
    assert_eq!(import.bbox, Some([-21.5, 1.0, 1.0, 21.7]));
}

#[test]
fn annotation_errors() {
    let cases = [
        (";CIRCLE: @D 21.8 0 0 N 21.0 0 0 W", "radius", 34),
        (";CIRCLE: @D 21.8 0 0 N 21.0 0 0 W -5 x", "radius", 35),
        (";VECTOR: @C 21.6 12 0 N 21.5 11 0 W 5000", "bearing", 41),
        (";TEXT:", "symbology", 7),
        (";TIMETEXT: @C 951312 050200 1 0 0 N 1 0 0 W x", "month", 17),
        (";NARRATIVE: 951212", "time", 19),
    ];
    for (line, field, column) in cases {
        let e = err("a.rep", line);
        let f = match &e {
            RepError::InvalidField { field, .. } | RepError::MissingField { field, .. } => *field,
        };
        assert_eq!((f, e.column()), (field, column), "{line}: {e}");
    }
}

// ---------------------------------------------------------------- sensors

#[test]
fn sensors_attach_to_their_host_track() {
    let text = "\
951212 050000 NONSUCH @A 1 0 0 N 1 0 0 W 0 0 0\n\
;SENSOR2: 951212 050200.000 NONSUCH @B NULL 59.3 300.8 49.96 NULL Contact_bearings 0414\n\
;SENSOR: 951212 050100 NONSUCH @C 1 0 0 N 1 0 0 W 45 1000 \"Towed array\" first // c1\n\
;SENSOR2: 951212 050100.000 NONSUCH @B NULL 58.0 NULL NULL 2000 Contact_bearings\n\
;SENSOR: 951212 050300 \"OTHER SHIP\" @D NULL 10 NULL sonar\n";
    let import = parse_rep("s.rep", text).unwrap();
    let features = import.features();
    let kinds: Vec<&str> = features.iter().map(kind).collect();
    assert_eq!(kinds, ["TRACK", "SENSOR"]);
    let sensors = &features[0]["properties"]["sensors"];
    assert_eq!(
        sensors,
        &json!([
            {"name": "Contact_bearings", "color": "#00FF00", "contacts": [
                {"time": "1995-12-12T05:01:00+00:00", "bearing": 58.0, "range": 2000.0 * 0.9144},
                {"time": "1995-12-12T05:02:00+00:00", "bearing": 59.3,
                 "ambiguous_bearing": 300.8, "frequency": 49.96, "label": "0414"}
            ]},
            {"name": "Towed array", "color": "#FF0000", "contacts": [
                {"time": "1995-12-12T05:01:00+00:00", "bearing": 45.0, "range": 1000.0 * 0.9144,
                 "origin": [-1.0, 1.0], "label": "first", "comment": "c1"}
            ]}
        ])
    );
    let orphan = &features[1];
    assert_eq!(orphan["id"], "sensor-other-ship");
    assert_eq!(orphan["properties"]["platform_id"], "OTHER SHIP");
    assert_eq!(orphan["properties"]["sensors"][0]["name"], "sonar");
    let (_, end) = import.time_span.unwrap();
    assert_eq!(fmt_time(&end), "1995-12-12T05:03:00+00:00");
}

#[test]
fn sensor_errors() {
    let e = err("s.rep", ";SENSOR: 951212 050100 H @C NULL 45 1000");
    assert!(
        e.to_string()
            .starts_with("s.rep:1:41: missing sensor name in "),
        "{e}"
    );
    let e = err(
        "s.rep",
        ";SENSOR2: 951212 050100 H @C NULL abc NULL NULL NULL s",
    );
    assert_eq!(e.column(), 35);
}

// ---------------------------------------------------------------- helpers

#[test]
fn slugs() {
    assert_eq!(slug("NELSON"), "nelson");
    assert_eq!(slug("HMS  Nelson (F-12)"), "hms-nelson-f-12");
    assert_eq!(slug("--"), "unnamed");
    assert_eq!(slug("Ærø 2"), "r-2");
}

#[test]
fn colours() {
    use super::{DEFAULT_COLOUR, colour_for_letter};
    assert_eq!(colour_for_letter(b'A'), "#0000FF");
    assert_eq!(colour_for_letter(b'c'), "#FF0000");
    assert_eq!(colour_for_letter(b'@'), "#FFFFFF");
    assert_eq!(colour_for_letter(b'Q'), "#000000");
    assert_eq!(colour_for_letter(b'Z'), DEFAULT_COLOUR);
}

#[test]
fn platform_records_skip_missing_fields() {
    let p = PlatformRecord {
        id: "NELSON".into(),
        nationality: Some("GB".into()),
        ..PlatformRecord::default()
    };
    assert_eq!(
        serde_json::to_value(&p).unwrap(),
        json!({"id": "NELSON", "nationality": "GB"})
    );
}

fn chrono_rfc3339(t: &DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::AutoSi, false)
}

#[test]
fn time_format_examples() {
    let t = Utc.with_ymd_and_hms(1995, 12, 12, 5, 0, 0).unwrap();
    assert_eq!(fmt_time(&t), "1995-12-12T05:00:00+00:00");
    assert_eq!(fmt_time(&t), t.to_rfc3339_opts(SecondsFormat::Secs, false));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn fmt_time_matches_chrono(secs in 0i64..253_402_300_799, nanos in 0u32..1_000_000_000, pick in 0u8..4) {
        let nanos = match pick { 0 => 0, 1 => nanos / 1_000_000 * 1_000_000, 2 => nanos / 1000 * 1000, _ => nanos };
        let t = DateTime::from_timestamp(secs, nanos).unwrap();
        prop_assert_eq!(fmt_time(&t), chrono_rfc3339(&t));
    }

    #[test]
    fn lines_match_std(text in "[a\\r\\n é]{0,40}", long in "[x\\n]{0,100}") {
        for t in [text.as_str(), long.as_str()] {
            let ours: Vec<&str> = super::lex::lines(t).collect();
            let std: Vec<&str> = t.lines().collect();
            prop_assert_eq!(ours, std);
        }
    }

    #[test]
    fn parse_f64_matches_std(s in "[+-]?[0-9]{0,18}(\\.[0-9]{0,18})?") {
        prop_assert_eq!(parse_f64(&s), s.parse::<f64>().ok());
    }

    #[test]
    fn parse_f64_matches_std_on_decimals(v in -1.0e6f64..1.0e6, places in 0usize..8) {
        let s = format!("{v:.places$}");
        prop_assert_eq!(parse_f64(&s), s.parse::<f64>().ok());
    }

    #[test]
    fn valid_position_lines_round_trip(
        year in 1950i32..2050, month in 1u32..=12, day in 1u32..=28,
        hour in 0u32..24, minute in 0u32..60, second in 0u32..60, millis in 0u32..1000,
        four_digit_year: bool,
        lat_d in 0u32..90, lat_m in 0u32..60, lat_s in 0u32..6000, south: bool,
        lon_d in 0u32..180, lon_m in 0u32..60, lon_s in 0u32..6000, west: bool,
        course in 0u32..3600, speed in 0u32..500, depth in 0u32..5000,
        gap in "[ \t]{1,3}",
    ) {
        let date = if four_digit_year {
            format!("{year:04}{month:02}{day:02}")
        } else {
            format!("{:02}{month:02}{day:02}", year % 100)
        };
        let lat_sec = format!("{}.{:02}", lat_s / 100, lat_s % 100);
        let lon_sec = format!("{}.{:02}", lon_s / 100, lon_s % 100);
        let fields = [
            date,
            format!("{hour:02}{minute:02}{second:02}.{millis:03}"),
            "TRK".to_owned(),
            "@A".to_owned(),
            lat_d.to_string(), lat_m.to_string(), lat_sec.clone(),
            if south { "S" } else { "N" }.to_owned(),
            format!("{lon_d:03}"), lon_m.to_string(), lon_sec.clone(),
            if west { "W" } else { "E" }.to_owned(),
            format!("{}.{}", course / 10, course % 10),
            format!("{}.{}", speed / 10, speed % 10),
            depth.to_string(),
        ];
        let line = fields.join(&gap);
        let import = parse_rep("p.rep", &line).unwrap();
        let c = coord(&import.features()[0]["geometry"]["coordinates"][0]);
        let lat = f64::from(lat_d) + f64::from(lat_m) / 60.0 + lat_sec.parse::<f64>().unwrap() / 3600.0;
        let lon = f64::from(lon_d) + f64::from(lon_m) / 60.0 + lon_sec.parse::<f64>().unwrap() / 3600.0;
        let lat = if south { -lat } else { lat };
        let lon = if west { -lon } else { lon };
        prop_assert_eq!(c, [lon, lat]);
        prop_assert!((-90.0..=90.0).contains(&lat) && (-180.0..=180.0).contains(&lon));
        let t = Utc.with_ymd_and_hms(year, month, day, hour, minute, second).unwrap()
            + chrono::Duration::milliseconds(i64::from(millis));
        prop_assert_eq!(import.time_span, Some((t, t)));
        let pos = &import.features()[0]["properties"]["positions"][0];
        prop_assert_eq!(pos["time"].as_str().unwrap(), chrono_rfc3339(&t));
        prop_assert_eq!(pos["course"].as_f64().unwrap(), f64::from(course) / 10.0);
        prop_assert_eq!(pos["depth"].as_f64().unwrap(), f64::from(depth));
    }

    #[test]
    fn junk_never_panics(text in "\\PC{0,200}") {
        let _ = parse_rep("junk.rep", &text);
    }

    #[test]
    fn mangled_lines_never_panic(
        prefix in prop::sample::select(vec![
            "", ";NARRATIVE:", ";NARRATIVE2:", ";TEXT:", ";CIRCLE:", ";LINE:", ";RECT:",
            ";POLY:", ";POLYLINE:", ";VECTOR:", ";ELLIPSE:", ";TIMETEXT:", ";PERIODTEXT:",
            ";SENSOR:", ";SENSOR2:",
        ]),
        tokens in prop::collection::vec(
            prop::sample::select(vec![
                "951212", "19951212", "050000.000", "0500", "\"A B\"", "\"open", "NELSON",
                "@C", "@BA12[LAYER=x]", "22", "11.5", "60", "91", "181", "N", "S", "E", "W",
                "N021", "NULL", "NaN", "-1", "1e309", "é", "//", "\t", "x",
            ]),
            0..24,
        ),
    ) {
        let line = format!("{prefix} {}", tokens.join(" "));
        let _ = parse_rep("m.rep", &line);
    }
}

// ---------------------------------------------------------------- throughput

/// A synthetic REP file of about `bytes` bytes: five interleaved tracks, a narrative every
/// 1,000 lines.
fn synthetic_rep(bytes: usize) -> String {
    let mut out = String::with_capacity(bytes + 200);
    let start = Utc.with_ymd_and_hms(2024, 3, 1, 0, 0, 0).unwrap();
    let mut i = 0u64;
    while out.len() < bytes {
        let t = start + chrono::Duration::seconds(i64::try_from(i / 5).unwrap());
        let track = ["NELSON", "COLLINGWOOD", "\"HMS DARING\"", "TRENT", "KENT"][(i % 5) as usize];
        let lat_s = (i % 6000) as f64 / 100.0;
        let lon_s = ((i * 7) % 6000) as f64 / 100.0;
        out.push_str(&format!(
            "{} {track} @{} 22 {:02} {lat_s:.2} N 021 {:02} {lon_s:.2} W {:.1} {:.1} {}\r\n",
            t.format("%y%m%d %H%M%S%.3f"),
            char::from(b'A' + (i % 5) as u8),
            (i / 6000) % 60,
            (i / 3000) % 60,
            (i % 3600) as f64 / 10.0,
            (i % 300) as f64 / 10.0,
            i % 200,
        ));
        if i.is_multiple_of(1000) {
            out.push_str(&format!(
                ";NARRATIVE: {} NELSON event number {i}\r\n",
                t.format("%y%m%d %H%M%S")
            ));
        }
        i += 1;
    }
    out
}

#[test]
fn parsing_in_pieces_gives_the_same_result() {
    let mixed = format!(
        "{BOAT1}\n{NARRATIVE}\n;TEXT: @E 21.7 0 0 N 21.5 0 0 W t1\n{BOAT2}\n\
         ;SENSOR: 951212 050100 NELSON @C NULL 45 1000 sonar a\n\
         ;CIRCLE: @D 21.8 0 0 N 21.0 0 0 W 2000 c\n\
         ;SENSOR: 951212 050000 NELSON @C NULL 40 1000 sonar b\n\
         951212 120000 LATE @K 1 0 0 N 1 0 0 E 0 0 0\n{}",
        synthetic_rep(50_000)
    );
    let whole = super::parse_in_pieces("m.rep", &mixed, 1).unwrap();
    for pieces in [2, 3, 7, 64, 5000] {
        let split = super::parse_in_pieces("m.rep", &mixed, pieces).unwrap();
        assert_eq!(
            serde_json::to_string(&split.features()).unwrap(),
            serde_json::to_string(&whole.features()).unwrap(),
            "{pieces} pieces"
        );
        assert_eq!(split.platforms, whole.platforms);
        assert_eq!(split.bbox, whole.bbox);
        assert_eq!(split.time_span, whole.time_span);
        assert_eq!(split.position_count, whole.position_count);
    }
    let bad = format!("{mixed}951212 050000 X @A 1 0 0 N 1 0 0 Q 0 0 0\n{BOAT1}");
    let expected_line = mixed.lines().count() + 1;
    for pieces in [1, 2, 5, 100] {
        let e = super::parse_in_pieces("m.rep", &bad, pieces).unwrap_err();
        assert_eq!(
            (e.line(), e.column()),
            (expected_line, 34),
            "{pieces} pieces: {e}"
        );
    }
}

#[test]
fn split_at_lines_keeps_whole_lines() {
    let text = "a\nbb\r\nccc\n\ndddd";
    for pieces in 1..10 {
        let runs = super::split_at_lines(text, pieces);
        assert!(runs.len() <= pieces.max(1));
        assert_eq!(runs.concat(), text);
        for run in &runs[..runs.len() - 1] {
            assert!(run.ends_with('\n'));
        }
    }
    assert!(super::split_at_lines("", 4).is_empty());
}

#[test]
fn synthetic_file_parses() {
    let text = synthetic_rep(200_000);
    let import = parse_rep("synthetic.rep", &text).unwrap();
    assert_eq!(of_kind(&import.features(), "TRACK").len(), 5);
    let total: usize = of_kind(&import.features(), "TRACK")
        .iter()
        .map(|f| f["properties"]["positions"].as_array().unwrap().len())
        .sum();
    assert_eq!(total, import.position_count);
}

/// CPU time of the whole process, all threads (Linux; 10 ms resolution).
fn process_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let rest = stat.get(stat.rfind(')')? + 2..)?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

/// `cargo test -p toolgate-plot --release --ignore-rust-version -- --ignored --nocapture rep`
///
/// Prints wall-clock and CPU throughput of parsing plus writing the GeoJSON; asserts on CPU time
/// (all threads), which does not depend on what else the machine is running.
#[test]
#[ignore = "throughput check; run in release mode"]
fn throughput_100mb() {
    let text = synthetic_rep(100 * 1024 * 1024);
    let mb = text.len() as f64 / 1e6;
    let mut best_cpu = f64::INFINITY;
    for _ in 0..5 {
        let cpu0 = process_cpu_seconds();
        let started = std::time::Instant::now();
        // What `toolgate import` does: parse, then the pretty GeoJSON in memory.
        let import = parse_rep("synthetic.rep", &text).unwrap();
        let json = import
            .feature_collection_bytes(super::JsonLayout::Compact)
            .unwrap();
        let wall = started.elapsed().as_secs_f64();
        let cpu1 = process_cpu_seconds();
        drop((import, json));
        let wall_with_drop = started.elapsed().as_secs_f64();
        let cpu2 = process_cpu_seconds();
        let (Some(cpu0), Some(cpu1), Some(cpu2)) = (cpu0, cpu1, cpu2) else {
            eprintln!(
                "REP import of {mb:.1} MB: {wall:.3} s wall ({:.1} MB/s)",
                mb / wall
            );
            best_cpu = best_cpu.min(wall);
            continue;
        };
        eprintln!(
            "REP import of {mb:.1} MB: {wall:.3} s wall ({:.1} MB/s), {:.2} s CPU ({:.1} MB/s); \
             drop of the result: {:.3} s wall, {:.2} s CPU; import + drop: {:.1} MB/s CPU",
            mb / wall,
            cpu1 - cpu0,
            mb / (cpu1 - cpu0),
            wall_with_drop - wall,
            cpu2 - cpu1,
            mb / (cpu2 - cpu0),
        );
        best_cpu = best_cpu.min(cpu1 - cpu0);
    }
    eprintln!("best: {:.1} MB/s per CPU second", mb / best_cpu);
    if !cfg!(debug_assertions) {
        assert!(mb / best_cpu >= 50.0, "{:.1} MB/s", mb / best_cpu);
    }
}

// ---- no silent loss (issue 17): unhandled kinds, no-time files, Windows-1252, NaN ----

/// A Debrief sensor arc: two sectors relative to the host's heading, ranges in yards.
const ARC: &str =
    ";SENSORARC: 951212 050000 951212 060000 NELSON @B -75 35 0 1000 150 210 100 2000 \"fwd dyn\"";

#[test]
fn unhandled_line_kinds_are_reported_with_count_and_first_line() {
    let text = format!(
        ";; a comment\n\
         ; another comment\n\
         951212 050000 NELSON @A 1 0 0 N 1 0 0 E 0 0 0\n\
         {ARC}\n\
         ;TA_MODULES: @A 1 0 0 N 1 0 0 E 2 0 0 N 2 0 0 E 951212 050000 951212 060000\n\
         {ARC}\n\
         ;tracksplit whatever\n\
         ;PLANNING_ORIGIN: 951212 050000 NELSON 10 20 spokes\n\
         ;TA_FORE_AFT: x\n;TA_COG_REL: x\n;CREATE_SEGMENT: x\n;NEWTHING x\n"
    );
    let import = parse_rep("t.rep", &text).unwrap();
    let got: Vec<(&str, usize, usize)> = import
        .unhandled
        .iter()
        .map(|u| (u.keyword.as_str(), u.count, u.first_line))
        .collect();
    assert_eq!(
        got,
        [
            (";TA_MODULES", 1, 5),
            (";TRACKSPLIT", 1, 7),
            (";PLANNING_ORIGIN", 1, 8),
            (";TA_FORE_AFT", 1, 9),
            (";TA_COG_REL", 1, 10),
            (";CREATE_SEGMENT", 1, 11),
            (";NEWTHING", 1, 12),
        ]
    );
    assert_eq!(
        import.unhandled[0].to_string(),
        "1 line(s) of kind ;TA_MODULES not imported (first at line 5)"
    );
    assert_eq!(import.tracks.len(), 1);
    assert_eq!(import.sensor_arcs.len(), 2);
}

#[test]
fn unhandled_report_is_the_same_when_parsed_in_pieces() {
    let mut text = String::new();
    for i in 0..200 {
        text.push_str(&format!(
            "951212 05{:02}00 NELSON @A 1 0 0 N 1 0 0 E 0 0 0\n",
            i % 60
        ));
        if i % 50 == 7 {
            text.push_str(";TA_COG_ABS: x\n");
        }
    }
    text.push_str(";TRACKSPLIT late\n");
    let one = super::parse_in_pieces("t.rep", &text, 1).unwrap();
    let four = super::parse_in_pieces("t.rep", &text, 4).unwrap();
    assert_eq!(one.unhandled, four.unhandled);
    assert_eq!(one.unhandled[0].count, 4);
    assert_eq!(one.unhandled[0].first_line, 9);
    assert_eq!(one.unhandled[1].first_line, text.lines().count());
}

#[test]
fn a_file_of_only_unhandled_lines_has_no_features_and_no_times() {
    let text = ";TA_MODULES: x\n".repeat(47);
    let import = parse_rep("dyn.rep", &text).unwrap();
    assert_eq!(import.feature_count(), 0);
    assert_eq!(import.time_span, None);
    assert_eq!(import.unhandled.len(), 1);
    assert_eq!(import.unhandled[0].count, 47);
    assert_eq!(import.unhandled[0].first_line, 1);
}

#[test]
fn sensor_arcs_become_sensor_arc_features_dated_by_their_own_times() {
    let text = format!(
        "951212 050000 NELSON @A 1 0 0 N 1 0 0 E 0 0 0\n{}\
         ;SENSORARC: NULL 951212 070000.5 GHOST @A 0 360 0 500 towed\n",
        format!("{ARC}\n").repeat(47)
    );
    let import = parse_rep("arcs.rep", &text).unwrap();
    assert!(import.unhandled.is_empty(), "{:?}", import.unhandled);
    assert_eq!(import.sensor_arcs.len(), 48);
    let t = |s: &str| DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc);
    assert_eq!(
        import.time_span,
        Some((t("1995-12-12T05:00:00Z"), t("1995-12-12T07:00:00.5Z")))
    );
    let features = import.features();
    let arcs = of_kind(&features, "SENSOR_ARC");
    assert_eq!(arcs.len(), 48);
    assert_eq!(
        arcs[0],
        &json!({
            "type": "Feature",
            "id": "sensorarc-1",
            "geometry": null,
            "properties": {
                "kind": "SENSOR_ARC",
                "track_name": "NELSON",
                "track_id": "track-nelson",
                "sensor_name": "fwd dyn",
                "color": "#00FF00",
                "start_time": "1995-12-12T05:00:00+00:00",
                "end_time": "1995-12-12T06:00:00+00:00",
                "arcs": [
                    {"left_bearing": -75.0, "right_bearing": 35.0, "min_range": 0.0, "max_range": 914.4},
                    {"left_bearing": 150.0, "right_bearing": 210.0, "min_range": 91.44, "max_range": 1828.8}
                ]
            }
        })
    );
    let last = &arcs[47]["properties"];
    assert!(last.get("start_time").is_none(), "{last}");
    assert_eq!(last["end_time"], "1995-12-12T07:00:00.500+00:00");
    assert!(last.get("track_id").is_none(), "{last}");
    // The streamed writer agrees with the Values.
    let streamed: Value = serde_json::from_slice(
        &import
            .feature_collection_bytes(super::JsonLayout::Compact)
            .unwrap(),
    )
    .unwrap();
    assert_eq!(streamed["features"].as_array().unwrap().len(), 49);
    assert_eq!(streamed["features"][1], *arcs[0]);
}

#[test]
fn malformed_sensor_arcs_are_errors_with_file_line_col() {
    for (line, expect) in [
        (
            ";SENSORARC: 951212 050000 951212 060000 NELSON @A -75 35 0",
            "s.rep:1:59: missing outer range",
        ),
        (
            ";SENSORARC: 951212 050000 951212 060000 NELSON @A NaN 35 0 1000 s",
            "s.rep:1:51: invalid left bearing \"NaN\"",
        ),
        (
            ";SENSORARC: 951212 050000 951212 060000 NELSON @A -75 35 0 -5 s",
            "s.rep:1:60: invalid outer range \"-5\"",
        ),
    ] {
        let e = err("s.rep", line).to_string();
        assert!(e.starts_with(expect), "{line}: {e}");
    }
}

#[test]
fn windows_1252_bytes_decode_and_round_trip_into_the_geojson() {
    // "café 45°" in Windows-1252 / Latin-1: é = 0xE9, ° = 0xB0 (invalid as UTF-8).
    let mut bytes = b";NARRATIVE: 951212 050000 NELSON caf".to_vec();
    bytes.extend([0xE9, b' ', b'4', b'5', 0xB0, b'\n']);
    bytes.extend(b";TEXT: @A 1 0 0 N 1 0 0 E \x93quoted\x94\n");
    assert!(std::str::from_utf8(&bytes).is_err());
    let (text, encoding) = super::decode_rep(&bytes);
    assert_eq!(encoding, super::TextEncoding::Windows1252);
    let import = parse_rep("latin.rep", &text).unwrap();
    let geojson = String::from_utf8(
        import
            .feature_collection_bytes(super::JsonLayout::Compact)
            .unwrap(),
    )
    .unwrap();
    let v: Value = serde_json::from_str(&geojson).unwrap();
    let features = v["features"].as_array().unwrap();
    assert_eq!(
        of_kind(features, "NARRATIVE")[0]["properties"]["text"],
        "café 45°"
    );
    // 0x93/0x94 are Windows-1252's curly quotes (Latin-1 would give C1 controls).
    assert!(geojson.contains("\u{201c}quoted\u{201d}"), "{geojson}");
}

#[test]
fn utf8_stays_the_default_encoding() {
    let bytes = ";NARRATIVE: 951212 050000 NELSON café 45°\n".as_bytes();
    let (text, encoding) = super::decode_rep(bytes);
    assert_eq!(encoding, super::TextEncoding::Utf8);
    assert!(text.contains("café 45°"));
}

#[test]
fn nan_and_infinities_in_sensor_fields_are_errors_with_file_line_col() {
    for (line, field, col) in [
        (
            ";SENSOR: 951212 050000 GHOST @A NULL NaN NULL sonar",
            "bearing",
            38,
        ),
        (
            ";SENSOR: 951212 050000 GHOST @A NULL inf NULL sonar",
            "bearing",
            38,
        ),
        (
            ";SENSOR: 951212 050000 GHOST @A NULL 10 nan sonar",
            "range",
            41,
        ),
        (
            ";SENSOR2: 951212 050000 GHOST @A NULL 10 NaN NULL NULL sonar",
            "ambiguous bearing",
            42,
        ),
        (
            ";SENSOR2: 951212 050000 GHOST @A NULL 10 NULL -Infinity NULL sonar",
            "frequency",
            47,
        ),
    ] {
        let text = format!("951212 050000 GHOST @A 1 0 0 N 1 0 0 E 0 0 0\n{line}\n");
        let e = err("s.rep", &text).to_string();
        assert!(
            e.starts_with(&format!("s.rep:2:{col}: invalid {field} ")),
            "{line}: {e}"
        );
    }
    // NULL and N/A still mean "no value", as in Debrief.
    let ok = "951212 050000 GHOST @A 1 0 0 N 1 0 0 E 0 0 0\n\
              ;SENSOR: 951212 050000 GHOST @A NULL N/A NULL sonar\n";
    assert!(parse_rep("s.rep", ok).is_ok());
}

// ---- every line kind (issue 17 item 1): counts per sample file and per kind ----

const EVERY_KIND: &str = include_str!("../tests/fixtures/rep/kinds/every_kind.rep");

fn counts(import: &super::RepImport) -> Vec<(&'static str, usize)> {
    import.kind_counts()
}

/// A sample file, the feature counts per kind it must give, its positions and its contacts.
type SampleCase<'a> = (&'a str, &'a str, &'a [(&'a str, usize)], usize, usize);

#[test]
fn every_sample_file_has_its_feature_counts() {
    let cases: [SampleCase<'_>; 3] = [
        ("boat1.rep", BOAT1, &[("TRACK", 1)], 402, 0),
        ("boat2.rep", BOAT2, &[("TRACK", 1)], 403, 0),
        ("narrative.rep", NARRATIVE, &[("NARRATIVE", 19)], 0, 0),
    ];
    for (name, text, want, positions, contacts) in cases {
        let import = parse_rep(name, text).unwrap();
        assert_eq!(counts(&import), want, "{name}");
        assert_eq!(import.position_count, positions, "{name}");
        assert_eq!(import.contact_count(), contacts, "{name}");
        assert!(
            import.unhandled.is_empty(),
            "{name}: {:?}",
            import.unhandled
        );
        // Every kind is in the written GeoJSON as well.
        let fc: Value =
            serde_json::from_slice(&streamed(&import, super::JsonLayout::Compact)).unwrap();
        let features = fc["features"].as_array().unwrap();
        for (kind, n) in want {
            assert_eq!(of_kind(features, kind).len(), *n, "{name} {kind}");
        }
    }
}

#[test]
fn every_kind_file_imports_every_line_kind() {
    let import = parse_rep("every_kind.rep", EVERY_KIND).unwrap();
    assert_eq!(
        counts(&import),
        [
            ("TRACK", 2),
            ("NARRATIVE", 2),
            ("TEXT", 1),
            ("TIMETEXT", 1),
            ("PERIODTEXT", 1),
            ("CIRCLE", 1),
            ("ELLIPSE", 2),
            ("LINE", 1),
            ("RECTANGLE", 1),
            ("POLY", 1),
            ("POLYLINE", 1),
            ("VECTOR", 1),
            ("WHEEL", 1),
            ("BEARING", 1),
            ("SENSOR_ARC", 1),
            ("DYNAMIC_RECT", 2),
            ("DYNAMIC_CIRCLE", 1),
            ("DYNAMIC_POLY", 1),
            ("TMA_SOLUTION", 2),
            ("FORMAT", 3),
        ]
    );
    assert_eq!(import.contact_count(), 3);
    let nelson = &import.tracks[0];
    let names: Vec<&str> = nelson.sensors.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["Hull array", "Towed_array"]);
    // The one kind toolgate does not import is reported, with its line.
    let unhandled: Vec<(&str, usize, usize)> = import
        .unhandled
        .iter()
        .map(|u| (u.keyword.as_str(), u.count, u.first_line))
        .collect();
    assert_eq!(unhandled, [(";TA_COG_ABS", 1, 35)]);
    // The streamed GeoJSON is the features as values, for the new kinds too.
    let fc: Value = serde_json::from_slice(&streamed(&import, super::JsonLayout::Compact)).unwrap();
    assert_eq!(fc["features"], Value::Array(import.features()));
    assert_eq!(
        fc["features"].as_array().unwrap().len(),
        import.feature_count()
    );
}

#[test]
fn dynamic_shapes_are_time_bounded_until_their_next_state() {
    let import = parse_rep("every_kind.rep", EVERY_KIND).unwrap();
    let f = import.features();
    let zone = of_kind(&f, "DYNAMIC_RECT");
    assert_eq!(zone[0]["properties"]["name"], "Zone A");
    assert_eq!(
        zone[0]["properties"]["start_time"],
        "1995-12-12T05:00:00+00:00"
    );
    // The first state lasts until the second; the last until the file's latest time.
    assert_eq!(
        zone[0]["properties"]["end_time"],
        "1995-12-12T05:01:00+00:00"
    );
    assert_eq!(
        zone[1]["properties"]["start_time"],
        "1995-12-12T05:01:00+00:00"
    );
    assert_eq!(
        zone[1]["properties"]["end_time"],
        "1995-12-12T05:02:00+00:00"
    );
    assert_eq!(zone[0]["properties"]["label"], "zone a");
    assert_eq!(zone[0]["geometry"]["type"], "Polygon");
    let ring = zone[0]["geometry"]["coordinates"][0].as_array().unwrap();
    assert_eq!(ring.len(), 5);
    assert!(close(
        coord(&ring[0]),
        [-21.0 - 50.0 / 60.0, 22.0 + 10.0 / 60.0],
        1e-9
    ));
    let datum = of_kind(&f, "DYNAMIC_CIRCLE")[0];
    assert_eq!(datum["geometry"]["type"], "Point");
    assert_eq!(datum["properties"]["radius"], 2000.0 * 0.9144);
    assert_eq!(
        datum["properties"]["center"],
        datum["geometry"]["coordinates"]
    );
    assert_eq!(datum["properties"]["end_time"], "1995-12-12T05:02:00+00:00");
    let bx = of_kind(&f, "DYNAMIC_POLY")[0];
    assert_eq!(bx["properties"]["vertex_count"], 3);
    assert_eq!(
        bx["geometry"]["coordinates"][0].as_array().unwrap().len(),
        4
    );
    assert_eq!(bx["properties"]["style"]["color"], "#0000FF");
    assert!(zone[0]["id"].as_str().unwrap().starts_with("dynamic-"));
}

#[test]
fn tma_solutions_are_their_own_kind_with_their_fields() {
    let import = parse_rep("every_kind.rep", EVERY_KIND).unwrap();
    let f = import.features();
    let tma = of_kind(&f, "TMA_SOLUTION");
    let pos = &tma[0]["properties"];
    assert_eq!(pos["tma_type"], "TMA_POS");
    assert_eq!(pos["solution_name"], "TGT_1");
    assert_eq!(pos["track_name"], "NELSON");
    assert_eq!(pos["track_id"], "track-nelson");
    assert_eq!(pos["time"], "1995-12-12T05:01:00+00:00");
    assert_eq!(pos["course"], 12.0);
    assert_eq!(pos["speed"], 4.0);
    assert_eq!(pos["depth"], 100.0);
    assert_eq!(pos["label"], "solution one");
    assert_eq!(pos["ellipse"]["orientation"], 130.0);
    assert_eq!(pos["ellipse"]["maxima"], 800.0 * 0.9144);
    assert_eq!(pos["ellipse"]["minima"], 300.0 * 0.9144);
    assert_eq!(pos["color"], "#FF00FF");
    assert_eq!(tma[0]["geometry"]["type"], "Point");
    let at = coord(&tma[0]["geometry"]["coordinates"]);
    assert!(close(
        at,
        [
            -(21.0 + 34.0 / 60.0 + 27.62 / 3600.0),
            22.0 + 12.0 / 60.0 + 10.14 / 3600.0
        ],
        1e-9
    ));

    let rb = &tma[1]["properties"];
    assert_eq!(rb["tma_type"], "TMA_RB");
    assert_eq!(rb["bearing"], 124.5);
    assert_eq!(rb["range"], 12000.0 * 0.9144);
    assert!(rb.get("ellipse").is_none());
    assert_eq!(rb["color"], "#FFFFFF");
    // Placed from the host's position at that time (NELSON has a fix at 05:01:00).
    let origin = coord(&rb["origin"]);
    assert!(close(
        origin,
        [-(21.0 + 42.0 / 60.0), 22.0 + 11.0 / 60.0 + 10.0 / 3600.0],
        1e-9
    ));
    let target = coord(&tma[1]["geometry"]["coordinates"]);
    let want = super::output::destination(origin, 12000.0 * 0.9144, 124.5);
    assert!(close(target, want, 1e-12));
    assert!(
        target[1] < origin[1] && target[0] > origin[0],
        "south-east of the host"
    );
}

#[test]
fn a_range_bearing_solution_outside_its_hosts_track_has_no_position() {
    let text = "951212 050000 NELSON @A 1 0 0 N 1 0 0 E 90 10 0\n\
                951212 060000 NELSON @A 1 0 0 N 2 0 0 E 90 10 0\n\
                ;TMA_RB: 951212 053000 NELSON @A 0 1000 T NULL 0 1 0\n\
                ;TMA_RB: 951212 070000 NELSON @A 0 1000 T NULL 0 1 0\n\
                ;TMA_RB: 951212 053000 GHOST @A 0 1000 T NULL 0 1 0\n";
    let f = parse_rep("t.rep", text).unwrap().features();
    let tma = of_kind(&f, "TMA_SOLUTION");
    // Half-way between the two fixes.
    assert!(close(
        coord(&tma[0]["properties"]["origin"]),
        [1.5, 1.0],
        1e-12
    ));
    assert_eq!(tma[1]["geometry"], Value::Null);
    assert!(tma[1]["properties"].get("origin").is_none());
    assert_eq!(tma[2]["geometry"], Value::Null);
    assert!(tma[2]["properties"].get("track_id").is_none());
}

#[test]
fn wheel_bearing_and_timed_ellipse_carry_their_times_and_metres() {
    let import = parse_rep("every_kind.rep", EVERY_KIND).unwrap();
    let f = import.features();
    let wheel = &of_kind(&f, "WHEEL")[0]["properties"];
    assert_eq!(wheel["time"], "1995-12-12T05:01:00+00:00");
    assert_eq!(wheel["inner_radius"], 200.0 * 0.9144);
    assert_eq!(wheel["outer_radius"], 1500.0 * 0.9144);
    assert_eq!(wheel["label"], "wheel");
    let brg = of_kind(&f, "BEARING")[0];
    assert_eq!(brg["properties"]["time"], "1995-12-12T05:01:00+00:00");
    assert_eq!(brg["properties"]["bearing"], 135.0);
    assert_eq!(brg["properties"]["range"], 8000.0 * 0.9144);
    assert_eq!(brg["geometry"]["type"], "LineString");
    let ellipses = of_kind(&f, "ELLIPSE");
    assert_eq!(
        ellipses[0]["properties"]["time"],
        "1995-12-12T05:01:00+00:00"
    );
    let e2 = &ellipses[1]["properties"];
    assert!(e2.get("time").is_none());
    assert_eq!(e2["start_time"], "1995-12-12T05:00:00+00:00");
    assert_eq!(e2["end_time"], "1995-12-12T05:02:00+00:00");
    assert_eq!(e2["maxima"], 4000.0 * 0.9144);
    let contacts = &import.tracks[0].sensors[1].contacts;
    assert_eq!(contacts[1].bearing_accuracy, Some(2.5));
    assert_eq!(contacts[1].frequency, Some(50.1));
    assert_eq!(contacts[1].frequency_accuracy, Some(0.2));
    assert_eq!(contacts[1].range, Some(12000.0 * 0.9144));
    assert_eq!(contacts[1].label.as_deref(), Some("0502"));
}

#[test]
fn format_lines_are_kept_as_format_features() {
    let f = parse_rep("every_kind.rep", EVERY_KIND).unwrap().features();
    let formats = of_kind(&f, "FORMAT");
    assert_eq!(
        formats[0]["properties"],
        json!({"kind": "FORMAT", "directive": "FORMAT_FIX", "name": "10_min_sym",
               "attribute": "SYMBOL", "regular_intervals": true, "interval_ms": 600000})
    );
    assert_eq!(
        formats[1]["properties"]["layers"],
        json!(["NELSON", "HMS COLLINGWOOD"])
    );
    assert_eq!(formats[2]["properties"]["directive"], "FORMAT_LAYER_HIDE");
    assert_eq!(formats[2]["properties"]["layers"], json!(["Zone A"]));
    assert_eq!(formats[0]["geometry"], Value::Null);
}

#[test]
fn every_time_bounded_feature_has_start_and_end_and_every_instant_a_time() {
    let f = parse_rep("every_kind.rep", EVERY_KIND).unwrap().features();
    let bounded = [
        "TRACK",
        "PERIODTEXT",
        "SENSOR_ARC",
        "DYNAMIC_RECT",
        "DYNAMIC_CIRCLE",
        "DYNAMIC_POLY",
    ];
    let instant = ["NARRATIVE", "TIMETEXT", "WHEEL", "BEARING", "TMA_SOLUTION"];
    for feature in &f {
        let p = &feature["properties"];
        let k = kind(feature);
        if bounded.contains(&k) {
            assert!(
                p["start_time"].is_string() && p["end_time"].is_string(),
                "{feature}"
            );
        }
        if instant.contains(&k) {
            assert!(p["time"].is_string(), "{feature}");
        }
    }
}

#[test]
fn new_kinds_report_bad_fields_with_file_line_col() {
    let cases = [
        (
            ";TMA_POS: 951212 050100 N @E 22 0 0 N 21 0 0 W T NULL inf 4 100",
            4,
            "course",
        ),
        (
            ";TMA_RB: 951212 050100 N @E NaN 100 T NULL 1 4 100",
            1,
            "bearing",
        ),
        (
            ";TMA_RB: 951212 050100 N @E 10 100 T 45 -inf 10 1 4 100",
            1,
            "ellipse maxima",
        ),
        (
            ";DYNAMIC_CIRCLE: @A \"D\" 951212 050000 22 0 0 N 21 0 0 W NaN x",
            1,
            "radius",
        ),
        (
            ";DYNAMIC_POLY: @A D 951212 050000 22 0 0 N 21 0 0 W 22 1 0 N 21 0 0 W x",
            1,
            "vertex latitude degrees",
        ),
        (
            ";WHEEL: @C 951212 050100 22 3 0 N 21 41 0 W infinity 1500 w",
            1,
            "inner radius",
        ),
        (
            ";BRG: @D 951212 050100 22 11 10 N 21 42 0 W NaN 8000",
            1,
            "bearing",
        ),
        (
            ";SENSOR3: 951212 050200 NELSON @B NULL 210.0 inf 50.1 0.2 12000 T",
            1,
            "bearing accuracy",
        ),
        (
            ";FORMAT_FIX: f SYMBOL NULL NULL MAYBE 600000",
            1,
            "regular intervals",
        ),
    ];
    for (line, _, field) in cases {
        let text = format!("951212 050000 N @A 1 0 0 N 1 0 0 E 0 0 0\n{line}\n");
        let e = err("x.rep", &text);
        assert_eq!(e.file(), "x.rep");
        assert_eq!(e.line(), 2, "{line}: {e}");
        let msg = e.to_string();
        assert!(msg.contains(field), "{line}: {msg}");
        let RepError::InvalidField { found, column, .. } = &e else {
            panic!("{line}: {e:?}");
        };
        // The column points at the offending text.
        assert_eq!(&line[column - 1..column - 1 + found.len()], found, "{line}");
    }
}

#[test]
fn new_kinds_come_out_the_same_when_parsed_in_pieces() {
    let mut text = String::new();
    for _ in 0..40 {
        text.push_str(EVERY_KIND);
    }
    let one = super::parse_in_pieces("t.rep", &text, 1).unwrap();
    let four = super::parse_in_pieces("t.rep", &text, 4).unwrap();
    assert_eq!(one, four);
    assert_eq!(one.tma.len(), 80);
    assert_eq!(one.dynamic_shapes.len(), 160);
}

// ---- issue 32 item 5: legacy Debrief's spellings and files added to a plot ----

/// legacy Debrief's sample data (EPL; see `tests/fixtures/rep/legacy/NOTICE.md`).
const SENSOR_ARCS: &str = include_str!("../tests/fixtures/rep/legacy/sensor_arcs.rep");

#[test]
fn a_sensor_arc_is_read_in_every_legacy_spelling() {
    let body = "951212 050000 951212 060000 NELSON @B -75 35 0 1000 \"fwd dyn\"";
    let reference = parse_rep("a.rep", &format!(";SENSORARC: {body}\n")).unwrap();
    for keyword in [";SENSORARC", ";SENSOR_ARC:", ";SENSOR_ARC", ";sensorarc"] {
        let import = parse_rep("a.rep", &format!("{keyword} {body}\n")).unwrap();
        assert!(
            import.unhandled.is_empty(),
            "{keyword}: {:?}",
            import.unhandled
        );
        assert_eq!(import.features(), reference.features(), "{keyword}");
    }
}

#[test]
fn legacy_debriefs_sensor_arcs_sample_imports_every_line() {
    let import = parse_rep("sensor_arcs.rep", SENSOR_ARCS).unwrap();
    assert!(import.unhandled.is_empty(), "{:?}", import.unhandled);
    assert_eq!(import.sensor_arcs.len(), 46);
    let nelson = import
        .sensor_arcs
        .iter()
        .filter(|a| a.track_name == "NELSON")
        .count();
    assert_eq!(nelson, 43);
    let first = &import.sensor_arcs[0];
    assert_eq!(first.sensor_name, "fwd dynamic");
    assert_eq!(first.arcs.len(), 1);
    assert_eq!(first.arcs[0].left, -45.0);
    // The arcs' hosts are in other files: nothing links them yet.
    assert!(import.sensor_arcs.iter().all(|a| a.track_id.is_none()));
    let beams = &import.sensor_arcs[45];
    assert_eq!(beams.sensor_name, "Beams null start & finish");
    assert_eq!((beams.start, beams.end), (None, None));
    assert_eq!(beams.arcs.len(), 2);
}

#[test]
fn lines_naming_a_known_track_link_to_it() {
    let t = |s: &str| DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc);
    let known = [super::KnownTrack {
        name: "NELSON".to_owned(),
        id: "track-nelson".to_owned(),
        fixes: vec![
            (t("1995-12-12T05:00:00Z"), [-21.0, 22.0]),
            (t("1995-12-12T06:00:00Z"), [-21.0, 23.0]),
        ],
    }];
    let text = format!(
        "{ARC}\n\
         ;NARRATIVE: 951212 051000 NELSON hello\n\
         ;TMA_RB: 951212 053000 NELSON @A 90 2000 SOL NULL 90 10 0 l\n\
         ;SENSOR: 951212 051000 NELSON @A NULL 45 NULL SONAR x\n\
         951212 070000 TRACK_NELSON @A 1 0 0 N 1 0 0 E 0 0 0\n"
    );
    let import = super::parse_rep_beside("more.rep", &text, &known).unwrap();
    assert_eq!(
        import.sensor_arcs[0].track_id.as_deref(),
        Some("track-nelson")
    );
    assert_eq!(
        import.narratives[0].track_id.as_deref(),
        Some("track-nelson")
    );
    let tma = &import.tma[0];
    assert_eq!(tma.track_id.as_deref(), Some("track-nelson"));
    let origin = tma.origin.unwrap();
    assert!((origin[1] - 22.5).abs() < 1e-9, "{origin:?}");
    assert!(tma.at.is_some());
    // Sensor data for the known track stays a SENSOR feature for the caller to move.
    assert_eq!(import.sensors.len(), 1);
    assert_eq!(import.sensors[0].platform_id, "NELSON");
    // A new track never takes a known id.
    assert_eq!(import.tracks[0].id, "track-track-nelson");
    assert_ne!(import.tracks[0].id, "track-nelson");
    // The same lines alone link to nothing.
    let alone = parse_rep("more.rep", &text).unwrap();
    assert!(alone.tma[0].origin.is_none());
    assert!(alone.narratives[0].track_id.is_none());
}

#[test]
fn a_file_track_with_a_known_name_keeps_the_known_id() {
    let known = [super::KnownTrack {
        name: "NELSON".to_owned(),
        id: "track-hms-nelson".to_owned(),
        fixes: Vec::new(),
    }];
    let import = super::parse_rep_beside(
        "n.rep",
        "951212 070000 NELSON @A 1 0 0 N 1 0 0 E 0 0 0\n",
        &known,
    )
    .unwrap();
    assert_eq!(import.tracks[0].id, "track-hms-nelson");
}
