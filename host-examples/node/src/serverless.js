// Serverless, one listing page per call (AWS Lambda's handler shape), and
// the coordinator that fans the listing out and seals the plan.
//
// The coordinator runs a planner session until its keep set is complete,
// exports the keep set next to where the plan goes (named by its SHA-256),
// then has the table's folders listed page by page by `invoke` (a Lambda
// invocation in production, a direct call in tests), concurrently across
// folders. Each page handler loads the keep set once per warm container
// (cached by its digest, checked on load), checks it against the pointer
// the coordinator read, lists its one page, classifies it with the
// stateless page mode and settles owner checks by reading the metadata
// documents it must. The coordinator hands the pages' objects to its
// session in any order (the planner decides the same whatever the order),
// which re-reads the pointer and seals the plan: the pages' decisions are
// what is streamed out early, the sealed plan is what is applied. Neither
// side compares pointers, versions or times itself.

import { createHash } from 'node:crypto';

import { apply } from './apply.js';
import { call as wrap, deltaHead, plan, planner } from './planner.js';
import { LocalStore } from './local.js';
import { S3Store } from './s3.js';

/// The store a URI lives in: `options.store` when given, else a local
/// folder for `file://`, else S3.
function storeFor(uri, options) {
  if (options.store) return options.store;
  return uri.startsWith('file://') ? new LocalStore({ pointer: options.pointer }) : new S3Store({ pointer: options.pointer });
}

const json = (o) => JSON.parse(JSON.stringify(o, (_, v) => (typeof v === 'bigint' ? v.toString() : v)));

/// A listed object as the page handler returns it (JSON: numbers as decimal strings).
function objectOut(o) {
  return {
    key: o.key,
    size: o.version.size.toString(),
    lastModifiedMs: o.version.lastModifiedMs.toString(),
    etag: o.version.etag ?? null,
  };
}

/// A listed object from a page handler's answer.
export function objectIn(o) {
  return {
    key: o.key,
    version: {
      size: BigInt(o.size),
      lastModifiedMs: BigInt(o.lastModifiedMs),
      etag: o.etag ?? undefined,
    },
  };
}

const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex');

// The warm container's keep set: loaded once per digest.
let cached = null;

async function classifier(store, uri, digest) {
  if (cached && cached.digest === digest) return cached.classifier;
  const bytes = await store.read(uri);
  if (!bytes) throw new Error(`the keep set ${uri} does not exist`);
  if (sha256(bytes) !== digest) {
    throw new Error(`the keep set ${uri} is not the one the coordinator exported (digest differs): nothing classified`);
  }
  const c = wrap(() => planner.PageClassifier.load(bytes));
  cached = { digest, classifier: c };
  return c;
}

/// A page event as the handler takes it; an error names what is missing
/// or wrong (nothing is listed for a malformed event).
export function checkPageEvent(event) {
  if (!event || typeof event !== 'object' || Array.isArray(event)) {
    throw new Error('the page event must be an object: {keepSet, keepSetDigest, pointer, prefix, continuationToken?, maxKeys?}');
  }
  const need = {
    keepSet: 'the URI of the keep set the coordinator exported',
    keepSetDigest: "the keep set's SHA-256 (64 hex digits), as the coordinator computed it",
    prefix: 'the URI prefix whose page this call lists',
  };
  for (const [name, what] of Object.entries(need)) {
    if (typeof event[name] !== 'string' || event[name] === '') {
      throw new Error(`the page event has no \`${name}\` (${what})`);
    }
  }
  if (!/^[0-9a-f]{64}$/.test(event.keepSetDigest)) {
    throw new Error(`the page event's \`keepSetDigest\` is not 64 hex digits: ${JSON.stringify(event.keepSetDigest)}`);
  }
  // The pointer may be absent (a Delta table's keep set has none); the
  // keep set itself says whether it needs one.
  if (event.pointer != null && typeof event.pointer !== 'string') {
    throw new Error('the page event\'s `pointer` must be a metadata location or null');
  }
  if (event.continuationToken != null && typeof event.continuationToken !== 'string') {
    throw new Error('the page event\'s `continuationToken` must be the token a page answered');
  }
  if (event.maxKeys != null && !(Number.isInteger(event.maxKeys) && event.maxKeys >= 1 && event.maxKeys <= 1000)) {
    throw new Error(`the page event's \`maxKeys\` must be an integer from 1 to 1000, not ${JSON.stringify(event.maxKeys)}`);
  }
}

