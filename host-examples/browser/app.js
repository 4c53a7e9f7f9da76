// The retention policy simulator. Every decision is the core's (the
// wasm-bindgen build in pkg/): this file reads a table folder (dropped,
// chosen, or a bundled demo), answers the core's reads and listings from
// it, turns the controls into a policy and a context document, and draws
// what the core answers. It compares nothing itself.

// The core is loaded in main(), so a page without it (not built yet, or
// opened from file://) says so instead of staying blank.
let WebSession;
let Simulator;
let checkPolicy;
let defaultFileRetentionMs;
let currentMetadata;
let coreParseDuration;

const $ = (sel) => document.querySelector(sel);
const DAY = 86_400_000;
const UNITS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: DAY };

/// A table in memory: `files` maps a path relative to the table folder to
/// `{ size, mtimeMs, bytes: () => Promise<Uint8Array> }`.
let table = null;
/// The what-if engine (Iceberg only), the session's last plan, the pinned policy.
let sim = null;
let info = null;
let lastPlan = null;
let lastDecisions = [];
let pinned = null;
const context = { holds: [], leases: [] };

// ---- errors: always on the page, never only in the console ----

function showError(e) {
  const box = $('#error');
  box.textContent = e && e.message ? e.message : String(e);
  box.hidden = false;
}
function clearError() {
  $('#error').hidden = true;
  $('#error').textContent = '';
}
window.addEventListener('error', (ev) => showError(ev.error || ev.message));
window.addEventListener('unhandledrejection', (ev) => showError(ev.reason));
const status = (text) => { $('#status').textContent = text; };

// ---- formatting ----

function bytes(n) {
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  let x = n;
  while (x >= 1024 && i < u.length - 1) { x /= 1024; i++; }
  return `${i ? x.toFixed(1) : x} ${u[i]}`;
}
function human(ms) {
  const d = Math.floor(ms / DAY);
  const h = Math.floor((ms % DAY) / 3_600_000);
  return d ? `${d}d ${h}h` : `${h}h ${Math.floor((ms % 3_600_000) / 60_000)}m`;
}
const iso = (ms) => new Date(ms).toISOString().replace('.000Z', 'Z');
/// A duration in the largest unit that divides it, as parseDuration reads it.
function compactDuration(ms) {
  for (const u of ['d', 'h', 'm', 's']) if (ms % UNITS[u] === 0) return `${ms / UNITS[u]}${u}`;
  return `${ms}ms`;
}
/// A duration field read as the core reads durations (`12h`, `1h 30m`,
/// the command line's forms); `null` when empty; an error naming what is
/// wrong otherwise.
function parseDuration(text) {
  if (!text.trim()) return null;
  return coreParseDuration(text);
}
function esc(s) {
  return String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);
}

// ---- reading a table folder ----

/// Files of a FileList from <input webkitdirectory>: paths lose the
/// chosen folder's own name.
function fromFileList(list) {
  const files = new Map();
  let name = 'table';
  for (const f of list) {
    const parts = (f.webkitRelativePath || f.name).split('/');
    if (parts.length > 1) name = parts[0];
    const rel = parts.length > 1 ? parts.slice(1).join('/') : parts[0];
    files.set(rel, { size: f.size, mtimeMs: f.lastModified, bytes: async () => new Uint8Array(await f.arrayBuffer()) });
  }
  return { name, files };
}

/// Files of a dropped folder (DataTransferItem entries, walked).
async function fromDrop(items) {
  const entries = [...items].map((i) => i.webkitGetAsEntry && i.webkitGetAsEntry()).filter(Boolean);
  if (entries.length !== 1 || !entries[0].isDirectory) throw new Error('Drop one folder: the table folder itself.');
  const files = new Map();
  const walk = async (dir, prefix) => {
    const reader = dir.createReader();
    for (;;) {
      const batch = await new Promise((res, rej) => reader.readEntries(res, rej));
      if (!batch.length) break;
      for (const e of batch) {
        if (e.isDirectory) await walk(e, `${prefix}${e.name}/`);
        else {
          const f = await new Promise((res, rej) => e.file(res, rej));
          files.set(`${prefix}${e.name}`, { size: f.size, mtimeMs: f.lastModified, bytes: async () => new Uint8Array(await f.arrayBuffer()) });
        }
      }
    }
  };
  await walk(entries[0], '');
  return { name: entries[0].name, files };
}

