// The simulator page in headless Chromium (Debian's chromium, driven by
// playwright-core): it loads the demo table, changes retainLast and
// maxSnapshotAge, adds a legal hold, and the numbers it shows must equal
// what the sidecar's `expire` and `plan` say for the same policy, context
// and clock. It also measures a 1,000-snapshot × 1,000,000-file what-if in
// the page, shows a clear message for a folder that is not a table and for
// a broken manifest, and writes the README's screenshots.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { chromium } from 'playwright-core';

const here = path.dirname(fileURLToPath(import.meta.url));
const page_dir = path.resolve(here, '..');
const repo = path.resolve(page_dir, '../..');
const sidecar = process.env.LAKESWEEP_SIDECAR || path.join(repo, 'target/debug/lakesweep');
// Screenshots go to test-output/ (docs/img/ holds the README's: set
// LAKESWEEP_SCREENSHOTS=docs/img to refresh them).
const shots = path.resolve(repo, process.env.LAKESWEEP_SCREENSHOTS || 'host-examples/browser/test-output');

const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.json': 'application/json', '.wasm': 'application/wasm' };
let server;
let base;
let browser;

/// A static file server for `root` on 127.0.0.1 (any static server does:
/// the page is a folder of files).
async function serve(root) {
  const s = http.createServer(async (req, res) => {
    const rel = decodeURIComponent(new URL(req.url, 'http://x').pathname).replace(/^\/+/, '') || 'index.html';
    const file = path.join(root, rel);
    if (!file.startsWith(root)) return res.writeHead(403).end();
    try {
      const body = await fs.readFile(file);
      res.writeHead(200, { 'content-type': TYPES[path.extname(file)] || 'application/octet-stream' }).end(body);
    } catch {
      res.writeHead(404).end();
    }
  });
  await new Promise((r) => s.listen(0, '127.0.0.1', r));
  return { server: s, base: `http://127.0.0.1:${s.address().port}/` };
}

before(async () => {
  ({ server, base } = await serve(page_dir));
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  await fs.mkdir(shots, { recursive: true });
});

after(async () => {
  await browser?.close();
  server?.close();
});

async function openPage(at = base) {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  const t0 = Date.now();
  await page.goto(at);
  await page.waitForSelector('body[data-ready="1"]');
  const loadMs = Date.now() - t0;
  return { page, errors, loadMs };
}

async function setField(page, id, value) {
  await page.fill(`#${id}`, String(value));
  await page.dispatchEvent('#policy', 'input');
}

/// The demo table staged with its recorded times, as the sidecar reads it.
async function stageDemo() {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'lakesweep-browser-'));
  const gen = path.join(repo, 'tests/fixtures/generated');
  await fs.cp(path.join(gen, 'warehouse'), path.join(dir, 'warehouse'), { recursive: true });
  await fs.cp(path.join(gen, 'catalog.db'), path.join(dir, 'catalog.db'));
  const t = JSON.parse(await fs.readFile(path.join(gen, 'expect.json'), 'utf8')).events;
  const tdir = path.join(dir, t.location.replace('file:///lakesweep-fixtures/', ''));
  for (const [rel, ms] of Object.entries(t.mtimes)) {
    const s = (ms + 0.0005) / 1000;
    await fs.utimes(path.join(tdir, rel), s, s);
  }
  return { dir, tdir, t };
}

/// The sidecar's JSON, snapshot ids kept as the digits they are (a
/// JavaScript number cannot hold a 64-bit id).
function lakesweep(args) {
  const out = execFileSync(sidecar, args, { env: { ...process.env, LAKESWEEP_WASM: path.join(repo, 'target/lakesweep.wasm') } });
  return JSON.parse(out.toString().replace(/"snapshotId":\s*(-?\d+)/g, '"snapshotId":"$1"'));
}