/// The page handler. `event`: {keepSet: URI, keepSetDigest: hex, pointer:
/// the metadata location the coordinator read, prefix: URI, continuationToken?,
/// maxKeys?}. Returns {objects, decisions, next} (next: the continuation
/// token of the following page, or null), or throws: a keep set that is
/// not the table's or not current, a foreign table's metadata, a store
/// error. `options.store` overrides the S3 store (tests, other clients).
export async function handler(event, _context, options = {}) {
  checkPageEvent(event);
  const store = storeFor(event.prefix, options);
  const c = await classifier(store, event.keepSet, event.keepSetDigest);
  wrap(() => c.checkPointer(event.pointer ?? undefined));
  const page = await store.listPage(event.prefix, {
    continuationToken: event.continuationToken ?? undefined,
    maxKeys: event.maxKeys ?? 1000,
  });
  const decisions = wrap(() => c.classify(page.objects));
  for (let i = 0; i < decisions.length; i++) {
    if (decisions[i].verdict !== 'owner-check') continue;
    // Decisions come in the page's order.
    const o = page.objects[i];
    const bytes = await store.read(o.key);
    decisions[i] = wrap(() => c.settleMetadataFile(o, bytes ?? undefined));
  }
  return {
    objects: page.objects.map(objectOut),
    decisions: json(decisions),
    next: page.next,
  };
}

/// The coordinator. `options`: the plan's options (`table`, `metadata`,
/// `nowMs`, ...; see planner.sessionConfig) and `pointer` (async () => the
/// metadata location now); `keepSetUri` (where to write the keep set);
/// `invoke(event)` (runs one page handler and returns its answer);
/// `maxKeys` (page size); `concurrency` (folders listed at once);
/// `store` (an S3Store or a LocalStore: anything with `read`, `write`,
/// `listPage`). Returns the sealed plan and every page's decisions.
export async function coordinate(options) {
  const { invoke, keepSetUri, maxKeys = 1000, concurrency = 8 } = options;
  if (typeof options.table !== 'string') throw new Error('coordinate: no `table` (the table location URI)');
  if (typeof keepSetUri !== 'string') throw new Error('coordinate: no `keepSetUri` (where the keep set is written for the page handlers)');
  if (typeof invoke !== 'function') throw new Error('coordinate: no `invoke` (runs one page handler)');
  const store = storeFor(options.table, options);
  // A Delta table's pointer is its newest log entry, as the planner names it.
  const pointerOf =
    options.pointer ?? (options.format === 'delta' ? () => deltaHead(options.table, store) : undefined);
  if (typeof pointerOf !== 'function') throw new Error('coordinate: no `pointer` (async () => the metadata location now)');
  const pointer = await pointerOf();
  const decisions = [];
  let keepSet = null;
  // The session's own store: reads and the pointer from S3; its listing is
  // the fan-out over the page handlers.
  const fanned = {
    read: (uri) => store.read(uri),
    pointer: () => pointerOf(),
    list: async function* (prefix) {
      if (!keepSet) {
        // A listing the keep set needs first (a Delta log) is the
        // coordinator's own: there is no keep set to classify with yet.
        yield* store.list(prefix);
        return;
      }
      // The folders under the prefix (the table's, or a write root's),
      // and the objects beside them.
      const top = await store.listPage(prefix, { delimiter: '/', maxKeys: 1000 });
      if (top.next) {
        // A table with over a thousand top-level names: list it whole.
        top.folders = [prefix];
        top.objects = [];
      }
      if (top.objects.length) yield top.objects;
      const queue = top.folders.map((f) => ({ prefix: f, token: undefined }));
      const pages = [];
      let running = 0;
      let error = null;
      let wake = null;
      const next = () => {
        while (running < concurrency && queue.length && !error) {
          const job = queue.shift();
          running++;
          invoke({
            keepSet: keepSet.uri,
            keepSetDigest: keepSet.digest,
            pointer,
            prefix: job.prefix,
            continuationToken: job.token,
            maxKeys,
          })
            .then((answer) => {
              pages.push(answer.objects.map(objectIn));
              decisions.push(...answer.decisions);
              if (answer.next) queue.unshift({ prefix: job.prefix, token: answer.next });
            })
            .catch((e) => {
              error = error || e;
            })
            .finally(() => {
              running--;
              // Start what waits even while the consumer is busy with a
              // page: a job may settle at any time, not only while awaited.
              next();
              if (wake) wake();
            });
        }
      };
      next();
      while (running || queue.length || pages.length) {
        if (error) throw error;
        if (pages.length) {
          yield pages.shift();
          continue;
        }
        next();
        if (!running) {
          if (error) throw error;
          if (queue.length) throw new Error('listing work is queued but none runs');
          continue;
        }
        await new Promise((r) => {
          wake = r;
        });
        wake = null;
      }
      if (error) throw error;
    },
  };
  const metadata = options.format === 'delta' ? undefined : (options.metadata ?? pointer);
  const run = await plan({ ...options, metadata }, fanned, {
    onKeepSetComplete: async (session) => {
      const bytes = wrap(() => session.exportKeepSet());
      const digest = sha256(bytes);
      await store.write(keepSetUri, bytes);
      keepSet = { uri: keepSetUri, digest };
    },
  });
  return { ...run, pageDecisions: decisions, keepSet };
}

