//! The Debrief plot domain.

pub mod rep;
