//! A local STAC catalogue of plots (reference §11.2), read with the `stac` crate.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::fsio::{atomic_write, atomic_write_beneath, sha256_hex};
use crate::stac_model;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("could not read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not a STAC catalog, collection or item: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("{path} is outside the store {root}; catalog links must stay inside the store")]
    OutsideStore { path: PathBuf, root: PathBuf },
    #[error(
        "plot {plot_id} has no features asset (an asset with role \"data\" or key \"features\"/\"data\")"
    )]
    NoFeatures { plot_id: String },
    #[error("could not write {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "\"{}\" is not a plot id; plot ids look like stac://<store>/<item path>",
        toolgate_core::clip::quote(.0)
    )]
    BadPlotId(String),
    #[error(
        "{path} is not a regular file (it is a {kind}); a catalogue holds only regular JSON files. Replace it with the real file or remove its link."
    )]
    NotRegular { path: PathBuf, kind: &'static str },
    #[error(
        "{path} is {} MiB ({size} bytes), more than the {} MiB a store's {what} may be; it was not read. Check that it is the file you meant (a damaged or sparse file reads as gigabytes of zeros); {hint}.",
        size.div_ceil(MIB),
        cap / MIB
    )]
    TooLarge {
        path: PathBuf,
        size: u64,
        cap: u64,
        what: &'static str,
        /// What to do when the file is real.
        hint: &'static str,
    },
}

const MIB: u64 = 1024 * 1024;

/// Most different items and child catalogues one catalogue file's links lead to; links past it
/// are not followed (and that is reported). With [`MAX_JSON_BYTES`] it bounds what opening a
/// store reads, however its catalogue was written.
pub const MAX_LINKS_PER_CATALOG: usize = 50_000;

/// What a walk of the catalogue has visited: the catalogues walked, and every file a link led
/// to with the first href that named it and how many links did.
#[derive(Default)]
struct Walked {
    catalogs: HashSet<PathBuf>,
    links: HashMap<PathBuf, (String, usize)>,
}

/// Most bytes a plot's features file (GeoJSON) may have: the same cap as a features asset
/// fetched from a STAC API ([`crate::stac_api::MAX_ASSET_BYTES`]), so a plot that can be served
/// can be read. An 8 MB REP file imports to 14 MB of compact GeoJSON (28 MB `--pretty`): this
/// holds a REP import of about 290 MB (compact). A file over it is refused by its size, before
/// a byte is read: parsing it would take several times its size in memory.
pub const MAX_FEATURES_BYTES: u64 = crate::stac_api::MAX_ASSET_BYTES;
/// Most bytes a catalogue, collection or item JSON file of a store may have. An item is a few
/// KiB; a catalogue's link is about 100 bytes, so this holds over 150,000 plots.
pub const MAX_JSON_BYTES: u64 = 16 * MIB;

/// `stac://<storeId>/<itemPath>`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PlotId {
    pub store: String,
    pub item_path: String,
}

impl PlotId {
    pub fn parse(s: &str) -> Result<Self, StoreError> {
        let rest = s
            .strip_prefix("stac://")
            .ok_or_else(|| StoreError::BadPlotId(s.to_owned()))?;
        match rest.split_once('/') {
            Some((store, path)) if !store.is_empty() && !path.is_empty() => Ok(Self {
                store: store.to_owned(),
                item_path: path.to_owned(),
            }),
            _ => Err(StoreError::BadPlotId(s.to_owned())),
        }
    }
}

impl std::fmt::Display for PlotId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "stac://{}/{}", self.store, self.item_path)
    }
}

/// What search needs to know about one item, read once when the store is opened.
#[derive(Debug, Clone)]
pub struct ItemEntry {
    pub plot_id: String,
    /// The item.json path relative to the store root, `/`-separated.
    pub item_path: String,
    pub title: String,
    pub description: String,
    pub tags: Vec<String>,
    pub feature_tags: Vec<String>,
    /// `debrief:platforms` records as they are.
    pub platforms: Vec<Value>,
    pub bbox: Option<[f64; 4]>,
    pub start: Option<DateTime<Utc>>,
    pub end: Option<DateTime<Utc>>,
    /// Absolute path of the features GeoJSON.
    pub features_path: Option<PathBuf>,
}

/// A link that could not be followed, kept so a person can see why an item is missing.
#[derive(Debug, Clone)]
pub struct Unavailable {
    pub href: String,
    pub reason: String,
}

#[derive(Debug, Clone)]
pub struct StacStore {
    pub id: String,
    pub root: PathBuf,
    pub title: String,
    pub items: Vec<ItemEntry>,
    pub unavailable: Vec<Unavailable>,
    catalog_path: PathBuf,
    /// [`StacStore::fingerprint`] when the store was read (or last written through this value).
    read_fingerprint: String,
}

