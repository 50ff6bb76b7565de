// All or nothing across a crash: a real daemon is SIGKILLed in the middle of a
// large streaming upload, restarted on the same data dir, and must show no root
// and no staging (DESIGN.md "Roots": a crash at any moment leaves the whole root
// or nothing). Readiness is not needed: the store serves uploads regardless.
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { it } from 'node:test';
import { spawnDaemon } from './helpers/daemon.js';
import { SHA, assertNothingStored, packTar, until, walk } from './store-helpers.js';

it('a daemon killed mid-upload restarts with no root and no staging', async () => {
  const d = await spawnDaemon();
  let restarted: Awaited<ReturnType<typeof spawnDaemon>> | undefined;
  try {
    const tarBuf = await packTar([
      ...Array.from({ length: 3000 }, (_, i) => ({ name: `src/m${i % 30}/f${i}.ts`, data: `export const v${i} = "${'x'.repeat(3000)}";\n` })),
      { name: 'assets/big.bin', data: Buffer.alloc(16 * 1024 * 1024, 3) },
    ]);
    const { hostname, port } = new URL(d.url);
    const req = http.request({ hostname, port, method: 'PUT', path: `/v1/roots/acme/api/${SHA(1)}`, headers: { 'content-type': 'application/x-tar' } });
    req.on('error', () => {}); // the daemon dies under it
    // Send most of the archive, then hold the request open: the daemon is mid-upload.
    req.write(tarBuf.subarray(0, Math.floor(tarBuf.length * 0.8)));
    await until(() => walk(d.dataDir).filter((p) => p.startsWith('staging/')).length > 100, 30_000, 'the upload to reach the disk');
    await d.kill();
    req.destroy();
    assert.ok(readdirSync(join(d.dataDir, 'staging')).length > 0, 'the crash left a staging dir behind');
    assert.deepEqual(readdirSync(join(d.dataDir, 'roots')), [], 'nothing became visible');

    restarted = await spawnDaemon({ dataDir: d.dataDir });
    assertNothingStored(d.dataDir);
    assert.ok(restarted.logs.some((l) => l.msg === 'removing what an earlier run left' && l.dir === 'staging'));
    const r = await fetch(`${restarted.url}/v1/roots/acme/api/${SHA(1)}`);
    assert.equal(r.status, 404);
    assert.deepEqual(await r.json(), { error: 'not_found', message: 'No such root.', need: 'tree' });

    // The restarted daemon takes the same upload whole.
    const again = await fetch(`${restarted.url}/v1/roots/acme/api/${SHA(1)}`, {
      method: 'PUT',
      body: tarBuf,
      headers: { 'content-type': 'application/x-tar' },
    });
    assert.equal(again.status, 201);
    assert.equal(((await again.json()) as { files: number }).files, 3001);
  } finally {
    if (restarted) await restarted.stop();
    else await d.kill().catch(() => {});
    d.cleanup();
  }
});
