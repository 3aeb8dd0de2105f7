//! Assembling the parsed records into the typed features of a [`RepImport`].

use std::collections::{HashMap, HashSet};

use super::lex::slug;
use super::parser::{Parser, Sensor};
use super::types::{
    NarrativeFeature, Position, SensorArcFeature, SensorData, SensorFeature, TmaFeature, TmaFix,
    TrackFeature,
};
use super::{KnownTrack, PlatformRecord, RepImport};

/// Mean earth radius (IUGG), for placing the far end of a VECTOR.
const EARTH_RADIUS_M: f64 = 6_371_008.8;

/// The point `range` metres from `origin` along the great circle starting at `bearing`
/// (degrees true), on a spherical earth.
pub(super) fn destination(origin: [f64; 2], range: f64, bearing: f64) -> [f64; 2] {
    let (lon1, lat1) = (origin[0].to_radians(), origin[1].to_radians());
    let delta = range / EARTH_RADIUS_M;
    let theta = bearing.to_radians();
    let lat2 = (lat1.sin() * delta.cos() + lat1.cos() * delta.sin() * theta.cos()).asin();
    let lon2 = lon1
        + (theta.sin() * delta.sin() * lat1.cos()).atan2(delta.cos() - lat1.sin() * lat2.sin());
    let mut lon = lon2.to_degrees();
    if lon > 180.0 {
        lon -= 360.0;
    } else if lon < -180.0 {
        lon += 360.0;
    }
    [lon, lat2.to_degrees()]
}

/// Where a track was at `t`: linearly between the positions either side of it (positions
/// sorted by time); `None` outside the track's time span.
fn position_at(positions: &[Position], t: chrono::DateTime<chrono::Utc>) -> Option<[f64; 2]> {
    position_at_by(positions, t, |p| (p.time, [p.lon, p.lat]))
}

/// [`position_at`] over any time-sorted fixes, read through `fix`.
fn position_at_by<T>(
    fixes: &[T],
    t: chrono::DateTime<chrono::Utc>,
    fix: impl Fn(&T) -> (chrono::DateTime<chrono::Utc>, [f64; 2]),
) -> Option<[f64; 2]> {
    let after = fixes.partition_point(|p| fix(p).0 < t);
    let (next_time, next) = fix(fixes.get(after)?);
    if next_time == t {
        return Some(next);
    }
    let (prev_time, prev) = fix(fixes.get(after.checked_sub(1)?)?);
    let span = (next_time - prev_time).num_milliseconds() as f64;
    let frac = if span > 0.0 {
        (t - prev_time).num_milliseconds() as f64 / span
    } else {
        0.0
    };
    Some([
        prev[0] + (next[0] - prev[0]) * frac,
        prev[1] + (next[1] - prev[1]) * frac,
    ])
}

/// `base`, or `base-2`, `base-3`… — the first not yet used.
fn unique_id(base: String, used: &mut HashSet<String>) -> String {
    let mut id = base.clone();
    let mut n = 2usize;
    while used.contains(&id) {
        id = format!("{base}-{n}");
        n += 1;
    }
    used.insert(id.clone());
    id
}

/// `SensorData` with contacts in time order.
fn sensor_data(s: Sensor<'_>) -> SensorData {
    let mut contacts = s.contacts;
    contacts.sort_by_key(|c| c.time);
    SensorData {
        name: s.name.to_owned(),
        colour: s.colour,
        contacts,
    }
}

