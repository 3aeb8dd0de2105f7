// The shown plot: loading it, following the session's state (from the live stream, the boot
// block and every action's reply), the header, and the document actions.
import { $, ApiFailure, activeState, api, app, report, shownState, stats, toast } from './state.js';
import { short } from './format.js';
import { fid, link, markRows, prepare, renderFeatures } from './features.js';
import { draw, fit, hideDetails, measureCanvas, plotBbox, renderLegend, requestDraw, showDetails, warmSprites, worldView } from './map.js';
import { renderNarrative, renderReadout, setupTime } from './time.js';
import { loadDatasets, renderDatasetList } from './results.js';
import { renderToolTargets } from './tools.js';
import { markOpenResults } from './catalogue.js';
import { loadActivity, loadSessions } from './sessions.js';


export async function loadPlot(plotId, session) {
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

export function clearPlot() {
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

export function onState(st) {
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

export async function refreshState() {
  try {
    onState(await api('GET', '/api/state'));
  } catch (e) {
    report(e);
  }
}

export function renderHeader() {
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

// ---------------------------------------------------------------------------------------------
// document actions

export async function act(path, okToast, session) {
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

function editable(el) {
  return el && (el.tagName === 'INPUT' || el.tagName === 'TEXTAREA' || el.isContentEditable);
}

export function keyEvents() {
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

export function plotEvents() {
  $('btn-undo').addEventListener('click', undo);
  $('btn-redo').addEventListener('click', redo);
  $('btn-save').addEventListener('click', save);
  $('btn-revert').addEventListener('click', revert);
  $('revert-cancel').addEventListener('click', () => $('revert-dialog').close());
  $('revert-ok').addEventListener('click', () => {
    $('revert-dialog').close();
    act('/api/revert', true);
  });
}
