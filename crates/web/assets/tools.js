// The tool palette (Tools tab): every registry tool, a form from its JSON Schema, run through
// the same gate as the chat and MCP clients.
import { $, activeState, api, app, report } from './state.js';
import { humanise } from './format.js';
import { confirmationClosed, showConfirm } from './chat.js';
import { readSse } from './live.js';
import { refreshState } from './plot.js';

export async function loadTools() {
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
export function unitChoice(name, choices) {
  if (!/(^|_)units?$/.test(name)) return null;
  const want = UNIT_SPELLINGS[/speed/.test(name) ? app.units.speed : app.units.dist];
  const c = choices.find((x) => want.includes(String(x).toLowerCase()));
  return c === undefined ? null : c;
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

export function renderToolTargets() {
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
        else if (type === 'confirmationClosed') confirmationClosed(ev.id);
        else if (type === 'toolCallFinished') toolResult(ev.result, ev.status);
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

export function toolEvents() {
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
