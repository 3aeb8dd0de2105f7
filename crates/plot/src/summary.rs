//! The plot summary a model reads before it targets an edit (reference §5, improved): a compact
//! inventory table with a spatial digest per feature, a cap with `truncated` and the total, and
//! `tokens` — the real o200k count of exactly the payload returned.

use serde::Serialize;
use serde_json::Value;
use toolgate_core::TokenCounter;

use crate::model::{Feature, union_bbox};
use crate::session::{OpenPlot, Session};

/// Default cap on inventory rows.
pub const INVENTORY_CAP: usize = 200;

/// Columns, in the order fields are shed when a token budget is set (last listed is shed first).
const COLUMNS: [&str; 7] = ["id", "name", "type", "platform", "span", "points", "where"];
/// Shed order under a budget: first `points`, then `where`, `span`, `platform`.
const SHED_ORDER: [&str; 4] = ["points", "where", "span", "platform"];

#[derive(Debug, Clone, Default)]
pub struct SummaryRequest {
    pub plot_id: Option<String>,
    pub selection_only: bool,
    pub cap: Option<usize>,
    /// Upper bound on `tokens`; fields are shed, then rows cut, to meet it.
    pub token_budget: Option<usize>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenPlotView {
    pub plot_id: String,
    pub title: String,
    pub active: bool,
    pub dirty: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SummaryView {
    /// The summarised plot's id, sent only when more than one plot is open: with one plot open
    /// every tool defaults to it, and the id (~15 tokens) would be the reply's largest field.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plot_id: Option<String>,
    pub title: String,
    /// The plot's time span in UTC to the minute: `YYYY-MM-DD HH:MM-HH:MM` when it starts and
    /// ends on one day, else `YYYY-MM-DD HH:MM/YYYY-MM-DD HH:MM`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub span: Option<String>,
    /// Present (true) only when the plot has unsaved edits.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub dirty: bool,
    /// One section per feature type: a line `TYPE col|col|…` (plus, in brackets, the values every
    /// row of that type shares), then one `|`-separated row per feature.
    pub features: String,
    /// Features in the inventory (all of them, or the selected ones).
    pub total: usize,
    /// Present (true) only when rows were cut by the cap or a token budget.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    /// Rows actually listed (equals `total` unless truncated).
    #[serde(skip)]
    pub listed: usize,
    /// `listed` as sent: only when truncated.
    #[serde(rename = "listed", skip_serializing_if = "Option::is_none")]
    listed_when_truncated: Option<usize>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub shed: Vec<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub selection_only: bool,
    pub tokens: usize,
    /// Every open plot, listed only when more than this one is open.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub open_plots: Vec<OpenPlotView>,
}

/// What the summarize tool returns when there is no plot to summarise.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NoPlot {
    pub no_plot_open: bool,
    pub hint: String,
    pub open_plots: Vec<OpenPlotView>,
}

pub fn open_plots(session: &Session) -> Vec<OpenPlotView> {
    session
        .open_plots()
        .iter()
        .map(|p| OpenPlotView {
            plot_id: p.id.clone(),
            title: p.title.clone(),
            active: session.active_id() == Some(p.id.as_str()),
            dirty: p.doc.is_dirty(),
        })
        .collect()
}

/// The 3×3 compass sector of a box's centre within the plot box, and its extent bucket.
pub fn spatial_digest(plot: [f64; 4], f: [f64; 4]) -> String {
    let (w, h) = (
        (plot[2] - plot[0]).max(1e-12),
        (plot[3] - plot[1]).max(1e-12),
    );
    let cx = ((f[0] + f[2]) / 2.0 - plot[0]) / w;
    let cy = ((f[1] + f[3]) / 2.0 - plot[1]) / h;
    let col = if cx < 1.0 / 3.0 {
        0
    } else if cx > 2.0 / 3.0 {
        2
    } else {
        1
    };
    let row = if cy < 1.0 / 3.0 {
        0
    } else if cy > 2.0 / 3.0 {
        2
    } else {
        1
    };
    let sector = match (row, col) {
        (2, 0) => "NW",
        (2, 1) => "N",
        (2, 2) => "NE",
        (1, 0) => "W",
        (1, 2) => "E",
        (0, 0) => "SW",
        (0, 1) => "S",
        (0, 2) => "SE",
        _ => "C",
    };
    let diag = w.hypot(h);
    let fd = (f[2] - f[0]).hypot(f[3] - f[1]) / diag;
    let extent = if fd < 0.02 {
        return sector.to_owned();
    } else if fd < 0.25 {
        "local"
    } else {
        "wide"
    };
    // A space, not a slash: " wide" is one o200k token, "/wide" two.
    format!("{sector} {extent}")
}

fn hhmm(iso: &str) -> &str {
    iso.get(11..16).unwrap_or(iso)
}

fn day(iso: &str) -> &str {
    iso.get(..10).unwrap_or(iso)
}

/// `YYYY-MM-DD HH:MM-HH:MM` within one day, else `YYYY-MM-DD HH:MM/YYYY-MM-DD HH:MM` (UTC, to the
/// minute). Half the tokens of two full RFC 3339 stamps: o200k splits every digit run apart.
fn span_text(s: &str, e: &str) -> String {
    if day(s) == day(e) {
        format!("{} {}-{}", day(s), hhmm(s), hhmm(e))
    } else {
        format!("{} {}/{} {}", day(s), hhmm(s), day(e), hhmm(e))
    }
}

/// A row's span relative to the plot's: `=` for the whole span, `HH:MM-HH:MM` (or one `HH:MM`
/// for an instant) on the plot's start day, else a dated span.
fn span_cell(span: Option<(String, String)>, plot: Option<&(String, String)>) -> String {
    let Some((s, e)) = span else {
        return String::new();
    };
    if let Some((ps, pe)) = plot {
        let same_minute = |a: &str, b: &str| day(a) == day(b) && hhmm(a) == hhmm(b);
        if same_minute(&s, ps) && same_minute(&e, pe) {
            return "=".to_owned();
        }
        if day(&s) == day(ps) && day(&e) == day(ps) {
            return if hhmm(&s) == hhmm(&e) {
                hhmm(&s).to_owned()
            } else {
                format!("{}-{}", hhmm(&s), hhmm(&e))
            };
        }
    }
    span_text(&s, &e)
}

/// Whether a feature's name can be left out because the id spells it: the same text, or the
/// name in lower case with hyphens for its single spaces (`Track 1` → `track-1`). Names with any
/// other character are always shown, so reading the id back never invents a name.
fn name_implied(id: &str, name: &str) -> bool {
    if name == id {
        return true;
    }
    let plain = !name.is_empty()
        && !name.starts_with(' ')
        && !name.ends_with(' ')
        && !name.contains("  ")
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == ' ');
    plain
        && id.len() == name.len()
        && id.chars().zip(name.chars()).all(|(i, n)| {
            if n == ' ' {
                i == '-'
            } else {
                i == n.to_ascii_lowercase()
            }
        })
}

