//! The plot feature model: [`Feature`] from `toolgate-feature`, and point-free forms of the two
//! accessors that session, targeting and transaction code map over feature slices with
//! (`features.iter().map(model::feature_id)`). They delegate; the rules live in [`Feature`].

use serde_json::Value;

pub use toolgate_feature::{Feature, geometry_bbox, union_bbox};

/// [`Feature::id`], or "" when the feature has none.
pub fn feature_id(f: &Value) -> String {
    Feature(f).id().unwrap_or_default()
}

/// [`Feature::display_name`].
pub fn display_name(f: &Value) -> String {
    Feature(f).display_name()
}

/// [`Feature::bbox`].
pub fn feature_bbox(f: &Value) -> Option<[f64; 4]> {
    Feature(f).bbox()
}
