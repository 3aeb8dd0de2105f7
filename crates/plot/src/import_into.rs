//! Adding REP files to a plot that is already in the store (`toolgate import --into PLOT`), as
//! an analyst adds a sensor file to the plot that holds its ownship track.
//!
//! The files are read beside the plot's tracks ([`rep::parse_rep_beside`]), so every line that
//! names one of them attaches to it: positions join the track, sensor contacts join its
//! `sensors[]`, sensor arcs, narratives and TMA solutions get its id as `track_id` (a range and
//! bearing solution is placed from its positions). Everything else is added as new features,
//! renumbered where the plot already uses an id. The item's time span, bbox, platforms and
//! provenance grow to cover what was added. Nothing is written unless every file parses.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use serde_json::{Map, Value, json};
use toolgate_core::clip::quote;
use toolgate_rep as rep;

use crate::fsio::{atomic_write_beneath, sha256_hex};
use crate::import::{FileReport, ImportError, RepSource};
use crate::store::{MAX_FEATURES_BYTES, StacStore, StoreError, StoreFile};

/// What [`StacStore::add_to_plot`] did.
#[derive(Debug, Clone)]
pub struct Added {
    pub plot_id: String,
    pub title: String,
    /// What each file contributed (as for a new plot).
    pub files: Vec<FileReport>,
    /// The new features, per kind (`[("SENSOR_ARC", 46)]`).
    pub kinds: Vec<(String, usize)>,
    /// Positions added to tracks the plot already had.
    pub positions: usize,
    /// Sensor contacts added to tracks the plot already had.
    pub contacts: usize,
    /// Per track of the plot that the files' lines named: its name and how many of the added
    /// features (arcs, narratives, solutions, sensors, positions' track) attach to it.
    pub attached: Vec<(String, usize)>,
    /// Track names the files' lines name that neither the plot nor the files have: their
    /// features are added unattached. Each with how many features name it.
    pub unattached: Vec<(String, usize)>,
}

/// A number for `f64` fields read from stored JSON.
fn num(v: &Value) -> Option<f64> {
    v.as_f64().filter(|f| f.is_finite())
}

fn time_of(v: &Value) -> Option<DateTime<Utc>> {
    v.as_str()
        .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
        .map(|t| t.with_timezone(&Utc))
}

fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, false)
}

