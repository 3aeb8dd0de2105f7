// toolgate workbench — the page. Plain JavaScript, no libraries, nothing fetched from anywhere
// but this server. Native ES modules, served by the binary as they are written (no bundler, no
// build step); this one is the entry: it wires the panels together and starts the page.
//
//   state.js     the shared state (`app`), the API call, toasts
//   format.js    times, units and text as the page writes them
//   features.js  GeoJSON into things to draw, the feature list and the selection
//   map.js       the canvas map: coastline, drawing, hit test, legend, details, pan and zoom
//   time.js      the time controller, the readout at the time cursor, the narrative panel
//   results.js   the Results panel: tables, charts, CSV
//   tools.js     the tool palette (Tools tab)
//   chat.js      the chat panel and the confirmation dialog
//   live.js      the live stream: the one server-sent-events reader
//   plot.js      the shown plot: load, state updates, header, document actions
//   catalogue.js search, open and import
//   sessions.js  the Sessions tab: other sessions, review, the activity log
import { $, api, app, report, stats } from './state.js';
import { MPS_PER, M_PER, isoMs } from './format.js';
import { prepare, rowEvents } from './features.js';
import { loadLand, mapEvents, measureCanvas, requestDraw, resize, showDetails, worldView } from './map.js';
import { forgetReadout, markNarrative, renderReadout, setTime, timeEvents } from './time.js';
import { renderDataset, resultEvents } from './results.js';
import { loadTools, toolEvents, unitChoice } from './tools.js';
import { chatEvents, chatMsg, confirmEvents, setChatEnabled } from './chat.js';
import { connectLive } from './live.js';
import { keyEvents, onState, plotEvents } from './plot.js';
import { catalogueEvents, search } from './catalogue.js';
import { sessionEvents } from './sessions.js';

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

// ---------------------------------------------------------------------------------------------
// the unit setting

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
  forgetReadout();
  renderReadout();
  if (app.details && app.byId.has(app.details)) showDetails(app.byId.get(app.details));
  for (const el of $('tool-fields').querySelectorAll('select[data-unit-param]')) {
    const c = unitChoice(el.dataset.unitParam, [...el.options].map((o) => o.value));
    if (c !== null) el.value = c;
  }
  requestDraw();
}

async function start() {
  mapEvents();
  rowEvents();
  keyEvents();
  plotEvents();
  confirmEvents();
  catalogueEvents();
  chatEvents();
  timeEvents();
  tabEvents();
  toolEvents();
  sessionEvents();
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

// ---------------------------------------------------------------------------------------------
// hooks for the browser test (the map's own are in map.js)

window.__workbench.setTime = setTime;
window.__workbench.prepare = prepare;
window.__workbench.isoMs = isoMs;

if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
else start();
