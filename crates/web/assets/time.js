// The time controller (slider, steps, play), the readout at the time cursor, and the
// narrative panel that follows the time.
import { $, app } from './state.js';
import { esc, fmtBearing, fmtClock, fmtDist, fmtSpeed } from './format.js';
import { trackAt } from './features.js';
import { draw, requestDraw, showDetails } from './map.js';

export function setupTime(keep) {
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

export function setTime(t) {
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

export function stopPlay() {
  app.time.playing = false;
  $('time-play').textContent = '▶';
  $('time-play').setAttribute('aria-label', 'Play');
}

export function timeEvents() {
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

// The tracks the readout shows: the selected ones, else every track of a plot of a few.
function readoutTracks() {
  const tracks = app.drawables.filter((d) => d.kind === 'TRACK' && d.n);
  const sel = [...app.selected].map((id) => app.byId.get(id)).filter((d) => d && d.kind === 'TRACK' && d.n);
  if (sel.length) return { rows: sel.slice(0, 8), pairs: sel.length >= 2 ? sel.slice(1, 4).map((b) => [sel[0], b]) : [] };
  return { rows: tracks.length <= 6 ? tracks : [], pairs: [], hint: tracks.length > 6 };
}

let readoutKey = null;
// The readout is built anew at its next render (the units changed: its text, not its rows).
export function forgetReadout() {
  readoutKey = null;
}


export function renderReadout() {
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

export function renderNarrative() {
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

export function markNarrative() {
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
