// A table on the local file system as the planner's store. Keys are the
// file names as they are, never percent-decoded or normalised (pyiceberg's
// `category=100%25/` folder is that name, not `100%`): `file://` followed by
// the path. `roots` serves a URI prefix from another folder (a staged or
// mounted copy of a table whose metadata names its original root).

import { promises as fs } from 'node:fs';
import path from 'node:path';

/// Objects per listing page.
export const PAGE = 1000;

export class LocalStore {
  /// `roots`: [[uriPrefix, folder], ...], tried in order; any other
  /// `file://` URI is its own path. `pointer`: async () => the metadata
  /// location now (or null).
  constructor({ roots = [], pointer = async () => null } = {}) {
    this.roots = roots.map(([u, d]) => [u.replace(/\/+$/, ''), d.replace(/\/+$/, '')]);
    this.pointerFn = pointer;
  }

  /// The file a URI names, or null for a URI this store does not hold.
  pathOf(uri) {
    for (const [prefix, dir] of this.roots) {
      if (uri === prefix) return dir;
      if (uri.startsWith(`${prefix}/`)) return dir + uri.slice(prefix.length);
    }
    return uri.startsWith('file://') ? uri.slice('file://'.length) : null;
  }

  /// A file system gives no entity tags.
  get givesEtags() {
    return false;
  }

  /// The file's version, or null when there is none.
  async head(uri) {
    const p = this.pathOf(uri);
    if (p === null) throw new Error(`${uri}: not a local file (this store holds file:// URIs)`);
    try {
      const st = await fs.lstat(p, { bigint: true });
      if (!st.isFile()) throw new Error(`${uri} is not a file`);
      return { size: st.size, lastModifiedMs: st.mtimeNs / 1_000_000n };
    } catch (e) {
      if (e.code === 'ENOENT' || e.code === 'ENOTDIR') return null;
      throw e;
    }
  }

  /// Removes the file (a file system has no conditional delete): a
  /// `store-answer`.
  async delete(uri) {
    const p = this.pathOf(uri);
    if (p === null) return { tag: 'failed', val: `${uri}: not a local file` };
    try {
      await fs.unlink(p);
      return { tag: 'deleted' };
    } catch (e) {
      if (e.code === 'ENOENT') return { tag: 'absent' };
      return { tag: 'unknown', val: `delete ${uri}: ${e.message}` };
    }
  }

  async read(uri) {
    const p = this.pathOf(uri);
    if (p === null) throw new Error(`${uri}: not a local file (this store holds file:// URIs)`);
    try {
      return new Uint8Array(await fs.readFile(p));
    } catch (e) {
      if (e.code === 'ENOENT' || e.code === 'ENOTDIR') return null;
      throw new Error(`read ${uri}: ${e.message}`);
    }
  }

  /// Every file under `prefix`, in pages of `PAGE`. A symbolic link or a
  /// special file stops the listing (deleting a link to a folder cuts off
  /// live data; following one can reach another table).
  async *list(prefix) {
    const base = prefix.replace(/\/+$/, '');
    const root = this.pathOf(base);
    if (root === null) throw new Error(`${prefix}: not a local folder`);
    let page = [];
    const stack = [''];
    while (stack.length) {
      const rel = stack.pop();
      let entries;
      try {
        entries = await fs.readdir(path.join(root, rel), { withFileTypes: true });
      } catch (e) {
        if (e.code === 'ENOENT' && rel === '') return;
        throw new Error(`list ${base}/${rel}: ${e.message}`);
      }
      for (const e of entries) {
        const r = rel ? `${rel}/${e.name}` : e.name;
        if (e.isDirectory()) {
          stack.push(r);
          continue;
        }
        if (!e.isFile()) {
          throw new Error(
            `${base}/${r} is a symbolic link or special file: a table folder holds only files and folders (nothing planned)`,
          );
        }
        const st = await fs.stat(path.join(root, r), { bigint: true });
        page.push({
          key: `${base}/${r}`,
          version: { size: st.size, lastModifiedMs: st.mtimeNs / 1_000_000n },
        });
        if (page.length === PAGE) {
          yield page;
          page = [];
        }
      }
    }
    if (page.length) yield page;
  }

  /// One page of the keys under `prefix` (a string prefix of the keys, as
  /// S3 takes it), in byte order, as S3 pages them: `{objects, folders,
  /// next}`. With `delimiter: '/'`, a name with a further `/` after the
  /// prefix comes back once as its folder; `continuationToken` is the last
  /// key (or folder) of the previous page. The serverless page handler and
  /// its coordinator list a local table through this as they list S3.
  async listPage(prefix, { continuationToken, maxKeys = 1000, delimiter } = {}) {
    if (!Number.isInteger(maxKeys) || maxKeys < 1) throw new Error(`maxKeys must be a positive integer, not ${maxKeys}`);
    const cut = prefix.lastIndexOf('/');
    const dirUri = prefix.slice(0, cut);
    const names = [];
    for await (const page of this.list(dirUri)) {
      for (const o of page) if (o.key.startsWith(prefix)) names.push(o);
    }
    const enc = new TextEncoder();
    const cmp = (a, b) => Buffer.compare(Buffer.from(enc.encode(a)), Buffer.from(enc.encode(b)));
    let entries = names.map((o) => ({ key: o.key, object: o }));
    if (delimiter) {
      const seen = new Map();
      for (const e of entries) {
        const rest = e.key.slice(prefix.length);
        const at = rest.indexOf(delimiter);
        if (at < 0) seen.set(e.key, e);
        else {
          const folder = prefix + rest.slice(0, at + delimiter.length);
          if (!seen.has(folder)) seen.set(folder, { key: folder, folder: true });
        }
      }
      entries = [...seen.values()];
    }
    entries.sort((a, b) => cmp(a.key, b.key));
    if (continuationToken !== undefined) entries = entries.filter((e) => cmp(e.key, continuationToken) > 0);
    const page = entries.slice(0, maxKeys);
    return {
      objects: page.filter((e) => !e.folder).map((e) => e.object),
      folders: page.filter((e) => e.folder).map((e) => e.key),
      next: entries.length > maxKeys ? page[page.length - 1].key : null,
    };
  }

  /// Writes a file (a keep set, a plan), its folders made first.
  async write(uri, bytes) {
    const p = this.pathOf(uri);
    if (p === null) throw new Error(`${uri}: not a local file`);
    await fs.mkdir(path.dirname(p), { recursive: true });
    await fs.writeFile(p, bytes);
  }

  async pointer() {
    return this.pointerFn();
  }
}
