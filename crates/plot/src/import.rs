//! REP import into the plot store: one or several REP files become ONE plot (as an analyst
//! builds a Debrief plot from an ownship file, contact files, a narrative and sensor files).
//!
//! Two steps, so that nothing is written until every file has been read:
//! [`prepare_plot`] decodes and parses every file (any error names `file:line:col`) and builds
//! the STAC item and the features; [`StacStore::add_prepared`] writes them, refusing to replace
//! an existing plot unless asked to. [`import_rep_files`] does both — the call the CLI's
//! `toolgate import` and the workbench make.
//!
//! The files' lines are read as one text, file after file, so a track named in two files is
//! one track (its positions merged and sorted by time), sensor lines attach to their host track
//! whichever file holds it, and ids are unique across the plot.

use std::path::PathBuf;

use serde_json::{Value, json};
use toolgate_core::clip::quote;
use toolgate_rep as rep;

use crate::fsio::sha256_hex;
use crate::run::Audience;
use crate::store::{MAX_FEATURES_BYTES, StacStore, StoreError, StoreFile};

/// Most bytes of a plot name: its slug names the plot's folder, and a file name has at most 255
/// bytes.
pub const MAX_PLOT_NAME_BYTES: usize = 200;

/// One REP file to import: its name (for messages and provenance), its bytes and, when it came
/// from disk, its path (for the item's `derived_from` link).
#[derive(Debug, Clone)]
pub struct RepSource {
    pub name: String,
    pub bytes: Vec<u8>,
    pub path: Option<PathBuf>,
}

impl RepSource {
    /// Reads a REP file from disk.
    ///
    /// # Errors
    ///
    /// [`ImportError::Read`] when the file cannot be read.
    pub fn read(path: &std::path::Path) -> Result<Self, ImportError> {
        let bytes = std::fs::read(path).map_err(|source| ImportError::Read {
            path: path.to_owned(),
            source,
        })?;
        Ok(Self {
            name: path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            bytes,
            path: Some(path.to_owned()),
        })
    }
}

/// Why an import wrote nothing.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("could not read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Rep(#[from] Box<rep::RepError>),
    #[error(
        "{name}: nothing to import: no position, narrative, annotation, sensor or TMA lines \
         ({why}); no plot was written"
    )]
    Empty { name: String, why: String },
    #[error(
        "several files make one plot, which needs a name: pass --plot NAME (the files are: {files})"
    )]
    NeedsName { files: String },
    #[error("no files to import: name at least one REP file")]
    NoFiles,
    #[error("there is no plot {plot} in the store to add the files to")]
    NoPlot { plot: String },
    #[error("cannot derive a plot id from \"{0}\": use a name with letters or digits")]
    BadName(String),
    #[error(
        "the plot name \"{name}\" is {len} bytes; a plot name is at most {MAX_PLOT_NAME_BYTES} bytes (it names the plot's folder): choose a shorter one"
    )]
    NameTooLong {
        /// The name, clipped for quoting.
        name: String,
        len: usize,
    },
    #[error(
        "a plot named \"{title}\" already exists ({plot_id}){edits}; nothing was changed. Pass \
         --replace to replace it, or choose another name with --plot NAME"
    )]
    Exists {
        title: String,
        plot_id: String,
        /// `", with edits saved since it was imported"` or empty.
        edits: &'static str,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(
        "{name}: the plot's features would be {} MiB, more than the {} MiB a store's features file may be; no plot was written. Import the files as several plots.",
        size.div_ceil(1024 * 1024),
        MAX_FEATURES_BYTES / (1024 * 1024)
    )]
    TooLarge { name: String, size: u64 },
}

impl ImportError {
    /// Whether the import was refused to protect an existing plot (the CLI's exit code 3).
    pub fn is_refusal(&self) -> bool {
        matches!(self, Self::Exists { .. })
    }

    /// The message worded for its reader: the text above names the command line's flags
    /// (`--replace`, `--plot NAME`); the workbench page has a "Plot name" field and a "Replace
    /// an existing plot" checkbox instead. Agents read the command line's wording.
    pub fn message_for(&self, audience: Audience) -> String {
        match (self, audience) {
            (Self::NeedsName { files }, Audience::Page) => format!(
                "several files make one plot, which needs a name: fill in \"Plot name\" (the files are: {files})"
            ),
            (
                Self::Exists {
                    title,
                    plot_id,
                    edits,
                },
                Audience::Page,
            ) => format!(
                "a plot named \"{title}\" already exists ({plot_id}){edits}; nothing was changed. \
                 Tick \"Replace an existing plot\" to replace it, or choose another name in \"Plot name\""
            ),
            _ => self.to_string(),
        }
    }
}

