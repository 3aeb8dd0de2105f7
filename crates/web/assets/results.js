// The Results panel: a tool's result as a table (paged, rows that go to their time and
// place), a chart over time, and CSV, in the chosen units.
import { $, NS, api, app, report } from './state.js';
import { MPS_PER, M_PER, M_PER_NM, esc, fmtTime, humanise, isoMs, pick } from './format.js';
import { H, W, X, Y, canvas, requestDraw } from './map.js';
import { setTime, stopPlay } from './time.js';

export async function loadDatasets() {
  try {
    const r = await api('GET', '/api/datasets');
    const grew = r.datasets.length > app.datasets.length;
    app.datasets = r.datasets;
    renderDatasetList(grew);
  } catch (e) {
    report(e);
  }
}

// The Results panel lists the results of the plot on the map only.
export function renderDatasetList(grew) {
  const plotId = app.plot ? app.plot.plotId : null;
  const mine = app.datasets.filter((d) => !d.plotId || d.plotId === plotId);
  const sel = $('dataset-select');
  sel.replaceChildren(...mine.map((d) => {
    const o = document.createElement('option');
    o.value = d.id;
    o.textContent = `${d.id} · ${d.toolId}${d.kind === 'error' ? ' (failed)' : ''}`;
    return o;
  }));
  if (!mine.length) {
    renderDataset(null);
    return;
  }
  const keep = !grew && mine.find((d) => d.id === app.datasetShown);
  const show = keep || mine[mine.length - 1];
  sel.value = show.id;
  renderDataset(show);
}

function cell(v) {
  if (v === null || v === undefined) return '';
  if (typeof v === 'number') return Number.isInteger(v) ? String(v) : v.toFixed(2);
  if (typeof v === 'string') return /^\d{4}-\d\d-\d\dT/.test(v) ? fmtTime(v) : v;
  if (Array.isArray(v)) return v.map(cell).join(', ');
  return Object.keys(v).map((k) => `${k}: ${cell(v[k])}`).join('; ');
}

const isRecords = (v) => Array.isArray(v) && v.length > 0 && v.every((x) => x && typeof x === 'object' && !Array.isArray(x));

// The records of a list result, one per row: the first list of records at the top (series,
// rows, samples, positions, tracks, …), else the longest list of records anywhere in the data
// (a time series' data points, a detector's events). A record holding a list of records (a
// track and its filtered positions) gives one row per inner record, with the outer record's
// names beside it (`track_name`); `groups` counts the outer records that gave rows.
function findSeries(data) {
  if (!data || typeof data !== 'object') return null;
  let list = null, key = '';
  for (const k of ['series', 'rows', 'samples', 'positions', 'tracks', 'features', 'classifications']) {
    if (isRecords(data[k])) {
      list = data[k];
      key = k;
      break;
    }
  }
  if (!list && isRecords(data)) list = data;
  if (!list) {
    const walk = (v, k, depth) => {
      if (!v || typeof v !== 'object' || depth > 4) return;
      if (isRecords(v)) {
        if (!list || v.length > list.length) {
          list = v;
          key = k;
        }
        return;
      }
      if (!Array.isArray(v)) for (const kk of Object.keys(v)) walk(v[kk], kk, depth + 1);
    };
    walk(data, '', 0);
  }
  return list ? expand(list, key, 0) : null;
}

function expand(list, key, depth) {
  const inner = (r) => {
    let best = null;
    for (const k of Object.keys(r)) if (isRecords(r[k]) && (!best || r[k].length > r[best].length)) best = k;
    return best;
  };
  if (depth > 2 || !list.some(inner)) return list;
  const singular = key.endsWith('s') ? key.slice(0, -1) : key || 'item';
  const rows = [];
  let groups = 0;
  for (const r of list) {
    const k = inner(r);
    if (!k) continue; // an outer record with nothing in it (a track none of whose positions matched)
    groups++;
    const names = {};
    for (const [kk, v] of Object.entries(r)) if (typeof v === 'string') names[`${singular}_${kk}`] = v;
    for (const child of expand(r[k], k, depth + 1)) rows.push({ ...names, ...child });
  }
  if (!rows.length) return list;
  rows.groups = groups;
  return rows;
}