let demos = [];
async function fromDemo(name) {
  const t = demos.find((d) => d.name === name);
  const files = new Map();
  for (const f of t.files) {
    files.set(f.path, {
      size: f.size,
      mtimeMs: f.mtimeMs,
      bytes: async () => {
        const r = await fetch(`demo/${t.name}/${f.path.split('/').map(encodeURIComponent).join('/')}`);
        if (!r.ok) throw new Error(`demo/${t.name}/${f.path}: ${r.status}`);
        return new Uint8Array(await r.arrayBuffer());
      },
    });
  }
  return { name: t.name, files, nowMs: t.nowMs, metadata: t.metadata, metadataWhy: t.metadata && "named by the demo table's catalog" };
}

/// The table's format and its current metadata document: a `_delta_log/`
/// folder means Delta; otherwise `metadata/` holds Iceberg metadata, the
/// current one chosen by the core's file-system catalog rules (the version
/// hint followed forward, else the newest vN; else it refuses and the page
/// asks), or the one the user picked. The core refuses a plan on a
/// document older than the table's newest.
async function describe(t) {
  const paths = [...t.files.keys()];
  if (paths.some((p) => p.startsWith('_delta_log/'))) return { format: 'delta' };
  const docs = paths.filter((p) => /^metadata\/[^/]+\.metadata\.json(\.gz)?$/.test(p));
  if (!docs.length) {
    throw new Error(
      `"${t.name}" is not a table folder: it has no _delta_log/ folder (Delta) and no metadata/*.metadata.json (Iceberg). Choose the table's own folder.`,
    );
  }
  let current = t.metadata;
  let why = t.metadataWhy || 'chosen by hand';
  if (!current) {
    const hint = t.files.has('metadata/version-hint.text') ? await t.files.get('metadata/version-hint.text').bytes() : undefined;
    try {
      ({ metadata: current, why } = JSON.parse(currentMetadata(hint, JSON.stringify(paths), t.name)));
    } catch (e) {
      const err = new Error(`${e.message} Choose the table's current metadata document below.`);
      err.ask = { table: t, docs: docs.sort() };
      throw err;
    }
  }
  if (!t.files.has(current)) throw new Error(`${current} is not in the folder`);
  let raw = await t.files.get(current).bytes();
  if (raw[0] === 0x1f && raw[1] === 0x8b) {
    raw = new Uint8Array(await new Response(new Blob([raw]).stream().pipeThrough(new DecompressionStream('gzip'))).arrayBuffer());
  }
  const text = new TextDecoder().decode(raw);
  let md;
  try {
    md = JSON.parse(text);
  } catch (e) {
    throw new Error(`${current} is not JSON: ${e.message}`);
  }
  if (typeof md.location !== 'string') throw new Error(`${current} has no "location": not Iceberg table metadata`);
  return { format: 'iceberg', metadata: current, metadataWhy: why, docs: docs.sort(), location: md.location.replace(/\/+$/, ''), uuid: md['table-uuid'] };
}

async function readFrom(t, uri) {
  const base = `${t.location}/`;
  if (!uri.startsWith(base)) return null;
  let rel = uri.slice(base.length);
  if (!t.files.has(rel)) {
    try { rel = decodeURIComponent(rel); } catch { return null; }
  }
  return t.files.has(rel) ? t.files.get(rel).bytes() : null;
}
const read = (uri) => readFrom(table, uri);

async function open(t) {
  $('#ask').hidden = true;
  try {
    await load(t);
  } catch (e) {
    table = null;
    sim = null;
    $('#work').hidden = true;
    status('');
    if (e.ask) askMetadata(e.ask.table, e.ask.docs);
    throw e;
  }
}

