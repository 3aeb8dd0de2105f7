//! Catalogue tools of this category (see `super`). Add an [`Entry`] per tool to `TOOLS`.

use super::Entry;

pub(crate) const TOOLS: &[Entry] = &[];
