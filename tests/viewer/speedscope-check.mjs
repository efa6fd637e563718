#!/usr/bin/env node
// SPDX-License-Identifier: MIT
//
// speedscope-check.mjs - does speedscope, in headless Chromium, read a
// Chrome Trace Event Format file the way we mean it to be read?
//
//   node speedscope-check.mjs --modules DIR --trace TRACE.json
//        [--thread NAME]... [--span NAME]... [--screenshot OUT.png]
//        [--screenshot-thread NAME] [--viewport WxH] [--chromium PATH]
//
// Serves speedscope's static viewer (DIR/speedscope/dist/release, from the
// npm package `speedscope`) and TRACE.json from 127.0.0.1 on an ephemeral
// port, opens
//   http://127.0.0.1:PORT/speedscope/index.html#profileURL=<the trace's URL>
// in Chromium (/usr/bin/chromium, driven by the npm package
// `playwright-core` from DIR; never a downloaded browser), and checks the
// page's DOM, not its canvas:
//
//  - the profile selector (speedscope makes one profile per pid/tid that has
//    B/E/X events, named "PROCESS (pid P), THREAD (tid T)" from the trace's
//    process_name and thread_name metadata) lists one profile per such
//    thread of the trace, and one whose thread name is each --thread NAME;
//  - in the Sandwich view of each profile, whose table rows are DOM (one
//    row per frame, named "NAME {ARGS as JSON}"), a row named each
//    --span NAME (exactly, or followed by " {"), with a total time above
//    zero: a span that speedscope draws zero wide is not seen;
//  - speedscope logged no import warning other than spans "still open at
//    end of profile" (a B without its E) and nested slices that end at the
//    same nanosecond taken in the other order (sameInstantEnds below),
//    shows no alert, and the page threw nothing.
//
// Every check prints one line, "ok: ..." or "FAIL: ...", and the console
// messages of the page are printed too.  --screenshot saves a PNG of the
// Time Order view of the profile of --screenshot-thread (default: the
// first), the size of the page (--viewport, default 1280x720), and prints
// its path.
//
// Exit status: 0 all checks passed; 1 a check failed; 2 bad arguments, or
// the browser or the viewer could not be started (the message says which).
// The page may fetch only from 127.0.0.1: any other request is aborted and
// reported as a failed check.  Works on node 18 and later.

import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import {createRequire} from 'node:module';
import {parseArgs} from 'node:util';

const usage = `usage: speedscope-check.mjs --modules DIR --trace TRACE.json [--thread NAME]...
       [--span NAME]... [--screenshot OUT.png] [--screenshot-thread NAME] [--viewport WxH] [--chromium PATH]`;

function die(code, message) {
  process.stderr.write(`speedscope-check: ${message}\n`);
  process.exit(code);
}

let opts;
try {
  opts = parseArgs({
    options: {
      modules: {type: 'string'},
      trace: {type: 'string'},
      thread: {type: 'string', multiple: true, default: []},
      span: {type: 'string', multiple: true, default: []},
      screenshot: {type: 'string'},
      'screenshot-thread': {type: 'string'},
      viewport: {type: 'string', default: '1280x720'},
      chromium: {type: 'string', default: '/usr/bin/chromium'},
      help: {type: 'boolean'},
    },
  }).values;
} catch (e) {
  die(2, `${e.message}\n${usage}`);
}
if (opts.help) {
  process.stdout.write(`${usage}\n`);
  process.exit(0);
}
if (!opts.modules || !opts.trace) die(2, `--modules and --trace are required\n${usage}`);
const size = /^(\d{3,4})x(\d{3,4})$/.exec(opts.viewport);
if (!size) die(2, `--viewport ${opts.viewport} is not WIDTHxHEIGHT in pixels (100 to 9999 each)`);
const viewport = {width: Number(size[1]), height: Number(size[2])};

const modules = path.resolve(opts.modules);
const viewerRoot = path.join(modules, 'speedscope', 'dist', 'release');
if (!fs.existsSync(path.join(viewerRoot, 'index.html'))) {
  die(2, `${viewerRoot}/index.html is missing: install the npm packages (npm ci in tests/viewer)`);
}
let chromium;
try {
  ({chromium} = createRequire(path.join(modules, 'package.json'))('playwright-core'));
} catch (e) {
  die(2, `cannot load playwright-core from ${modules}: ${e.message}`);
}
if (!fs.existsSync(opts.chromium)) die(2, `${opts.chromium} is missing: apt-get install chromium`);