/// The core could not choose the current metadata document: the user does
/// (the core still refuses a plan on one older than the table's newest).
function askMetadata(t, docs, chosen) {
  $('#ask-doc').innerHTML = docs.map((d) => `<option${d === chosen ? ' selected' : ''}>${esc(d)}</option>`).join('');
  $('#ask').hidden = false;
  $('#ask-use').onclick = () => {
    const metadata = $('#ask-doc').value;
    open({ ...t, metadata, metadataWhy: `chosen by hand (${metadata})` }).catch(showError);
  };
}

/// Every view back to "no table": nothing of the last table stays.
function resetViews() {
  $('#policy').reset();
  for (const dd of document.querySelectorAll('#results dd')) dd.textContent = '–';
  for (const sel of ['#warnings', '#diff', '#timeline', '#curve-retain', '#curve-age', '#snapshots tbody', '#objects tbody', '#context-items', '#objects-count', '#recompute', '#metadata-source']) {
    $(sel).innerHTML = '';
  }
  $('#diff').hidden = true;
  $('#filter').value = '';
  lastPlan = null;
  lastDecisions = [];
  window.lastWhatIf = undefined;
}

async function load(t) {
  clearError();
  tableGen++;
  table = null;
  sim = null;
  info = null;
  $('#work').hidden = true;
  resetViews();
  status(`reading ${t.name}…`);
  const d = await describe(t);
  const next = { ...t, ...d };
  if (d.format === 'delta') next.location = `file:///dropped/${encodeURIComponent(t.name)}`;
  if (d.format === 'iceberg') {
    const s = new Simulator(`${d.location}/${d.metadata}`, await t.files.get(d.metadata).bytes());
    // The core's canonical spelling of the location: every URI it asks
    // for, and every key it is given, starts with it.
    next.location = s.location();
    table = next;
    for (let uri = s.nextRead(); uri !== undefined; uri = s.nextRead()) {
      const b = await read(uri);
      if (b === null) s.handleMissing(uri);
      else s.handleBlob(uri, b);
    }
    s.build(JSON.stringify([...t.files].map(([key, f]) => ({ key, size: f.size, lastModifiedMs: f.mtimeMs }))));
    sim = s;
    info = JSON.parse(s.tableJson());
  }
  table = next;
  // The format's default window, as the core chooses it.
  $('#orphanSafetyInterval').value = compactDuration(defaultFileRetentionMs(d.format));
  $('#add-hold').disabled = !sim;
  $('#add-lease').disabled = !sim;
  $('#now').value = iso(t.nowMs ?? Date.now());
  context.holds = [];
  context.leases = [];
  pinned = null;
  $('#diff').hidden = true;
  $('#table-name').textContent = `${t.name} (${d.format}, ${t.files.size} files)`;
  if (d.format === 'iceberg') {
    $('#metadata-source').innerHTML = `current metadata <code>${esc(d.metadata)}</code>: ${esc(d.metadataWhy)} ` +
      `<label>use another <select id="other-doc">${d.docs.map((x) => `<option${x === d.metadata ? ' selected' : ''}>${esc(x)}</option>`).join('')}</select></label>`;
    $('#other-doc').onchange = () => {
      const metadata = $('#other-doc').value;
      open({ ...t, metadata, metadataWhy: `chosen by hand (${metadata})` }).catch(showError);
    };
  }
  for (const sel of ['#hold-snapshot', '#lease-snapshot']) {
    $(sel).innerHTML = (info ? info.snapshots : [])
      .map((s) => `<option value="${s.snapshotId}">${s.snapshotId} · ${iso(s.timestampMs)}</option>`)
      .join('');
  }
  $('#work').hidden = false;
  table.summary = sim
    ? `${info.snapshots.length} snapshots, ${sim.size()[1]} objects referenced`
    : 'Delta table: the sweep plan below (snapshot-expiry what-ifs are for Iceberg tables)';
  status(table.summary);
  await recompute();
}

// ---- the policy and the context, from the controls ----

