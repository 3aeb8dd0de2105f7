//! `toolgate catalog load --pgstac DSN`: plots into the pgstac database behind a STAC API
//! through pgstac's bulk path, as `pypgstac load` does — rows copied (`COPY … FROM STDIN`)
//! straight into the collection's partitions, one `COPY` per partition and several partitions at
//! once — rather than one Transactions request per plot (issue 35).
//!
//! 1. Every item is made what the API store writes ([`stac_api::item_for_api`]: the derived
//!    search text, undated plots over the whole time line) and turned into its pgstac row (id,
//!    geometry as EWKB, collection, datetime, end_datetime, the item as `content`), spooled to a
//!    file per partition (year of its datetime, as the collection is partitioned). Plots of a
//!    catalogue folder have their features written to the API's asset store first; items of an
//!    NDJSON file keep the features asset they name.
//! 2. Plots already in the collection are replaced: their rows are deleted first.
//! 3. Each partition is created or widened with pgstac's own `check_partition`, then filled by
//!    one `COPY`, then its statistics updated (`update_partition_stats_q`).
//! 4. toolgate's indexes ([`INDEXES`]): trigram indexes on the derived search text and platform
//!    text, built after the rows are in (faster than maintaining them row by row), each partition
//!    analysed (the planner's estimates are pgstac's counts of large results), and pgstac's
//!    cached counts dropped.
//!
//! A new, empty collection is partitioned by year (`partition_trunc`) so that a time window
//! reads only its years.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use chrono::{DateTime, Datelike, Utc};
use postgres::{Client, NoTls};
use serde_json::Value;
use toolgate_plot::stac_api::{self, ApiStore};
use toolgate_plot::store::StacStore;

/// toolgate's indexes on pgstac's items: (name on the parent table, the indexed expression).
/// The expressions are what pgstac's CQL2 `like` on these properties compiles to, so the
/// planner uses them for the text and platform pre-filters.
pub const INDEXES: &[(&str, &str)] = &[
    (
        "toolgate_search_text_trgm",
        "pgstac.to_text(content -> 'properties' -> 'debrief:search_text') gin_trgm_ops",
    ),
    (
        "toolgate_platform_text_trgm",
        "pgstac.to_text(content -> 'properties' -> 'debrief:platform_text') gin_trgm_ops",
    ),
];

/// Memory for building an index (PostgreSQL's default, 64 MB, makes a GIN build spill).
const INDEX_MEMORY: &str = "SET maintenance_work_mem = '256MB'";

/// What was loaded.
#[derive(Debug, Default)]
pub struct Report {
    pub loaded: usize,
    pub replaced: u64,
    pub partitions: usize,
    pub failed: usize,
    pub rows_secs: f64,
    pub index_secs: f64,
}

/// One partition's spool file and the time ranges of its rows.
struct Spool {
    path: PathBuf,
    out: BufWriter<File>,
    rows: u64,
    dt: (DateTime<Utc>, DateTime<Utc>),
    edt: (DateTime<Utc>, DateTime<Utc>),
}

/// The collection as pgstac holds it.
struct Collection {
    id: String,
    key: i64,
    trunc: Option<String>,
    base_item: Option<i32>,
}

fn connect(dsn: &str) -> Result<Client> {
    let mut client = Client::connect(dsn, NoTls).with_context(|| {
        format!("cannot connect to the pgstac database {dsn}: give --pgstac the DSN of the database behind the STAC API (postgresql://user@host:port/db)")
    })?;
    // pgstac's functions call each other unqualified.
    client.batch_execute("SET search_path TO pgstac, public")?;
    Ok(client)
}

fn progress(total: u64, what: &str) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new(total);
    // Drawn only on a terminal.
    bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "{msg:22} {bar:30} {human_pos}/{human_len} {per_sec} eta {eta}",
    ) {
        bar.set_style(style);
    }
    bar.set_message(what.to_owned());
    bar
}

/// `COPY` text format: backslash, tab, newline and carriage return escaped.
fn copy_text(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
}