/// What one file contributed.
#[derive(Debug, Clone)]
pub struct FileReport {
    pub name: String,
    /// Read as Windows-1252 because it was not UTF-8.
    pub windows_1252: bool,
    /// Features per kind this file alone gives (e.g. `[("TRACK", 1)]`).
    pub kinds: Vec<(&'static str, usize)>,
    pub positions: usize,
    pub contacts: usize,
    /// Line kinds not imported, with their count and first line.
    pub unhandled: Vec<rep::Unhandled>,
    /// The file has no times of its own.
    pub undated: bool,
}

/// A plot ready to be written by [`StacStore::add_prepared`].
#[derive(Debug, Clone)]
pub struct PreparedPlot {
    /// The item's folder in the store (and its STAC id).
    pub dir: String,
    pub title: String,
    pub item: Value,
    /// The FeatureCollection, as the store writes it (final newline).
    pub features: Vec<u8>,
    pub files: Vec<FileReport>,
    /// Features per kind in the whole plot.
    pub kinds: Vec<(&'static str, usize)>,
    /// The plot has no times at all (it is stored undated: `datetime: null`).
    pub undated: bool,
}

/// What [`StacStore::add_prepared`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    pub plot_id: String,
    /// A plot of that name was replaced (`--replace`).
    pub replaced: bool,
    /// The replaced plot had edits saved since it was imported (they are gone); `None` when
    /// that cannot be known (the plot was not written by this importer).
    pub discarded_saved_edits: Option<bool>,
}

/// A lowercase ASCII slug: runs of anything but letters and digits become one `-`.
pub(crate) fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').to_owned()
}

fn stem(name: &str) -> &str {
    std::path::Path::new(name)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or(name)
}

/// Reads every file and builds one plot of them, called `name` (default: the file's stem when
/// there is one file). Nothing is written.
///
/// # Errors
///
/// The first file that cannot be parsed ([`ImportError::Rep`], naming `file:line:col`), a plot
/// with no features at all ([`ImportError::Empty`]), several files without a name.
pub fn prepare_plot(
    sources: &[RepSource],
    name: Option<&str>,
) -> Result<PreparedPlot, ImportError> {
    prepare_plot_with(sources, name, rep::JsonLayout::Compact)
}