function policyJson() {
  const v = (id) => $(`#${id}`).value.trim();
  const sr = {};
  if (v('retainLast')) sr.retainLast = Number(v('retainLast'));
  for (const f of ['maxSnapshotAge', 'maxRefAge', 'minSnapshotAge']) if (v(f)) sr[f] = v(f);
  const refs = v('protectedRefs').split(',').map((x) => x.trim()).filter(Boolean);
  if (refs.length) sr.protectedRefs = refs;
  const fr = { orphanSafetyInterval: v('orphanSafetyInterval') };
  for (const f of ['maxReaderLease', 'maxWriterDuration']) if (v(f)) fr[f] = v(f);
  return JSON.stringify({
    schema: 'lakehouseRetentionPolicy.v1',
    binding: { tableUuid: (info && info.tableUuid) || table.uuid || '', format: 'iceberg' },
    snapshotRetention: sr,
    fileRetention: fr,
  });
}

/// The context document. Snapshot ids are written as the digits they are
/// (a JavaScript number cannot hold a 64-bit id).
function contextJson() {
  const holds = context.holds.map((h) => `{"scope":{"snapshot":${h.snapshotId}},"generation":1,"reason":${JSON.stringify(h.reason)}}`);
  const leases = context.leases.map((l) => `{"snapshotId":${l.snapshotId},"purpose":"what-if","owner":"simulator","expiresAtMs":${l.expiresAtMs}}`);
  return `{"schema":"lakesweep.context.v1","leases":[${leases.join(',')}],"holds":[${holds.join(',')}]}`;
}

function nowMs() {
  const t = Date.parse($('#now').value.trim());
  return Number.isFinite(t) ? t : null;
}

function showFindings(report, extra) {
  for (const el of document.querySelectorAll('.finding, .findings-other')) el.innerHTML = '';
  const put = (kind, f) => {
    const el = document.querySelector(`.finding[data-field="${f.field}"]`) || document.querySelector('.findings-other');
    el.innerHTML += `<span class="${kind}">${esc(f.message)}</span> `;
  };
  for (const f of report.errors) put('error', f);
  for (const f of report.warnings) put('warning', f);
  for (const f of extra) put('error', f);
}

// ---- recomputation on every change ----

let planTimer = null;
let tableGen = 0;
let planGen = 0;
let planDone = Promise.resolve();
async function recompute() {
  if (!table) return;
  clearError();
  const extra = [];
  const now = nowMs();
  if (now === null) extra.push({ field: 'now', message: 'not a time: write it as 2026-11-30T12:00:00Z' });
  // A policy binds an Iceberg table; a Delta table gets the plan alone.
  let report = { errors: [], warnings: [] };
  if (sim) {
    try {
      report = JSON.parse(checkPolicy(policyJson()));
    } catch (e) {
      report = { errors: [{ field: '*', message: e.message }], warnings: [] };
    }
  }
  showFindings(report, extra);
  if (report.errors.length || now === null) {
    status('fix the findings in the policy: nothing is recomputed while one is an error');
    return;
  }
  status(table.summary);
  if (sim) {
    const t0 = performance.now();
    const w = JSON.parse(sim.whatIf(policyJson(), contextJson(), now));
    const spent = performance.now() - t0;
    drawWhatIf(w);
    $('#recompute').textContent = `recomputed in ${spent.toFixed(1)} ms`;
    drawCurves(now);
    if (pinned) drawDiff(w);
    window.lastWhatIf = w;
  }
  clearTimeout(planTimer);
  const gen = ++planGen;
  planDone = new Promise((resolve) => {
    planTimer = setTimeout(() => plan(now, gen).catch((e) => gen === planGen && showError(e)).finally(resolve), 50);
  });
}