/// GeoJSON geometry → hex EWKB (SRID 4326, 2D: a third coordinate is dropped), as PostGIS reads
/// a geometry in `COPY`. `None` for what is not a GeoJSON geometry.
pub fn ewkb_hex(geometry: &Value) -> Option<String> {
    fn point(out: &mut Vec<u8>, c: &Value) -> Option<()> {
        let c = c.as_array()?;
        out.extend_from_slice(&c.first()?.as_f64()?.to_le_bytes());
        out.extend_from_slice(&c.get(1)?.as_f64()?.to_le_bytes());
        Some(())
    }
    fn points(out: &mut Vec<u8>, cs: &Value) -> Option<()> {
        let cs = cs.as_array()?;
        out.extend_from_slice(&u32::try_from(cs.len()).ok()?.to_le_bytes());
        cs.iter().try_for_each(|c| point(out, c))
    }
    fn rings(out: &mut Vec<u8>, rs: &Value) -> Option<()> {
        let rs = rs.as_array()?;
        out.extend_from_slice(&u32::try_from(rs.len()).ok()?.to_le_bytes());
        rs.iter().try_for_each(|r| points(out, r))
    }
    fn geom(out: &mut Vec<u8>, g: &Value, srid: bool) -> Option<()> {
        let kind = match g.get("type")?.as_str()? {
            "Point" => 1u32,
            "LineString" => 2,
            "Polygon" => 3,
            "MultiPoint" => 4,
            "MultiLineString" => 5,
            "MultiPolygon" => 6,
            "GeometryCollection" => 7,
            _ => return None,
        };
        out.push(1); // little endian
        let flags = if srid { 0x2000_0000 } else { 0 };
        out.extend_from_slice(&(kind | flags).to_le_bytes());
        if srid {
            out.extend_from_slice(&4326u32.to_le_bytes());
        }
        if kind == 7 {
            let gs = g.get("geometries")?.as_array()?;
            out.extend_from_slice(&u32::try_from(gs.len()).ok()?.to_le_bytes());
            return gs.iter().try_for_each(|g| geom(out, g, false));
        }
        let c = g.get("coordinates")?;
        match kind {
            1 => point(out, c),
            2 => points(out, c),
            3 => rings(out, c),
            _ => {
                let parts = c.as_array()?;
                out.extend_from_slice(&u32::try_from(parts.len()).ok()?.to_le_bytes());
                let part = match kind {
                    4 => "Point",
                    5 => "LineString",
                    _ => "Polygon",
                };
                parts.iter().try_for_each(|p| {
                    geom(
                        out,
                        &serde_json::json!({"type": part, "coordinates": p}),
                        false,
                    )
                })
            }
        }
    }
    let mut out = Vec::new();
    geom(&mut out, geometry, true)?;
    let mut hex = String::with_capacity(out.len() * 2);
    for b in out {
        hex.push_str(&format!("{b:02X}"));
    }
    Some(hex)
}

fn time_of(props: &serde_json::Map<String, Value>, key: &str) -> Option<DateTime<Utc>> {
    props
        .get(key)
        .and_then(Value::as_str)
        .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
        .map(|t| t.with_timezone(&Utc))
}

/// An item as the API store writes it → (id, datetime, end_datetime, its `COPY` row).
fn copy_row(
    item: &Value,
    collection: &Collection,
) -> Result<(String, DateTime<Utc>, DateTime<Utc>, String)> {
    let id = item
        .get("id")
        .and_then(Value::as_str)
        .filter(|id| !id.is_empty())
        .context("an item without an \"id\"")?
        .to_owned();
    let empty = serde_json::Map::new();
    let props = item
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    // pgstac's rule (pypgstac's and stac_daterange's): start/end when both are given, else the
    // datetime for both.
    let (dt, edt) = match (
        time_of(props, "start_datetime"),
        time_of(props, "end_datetime"),
        time_of(props, "datetime"),
    ) {
        (Some(s), Some(e), _) => (s, e),
        (_, _, Some(d)) => (d, d),
        _ => bail!("item {id} has no datetime (nor start_datetime and end_datetime)"),
    };
    if dt > edt {
        bail!("item {id}: start_datetime is after end_datetime");
    }
    let geometry = item
        .get("geometry")
        .and_then(ewkb_hex)
        .with_context(|| format!("item {id} has no GeoJSON geometry (nor a bbox to make one)"))?;
    let mut content = item.clone();
    if let Some(obj) = content.as_object_mut() {
        for k in ["id", "geometry", "collection"] {
            obj.remove(k);
        }
        if let Some(b) = collection.base_item {
            obj.insert("pgstac:base_item".to_owned(), b.into());
        }
    }
    let content = serde_json::to_string(&content)?;
    let iso = |t: DateTime<Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true);
    let mut row = String::with_capacity(content.len() + geometry.len() + 128);
    copy_text(&mut row, &id);
    row.push('\t');
    row.push_str(&geometry);
    row.push('\t');
    copy_text(&mut row, &collection.id);
    row.push('\t');
    row.push_str(&iso(dt));
    row.push('\t');
    row.push_str(&iso(edt));
    row.push('\t');
    copy_text(&mut row, &content);
    row.push_str("\t\\N\n");
    Ok((id, dt, edt, row))
}