/// A loaded features file: the FeatureCollection and the hash of the bytes it came from.
#[derive(Debug, Clone)]
pub struct LoadedFeatures {
    pub collection: Value,
    pub sha256: String,
    pub path: PathBuf,
}

/// What a store file is, for its size cap and the message that names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StoreFile {
    /// A catalogue, collection or item JSON file: [`MAX_JSON_BYTES`].
    Json,
    /// A plot's features GeoJSON: [`MAX_FEATURES_BYTES`].
    Features,
}

impl StoreFile {
    fn cap(self) -> u64 {
        match self {
            Self::Json => MAX_JSON_BYTES,
            Self::Features => MAX_FEATURES_BYTES,
        }
    }

    fn hint(self) -> &'static str {
        match self {
            Self::Json => "a catalogue this large must be split into child catalogues",
            Self::Features => "a plot this large must be split into several plots",
        }
    }

    fn what(self) -> &'static str {
        match self {
            Self::Json => "catalogue, collection or item file",
            Self::Features => "features file",
        }
    }
}

/// Read a whole catalogue file. It is opened with `O_NONBLOCK` and checked with `fstat` on the
/// opened handle before a byte is read: a FIFO (or a device, a socket) planted in a store would
/// otherwise block the reader forever, and with it whatever holds the session; a file over its
/// kind's cap (a 3 GB sparse file reads as 3 GB of zeros) is refused by its size. The read
/// stops at the cap too, so a file that grows after the check is refused, not read whole.
pub(crate) fn read_store_file(
    root: &Path,
    path: &Path,
    kind: StoreFile,
) -> Result<Vec<u8>, StoreError> {
    use std::io::Read;
    use std::os::unix::fs::FileTypeExt;
    let read_error = |source| StoreError::Read {
        path: path.to_owned(),
        source,
    };
    let file = open_beneath(root, path).map_err(|e| {
        if e.raw_os_error() == Some(rustix::io::Errno::XDEV.raw_os_error()) {
            StoreError::OutsideStore {
                path: path.to_owned(),
                root: root.to_owned(),
            }
        } else {
            read_error(e)
        }
    })?;
    let meta = file.metadata().map_err(read_error)?;
    let ft = meta.file_type();
    if !ft.is_file() {
        let kind = if ft.is_fifo() {
            "FIFO"
        } else if ft.is_socket() {
            "socket"
        } else if ft.is_char_device() || ft.is_block_device() {
            "device"
        } else if ft.is_dir() {
            "directory"
        } else {
            "special file"
        };
        return Err(StoreError::NotRegular {
            path: path.to_owned(),
            kind,
        });
    }
    let cap = kind.cap();
    let too_large = |size| StoreError::TooLarge {
        path: path.to_owned(),
        size,
        cap,
        what: kind.what(),
        hint: kind.hint(),
    };
    if meta.len() > cap {
        return Err(too_large(meta.len()));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(read_error)?;
    if bytes.len() as u64 > cap {
        return Err(too_large(bytes.len() as u64));
    }
    Ok(bytes)
}

/// Open `path` (already confined lexically to `root` by [`confine`]) for reading without
/// following any link out of `root`, race-free: beneath a descriptor of `root`
/// ([`toolgate_fs::Root::open`]: `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)`, or the
/// walk where it is missing), so a directory swapped for a symbolic link between the check and
/// the open cannot lead elsewhere (`EXDEV`). Non-blocking, so a FIFO never blocks the open.
fn open_beneath(root: &Path, path: &Path) -> std::io::Result<std::fs::File> {
    use rustix::fs::OFlags;
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY;
    let rel = path.strip_prefix(root).unwrap_or(path);
    let root = toolgate_fs::Root::new(root).map_err(crate::fsio::fs_io)?;
    let fd = root
        .open(rel, flags, toolgate_fs::Links::Inside)
        .map_err(crate::fsio::fs_io)?;
    Ok(std::fs::File::from(fd))
}

/// Lexically normalise `base/href` and require it to stay under `root` (no `..` escapes, no
/// absolute hrefs elsewhere). Symlinks are re-checked after canonicalisation when the file exists.
fn confine(root: &Path, base: &Path, href: &str) -> Result<PathBuf, StoreError> {
    let joined = if Path::new(href).is_absolute() {
        PathBuf::from(href)
    } else {
        base.join(href)
    };
    let Some(out) = toolgate_fs::normalize(&joined) else {
        return Err(StoreError::OutsideStore {
            path: joined,
            root: root.to_owned(),
        });
    };
    let outside = || StoreError::OutsideStore {
        path: out.clone(),
        root: root.to_owned(),
    };
    if !out.starts_with(root) {
        return Err(outside());
    }
    // Resolved beneath the store root's descriptor (the one beneath-open): a link that leads
    // out is refused here already; a path that does not exist yet is fine.
    if let Ok(rel) = out.strip_prefix(root)
        && let Ok(beneath) = toolgate_fs::Root::new(root)
        && let Err(
            toolgate_fs::FsError::Escapes { .. } | toolgate_fs::FsError::ThroughSymlink { .. },
        ) = beneath.open(rel, toolgate_fs::OFlags::PATH, toolgate_fs::Links::Inside)
    {
        return Err(outside());
    }
    Ok(out)
}

fn rel_path(root: &Path, p: &Path) -> String {
    p.strip_prefix(root)
        .unwrap_or(p)
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// The strings of a JSON array (other elements skipped; not an array: none).
pub(crate) fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// A plot's short name: the folder its item is in (`boat1` for `boat1/item.json`), else the
/// item file's stem.
pub fn short_name(item_path: &str) -> &str {
    let mut parts = item_path.rsplit('/');
    let file = parts.next().unwrap_or(item_path);
    match parts.next() {
        Some(folder) if !folder.is_empty() && folder != "." => folder,
        _ => file.strip_suffix(".json").unwrap_or(file),
    }
}

/// `v` pretty-printed (two-space indent) with a final newline, as the store writes JSON files.
fn pretty_json(path: &Path, v: &Value) -> Result<Vec<u8>, StoreError> {
    let mut bytes = serde_json::to_vec_pretty(v).map_err(|e| StoreError::Parse {
        path: path.to_owned(),
        message: e.to_string(),
    })?;
    bytes.push(b'\n');
    Ok(bytes)
}

impl StacStore {
    /// Open the catalogue whose root is `<dir>/catalog.json` (a Catalog or a Collection),
    /// following `child` and `item` links. Links that cannot be followed are recorded in
    /// [`StacStore::unavailable`] rather than failing the store.
    pub fn open(id: &str, dir: &Path) -> Result<Self, StoreError> {
        let root = dir.canonicalize().map_err(|source| StoreError::Read {
            path: dir.to_owned(),
            source,
        })?;
        let catalog_path = root.join("catalog.json");
        let bytes = read_store_file(&root, &catalog_path, StoreFile::Json)?;
        let value: stac_model::Value =
            serde_json::from_slice(&bytes).map_err(|e| StoreError::Parse {
                path: catalog_path.clone(),
                message: e.to_string(),
            })?;
        let title = match &value {
            stac_model::Value::Catalog(c) => c.title.clone().unwrap_or_else(|| c.id.clone()),
            stac_model::Value::Collection(c) => c.title.clone().unwrap_or_else(|| c.id.clone()),
            _ => {
                return Err(StoreError::Parse {
                    path: catalog_path,
                    message: "the root must be a Catalog or a Collection".to_owned(),
                });
            }
        };
        let mut store = Self {
            id: id.to_owned(),
            root,
            title,
            items: Vec::new(),
            unavailable: Vec::new(),
            catalog_path: catalog_path.clone(),
            read_fingerprint: String::new(),
        };
        let mut seen = Walked::default();
        store.walk(&catalog_path, &value, &mut seen, 0);
        store.report_duplicates(seen);
        store.read_fingerprint = store.fingerprint();
        Ok(store)
    }

    /// What the store was read from: the root catalogue's bytes and the size and modification
    /// time of every item file. A plot imported, replaced or removed since changes it.
    fn fingerprint(&self) -> String {
        let mut text = match read_store_file(&self.root, &self.catalog_path, StoreFile::Json) {
            Ok(bytes) => sha256_hex(&bytes),
            Err(e) => format!("unreadable: {e}"),
        };
        for item in &self.items {
            let meta = std::fs::metadata(self.root.join(&item.item_path));
            let stamp = meta.as_ref().ok().map(|m| (m.len(), m.modified().ok()));
            text.push_str(&format!("\n{}:{stamp:?}", item.item_path));
        }
        text
    }

    /// Whether the catalogue on disk changed since this store was read (another process
    /// imported, replaced or removed a plot).
    pub fn is_stale(&self) -> bool {
        self.fingerprint() != self.read_fingerprint
    }

    /// The store read again from disk when it changed since this one was read, else `None`: what
    /// a long-running server calls so that plots imported while it runs appear.
    ///
    /// # Errors
    ///
    /// When the changed catalogue cannot be read.
    pub fn reread_if_changed(&self) -> Result<Option<Self>, StoreError> {
        if !self.is_stale() {
            return Ok(None);
        }
        Self::open(&self.id, &self.root).map(Some)
    }

    fn walk(&mut self, path: &Path, value: &stac_model::Value, seen: &mut Walked, depth: usize) {
        if depth > 16 || !seen.catalogs.insert(path.to_owned()) {
            return;
        }
        let links = match value {
            stac_model::Value::Catalog(c) => &c.links,
            stac_model::Value::Collection(c) => &c.links,
            _ => return,
        };
        let base = path.parent().unwrap_or(&self.root).to_owned();
        // Where each href of this catalogue led, so a repeated href is not resolved again.
        let mut resolved: HashMap<&str, PathBuf> = HashMap::new();
        let mut followed = 0usize;
        for link in links {
            if link.rel != "item" && link.rel != "child" {
                continue;
            }
            if link.href.contains("://") {
                self.unavailable.push(Unavailable {
                    href: link.href.clone(),
                    reason: "remote links are not followed (offline store)".to_owned(),
                });
                continue;
            }
            let target = match resolved.get(link.href.as_str()) {
                Some(t) => t.clone(),
                None => match confine(&self.root, &base, &link.href) {
                    Ok(t) => {
                        resolved.insert(&link.href, t.clone());
                        t
                    }
                    Err(e) => {
                        self.unavailable.push(Unavailable {
                            href: link.href.clone(),
                            reason: e.to_string(),
                        });
                        continue;
                    }
                },
            };
            // A file linked again (from here or another catalogue) is not read again: a
            // catalogue listing one item 200,000 times made 200,000 plots of it. It is counted,
            // and reported once when the walk is done.
            if let Some((_, count)) = seen.links.get_mut(&target) {
                *count += 1;
                continue;
            }
            if followed == MAX_LINKS_PER_CATALOG {
                self.unavailable.push(Unavailable {
                    href: rel_path(&self.root, path),
                    reason: format!(
                        "this catalogue links more than {MAX_LINKS_PER_CATALOG} different items and catalogues; the rest are not followed (split it into child catalogues)"
                    ),
                });
                break;
            }
            followed += 1;
            seen.links.insert(target.clone(), (link.href.clone(), 1));
            let parsed = read_store_file(&self.root, &target, StoreFile::Json).and_then(|b| {
                serde_json::from_slice::<stac_model::Value>(&b).map_err(|e| StoreError::Parse {
                    path: target.clone(),
                    message: e.to_string(),
                })
            });
            match parsed {
                Ok(stac_model::Value::Item(item)) if link.rel == "item" => {
                    match self.entry(&target, &item) {
                        Ok(e) => self.items.push(e),
                        Err(e) => self.unavailable.push(Unavailable {
                            href: link.href.clone(),
                            reason: e.to_string(),
                        }),
                    }
                }
                Ok(child @ (stac_model::Value::Catalog(_) | stac_model::Value::Collection(_))) => {
                    self.walk(&target, &child, seen, depth + 1);
                }
                Ok(_) => self.unavailable.push(Unavailable {
                    href: link.href.clone(),
                    reason: format!("not a STAC {}", link.rel),
                }),
                Err(e) => {
                    tracing::debug!(href = %link.href, error = %e, "catalog link skipped");
                    self.unavailable.push(Unavailable {
                        href: link.href.clone(),
                        reason: e.to_string(),
                    });
                }
            }
        }
    }

    /// One [`Unavailable`] per file that catalogue links named more than once. Refusing the
    /// whole store for a repeated link would make a real catalogue unusable over one slip of
    /// an editor; following every copy made one plot per copy. So the file is read once and
    /// the repetition is reported, with its count.
    fn report_duplicates(&mut self, seen: Walked) {
        let mut repeated: Vec<(PathBuf, String, usize)> = seen
            .links
            .into_iter()
            .filter(|(_, (_, count))| *count > 1)
            .map(|(target, (href, count))| (target, href, count))
            .collect();
        repeated.sort();
        for (target, href, count) in repeated {
            let file = rel_path(&self.root, &target);
            tracing::warn!(file = %file, count, "a catalogue links the same file more than once");
            self.unavailable.push(Unavailable {
                href,
                reason: format!(
                    "{file} is linked {count} times in the catalogue; it was read once and the other {} links were ignored",
                    count - 1
                ),
            });
        }
    }

    pub(crate) fn entry(
        &self,
        item_file: &Path,
        item: &stac_model::Item,
    ) -> Result<ItemEntry, StoreError> {
        let item_path = rel_path(&self.root, item_file);
        let plot_id = PlotId {
            store: self.id.clone(),
            item_path: item_path.clone(),
        }
        .to_string();
        let props = &item.properties;
        let extra = &props.additional_fields;
        let base = item_file.parent().unwrap_or(&self.root);
        let asset = item
            .assets
            .get("features")
            .or_else(|| item.assets.get("data"))
            .or_else(|| {
                item.assets
                    .values()
                    .find(|a| a.roles.iter().any(|r| r == "data"))
            });
        let features_path = match asset {
            Some(a) => Some(confine(&self.root, base, &a.href)?),
            None => None,
        };
        let bbox = item.bbox;
        Ok(ItemEntry {
            plot_id,
            item_path,
            title: props.title.clone().unwrap_or_else(|| item.id.clone()),
            description: props.description.clone().unwrap_or_default(),
            tags: strings(extra.get("debrief:tags")),
            feature_tags: strings(extra.get("debrief:feature_tags")),
            platforms: extra
                .get("debrief:platforms")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
            bbox,
            start: props.start_datetime.or(props.datetime),
            end: props.end_datetime.or(props.datetime),
            features_path,
        })
    }

    pub fn item(&self, plot_id: &str) -> Option<&ItemEntry> {
        self.items.iter().find(|i| i.plot_id == plot_id)
    }

    /// The plots `reference` names: its id, else its short name — the item's folder
    /// (`boat1` for `stac://demo/boat1/item.json`), its title, or a name whose slug is the
    /// folder (`Saxon Warrior` for `saxon-warrior`), letter case ignored. Empty when none does;
    /// several when the short name is shared.
    pub fn lookup(&self, reference: &str) -> Vec<&ItemEntry> {
        let reference = reference.trim();
        if let Some(entry) = self.item(reference) {
            return vec![entry];
        }
        if reference.is_empty() || reference.starts_with("stac://") {
            return Vec::new();
        }
        let wanted = reference.to_lowercase();
        let slug = crate::import::slug(reference);
        self.items
            .iter()
            .filter(|i| {
                let folder = short_name(&i.item_path);
                folder.eq_ignore_ascii_case(reference)
                    || i.title.to_lowercase() == wanted
                    || (!slug.is_empty() && folder.eq_ignore_ascii_case(&slug))
            })
            .collect()
    }

    /// Read a plot's features file.
    pub fn load_features(&self, entry: &ItemEntry) -> Result<LoadedFeatures, StoreError> {
        let path = entry
            .features_path
            .clone()
            .ok_or_else(|| StoreError::NoFeatures {
                plot_id: entry.plot_id.clone(),
            })?;
        // Opening a plot is when a save that was killed half-way is noticed: its temp files go.
        crate::fsio::remove_stale_temps_beneath(Some(&self.root), &path);
        let bytes = read_store_file(&self.root, &path, StoreFile::Features)?;
        let collection: Value = serde_json::from_slice(&bytes).map_err(|e| StoreError::Parse {
            path: path.clone(),
            message: e.to_string(),
        })?;
        if collection
            .get("features")
            .and_then(Value::as_array)
            .is_none()
        {
            return Err(StoreError::Parse {
                path,
                message: "expected a GeoJSON FeatureCollection with a \"features\" array"
                    .to_owned(),
            });
        }
        Ok(LoadedFeatures {
            collection,
            sha256: sha256_hex(&bytes),
            path,
        })
    }

    /// Add a new item (item.json + features.geojson in `<store>/<dir_name>/`) and link it from
    /// the root catalog. Every file is written atomically; the catalog last, so a failure
    /// leaves the catalogue as it was.
    pub fn add_item(
        &mut self,
        dir_name: &str,
        item: &Value,
        features: &Value,
    ) -> Result<String, StoreError> {
        let path = confine(&self.root, &self.root, dir_name)?.join("features.geojson");
        let bytes = pretty_json(&path, features)?;
        self.add_item_bytes(dir_name, item, &bytes)
    }

    /// [`add_item`](Self::add_item) with the features file given as the bytes to write (a
    /// GeoJSON FeatureCollection, written as it is: end it with a newline to match
    /// `add_item`), for callers that stream it rather than build a `Value`.
    pub fn add_item_bytes(
        &mut self,
        dir_name: &str,
        item: &Value,
        features_geojson: &[u8],
    ) -> Result<String, StoreError> {
        let dir = confine(&self.root, &self.root, dir_name)?;
        let write_error = |path: &Path, source| StoreError::Write {
            path: path.to_owned(),
            source,
        };
        std::fs::create_dir_all(&dir).map_err(|e| write_error(&dir, e))?;
        // Each file through a descriptor of its directory opened beneath the root.
        let root = self.root.clone();
        let write_bytes = |path: &Path, bytes: &[u8]| -> Result<(), StoreError> {
            atomic_write_beneath(Some(&root), path, bytes).map_err(|source| StoreError::Write {
                path: path.to_owned(),
                source,
            })
        };
        let write = |path: &Path, v: &Value| write_bytes(path, &pretty_json(path, v)?);
        write_bytes(&dir.join("features.geojson"), features_geojson)?;
        let item_file = dir.join("item.json");
        write(&item_file, item)?;
        let mut catalog: Value = serde_json::from_slice(&read_store_file(
            &self.root,
            &self.catalog_path,
            StoreFile::Json,
        )?)
        .map_err(|e| StoreError::Parse {
            path: self.catalog_path.clone(),
            message: e.to_string(),
        })?;
        let href = format!("./{dir_name}/item.json");
        let title = item
            .pointer("/properties/title")
            .cloned()
            .unwrap_or(Value::Null);
        if let Some(links) = catalog.get_mut("links").and_then(Value::as_array_mut) {
            links.retain(|l| l.get("href").and_then(Value::as_str) != Some(href.as_str()));
            let mut link =
                serde_json::json!({"rel": "item", "href": href, "type": "application/geo+json"});
            if !title.is_null() {
                link["title"] = title;
            }
            links.push(link);
        }
        write(&self.catalog_path.clone(), &catalog)?;
        let parsed: stac_model::Item =
            serde_json::from_value(item.clone()).map_err(|e| StoreError::Parse {
                path: item_file.clone(),
                message: e.to_string(),
            })?;
        let entry = self.entry(&item_file, &parsed)?;
        let plot_id = entry.plot_id.clone();
        self.items.retain(|i| i.plot_id != plot_id);
        self.items.push(entry);
        // This value now holds what it wrote: not stale because of its own write.
        self.read_fingerprint = self.fingerprint();
        Ok(plot_id)
    }

    /// Notes that this value holds what it has just written, so its own write does not make
    /// it stale.
    pub(crate) fn mark_read(&mut self) {
        self.read_fingerprint = self.fingerprint();
    }

    /// Create an empty catalogue at `dir` (for `toolgate import --store DIR` on a new folder).
    pub fn create(id: &str, dir: &Path, title: &str) -> Result<Self, StoreError> {
        let path = dir.join("catalog.json");
        if !path.exists() {
            let catalog = serde_json::json!({
                "type": "Catalog",
                "stac_version": "1.0.0",
                "id": id,
                "title": title,
                "description": format!("{title} (created by toolgate)"),
                "links": [{"rel": "root", "href": "./catalog.json", "type": "application/json"}]
            });
            let bytes = serde_json::to_vec_pretty(&catalog).map_err(|e| StoreError::Parse {
                path: path.clone(),
                message: e.to_string(),
            })?;
            atomic_write(&path, &bytes).map_err(|source| StoreError::Write {
                path: path.clone(),
                source,
            })?;
        }
        Self::open(id, dir)
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;

    /// The open itself refuses a link out of the store, whatever checked the path before (so a
    /// directory swapped for a link between `confine` and the read cannot leak a file).
    #[test]
    fn reads_never_follow_a_link_out_of_the_store() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("store");
        std::fs::create_dir_all(root.join("items/real")).unwrap();
        std::fs::create_dir_all(dir.path().join("outside")).unwrap();
        std::fs::write(dir.path().join("outside/item.json"), "SECRET").unwrap();
        std::fs::write(root.join("items/real/item.json"), "{}").unwrap();
        std::os::unix::fs::symlink(dir.path().join("outside"), root.join("items/swapped")).unwrap();
        let root = root.canonicalize().unwrap();
        assert_eq!(
            read_store_file(&root, &root.join("items/real/item.json"), StoreFile::Json).unwrap(),
            b"{}"
        );
        let err = read_store_file(
            &root,
            &root.join("items/swapped/item.json"),
            StoreFile::Json,
        )
        .unwrap_err();
        assert!(matches!(err, StoreError::OutsideStore { .. }), "{err}");
    }

    fn fixture() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/stac")
    }

    #[test]
    fn a_store_knows_when_another_process_changed_its_catalogue() {
        let d = tempfile::tempdir().unwrap();
        let mut writer = StacStore::create("s", d.path(), "s").unwrap();
        let reader = StacStore::open("s", d.path()).unwrap();
        assert!(!reader.is_stale());
        assert!(reader.reread_if_changed().unwrap().is_none());
        let item =
            crate::demo::item_with_extent("p", "P", "", &[], Value::Array(vec![]), None, None);
        let fc = serde_json::json!({"type": "FeatureCollection", "features": []});
        writer.add_item("p", &item, &fc).unwrap();
        assert!(!writer.is_stale(), "its own write does not make it stale");
        assert!(reader.is_stale());
        let fresh = reader.reread_if_changed().unwrap().unwrap();
        assert_eq!(fresh.items.len(), 1);
        assert!(!fresh.is_stale());
        // A replaced item (same catalogue links, new item file) is a change too.
        std::thread::sleep(std::time::Duration::from_millis(20));
        let mut item2 = item.clone();
        item2["properties"]["title"] = "P again, longer".into();
        writer.add_item("p", &item2, &fc).unwrap();
        assert!(fresh.is_stale());
    }

    #[test]
    fn plot_ids_round_trip() {
        let id = PlotId::parse("stac://store-1/items/alpha-day1/item.json").unwrap();
        assert_eq!(id.store, "store-1");
        assert_eq!(id.item_path, "items/alpha-day1/item.json");
        assert_eq!(id.to_string(), "stac://store-1/items/alpha-day1/item.json");
        assert!(PlotId::parse("file:///x").is_err());
        assert!(PlotId::parse("stac://nostore").is_err());
    }

    #[test]
    fn reads_the_real_sample_layout() {
        let store = StacStore::open("local-store", &fixture()).unwrap();
        assert_eq!(
            store.items.len(),
            1,
            "only core--boat1 is present in the sample"
        );
        let boat = &store.items[0];
        assert_eq!(boat.plot_id, "stac://local-store/core--boat1/item.json");
        assert_eq!(boat.title, "Saxon Warrior: Boat1");
        assert_eq!(boat.platforms[0]["name"], "HMS Nelson");
        assert!(boat.tags.contains(&"training".to_owned()));
        assert!(
            store.unavailable.len() > 50,
            "the other catalogue items are missing and recorded"
        );
        let loaded = store.load_features(boat).unwrap();
        assert_eq!(loaded.collection["features"].as_array().unwrap().len(), 1);
    }

    /// A store with one item `a` whose features file is `a/features.geojson`.
    fn one_item_store(dir: &Path) {
        std::fs::write(
            dir.join("catalog.json"),
            r#"{"type":"Catalog","stac_version":"1.0.0","id":"x","description":"","links":[{"rel":"item","href":"./a/item.json"}]}"#,
        )
        .unwrap();
        std::fs::create_dir_all(dir.join("a")).unwrap();
        std::fs::write(
            dir.join("a/item.json"),
            r#"{"type":"Feature","stac_version":"1.0.0","id":"a","geometry":null,"properties":{"datetime":"2020-01-01T00:00:00Z","title":"A"},"links":[],"assets":{"features":{"href":"./features.geojson","roles":["data"]}}}"#,
        )
        .unwrap();
        std::fs::write(
            dir.join("a/features.geojson"),
            r#"{"type":"FeatureCollection","features":[]}"#,
        )
        .unwrap();
    }

    fn mkfifo(path: &Path) {
        let st = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap();
        assert!(st.success());
    }

    /// Run `f` on another thread; fail (instead of hanging the suite) if it takes over 5 s.
    fn promptly<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(std::time::Duration::from_secs(5))
            .expect("a catalogue read blocked (FIFO?) instead of failing at once")
    }

    #[test]
    fn a_fifo_item_is_refused_at_once_naming_the_path() {
        let dir = tempfile::tempdir().unwrap();
        one_item_store(dir.path());
        std::fs::remove_file(dir.path().join("a/item.json")).unwrap();
        mkfifo(&dir.path().join("a/item.json"));
        let root = dir.path().to_owned();
        let store = promptly(move || StacStore::open("x", &root)).unwrap();
        assert!(store.items.is_empty());
        let reason = &store.unavailable[0].reason;
        assert!(reason.contains("not a regular file"), "{reason}");
        assert!(
            reason.contains("FIFO") && reason.contains("item.json"),
            "{reason}"
        );
        // The catalogue file itself as a FIFO: opening the store fails at once.
        let dir2 = tempfile::tempdir().unwrap();
        mkfifo(&dir2.path().join("catalog.json"));
        let root2 = dir2.path().to_owned();
        let err = promptly(move || StacStore::open("y", &root2)).unwrap_err();
        assert!(matches!(err, StoreError::NotRegular { .. }), "{err}");
    }

    #[test]
    fn a_fifo_features_file_is_refused_at_once_naming_the_path() {
        let dir = tempfile::tempdir().unwrap();
        one_item_store(dir.path());
        let features = dir.path().join("a/features.geojson");
        std::fs::remove_file(&features).unwrap();
        mkfifo(&features);
        let store = StacStore::open("x", dir.path()).unwrap();
        let entry = store.items[0].clone();
        let err = promptly(move || store.load_features(&entry).map(|_| ())).unwrap_err();
        assert!(
            matches!(err, StoreError::NotRegular { kind: "FIFO", .. }),
            "{err}"
        );
        let msg = err.to_string();
        assert!(
            msg.contains("features.geojson") && msg.contains("not a regular file"),
            "{msg}"
        );
    }

    #[test]
    fn opening_a_plot_removes_temps_left_by_a_killed_save() {
        let dir = tempfile::tempdir().unwrap();
        one_item_store(dir.path());
        // What a save killed between writing its temp file and renaming it leaves.
        let st = std::process::Command::new("sh")
            .arg("-c")
            .arg(": > \".features.geojson.tmp-$$-0\"; kill -9 $$")
            .current_dir(dir.path().join("a"))
            .status()
            .unwrap();
        assert!(!st.success());
        let temps = || {
            std::fs::read_dir(dir.path().join("a"))
                .unwrap()
                .filter(|e| {
                    e.as_ref()
                        .unwrap()
                        .file_name()
                        .to_string_lossy()
                        .contains(".tmp-")
                })
                .count()
        };
        assert_eq!(temps(), 1);
        let store = StacStore::open("x", dir.path()).unwrap();
        store.load_features(&store.items[0]).unwrap();
        assert_eq!(
            temps(),
            0,
            "the stale temp file was removed when the plot was opened"
        );
    }

    /// A sparse file costs nothing to make and reads as gigabytes of zeros: a store file is
    /// refused by its size (`fstat` of the opened file) before a byte is read.
    #[test]
    fn a_huge_store_file_is_refused_by_its_size_before_reading() {
        let dir = tempfile::tempdir().unwrap();
        one_item_store(dir.path());
        let features = dir.path().join("a/features.geojson");
        let huge: u64 = 3 << 30;
        std::fs::File::options()
            .write(true)
            .open(&features)
            .unwrap()
            .set_len(huge)
            .unwrap();
        let store = StacStore::open("x", dir.path()).unwrap();
        let entry = store.items[0].clone();
        let err = promptly(move || store.load_features(&entry).map(|_| ())).unwrap_err();
        let msg = err.to_string();
        assert!(
            matches!(err, StoreError::TooLarge { size, cap, .. } if size == huge && cap == MAX_FEATURES_BYTES),
            "{msg}"
        );
        assert!(
            msg.contains("features.geojson") && msg.contains("3072 MiB") && msg.contains("512 MiB"),
            "{msg}"
        );
        // An item file over its cap is a missing item, named with its size.
        let item = dir.path().join("a/item.json");
        std::fs::File::options()
            .write(true)
            .open(&item)
            .unwrap()
            .set_len(MAX_JSON_BYTES + 1)
            .unwrap();
        let root = dir.path().to_owned();
        let store = promptly(move || StacStore::open("x", &root)).unwrap();
        assert!(store.items.is_empty());
        assert!(
            store.unavailable[0].reason.contains("item.json")
                && store.unavailable[0].reason.contains("16 MiB"),
            "{:?}",
            store.unavailable
        );
        // The catalogue itself over its cap: the store is refused.
        std::fs::File::options()
            .write(true)
            .open(dir.path().join("catalog.json"))
            .unwrap()
            .set_len(huge)
            .unwrap();
        let root = dir.path().to_owned();
        let err = promptly(move || StacStore::open("x", &root)).unwrap_err();
        assert!(matches!(err, StoreError::TooLarge { .. }), "{err}");
    }

    /// A catalogue that lists one item 200,000 times has one plot: the duplicate links are not
    /// followed (each was a read, a parse and an entry), and are reported once with their count.
    #[test]
    fn duplicate_catalogue_links_are_followed_once_and_reported() {
        let dir = tempfile::tempdir().unwrap();
        one_item_store(dir.path());
        let mut links: Vec<Value> = (0..200_000)
            .map(|_| serde_json::json!({"rel": "item", "href": "./a/item.json"}))
            .collect();
        // The same file by another spelling is the same item.
        links.push(serde_json::json!({"rel": "item", "href": "a/../a/item.json"}));
        let catalog = serde_json::json!({"type": "Catalog", "stac_version": "1.0.0", "id": "x", "description": "", "links": links});
        std::fs::write(dir.path().join("catalog.json"), catalog.to_string()).unwrap();
        let root = dir.path().to_owned();
        let store = promptly(move || StacStore::open("x", &root)).unwrap();
        assert_eq!(store.items.len(), 1);
        assert_eq!(store.unavailable.len(), 1, "{:?}", store.unavailable);
        let reason = &store.unavailable[0].reason;
        assert!(
            reason.contains("200001 times") && reason.contains("item.json"),
            "{reason}"
        );
    }

    #[test]
    fn links_cannot_leave_the_store() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("catalog.json"),
            r#"{"type":"Catalog","stac_version":"1.0.0","id":"x","description":"","links":[{"rel":"item","href":"../../etc/passwd"}]}"#,
        )
        .unwrap();
        let store = StacStore::open("x", dir.path()).unwrap();
        assert!(store.items.is_empty());
        assert!(
            store.unavailable[0].reason.contains("outside the store"),
            "{:?}",
            store.unavailable
        );
    }
}