test('the demo under a changed policy and a hold shows what the sidecar says', async () => {
  const { page, errors, loadMs } = await openPage();
  await page.selectOption('#demo', 'events');
  await page.click('#open-demo');
  await page.waitForFunction(() => document.querySelector('#plan-candidates').textContent !== '–');
  await page.screenshot({ path: path.join(shots, 'simulator-demo.png') });
  await page.locator('#objects').screenshot({ path: path.join(shots, 'simulator-objects.png') });

  // A finding shows next to the field it names, as it is typed.
  await setField(page, 'maxWriterDuration', '6h');
  await setField(page, 'orphanSafetyInterval', '2h');
  await page.waitForFunction(() =>
    /maxWriterDuration/.test(document.querySelector('.finding[data-field="fileRetention.orphanSafetyInterval"]').textContent));
  await setField(page, 'orphanSafetyInterval', '3d');
  await setField(page, 'maxWriterDuration', '');
  await page.waitForFunction(() => document.querySelector('.finding[data-field="fileRetention.orphanSafetyInterval"]').textContent === '');

  await setField(page, 'retainLast', 2);
  await setField(page, 'maxSnapshotAge', '1d');
  // A legal hold on the oldest snapshot (the list is in metadata order).
  const held = await page.$eval('#hold-snapshot', (s) => s.options[0].value);
  await page.selectOption('#hold-snapshot', held);
  await page.fill('#hold-reason', 'case 42');
  await page.click('#add-hold');
  await page.waitForFunction((id) => {
    const row = document.querySelector(`#snapshots tr[data-snapshot="${id}"]`);
    return row && row.classList.contains('retained');
  }, held);
  // The sweep plan of the final inputs drawn.
  await page.evaluate(() => window.lakesweepIdle());
  const shown = await page.evaluate(() => ({
    retained: [...document.querySelectorAll('#snapshots tr.retained')].map((r) => r.dataset.snapshot).sort(),
    expired: [...document.querySelectorAll('#snapshots tr.expired')].map((r) => r.dataset.snapshot).sort(),
    nRetained: Number(document.querySelector('#n-retained').textContent),
    freedBytes: Number(document.querySelector('#freed-bytes').dataset.bytes),
    freedNowBytes: Number(document.querySelector('#freed-now').dataset.bytes),
    candidates: Number(document.querySelector('#plan-candidates').textContent),
    candidateBytes: Number(document.querySelector('#plan-bytes').dataset.bytes),
    state: window.lakesweepState(),
  }));
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: path.join(shots, 'simulator-policy.png') });
  // The curves' axes carry ticks: bytes up the side, the policy's values along.
  for (const id of ['#curve-retain', '#curve-age']) {
    assert.ok((await page.$$(`${id} text.tick`)).length >= 6, `${id} has ticks`);
  }
  // Pin this policy as A, keep one snapshot more, and the diff says so.
  await page.click('#pin');
  await setField(page, 'retainLast', 3);
  await page.waitForFunction(() => !document.querySelector('#diff').hidden && /Kept by this only/.test(document.querySelector('#diff').textContent));
  // The policy exports as the JSON the page judges on.
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#export-policy')]);
  const exported = JSON.parse(await fs.readFile(await download.path(), 'utf8'));
  assert.equal(exported.snapshotRetention.retainLast, 3);
  assert.equal(exported.snapshotRetention.maxSnapshotAge, '1d');
  await setField(page, 'retainLast', 2);
  await page.evaluate(() => window.lakesweepIdle());
  assert.deepEqual(errors, []);

  const { dir, tdir, t } = await stageDemo();
  try {
    await fs.writeFile(path.join(dir, 'policy.json'), shown.state.policy);
    await fs.writeFile(path.join(dir, 'context.json'), shown.state.context);
    const common = [
      tdir, '--catalog', `sqlite:${path.join(dir, 'catalog.db')}`, '--table', t.identifier,
      '--location-map', `file:///lakesweep-fixtures=file://${dir}`,
      '--policy', path.join(dir, 'policy.json'), '--context', path.join(dir, 'context.json'),
      '--now', String(shown.state.now), '--json',
    ];
    const expire = lakesweep(['expire', ...common]);
    const ids = (xs) => xs.map((x) => x.snapshotId).sort();
    assert.deepEqual(shown.retained, ids(expire.retain));
    assert.deepEqual(shown.expired, ids(expire.expired));
    assert.equal(shown.nRetained, expire.retain.length);
    assert.ok(shown.retained.includes(held), 'the held snapshot is retained');
    // The sidecar counts what the next plan deletes: the objects older
    // than the window; the page shows those and, beside them, all it frees.
    assert.equal(shown.freedNowBytes, expire.frees.bytes, 'the bytes the expiry frees at once');
    assert.ok(shown.freedBytes >= shown.freedNowBytes);
    const plan = lakesweep(['plan', ...common]);
    const cand = plan.summary.verdicts.candidate || { count: 0, bytes: 0 };
    assert.equal(shown.candidates, cand.count);
    assert.equal(shown.candidateBytes, cand.bytes);
    console.log(`page: ready (core compiled, demo list read) in ${loadMs} ms; retained ${shown.retained.length}, expired ${shown.expired.length}, frees ${shown.freedBytes} bytes, ${shown.candidates} orphans deletable`);
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
    await page.close();
  }
});

