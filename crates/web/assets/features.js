// The features of the shown plot: GeoJSON turned into things to draw (with the links between
// them: sensors and arcs to their host track, narrative to platforms), the feature list, and
// the selection.
import { $, activeState, api, app, report } from './state.js';
import { M_PER_DEG, durationMs, esc, fmtSpan, fmtSpanShort, isoMs, marks, pick } from './format.js';
import { requestDraw, zoomTo } from './map.js';
import { renderReadout } from './time.js';
import { renderToolTargets } from './tools.js';
import { onState } from './plot.js';

export function fid(f) {
  if (typeof f.id === 'string') return f.id;
  if (typeof f.id === 'number') return String(f.id);
  const p = f.properties || {};
  return p.id != null ? String(p.id) : '';
}

function flat(coords) {
  const a = new Float64Array(coords.length * 2);
  let n = 0;
  for (const c of coords) {
    if (Array.isArray(c) && typeof c[0] === 'number' && typeof c[1] === 'number') {
      a[n++] = c[0];
      a[n++] = c[1];
    }
  }
  return n === a.length ? a : a.slice(0, n);
}

function collect(g, d) {
  if (!g || typeof g !== 'object') return;
  const c = g.coordinates;
  switch (g.type) {
    case 'Point':
      if (Array.isArray(c) && c.length >= 2) d.points.push([c[0], c[1]]);
      break;
    case 'MultiPoint':
      for (const p of c || []) if (Array.isArray(p) && p.length >= 2) d.points.push([p[0], p[1]]);
      break;
    case 'LineString':
      d.lines.push(flat(c || []));
      break;
    case 'MultiLineString':
      for (const l of c || []) d.lines.push(flat(l));
      break;
    case 'Polygon':
      d.polys.push((c || []).map(flat));
      break;
    case 'MultiPolygon':
      for (const p of c || []) d.polys.push((p || []).map(flat));
      break;
    case 'GeometryCollection':
      for (const x of g.geometries || []) collect(x, d);
      break;
    default:
      break;
  }
}

function bboxOf(d) {
  let w = Infinity, s = Infinity, e = -Infinity, n = -Infinity;
  const add = (x, y) => { if (x < w) w = x; if (x > e) e = x; if (y < s) s = y; if (y > n) n = y; };
  for (const p of d.points) add(p[0], p[1]);
  for (const l of d.lines) for (let i = 0; i < l.length; i += 2) add(l[i], l[i + 1]);
  for (const p of d.polys) for (const r of p) for (let i = 0; i < r.length; i += 2) add(r[i], r[i + 1]);
  return isFinite(w) ? [w, s, e, n] : null;
}