// A row's time (ms) and position ([lon, lat]), where it has them: what a click on the row
// goes to, and what the map rings.
const TIME_KEYS = ['time', 'start_time', 'time_start', 'timestamp'];

function rowTime(r) {
  for (const k of TIME_KEYS) {
    if (typeof r[k] !== 'string') continue;
    const t = isoMs(r[k]);
    if (t === t) return t;
  }
  return null;
}

function rowPlace(r) {
  const lon = pick(r.lon, r.longitude), lat = pick(r.lat, r.latitude);
  if (typeof lon === 'number' && typeof lat === 'number') return [lon, lat];
  for (const k of Object.keys(r)) {
    const v = r[k];
    if (/position|coord|location|point|centroid|centre|center/i.test(k) && Array.isArray(v) && v.length >= 2
      && typeof v[0] === 'number' && typeof v[1] === 'number' && Math.abs(v[0]) <= 180 && Math.abs(v[1]) <= 90) return [v[0], v[1]];
  }
  return null;
}

// The shown result as {series, head, rows} of text, in the chosen units, nested values
// flattened; every row (the table pages through them, the CSV has them all).
function datasetTable(d) {
  const series = findSeries(d.data);
  const conv = (k, v, rowUnits) => {
    const u = unitOf(k, rowUnits);
    return typeof v === 'number' && u.conv ? cell(Math.round(u.conv(v) * 1000) / 1000) : cell(v);
  };
  if (series) {
    const flat = series.slice(0, 100000).map((r) => flatten(r, '', {}));
    const cols = [];
    for (const r of flat.slice(0, 50)) for (const k of Object.keys(r)) if (!cols.includes(k)) cols.push(k);
    const units = typeof series[0].units === 'string' ? series[0].units : typeof d.data.units === 'string' ? d.data.units : null;
    return { series, units, head: cols.map((c) => unitOf(c, units).label), rows: flat.map((r) => cols.map((c) => conv(c, r[c], typeof r.units === 'string' ? r.units : units))) };
  }
  const flat = flatten(d.data || {}, '', {});
  // a measurement's `value` is in its `units` (yds, nm, kts…): shown in the chosen ones
  const units = typeof flat.units === 'string' ? flat.units : null;
  const keys = Object.keys(flat).filter((k) => !(k === 'units' && unitOf('value', units).conv));
  return { series: null, head: ['field', 'value'], rows: keys.map((k) => [unitOf(k, units).label, conv(k, flat[k], units)]) };
}

const PAGE_ROWS = 50;

export function renderDataset(d) {
  const same = d && app.result.id === d.id;
  app.datasetShown = d ? d.id : null;
  const table = $('dataset-table');
  const chart = $('dataset-chart');
  chart.replaceChildren();
  $('dataset-csv').disabled = !d || d.kind === 'error';
  const failed = d && d.kind === 'error';
  if (!d || failed) {
    $('dataset-summary').classList.toggle('is-error', !!failed);
    $('dataset-summary').textContent = failed ? `${d.toolId} failed: ${d.summary}` : 'Analytical tools (e.g. range-bearing, track-stats) put their results for this plot here.';
    table.replaceChildren();
    app.resultTable = null;
    app.result = { id: null, rows: [], page: 0, row: -1, marks: [], gen: app.result.gen + 1 };
    $('dataset-pager').hidden = true;
    $('results-split').classList.add('no-chart');
    renderResultMarks();
    return;
  }
  $('dataset-summary').classList.remove('is-error');
  $('dataset-summary').textContent = `${d.toolId}: ${d.summary}`;
  const t = datasetTable(d);
  app.resultTable = t;
  if (!same) app.result = { id: d.id, rows: t.series || [], page: 0, row: -1, marks: [], gen: app.result.gen + 1 };
  renderResultPage();
  const charted = t.series && !(t.series.groups > 1) && chartSeries(chart, t.series, t.units);
  $('results-split').classList.toggle('no-chart', !charted);
  if (!same) renderResultMarks();
}

