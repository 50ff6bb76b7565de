// The jails run as other uids and must read every stored tree, whatever umask
// the daemon was started with: under umask 077 the store still leaves 0755
// directories and 0644/0755 files. (Its own file: the umask is process-wide.)
import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, it } from 'node:test';
import { SHA, packTar, put } from './store-helpers.js';
import { startStoreServer, type StoreServer } from './helpers/daemon.js';

let s: StoreServer;
let saved: number;
before(async () => {
  saved = process.umask(0o077);
  s = await startStoreServer();
});
after(async () => {
  await s.destroy();
  process.umask(saved);
});

it('modes are fixed up when the umask would hide the tree from the jails', async () => {
  const tarBuf = await packTar([
    { name: 'src/', type: 'directory', mode: 0o700 },
    { name: 'src/a.ts', data: 'export {};\n', mode: 0o600 },
    { name: 'implied/run.sh', data: '#!/bin/sh\n', mode: 0o700 },
    { name: 'big.bin', data: Buffer.alloc(200_000, 1), mode: 0o600 },
  ]);
  const r = await put(s.url, `acme/api/${SHA(1)}`, tarBuf);
  assert.equal(r.status, 201, JSON.stringify(r.body));
  const rootDir = join(s.dataDir, 'roots/acme/api', SHA(1));
  const mode = (p: string) => statSync(join(rootDir, p)).mode & 0o777;
  assert.deepEqual(
    { root: mode('.'), tree: mode('tree'), deps: mode('deps'), src: mode('tree/src'), implied: mode('tree/implied') },
    { root: 0o755, tree: 0o755, deps: 0o755, src: 0o755, implied: 0o755 },
  );
  assert.equal(mode('tree/src/a.ts'), 0o644);
  assert.equal(mode('tree/implied/run.sh'), 0o755);
  assert.equal(mode('tree/big.bin'), 0o644, 'large files too');
  for (const up of ['roots', 'roots/acme', 'roots/acme/api']) assert.equal(statSync(join(s.dataDir, up)).mode & 0o755, 0o755, up);
});
