//! Issue 30 item 7 through the real binary: what a file makes toolgate read or print is
//! bounded. A 10 MB line of NULs gives a short error (it was a 40 MB stderr after 16 s); a 3 GB
//! sparse features file is refused by its size (it was read whole: 3.1 GB RSS); a catalogue
//! listing one item 200,000 times has one plot (it had 200,000).
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(clippy::disallowed_methods)]

mod support;

use std::path::{Path, PathBuf};
use std::process::Output;

use support::toolgate_with_data as toolgate;

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// A store `d/store` holding boat1 as imported by `toolgate import`; returns its folder.
fn store_with_boat1(d: &Path) -> PathBuf {
    let store = d.join("store");
    let boat1 =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../rep/tests/fixtures/rep/valid/boat1.rep");
    let o = toolgate(
        d,
        &[
            "import",
            "--store",
            store.to_str().unwrap(),
            boat1.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{:?}", text(&o));
    store
}

#[test]
fn a_10_mb_line_of_nuls_gives_a_short_error_naming_line_and_column() {
    let d = tempfile::tempdir().unwrap();
    let rep = d.path().join("nul.rep");
    let mut bytes = vec![0u8; 10_000_000];
    bytes.push(b'\n');
    std::fs::write(&rep, bytes).unwrap();
    let store = d.path().join("store");
    let o = toolgate(
        d.path(),
        &[
            "import",
            "--store",
            store.to_str().unwrap(),
            rep.to_str().unwrap(),
        ],
    );
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        err.len() < 2048,
        "a {} byte stderr: {}",
        err.len(),
        &err[..err.len().min(600)]
    );
    assert!(err.contains("nul.rep:1:1: invalid date"), "{err}");
    assert!(err.contains("(10000000 bytes)"), "{err}");
}

#[test]
fn a_huge_sparse_features_file_is_refused_by_its_size() {
    let d = tempfile::tempdir().unwrap();
    let store = store_with_boat1(d.path());
    let features = store.join("boat1/features.geojson");
    std::fs::File::options()
        .write(true)
        .open(&features)
        .unwrap()
        .set_len(3 << 30)
        .unwrap();
    let o = toolgate(
        d.path(),
        &["plot", "summary", "--store", store.to_str().unwrap()],
    );
    let (out, err) = text(&o);
    assert!(!o.status.success(), "{out}");
    assert!(
        err.contains("features.geojson") && err.contains("3072 MiB") && err.contains("512 MiB"),
        "{err}"
    );
}

#[test]
fn a_catalogue_listing_one_item_200000_times_has_one_plot() {
    let d = tempfile::tempdir().unwrap();
    let store = store_with_boat1(d.path());
    let path = store.join("catalog.json");
    let mut catalog: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let links = catalog["links"].as_array_mut().unwrap();
    let href = links.iter().find(|l| l["rel"] == "item").unwrap()["href"].clone();
    // The shortest link that names it, so 200,000 of them fit the catalogue's size cap.
    let item = serde_json::json!({"rel": "item", "href": href});
    links.extend(std::iter::repeat_n(item, 199_999));
    std::fs::write(&path, catalog.to_string()).unwrap();
    let o = toolgate(
        d.path(),
        &["catalog", "search", "--store", store.to_str().unwrap()],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    assert!(out.starts_with("1 plot(s)"), "{out}");
}