const tracePath = path.resolve(opts.trace);
let traceBytes;
let trace;
try {
  traceBytes = fs.readFileSync(tracePath);
  trace = JSON.parse(traceBytes.toString('utf8'));
} catch (e) {
  die(2, `cannot read ${tracePath} as JSON: ${e.message}`);
}
const events = Array.isArray(trace) ? trace : trace.traceEvents;
if (!Array.isArray(events)) die(2, `${tracePath} has no traceEvents array`);

// What the trace itself says speedscope should show: one profile for each
// pid/tid with span events, named after that thread's thread_name.
const threadNames = new Map();
const spanThreads = new Set();
for (const e of events) {
  if (e == null || typeof e !== 'object') continue;
  const key = `${e.pid}:${e.tid}`;
  if (e.ph === 'M' && e.name === 'thread_name' && e.args && e.args.name) threadNames.set(key, e.args.name);
  if (e.ph === 'B' || e.ph === 'E' || e.ph === 'X') spanThreads.add(key);
}

// speedscope's frame key: the name, and the args as JSON when there are any.
const frameKey = (e) => `${e.name || '(unnamed)'}${e.args ? ` ${JSON.stringify(e.args)}` : ''}`;
// Absolute end times (us) of each slice, by frame key.
const endsByKey = new Map();
for (const e of events) {
  if (e && e.ph === 'X' && typeof e.ts === 'number') {
    const k = frameKey(e);
    if (!endsByKey.has(k)) endsByKey.set(k, []);
    endsByKey.get(k).push(e.ts + (e.dur ?? 0));
  }
}
// speedscope turns each X slice into a begin and an end at ts + dur,
// computed in floating point after taking away the thread's first ts.  Two
// nested slices that end at the same nanosecond (spans open at the crash
// are all drawn up to it) may then end in the wrong order, by 1e-10 us:
// speedscope warns "Tried to end OUTER when INNER was on the top of the
// stack", ends INNER next and OUTER at the profile's end, which is the
// same instant: what it draws is right.  Such a warning is reported as a
// note, not a failure; one about slices that do not end at the same
// nanosecond (crossed spans, which a flame chart cannot draw) fails.
function sameInstantEnds(text) {
  const m = /^ts=[^:]*: Tried to end "/.exec(text);
  if (!m || !/was on the top of the stack\. Doing nothing instead\.$/.test(text)) return false;
  const rest = text.slice(m[0].length);
  for (const [ended, endedEnds] of endsByKey) {
    if (!rest.startsWith(`${ended}" when "`)) continue;
    const top = rest.slice(ended.length + '" when "'.length, -'" was on the top of the stack. Doing nothing instead.'.length);
    const topEnds = endsByKey.get(top) || [];
    if (endedEnds.some((a) => topEnds.some((b) => Math.abs(a - b) < 0.0005))) {
      process.stdout.write(`note: speedscope ended ${ended.split(' ')[0]} and ${top.split(' ')[0]}, which end at the same nanosecond, in the other order (floating point); it draws them right\n`);
      return true;
    }
  }
  return false;
}

let failures = 0;
function check(ok, what) {
  process.stdout.write(`${ok ? 'ok' : 'FAIL'}: ${what}\n`);
  if (!ok) ++failures;
  return ok;
}

// The static server: speedscope's files under /speedscope/, the trace at
// /trace/<its file name>, nothing else.
const types = {
  '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.json': 'application/json',
  '.png': 'image/png', '.ico': 'image/x-icon', '.woff2': 'font/woff2', '.wasm': 'application/wasm',
  '.txt': 'text/plain', '.ttf': 'font/ttf',
};
const traceName = path.basename(tracePath);
const notFound = [];
const server = http.createServer((req, res) => {
  const url = new URL(req.url, 'http://127.0.0.1');
  let body = null;
  let type = 'application/octet-stream';
  if (url.pathname === `/trace/${encodeURIComponent(traceName)}`) {
    body = traceBytes;
    type = 'application/json';
  } else if (url.pathname.startsWith('/speedscope/')) {
    const rel = decodeURIComponent(url.pathname.slice('/speedscope/'.length));
    const file = path.resolve(viewerRoot, rel);
    if (file.startsWith(viewerRoot + path.sep)) {
      try {
        body = fs.readFileSync(file);
        type = types[path.extname(file)] || type;
      } catch {
        body = null;
      }
    }
  }
  if (body == null) {
    notFound.push(url.pathname);
    res.writeHead(404, {'Content-Type': 'text/plain'});
    res.end('not found\n');
    return;
  }
  res.writeHead(200, {'Content-Type': type, 'Content-Length': body.length, 'Cache-Control': 'no-store'});
  res.end(body);
});
await new Promise((resolve, reject) => {
  server.once('error', reject);
  server.listen(0, '127.0.0.1', resolve);
});
const origin = `http://127.0.0.1:${server.address().port}`;
const traceUrl = `${origin}/trace/${encodeURIComponent(traceName)}`;

