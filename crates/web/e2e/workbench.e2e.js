// End-to-end test of the workbench page in headless Chromium, driven by playwright-core.
// Started by crates/web/tests/browser.rs, which runs the server (demo store, scripted chat
// backend) and passes:
//   WORKBENCH_URL          the workbench with the scripted chat backend
//   WORKBENCH_URL_NO_CHAT  a second workbench without a chat backend
//   STORE_DIR              the demo store the first one serves (to check saved files)
//   ARTIFACTS              where screenshots and metrics.json go
//   CHROMIUM               the browser binary (default /usr/bin/chromium)
// Prints one line `E2E-METRICS {json}` and exits non-zero on the first failed check.
'use strict';

const { chromium } = require('playwright-core');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const { execFile } = require('node:child_process');
const path = require('node:path');

const BASE = process.env.WORKBENCH_URL;
const BASE_NO_CHAT = process.env.WORKBENCH_URL_NO_CHAT;
// Both workbenches answer only requests with this token; the first visit swaps it for a session
// cookie (a per-start secret, never the token: browsers send cookies to every port of a host).
const TOKEN = process.env.WORKBENCH_TOKEN;
const STORE = process.env.STORE_DIR;
const STORE_NO_CHAT = process.env.STORE_DIR_NO_CHAT;
const MCP_PYTHON = process.env.MCP_PYTHON;
const OUT = process.env.ARTIFACTS;
const EXE = process.env.CHROMIUM || '/usr/bin/chromium';
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const ALPHA = 'stac://demo/alpha-day1/item.json';
const BULK = 'stac://demo/bulk-tracks/item.json';
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

const metrics = {};
const consoleErrors = [];
const pageErrors = [];
const external = [];
let expectedConsole = null; // a RegExp of one console error a step provokes on purpose
let shot = 0;
let currentPage = null;

function log(...a) {
  console.log('[e2e]', ...a);
}

async function screenshot(page, name) {
  shot += 1;
  const file = path.join(OUT, `${String(shot).padStart(2, '0')}-${name}.png`);
  await page.screenshot({ path: file });
  log('screenshot', file);
  return file;
}

function stat(xs) {
  if (!xs.length) return null;
  const s = xs.slice().sort((a, b) => a - b);
  const q = (p) => s[Math.min(s.length - 1, Math.floor(p * s.length))];
  const mean = s.reduce((a, b) => a + b, 0) / s.length;
  const r = (x) => Math.round(x * 100) / 100;
  return { n: s.length, mean: r(mean), p50: r(q(0.5)), p95: r(q(0.95)), max: r(s[s.length - 1]) };
}

async function serverState(page) {
  return page.evaluate(() => fetch('/api/state').then((r) => r.json()));
}

function activeOf(st) {
  return st.plots.find((p) => p.plotId === st.activePlot);
}

async function waitFor(page, fn, arg, what, timeout = 10000) {
  try {
    await page.waitForFunction(fn, arg, { timeout, polling: 50 });
  } catch (e) {
    throw new Error(`timed out waiting for ${what}`);
  }
}

async function openFromSearch(page, text, title, plotId) {
  await page.fill('#search-text', text);
  await page.press('#search-text', 'Enter');
  const li = page.locator('#results li', { hasText: title });
  await li.first().waitFor();
  await li.first().getByRole('button', { name: `Open ${title}` }).click();
  await waitFor(page, (id) => {
    const wb = window.__workbench;
    return wb.app.plot && wb.app.plot.plotId === id && wb.stats.openToRenderMs !== null && document.getElementById('map').dataset.plot === id;
  }, plotId, `plot ${plotId} drawn`);
}

async function mapPoint(page, id) {
  const p = await page.evaluate((fid) => window.__workbench.screenPointOf(fid), id);
  assert.ok(p, `feature ${id} is on screen`);
  const box = await page.locator('#map').boundingBox();
  return { x: box.x + p.x, y: box.y + p.y, local: p };
}

async function colourOf(page, id) {
  return page.evaluate((fid) => window.__workbench.drawnColor(fid), id);
}

// The most saturated red near a feature's screen point, as [r, g, b].
async function reddest(page, id) {
  const p = await page.evaluate((fid) => window.__workbench.screenPointOf(fid), id);
  return page.evaluate(({ x, y }) => {
    let best = null;
    for (let dx = -2; dx <= 2; dx++) {
      for (let dy = -2; dy <= 2; dy++) {
        const [r, g, b] = window.__workbench.pixel(x + dx, y + dy);
        const score = r - (g + b) / 2;
        if (!best || score > best.score) best = { score, rgb: [r, g, b] };
      }
    }
    return best.rgb;
  }, p);
}

async function chat(page, text) {
  await page.fill('#chat-input', text);
  await page.press('#chat-input', 'Enter');
}

async function waitDialog(page) {
  await page.locator('#confirm-dialog[open]').waitFor({ timeout: 10000 });
  return {
    title: await page.textContent('#confirm-title'),
    body: await page.innerText('#confirm-body'),
  };
}

async function waitChatIdle(page) {
  await waitFor(page, () => !window.__workbench.app.chatBusy, null, 'the chat turn to end');
}

function featureFile() {
  return JSON.parse(fs.readFileSync(path.join(STORE, 'alpha-day1', 'features.geojson'), 'utf8'));
}

function savedColour(id) {
  const f = featureFile().features.find((x) => x.id === id);
  return f.properties.style.line.color;
}

function noChatFile() {
  return JSON.parse(fs.readFileSync(path.join(STORE_NO_CHAT, 'alpha-day1', 'features.geojson'), 'utf8'));
}

function noChatColour(id) {
  return noChatFile().features.find((x) => x.id === id).properties.style.line.color;
}

// The magenta of the test's circles and sensor line, as [r, g, b] ± a little antialiasing.
function magenta([r, g, b]) {
  return r > 170 && b > 170 && g < 110;
}

async function pixel(page, x, y) {
  return page.evaluate(({ x, y }) => window.__workbench.pixel(x, y), { x, y });
}

// Whether any pixel within `tol` px of (x, y) is magenta.
async function magentaNear(page, x, y, tol = 2) {
  return page.evaluate(({ x, y, tol }) => {
    for (let dx = -tol; dx <= tol; dx++) {
      for (let dy = -tol; dy <= tol; dy++) {
        const [r, g, b] = window.__workbench.pixel(x + dx, y + dy);
        if (r > 170 && b > 170 && g < 110) return true;
      }
    }
    return false;
  }, { x, y, tol });
}

// E2E_SOFT=1: the chart, readout, result and picture steps (`step`) report every failure and go
// on, so a run against an older page shows each check that fails there; the run still fails.
const SOFT = process.env.E2E_SOFT === '1';
const softFailures = [];
async function step(name, fn) {
  if (!SOFT) return fn();
  try {
    await fn();
    log('step passed:', name);
  } catch (e) {
    softFailures.push(`${name}: ${e.message}`);
    log('STEP FAILED:', name, '—', e.message);
  }
  return undefined;
}

// Where every vertex of the plot's features lands on the map (CSS px), and which lie outside
// the map or under its legend or zoom buttons.
async function fitReport(page) {
  return page.evaluate(() => {
    const wb = window.__workbench;
    const m = document.getElementById('map').getBoundingClientRect();
    const rel = (id) => {
      const el = document.getElementById(id) || document.querySelector(id);
      if (!el || el.hidden) return null;
      const r = el.getBoundingClientRect();
      return r.width ? { l: r.left - m.left, t: r.top - m.top, r: r.right - m.left, b: r.bottom - m.top } : null;
    };
    const covers = [['legend', rel('legend')], ['zoom buttons', rel('.map-tools')]].filter(([, r]) => r);
    const outside = [], covered = [];
    let n = 0;
    for (const d of wb.app.drawables) {
      const pts = [];
      for (const l of d.lines) for (let i = 0; i < l.length; i += 2) pts.push([l[i], l[i + 1]]);
      for (const p of d.points) pts.push(p);
      for (const poly of d.polys) for (const r of poly) for (let i = 0; i < r.length; i += 2) pts.push([r[i], r[i + 1]]);
      if (d.circle) pts.push([d.bbox[0], d.bbox[1]], [d.bbox[2], d.bbox[3]]);
      for (const [lon, lat] of pts) {
        n++;
        const { x, y } = wb.screenOf(lon, lat);
        if (x < 0 || y < 0 || x > m.width || y > m.height) outside.push(`${d.id}@${x.toFixed(0)},${y.toFixed(0)}`);
        for (const [what, r] of covers) if (x >= r.l && x <= r.r && y >= r.t && y <= r.b) covered.push(`${d.id} under the ${what}`);
      }
    }
    return { n, outside: outside.slice(0, 5), outsideCount: outside.length, covered: [...new Set(covered)].slice(0, 5), coveredCount: covered.length, w: m.width, h: m.height };
  });
}

// The share of the pixels in a 9×9 block at (lon, lat) that are the chart's land colour.
async function landShare(page, lon, lat) {
  return page.evaluate(({ lon, lat }) => {
    const wb = window.__workbench;
    const { x, y } = wb.screenOf(lon, lat);
    let land = 0, n = 0;
    for (let dx = -4; dx <= 4; dx++) {
      for (let dy = -4; dy <= 4; dy++) {
        const [r, g, b] = wb.pixel(x + dx, y + dy);
        n++;
        // #ece4cc, the page's LAND
        if (Math.abs(r - 236) < 8 && Math.abs(g - 228) < 8 && Math.abs(b - 204) < 8) land++;
      }
    }
    return land / n;
  }, { lon, lat });
}

