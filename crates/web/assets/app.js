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
    d.bbox = bboxOf(d);
    return d;
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
  const ctx = canvas.getContext('2d');
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

  function resize() {
    const r = canvas.getBoundingClientRect();
    dpr = window.devicePixelRatio || 1;
    W = Math.max(1, Math.round(r.width));
    H = Math.max(1, Math.round(r.height));
    canvas.width = Math.round(W * dpr);
    canvas.height = Math.round(H * dpr);
    if (app.view && !app.view.fitted) fit();
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

  function fit(bbox) {
    const b = bbox || plotBbox();
    const cy = (b[1] + b[3]) / 2;
    const k = app.plotK || Math.max(0.05, Math.cos((cy * Math.PI) / 180));
    const dx = Math.max((b[2] - b[0]) * k, 1e-4);
    const dy = Math.max(b[3] - b[1], 1e-4);
    const s = Math.min((W * 0.9) / dx, (H * 0.9) / dy);
    app.view = { cx: (b[0] + b[2]) / 2, cy, s, k, fitted: W > 1 && H > 1 };
  }

  const X = (lon) => (lon - app.view.cx) * app.view.k * app.view.s + W / 2;
  const Y = (lat) => H / 2 - (lat - app.view.cy) * app.view.s;
  const LON = (x) => (x - W / 2) / (app.view.k * app.view.s) + app.view.cx;
  const LAT = (y) => (H / 2 - y) / app.view.s + app.view.cy;

  function zoomAt(factor, x, y) {
    if (!app.view) return;
    const lon = LON(x), lat = LAT(y);
    app.view.s = Math.min(Math.max(app.view.s * factor, 0.5), 5e6);
    // keep (lon, lat) under (x, y)
    app.view.cx = lon - (x - W / 2) / (app.view.k * app.view.s);
    app.view.cy = lat - (H / 2 - y) / app.view.s;
    requestDraw();
  }

  function panBy(dx, dy) {
    if (!app.view) return;
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
    const want = 90 / app.view.s; // degrees per ~90 px
    const step = STEPS.find((x) => x >= want) || 90;
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

  function draw() {
    const t0 = performance.now();
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.fillStyle = '#dfe9f3';
    ctx.fillRect(0, 0, W, H);
    if (!app.view || !app.drawables.length) {
      return;
    }
    graticule();
    const shown = app.drawables.filter((d) => visible(d, 40));
    for (const d of app.drawables) d.onScreen = false;
    for (const d of shown) {
      d.onScreen = true;
      project(d);
    }
    ctx.lineJoin = 'round';
    ctx.lineCap = 'round';
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
    // halos of selected lines under every line
    for (const d of shown) {
      if (!d.sx.length || !app.selected.has(d.id)) continue;
      pathLines(d);
      ctx.strokeStyle = HALO;
      ctx.lineWidth = d.width + 7;
      ctx.stroke();
    }
    // tracks and other lines
    for (const d of shown) {
      if (!d.sx.length) continue;
      pathLines(d);
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
    for (const d of shown) {
      if (d.kind !== 'TRACK' || !d.sx.length) continue;
      const pts = d.flat;
      const sxy = (i) => [X(pts[2 * i]), Y(pts[2 * i + 1])];
      ctx.fillStyle = d.symbolFill || d.color;
      ctx.strokeStyle = d.color;
      ctx.lineWidth = 1;
      for (const i of d.symbols) {
        const [x, y] = sxy(i);
        symbol(d.shape, x, y, d.radius);
        if (d.shape === 'cross') ctx.stroke(); else ctx.fill();
      }
      const n = pts.length / 2;
      if (n) {
        const [x, y] = sxy(n - 1);
        symbol(d.shape, x, y, d.radius + 1.5);
        if (d.shape === 'cross') ctx.stroke(); else { ctx.fill(); ctx.strokeStyle = '#fff'; ctx.stroke(); }
        labelled.push([x + 8, y, d.name, d.color, true, app.selected.has(d.id)]);
      }
      let lx = -1e9, ly = -1e9;
      for (const [i, text] of d.labels) {
        const [x, y] = sxy(i);
        if (x < -20 || x > W + 20 || y < -20 || y > H + 20) continue;
        if ((x - lx) * (x - lx) + (y - ly) * (y - ly) < 34 * 34) continue;
        lx = x;
        ly = y;
        ctx.fillStyle = d.color;
        ctx.fillRect(x - 1.5, y - 1.5, 3, 3);
        labelled.push([x + 4, y - 7, text, '#1b2430', false, false]);
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
    for (const l of labelled) (l[5] ? sel : l[4] ? names : times).push(l);
    ctx.lineWidth = 3;
    ctx.strokeStyle = 'rgba(255, 255, 255, 0.85)';
    for (const [group, font, charW, h] of [[sel, '600 12px system-ui, sans-serif', 7, 14], [names, '600 12px system-ui, sans-serif', 7, 14], [times, '10px system-ui, sans-serif', 6, 11]]) {
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
      if (app.openRequestedAt !== null) {
        stats.openToRenderMs = now - app.openRequestedAt;
        app.openRequestedAt = null;
      }
      canvas.dataset.plot = app.plot ? app.plot.plotId : '';
      canvas.dataset.version = app.plot ? String(app.plot.version) : '';
    }
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

  async function loadPlot(plotId) {
    if (app.loading) {
      app.reloadWanted = true;
      return app.loading;
    }
    app.loading = (async () => {
      try {
        const t0 = performance.now();
        const res = await fetch(`/api/plot?view=map&plotId=${encodeURIComponent(plotId)}`);
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
        const samePlot = app.plot && app.plot.plotId === view.plotId;
        const rows = new Map(view.inventory.map((r) => [r.id, r]));
        app.drawables = view.featureCollection.features.map((f) => prepare(f, rows.get(fid(f))));
        stats.lastLoad = { fetchMs: t1 - t0, parseMs: t2 - t1, prepareMs: performance.now() - t2, bytes: text.length, startedAt: t0 };
        app.byId = new Map(app.drawables.map((d) => [d.id, d]));
        app.inventory = view.inventory;
        delete view.featureCollection;
        app.plot = view;
        app.selected = new Set(view.selectedIds);
        stats.plotLoads++;
        if (!samePlot || !app.view) {
          const b = plotBbox();
          app.plotK = Math.max(0.05, Math.cos((((b[1] + b[3]) / 2) * Math.PI) / 180));
          fit();
        }
        app.firstDrawPending = true;
        $('empty').hidden = true;
        renderFeatures();
        renderHeader();
        draw();
      } catch (e) {
        report(e);
      } finally {
        app.loading = null;
      }
      if (app.reloadWanted) {
        app.reloadWanted = false;
        const a = activeState();
        if (a && (!app.plot || a.plotId !== app.plot.plotId || a.version !== app.plot.version)) await loadPlot(a.plotId);
      }
    })();
    return app.loading;
  }

  function clearPlot() {
    app.plot = null;
    app.drawables = [];
    app.byId = new Map();
    app.inventory = [];
    app.selected = new Set();
    $('empty').hidden = false;
    renderFeatures();
    renderHeader();
    draw();
  }

  function onState(st) {
    const prevDatasets = app.state ? app.state.datasets : -1;
    app.state = st;
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
    if (st.datasets !== prevDatasets) loadDatasets();
  }

  async function refreshState() {
    try {
      onState(await api('GET', '/api/state'));
    } catch (e) {
      report(e);
    }
  }

  function renderHeader() {
    const a = activeState();
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
    $('btn-redo').disabled = !(a && a.canRedo);
    $('btn-revert').disabled = !(a && a.dirty);
    $('btn-save').disabled = !(a && a.dirty);
  }

  async function setSelection(ids) {
    const a = activeState();
    if (!a) return;
    app.selected = new Set(ids);
    markRows();
    requestDraw();
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
      const info = r.matches.length ? `${r.total} plot${r.total === 1 ? '' : 's'}${r.more ? ` — ${r.more}` : ''}` : r.message || 'No plots matched.';
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

  async function act(path, okToast) {
    const a = activeState();
    if (!a) return;
    try {
      const r = await api('POST', path, { plotId: a.plotId });
      onState(r.state);
      if (okToast) toast(r.message);
    } catch (e) {
      report(e);
      refreshState();
    }
  }

  function undo() { const a = activeState(); if (a && a.canUndo) act('/api/undo', false); }
  function redo() { const a = activeState(); if (a && a.canRedo) act('/api/redo', false); }
  function save() { const a = activeState(); if (a && a.dirty) act('/api/save', true); else if (a) toast('Nothing to save: the plot has no unsaved changes.'); }
  function revert() {
    const a = activeState();
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
      const sel = $('dataset-select');
      sel.replaceChildren(...r.datasets.map((d) => {
        const o = document.createElement('option');
        o.value = d.id;
        o.textContent = `${d.id} · ${d.toolId}${d.kind === 'error' ? ' (failed)' : ''}`;
        return o;
      }));
      if (!r.datasets.length) {
        renderDataset(null);
        return;
      }
      const keep = !grew && r.datasets.find((d) => d.id === app.datasetShown);
      const show = keep || r.datasets[r.datasets.length - 1];
      sel.value = show.id;
      renderDataset(show);
    } catch (e) {
      report(e);
    }
  }

  function cell(v) {
    if (v === null || v === undefined) return '';
    if (typeof v === 'number') return Number.isInteger(v) ? String(v) : v.toFixed(2);
    if (typeof v === 'string') return /^\d{4}-\d\d-\d\dT/.test(v) ? fmtTime(v) : v;
    if (Array.isArray(v)) return v.map(cell).join(', ');
    return Object.keys(v).map((k) => `${k}: ${cell(v[k])}`).join('; ');
  }

  function findSeries(data) {
    if (!data || typeof data !== 'object') return null;
    for (const k of ['series', 'rows', 'samples', 'positions', 'tracks', 'features', 'classifications']) {
      if (Array.isArray(data[k]) && data[k].length && typeof data[k][0] === 'object') return data[k];
    }
    if (Array.isArray(data) && data.length && typeof data[0] === 'object') return data;
    return null;
  }

  function renderDataset(d) {
    app.datasetShown = d ? d.id : null;
    const table = $('dataset-table');
    const chart = $('dataset-chart');
    chart.replaceChildren();
    if (!d) {
      $('dataset-summary').classList.remove('is-error');
      $('dataset-summary').textContent = 'Analytical tools (e.g. range-bearing) put their results here.';
      table.replaceChildren();
      return;
    }
    const failed = d.kind === 'error';
    $('dataset-summary').classList.toggle('is-error', failed);
    $('dataset-summary').textContent = failed ? `${d.toolId} failed: ${d.summary}` : `${d.toolId}: ${d.summary}`;
    if (failed) {
      table.replaceChildren();
      return;
    }
    const series = findSeries(d.data);
    let head, rows;
    if (series) {
      const cols = [];
      for (const r of series.slice(0, 50)) for (const k of Object.keys(r)) if (!cols.includes(k)) cols.push(k);
      head = cols;
      rows = series.slice(0, 1000).map((r) => cols.map((c) => cell(r[c])));
    } else {
      head = ['field', 'value'];
      rows = Object.keys(d.data || {}).map((k) => [k, cell(d.data[k])]);
    }
    table.innerHTML = `<thead><tr>${head.map((h) => `<th scope="col">${esc(h)}</th>`).join('')}</tr></thead><tbody>${rows.map((r) => `<tr>${r.map((c) => `<td>${esc(c)}</td>`).join('')}</tr>`).join('')}</tbody>`;
    if (series) chartSeries(chart, series);
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

  function chartSeries(el, series) {
    const times = series.map((r) => Date.parse(r.time));
    if (!times.every((t) => isFinite(t)) || series.length < 2) return;
    const numeric = Object.keys(series[0]).filter((k) => k !== 'time' && typeof series[0][k] === 'number');
    if (!numeric.length) return;
    const keys = numeric.slice(0, 2);
    const conv = (k) => (k === 'range_m' ? (v) => v / 1852 : (v) => v);
    const label = (k) => (k === 'range_m' ? 'range (nm)' : k === 'bearing_deg' ? 'bearing (°)' : k);
    const w = Math.max(200, el.clientWidth || 400), h = Math.max(100, el.clientHeight || 160);
    const m = { l: 44, r: keys.length > 1 ? 44 : 10, t: 16, b: 22 };
    const t0 = Math.min(...times), t1 = Math.max(...times);
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
      let lo = Math.min(...vals), hi = Math.max(...vals);
      if (k === 'bearing_deg') { lo = 0; hi = 360; }
      if (hi - lo < 1e-9) { hi = lo + 1; }
      const y = (v) => h - m.b - ((v - lo) / (hi - lo)) * (h - m.t - m.b);
      if (n === 0) {
        for (let i = 0; i <= 4; i++) {
          const v = lo + ((hi - lo) * i) / 4;
          add('line', { class: 'grid', x1: m.l, x2: w - m.r, y1: y(v), y2: y(v) });
          add('text', { x: m.l - 4, y: y(v) + 4, 'text-anchor': 'end' }, v.toFixed(hi - lo < 10 ? 1 : 0));
        }
      } else {
        for (let i = 0; i <= 4; i++) {
          const v = lo + ((hi - lo) * i) / 4;
          add('text', { x: w - m.r + 4, y: y(v) + 4 }, v.toFixed(0));
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
  // live updates

  function connectLive() {
    const live = $('live');
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
        if (d) selectId(d.id, ev.shiftKey || ev.metaKey || ev.ctrlKey);
        else if (!ev.shiftKey) setSelection([]);
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
  window.__workbench.pixel = (x, y) => Array.from(ctx.getImageData(Math.round(x * dpr), Math.round(y * dpr), 1, 1).data);
  window.__workbench.zoomAt = zoomAt;
  window.__workbench.prepare = prepare;
  window.__workbench.isoMs = isoMs;
  window.__workbench.panBy = panBy;
  window.__workbench.draw = draw;

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
