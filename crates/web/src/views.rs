//! What the API sends: the session state (what the live stream pushes) and one plot's features
//! with an inventory for the feature list.

use serde::Serialize;
use serde_json::Value;
use toolgate_plot::model::Feature;
use toolgate_plot::session::{OpenPlot, Session};

/// The cheap part of the session a page must follow: which plot is active and each open plot's
/// version, dirty flag, undo/redo availability and selection. The live stream sends it whenever
/// it changes.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StateView {
    pub active_plot: Option<String>,
    pub plots: Vec<PlotState>,
    /// How many analytical results the Results panel holds.
    pub datasets: usize,
    /// Every session of this instance (the page's own and each MCP client's), briefly: the
    /// page fetches `/api/sessions` when this changes.
    pub sessions: Vec<SessionBrief>,
    /// The newest activity log entry's seq (0: none).
    pub activity: u64,
}

/// A session in the live state: enough to notice a change.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionBrief {
    pub id: String,
    pub client: String,
    pub active_plot: Option<String>,
    /// Sum of the open plots' versions (changes with every edit, undo, revert).
    pub versions: u64,
    pub dirty: bool,
    pub connected: bool,
}

/// One session for the session list: who, how, and its open plots' states.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionView {
    pub id: String,
    pub client: String,
    pub via: String,
    pub created_at: String,
    pub connected: bool,
    /// This page's own session.
    pub workbench: bool,
    pub active_plot: Option<String>,
    pub plots: Vec<PlotState>,
}

impl SessionView {
    pub fn of(listed: &toolgate_plot::activity::Listed, workbench: bool) -> Self {
        let session = listed.debrief.session();
        Self {
            id: listed.id.clone(),
            client: listed.client.clone(),
            via: listed.via.clone(),
            created_at: listed.created_at.clone(),
            connected: workbench || listed.connected(),
            workbench,
            active_plot: session.active_id().map(str::to_owned),
            plots: session.open_plots().iter().map(PlotState::of).collect(),
        }
    }

    pub fn brief(&self) -> SessionBrief {
        SessionBrief {
            id: self.id.clone(),
            client: self.client.clone(),
            active_plot: self.active_plot.clone(),
            versions: self.plots.iter().map(|p| p.version).sum(),
            dirty: self.plots.iter().any(|p| p.dirty),
            connected: self.connected,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlotState {
    pub plot_id: String,
    pub title: String,
    pub version: u64,
    pub dirty: bool,
    pub can_undo: bool,
    pub can_redo: bool,
    pub undo_label: Option<String>,
    /// The selection as given (may hold nested paths like `<id>/positions/4`).
    pub selection: Vec<String>,
    /// The selected feature ids (nested paths resolved to their feature).
    pub selected_ids: Vec<String>,
}

impl PlotState {
    pub fn of(plot: &OpenPlot) -> Self {
        Self {
            plot_id: plot.id.clone(),
            title: plot.title.clone(),
            version: plot.doc.version(),
            dirty: plot.doc.is_dirty(),
            can_undo: plot.doc.can_undo(),
            can_redo: plot.doc.can_redo(),
            undo_label: plot.doc.undo_label().map(str::to_owned),
            selection: plot.selection_raw().to_vec(),
            selected_ids: plot.selected_ids(),
        }
    }
}

impl StateView {
    pub fn of(session: &Session, datasets: usize) -> Self {
        Self {
            active_plot: session.active_id().map(str::to_owned),
            plots: session.open_plots().iter().map(PlotState::of).collect(),
            datasets,
            sessions: Vec::new(),
            activity: 0,
        }
    }
}

/// One row of the feature list.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InventoryRow {
    pub id: String,
    pub name: String,
    pub kind: String,
    pub platform: Option<String>,
    pub start: Option<String>,
    pub end: Option<String>,
    pub point_count: Option<usize>,
}

impl InventoryRow {
    pub fn of(f: &Value) -> Self {
        let feature = Feature(f);
        let span = feature.time_span();
        Self {
            id: feature.id().unwrap_or_default(),
            name: feature.display_name(),
            kind: feature.kind().to_owned(),
            platform: feature.platform().map(str::to_owned),
            start: span.map(|s| s.0.to_owned()),
            end: span.map(|s| s.1.to_owned()),
            point_count: feature.point_count(),
        }
    }
}

#[derive(Serialize)]
struct Collection<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    features: Features<'a>,
}

/// The features as they are, or for the map: each track's `positions` cut to their `time` (what
/// time labels and symbols need; course, speed and depth are optional in the schema), which
/// makes a big plot about three times smaller to send and parse.
struct Features<'a> {
    features: &'a [Value],
    map_only: bool,
}

impl Serialize for Features<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = s.serialize_seq(Some(self.features.len()))?;
        for f in self.features {
            if self.map_only && Feature(f).kind() == "TRACK" {
                seq.serialize_element(&Trimmed {
                    value: f,
                    at: Trimmed::FEATURE,
                })?;
            } else {
                seq.serialize_element(f)?;
            }
        }
        seq.end()
    }
}

/// A feature, its properties or a position, serialised with the track's positions cut down.
struct Trimmed<'a> {
    value: &'a Value,
    at: u8,
}

impl Trimmed<'_> {
    const FEATURE: u8 = 0;
    const PROPERTIES: u8 = 1;
    const POSITIONS: u8 = 2;
    const POSITION: u8 = 3;
}

