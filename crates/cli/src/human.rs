//! Output for a person at a terminal: aligned tables and plain lines that fit the terminal's
//! width (the `--json` flags keep the machine-readable forms, with all the data, for scripts).

use serde_json::Value;

/// The width the output for a person fits: the terminal's (stdout's), else `COLUMNS`; never
/// under 40. Output that goes to no terminal with no `COLUMNS` (a file, a pipe) is not cut:
/// there is no width to fit.
pub fn width() -> usize {
    static WIDTH: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *WIDTH.get_or_init(|| {
        let terminal = console::Term::stdout()
            .size_checked()
            .map(|(_, cols)| usize::from(cols));
        let from_env = || {
            std::env::var("COLUMNS")
                .ok()
                .and_then(|c| c.trim().parse::<usize>().ok())
        };
        terminal.or_else(from_env).map_or(UNLIMITED, |w| w.max(40))
    })
}

/// The "width" of output that goes to no terminal.
const UNLIMITED: usize = usize::MAX / 4;

/// Tables with more rows than this show their first and last rows and say how many were left
/// out (`--json` has them all).
pub const LONG_TABLE: usize = 20;
/// How many first and last rows a long table shows.
const HEAD_ROWS: usize = 8;
const TAIL_ROWS: usize = 4;

fn chars(s: &str) -> usize {
    s.chars().count()
}

/// `s` cut to `n` characters, ending `…` when cut.
pub fn clip(s: &str, n: usize) -> String {
    if chars(s) <= n {
        return s.to_owned();
    }
    if n == 0 {
        return String::new();
    }
    let mut out: String = s.chars().take(n - 1).collect();
    out.push('…');
    out
}

/// Each line of `text` broken at spaces so that none is wider than `width` characters (a word
/// longer than that is broken inside it).
pub fn wrap(text: &str, width: usize) -> String {
    let width = width.max(10);
    let mut out: Vec<String> = Vec::new();
    for line in text.lines() {
        if chars(line) <= width {
            out.push(line.to_owned());
            continue;
        }
        let mut current = String::new();
        for word in line.split(' ') {
            let mut word = word.to_owned();
            loop {
                let (len, wlen) = (chars(&current), chars(&word));
                if len == 0 && wlen <= width {
                    current = word;
                    break;
                }
                if len > 0 && len + 1 + wlen <= width {
                    current.push(' ');
                    current.push_str(&word);
                    break;
                }
                if len > 0 {
                    out.push(std::mem::take(&mut current));
                    continue;
                }
                // A word wider than the line is broken.
                out.push(word.chars().take(width).collect());
                word = word.chars().skip(width).collect();
                if word.is_empty() {
                    break;
                }
            }
        }
        if !current.is_empty() {
            out.push(current);
        }
    }
    out.join("\n")
}

/// Columns padded to their widest cell (by characters), two spaces apart, a rule under the
/// header; trailing spaces trimmed. The table fits [`width`]: the widest columns are narrowed
/// (their cells cut with `…`), and columns that still do not fit are left out with a note —
/// except the columns numbered in `whole` (an id a person copies), which are never cut.
pub fn table_keeping(headers: &[&str], rows: &[Vec<String>], whole: &[usize]) -> String {
    table_within(headers, rows, width(), whole)
}

/// A table that shows only the first and last rows of a table longer than [`LONG_TABLE`],
/// with a line saying how many rows are not shown.
pub fn long_table(headers: &[&str], rows: &[Vec<String>]) -> String {
    long_table_within(headers, rows, width())
}

fn long_table_within(headers: &[&str], rows: &[Vec<String>], width: usize) -> String {
    if rows.len() <= LONG_TABLE {
        return table_within(headers, rows, width, &[]);
    }
    let left_out = rows.len() - HEAD_ROWS - TAIL_ROWS;
    let mut shown: Vec<Vec<String>> = rows.iter().take(HEAD_ROWS).cloned().collect();
    shown.extend(rows.iter().skip(rows.len() - TAIL_ROWS).cloned());
    let text = table_within(headers, &shown, width, &[]);
    let mut lines: Vec<&str> = text.lines().collect();
    let note = clip(
        &format!(
            "… {left_out} more rows (of {}; --json for all) …",
            rows.len()
        ),
        width,
    );
    // After the header, its rule and the first rows.
    lines.insert((2 + HEAD_ROWS).min(lines.len()), &note);
    lines.join("\n")
}