test('a 1,000-snapshot × 1,000,000-file what-if answers in under 100 ms in the page', async () => {
  const { page } = await openPage();
  const m = await page.evaluate(() => window.lakesweepMeasure(1000, 1_000_000));
  console.log(`what-if over ${m.snapshots} snapshots × ${m.files} files: median ${m.whatIfMedianMs.toFixed(1)} ms, max ${m.whatIfMaxMs.toFixed(1)} ms; 20-point curve ${m.curve20Ms.toFixed(0)} ms; index built in ${m.buildMs.toFixed(0)} ms`);
  assert.ok(m.retained > 0 && m.freedBytes > 0, JSON.stringify(m));
  assert.ok(m.whatIfMedianMs < 100, `median what-if ${m.whatIfMedianMs} ms`);
  await page.close();
});

test('a folder that is not a table, and a broken manifest, say so on the page', async () => {
  const scratch = await fs.mkdtemp(path.join(os.tmpdir(), 'lakesweep-browser-bad-'));
  let staged = null;
  try {
    const notTable = path.join(scratch, 'photos');
    await fs.mkdir(notTable);
    await fs.writeFile(path.join(notTable, 'cat.jpg'), 'not a table');
    let { page } = await openPage();
    await page.setInputFiles('#folder', notTable);
    await page.waitForSelector('#error:not([hidden])');
    assert.match(await page.textContent('#error'), /not a table folder/);
    await page.close();

    const { dir, tdir, t: staged_t } = await stageDemo();
    staged = dir;
    const md = path.join(tdir, 'metadata');
    const manifest = (await fs.readdir(md)).find((n) => n.endsWith('-m0.avro'));
    const bytes = await fs.readFile(path.join(md, manifest));
    await fs.writeFile(path.join(md, manifest), bytes.subarray(0, bytes.length / 2));
    ({ page } = await openPage());
    await page.setInputFiles('#folder', tdir);
    // A catalog table's folder: the page asks which document is current.
    await page.waitForSelector('#ask:not([hidden])');
    await page.selectOption('#ask-doc', `metadata/${staged_t.metadata_location.split('/').at(-1)}`);
    await page.click('#ask-use');
    await page.waitForFunction(() => /m0\.avro/.test(document.querySelector('#error').textContent));
    const text = await page.textContent('#error');
    assert.match(text, /must act/);
    assert.match(text, /m0\.avro/);
    await page.screenshot({ path: path.join(shots, 'simulator-error.png') });
    await page.close();
  } finally {
    await fs.rm(scratch, { recursive: true, force: true });
    if (staged) await fs.rm(staged, { recursive: true, force: true });
  }
});

test('a Delta demo table gets its sweep plan, and no snapshot controls', async () => {
  const { page, errors } = await openPage();
  await page.selectOption('#demo', 'delta-events');
  await page.click('#open-demo');
  await page.waitForFunction(() => document.querySelector('#plan-candidates').textContent !== '–');
  await page.evaluate(() => window.lakesweepIdle());
  assert.equal(await page.isHidden('#error'), true, await page.textContent('#error'));
  assert.ok(Number(await page.textContent('#plan-candidates')) >= 0);
  assert.equal(await page.isDisabled('#add-hold'), true);
  assert.ok(Number(await page.$eval('#objects-count', (e) => e.textContent.split(' of ')[1])) > 0);
  assert.deepEqual(errors, []);
  await page.close();
});

