// What every module shares: the page's one state object (`app`), its numbers for the browser
// test (`stats`), the API call and the toast.


export const $ = (id) => document.getElementById(id);
export const NS = 'http://www.w3.org/2000/svg';

export const stats = {
  loadedAt: null, // performance.now() when the first plot of this page load was drawn
  firstRenderMs: null, // ms from navigation start to the first drawn plot
  openToRenderMs: null, // ms from the last Open click to that plot drawn
  draws: [], // ms per map draw (last 1000)
  renders: 0,
  plotLoads: 0,
  landLoadedMs: null, // performance.now() when the coastline was read
  firstRenderWithLandMs: null, // the first plot drawn with its coastline
};

export const app = {
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


export class ApiFailure extends Error {
  constructor(message, status, code) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export async function api(method, path, body) {
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

export function toast(message, bad) {
  const t = $('toast');
  t.textContent = message;
  t.classList.toggle('bad', !!bad);
  t.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { t.hidden = true; }, bad ? 8000 : 3500);
}

export function report(e) {
  // Only the message: never a stack trace.
  toast(e && e.message ? e.message : String(e), true);
}

export function activeState() {
  const st = app.state;
  if (!st || !st.activePlot) return null;
  return st.plots.find((p) => p.plotId === st.activePlot) || null;
}

// The plot state the header acts on: the reviewed session's plot, or the page's active one.
export function shownState() {
  if (app.review) {
    const s = app.sessions.find((x) => x.id === app.review.session);
    return s ? s.plots.find((p) => p.plotId === app.review.plotId) || null : null;
  }
  return activeState();
}
