// The serverless handlers on a local table, no S3 at all: the local store
// pages like S3 (a prefix, the delimiter, a continuation token), so the
// coordinator and its page handlers seal the plan one session seals; the
// delete handler applies a share of it. Malformed events are refused with
// a message naming the field, before anything is listed.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, promises as fs, writeFileSync } from 'node:fs';
import path from 'node:path';

import { LocalStore } from '../src/local.js';
import { apply } from '../src/apply.js';
import { plan } from '../src/planner.js';
import { checkPageEvent, coordinate, deleteHandler, handler } from '../src/serverless.js';
import { DAY, readJson, repo, stage, VDELTA, VROOT } from './fixtures.js';

async function staged(tag) {
  const expect = await readJson(path.join(repo, 'tests/fixtures/generated/expect.json'));
  const tables = Object.fromEntries(Object.values(expect).map((t) => [t.location.slice(VROOT.length + 1), t.mtimes]));
  const dir = await stage(path.join(repo, 'tests/fixtures/generated'), tag, tables);
  const t = expect.events;
  const store = new LocalStore({ roots: [[VROOT, dir]], pointer: async () => t.metadata_location });
  const options = {
    table: t.location,
    metadata: t.metadata_location,
    nowMs: t.now_ms,
    retentionMs: t.file_retention_ms,
  };
  return { dir, t, store, options };
}

test('the local store pages like S3: prefix, delimiter, continuation', async () => {
  const { dir, t, store } = await staged('pages');
  try {
    const all = [];
    for await (const page of store.list(t.location)) all.push(...page.map((o) => o.key));
    const got = [];
    let token;
    do {
      const page = await store.listPage(`${t.location}/`, { continuationToken: token, maxKeys: 3 });
      assert.ok(page.objects.length <= 3 && page.folders.length === 0);
      got.push(...page.objects.map((o) => o.key));
      token = page.next ?? undefined;
    } while (token);
    assert.deepEqual(got, [...all].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))));
    const top = await store.listPage(`${t.location}/`, { delimiter: '/' });
    assert.ok(top.folders.includes(`${t.location}/data/`) && top.folders.includes(`${t.location}/metadata/`), top.folders);
    assert.ok(top.folders.every((f) => f.endsWith('/') && !f.slice(t.location.length + 1, -1).includes('/')), top.folders);
    assert.equal(top.next, null);
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
});