export function prepare(f, row) {
  const p = f.properties || {};
  const st = p.style || {};
  const kind = p.kind || '';
  const d = {
    id: fid(f), kind, name: row ? row.name : fid(f),
    points: [], lines: [], polys: [],
    color: '#1f4e9a', width: 2, dash: null, fill: null, fillOpacity: 0.15,
    shape: 'circle', radius: 4, labels: [], symbols: [], text: null,
  };
  collect(f.geometry, d);
  if (kind === 'TRACK') {
    const line = st.line || {};
    const pt = st.point || {};
    const dps = p.default_position_style || {};
    d.color = pick(line.color, st.color, pt.color, '#1f4e9a');
    d.width = Number(pick(line.weight, st.weight, 2)) || 2;
    if (typeof line.dash_array === 'string') {
      const dash = line.dash_array.split(/[ ,]+/).map(Number).filter((x) => x > 0);
      if (dash.length) d.dash = dash;
    }
    d.shape = pick(dps.symbol, pt.shape, 'circle');
    d.radius = Number(pick(pt.radius, 3)) || 3;
    d.symbolFill = pick(pt.fill_color, d.color);
    // times parallel to the coordinates (positions[i] ↔ coordinate i, across segments)
    const pos = Array.isArray(p.positions) ? p.positions : [];
    if (d.lines.length === 1) d.flat = d.lines[0];
    else {
      const total = d.lines.reduce((a, l) => a + l.length, 0);
      d.flat = new Float64Array(total);
      let o = 0;
      for (const l of d.lines) { d.flat.set(l, o); o += l.length; }
    }
    const n = Math.min(d.flat.length / 2, pos.length);
    const labelEvery = durationMs(p.label_interval);
    const symbolEvery = durationMs(p.symbol_interval);
    const cache = new Float64Array(n).fill(NaN);
    const timeAt = (i) => {
      let t = cache[i];
      if (t !== t) {
        const x = pos[i];
        t = cache[i] = x && x.time ? isoMs(x.time) : NaN;
      }
      return t;
    };
    d.timeAt = timeAt;
    d.n = n;
    d.pos = pos;
    // the map view sends course and speed as arrays beside the positions
    const courses = Array.isArray(p.position_courses) ? p.position_courses : null;
    const speeds = Array.isArray(p.position_speeds) ? p.position_speeds : null;
    d.courseAt = (i) => (courses ? courses[i] : pos[i] && pos[i].course);
    d.speedAt = (i) => (speeds ? speeds[i] : pos[i] && pos[i].speed);
    if (labelEvery) for (const i of marks(n, timeAt, labelEvery)) d.labels.push([i, labelText(timeAt(i), labelEvery)]);
    if (dps.show_symbol && symbolEvery) d.symbols = marks(n, timeAt, symbolEvery);
    const overrides = p.position_style_overrides;
    if (Array.isArray(overrides)) {
      for (let i = 0; i < Math.min(n, overrides.length); i++) {
        const o = overrides[i];
        if (o && o.show_symbol) d.symbols.push(i);
        if (o && o.show_label && o.label) d.labels.push([i, String(o.label)]);
      }
    }
  } else if (kind === 'POINT') {
    d.color = pick(st.color, st.fill_color, '#b45309');
    d.symbolFill = pick(st.fill_color, d.color);
    d.shape = pick(p.symbol, st.shape, 'circle');
    d.radius = Number(pick(st.radius, 4)) || 4;
    d.text = row ? row.name : d.id;
  } else {
    const line = st.line || {};
    d.color = pick(st.color, line.color, st.stroke, '#4b5563');
    d.width = Number(pick(st.weight, line.weight, 1.5)) || 1.5;
    const fillOn = st.fill === true || (st.fill !== false && st.fill_color);
    if (fillOn) {
      d.fill = pick(st.fill_color, d.color);
      d.fillOpacity = Number(pick(st.fill_opacity, 0.15));
    }
    if (typeof st.dash_array === 'string') {
      const dash = st.dash_array.split(/[ ,]+/).map(Number).filter((x) => x > 0);
      if (dash.length) d.dash = dash;
    }
    d.text = kind === 'TEXT' ? pick(p.text, p.label) : pick(p.label, p.name);
    d.shape = pick(p.symbol, st.shape, 'circle');
    d.symbolFill = pick(st.fill_color, d.color);
  }
  d.props = p;
  d.t0 = p.start_time ? isoMs(p.start_time) : null;
  d.t1 = p.end_time ? isoMs(p.end_time) : null;
  d.tAt = p.time ? isoMs(p.time) : null;
  if (d.t0 !== d.t0) d.t0 = null;
  if (d.t1 !== d.t1) d.t1 = null;
  if (d.tAt !== d.tAt) d.tAt = null;
  const radius = Number(p.radius);
  if ((kind === 'CIRCLE' || kind === 'ELLIPSE') && d.points.length === 1 && !d.polys.length && !d.lines.length) {
    const [lon, lat] = d.points[0];
    if (kind === 'CIRCLE' && radius > 0) d.circle = { lon, lat, a: radius, b: radius, rot: 0 };
    else if (kind === 'ELLIPSE' && Number(p.maxima) > 0) {
      // maxima/minima: the semi-axes in metres; orientation: the major axis, degrees from north
      d.circle = { lon, lat, a: Number(p.maxima), b: Number(p.minima) > 0 ? Number(p.minima) : Number(p.maxima), rot: Number(p.orientation) || 0 };
    }
    if (d.circle) d.points = [];
  }
  if (Array.isArray(p.sensors)) {
    d.sensors = p.sensors.map((sn) => ({
      name: sn.name || 'sensor',
      color: sn.color || d.color,
      contacts: (Array.isArray(sn.contacts) ? sn.contacts : []).map((c) => ({
        t: isoMs(c.time), bearing: Number(c.bearing), range: c.range != null ? Number(c.range) : null,
        origin: Array.isArray(c.origin) ? c.origin : null,
      })).filter((c) => c.t === c.t && isFinite(c.bearing)).sort((a, b) => a.t - b.t),
    }));
  }
  if (kind === 'SENSOR_ARC') {
    d.arcs = Array.isArray(p.arcs) ? p.arcs : [];
    d.color = pick(p.color, d.color);
    d.fill = d.color;
  }
  if (kind === 'TRACK' && d.n) {
    d.ts = d.timeAt(0);
    d.te = d.timeAt(d.n - 1);
  }
  d.bbox = bboxOf(d);
  if (d.circle) {
    const c = d.circle;
    const dy = Math.max(c.a, c.b) / M_PER_DEG;
    const dx = dy / Math.max(0.05, Math.cos((c.lat * Math.PI) / 180));
    d.bbox = [c.lon - dx, c.lat - dy, c.lon + dx, c.lat + dy];
  }
  return d;
}