// The analyst's chart on opening Exercise Alpha: fitted clear of the overlays, the coastline
// drawn (west Cornwall and Exmoor are land, the sea south of the Lizard is sea), a graticule that
// gets finer as the map zooms in, and a legend that folds away.
async function chartChecks(page) {
  log('the chart: fitted on open, coastline, graticule, legend');
  await step('open fits the whole plot into the map, clear of the legend and the zoom buttons', async () => {
    await page.waitForTimeout(150); // a layout change after the open (the time controller) must not undo the fit
    const f = await fitReport(page);
    assert.ok(f.n > 100, `the plot has vertices: ${f.n}`);
    assert.equal(f.outsideCount, 0, `${f.outsideCount} vertices off the ${f.w}×${f.h} map, e.g. ${f.outside.join(' ')}`);
    assert.equal(f.coveredCount, 0, `vertices under an overlay: ${f.covered.join(', ')}`);
  });
  await step('the coastline: land drawn as land, sea as sea', async () => {
    await waitFor(page, () => Number(document.getElementById('map').dataset.landRings) > 0, null, 'the coastline drawn');
    for (const [name, lon, lat] of [['west Cornwall', -5.15, 50.2], ['Exmoor', -3.7, 51.12]]) {
      const share = await landShare(page, lon, lat);
      assert.ok(share > 0.6, `${name} (${lon}, ${lat}) is land on the map: ${Math.round(share * 100)}% land pixels`);
    }
    const sea = await landShare(page, -5.0, 49.8);
    assert.ok(sea < 0.05, `the sea south of the Lizard is sea: ${Math.round(sea * 100)}% land pixels`);
  });
  await screenshot(page, 'chart-alpha-fitted');
  await step('the graticule gets finer as the map zooms in', async () => {
    const g0 = await page.evaluate(() => Number(document.getElementById('map').dataset.graticule));
    // ×10 about the exercise area
    await page.evaluate(() => { const wb = window.__workbench; const c = wb.screenOf(-4.1, 50.4); wb.zoomAt(10, c.x, c.y); wb.draw(); });
    const g1 = await page.evaluate(() => Number(document.getElementById('map').dataset.graticule));
    assert.ok(g0 > 0 && g1 > 0 && g1 < g0, `graticule step ${g0}° → ${g1}° after zooming ×10`);
    await screenshot(page, 'chart-zoomed-graticule');
    await page.click('#zoom-fit');
  });
  await step('the legend folds and unfolds; the fitted plot stays clear of it', async () => {
    assert.equal(await page.evaluate(() => document.getElementById('legend').open), true, 'a short legend starts open');
    await page.click('#legend summary');
    await waitFor(page, () => !document.getElementById('legend').open, null, 'the legend folded');
    await page.click('#legend summary');
    await waitFor(page, () => document.getElementById('legend').open, null, 'the legend open again');
    await page.waitForTimeout(100);
    const f = await fitReport(page);
    assert.equal(f.coveredCount, 0, `vertices under an overlay after the legend reopened: ${f.covered.join(', ')}`);
  });
}

// The readout at the time cursor: each track's course and speed, and the range and bearing
// between two selected tracks — the range-bearing tool's numbers at the same time.
async function readoutChecks(page) {
  log('readout at the time cursor');
  const feat = noChatFile().features.find((f) => f.id === 'track-nelson');
  const k = feat.properties.positions.findIndex((q) => Date.parse(q.time) === Date.parse('2026-03-01T05:00:00Z'));
  await step('each track\'s course and speed at the cursor', async () => {
    await page.evaluate(() => window.__workbench.setTime(Date.parse('2026-03-01T05:00:00Z')));
    const row = page.locator('#readout .rd[data-id="track-nelson"]');
    await row.waitFor({ timeout: 3000 });
    assert.equal(Number(await row.getAttribute('data-course')), feat.properties.positions[k].course, 'Nelson\'s course at 05:00');
    const text = await row.innerText();
    assert.match(text, /HMS Nelson/);
    assert.match(text, new RegExp(`${feat.properties.positions[k].speed.toFixed(1)} kn`), `Nelson's speed in knots: ${text}`);
    assert.equal(await page.locator('#readout .rd').count(), 3, 'the three tracks of the plot');
  });
  await step('range and bearing between the selected tracks agree with the range-bearing tool', async () => {
    await page.click('#feature-rows tr[data-id="track-nelson"]');
    await page.click('#feature-rows tr[data-id="track-contact"]', { modifiers: ['Shift'] });
    await waitFor(page, () => window.__workbench.app.selected.size === 2, null, 'two tracks selected');
    await page.click('#tab-tools');
    await page.click('#tool-list li[data-tool="range-bearing"]');
    await page.check('input[name="tool-target"][value="selection"]');
    await page.click('#tool-run');
    await waitFor(page, () => /^range-bearing: /.test(document.getElementById('dataset-summary').textContent), null, 'the range-bearing result');
    const ds = await page.evaluate(() => fetch('/api/datasets').then((r) => r.json()));
    const rb = ds.datasets.filter((d) => d.toolId === 'range-bearing').pop();
    const sample = rb.data.series.find((x) => Date.parse(x.time) === Date.parse(rb.data.min.time));
    // the tool's range in whatever unit it was asked for (range_m, range_nm, range_yd, …)
    const key = Object.keys(sample).find((x) => /^range_/.test(x));
    sample.range_m = sample[key] * { m: 1, nm: 1852, yd: 0.9144, km: 1000 }[key.slice(6)];
    await page.evaluate((t) => window.__workbench.setTime(Date.parse(t)), sample.time);
    const pair = page.locator('#readout .rp[data-from="track-nelson"][data-to="track-contact"]');
    await pair.waitFor({ timeout: 3000 });
    const rangeM = Number(await pair.getAttribute('data-range-m'));
    const bearing = Number(await pair.getAttribute('data-bearing'));
    assert.ok(Math.abs(rangeM - sample.range_m) < 5, `readout range ${rangeM} m vs the tool's ${sample.range_m} m at ${sample.time}`);
    assert.ok(Math.abs(bearing - sample.bearing_deg) < 0.1, `readout bearing ${bearing}° vs the tool's ${sample.bearing_deg}°`);
    const text = await pair.innerText();
    assert.match(text, new RegExp(`${(sample.range_m / 1852).toFixed(2)} nm`), `the range in nm: ${text}`);
    await screenshot(page, 'readout-two-tracks');
    // play: the readout follows the cursor
    const before = await pair.innerText();
    await page.click('#time-play');
    await page.waitForTimeout(700);
    await page.click('#time-play');
    const after = await pair.innerText();
    assert.notEqual(after, before, 'the readout moved with the time while playing');
  });
  await step('one unit setting: yards on the readout, the scale bar, the results and the CSV', async () => {
    await page.selectOption('#unit-dist', 'yd');
    // the page's choice is the server's one setting (tool runs without a unit take it)
    await waitFor(page, () => fetch('/api/settings').then((r) => r.json()).then((s) => s.units.distance === 'yd'), null, 'the setting saved on the server');
    const pair = page.locator('#readout .rp').first();
    const rangeM = Number(await pair.getAttribute('data-range-m'));
    const yd = Math.round(rangeM / 0.9144).toLocaleString('en-GB');
    assert.match(await pair.innerText(), new RegExp(`${yd} yd`), 'the readout in yards');
    await page.evaluate(() => window.__workbench.draw());
    assert.match(await page.getAttribute('#map', 'data-scale'), / yd$/, 'the scale bar in yards');
    const headers = await page.locator('#dataset-table th').allTextContents();
    assert.ok(headers.includes('range (yd)'), `the result's range in yards: ${headers.join()}`);
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#dataset-csv')]);
    const csvPath = path.join(OUT, 'range-bearing-yd.csv');
    await download.saveAs(csvPath);
    assert.match(fs.readFileSync(csvPath, 'utf8').split('\r\n')[0], /range \(yd\)/, 'the CSV in yards');
    await screenshot(page, 'units-yards');
    // a tool's unit parameter starts at the setting, and follows it (track-stats offers nm, km, mi)
    await page.selectOption('#unit-dist', 'km');
    await page.click('#tool-list li[data-tool="track-stats"]');
    const unitParam = page.locator('#tool-fields select[data-param="distance_unit"]');
    assert.equal(await unitParam.inputValue(), 'km', 'track-stats asks for the setting\'s km');
    await page.selectOption('#unit-dist', 'nm');
    assert.equal(await unitParam.inputValue(), 'nm', 'and follows the setting back to nm');
    assert.match(await page.getAttribute('#map', 'data-scale') || '', / nm$/);
  });
  await page.evaluate(() => window.__workbench.app.selected.size && document.getElementById('map').focus());
  await page.keyboard.press('Escape');
}