fn table_within(headers: &[&str], rows: &[Vec<String>], width: usize, whole: &[usize]) -> String {
    let natural = |i: usize| -> usize {
        rows.iter()
            .filter_map(|r| r.get(i))
            .map(|c| chars(c))
            .chain(headers.get(i).map(|h| chars(h)))
            .max()
            .unwrap_or(0)
    };
    // The narrowest a column gets: its header's width, clamped to 3..=8, or less when its
    // widest cell is narrower.
    let floor = |i: usize| {
        if whole.contains(&i) {
            return natural(i);
        }
        headers
            .get(i)
            .map_or(3, |h| chars(h).clamp(3, 8))
            .min(natural(i).max(1))
    };
    let spaced = |w: usize, n: usize| w + 2 * n.saturating_sub(1);
    // Columns that cannot fit even at their narrowest are left out, from the right.
    let mut columns = headers.len();
    while columns > 1 && spaced((0..columns).map(floor).sum(), columns) > width {
        columns -= 1;
    }
    let mut widths: Vec<usize> = (0..columns).map(natural).collect();
    while spaced(widths.iter().sum(), widths.len()) > width {
        let Some((i, _)) = widths
            .iter()
            .enumerate()
            .filter(|(i, w)| **w > floor(*i))
            .max_by_key(|(_, w)| **w)
        else {
            break;
        };
        if let Some(w) = widths.get_mut(i) {
            *w -= 1;
        }
    }
    let line = |cells: &mut dyn Iterator<Item = &str>| -> String {
        let mut s = String::new();
        for (i, cell) in cells.take(columns).enumerate() {
            if i > 0 {
                s.push_str("  ");
            }
            let w = widths.get(i).copied().unwrap_or(0);
            let cell = clip(cell, w);
            let pad = w.saturating_sub(chars(&cell));
            s.push_str(&cell);
            s.extend(std::iter::repeat_n(' ', pad));
        }
        s.trim_end().to_owned()
    };
    let mut out = line(&mut headers.iter().copied());
    out.push('\n');
    let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    out.push_str(&line(&mut rule.iter().map(String::as_str)));
    for row in rows {
        out.push('\n');
        out.push_str(&line(&mut row.iter().map(String::as_str)));
    }
    if columns < headers.len() {
        let names: Vec<&str> = headers.iter().skip(columns).copied().collect();
        out.push('\n');
        out.push_str(&wrap(
            &format!(
                "({} more column(s) not shown: {}; --json for all)",
                names.len(),
                names.join(", ")
            ),
            width,
        ));
    }
    out
}

/// A JSON scalar as a person reads it (strings without quotes, numbers as written, `-` for
/// null); arrays of scalars comma-separated; anything else compact JSON.
pub fn scalar(v: &Value) -> String {
    match v {
        Value::Null => "-".to_owned(),
        Value::String(s) => s.clone(),
        Value::Bool(b) => if *b { "yes" } else { "no" }.to_owned(),
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() && f.fract() != 0.0 => {
                let s = format!("{f:.3}");
                s.trim_end_matches('0').trim_end_matches('.').to_owned()
            }
            _ => n.to_string(),
        },
        Value::Array(items) if items.iter().all(|i| !i.is_object() && !i.is_array()) => {
            items.iter().map(scalar).collect::<Vec<_>>().join(", ")
        }
        other => other.to_string(),
    }
}

/// A tool's result data for a person, fitted to [`width`]: an object as `key: value` lines
/// (nested keys dotted), each list of objects in it (a series, a track's positions) a table of
/// its own under the lines; a list of objects as a table (one column per key); a list of
/// scalars one per line. A long table shows its first and last rows and how many it has.
pub fn dataset(data: &Value) -> String {
    dataset_within(data, width())
}

/// A list of objects inside a result: where it is (`series`, `tracks[COLLINGWOOD].positions`)
/// and its items.
struct Section<'a> {
    path: String,
    items: &'a [Value],
}

fn is_rows(v: &Value) -> bool {
    matches!(v, Value::Array(items) if !items.is_empty() && items.iter().all(Value::is_object))
}

/// `v` flattened into `(key, text)` pairs for lines or cells: nested objects as dotted keys, a
/// list of objects as its row count (the list itself kept in `sections`, found at `path`).
fn flatten_rows<'a>(
    prefix: &str,
    path: &str,
    v: &'a Value,
    out: &mut Vec<(String, String)>,
    sections: &mut Vec<Section<'a>>,
) {
    match v {
        Value::Object(map) => {
            for (k, v) in map {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                let at = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                flatten_rows(&key, &at, v, out, sections);
            }
        }
        Value::Array(items) if is_rows(v) => {
            out.push((prefix.to_owned(), format!("{} rows", items.len())));
            sections.push(Section {
                path: path.to_owned(),
                items,
            });
        }
        other => out.push((prefix.to_owned(), scalar(other))),
    }
}

/// What names an item of a list in the headings of the tables inside it: its `name`, else its
/// `id`, else its position (from 1).
fn item_label(item: &Value, index: usize) -> String {
    ["name", "id", "feature_id", "label"]
        .iter()
        .find_map(|k| item.get(*k).and_then(Value::as_str))
        .map_or_else(|| (index + 1).to_string(), str::to_owned)
}

