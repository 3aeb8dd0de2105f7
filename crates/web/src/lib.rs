//! The workbench: an offline web editor for plots with the natural-language panel.
