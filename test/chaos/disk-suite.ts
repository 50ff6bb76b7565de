// Disk full during an upload: a real daemon whose data dir is a 20 MiB tmpfs
// (mounted here, unmounted after, even on failure), serving queries meanwhile.
// An upload larger than the space left, and any upload once the disk is filled to
// the last byte, answer 507 insufficient_storage and leave nothing behind; queries
// on stored roots keep being answered; once space frees, uploads succeed again.
// Shared by disk.test.ts (short) and chaos.long.ts (more rounds).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, rmSync, statfsSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { cannotJail } from '../helpers/lsp-harness.js';
import { spawnServing, tempDir, type Serving } from '../helpers/daemon.js';
import { packTar, walk } from '../store-helpers.js';
import { CHAOS_ENV, fixtureTar, putTar, rootPath, shaOf, tsLoad, tsRoots, uidRange, type Root } from './daemons.js';
import { Figures, Load, report, send, waitFor } from './harness.js';
import { MiB, jailProcs } from './procs.js';
import { skipOrFail } from '../helpers/host.js';

const SIZE_MIB = 20;

function whyNot(): string | undefined {
  const jail = cannotJail();
  if (jail) return jail;
  if (process.getuid?.() !== 0) return skipOrFail('mounting a tmpfs needs root');
  return undefined;
}

/** Fill the file system holding `dir` to its last byte (bounded by count); returns the ballast file. */
function fillUp(dir: string): string {
  const file = join(dir, 'ballast');
  const fd = openSync(file, 'w');
  try {
    for (const size of [MiB, 64 * 1024, 4096, 512, 1]) {
      const chunk = Buffer.alloc(size, 1);
      for (let i = 0; i < 4 * SIZE_MIB * (MiB / size) && i < 100_000; i++) {
        try {
          writeSync(fd, chunk);
        } catch {
          break; // ENOSPC at this chunk size: try smaller
        }
      }
    }
  } finally {
    closeSync(fd);
  }
  return file;
}

const freeBytes = (dir: string) => {
  const s = statfsSync(dir);
  return s.bavail * s.bsize;
};

export function diskSuite(o: { label: string; slot: number; rounds: number }): void {
  describe(`chaos: disk full during uploads (${o.label})`, { skip: whyNot() }, () => {
    let mnt: string | undefined;
    let mounted = false;
    let c: Serving | undefined;
    let ts: Root[] = [];

    before(async () => {
      mnt = tempDir('lspd-chaos-tmpfs-');
      execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${SIZE_MIB}m,mode=0755`, 'tmpfs', mnt]);
      mounted = true;
      const dataDir = join(mnt, 'data');
      mkdirSync(dataDir, { mode: 0o755 });
      c = await spawnServing({ uids: uidRange(o.slot), env: CHAOS_ENV, dataDir });
      assert.equal(c.notReady, undefined, `the daemon must be ready: ${c.notReady}`);
      ts = await tsRoots(c.url, 1, `disk-${o.label}`);
    });

    after(async () => {
      if (c) {
        if (c.daemon.child.exitCode === null && c.daemon.child.signalCode === null) await c.daemon.stop();
        assert.ok(await waitFor(() => jailProcs(c!.uids).length === 0, 10_000), 'no jail process left');
      }
      if (mounted && mnt) {
        // A busy mount (a straggler holding a file) is detached lazily rather than left mounted.
        try {
          execFileSync('umount', [mnt]);
        } catch {
          execFileSync('umount', ['-l', mnt]);
        }
      }
      if (mnt) rmSync(mnt, { recursive: true, force: true });
    });

    test('507 insufficient_storage, nothing left behind, queries go on, uploads work once space frees', async (t) => {
      const d = c!;
      const f = new Figures();
      const load = new Load({
        url: d.url,
        next: tsLoad(ts),
        concurrency: 2,
        maxRequests: 50_000,
        maxMs: 5 * 60_000,
        timeoutMs: 30_000,
        figures: f,
        pauseMs: 20,
      }).start();
      const dataDir = d.daemon.dataDir;
      const leftovers = () => walk(dataDir).filter((p) => p.startsWith('staging/') || p.startsWith('trash/') || /^roots\/chaos\/disk\//.test(p));
      const put = async (key: Root, tar: Buffer, label: string) => {
        const r = await send(d.url, { method: 'PUT', path: rootPath(key), raw: tar, headers: { 'content-type': 'application/x-tar' } }, { timeoutMs: 60_000 });
        f.add(r, label);
        return r;
      };
      // 25 MiB of files: more than the whole file system.
      const huge = await packTar(Array.from({ length: 5 }, (_, i) => ({ name: `blob${i}.bin`, data: Buffer.alloc(5 * MiB, i + 1) })));
      const small = await fixtureTar('ts-basic');
      const medium = await packTar([{ name: 'mid.bin', data: Buffer.alloc(6 * MiB, 9) }]);
      const notes: string[] = [];
      try {
        for (let round = 0; round < o.rounds; round++) {
          const key = (n: string) => ({ org: 'chaos', repo: 'disk', sha: shaOf(`disk-${o.label}-${round}-${n}`) });
          const before = freeBytes(dataDir);
          const big = await put(key('huge'), huge, 'huge upload');
          assert.equal(big.status, 507, JSON.stringify(big.body));
          assert.equal(big.body!.error, 'insufficient_storage');
          assert.deepEqual(leftovers(), [], 'a failed upload leaves nothing');
          assert.ok(freeBytes(dataDir) >= before - 64 * 1024, 'the space it took was given back');
          assert.equal((await send(d.url, { method: 'GET', path: rootPath(key('huge')) }, { timeoutMs: 5_000 })).status, 404);

          // The disk filled to the last byte by someone else: even a tiny upload cannot be stored.
          const ballast = fillUp(dataDir);
          const full = await put(key('small-full'), small, 'upload on a full disk');
          assert.equal(full.status, 507, JSON.stringify(full.body));
          assert.deepEqual(leftovers(), [], 'nothing left on a full disk');
          // Stored roots still answer while the disk is full.
          const q = await send(d.url, tsLoad(ts)(round), { timeoutMs: 30_000 });
          f.add(q, 'query on a full disk');
          assert.equal(q.status, 200, JSON.stringify(q.body));

          rmSync(ballast);
          const ok1 = await put(key('small'), small, 'upload after space freed');
          assert.equal(ok1.status, 201, JSON.stringify(ok1.body));
          const ok2 = await put(key('medium'), medium, 'medium upload');
          assert.equal(ok2.status, 201, JSON.stringify(ok2.body));
          for (const k of ['small', 'medium'])
            assert.equal((await send(d.url, { method: 'DELETE', path: rootPath(key(k)) }, { timeoutMs: 10_000 })).status, 204);
          notes.push(
            `round ${round}: 507 for ${Math.round(huge.length / MiB)} MiB with ${Math.round(before / MiB)} MiB free and for ${Math.round(small.length / 1024)} KiB on a full disk; 201 after`,
          );
        }
      } finally {
        // "Queries go on" is judged by count: the background load's first query may still be
        // starting its TS session when a quick round ends, so it gets until a few have answered.
        await waitFor(() => f.answered > 5, 60_000);
        await load.stop();
      }
      f.fault('disk full during uploads', f.lost === 0, notes.join('; '));
      report(t, `disk ${o.label}`, f);
      assert.equal(f.lost, 0, f.lostWhy.join('\n'));
      assert.equal(f.wrong, 0, f.wrongWhy.join('\n'));
      assert.ok(f.answered > 5, f.line());
    });
  });
}