test('the coordinator and its page handlers plan a local table as one session does, and the delete handler applies it', async () => {
  const { dir, t, store, options } = await staged('serverless');
  try {
    const whole = await plan(options, store);
    for (const maxKeys of [2, 1000]) {
      const run = await coordinate({
        ...options,
        pointer: async () => t.metadata_location,
        store,
        keepSetUri: `${VROOT}/keepsets/run-${maxKeys}.bin`,
        maxKeys,
        concurrency: 3,
        invoke: (event) => handler(JSON.parse(JSON.stringify(event)), {}, { store }),
      });
      assert.equal(run.document, whole.document, `page size ${maxKeys}`);
    }
    const sealed = JSON.parse(whole.document);
    assert.ok(sealed.delete.length > 0);
    const first = sealed.delete[0].key;
    const done = await deleteHandler({ plan: whole.document, keys: [first], allowFutureNow: true }, {}, { store });
    assert.deepEqual(done.receipts.map((r) => [r.receipt.key, r.receipt.result]), [[first, 'deleted']]);
    await assert.rejects(fs.access(path.join(dir, t.location.slice(VROOT.length + 1), first)));
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
});

test('a malformed event is refused naming what is missing, before anything is listed', async () => {
  const ok = { keepSet: 's3://b/k.bin', keepSetDigest: 'a'.repeat(64), pointer: 's3://b/t/metadata/v1.metadata.json', prefix: 's3://b/t/' };
  checkPageEvent(ok);
  checkPageEvent({ ...ok, pointer: undefined });
  for (const [event, why] of [
    [undefined, /must be an object/],
    [{}, /no `keepSet`/],
    [{ ...ok, keepSetDigest: undefined }, /no `keepSetDigest`/],
    [{ ...ok, keepSetDigest: 'xyz' }, /not 64 hex digits/],
    [{ ...ok, prefix: '' }, /no `prefix`/],
    [{ ...ok, maxKeys: 0 }, /`maxKeys` must be an integer from 1 to 1000/],
    [{ ...ok, pointer: 7 }, /`pointer` must be a metadata location or null/],
  ]) {
    await assert.rejects(handler(event, {}), why);
  }
  await assert.rejects(deleteHandler({}, {}), /names no plan/);
  await assert.rejects(deleteHandler(null, {}), /must be an object/);
});

test('a halt set between two batches stops the delete handler and apply before the next batch', async () => {
  const { dir, t, store, options } = await staged('halt');
  try {
    const whole = await plan({ ...options, nowMs: options.nowMs + 365 * 86400000 }, store);
    const keys = JSON.parse(whole.document).delete.map((d) => d.key);
    assert.ok(keys.length >= 3);
    const halt = JSON.stringify({
      schema: 'lakesweepStop.v1',
      halted: true,
      halt: { generation: 1, reason: 'listing looks wrong', by: 'oncall', atMs: 1 },
    });
    // The fleet's switch, named by the deployment: set once the first
    // receipt is written (after batch 1, before batch 2).
    const fleetFile = path.join(dir, 'ops', 'stop.json');
    const fleet = `file://${fleetFile}`;
    const done = await apply(whole.document, store, {
      batch: 1,
      allowFutureNow: true,
      stopSwitches: [fleet],
      switchStore: () => new LocalStore(),
      sink: () => {
        mkdirSync(path.dirname(fleetFile), { recursive: true });
        writeFileSync(fleetFile, halt);
      },
    });
    const results = done.receipts.map((r) => r.receipt.result);
    assert.equal(results[0], 'deleted');
    assert.deepEqual([...new Set(results.slice(1))], ['skipped-stopped']);
    assert.match(done.receipts[1].receipt.detail, /listing looks wrong/);
    assert.equal(done.outcome.exit, 1);
    // The table's own switch stops the delete handler as well.
    const own = path.join(dir, t.location.slice(VROOT.length + 1), '_lakesweep', 'stop.json');
    await fs.mkdir(path.dirname(own), { recursive: true });
    await fs.writeFile(own, halt);
    const rest = await deleteHandler({ plan: whole.document, keys: keys.slice(1), allowFutureNow: true }, {}, { store });
    assert.deepEqual([...new Set(rest.receipts.map((r) => r.receipt.result))], ['skipped-stopped']);
    for (const k of keys.slice(1)) await fs.access(path.join(dir, t.location.slice(VROOT.length + 1), k));
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
});

test('page mode plans a Delta table as one session does: the log is the coordinator\'s, the table\'s pages the handlers\'', async () => {
  const expect = await readJson(path.join(repo, 'tests/fixtures/delta/expect.json'));
  const tables = Object.fromEntries(Object.entries(expect).map(([n, t]) => [n, t.mtimes]));
  const dir = await stage(path.join(repo, 'tests/fixtures/delta'), 'delta-pages', tables);
  const store = new LocalStore({ roots: [[VDELTA, dir]] });
  try {
    for (const [days, extra] of [[1, {}], [40, { logCleanup: true }]]) {
      const options = { table: `${VDELTA}/events`, format: 'delta', nowMs: expect.events.generated_at_ms + days * DAY, ...extra };
      const whole = await plan(options, store);
      const events = [];
      const run = await coordinate({
        ...options,
        store,
        keepSetUri: `${VDELTA}/keepsets/delta-${days}.bin`,
        maxKeys: 3,
        concurrency: 2,
        invoke: (event) => {
          events.push(event);
          return handler(JSON.parse(JSON.stringify(event)), {}, { store });
        },
      });
      assert.equal(run.document, whole.document, `${days} days`);
      // Every page handler checked the keep set against the log's head.
      assert.ok(events.length > 1 && events.every((e) => /_delta_log\/\d{20}\.(json|checkpoint\.parquet)$/.test(e.pointer)), events[0]?.pointer);
      assert.ok(events.every((e) => !e.prefix.includes('_delta_log/') || e.prefix.endsWith('/events/_delta_log/')));
    }
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
});

test('page mode lists a write root outside the table through the handlers too', async () => {
  const { dir, t, store, options } = await staged('root');
  try {
    // The table writes its data under a second root: the metadata names it.
    const metaPath = path.join(dir, t.metadata_location.slice(VROOT.length + 1));
    // Edited as text: JSON.parse would round the 64-bit snapshot ids.
    const text = await fs.readFile(metaPath, 'utf8');
    const ext = `${VROOT}/elsewhere/events-data`;
    const prop = `"write.data.path": ${JSON.stringify(`${ext}/data`)}`;
    const edited = /"properties"\s*:\s*\{\s*\}/.test(text)
      ? text.replace(/"properties"\s*:\s*\{\s*\}/, `"properties": {${prop}}`)
      : text.replace(/"properties"\s*:\s*\{/, `"properties": {${prop}, `);
    assert.notEqual(edited, text);
    const stat = await fs.stat(metaPath);
    await fs.writeFile(metaPath, edited);
    await fs.utimes(metaPath, stat.atime, stat.mtime);
    // In a folder of the root: a page handler lists it (objects at a
    // prefix's top level are the coordinator's own listing).
    mkdirSync(path.join(dir, 'elsewhere/events-data/data/p=1'), { recursive: true });
    const orphan = path.join(dir, 'elsewhere/events-data/data/p=1/orphan.parquet');
    writeFileSync(orphan, 'x');
    const old = (t.now_ms - 30 * DAY) / 1000;
    await fs.utimes(orphan, old, old);
    const whole = await plan(options, store);
    assert.ok(JSON.parse(whole.document).delete.some((d) => d.key === `${ext}/data/p=1/orphan.parquet`), whole.document);
    const prefixes = new Set();
    const run = await coordinate({
      ...options,
      pointer: async () => t.metadata_location,
      store,
      keepSetUri: `${VROOT}/keepsets/root.bin`,
      maxKeys: 2,
      invoke: (event) => {
        prefixes.add(event.prefix);
        return handler(JSON.parse(JSON.stringify(event)), {}, { store });
      },
    });
    assert.equal(run.document, whole.document);
    assert.ok([...prefixes].some((p) => p.startsWith(`${ext}/`)), [...prefixes]);
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
});
