//! A plot catalogue on a STAC API (issue 21): search with `POST /search` (`bbox`, `datetime`,
//! a CQL2-JSON `filter`, paging through the `next` link), plots read from the item and its
//! features asset, saves and imports written through the Transactions extension.
//!
//! Semantics are the folder store's: the server narrows the candidates (every condition it is
//! sent is implied by the folder store's rule, so it never drops a real match), then each
//! candidate is tested with the same [`Criteria::matches`] the folder store uses, so both give
//! the same first page. Matches come in item-id order (the sort extension; the server's order
//! without it).
//!
//! A search never reads every match (issue 35): it reads pages, keyset-paged by the server's
//! `next` token, only until it has the cap's worth and one more, then asks the server for the
//! count (`numberMatched`, with pgstac's `context: auto` in the request's `conf`: exact below
//! [`EXACT_COUNT_BELOW`] expected matches, the planner's estimate above). The reply says how
//! exact its total is ([`TotalIs`]): exact when the server counted and its pre-filter is the rule
//! (or the few candidates left were read), "about" for an estimate, "at least" when the server
//! gave no count. Small catalogues therefore answer exactly as the folder store does.
//!
//! One API store is one collection of the server (default [`DEFAULT_COLLECTION`]); its plot ids
//! are `stac://<store>/<itemId>/item.json`, the ids a folder store written by `toolgate import`
//! gives the same plots. Opening a plot copies its item and features into a private folder (the
//! *mirror*, a [`StacStore`] under the data directory) that the session edits and saves as
//! usual; a save then writes the features asset and the item back to the server.
//!
//! Items written by toolgate carry two derived properties the server filters on
//! (`debrief:search_text`, `debrief:platform_text`: the lower-cased text the folder store matches
//! free text and platforms against); undated plots are stored over the whole time line with
//! `debrief:undated: true` (pgstac needs a datetime) and read back undated.

use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use crate::search::{self, Criteria, PlotMatch, SearchQuery, SearchResult, TotalIs};
use crate::store::strings;
use crate::store::{ItemEntry, PlotId, StacStore, StoreError};

/// The collection an API store reads and writes unless its address names another.
pub const DEFAULT_COLLECTION: &str = "debrief";
/// Items asked for per search page at most (the first page asks for one more than the cap).
pub const PAGE_LIMIT: usize = 1000;
/// Candidates read for one page of matches at most (only a query whose server-side pre-filter is
/// much wider than the rule reads past the first page); past it the count is the server's.
pub const MAX_SCANNED: usize = 50_000;
/// The count a search asks the server for (pgstac's `context: auto` through the request's
/// `conf`, which stac-fastapi-pgstac passes on and other servers ignore): counted exactly when
/// the planner expects fewer matches than this, estimated from the plan above it. A
/// `numberMatched` below it is therefore exact; one at or above it is reported as "about".
pub const EXACT_COUNT_BELOW: usize = 20_000;
/// A first page that takes longer than this is of a broad search: its count is asked for at the
/// same time rather than after it (a narrow search's page comes sooner and needs no count).
pub const COUNT_AFTER: Duration = Duration::from_millis(20);
/// When the server's pre-filter is wider than the rule, a search with at most this many
/// candidates left after its page reads them to count its matches exactly.
pub const FINISH_BELOW: usize = 200;
/// Bytes read from one JSON reply at most (a search page, an item, the conformance).
pub const MAX_JSON_BYTES: u64 = 64 * 1024 * 1024;
/// Bytes read from one features asset at most.
pub const MAX_ASSET_BYTES: u64 = 512 * 1024 * 1024;

const ITEM_SEARCH: &str = "https://api.stacspec.org/v1.0.0/item-search";
const UNDATED_START: &str = "0001-01-01T00:00:00Z";
const UNDATED_END: &str = "9999-12-31T23:59:59Z";

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error(
        "\"{0}\" is not a STAC API address; give the API's root as https://host/path/ (or stac+api://host:port/path for plain http), or a catalogue folder as a path"
    )]
    BadAddress(String),
    #[error(
        "could not reach the STAC API at {url}: {reason}. Check that the server is running and that the address is its root (where /search and /conformance are), or give a catalogue folder instead"
    )]
    Unreachable { url: String, reason: String },
    #[error("the STAC API at {url} answered HTTP {status}: {body}")]
    Status {
        url: String,
        status: u16,
        body: String,
    },
    #[error("the reply from {url} is not what a STAC API sends: {message}")]
    Malformed { url: String, message: String },
    #[error("the reply from {url} is larger than {limit} bytes, the most toolgate reads")]
    TooLarge { url: String, limit: u64 },
    #[error(
        "{url} is not a STAC API with item search (its conformance classes do not include {ITEM_SEARCH}); give the root of a STAC API, or a catalogue folder"
    )]
    NotItemSearch { url: String },
    #[error(
        "the catalogue at {url} is read-only: its server does not offer the STAC Transactions extension, so {what} cannot be written there. Work on a catalogue folder instead (--store DIR), or ask for transactions on the server"
    )]
    ReadOnly { url: String, what: String },
    #[error(
        "plot {plot_id}: its features asset {href} is not fetched ({reason}); toolgate reads assets only over http(s) from the API's own origin {origin}"
    )]
    AssetRefused {
        plot_id: String,
        href: String,
        reason: &'static str,
        origin: String,
    },
    #[error(
        "No plot \"{plot_id}\" in the STAC API catalogue {url}. Search the catalog to find plot ids."
    )]
    UnknownPlot { plot_id: String, url: String },
    #[error(
        "The plot {plot_id} changed on the server since it was opened, so saving would overwrite someone else's change. Your unsaved edits are kept: revert to load the server's version, or copy your edits elsewhere."
    )]
    Changed { plot_id: String },
    #[error(
        "the item {id} has no features asset (an asset with role \"data\" or key \"features\"/\"data\")"
    )]
    NoFeatures { id: String },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Whether `s` names a STAC API (rather than a catalogue folder).
pub fn is_api_address(s: &str) -> bool {
    ["http://", "https://", "stac+api://", "stac+apis://"]
        .iter()
        .any(|p| s.starts_with(p))
}

