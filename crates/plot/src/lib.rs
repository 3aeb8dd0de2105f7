//! The Debrief plot domain: the STAC catalogue, sessions with dirty/undo/save, search, summary,
//! targeting and the four agent tools.
//!
//! REP import (`toolgate-rep`), the native Debrief tools (`toolgate-native-tools`) and the feature
//! model (`toolgate-feature`) are crates of their own that depend on nothing here; they are
//! re-exported as [`rep`], [`tools`] and [`model`] so `toolgate_plot::rep::…`,
//! `toolgate_plot::tools::…` and `crate::model::…` paths keep working.

#![warn(unreachable_pub)]
// Public: the modules other crates name. `fsio` (the store's use of toolgate-fs),
// `import_into` (methods on `StacStore`) and `stac_model` (the types `store` reads) are not.
pub mod activity;
pub mod debrief;
pub mod demo;
mod fsio;
pub mod import;
mod import_into;
pub mod journal;
pub mod model;
pub mod run;
pub mod search;
pub mod session;
pub mod stac_api;
mod stac_model;
pub mod store;
pub mod summary;
pub mod transaction;

pub use fsio::sha256_hex;
pub use toolgate_native_tools as tools;
pub use toolgate_rep as rep;
