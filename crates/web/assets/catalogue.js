// The catalogue: search, open, and import of REP files.
import { $, activeState, api, app, report } from './state.js';
import { esc, fmtSpan } from './format.js';
import { onState } from './plot.js';

let lastResults = [];

export async function search(text) {
  try {
    const r = await api('POST', '/api/catalog/search', text ? { text } : {});
    lastResults = r.matches;
    // A STAC API catalogue's count may be its server's estimate (totalIs 'about') or a lower
    // bound ('atLeast'); the folder store's is exact (no totalIs).
    const count = r.totalIs === 'about' ? `about ${r.total}` : r.totalIs === 'atLeast' ? `more than ${r.total - 1}` : `${r.total}`;
    const info = r.matches.length ? `${count} plot${r.total === 1 ? '' : 's'}${r.more ? ` — ${r.more}` : ''}` : r.message || 'No plots matched.';
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

export function markOpenResults() {
  const a = app.state ? app.state.activePlot : null;
  for (const li of $('results').children) li.classList.toggle('is-open', li.dataset.plotId === a);
}

// import: REP files read in the page, sent base64-encoded, imported as ONE plot by the server.

function bytesToBase64(buf) {
  const bytes = new Uint8Array(buf);
  let bin = '';
  for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  return btoa(bin);
}

async function importFiles() {
  const input = $('import-files');
  const info = $('import-info');
  const files = Array.from(input.files || []);
  if (!files.length) {
    info.textContent = 'Choose one or more REP files first.';
    return;
  }
  // Added to the open plot (its tracks get the files' sensors, arcs and notes), or a new plot.
  const into = $('import-into').checked ? activeState() : null;
  if ($('import-into').checked && !into) {
    info.textContent = 'Open the plot to add the files to first.';
    return;
  }
  $('import-run').disabled = true;
  info.textContent = `Importing ${files.length} file${files.length === 1 ? '' : 's'}…`;
  try {
    const payload = [];
    for (const f of files) payload.push({ name: f.name, contentBase64: bytesToBase64(await f.arrayBuffer()) });
    const body = { files: payload };
    if (into) body.into = into.plotId;
    else {
      body.replace = $('import-replace').checked;
      const name = $('import-plot').value.trim();
      if (name) body.plot = name;
    }
    const r = await api('POST', '/api/import', body);
    const kinds = r.kinds.map((k) => `${k.count} ${k.kind.toLowerCase()}`).join(', ');
    const skipped = r.files.flatMap((f) => f.notImported.map((u) => `${f.name}: ${u.count}× ${u.keyword} not imported (first at line ${u.first_line})`));
    if (r.added) {
      const on = r.attached.map((a) => `${a.track} ${a.count}`).join(', ');
      const loose = r.unattached.map((a) => `${a.count} name ${a.track}, which this plot has no track for`).join('; ');
      info.textContent = `Added to "${r.title}": ${kinds || 'nothing new'}${on ? ` (on ${on})` : ''}.${loose ? ' ' + loose + '.' : ''}${skipped.length ? ' ' + skipped.join('; ') + '.' : ''}`;
      input.value = '';
      await openPlot(r.plotId);
      return;
    }
    info.textContent = `Imported "${r.title}"${r.replaced ? ' (replaced)' : ''}: ${kinds}.${r.undated ? ' The files have no times.' : ''}${skipped.length ? ' ' + skipped.join('; ') + '.' : ''}`;
    input.value = '';
    // Show the new plot in the catalogue list (whatever was searched before may hide it).
    $('search-text').value = r.title;
    await search(r.title);
    await openPlot(r.plotId);
  } catch (e) {
    info.textContent = e.message;
  } finally {
    $('import-run').disabled = false;
  }
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

export function catalogueEvents() {
  $('import-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    importFiles();
  });
  $('search-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    search($('search-text').value.trim());
  });
  $('results').addEventListener('click', (ev) => {
    const b = ev.target.closest('button.open');
    if (b) openPlot(b.closest('li').dataset.plotId);
  });
}