/// [`prepare_plot`] with the features file in `layout` (compact unless a person asked for
/// pretty-printed GeoJSON).
///
/// # Errors
///
/// As [`prepare_plot`].
pub fn prepare_plot_with(
    sources: &[RepSource],
    name: Option<&str>,
    layout: rep::JsonLayout,
) -> Result<PreparedPlot, ImportError> {
    let title = match (name, sources) {
        (_, []) => return Err(ImportError::NoFiles),
        (Some(n), _) => n.to_owned(),
        (None, [one]) => stem(&one.name).to_owned(),
        (None, many) => {
            let files = many.iter().map(|s| s.name.as_str()).collect::<Vec<_>>();
            return Err(ImportError::NeedsName {
                files: quote(&files.join(", ")).into_owned(),
            });
        }
    };
    if title.len() > MAX_PLOT_NAME_BYTES {
        return Err(ImportError::NameTooLong {
            name: quote(&title).into_owned(),
            len: title.len(),
        });
    }
    let dir = slug(&title);
    if dir.is_empty() {
        return Err(ImportError::BadName(quote(&title).into_owned()));
    }
    let (parsed, files, label) = parse_sources(sources, &[])?;
    if parsed.feature_count() == 0 {
        let skipped: usize = parsed.unhandled.iter().map(|u| u.count).sum();
        let why = if skipped == 0 {
            "the file is empty or only comments".to_owned()
        } else {
            format!("its {skipped} line(s) are of kinds toolgate cannot import yet, listed above")
        };
        return Err(ImportError::Empty {
            name: quote(&label).into_owned(),
            why,
        });
    }
    let platforms = serde_json::to_value(&parsed.platforms).unwrap_or(Value::Array(Vec::new()));
    let names = files
        .iter()
        .map(|f| f.name.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    let kinds = parsed.kind_counts();
    let description = format!(
        "Imported from {names}: {} track(s), {} positions, {} feature(s).",
        parsed.platforms.len(),
        parsed.position_count,
        parsed.feature_count()
    );
    let mut item = crate::demo::item_with_extent(
        &dir,
        &title,
        &description,
        &["imported"],
        platforms,
        parsed.bbox,
        parsed.time_span,
    );
    if let Some(links) = item["links"].as_array_mut() {
        for source in sources {
            if let Some(path) = &source.path {
                links.push(json!({"rel": "derived_from", "href": format!("file://{}", path.display()), "title": source.name}));
            }
        }
    }
    let mut features =
        parsed
            .feature_collection_bytes(layout)
            .map_err(|source| ImportError::Read {
                path: PathBuf::from(&label),
                source,
            })?;
    features.push(b'\n');
    // A features file the store would refuse to read is not written.
    if features.len() as u64 > MAX_FEATURES_BYTES {
        return Err(ImportError::TooLarge {
            name: quote(&label).into_owned(),
            size: features.len() as u64,
        });
    }
    let sources_json: Vec<Value> = files
        .iter()
        .map(|f| {
            let kinds: serde_json::Map<String, Value> = f
                .kinds
                .iter()
                .map(|(k, n)| ((*k).to_owned(), json!(n)))
                .collect();
            json!({"file": f.name, "features": kinds, "positions": f.positions, "contacts": f.contacts})
        })
        .collect();
    item["properties"]["debrief:provenance"] = json!({
        "source": names,
        "sources": sources_json,
        "tool": "toolgate import",
        "tool_version": env!("CARGO_PKG_VERSION"),
        // What the importer wrote: a features file that differs later holds saved edits.
        "features_sha256": sha256_hex(&features),
    });
    Ok(PreparedPlot {
        dir,
        title,
        item,
        features,
        files,
        kinds,
        undated: parsed.time_span.is_none(),
    })
}

impl StacStore {
    /// Writes a prepared plot. An existing plot with the same name is replaced only when
    /// `replace` is true; otherwise nothing is written and [`ImportError::Exists`] says what
    /// to do (and whether edits were saved to that plot).
    ///
    /// # Errors
    ///
    /// [`ImportError::Exists`], or the store's write errors.
    pub fn add_prepared(
        &mut self,
        plot: &PreparedPlot,
        replace: bool,
    ) -> Result<Written, ImportError> {
        let item_path = format!("{}/item.json", plot.dir);
        let existing = self
            .items
            .iter()
            .find(|i| i.item_path == item_path)
            .cloned();
        let on_disk = self.root.join(&plot.dir).join("item.json").exists();
        let discarded_saved_edits = existing.as_ref().and_then(|entry| {
            // Through the store's read: confined, no FIFO, no file over its size cap.
            let read = |path: &std::path::Path, kind| {
                crate::store::read_store_file(&self.root, path, kind).ok()
            };
            let imported = read(&self.root.join(&entry.item_path), StoreFile::Json)
                .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
                .and_then(|v| {
                    v.pointer("/properties/debrief:provenance/features_sha256")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                })?;
            let now = read(entry.features_path.as_ref()?, StoreFile::Features)?;
            Some(sha256_hex(&now) != imported)
        });
        if (existing.is_some() || on_disk) && !replace {
            return Err(ImportError::Exists {
                title: existing
                    .as_ref()
                    .map_or(plot.title.clone(), |e| e.title.clone()),
                plot_id: existing
                    .map_or_else(|| format!("stac://{}/{item_path}", self.id), |e| e.plot_id),
                edits: if discarded_saved_edits == Some(true) {
                    ", with edits saved since it was imported"
                } else {
                    ""
                },
            });
        }
        let plot_id = self.add_item_bytes(&plot.dir, &plot.item, &plot.features)?;
        Ok(Written {
            plot_id,
            replaced: existing.is_some() || on_disk,
            discarded_saved_edits,
        })
    }
}

/// [`prepare_plot`] then [`StacStore::add_prepared`]: imports one or several REP files as ONE
/// plot called `name` (default: the stem of a single file), refusing to replace an existing
/// plot unless `replace`. Nothing is written when any file fails.
///
/// # Errors
///
/// See [`prepare_plot`] and [`StacStore::add_prepared`].
pub fn import_rep_files(
    store: &mut StacStore,
    sources: &[RepSource],
    name: Option<&str>,
    replace: bool,
) -> Result<(PreparedPlot, Written), ImportError> {
    let plot = prepare_plot(sources, name)?;
    let written = store.add_prepared(&plot, replace)?;
    Ok((plot, written))
}

/// Parse `sources` beside `known` tracks (none for a new plot): one file once; several each on
/// their own for its report, then all of them together (the lines of every file parse as one),
/// labelled `a.rep+b.rep` (returned too). The one reading of REP files for `import` and
/// `import --into`.
pub(crate) fn parse_sources(
    sources: &[RepSource],
    known: &[rep::KnownTrack],
) -> Result<(rep::RepImport, Vec<FileReport>, String), Box<rep::RepError>> {
    let mut files = Vec::with_capacity(sources.len());
    let mut combined = String::new();
    let mut only = None;
    for source in sources {
        let (text, encoding) = rep::decode_rep(&source.bytes);
        let parsed = rep::parse_rep_beside(&source.name, &text, known)?;
        files.push(FileReport {
            name: source.name.clone(),
            windows_1252: encoding == rep::TextEncoding::Windows1252,
            kinds: parsed.kind_counts(),
            positions: parsed.position_count,
            contacts: parsed.contact_count(),
            unhandled: parsed.unhandled.clone(),
            undated: parsed.time_span.is_none(),
        });
        if sources.len() == 1 {
            only = Some(parsed);
            continue;
        }
        let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
        combined.push_str(text);
        if !combined.ends_with('\n') {
            combined.push('\n');
        }
    }
    let label = files
        .iter()
        .map(|f| f.name.as_str())
        .collect::<Vec<_>>()
        .join("+");
    let parsed = match only {
        Some(parsed) => parsed,
        None => rep::parse_rep_beside(&label, &combined, known)?,
    };
    Ok((parsed, files, label))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    const BOAT1: &[u8] = include_bytes!("../../rep/tests/fixtures/rep/valid/boat1.rep");
    const BOAT2: &[u8] = include_bytes!("../../rep/tests/fixtures/rep/valid/boat2.rep");
    const NARRATIVE: &[u8] = include_bytes!("../../rep/tests/fixtures/rep/valid/narrative.rep");

    fn source(name: &str, bytes: &[u8]) -> RepSource {
        RepSource {
            name: name.to_owned(),
            bytes: bytes.to_vec(),
            path: None,
        }
    }

    fn tree(root: &std::path::Path) -> Vec<(PathBuf, Vec<u8>)> {
        let mut out = Vec::new();
        let mut stack = vec![root.to_owned()];
        while let Some(dir) = stack.pop() {
            for e in std::fs::read_dir(&dir).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    stack.push(p);
                } else {
                    out.push((p.clone(), std::fs::read(&p).unwrap()));
                }
            }
        }
        out.sort();
        out
    }

    #[test]
    fn several_files_make_one_plot_with_every_layer() {
        let d = tempfile::tempdir().unwrap();
        let mut store = StacStore::create("s", d.path(), "s").unwrap();
        let sources = [
            source("boat1.rep", BOAT1),
            source("boat2.rep", BOAT2),
            source("narrative.rep", NARRATIVE),
        ];
        let (plot, written) =
            import_rep_files(&mut store, &sources, Some("Saxon Warrior"), false).unwrap();
        assert_eq!(written.plot_id, "stac://s/saxon-warrior/item.json");
        assert!(!written.replaced);
        assert_eq!(plot.kinds, [("TRACK", 2), ("NARRATIVE", 19)]);
        assert_eq!(plot.files.len(), 3);
        assert_eq!(plot.files[2].kinds, [("NARRATIVE", 19)]);
        let fc: Value = serde_json::from_slice(
            &std::fs::read(d.path().join("saxon-warrior/features.geojson")).unwrap(),
        )
        .unwrap();
        let features = fc["features"].as_array().unwrap();
        assert_eq!(features.len(), 21);
        // Narratives name the tracks of the other files.
        let linked = features
            .iter()
            .filter(|f| f["properties"]["track_id"] == "track-collingwood")
            .count();
        assert_eq!(linked, 4);
        assert_eq!(store.items.len(), 1);
        assert_eq!(store.items[0].title, "Saxon Warrior");
    }

    /// The page has a "Plot name" field and a "Replace an existing plot" checkbox, not the
    /// command line's flags: the error words itself for it (the page used to rewrite the text).
    #[test]
    fn the_page_reads_its_own_controls_and_the_command_line_its_flags() {
        let exists = ImportError::Exists {
            title: "Exercise".to_owned(),
            plot_id: "stac://s/exercise/item.json".to_owned(),
            edits: "",
        };
        assert_eq!(
            exists.message_for(Audience::Page),
            "a plot named \"Exercise\" already exists (stac://s/exercise/item.json); nothing was \
             changed. Tick \"Replace an existing plot\" to replace it, or choose another name in \
             \"Plot name\""
        );
        assert_eq!(exists.message_for(Audience::Cli), exists.to_string());
        assert!(exists.to_string().contains("Pass --replace to replace it"));
        let needs = ImportError::NeedsName {
            files: "a.rep, b.rep".to_owned(),
        };
        assert_eq!(
            needs.message_for(Audience::Page),
            "several files make one plot, which needs a name: fill in \"Plot name\" (the files \
             are: a.rep, b.rep)"
        );
        assert_eq!(needs.message_for(Audience::Agent), needs.to_string());
        assert_eq!(
            ImportError::NoFiles.message_for(Audience::Page),
            ImportError::NoFiles.to_string()
        );
    }

    #[test]
    fn a_replace_is_refused_unless_asked_and_says_when_saved_edits_go() {
        let d = tempfile::tempdir().unwrap();
        let mut store = StacStore::create("s", d.path(), "s").unwrap();
        let one = [source("boat1.rep", BOAT1)];
        import_rep_files(&mut store, &one, None, false).unwrap();
        let before = tree(d.path());
        let err =
            import_rep_files(&mut store, &[source("boat1.rep", BOAT2)], None, false).unwrap_err();
        assert!(err.is_refusal(), "{err}");
        assert!(err.to_string().contains("--replace"), "{err}");
        assert!(!err.to_string().contains("saved"), "{err}");
        assert_eq!(tree(d.path()), before, "the store is byte-identical");

        // An analyst saves an edit: a refusal says so, and a replace reports it.
        let features = d.path().join("boat1/features.geojson");
        let mut edited = std::fs::read(&features).unwrap();
        edited.splice(0..0, b" ".iter().copied());
        std::fs::write(&features, &edited).unwrap();
        let err = import_rep_files(&mut store, &one, None, false).unwrap_err();
        assert!(
            err.to_string()
                .contains("edits saved since it was imported"),
            "{err}"
        );
        let (_, written) = import_rep_files(&mut store, &one, None, true).unwrap();
        assert!(written.replaced);
        assert_eq!(written.discarded_saved_edits, Some(true));
        let (_, written) = import_rep_files(&mut store, &one, None, true).unwrap();
        assert_eq!(written.discarded_saved_edits, Some(false));
    }

    #[test]
    fn a_failing_file_writes_nothing_and_several_files_need_a_name() {
        let d = tempfile::tempdir().unwrap();
        let mut store = StacStore::create("s", d.path(), "s").unwrap();
        let before = tree(d.path());
        let bad = source("bad.rep", b"951212 050000 X @A 91 0 0 N 1 0 0 E 0 0 0\n");
        let err = import_rep_files(
            &mut store,
            &[source("boat1.rep", BOAT1), bad],
            Some("p"),
            false,
        )
        .unwrap_err();
        assert!(err.to_string().starts_with("bad.rep:1:"), "{err}");
        assert_eq!(tree(d.path()), before);
        let err =
            prepare_plot(&[source("a.rep", BOAT1), source("b.rep", BOAT2)], None).unwrap_err();
        assert!(err.to_string().contains("--plot NAME"), "{err}");
        let err = prepare_plot(&[source("a.rep", b";; only\n")], None).unwrap_err();
        assert!(matches!(err, ImportError::Empty { .. }), "{err}");
    }
}
