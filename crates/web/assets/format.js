// How the page writes times, distances, speeds, bearings and positions, and the small helpers
// every panel uses; pure but for the unit setting (`app.units`).
import { app } from './state.js';

export function esc(s) {
  return String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
}

export function fmtTime(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  if (isNaN(d)) return iso;
  return d.toISOString().replace('T', ' ').slice(0, 16);
}

// "03-02 00:00–06:00": the feature list's short form (the full one is in the title).
export function fmtSpanShort(a, b) {
  if (!a) return '';
  const A = fmtTime(a).slice(5);
  const B = fmtTime(b).slice(5);
  if (!b || A === B) return A;
  return A.slice(0, 5) === B.slice(0, 5) ? `${A}–${B.slice(6)}` : `${A}–${B}`;
}

export function fmtSpan(a, b) {
  if (!a) return '';
  const A = fmtTime(a);
  const B = fmtTime(b);
  if (!b || A === B) return A;
  return A.slice(0, 10) === B.slice(0, 10) ? `${A}–${B.slice(11)}` : `${A} – ${B}`;
}

// ISO-8601 duration (PnDTnHnMnS) in ms; null when unreadable.
export function durationMs(s) {
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

export function isoMs(s) {
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
export function marks(n, timeAt, every) {
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

export function pick(...vals) {
  for (const v of vals) if (v !== undefined && v !== null && v !== '') return v;
  return undefined;
}

export const M_PER_DEG = 111320; // metres per degree of latitude (and of longitude at the equator)

export const M_PER_NM = 1852;

// the unit setting's choices, as the server's unit setting names them
export const M_PER = { nm: M_PER_NM, yd: 0.9144, m: 1, km: 1000 }; // metres per distance unit

export const MPS_PER = { kn: M_PER_NM / 3600, 'm/s': 1, 'km/h': 1 / 3.6 }; // metres a second per speed unit

export function short(text, n) {
  const t = String(text);
  return t.length > n ? `${t.slice(0, n - 1)}…` : t;
}

export function fmtClock(t) {
  if (t === null || !isFinite(t)) return '--';
  return `${new Date(t).toISOString().slice(0, 19).replace('T', ' ')}Z`;
}

export function fmtDist(m, bare) {
  const u = app.units.dist;
  const v = m / M_PER[u];
  const text = u === 'nm' || u === 'km' ? v.toFixed(2) : Math.round(v).toLocaleString('en-GB');
  return bare ? text : `${text} ${u}`;
}

export function fmtSpeed(kn) {
  const u = app.units.speed;
  return `${((kn * MPS_PER.kn) / MPS_PER[u]).toFixed(1)} ${u}`;
}

export function fmtBearing(b) {
  return `${(Math.round(b * 10) / 10).toFixed(1).padStart(5, '0')}°`;
}

export function fmtLatLon(lat, lon) {
  const f = (v, pos, neg) => {
    const a = Math.abs(v);
    const deg = Math.floor(a);
    const min = (a - deg) * 60;
    return `${deg}°${min.toFixed(2).padStart(5, '0')}′${v < 0 ? neg : pos}`;
  };
  return `${f(lat, 'N', 'S')} ${f(lon, 'E', 'W')}`;
}

export function humanise(name) {
  return String(name).replace(/([a-z])([A-Z])/g, '$1 $2').replace(/[_-]+/g, ' ');
}