// Index of the last position at or before t (-1 before the first), by binary search.
export function posIndex(d, t) {
  let lo = 0, hi = d.n - 1;
  if (!d.n || !(d.timeAt(0) <= t)) return -1;
  if (d.timeAt(hi) <= t) return hi;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (d.timeAt(mid) <= t) lo = mid; else hi = mid - 1;
  }
  return lo;
}

// A track's state at time t: {lon, lat, course, speed, t, i}, interpolated between positions;
// null outside the track's time span.
export function trackAt(d, t) {
  if (!d || d.kind !== 'TRACK' || !d.n) return null;
  if (t === null || t === undefined) {
    const i = d.n - 1;
    return { lon: d.flat[2 * i], lat: d.flat[2 * i + 1], course: d.courseAt(i), speed: d.speedAt(i), t: d.timeAt(i), i };
  }
  const i = posIndex(d, t);
  if (i < 0 || t > d.te) return null;
  let lon = d.flat[2 * i], lat = d.flat[2 * i + 1];
  if (i + 1 < d.n) {
    const ta = d.timeAt(i), tb = d.timeAt(i + 1);
    if (tb > ta) {
      const f = (t - ta) / (tb - ta);
      lon += (d.flat[2 * i + 2] - lon) * f;
      lat += (d.flat[2 * i + 3] - lat) * f;
    }
  }
  return { lon, lat, course: d.courseAt(i), speed: d.speedAt(i), t, i };
}

// The point `range` metres from (lon, lat) on `bearing` degrees (flat earth: fine for the
// tens of miles a plot spans).
export function offset(lon, lat, bearing, range) {
  const b = (bearing * Math.PI) / 180;
  const dlat = (range * Math.cos(b)) / M_PER_DEG;
  const dlon = (range * Math.sin(b)) / (M_PER_DEG * Math.max(0.05, Math.cos((lat * Math.PI) / 180)));
  return [lon + dlon, lat + dlat];
}

function labelText(t, every) {
  const day = Math.floor(t / 86400000);
  const minutes = Math.floor((t - day * 86400000) / 60000);
  const hhmm = String(Math.floor(minutes / 60)).padStart(2, '0') + String(minutes % 60).padStart(2, '0');
  if (every < 86400000) return hhmm;
  return `${String(new Date(day * 86400000).getUTCDate()).padStart(2, '0')} ${hhmm}`;
}

export async function setSelection(ids) {
  const a = activeState();
  app.selected = new Set(ids);
  markRows();
  requestDraw();
  renderToolTargets();
  if (!a || app.review) return; // a reviewed session's selection is only shown here
  try {
    onState(await api('POST', '/api/select', { plotId: a.plotId, ids }));
  } catch (e) {
    report(e);
  }
}

export function selectId(id, additive) {
  const a = activeState();
  if (!a) return;
  let ids;
  if (additive) {
    const raw = a.selection.slice();
    const at = raw.indexOf(id);
    if (at >= 0) raw.splice(at, 1);
    else if (app.selected.has(id)) {
      // selected through a nested path: drop those
      ids = raw.filter((s) => !(s === id || s.startsWith(`${id}/`)));
    } else raw.push(id);
    ids = ids || raw;
  } else {
    ids = id ? [id] : [];
  }
  setSelection(ids);
}

// ---------------------------------------------------------------------------------------------
// feature list