// One page of the shown result's table; a row with a time goes there when clicked.
function renderResultPage() {
  const t = app.resultTable;
  const table = $('dataset-table');
  if (!t) return;
  const res = app.result;
  const pages = Math.max(1, Math.ceil(t.rows.length / PAGE_ROWS));
  res.page = Math.min(Math.max(res.page, 0), pages - 1);
  const start = res.page * PAGE_ROWS;
  const rows = t.rows.slice(start, start + PAGE_ROWS);
  // one row of the page is in the Tab order (the chosen one, else the first); arrows move
  const focusAt = res.row >= start && res.row < start + rows.length ? res.row : start;
  const body = rows.map((r, i) => {
    const n = start + i;
    const rec = res.rows[n];
    const go = rec && (rowTime(rec) !== null || rowPlace(rec));
    const attrs = go ? ` data-row="${n}" tabindex="${n === focusAt ? 0 : -1}" class="go" title="Go to this row's time${rowPlace(rec) ? ' and place' : ''}" aria-selected="${n === res.row}"` : '';
    return `<tr${attrs}>${r.map((c) => `<td>${esc(c)}</td>`).join('')}</tr>`;
  }).join('');
  table.innerHTML = `<thead><tr>${t.head.map((h) => `<th scope="col">${esc(h)}</th>`).join('')}</tr></thead><tbody>${body}</tbody>`;
  const pager = $('dataset-pager');
  pager.hidden = !res.rows.length;
  $('page-info').textContent = t.rows.length > PAGE_ROWS ? `Rows ${start + 1}–${start + rows.length} of ${t.rows.length}` : `${t.rows.length} row${t.rows.length === 1 ? '' : 's'}`;
  $('page-prev').disabled = res.page === 0;
  $('page-next').disabled = res.page >= pages - 1;
  $('page-prev').hidden = $('page-next').hidden = pages === 1;
}

function goToRow(n) {
  const rec = app.result.rows[n];
  if (!rec) return;
  app.result.row = n;
  app.result.gen++;
  for (const tr of $('dataset-table').querySelectorAll('tr[data-row]')) {
    tr.setAttribute('aria-selected', String(Number(tr.dataset.row) === n));
    tr.tabIndex = Number(tr.dataset.row) === n ? 0 : -1;
  }
  $('dataset-table').dataset.row = String(n);
  const t = rowTime(rec);
  if (t !== null) {
    stopPlay();
    setTime(t);
  }
  const p = rowPlace(rec);
  if (p && app.view) {
    const x = X(p[0]), y = Y(p[1]);
    if (x < 30 || x > W - 30 || y < 30 || y > H - 30) {
      app.view.cx = p[0];
      app.view.cy = p[1];
      app.view.auto = false;
    }
  }
  requestDraw();
}

// The positions of the shown result's rows, ringed on the map.
function renderResultMarks() {
  const rows = app.plot ? app.result.rows : [];
  app.result.marks = rows.slice(0, 20000).map(rowPlace);
  app.result.gen++;
  canvas.dataset.resultMarks = String(app.result.marks.filter(Boolean).length);
  requestDraw();
}

