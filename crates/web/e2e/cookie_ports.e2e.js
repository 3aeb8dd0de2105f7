// Issue 30, item 1, in a real browser: browsers send a host's cookies to every port of that host,
// so whatever the workbench leaves in the cookie jar reaches any other server on 127.0.0.1.
// Started by crates/cli/tests/workbench_session.rs, which runs `toolgate serve` and a second,
// plain listener that records the Cookie headers it receives, and passes:
//   WORKBENCH_URL  the URL `toolgate serve` printed (http://127.0.0.1:PORT/?token=…)
//   OTHER_URL      the other server (http://127.0.0.1:OTHER)
//   CHROMIUM       the browser binary (default /usr/bin/chromium)
// Opens the workbench, then the other server (typed, and by a link from a page on it), and prints
// one line `COOKIE-PORTS {json}`: the workbench page's title and address after the visit, and
// every cookie the browser holds. The Rust side checks that none of it opens /mcp.
'use strict';

const { chromium } = require('playwright-core');

const WORKBENCH = process.env.WORKBENCH_URL;
const OTHER = process.env.OTHER_URL;
const EXE = process.env.CHROMIUM || '/usr/bin/chromium';
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];

async function main() {
  if (!WORKBENCH || !OTHER) throw new Error('WORKBENCH_URL and OTHER_URL must be set');
  const browser = await chromium.launch({ executablePath: EXE, args: FLAGS, headless: true });
  try {
    const context = await browser.newContext();
    const page = await context.newPage();
    const res = await page.goto(WORKBENCH, { waitUntil: 'load' });
    const out = {
      status: res ? res.status() : null,
      title: await page.title(),
      search: new URL(page.url()).search,
    };
    // A reload keeps the page (whatever the visit left is enough to come back).
    const again = await page.reload({ waitUntil: 'load' });
    out.reloadStatus = again ? again.status() : null;
    // The other server: typed into the address bar ...
    await page.goto(`${OTHER}/typed`, { waitUntil: 'load' });
    // ... and followed from a link on a page of its own (a same-site navigation).
    await page.setContent(`<a id="l" href="${OTHER}/linked">other</a>`);
    await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), page.click('#l')]);
    out.cookies = (await context.cookies()).map((c) => ({
      name: c.name, value: c.value, domain: c.domain, path: c.path,
      httpOnly: c.httpOnly, sameSite: c.sameSite,
    }));
    console.log(`COOKIE-PORTS ${JSON.stringify(out)}`);
  } finally {
    await browser.close();
  }
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : e);
  process.exit(1);
});