/// The partition bucket of a datetime, as pgstac's `partition_name` makes it (UTC).
fn bucket(trunc: Option<&str>, dt: DateTime<Utc>) -> String {
    match trunc {
        Some("year") => format!("{:04}", dt.year()),
        Some("month") => format!("{:04}{:02}", dt.year(), dt.month()),
        _ => String::new(),
    }
}

/// Where one thread spools its rows before they are copied: a file per partition.
struct Spooler<'a> {
    dir: PathBuf,
    collection: &'a Collection,
    spools: BTreeMap<String, Spool>,
    ids: Vec<String>,
}

impl<'a> Spooler<'a> {
    fn new(dir: PathBuf, collection: &'a Collection) -> Result<Self> {
        std::fs::create_dir_all(&dir)?;
        Ok(Self {
            dir,
            collection,
            spools: BTreeMap::new(),
            ids: Vec::new(),
        })
    }

    fn add(&mut self, item: &Value) -> Result<()> {
        let (id, dt, edt, row) = copy_row(item, self.collection)?;
        let key = bucket(self.collection.trunc.as_deref(), dt);
        let spool = match self.spools.get_mut(&key) {
            Some(s) => s,
            None => {
                let path = self.dir.join(format!("part-{key}.tsv"));
                let out = BufWriter::with_capacity(
                    1 << 20,
                    toolgate_fs::open::create_new(&path)
                        .with_context(|| format!("creating {}", path.display()))?,
                );
                self.spools.entry(key).or_insert(Spool {
                    path,
                    out,
                    rows: 0,
                    dt: (dt, dt),
                    edt: (edt, edt),
                })
            }
        };
        spool.out.write_all(row.as_bytes())?;
        spool.rows += 1;
        spool.dt = (spool.dt.0.min(dt), spool.dt.1.max(dt));
        spool.edt = (spool.edt.0.min(edt), spool.edt.1.max(edt));
        self.ids.push(id);
        Ok(())
    }
}

/// One partition's rows, spooled by one or more threads, and their time ranges.
struct Part {
    files: Vec<PathBuf>,
    rows: u64,
    dt: (DateTime<Utc>, DateTime<Utc>),
    edt: (DateTime<Utc>, DateTime<Utc>),
}

/// The spoolers' files merged by partition, and every id (sorted; a duplicate is an error).
fn merge(spoolers: Vec<Spooler>) -> Result<(BTreeMap<String, Part>, Vec<String>)> {
    let mut parts: BTreeMap<String, Part> = BTreeMap::new();
    let mut ids = Vec::new();
    for sp in spoolers {
        ids.extend(sp.ids);
        for (key, mut s) in sp.spools {
            s.out.flush()?;
            let p = parts.entry(key).or_insert(Part {
                files: Vec::new(),
                rows: 0,
                dt: s.dt,
                edt: s.edt,
            });
            p.files.push(s.path);
            p.rows += s.rows;
            p.dt = (p.dt.0.min(s.dt.0), p.dt.1.max(s.dt.1));
            p.edt = (p.edt.0.min(s.edt.0), p.edt.1.max(s.edt.1));
        }
    }
    ids.sort_unstable();
    if let Some(w) = ids.windows(2).find(|w| w[0] == w[1]) {
        bail!("the plot {} is given twice", w[0]);
    }
    Ok((parts, ids))
}

