//! The Debrief plot domain: REP import, the STAC catalogue, sessions with dirty/undo/save,
//! search, summary, targeting, the native analysis tools and the four agent tools.

pub mod agent;
pub mod calc_stdio;
pub mod demo;
pub mod fsio;
pub mod model;
pub mod rep;
pub mod search;
pub mod session;
pub mod store;
pub mod summary;
pub mod targeting;
pub mod tools;
pub mod transaction;
