//! Debrief's tools that change or export a plot, by the catalogue's own categories:
//! manipulation (`track/manipulation`: trim, interpolate, merge, group, split, jump repair,
//! courses and speeds; [`MANIPULATION`]), styling (`track/styling`; [`STYLING`]), shape
//! (`shape/manipulation`; [`SHAPE`]), reference (`reference/generation`,
//! `reference/classification`: reference points, zone classification; [`REFERENCE`]) and export
//! (`dataset/export`; [`EXPORT`]).
//!
//! Each category is one table of `toolgate_tool_catalogue::Entry`s; `toolgate-native-tools`
//! chains them (with the analysis tools) into the registry's listing. Mutations and additions
//! return whole features, which the registry turns into one change set; no tool touches a
//! session.
#![warn(unreachable_pub)]

mod export;
mod manipulation;
mod reference;
mod shape;
mod styling;

use toolgate_tool_catalogue::Entry;

/// Manipulation: `track/manipulation`.
pub const MANIPULATION: &[Entry] = manipulation::TOOLS;
/// Styling: `track/styling`.
pub const STYLING: &[Entry] = styling::TOOLS;
/// Shape: `shape/manipulation`.
pub const SHAPE: &[Entry] = shape::TOOLS;
/// Reference: `reference/generation`, `reference/classification`.
pub const REFERENCE: &[Entry] = reference::TOOLS;
/// Export: `dataset/export`.
pub const EXPORT: &[Entry] = export::TOOLS;