/// Spool the items of an NDJSON file, one thread per spooler turning lines into rows.
fn spool_items(
    file: &Path,
    collection: &Collection,
    spoolers: &mut [Spooler],
    bar: &indicatif::ProgressBar,
) -> Result<()> {
    let reader = BufReader::with_capacity(
        1 << 20,
        File::open(file).with_context(|| format!("reading {}", file.display()))?,
    );
    let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<(usize, String)>>(2 * spoolers.len());
    let rx = Mutex::new(rx);
    std::thread::scope(|scope| -> Result<()> {
        let workers: Vec<_> = spoolers
            .iter_mut()
            .map(|sp| {
                let rx = &rx;
                scope.spawn(move || -> Result<()> {
                    loop {
                        let batch = match rx.lock() {
                            Ok(rx) => rx.recv(),
                            Err(_) => return Ok(()),
                        };
                        let Ok(batch) = batch else {
                            return Ok(());
                        };
                        for (n, line) in batch {
                            let at = || format!("{} line {n}", file.display());
                            let item: Value = serde_json::from_str(&line)
                                .with_context(|| format!("{}: not JSON", at()))?;
                            let href = stac_api::features_href(&item)
                                .unwrap_or_default()
                                .to_owned();
                            let item = stac_api::item_for_api(&item, &collection.id, &href)
                                .with_context(at)?;
                            sp.add(&item).with_context(at)?;
                            bar.inc(line.len() as u64 + 1);
                        }
                    }
                })
            })
            .collect();
        let mut batch = Vec::with_capacity(1000);
        let mut read = Ok(());
        for (n, line) in reader.lines().enumerate() {
            let line = match line {
                Ok(l) => l,
                Err(e) => {
                    read =
                        Err(anyhow::Error::from(e).context(format!("reading {}", file.display())));
                    break;
                }
            };
            if line.trim().is_empty() {
                continue;
            }
            batch.push((n + 1, line));
            if batch.len() == 1000 && tx.send(std::mem::take(&mut batch)).is_err() {
                break; // a worker failed: its error is reported below
            }
        }
        if !batch.is_empty() {
            let _ = tx.send(batch);
        }
        drop(tx);
        for w in workers {
            w.join()
                .map_err(|_| anyhow::anyhow!("a spooling thread panicked"))??;
        }
        read
    })
}

/// Load the plots of `folders` and the items of the NDJSON `item_files` into the collection of
/// `api`, whose pgstac database is `dsn`; `jobs` partitions at once.
///
/// Runs on threads of its own: the synchronous PostgreSQL client may not block a thread of the
/// caller's async runtime.
///
/// # Errors
///
/// The database's, the files', the API's (collection, assets).
pub fn load(
    api: &ApiStore,
    dsn: &str,
    folders: &[StacStore],
    item_files: &[PathBuf],
    jobs: usize,
) -> Result<Report> {
    std::thread::scope(|scope| {
        scope
            .spawn(|| load_here(api, dsn, folders, item_files, jobs))
            .join()
            .map_err(|_| anyhow::anyhow!("the loader thread panicked"))?
    })
}

