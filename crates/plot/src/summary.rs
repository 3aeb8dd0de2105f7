//! The plot summary a model reads before it targets an edit (reference §5, improved): a compact
//! inventory table with a spatial digest per feature, a cap with `truncated` and the total, and
//! `tokens` — the real o200k count of exactly the payload returned.

use serde::Serialize;
use serde_json::Value;
use toolgate_core::TokenCounter;

use crate::model;
use crate::search::TimeSpan;
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
    pub plot_id: String,
    pub title: String,
    pub time_span: Option<TimeSpan>,
    pub dirty: bool,
    /// Column names of `features`, `|`-separated.
    pub columns: String,
    /// How to read the cells.
    pub legend: String,
    /// One row per feature, `|`-separated cells, rows separated by newlines.
    pub features: String,
    pub total: usize,
    pub listed: usize,
    pub truncated: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub shed: Vec<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub selection_only: bool,
    pub tokens: usize,
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
    let (w, h) = ((plot[2] - plot[0]).max(1e-12), (plot[3] - plot[1]).max(1e-12));
    let cx = ((f[0] + f[2]) / 2.0 - plot[0]) / w;
    let cy = ((f[1] + f[3]) / 2.0 - plot[1]) / h;
    let col = if cx < 1.0 / 3.0 { 0 } else if cx > 2.0 / 3.0 { 2 } else { 1 };
    let row = if cy < 1.0 / 3.0 { 0 } else if cy > 2.0 / 3.0 { 2 } else { 1 };
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
        "pt"
    } else if fd < 0.25 {
        "local"
    } else {
        "wide"
    };
    format!("{sector}/{extent}")
}

fn hhmm(iso: &str) -> &str {
    iso.get(11..16).unwrap_or(iso)
}

fn span_cell(span: Option<(String, String)>, plot: Option<&(String, String)>) -> String {
    let Some((s, e)) = span else {
        return String::new();
    };
    if let Some((ps, pe)) = plot {
        if hhmm(&s) == hhmm(ps) && hhmm(&e) == hhmm(pe) && s.get(..10) == ps.get(..10) && e.get(..10) == pe.get(..10) {
            return "=".to_owned();
        }
        let day = ps.get(..10);
        if s.get(..10) == day && e.get(..10) == day {
            return format!("{}-{}", hhmm(&s), hhmm(&e));
        }
    }
    format!("{}/{}", s.get(..16).unwrap_or(&s), e.get(..16).unwrap_or(&e))
}

struct Row {
    cells: [String; 7],
}

fn row(f: &Value, plot_bbox: Option<[f64; 4]>, plot_span: Option<&(String, String)>) -> Row {
    let id = model::feature_id(f);
    let name = model::display_name(f);
    let platform = model::platform(f).unwrap_or_default();
    Row {
        cells: [
            id.clone(),
            if name == id { String::new() } else { name.clone() },
            model::kind(f).to_owned(),
            if platform == name { String::new() } else { platform },
            span_cell(model::time_span(f), plot_span),
            model::point_count(f).map(|n| n.to_string()).unwrap_or_default(),
            match (plot_bbox, model::feature_bbox(f)) {
                (Some(p), Some(b)) => spatial_digest(p, b),
                _ => String::new(),
            },
        ],
    }
}

fn render(rows: &[Row], keep: &[bool; 7]) -> (String, String) {
    let columns = COLUMNS
        .iter()
        .zip(keep)
        .filter(|(_, k)| **k)
        .map(|(c, _)| *c)
        .collect::<Vec<_>>()
        .join("|");
    let mut out = String::with_capacity(rows.len() * 40);
    for (i, r) in rows.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let mut first = true;
        for (cell, k) in r.cells.iter().zip(keep) {
            if !*k {
                continue;
            }
            if !first {
                out.push('|');
            }
            first = false;
            out.push_str(cell);
        }
    }
    (columns, out)
}

const LEGEND: &str = "empty name: same as id; empty platform: same as name; span '=' is the plot's time span, HH:MM-HH:MM is UTC on the plot's start date; where = compass sector in the plot / extent (pt, local, wide)";

/// Serialise compactly and set `tokens` to the count of exactly that text (iterating until the
/// number stops changing its own length).
fn finish(view: &mut SummaryView, counter: &TokenCounter) -> String {
    let mut text = String::new();
    for _ in 0..4 {
        text = serde_json::to_string(view).unwrap_or_default();
        let n = counter.count(&text);
        if n == view.tokens {
            break;
        }
        view.tokens = n;
    }
    text
}

/// Build the summary of a plot. Returns the view and its exact compact JSON text.
pub fn summarize(session: &Session, plot: &OpenPlot, req: &SummaryRequest, counter: &TokenCounter) -> (SummaryView, String) {
    let plot_span = match (&plot.entry.start, &plot.entry.end) {
        (Some(s), Some(e)) => Some((
            s.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            e.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        )),
        _ => None,
    };
    let bbox = plot.bbox();
    let selected = req.selection_only.then(|| plot.selected_ids());
    let features: Vec<&Value> = plot
        .doc
        .features()
        .iter()
        .filter(|f| {
            selected
                .as_ref()
                .is_none_or(|s| s.contains(&model::feature_id(f)))
        })
        .collect();
    let total = features.len();
    let cap = req.cap.unwrap_or(INVENTORY_CAP);
    let mut rows: Vec<Row> = features
        .iter()
        .take(cap)
        .map(|f| row(f, bbox, plot_span.as_ref()))
        .collect();
    let mut keep = [true; 7];
    let mut shed = Vec::new();
    let build = |rows: &[Row], keep: &[bool; 7], shed: &[String]| {
        let (columns, text) = render(rows, keep);
        SummaryView {
            plot_id: plot.id.clone(),
            title: plot.title.clone(),
            time_span: plot_span.as_ref().map(|(s, e)| TimeSpan {
                start: s.clone(),
                end: e.clone(),
            }),
            dirty: plot.doc.is_dirty(),
            columns,
            legend: LEGEND.to_owned(),
            features: text,
            total,
            listed: rows.len(),
            truncated: rows.len() < total,
            shed: shed.to_vec(),
            selection_only: req.selection_only,
            tokens: 0,
            open_plots: open_plots(session),
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
        assert_eq!(spatial_digest(plot, [0.0, 8.0, 0.1, 8.1]), "NW/pt");
        assert_eq!(spatial_digest(plot, [4.0, 4.0, 5.0, 5.0]), "C/local");
        assert_eq!(spatial_digest(plot, [0.0, 0.0, 9.0, 2.0]), "S/wide");
        assert_eq!(spatial_digest(plot, [8.0, 0.0, 8.5, 0.5]), "SE/local");
    }

    #[test]
    fn span_cells() {
        let plot = ("2026-03-01T00:00:00Z".to_owned(), "2026-03-01T12:00:00Z".to_owned());
        assert_eq!(span_cell(Some(plot.clone()), Some(&plot)), "=");
        assert_eq!(
            span_cell(Some(("2026-03-01T00:00:00Z".into(), "2026-03-01T06:00:00Z".into())), Some(&plot)),
            "00:00-06:00"
        );
        assert_eq!(
            span_cell(Some(("2026-03-02T00:00:00Z".into(), "2026-03-02T06:00:00Z".into())), Some(&plot)),
            "2026-03-02T00:00/2026-03-02T06:00"
        );
    }
}