/// A list of objects as a (long) table under its heading, then the tables of the lists inside
/// its items.
fn rows_section(path: &str, items: &[Value], width: usize, out: &mut Vec<String>) {
    let mut flat: Vec<Vec<(String, String)>> = Vec::with_capacity(items.len());
    let mut nested: Vec<Section<'_>> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let mut row = Vec::new();
        let label = format!("{path}[{}]", item_label(item, i));
        flatten_rows("", &label, item, &mut row, &mut nested);
        flat.push(row);
    }
    let mut headers: Vec<String> = Vec::new();
    for row in &flat {
        for (k, _) in row {
            if !headers.contains(k) {
                headers.push(k.clone());
            }
        }
    }
    let rows: Vec<Vec<String>> = flat
        .iter()
        .map(|row| {
            headers
                .iter()
                .map(|h| {
                    row.iter()
                        .find(|(k, _)| k == h)
                        .map_or_else(String::new, |(_, v)| v.clone())
                })
                .collect()
        })
        .collect();
    let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
    if !path.is_empty() {
        out.push(clip(&format!("{path} ({} rows)", items.len()), width));
    }
    out.push(long_table_within(&headers, &rows, width));
    for section in nested {
        out.push(String::new());
        rows_section(&section.path, section.items, width, out);
    }
}

fn dataset_within(data: &Value, width: usize) -> String {
    let mut out: Vec<String> = Vec::new();
    match data {
        Value::Array(items) if is_rows(data) => rows_section("", items, width, &mut out),
        Value::Array(items) => {
            let lines: Vec<Vec<String>> = items.iter().map(|i| vec![scalar(i)]).collect();
            if lines.len() > LONG_TABLE {
                out.push(long_table_within(&["value"], &lines, width));
            } else {
                out.extend(lines.into_iter().flatten().map(|l| clip(&l, width)));
            }
        }
        Value::Object(_) => {
            let mut flat = Vec::new();
            let mut sections = Vec::new();
            flatten_rows("", "", data, &mut flat, &mut sections);
            let key_width = flat.iter().map(|(k, _)| chars(k)).max().unwrap_or(0);
            for (k, v) in &flat {
                let pad = key_width - chars(k);
                out.push(clip(&format!("{k}:{} {v}", " ".repeat(pad)), width));
            }
            for section in sections {
                out.push(String::new());
                rows_section(&section.path, section.items, width, &mut out);
            }
        }
        other => out.push(wrap(&scalar(other), width)),
    }
    out.join("\n")
}