fn load_here(
    api: &ApiStore,
    dsn: &str,
    folders: &[StacStore],
    item_files: &[PathBuf],
    jobs: usize,
) -> Result<Report> {
    let mut client = connect(dsn)?;
    let version: String = client
        .query_one("SELECT pgstac.get_version()", &[])
        .context("the database has no pgstac schema: is --pgstac the database behind --store?")?
        .get(0);
    tracing::debug!(version, "pgstac");
    api.ensure_collection()?;
    let id = api.address.collection.clone();
    let row = client
        .query_opt(
            "SELECT key, partition_trunc FROM pgstac.collections WHERE id = $1",
            &[&id],
        )?
        .with_context(|| {
            format!("the collection {id} the STAC API has is not in this database: is --pgstac the database behind --store?")
        })?;
    let key: i64 = row.get(0);
    let mut trunc: Option<String> = row.get(1);
    let empty: bool = client
        .query_one(
            "SELECT NOT EXISTS (SELECT 1 FROM pgstac.items WHERE collection = $1)",
            &[&id],
        )?
        .get(0);
    if empty && trunc.is_none() {
        client.execute(
            "UPDATE pgstac.collections SET partition_trunc = 'year' WHERE id = $1",
            &[&id],
        )?;
        trunc = Some("year".to_owned());
    }
    let base_item: Option<i32> = client
        .query_one(
            "SELECT base_item_id FROM pgstac.current_base_item($1)",
            &[&id],
        )?
        .get(0);
    let collection = Collection {
        id,
        key,
        trunc,
        base_item,
    };

    // 1. Spool the rows: a spooler per thread, each with a file per partition.
    let tmp = tempfile::tempdir()?;
    let mut spoolers = (0..jobs.max(1))
        .map(|i| Spooler::new(tmp.path().join(i.to_string()), &collection))
        .collect::<Result<Vec<_>>>()?;
    let mut report = Report::default();
    let plots: usize = folders.iter().map(|f| f.items.len()).sum();
    if plots > 0 {
        let bar = progress(plots as u64, "features → assets");
        for folder in folders {
            for entry in &folder.items {
                bar.inc(1);
                match folder_item(api, folder, entry) {
                    Ok(item) => spoolers[0].add(&item)?,
                    Err(e) => {
                        report.failed += 1;
                        bar.suspend(|| eprintln!("error: {}: {e:#}", entry.plot_id));
                    }
                }
            }
        }
        bar.finish_and_clear();
    }
    for file in item_files {
        let size = std::fs::metadata(file)
            .with_context(|| format!("reading {}", file.display()))?
            .len();
        let bar = progress(size, "reading items");
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{msg:22} {bar:30} {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
        ) {
            bar.set_style(style);
        }
        spool_items(file, &collection, &mut spoolers, &bar)?;
        bar.finish_and_clear();
    }
    let (parts, ids) = merge(spoolers)?;
    report.loaded = ids.len();

    let started = Instant::now();
    // 2. Replace: the plots already there go first.
    if !empty {
        for chunk in ids.chunks(10_000) {
            let chunk: Vec<&str> = chunk.iter().map(String::as_str).collect();
            report.replaced += client.execute(
                "DELETE FROM pgstac.items WHERE collection = $1 AND id = ANY($2)",
                &[&collection.id, &chunk],
            )?;
        }
    }
    drop(ids);

    // 3. Partitions, then one COPY each, `jobs` at once.
    let mut queue = Vec::new();
    for (
        _,
        Part {
            files,
            rows,
            dt,
            edt,
        },
    ) in parts
    {
        let t = |t: DateTime<Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true);
        let name: String = client
            .query_one(
                "SELECT pgstac.check_partition($1, tstzrange($2::text::timestamptz, $3::text::timestamptz, '[]'),
                                               tstzrange($4::text::timestamptz, $5::text::timestamptz, '[]'))",
                &[&collection.id, &t(dt.0), &t(dt.1), &t(edt.0), &t(edt.1)],
            )
            .context("pgstac's check_partition")?
            .get(0);
        queue.push((name, files, rows));
    }
    report.partitions = queue.len();
    let total: u64 = queue.iter().map(|q| q.2).sum();
    let bar = progress(total, "copying into pgstac");
    let queue = Mutex::new(queue);
    let jobs = jobs.clamp(1, report.partitions.max(1));
    std::thread::scope(|scope| -> Result<()> {
        let workers: Vec<_> = (0..jobs)
            .map(|_| {
                scope.spawn(|| -> Result<()> {
                    let mut db = connect(dsn)?;
                    // The rows' collection was checked once above: a superuser's loader skips
                    // the per-row foreign-key check on it (the partitions' only row triggers),
                    // as pg_restore --disable-triggers does; anyone else's keeps it.
                    let _ = db.batch_execute("SET session_replication_role = replica");
                    loop {
                        let next = queue
                            .lock()
                            .map_err(|_| anyhow::anyhow!("a loader stopped"))?
                            .pop();
                        let Some((name, files, _)) = next else {
                            return Ok(());
                        };
                        copy_partition(&mut db, &name, &files, &bar)?;
                    }
                })
            })
            .collect();
        for w in workers {
            w.join()
                .map_err(|_| anyhow::anyhow!("a loader thread panicked"))??;
        }
        Ok(())
    })?;
    bar.finish_and_clear();
    report.rows_secs = started.elapsed().as_secs_f64();

    // 4. toolgate's indexes and statistics; pgstac's cached counts and estimates (it keeps a
    // query's first estimate for good) are stale now.
    let started = Instant::now();
    ensure_indexes(&mut client, dsn, &collection, jobs)?;
    client.batch_execute("DELETE FROM pgstac.search_wheres")?;
    report.index_secs = started.elapsed().as_secs_f64();
    Ok(report)
}