struct Row {
    cells: [String; 7],
}

/// A text cell that cannot break the table: `|` is escaped as `\|` and `\` as `\\` (as in
/// Markdown tables), and line breaks and other control characters become spaces.
fn cell(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '|' => out.push_str("\\|"),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

const ID: usize = 0;
const NAME: usize = 1;
const TYPE: usize = 2;

fn row(
    f: &Value,
    fbox: Option<[f64; 4]>,
    plot_bbox: Option<[f64; 4]>,
    plot_span: Option<&(String, String)>,
) -> Row {
    let feature = Feature(f);
    let id = feature.id().unwrap_or_default();
    let name = feature.display_name();
    // The platform id says most (it links to the catalogue's platform records); show it unless
    // it repeats the name, else the platform name when that differs from the display name.
    let platform = f
        .pointer("/properties/platform_id")
        .and_then(Value::as_str)
        .filter(|p| !p.is_empty() && !p.eq_ignore_ascii_case(&name))
        .map(str::to_owned)
        .or_else(|| feature.platform().map(str::to_owned))
        .filter(|p| p != &name)
        .unwrap_or_default();
    let kind = feature.kind();
    Row {
        cells: [
            cell(&id),
            if name_implied(&id, &name) {
                String::new()
            } else {
                cell(&name)
            },
            cell(kind),
            cell(&platform),
            span_cell(
                feature
                    .time_span()
                    .map(|(s, e)| (s.to_owned(), e.to_owned())),
                plot_span,
            ),
            // A POINT is one point by definition: the column would only repeat that.
            match feature.point_count() {
                Some(n) if kind != "POINT" => n.to_string(),
                _ => String::new(),
            },
            match (plot_bbox, fbox) {
                (Some(p), Some(b)) => spatial_digest(p, b),
                _ => String::new(),
            },
        ],
    }
}

/// One section per feature type (first-seen order, panel order within a type). Per type, columns
/// empty in every row are dropped and columns with one value in every row are stated once in the
/// header (`(all: span =)`), so a row carries only what distinguishes it. The id always stays a
/// column: it is what a model targets with.
fn render(rows: &[Row], keep: &[bool; 7]) -> String {
    let mut kinds: Vec<&str> = Vec::new();
    for r in rows {
        if !kinds.contains(&r.cells[TYPE].as_str()) {
            kinds.push(&r.cells[TYPE]);
        }
    }
    let mut text = String::new();
    for kind in kinds {
        let group: Vec<&Row> = rows.iter().filter(|r| r.cells[TYPE] == kind).collect();
        let mut cols: Vec<usize> = Vec::new();
        let mut constants: Vec<String> = Vec::new();
        for (i, name) in COLUMNS.iter().enumerate() {
            if i == TYPE || !keep[i] {
                continue;
            }
            let first = &group[0].cells[i];
            let all_same = group.iter().all(|r| &r.cells[i] == first);
            if i != ID && all_same {
                // An empty name means "spelled by the id"; other shared values are stated once.
                if !first.is_empty() && i != NAME {
                    constants.push(format!("{name} {first}"));
                } else if !first.is_empty() {
                    cols.push(i);
                }
                continue;
            }
            cols.push(i);
        }
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(if kind.is_empty() { "UNKNOWN" } else { kind });
        text.push(' ');
        text.push_str(
            &cols
                .iter()
                .map(|&i| COLUMNS[i])
                .collect::<Vec<_>>()
                .join("|"),
        );
        if !constants.is_empty() {
            text.push_str(" (all: ");
            text.push_str(&constants.join(", "));
            text.push(')');
        }
        for r in &group {
            text.push('\n');
            for (n, &i) in cols.iter().enumerate() {
                if n > 0 {
                    text.push('|');
                }
                text.push_str(&r.cells[i]);
            }
        }
    }
    text
}

/// How to read the reply. It is part of the summarize tool's description (static, seen once with
/// the tool list), not of every reply.
pub const LEGEND: &str = "Times UTC. features: per type a line `TYPE col|col…` (values all rows share in brackets), then a |-separated row per feature. Empty name = the id, hyphens as spaces; platform = platform id; span = is the plot's span, HH:MM on its first day; where = compass sector plus extent (local or wide; none for a point).";

/// Serialise compactly and set `tokens` to the count of exactly that text.
///
/// The count is taken once, with `tokens` at 0, and corrected for the digits of the final
/// number: o200k's pre-tokeniser splits digit runs into their own pieces, separate from the
/// surrounding `":` and `,`, so the count is additive around the number. Tests check the result
/// against a full recount of the returned text.
fn finish(view: &mut SummaryView, counter: &TokenCounter) -> String {
    view.tokens = 0;
    let zero = serde_json::to_string(view).unwrap_or_default();
    let base = counter.count(&zero) - counter.count("0");
    let mut n = base + 1;
    // The number's own token count depends on its digits; settle it (at most a couple of steps).
    for _ in 0..4 {
        let next = base + counter.count(&n.to_string());
        if next == n {
            break;
        }
        n = next;
    }
    view.tokens = n;
    serde_json::to_string(view).unwrap_or_default()
}

/// Build the summary of a plot. Returns the view and its exact compact JSON text.
pub fn summarize(
    session: &Session,
    plot: &OpenPlot,
    req: &SummaryRequest,
    counter: &TokenCounter,
) -> (SummaryView, String) {
    let plot_span = match (&plot.entry.start, &plot.entry.end) {
        (Some(s), Some(e)) => Some((
            s.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            e.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        )),
        _ => None,
    };
    // One walk over each feature's coordinates: its box, and the plot's box as their union
    // (walking twice was half the summary's time on a 3 MB plot).
    let boxes: Vec<Option<[f64; 4]>> = plot
        .doc
        .features()
        .iter()
        .map(|f| Feature(f).bbox())
        .collect();
    let bbox = boxes
        .iter()
        .fold(None, |acc, b| union_bbox(acc, *b))
        .or(plot.entry.bbox);
    let selected = req.selection_only.then(|| plot.selected_ids());
    let features: Vec<(&Value, Option<[f64; 4]>)> = plot
        .doc
        .features()
        .iter()
        .zip(boxes.iter().copied())
        .filter(|(f, _)| {
            selected
                .as_ref()
                .is_none_or(|s| s.contains(&Feature(f).id().unwrap_or_default()))
        })
        .collect();
    let total = features.len();
    let cap = req.cap.unwrap_or(INVENTORY_CAP);
    let mut rows: Vec<Row> = features
        .iter()
        .take(cap)
        .map(|(f, b)| row(f, *b, bbox, plot_span.as_ref()))
        .collect();
    let several_open = session.open_plots().len() > 1;
    let mut keep = [true; 7];
    let mut shed = Vec::new();
    let build = |rows: &[Row], keep: &[bool; 7], shed: &[String]| {
        let truncated = rows.len() < total;
        SummaryView {
            plot_id: several_open.then(|| plot.id.clone()),
            title: plot.title.clone(),
            span: plot_span.as_ref().map(|(s, e)| span_text(s, e)),
            dirty: plot.doc.is_dirty(),
            features: render(rows, keep),
            total,
            truncated,
            listed: rows.len(),
            listed_when_truncated: truncated.then_some(rows.len()),
            shed: shed.to_vec(),
            selection_only: req.selection_only,
            tokens: 0,
            open_plots: if several_open {
                open_plots(session)
            } else {
                Vec::new()
            },
        }
    };
    let mut view = build(&rows, &keep, &shed);
    let mut text = finish(&mut view, counter);
    if let Some(budget) = req.token_budget {
        let mut order = SHED_ORDER.iter();
        while view.tokens > budget {
            if let Some(col) = order.next() {
                if let Some(i) = COLUMNS.iter().position(|c| c == col) {
                    keep[i] = false;
                }
                shed.push((*col).to_owned());
            } else if rows.is_empty() {
                break;
            } else {
                // cut rows proportionally to the overshoot, at least one
                let over = view.tokens - budget;
                let per_row = (view.tokens / rows.len().max(1)).max(1);
                let cut = over.div_ceil(per_row).clamp(1, rows.len());
                rows.truncate(rows.len() - cut);
            }
            view = build(&rows, &keep, &shed);
            text = finish(&mut view, counter);
        }
    }
    (view, text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_sectors_and_extent() {
        let plot = [0.0, 0.0, 9.0, 9.0];
        assert_eq!(spatial_digest(plot, [0.0, 8.0, 0.1, 8.1]), "NW");
        assert_eq!(spatial_digest(plot, [4.0, 4.0, 5.0, 5.0]), "C local");
        assert_eq!(spatial_digest(plot, [0.0, 0.0, 9.0, 2.0]), "S wide");
        assert_eq!(spatial_digest(plot, [8.0, 0.0, 8.5, 0.5]), "SE local");
    }

    #[test]
    fn span_cells() {
        let plot = (
            "2026-03-01T00:00:00Z".to_owned(),
            "2026-03-01T12:00:00Z".to_owned(),
        );
        assert_eq!(span_cell(Some(plot.clone()), Some(&plot)), "=");
        assert_eq!(
            span_cell(
                Some(("2026-03-01T00:00:00Z".into(), "2026-03-01T06:00:00Z".into())),
                Some(&plot)
            ),
            "00:00-06:00"
        );
        assert_eq!(
            span_cell(
                Some(("2026-03-02T00:00:00Z".into(), "2026-03-02T06:00:00Z".into())),
                Some(&plot)
            ),
            "2026-03-02 00:00-06:00"
        );
        assert_eq!(
            span_cell(
                Some(("2026-03-01T00:05:30Z".into(), "2026-03-01T00:05:30Z".into())),
                Some(&plot)
            ),
            "00:05",
            "an instant on the plot's day is one time"
        );
        assert_eq!(
            span_text("2026-03-01T23:00:00Z", "2026-03-02T01:30:00Z"),
            "2026-03-01 23:00/2026-03-02 01:30"
        );
    }

    #[test]
    fn a_name_is_left_out_only_when_the_id_spells_it() {
        assert!(name_implied("track-1", "Track 1"));
        assert!(name_implied("NELSON", "NELSON"));
        assert!(name_implied("datum-a", "DATUM A"));
        assert!(!name_implied("track-nelson", "HMS Nelson"));
        assert!(
            !name_implied("track-1", "Track-1"),
            "a hyphen in the name is shown"
        );
        assert!(!name_implied("a-b", "A  B"));
        assert!(!name_implied("point-1", "Datum 1"));
        assert!(!name_implied("x", ""));
        assert!(!name_implied("cafe", "Café"));
    }
}
