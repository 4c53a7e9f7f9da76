// Shared by the golden tests: the repository's pins and fixture tables,
// staged with the modification times their generators recorded.

import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
export const VROOT = 'file:///lakesweep-fixtures';
export const VDELTA = 'file:///lakesweep-delta-fixtures';
export const DAY = 86_400_000;

// A pin is the document and one newline.
export const golden = async (name) =>
  (await fs.readFile(path.join(repo, 'tests/golden', `${name}.json`), 'utf8')).replace(/\n$/, '');
export const readJson = async (p) => JSON.parse(await fs.readFile(p, 'utf8'));

/// Copies `from` to a scratch folder and stamps each file of `tables`
/// ({dir relative to the copy: {relative path: ms}}) with its recorded time.
export async function stage(from, tag, tables) {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), `lakesweep-node-${tag}-`));
  await fs.cp(from, dir, { recursive: true });
  for (const [tableDir, mtimes] of Object.entries(tables)) {
    for (const [rel, ms] of Object.entries(mtimes)) {
      // Seconds as a double cannot hold every millisecond exactly: half a
      // microsecond more keeps the stamped time from flooring one ms short.
      const t = (ms + 0.0005) / 1000;
      await fs.utimes(path.join(dir, tableDir, rel), t, t);
    }
  }
  return dir;
}