/// A folder plot as the API store writes it, its features written to the API's asset store.
fn folder_item(
    api: &ApiStore,
    folder: &StacStore,
    entry: &toolgate_plot::store::ItemEntry,
) -> Result<Value> {
    let item_file = folder.root.join(&entry.item_path);
    let item: Value = serde_json::from_slice(
        &std::fs::read(&item_file).with_context(|| format!("reading {}", item_file.display()))?,
    )
    .with_context(|| format!("parsing {}", item_file.display()))?;
    let features = folder.load_features(entry)?;
    let bytes = std::fs::read(&features.path)
        .with_context(|| format!("reading {}", features.path.display()))?;
    let id = item
        .get("id")
        .and_then(Value::as_str)
        .filter(|id| !id.is_empty() && !id.contains('/'))
        .context("an item needs an \"id\" without \"/\"")?;
    let href = api.put_asset(id, &bytes)?;
    Ok(stac_api::item_for_api(
        &item,
        &api.address.collection,
        &href,
    )?)
}

fn copy_partition(
    db: &mut Client,
    name: &str,
    files: &[PathBuf],
    bar: &indicatif::ProgressBar,
) -> Result<()> {
    let mut tx = db.transaction()?;
    {
        let mut copy = tx.copy_in(&format!(
            "COPY pgstac.\"{}\" (id, geometry, collection, datetime, end_datetime, content, private) FROM STDIN",
            name.replace('"', "\"\"")
        ))?;
        let mut buf = vec![0u8; 1 << 20];
        for path in files {
            let mut file =
                File::open(path).with_context(|| format!("reading {}", path.display()))?;
            loop {
                let n = file.read(&mut buf)?;
                if n == 0 {
                    break;
                }
                copy.write_all(&buf[..n])?;
                bar.inc(buf[..n].iter().filter(|b| **b == b'\n').count() as u64);
            }
        }
        copy.finish()
            .with_context(|| format!("copying the rows of partition {name}"))?;
    }
    tx.commit()?;
    db.query_one("SELECT pgstac.update_partition_stats_q($1)", &[&name])?;
    Ok(())
}

