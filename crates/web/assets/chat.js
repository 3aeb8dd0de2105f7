// The chat panel (a turn streamed from /api/chat) and the confirmation dialog that the chat and
// the tool palette both ask through.
import { $, api, app, report } from './state.js';
import { esc } from './format.js';
import { readSse } from './live.js';
import { refreshState } from './plot.js';

export function chatMsg(cls, text) {
  const div = document.createElement('div');
  div.className = `msg ${cls}`;
  if (text !== undefined) div.textContent = text;
  $('chat-log').appendChild(div);
  $('chat-log').scrollTop = $('chat-log').scrollHeight;
  return div;
}

export function setChatEnabled(on) {
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

// What a tool returned, as a line the analyst can skim: a JSON list by its length, a JSON object
// by its title or its keys, text by its first line; the whole result one click away. Refusals and
// failures stay whole (their words say what would work).
function resultSummary(text) {
  try {
    const v = JSON.parse(text);
    if (Array.isArray(v)) return `${v.length} item${v.length === 1 ? '' : 's'}`;
    if (v && typeof v === 'object') {
      const keys = Object.keys(v);
      const head = typeof v.title === 'string' ? `"${v.title}" — ` : '';
      return `${head}${keys.slice(0, 6).join(', ')}${keys.length > 6 ? ', …' : ''}`;
    }
  } catch (_) {
    // Not JSON: the first line.
  }
  const first = text.split('\n')[0];
  return first.length > 160 ? `${first.slice(0, 160)}…` : first;
}

function showResult(res, result, status) {
  const text = String(result ?? '');
  if ((status && status !== 'ok') || (text.length <= 160 && !text.includes('\n'))) {
    res.textContent = text;
    return;
  }
  res.textContent = '';
  const details = document.createElement('details');
  const summary = document.createElement('summary');
  summary.textContent = resultSummary(text);
  const body = document.createElement('div');
  body.className = 'tfull';
  body.textContent = text;
  details.append(summary, body);
  res.appendChild(details);
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

export function showConfirm(id, preview) {
  app.confirmId = id;
  $('confirm-title').textContent = preview.title;
  $('confirm-body').innerHTML = markdownLite(preview.body);
  const dlg = $('confirm-dialog');
  dlg.dataset.id = id;
  if (!dlg.open) dlg.showModal();
  $('confirm-approve').focus();
}

// The server closed confirmation `id` (answered here, timed out, or the run ended): the dialog
// goes if it still shows that one.
export function confirmationClosed(id) {
  if (app.confirmId === id) {
    app.confirmId = null;
    if ($('confirm-dialog').open) $('confirm-dialog').close();
  }
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
        let div = lastTool && lastTool.dataset.tool === ev.tool ? lastTool : null;
        if (!div) {
          div = chatMsg('tool');
          div.innerHTML = `<div><span class="tname">${esc(ev.tool)}</span></div><div class="tres"></div>`;
          div.dataset.tool = ev.tool;
        }
        showResult(div.querySelector('.tres'), ev.result, ev.status);
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
        confirmationClosed(ev.id);
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
      // an event that cannot be read is said in the chat, and the reply goes on
      await readSse(res, handle, (e) => chatMsg('error', `Could not read a chat event: ${e.message}`));
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

export function confirmEvents() {
  $('confirm-approve').addEventListener('click', () => answerConfirm('approve'));
  $('confirm-decline').addEventListener('click', () => answerConfirm('decline'));
  $('confirm-dialog').addEventListener('cancel', (ev) => {
    // Escape declines.
    ev.preventDefault();
    answerConfirm('decline');
  });
}

export function chatEvents() {
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
