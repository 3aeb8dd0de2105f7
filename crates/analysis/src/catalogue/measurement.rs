//! `track/measurement`: the tote calculations and other point measurements between tracks.

use serde_json::{Value, json};

use super::model::{self, convert_nm, fix_at, fixes, id_of, parse_time};
use super::{CalcInput, Entry, Item, ToolError};
use crate::common::multi;

const TRACK: &[&str] = &["TRACK"];

fn tracks() -> Value {
    multi(TRACK)
}

pub(crate) const TOOLS: &[Entry] = &[Entry {
    id: "range-calc",
    spec_category: "track/measurement",
    spec_version: "1.0",
    description: "Range (great-circle distance) between two tracks at a given time, in yds, km, nm or m (default yds). Use it for the separation of two vessels at one moment.",
    output_kind: "artifact/measurement/range",
    requirements: tracks,
    params: range_params,
    required: &[],
    run: range_calc,
}];

fn range_params() -> Value {
    json!({
        "time": {"type": "string", "format": "date-time", "description": "Time at which to measure, ISO-8601 (default: the primary track's first time)."},
        "units": {"type": "string", "enum": ["yds", "km", "nm", "m"], "default": "yds", "description": "Distance units of the result."},
    })
}

/// The measurement time: the `time` parameter, else the first track's first fix.
fn measurement_time(input: &CalcInput, primary: &[model::Fix]) -> Result<i64, ToolError> {
    match input.str_param("time") {
        Some(t) => parse_time(t).ok_or_else(|| {
            ToolError::invalid(format!(
                "Time \"{t}\" is not an ISO-8601 time; use e.g. 2024-01-15T10:30:00Z"
            ))
        }),
        None => primary
            .first()
            .map(|f| f.time)
            .ok_or_else(|| ToolError::invalid("No position available at specified time")),
    }
}

fn range_calc(input: &CalcInput) -> Result<Vec<Item>, ToolError> {
    if input.features.is_empty() {
        return Err(ToolError::invalid("Input features required"));
    }
    if input.features.len() < 2 {
        return Err(ToolError::invalid(
            "Two track features required for range calculation",
        ));
    }
    let units = input.str_param("units").unwrap_or("yds");
    let (primary, secondary) = (&input.features[0], &input.features[1]);
    let (pf, sf) = (fixes(primary), fixes(secondary));
    let time = measurement_time(input, &pf)?;
    let (Some(p), Some(s)) = (fix_at(&pf, time), fix_at(&sf, time)) else {
        return Err(ToolError::invalid(
            "No position available at specified time",
        ));
    };
    let value = convert_nm(model::range_nm(p.coord, s.coord), units).ok_or_else(|| {
        ToolError::invalid(format!(
            "Unknown units \"{units}\"; use one of yds, km, nm, m"
        ))
    })?;
    let (pid, sid) = (
        id_of(primary).unwrap_or_default(),
        id_of(secondary).unwrap_or_default(),
    );
    let feature = json!({
        "type": "Feature",
        "id": "measurement-range-001",
        "geometry": null,
        "properties": {
            "debrief:kind": "measurement",
            "debrief:measurement_type": "range",
            "debrief:value": value,
            "debrief:units": units,
            "debrief:time": model::format_time(time),
            "debrief:primary_track": pid,
            "debrief:secondary_track": sid,
            "debrief:primary_position": p.coord,
            "debrief:secondary_position": s.coord,
        }
    });
    Ok(vec![Item::feature(
        feature,
        "artifact/measurement/range",
        vec![pid, sid],
        format!("Calculated range: {} {units}", value.round()),
    )])
}