fn kind_of(f: &Value) -> &str {
    f.pointer("/properties/kind")
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn id_of(f: &Value) -> Option<&str> {
    f.get("id").and_then(Value::as_str)
}

/// The plot's tracks as the REP reader knows them: every name a line may use for a track
/// (`platform_id`, `platform_name`), its id and positions.
fn known_tracks(features: &[Value]) -> Vec<rep::KnownTrack> {
    let mut known = Vec::new();
    for f in features.iter().filter(|f| kind_of(f) == "TRACK") {
        let Some(id) = id_of(f) else { continue };
        let props = f.get("properties").cloned().unwrap_or_default();
        let coords = f
            .pointer("/geometry/coordinates")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let times = props
            .get("positions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let mut fixes: Vec<(DateTime<Utc>, rep::LonLat)> = coords
            .iter()
            .zip(&times)
            .filter_map(|(c, p)| {
                let t = time_of(p.get("time")?)?;
                Some((t, [num(c.get(0)?)?, num(c.get(1)?)?]))
            })
            .collect();
        fixes.sort_by_key(|(t, _)| *t);
        fixes.dedup_by_key(|(t, _)| *t);
        let mut names: Vec<&str> = Vec::new();
        for key in ["platform_id", "platform_name"] {
            if let Some(n) = props.get(key).and_then(Value::as_str)
                && !n.is_empty()
                && !names.contains(&n)
            {
                names.push(n);
            }
        }
        for name in names {
            known.push(rep::KnownTrack {
                name: name.to_owned(),
                id: id.to_owned(),
                fixes: fixes.clone(),
            });
        }
    }
    known
}

/// Gives new features ids the plot does not use: `prefix-N` continues after the plot's highest
/// `prefix-N`; any other id gets `-2`, `-3`… Returns the renamed ids (old → new).
struct Ids {
    used: HashSet<String>,
    next: HashMap<String, u64>,
}

impl Ids {
    fn new(features: &[Value]) -> Self {
        let used: HashSet<String> = features
            .iter()
            .filter_map(id_of)
            .map(str::to_owned)
            .collect();
        let mut next: HashMap<String, u64> = HashMap::new();
        for id in &used {
            if let Some((prefix, n)) = numbered(id) {
                let e = next.entry(prefix.to_owned()).or_insert(1);
                *e = (*e).max(n + 1);
            }
        }
        Self { used, next }
    }

    fn fresh(&mut self, id: &str) -> String {
        if !self.used.contains(id) {
            self.used.insert(id.to_owned());
            return id.to_owned();
        }
        let fresh = match numbered(id) {
            Some((prefix, _)) => {
                let n = self.next.entry(prefix.to_owned()).or_insert(1);
                loop {
                    let candidate = format!("{prefix}-{n}");
                    *n += 1;
                    if !self.used.contains(&candidate) {
                        break candidate;
                    }
                }
            }
            None => {
                let mut n = 2u64;
                loop {
                    let candidate = format!("{id}-{n}");
                    n += 1;
                    if !self.used.contains(&candidate) {
                        break candidate;
                    }
                }
            }
        };
        self.used.insert(fresh.clone());
        fresh
    }
}

/// `narrative-12` → `("narrative", 12)`; ids of other shapes → `None`.
fn numbered(id: &str) -> Option<(&str, u64)> {
    let (prefix, n) = id.rsplit_once('-')?;
    let known = [
        "narrative",
        "shape",
        "sensorarc",
        "dynamic",
        "tma",
        "format",
    ];
    if !known.contains(&prefix) {
        return None;
    }
    Some((prefix, n.parse().ok()?))
}

/// Adds `new`'s positions (and their style overrides) to the TRACK `track`, in time order, a
/// time the track already has kept as it was. Returns how many positions were added.
fn merge_positions(track: &mut Value, new: &Value) -> usize {
    struct Fix {
        time: Option<DateTime<Utc>>,
        coord: Value,
        position: Value,
        style: Value,
    }
    let fixes = |f: &Value| -> Vec<Fix> {
        let coords = f
            .pointer("/geometry/coordinates")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let positions = f
            .pointer("/properties/positions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let styles = f
            .pointer("/properties/position_style_overrides")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        coords
            .into_iter()
            .zip(positions)
            .enumerate()
            .map(|(i, (coord, position))| Fix {
                time: position.get("time").and_then(time_of),
                coord,
                position,
                style: styles.get(i).cloned().unwrap_or(Value::Null),
            })
            .collect()
    };
    let mut all = fixes(track);
    let had: HashSet<Option<DateTime<Utc>>> = all.iter().map(|f| f.time).collect();
    let mut added = 0;
    let mut seen = HashSet::new();
    for fix in fixes(new) {
        // A lone position is written twice: one time is one position.
        if had.contains(&fix.time) || !seen.insert(fix.time) {
            continue;
        }
        all.push(fix);
        added += 1;
    }
    if added == 0 {
        return 0;
    }
    all.sort_by_key(|f| f.time);
    if all.len() == 1
        && let Some(only) = all.first()
    {
        // A LineString needs two points: a lone position is written twice, as the importer does.
        all.push(Fix {
            time: only.time,
            coord: only.coord.clone(),
            position: only.position.clone(),
            style: only.style.clone(),
        });
    }
    let any_style = all.iter().any(|f| !f.style.is_null());
    let start = all.first().and_then(|f| f.time);
    let end = all.last().and_then(|f| f.time);
    if let Some(geometry) = track.get_mut("geometry").and_then(Value::as_object_mut) {
        geometry.insert(
            "coordinates".to_owned(),
            Value::Array(all.iter().map(|f| f.coord.clone()).collect()),
        );
    }
    if let Some(props) = track.get_mut("properties").and_then(Value::as_object_mut) {
        props.insert(
            "positions".to_owned(),
            Value::Array(all.iter().map(|f| f.position.clone()).collect()),
        );
        if any_style {
            props.insert(
                "position_style_overrides".to_owned(),
                Value::Array(all.into_iter().map(|f| f.style).collect()),
            );
        }
        if let Some(t) = start {
            props.insert("start_time".to_owned(), json!(rfc3339(t)));
        }
        if let Some(t) = end {
            props.insert("end_time".to_owned(), json!(rfc3339(t)));
        }
    }
    added
}

/// Adds `sensors` (`SensorData[]` JSON) to the track's `properties.sensors`, merged by sensor
/// name (contacts in time order). Returns how many contacts were added.
fn merge_sensors(track: &mut Value, sensors: &[Value]) -> usize {
    let Some(props) = track.get_mut("properties").and_then(Value::as_object_mut) else {
        return 0;
    };
    let list = props
        .entry("sensors")
        .or_insert_with(|| Value::Array(Vec::new()));
    if !list.is_array() {
        *list = Value::Array(Vec::new());
    }
    let Some(list) = list.as_array_mut() else {
        return 0;
    };
    let mut added = 0;
    for sensor in sensors {
        let contacts = sensor
            .get("contacts")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        added += contacts.len();
        let name = sensor.get("name");
        match list.iter_mut().find(|s| s.get("name") == name) {
            Some(existing) => {
                let Some(mine) = existing.get_mut("contacts").and_then(Value::as_array_mut) else {
                    continue;
                };
                mine.extend(contacts);
                mine.sort_by_key(|c| c.get("time").and_then(time_of));
            }
            None => list.push(sensor.clone()),
        }
    }
    added
}

/// `[w, s, e, n]` covering both.
fn union_bbox(a: Option<[f64; 4]>, b: Option<[f64; 4]>) -> Option<[f64; 4]> {
    match (a, b) {
        (Some(a), Some(b)) => Some([
            a[0].min(b[0]),
            a[1].min(b[1]),
            a[2].max(b[2]),
            a[3].max(b[3]),
        ]),
        (a, b) => a.or(b),
    }
}

impl StacStore {
    /// Adds the layers of `sources` (read as one text, as for a new plot) to the plot
    /// `plot_id` of this store, attaching what names the plot's tracks to them. Nothing is
    /// written when a file fails to parse or brings nothing.
    ///
    /// # Errors
    ///
    /// [`ImportError::NoPlot`] when the store has no such plot, the parse errors of
    /// [`crate::import::prepare_plot`], [`ImportError::Empty`], [`ImportError::TooLarge`], and
    /// the store's read and write errors.
    pub fn add_to_plot(
        &mut self,
        plot_id: &str,
        sources: &[RepSource],
    ) -> Result<Added, ImportError> {
        if sources.is_empty() {
            return Err(ImportError::NoFiles);
        }
        let entry = self
            .item(plot_id)
            .cloned()
            .ok_or_else(|| ImportError::NoPlot {
                plot: quote(plot_id).into_owned(),
            })?;
        let features_path = entry
            .features_path
            .clone()
            .ok_or_else(|| StoreError::NoFeatures {
                plot_id: entry.plot_id.clone(),
            })?;
        let raw = crate::store::read_store_file(&self.root, &features_path, StoreFile::Features)?;
        // Written back as it was laid out: pretty (as a save writes it) or compact.
        let pretty = raw.starts_with(b"{\n");
        let before_sha256 = sha256_hex(&raw);
        let mut collection: Value =
            serde_json::from_slice(&raw).map_err(|e| StoreError::Parse {
                path: features_path.clone(),
                message: e.to_string(),
            })?;
        drop(raw);
        if collection
            .get("features")
            .and_then(Value::as_array)
            .is_none()
        {
            return Err(StoreError::Parse {
                path: features_path,
                message: "expected a GeoJSON FeatureCollection with a \"features\" array"
                    .to_owned(),
            }
            .into());
        }
        let item_file = self.root.join(&entry.item_path);
        let item_bytes = crate::store::read_store_file(&self.root, &item_file, StoreFile::Json)?;
        let mut item: Value =
            serde_json::from_slice(&item_bytes).map_err(|e| StoreError::Parse {
                path: item_file.clone(),
                message: e.to_string(),
            })?;
        let mut features: Vec<Value> = collection
            .get_mut("features")
            .and_then(Value::as_array_mut)
            .map(std::mem::take)
            .unwrap_or_default();
        let known = known_tracks(&features);
        let known_ids: HashMap<&str, &str> = known
            .iter()
            .map(|k| (k.id.as_str(), k.name.as_str()))
            .collect();

        // Every file parsed on its own for its report, then all of them together beside the
        // plot's tracks.
        let (parsed, files, label) = crate::import::parse_sources(sources, &known)?;
        if parsed.feature_count() == 0 {
            let skipped: usize = parsed.unhandled.iter().map(|u| u.count).sum();
            let why = if skipped == 0 {
                "the file is empty or only comments".to_owned()
            } else {
                format!(
                    "its {skipped} line(s) are of kinds toolgate cannot import yet, listed above"
                )
            };
            return Err(ImportError::Empty {
                name: quote(&label).into_owned(),
                why,
            });
        }

        let mut ids = Ids::new(&features);
        let index: HashMap<String, usize> = features
            .iter()
            .enumerate()
            .filter_map(|(i, f)| id_of(f).map(|id| (id.to_owned(), i)))
            .collect();
        let known_index = |name: &str| -> Option<usize> {
            known
                .iter()
                .find(|k| k.name == name)
                .and_then(|k| index.get(&k.id).copied())
        };
        let mut kinds: Vec<(String, usize)> = Vec::new();
        let mut count_kind = |kind: &str| match kinds.iter_mut().find(|(k, _)| k == kind) {
            Some((_, n)) => *n += 1,
            None => kinds.push((kind.to_owned(), 1)),
        };
        let mut attached: Vec<(String, usize)> = Vec::new();
        let mut attach = |name: &str| match attached.iter_mut().find(|(n, _)| n == name) {
            Some((_, n)) => *n += 1,
            None => attached.push((name.to_owned(), 1)),
        };
        let mut unattached: Vec<(String, usize)> = Vec::new();
        let (mut positions, mut contacts) = (0usize, 0usize);
        let mut new_features = Vec::new();
        for mut feature in parsed.features() {
            let kind = kind_of(&feature).to_owned();
            let id = id_of(&feature).unwrap_or_default().to_owned();
            // A track the plot has: its positions and sensors join it.
            if kind == "TRACK"
                && known_ids.contains_key(id.as_str())
                && let Some(&i) = index.get(&id)
                && let Some(track) = features.get_mut(i)
            {
                positions += merge_positions(track, &feature);
                let sensors = feature
                    .pointer("/properties/sensors")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                contacts += merge_sensors(track, &sensors);
                attach(known_ids.get(id.as_str()).copied().unwrap_or(&id));
                continue;
            }
            // Sensor data for a track the plot has: onto that track.
            if kind == "SENSOR"
                && let Some(host) = feature
                    .pointer("/properties/platform_id")
                    .and_then(Value::as_str)
                && let Some(i) = known_index(host)
                && let Some(track) = features.get_mut(i)
            {
                let sensors = feature
                    .pointer("/properties/sensors")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                contacts += merge_sensors(track, &sensors);
                attach(host);
                continue;
            }
            let props = feature.get("properties");
            let track_id = props
                .and_then(|p| p.get("track_id"))
                .and_then(Value::as_str);
            let track_name = props
                .and_then(|p| p.get("track_name"))
                .and_then(Value::as_str);
            match (track_id, track_name) {
                (Some(t), _) if known_ids.contains_key(t) => {
                    attach(known_ids.get(t).copied().unwrap_or(t));
                }
                (None, Some(name)) => match unattached.iter_mut().find(|(n, _)| n == name) {
                    Some((_, n)) => *n += 1,
                    None => unattached.push((name.to_owned(), 1)),
                },
                _ => {}
            }
            let fresh = ids.fresh(&id);
            if fresh != id
                && let Some(obj) = feature.as_object_mut()
            {
                obj.insert("id".to_owned(), Value::String(fresh));
            }
            count_kind(&kind);
            new_features.push(feature);
        }
        features.extend(new_features);

        if let Some(obj) = collection.as_object_mut() {
            obj.insert("features".to_owned(), Value::Array(features));
        }
        let mut bytes = if pretty {
            serde_json::to_vec_pretty(&collection)
        } else {
            serde_json::to_vec(&collection)
        }
        .map_err(|e| StoreError::Parse {
            path: features_path.clone(),
            message: e.to_string(),
        })?;
        bytes.push(b'\n');
        if bytes.len() as u64 > MAX_FEATURES_BYTES {
            return Err(ImportError::TooLarge {
                name: quote(&entry.title).into_owned(),
                size: bytes.len() as u64,
            });
        }

        update_item(&mut item, &parsed, &files, &before_sha256, &bytes);
        let item_out = {
            let mut b = serde_json::to_vec_pretty(&item).map_err(|e| StoreError::Parse {
                path: item_file.clone(),
                message: e.to_string(),
            })?;
            b.push(b'\n');
            b
        };
        let write = |path: &std::path::Path, bytes: &[u8]| {
            atomic_write_beneath(Some(&self.root), path, bytes).map_err(|source| {
                StoreError::Write {
                    path: path.to_owned(),
                    source,
                }
            })
        };
        write(&features_path, &bytes)?;
        write(&item_file, &item_out)?;
        let parsed_item: crate::stac_model::Item =
            serde_json::from_value(item).map_err(|e| StoreError::Parse {
                path: item_file.clone(),
                message: e.to_string(),
            })?;
        let fresh = self.entry(&item_file, &parsed_item)?;
        if let Some(slot) = self.items.iter_mut().find(|i| i.plot_id == fresh.plot_id) {
            *slot = fresh;
        }
        self.mark_read();
        Ok(Added {
            plot_id: entry.plot_id,
            title: entry.title,
            files,
            kinds,
            positions,
            contacts,
            attached,
            unattached,
        })
    }
}

/// The item after an addition: time span and bbox widened, new platforms listed, the files
/// added to the provenance; `features_sha256` follows the new file only when the plot held no
/// saved edits (so a later replace still says edits would be lost).
fn update_item(
    item: &mut Value,
    parsed: &rep::RepImport,
    files: &[FileReport],
    before_sha256: &str,
    after: &[u8],
) {
    let old_bbox = item.get("bbox").and_then(Value::as_array).and_then(|b| {
        let v: Vec<f64> = b.iter().filter_map(num).collect();
        <[f64; 4]>::try_from(v.as_slice()).ok()
    });
    let dated = item
        .pointer("/properties/datetime")
        .is_some_and(|d| !d.is_null())
        || item.pointer("/properties/start_datetime").is_some();
    // An undated plot's bbox of zeros is no extent.
    let old_bbox = old_bbox.filter(|b| dated || b.iter().any(|v| *v != 0.0));
    if let Some(b) = union_bbox(old_bbox, parsed.bbox) {
        item["bbox"] = json!(b);
        item["geometry"] = json!({"type": "Polygon", "coordinates": [[[b[0], b[1]], [b[2], b[1]], [b[2], b[3]], [b[0], b[3]], [b[0], b[1]]]]});
    }
    let props = item.get_mut("properties").and_then(Value::as_object_mut);
    let Some(props) = props else { return };
    let get = |props: &Map<String, Value>, k: &str| props.get(k).and_then(time_of);
    let old = match (
        get(props, "start_datetime").or_else(|| get(props, "datetime")),
        get(props, "end_datetime").or_else(|| get(props, "datetime")),
    ) {
        (Some(s), Some(e)) => Some((s, e)),
        _ => None,
    };
    let span = match (old, parsed.time_span) {
        (Some((a, b)), Some((c, d))) => Some((a.min(c), b.max(d))),
        (a, b) => a.or(b),
    };
    if let Some((start, end)) = span {
        props.insert("datetime".to_owned(), json!(rfc3339(start)));
        props.insert("start_datetime".to_owned(), json!(rfc3339(start)));
        props.insert("end_datetime".to_owned(), json!(rfc3339(end)));
    }
    let platforms = props
        .entry("debrief:platforms")
        .or_insert_with(|| Value::Array(Vec::new()));
    if let Some(list) = platforms.as_array_mut() {
        for p in &parsed.platforms {
            if !list.iter().any(|q| {
                q.get("id").and_then(Value::as_str) == Some(p.id.as_str())
                    || q.get("name").and_then(Value::as_str) == Some(p.id.as_str())
            }) {
                list.push(serde_json::to_value(p).unwrap_or_default());
            }
        }
    }
    let provenance = props
        .entry("debrief:provenance")
        .or_insert_with(|| json!({"tool": "toolgate import"}));
    if let Some(prov) = provenance.as_object_mut() {
        let recorded = prov
            .get("features_sha256")
            .and_then(Value::as_str)
            .map(str::to_owned);
        if recorded.as_deref() == Some(before_sha256) {
            prov.insert("features_sha256".to_owned(), json!(sha256_hex(after)));
        }
        let sources = prov
            .entry("sources")
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Some(list) = sources.as_array_mut() {
            for f in files {
                let kinds: Map<String, Value> = f
                    .kinds
                    .iter()
                    .map(|(k, n)| ((*k).to_owned(), json!(n)))
                    .collect();
                list.push(json!({"file": f.name, "features": kinds, "positions": f.positions, "contacts": f.contacts, "added": true}));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::import::import_rep_files;

    const BOAT1: &[u8] = include_bytes!("../../rep/tests/fixtures/rep/valid/boat1.rep");
    const BOAT2: &[u8] = include_bytes!("../../rep/tests/fixtures/rep/valid/boat2.rep");
    const NARRATIVE: &[u8] = include_bytes!("../../rep/tests/fixtures/rep/valid/narrative.rep");
    /// Legacy Debrief's sample data (EPL; `rep/tests/fixtures/rep/legacy/NOTICE.md`).
    const SENSOR_ARCS: &[u8] =
        include_bytes!("../../rep/tests/fixtures/rep/legacy/sensor_arcs.rep");

    fn source(name: &str, bytes: &[u8]) -> RepSource {
        RepSource {
            name: name.to_owned(),
            bytes: bytes.to_vec(),
            path: None,
        }
    }

    fn features(store: &StacStore, plot_id: &str) -> Vec<Value> {
        let entry = store.item(plot_id).unwrap();
        let loaded = store.load_features(entry).unwrap();
        loaded.collection["features"].as_array().unwrap().clone()
    }

    fn boats(dir: &std::path::Path) -> (StacStore, String) {
        let mut store = StacStore::create("s", dir, "s").unwrap();
        let (_, written) = import_rep_files(
            &mut store,
            &[source("boat1.rep", BOAT1), source("boat2.rep", BOAT2)],
            Some("Boats"),
            false,
        )
        .unwrap();
        (store, written.plot_id)
    }

    #[test]
    fn legacy_sensor_arcs_attach_to_the_plots_tracks() {
        let d = tempfile::tempdir().unwrap();
        let (mut store, plot) = boats(d.path());
        let item_before: Value =
            serde_json::from_slice(&std::fs::read(d.path().join("boats/item.json")).unwrap())
                .unwrap();
        let added = store
            .add_to_plot(&plot, &[source("sensor_arcs.rep", SENSOR_ARCS)])
            .unwrap();
        assert_eq!(added.kinds, [("SENSOR_ARC".to_owned(), 46)]);
        assert_eq!(
            added.attached,
            [("NELSON".to_owned(), 43), ("COLLINGWOOD".to_owned(), 3)]
        );
        assert!(added.unattached.is_empty(), "{:?}", added.unattached);
        let fs = features(&store, &plot);
        assert_eq!(fs.len(), 48);
        let arcs: Vec<&Value> = fs.iter().filter(|f| kind_of(f) == "SENSOR_ARC").collect();
        assert_eq!(arcs.len(), 46);
        let on_nelson = arcs
            .iter()
            .filter(|f| f["properties"]["track_id"] == "track-nelson")
            .count();
        assert_eq!(on_nelson, 43);
        // Ids stay unique; the store reads the plot again as it was written.
        let ids: HashSet<&str> = fs.iter().filter_map(id_of).collect();
        assert_eq!(ids.len(), fs.len());
        let reopened = StacStore::open("s", d.path()).unwrap();
        assert_eq!(features(&reopened, &plot).len(), 48);
        // The item keeps its span (the arcs fall inside it) and says where the arcs came from.
        let item: Value =
            serde_json::from_slice(&std::fs::read(d.path().join("boats/item.json")).unwrap())
                .unwrap();
        assert_eq!(
            item["properties"]["start_datetime"],
            item_before["properties"]["start_datetime"]
        );
        let sources = item["properties"]["debrief:provenance"]["sources"]
            .as_array()
            .unwrap();
        assert_eq!(sources.last().unwrap()["file"], "sensor_arcs.rep");
        // No saved edits before: the importer's hash follows the new file.
        let now = std::fs::read(d.path().join("boats/features.geojson")).unwrap();
        assert_eq!(
            item["properties"]["debrief:provenance"]["features_sha256"],
            sha256_hex(&now)
        );
    }

    #[test]
    fn positions_sensors_solutions_and_narratives_join_the_tracks_they_name() {
        let d = tempfile::tempdir().unwrap();
        let (mut store, plot) = boats(d.path());
        let more = b"951212 120000 NELSON @C 22 0 0 N 21 0 0 W 90 5 0\n\
951212 050000 NELSON @C 22 11 10.63 N 21 41 52.37 W 269.7 2.0 0\n\
;SENSOR: 951212 060000 NELSON @A NULL 45 NULL SONAR first\n\
;SENSOR: 951212 061000 COLLINGWOOD @A NULL 45 NULL SONAR second\n\
;TMA_RB: 951212 060000 NELSON @A 90 2000 SOL NULL 90 10 0 l\n\
;NARRATIVE: 951212 060000 NELSON hello\n\
;NARRATIVE: 951212 060000 GHOST boo\n";
        let added = store
            .add_to_plot(&plot, &[source("more.rep", more)])
            .unwrap();
        assert_eq!(
            added.positions, 1,
            "a time the track has is not added twice"
        );
        assert_eq!(added.contacts, 2);
        assert_eq!(added.unattached, [("GHOST".to_owned(), 1)]);
        let fs = features(&store, &plot);
        let nelson = fs
            .iter()
            .find(|f| id_of(f) == Some("track-nelson"))
            .unwrap();
        let positions = nelson["properties"]["positions"].as_array().unwrap();
        let coords = nelson["geometry"]["coordinates"].as_array().unwrap();
        assert_eq!(positions.len(), 403);
        assert_eq!(coords.len(), 403);
        assert_eq!(
            nelson["properties"]["end_time"],
            positions.last().unwrap()["time"]
        );
        assert_eq!(
            nelson["properties"]["end_time"],
            "1995-12-12T12:00:00+00:00"
        );
        assert_eq!(nelson["properties"]["sensors"][0]["name"], "SONAR");
        let collingwood = fs
            .iter()
            .find(|f| id_of(f) == Some("track-collingwood"))
            .unwrap();
        assert_eq!(
            collingwood["properties"]["sensors"][0]["contacts"]
                .as_array()
                .unwrap()
                .len(),
            1
        );
        assert!(
            fs.iter().all(|f| kind_of(f) != "SENSOR"),
            "sensors moved onto the tracks"
        );
        let tma = fs.iter().find(|f| kind_of(f) == "TMA_SOLUTION").unwrap();
        assert_eq!(tma["properties"]["track_id"], "track-nelson");
        assert_eq!(
            tma["geometry"]["type"], "Point",
            "placed from NELSON's positions"
        );
        let item: Value =
            serde_json::from_slice(&std::fs::read(d.path().join("boats/item.json")).unwrap())
                .unwrap();
        assert_eq!(
            item["properties"]["end_datetime"],
            "1995-12-12T12:00:00+00:00"
        );
    }

    #[test]
    fn added_ids_continue_after_the_plots_own() {
        let d = tempfile::tempdir().unwrap();
        let mut store = StacStore::create("s", d.path(), "s").unwrap();
        let (_, written) = import_rep_files(
            &mut store,
            &[source("narrative.rep", NARRATIVE)],
            None,
            false,
        )
        .unwrap();
        // An analyst's saved edit: the hash of the import no longer matches.
        let path = d.path().join("narrative/features.geojson");
        let mut edited = std::fs::read(&path).unwrap();
        edited.splice(0..0, b" ".iter().copied());
        std::fs::write(&path, &edited).unwrap();
        let store_again = &mut StacStore::open("s", d.path()).unwrap();
        store_again
            .add_to_plot(&written.plot_id, &[source("n2.rep", NARRATIVE)])
            .unwrap();
        let fs = features(store_again, &written.plot_id);
        assert_eq!(fs.len(), 38);
        assert_eq!(id_of(&fs[19]), Some("narrative-20"));
        assert_eq!(id_of(&fs[37]), Some("narrative-38"));
        let item: Value =
            serde_json::from_slice(&std::fs::read(d.path().join("narrative/item.json")).unwrap())
                .unwrap();
        let now = std::fs::read(&path).unwrap();
        assert_ne!(
            item["properties"]["debrief:provenance"]["features_sha256"],
            sha256_hex(&now),
            "saved edits stay detectable"
        );
    }

    #[test]
    fn nothing_is_written_when_a_file_fails_or_the_plot_is_missing() {
        let d = tempfile::tempdir().unwrap();
        let (mut store, plot) = boats(d.path());
        let before = std::fs::read(d.path().join("boats/features.geojson")).unwrap();
        let bad = source("bad.rep", b"951212 050000 X @A 91 0 0 N 1 0 0 E 0 0 0\n");
        let err = store.add_to_plot(&plot, &[bad]).unwrap_err();
        assert!(err.to_string().starts_with("bad.rep:1:"), "{err}");
        let err = store
            .add_to_plot("stac://s/nope/item.json", &[source("n.rep", NARRATIVE)])
            .unwrap_err();
        assert!(matches!(err, ImportError::NoPlot { .. }), "{err}");
        assert_eq!(
            std::fs::read(d.path().join("boats/features.geojson")).unwrap(),
            before
        );
    }

    #[test]
    fn a_plot_is_found_by_its_short_name() {
        let d = tempfile::tempdir().unwrap();
        let (store, plot) = boats(d.path());
        for name in ["boats", "Boats", "BOATS", "stac://s/boats/item.json"] {
            let found: Vec<&str> = store
                .lookup(name)
                .iter()
                .map(|i| i.plot_id.as_str())
                .collect();
            assert_eq!(found, [plot.as_str()], "{name}");
        }
        assert!(store.lookup("boat").is_empty());
        assert!(store.lookup("stac://s/boat/item.json").is_empty());
    }
}
