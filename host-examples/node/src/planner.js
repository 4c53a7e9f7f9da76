// The planner component (target/lakesweep.wasm, transpiled by jco into
// gen/) driven from Node. Every decision is the component's: this file only
// answers its requests (reads, listings, the pointer) from a store and
// collects what it says, in the call order the WIT contract states.

import { planner } from '../gen/lakesweep.js';

export { planner };

/// The planner's error as one line: who must act, the typed reason, the detail.
export function describe(e) {
  const p = e && e.payload;
  if (!p || typeof p !== 'object' || !p.tag) return String(e && e.message ? e.message : e);
  const v = p.val || {};
  switch (p.tag) {
    case 'malformed':
      return `malformed input (${v.reason}) ${v.uri}: ${v.detail}`;
    case 'unsupported':
      return `unsupported: ${v.feature} (in ${v.uri})`;
    case 'protocol':
      return `host protocol error (${v.reason}): ${v.detail}`;
    case 'invalid-options':
      return `invalid option ${v.field}: ${v.detail}`;
    case 'unsafe':
      return `unsafe to proceed (${v.reason}): ${v.detail}`;
    default:
      return `${p.tag}: ${JSON.stringify(v, (_, x) => (typeof x === 'bigint' ? x.toString() : x))}`;
  }
}

/// A refusal of the planner's, with its typed payload kept.
export class PlanRefused extends Error {
  constructor(e) {
    super(describe(e));
    this.name = 'PlanRefused';
    this.payload = e && e.payload;
  }
}

/// Runs `f`, raising the planner's refusal as a PlanRefused.
export function call(f) {
  try {
    return f();
  } catch (e) {
    if (e && e.payload) throw new PlanRefused(e);
    throw e;
  }
}


/// The session's configuration from plain options (times in epoch ms, as
/// numbers or bigints). Without a window or a memory budget the planner
/// chooses them (its defaults are the same on every host).
export function sessionConfig(o) {
  const format = o.format || 'iceberg';
  const big = (x) => (x === undefined || x === null ? undefined : BigInt(x));
  return {
    tableLocation: o.table.replace(/\/+$/, ''),
    format,
    metadataLocation: format === 'delta' ? '' : o.metadata,
    nowMs: big(o.nowMs),
    fileRetentionMs: big(o.retentionMs),
    keepDeletedEntries: o.keepDeletedEntries ?? true,
    allowShortRetention: !!o.allowShortRetention,
    locationMap: (o.locationMap || []).map(([from, to]) => ({ from, to })),
    policy: o.policy,
    context: o.context,
    keepVersions: BigInt64Array.from((o.keepVersions || []).map(BigInt)),
    logCleanup: !!o.logCleanup,
    pointerAuthoritative: !!o.pointerAuthoritative,
    memoryBudgetBytes: big(o.memoryBudgetBytes),
    origin: o.origin,
    foreignRoots: (o.foreignRoots || []).map(([root, owner]) => ({ root, owner })),
    priorPointers: o.priorPointers || [],
    deletedIndex: o.deletedIndex,
  };
}

/// Runs one planner session over `store` and returns the sealed plan
/// (`document` is the stored plan, byte for byte) and the final decision
/// per key. `store` answers `read(uri)` (bytes, or null when the object
/// does not exist; any other failure throws and ends the run),
/// `list(prefix)` (an async iterable of pages of listed objects) and
/// `pointer()` (the metadata location now, or null).
///
/// Reads are answered `concurrency` at a time; pages are handed over as
/// the store yields them, the last one flagged (the page before is held
/// back until the next arrives). `onKeepSetComplete(session)` is awaited
/// once, when the keep set is complete and before the first listing (the
/// page mode's coordinator exports the keep set there).
export async function plan(options, store, { concurrency = 16, onKeepSetComplete } = {}) {
  const cfg = sessionConfig(options);
  const session = call(() => planner.Session.start(cfg));
  const decisions = new Map();
  const drain = () => {
    for (const d of session.drainDecisions()) decisions.set(d.relativeKey, d);
  };
  for (;;) {
    const reads = [];
    const lists = [];
    let pointerAsked = false;
    for (let r = session.pollRequest(); r !== undefined; r = session.pollRequest()) {
      if (r.tag === 'read-blob') reads.push(r.val);
      else if (r.tag === 'list') lists.push(r.val);
      else pointerAsked = true;
    }
    if (!reads.length && !lists.length && !pointerAsked) break;
    for (let i = 0; i < reads.length; i += concurrency) {
      const batch = reads.slice(i, i + concurrency);
      const answers = await Promise.all(batch.map((uri) => store.read(uri)));
      batch.forEach((uri, j) => {
        const bytes = answers[j];
        if (bytes === null || bytes === undefined) call(() => session.handleMissing(uri));
        else call(() => session.handleBlob(uri, bytes));
        drain();
      });
    }
    // A listing asked for before the keep set is complete is one the keep
    // set needs (a Delta log): the hook waits for the table's own.
    if (lists.length && onKeepSetComplete && session.keepSetComplete()) {
      const hook = onKeepSetComplete;
      onKeepSetComplete = undefined;
      await hook(session);
    }
    for (const prefix of lists) {
      let held = null;
      for await (const page of store.list(prefix)) {
        if (held !== null) {
          call(() => session.handlePage(held, false));
          drain();
        }
        held = page;
      }
      call(() => session.handlePage(held || [], true));
      drain();
    }
    if (pointerAsked) {
      const now = await store.pointer();
      call(() => session.handlePointer(now ?? undefined));
      drain();
    }
  }
  const sealed = call(() => session.finish());
  return { plan: sealed, document: sealed.document, decisions };
}

/// The newest version of the Delta table at `table` as the planner names
/// it (the URI of its newest commit, or a newer checkpoint of a
/// checkpoint-only log), from `store`'s listing of its `_delta_log/`;
/// null for an empty log. This is a Delta table's pointer.
export async function deltaHead(table, store) {
  const base = table.replace(/\/+$/, '');
  const listed = [];
  for await (const page of store.list(`${base}/_delta_log/`)) listed.push(...page);
  const head = call(() => planner.deltaHead(base, listed));
  return head ? head.uri : null;
}

/// Which of `keys` a planner session started from `config` (the planner's
/// own: a deletion's damage check) references once its keep set is
/// complete, reading from `store`: [[key, why]].
export async function referencedWith(config, keys, store) {
  const session = call(() => planner.Session.start(config));
  for (;;) {
    const reads = [];
    let listing = false;
    for (let r = session.pollRequest(); r !== undefined; r = session.pollRequest()) {
      if (r.tag === 'read-blob') reads.push(r.val);
      else if (r.tag === 'list') listing = true;
    }
    for (const uri of reads) {
      const bytes = await store.read(uri);
      if (bytes === null || bytes === undefined) call(() => session.handleMissing(uri));
      else call(() => session.handleBlob(uri, bytes));
    }
    if (listing) return call(() => session.referenced(keys));
    if (!reads.length) throw new Error('the damage check session stopped before its keep set was complete');
  }
}
