// The map: drawn on a canvas by the code below — sea, Natural Earth's coastline, graticule, the
// plot's features at the controller's time, the result's rows ringed — with its hit test,
// legend, feature details, pan and zoom.
import { $, app, stats } from './state.js';
import { M_PER, M_PER_DEG, M_PER_NM, fmtClock, fmtDist, fmtLatLon, fmtSpan, fmtSpeed, pick } from './format.js';
import { offset, posIndex, selectId, setSelection, trackAt } from './features.js';

const CONTACT_WINDOW = 15 * 60000; // bearing lines and instant shapes without a trail window

// Whether a feature is shown at the controller's time: time-bounded ones only in their
// interval, instants within the trail window (or 15 minutes) before now.
function inTime(d) {
  const t = app.time.now;
  if (t === null || d.kind === 'TRACK') return true;
  if (d.t0 !== null || d.t1 !== null) return (d.t0 === null || t >= d.t0) && (d.t1 === null || t <= d.t1);
  if (d.tAt !== null) return d.tAt <= t && t - d.tAt <= (app.time.trail || CONTACT_WINDOW);
  return true;
}

export const canvas = $('map');

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

export async function loadLand() {
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

export let W = 0, H = 0;
let dpr = 1;

let frameWanted = false;

export function requestDraw() {
  if (frameWanted) return;
  frameWanted = true;
  requestAnimationFrame(() => {
    frameWanted = false;
    draw();
  });
}

// The canvas's size from its box (a layout change — the time controller appearing, a window
// resize — changes it).
export function measureCanvas() {
  const r = canvas.getBoundingClientRect();
  dpr = window.devicePixelRatio || 1;
  W = Math.max(1, Math.round(r.width));
  H = Math.max(1, Math.round(r.height));
  if (canvas.width !== Math.round(W * dpr)) canvas.width = Math.round(W * dpr);
  if (canvas.height !== Math.round(H * dpr)) canvas.height = Math.round(H * dpr);
}

export function resize() {
  measureCanvas();
  // a view that was fitted (on open, by Fit or 0) and not moved since stays fitted
  if (app.view && (app.view.auto || !app.view.fitted)) fit(app.view.box);
  draw();
}

export function plotBbox() {
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
export function fit(bbox, auto = true) {
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

export const X = (lon) => (lon - app.view.cx) * app.view.k * app.view.s + W / 2;

export const Y = (lat) => H / 2 - (lat - app.view.cy) * app.view.s;

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
export function warmSprites() {
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

export function draw() {
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

export function zoomTo(b) {
  const pad = Math.max(b[2] - b[0], b[3] - b[1]) * 0.2 + 0.005;
  fit([b[0] - pad, b[1] - pad, b[2] + pad, b[3] + pad]);
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

// ---------------------------------------------------------------------------------------------
// legend and feature details

export function renderLegend() {
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

export function worldView() {
  app.plotK = null;
  fit([-180, -60, 180, 75]);
}

export function showDetails(d) {
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

export function hideDetails() {
  app.details = null;
  $('details').hidden = true;
}

// ---------------------------------------------------------------------------------------------
// wiring

export function mapEvents() {
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
  $('details-close').addEventListener('click', hideDetails);
}

// ---------------------------------------------------------------------------------------------
// hooks for the browser test

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
window.__workbench.panBy = panBy;
window.__workbench.draw = draw;