// Speed Filter's positions: a table with pages, the positions ringed on the map, and a click on
// a row moves the time cursor to it; the wide table scrolls inside the Results panel.
async function speedFilterChecks(page) {
  log('speed filter: table with pages, highlighted on the map, row → time');
  await page.click('#tab-tools');
  await page.click('#tool-list li[data-tool="speed-filter"]');
  await page.locator('#tool-fields [data-param="min_knots"]').fill('12.5');
  await page.locator('#tool-fields [data-param="max_knots"]').fill('');
  await page.check('input[name="tool-target"][value="pick"]');
  await page.selectOption('#tool-targets', 'track-nelson');
  await page.click('#tool-run');
  await waitFor(page, () => /^speed-filter: /.test(document.getElementById('dataset-summary').textContent), null, 'the speed-filter result');
  const ds = await page.evaluate(() => fetch('/api/datasets').then((r) => r.json()));
  const sf = ds.datasets.filter((d) => d.toolId === 'speed-filter').pop();
  const positions = sf.data.tracks[0].positions;
  assert.ok(positions.length > 60, `Nelson has ${positions.length} positions at 12.5 kn or more`);
  await step('the filtered positions are rows of a table, in pages', async () => {
    assert.equal(await page.locator('#dataset-table tbody tr').count(), 50, 'the first page shows 50 rows');
    assert.equal(await page.textContent('#page-info'), `Rows 1–50 of ${positions.length}`);
    const head = await page.locator('#dataset-table thead th').allTextContents();
    for (const h of ['track name', 'time', 'speed (kn)']) assert.ok(head.includes(h), `column ${h}: ${head.join()}`);
    await page.click('#page-next');
    assert.equal(await page.textContent('#page-info'), `Rows 51–100 of ${positions.length}`);
    assert.match(await page.innerText('#dataset-table tbody tr:first-child'), new RegExp(positions[50].time.slice(11, 16)));
  });
  await step('the wide table scrolls inside the Results panel', async () => {
    const box = await page.evaluate(() => {
      const sc = document.getElementById('dataset-table').closest('.table-scroll');
      const panel = document.querySelector('.results-panel').getBoundingClientRect();
      const r = sc.getBoundingClientRect();
      return { right: r.right, panelRight: panel.right, overflowX: getComputedStyle(sc).overflowX, scrollW: sc.scrollWidth, clientW: sc.clientWidth, tableW: document.getElementById('dataset-table').getBoundingClientRect().width };
    });
    assert.ok(box.right <= box.panelRight + 1, `the table's box ends inside the panel: ${JSON.stringify(box)}`);
    assert.ok(box.overflowX === 'auto' || box.overflowX === 'scroll', `it scrolls sideways: ${JSON.stringify(box)}`);
    assert.ok(box.scrollW <= box.clientW || box.tableW > box.clientW, `a table wider than its box scrolls: ${JSON.stringify(box)}`);
  });
  await step('the filtered positions are ringed on the map', async () => {
    await page.click('#zoom-fit');
    await waitFor(page, (n) => Number(document.getElementById('map').dataset.resultMarks) === n, positions.length, `${positions.length} positions marked`);
    await page.evaluate(() => window.__workbench.draw());
    // a marked position, a few pixels off the track line: the highlight's yellow
    const p = positions[Math.floor(positions.length / 2)];
    const yellow = await page.evaluate(({ lon, lat }) => {
      const wb = window.__workbench;
      const { x, y } = wb.screenOf(lon, lat);
      let n = 0;
      for (const [dx, dy] of [[4, 0], [-4, 0], [0, 4], [0, -4], [3, 3], [-3, -3], [3, -3], [-3, 3]]) {
        const [r, g, b] = wb.pixel(x + dx, y + dy);
        if (r > 200 && g > 150 && b < 110) n++;
      }
      return n;
    }, p);
    assert.ok(yellow >= 3, `the position at ${p.time} is ringed in yellow (${yellow} of 8 probes)`);
  });
  await step('a click on a row moves the time cursor to it', async () => {
    const row = page.locator('#dataset-table tbody tr').nth(2);
    await row.click();
    const want = positions[52].time.replace('T', ' ').replace(/Z$/, 'Z');
    assert.equal(await page.textContent('#time-now'), want, 'the cursor at the row\'s time');
    assert.equal(await row.getAttribute('aria-selected'), 'true', 'the row is marked');
    await page.evaluate(() => window.__workbench.draw());
    await screenshot(page, 'speed-filter-highlighted');
  });
}

// Issue 32 item 6: the plain way to take a picture of a page — headless Chromium with a virtual
// time budget — finishes on the workbench (the live stream must not keep it waiting).
async function plainScreenshotCheck(base) {
  log('a picture with plain headless Chromium');
  await step('chromium --headless --screenshot --virtual-time-budget finishes', async () => {
    const file = path.join(OUT, 'plain-headless-screenshot.png');
    const profile = fs.mkdtempSync(path.join(OUT, 'chromium-profile-'));
    const t0 = Date.now();
    await new Promise((resolve, reject) => {
      execFile(EXE, ['--headless', '--no-sandbox', '--disable-gpu', `--user-data-dir=${profile}`, `--screenshot=${file}`,
        '--virtual-time-budget=5000', '--window-size=1400,900', `${base}/?token=${TOKEN}`],
      { timeout: 45000 }, (err, stdout, stderr) => (err ? reject(new Error(`chromium did not finish: ${err.message}\n${stderr.slice(-500)}`)) : resolve()));
    });
    metrics.plainScreenshotMs = Date.now() - t0;
    fs.rmSync(profile, { recursive: true, force: true });
    assert.ok(fs.statSync(file).size > 20000, 'a picture was written');
    log('plain headless screenshot in', metrics.plainScreenshotMs, 'ms:', file);
  });
}

