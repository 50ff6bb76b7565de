// The daemon's side of Go modules in the package store on the filesystem alone: go.sum
// read as Go writes it (and lines Go would not write left out), the cache paths
// escaped as Go's, the hashing thread's h1 equal to go.sum's for stored and deflated
// zips and no answer for a zip Go would read otherwise, and what a jail may leave in
// its module cache (a link in place of a dir, bytes that do not hash to go.sum's line)
// never followed or stored.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync as readFileOf, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { tempDir } from '../../test/helpers/daemon.js';
import { writeGoProxy, zipStored, type GoModule } from '../../test/helpers/go-proxy.js';
import { createLogger } from '../log.js';
import { createMetrics } from '../metrics.js';
import { cacheRel, goModH1, hashZips, parseGoSum, takeGoModules, type GoJobState } from './go-modules.js';
import { PackageStore } from './package-store.js';

const mod = (path: string): GoModule => ({ path, version: 'v1.2.3', files: { 'go.mod': `module ${path}\n`, 'a.go': 'package a\n' } });
const hex = (line: string) => Buffer.from(/h1:(\S+)/.exec(line)![1]!, 'base64').toString('hex');

describe('Go modules in the package store', () => {
  it('reads go.sum as Go writes it, and leaves out lines Go would not write', async () => {
    const good = 'h1:gMFL5bnvHCIY1TJT7krteItjj/nCw2Z+Wso8pGPSmQs=';
    const text = [
      `example.com/dep v1.0.0 ${good}`,
      `example.com/dep v1.0.0/go.mod h1:fGPp69Hit/toBUWE+Ldh2b+Bo3ABzILGe56XIcOE/Is=`,
      `github.com/BurntSushi/toml v1.3.2/go.mod ${good}`,
      `example.com/../etc v1.0.0 ${good}`,
      `/abs v1.0.0 ${good}`,
      `example.com/x v1.0.0/../../y ${good}`,
      `example.com/x. v1.0.0 ${good}`,
      `example.com/short v1.0.0 h1:AAAA`,
      `example.com/h2 v1.0.0 h2:gMFL5bnvHCIY1TJT7krteItjj/nCw2Z+Wso8pGPSmQs=`,
      '',
    ].join('\n');
    assert.deepEqual(await parseGoSum(text), [
      { mod: 'example.com/dep', ver: 'v1.0.0', zip: hex(good), gomod: hex('h1:fGPp69Hit/toBUWE+Ldh2b+Bo3ABzILGe56XIcOE/Is=') },
      { mod: 'github.com/BurntSushi/toml', ver: 'v1.3.2', gomod: hex(good) },
    ]);
    assert.equal(cacheRel({ mod: 'github.com/BurntSushi/toml', ver: 'v1.3.2-RC' }, 'zip'), 'cache/download/github.com/!burnt!sushi/toml/@v/v1.3.2-!r!c.zip');
  });

  it('hashes zips as go.sum does, stored or deflated, and gives no h1 for a zip Go would read otherwise', async () => {
    const d = tempDir('lspd-go-zips-');
    const stored = writeGoProxy(join(d, 's'), [mod('example.com/s')], 0);
    const deflated = writeGoProxy(join(d, 'd'), [mod('example.com/d')], 8);
    assert.equal(goModH1(Buffer.from('module example.com/s\n')), hex(stored.split('\n')[1]!));
    const dup = join(d, 'dup.zip');
    writeFileSync(
      dup,
      zipStored([
        { name: 'x@v1/a.go', data: Buffer.from('a') },
        { name: 'x@v1/a.go', data: Buffer.from('b') },
      ]),
    );
    writeFileSync(join(d, 'not.zip'), 'not a zip');
    // One entry whose central directory says it unpacks to 600 MiB: past Go's bound, never inflated.
    const bomb = zipStored([{ name: 'x@v1/a.go', data: Buffer.from('a') }]);
    bomb.writeUInt32LE(600 << 20, bomb.readUInt32LE(bomb.length - 6) + 24);
    writeFileSync(join(d, 'bomb.zip'), bomb);
    const r = await hashZips([
      join(d, 's/example.com/s/@v/v1.2.3.zip'),
      join(d, 'd/example.com/d/@v/v1.2.3.zip'),
      dup,
      join(d, 'not.zip'),
      join(d, 'absent'),
      join(d, 'bomb.zip'),
    ]);
    assert.equal(r[0]?.[1], hex(stored.split('\n')[0]!));
    assert.equal(r[1]?.[1], hex(deflated.split('\n')[0]!));
    assert.equal(r[2]?.[1], null, 'a name twice: no answer');
    assert.match(r[3]?.[0] ?? '', /^[0-9a-f]{64}$/);
    assert.equal(r[3]?.[1], null);
    assert.equal(r[4], null);
    assert.equal(r[5]?.[1], null, 'past 500 MiB unpacked: no answer');
  });

  it("takes in only what hashes to the root's go.sum, and follows no link a jail left", async () => {
    const d = tempDir('lspd-go-take-');
    const proxy = join(d, 'proxy');
    const sums = await parseGoSum(writeGoProxy(proxy, [mod('example.com/good'), mod('example.com/liar'), mod('example.com/linked')]));
    const cache = join(d, 'modcache');
    const place = (m: string, from: string) => {
      const at = join(cache, 'cache', 'download', 'example.com', m, '@v');
      mkdirSync(at, { recursive: true });
      for (const ext of ['zip', 'mod', 'info']) writeFileSync(join(at, `v1.2.3.${ext}`), readFileOf(join(proxy, 'example.com', from, '@v', `v1.2.3.${ext}`)));
    };
    place('good', 'good');
    place('liar', 'good'); // another module's bytes under its name
    mkdirSync(join(d, 'elsewhere', 'linked', '@v'), { recursive: true });
    symlinkSync(join(d, 'elsewhere', 'linked'), join(cache, 'cache', 'download', 'example.com', 'linked'));
    for (const ext of ['zip', 'mod', 'info'])
      writeFileSync(join(d, 'elsewhere', 'linked', '@v', `v1.2.3.${ext}`), readFileOf(join(proxy, 'example.com', 'linked', '@v', `v1.2.3.${ext}`)));
    const store = await PackageStore.open({ dir: join(d, 'store'), log: createLogger('silent'), metrics: createMetrics() });
    const job: GoJobState = { wanted: new Map(sums.map((e) => [`${e.mod}@${e.ver}`, e])), seeded: new Map() };
    await takeGoModules(store, 'acme', cache, job);
    const names = readdirSync(join(d, 'store', 'acme', 'go')).sort();
    const good = sums.find((e) => e.mod === 'example.com/good')!;
    // good's three; of liar's, only the .info (go.sum has no hash of it: its version is what is checked); nothing of linked.
    assert.equal(names.length, 4, names.join(' '));
    assert.deepEqual(
      names.filter((n) => n.endsWith('.zip')).map((n) => n.split('.')[0]),
      [good.zip],
    );
    assert.deepEqual(
      names.filter((n) => n.endsWith('.mod')),
      [`${good.gomod}.mod`],
    );
    assert.equal(names.filter((n) => n.endsWith('.info')).length, 2);
  });
});