function drawWhatIf(w) {
  $('#n-retained').textContent = w.retain.length;
  $('#n-expired').textContent = w.expired.length;
  $('#freed-objects').textContent = w.freedObjects;
  $('#freed-bytes').textContent = bytes(w.freedBytes);
  $('#freed-bytes').dataset.bytes = w.freedBytes;
  $('#freed-now').textContent = `${bytes(w.freedNowBytes)} (${w.freedNowObjects})`;
  $('#freed-now').dataset.bytes = w.freedNowBytes;
  $('#warnings').innerHTML = w.warnings.length ? `<ul>${w.warnings.map((x) => `<li>${esc(x)}</li>`).join('')}</ul>` : '';
  const verdict = new Map();
  for (const r of w.retain) verdict.set(r.snapshotId, { kept: true, why: r.reasons.join('; ') });
  for (const e of w.expired) verdict.set(e.snapshotId, { kept: false, why: e.why });
  const refs = new Map();
  for (const r of info.refs) refs.set(r.snapshotId, [...(refs.get(r.snapshotId) || []), `${r.name} (${r.kind})`]);
  const snaps = [...info.snapshots].sort((a, b) => a.timestampMs - b.timestampMs);
  $('#snapshots tbody').innerHTML = snaps
    .slice()
    .reverse()
    .map((s) => {
      const v = verdict.get(s.snapshotId) || { kept: false, why: '' };
      return `<tr class="${v.kept ? 'retained' : 'expired'}" data-snapshot="${s.snapshotId}"><td>${s.snapshotId}</td><td>${iso(s.timestampMs)}</td><td>${esc((refs.get(s.snapshotId) || []).join(', '))}</td><td>${v.kept ? 'retained' : 'expires'}</td><td>${esc(v.why)}</td></tr>`;
    })
    .join('');
  // The timeline: one dot per snapshot, refs above.
  const svg = $('#timeline');
  const t0 = snaps[0]?.timestampMs ?? 0;
  const t1 = snaps.at(-1)?.timestampMs ?? 1;
  const x = (t) => 30 + ((t - t0) / Math.max(1, t1 - t0)) * 740;
  svg.innerHTML =
    `<line x1="30" y1="70" x2="770" y2="70" stroke="#d0d7de"/>` +
    snaps
      .map((s) => {
        const v = verdict.get(s.snapshotId);
        const label = (refs.get(s.snapshotId) || []).map((r) => r.split(' ')[0]).join(',');
        return `<circle cx="${x(s.timestampMs)}" cy="70" r="6" fill="${v && v.kept ? '#1a7f37' : '#cf222e'}"><title>${s.snapshotId}: ${esc(v ? v.why : '')}</title></circle>` +
          (label ? `<text x="${x(s.timestampMs)}" y="50" text-anchor="middle">${esc(label)}</text>` : '');
      })
      .join('') +
    `<text x="30" y="100">${iso(t0)}</text><text x="770" y="100" text-anchor="end">${iso(t1)}</text>`;
}

const AGES = ['1h', '6h', '12h', '1d', '2d', '3d', '5d', '7d', '14d', '30d', '60d', '90d', '180d', '365d'];
function drawCurves(now) {
  const n = info.snapshots.length;
  const retainValues = Array.from({ length: Math.min(n, 40) }, (_, i) => i + 1);
  const ageValues = AGES.map(parseDuration);
  const policy = policyJson();
  const a = JSON.parse(sim.curve(policy, contextJson(), now, 'retainLast', Float64Array.from(retainValues)));
  const b = JSON.parse(sim.curve(policy, contextJson(), now, 'maxSnapshotAge', Float64Array.from(ageValues)));
  plot($('#curve-retain'), a, (v) => String(v), Number($('#retainLast').value));
  plot($('#curve-age'), b, (v) => AGES[ageValues.indexOf(v)], parseDuration($('#maxSnapshotAge').value));
}

function plot(svg, points, label, current) {
  const max = Math.max(1, ...points.map((p) => p.freedBytes));
  const x = (i) => 64 + (i / Math.max(1, points.length - 1)) * 300;
  const y = (v) => 170 - (v / max) * 150;
  const path = points.map((p, i) => `${i ? 'L' : 'M'}${x(i).toFixed(1)},${y(p.freedBytes).toFixed(1)}`).join('');
  svg.innerHTML =
    `<path d="${path}" fill="none" stroke="#0969da" stroke-width="2"/>` +
    points.map((p, i) => `<circle cx="${x(i)}" cy="${y(p.freedBytes)}" r="${p.value === current ? 5 : 2.5}" fill="${p.value === current ? '#cf222e' : '#0969da'}"><title>${label(p.value)}: ${bytes(p.freedBytes)} freed, ${p.retained} retained</title></circle>`).join('') +
    axes(points, x, y, max, label);
}

