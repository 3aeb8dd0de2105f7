// The streams from the server. The session's state comes on /api/events, read by the browser's
// EventSource (which reconnects by itself); a chat turn and a tool run answer their POST with a
// stream of events, read by `readSse` — the one reader of a streamed response on this page.
import { $, app, report } from './state.js';
import { onState, refreshState } from './plot.js';

// Server-sent events from a fetch response: calls handle(type, data) per event. An event that
// cannot be read (or that `handle` throws on) ends the reading with that error, or, given
// `onBad`, is handed to it and the reading goes on.
export async function readSse(res, handle, onBad) {
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += dec.decode(value, { stream: true });
    let cut;
    while ((cut = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, cut);
      buf = buf.slice(cut + 2);
      let type = 'message';
      const data = [];
      for (const line of block.split('\n')) {
        if (line.startsWith('event:')) type = line.slice(6).trim();
        else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
      }
      if (!data.length) continue;
      try {
        handle(type, JSON.parse(data.join('\n')));
      } catch (e) {
        if (!onBad) throw e;
        onBad(e);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// live updates

// A plain headless Chromium taking a picture (`chromium --headless --screenshot
// --virtual-time-budget=…`) lets its virtual time run only while no request is open, and a
// live stream never ends: there the state is polled instead, so the picture is taken. Driven
// browsers (navigator.webdriver: Playwright, Puppeteer, WebDriver) and people get the stream.
const PICTURE = /HeadlessChrome/.test(navigator.userAgent) && !navigator.webdriver;

export function connectLive() {
  const live = $('live');
  if (PICTURE) {
    live.textContent = 'live: polled (headless picture)';
    live.className = 'live';
    const poll = async () => {
      await refreshState();
      setTimeout(poll, 2000);
    };
    setTimeout(poll, 2000);
    return;
  }
  const es = new EventSource('/api/events');
  es.addEventListener('state', (ev) => {
    live.textContent = 'live';
    live.className = 'live ok';
    try {
      onState(JSON.parse(ev.data));
    } catch (e) {
      report(e);
    }
  });
  es.onopen = () => {
    live.textContent = 'live';
    live.className = 'live ok';
  };
  es.onerror = () => {
    live.textContent = 'live: reconnecting';
    live.className = 'live down';
  };
  app.events = es;
}