/// Assembles the import: tracks (first-seen order), narratives, annotations, then sensors whose
/// host track has no positions. Lines naming one of the `known` tracks (a plot's, when a file
/// is added to it) link to it ([`crate::parse_rep_beside`]).
pub(super) fn finish(parser: Parser<'_>, known: &[KnownTrack]) -> RepImport {
    let Parser {
        mut tracks,
        narratives,
        mut shapes,
        sensors,
        sensor_arcs,
        mut dynamic_shapes,
        tma,
        mut formats,
        mut bounds,
        mut span,
        position_count,
        unhandled,
        ..
    } = parser;
    for track in &mut tracks {
        if !track.fixes.is_sorted_by_key(|f| f.time) {
            track.fixes.sort_by_key(|f| f.time);
        }
        if let (Some(first), Some(last)) = (track.fixes.first(), track.fixes.last()) {
            let (lo, hi) = span.unwrap_or((first.time, last.time));
            span = Some((lo.min(first.time), hi.max(last.time)));
        }
    }
    let mut used: HashSet<String> = known.iter().map(|k| k.id.clone()).collect();
    let known_by_name: HashMap<&str, &KnownTrack> =
        known.iter().map(|k| (k.name.as_str(), k)).collect();

    // Sensors grouped by host, in first-seen order.
    let mut by_host: Vec<(&str, Vec<SensorData>)> = Vec::new();
    let mut host_index: HashMap<&str, usize> = HashMap::new();
    for s in sensors {
        let i = *host_index.entry(s.host).or_insert_with(|| {
            by_host.push((s.host, Vec::new()));
            by_host.len() - 1
        });
        if let Some((_, list)) = by_host.get_mut(i) {
            list.push(sensor_data(s));
        }
    }

    let mut platforms = Vec::with_capacity(tracks.len());
    let mut track_ids: HashMap<&str, String> = known
        .iter()
        .map(|k| (k.name.as_str(), k.id.clone()))
        .collect();
    let mut track_features = Vec::with_capacity(tracks.len());
    for track in tracks {
        let id = match known_by_name.get(track.name) {
            Some(k) => k.id.clone(),
            None => unique_id(format!("track-{}", slug(track.name)), &mut used),
        };
        let sensors = host_index
            .remove(track.name)
            .and_then(|i| by_host.get_mut(i))
            .map(|(_, list)| std::mem::take(list))
            .unwrap_or_default();
        platforms.push(PlatformRecord {
            id: track.name.to_owned(),
            ..PlatformRecord::default()
        });
        track_ids.insert(track.name, id.clone());
        track_features.push(TrackFeature {
            id,
            name: track.name.to_owned(),
            colour: track.symbol.colour,
            positions: track.fixes,
            sensors,
        });
    }

    let narratives = narratives
        .into_iter()
        .enumerate()
        .map(|(n, narrative)| NarrativeFeature {
            id: format!("narrative-{}", n + 1),
            time: narrative.time,
            text: narrative.text.to_owned(),
            track_name: narrative.track.to_owned(),
            track_id: track_ids.get(narrative.track).cloned(),
            entry_type: narrative.entry_type.map(str::to_owned),
        })
        .collect();

    let sensor_arcs = sensor_arcs
        .into_iter()
        .enumerate()
        .map(|(n, arc)| SensorArcFeature {
            id: format!("sensorarc-{}", n + 1),
            track_name: arc.host.to_owned(),
            track_id: track_ids.get(arc.host).cloned(),
            sensor_name: arc.name,
            colour: arc.colour,
            start: arc.start,
            end: arc.end,
            arcs: arc.arcs,
        })
        .collect();

    for (n, shape) in shapes.iter_mut().enumerate() {
        shape.id = format!("shape-{}", n + 1);
    }
    for (n, f) in formats.iter_mut().enumerate() {
        f.id = format!("format-{}", n + 1);
    }

    // A dynamic shape's state lasts until the next state of the same name; the last one until
    // the file's latest time.
    let latest = span.map(|(_, hi)| hi);
    let mut by_name: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, d) in dynamic_shapes.iter().enumerate() {
        by_name.entry(d.name.as_str()).or_default().push(i);
    }
    let mut ends = vec![None; dynamic_shapes.len()];
    for states in by_name.values_mut() {
        states.sort_by_key(|&i| dynamic_shapes.get(i).map(|d| d.start));
        for pair in states.windows(2) {
            if let &[this, next] = pair
                && let (Some(e), Some(next)) = (ends.get_mut(this), dynamic_shapes.get(next))
            {
                *e = Some(next.start);
            }
        }
    }
    for (n, (d, end)) in dynamic_shapes.iter_mut().zip(ends).enumerate() {
        d.id = format!("dynamic-{}", n + 1);
        d.end = end.or(latest).unwrap_or(d.start).max(d.start);
    }

    let tma = tma
        .into_iter()
        .enumerate()
        .map(|(n, t)| {
            let host = track_features.iter().find(|f| f.name == t.host);
            let (origin, at) = match t.fix {
                TmaFix::Position(at) => (None, Some(at)),
                TmaFix::RangeBearing { bearing, range } => {
                    let origin = match host {
                        Some(h) => position_at(&h.positions, t.time),
                        None => known_by_name
                            .get(t.host)
                            .and_then(|k| position_at_by(&k.fixes, t.time, |f| *f)),
                    };
                    (origin, origin.map(|o| destination(o, range, bearing)))
                }
            };
            if let (Some(o), Some(a)) = (origin, at) {
                bounds.add(o);
                bounds.add(a);
            }
            TmaFeature {
                id: format!("tma-{}", n + 1),
                track_name: t.host.to_owned(),
                track_id: track_ids.get(t.host).cloned(),
                solution_name: t.solution.to_owned(),
                colour: t.colour,
                time: t.time,
                fix: t.fix,
                origin,
                at,
                ellipse: t.ellipse,
                course: t.course,
                speed: t.speed,
                depth: t.depth,
                label: t.label,
            }
        })
        .collect();

    // Sensor data whose host track never had a position line.
    let mut sensor_features = Vec::new();
    for (host, list) in by_host {
        if list.is_empty() || !host_index.contains_key(host) {
            continue;
        }
        sensor_features.push(SensorFeature {
            id: unique_id(format!("sensor-{}", slug(host)), &mut used),
            platform_id: host.to_owned(),
            sensors: list,
        });
    }

    RepImport {
        tracks: track_features,
        narratives,
        shapes,
        sensors: sensor_features,
        sensor_arcs,
        dynamic_shapes,
        tma,
        formats,
        platforms,
        bbox: bounds.get(),
        time_span: span,
        position_count,
        unhandled,
    }
}