export function renderFeatures() {
  const body = $('feature-rows');
  const filter = $('feature-filter').value.trim().toLowerCase();
  const rows = app.inventory.filter((r) => !filter || `${r.name} ${r.kind} ${r.platform || ''} ${r.id}`.toLowerCase().includes(filter));
  $('feature-count').textContent = app.inventory.length ? `(${rows.length}${rows.length !== app.inventory.length ? ` of ${app.inventory.length}` : ''})` : '';
  const frag = document.createDocumentFragment();
  rows.forEach((r, i) => {
    const tr = document.createElement('tr');
    tr.className = 'row';
    tr.dataset.id = r.id;
    tr.tabIndex = i === 0 ? 0 : -1;
    tr.setAttribute('aria-selected', String(app.selected.has(r.id)));
    const d = app.byId.get(r.id);
    const swatch = d && d.bbox ? `<span class="swatch" data-color="1"></span>` : '';
    const platform = r.platform ? `<span class="platform">${esc(r.platform)}</span>` : '';
    tr.innerHTML = `<td class="name" title="${esc(r.name)} (${esc(r.id)})"><span class="n">${swatch}${esc(r.name)}</span>${platform}</td><td>${esc(r.kind)}</td><td class="span" title="${esc(fmtSpan(r.start, r.end))}">${esc(fmtSpanShort(r.start, r.end))}</td>`;
    if (swatch) tr.querySelector('.swatch').style.background = d.kind === 'TRACK' ? d.color : d.symbolFill || d.color;
    frag.appendChild(tr);
  });
  body.replaceChildren(frag);
  app.focusRow = 0;
}

export function markRows() {
  for (const tr of $('feature-rows').children) tr.setAttribute('aria-selected', String(app.selected.has(tr.dataset.id)));
  renderReadout();
}

export function rowEvents() {
  const body = $('feature-rows');
  body.addEventListener('click', (ev) => {
    const tr = ev.target.closest('tr.row');
    if (!tr) return;
    focusRow(tr);
    selectId(tr.dataset.id, ev.shiftKey || ev.metaKey || ev.ctrlKey);
  });
  body.addEventListener('dblclick', (ev) => {
    const tr = ev.target.closest('tr.row');
    const d = tr && app.byId.get(tr.dataset.id);
    if (d && d.bbox) zoomTo(d.bbox);
  });
  body.addEventListener('keydown', (ev) => {
    const tr = ev.target.closest('tr.row');
    if (!tr) return;
    if (ev.key === 'ArrowDown' || ev.key === 'ArrowUp') {
      ev.preventDefault();
      const next = ev.key === 'ArrowDown' ? tr.nextElementSibling : tr.previousElementSibling;
      if (next) focusRow(next, true);
    } else if (ev.key === 'Enter' || ev.key === ' ') {
      ev.preventDefault();
      selectId(tr.dataset.id, ev.shiftKey);
    } else if (ev.key === 'Home' || ev.key === 'End') {
      ev.preventDefault();
      const t = ev.key === 'Home' ? body.firstElementChild : body.lastElementChild;
      if (t) focusRow(t, true);
    }
  });
  $('feature-filter').addEventListener('input', renderFeatures);
}

function focusRow(tr, move) {
  for (const r of $('feature-rows').querySelectorAll('tr[tabindex="0"]')) r.tabIndex = -1;
  tr.tabIndex = 0;
  if (move) tr.focus();
}

export function link() {
  const tracks = new Map();
  for (const d of app.drawables) {
    if (d.kind !== 'TRACK') continue;
    const p = d.props;
    for (const k of [d.id, d.name, p.name, p.platform_id, p.platform_name, p.track_name]) {
      if (k && !tracks.has(String(k).toLowerCase())) tracks.set(String(k).toLowerCase(), d);
    }
  }
  const find = (...keys) => {
    for (const k of keys) if (k && tracks.has(String(k).toLowerCase())) return tracks.get(String(k).toLowerCase());
    return null;
  };
  app.narrative = [];
  for (const d of app.drawables) {
    const p = d.props;
    if (d.kind === 'SENSOR') d.host = find(p.platform_id, p.track_id, p.track_name);
    if (d.kind === 'SENSOR_ARC') d.host = find(p.track_id, p.track_name);
    if (d.kind === 'NARRATIVE' && d.tAt !== null) {
      const host = find(p.track_id, p.track_name, p.platform_id);
      app.narrative.push({ t: d.tAt, id: d.id, text: String(p.text || ''), platform: host ? host.name : p.track_name || p.platform_id || '', type: p.entry_type || '' });
    }
  }
  app.narrative.sort((a, b) => a.t - b.t);
}
