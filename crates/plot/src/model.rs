//! The plot feature model, from `toolgate-feature`.

pub use toolgate_feature::*;
