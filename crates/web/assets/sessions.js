// The Sessions tab: the sessions on this server (MCP clients' among them), reviewing and acting
// on another session's plot, and the activity log.
import { $, activeState, api, app, report, shownState, toast } from './state.js';
import { short } from './format.js';
import { hideDetails } from './map.js';
import { act, clearPlot, loadPlot, renderHeader } from './plot.js';

export async function loadSessions() {
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

export async function loadActivity() {
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

export function sessionEvents() {
  $('session-list').addEventListener('click', (ev) => {
    const b = ev.target.closest('button[data-act]');
    if (b) sessionAction(b.closest('li').dataset.session, b.dataset.act);
  });
  $('review-exit').addEventListener('click', () => exitReview());
}