/// Ticks on both axes: four on the bytes axis (with grid lines), and on
/// the policy axis every point when there are few, else about six.
function axes(points, x, y, max, label) {
  let out = '<line x1="64" y1="170" x2="364" y2="170" stroke="#8c959f"/><line x1="64" y1="20" x2="64" y2="170" stroke="#8c959f"/>';
  for (let k = 0; k <= 4; k++) {
    const v = (max * k) / 4;
    const yy = y(v).toFixed(1);
    out += `<line x1="60" y1="${yy}" x2="364" y2="${yy}" stroke="#d0d7de" stroke-dasharray="${k ? '2,3' : ''}"/>` +
      `<text class="tick" x="58" y="${yy}" dy="3" text-anchor="end">${k ? esc(bytes(v)) : '0'}</text>`;
  }
  const step = Math.max(1, Math.ceil(points.length / 6));
  points.forEach((p, i) => {
    if (i % step && i !== points.length - 1) return;
    const xx = x(i).toFixed(1);
    out += `<line x1="${xx}" y1="170" x2="${xx}" y2="174" stroke="#8c959f"/>` +
      `<text class="tick" x="${xx}" y="186" text-anchor="middle">${esc(label(p.value))}</text>`;
  });
  return out;
}

function drawDiff(w) {
  const a = new Set(pinned.w.retain.map((r) => r.snapshotId));
  const b = new Set(w.retain.map((r) => r.snapshotId));
  const onlyA = [...a].filter((x) => !b.has(x));
  const onlyB = [...b].filter((x) => !a.has(x));
  const el = $('#diff');
  el.hidden = false;
  el.innerHTML = `<strong>Against policy A</strong>: A retains ${a.size}, this retains ${b.size}; A frees ${bytes(pinned.w.freedBytes)}, this frees ${bytes(w.freedBytes)} (${w.freedBytes >= pinned.w.freedBytes ? '+' : '−'}${bytes(Math.abs(w.freedBytes - pinned.w.freedBytes))}).` +
    (onlyA.length ? `<br>Kept by A only: ${onlyA.join(', ')}` : '') +
    (onlyB.length ? `<br>Kept by this only: ${onlyB.join(', ')}` : '');
}

// ---- the sweep plan: the same session as the sidecar's plan ----

/// One sweep plan for the inputs now; `gen` is dropped if inputs changed
/// (or another table was opened) before it finished.
async function plan(now, gen) {
  const t = table;
  const tgen = tableGen;
  const read = async (uri) => (tableGen === tgen ? readFrom(t, uri) : null);
  const keyOf = (rel) => `${t.location}/${rel}`;
  const policy = sim ? policyJson() : undefined;
  // Under a policy its orphanSafetyInterval is the window; else the field,
  // or the planner's own default (the same as every host's).
  const window = sim ? undefined : parseDuration($('#orphanSafetyInterval').value) ?? undefined;
  const cfg = {
    tableLocation: t.location,
    format: t.format,
    metadataLocation: t.format === 'iceberg' ? keyOf(t.metadata) : '',
    nowMs: now,
    fileRetentionMs: window,
    policy,
    context: sim ? contextJson() : undefined,
  };
  const s = new WebSession(JSON.stringify(cfg));
  const decisions = new Map();
  const drain = () => { for (const d of JSON.parse(s.drainDecisionsJson())) decisions.set(d.relativeKey, d); };
  for (;;) {
    const asked = [];
    for (let r = s.pollRequest(); r !== undefined; r = s.pollRequest()) asked.push(JSON.parse(r));
    if (!asked.length) break;
    for (const r of asked) {
      if (r.kind === 'read-blob') {
        const b = await read(r.uri);
        if (b === null) s.handleMissing(r.uri);
        else s.handleBlob(r.uri, b);
      } else if (r.kind === 'list') {
        const prefix = r.prefix.endsWith('/') ? r.prefix : `${r.prefix}/`;
        const page = [...t.files]
          .map(([rel, f]) => ({ key: keyOf(rel), size: f.size, lastModifiedMs: f.mtimeMs }))
          .filter((o) => o.key.startsWith(prefix));
        s.handlePageJson(JSON.stringify(page), true);
      } else {
        s.handlePointer(t.format === 'iceberg' ? keyOf(t.metadata) : undefined);
      }
      drain();
    }
  }
  const finished = s.finish();
  if (gen !== planGen || tgen !== tableGen) return;
  lastPlan = finished;
  const doc = JSON.parse(lastPlan);
  lastDecisions = [...decisions.values()];
  const cand = doc.summary.verdicts.candidate || { count: 0, bytes: 0 };
  $('#plan-candidates').textContent = cand.count;
  $('#plan-bytes').textContent = bytes(cand.bytes);
  $('#plan-bytes').dataset.bytes = cand.bytes;
  drawObjects(now);
  document.body.dataset.planned = String(gen);
}

