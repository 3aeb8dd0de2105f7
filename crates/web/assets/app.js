// toolgate workbench — the page. Plain JavaScript, no libraries, nothing fetched from anywhere
// but this server. The map is drawn on a canvas by the code below.
'use strict';

(() => {
  const $ = (id) => document.getElementById(id);
  const NS = 'http://www.w3.org/2000/svg';

  // ---------------------------------------------------------------------------------------------
  // state

  const stats = {
    loadedAt: null, // performance.now() when the first plot of this page load was drawn
    firstRenderMs: null, // ms from navigation start to the first drawn plot
    openToRenderMs: null, // ms from the last Open click to that plot drawn
    draws: [], // ms per map draw (last 1000)
    renders: 0,
    plotLoads: 0,
    landLoadedMs: null, // performance.now() when the coastline was read
    firstRenderWithLandMs: null, // the first plot drawn with its coastline
  };
  const app = {
    config: null,
    state: null, // StateView from the server
    plot: null, // PlotView of the shown plot (without the features kept twice)
    drawables: [],
    byId: new Map(),
    inventory: [],
    selected: new Set(),
    view: null, // {cx, cy, s, k}
    openRequestedAt: null,
    loading: null,
    reloadWanted: false,
    datasets: [],
    datasetShown: null,
    chatBusy: false,
    confirmId: null,
    focusRow: 0,
    // the time controller: plot time extent (ms), current time, step and trail window (ms)
    time: { start: null, end: null, now: null, step: 300000, trail: 0, playing: false },
    narrative: [], // [{t, time, text, platform, id}] in time order
    narrativeAt: -1,
    tools: [],
    toolShown: null,
    toolBusy: false,
    sessions: [],
    sessionsKey: '',
    activitySeq: -1,
    review: null, // {session, plotId}: another session's plot shown for review
    details: null, // id of the feature whose details are shown
    // the one unit setting (the server's, `/api/settings`, which tool runs without a unit of
    // their own also take): every distance and speed the page shows — map, readout, details,
    // results, charts, CSV
    units: { dist: 'nm', speed: 'kn' },
    // the shown list result: its rows, the page of the table, the row clicked last, and the
    // positions ringed on the map ({lon, lat} per row, or null)
    result: { id: null, rows: [], page: 0, row: -1, marks: [], gen: 0 },
  };
  window.__workbench = { stats, app };


  class ApiFailure extends Error {
    constructor(message, status, code) {
      super(message);
      this.status = status;
      this.code = code;
    }
  }

  async function api(method, path, body) {
    const opts = { method, headers: { Accept: 'application/json' } };
    if (body !== undefined) {
      opts.headers['Content-Type'] = 'application/json';
      opts.body = JSON.stringify(body);
    }
    const res = await fetch(path, opts);
    let data = null;
    try {
      data = await res.json();
    } catch (_) {
      data = null;
    }
    if (!res.ok) {
      const msg = (data && typeof data.error === 'string' && data.error) || `The server answered ${res.status}.`;
      throw new ApiFailure(msg, res.status, data && data.code);
    }
    return data;
  }

  let toastTimer = null;
  function toast(message, bad) {
    const t = $('toast');
    t.textContent = message;
    t.classList.toggle('bad', !!bad);
    t.hidden = false;
    clearTimeout(toastTimer);
    toastTimer = setTimeout(() => { t.hidden = true; }, bad ? 8000 : 3500);
  }

  function report(e) {
    // Only the message: never a stack trace.
    toast(e && e.message ? e.message : String(e), true);
  }

  // ---------------------------------------------------------------------------------------------
  // helpers

  function esc(s) {
    return String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
  }

  function fmtTime(iso) {
    if (!iso) return '';
    const d = new Date(iso);
    if (isNaN(d)) return iso;
    return d.toISOString().replace('T', ' ').slice(0, 16);
  }

  // "03-02 00:00–06:00": the feature list's short form (the full one is in the title).
  function fmtSpanShort(a, b) {
    if (!a) return '';
    const A = fmtTime(a).slice(5);
    const B = fmtTime(b).slice(5);
    if (!b || A === B) return A;
    return A.slice(0, 5) === B.slice(0, 5) ? `${A}–${B.slice(6)}` : `${A}–${B}`;
  }

  function fmtSpan(a, b) {
    if (!a) return '';
    const A = fmtTime(a);
    const B = fmtTime(b);
    if (!b || A === B) return A;
    return A.slice(0, 10) === B.slice(0, 10) ? `${A}–${B.slice(11)}` : `${A} – ${B}`;
  }

  // ISO-8601 duration (PnDTnHnMnS) in ms; null when unreadable.
  function durationMs(s) {
    if (typeof s !== 'string') return null;
    const m = /^P(?:(\d+(?:\.\d+)?)W)?(?:(\d+(?:\.\d+)?)D)?(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)?$/.exec(s);
    if (!m) return null;
    const [w, d, h, mi, se] = m.slice(1).map((x) => (x ? parseFloat(x) : 0));
    const ms = ((((w * 7 + d) * 24 + h) * 60 + mi) * 60 + se) * 1000;
    return ms > 0 ? ms : null;
  }

  // Milliseconds of an ISO-8601 date-time. The common shapes (YYYY-MM-DDTHH:MM[:SS[.fff]] with
  // Z or ±HH:MM) are read by hand, which is several times faster than Date.parse on big plots.
  function digits(s, i, len) {
    let v = 0;
    for (let k = i; k < i + len; k++) {
      const c = s.charCodeAt(k) - 48;
      if (c < 0 || c > 9) return NaN;
      v = v * 10 + c;
    }
    return v;
  }

  function isoMs(s) {
    if (typeof s !== 'string' || s.length < 16 || s.charCodeAt(10) !== 84 /* T */) return Date.parse(s);
    let i = 16;
    let sec = 0, ms = 0;
    if (s.charCodeAt(i) === 58 /* : */) {
      sec = digits(s, 17, 2);
      i = 19;
      if (s.charCodeAt(i) === 46 /* . */) {
        let j = i + 1, frac = 0, scale = 100;
        for (let c = s.charCodeAt(j) - 48; c >= 0 && c <= 9; c = s.charCodeAt(++j) - 48) {
          frac += c * scale;
          scale /= 10;
        }
        ms = Math.round(frac);
        i = j;
      }
    }
    let off = 0;
    const z = s.charCodeAt(i);
    if (z === 43 || z === 45) { // + or -
      const h = digits(s, i + 1, 2);
      const m = s.charCodeAt(i + 3) === 58 ? digits(s, i + 4, 2) : digits(s, i + 3, 2);
      off = (z === 43 ? 1 : -1) * (h * 60 + m) * 60000;
    } else if (z === z && z !== 90 /* Z */) {
      return Date.parse(s);
    }
    const t = Date.UTC(digits(s, 0, 4), digits(s, 5, 2) - 1, digits(s, 8, 2), digits(s, 11, 2), digits(s, 14, 2), sec, ms) - off;
    return t === t ? t : Date.parse(s);
  }

  // Indices of the first position in each `every`-long time bucket, for positions in time order.
  // Binary search, so only a few times per mark are read.
  function marks(n, timeAt, every) {
    const out = [];
    let i = 0;
    while (i < n && !isFinite(timeAt(i))) i++;
    if (i >= n) return out;
    out.push(i);
    for (;;) {
      const target = (Math.floor(timeAt(i) / every) + 1) * every;
      let lo = i + 1, hi = n;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (timeAt(mid) >= target) hi = mid; else lo = mid + 1;
      }
      if (lo >= n) break;
      out.push(lo);
      i = lo;
    }
    return out;
  }

  function activeState() {
    const st = app.state;
    if (!st || !st.activePlot) return null;
    return st.plots.find((p) => p.plotId === st.activePlot) || null;
  }

  function fid(f) {
    if (typeof f.id === 'string') return f.id;
    if (typeof f.id === 'number') return String(f.id);
    const p = f.properties || {};
    return p.id != null ? String(p.id) : '';
  }

  // ---------------------------------------------------------------------------------------------
  // turning GeoJSON into things to draw

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

  function pick(...vals) {
    for (const v of vals) if (v !== undefined && v !== null && v !== '') return v;
    return undefined;
  }

  function prepare(f, row) {
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

  const M_PER_DEG = 111320; // metres per degree of latitude (and of longitude at the equator)
  const M_PER_NM = 1852;
  // the unit setting's choices, as the server's unit setting names them
  const M_PER = { nm: M_PER_NM, yd: 0.9144, m: 1, km: 1000 }; // metres per distance unit
  const MPS_PER = { kn: M_PER_NM / 3600, 'm/s': 1, 'km/h': 1 / 3.6 }; // metres a second per speed unit
  const CONTACT_WINDOW = 15 * 60000; // bearing lines and instant shapes without a trail window

  // Index of the last position at or before t (-1 before the first), by binary search.
  function posIndex(d, t) {
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
  function trackAt(d, t) {
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
  function offset(lon, lat, bearing, range) {
    const b = (bearing * Math.PI) / 180;
    const dlat = (range * Math.cos(b)) / M_PER_DEG;
    const dlon = (range * Math.sin(b)) / (M_PER_DEG * Math.max(0.05, Math.cos((lat * Math.PI) / 180)));
    return [lon + dlon, lat + dlat];
  }

  // Whether a feature is shown at the controller's time: time-bounded ones only in their
  // interval, instants within the trail window (or 15 minutes) before now.
  function inTime(d) {
    const t = app.time.now;
    if (t === null || d.kind === 'TRACK') return true;
    if (d.t0 !== null || d.t1 !== null) return (d.t0 === null || t >= d.t0) && (d.t1 === null || t <= d.t1);
    if (d.tAt !== null) return d.tAt <= t && t - d.tAt <= (app.time.trail || CONTACT_WINDOW);
    return true;
  }

  function labelText(t, every) {
    const day = Math.floor(t / 86400000);
    const minutes = Math.floor((t - day * 86400000) / 60000);
    const hhmm = String(Math.floor(minutes / 60)).padStart(2, '0') + String(minutes % 60).padStart(2, '0');
    if (every < 86400000) return hhmm;
    return `${String(new Date(day * 86400000).getUTCDate()).padStart(2, '0')} ${hhmm}`;
  }

  // ---------------------------------------------------------------------------------------------
  // the map

  const canvas = $('map');
  const mainCtx = canvas.getContext('2d');
  // The chart — sea, land, graticule — is drawn once per view into `base`. What does not change
  // with the controller's time is drawn over a copy of it, once per view, into `layer`; each
  // frame copies that and draws the time-dependent part over it.
  const base = document.createElement('canvas');
  const baseCtx = base.getContext('2d');
  let baseKey = null;
  const layer = document.createElement('canvas');
  const layerCtx = layer.getContext('2d');
  let layerKey = null;
  let ctx = mainCtx;
  const SEA = '#dfe9f3';
  const LAND = '#ece4cc';
  const COAST = '#8c7f5c';

  // ---------------------------------------------------------------------------------------------
  // the coastline: Natural Earth's 1:50m land (public domain; assets/land/NOTICE.md), served by
  // this server as rings of points (assets/land/make-land.js says how the file is made and laid
  // out). Each ring: {a: [lon, lat, …], bbox}.
  const land = { rings: null, gen: 0, failed: null };

  function decodeLand(buf) {
    const dv = new DataView(buf);
    const magic = String.fromCharCode(...new Uint8Array(buf, 0, Math.min(8, buf.byteLength)));
    if (buf.byteLength < 48 || magic !== 'TGLAND01') throw new Error('the coastline file is not readable');
    const R = dv.getUint32(8, true), P = dv.getUint32(12, true);
    const sx = dv.getFloat64(16, true), sy = dv.getFloat64(24, true);
    const tx = dv.getFloat64(32, true), ty = dv.getFloat64(40, true);
    if (buf.byteLength !== 48 + R * 12 + (P - R) * 4) throw new Error('the coastline file is cut short');
    const table = new Int32Array(buf, 48, R * 3);
    const steps = new Int16Array(buf, 48 + R * 12, (P - R) * 2);
    const rings = [];
    let k = 0;
    for (let r = 0; r < R; r++) {
      const n = table[3 * r];
      let x = table[3 * r + 1], y = table[3 * r + 2];
      const a = new Float64Array(2 * n);
      let w = Infinity, s = Infinity, e = -Infinity, no = -Infinity;
      for (let i = 0; i < n; i++) {
        if (i) {
          x += steps[k++];
          y += steps[k++];
        }
        const lon = x * sx + tx, lat = y * sy + ty;
        a[2 * i] = lon;
        a[2 * i + 1] = lat;
        if (lon < w) w = lon;
        if (lon > e) e = lon;
        if (lat < s) s = lat;
        if (lat > no) no = lat;
      }
      rings.push({ a, bbox: [w, s, e, no] });
    }
    return rings;
  }

  async function loadLand() {
    try {
      const res = await fetch('/assets/land-50m.bin');
      if (!res.ok) throw new Error(`the server answered ${res.status}`);
      land.rings = decodeLand(await res.arrayBuffer());
      land.gen++;
      stats.landLoadedMs = performance.now();
      requestDraw();
    } catch (e) {
      land.failed = e.message;
      $('map-status').textContent = `No coastline: ${e.message}.`;
    }
  }

  // The land in view, filled, with its coastline: rings outside the view or smaller than a pixel
  // are skipped, and points closer than a pixel to the last one drawn are left out. The ring
  // edges that run along the map's edge (where a ring is led round the antimeridian) are filled
  // but not drawn as coast.
  function drawLand() {
    if (!land.rings || !app.view) return 0;
    const { cx, cy, s, k } = app.view;
    const ks = k * s, hw = W / 2, hh = H / 2;
    const w = LON(0), e = LON(W), n = LAT(0), so = LAT(H);
    const edge = (lon, lat) => lon <= -179.999 || lon >= 179.999 || lat <= -89.99 || lat >= 89.99;
    const fill = new Path2D(), coast = new Path2D();
    let drawn = 0;
    for (const r of land.rings) {
      const b = r.bbox;
      if (b[2] < w || b[0] > e || b[3] < so || b[1] > n) continue;
      if ((b[2] - b[0]) * ks < 1 && (b[3] - b[1]) * s < 1) continue;
      const a = r.a;
      let px = (a[0] - cx) * ks + hw, py = hh - (a[1] - cy) * s;
      let onEdge = edge(a[0], a[1]);
      fill.moveTo(px, py);
      coast.moveTo(px, py);
      for (let i = 2; i < a.length; i += 2) {
        const x = (a[i] - cx) * ks + hw, y = hh - (a[i + 1] - cy) * s;
        const here = edge(a[i], a[i + 1]);
        if (!(here && onEdge) && (x - px) * (x - px) + (y - py) * (y - py) < 0.64) continue;
        fill.lineTo(x, y);
        if (here && onEdge) coast.moveTo(x, y);
        else coast.lineTo(x, y);
        px = x;
        py = y;
        onEdge = here;
      }
      fill.closePath();
      drawn++;
    }
    ctx.fillStyle = LAND;
    ctx.fill(fill, 'evenodd');
    ctx.strokeStyle = COAST;
    ctx.lineWidth = 1;
    ctx.stroke(coast);
    return drawn;
  }

  // Sea, land and graticule for the current view, into `base` (kept while the view is the same).
  function drawBase() {
    const key = app.view ? [app.view.cx, app.view.cy, app.view.s, app.view.k, W, H, dpr, land.gen].join(',') : `none,${W},${H},${dpr}`;
    if (key === baseKey && base.width === canvas.width && base.height === canvas.height) return;
    base.width = canvas.width;
    base.height = canvas.height;
    const keep = ctx;
    ctx = baseCtx;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.fillStyle = SEA;
    ctx.fillRect(0, 0, W, H);
    if (app.view) {
      const rings = drawLand();
      canvas.dataset.landRings = String(rings);
      graticule();
    }
    ctx = keep;
    baseKey = key;
  }
  let W = 0, H = 0, dpr = 1;
  let frameWanted = false;

  function requestDraw() {
    if (frameWanted) return;
    frameWanted = true;
    requestAnimationFrame(() => {
      frameWanted = false;
      draw();
    });
  }

  // The canvas's size from its box (a layout change — the time controller appearing, a window
  // resize — changes it).
  function measureCanvas() {
    const r = canvas.getBoundingClientRect();
    dpr = window.devicePixelRatio || 1;
    W = Math.max(1, Math.round(r.width));
    H = Math.max(1, Math.round(r.height));
    if (canvas.width !== Math.round(W * dpr)) canvas.width = Math.round(W * dpr);
    if (canvas.height !== Math.round(H * dpr)) canvas.height = Math.round(H * dpr);
  }

  function resize() {
    measureCanvas();
    // a view that was fitted (on open, by Fit or 0) and not moved since stays fitted
    if (app.view && (app.view.auto || !app.view.fitted)) fit(app.view.box);
    draw();
  }

  function plotBbox() {
    let b = null;
    for (const d of app.drawables) {
      if (!d.bbox) continue;
      b = b ? [Math.min(b[0], d.bbox[0]), Math.min(b[1], d.bbox[1]), Math.max(b[2], d.bbox[2]), Math.max(b[3], d.bbox[3])] : d.bbox.slice();
    }
    return b || (app.plot && app.plot.bbox) || [-10, 45, 10, 60];
  }

  // The parts of the map its overlays cover, in CSS px: the legend (top left), the zoom buttons
  // (top right), the scale bar and the graticule's labels (bottom).
  function overlays() {
    const m = canvas.getBoundingClientRect();
    const out = { legendW: 0, legendH: 0, right: 0, bottom: 26 };
    const lg = $('legend');
    if (!lg.hidden) {
      const g = lg.getBoundingClientRect();
      if (g.width) {
        out.legendW = g.right - m.left + 6;
        out.legendH = g.bottom - m.top + 6;
      }
    }
    const t = document.querySelector('.map-tools').getBoundingClientRect();
    if (t.width) out.right = m.right - t.left + 6;
    return out;
  }

  // Fit `bbox` (default: the plot) into the part of the map no overlay covers: beside the legend
  // or below it, whichever shows the plot larger.
  function fit(bbox, auto = true) {
    const b = bbox || plotBbox();
    const bcy = (b[1] + b[3]) / 2;
    const k = app.plotK || Math.max(0.05, Math.cos((bcy * Math.PI) / 180));
    const dx = Math.max((b[2] - b[0]) * k, 1e-4);
    const dy = Math.max(b[3] - b[1], 1e-4);
    const o = overlays();
    let best = null;
    for (const [l, t] of [[o.legendW, 0], [0, o.legendH]]) {
      const w = Math.max(W - l - o.right, W * 0.3), h = Math.max(H - t - o.bottom, H * 0.3);
      const s = Math.min((w * 0.92) / dx, (h * 0.92) / dy);
      if (!best || s > best.s) best = { s, x: l + w / 2, y: t + h / 2 };
    }
    const s = best.s;
    // the box's centre at the middle of the free part
    const cx = (b[0] + b[2]) / 2 - (best.x - W / 2) / (k * s);
    const cy = bcy + (best.y - H / 2) / s;
    app.view = { cx, cy, s, k, fitted: W > 1 && H > 1, auto, box: bbox || null };
  }

  const X = (lon) => (lon - app.view.cx) * app.view.k * app.view.s + W / 2;
  const Y = (lat) => H / 2 - (lat - app.view.cy) * app.view.s;
  const LON = (x) => (x - W / 2) / (app.view.k * app.view.s) + app.view.cx;
  const LAT = (y) => (H / 2 - y) / app.view.s + app.view.cy;

  function zoomAt(factor, x, y) {
    if (!app.view) return;
    app.view.auto = false;
    const lon = LON(x), lat = LAT(y);
    app.view.s = Math.min(Math.max(app.view.s * factor, 0.5), 5e6);
    // keep (lon, lat) under (x, y)
    app.view.cx = lon - (x - W / 2) / (app.view.k * app.view.s);
    app.view.cy = lat - (H / 2 - y) / app.view.s;
    requestDraw();
  }

  function panBy(dx, dy) {
    if (!app.view) return;
    app.view.auto = false;
    app.view.cx -= dx / (app.view.k * app.view.s);
    app.view.cy += dy / app.view.s;
    requestDraw();
  }

  const STEPS = [1 / 3600, 5 / 3600, 10 / 3600, 30 / 3600, 1 / 60, 2 / 60, 5 / 60, 10 / 60, 15 / 60, 30 / 60, 1, 2, 5, 10, 15, 30, 45, 90];

  function fmtDeg(v, pos, neg) {
    const h = v < 0 ? neg : pos;
    let a = Math.abs(v);
    let deg = Math.floor(a + 1e-9);
    let min = (a - deg) * 60;
    let sec = Math.round((min - Math.floor(min + 1e-9)) * 60);
    min = Math.floor(min + 1e-9);
    if (sec >= 60) { sec = 0; min += 1; }
    if (min >= 60) { min = 0; deg += 1; }
    let s = `${deg}°`;
    if (min || sec) s += `${String(min).padStart(2, '0')}′`;
    if (sec) s += `${String(sec).padStart(2, '0')}″`;
    return s + h;
  }

  function graticule() {
    const want = 90 / app.view.s; // degrees per ~90 px: finer lines as the map zooms in
    const step = STEPS.find((x) => x >= want) || 90;
    canvas.dataset.graticule = String(step);
    const w = LON(0), e = LON(W), n = LAT(0), s = LAT(H);
    ctx.save();
    ctx.strokeStyle = 'rgba(40, 70, 110, 0.25)';
    ctx.lineWidth = 1;
    ctx.fillStyle = 'rgba(20, 40, 70, 0.75)';
    ctx.font = '11px system-ui, sans-serif';
    ctx.beginPath();
    const lonStart = Math.ceil(w / step) * step;
    for (let lon = lonStart, i = 0; lon <= e && i < 400; lon += step, i++) {
      const x = Math.round(X(lon)) + 0.5;
      ctx.moveTo(x, 0);
      ctx.lineTo(x, H);
    }
    const latStart = Math.ceil(s / step) * step;
    for (let lat = latStart, i = 0; lat <= n && i < 400; lat += step, i++) {
      const y = Math.round(Y(lat)) + 0.5;
      ctx.moveTo(0, y);
      ctx.lineTo(W, y);
    }
    ctx.stroke();
    ctx.textBaseline = 'bottom';
    for (let lon = lonStart, i = 0; lon <= e && i < 400; lon += step, i++) {
      ctx.fillText(fmtDeg(lon, 'E', 'W'), X(lon) + 3, H - 2);
    }
    ctx.textBaseline = 'top';
    for (let lat = latStart, i = 0; lat <= n && i < 400; lat += step, i++) {
      ctx.fillText(fmtDeg(lat, 'N', 'S'), 3, Y(lat) + 2);
    }
    ctx.restore();
  }

  function symbol(shape, x, y, r) {
    ctx.beginPath();
    switch (shape) {
      case 'square':
        ctx.rect(x - r, y - r, 2 * r, 2 * r);
        break;
      case 'triangle':
        ctx.moveTo(x, y - r * 1.2);
        ctx.lineTo(x + r * 1.1, y + r * 0.8);
        ctx.lineTo(x - r * 1.1, y + r * 0.8);
        ctx.closePath();
        break;
      case 'diamond':
        ctx.moveTo(x, y - r * 1.3);
        ctx.lineTo(x + r * 1.3, y);
        ctx.lineTo(x, y + r * 1.3);
        ctx.lineTo(x - r * 1.3, y);
        ctx.closePath();
        break;
      case 'cross':
        ctx.moveTo(x - r, y - r);
        ctx.lineTo(x + r, y + r);
        ctx.moveTo(x + r, y - r);
        ctx.lineTo(x - r, y + r);
        break;
      default:
        ctx.arc(x, y, r, 0, Math.PI * 2);
    }
  }

  function visible(d, m) {
    if (!d.bbox) return false;
    const x1 = X(d.bbox[0]), x2 = X(d.bbox[2]), y1 = Y(d.bbox[3]), y2 = Y(d.bbox[1]);
    return x2 >= -m && x1 <= W + m && y2 >= -m && y1 <= H + m;
  }

  function project(d) {
    d.sx = [];
    for (const l of d.lines) {
      const a = new Float32Array(l.length);
      for (let i = 0; i < l.length; i += 2) {
        a[i] = X(l[i]);
        a[i + 1] = Y(l[i + 1]);
      }
      d.sx.push(a);
    }
    d.sp = d.points.map((p) => [X(p[0]), Y(p[1])]);
    d.spoly = d.polys.map((rings) => rings.map((r) => {
      const a = new Float32Array(r.length);
      for (let i = 0; i < r.length; i += 2) {
        a[i] = X(r[i]);
        a[i + 1] = Y(r[i + 1]);
      }
      return a;
    }));
  }

  function pathLines(d) {
    ctx.beginPath();
    for (const a of d.sx) {
      if (a.length < 2) continue;
      ctx.moveTo(a[0], a[1]);
      for (let i = 2; i < a.length; i += 2) ctx.lineTo(a[i], a[i + 1]);
    }
  }

  function pathPolys(d) {
    ctx.beginPath();
    for (const rings of d.spoly) {
      for (const a of rings) {
        if (a.length < 2) continue;
        ctx.moveTo(a[0], a[1]);
        for (let i = 2; i < a.length; i += 2) ctx.lineTo(a[i], a[i + 1]);
        ctx.closePath();
      }
    }
  }

  const HALO = 'rgba(255, 200, 0, 0.85)';

  // Screen half-axes of a circle/ellipse: metres → degrees of latitude → pixels; east-west the
  // projection's k over the cosine of the centre's latitude.
  function ry(c) { return (c.a / M_PER_DEG) * app.view.s; }

  function pathCircle(d) {
    const c = d.circle;
    const s = app.view.s / M_PER_DEG;
    const kx = app.view.k / Math.max(0.05, Math.cos((c.lat * Math.PI) / 180));
    const a = c.a * s, b = c.b * s;
    ctx.beginPath();
    if (c.a === c.b) ctx.ellipse(X(c.lon), Y(c.lat), Math.max(0.5, a * kx), Math.max(0.5, a), 0, 0, Math.PI * 2);
    // the major axis at `rot` degrees from north: canvas angles start east and turn clockwise
    else ctx.ellipse(X(c.lon), Y(c.lat), Math.max(0.5, a), Math.max(0.5, b), ((c.rot - 90) * Math.PI) / 180, 0, Math.PI * 2);
  }

  const sprites = new Map();

  // Make the marker and name sprites a playing map uses, in idle time after a plot is drawn.
  function warmSprites() {
    const idle = window.requestIdleCallback || ((f) => setTimeout(f, 50));
    const todo = app.drawables.filter((d) => d.kind === 'TRACK');
    const step = (deadline) => {
      while (todo.length && (!deadline || deadline.timeRemaining() > 2)) {
        const d = todo.pop();
        sprite(d.name, d.color, '600 12px system-ui, sans-serif', 14);
        markerSprite(d.shape === 'cross' ? 'circle' : d.shape, d.symbolFill || d.color, d.radius + 2.5);
      }
      if (todo.length) idle(step);
    };
    idle(step);
  }

  // A platform marker (filled symbol, white rim) rendered once: {canvas, half}.
  function markerSprite(shape, fill, r) {
    const key = `${dpr}|m|${shape}|${fill}|${r}`;
    let sp = sprites.get(key);
    if (sp) return sp;
    const half = Math.ceil(r * 1.4 + 2);
    const c = document.createElement('canvas');
    c.width = c.height = Math.ceil(2 * half * dpr);
    const keep = ctx;
    ctx = c.getContext('2d');
    ctx.scale(dpr, dpr);
    ctx.fillStyle = fill;
    symbol(shape, half, half, r);
    ctx.fill();
    ctx.strokeStyle = '#fff';
    ctx.lineWidth = 1.5;
    ctx.stroke();
    ctx = keep;
    sp = { canvas: c, half };
    sprites.set(key, sp);
    return sp;
  }
  const measure = document.createElement('canvas').getContext('2d');

  // A label rendered once at the current pixel ratio: {canvas, w (text width), h}.
  function sprite(text, color, font, h) {
    const key = `${dpr}|${font}|${color}|${text}`;
    let sp = sprites.get(key);
    if (sp) return sp;
    measure.font = font;
    const w = Math.ceil(measure.measureText(text).width);
    const H2 = h + 6;
    const c = document.createElement('canvas');
    c.width = Math.max(1, Math.ceil((w + 6) * dpr));
    c.height = Math.max(1, Math.ceil(H2 * dpr));
    const g = c.getContext('2d');
    g.scale(dpr, dpr);
    g.font = font;
    g.textBaseline = 'middle';
    g.lineJoin = 'round';
    g.lineWidth = 3;
    g.strokeStyle = 'rgba(255, 255, 255, 0.85)';
    g.strokeText(text, 3, H2 / 2);
    g.fillStyle = color;
    g.fillText(text, 3, H2 / 2);
    sp = { canvas: c, w, h: H2 };
    if (sprites.size > 4000) sprites.clear();
    sprites.set(key, sp);
    return sp;
  }

  // [first, last] index of a track's positions inside the trail window; null: the whole track.
  function trailRange(d) {
    if (d.kind !== 'TRACK' || !app.time.trail || app.time.now === null || !d.n) return null;
    const t = app.time.now;
    return [posIndex(d, t - app.time.trail) + 1, posIndex(d, t)];
  }

  function pathTrack(d) {
    const r = trailRange(d);
    if (!r) return pathLines(d);
    ctx.beginPath();
    const a = trackAt(d, app.time.now - app.time.trail);
    const b = trackAt(d, app.time.now);
    let started = false;
    const to = (lon, lat) => {
      if (started) ctx.lineTo(X(lon), Y(lat));
      else { ctx.moveTo(X(lon), Y(lat)); started = true; }
    };
    if (a) to(a.lon, a.lat);
    for (let i = r[0]; i <= r[1]; i++) to(d.flat[2 * i], d.flat[2 * i + 1]);
    if (b) to(b.lon, b.lat);
  }

  // A scale bar in the chosen distance unit, bottom left above the graticule labels.
  function scaleBar() {
    const unit = app.units.dist;
    const pxPerUnit = (M_PER[unit] / M_PER_DEG) * app.view.s;
    const nice = [];
    for (let e = -2; e <= 7; e++) for (const m of [1, 2, 5]) nice.push(m * 10 ** e);
    let nm = nice[0];
    for (const v of nice) if (v * pxPerUnit <= 160) nm = v;
    const w = nm * pxPerUnit;
    const x = 12, y = H - 22;
    const label = `${Number(nm.toPrecision(3)).toLocaleString('en-GB')} ${unit}`;
    ctx.save();
    ctx.font = '600 11px system-ui, sans-serif';
    ctx.fillStyle = 'rgba(255,255,255,0.85)';
    ctx.fillRect(x - 4, y - 16, w + 14 + ctx.measureText(label).width, 22);
    ctx.strokeStyle = '#1b2430';
    ctx.lineWidth = 2;
    ctx.beginPath();
    ctx.moveTo(x, y - 5);
    ctx.lineTo(x, y);
    ctx.lineTo(x + w, y);
    ctx.lineTo(x + w, y - 5);
    ctx.stroke();
    ctx.fillStyle = '#1b2430';
    ctx.font = '600 11px system-ui, sans-serif';
    ctx.textBaseline = 'bottom';
    ctx.fillText(label, x + w + 6, y + 2);
    ctx.restore();
    canvas.dataset.scale = label;
    canvas.dataset.scalePx = String(Math.round(w));
  }

  function draw() {
    const t0 = performance.now();
    ctx = mainCtx;
    drawBase();
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.drawImage(base, 0, 0);
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    if (!app.view || !app.drawables.length) {
      if (app.view) scaleBar();
      return;
    }
    const shown = app.drawables.filter((d) => visible(d, 40) && inTime(d));
    for (const d of app.drawables) d.onScreen = false;
    for (const d of shown) {
      d.onScreen = true;
      project(d);
    }
    // tracks are drawn whole (their markers move); other time-bounded features come and go
    const timed = (d) => d.kind !== 'TRACK' && (d.t0 !== null || d.t1 !== null || d.tAt !== null);
    if (app.time.trail && app.time.now !== null) {
      // trails move with the time: nothing is static but the chart
      resultMarks();
      scene(shown, true, true);
    } else {
      const key = [baseKey, app.drawGen, [...app.selected].join('|'), app.result.gen].join(',');
      if (key !== layerKey || layer.width !== canvas.width || layer.height !== canvas.height) {
        layer.width = canvas.width;
        layer.height = canvas.height;
        ctx = layerCtx;
        ctx.setTransform(1, 0, 0, 1, 0, 0);
        ctx.drawImage(base, 0, 0);
        ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
        resultMarks();
        scene(shown.filter((d) => !timed(d)), true, false);
        ctx = mainCtx;
        layerKey = key;
      }
      ctx.setTransform(1, 0, 0, 1, 0, 0);
      ctx.drawImage(layer, 0, 0);
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
      if (!app.probeNoDynamic) scene(shown.filter((d) => timed(d) || d.kind === 'TRACK'), false, true);
    }
    // the first plot drawn over the coastline (what a person first sees whole)
    if (land.rings && stats.firstRenderWithLandMs === null) stats.firstRenderWithLandMs = performance.now();
    const dt = performance.now() - t0;
    stats.draws.push(dt);
    if (stats.draws.length > 1000) stats.draws.shift();
    stats.renders++;
    if (app.firstDrawPending) {
      app.firstDrawPending = false;
      const now = performance.now();
      if (stats.firstRenderMs === null) {
        stats.firstRenderMs = now;
        stats.loadedAt = now;
      }
      canvas.dataset.fitted = String(!!app.view.auto);
      if (app.openRequestedAt !== null) {
        stats.openToRenderMs = now - app.openRequestedAt;
        app.openRequestedAt = null;
      }
      canvas.dataset.plot = app.plot ? app.plot.plotId : '';
      canvas.dataset.version = app.plot ? String(app.plot.version) : '';
    }
  }

  // Draw `shown`: the parts that stay put (`stat`: graticule, lines, symbols, time labels,
  // shapes) and/or the parts that move with the time (`dyn`: markers, bearing lines, arcs, the
  // scale bar).
  function scene(shown, stat, dyn) {
    ctx.lineJoin = 'round';
    ctx.lineCap = 'round';
    const labelledLater = [];
    // shapes
    for (const d of shown) {
      if (!d.spoly.length) continue;
      pathPolys(d);
      if (d.fill) {
        ctx.globalAlpha = Math.min(Math.max(d.fillOpacity, 0), 1);
        ctx.fillStyle = d.fill;
        ctx.fill('evenodd');
        ctx.globalAlpha = 1;
      }
      if (app.selected.has(d.id)) {
        ctx.strokeStyle = HALO;
        ctx.lineWidth = d.width + 6;
        ctx.stroke();
      }
      ctx.strokeStyle = d.color;
      ctx.lineWidth = d.width;
      ctx.setLineDash(d.dash || []);
      ctx.stroke();
      ctx.setLineDash([]);
    }
    // circles and ellipses to scale (their radius/axes are metres)
    for (const d of shown) {
      if (!d.circle) continue;
      pathCircle(d);
      if (d.fill) {
        ctx.globalAlpha = Math.min(Math.max(d.fillOpacity, 0), 1);
        ctx.fillStyle = d.fill;
        ctx.fill();
        ctx.globalAlpha = 1;
      }
      if (app.selected.has(d.id)) {
        ctx.strokeStyle = HALO;
        ctx.lineWidth = d.width + 6;
        ctx.stroke();
      }
      ctx.strokeStyle = d.color;
      ctx.lineWidth = Math.max(1.5, d.width);
      ctx.setLineDash(d.dash || []);
      ctx.stroke();
      ctx.setLineDash([]);
      const c = d.circle;
      ctx.fillStyle = d.color;
      ctx.fillRect(X(c.lon) - 1.5, Y(c.lat) - 1.5, 3, 3);
      if (d.text) labelledLater.push([X(c.lon) + 5, Y(c.lat) - ry(c) - 8, d.text, d.color, true, app.selected.has(d.id)]);
    }
    // sensor arcs: sectors about the host's position and heading now
    const now = app.time.now;
    for (const d of dyn ? app.drawables : []) {
      if (d.kind !== 'SENSOR_ARC' || !inTime(d)) continue;
      const host = d.host && trackAt(d.host, now);
      if (!host) continue;
      const x = X(host.lon), y = Y(host.lat);
      const course = Number(host.course) || 0;
      const px = app.view.s / M_PER_DEG;
      ctx.fillStyle = d.color;
      ctx.strokeStyle = d.color;
      ctx.lineWidth = 1;
      for (const a of d.arcs) {
        const l = ((course + Number(a.left_bearing) - 90) * Math.PI) / 180;
        let r = ((course + Number(a.right_bearing) - 90) * Math.PI) / 180;
        if (r <= l) r += Math.PI * 2;
        const r1 = Math.max(0, Number(a.min_range) || 0) * px, r2 = Math.max(1, Number(a.max_range) || 0) * px;
        ctx.beginPath();
        ctx.arc(x, y, r2, l, r);
        ctx.arc(x, y, r1, r, l, true);
        ctx.closePath();
        ctx.globalAlpha = 0.15;
        ctx.fill();
        ctx.globalAlpha = 0.8;
        ctx.stroke();
        ctx.globalAlpha = 1;
      }
    }
    // sensor bearing lines from the platform's position at each contact's time
    ctx.lineWidth = 1.5;
    for (const d of dyn ? app.drawables : []) {
      if (!d.sensors || !d.sensors.length) continue;
      const host = d.kind === 'TRACK' ? d : d.host;
      const w = app.time.trail || CONTACT_WINDOW;
      for (const sn of d.sensors) {
        ctx.strokeStyle = sn.color;
        for (const c of sn.contacts) {
          if (now !== null && (c.t > now || c.t < now - w)) continue;
          let o = c.origin;
          if (!o) {
            const h = host && trackAt(host, c.t);
            if (!h) continue;
            o = [h.lon, h.lat];
          }
          const e = offset(o[0], o[1], c.bearing, c.range > 0 ? c.range : 5 * M_PER_NM);
          ctx.setLineDash(c.range > 0 ? [] : [6, 4]);
          ctx.beginPath();
          ctx.moveTo(X(o[0]), Y(o[1]));
          ctx.lineTo(X(e[0]), Y(e[1]));
          ctx.stroke();
        }
      }
      ctx.setLineDash([]);
    }
    // halos of selected lines under every line
    for (const d of shown) {
      if (!d.sx.length || !app.selected.has(d.id) || (!stat && d.kind === 'TRACK')) continue;
      pathTrack(d);
      ctx.strokeStyle = HALO;
      ctx.lineWidth = d.width + 7;
      ctx.stroke();
    }
    // tracks and other lines
    for (const d of shown) {
      if (!d.sx.length || (!stat && d.kind === 'TRACK')) continue;
      pathTrack(d);
      ctx.strokeStyle = d.color;
      ctx.lineWidth = d.width;
      ctx.setLineDash(d.dash || []);
      ctx.stroke();
      ctx.setLineDash([]);
    }
    // track symbols, the platform marker at the last position, time labels, names
    ctx.font = '11px system-ui, sans-serif';
    ctx.textBaseline = 'middle';
    const labelled = [];
    const sticks = new Map();
    const markers = [];
    for (const d of shown) {
      if (d.kind !== 'TRACK' || !d.sx.length) continue;
      const pts = d.flat;
      const sxy = (i) => [X(pts[2 * i]), Y(pts[2 * i + 1])];
      ctx.fillStyle = d.symbolFill || d.color;
      ctx.strokeStyle = d.color;
      ctx.lineWidth = 1;
      const range = trailRange(d);
      const within = (i) => !range || (i >= range[0] && i <= range[1]);
      for (const i of stat ? d.symbols : []) {
        if (!within(i)) continue;
        const [x, y] = sxy(i);
        symbol(d.shape, x, y, d.radius);
        if (d.shape === 'cross') ctx.stroke(); else ctx.fill();
      }
      // the platform's marker at the controller's time (the last position without one), with a
      // heading stick
      const m = dyn ? trackAt(d, now) : null;
      if (dyn) d.marker = m ? { ...m, x: X(m.lon), y: Y(m.lat) } : null;
      if (m) {
        const { x, y } = d.marker;
        const c = Number(m.course);
        if (isFinite(c)) {
          const b = (c * Math.PI) / 180;
          // one path per colour for all the heading sticks, stroked below the markers' loop
          let path = sticks.get(d.color);
          if (!path) sticks.set(d.color, (path = new Path2D()));
          path.moveTo(x, y);
          path.lineTo(x + Math.sin(b) * 16, y - Math.cos(b) * 16);
        }
        markers.push(d);
        labelled.push([x + 9, y, d.name, d.color, true, app.selected.has(d.id)]);
      }
      let lx = -1e9, ly = -1e9;
      for (const [i, text] of stat ? d.labels : []) {
        if (!within(i)) continue;
        const [x, y] = sxy(i);
        if (x < -20 || x > W + 20 || y < -20 || y > H + 20) continue;
        if ((x - lx) * (x - lx) + (y - ly) * (y - ly) < 34 * 34) continue;
        lx = x;
        ly = y;
        ctx.fillStyle = d.color;
        ctx.fillRect(x - 1.5, y - 1.5, 3, 3);
        labelled.push([x + 4, y - 7, text, d.color, false, false]);
      }
    }
    // the markers over their heading sticks
    ctx.lineWidth = 2;
    for (const [color, path] of sticks) {
      ctx.strokeStyle = color;
      ctx.stroke(path);
    }
    for (const d of markers) {
      const { x, y } = d.marker;
      const shape = d.shape === 'cross' ? 'circle' : d.shape;
      if (app.time.playing) {
        const ms = markerSprite(shape, d.symbolFill || d.color, d.radius + 2.5);
        ctx.drawImage(ms.canvas, x - ms.half, y - ms.half, 2 * ms.half, 2 * ms.half);
      } else {
        ctx.fillStyle = d.symbolFill || d.color;
        symbol(shape, x, y, d.radius + 2.5);
        ctx.fill();
        ctx.strokeStyle = '#fff';
        ctx.lineWidth = 1.5;
        ctx.stroke();
      }
    }
    // reference points and labelled shapes
    for (const d of shown) {
      for (const [x, y] of d.sp) {
        ctx.fillStyle = d.symbolFill || d.color;
        ctx.strokeStyle = app.selected.has(d.id) ? HALO : '#ffffff';
        ctx.lineWidth = app.selected.has(d.id) ? 4 : 1.5;
        symbol(d.shape, x, y, d.radius + 1);
        ctx.stroke();
        if (d.shape === 'cross') {
          ctx.strokeStyle = d.color;
          ctx.lineWidth = 2;
          ctx.stroke();
        } else ctx.fill();
        if (d.text) labelled.push([x + d.radius + 5, y, d.text, '#1b2430', true, app.selected.has(d.id)]);
      }
      if (d.text && d.spoly.length && !d.sp.length) {
        const b = d.bbox;
        labelled.push([X((b[0] + b[2]) / 2) - d.text.length * 3.5, Y(b[3]) - 8, d.text, d.color, true, app.selected.has(d.id)]);
      }
    }
    for (const l of labelledLater) labelled.push(l);
    // All text last, with a light halo so it reads over lines. Names first, then time labels;
    // a label that would overlap one already placed is left out, so dense plots stay readable.
    const cell = 8;
    const cols = Math.ceil(W / cell) + 1;
    const used = new Uint8Array(cols * (Math.ceil(H / cell) + 1));
    const place = (x, y, w, h) => {
      const x0 = Math.max(0, Math.floor(x / cell)), x1 = Math.floor((x + w) / cell);
      const y0 = Math.max(0, Math.floor((y - h / 2) / cell)), y1 = Math.floor((y + h / 2) / cell);
      if (x1 < 0 || y1 < 0 || x0 >= cols || x1 >= cols || y1 * cols >= used.length) return false;
      for (let r = y0; r <= y1; r++) for (let c = x0; c <= x1; c++) if (used[r * cols + c]) return false;
      for (let r = y0; r <= y1; r++) for (let c = x0; c <= x1; c++) used[r * cols + c] = 1;
      return true;
    };
    const sel = [], names = [], times = [];
    if (app.probeNoText) labelled.length = 0;
    for (const l of labelled) (l[5] ? sel : l[4] ? names : times).push(l);
    // While playing, each label is a sprite (text with its halo) drawn once and copied after:
    // shaping and rasterising text every frame is what a playing map cannot afford. Otherwise
    // the text is drawn directly (making hundreds of sprites would slow the first render).
    const groups = [[sel, '600 12px system-ui, sans-serif', 7, 14], [names, '600 12px system-ui, sans-serif', 7, 14], [times, '10px system-ui, sans-serif', 6, 11]];
    if (app.time.playing) {
      for (const [group, font, , h] of groups) {
        for (const [x, y, text, color] of group) {
          const sp = sprite(text, color, font, h);
          if (place(x, y, sp.w, h)) ctx.drawImage(sp.canvas, x - 3, y - sp.h / 2, sp.w + 6, sp.h);
        }
      }
    } else {
      ctx.lineWidth = 3;
      ctx.strokeStyle = 'rgba(255, 255, 255, 0.85)';
      for (const [group, font, charW, h] of groups) {
        if (!group.length) continue;
        ctx.font = font;
        const keep = [];
        for (const l of group) if (place(l[0], l[1], l[2].length * charW, h)) keep.push(l);
        for (const [x, y, text] of keep) ctx.strokeText(text, x, y);
        let fill = null;
        for (const [x, y, text, color] of keep) {
          if (color !== fill) {
            ctx.fillStyle = color;
            fill = color;
          }
          ctx.fillText(text, x, y);
        }
      }
    }
    if (dyn) scaleBar();
  }

  // hit testing in screen space, against the coordinates of the last draw
  function segDist2(px, py, ax, ay, bx, by) {
    const dx = bx - ax, dy = by - ay;
    const l2 = dx * dx + dy * dy;
    let t = l2 ? ((px - ax) * dx + (py - ay) * dy) / l2 : 0;
    t = Math.max(0, Math.min(1, t));
    const x = ax + t * dx - px, y = ay + t * dy - py;
    return x * x + y * y;
  }

  function inside(a, px, py) {
    let c = false;
    for (let i = 0, j = a.length - 2; i < a.length; j = i, i += 2) {
      const xi = a[i], yi = a[i + 1], xj = a[j], yj = a[j + 1];
      if ((yi > py) !== (yj > py) && px < ((xj - xi) * (py - yi)) / (yj - yi) + xi) c = !c;
    }
    return c;
  }

  function hitTest(px, py) {
    const tol2 = 8 * 8;
    let best = null, bestD = tol2;
    let area = null;
    for (const d of app.drawables) {
      if (!d.onScreen) continue;
      if (d.marker) {
        const dd = (d.marker.x - px) ** 2 + (d.marker.y - py) ** 2 - 9; // markers win ties
        if (dd < bestD) { bestD = dd; best = d; }
      }
      if (d.circle) {
        const c = d.circle;
        const r = (((c.a + c.b) / 2) / M_PER_DEG) * app.view.s;
        const h = Math.hypot(X(c.lon) - px, Y(c.lat) - py);
        const dd = (h - r) ** 2;
        if (dd < bestD) { bestD = dd; best = d; }
        if (!area && h < r) area = d;
      }
      for (const [x, y] of d.sp) {
        const dd = (x - px) ** 2 + (y - py) ** 2 - 4; // points win ties
        if (dd < bestD) { bestD = dd; best = d; }
      }
      for (const a of d.sx) {
        for (let i = 2; i < a.length; i += 2) {
          const dd = segDist2(px, py, a[i - 2], a[i - 1], a[i], a[i + 1]);
          if (dd < bestD) { bestD = dd; best = d; }
        }
      }
      for (const rings of d.spoly) {
        for (const a of rings) {
          for (let i = 2; i < a.length; i += 2) {
            const dd = segDist2(px, py, a[i - 2], a[i - 1], a[i], a[i + 1]);
            if (dd < bestD) { bestD = dd; best = d; }
          }
        }
        if (!area && rings.length && inside(rings[0], px, py)) area = d;
      }
    }
    return best || area;
  }

  // ---------------------------------------------------------------------------------------------
  // plots: load, show, select

  async function loadPlot(plotId, session) {
    if (app.loading) {
      app.reloadWanted = true;
      return app.loading;
    }
    app.loading = (async () => {
      try {
        const t0 = performance.now();
        const sess = session || (app.review ? app.review.session : null);
        const res = await fetch(`/api/plot?view=map&plotId=${encodeURIComponent(plotId)}${sess ? `&session=${encodeURIComponent(sess)}` : ''}`);
        const text = await res.text();
        const t1 = performance.now();
        let view;
        try {
          view = JSON.parse(text);
        } catch (_) {
          throw new ApiFailure(`The server sent an unreadable plot (${res.status}).`, res.status);
        }
        if (!res.ok) throw new ApiFailure(view.error || `The server answered ${res.status}.`, res.status, view.code);
        const t2 = performance.now();
        const samePlot = app.plot && app.plot.plotId === view.plotId && (app.plot.session || null) === (sess || null);
        view.session = sess || null;
        const rows = new Map(view.inventory.map((r) => [r.id, r]));
        app.drawables = view.featureCollection.features.map((f) => prepare(f, rows.get(fid(f))));
        stats.lastLoad = { fetchMs: t1 - t0, parseMs: t2 - t1, prepareMs: performance.now() - t2, bytes: text.length, startedAt: t0 };
        app.byId = new Map(app.drawables.map((d) => [d.id, d]));
        app.drawGen = (app.drawGen || 0) + 1;
        link();
        app.inventory = view.inventory;
        delete view.featureCollection;
        app.plot = view;
        app.selected = new Set(view.selectedIds);
        stats.plotLoads++;
        app.firstDrawPending = true;
        $('empty').hidden = true;
        // The map first — what the person waits for — then, once it is on the screen, the
        // panels (a long feature list takes as long to lay out as the map to draw).
        setupTime(samePlot);
        renderLegend();
        renderHeader();
        if (!samePlot) renderDatasetList(false);
        if (!samePlot || !app.view) {
          // fitted to the map as it is laid out now, with the time controller and the legend
          // shown: the whole plot in view on open, clear of the overlays
          measureCanvas();
          const b = plotBbox();
          app.plotK = Math.max(0.05, Math.cos((((b[1] + b[3]) / 2) * Math.PI) / 180));
          fit();
        }
        const t3 = performance.now();
        draw();
        stats.lastLoad.drawMs = performance.now() - t3;
        const panels = () => {
          renderNarrative();
          if (app.details && !app.byId.has(app.details)) hideDetails();
          else if (app.details) showDetails(app.byId.get(app.details));
          renderFeatures();
          renderToolTargets();
          renderReadout();
          warmSprites();
        };
        if (samePlot) panels();
        else requestAnimationFrame(() => setTimeout(panels, 0));
      } catch (e) {
        report(e);
      } finally {
        app.loading = null;
      }
      if (app.reloadWanted) {
        app.reloadWanted = false;
        const a = shownState();
        if (a && (!app.plot || a.plotId !== app.plot.plotId || a.version !== app.plot.version)) await loadPlot(a.plotId);
      }
    })();
    return app.loading;
  }

  function clearPlot() {
    app.plot = null;
    app.plotK = null;
    worldView();
    app.drawGen = (app.drawGen || 0) + 1;
    app.drawables = [];
    app.byId = new Map();
    app.inventory = [];
    app.selected = new Set();
    $('empty').hidden = false;
    setupTime(false);
    renderNarrative();
    renderLegend();
    hideDetails();
    renderFeatures();
    renderHeader();
    draw();
  }

  function onState(st) {
    const prevDatasets = app.state ? app.state.datasets : -1;
    app.state = st;
    const key = JSON.stringify(st.sessions || []);
    if (key !== app.sessionsKey) {
      app.sessionsKey = key;
      loadSessions();
    }
    if ((st.activity || 0) !== app.activitySeq) {
      app.activitySeq = st.activity || 0;
      loadActivity();
    }
    if (st.datasets !== prevDatasets) loadDatasets();
    if (app.review) {
      // the map follows the reviewed session (loadSessions reloads it when it changes)
      renderHeader();
      return;
    }
    const a = activeState();
    if (!a) {
      if (app.plot) clearPlot();
      renderHeader();
    } else if (!app.plot || app.plot.plotId !== a.plotId || app.plot.version !== a.version) {
      loadPlot(a.plotId);
    } else {
      const sel = new Set(a.selectedIds);
      const changed = sel.size !== app.selected.size || [...sel].some((x) => !app.selected.has(x));
      Object.assign(app.plot, a);
      if (changed) {
        app.selected = sel;
        markRows();
        requestDraw();
      }
      renderHeader();
    }
    markOpenResults();
  }

  async function refreshState() {
    try {
      onState(await api('GET', '/api/state'));
    } catch (e) {
      report(e);
    }
  }

  // The plot state the header acts on: the reviewed session's plot, or the page's active one.
  function shownState() {
    if (app.review) {
      const s = app.sessions.find((x) => x.id === app.review.session);
      return s ? s.plots.find((p) => p.plotId === app.review.plotId) || null : null;
    }
    return activeState();
  }

  function renderHeader() {
    const a = shownState();
    const dirty = $('dirty');
    $('plot-title').textContent = a ? a.title : 'No plot open';
    document.title = a ? `${a.dirty ? '● ' : ''}${a.title} — toolgate workbench` : 'toolgate workbench';
    if (!a) {
      dirty.textContent = 'No plot';
      dirty.dataset.dirty = 'false';
      dirty.classList.remove('is-dirty');
    } else {
      dirty.textContent = a.dirty ? '● Unsaved changes' : 'Saved';
      dirty.dataset.dirty = String(a.dirty);
      dirty.classList.toggle('is-dirty', a.dirty);
    }
    $('btn-undo').disabled = !(a && a.canUndo);
    $('btn-undo').title = a && a.undoLabel ? `Undo: ${a.undoLabel} (Ctrl/Cmd+Z)` : 'Undo (Ctrl/Cmd+Z)';
    // Undo names the step it undoes.
    $('btn-undo').textContent = a && a.canUndo && a.undoLabel ? `Undo: ${short(a.undoLabel, 38)}` : 'Undo';
    $('btn-undo').setAttribute('aria-label', a && a.canUndo && a.undoLabel ? `Undo: ${a.undoLabel}` : 'Undo');
    const banner = $('review-banner');
    banner.hidden = !app.review;
    if (app.review) {
      const s = app.sessions.find((x) => x.id === app.review.session);
      $('review-text').textContent = `Reviewing ${s ? s.client : app.review.session}'s session (${app.review.session})`;
    }
    $('btn-redo').disabled = !(a && a.canRedo);
    $('btn-revert').disabled = !(a && a.dirty);
    $('btn-save').disabled = !(a && a.dirty);
  }

  async function setSelection(ids) {
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

  function selectId(id, additive) {
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

  function renderFeatures() {
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

  function markRows() {
    for (const tr of $('feature-rows').children) tr.setAttribute('aria-selected', String(app.selected.has(tr.dataset.id)));
    renderReadout();
  }

  function rowEvents() {
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

  function zoomTo(b) {
    const pad = Math.max(b[2] - b[0], b[3] - b[1]) * 0.2 + 0.005;
    fit([b[0] - pad, b[1] - pad, b[2] + pad, b[3] + pad]);
    requestDraw();
  }

  // ---------------------------------------------------------------------------------------------
  // catalogue

  let lastResults = [];

  async function search(text) {
    try {
      const r = await api('POST', '/api/catalog/search', text ? { text } : {});
      lastResults = r.matches;
      // A STAC API catalogue's count may be its server's estimate (totalIs 'about') or a lower
      // bound ('atLeast'); the folder store's is exact (no totalIs).
      const count = r.totalIs === 'about' ? `about ${r.total}` : r.totalIs === 'atLeast' ? `more than ${r.total - 1}` : `${r.total}`;
      const info = r.matches.length ? `${count} plot${r.total === 1 ? '' : 's'}${r.more ? ` — ${r.more}` : ''}` : r.message || 'No plots matched.';
      $('search-info').textContent = info;
      const ul = $('results');
      const frag = document.createDocumentFragment();
      for (const m of r.matches) {
        const li = document.createElement('li');
        li.dataset.plotId = m.plotId;
        const span = m.timeSpan ? fmtSpan(m.timeSpan.start, m.timeSpan.end) : '';
        li.innerHTML = `<div class="meta"><div class="t">${esc(m.title)}</div><div class="s">${esc(span)}${m.platforms.length ? ` · ${esc(m.platforms.slice(0, 4).join(', '))}${m.platforms.length > 4 ? '…' : ''}` : ''}</div></div><button type="button" class="open">Open</button>`;
        li.querySelector('button').setAttribute('aria-label', `Open ${m.title}`);
        frag.appendChild(li);
      }
      ul.replaceChildren(frag);
      markOpenResults();
    } catch (e) {
      $('search-info').textContent = e.message;
    }
  }

  function markOpenResults() {
    const a = app.state ? app.state.activePlot : null;
    for (const li of $('results').children) li.classList.toggle('is-open', li.dataset.plotId === a);
  }

  // import: REP files read in the page, sent base64-encoded, imported as ONE plot by the server.

  function bytesToBase64(buf) {
    const bytes = new Uint8Array(buf);
    let bin = '';
    for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
    return btoa(bin);
  }

  async function importFiles() {
    const input = $('import-files');
    const info = $('import-info');
    const files = Array.from(input.files || []);
    if (!files.length) {
      info.textContent = 'Choose one or more REP files first.';
      return;
    }
    // Added to the open plot (its tracks get the files' sensors, arcs and notes), or a new plot.
    const into = $('import-into').checked ? activeState() : null;
    if ($('import-into').checked && !into) {
      info.textContent = 'Open the plot to add the files to first.';
      return;
    }
    $('import-run').disabled = true;
    info.textContent = `Importing ${files.length} file${files.length === 1 ? '' : 's'}…`;
    try {
      const payload = [];
      for (const f of files) payload.push({ name: f.name, contentBase64: bytesToBase64(await f.arrayBuffer()) });
      const body = { files: payload };
      if (into) body.into = into.plotId;
      else {
        body.replace = $('import-replace').checked;
        const name = $('import-plot').value.trim();
        if (name) body.plot = name;
      }
      const r = await api('POST', '/api/import', body);
      const kinds = r.kinds.map((k) => `${k.count} ${k.kind.toLowerCase()}`).join(', ');
      const skipped = r.files.flatMap((f) => f.notImported.map((u) => `${f.name}: ${u.count}× ${u.keyword} not imported (first at line ${u.first_line})`));
      if (r.added) {
        const on = r.attached.map((a) => `${a.track} ${a.count}`).join(', ');
        const loose = r.unattached.map((a) => `${a.count} name ${a.track}, which this plot has no track for`).join('; ');
        info.textContent = `Added to "${r.title}": ${kinds || 'nothing new'}${on ? ` (on ${on})` : ''}.${loose ? ' ' + loose + '.' : ''}${skipped.length ? ' ' + skipped.join('; ') + '.' : ''}`;
        input.value = '';
        await openPlot(r.plotId);
        return;
      }
      info.textContent = `Imported "${r.title}"${r.replaced ? ' (replaced)' : ''}: ${kinds}.${r.undated ? ' The files have no times.' : ''}${skipped.length ? ' ' + skipped.join('; ') + '.' : ''}`;
      input.value = '';
      // Show the new plot in the catalogue list (whatever was searched before may hide it).
      $('search-text').value = r.title;
      await search(r.title);
      await openPlot(r.plotId);
    } catch (e) {
      info.textContent = e.message;
    } finally {
      $('import-run').disabled = false;
    }
  }

  async function openPlot(plotId) {
    app.openRequestedAt = performance.now();
    try {
      onState(await api('POST', '/api/plots/open', { plotId }));
    } catch (e) {
      app.openRequestedAt = null;
      report(e);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // document actions

  async function act(path, okToast, session) {
    const a = session ? null : shownState();
    const sess = session || (app.review ? app.review.session : null);
    const plotId = session ? undefined : a && a.plotId;
    if (!session && !a) return;
    try {
      const body = {};
      if (plotId) body.plotId = plotId;
      if (sess) body.session = sess;
      const r = await api('POST', path, body);
      if (sess) await loadSessions();
      onState(r.state);
      if (okToast) toast(r.message);
    } catch (e) {
      report(e);
      refreshState();
    }
  }

  function undo() { const a = shownState(); if (a && a.canUndo) act('/api/undo', true); }
  function redo() { const a = shownState(); if (a && a.canRedo) act('/api/redo', true); }
  function save() { const a = shownState(); if (a && a.dirty) act('/api/save', true); else if (a) toast('Nothing to save: the plot has no unsaved changes.'); }
  function revert() {
    const a = shownState();
    if (!a || !a.dirty) return;
    $('revert-dialog').showModal();
  }

  // ---------------------------------------------------------------------------------------------
  // Results panel

  async function loadDatasets() {
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
  function renderDatasetList(grew) {
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

  function renderDataset(d) {
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

  const MARK = 'rgba(255, 200, 0, 0.9)';

  function resultMarks() {
    const marks = app.result.marks;
    if (!marks.length) return;
    const on = (x, y) => x > -10 && y > -10 && x < W + 10 && y < H + 10;
    ctx.beginPath();
    for (const p of marks) {
      if (!p) continue;
      const x = X(p[0]), y = Y(p[1]);
      if (!on(x, y)) continue;
      ctx.moveTo(x + 6, y);
      ctx.arc(x, y, 6, 0, Math.PI * 2);
    }
    // the outline under the fill, so touching rings read as one highlighted stretch
    ctx.strokeStyle = '#7a5200';
    ctx.lineWidth = 2;
    ctx.stroke();
    ctx.fillStyle = MARK;
    ctx.fill();
    const p = app.result.row >= 0 ? marks[app.result.row] : null;
    if (p) {
      ctx.beginPath();
      ctx.arc(X(p[0]), Y(p[1]), 11, 0, Math.PI * 2);
      ctx.strokeStyle = '#1b2430';
      ctx.lineWidth = 2.5;
      ctx.stroke();
    }
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
  // chat

  function chatMsg(cls, text) {
    const div = document.createElement('div');
    div.className = `msg ${cls}`;
    if (text !== undefined) div.textContent = text;
    $('chat-log').appendChild(div);
    $('chat-log').scrollTop = $('chat-log').scrollHeight;
    return div;
  }

  function setChatEnabled(on) {
    $('chat-input').disabled = !on;
    $('chat-send').disabled = !on;
  }

  function compactJson(v) {
    try {
      const s = JSON.stringify(v);
      return s.length > 400 ? `${s.slice(0, 400)}…` : s;
    } catch (_) {
      return String(v);
    }
  }

  function markdownLite(md) {
    // Escape first, then the two constructs previews use: **bold** and "- " bullet lines.
    const out = [];
    let list = null;
    for (const raw of String(md).split('\n')) {
      const line = esc(raw).replace(/\*\*(.+?)\*\*/g, '<strong>$1</strong>');
      if (/^\s*[-*] /.test(raw)) {
        if (!list) { list = []; }
        list.push(`<li>${line.replace(/^\s*[-*] /, '')}</li>`);
        continue;
      }
      if (list) { out.push(`<ul>${list.join('')}</ul>`); list = null; }
      if (line.trim()) out.push(`<p>${line}</p>`);
    }
    if (list) out.push(`<ul>${list.join('')}</ul>`);
    return out.join('');
  }

  function showConfirm(id, preview) {
    app.confirmId = id;
    $('confirm-title').textContent = preview.title;
    $('confirm-body').innerHTML = markdownLite(preview.body);
    const dlg = $('confirm-dialog');
    dlg.dataset.id = id;
    if (!dlg.open) dlg.showModal();
    $('confirm-approve').focus();
  }

  async function answerConfirm(answer) {
    const id = app.confirmId;
    const dlg = $('confirm-dialog');
    app.confirmId = null;
    if (dlg.open) dlg.close();
    if (!id) return;
    try {
      await api('POST', '/api/chat/confirm', { id, answer });
    } catch (e) {
      report(e);
    }
  }

  async function sendChat(text) {
    if (app.chatBusy) return;
    app.chatBusy = true;
    setChatEnabled(false);
    chatMsg('user', text);
    let bubble = null;
    let lastTool = null;
    let ended = false;
    const handle = (type, ev) => {
      switch (type) {
        case 'textDelta':
          if (!bubble) bubble = chatMsg('assistant', '');
          bubble.textContent += ev.text;
          break;
        case 'toolCallStarted': {
          bubble = null;
          const div = chatMsg('tool');
          div.innerHTML = `<div><span class="tname">${esc(ev.tool)}</span> <span class="tin"></span></div><div class="tres">running…</div>`;
          div.querySelector('.tin').textContent = compactJson(ev.input);
          div.dataset.tool = ev.tool;
          lastTool = div;
          break;
        }
        case 'toolCallFinished': {
          const div = lastTool && lastTool.dataset.tool === ev.tool ? lastTool : chatMsg('tool', ev.tool);
          div.querySelector('.tres') ? (div.querySelector('.tres').textContent = ev.result) : div.appendChild(document.createTextNode(`\n${ev.result}`));
          if (ev.status && ev.status !== 'ok') {
            div.classList.add(ev.status === 'failed' ? 'failed' : 'refused');
            div.dataset.status = ev.status;
          }
          lastTool = null;
          refreshState();
          break;
        }
        case 'confirmationAsked':
          showConfirm(ev.id, ev.preview);
          break;
        case 'confirmationClosed':
          if (app.confirmId === ev.id) {
            app.confirmId = null;
            if ($('confirm-dialog').open) $('confirm-dialog').close();
          }
          chatMsg('info', ev.approved ? 'You approved the change.' : 'You declined the change; nothing was applied.');
          refreshState();
          break;
        case 'final':
          if (bubble && bubble.textContent.trim()) bubble.textContent = ev.text || bubble.textContent;
          else if (ev.text) chatMsg('assistant', ev.text);
          bubble = null;
          ended = true;
          break;
        case 'error':
          chatMsg('error', ev.message);
          ended = true;
          break;
        default:
          break;
      }
    };
    try {
      const res = await fetch('/api/chat', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Accept: 'text/event-stream' },
        body: JSON.stringify({ utterance: text }),
      });
      if (!res.ok) {
        let msg = `The chat could not start (${res.status}).`;
        try { const j = await res.json(); if (j.error) msg = j.error; } catch (_) { /* keep */ }
        chatMsg('error', msg);
      } else {
        const reader = res.body.getReader();
        const dec = new TextDecoder();
        let buf = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += dec.decode(value, { stream: true });
          let cut;
          while ((cut = buf.indexOf('\n\n')) >= 0) {
            const block = buf.slice(0, cut);
            buf = buf.slice(cut + 2);
            let type = 'message';
            const data = [];
            for (const line of block.split('\n')) {
              if (line.startsWith('event:')) type = line.slice(6).trim();
              else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
            }
            if (!data.length) continue;
            try {
              handle(type, JSON.parse(data.join('\n')));
            } catch (e) {
              chatMsg('error', `Could not read a chat event: ${e.message}`);
            }
          }
        }
        if (!ended) chatMsg('info', 'The reply ended.');
      }
    } catch (e) {
      chatMsg('error', `The chat connection failed: ${e.message}`);
    } finally {
      app.chatBusy = false;
      if ($('confirm-dialog').open) $('confirm-dialog').close();
      setChatEnabled(app.config && app.config.chat.configured);
      refreshState();
    }
  }

  // ---------------------------------------------------------------------------------------------
  // links between features: sensor data and arcs to their host track, narrative to platforms

  function short(text, n) {
    const t = String(text);
    return t.length > n ? `${t.slice(0, n - 1)}…` : t;
  }

  function link() {
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

  // ---------------------------------------------------------------------------------------------
  // the time controller

  function fmtClock(t) {
    if (t === null || !isFinite(t)) return '--';
    return `${new Date(t).toISOString().slice(0, 19).replace('T', ' ')}Z`;
  }

  function setupTime(keep) {
    let lo = Infinity, hi = -Infinity;
    const add = (t) => { if (t !== null && t === t) { if (t < lo) lo = t; if (t > hi) hi = t; } };
    for (const d of app.drawables) {
      if (d.kind === 'TRACK' && d.n) { add(d.ts); add(d.te); }
      add(d.t0); add(d.t1); add(d.tAt);
      if (d.sensors) for (const sn of d.sensors) if (sn.contacts.length) { add(sn.contacts[0].t); add(sn.contacts[sn.contacts.length - 1].t); }
    }
    const tm = app.time;
    if (!(hi > lo)) {
      tm.start = tm.end = tm.now = isFinite(lo) ? lo : null;
      if (tm.now !== null && !isFinite(tm.now)) tm.now = null;
      $('timebar').hidden = tm.now === null;
      stopPlay();
      updateTimeUi();
      return;
    }
    const had = keep && tm.now !== null;
    tm.start = lo;
    tm.end = hi;
    if (!had) {
      tm.now = lo;
      // about 200 steps over the plot, on one of the offered sizes
      const want = (hi - lo) / 200;
      const opts = [...$('time-step').options].map((o) => Number(o.value));
      tm.step = opts.find((v) => v >= want) || opts[opts.length - 1];
      $('time-step').value = String(tm.step);
      stepLabels();
    } else tm.now = Math.min(Math.max(tm.now, lo), hi);
    $('timebar').hidden = false;
    updateTimeUi();
  }

  function stepLabels() {
    const o = $('time-step').selectedOptions[0];
    for (const el of document.querySelectorAll('.step-label')) el.textContent = o ? o.textContent : '';
  }

  function updateTimeUi() {
    const tm = app.time;
    const slider = $('time-slider');
    if (tm.now !== null && tm.end > tm.start) slider.value = String(Math.round(((tm.now - tm.start) / (tm.end - tm.start)) * 1000));
    $('time-now').textContent = fmtClock(tm.now);
    $('map').dataset.time = tm.now === null ? '' : new Date(tm.now).toISOString();
    markNarrative();
    renderReadout();
    if (app.details && app.byId.has(app.details)) showDetails(app.byId.get(app.details));
  }

  function setTime(t) {
    const tm = app.time;
    if (tm.start === null) return;
    tm.now = Math.min(Math.max(t, tm.start), tm.end);
    updateTimeUi();
    requestDraw();
  }

  let playLast = null;
  let playUiAt = 0;
  function playFrame(ts) {
    const tm = app.time;
    if (!tm.playing) return;
    if (playLast !== null) {
      // four steps a second
      const next = tm.now + ((ts - playLast) / 1000) * tm.step * 4;
      if (next >= tm.end) {
        setTime(tm.end);
        stopPlay();
        return;
      }
      tm.now = next;
      // the slider and clock text cost a page layout: ten times a second is enough
      if (ts - playUiAt > 100) {
        playUiAt = ts;
        updateTimeUi();
      } else markNarrative();
      draw();
    }
    playLast = ts;
    requestAnimationFrame(playFrame);
  }

  function startPlay() {
    const tm = app.time;
    if (tm.start === null || tm.playing) return;
    if (tm.now >= tm.end) tm.now = tm.start;
    tm.playing = true;
    playLast = null;
    $('time-play').textContent = '❚❚';
    $('time-play').setAttribute('aria-label', 'Pause');
    requestAnimationFrame(playFrame);
  }

  function stopPlay() {
    app.time.playing = false;
    $('time-play').textContent = '▶';
    $('time-play').setAttribute('aria-label', 'Play');
  }

  function timeEvents() {
    $('time-slider').addEventListener('input', () => {
      const tm = app.time;
      if (tm.start === null) return;
      stopPlay();
      setTime(tm.start + (Number($('time-slider').value) / 1000) * (tm.end - tm.start));
    });
    $('time-play').addEventListener('click', () => (app.time.playing ? stopPlay() : startPlay()));
    $('time-back').addEventListener('click', () => { stopPlay(); setTime(app.time.now - app.time.step); });
    $('time-fwd').addEventListener('click', () => { stopPlay(); setTime(app.time.now + app.time.step); });
    $('time-start').addEventListener('click', () => { stopPlay(); setTime(app.time.start); });
    $('time-end').addEventListener('click', () => { stopPlay(); setTime(app.time.end); });
    $('time-step').addEventListener('change', () => { app.time.step = Number($('time-step').value); stepLabels(); });
    $('time-trail').addEventListener('change', () => { app.time.trail = Number($('time-trail').value); requestDraw(); });
    const jump = (li) => {
      const n = li && app.narrative[Number(li.dataset.index)];
      if (!n) return;
      stopPlay();
      setTime(n.t);
    };
    $('narrative-list').addEventListener('click', (ev) => jump(ev.target.closest('li[data-index]')));
    $('narrative-list').addEventListener('keydown', (ev) => {
      if (ev.key !== 'Enter' && ev.key !== ' ') return;
      ev.preventDefault();
      jump(ev.target.closest('li[data-index]'));
    });
  }

  // ---------------------------------------------------------------------------------------------
  // the readout at the time cursor: each track's course and speed, and the range and bearing
  // from the first selected track to each other selected one

  const R_EARTH = 6371008.8; // metres: the mean radius of the analysis tools' haversine

  // Great-circle range (m) and initial bearing (° true) from A to B, computed as the
  // range-bearing tool computes them, so the readout and its result agree.
  function rangeBearing(lonA, latA, lonB, latB) {
    const r = Math.PI / 180;
    const p1 = latA * r, p2 = latB * r, dl = (lonB - lonA) * r;
    const h = Math.sin(((latB - latA) * r) / 2) ** 2 + Math.cos(p1) * Math.cos(p2) * Math.sin(dl / 2) ** 2;
    const range = 2 * R_EARTH * Math.asin(Math.min(1, Math.sqrt(h)));
    const y = Math.sin(dl) * Math.cos(p2);
    const x = Math.cos(p1) * Math.sin(p2) - Math.sin(p1) * Math.cos(p2) * Math.cos(dl);
    return { range, bearing: ((Math.atan2(y, x) / r) + 360) % 360 };
  }

  function fmtDist(m, bare) {
    const u = app.units.dist;
    const v = m / M_PER[u];
    const text = u === 'nm' || u === 'km' ? v.toFixed(2) : Math.round(v).toLocaleString('en-GB');
    return bare ? text : `${text} ${u}`;
  }

  function fmtSpeed(kn) {
    const u = app.units.speed;
    return `${((kn * MPS_PER.kn) / MPS_PER[u]).toFixed(1)} ${u}`;
  }

  function fmtBearing(b) {
    return `${(Math.round(b * 10) / 10).toFixed(1).padStart(5, '0')}°`;
  }

  // The tracks the readout shows: the selected ones, else every track of a plot of a few.
  function readoutTracks() {
    const tracks = app.drawables.filter((d) => d.kind === 'TRACK' && d.n);
    const sel = [...app.selected].map((id) => app.byId.get(id)).filter((d) => d && d.kind === 'TRACK' && d.n);
    if (sel.length) return { rows: sel.slice(0, 8), pairs: sel.length >= 2 ? sel.slice(1, 4).map((b) => [sel[0], b]) : [] };
    return { rows: tracks.length <= 6 ? tracks : [], pairs: [], hint: tracks.length > 6 };
  }

  let readoutKey = null;
  function renderReadout() {
    const el = $('readout');
    const { rows, pairs, hint } = readoutTracks();
    const key = `${rows.map((d) => `${d.id}:${d.color}:${d.name}`).join('|')}#${pairs.map(([a, b]) => `${a.id}>${b.id}`).join('|')}#${hint ? 1 : 0}`;
    if (key !== readoutKey) {
      readoutKey = key;
      const frag = document.createDocumentFragment();
      const span = (cls, text) => {
        const e = document.createElement('span');
        e.className = cls;
        if (text !== undefined) e.textContent = text;
        return e;
      };
      for (const d of rows) {
        const r = span('rd');
        r.dataset.id = d.id;
        const sw = span('sw');
        sw.style.background = d.color; // CSSOM, which the CSP allows
        r.append(sw, span('rn', d.name), span('rv'));
        frag.appendChild(r);
      }
      for (const [a, b] of pairs) {
        const r = span('rp');
        r.dataset.from = a.id;
        r.dataset.to = b.id;
        r.append(span('rn', `${a.name} → ${b.name}`), span('rv'));
        frag.appendChild(r);
      }
      if (hint) frag.appendChild(span('muted', 'Select tracks (on the map or in the list) to read their course, speed, range and bearing at this time.'));
      el.replaceChildren(frag);
    }
    const t = app.time.now;
    for (const r of el.querySelectorAll('.rd')) {
      const m = trackAt(app.byId.get(r.dataset.id), t);
      const v = r.querySelector('.rv');
      if (!m) {
        v.textContent = 'no position at this time';
        delete r.dataset.course;
        delete r.dataset.speedKn;
        continue;
      }
      const c = Number(m.course), sp = Number(m.speed);
      v.textContent = `course ${isFinite(c) ? fmtBearing(c) : '—'}, ${isFinite(sp) ? fmtSpeed(sp) : 'speed —'}`;
      r.dataset.course = isFinite(c) ? String(c) : '';
      r.dataset.speedKn = isFinite(sp) ? String(sp) : '';
    }
    for (const r of el.querySelectorAll('.rp')) {
      const a = trackAt(app.byId.get(r.dataset.from), t), b = trackAt(app.byId.get(r.dataset.to), t);
      const v = r.querySelector('.rv');
      if (!a || !b) {
        v.textContent = 'not both at this time';
        delete r.dataset.rangeM;
        continue;
      }
      const rb = rangeBearing(a.lon, a.lat, b.lon, b.lat);
      v.textContent = `range ${fmtDist(rb.range)}, bearing ${fmtBearing(rb.bearing)}`;
      r.dataset.rangeM = String(rb.range);
      r.dataset.bearing = String(rb.bearing);
    }
    el.hidden = !el.children.length;
  }

  // ---------------------------------------------------------------------------------------------
  // narrative panel

  function renderNarrative() {
    const ol = $('narrative-list');
    const frag = document.createDocumentFragment();
    app.narrative.forEach((n, i) => {
      const li = document.createElement('li');
      li.dataset.index = String(i);
      li.dataset.id = n.id;
      li.tabIndex = 0;
      li.title = 'Go to this time';
      li.innerHTML = `<span class="nt">${esc(fmtClock(n.t).slice(11, 19))}</span><span class="np"></span><span class="nx"></span>`;
      li.querySelector('.np').textContent = n.platform;
      li.querySelector('.nx').textContent = n.text;
      frag.appendChild(li);
    });
    ol.replaceChildren(frag);
    $('narrative-info').textContent = app.narrative.length
      ? `${app.narrative.length} entr${app.narrative.length === 1 ? 'y' : 'ies'}; the one at the current time is highlighted. Click one to go to its time.`
      : 'No narrative in this plot.';
    app.narrativeAt = -2;
    markNarrative();
  }

  function markNarrative() {
    const t = app.time.now;
    let at = -1;
    if (t !== null) {
      let lo = 0, hi = app.narrative.length - 1;
      while (lo <= hi) {
        const mid = (lo + hi) >> 1;
        if (app.narrative[mid].t <= t) { at = mid; lo = mid + 1; } else hi = mid - 1;
      }
    }
    if (at === app.narrativeAt) return;
    app.narrativeAt = at;
    const ol = $('narrative-list');
    for (const li of ol.querySelectorAll('li.current')) { li.classList.remove('current'); li.removeAttribute('aria-current'); }
    const li = at >= 0 ? ol.children[at] : null;
    if (li) {
      li.classList.add('current');
      li.setAttribute('aria-current', 'true');
      if (!$('pane-narrative').hidden) li.scrollIntoView({ block: 'nearest' });
    }
  }

  // ---------------------------------------------------------------------------------------------
  // legend and feature details

  function renderLegend() {
    const ul = $('legend-list');
    const frag = document.createDocumentFragment();
    const item = (text, color, cls) => {
      const li = document.createElement('li');
      if (color) {
        const key = document.createElement('span');
        key.className = `key${cls ? ` ${cls}` : ''}`;
        key.style.color = color; // CSSOM, which the page's CSP allows (no inline style markup)
        li.appendChild(key);
      }
      li.appendChild(document.createTextNode(text));
      frag.appendChild(li);
    };
    const tracks = app.drawables.filter((d) => d.kind === 'TRACK');
    for (const d of tracks.slice(0, 12)) item(d.name, d.color, d.dash ? 'dash' : '');
    if (tracks.length > 12) item(`+${tracks.length - 12} more tracks`);
    const kinds = new Set(app.drawables.map((d) => d.kind));
    const sensor = app.drawables.find((d) => d.sensors && d.sensors.some((sn) => sn.contacts.length));
    if (sensor) item('sensor bearing (dashed: no range)', sensor.sensors[0].color);
    const arc = app.drawables.find((d) => d.kind === 'SENSOR_ARC');
    if (arc) item('sensor arc coverage', arc.color, 'area');
    const circle = app.drawables.find((d) => d.circle || d.kind === 'CIRCLE');
    if (circle) item('circle / ellipse (to scale)', circle.color, 'area');
    if (kinds.has('POINT')) item('◆ reference point');
    if (app.narrative.length) item(`${app.narrative.length} narrative entries (Narrative tab)`);
    ul.replaceChildren(frag);
    const lg = $('legend');
    lg.hidden = !ul.children.length;
    $('legend-count').textContent = tracks.length > 12 ? `(${tracks.length} tracks)` : '';
    // A long legend starts folded (its summary says how many tracks), unless the person opened
    // or closed it themselves; the fit keeps the plot clear of it either way.
    const want = tracks.length <= 12;
    if (app.legendChosen === undefined && lg.open !== want) {
      app.legendSetting = true;
      lg.open = want;
    }
  }

  function worldView() {
    app.plotK = null;
    fit([-180, -60, 180, 75]);
  }

  function fmtLatLon(lat, lon) {
    const f = (v, pos, neg) => {
      const a = Math.abs(v);
      const deg = Math.floor(a);
      const min = (a - deg) * 60;
      return `${deg}°${min.toFixed(2).padStart(5, '0')}′${v < 0 ? neg : pos}`;
    };
    return `${f(lat, 'N', 'S')} ${f(lon, 'E', 'W')}`;
  }

  function showDetails(d) {
    if (!d) return hideDetails();
    app.details = d.id;
    const p = d.props || {};
    const rows = [];
    const row = (k, v) => { if (v !== undefined && v !== null && v !== '') rows.push([k, String(v)]); };
    row('Type', d.kind);
    const host = d.kind === 'TRACK' ? null : d.host;
    row('Platform', pick(p.platform_name, p.platform_id, p.track_name, host && host.name));
    if (d.kind === 'TRACK') {
      const m = trackAt(d, app.time.now);
      if (m) {
        row('Time', fmtClock(app.time.now === null ? m.t : app.time.now));
        row('Position', fmtLatLon(m.lat, m.lon));
        if (isFinite(Number(m.course))) row('Course', `${Number(m.course).toFixed(1)}°`);
        if (isFinite(Number(m.speed))) row('Speed', fmtSpeed(Number(m.speed)));
      } else row('Time', `${fmtClock(app.time.now)} (outside the track: ${fmtSpan(p.start_time, p.end_time)})`);
      row('Positions', d.n);
    } else {
      if (d.circle) {
        row('Centre', fmtLatLon(d.circle.lat, d.circle.lon));
        if (d.kind === 'CIRCLE') row('Radius', `${fmtDist(d.circle.a)}${app.units.dist === 'm' ? '' : ` (${Math.round(d.circle.a)} m)`}`);
        else {
          row('Semi-axes', `${fmtDist(d.circle.a, true)} × ${fmtDist(d.circle.b)}`);
          row('Orientation', `${d.circle.rot}°`);
        }
      } else if (d.points.length === 1) row('Position', fmtLatLon(d.points[0][1], d.points[0][0]));
      if (d.t0 !== null || d.t1 !== null) row('Shown', `${d.t0 !== null ? fmtClock(d.t0) : 'open'} – ${d.t1 !== null ? fmtClock(d.t1) : 'open'}`);
      if (d.tAt !== null) row('Time', fmtClock(d.tAt));
      if (p.sensor_name) row('Sensor', p.sensor_name);
      if (p.text) row('Text', p.text);
    }
    const body = $('details-body');
    body.innerHTML = `<h4></h4><dl>${rows.map(() => '<dt></dt><dd></dd>').join('')}</dl>`;
    body.querySelector('h4').textContent = d.name;
    const dts = body.querySelectorAll('dt'), dds = body.querySelectorAll('dd');
    rows.forEach(([k, v], i) => { dts[i].textContent = k; dds[i].textContent = v; });
    $('details').hidden = false;
  }

  function hideDetails() {
    app.details = null;
    $('details').hidden = true;
  }

  // ---------------------------------------------------------------------------------------------
  // side tabs

  function showTab(name) {
    for (const t of document.querySelectorAll('.tabs [role="tab"]')) {
      const on = t.id === `tab-${name}`;
      t.setAttribute('aria-selected', String(on));
      t.tabIndex = on ? 0 : -1;
      $(t.getAttribute('aria-controls')).hidden = !on;
    }
    if (name === 'narrative') { app.narrativeAt = -2; markNarrative(); }
  }

  function tabEvents() {
    const tabs = [...document.querySelectorAll('.tabs [role="tab"]')];
    for (const t of tabs) {
      t.addEventListener('click', () => showTab(t.id.slice(4)));
      t.addEventListener('keydown', (ev) => {
        if (ev.key !== 'ArrowRight' && ev.key !== 'ArrowLeft') return;
        ev.preventDefault();
        const i = tabs.indexOf(t);
        const next = tabs[(i + (ev.key === 'ArrowRight' ? 1 : tabs.length - 1)) % tabs.length];
        showTab(next.id.slice(4));
        next.focus();
      });
    }
  }

  // Server-sent events from a fetch response: calls handle(type, data) per event.
  async function readSse(res, handle) {
    const reader = res.body.getReader();
    const dec = new TextDecoder();
    let buf = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += dec.decode(value, { stream: true });
      let cut;
      while ((cut = buf.indexOf('\n\n')) >= 0) {
        const block = buf.slice(0, cut);
        buf = buf.slice(cut + 2);
        let type = 'message';
        const data = [];
        for (const line of block.split('\n')) {
          if (line.startsWith('event:')) type = line.slice(6).trim();
          else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
        }
        if (data.length) handle(type, JSON.parse(data.join('\n')));
      }
    }
  }

  // ---------------------------------------------------------------------------------------------
  // tool palette: every registry tool, a form from its JSON Schema, run through the same gate

  async function loadTools() {
    try {
      const r = await api('GET', '/api/tools');
      app.tools = r.tools;
      renderTools();
    } catch (e) {
      report(e);
    }
  }

  function renderTools() {
    const f = $('tool-filter').value.trim().toLowerCase();
    const ul = $('tool-list');
    const frag = document.createDocumentFragment();
    for (const t of app.tools) {
      if (f && !`${t.id} ${t.title} ${t.description} ${t.category}`.toLowerCase().includes(f)) continue;
      const li = document.createElement('li');
      li.dataset.tool = t.id;
      li.tabIndex = 0;
      li.setAttribute('role', 'option');
      li.setAttribute('aria-selected', String(app.toolShown === t.id));
      li.innerHTML = `<div><span class="tt"></span><span class="tk ${t.mutating ? 'mut' : 'read'}">${t.mutating ? 'modifies the plot' : 'analysis'}</span></div><div class="td"></div>`;
      li.querySelector('.tt').textContent = t.title || t.id;
      li.querySelector('.td').textContent = t.description;
      li.title = `${t.id}: ${t.description}`;
      frag.appendChild(li);
    }
    ul.replaceChildren(frag);
  }

  // How tools spell the units of the setting (Debrief's catalogue writes `yds`, `kts`).
  const UNIT_SPELLINGS = { nm: ['nm', 'nmi'], yd: ['yd', 'yds', 'yards'], m: ['m', 'metres', 'meters'], km: ['km'], kn: ['kn', 'kts', 'knots'], 'm/s': ['m/s', 'mps'], 'km/h': ['km/h', 'kph'] };

  // The choice of a unit parameter (`units`, `distance_unit`, `speed_units`) that is the unit
  // setting's, or null.
  function unitChoice(name, choices) {
    if (!/(^|_)units?$/.test(name)) return null;
    const want = UNIT_SPELLINGS[/speed/.test(name) ? app.units.speed : app.units.dist];
    const c = choices.find((x) => want.includes(String(x).toLowerCase()));
    return c === undefined ? null : c;
  }

  function humanise(name) {
    return String(name).replace(/([a-z])([A-Z])/g, '$1 $2').replace(/[_-]+/g, ' ');
  }

  function schemaType(sch) {
    const t = Array.isArray(sch.type) ? sch.type.find((x) => x !== 'null') : sch.type;
    if (t) return t;
    if (Array.isArray(sch.enum)) return typeof sch.enum[0] === 'number' ? 'number' : 'string';
    return 'string';
  }

  function fieldFor(name, sch, required) {
    const wrap = document.createElement('div');
    wrap.className = 'field';
    const id = `tp-${name}`;
    const label = document.createElement('label');
    label.htmlFor = id;
    label.textContent = humanise(name);
    if (required) {
      const star = document.createElement('span');
      star.className = 'req';
      star.textContent = ' *';
      star.title = 'required';
      label.appendChild(star);
    }
    wrap.appendChild(label);
    const type = schemaType(sch);
    const items = sch.items || {};
    let input;
    if (Array.isArray(sch.enum) || (type === 'array' && Array.isArray(items.enum))) {
      input = document.createElement('select');
      const choices = sch.enum || items.enum;
      if (type === 'array') input.multiple = true;
      else if (!required || sch.default === undefined) {
        const o = document.createElement('option');
        o.value = '';
        o.textContent = sch.default !== undefined ? `(default: ${sch.default})` : '(choose)';
        input.appendChild(o);
      }
      // a tool's unit parameter starts at the analyst's unit setting, where it offers it
      const preset = type === 'array' ? null : unitChoice(name, choices);
      if (preset !== null) input.dataset.unitParam = name;
      for (const c of choices) {
        const o = document.createElement('option');
        o.value = String(c);
        o.textContent = String(c);
        if (preset !== null ? String(preset) === String(c) : sch.default !== undefined && String(sch.default) === String(c)) o.selected = true;
        input.appendChild(o);
      }
    } else if (type === 'boolean') {
      input = document.createElement('input');
      input.type = 'checkbox';
      input.checked = sch.default === true;
    } else if (type === 'integer' || type === 'number') {
      input = document.createElement('input');
      input.type = 'number';
      input.step = type === 'integer' ? '1' : 'any';
      if (sch.minimum !== undefined) input.min = String(sch.minimum);
      if (sch.maximum !== undefined) input.max = String(sch.maximum);
      if (sch.default !== undefined) input.value = String(sch.default);
    } else if (type === 'object' || (type === 'array' && items.type === 'object')) {
      input = document.createElement('textarea');
      input.rows = 2;
      input.placeholder = 'JSON';
      if (sch.default !== undefined) input.value = JSON.stringify(sch.default);
    } else {
      input = document.createElement('input');
      input.type = 'text';
      if (type === 'array') input.placeholder = 'comma-separated';
      else if (sch.format === 'date-time') input.placeholder = 'e.g. 2026-03-01T06:00:00Z';
      if (sch.default !== undefined) input.value = Array.isArray(sch.default) ? sch.default.join(', ') : String(sch.default);
    }
    input.id = id;
    input.dataset.param = name;
    input.dataset.type = type;
    input.dataset.itemType = items.type || '';
    if (required && type !== 'boolean') input.required = true;
    wrap.appendChild(input);
    const hint = [sch.description, sch.default !== undefined ? `Default: ${JSON.stringify(sch.default)}.` : '', sch.minimum !== undefined || sch.maximum !== undefined ? `Range: ${sch.minimum ?? '…'} to ${sch.maximum ?? '…'}.` : ''].filter(Boolean).join(' ');
    if (hint) {
      const h = document.createElement('div');
      h.className = 'hint';
      h.textContent = hint;
      wrap.appendChild(h);
    }
    return wrap;
  }

  function chooseTool(id) {
    const t = app.tools.find((x) => x.id === id);
    if (!t) return;
    app.toolShown = id;
    for (const li of $('tool-list').children) li.setAttribute('aria-selected', String(li.dataset.tool === id));
    $('tool-title').textContent = `${t.title || t.id}${t.mutating ? ' — modifies the plot (asks first)' : ' — analysis'}`;
    $('tool-desc').textContent = `${t.id}: ${t.description}`;
    const sch = t.inputSchema || {};
    const req = new Set(Array.isArray(sch.required) ? sch.required : []);
    const fields = $('tool-fields');
    fields.replaceChildren(...Object.entries(sch.properties || {}).map(([k, v]) => fieldFor(k, v || {}, req.has(k))));
    if (!fields.children.length) {
      const p = document.createElement('p');
      p.className = 'muted small';
      p.textContent = 'This tool takes no parameters.';
      fields.appendChild(p);
    }
    $('tool-result').hidden = true;
    $('tool-form').hidden = false;
    renderToolTargets();
  }

  function renderToolTargets() {
    const n = app.selected.size;
    $('tool-sel-count').textContent = n ? `(${n}: ${[...app.selected].map((id) => (app.byId.get(id) || { name: id }).name).slice(0, 3).join(', ')}${n > 3 ? '…' : ''})` : '(none selected)';
    const sel = $('tool-targets');
    const keep = new Set([...sel.selectedOptions].map((o) => o.value));
    sel.replaceChildren(...app.inventory.filter((r) => r.kind !== 'NARRATIVE').map((r) => {
      const o = document.createElement('option');
      o.value = r.id;
      o.textContent = `${r.name} · ${r.kind}`;
      o.selected = keep.has(r.id);
      return o;
    }));
  }

  function toolParams() {
    const params = {};
    for (const el of $('tool-fields').querySelectorAll('[data-param]')) {
      const name = el.dataset.param, type = el.dataset.type;
      if (type === 'boolean') {
        params[name] = el.checked;
        continue;
      }
      if (el.multiple) {
        const v = [...el.selectedOptions].map((o) => o.value);
        if (v.length) params[name] = el.dataset.itemType === 'number' || el.dataset.itemType === 'integer' ? v.map(Number) : v;
        continue;
      }
      const raw = el.value.trim();
      if (raw === '') continue;
      if (type === 'integer') params[name] = parseInt(raw, 10);
      else if (type === 'number') params[name] = Number(raw);
      else if (el.tagName === 'TEXTAREA') {
        try {
          params[name] = JSON.parse(raw);
        } catch (_) {
          throw new Error(`“${humanise(name)}” must be JSON, e.g. {"key": 1}.`);
        }
      } else if (type === 'array') {
        const parts = raw.split(',').map((x) => x.trim()).filter(Boolean);
        params[name] = el.dataset.itemType === 'number' || el.dataset.itemType === 'integer' ? parts.map(Number) : parts;
      } else params[name] = raw;
    }
    return params;
  }

  function toolResult(text, status) {
    const box = $('tool-result');
    box.textContent = text;
    box.className = `msg ${status === 'ok' ? 'info' : status === 'declined' ? 'info' : 'error'}`;
    box.dataset.status = status;
    box.hidden = false;
  }

  async function runTool() {
    if (app.toolBusy || !app.toolShown) return;
    let body;
    try {
      body = { toolId: app.toolShown, params: toolParams() };
    } catch (e) {
      toolResult(e.message, 'refused');
      return;
    }
    const target = document.querySelector('input[name="tool-target"]:checked').value;
    if (target === 'pick') {
      body.featureIds = [...$('tool-targets').selectedOptions].map((o) => o.value);
      if (!body.featureIds.length) {
        toolResult('Pick one or more features in the list, or choose another target.', 'refused');
        return;
      }
    } else if (target === 'all') body.scope = 'all';
    else if (app.selected.size) body.scope = 'selection';
    const a = activeState();
    if (a) body.plotId = a.plotId;
    app.toolBusy = true;
    $('tool-run').disabled = true;
    toolResult('Running…', 'ok');
    try {
      const res = await fetch('/api/tools/run', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Accept: 'text/event-stream' },
        body: JSON.stringify(body),
      });
      if (!res.ok) {
        let msg = `The tool could not start (${res.status}).`;
        try { const j = await res.json(); if (j.error) msg = j.error; } catch (_) { /* keep */ }
        toolResult(msg, 'refused');
      } else {
        await readSse(res, (type, ev) => {
          if (type === 'confirmationAsked') showConfirm(ev.id, ev.preview);
          else if (type === 'confirmationClosed') {
            if (app.confirmId === ev.id) {
              app.confirmId = null;
              if ($('confirm-dialog').open) $('confirm-dialog').close();
            }
          } else if (type === 'toolCallFinished') toolResult(ev.result, ev.status);
        });
      }
    } catch (e) {
      toolResult(`The tool run failed: ${e.message}`, 'failed');
    } finally {
      app.toolBusy = false;
      $('tool-run').disabled = false;
      if ($('confirm-dialog').open) $('confirm-dialog').close();
      refreshState();
    }
  }

  function toolEvents() {
    $('tool-filter').addEventListener('input', renderTools);
    $('tool-list').addEventListener('click', (ev) => {
      const li = ev.target.closest('li[data-tool]');
      if (li) chooseTool(li.dataset.tool);
    });
    $('tool-list').addEventListener('keydown', (ev) => {
      const li = ev.target.closest('li[data-tool]');
      if (li && (ev.key === 'Enter' || ev.key === ' ')) {
        ev.preventDefault();
        chooseTool(li.dataset.tool);
      }
    });
    for (const r of document.querySelectorAll('input[name="tool-target"]')) {
      r.addEventListener('change', () => { $('tool-targets').disabled = r.value !== 'pick' || !r.checked; });
    }
    $('tool-form').addEventListener('submit', (ev) => {
      ev.preventDefault();
      runTool();
    });
  }

  // ---------------------------------------------------------------------------------------------
  // sessions and the activity log

  async function loadSessions() {
    try {
      const r = await api('GET', '/api/sessions');
      app.sessions = r.sessions;
      renderSessions();
      if (app.review) {
        const st = shownState();
        if (!st) exitReview('The reviewed session ended or closed its plot.');
        else if (!app.plot || app.plot.version !== st.version || app.plot.plotId !== st.plotId) loadPlot(st.plotId, app.review.session);
      }
      renderHeader();
    } catch (e) {
      report(e);
    }
  }

  function renderSessions() {
    const ul = $('session-list');
    const frag = document.createDocumentFragment();
    let others = 0;
    for (const s of app.sessions) {
      const plot = s.plots.find((p) => p.plotId === s.activePlot) || null;
      if (!s.workbench && s.plots.some((p) => p.dirty)) others++;
      const li = document.createElement('li');
      li.dataset.session = s.id;
      li.classList.toggle('is-dirty', s.plots.some((p) => p.dirty));
      li.innerHTML = '<div class="sc"></div><div class="sv"></div><div class="sp"></div><div class="sd"></div><div class="sa"></div>';
      li.querySelector('.sc').textContent = s.workbench ? 'This workbench (you, the chat, the tool palette)' : s.client;
      li.querySelector('.sv').textContent = `${s.via} · ${s.id}${s.workbench ? '' : s.connected ? ' · connected' : ' · disconnected (kept for its unsaved changes)'}`;
      li.querySelector('.sp').textContent = plot ? `Plot: ${plot.title}${s.plots.length > 1 ? ` (+${s.plots.length - 1} more open)` : ''}` : 'No plot open';
      li.querySelector('.sd').textContent = plot ? (plot.dirty ? `● Unsaved changes${plot.undoLabel ? ` — last step: ${plot.undoLabel}` : ''}` : 'Saved') : '';
      const actions = li.querySelector('.sa');
      const button = (text, act, disabled, label) => {
        const b = document.createElement('button');
        b.type = 'button';
        b.textContent = text;
        b.dataset.act = act;
        b.disabled = !!disabled;
        if (label) b.setAttribute('aria-label', label);
        actions.appendChild(b);
      };
      if (plot && !s.workbench) {
        button(app.review && app.review.session === s.id ? 'Reviewing' : 'Review', 'review', app.review && app.review.session === s.id, `Review ${s.client}'s plot on the map`);
        button(plot.canUndo && plot.undoLabel ? `Undo: ${short(plot.undoLabel, 28)}` : 'Undo', 'undo', !plot.canUndo, plot.undoLabel ? `Undo ${plot.undoLabel} in ${s.client}'s session` : 'Undo');
        button('Save', 'save', !plot.dirty, `Save ${s.client}'s changes to ${plot.title}`);
        button('Revert', 'revert', !plot.dirty, `Revert ${s.client}'s unsaved changes`);
      }
      frag.appendChild(li);
    }
    ul.replaceChildren(frag);
    const badge = $('sessions-badge');
    badge.hidden = !others;
    badge.textContent = String(others);
    badge.title = `${others} other session${others === 1 ? '' : 's'} with unsaved changes`;
  }

  function startReview(session) {
    const s = app.sessions.find((x) => x.id === session);
    if (!s || !s.activePlot) return;
    app.review = { session, plotId: s.activePlot };
    hideDetails();
    renderSessions();
    renderHeader();
    loadPlot(s.activePlot, session);
  }

  function exitReview(message) {
    if (!app.review) return;
    app.review = null;
    if (message) toast(message);
    renderSessions();
    const a = activeState();
    if (a) loadPlot(a.plotId);
    else clearPlot();
    renderHeader();
  }

  async function sessionAction(session, what) {
    if (what === 'review') return startReview(session);
    if (what === 'revert' && !window.confirm('Discard this session’s unsaved changes? Its plot is reloaded from the file.')) return;
    await act(`/api/${what}`, true, session);
    await loadSessions();
  }

  async function loadActivity() {
    try {
      const r = await api('GET', '/api/activity');
      const ol = $('activity-list');
      const frag = document.createDocumentFragment();
      for (const e of r.entries.slice().reverse()) {
        const li = document.createElement('li');
        li.dataset.action = e.action;
        li.dataset.session = e.session;
        li.innerHTML = '<span class="at"></span><span class="aw"></span> <span class="ax"></span>';
        li.querySelector('.at').textContent = e.at.slice(11, 19);
        li.querySelector('.aw').textContent = e.who;
        li.querySelector('.ax').textContent = `${e.action}: ${e.what} — ${e.plotTitle || e.plotId} (${e.session})`;
        li.title = `${e.at} · ${e.who} · ${e.action} · ${e.what} · ${e.plotTitle} · session ${e.session}`;
        frag.appendChild(li);
      }
      if (!r.entries.length) {
        const li = document.createElement('li');
        li.className = 'muted';
        li.textContent = 'Nothing applied yet.';
        frag.appendChild(li);
      }
      ol.replaceChildren(frag);
    } catch (e) {
      report(e);
    }
  }

  function sessionEvents() {
    $('session-list').addEventListener('click', (ev) => {
      const b = ev.target.closest('button[data-act]');
      if (b) sessionAction(b.closest('li').dataset.session, b.dataset.act);
    });
    $('review-exit').addEventListener('click', () => exitReview());
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

  // ---------------------------------------------------------------------------------------------
  // live updates

  // A plain headless Chromium taking a picture (`chromium --headless --screenshot
  // --virtual-time-budget=…`) lets its virtual time run only while no request is open, and a
  // live stream never ends: there the state is polled instead, so the picture is taken. Driven
  // browsers (navigator.webdriver: Playwright, Puppeteer, WebDriver) and people get the stream.
  const PICTURE = /HeadlessChrome/.test(navigator.userAgent) && !navigator.webdriver;

  function connectLive() {
    const live = $('live');
    if (PICTURE) {
      live.textContent = 'live: polled (headless picture)';
      live.className = 'live';
      const poll = async () => {
        await refreshState();
        setTimeout(poll, 2000);
      };
      setTimeout(poll, 2000);
      return;
    }
    const es = new EventSource('/api/events');
    es.addEventListener('state', (ev) => {
      live.textContent = 'live';
      live.className = 'live ok';
      try {
        onState(JSON.parse(ev.data));
      } catch (e) {
        report(e);
      }
    });
    es.onopen = () => {
      live.textContent = 'live';
      live.className = 'live ok';
    };
    es.onerror = () => {
      live.textContent = 'live: reconnecting';
      live.className = 'live down';
    };
    app.events = es;
  }

  // ---------------------------------------------------------------------------------------------
  // the unit setting and the result table's events

  // The server's unit setting ({distance, speed}) shown and used here.
  function applyUnits(u) {
    if (u && M_PER[u.distance]) app.units.dist = u.distance;
    if (u && MPS_PER[u.speed]) app.units.speed = u.speed;
    $('unit-dist').value = app.units.dist;
    $('unit-speed').value = app.units.speed;
  }

  // The page's choice becomes the server's setting, which tool runs from the page, the chat and
  // attached agents take where they leave their unit out.
  async function saveUnits() {
    try {
      const r = await api('POST', '/api/settings', { units: { distance: app.units.dist, speed: app.units.speed } });
      const was = `${app.units.dist} ${app.units.speed}`;
      applyUnits(r.units);
      if (`${app.units.dist} ${app.units.speed}` !== was) unitsChanged();
    } catch (e) {
      report(e);
    }
  }

  function unitsChanged() {
    const d = app.datasets.find((x) => x.id === app.datasetShown);
    renderDataset(d || null);
    readoutKey = null;
    renderReadout();
    if (app.details && app.byId.has(app.details)) showDetails(app.byId.get(app.details));
    for (const el of $('tool-fields').querySelectorAll('select[data-unit-param]')) {
      const c = unitChoice(el.dataset.unitParam, [...el.options].map((o) => o.value));
      if (c !== null) el.value = c;
    }
    requestDraw();
  }

  function resultEvents() {
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
  }

  // ---------------------------------------------------------------------------------------------
  // wiring

  function mapEvents() {
    let drag = null;
    canvas.addEventListener('pointerdown', (ev) => {
      if (ev.button !== 0) return;
      canvas.setPointerCapture(ev.pointerId);
      drag = { x: ev.offsetX, y: ev.offsetY, x0: ev.offsetX, y0: ev.offsetY, moved: false };
    });
    canvas.addEventListener('pointermove', (ev) => {
      if (!drag) return;
      const dx = ev.offsetX - drag.x, dy = ev.offsetY - drag.y;
      if (!drag.moved && Math.abs(ev.offsetX - drag.x0) + Math.abs(ev.offsetY - drag.y0) > 4) {
        drag.moved = true;
        canvas.classList.add('dragging');
      }
      if (drag.moved) {
        panBy(dx, dy);
        drag.x = ev.offsetX;
        drag.y = ev.offsetY;
      }
    });
    const end = (ev) => {
      if (!drag) return;
      const wasClick = !drag.moved;
      drag = null;
      canvas.classList.remove('dragging');
      if (wasClick && ev.type === 'pointerup' && app.view) {
        const d = hitTest(ev.offsetX, ev.offsetY);
        if (d) {
          showDetails(d);
          selectId(d.id, ev.shiftKey || ev.metaKey || ev.ctrlKey);
        } else if (!ev.shiftKey) {
          hideDetails();
          setSelection([]);
        }
      }
    };
    canvas.addEventListener('pointerup', end);
    canvas.addEventListener('pointercancel', end);
    canvas.addEventListener('wheel', (ev) => {
      ev.preventDefault();
      zoomAt(Math.exp(-ev.deltaY * 0.0015), ev.offsetX, ev.offsetY);
    }, { passive: false });
    canvas.addEventListener('keydown', (ev) => {
      const step = 60;
      const keys = {
        ArrowLeft: () => panBy(step, 0), ArrowRight: () => panBy(-step, 0),
        ArrowUp: () => panBy(0, step), ArrowDown: () => panBy(0, -step),
        '+': () => zoomAt(1.4, W / 2, H / 2), '=': () => zoomAt(1.4, W / 2, H / 2),
        '-': () => zoomAt(1 / 1.4, W / 2, H / 2), _: () => zoomAt(1 / 1.4, W / 2, H / 2),
        0: () => { fit(); requestDraw(); },
        Escape: () => setSelection([]),
      };
      const f = keys[ev.key];
      if (f && !ev.ctrlKey && !ev.metaKey && !ev.altKey) {
        ev.preventDefault();
        f();
      }
    });
    $('zoom-in').addEventListener('click', () => zoomAt(1.4, W / 2, H / 2));
    $('zoom-out').addEventListener('click', () => zoomAt(1 / 1.4, W / 2, H / 2));
    $('zoom-fit').addEventListener('click', () => { fit(); requestDraw(); });
    $('legend').addEventListener('toggle', () => {
      if (app.legendSetting) app.legendSetting = false;
      else app.legendChosen = $('legend').open;
      // a fitted view stays clear of the legend as it opens or folds
      if (app.view && app.view.auto && app.plot) {
        fit(app.view.box);
        requestDraw();
      }
    });
    new ResizeObserver(() => resize()).observe(canvas.parentElement);
  }

  function editable(el) {
    return el && (el.tagName === 'INPUT' || el.tagName === 'TEXTAREA' || el.isContentEditable);
  }

  function keyEvents() {
    document.addEventListener('keydown', (ev) => {
      const mod = ev.ctrlKey || ev.metaKey;
      if (!mod || ev.altKey) return;
      const k = ev.key.toLowerCase();
      if (k === 's') {
        ev.preventDefault();
        save();
      } else if (k === 'z' && !editable(document.activeElement)) {
        ev.preventDefault();
        if (ev.shiftKey) redo(); else undo();
      } else if (k === 'y' && !editable(document.activeElement)) {
        ev.preventDefault();
        redo();
      }
    });
  }

  function buttons() {
    $('btn-undo').addEventListener('click', undo);
    $('btn-redo').addEventListener('click', redo);
    $('btn-save').addEventListener('click', save);
    $('btn-revert').addEventListener('click', revert);
    $('revert-cancel').addEventListener('click', () => $('revert-dialog').close());
    $('revert-ok').addEventListener('click', () => {
      $('revert-dialog').close();
      act('/api/revert', true);
    });
    $('confirm-approve').addEventListener('click', () => answerConfirm('approve'));
    $('confirm-decline').addEventListener('click', () => answerConfirm('decline'));
    $('confirm-dialog').addEventListener('cancel', (ev) => {
      // Escape declines.
      ev.preventDefault();
      answerConfirm('decline');
    });
    $('import-form').addEventListener('submit', (ev) => {
      ev.preventDefault();
      importFiles();
    });
    $('search-form').addEventListener('submit', (ev) => {
      ev.preventDefault();
      search($('search-text').value.trim());
    });
    $('results').addEventListener('click', (ev) => {
      const b = ev.target.closest('button.open');
      if (b) openPlot(b.closest('li').dataset.plotId);
    });
    $('dataset-select').addEventListener('change', () => {
      const d = app.datasets.find((x) => x.id === $('dataset-select').value);
      renderDataset(d || null);
    });
    $('chat-form').addEventListener('submit', (ev) => {
      ev.preventDefault();
      const text = $('chat-input').value.trim();
      if (!text) return;
      $('chat-input').value = '';
      sendChat(text);
    });
    $('chat-input').addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter' && !ev.shiftKey) {
        ev.preventDefault();
        $('chat-form').requestSubmit();
      }
    });
  }

  async function start() {
    mapEvents();
    rowEvents();
    keyEvents();
    buttons();
    timeEvents();
    tabEvents();
    toolEvents();
    sessionEvents();
    $('details-close').addEventListener('click', hideDetails);
    $('dataset-csv').addEventListener('click', downloadCsv);
    for (const [id, key] of [['unit-dist', 'dist'], ['unit-speed', 'speed']]) {
      $(id).addEventListener('change', () => {
        app.units[key] = $(id).value;
        unitsChanged();
        saveUnits();
      });
    }
    resultEvents();
    // the chart of the world until a plot is open; the coastline is read meanwhile
    measureCanvas();
    worldView();
    loadLand();
    resize();
    // The page arrives with the session state and the config embedded, so an open plot is asked
    // for at once; without them (an old page, a proxy) they are fetched.
    stats.startAt = performance.now();
    let boot = null;
    try {
      const el = document.getElementById('boot');
      boot = el ? JSON.parse(el.textContent) : null;
    } catch (_) {
      boot = null;
    }
    if (boot && boot.settings) applyUnits(boot.settings.units);
    else api('GET', '/api/settings').then((r) => { applyUnits(r.units); unitsChanged(); }).catch(() => { /* an older server: nm and kn */ });
    if (boot && boot.state) onState(boot.state);
    else {
      try {
        onState(await api('GET', '/api/state'));
      } catch (e) {
        report(e);
      }
    }
    try {
      app.config = boot && boot.config ? boot.config : await api('GET', '/api/config');
      // Without a model the palette is where the person works: show it first.
      showTab(app.config.chat.configured ? 'chat' : 'tools');
      if (app.config.chat.configured) {
        chatMsg('info', `Ask in plain words, e.g. “colour the submarine track red”. Edits ask you first and stay unsaved until you Save. Model: ${app.config.chat.description || 'configured'}.`);
        setChatEnabled(true);
      } else {
        chatMsg('info', app.config.chat.hint);
        setChatEnabled(false);
      }
    } catch (e) {
      report(e);
    }
    connectLive();
    search('');
    loadTools();
  }

  // A point on the canvas (CSS px) where a click picks this feature: the first of its vertices,
  // from the middle outwards, that the hit test gives to it and not to a neighbour.
  window.__workbench.screenPointOf = (id) => {
    const d = app.byId.get(id);
    if (!d || !d.onScreen) return null;
    const candidates = d.sp.map(([x, y]) => ({ x, y }));
    for (const a of d.sx) {
      const n = a.length / 2;
      const mid = Math.floor(n / 2);
      for (let k = 0; k < n; k++) {
        const i = k % 2 ? mid + (k + 1) / 2 : mid - k / 2;
        if (i >= 0 && i < n) candidates.push({ x: a[2 * i], y: a[2 * i + 1] });
      }
    }
    for (const c of candidates) {
      if (c.x < 5 || c.y < 5 || c.x > W - 60 || c.y > H - 5) continue;
      const h = hitTest(c.x, c.y);
      if (h && h.id === id) return c;
    }
    return null;
  };
  window.__workbench.drawnColor = (id) => {
    const d = app.byId.get(id);
    return d ? d.color : null;
  };
  window.__workbench.pixel = (x, y) => Array.from(mainCtx.getImageData(Math.round(x * dpr), Math.round(y * dpr), 1, 1).data);
  window.__workbench.zoomAt = zoomAt;
  window.__workbench.setTime = setTime;
  window.__workbench.screenOf = (lon, lat) => ({ x: X(lon), y: Y(lat) });
  window.__workbench.markerOf = (id) => {
    const d = app.byId.get(id);
    return d && d.marker ? { x: d.marker.x, y: d.marker.y, lon: d.marker.lon, lat: d.marker.lat, course: d.marker.course, speed: d.marker.speed } : null;
  };
  // Screen centre and half-axes (CSS px) of a circle/ellipse drawn to scale.
  window.__workbench.circleOf = (id) => {
    const d = app.byId.get(id);
    if (!d || !d.circle || !app.view) return null;
    const c = d.circle;
    const s = app.view.s / M_PER_DEG;
    return { x: X(c.lon), y: Y(c.lat), rx: c.a * s * (app.view.k / Math.max(0.05, Math.cos((c.lat * Math.PI) / 180))), ry: c.a * s, metres: c.a, pxPerDegLat: app.view.s };
  };
  window.__workbench.prepare = prepare;
  window.__workbench.isoMs = isoMs;
  window.__workbench.panBy = panBy;
  window.__workbench.draw = draw;

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
