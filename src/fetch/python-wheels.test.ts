// The daemon's side of the wheel store on the filesystem alone: which hashes a
// workspace's lock names (the lock the driver picks, -r includes inside the tree
// through no link), and what a jail may leave in the download dir (a link, bytes no
// lock named, a name that is not a wheel's) is never followed or stored.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { tempDir } from '../../test/helpers/daemon.js';
import { createLogger } from '../log.js';
import { createMetrics } from '../metrics.js';
import { PackageStore } from './package-store.js';
import { WHEEL_MANIFEST, lockSha256s, seedWheels, takeWheels } from './python-wheels.js';

const sha256 = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');

describe('wheels in the package store', () => {
  it("reads the hashes of the lock the driver picks, and requirements' includes inside the tree only", async () => {
    const t = tempDir('lspd-wheels-tree-');
    const [a, b, c, d, e] = ['a', 'b', 'c', 'd', 'e'].map((x) => sha256(x)) as [string, string, string, string, string];
    mkdirSync(join(t, 'svc', 'reqs'), { recursive: true });
    mkdirSync(join(t, 'uv'));
    writeFileSync(join(t, 'uv', 'uv.lock'), `[[package]]\nname = "x"\nwheels = [{ url = "u", hash = "sha256:${a}" }]\n`);
    writeFileSync(join(t, 'uv', 'requirements.txt'), `y==1 --hash=sha256:${b}\n`);
    assert.deepEqual([...(await lockSha256s(t, 'uv'))], [a], 'uv.lock wins, as in the driver');

    writeFileSync(
      join(t, 'svc', 'requirements.txt'),
      `-r reqs/base.txt\n--requirement=../outside.txt\n-r linked.txt\nz==1 \\\n  --hash=sha256:${b.toUpperCase()}\n`,
    );
    writeFileSync(join(t, 'svc', 'reqs', 'base.txt'), `w==2 --hash=sha256:${c}\n`);
    writeFileSync(join(t, 'outside.txt'), `v==3 --hash=sha256:${d}\n`);
    const away = join(tempDir('lspd-wheels-away-'), 'more.txt');
    writeFileSync(away, `q==3 --hash=sha256:${e}\n`);
    symlinkSync(away, join(t, 'svc', 'linked.txt'));
    assert.deepEqual([...(await lockSha256s(t, 'svc'))].sort(), [b, c, d].sort(), 'a tree file above the workspace counts; a link does not');
  });

  it('stores only wheels a lock named, by their bytes, through no link; gives them back checked', async () => {
    const d = tempDir('lspd-wheels-');
    const metrics = createMetrics();
    const store = await PackageStore.open({ dir: join(d, 'store'), log: createLogger('silent'), metrics });
    const out = join(d, 'out');
    const deps = join(d, 'deps');
    mkdirSync(out);
    mkdirSync(deps);
    const good = Buffer.from('a good wheel');
    const other = Buffer.from('bytes no lock named');
    writeFileSync(join(out, 'good-1.0-py3-none-any.whl'), good);
    writeFileSync(join(out, 'other-1.0-py3-none-any.whl'), other);
    writeFileSync(join(out, 'not-a-wheel.txt'), good);
    writeFileSync(join(d, 'elsewhere.whl'), good);
    symlinkSync(join(d, 'elsewhere.whl'), join(out, 'linked-1.0-py3-none-any.whl'));
    const job = { wanted: new Set([sha256(good)]) };
    await takeWheels(store, 'acme', out, deps, job);
    const entry = `${sha256(good)}-good-1.0-py3-none-any.whl`;
    assert.deepEqual(readdirSync(join(d, 'store', 'acme', 'python')), [entry]);
    assert.deepEqual(readdirSync(join(deps, 'package-refs', 'python')), [entry]);

    const inDir = join(d, 'in');
    const j2 = { wanted: new Set<string>() };
    await seedWheels(store, 'acme', [sha256(good), sha256(other)], inDir, j2);
    assert.deepEqual(readdirSync(inDir).sort(), [WHEEL_MANIFEST, 'good-1.0-py3-none-any.whl'].sort());
    assert.equal(readFileSync(join(inDir, WHEEL_MANIFEST), 'utf8'), `${sha256(good)} good-1.0-py3-none-any.whl\n`);
    // Never another org's.
    await seedWheels(store, 'other', [sha256(good)], join(d, 'in-other'), { wanted: new Set() });
    assert.deepEqual(readdirSync(join(d, 'in-other')), [WHEEL_MANIFEST]);
    // A changed entry is dropped, not given.
    writeFileSync(join(d, 'store', 'acme', 'python', entry), 'tampered');
    await seedWheels(store, 'acme', [sha256(good)], join(d, 'in-3'), { wanted: new Set() });
    assert.deepEqual(readdirSync(join(d, 'in-3')), [WHEEL_MANIFEST]);
    assert.equal(existsSync(join(d, 'store', 'acme', 'python', entry)), false);
  });
});
