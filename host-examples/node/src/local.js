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

  async pointer() {
    return this.pointerFn();
  }
}