/// A plot summary's `features` text (`TYPE col|col (shared values)` headers, then `|` rows) as
/// one table per feature type.
pub fn summary_features(text: &str) -> String {
    let mut out = String::new();
    let mut header: Option<(String, Vec<String>, String)> = None;
    let mut rows: Vec<Vec<String>> = Vec::new();
    let flush = |out: &mut String,
                 header: &mut Option<(String, Vec<String>, String)>,
                 rows: &mut Vec<Vec<String>>| {
        if let Some((kind, cols, shared)) = header.take() {
            if !out.is_empty() {
                out.push_str("\n\n");
            }
            let mut heading = format!("{kind} ({})", rows.len());
            if !shared.is_empty() {
                heading.push_str(&format!(" — all {shared}"));
            }
            out.push_str(&wrap(&heading, width()));
            out.push('\n');
            let cols: Vec<&str> = cols.iter().map(String::as_str).collect();
            out.push_str(&long_table(&cols, rows));
        }
        rows.clear();
    };
    for line in text.lines() {
        if let Some((kind, rest)) = line.split_once(' ')
            && !kind.is_empty()
            && kind
                .chars()
                .all(|c| c.is_ascii_uppercase() || c == '_' || c.is_ascii_digit())
            && (rest == "id" || rest.starts_with("id|") || rest.starts_with("id "))
        {
            flush(&mut out, &mut header, &mut rows);
            let (cols, shared) = match rest.split_once(" (") {
                Some((c, s)) => (c, s.trim_end_matches(')').trim_start_matches("all: ")),
                None => (rest, ""),
            };
            header = Some((
                kind.to_owned(),
                cols.split('|').map(str::to_owned).collect(),
                shared.to_owned(),
            ));
        } else if header.is_some() {
            rows.push(line.split('|').map(str::to_owned).collect());
        } else {
            out.push_str(&wrap(line, width()));
            out.push('\n');
        }
    }
    flush(&mut out, &mut header, &mut rows);
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    #[test]
    fn tables_align_by_characters() {
        let t = table_within(
            &["name", "n"],
            &[
                vec!["café".into(), "1".into()],
                vec!["x".into(), "22".into()],
            ],
            80,
            &[],
        );
        assert_eq!(t, "name  n\n----  --\ncafé  1\nx     22");
    }

    #[test]
    fn datasets_flatten_nested_values() {
        let d = dataset_within(
            &json!({"name": "N", "speed": {"mean": 12.04, "max": 14}}),
            80,
        );
        assert_eq!(d, "name:       N\nspeed.mean: 12.04\nspeed.max:  14");
        let d = dataset_within(&json!([{"a": 1, "b": {"c": null}}, {"a": 2.5}]), 80);
        assert_eq!(d, "a    b.c\n---  ---\n1    -\n2.5");
    }

    /// A series inside a result is a table of its own, its first and last rows shown with a
    /// count; nested lists (a track's positions) get tables under their item's name; no line
    /// is wider than asked (issue 32 item 2).
    #[test]
    fn series_and_lists_become_tables_that_fit() {
        let series: Vec<Value> = (0..399)
            .map(|i| json!({"time": format!("1995-12-12T05:{:02}:00Z", i % 60), "range_m": 34526.1 + f64::from(i), "bearing_deg": 160.12}))
            .collect();
        let d = dataset_within(
            &json!({"from": {"name": "NELSON"}, "count": 399, "series": series}),
            60,
        );
        let lines: Vec<&str> = d.lines().collect();
        assert!(lines.iter().all(|l| l.chars().count() <= 60), "{d}");
        assert_eq!(lines[0], "from.name: NELSON");
        assert_eq!(lines[2], "series:    399 rows");
        assert!(d.contains("\nseries (399 rows)\ntime "), "{d}");
        assert!(
            d.contains("… 387 more rows (of 399; --json for all) …"),
            "{d}"
        );
        assert_eq!(d.matches("1995-12-12T05:").count(), 12, "{d}");
        assert!(d.ends_with("1995-12-12T05:38:00Z  34924.1  160.12"), "{d}");

        let positions: Vec<Value> = (0..3)
            .map(|i| json!({"index": i, "speed_kn": 3.5}))
            .collect();
        let d = dataset_within(
            &json!({"matched": 3, "tracks": [
                {"name": "NELSON", "matched": 0, "positions": []},
                {"name": "COLLINGWOOD", "matched": 3, "positions": positions}
            ]}),
            80,
        );
        assert!(
            d.contains("tracks (2 rows)\nname         matched  positions\n"),
            "{d}"
        );
        assert!(
            d.contains("\ntracks[COLLINGWOOD].positions (3 rows)\nindex  speed_kn\n"),
            "{d}"
        );
    }

    #[test]
    fn a_wide_table_is_narrowed_then_cut_to_the_width() {
        let rows = vec![vec![
            "a very long title indeed".to_owned(),
            "x".repeat(50),
            "stac://plots/somewhere/item.json".to_owned(),
        ]];
        let t = table_within(&["TITLE", "PLATFORMS", "PLOT ID"], &rows, 60, &[]);
        assert!(t.lines().all(|l| l.chars().count() <= 60), "{t}");
        assert!(t.contains('…'), "{t}");
        // Too narrow for every column: the last ones go, and the table says so.
        let t = table_within(&["TITLE", "PLATFORMS", "PLOT ID"], &rows, 20, &[]);
        assert!(t.lines().all(|l| l.chars().count() <= 20), "{t}");
        assert!(t.contains("not shown: PLOT ID"), "{t}");
        // An id a person copies is kept whole; the other columns give way.
        let t = table_within(&["TITLE", "PLATFORMS", "PLOT ID"], &rows, 60, &[2]);
        assert!(t.lines().all(|l| l.chars().count() <= 60), "{t}");
        assert!(t.ends_with("stac://plots/somewhere/item.json"), "{t}");
    }

    #[test]
    fn long_lines_are_wrapped_at_spaces() {
        let w = wrap(
            "Speed Filter: Speed >= 3 kn: NELSON 0 of 402, COLLINGWOOD 403 of 403",
            30,
        );
        assert_eq!(
            w,
            "Speed Filter: Speed >= 3 kn:\nNELSON 0 of 402, COLLINGWOOD\n403 of 403"
        );
        assert_eq!(wrap(&"x".repeat(25), 10), "xxxxxxxxxx\nxxxxxxxxxx\nxxxxx");
    }

    #[test]
    fn summary_sections_become_tables() {
        let text = "TRACK id|name (all: span =, points 361)\ntrack-a|A\ntrack-b|Bee\nPOINT id|name\np-1|Datum";
        assert_eq!(
            summary_features(text),
            "TRACK (2) — all span =, points 361\nid       name\n-------  ----\ntrack-a  A\ntrack-b  Bee\n\n\
             POINT (1)\nid   name\n---  -----\np-1  Datum"
        );
    }
}
