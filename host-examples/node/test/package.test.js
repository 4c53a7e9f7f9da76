// The package as a user gets it: `npm pack` of this folder (the transpiled
// component inside), installed into an empty folder outside the checkout,
// runs the README's first example there.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const repo = path.resolve(here, '../..');

test('the packed tarball installed elsewhere runs the README example', async () => {
  const readme = await fs.readFile(path.join(here, 'README.md'), 'utf8');
  const m = /<!-- first-example -->\s*```js\n([\s\S]*?)```/.exec(readme);
  assert.ok(m, 'README.md has no first example');
  const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'lakesweep-node-pack-'));
  try {
    const out = execFileSync('npm', ['pack', '--silent', '--pack-destination', tmp], { cwd: here }).toString().trim();
    const tgz = path.join(tmp, out.split('\n').at(-1));
    const app = path.join(tmp, 'app');
    await fs.mkdir(app);
    await fs.writeFile(path.join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
    execFileSync('npm', ['install', '--silent', '--no-audit', '--no-fund', '--prefer-offline', tgz], { cwd: app });
    await fs.writeFile(path.join(app, 'example.mjs'), m[1]);
    const printed = execFileSync(process.execPath, ['example.mjs'], {
      cwd: app,
      env: { ...process.env, LAKESWEEP_REPO: repo },
    }).toString();
    assert.match(printed, /^\d+ to delete$/m);
    assert.match(printed, /would delete data\//);
    const installed = path.join(app, 'node_modules/lakesweep-node/gen/lakesweep.js');
    await fs.access(installed);
  } finally {
    await fs.rm(tmp, { recursive: true, force: true });
  }
});