/// The delete handler: one share of a sealed plan per call (a page of its
/// keys), for a serverless deployment. `event`: {plan: the sealed plan
/// document, or planUri: where it is stored; keys: the plan's keys this
/// call deletes (none: all)}; `options.store` (an S3Store whose `pointer`
/// reads the catalog), `options.context` (async () => the context now),
/// `options.stopSwitches` (a fleet's stop switches, URIs: read with the
/// table's own before every batch; the deployment's setting, never the
/// event's, so a caller cannot skip one).
/// Each call is a whole run of the planner's deletion session over its
/// keys (the facts accepted before each batch, each key HEADed and deleted
/// only while it is the planned version, the damage check after): returns
/// {receipts, outcome} (JSON: numbers as decimal strings), the same
/// receipts every host writes.
export async function deleteHandler(event, _context, options = {}) {
  if (!event || typeof event !== 'object' || Array.isArray(event)) {
    throw new Error('the delete event must be an object: {plan | planUri, keys?}');
  }
  let document = event.plan;
  if (document === undefined) {
    if (typeof event.planUri !== 'string') throw new Error('the delete event names no plan: give `plan` (the document) or `planUri`');
    const bytes = await storeFor(event.planUri, options).read(event.planUri);
    if (!bytes) throw new Error(`the plan ${event.planUri} does not exist`);
    document = new TextDecoder().decode(bytes);
  }
  if (typeof document !== 'string') throw new Error('the delete event\'s `plan` must be the sealed plan document (text)');
  // The table's store: where the plan says the table is (the planner
  // checks the document itself).
  let table = '';
  try {
    table = JSON.parse(document).tableLocation ?? '';
  } catch {
    // Not JSON: the planner refuses it below, naming why.
  }
  const store = storeFor(String(table), options);
  if (event.keys !== undefined && !Array.isArray(event.keys)) throw new Error('`keys` must be a list of the plan\'s keys');
  const done = await apply(document, store, {
    keys: event.keys,
    context: options.context,
    allowFutureNow: !!event.allowFutureNow,
    batch: event.batch,
    stopSwitches: options.stopSwitches,
    switchStore: (uri) => storeFor(uri, options),
  });
  return json(done);
}
