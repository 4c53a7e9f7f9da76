// The Node host against a real S3-compatible server on 127.0.0.1 (moto's,
// from PyPI; scripts/test.sh installs it): the fixture Iceberg table is
// uploaded, then planned three ways on the same bucket at the same time —
// one Node session, the serverless coordinator with page handlers (small
// pages, folders listed concurrently, so pages arrive in any order), and
// the sidecar (the component in wasmtime). The plans agree; a stale keep
// set, another table's keys and a foreign table's metadata are refused.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';

import { plan } from '../src/planner.js';
import { S3Store } from '../src/s3.js';
import { coordinate, handler } from '../src/serverless.js';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const VROOT = 'file:///lakesweep-fixtures';
const BUCKET = 'lakesweep-node';
const DAY = 86_400_000;

let moto;
let endpoint;
let client;
let expect;
let nowMs;

/// Starts moto on a port it picks (`-p 0`) and reads it from its log.
function startMoto() {
  return new Promise((resolve, reject) => {
    const child = spawn('python3', ['-m', 'moto.server', '-H', '127.0.0.1', '-p', '0'], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let buf = '';
    const timer = setTimeout(() => {
      child.kill();
      reject(new Error('moto did not say its port (pip install "moto[server]")'));
    }, 60_000);
    child.on('error', reject);
    child.stderr.on('data', (d) => {
      buf += d.toString();
      const m = /Running on http:\/\/127\.0\.0\.1:(\d+)/.exec(buf);
      if (m) {
        clearTimeout(timer);
        child.stderr.removeAllListeners('data');
        child.stderr.resume();
        resolve({ child, endpoint: `http://127.0.0.1:${m[1]}` });
      }
    });
  });
}

async function upload(dir, prefix) {
  for (const e of await fs.readdir(dir, { withFileTypes: true, recursive: true })) {
    if (!e.isFile()) continue;
    const full = path.join(e.parentPath ?? e.path, e.name);
    const key = `${prefix}/${path.relative(dir, full).split(path.sep).join('/')}`;
    await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: await fs.readFile(full) }));
  }
}

before(async () => {
  ({ child: moto, endpoint } = await startMoto());
  process.env.AWS_ACCESS_KEY_ID = 'testing';
  process.env.AWS_SECRET_ACCESS_KEY = 'testing';
  process.env.AWS_REGION = 'us-east-1';
  client = new S3Client({ endpoint, forcePathStyle: true, region: 'us-east-1' });
  for (let i = 0; ; i++) {
    try {
      await client.send(new CreateBucketCommand({ Bucket: BUCKET }));
      break;
    } catch (e) {
      if (i > 50) throw e;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  expect = JSON.parse(await fs.readFile(path.join(repo, 'tests/fixtures/generated/expect.json'), 'utf8'));
  await upload(path.join(repo, 'tests/fixtures/generated/warehouse/demo/events'), 'events');
  await upload(path.join(repo, 'tests/fixtures/generated/warehouse/demo/simple_v1'), 'simple');
  // Orphans whose keys a listing must carry exactly: a space, a plus, an
  // encoded percent, a non-ASCII name (S3 returns them url-encoded).
  for (const name of ['a b.parquet', 'a+b.parquet', 'cat=100%25/x.parquet', 'zoë.parquet']) {
    await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: `events/data/${name}`, Body: 'orphan' }));
  }
  // Every object was written just now: judged a month later.
  nowMs = Date.now() + 30 * DAY;
});

after(() => moto && moto.kill());

/// The events table's plan options on the bucket.
function events(extra = {}) {
  const t = expect.events;
  return {
    table: `s3://${BUCKET}/events`,
    metadata: t.metadata_location,
    locationMap: [[t.location, `s3://${BUCKET}/events`]],
    nowMs,
    ...extra,
  };
}

const store = () => new S3Store({ client, pointer: async () => expect.events.metadata_location });