/// A parsed API address: `https://host/path/`, `http://…`, or `stac+api://host:port/path`
/// (plain http) / `stac+apis://…` (https); `#collection=NAME` (or `#NAME`) picks the collection.
/// The canonical spelling is the http(s) one, which is what the server's own links use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiAddress {
    /// The API root, ending in `/`.
    pub root: String,
    /// `scheme://host[:port]`.
    pub origin: String,
    pub collection: String,
}

impl ApiAddress {
    /// # Errors
    ///
    /// [`ApiError::BadAddress`] for anything but an http(s) / stac+api(s) URL with a host.
    pub fn parse(s: &str) -> Result<Self, ApiError> {
        let bad = || ApiError::BadAddress(s.to_owned());
        let (url, fragment) = match s.split_once('#') {
            Some((u, f)) => (u, Some(f)),
            None => (s, None),
        };
        let (scheme, rest) = url.split_once("://").ok_or_else(bad)?;
        let scheme = match scheme {
            "http" | "stac+api" => "http",
            "https" | "stac+apis" => "https",
            _ => return Err(bad()),
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        if authority.is_empty()
            || authority.contains('@')
            || authority.chars().any(char::is_whitespace)
            || path.contains('?')
        {
            return Err(bad());
        }
        let mut path = path.to_owned();
        if !path.ends_with('/') {
            path.push('/');
        }
        let collection = match fragment {
            None | Some("") => DEFAULT_COLLECTION.to_owned(),
            Some(f) => f.strip_prefix("collection=").unwrap_or(f).to_owned(),
        };
        if collection.is_empty()
            || !collection
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        {
            return Err(bad());
        }
        let origin = format!("{scheme}://{authority}");
        Ok(Self {
            root: format!("{origin}{path}"),
            origin,
            collection,
        })
    }

    /// The canonical spelling of the address (`#collection=` only when not the default).
    pub fn canonical(&self) -> String {
        if self.collection == DEFAULT_COLLECTION {
            self.root.clone()
        } else {
            format!("{}#collection={}", self.root, self.collection)
        }
    }
}

/// One collection of a STAC API as a plot catalogue.
#[derive(Debug, Clone)]
pub struct ApiStore {
    /// The store id in plot ids (default: the collection's name).
    pub id: String,
    pub address: ApiAddress,
    /// Whether the server offers the Transactions extension (writes are refused otherwise).
    pub transactions: bool,
    /// Whether the server takes CQL2-JSON filters (otherwise all text/platform testing is ours).
    pub filter: bool,
    /// Whether the server takes the fields extension (smaller search pages).
    pub fields: bool,
    /// Whether the server takes the sort extension: pages come in item-id order (without it, in
    /// the server's own order).
    pub sort: bool,
    /// Where opened plots are copied to for the session (see the module doc).
    pub mirror_dir: Option<PathBuf>,
    /// Items asked for per search page (default [`PAGE_LIMIT`]).
    pub page_limit: usize,
    /// Counts below this are asked of the server exactly, larger ones may be its estimate
    /// (default [`EXACT_COUNT_BELOW`]).
    pub exact_count_below: usize,
    /// A first page slower than this has the count asked for at the same time (default
    /// [`COUNT_AFTER`]).
    pub count_after: Duration,
    agent: ureq::Agent,
}

/// The `like` pattern for `s` as a substring (`%`, `_` and `\` escaped).
fn like_substring(s: &str) -> String {
    let mut out = String::from("%");
    for c in s.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('%');
    out
}

fn like(property: &str, pattern: String) -> Value {
    json!({"op": "like", "args": [{"property": property}, pattern]})
}

fn all_of(mut parts: Vec<Value>, op: &str) -> Option<Value> {
    match parts.len() {
        0 => None,
        1 => parts.pop(),
        _ => Some(json!({"op": op, "args": parts})),
    }
}

/// The CQL2-JSON pre-filter for `c`: each condition is implied by the folder store's rule (a
/// phrase found in the text contains each of its words; a word that starts a word is in the
/// text), so the server never drops a real match.
pub fn cql2_filter(c: &Criteria) -> Option<Value> {
    let mut parts = Vec::new();
    if let Some(t) = &c.text {
        let words = search::query_words(t);
        if words.is_empty() {
            parts.push(like("debrief:search_text", like_substring(t)));
        } else {
            for w in words {
                parts.push(like("debrief:search_text", like_substring(&w)));
            }
        }
    }
    if !c.platforms.is_empty() {
        let any = c
            .platforms
            .iter()
            .map(|p| like("debrief:platform_text", like_substring(p)))
            .collect();
        parts.extend(all_of(any, "or"));
    }
    all_of(parts, "and")
}

fn iso(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// The `datetime` interval for `c`: a closed interval, as the STAC API's item search reads it
/// (an item matches when its span intersects it), which is the folder store's rule. A time
/// finer than a second is sent widened to whole seconds (ours is applied after).
fn datetime_interval(c: &Criteria) -> Option<String> {
    if c.start.is_none() && c.end.is_none() {
        return None;
    }
    let second = chrono::Duration::seconds(1);
    // `iso` drops the fraction: the start rounded down, the end rounded up.
    let start = c.start.map_or_else(|| "..".to_owned(), iso);
    let end = c.end.map_or_else(
        || "..".to_owned(),
        |e| {
            iso(if e.timestamp_subsec_nanos() > 0 {
                e + second
            } else {
                e
            })
        },
    );
    Some(format!("{start}/{end}"))
}

fn time(v: Option<&Value>) -> Option<DateTime<Utc>> {
    v.and_then(Value::as_str)
        .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
        .map(|t| t.with_timezone(&Utc))
}

fn features_asset(item: &Value) -> Option<&Value> {
    let assets = item.get("assets")?.as_object()?;
    assets
        .get("features")
        .or_else(|| assets.get("data"))
        .or_else(|| {
            assets.values().find(|a| {
                a.get("roles")
                    .and_then(Value::as_array)
                    .is_some_and(|r| r.iter().any(|r| r == "data"))
            })
        })
}

/// The href of an item's features asset (an asset with role "data" or key "features"/"data").
pub fn features_href(item: &Value) -> Option<&str> {
    features_asset(item)
        .and_then(|a| a.get("href"))
        .and_then(Value::as_str)
}

/// What search needs of an item (as the folder store reads it), for store `store`.
pub fn entry_from_item(store: &str, item: &Value) -> Option<ItemEntry> {
    let id = item.get("id")?.as_str()?;
    let empty = serde_json::Map::new();
    let props = item
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let item_path = format!("{id}/item.json");
    let undated = props.get("debrief:undated") == Some(&Value::Bool(true));
    let (start, end) = if undated {
        (None, None)
    } else {
        let dt = time(props.get("datetime"));
        (
            time(props.get("start_datetime")).or(dt),
            time(props.get("end_datetime")).or(dt),
        )
    };
    let bbox = item.get("bbox").and_then(Value::as_array).and_then(|b| {
        let v: Vec<f64> = b.iter().filter_map(Value::as_f64).collect();
        match v.len() {
            4 => Some([v[0], v[1], v[2], v[3]]),
            6 => Some([v[0], v[1], v[3], v[4]]),
            _ => None,
        }
    });
    Some(ItemEntry {
        plot_id: PlotId {
            store: store.to_owned(),
            item_path: item_path.clone(),
        }
        .to_string(),
        item_path,
        title: props
            .get("title")
            .and_then(Value::as_str)
            .map_or_else(|| id.to_owned(), str::to_owned),
        description: props
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        tags: strings(props.get("debrief:tags")),
        feature_tags: strings(props.get("debrief:feature_tags")),
        platforms: props
            .get("debrief:platforms")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default(),
        bbox,
        start,
        end,
        features_path: None,
    })
}

/// `item` as toolgate writes it to an API: the derived search properties, undated plots spread
/// over the whole time line, no links (the server makes its own), the features asset at `href`.
pub fn item_for_api(item: &Value, collection: &str, href: &str) -> Result<Value, ApiError> {
    let mut item = item.clone();
    let id = item
        .get("id")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| ApiError::Malformed {
            url: "(the item to write)".to_owned(),
            message: "an item needs an \"id\"".to_owned(),
        })?;
    let entry =
        entry_from_item("x", &item).ok_or_else(|| ApiError::NoFeatures { id: id.clone() })?;
    item["collection"] = collection.into();
    item["links"] = json!([]);
    let asset_key = item
        .get("assets")
        .and_then(Value::as_object)
        .and_then(|a| {
            ["features", "data"]
                .iter()
                .find(|k| a.contains_key(**k))
                .map(|k| (*k).to_owned())
        })
        .unwrap_or_else(|| "features".to_owned());
    if !item.get("assets").is_some_and(Value::is_object) {
        item["assets"] = json!({});
    }
    let mut asset = features_asset(&item).cloned().unwrap_or_else(|| json!({}));
    asset["href"] = href.into();
    if asset.get("roles").is_none() {
        asset["roles"] = json!(["data"]);
    }
    if asset.get("type").is_none() {
        asset["type"] = "application/geo+json".into();
    }
    item["assets"][asset_key.as_str()] = asset;
    let props = item
        .get_mut("properties")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| ApiError::Malformed {
            url: "(the item to write)".to_owned(),
            message: format!("item {id} has no \"properties\" object"),
        })?;
    props.insert(
        "debrief:search_text".to_owned(),
        search::search_text(&entry).into(),
    );
    props.insert(
        "debrief:platform_text".to_owned(),
        search::platform_text(&entry).into(),
    );
    if entry.start.is_none() || entry.end.is_none() {
        props.insert("debrief:undated".to_owned(), true.into());
        props.insert("datetime".to_owned(), Value::Null);
        props.insert("start_datetime".to_owned(), UNDATED_START.into());
        props.insert("end_datetime".to_owned(), UNDATED_END.into());
    }
    if item.get("geometry").is_none_or(Value::is_null)
        && let Some(b) = entry.bbox
    {
        item["geometry"] = json!({"type": "Polygon", "coordinates": [[[b[0], b[1]], [b[2], b[1]], [b[2], b[3]], [b[0], b[3]], [b[0], b[1]]]]});
    }
    Ok(item)
}

fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_owned()
    } else {
        format!("{}…", s.chars().take(n).collect::<String>())
    }
}

/// Where a search is in its pages.
struct Pager {
    url: String,
    /// The body of the next POST (none: the next page is a GET of `url`).
    post: Option<Value>,
    limit: usize,
    requests: usize,
    scanned: usize,
}

/// One page of an API store's matches ([`ApiStore::search_page`]).
#[derive(Debug, Clone)]
pub struct ApiPage {
    /// The matching entries read, in item-id order: the page asked for, plus one more when more
    /// match.
    pub entries: Vec<ItemEntry>,
    /// How many match in all, as `total_is` says.
    pub total: usize,
    pub total_is: TotalIs,
    /// The HTTP requests the search made (pages and the count).
    pub requests: usize,
}

/// A plot read from the API: its item (as the server has it) and its features bytes.
#[derive(Debug, Clone)]
pub struct FetchedPlot {
    pub item: Value,
    pub features: Vec<u8>,
}

impl ApiStore {
    /// Connect to the API at `address` (reads its conformance classes). `id` names the store in
    /// plot ids; default: the collection's name.
    ///
    /// # Errors
    ///
    /// A bad address, an unreachable server, or one without item search.
    pub fn connect(id: Option<&str>, address: &str, timeout: Duration) -> Result<Self, ApiError> {
        let address = ApiAddress::parse(address)?;
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(timeout))
            .max_redirects(0)
            .build()
            .into();
        let mut store = Self {
            id: id.map_or_else(|| address.collection.clone(), str::to_owned),
            address,
            transactions: false,
            filter: false,
            fields: false,
            sort: false,
            mirror_dir: None,
            page_limit: PAGE_LIMIT,
            exact_count_below: EXACT_COUNT_BELOW,
            count_after: COUNT_AFTER,
            agent,
        };
        let url = format!("{}conformance", store.address.root);
        let classes = match store.get_json(&url) {
            Ok(v) => v,
            // Some servers list them on the landing page only.
            Err(ApiError::Status { status: 404, .. }) => store.get_json(&store.address.root)?,
            Err(e) => return Err(e),
        };
        let classes: Vec<String> = strings(classes.get("conformsTo"));
        let has = |needle: &str| classes.iter().any(|c| c.contains(needle));
        if !has("/item-search") {
            return Err(ApiError::NotItemSearch {
                url: store.address.root,
            });
        }
        store.transactions = has("/extensions/transaction");
        store.filter = has("cql2-json") && (has("item-search#filter") || has("/filter"));
        store.fields = has("item-search#fields");
        store.sort = has("item-search#sort");
        Ok(store)
    }

    /// Where opened plots are copied to (a folder the session may write).
    #[must_use]
    pub fn with_mirror(mut self, dir: &Path) -> Self {
        self.mirror_dir = Some(dir.to_owned());
        self
    }

    pub fn url(&self) -> &str {
        &self.address.root
    }

    fn transport(&self, url: &str, e: &ureq::Error) -> ApiError {
        let reason = match e {
            ureq::Error::Timeout(_) => "it did not answer in time".to_owned(),
            ureq::Error::ConnectionFailed => "the connection was refused or failed".to_owned(),
            ureq::Error::HostNotFound => "the host name does not resolve".to_owned(),
            ureq::Error::BodyExceedsLimit(limit) => {
                return ApiError::TooLarge {
                    url: url.to_owned(),
                    limit: *limit,
                };
            }
            other => other.to_string(),
        };
        ApiError::Unreachable {
            url: url.to_owned(),
            reason,
        }
    }

    /// Send one request; the status and the body (at most `limit` bytes).
    fn request(
        &self,
        method: &str,
        url: &str,
        body: Option<(&str, Vec<u8>)>,
        limit: u64,
    ) -> Result<(u16, Vec<u8>), ApiError> {
        let sent = match (method, body) {
            ("GET", _) => self
                .agent
                .get(url)
                .header("accept", "application/json")
                .call(),
            ("POST", Some((ct, b))) => self.agent.post(url).header("content-type", ct).send(&b[..]),
            ("PUT", Some((ct, b))) => self.agent.put(url).header("content-type", ct).send(&b[..]),
            _ => {
                return Err(ApiError::Malformed {
                    url: url.to_owned(),
                    message: format!("internal: no {method} request without a body"),
                });
            }
        };
        let mut response = sent.map_err(|e| self.transport(url, &e))?;
        let status = response.status().as_u16();
        let bytes = response
            .body_mut()
            .with_config()
            .limit(if status >= 300 { 64 * 1024 } else { limit })
            .read_to_vec()
            .map_err(|e| self.transport(url, &e))?;
        Ok((status, bytes))
    }

    fn json_reply(&self, url: &str, status: u16, bytes: &[u8]) -> Result<Value, ApiError> {
        if status >= 300 {
            return Err(ApiError::Status {
                url: url.to_owned(),
                status,
                body: clip(String::from_utf8_lossy(bytes).trim(), 300),
            });
        }
        serde_json::from_slice(bytes).map_err(|e| ApiError::Malformed {
            url: url.to_owned(),
            message: e.to_string(),
        })
    }

    fn get_json(&self, url: &str) -> Result<Value, ApiError> {
        let (status, bytes) = self.request("GET", url, None, MAX_JSON_BYTES)?;
        self.json_reply(url, status, &bytes)
    }

    fn send_json(&self, method: &str, url: &str, body: &Value) -> Result<(u16, Vec<u8>), ApiError> {
        let bytes = serde_json::to_vec(body).map_err(|e| ApiError::Malformed {
            url: url.to_owned(),
            message: e.to_string(),
        })?;
        self.request(
            method,
            url,
            Some(("application/json", bytes)),
            MAX_JSON_BYTES,
        )
    }

    fn same_origin(&self, href: &str) -> bool {
        href.strip_prefix(&self.address.origin)
            .is_some_and(|rest| rest.starts_with('/'))
    }

    /// The search request body for `c`: collection, bbox, datetime, the CQL2 pre-filter, the
    /// fields search reads and item-id order.
    fn search_body(&self, c: &Criteria) -> Value {
        let mut body = json!({"collections": [self.address.collection]});
        if let Some(b) = c.bbox {
            body["bbox"] = json!(b);
        }
        if let Some(dt) = datetime_interval(c) {
            body["datetime"] = dt.into();
        }
        if self.filter
            && let Some(f) = cql2_filter(c)
        {
            body["filter"] = f;
            body["filter-lang"] = "cql2-json".into();
        }
        if self.fields {
            body["fields"] = json!({
                "include": ["id", "bbox", "properties.title", "properties.description",
                    "properties.debrief:tags", "properties.debrief:feature_tags",
                    "properties.debrief:platforms", "properties.debrief:undated",
                    "properties.datetime", "properties.start_datetime", "properties.end_datetime"],
                "exclude": ["geometry", "assets", "links"],
            });
        }
        if self.sort {
            body["sortby"] = json!([{"field": "id", "direction": "asc"}]);
        }
        body
    }

    /// Whether the server's candidates for `c` are exactly the matches of the folder store's
    /// rule, so the server's count of them is the count of matches: true unless the text has
    /// several words (the rule's phrase-or-word-starts test is narrower than the per-word
    /// `like`), a platform name spans lines, a time is finer than a second (sent widened to
    /// whole seconds), or the server takes no CQL2 filter. Items are taken to have their bbox as
    /// their footprint, as the items toolgate writes do.
    pub fn prefilter_exact(&self, c: &Criteria) -> bool {
        let text_exact = c.text.as_deref().is_none_or(|t| {
            let words = search::query_words(t);
            words.is_empty() || (words.len() == 1 && words[0] == t)
        });
        let platforms_exact = c.platforms.iter().all(|p| !p.contains('\n'));
        let whole_seconds = [c.start, c.end]
            .iter()
            .flatten()
            .all(|t| t.timestamp_subsec_nanos() == 0);
        let filtered = self.filter || (c.text.is_none() && c.platforms.is_empty());
        filtered && text_exact && platforms_exact && whole_seconds
    }

    /// The first `want` matches of `c` in this store (item-id order; one more when there are
    /// more) and how many match in all. Reads pages only until it has `want + 1` matches, each
    /// tested with the folder store's rule; when more remain, asks the server for the count
    /// (`numberMatched`). A count below `exact_count_below` ([`EXACT_COUNT_BELOW`]) is exact, and
    /// is the count of
    /// matches when the server's pre-filter is the rule ([`ApiStore::prefilter_exact`]); when it
    /// is not, the few candidates left (at most [`FINISH_BELOW`]) are read and tested, and past
    /// that the count is "about" the server's, scaled by the share of candidates the rule kept.
    /// Without a count from the server, "at least" the matches read.
    ///
    /// # Errors
    ///
    /// The server's, as [`ApiError`]s.
    pub fn search_page(&self, c: &Criteria, want: usize) -> Result<ApiPage, ApiError> {
        let want = want.max(1);
        let first = self.search_body(c);
        let mut pager = Pager {
            url: format!("{}search", self.address.root),
            post: Some(first.clone()),
            limit: self.page_limit.max(1).min(want + 1),
            requests: 0,
            scanned: 0,
        };
        let mut entries: Vec<ItemEntry> = Vec::new();
        let mut hits = 0usize;
        let search_url = format!("{}search", self.address.root);
        // The first page, and the count at the same time when the page is slow to come (a
        // broad search, which will want it): the reply then waits for the slower of the two,
        // not for both in turn.
        let (first_page, mut matched) = std::thread::scope(|scope| {
            let (done, wait) = std::sync::mpsc::channel();
            let (pager, entries, hits) = (&mut pager, &mut entries, &mut hits);
            let page = scope.spawn(move || {
                let more = self.next_page(pager, |e| {
                    if c.matches(&e).is_some() {
                        *hits += 1;
                        entries.push(e);
                    }
                });
                let _ = done.send(());
                more
            });
            let matched = match wait.recv_timeout(self.count_after) {
                Ok(()) => None,
                Err(_) => Some(self.number_matched(&search_url, first.clone())),
            };
            (
                page.join().unwrap_or_else(|_| {
                    Err(ApiError::Malformed {
                        url: search_url.clone(),
                        message: "internal: the page reader stopped".to_owned(),
                    })
                }),
                matched,
            )
        });
        if matched.is_some() {
            pager.requests += 1;
        }
        let mut more = first_page?;
        while more && hits <= want && pager.scanned < MAX_SCANNED {
            more = self.next_page(&mut pager, |e| {
                if c.matches(&e).is_some() {
                    hits += 1;
                    entries.push(e);
                }
            })?;
        }
        entries.truncate(want + 1);
        if !more {
            return Ok(ApiPage {
                entries,
                total: hits,
                total_is: TotalIs::Exact,
                requests: pager.requests,
            });
        }
        // More candidates remain: the server's count, asked for apart from the page so that a
        // search whose matches fit in one page never pays for counting.
        let matched = match matched.take() {
            Some(m) => m,
            None => {
                pager.requests += 1;
                self.number_matched(&search_url, first)
            }
        };
        let (total, total_is) = match matched {
            Some(m) if m >= hits && m < self.exact_count_below && self.prefilter_exact(c) => {
                (m, TotalIs::Exact)
            }
            Some(m)
                if m >= pager.scanned
                    && m < self.exact_count_below
                    && m - pager.scanned <= FINISH_BELOW =>
            {
                // A few candidates left: read them and count what the rule keeps.
                pager.limit = self.page_limit.max(1).min(m - pager.scanned + 1);
                while more {
                    more = self.next_page(&mut pager, |e| {
                        if c.matches(&e).is_some() {
                            hits += 1;
                        }
                    })?;
                }
                (hits, TotalIs::Exact)
            }
            Some(m) if m >= hits => {
                // The rule keeps `hits` of the `scanned` candidates read so far.
                let scaled =
                    (m as f64 * hits as f64 / pager.scanned.max(1) as f64).round() as usize;
                (search::round_estimate(scaled.max(hits)), TotalIs::About)
            }
            _ => (hits, TotalIs::AtLeast),
        };
        Ok(ApiPage {
            entries,
            total,
            total_is,
            requests: pager.requests,
        })
    }

    /// Read the next search page of `pager`, each item's entry to `each`; whether a page follows.
    fn next_page(
        &self,
        pager: &mut Pager,
        mut each: impl FnMut(ItemEntry),
    ) -> Result<bool, ApiError> {
        let url = pager.url.clone();
        let page = match &mut pager.post {
            Some(b) => {
                b["limit"] = pager.limit.into();
                let (status, bytes) = self.send_json("POST", &url, b)?;
                self.json_reply(&url, status, &bytes)?
            }
            None => self.get_json(&url)?,
        };
        pager.requests += 1;
        let features = page
            .get("features")
            .and_then(Value::as_array)
            .ok_or_else(|| ApiError::Malformed {
                url: url.clone(),
                message: "a search reply needs a \"features\" array".to_owned(),
            })?;
        pager.scanned += features.len();
        for f in features {
            if let Some(e) = entry_from_item(&self.id, f) {
                each(e);
            }
        }
        let next = page
            .get("links")
            .and_then(Value::as_array)
            .and_then(|l| l.iter().find(|l| l.get("rel") == Some(&json!("next"))));
        let Some(next) = next.filter(|_| !features.is_empty()) else {
            return Ok(false);
        };
        let href = next
            .get("href")
            .and_then(Value::as_str)
            .map_or_else(|| url.clone(), str::to_owned);
        if !self.same_origin(&href) {
            return Err(ApiError::Malformed {
                url,
                message: format!("its next page {href} is on another origin"),
            });
        }
        let method = next.get("method").and_then(Value::as_str).unwrap_or("GET");
        pager.post = if method.eq_ignore_ascii_case("POST") {
            let mut b = if next.get("merge") == Some(&Value::Bool(true)) {
                pager.post.take().unwrap_or_else(|| json!({}))
            } else {
                json!({})
            };
            if let Some(obj) = next.get("body").and_then(Value::as_object) {
                for (k, v) in obj {
                    b[k.as_str()] = v.clone();
                }
            }
            // Later pages grow (the rule dropped candidates of the first).
            pager.limit = (pager.limit * 2).min(self.page_limit.max(1));
            Some(b)
        } else {
            None
        };
        pager.url = href;
        Ok(true)
    }

    /// The server's `numberMatched` (or the older `context.matched`) for a search, asked with
    /// pgstac's `context: auto` (exact below `exact_count_below` expected matches, the planner's
    /// estimate above; an exact count is never a cached one, while pgstac keeps a query's first
    /// estimate until its `search_wheres` row goes, which `toolgate catalog load --pgstac` does);
    /// `None` when the server gives none or refuses the request (the page has been read by
    /// then).
    fn number_matched(&self, url: &str, mut body: Value) -> Option<usize> {
        // The one item it returns is not read: in the server's own order (pgstac's newest
        // first reads one partition), not item-id order, which sorts every match.
        body["limit"] = 1.into();
        if let Some(obj) = body.as_object_mut() {
            obj.remove("sortby");
        }
        if self.fields {
            body["fields"] = json!({"include": ["id"], "exclude": ["geometry", "assets", "links", "properties"]});
        }
        body["conf"] = json!({
            "context": "auto",
            "context_estimated_count": self.exact_count_below,
            "context_estimated_cost": 0,
            "context_stats_ttl": "0",
        });
        let (status, bytes) = self.send_json("POST", url, &body).ok()?;
        let reply = self.json_reply(url, status, &bytes).ok()?;
        reply
            .get("numberMatched")
            .or_else(|| reply.get("context").and_then(|c| c.get("matched")))
            .and_then(Value::as_u64)
            .and_then(|n| usize::try_from(n).ok())
    }

    fn item_url(&self, id: &str) -> String {
        format!(
            "{}collections/{}/items/{id}",
            self.address.root, self.address.collection
        )
    }

    fn asset_url(&self, id: &str) -> String {
        format!(
            "{}assets/{}/{id}/features.geojson",
            self.address.root, self.address.collection
        )
    }

    /// The item id of one of this store's plot ids.
    pub fn item_id(&self, plot_id: &str) -> Option<String> {
        let id = PlotId::parse(plot_id).ok()?;
        if id.store != self.id {
            return None;
        }
        let item = id.item_path.strip_suffix("/item.json")?;
        (!item.is_empty() && !item.contains('/')).then(|| item.to_owned())
    }

    /// Whether the server has the plot's item.
    ///
    /// # Errors
    ///
    /// The server's, other than 404.
    pub fn has_plot(&self, plot_id: &str) -> Result<bool, ApiError> {
        let Some(id) = self.item_id(plot_id) else {
            return Ok(false);
        };
        match self.get_json(&self.item_url(&id)) {
            Ok(_) => Ok(true),
            Err(ApiError::Status { status: 404, .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Read a plot's item and its features asset.
    ///
    /// # Errors
    ///
    /// An unknown plot, an asset elsewhere than this API's origin or not http(s), a reply too
    /// large, the server's errors.
    pub fn fetch(&self, plot_id: &str) -> Result<FetchedPlot, ApiError> {
        let unknown = || ApiError::UnknownPlot {
            plot_id: plot_id.to_owned(),
            url: self.address.canonical(),
        };
        let id = self.item_id(plot_id).ok_or_else(unknown)?;
        let url = self.item_url(&id);
        let item = match self.get_json(&url) {
            Err(ApiError::Status { status: 404, .. }) => return Err(unknown()),
            other => other?,
        };
        let href = features_asset(&item)
            .and_then(|a| a.get("href"))
            .and_then(Value::as_str)
            .ok_or_else(|| ApiError::NoFeatures { id: id.clone() })?;
        let refused = |reason| ApiError::AssetRefused {
            plot_id: plot_id.to_owned(),
            href: href.to_owned(),
            reason,
            origin: self.address.origin.clone(),
        };
        let absolute = if href.starts_with("http://") || href.starts_with("https://") {
            href.to_owned()
        } else if href.contains("://") || href.starts_with("data:") || href.starts_with("file:") {
            return Err(refused("not an http(s) address"));
        } else if href.starts_with('/') {
            format!("{}{href}", self.address.origin)
        } else {
            let base = url.rsplit_once('/').map_or(url.as_str(), |(b, _)| b);
            format!("{base}/{}", href.trim_start_matches("./"))
        };
        if !self.same_origin(&absolute) || absolute.contains("/../") {
            return Err(refused("it is on another host"));
        }
        let (status, features) = self.request("GET", &absolute, None, MAX_ASSET_BYTES)?;
        if status >= 300 {
            return Err(ApiError::Status {
                url: absolute,
                status,
                body: clip(String::from_utf8_lossy(&features).trim(), 300),
            });
        }
        Ok(FetchedPlot { item, features })
    }

    /// Copy a plot into `mirror` (item with a local features asset, the features as fetched) so
    /// a session opens, edits and saves it like a folder plot.
    ///
    /// # Errors
    ///
    /// [`ApiStore::fetch`]'s, and the mirror's write errors.
    pub fn materialise(&self, mirror: &mut StacStore, plot_id: &str) -> Result<(), ApiError> {
        let fetched = self.fetch(plot_id)?;
        self.install(mirror, plot_id, fetched)
    }

    /// The second half of [`ApiStore::materialise`]: write a fetched plot into `mirror`.
    ///
    /// # Errors
    ///
    /// The mirror's write errors.
    pub fn install(
        &self,
        mirror: &mut StacStore,
        plot_id: &str,
        fetched: FetchedPlot,
    ) -> Result<(), ApiError> {
        let id = self.item_id(plot_id).unwrap_or_default();
        let mut item = fetched.item;
        item["links"] = json!([]);
        if let Some(obj) = item.get_mut("properties").and_then(Value::as_object_mut) {
            obj.remove("debrief:search_text");
            obj.remove("debrief:platform_text");
            if obj.remove("debrief:undated") == Some(Value::Bool(true)) {
                obj.insert("datetime".to_owned(), Value::Null);
                obj.remove("start_datetime");
                obj.remove("end_datetime");
            }
        }
        if let Some(assets) = item.get_mut("assets").and_then(Value::as_object_mut) {
            let key = ["features", "data"]
                .into_iter()
                .find(|k| assets.contains_key(*k))
                .unwrap_or("features");
            let mut asset = assets.remove(key).unwrap_or_else(|| json!({}));
            asset["href"] = "./features.geojson".into();
            assets.insert(key.to_owned(), asset);
        }
        mirror.add_item_bytes(&id, &item, &fetched.features)?;
        Ok(())
    }

    /// Before a save: refuse when the plot's features on the server are no longer `known` (the
    /// SHA-256 of the features the saving session read or last wrote: its document's). Blocking
    /// (HTTP).
    ///
    /// # Errors
    ///
    /// [`ApiError::Changed`], or the server's errors.
    pub fn check_unchanged(&self, plot_id: &str, known: &str) -> Result<(), ApiError> {
        let now = match self.fetch(plot_id) {
            Ok(f) => crate::fsio::sha256_hex(&f.features),
            // Removed on the server meanwhile: a save would bring it back without asking.
            Err(ApiError::UnknownPlot { .. }) => String::new(),
            Err(e) => return Err(e),
        };
        if now == known {
            Ok(())
        } else {
            Err(ApiError::Changed {
                plot_id: plot_id.to_owned(),
            })
        }
    }

    /// Refuse a write when the server has no Transactions extension.
    ///
    /// # Errors
    ///
    /// [`ApiError::ReadOnly`].
    pub fn writable(&self, what: &str) -> Result<(), ApiError> {
        if self.transactions {
            Ok(())
        } else {
            Err(ApiError::ReadOnly {
                url: self.address.canonical(),
                what: what.to_owned(),
            })
        }
    }

    /// Create the collection when the server does not have it.
    ///
    /// # Errors
    ///
    /// The server's.
    pub fn ensure_collection(&self) -> Result<(), ApiError> {
        let url = format!(
            "{}collections/{}",
            self.address.root, self.address.collection
        );
        match self.get_json(&url) {
            Ok(_) => return Ok(()),
            Err(ApiError::Status { status: 404, .. }) => {}
            Err(e) => return Err(e),
        }
        let collection = json!({
            "type": "Collection",
            "stac_version": "1.0.0",
            "id": self.address.collection,
            "title": "Debrief plots",
            "description": "Debrief plots written by toolgate",
            "license": "other",
            "extent": {"spatial": {"bbox": [[-180.0, -90.0, 180.0, 90.0]]},
                       "temporal": {"interval": [[null, null]]}},
            "links": [],
        });
        let post = format!("{}collections", self.address.root);
        let (status, bytes) = self.send_json("POST", &post, &collection)?;
        if status == 409 {
            return Ok(());
        }
        self.json_reply(&post, status, &bytes).map(|_| ())
    }

    /// Write a plot: its features asset, then its item (created, or replaced when it exists).
    /// Returns the plot id.
    ///
    /// # Errors
    ///
    /// [`ApiError::ReadOnly`] without transactions; the server's errors.
    pub fn put_plot(&self, item: &Value, features: &[u8]) -> Result<String, ApiError> {
        self.writable("plots")?;
        let id = item
            .get("id")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty() && !id.contains('/'))
            .ok_or_else(|| ApiError::Malformed {
                url: "(the item to write)".to_owned(),
                message: "an item needs an \"id\" without \"/\"".to_owned(),
            })?
            .to_owned();
        self.ensure_collection()?;
        let asset = self.put_asset(&id, features)?;
        let body = item_for_api(item, &self.address.collection, &asset)?;
        self.put_item(&id, &body)?;
        Ok(PlotId {
            store: self.id.clone(),
            item_path: format!("{id}/item.json"),
        }
        .to_string())
    }

    /// Write a plot's features to the API's asset store (`PUT`); the asset's URL.
    ///
    /// # Errors
    ///
    /// The server's.
    pub fn put_asset(&self, id: &str, features: &[u8]) -> Result<String, ApiError> {
        let asset = self.asset_url(id);
        let (status, bytes) = self.request(
            "PUT",
            &asset,
            Some(("application/geo+json", features.to_vec())),
            64 * 1024,
        )?;
        if status >= 300 {
            return Err(ApiError::Status {
                url: asset,
                status,
                body: clip(String::from_utf8_lossy(&bytes).trim(), 300),
            });
        }
        Ok(asset)
    }

    /// Write an item as the API stores it ([`item_for_api`]): created, or replaced when it
    /// exists (Transactions extension).
    ///
    /// # Errors
    ///
    /// The server's.
    pub fn put_item(&self, id: &str, body: &Value) -> Result<(), ApiError> {
        let post = format!(
            "{}collections/{}/items",
            self.address.root, self.address.collection
        );
        let (status, bytes) = self.send_json("POST", &post, body)?;
        if status == 409 {
            let put = self.item_url(id);
            let (status, bytes) = self.send_json("PUT", &put, body)?;
            self.json_reply(&put, status, &bytes)?;
        } else {
            self.json_reply(&post, status, &bytes)?;
        }
        Ok(())
    }

    /// Write a plot of a folder store (its item file and features file as they are).
    ///
    /// # Errors
    ///
    /// The folder's read errors, [`ApiStore::put_plot`]'s.
    pub fn put_folder_plot(
        &self,
        folder: &StacStore,
        entry: &ItemEntry,
    ) -> Result<String, ApiError> {
        let item_file = folder.root.join(&entry.item_path);
        let item: Value = serde_json::from_slice(&crate::store::read_store_file(
            &folder.root,
            &item_file,
            crate::store::StoreFile::Json,
        )?)
        .map_err(|e| StoreError::Parse {
            path: item_file.clone(),
            message: e.to_string(),
        })?;
        let features = folder.load_features(entry)?;
        let bytes = crate::store::read_store_file(
            &folder.root,
            &features.path,
            crate::store::StoreFile::Features,
        )?;
        self.put_plot(&item, &bytes)
    }
}

/// Why a search over several catalogues failed.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    /// The query itself (a bad date, …): the caller's to fix.
    #[error(transparent)]
    Invalid(#[from] crate::search::QueryError),
    /// The search's own task stopped (panicked or was cancelled) before it answered.
    #[error("internal: the search stopped ({reason})")]
    Stopped { reason: String },
    #[error(transparent)]
    Api(#[from] ApiError),
}

/// Search folder stores and API stores together with one rule, one cap, one "N more not shown".
/// A folder store with the id of an API store is that store's mirror and is not searched. An API
/// store is read only as far as the page shown (see [`ApiStore::search_page`]); its count may be
/// the server's estimate, which the result's `total_is` and "more" say.
///
/// # Errors
///
/// [`SearchError::Invalid`] for a bad query, [`SearchError::Api`] when a server fails.
pub fn search_catalogues(
    folders: &[StacStore],
    apis: &[ApiStore],
    q: &SearchQuery,
) -> Result<SearchResult, SearchError> {
    search_catalogues_with_entries(folders, apis, q).map(|(r, _)| r)
}

/// [`search_catalogues`], with the entries of the API plots it shows (folder plots are in their
/// stores), for a caller that shows more of each plot.
///
/// # Errors
///
/// As [`search_catalogues`].
pub fn search_catalogues_with_entries(
    folders: &[StacStore],
    apis: &[ApiStore],
    q: &SearchQuery,
) -> Result<(SearchResult, Vec<ItemEntry>), SearchError> {
    let criteria = Criteria::new(q)?;
    let mut hits: Vec<PlotMatch> = folders
        .iter()
        .filter(|s| !apis.iter().any(|a| a.id == s.id))
        .flat_map(|s| s.items.iter())
        .filter_map(|e| criteria.matches(e))
        .collect();
    let mut total = hits.len();
    let mut total_is = TotalIs::Exact;
    let mut entries = Vec::new();
    let cap = search::cap(q);
    for api in apis {
        // Only as many as can still be shown (one more tells that more exist).
        let want = cap.saturating_sub(hits.len()).max(1);
        let page = api.search_page(&criteria, want)?;
        hits.extend(page.entries.iter().filter_map(|e| criteria.matches(e)));
        entries.extend(page.entries);
        total += page.total;
        total_is = total_is.and(page.total_is);
    }
    let result = search::finish_counted(hits, total, total_is, q);
    entries.retain(|e| result.matches.iter().any(|m| m.plot_id == e.plot_id));
    Ok((result, entries))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_parse_in_both_spellings() {
        let a = ApiAddress::parse("stac+api://127.0.0.1:8081/stac").unwrap();
        assert_eq!(a.root, "http://127.0.0.1:8081/stac/");
        assert_eq!(a.origin, "http://127.0.0.1:8081");
        assert_eq!(a.collection, "debrief");
        let b = ApiAddress::parse("http://127.0.0.1:8081/stac/").unwrap();
        assert_eq!(a, b);
        assert_eq!(b.canonical(), "http://127.0.0.1:8081/stac/");
        let c = ApiAddress::parse("https://h.example#collection=ex-1").unwrap();
        assert_eq!(c.root, "https://h.example/");
        assert_eq!(c.collection, "ex-1");
        assert_eq!(c.canonical(), "https://h.example/#collection=ex-1");
        for bad in [
            "ftp://h/",
            "http://",
            "http://u@h/",
            "http://h/?x=1",
            "http://h/#a/b",
        ] {
            assert!(ApiAddress::parse(bad).is_err(), "{bad}");
        }
        assert!(is_api_address("stac+api://h") && !is_api_address("/tmp/store"));
    }

    #[test]
    fn the_prefilter_is_implied_by_the_folder_rule() {
        let q = SearchQuery {
            text: Some("Alpha day-1".into()),
            platforms: vec!["Nelson".into(), "50%".into()],
            ..SearchQuery::default()
        };
        let f = cql2_filter(&Criteria::new(&q).unwrap()).unwrap();
        assert_eq!(
            f,
            json!({"op": "and", "args": [
                {"op": "like", "args": [{"property": "debrief:search_text"}, "%alpha%"]},
                {"op": "like", "args": [{"property": "debrief:search_text"}, "%day%"]},
                {"op": "like", "args": [{"property": "debrief:search_text"}, "%1%"]},
                {"op": "or", "args": [
                    {"op": "like", "args": [{"property": "debrief:platform_text"}, "%nelson%"]},
                    {"op": "like", "args": [{"property": "debrief:platform_text"}, "%50\\%%"]},
                ]},
            ]})
        );
        let only_dash = SearchQuery {
            text: Some("—".into()),
            ..SearchQuery::default()
        };
        assert_eq!(
            cql2_filter(&Criteria::new(&only_dash).unwrap()).unwrap(),
            json!({"op": "like", "args": [{"property": "debrief:search_text"}, "%—%"]})
        );
    }

    #[test]
    fn an_unreachable_server_says_what_went_wrong_and_what_works() {
        // A port nothing listens on: bind, read the port, close.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let err = ApiStore::connect(
            None,
            &format!("stac+api://127.0.0.1:{port}/"),
            Duration::from_secs(5),
        )
        .unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("could not reach the STAC API"), "{msg}");
        assert!(msg.contains("refused") || msg.contains("failed"), "{msg}");
        assert!(msg.contains("catalogue folder"), "{msg}");
    }

    #[test]
    fn undated_items_round_trip_as_undated() {
        let item = crate::demo::item_with_extent("p", "P", "", &["x"], json!([]), None, None);
        let api = item_for_api(
            &item,
            "debrief",
            "http://h/assets/debrief/p/features.geojson",
        )
        .unwrap();
        assert_eq!(api["properties"]["debrief:undated"], json!(true));
        assert_eq!(api["properties"]["debrief:search_text"], json!("p  x "));
        let e = entry_from_item("s", &api).unwrap();
        assert_eq!((e.start, e.end), (None, None));
        assert_eq!(e.plot_id, "stac://s/p/item.json");
    }
}