impl Serialize for Trimmed<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        match (self.at, self.value) {
            (Self::FEATURE | Self::PROPERTIES | Self::POSITION, Value::Object(m)) => {
                let mut map = s.serialize_map(None)?;
                for (k, v) in m {
                    let inner = match (self.at, k.as_str()) {
                        (Self::FEATURE, "properties") => Some(Self::PROPERTIES),
                        (Self::PROPERTIES, "positions") => Some(Self::POSITIONS),
                        (Self::POSITION, "time") => None,
                        (Self::POSITION, _) => continue,
                        _ => None,
                    };
                    match inner {
                        Some(at) => map.serialize_entry(k, &Trimmed { value: v, at })?,
                        None => map.serialize_entry(k, v)?,
                    }
                    // Course and speed as arrays beside the positions (no key per position):
                    // what the time controller's markers show, at a third of the bytes.
                    if inner == Some(Self::POSITIONS)
                        && let Value::Array(positions) = v
                    {
                        for (name, field) in
                            [("position_courses", "course"), ("position_speeds", "speed")]
                        {
                            let column: Vec<&Value> = positions
                                .iter()
                                .map(|p| p.get(field).unwrap_or(&Value::Null))
                                .collect();
                            map.serialize_entry(name, &column)?;
                        }
                    }
                }
                map.end()
            }
            (Self::POSITIONS, Value::Array(a)) => {
                let mut seq = s.serialize_seq(Some(a.len()))?;
                for p in a {
                    seq.serialize_element(&Trimmed {
                        value: p,
                        at: Self::POSITION,
                    })?;
                }
                seq.end()
            }
            (_, v) => v.serialize(s),
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Heavy<'a> {
    bbox: Option<[f64; 4]>,
    inventory: Vec<InventoryRow>,
    feature_collection: Collection<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Light<'a> {
    #[serde(flatten)]
    state: &'a PlotState,
    active: bool,
}

/// The part of a plot's answer that only changes with its version: the bbox, the inventory and
/// the features, serialised as the members `"bbox":…,"inventory":[…],"featureCollection":{…}`
/// (no braces) so it can be cached per version and spliced into answers. `map_only` trims
/// track positions to their times (see [`Features`]).
pub fn plot_body(plot: &OpenPlot, map_only: bool) -> Result<Vec<u8>, serde_json::Error> {
    let features = plot.doc.features();
    let heavy = Heavy {
        bbox: plot.bbox(),
        inventory: features.iter().map(InventoryRow::of).collect(),
        feature_collection: Collection {
            kind: "FeatureCollection",
            features: Features { features, map_only },
        },
    };
    let mut bytes = serde_json::to_vec(&heavy)?;
    // strip the object's braces: `{` … `}`
    bytes.pop();
    bytes.remove(0);
    Ok(bytes)
}

/// One open plot: its state and whether it is active, then the cached `body` (from
/// [`plot_body`]), as one JSON object.
pub fn plot_answer(
    plot: &OpenPlot,
    active: bool,
    body: &[u8],
) -> Result<Vec<u8>, serde_json::Error> {
    let state = PlotState::of(plot);
    let light = Light {
        state: &state,
        active,
    };
    let mut out = serde_json::to_vec(&light)?;
    out.pop(); // the closing brace
    if !body.is_empty() {
        out.push(b',');
        out.extend_from_slice(body);
    }
    out.push(b'}');
    Ok(out)
}

/// Whether a selection entry names a feature of the plot: a feature id, or a nested path whose
/// prefix up to a `/` is one (ids may themselves contain `/`).
pub fn resolves(plot: &OpenPlot, entry: &str) -> bool {
    if plot.doc.feature(entry).is_some() {
        return true;
    }
    let mut cut = entry.len();
    while let Some(i) = entry[..cut].rfind('/') {
        if plot.doc.feature(&entry[..i]).is_some() {
            return true;
        }
        cut = i;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_map_view_keeps_position_times_with_course_and_speed_beside_them() {
        let track = json!({"type": "Feature", "id": "t", "geometry": {"type": "LineString", "coordinates": [[0.0, 1.0], [2.0, 3.0]]},
            "properties": {"kind": "TRACK", "platform_id": "P", "style": {"line": {"color": "red"}},
                "positions": [{"time": "2026-03-01T00:00:00Z", "course": 1.0, "speed": 2.0}, {"time": "2026-03-01T00:01:00Z", "depth": 3.0}]}});
        let point = json!({"type": "Feature", "id": "p", "geometry": {"type": "Point", "coordinates": [0.0, 1.0]},
            "properties": {"kind": "POINT", "name": "Datum", "positions": [{"time": "x", "course": 1.0}]}});
        let features = vec![track.clone(), point.clone()];
        let full = serde_json::to_value(Features {
            features: &features,
            map_only: false,
        })
        .unwrap();
        assert_eq!(full, json!([track, point]));
        let map = serde_json::to_value(Features {
            features: &features,
            map_only: true,
        })
        .unwrap();
        let mut want = track;
        want["properties"]["positions"] =
            json!([{"time": "2026-03-01T00:00:00Z"}, {"time": "2026-03-01T00:01:00Z"}]);
        // course and speed beside the positions, null where a position has none
        want["properties"]["position_courses"] = json!([1.0, null]);
        want["properties"]["position_speeds"] = json!([2.0, null]);
        assert_eq!(map[0], want);
        // key order is kept, and other kinds are untouched
        let keys: Vec<&String> = map[0]["properties"].as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "kind",
                "platform_id",
                "style",
                "positions",
                "position_courses",
                "position_speeds"
            ]
        );
        assert_eq!(map[1], point);
    }
}