let sortKey = 'verdict';
let sortDir = 1;
function drawObjects(now) {
  const f = $('#filter').value.trim().toLowerCase();
  const rows = lastDecisions
    .map((d) => ({ key: d.relativeKey, verdict: d.verdict, detail: d.detail, size: d.size, age: now - d.lastModifiedMs }))
    .filter((r) => !f || `${r.key} ${r.verdict} ${r.detail}`.toLowerCase().includes(f))
    .sort((a, b) => (a[sortKey] < b[sortKey] ? -sortDir : a[sortKey] > b[sortKey] ? sortDir : 0));
  $('#objects-count').textContent = `${rows.length} of ${lastDecisions.length}`;
  $('#objects tbody').innerHTML = rows
    .slice(0, 1000)
    .map((r) => `<tr><td>${esc(r.key)}</td><td class="v-${r.verdict}">${r.verdict}</td><td>${esc(r.detail)}</td><td>${bytes(r.size)}</td><td>${human(Math.max(0, r.age))}</td></tr>`)
    .join('');
}

// ---- export ----

function download(name, text) {
  const a = document.createElement('a');
  a.href = URL.createObjectURL(new Blob([text], { type: 'application/json' }));
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
}

// ---- measuring a generated what-if ----

function measure(snapshots, files) {
  const now = Date.parse('2026-11-30T12:00:00Z');
  const t0 = performance.now();
  const s = Simulator.synthetic(snapshots, files, 7, 42, now);
  const built = performance.now() - t0;
  const policy = (retainLast, age) => JSON.stringify({
    schema: 'lakehouseRetentionPolicy.v1',
    binding: { tableUuid: '00000000-0000-0000-0000-000000000000', format: 'iceberg' },
    snapshotRetention: { retainLast, maxSnapshotAge: age },
    fileRetention: { orphanSafetyInterval: '3d' },
  });
  const times = [];
  let w;
  for (let i = 0; i < 15; i++) {
    const a = performance.now();
    w = JSON.parse(s.whatIf(policy(50 + i * 10, `${1 + i}d`), undefined, now));
    times.push(performance.now() - a);
  }
  times.sort((a, b) => a - b);
  const c0 = performance.now();
  s.curve(policy(100, '7d'), undefined, now, 'retainLast', Float64Array.from({ length: 20 }, (_, i) => (i + 1) * 50));
  const curve = performance.now() - c0;
  s.free();
  return { snapshots, files, buildMs: built, whatIfMedianMs: times[7], whatIfMaxMs: times.at(-1), curve20Ms: curve, retained: w.retain.length, freedBytes: w.freedBytes };
}
window.lakesweepMeasure = measure;
/// What the page judges on now, for a test to hand the same to the sidecar.
window.lakesweepState = () => ({ policy: policyJson(), context: contextJson(), now: nowMs() });
/// Resolves once the sweep plan for the current inputs is drawn.
window.lakesweepIdle = async () => {
  for (;;) {
    const p = planDone;
    await p;
    if (p === planDone) return;
  }
};

// ---- wiring ----

