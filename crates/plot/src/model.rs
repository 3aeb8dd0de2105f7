//! The plot feature model: [`Feature`] from `toolgate-feature`, plus the point-free forms that
//! were this module's API before the accessor existed (`features.iter().map(model::feature_id)`),
//! kept so session, targeting and transaction code — and branches in flight — read as before.
//! They only delegate; every rule lives in [`Feature`], and new code should read through it.

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

/// [`Feature::kind`].
pub fn kind(f: &Value) -> &str {
    Feature(f).kind()
}

/// [`Feature::platform`], owned.
pub fn platform(f: &Value) -> Option<String> {
    Feature(f).platform().map(str::to_owned)
}

/// [`Feature::time_span`], owned.
pub fn time_span(f: &Value) -> Option<(String, String)> {
    Feature(f)
        .time_span()
        .map(|(s, e)| (s.to_owned(), e.to_owned()))
}

/// [`Feature::point_count`].
pub fn point_count(f: &Value) -> Option<usize> {
    Feature(f).point_count()
}

/// [`Feature::bbox`].
pub fn feature_bbox(f: &Value) -> Option<[f64; 4]> {
    Feature(f).bbox()
}
