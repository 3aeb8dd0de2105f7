//! The STAC objects a folder catalogue is read from — Catalog, Collection and Item (STAC 1.x:
//! item-spec, catalog-spec, collection-spec) — as plain serde types.
//!
//! Written here rather than taken from the `stac` crate (rustac) on purpose: `stac` 0.17
//! unconditionally compiles a CQL2 parser into every build that uses it (`cql2`, which brings
//! `sqlparser`, a second `jsonschema`, `geozero`, `pest` and `wkt`). Measured with
//! `cargo build --release --timings`, those crates were about 17% of toolgate's whole release
//! build CPU time (`sqlparser` alone 208 s of 2,582 s), while the store reads a handful of fields
//! of three object types. What the store needs of them is small and fixed by the spec: the `type`
//! that says which object a file is, `id`, `title`, `links` (`rel`, `href`), an Item's `bbox`,
//! its `properties` (`title`, `description`, `datetime`, `start_datetime`, `end_datetime`, and
//! the `debrief:*` extension fields kept as JSON) and `assets` (`href`, `roles`). The rest of a
//! file is ignored on reading and never rewritten from these types: the store edits the JSON it
//! read, so fields it does not know survive a save.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::{Map, Value as Json};

/// One STAC object, chosen by its `type` (`Feature` is an Item).
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type")]
pub(crate) enum Value {
    #[serde(rename = "Feature")]
    Item(Box<Item>),
    Catalog(Catalog),
    Collection(Catalog),
}

/// A Catalog or a Collection: what the store follows (its `links`) and shows (its title).
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Catalog {
    pub id: String,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub links: Vec<Link>,
}

/// A link of a catalogue or an item.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Link {
    pub href: String,
    pub rel: String,
}

/// A STAC Item: one plot.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Item {
    pub id: String,
    #[serde(default, deserialize_with = "bbox")]
    pub bbox: Option<[f64; 4]>,
    pub properties: Properties,
    // An item's own links are not read: the plot's files are its assets.
    #[serde(default)]
    pub assets: BTreeMap<String, Asset>,
}

/// An Item's properties: the common metadata the store reads, and every other field as JSON.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Properties {
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    /// Required by the spec, `null` when the item gives `start_datetime`/`end_datetime`.
    #[serde(default)]
    pub datetime: Option<DateTime<Utc>>,
    #[serde(default)]
    pub start_datetime: Option<DateTime<Utc>>,
    #[serde(default)]
    pub end_datetime: Option<DateTime<Utc>>,
    #[serde(flatten)]
    pub additional_fields: Map<String, Json>,
}

/// An Item's asset: where its data is.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Asset {
    pub href: String,
    #[serde(default)]
    pub roles: Vec<String>,
}

/// A 2D (`[w, s, e, n]`) or 3D (`[w, s, zmin, e, n, zmax]`) bbox as its 2D extent; any other
/// length is an error naming what was found.
fn bbox<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<[f64; 4]>, D::Error> {
    let Some(v) = Option::<Vec<f64>>::deserialize(d)? else {
        return Ok(None);
    };
    match v.as_slice() {
        [w, s, e, n] => Ok(Some([*w, *s, *e, *n])),
        [w, s, _, e, n, _] => Ok(Some([*w, *s, *e, *n])),
        other => Err(serde::de::Error::custom(format!(
            "a bbox has 4 numbers (2D) or 6 (3D), not {}",
            other.len()
        ))),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn reads_an_item_with_a_3d_bbox_and_extension_fields() {
        let v: Value = serde_json::from_str(
            r#"{"type":"Feature","stac_version":"1.0.0","id":"a","geometry":null,
                "bbox":[1,2,-5,3,4,7],
                "properties":{"datetime":null,"start_datetime":"2020-01-01T01:00:00+01:00",
                  "end_datetime":"2020-01-02T00:00:00Z","title":"A","debrief:tags":["x"]},
                "links":[{"rel":"self","href":"./a.json"}],
                "assets":{"features":{"href":"./features.geojson","roles":["data"]}}}"#,
        )
        .unwrap();
        let Value::Item(item) = v else {
            panic!("not an item")
        };
        assert_eq!(item.bbox, Some([1.0, 2.0, 3.0, 4.0]));
        assert_eq!(item.properties.datetime, None);
        assert_eq!(
            item.properties.start_datetime.unwrap().to_rfc3339(),
            "2020-01-01T00:00:00+00:00"
        );
        assert_eq!(item.properties.additional_fields["debrief:tags"][0], "x");
        assert_eq!(item.assets["features"].roles, ["data"]);
    }

    #[test]
    fn the_type_chooses_the_object_and_bad_shapes_are_errors() {
        let c: Value =
            serde_json::from_str(r#"{"type":"Collection","id":"c","links":[]}"#).unwrap();
        assert!(matches!(c, Value::Collection(_)));
        assert!(serde_json::from_str::<Value>(r#"{"type":"FeatureCollection"}"#).is_err());
        assert!(serde_json::from_str::<Value>(r#"{"id":"no type"}"#).is_err());
        let err = serde_json::from_str::<Value>(
            r#"{"type":"Feature","id":"a","bbox":[1,2,3],"properties":{}}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("not 3"), "{err}");
        assert!(
            serde_json::from_str::<Value>(
                r#"{"type":"Feature","id":"a","properties":{"datetime":"yesterday"}}"#
            )
            .is_err()
        );
    }
}