/// toolgate's trigram indexes on every partition of the collection (built there first, `jobs` at
/// once, when the parent index does not exist yet: creating it then attaches them), and the
/// partitions analysed. (A larger statistics sample of the indexed expressions estimates a
/// `like` better but costs every search several milliseconds of planning per partition.)
fn ensure_indexes(client: &mut Client, dsn: &str, c: &Collection, jobs: usize) -> Result<()> {
    client.batch_execute(INDEX_MEMORY)?;
    client
        .batch_execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
        .context("creating the pg_trgm extension (trigram indexes for the text filters)")?;
    let leaves: Vec<String> = client
        .query(
            "SELECT c.relname::text FROM pg_partition_tree(format('pgstac.%I', $1::text)::regclass) t
             JOIN pg_class c ON c.oid = t.relid WHERE t.isleaf",
            &[&format!("_items_{}", c.key)],
        )?
        .iter()
        .map(|r| r.get(0))
        .collect();
    let mut missing = Vec::new();
    for (name, _) in INDEXES {
        let exists: bool = client
            .query_one(
                "SELECT to_regclass(format('pgstac.%I', $1::text)) IS NOT NULL",
                &[name],
            )?
            .get(0);
        if !exists {
            missing.push(*name);
        }
    }
    let bar = progress(leaves.len() as u64, "indexing partitions");
    let queue = Mutex::new(leaves.clone());
    std::thread::scope(|scope| -> Result<()> {
        let workers: Vec<_> = (0..jobs.clamp(1, leaves.len().max(1)))
            .map(|_| {
                scope.spawn(|| -> Result<()> {
                    let mut db = connect(dsn)?;
                    db.batch_execute(INDEX_MEMORY)?;
                    loop {
                        let next = queue
                            .lock()
                            .map_err(|_| anyhow::anyhow!("an indexer stopped"))?
                            .pop();
                        let Some(leaf) = next else {
                            return Ok(());
                        };
                        for (name, expr) in INDEXES {
                            if missing.contains(name) {
                                db.batch_execute(&format!(
                                    "CREATE INDEX IF NOT EXISTS \"{leaf}_{name}\" ON pgstac.\"{leaf}\" USING gin ({expr})"
                                ))?;
                            }
                        }
                        db.batch_execute(&format!("ANALYZE pgstac.\"{leaf}\""))?;
                        bar.inc(1);
                    }
                })
            })
            .collect();
        for w in workers {
            w.join()
                .map_err(|_| anyhow::anyhow!("an indexer thread panicked"))??;
        }
        Ok(())
    })?;
    bar.finish_and_clear();
    for (name, expr) in INDEXES {
        if missing.contains(name) {
            // Attaches the partitions' own indexes; builds it on other collections' partitions.
            client.batch_execute(&format!(
                "CREATE INDEX IF NOT EXISTS \"{name}\" ON pgstac.items USING gin ({expr})"
            ))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geometries_become_ewkb_as_postgis_writes_it() {
        // SELECT encode(ST_AsEWKB(ST_GeomFromText('POINT(1 2)', 4326)), 'hex')
        assert_eq!(
            ewkb_hex(&serde_json::json!({"type": "Point", "coordinates": [1.0, 2.0]})).unwrap(),
            "0101000020E6100000000000000000F03F0000000000000040"
        );
        // A polygon: one ring of four points.
        let p = ewkb_hex(&serde_json::json!({"type": "Polygon",
            "coordinates": [[[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 0.0]]]}))
        .unwrap();
        assert!(p.starts_with("0103000020E61000000100000004000000"), "{p}");
        assert_eq!(p.len(), 2 * (1 + 4 + 4 + 4 + 4 + 4 * 16));
        // A multipolygon's parts carry no SRID.
        let m = ewkb_hex(&serde_json::json!({"type": "MultiPolygon",
            "coordinates": [[[[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 0.0]]]]}))
        .unwrap();
        assert!(
            m.starts_with("0106000020E61000000100000001030000000100000004000000"),
            "{m}"
        );
        assert!(ewkb_hex(&serde_json::json!({"type": "Circle"})).is_none());
    }

    #[test]
    fn rows_escape_text_and_keep_pgstac_times() {
        let c = Collection {
            id: "debrief".into(),
            key: 1,
            trunc: Some("year".into()),
            base_item: Some(3),
        };
        let item = serde_json::json!({"type": "Feature", "id": "a\tb", "collection": "debrief",
            "geometry": {"type": "Point", "coordinates": [1.0, 2.0]},
            "properties": {"title": "x\ny\\z", "datetime": null,
                           "start_datetime": "2020-01-01T00:00:00Z", "end_datetime": "2020-01-02T00:00:00+01:00"}});
        let (id, dt, edt, row) = copy_row(&item, &c).unwrap();
        assert_eq!(id, "a\tb");
        assert_eq!(bucket(Some("year"), dt), "2020");
        assert_eq!(edt.to_rfc3339(), "2020-01-01T23:00:00+00:00");
        let cols: Vec<&str> = row.trim_end_matches('\n').split('\t').collect();
        assert_eq!(cols.len(), 7, "{row}");
        assert_eq!(cols[0], "a\\tb");
        assert_eq!(cols[2], "debrief");
        assert_eq!(cols[3], "2020-01-01T00:00:00Z");
        assert_eq!(cols[6], "\\N");
        assert!(cols[5].contains("x\\\\ny\\\\\\\\z"), "{}", cols[5]);
        assert!(cols[5].contains("\"pgstac:base_item\":3"), "{}", cols[5]);
        assert!(!cols[5].contains("\"geometry\""));
        let undated = serde_json::json!({"id": "u", "geometry": {"type": "Point", "coordinates": [0.0, 0.0]},
            "properties": {}});
        assert!(copy_row(&undated, &c).is_err());
    }
}