function runPython(args, env) {
  return new Promise((resolve, reject) => {
    execFile(MCP_PYTHON, args, { cwd: __dirname, env: { ...process.env, ...env }, timeout: 60000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${err.message}\n${stdout}\n${stderr}`));
      else resolve(stdout);
    });
  });
}

// The workbench without a model: the tool palette, the time-aware map, circles to scale, and an
// HTTP MCP client's private session listed and saved from the page.
// Issue 17 item 2 in the page: two REP files (a track, and a file of every kind with sensor
// contacts) imported from the Catalogue panel as ONE plot, which opens with its sensor lines;
// the same import again is refused, and says how to replace.
async function importChecks(page) {
  log('import two REP files as one plot from the page');
  const rep = path.join(__dirname, '../../rep/tests/fixtures/rep');
  await page.click('#import-box summary');
  await page.setInputFiles('#import-files', [path.join(rep, 'valid/boat1.rep'), path.join(rep, 'kinds/every_kind.rep')]);
  await page.fill('#import-plot', 'E2E Layered Plot');
  await page.click('#import-run');
  await waitFor(page, () => /^Imported "E2E Layered Plot"/.test(document.getElementById('import-info').textContent), null, 'the import report', 20000);
  await waitFor(page, () => document.getElementById('plot-title').textContent === 'E2E Layered Plot', null, 'the imported plot opens');
  await waitFor(page, () => (window.__workbench.app.drawables || []).some((d) => d.sensors && d.sensors.some((sn) => sn.contacts.length)), null, 'the sensor contacts are loaded for drawing');
  const kinds = await page.evaluate(() => [...new Set(window.__workbench.app.drawables.map((d) => d.kind))].sort());
  for (const k of ['TRACK', 'SENSOR_ARC', 'DYNAMIC_CIRCLE', 'TMA_SOLUTION', 'NARRATIVE']) assert.ok(kinds.includes(k), `${k} is drawn from the layered plot: ${kinds}`);
  assert.ok(await page.evaluate(() => window.__workbench.app.drawables.filter((d) => d.kind === 'TRACK').length) >= 2, 'both files\' tracks');
  assert.ok(await page.evaluate(() => [...document.querySelectorAll('#results li')].some((li) => /E2E Layered Plot/.test(li.textContent))), 'the catalogue lists it');
  await page.evaluate(() => { const s = window.__workbench.app.drawables.find((d) => d.sensors && d.sensors.some((sn) => sn.contacts.length)); window.__workbench.setTime(s.sensors.find((sn) => sn.contacts.length).contacts[0].t); });
  await screenshot(page, 'imported-layered-plot');
  await page.setInputFiles('#import-files', [path.join(rep, 'valid/boat1.rep'), path.join(rep, 'kinds/every_kind.rep')]);
  expectedConsole = /status of 409/;
  await page.click('#import-run');
  await waitFor(page, () => /already exists.*Replace an existing plot/.test(document.getElementById('import-info').textContent), null, 'a second import is refused');
  expectedConsole = null;
}

// Issue 32, done means: the analyst's day on a plot of Debrief's own files — boat1.rep and
// boat2.rep imported from the page as one plot, legacy Debrief's sensor_arcs.rep added to it
// (`;SENSORARC` without the colon; its arcs join NELSON and COLLINGWOOD): opened fitted over the
// chart with its arcs drawn, played, the cursor readout read, Speed Filter's positions
// highlighted, a trim written sloppily read on the plot's day and counted in the question (a
// time nobody can place refused before any dialog), approved, undone, redone and saved.
async function analystDayChecks(page) {
  log("the analyst's day on boat1 + boat2 + sensor_arcs.rep");
  const rep = path.join(__dirname, '../../rep/tests/fixtures/rep');
  const t0 = Date.parse('1995-12-12T05:00:00Z');
  if (await page.isHidden('#import-form')) await page.click('#import-box summary');
  await page.setInputFiles('#import-files', [path.join(rep, 'valid/boat1.rep'), path.join(rep, 'valid/boat2.rep')]);
  await page.fill('#import-plot', 'E2E Boats');
  await page.uncheck('#import-into');
  await page.click('#import-run');
  await waitFor(page, () => document.getElementById('plot-title').textContent === 'E2E Boats', null, 'the boats plot opens', 30000);
  await page.setInputFiles('#import-files', [path.join(rep, 'legacy/sensor_arcs.rep')]);
  await page.fill('#import-plot', '');
  await page.check('#import-into');
  await page.click('#import-run');
  await waitFor(page, () => (window.__workbench.app.drawables || []).filter((d) => d.kind === 'SENSOR_ARC').length >= 46, null, "sensor_arcs.rep's 46 arcs drawn in the open plot", 30000);
  await page.uncheck('#import-into');
  const hosts = await page.evaluate(() => {
    const arcs = window.__workbench.app.drawables.filter((d) => d.kind === 'SENSOR_ARC');
    const hostName = (a) => { const h = a.track || a.host; return h && typeof h === 'object' ? h.name : h; };
    return [...new Set(arcs.map(hostName))].sort();
  });
  assert.deepEqual(hosts, ['COLLINGWOOD', 'NELSON'], `the arcs are drawn on the tracks they name: ${hosts}`);
  await step('the boats plot opens fitted, clear of the legend and the zoom buttons', async () => {
    await page.click('#zoom-fit');
    await page.waitForTimeout(150);
    const f = await fitReport(page);
    assert.equal(f.outsideCount, 0, `${f.outsideCount} vertices off the map, e.g. ${f.outside.join(' ')}`);
  });
  await page.evaluate((t) => window.__workbench.setTime(t), t0 + 20 * 60000);
  await screenshot(page, 'day-boats-arcs');
  await step('playing moves the time cursor and the readout names each track', async () => {
    const before = await page.innerText('#time-now');
    await page.click('#time-play');
    await page.waitForFunction((b) => document.getElementById('time-now').textContent !== b, before, { timeout: 10000 });
    await page.click('#time-play');
    const readout = await page.innerText('#readout');
    assert.match(readout, /NELSON.*course \d{3}\.\d°, [\d.]+ kn/s, `the readout: ${readout}`);
    assert.match(readout, /COLLINGWOOD/, `the readout: ${readout}`);
  });

  await step("Speed Filter's positions on the boats plot are ringed on the map", async () => {
    await page.click('#tab-tools');
    await page.click('#tool-list li[data-tool="speed-filter"]');
    await page.locator('#tool-fields [data-param="min_knots"]').fill('2.5');
    await page.locator('#tool-fields [data-param="max_knots"]').fill('');
    await page.check('input[name="tool-target"][value="pick"]');
    await page.selectOption('#tool-targets', { label: await page.evaluate(() => [...document.querySelectorAll('#tool-targets option')].find((o) => /^COLLINGWOOD\b/.test(o.textContent)).textContent) });
    await page.click('#tool-run');
    await waitFor(page, () => /^speed-filter: /.test(document.getElementById('dataset-summary').textContent), null, 'the speed-filter result');
    const ds = await page.evaluate(() => fetch('/api/datasets').then((r) => r.json()));
    const sf = ds.datasets.filter((d) => d.toolId === 'speed-filter').pop();
    const n = sf.data.tracks[0].positions.length;
    assert.ok(n > 0, 'COLLINGWOOD has positions at 2.5 kn or more');
    await page.click('#zoom-fit');
    await waitFor(page, (k) => Number(document.getElementById('map').dataset.resultMarks) === k, n, `${n} positions marked`);
    await screenshot(page, 'day-speed-filter');
  });
  await step('a time nobody can place is refused before any dialog', async () => {
    await page.click('#tab-tools');
    await page.click('#tool-list li[data-tool="trim-track"]');
    await page.locator('#tool-fields [data-param="start_time"]').waitFor();
    await page.fill('#tool-fields [data-param="start_time"]', 'yesterday');
    await page.fill('#tool-fields [data-param="end_time"]', '1995-12-12 10:00');
    await page.check('input[name="tool-target"][value="pick"]');
    await page.selectOption('#tool-targets', { label: await page.evaluate(() => [...document.querySelectorAll('#tool-targets option')].find((o) => /^NELSON\b/.test(o.textContent)).textContent) });
    await page.click('#tool-run');
    await waitFor(page, () => { const r = document.getElementById('tool-result'); return !r.hidden && /yesterday/.test(r.textContent); }, null, 'the refusal naming "yesterday"');
    assert.equal(await page.isVisible('#confirm-dialog[open]'), false, 'no dialog for a time nobody can place');
    assert.equal(await page.getAttribute('#tool-result', 'data-status'), 'refused');
  });
  await step('a sloppy time is read on the plot\'s day and the question counts the positions', async () => {
    await page.fill('#tool-fields [data-param="start_time"]', '06:00');
    await page.click('#tool-run');
    const dlg = await waitDialog(page);
    assert.match(dlg.body, /Note: start_time: "06:00" read as 1995-12-12T06:00:00Z/, dlg.body);
    assert.match(dlg.body, /Effect: remove (\d+) of (\d+) positions of NELSON \(keep \d+\)/, dlg.body);
    await screenshot(page, 'day-trim-question');
    await page.click('#confirm-approve');
    await waitFor(page, () => document.getElementById('dirty').dataset.dirty === 'true', null, 'the trim applied, unsaved');
  });
  await step('undo, redo and save', async () => {
    await page.click('#btn-undo');
    await waitFor(page, () => document.getElementById('dirty').dataset.dirty === 'false' || /^Redo/.test(document.getElementById('btn-redo').textContent), null, 'undone');
    await page.click('#btn-redo');
    await waitFor(page, () => document.getElementById('dirty').dataset.dirty === 'true', null, 'redone');
    await page.click('#btn-save');
    await waitFor(page, () => document.getElementById('dirty').dataset.dirty === 'false', null, 'saved');
  });
  await screenshot(page, 'day-saved');
}

async function analystChecks(page) {
  const ALPHA_T0 = Date.parse('2026-03-01T00:00:00Z');
  await page.locator('#pane-tools:not([hidden])').waitFor();
  assert.equal(await page.getAttribute('#tab-tools', 'aria-selected'), 'true', 'without a model the palette is shown first');
  await openFromSearch(page, 'alpha', 'Exercise Alpha — Day 1', ALPHA);
  await chartChecks(page);

  // --- the tool palette: every registry tool, with its description -----------------------
  log('palette: track-stats with no model');
  await page.locator('#tool-list li[data-tool="track-stats"]').waitFor();
  const toolCount = await page.locator('#tool-list li').count();
  const registry = await page.evaluate(() => fetch('/api/tools').then((r) => r.json()));
  assert.equal(toolCount, registry.tools.length, 'the palette lists every registry tool');
  assert.ok(toolCount >= 10, `the palette lists ${toolCount} tools`);
  assert.match(await page.innerText('#tool-list li[data-tool="track-stats"]'), /analysis/);
  assert.match(await page.innerText('#tool-list li[data-tool="set-track-color"]'), /modifies the plot/);
  await page.click('#tool-list li[data-tool="track-stats"]');
  // the form comes from the JSON Schema: an enum is a choice with its default
  const unit = page.locator('#tool-fields select[data-param="distance_unit"]');
  await unit.waitFor();
  const unitChoices = await unit.locator('option').allTextContents();
  assert.ok(unitChoices.includes('nm') && unitChoices.includes('km'), unitChoices.join());
  assert.equal(await unit.inputValue(), 'nm', 'the schema default is preselected');
  await page.check('input[name="tool-target"][value="pick"]');
  await page.selectOption('#tool-targets', 'track-nelson');
  await page.click('#tool-run');
  await waitFor(page, () => document.getElementById('tool-result').dataset.status === 'ok' && /Ran Track Stats/.test(document.getElementById('tool-result').textContent), null, 'track-stats result');
  assert.equal(await page.locator('#confirm-dialog[open]').count(), 0, 'an analysis asks nothing');
  // Anchored: the empty panel's hint also names track-stats, and matched before the result arrived.
  await waitFor(page, () => /^track-stats: /.test(document.getElementById('dataset-summary').textContent), null, 'the Results panel shows track-stats');
  const statsTable = await page.innerText('#dataset-table');
  assert.match(statsTable, /distance \(nm\)/, 'metres shown in nm, labelled');
  assert.match(statsTable, /average speed \(kn\)/, 'speed labelled in knots');
  const nm = Number(/distance \(nm\)\s+([\d.]+)/.exec(statsTable)[1]);
  const ds = await page.evaluate(() => fetch('/api/datasets').then((r) => r.json()));
  const stats = ds.datasets.find((d) => d.toolId === 'track-stats');
  assert.equal(stats.plotId, ALPHA, 'the result is scoped to its plot');
  assert.ok(Math.abs(nm - stats.data.distance_m / 1852) < 0.01, `distance ${nm} nm vs ${stats.data.distance_m} m`);
  // CSV export of the shown table
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#dataset-csv')]);
  const csvPath = path.join(OUT, 'track-stats.csv');
  await download.saveAs(csvPath);
  const csv = fs.readFileSync(csvPath, 'utf8');
  assert.match(csv.split('\r\n')[0], /^field,value$/);
  assert.match(csv, /distance \(nm\),/);
  // switch the distance unit: the table follows
  await page.selectOption('#unit-dist', 'yd');
  assert.match(await page.innerText('#dataset-table'), /distance \(yd\)/);
  await page.selectOption('#unit-dist', 'nm');
  await screenshot(page, 'palette-results-track-stats');

  // --- a time series: speed-rate-calc charts, tabulates and exports values over time ------
  log('palette: speed-rate-calc (a time series) with no model');
  await page.click('#tool-list li[data-tool="speed-rate-calc"]');
  await page.check('input[name="tool-target"][value="pick"]');
  await page.selectOption('#tool-targets', 'track-nelson');
  await page.click('#tool-run');
  await waitFor(page, () => document.getElementById('tool-result').dataset.status === 'ok', null, 'speed-rate-calc result');
  await waitFor(page, () => /^speed-rate-calc: /.test(document.getElementById('dataset-summary').textContent), null, 'the Results panel shows speed-rate-calc');
  const tsChart = await page.evaluate(() => {
    const svg = document.querySelector('#dataset-chart svg');
    if (!svg) return null;
    const path = svg.querySelector('path.s1');
    const points = path ? (path.getAttribute('d').match(/[ML]/g) || []).length : 0;
    const texts = [...svg.querySelectorAll('text')].map((t) => t.textContent);
    return { label: svg.getAttribute('aria-label'), points, texts };
  });
  assert.ok(tsChart, 'the Results panel draws a chart');
  assert.ok(tsChart.points >= 2, `the series is drawn with ${tsChart.points} points`);
  assert.match(tsChart.label, /over time/, tsChart.label);
  assert.ok(tsChart.texts.filter((t) => /^\d\d:\d\d$/.test(t)).length >= 2, `time axis labels: ${tsChart.texts.join(' | ')}`);
  assert.ok(tsChart.texts.some((t) => /Rate \(kts\/sec\)/i.test(t)), `the plotted quantity is named with its units: ${tsChart.texts.join(' | ')}`);
  const tsRows = await page.locator('#dataset-table tbody tr').count();
  assert.ok(tsRows >= 2, `the table lists the series (${tsRows} rows)`);
  const tsHead = await page.locator('#dataset-table thead th').allTextContents();
  assert.ok(tsHead.some((h) => /^time$/i.test(h)), `the table has a time column: ${tsHead.join()}`);
  const [tsDownload] = await Promise.all([page.waitForEvent('download'), page.click('#dataset-csv')]);
  const tsCsvPath = path.join(OUT, 'speed-rate-calc.csv');
  await tsDownload.saveAs(tsCsvPath);
  const tsCsv = fs.readFileSync(tsCsvPath, 'utf8').split('\r\n').filter(Boolean);
  assert.match(tsCsv[0], /^time,/i, `the CSV starts with a time column: ${tsCsv[0]}`);
  assert.ok(tsCsv.length - 1 >= tsRows, 'the CSV has every row the table shows');
  await screenshot(page, 'palette-results-time-series');

  log('palette: set-track-color with no model');
  await page.click('#tool-list li[data-tool="set-track-color"]');
  const colour = page.locator('#tool-fields [data-param="color"]');
  await colour.waitFor();
  assert.equal(await colour.getAttribute('required'), '', 'a required parameter is marked required');
  await colour.fill('red');
  await page.check('input[name="tool-target"][value="pick"]');
  await page.selectOption('#tool-targets', 'track-contact');
  const v0 = activeOf(await serverState(page)).version;
  await page.click('#tool-run');
  const dlg = await waitDialog(page);
  assert.match(dlg.title, /Set Track Color/);
  assert.match(dlg.body, /Contact/);
  assert.match(dlg.body, /red/);
  assert.doesNotMatch(dlg.body, /\{"/, 'the confirmation is plain language');
  assert.equal(activeOf(await serverState(page)).version, v0, 'nothing applied before the answer');
  await screenshot(page, 'palette-confirm');
  await page.click('#confirm-approve');
  await waitFor(page, () => window.__workbench.drawnColor('track-contact') === 'red', null, 'the palette edit drawn');
  await waitFor(page, () => document.getElementById('dirty').dataset.dirty === 'true', null, 'the palette edit is dirty');
  const undoText = await page.textContent('#btn-undo');
  assert.match(undoText, /^Undo: Set color to red for 1 track\(s\) — Con/, `Undo names the step: ${undoText}`);
  assert.equal(noChatColour('track-contact'), '#708090', 'nothing written before Save');
  await screenshot(page, 'palette-undo-named');
  // Undo, then run again, then Save
  await page.click('#btn-undo');
  await waitFor(page, () => window.__workbench.drawnColor('track-contact') === '#708090', null, 'Undo restores');
  await page.locator('#toast:not([hidden])', { hasText: 'Undid: Set color to red for 1 track(s) — Contact' }).waitFor();
  await page.click('#tool-run');
  await waitDialog(page);
  await page.click('#confirm-approve');
  await waitFor(page, () => document.getElementById('dirty').dataset.dirty === 'true', null, 'dirty again');
  await page.click('#btn-save');
  await waitFor(page, () => document.getElementById('dirty').dataset.dirty === 'false', null, 'saved');
  assert.equal(noChatColour('track-contact'), 'red', 'Save wrote the palette edit');
  // the activity log names who did what
  await page.click('#tab-sessions');
  await waitFor(page, () => document.querySelectorAll('#activity-list li[data-action]').length >= 4, null, 'the activity log');
  const activity = await page.innerText('#activity-list');
  assert.match(activity, /tool palette \(this page\)\s+edit: Set color to red for 1 track\(s\) — Contact/);
  assert.match(activity, /you \(this page\)\s+undo: Set color to red for 1 track\(s\) — Contact/);
  assert.match(activity, /you \(this page\)\s+save:/);

  // --- the time controller ----------------------------------------------------------------
  log('time controller');
  await page.click('#tab-narrative');
  assert.equal(await page.isHidden('#timebar'), false, 'the time controller is shown');
  assert.equal(await page.textContent('#time-now'), '2026-03-01 00:00:00Z');
  const at = async (iso) => {
    await page.evaluate((t) => window.__workbench.setTime(Date.parse(t)), iso);
    await page.waitForTimeout(60);
    return page.evaluate(() => window.__workbench.markerOf('track-nelson'));
  };
  const m1 = await at('2026-03-01T01:00:00Z');
  const m2 = await at('2026-03-01T05:00:00Z');
  assert.ok(m1 && m2, 'Nelson has a marker');
  assert.ok(Math.hypot(m2.x - m1.x, m2.y - m1.y) > 20, `the marker moved with the time: ${JSON.stringify([m1, m2])}`);
  const feat = noChatFile().features.find((f) => f.id === 'track-nelson');
  const k = feat.properties.positions.findIndex((q) => Date.parse(q.time) === Date.parse('2026-03-01T05:00:00Z'));
  assert.ok(k >= 0);
  assert.ok(Math.abs(m2.lon - feat.geometry.coordinates[k][0]) < 1e-9 && Math.abs(m2.lat - feat.geometry.coordinates[k][1]) < 1e-9, 'the marker is at the 05:00 position');
  assert.equal(m2.course, feat.properties.positions[k].course, 'with its course');
  // step buttons and slider
  const before = await page.evaluate(() => window.__workbench.app.time.now);
  await page.click('#time-fwd');
  const after = await page.evaluate(() => window.__workbench.app.time.now);
  assert.equal(after - before, await page.evaluate(() => window.__workbench.app.time.step), 'a step forward moves one step');
  // narrative: the entry at the current time is highlighted
  await at('2026-03-01T03:15:00Z');
  await waitFor(page, () => {
    const li = document.querySelector('#narrative-list li.current');
    return li && /Possub bearing 070/.test(li.textContent) && /HMS Collingwood/.test(li.textContent);
  }, null, 'the 03:10 entry highlighted at 03:15');
  await screenshot(page, 'narrative-highlight');
  // click-to-jump
  await page.click('#narrative-list li:has-text("FINEX")');
  assert.equal(await page.textContent('#time-now'), '2026-03-01 11:40:00Z', 'clicking an entry jumps to its time');
  assert.equal(await page.locator('#narrative-list li.current').count(), 1);
  assert.match(await page.innerText('#narrative-list li.current'), /FINEX/);

  // the sensor bearing line from Nelson's position at 03:00, shown only around its time
  const nelson0300 = await at('2026-03-01T03:00:00Z');
  const mid = await page.evaluate(({ lon, lat }) => {
    const wb = window.__workbench;
    const dlon = 4630 / (111320 * Math.cos((lat * Math.PI) / 180));
    return wb.screenOf(lon + dlon, lat);
  }, nelson0300);
  await page.evaluate(() => window.__workbench.draw());
  assert.ok(await magentaNear(page, mid.x, mid.y), 'the bearing line is drawn at 03:00');
  await screenshot(page, 'time-0300-sensor');
  await at('2026-03-01T05:00:00Z');
  await page.evaluate(() => window.__workbench.draw());
  assert.ok(!(await magentaNear(page, mid.x, mid.y)), 'and gone at 05:00');
  // the dynamic circle only in its interval
  const dyn = await page.evaluate(() => window.__workbench.circleOf('circle-dynamic'));
  await at('2026-03-01T07:00:00Z');
  assert.ok(await magentaNear(page, dyn.x, dyn.y - dyn.ry), 'the dynamic circle is shown at 07:00');
  await at('2026-03-01T09:00:00Z');
  assert.ok(!(await magentaNear(page, dyn.x, dyn.y - dyn.ry)), 'and hidden at 09:00');

  await readoutChecks(page);
  await speedFilterChecks(page);

  // --- a circle drawn with its real radius, at two zoom levels -----------------------------
  log('circle to scale');
  const checkCircle = async (name) => {
    await page.evaluate(() => window.__workbench.draw());
    const c = await page.evaluate(() => {
      const wb = window.__workbench;
      const f = wb.app.byId.get('circle-rep');
      const [lon, lat] = f.props.center;
      // the map's own projection of the centre and of a point 5000 m north of it
      const a = wb.screenOf(lon, lat), b = wb.screenOf(lon, lat + 5000 / 111320);
      return { x: a.x, y: a.y, r: a.y - b.y };
    });
    assert.ok(c.r > 6, `radius ${c.r} px is more than a dot`);
    const north = await magentaNear(page, c.x, c.y - c.r, 2);
    const east = await magentaNear(page, c.x + c.r, c.y, 2);
    const inside = await magentaNear(page, c.x, c.y - c.r / 2, 1);
    assert.ok(north && east, `the ring is at the 5000 m radius (${c.r.toFixed(1)} px): north ${north}, east ${east}`);
    assert.ok(!inside, 'the circle is a ring, not a blob');
    await screenshot(page, name);
    return c.r;
  };
  const cz = await page.evaluate(() => window.__workbench.circleOf('circle-rep'));
  await page.evaluate(({ x, y }) => window.__workbench.zoomAt(1, x, y), cz);
  const r1 = await checkCircle('circle-zoom-1');
  await page.evaluate(() => {
    const wb = window.__workbench;
    const c = wb.circleOf('circle-rep');
    wb.zoomAt(3, c.x, c.y);
  });
  const r2 = await checkCircle('circle-zoom-2');
  assert.ok(Math.abs(r2 / r1 - 3) < 0.05, `zooming ×3 makes the ring ×3 (${r1} → ${r2})`);
  // its details: the radius, in nm
  const ring = await page.evaluate(() => window.__workbench.circleOf('circle-rep'));
  const mbox = await page.locator('#map').boundingBox();
  await page.mouse.click(mbox.x + ring.x, mbox.y + ring.y - ring.ry);
  await page.locator('#details:not([hidden])').waitFor();
  assert.match(await page.innerText('#details'), /Radius\s+2\.70 nm \(5000 m\)/);
  await page.click('#zoom-fit');

  // --- an HTTP MCP client (2025-11-25) edits in its own session; the page lists and saves it ---
  log('MCP session in the session list');
  await page.click('#tab-sessions');
  const out = await runPython(['mcp_legacy_edit.py', `${BASE_NO_CHAT}/mcp`, 'yellow'], { TOOLGATE_TOKEN: TOKEN });
  const res = JSON.parse(out.trim().split('\n').pop());
  assert.equal(res.protocol, '2025-11-25', 'the client spoke the 2025-11-25 protocol');
  assert.equal(res.opened, ALPHA);
  assert.match(res.reply, /Applied Set Track Color/);
  assert.equal(res.asked.length, 1, 'the client was asked to confirm');
  const row = page.locator('#session-list li', { hasText: 'e2e-legacy-client' });
  await row.waitFor({ timeout: 10000 });
  const rowText = await row.innerText();
  assert.match(rowText, /MCP over HTTP \(2025-11-25\)/);
  assert.match(rowText, /Plot: Exercise Alpha — Day 1/);
  assert.match(rowText, /Unsaved changes — last step: Set color to yellow for 1 track\(s\) — HMS Collingwood/);
  assert.equal(await page.isHidden('#sessions-badge'), false, 'the tab shows a session with unsaved changes');
  // its edit is in the activity log under the client's name; the page's own plot is untouched
  await waitFor(page, () => /e2e-legacy-client\/1\.0\s+edit: Set color to yellow for 1 track\(s\) — HMS Collingwood/.test(document.getElementById('activity-list').innerText), null, 'the client named in the activity log');
  assert.equal(await colourOf(page, 'track-collingwood'), '#008000');
  // review it on the map
  await row.getByRole('button', { name: /Review/ }).click();
  await waitFor(page, () => window.__workbench.drawnColor('track-collingwood') === 'yellow', null, 'the reviewed session drawn');
  assert.match(await page.textContent('#review-text'), /e2e-legacy-client/);
  assert.equal(await page.getAttribute('#dirty', 'data-dirty'), 'true');
  await screenshot(page, 'mcp-session-listed');
  assert.equal(noChatColour('track-collingwood'), '#008000', 'nothing written by the agent');
  await row.getByRole('button', { name: /^Save/ }).click();
  await waitFor(page, () => {
    const li = [...document.querySelectorAll('#session-list li')].find((x) => /e2e-legacy-client/.test(x.textContent));
    return li && /Saved/.test(li.querySelector('.sd').textContent);
  }, null, 'the session saved');
  assert.equal(noChatColour('track-collingwood'), 'yellow', 'Save from the session list wrote the agent\'s edit');
  await waitFor(page, () => /you \(this page\)\s+save: saved to/.test(document.getElementById('activity-list').innerText), null, 'the save in the log');
  await screenshot(page, 'mcp-session-saved');
  await page.click('#review-exit');
  await waitFor(page, () => !window.__workbench.app.review, null, 'back to the page session');

  // --- frame times while playing on the 260-feature plot ----------------------------------
  log('play on the bulk plot');
  await page.click('#tab-narrative');
  await openFromSearch(page, 'bulk', 'Bulk Tracks', BULK);
  const probe = await page.evaluate(async () => {
    const wb = window.__workbench;
    const run = async (f) => {
      const out = [];
      let last = performance.now();
      for (let i = 0; i < 40; i++) {
        await new Promise((res) => requestAnimationFrame(res));
        const now = performance.now();
        out.push(now - last);
        last = now;
        f(i);
      }
      return out.slice(1).reduce((a, b) => a + b, 0) / 39;
    };
    const idle = await run(() => {});
    const redraw = await run(() => wb.draw());
    const t = wb.app.time;
    const stepping = await run((i) => wb.setTime(t.start + i * 60000));
    wb.app.probeNoText = true;
    const noText = await run(() => wb.draw());
    wb.app.probeNoText = false;
    wb.app.probeNoDynamic = true;
    const blitOnly = await run(() => wb.draw());
    wb.app.probeNoDynamic = false;
    return { idle, redraw, stepping, noText, blitOnly };
  });
  log('frame probe (mean ms per frame)', JSON.stringify(probe));
  const perf = await page.evaluate(async () => {
    const wb = window.__workbench;
    const n0 = wb.stats.draws.length;
    document.getElementById('time-step').value = '60000';
    document.getElementById('time-step').dispatchEvent(new Event('change'));
    wb.setTime(wb.app.time.start);
    document.getElementById('time-play').click();
    const out = [];
    let last = performance.now();
    const t0 = last;
    const m0 = wb.markerOf(wb.app.drawables.find((d) => d.kind === 'TRACK').id);
    while (performance.now() - t0 < 3000) {
      await new Promise((res) => requestAnimationFrame(res));
      const now = performance.now();
      out.push(now - last);
      last = now;
    }
    const m1 = wb.markerOf(wb.app.drawables.find((d) => d.kind === 'TRACK').id);
    const moved = m0 && m1 ? Math.hypot(m1.x - m0.x, m1.y - m0.y) : 0;
    document.getElementById('time-play').click();
    return { intervals: out.slice(1), draws: wb.stats.draws.slice(n0), moved, features: wb.app.drawables.length };
  });
  metrics.playFrameIntervalMs = stat(perf.intervals);
  metrics.playDrawMs = stat(perf.draws);
  metrics.playFps = Math.round((1000 / metrics.playFrameIntervalMs.mean) * 10) / 10;
  metrics.playFeatures = perf.features;
  log('playing: frame interval (ms)', JSON.stringify(metrics.playFrameIntervalMs), 'draw (ms)', JSON.stringify(metrics.playDrawMs), 'fps', metrics.playFps);
  assert.ok(perf.moved > 0, 'the markers moved while playing');
  assert.ok(perf.draws.length >= perf.intervals.length - 1, `every frame drew the map (${perf.draws.length} draws, ${perf.intervals.length} frames)`);
  await screenshot(page, 'play-bulk');
}

async function main() {
  assert.ok(BASE && BASE_NO_CHAT && TOKEN && STORE && OUT, 'WORKBENCH_URL, WORKBENCH_URL_NO_CHAT, WORKBENCH_TOKEN, STORE_DIR and ARTIFACTS must be set');
  fs.mkdirSync(OUT, { recursive: true });
  const browser = await chromium.launch({ executablePath: EXE, headless: true, args: FLAGS });
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, serviceWorkers: 'block' });
  // The page must work offline: every request must stay on this machine.
  await context.route('**/*', (route) => {
    const u = new URL(route.request().url());
    if (LOOPBACK.has(u.hostname)) return route.continue();
    external.push(u.href);
    return route.abort('blockedbyclient');
  });
  context.on('request', (req) => {
    const u = new URL(req.url());
    if (u.protocol !== 'data:' && !LOOPBACK.has(u.hostname)) external.push(u.href);
  });
  const page = await context.newPage();
  currentPage = page;
  page.on('console', (m) => {
    if (m.type() !== 'error') return;
    if (expectedConsole && expectedConsole.test(m.text())) return;
    consoleErrors.push(m.text());
  });
  page.on('pageerror', (e) => pageErrors.push(e.message));

  // --- load -------------------------------------------------------------------------------
  log('load');
  await page.goto(`${BASE}/?token=${TOKEN}`, { waitUntil: 'load' });
  assert.equal(new URL(page.url()).search, '', 'the token is gone from the address bar');
  await page.locator('#results li').first().waitFor();
  assert.equal(await page.locator('#results li').count(), 3, 'the demo catalogue lists three plots');
  assert.equal(await page.isDisabled('#chat-input'), false, 'chat is on with a backend');
  await screenshot(page, 'loaded');
  // the page's fast time reader agrees with Date.parse
  const times = ['2026-03-01T00:00:00Z', '2026-03-01T05:07:09+00:00', '1995-12-12T05:00:00+01:30', '2026-03-01T23:59:59.250Z',
    '2026-03-01T10:20-02:00', '2026-03-01T10:20:30.5-0230', '2026-03-01', 'not a time', '2026-03-01T10:20:30.123456Z'];
  const parsed = await page.evaluate((ts) => ts.map((t) => [window.__workbench.isoMs(t), Date.parse(t)]), times);
  parsed.forEach(([mine, std], i) => {
    if (Number.isNaN(std)) assert.ok(Number.isNaN(mine), `${times[i]} is not a time`);
    else assert.equal(mine, std, `time ${times[i]}`);
  });

  // --- the 250+ feature plot: open, first render, pan/zoom --------------------------------
  log('open the bulk plot');
  await openFromSearch(page, 'bulk', 'Bulk Tracks', BULK);
  metrics.bulkFeatures = await page.evaluate(() => window.__workbench.app.drawables.length);
  assert.ok(metrics.bulkFeatures >= 250, `bulk plot has ${metrics.bulkFeatures} features`);
  metrics.openToRenderMs = Math.round(await page.evaluate(() => window.__workbench.stats.openToRenderMs));
  log('open → drawn', metrics.openToRenderMs, 'ms');

  // Reload with the plot open: first render measured from the start of navigation.
  await page.reload({ waitUntil: 'load' });
  await waitFor(page, () => window.__workbench.stats.firstRenderMs !== null, null, 'first render after reload');
  // The plot drawn over its coastline (the chart a person first sees whole).
  await waitFor(page, () => window.__workbench.stats.firstRenderWithLandMs != null, null, 'the first render with the coastline', 5000).catch(() => {});
  const first = await page.evaluate(() => {
    const nav = performance.getEntriesByType('navigation')[0];
    return { withLand: window.__workbench.stats.firstRenderWithLandMs, landLoaded: window.__workbench.stats.landLoadedMs, fromNavigation: window.__workbench.stats.firstRenderMs, loadEventEnd: nav ? nav.loadEventEnd : null, last: window.__workbench.stats.lastLoad, startAt: window.__workbench.stats.startAt, stateAt: window.__workbench.stats.stateAt, dcl: nav ? nav.domContentLoadedEventEnd : null, draw: window.__workbench.stats.draws.slice(-1)[0] };
  });
  log('plot load breakdown', JSON.stringify(first));
  metrics.firstRenderFromNavigationMs = Math.round(first.fromNavigation);
  metrics.firstRenderAfterLoadEventMs = first.loadEventEnd ? Math.round(first.fromNavigation - first.loadEventEnd) : null;
  metrics.firstRenderWithCoastFromNavigationMs = first.withLand != null ? Math.round(first.withLand) : null;
  metrics.firstRenderWithCoastAfterLoadEventMs = first.withLand != null && first.loadEventEnd ? Math.round(first.withLand - first.loadEventEnd) : null;
  metrics.loadEventEndMs = first.loadEventEnd ? Math.round(first.loadEventEnd) : null;
  log('first render after reload', metrics.firstRenderFromNavigationMs, 'ms from navigation start;', metrics.firstRenderAfterLoadEventMs, 'ms after the load event');
  metrics.plotLoad = first.last;
  // The target: the open plot drawn, over its coastline, within 300 ms of the page's load event
  // (issue 32). Opening a plot that is not open yet also parses its file on the server (seconds
  // in an unoptimised test build), so that number is reported and only bounded loosely.
  // E2E_FIRST_RENDER_MS lets a machine known to be overloaded (shared build hosts) report the
  // number without failing here. browser.rs checks the same bound.
  const firstBound = Number(process.env.E2E_FIRST_RENDER_MS || 300);
  assert.ok(metrics.firstRenderAfterLoadEventMs <= firstBound, `first render ${metrics.firstRenderAfterLoadEventMs} ms after the load event > ${firstBound} ms`);
  await step('the first render includes the coastline, within the same bound', async () => {
    assert.ok(metrics.firstRenderWithCoastAfterLoadEventMs !== null, 'the plot was drawn with its coastline');
    assert.ok(metrics.firstRenderWithCoastAfterLoadEventMs <= firstBound, `first render with the coastline ${metrics.firstRenderWithCoastAfterLoadEventMs} ms after the load event > ${firstBound} ms`);
    assert.ok(Number(await page.getAttribute('#map', 'data-land-rings')) > 0, 'the bulk plot\'s chart has land');
  });
  assert.ok(metrics.openToRenderMs <= 15000, `open → first render ${metrics.openToRenderMs} ms`);

  log('pan/zoom');
  const box = await page.locator('#map').boundingBox();
  const before = await page.evaluate(() => window.__workbench.stats.draws.length);
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  for (let i = 0; i < 15; i++) {
    await page.mouse.wheel(0, -120);
    await page.waitForTimeout(16);
  }
  await page.mouse.down();
  for (let i = 0; i < 40; i++) {
    await page.mouse.move(box.x + box.width / 2 + i * 6, box.y + box.height / 2 + i * 3);
  }
  await page.mouse.up();
  for (let i = 0; i < 15; i++) {
    await page.mouse.wheel(0, 120);
    await page.waitForTimeout(16);
  }
  const draws = await page.evaluate((n) => window.__workbench.stats.draws.slice(n), before);
  // Frame intervals while the map is redrawn every frame (zoom and pan per animation frame).
  const intervals = await page.evaluate(async () => {
    const wb = window.__workbench;
    const r = document.getElementById('map').getBoundingClientRect();
    const out = [];
    let last = performance.now();
    for (let i = 0; i < 90; i++) {
      await new Promise((res) => requestAnimationFrame(res));
      const now = performance.now();
      out.push(now - last);
      last = now;
      if (i < 30) wb.zoomAt(1.06, r.width / 2, r.height / 2);
      else if (i < 60) wb.panBy(5, 3);
      else wb.zoomAt(1 / 1.06, r.width / 3, r.height / 3);
    }
    return out.slice(1);
  });
  metrics.panZoomDrawMs = stat(draws);
  metrics.animationFrameIntervalMs = stat(intervals);
  log('draw time per frame (ms)', JSON.stringify(metrics.panZoomDrawMs));
  log('frame interval while animating (ms)', JSON.stringify(metrics.animationFrameIntervalMs));
  assert.ok(draws.length >= 10, 'pan/zoom redrew the map');
  await page.click('#zoom-fit');
  await page.waitForTimeout(100);
  await screenshot(page, 'bulk-1280x800');
  await page.setViewportSize({ width: 1920, height: 1080 });
  await page.waitForTimeout(200);
  await screenshot(page, 'bulk-1920x1080');
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.waitForTimeout(200);

  // --- Exercise Alpha: selection on the map and in the list ------------------------------
  log('open Exercise Alpha — Day 1');
  await openFromSearch(page, 'alpha', 'Exercise Alpha — Day 1', ALPHA);
  const contact = await mapPoint(page, 'track-contact');
  await page.mouse.click(contact.x, contact.y);
  await waitFor(page, () => document.querySelector('#feature-rows tr[data-id="track-contact"]').getAttribute('aria-selected') === 'true', null, 'contact selected in the list after a map click');
  let st = await serverState(page);
  assert.deepEqual(activeOf(st).selectedIds, ['track-contact'], `a map click sets the shared selection (clicked ${JSON.stringify(contact)})`);

  await page.click('#feature-rows tr[data-id="track-nelson"]', { modifiers: ['Shift'] });
  await waitFor(page, () => window.__workbench.app.selected.size === 2, null, 'shift-click adds to the selection');
  st = await serverState(page);
  assert.deepEqual(activeOf(st).selectedIds.slice().sort(), ['track-contact', 'track-nelson']);

  const nelson = await mapPoint(page, 'track-nelson');
  await page.keyboard.down('Shift');
  await page.mouse.click(nelson.x, nelson.y);
  await page.keyboard.up('Shift');
  await waitFor(page, () => window.__workbench.app.selected.size === 1, null, 'shift-click on the map toggles');
  st = await serverState(page);
  assert.deepEqual(activeOf(st).selectedIds, ['track-contact']);

  await page.click('#feature-rows tr[data-id="track-collingwood"]');
  await waitFor(page, () => [...window.__workbench.app.selected].join() === 'track-collingwood', null, 'a plain click in the list replaces the selection');
  // keyboard: arrow to a row and select it with Enter
  await page.focus('#feature-rows tr[data-id="track-collingwood"]');
  await page.keyboard.press('ArrowUp');
  const focusedId = await page.evaluate(() => document.activeElement.dataset.id);
  await page.keyboard.press('Enter');
  await waitFor(page, (id) => [...window.__workbench.app.selected].join() === id, focusedId, 'Enter on a row selects it');
  // select the submarine on the map, as in the story
  await page.mouse.click(contact.x, contact.y);
  await waitFor(page, () => [...window.__workbench.app.selected].join() === 'track-contact', null, 'the contact selected on the map');
  await screenshot(page, 'alpha-contact-selected');

  // --- chat: approve ----------------------------------------------------------------------
  log('chat: approve');
  assert.equal(await colourOf(page, 'track-contact'), '#708090');
  const v0 = activeOf(await serverState(page)).version;
  await chat(page, 'colour the submarine track red');
  let dlg = await waitDialog(page);
  assert.match(dlg.title, /Run Set Track Color on Exercise Alpha — Day 1/);
  assert.match(dlg.body, /Target: Contact/);
  assert.match(dlg.body, /color: red/);
  assert.doesNotMatch(dlg.body, /\{"/, 'the preview is plain language');
  assert.equal(await page.locator('#chat-log .msg.tool').count() >= 1, true, 'the tool call is shown while it waits');
  await screenshot(page, 'confirm-dialog');
  assert.equal(activeOf(await serverState(page)).version, v0, 'nothing applied before the answer');
  await page.click('#confirm-approve');
  await waitFor(page, () => window.__workbench.drawnColor('track-contact') === 'red', null, 'the contact drawn red after Approve');
  await waitFor(page, () => document.getElementById('dirty').dataset.dirty === 'true', null, 'the dirty marker');
  await waitChatIdle(page);
  assert.match(await page.innerText('#chat-log'), /Applied Set Track Color to 1 feature\(s\)/);
  await page.focus('#map');
  await page.keyboard.press('Escape'); // clear the selection so the line is not under a halo
  await waitFor(page, () => window.__workbench.app.selected.size === 0, null, 'selection cleared');
  const rgb = await reddest(page, 'track-contact');
  assert.ok(rgb[0] > 200 && rgb[1] < 70 && rgb[2] < 70, `the contact is red on the canvas (got ${rgb})`);
  assert.equal(await page.textContent('#dirty'), '● Unsaved changes');
  await screenshot(page, 'approved-red-dirty');

  // --- Undo button ------------------------------------------------------------------------
  log('undo button');
  await page.click('#btn-undo');
  await waitFor(page, () => window.__workbench.drawnColor('track-contact') === '#708090', null, 'Undo restores the colour');
  await waitFor(page, () => document.getElementById('dirty').dataset.dirty === 'false', null, 'Undo back to the saved state is clean');
  await screenshot(page, 'undone');

  // --- chat: decline ----------------------------------------------------------------------
  log('chat: decline');
  const vBefore = activeOf(await serverState(page)).version;
  await chat(page, 'colour the submarine track green');
  dlg = await waitDialog(page);
  assert.match(dlg.body, /color: green/);
  await page.click('#confirm-decline');
  await waitChatIdle(page);
  assert.match(await page.innerText('#chat-log'), /declined/);
  // The page styles the outcome from the event's typed status, not from the wording.
  assert.equal(
    await page.locator('#chat-log .msg.tool').last().getAttribute('data-status'),
    'declined',
    'the declined call is marked from its status field'
  );
  st = await serverState(page);
  assert.equal(activeOf(st).version, vBefore, 'Decline applies nothing');
  assert.equal(activeOf(st).dirty, false);
  assert.equal(await colourOf(page, 'track-contact'), '#708090');
  await screenshot(page, 'declined');

  // --- keyboard: Ctrl+Z, Ctrl+Shift+Z, Ctrl+S ---------------------------------------------
  log('keyboard undo/redo/save');
  await chat(page, 'colour the submarine track red');
  await waitDialog(page);
  await page.keyboard.press('Enter'); // the focused button is Approve
  await waitFor(page, () => window.__workbench.drawnColor('track-contact') === 'red', null, 'approved with the keyboard');
  await waitChatIdle(page);
  await page.focus('#map');
  await page.keyboard.press('Control+z');
  await waitFor(page, () => window.__workbench.drawnColor('track-contact') === '#708090', null, 'Ctrl+Z undoes');
  await page.keyboard.press('Control+Shift+z');
  await waitFor(page, () => window.__workbench.drawnColor('track-contact') === 'red', null, 'Ctrl+Shift+Z redoes');
  assert.equal(savedColour('track-contact'), '#708090', 'nothing is written before Save');
  await page.keyboard.press('Control+s');
  await waitFor(page, () => document.getElementById('dirty').dataset.dirty === 'false', null, 'Ctrl+S saves');
  assert.equal(savedColour('track-contact'), 'red', 'Ctrl+S wrote the plot');

  // --- Save button ------------------------------------------------------------------------
  log('save button');
  await chat(page, 'colour the submarine track blue');
  await waitDialog(page);
  await page.click('#confirm-approve');
  await waitFor(page, () => window.__workbench.drawnColor('track-contact') === 'blue', null, 'blue');
  await waitChatIdle(page);
  assert.equal(await page.isDisabled('#btn-save'), false);
  await page.click('#btn-save');
  await waitFor(page, () => document.getElementById('dirty').dataset.dirty === 'false', null, 'Save clears dirty');
  assert.equal(savedColour('track-contact'), 'blue', 'Save wrote the plot');
  const leftovers = fs.readdirSync(path.join(STORE, 'alpha-day1')).filter((n) => n !== 'features.geojson' && n !== 'item.json');
  assert.deepEqual(leftovers, [], 'the atomic save left no temporary file');
  await screenshot(page, 'saved');

  // --- live update from another client on the same session --------------------------------
  log('live update');
  await page.evaluate(() => { window.__noReload = true; });
  const loadsBefore = await page.evaluate(() => window.__workbench.stats.plotLoads);
  const res = await fetch(`${BASE}/test/external-edit`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ featureId: 'track-collingwood', color: 'yellow' }),
  });
  const reply = await res.text();
  assert.equal(res.status, 200, reply);
  assert.match(reply, /^Applied Set Track Color/);
  const liveStart = Date.now();
  await waitFor(page, () => window.__workbench.drawnColor('track-collingwood') === 'yellow', null, 'the external edit on the map');
  metrics.liveUpdateMs = Date.now() - liveStart;
  await waitFor(page, () => document.getElementById('dirty').dataset.dirty === 'true', null, 'the external edit marks the plot dirty');
  assert.equal(await page.evaluate(() => window.__noReload), true, 'no page reload');
  assert.ok((await page.evaluate(() => window.__workbench.stats.plotLoads)) > loadsBefore);
  log('external edit visible after', metrics.liveUpdateMs, 'ms');
  await screenshot(page, 'live-update');

  // --- Revert -----------------------------------------------------------------------------
  log('revert');
  await page.click('#btn-revert');
  await page.locator('#revert-dialog[open]').waitFor();
  await page.click('#revert-ok');
  await waitFor(page, () => window.__workbench.drawnColor('track-collingwood') === '#008000', null, 'Revert restores the file version');
  await waitFor(page, () => document.getElementById('dirty').dataset.dirty === 'false', null, 'clean after Revert');

  // --- Save refused when the file changed on disk: a message, never a stack trace --------
  log('save conflict');
  await chat(page, 'colour the submarine track orange');
  await waitDialog(page);
  await page.click('#confirm-approve');
  await waitFor(page, () => window.__workbench.drawnColor('track-contact') === 'orange', null, 'orange');
  await waitChatIdle(page);
  const file = path.join(STORE, 'alpha-day1', 'features.geojson');
  const theirs = fs.readFileSync(file, 'utf8') + '\n';
  fs.writeFileSync(file, theirs);
  expectedConsole = /status of 409/;
  await page.click('#btn-save');
  await page.locator('#toast.bad:not([hidden])').waitFor();
  const toastText = await page.textContent('#toast');
  assert.match(toastText, /changed on disk/);
  assert.doesNotMatch(toastText, /\bat \S+:\d+|Error:|stack|panicked/);
  assert.equal(fs.readFileSync(file, 'utf8'), theirs, 'the refused save wrote nothing');
  assert.equal(await page.getAttribute('#dirty', 'data-dirty'), 'true', 'the edit is kept');
  await screenshot(page, 'save-refused');
  expectedConsole = null;
  await page.click('#btn-revert');
  await page.click('#revert-ok');
  await waitFor(page, () => document.getElementById('dirty').dataset.dirty === 'false', null, 'clean after Revert');

  // --- Results panel ------------------------------------------------------------------------
  log('results');
  await chat(page, 'range and bearing from Nelson to the contact');
  await waitChatIdle(page);
  assert.equal(await page.locator('#confirm-dialog[open]').count(), 0, 'analytical tools ask nothing');
  await waitFor(page, () => document.querySelectorAll('#dataset-table tbody tr').length > 10, null, 'the Results table');
  await page.locator('#dataset-chart svg path.s1').waitFor();
  assert.match(await page.textContent('#dataset-summary'), /^range-bearing: /);
  const headers = await page.locator('#dataset-table th').allTextContents();
  // labelled units, nm and degrees by default (the tool's data is in metres)
  assert.ok(headers.includes('range (nm)') && headers.includes('bearing (°)'), headers.join());
  // A long tool result (an analysis's data, the summary's JSON, a listing) is one line the analyst
  // can open, not a wall of JSON in the conversation; the whole of it is one click away.
  const shown = await page.evaluate(() => [...document.querySelectorAll('#chat-log .msg.tool .tres')].map((e) => e.innerText.length));
  assert.ok(shown.length >= 1 && Math.max(...shown) <= 400, `tool results are summarised in the chat (shown: ${shown})`);
  const folded = page.locator('#chat-log .msg.tool details').last();
  const line = await folded.locator('summary').innerText();
  await folded.locator('summary').click();
  const whole = await folded.locator('.tfull').innerText();
  assert.ok(whole.length > line.length && whole.startsWith(line.replace(/…$/, '').slice(0, 20)), `the whole result opens (${line.length} → ${whole.length} characters)`);
  await screenshot(page, 'results-1280x800');

  // --- layout at both sizes, keyboard focus -------------------------------------------------
  for (const [w, h] of [[1280, 800], [1920, 1080]]) {
    await page.setViewportSize({ width: w, height: h });
    await page.waitForTimeout(250);
    const layout = await page.evaluate(() => {
      const r = (id) => document.getElementById(id).getBoundingClientRect();
      return {
        overflowX: document.documentElement.scrollWidth > window.innerWidth,
        overflowY: document.documentElement.scrollHeight > window.innerHeight,
        map: r('map'), chat: r('chat-log'), features: r('features'), results: r('dataset-table'),
        fontPx: parseFloat(getComputedStyle(document.querySelector('.features td')).fontSize),
      };
    });
    assert.equal(layout.overflowX, false, `no horizontal scrolling at ${w}×${h}`);
    assert.equal(layout.overflowY, false, `no page scrolling at ${w}×${h}`);
    assert.ok(layout.map.width >= 500 && layout.map.height >= 300, `map big enough at ${w}×${h}: ${JSON.stringify(layout.map)}`);
    assert.ok(layout.chat.width >= 280, `chat readable at ${w}×${h}`);
    assert.ok(layout.fontPx >= 12, `text at least 12px at ${w}×${h}`);
    await screenshot(page, `alpha-${w}x${h}`);
  }
  await page.setViewportSize({ width: 1280, height: 800 });

  log('keyboard focus');
  await page.goto(BASE, { waitUntil: 'load' });
  await waitFor(page, () => document.getElementById('map').dataset.plot, null, 'plot drawn after navigation');
  const visited = [];
  for (let i = 0; i < 70; i++) {
    await page.keyboard.press('Tab');
    const f = await page.evaluate(() => {
      const el = document.activeElement;
      const cs = getComputedStyle(el);
      return { id: el.id || el.dataset.id || el.tagName.toLowerCase(), tag: el.tagName, outline: cs.outlineStyle, width: parseFloat(cs.outlineWidth) };
    });
    visited.push(f);
  }
  const ids = visited.map((f) => f.id);
  for (const want of ['search-text', 'map', 'chat-input', 'zoom-in', 'feature-filter']) {
    assert.ok(ids.includes(want), `Tab reaches ${want}: ${ids.join(' ')}`);
  }
  assert.ok(visited.some((f) => f.tag === 'TR'), 'Tab reaches the feature list');
  for (const f of visited) {
    if (f.tag === 'BODY') continue;
    assert.ok(f.outline !== 'none' && f.width >= 2, `visible focus on ${f.id}: ${f.outline} ${f.width}px`);
  }
  // the map is operable from the keyboard
  await page.focus('#map');
  const s0 = await page.evaluate(() => window.__workbench.app.view.s);
  await page.keyboard.press('+');
  await page.keyboard.press('ArrowLeft');
  const s1 = await page.evaluate(() => window.__workbench.app.view.s);
  assert.ok(s1 > s0, 'the + key zooms in');
  await page.focus('#search-text');
  await screenshot(page, 'focus-visible');

  // --- a workbench without a chat backend ----------------------------------------------------
  log('no chat backend');
  const page2 = await context.newPage();
  page2.on('console', (m) => {
    if (m.type() !== 'error') return;
    if (expectedConsole && expectedConsole.test(m.text())) return;
    consoleErrors.push(`(no-chat page) ${m.text()}`);
  });
  page2.on('pageerror', (e) => pageErrors.push(`(no-chat page) ${e.message}`));
  await page2.goto(`${BASE_NO_CHAT}/?token=${TOKEN}`, { waitUntil: 'load' });
  await page2.locator('#chat-log .msg.info').waitFor({ state: 'attached' });
  assert.match(await page2.textContent('#chat-log'), /toolgate serve --model-url/);
  assert.equal(await page2.isDisabled('#chat-input'), true);
  await page2.locator('#results li').first().waitFor();
  await screenshot(page2, 'no-chat-backend');
  await analystChecks(page2);
  await importChecks(page2);
  await analystDayChecks(page2);
  await page2.close();
  await plainScreenshotCheck(BASE_NO_CHAT);

  await page.close();
  await context.close();
  await browser.close();

  metrics.externalRequests = external.length;
  metrics.consoleErrors = consoleErrors.length;
  metrics.pageErrors = pageErrors.length;
  fs.writeFileSync(path.join(OUT, 'metrics.json'), JSON.stringify(metrics, null, 2));
  console.log(`E2E-METRICS ${JSON.stringify(metrics)}`);
  assert.deepEqual(external, [], 'no request left this machine');
  assert.deepEqual(pageErrors, [], 'no uncaught errors in the page');
  assert.deepEqual(consoleErrors, [], 'no console errors');
  if (softFailures.length) {
    console.error(`[e2e] ${softFailures.length} step(s) failed:\n  ${softFailures.join('\n  ')}`);
    process.exit(1);
  }
  log('all browser checks passed');
}

main().catch(async (e) => {
  console.error('[e2e] FAILED:', e && e.message ? e.message : e);
  if (currentPage) {
    try {
      await currentPage.screenshot({ path: path.join(OUT, 'failure.png') });
      console.error('[e2e] screenshot of the failure:', path.join(OUT, 'failure.png'));
    } catch (_) { /* the page may be gone */ }
  }
  if (consoleErrors.length) console.error('[e2e] console errors:', consoleErrors);
  if (pageErrors.length) console.error('[e2e] page errors:', pageErrors);
  if (external.length) console.error('[e2e] external requests:', external);
  console.log(`E2E-METRICS ${JSON.stringify(metrics)}`);
  process.exit(1);
});