function csvOf(head, rows) {
  const q = (v) => (/[",\n]/.test(v) ? `"${String(v).replace(/"/g, '""')}"` : String(v));
  return [head, ...rows].map((r) => r.map(q).join(',')).join('\r\n') + '\r\n';
}

function downloadCsv() {
  const d = app.datasets.find((x) => x.id === app.datasetShown);
  if (!d) return;
  const { head, rows } = datasetTable(d);
  const blob = new Blob([csvOf(head, rows)], { type: 'text/csv' });
  const a = document.createElement('a');
  a.href = URL.createObjectURL(blob);
  a.download = `${d.toolId}-${d.id}.csv`;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 5000);
}

// Redraw the chart when its box changes size, so its text keeps its size.
let chartWidth = 0;

new ResizeObserver(() => {
  const w = $('dataset-chart').clientWidth;
  if (Math.abs(w - chartWidth) < 2) return;
  chartWidth = w;
  const d = app.datasets.find((x) => x.id === app.datasetShown);
  if (d) renderDataset(d);
}).observe($('dataset-chart'));

// A chart of a result's values over time, in the chosen units; false when there is none to draw.
function chartSeries(el, series, units) {
  const times = series.map((r) => isoMs(r.time));
  if (!times.every((t) => isFinite(t)) || series.length < 2) return false;
  // positions and row numbers are not quantities to chart
  const numeric = Object.keys(series[0]).filter((k) => k !== 'time' && typeof series[0][k] === 'number' && !/^(lon|lat|longitude|latitude|index)$|_index$/.test(k));
  if (!numeric.length) return false;
  // The measured quantity first (a rate tool's `rate`, a reading's `value`), then the rest.
  const lead = ['value', 'rate'];
  numeric.sort((a, b) => (lead.includes(b) ? 1 : 0) - (lead.includes(a) ? 1 : 0));
  // A measured quantity is charted alone: its readings in other units only crowd it.
  const keys = lead.includes(numeric[0]) ? numeric.slice(0, 1) : numeric.slice(0, 2);
  // A key without a unit suffix takes the rows' own `units` (e.g. `kts/sec`), when they say.
  const rowUnits = typeof series[0].units === 'string' ? series[0].units : units || '';
  const conv = (k) => unitOf(k, rowUnits).conv || ((v) => v);
  const label = (k) => {
    const u = unitOf(k, rowUnits);
    return !u.conv && rowUnits && lead.includes(k) ? `${u.label} (${rowUnits})` : u.label;
  };
  const w = Math.max(200, el.clientWidth || 400), h = Math.max(100, el.clientHeight || 160);
  const m = { l: 52, r: keys.length > 1 ? 44 : 20, t: 16, b: 22 };
  // Tick text with enough decimals to tell a small range's ticks apart, and no `-0`.
  const tick = (v, span) => {
    const dp = Math.max(0, Math.min(6, Math.ceil(-Math.log10(span / 4 || 1))));
    const t = v.toFixed(dp);
    return /^-0(\.0*)?$/.test(t) ? t.slice(1) : t;
  };
  const least = (xs) => xs.reduce((a, b) => (b < a ? b : a), Infinity);
  const most = (xs) => xs.reduce((a, b) => (b > a ? b : a), -Infinity);
  const t0 = least(times), t1 = most(times);
  const x = (t) => m.l + ((t - t0) / Math.max(t1 - t0, 1)) * (w - m.l - m.r);
  const svg = document.createElementNS(NS, 'svg');
  svg.setAttribute('viewBox', `0 0 ${w} ${h}`);
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-label', `Chart of ${keys.map(label).join(' and ')} over time`);
  const add = (tag, attrs, text) => {
    const e = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    svg.appendChild(e);
    return e;
  };
  keys.forEach((k, n) => {
    const f = conv(k);
    const vals = series.map((r) => f(r[k]));
    let lo = least(vals), hi = most(vals);
    if (k === 'bearing_deg') { lo = 0; hi = 360; }
    if (hi - lo < 1e-9) { hi = lo + 1; }
    const y = (v) => h - m.b - ((v - lo) / (hi - lo)) * (h - m.t - m.b);
    if (n === 0) {
      for (let i = 0; i <= 4; i++) {
        const v = lo + ((hi - lo) * i) / 4;
        add('line', { class: 'grid', x1: m.l, x2: w - m.r, y1: y(v), y2: y(v) });
        add('text', { x: m.l - 4, y: y(v) + 4, 'text-anchor': 'end' }, tick(v, hi - lo));
      }
    } else {
      for (let i = 0; i <= 4; i++) {
        const v = lo + ((hi - lo) * i) / 4;
        add('text', { x: w - m.r + 4, y: y(v) + 4 }, tick(v, hi - lo));
      }
    }
    const d = vals.map((v, i) => `${i ? 'L' : 'M'}${x(times[i]).toFixed(1)},${y(v).toFixed(1)}`).join('');
    add('path', { class: n === 0 ? 's1' : 's2', d });
    add('text', { x: n === 0 ? m.l : w - m.r, y: 11, 'text-anchor': n === 0 ? 'start' : 'end', class: `legend-${n}` }, `${n === 0 ? '━' : '┅'} ${label(k)}`);
  });
  add('line', { class: 'axis', x1: m.l, x2: w - m.r, y1: h - m.b, y2: h - m.b });
  for (let i = 0; i <= 4; i++) {
    const t = t0 + ((t1 - t0) * i) / 4;
    add('text', { x: x(t), y: h - 6, 'text-anchor': 'middle' }, new Date(t).toISOString().slice(11, 16));
  }
  el.replaceChildren(svg);
  return true;
}

// ---------------------------------------------------------------------------------------------
// result units

// Units the tools write, in metres or metres a second.
const DIST_OF = { m: 1, metres: 1, meters: 1, km: 1000, nm: M_PER_NM, yd: 0.9144, yds: 0.9144, yards: 0.9144 };

const SPEED_OF = { kn: M_PER_NM / 3600, kts: M_PER_NM / 3600, knots: M_PER_NM / 3600, mps: 1, 'm/s': 1, 'km/h': 1 / 3.6 };

// Keys without a unit of their own that take their record's `units` (range-calc's `value` in
// yds, a range-time plot's `range`).
const MEASURED = ['value', 'range', 'distance', 'speed'];

// The unit a result column's name declares (`range_m`, `average_speed_kn`, `width_nm`,
// `range_yards`, `bearing_deg`, `bbox_area_sq_nm`), or, for a measured value, its record's
// `units`; as {label, conv} in the chosen units.
function unitOf(key, units) {
  const leaf = String(key).split('.').pop();
  const du = app.units.dist, su = app.units.speed;
  const toDist = (metres) => metres / M_PER[du];
  const toSpeed = (mps) => mps / MPS_PER[su];
  if (MEASURED.includes(leaf) && units) {
    const u = String(units).toLowerCase();
    if (DIST_OF[u]) return { label: `${humanise(key)} (${du})`, conv: (v) => toDist(v * DIST_OF[u]) };
    if (SPEED_OF[u]) return { label: `${humanise(key)} (${su})`, conv: (v) => toSpeed(v * SPEED_OF[u]) };
  }
  const m = /^(.*?)_(sq_nm|m|km|nm|yd|yds|yards|kn|kts|knots|mps|deg|degs|hours|s|secs|seconds)$/.exec(leaf);
  if (!m) return { label: humanise(key), conv: null };
  const base = humanise(String(key).slice(0, String(key).length - leaf.length) + m[1]);
  const u = m[2];
  if (DIST_OF[u]) return { label: `${base} (${du})`, conv: (v) => toDist(v * DIST_OF[u]) };
  if (SPEED_OF[u]) return { label: `${base} (${su})`, conv: (v) => toSpeed(v * SPEED_OF[u]) };
  switch (u) {
    case 'sq_nm': return { label: `${base} (${du}²)`, conv: (v) => v * (M_PER_NM / M_PER[du]) ** 2 };
    case 'deg': case 'degs': return { label: `${base} (°)`, conv: (v) => v };
    case 'hours': return { label: `${base} (h)`, conv: (v) => v };
    default: return { label: `${base} (s)`, conv: (v) => v };
  }
}

// Nested values flattened to dotted keys; arrays of plain values joined.
function flatten(v, prefix, out) {
  if (v && typeof v === 'object' && !Array.isArray(v)) {
    for (const k of Object.keys(v)) flatten(v[k], prefix ? `${prefix}.${k}` : k, out);
  } else if (Array.isArray(v) && v.some((x) => x && typeof x === 'object')) {
    out[prefix] = `${v.length} item${v.length === 1 ? '' : 's'}`;
  } else out[prefix] = v;
  return out;
}

export function resultEvents() {
  const table = $('dataset-table');
  table.addEventListener('click', (ev) => {
    const tr = ev.target.closest('tr[data-row]');
    if (tr) goToRow(Number(tr.dataset.row));
  });
  table.addEventListener('keydown', (ev) => {
    const tr = ev.target.closest('tr[data-row]');
    if (!tr) return;
    if (ev.key === 'Enter' || ev.key === ' ') {
      ev.preventDefault();
      goToRow(Number(tr.dataset.row));
    } else if (ev.key === 'ArrowDown' || ev.key === 'ArrowUp') {
      ev.preventDefault();
      const next = ev.key === 'ArrowDown' ? tr.nextElementSibling : tr.previousElementSibling;
      if (next && next.dataset.row) {
        tr.tabIndex = -1;
        next.tabIndex = 0;
        next.focus();
      }
    }
  });
  const turn = (by) => {
    app.result.page += by;
    renderResultPage();
    $('table-scroll').scrollTop = 0;
  };
  $('page-prev').addEventListener('click', () => turn(-1));
  $('page-next').addEventListener('click', () => turn(1));
  $('dataset-select').addEventListener('change', () => {
    const d = app.datasets.find((x) => x.id === $('dataset-select').value);
    renderDataset(d || null);
  });
  $('dataset-csv').addEventListener('click', downloadCsv);
}