// A new, empty profile directory for each run; removed at the end.
const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ct-speedscope-chromium-'));
let context;
try {
  // Chromium as root needs --no-sandbox; the background-networking flags
  // keep it from reaching out (a closed network refuses those connections).
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: opts.chromium,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport,
    timeout: 60000,
  });
} catch (e) {
  server.close();
  fs.rmSync(userDataDir, {recursive: true, force: true});
  die(2, `cannot start ${opts.chromium}: ${e.message}`);
}

const consoleLines = [];
const pageErrors = [];
const dialogs = [];
const offsite = [];
let status = 0;
try {
  const page = context.pages()[0] || await context.newPage();
  page.on('console', (m) => {
    consoleLines.push({type: m.type(), text: m.text()});
    process.stdout.write(`  page console.${m.type()}: ${m.text()}\n`);
  });
  page.on('pageerror', (e) => pageErrors.push(e.message));
  page.on('dialog', (d) => {
    dialogs.push(d.message());
    d.dismiss().catch(() => {});
  });
  await page.route('**/*', (route) => {
    const u = route.request().url();
    if (u.startsWith(`${origin}/`)) return route.continue();
    offsite.push(u);
    return route.abort();
  });

  const viewerUrl = `${origin}/speedscope/index.html#profileURL=${encodeURIComponent(traceUrl)}`;
  process.stdout.write(`speedscope-check: opening ${viewerUrl}\n`);
  await page.goto(viewerUrl);

  // The toolbar's centre names the profile shown once the import is done
  // ("🔬speedscope" before); a failed import shows an alert instead.
  const toolbarCenter = async () => page.evaluate(() => {
    const tab = [...document.querySelectorAll('div')].find(
      (d) => [...d.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim() === 'Time Order'));
    if (!tab) return null;
    const toolbar = tab.parentElement.parentElement;
    const left = tab.parentElement;
    const right = toolbar.lastElementChild;
    let text = '';
    for (const n of toolbar.childNodes) {
      if (n === left || n === right) continue;
      // With several profiles: a span (name and "(i/N)") and the selector.
      text += n.nodeType === 1 && n.querySelector('span') ? n.querySelector('span').textContent : n.textContent;
    }
    return text.trim();
  });
  const deadline = Date.now() + 60000;
  let center = null;
  while (Date.now() < deadline && dialogs.length === 0 && pageErrors.length === 0) {
    center = await toolbarCenter();
    if (center && !center.endsWith('speedscope')) break;
    await page.waitForTimeout(100);  // the poll's period; the deadline bounds a hang only
  }
  if (!check(center && !center.endsWith('speedscope'),
    `speedscope imported the trace (toolbar: ${JSON.stringify(center)})`)) {
    throw new Error('the trace was not imported');
  }
  check(consoleLines.some((l) => l.text === 'Importing as Trace Event Format profile'),
    'speedscope read it as Trace Event Format');

  // The profiles, from the selector's rows (present in the DOM whether or
  // not the selector is open); a single profile has no selector, only its
  // name in the toolbar.
  let profiles = await page.$$eval('tr[title]', (rows) => rows.map((r) => r.getAttribute('title')));
  if (profiles.length === 0) profiles = [center];
  process.stdout.write(`speedscope-check: ${profiles.length} profile(s): ${profiles.join(' | ')}\n`);
  check(profiles.length === spanThreads.size,
    `one profile per thread with spans in the trace (${spanThreads.size} in the trace, ${profiles.length} in speedscope)`);
  const threadOf = (profile) => {
    const m = /(?:^|, )([^,]*) \(tid \d+\)$/.exec(profile) || /^(.*) \(pid \d+, tid \d+\)$/.exec(profile);
    return m ? m[1] : null;
  };
  for (const [key, name] of threadNames) {
    if (!spanThreads.has(key)) continue;
    const tid = key.split(':')[1];
    check(profiles.some((p) => p.endsWith(`${name} (tid ${tid})`) || p.endsWith(`tid ${tid})`) && p.includes(name)),
      `the trace's thread ${name} (tid ${tid}) has a profile`);
  }
  for (const name of opts.thread) {
    check(profiles.some((p) => threadOf(p) === name), `a profile for thread ${name}`);
  }

  // Sandwich view, each profile in turn, chosen in the selector.
  await page.locator('xpath=//div[span and normalize-space(text())="Sandwich"]').click();
  const rowsByProfile = new Map();
  for (let i = 0; i < profiles.length; ++i) {
    if (profiles.length > 1) {
      await page.keyboard.press('t');  // opens the profile selector
      await page.locator(`tr[title=${JSON.stringify(profiles[i])}]`).click();
      await page.waitForFunction((want) => {
        const c = [...document.querySelectorAll('span')].find((s) => s.textContent.startsWith(want + ' ('));
        return c != null;
      }, profiles[i], {timeout: 60000});
    }
    await page.waitForSelector('xpath=//th[normalize-space(text())="Symbol Name"]', {timeout: 60000});
    const rows = await page.evaluate(() => {
      const th = [...document.querySelectorAll('th')].find((h) => h.textContent.trim() === 'Symbol Name');
      let box = th;
      while (box && box.querySelectorAll('tr').length < 2 && box.parentElement) box = box.parentElement;
      return [...box.querySelectorAll('tr')].filter((r) => r.cells.length === 3 && r.cells[0].tagName === 'TD')
        .map((r) => ({total: r.cells[0].textContent.trim(), name: r.cells[2].textContent.trim()}));
    });
    rowsByProfile.set(profiles[i], rows);
    process.stdout.write(`speedscope-check: sandwich of ${profiles[i]}: ${rows.map((r) => `${r.name} [${r.total}]`).join('; ')}\n`);
  }
  for (const span of opts.span) {
    const hits = [];
    for (const [profile, rows] of rowsByProfile) {
      for (const r of rows) if (r.name === span || r.name.startsWith(`${span} {`)) hits.push({profile, ...r});
    }
    if (!check(hits.length > 0, `span ${span} is a row of the Sandwich view`)) continue;
    const wide = hits.filter((h) => !/^0(\.0+)?\s*[a-zµ]*s\b/.test(h.total));
    check(wide.length > 0,
      `span ${span} lasts more than zero in speedscope (${hits.map((h) => `${h.name}: ${h.total} in ${threadOf(h.profile)}`).join('; ')})`);
  }

  const importWarnings = consoleLines.filter((l) => l.type === 'warning' && !/GL Driver Message/.test(l.text) &&
    !/was still open at end of profile/.test(l.text) && !sameInstantEnds(l.text));
  check(importWarnings.length === 0,
    `no import warnings${importWarnings.length ? `: ${importWarnings.map((l) => l.text).join(' | ')}` : ''}`);
  check(dialogs.length === 0, `no alerts${dialogs.length ? `: ${dialogs.join(' | ')}` : ''}`);
  check(pageErrors.length === 0, `no page errors${pageErrors.length ? `: ${pageErrors.join(' | ')}` : ''}`);
  check(offsite.length === 0, `no request left 127.0.0.1${offsite.length ? `: ${offsite.join(' ')}` : ''}`);
  check(notFound.length === 0 || notFound.every((p) => p === '/favicon.ico'),
    `every file the page asked for was served${notFound.length ? ` (404: ${notFound.join(' ')})` : ''}`);

  if (opts.screenshot) {
    let index = 0;
    if (opts['screenshot-thread'] != null) {
      index = profiles.findIndex((p) => threadOf(p) === opts['screenshot-thread']);
      if (!check(index >= 0, `a profile for the screenshot's thread ${opts['screenshot-thread']}`)) index = 0;
    }
    await page.locator('xpath=//div[span and normalize-space(text())="Time Order"]').click();
    if (profiles.length > 1) {
      await page.keyboard.press('t');
      await page.locator(`tr[title=${JSON.stringify(profiles[index])}]`).click();
    }
    await page.mouse.move(viewport.width / 2, viewport.height - 10);
    // The flame chart draws on the next frames: wait for two of them.
    await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
    const out = path.resolve(opts.screenshot);
    fs.mkdirSync(path.dirname(out), {recursive: true});
    await page.screenshot({path: out});
    process.stdout.write(`speedscope-check: screenshot of ${profiles[index]}: ${out}\n`);
  }
} catch (e) {
  check(false, `the check could not finish: ${e.message.split('\n')[0]}`);
  if (pageErrors.length) process.stdout.write(`  page errors: ${pageErrors.join(' | ')}\n`);
  if (dialogs.length) process.stdout.write(`  alerts: ${dialogs.join(' | ')}\n`);
  status = 1;
} finally {
  await context.close().catch(() => {});
  server.close();
  fs.rmSync(userDataDir, {recursive: true, force: true});
}
if (failures > 0) status = 1;
process.stdout.write(`speedscope-check: ${failures === 0 && status === 0 ? 'passed' : `FAILED (${failures} check(s))`}\n`);
process.exit(status);