test('the coordinator and its page handlers seal the plan one session seals, and the sidecar agrees', async () => {
  const whole = await plan(events(), store());
  const sealed = JSON.parse(whole.document);
  assert.ok(sealed.delete.length > 0, whole.document);
  const keys = sealed.delete.map((d) => d.key);
  for (const name of ['a b.parquet', 'a+b.parquet', 'cat=100%25/x.parquet', 'zoë.parquet']) {
    assert.ok(keys.includes(`data/${name}`), `data/${name} planned as spelled: ${keys}`);
  }

  for (const maxKeys of [3, 50]) {
    const s = store();
    const run = await coordinate({
      ...events(),
      pointer: async () => expect.events.metadata_location,
      store: s,
      keepSetUri: `s3://${BUCKET}/plans/keepsets/run-${maxKeys}.bin`,
      maxKeys,
      concurrency: 4,
      invoke: (event) => handler(event, {}, { store: s }),
    });
    assert.equal(run.document, whole.document, `page size ${maxKeys}`);
    // What the pages decided is what the plan deletes.
    const candidates = run.pageDecisions.filter((d) => d.verdict === 'candidate').map((d) => d.relativeKey).sort();
    assert.deepEqual(candidates, sealed.delete.map((d) => d.key).sort());
  }

  // The sidecar (wasmtime) on the same bucket at the same time: the same
  // deletes, tokens and summary (its plan also seals how it was made).
  // The sidecar scripts/test.sh built (LAKESWEEP_SIDECAR), else the default target folder.
  const bin = process.env.LAKESWEEP_SIDECAR || path.join(repo, 'target/debug/lakesweep');
  await fs.access(bin).catch(() => {
    throw new Error(`${bin} is missing: build the sidecar first (scripts/test.sh does)`);
  });
  const [from, to] = events().locationMap[0];
  const r = spawnSync(
    bin,
    ['plan', `s3://${BUCKET}/events`, '--metadata', expect.events.metadata_location, '--location-map', `${from}=${to}`,
      '--now', String(nowMs), '--json'],
    { env: { ...process.env, AWS_ENDPOINT_URL: endpoint, AWS_ALLOW_HTTP: 'true', LAKESWEEP_WASM: path.join(repo, 'target/lakesweep.wasm') } },
  );
  assert.equal(r.status, 0, r.stderr.toString());
  const side = JSON.parse(r.stdout.toString());
  assert.deepEqual(side.delete, sealed.delete);
  assert.deepEqual(side.tokens, sealed.tokens);
  assert.deepEqual(side.summary, sealed.summary);
  // Sealed with the sidecar's record of how it was made, the plan is the
  // sidecar's to the digest (its report for people lies outside the seal).
  const same = await plan(events({ origin: side.origin }), store());
  delete side.report;
  assert.deepEqual(JSON.parse(same.document), side);
});

test('the coordinator finishes when page calls settle at once', async () => {
  // Answers computed ahead, handed back without waiting on any I/O.
  const s = store();
  const answers = new Map();
  const run = await coordinate({
    ...events(),
    pointer: async () => expect.events.metadata_location,
    store: s,
    keepSetUri: `s3://${BUCKET}/plans/keepsets/eager.bin`,
    maxKeys: 2,
    concurrency: 3,
    invoke: async (e) => {
      const k = `${e.prefix}#${e.continuationToken ?? ''}`;
      if (!answers.has(k)) answers.set(k, await handler(e, {}, { store: s }));
      return answers.get(k);
    },
  });
  const again = await coordinate({
    ...events(),
    pointer: async () => expect.events.metadata_location,
    store: s,
    keepSetUri: `s3://${BUCKET}/plans/keepsets/eager.bin`,
    maxKeys: 2,
    concurrency: 3,
    invoke: async (e) => answers.get(`${e.prefix}#${e.continuationToken ?? ''}`),
  });
  assert.equal(again.document, run.document);
});

test('a page handler refuses a stale keep set, another table, and a foreign table', async () => {
  const s = store();
  let event;
  await coordinate({
    ...events(),
    pointer: async () => expect.events.metadata_location,
    store: s,
    keepSetUri: `s3://${BUCKET}/plans/keepsets/refusals.bin`,
    invoke: async (e) => {
      event = event || e;
      return handler(e, {}, { store: s });
    },
  });
  // The pointer moved since the keep set was exported.
  await assert.rejects(
    handler({ ...event, pointer: `${VROOT}/warehouse/demo/events/metadata/99999-newer.metadata.json` }, {}, { store: s }),
    (e) => e.name === 'PlanRefused' && /table-changing/.test(e.message),
  );
  // A page of another table's keys.
  await assert.rejects(
    handler({ ...event, prefix: `s3://${BUCKET}/simple/`, continuationToken: undefined }, {}, { store: s }),
    (e) => e.name === 'PlanRefused' && /protocol/.test(e.message),
  );
  // A keep set whose bytes are not the ones exported.
  await assert.rejects(
    handler({ ...event, keepSetDigest: '0'.repeat(64) }, {}, { store: s }),
    /digest differs/,
  );
  // Another table's metadata document inside this table: the whole run stops.
  const t = expect.simple_v1;
  const foreign = await fs.readFile(
    path.join(repo, 'tests/fixtures/generated', t.metadata_location.slice(VROOT.length + 1)),
  );
  await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'events/data/00000-foreign.metadata.json', Body: foreign }));
  // The page handler itself settles the owner check and refuses (not
  // only the coordinator's session).
  await assert.rejects(
    handler({ ...event, prefix: `s3://${BUCKET}/events/data/`, continuationToken: undefined }, {}, { store: s }),
    (e) => e.name === 'PlanRefused' && /foreign-table/.test(e.message),
  );
  await assert.rejects(
    coordinate({
      ...events(),
      pointer: async () => expect.events.metadata_location,
      store: s,
      keepSetUri: `s3://${BUCKET}/plans/keepsets/foreign.bin`,
      maxKeys: 5,
      invoke: (e) => handler(e, {}, { store: s }),
    }),
    (e) => e.name === 'PlanRefused' && /foreign-table/.test(e.message),
  );
});
