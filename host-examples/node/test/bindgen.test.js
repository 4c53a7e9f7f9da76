// The wasm-bindgen build of the core (the browser simulator's, made by
// scripts/build-web.sh into target/web-node/) plans every fixture table
// byte for byte as the native core pinned it: with golden.test.js (the
// component through jco), tests/golden.rs (native) and tests/component.rs
// (the component in wasmtime), one set of pins across all four builds.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

import { LocalStore } from '../src/local.js';
import { repo, VROOT, VDELTA, DAY, golden, readJson, stage } from './fixtures.js';

const web = createRequire(import.meta.url)(path.join(repo, 'target/web-node/lakesweep.js'));

/// One session of the wasm-bindgen build over `store`: the sealed plan
/// document. Pages go over as JSON (sizes and times as numbers).
async function planWeb(o, store) {
  const format = o.format || 'iceberg';
  const s = new web.WebSession(
    JSON.stringify({
      tableLocation: o.table,
      format,
      metadataLocation: format === 'delta' ? '' : o.metadata,
      nowMs: o.nowMs,
      fileRetentionMs: o.retentionMs ?? (format === 'delta' ? 7 : 3) * DAY,
      keepVersions: o.keepVersions || [],
      logCleanup: !!o.logCleanup,
    }),
  );
  for (;;) {
    const asked = [];
    for (let r = s.pollRequest(); r !== undefined; r = s.pollRequest()) asked.push(JSON.parse(r));
    if (!asked.length) break;
    for (const r of asked) {
      if (r.kind === 'read-blob') {
        const bytes = await store.read(r.uri);
        if (bytes === null) s.handleMissing(r.uri);
        else s.handleBlob(r.uri, bytes);
      } else if (r.kind === 'list') {
        const pages = [];
        for await (const page of store.list(r.prefix)) pages.push(page);
        if (!pages.length) pages.push([]);
        pages.forEach((page, i) => {
          const json = page.map((x) => ({
            key: x.key,
            size: Number(x.version.size),
            lastModifiedMs: Number(x.version.lastModifiedMs),
          }));
          s.handlePageJson(JSON.stringify(json), i === pages.length - 1);
        });
      } else {
        s.handlePointer((await store.pointer()) ?? undefined);
      }
    }
    s.drainDecisionsJson();
  }
  return s.finish();
}

test('the wasm-bindgen build plans the Iceberg fixtures as the native pins', async () => {
  const expect = await readJson(path.join(repo, 'tests/fixtures/generated/expect.json'));
  const tables = Object.fromEntries(
    Object.values(expect).map((t) => [t.location.slice(VROOT.length + 1), t.mtimes]),
  );
  const dir = await stage(path.join(repo, 'tests/fixtures/generated'), 'web-iceberg', tables);
  try {
    for (const [name, t] of Object.entries(expect)) {
      const store = new LocalStore({ roots: [[VROOT, dir]], pointer: async () => t.metadata_location });
      for (const [suffix, now] of [['', t.now_ms], ['-later', t.now_ms + 365 * DAY]]) {
        const doc = await planWeb(
          { table: t.location, metadata: t.metadata_location, nowMs: now, retentionMs: t.file_retention_ms },
          store,
        );
        assert.equal(doc, await golden(`iceberg-${name}${suffix}`), `iceberg-${name}${suffix}`);
      }
      const md = await store.read(t.metadata_location);
      const held = '{"holds": [{"scope": "table", "generation": 3, "reason": "audit"}]}';
      for (const [suffix, days, context] of [['', 0, '{}'], ['-400d', 400, '{}'], ['-400d-held', 400, held]]) {
        const doc = web.planExpiry(t.metadata_location, md, undefined, context, t.now_ms + days * DAY);
        assert.equal(doc, await golden(`expiry-${name}${suffix}`), `expiry-${name}${suffix}`);
      }
    }
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
});

test('the wasm-bindgen build plans the Delta fixtures as the native pins', async () => {
  const expect = await readJson(path.join(repo, 'tests/fixtures/delta/expect.json'));
  const tables = Object.fromEntries(Object.entries(expect).map(([n, t]) => [n, t.mtimes]));
  const dir = await stage(path.join(repo, 'tests/fixtures/delta'), 'web-delta', tables);
  const store = new LocalStore({ roots: [[VDELTA, dir]] });
  try {
    for (const [pin, name, days, extra] of [
      ['delta-events-1d', 'events', 1, {}],
      ['delta-events-8d', 'events', 8, {}],
      ['delta-events-40d-log-cleanup', 'events', 40, { logCleanup: true }],
      ['delta-events-40d-keep-version-2', 'events', 40, { logCleanup: true, keepVersions: [2] }],
      ['delta-simple-8d', 'simple', 8, {}],
    ]) {
      const doc = await planWeb(
        { table: `${VDELTA}/${name}`, format: 'delta', nowMs: expect[name].generated_at_ms + days * DAY, ...extra },
        store,
      );
      assert.equal(doc, await golden(pin), pin);
    }
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
});

test('the wasm-bindgen build refuses what the core refuses, with who must act', async () => {
  assert.throws(
    () => new web.WebSession(JSON.stringify({ tableLocation: 'not a uri', nowMs: 0, fileRetentionMs: DAY })),
    /must act/,
  );
  assert.throws(() => web.checkPolicy('{"schema": "nope"}'), /must act/);
});
