// Applying a sealed plan from Node: the I/O loop around the planner's
// deletion session (the `deletion` resource). The session decides the
// batches, the acceptance of each against the live facts, whether each
// object is still the planned version, the damage check and the exit
// status; this file reads the facts it asks for, HEADs and DELETEs what it
// names (`concurrency` at a time) and hands every receipt to `sink`.

import { call, planner, referencedWith } from './planner.js';

/// Applies `document` (the sealed plan) on `store` (read, list, pointer,
/// head, delete). Options: `locationMap` ([[from, to]]), `context` (async
/// () => the context document now), `clock` (() => epoch ms, bigint),
/// `allowFutureNow`, `batch` (none: the planner's), `dryRun`, `keys` (a
/// share of the plan), `concurrency`, `sink(receipt)`, `stopSwitches` (a
/// fleet's stop switches, URIs, read with the table's own before every
/// batch) and `switchStore(uri)` (the store that reads one; default
/// `store`). Returns {receipts,
/// outcome}; `outcome.exit` is the status every host gives.
export async function apply(document, store, o = {}) {
  const concurrency = o.concurrency ?? 16;
  const sink = o.sink ?? (() => {});
  const d = call(() =>
    planner.Deletion.start({
      plan: document,
      locationMap: (o.locationMap || []).map(([from, to]) => ({ from, to })),
      batchSize: o.batch,
      dryRun: !!o.dryRun,
      allowFutureNow: !!o.allowFutureNow,
      storeGivesEtags: !!store.givesEtags,
      keys: o.keys,
      stopSwitches: o.stopSwitches || [],
    }),
  );
  const receipts = [];
  // At most a few thousand a call: until none is left.
  const drain = () => {
    for (;;) {
      const piece = d.drainReceipts();
      if (!piece.length) return;
      for (const r of piece) {
        sink(r);
        receipts.push(r);
      }
    }
  };
  // Each switch read as the store answers it; the planner decides what it means.
  const switches = async (uris) => {
    const out = [];
    for (const uri of uris) {
      let answer;
      try {
        const bytes = await (o.switchStore ? o.switchStore(uri) : store).read(uri);
        answer = bytes == null ? { tag: 'absent' } : { tag: 'present', val: new TextDecoder().decode(bytes) };
      } catch (e) {
        answer = { tag: 'failed', val: String(e.message || e) };
      }
      out.push({ uri, answer });
    }
    return out;
  };
  const facts = async (logPrefix, switchUris) => {
    // The switches first: a halt set before the facts are read is seen.
    const f = { log: [], switches: await switches(switchUris) };
    if (logPrefix) {
      for await (const page of store.list(logPrefix)) f.log.push(...page);
    } else {
      f.pointer = (await store.pointer()) ?? undefined;
    }
    f.context = o.context ? ((await o.context()) ?? undefined) : undefined;
    f.clockMs = o.clock ? o.clock() : BigInt(Date.now());
    return f;
  };
  for (;;) {
    const heads = [];
    const deletes = [];
    let asked = false;
    for (let r = d.pollRequest(); r !== undefined; r = d.pollRequest()) {
      asked = true;
      if (r.tag === 'read-facts') {
        let f;
        try {
          f = await facts(r.val.logPrefix, r.val.switches);
        } catch (e) {
          call(() => d.handleFactsFailed(String(e.message || e)));
          continue;
        }
        call(() => d.handleFacts(f));
      } else if (r.tag === 'head') heads.push(...r.val.objects);
      else if (r.tag === 'delete') deletes.push(...r.val.objects);
      else if (r.tag === 'check-damage') {
        try {
          // The deleted keys, in pieces.
          const keys = [];
          while (BigInt(keys.length) < r.val.keys) {
            const piece = d.damageKeys(BigInt(keys.length), 4096);
            if (!piece.length) break;
            keys.push(...piece);
          }
          const found = await referencedWith(r.val.config, keys, store);
          call(() => d.handleReferenced(found));
        } catch (e) {
          call(() => d.handleReferencedFailed(String(e.message || e)));
        }
      }
    }
    // DELETEs (each just shown to be the planned version) before HEADs.
    for (let i = 0; i < deletes.length; i += concurrency) {
      const batch = deletes.slice(i, i + concurrency);
      const answers = await Promise.all(
        batch.map(async (t) => {
          const requested = BigInt(Date.now());
          const a = await store.delete(t.uri, t.ifMatch);
          return [t.key, a, requested, a.tag === 'unknown' ? undefined : BigInt(Date.now())];
        }),
      );
      for (const [key, a, requested, answered] of answers) call(() => d.handleDelete(key, a, requested, answered));
      drain();
    }
    for (let i = 0; i < heads.length; i += concurrency) {
      const batch = heads.slice(i, i + concurrency);
      const answers = await Promise.all(
        batch.map(async (t) => {
          try {
            const v = await store.head(t.uri);
            return [t.key, v ? { tag: 'found', val: v } : { tag: 'absent' }];
          } catch (e) {
            return [t.key, { tag: 'failed', val: String(e.message || e) }];
          }
        }),
      );
      for (const [key, a] of answers) call(() => d.handleHead(key, a));
      drain();
    }
    drain();
    if (!asked && !heads.length && !deletes.length) {
      if (d.isDone()) break;
      throw new Error('the deletion session waits for nothing this host was asked (a bug)');
    }
  }
  drain();
  return { receipts, outcome: d.outcome() };
}