test('a table folder opened by hand: the core chooses its metadata, says why, and asks when it cannot', async () => {
  // A file-system catalog table whose version hint lags one commit behind
  // its gzip-compressed documents.
  const gz = path.join(repo, 'tests/fixtures/shapes/iceberg_hadoop_gz');
  let { page, errors } = await openPage();
  await page.setInputFiles('#folder', gz);
  await page.waitForSelector('#work:not([hidden])');
  const source = await page.textContent('#metadata-source');
  assert.match(source, /metadata\/v4\.gz\.metadata\.json/);
  assert.match(source, /version-hint\.text says 3; versions up to 4 were committed after it/);
  await page.screenshot({ path: path.join(shots, 'simulator-metadata.png') });
  assert.deepEqual(errors, []);
  await page.close();

  // A catalog table's folder (no hint, no vN names): the core refuses to
  // guess, the page asks, and the document chosen is said to be chosen.
  const { dir, tdir, t } = await stageDemo();
  try {
    ({ page, errors } = await openPage());
    await page.setInputFiles('#folder', tdir);
    await page.waitForSelector('#ask:not([hidden])');
    assert.match(await page.textContent('#error'), /say where the current metadata is/);
    assert.equal(await page.isHidden('#work'), true);
    const current = `metadata/${t.metadata_location.split('/').at(-1)}`;
    await page.selectOption('#ask-doc', current);
    await page.click('#ask-use');
    await page.waitForSelector('#work:not([hidden])');
    assert.match(await page.textContent('#metadata-source'), /chosen by hand/);
    assert.equal(await page.isHidden('#ask'), true);
    await page.close();
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
});

test('opening another table resets every view, and nothing shows before a table is open', async () => {
  const { page, errors } = await openPage();
  assert.equal(await page.isHidden('#work'), true, 'no empty forms before a table');
  await page.selectOption('#demo', 'events');
  await page.click('#open-demo');
  await page.waitForFunction(() => document.querySelector('#plan-candidates').textContent !== '–');
  await page.evaluate(() => window.lakesweepIdle());
  await setField(page, 'retainLast', 3);
  // The command line's duration form is read as the command line reads it.
  await setField(page, 'maxSnapshotAge', '1h 30m');
  await page.evaluate(() => window.lakesweepIdle());
  assert.equal(await page.isHidden('#error'), true, await page.textContent('#error'));
  await page.click('#add-hold');
  await page.evaluate(() => window.lakesweepIdle());
  assert.ok((await page.$$('#snapshots tbody tr')).length > 0);
  assert.ok((await page.$$('#context-items li')).length === 1);
  await page.selectOption('#demo', 'delta-events');
  await page.click('#open-demo');
  await page.waitForFunction(() => document.querySelector('#plan-candidates').textContent !== '–');
  await page.evaluate(() => window.lakesweepIdle());
  assert.equal((await page.$$('#snapshots tbody tr')).length, 0, 'no Iceberg snapshots on a Delta table');
  assert.equal((await page.$$('#context-items li')).length, 0, 'no holds carried over');
  assert.equal(await page.$eval('#timeline', (e) => e.childElementCount), 0);
  assert.equal(await page.$eval('#curve-retain', (e) => e.childElementCount), 0);
  assert.equal(await page.inputValue('#retainLast'), '1', 'policy fields start afresh');
  assert.deepEqual(errors, []);
  await page.close();
});

test('the page is a static folder: copied elsewhere and served as files, it opens the demo', async () => {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'lakesweep-page-'));
  let copy;
  try {
    for (const f of ['index.html', 'app.js', 'style.css', 'pkg', 'demo']) {
      await fs.cp(path.join(page_dir, f), path.join(dir, f), { recursive: true });
    }
    copy = await serve(dir);
    const { page, errors } = await openPage(copy.base);
    await page.selectOption('#demo', 'events');
    await page.click('#open-demo');
    await page.waitForFunction(() => document.querySelector('#plan-candidates').textContent !== '–');
    await page.evaluate(() => window.lakesweepIdle());
    assert.ok(Number(await page.textContent('#plan-candidates')) > 0);
    assert.equal(await page.isHidden('#error'), true, await page.textContent('#error'));
    assert.deepEqual(errors, []);
    await page.close();
  } finally {
    copy?.server.close();
    await fs.rm(dir, { recursive: true, force: true });
  }
});