async function main() {
  const t0 = performance.now();
  try {
    const core = await import('./pkg/lakesweep.js');
    await core.default();
    ({ WebSession, Simulator, checkPolicy, defaultFileRetentionMs, currentMetadata } = core);
    coreParseDuration = core.parseDuration;
  } catch (e) {
    throw new Error(
      `The planner core did not load (${e.message}). Build it with \`bash scripts/build-web.sh\` and serve this folder over HTTP (python3 -m http.server), not from file://.`,
    );
  }
  window.lakesweepLoadMs = performance.now() - t0;
  try {
    demos = (await (await fetch('demo/index.json')).json()).tables;
  } catch {
    demos = [];
  }
  $('#demo').innerHTML = demos.map((d) => `<option value="${esc(d.name)}">${esc(d.name)} (${d.format}, ${esc(d.note)})</option>`).join('');
  $('#open-demo').onclick = () => fromDemo($('#demo').value).then(open).catch(showError);
  $('#folder').onchange = (ev) => open(fromFileList(ev.target.files)).catch(showError);
  const drop = $('#drop');
  drop.ondragover = (ev) => { ev.preventDefault(); drop.classList.add('over'); };
  drop.ondragleave = () => drop.classList.remove('over');
  drop.ondrop = (ev) => {
    ev.preventDefault();
    drop.classList.remove('over');
    fromDrop(ev.dataTransfer.items).then(open).catch(showError);
  };
  $('#policy').oninput = () => recompute().catch(showError);
  $('#policy').onsubmit = (ev) => ev.preventDefault();
  $('#add-hold').onclick = () => {
    context.holds.push({ snapshotId: $('#hold-snapshot').value, reason: $('#hold-reason').value || 'what-if' });
    drawContext();
    recompute().catch(showError);
  };
  $('#add-lease').onclick = () => {
    try {
      const d = parseDuration($('#lease-for').value);
      if (d === null) throw new Error('say how long the lease lasts (a duration such as 14d)');
      context.leases.push({ snapshotId: $('#lease-snapshot').value, expiresAtMs: (nowMs() ?? Date.now()) + d });
    } catch (e) {
      return showError(e);
    }
    drawContext();
    recompute().catch(showError);
  };
  $('#pin').onclick = () => {
    if (window.lastWhatIf) pinned = { policy: policyJson(), w: window.lastWhatIf };
    recompute().catch(showError);
  };
  $('#export-policy').onclick = () => download('policy.json', JSON.stringify(JSON.parse(policyJson()), null, 2));
  $('#export-plan').onclick = () => lastPlan && download('plan.json', lastPlan);
  $('#filter').oninput = () => drawObjects(nowMs() ?? Date.now());
  for (const th of document.querySelectorAll('th[data-sort]')) {
    th.onclick = () => {
      sortDir = sortKey === th.dataset.sort ? -sortDir : 1;
      sortKey = th.dataset.sort;
      drawObjects(nowMs() ?? Date.now());
    };
  }
  $('#measure').onclick = () => {
    $('#measure-out').textContent = 'measuring…';
    setTimeout(() => {
      try {
        $('#measure-out').textContent = JSON.stringify(measure(Number($('#m-snapshots').value), Number($('#m-files').value)), null, 1);
      } catch (e) {
        showError(e);
      }
    }, 10);
  };
  status(`ready (core loaded in ${window.lakesweepLoadMs.toFixed(0)} ms)`);
  document.body.dataset.ready = '1';
}

function drawContext() {
  $('#context-items').innerHTML =
    context.holds.map((h, i) => `<li>hold on ${h.snapshotId} (${esc(h.reason)}) <button type="button" data-hold="${i}">×</button></li>`).join('') +
    context.leases.map((l, i) => `<li>lease on ${l.snapshotId} until ${iso(l.expiresAtMs)} <button type="button" data-lease="${i}">×</button></li>`).join('');
  for (const b of document.querySelectorAll('#context-items button')) {
    b.onclick = () => {
      if (b.dataset.hold !== undefined) context.holds.splice(Number(b.dataset.hold), 1);
      else context.leases.splice(Number(b.dataset.lease), 1);
      drawContext();
      recompute().catch(showError);
    };
  }
}

main().catch(showError);
