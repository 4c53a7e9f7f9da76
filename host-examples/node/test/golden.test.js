// The component in Node (jco) plans every fixture table byte for byte as
// the native core pinned it (tests/golden/ at the repository root): the
// same sealed plans, Iceberg and Delta, and the same expiry plans. The
// fixtures are staged into a scratch folder with the modification times
// their generators recorded (a checkout loses them), and served under the
// neutral roots the pins were made with.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import path from 'node:path';

import { plan, planner } from '../src/planner.js';
import { LocalStore } from '../src/local.js';

import { repo, VROOT, VDELTA, DAY, golden, readJson, stage } from './fixtures.js';

test('Iceberg fixture plans equal the native pins', async () => {
  const expect = await readJson(path.join(repo, 'tests/fixtures/generated/expect.json'));
  const tables = Object.fromEntries(
    Object.values(expect).map((t) => [t.location.slice(VROOT.length + 1), t.mtimes]),
  );
  const dir = await stage(path.join(repo, 'tests/fixtures/generated'), 'iceberg', tables);
  try {
    for (const [name, t] of Object.entries(expect)) {
      const store = new LocalStore({ roots: [[VROOT, dir]], pointer: async () => t.metadata_location });
      for (const [suffix, now] of [['', t.now_ms], ['-later', t.now_ms + 365 * DAY]]) {
        const run = await plan(
          { table: t.location, metadata: t.metadata_location, nowMs: now, retentionMs: t.file_retention_ms },
          store,
        );
        assert.equal(run.document, await golden(`iceberg-${name}${suffix}`), `iceberg-${name}${suffix}`);
      }
      // The expiry plans, from the same metadata document.
      const md = await store.read(t.metadata_location);
      const held = '{"holds": [{"scope": "table", "generation": 3, "reason": "audit"}]}';
      for (const [suffix, days, context] of [['', 0, '{}'], ['-400d', 400, '{}'], ['-400d-held', 400, held]]) {
        const e = planner.planExpiry(
          t.metadata_location, md, undefined, context, BigInt(t.now_ms + days * DAY), new BigInt64Array(), [],
        );
        assert.equal(e.document, await golden(`expiry-${name}${suffix}`), `expiry-${name}${suffix}`);
      }
    }
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
});

test('Delta fixture plans equal the native pins', async () => {
  const expect = await readJson(path.join(repo, 'tests/fixtures/delta/expect.json'));
  const tables = Object.fromEntries(Object.entries(expect).map(([n, t]) => [n, t.mtimes]));
  const dir = await stage(path.join(repo, 'tests/fixtures/delta'), 'delta', tables);
  const store = new LocalStore({ roots: [[VDELTA, dir]] });
  const cases = [
    ['delta-events-1d', 'events', 1, {}],
    ['delta-events-8d', 'events', 8, {}],
    ['delta-events-40d-log-cleanup', 'events', 40, { logCleanup: true }],
    ['delta-events-40d-keep-version-2', 'events', 40, { logCleanup: true, keepVersions: [2] }],
    ['delta-simple-8d', 'simple', 8, {}],
  ];
  try {
    for (const [pin, name, days, extra] of cases) {
      const run = await plan(
        {
          table: `${VDELTA}/${name}`,
          format: 'delta',
          nowMs: expect[name].generated_at_ms + days * DAY,
          ...extra,
        },
        store,
      );
      assert.equal(run.document, await golden(pin), pin);
    }
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
});

test('a refusal is the typed error, and nothing is planned', async () => {
  const store = new LocalStore({ pointer: async () => null });
  await assert.rejects(
    plan({ table: 'file:///nonexistent/t', metadata: 'file:///nonexistent/t/metadata/v1.metadata.json', nowMs: 0 }, store),
    (e) => e.name === 'PlanRefused' && /malformed|missing|not found|does not exist/i.test(e.message),
  );
});
