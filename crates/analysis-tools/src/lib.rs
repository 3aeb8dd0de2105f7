//! Debrief's read-only tools, by the catalogue's own categories: measurement
//! (`track/measurement`, the tote: range, bearing, rates, closest approach; [`MEASUREMENT`]),
//! sensor (`sensor/analysis`, `sensor/calibration`: contacts and bearing ambiguity; [`SENSOR`]),
//! detection (`sensor/detection`, buffer zones; [`DETECTION`]) and analysis (`track/analysis`:
//! manoeuvre detection, time-series plots and TMA solutions; [`ANALYSIS`]); and toolgate's own
//! analyses that the catalogue does not define ([`OWN_TOOLS`]: track statistics, range and
//! bearing, area summary, speed filter).
//!
//! Each category is one table of `toolgate_tool_catalogue::Entry`s; `toolgate-native-tools`
//! chains them (with the editing tools) into the registry's listing.
#![warn(unreachable_pub)]

mod analysis;
mod detection;
mod measurement;
mod own_analyses;
mod sensor;

use toolgate_core::{CallError, ToolCall, ToolOutcome, ToolSpec};
use toolgate_tool_catalogue::Entry;

/// Measurement: `track/measurement`.
pub const MEASUREMENT: &[Entry] = measurement::TOOLS;
/// Sensor: `sensor/analysis`, `sensor/calibration`.
pub const SENSOR: &[Entry] = sensor::TOOLS;
/// Detection: `sensor/detection`.
pub const DETECTION: &[Entry] = detection::TOOLS;
/// Analysis: `track/analysis`.
pub const ANALYSIS: &[Entry] = analysis::TOOLS;

/// One of toolgate's own tools: its spec builder and its implementation over a registry call.
pub struct OwnTool {
    pub id: &'static str,
    pub spec: fn() -> ToolSpec,
    pub run: fn(&ToolCall) -> Result<ToolOutcome, CallError>,
}

/// toolgate's own analyses, in listing order (after the catalogue's tools).
pub const OWN_TOOLS: &[OwnTool] = &[
    OwnTool {
        id: own_analyses::TRACK_STATS,
        spec: own_analyses::track_stats_spec,
        run: own_analyses::track_stats,
    },
    OwnTool {
        id: own_analyses::RANGE_BEARING,
        spec: own_analyses::range_bearing_spec,
        run: own_analyses::range_bearing,
    },
    OwnTool {
        id: own_analyses::AREA_SUMMARY,
        spec: own_analyses::area_summary_spec,
        run: own_analyses::area_summary,
    },
    OwnTool {
        id: own_analyses::SPEED_FILTER,
        spec: own_analyses::speed_filter_spec,
        run: own_analyses::speed_filter,
    },
];
