// What the composer fetcher writes for composer to read: nothing of the tree's
// that could run code, reach another host or build from source.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sanitizeJson, sanitizeLock } from './composer.js';

const zip = (name: string) => ({
  name,
  version: '1.0.0',
  source: { type: 'git', url: `https://github.com/${name}.git`, reference: 'abc' },
  dist: { type: 'zip', url: `https://api.github.com/repos/${name}/zipball/abc`, reference: 'abc', shasum: '' },
  'notification-url': 'https://packagist.org/downloads/',
  scripts: { 'post-install-cmd': 'rm -rf /' },
});

describe('composer inputs', () => {
  it('the lock keeps dists only; what has none is skipped and named; a mirror is preferred only off packagist', () => {
    const lock = {
      packages: [
        zip('a/one'),
        { name: 'b/git-only', version: 'dev-main', source: { type: 'git', url: 'x', reference: 'y' } },
        { ...zip('c/path'), dist: { type: 'path', url: '../c' } },
      ],
      'packages-dev': [zip('d/dev')],
    };
    const onPackagist = sanitizeLock(lock, 'https://repo.packagist.org');
    const one = (onPackagist.lock.packages as Record<string, unknown>[])[0]!;
    assert.deepEqual(one.dist, { type: 'zip', url: 'https://api.github.com/repos/a/one/zipball/abc', reference: 'abc', shasum: '' });
    for (const k of ['source', 'notification-url', 'scripts']) assert.equal(k in one, false, k);
    assert.deepEqual(
      (onPackagist.lock.packages as { name: string }[]).map((p) => p.name),
      ['a/one'],
    );
    assert.deepEqual(
      (onPackagist.lock['packages-dev'] as { name: string }[]).map((p) => p.name),
      ['d/dev'],
    );
    assert.deepEqual(
      onPackagist.skipped.map((s) => s.name),
      ['b/git-only', 'c/path'],
    );
    assert.match(onPackagist.skipped[0]!.reason, /never clones sources/);

    const mirrored = sanitizeLock(lock, 'https://mirror.example/composer/');
    assert.deepEqual((mirrored.lock.packages as { dist: { mirrors: unknown } }[])[0]!.dist.mirrors, [
      { url: 'https://mirror.example/composer/dists/%package%/%reference%.%type%', preferred: true },
    ]);
  });

  it("composer.json keeps what an install reads; scripts, repositories and config are lspd's", () => {
    const out = sanitizeJson(
      {
        name: 'acme/app',
        require: { php: '>=8.1', 'a/one': '1.0.0', 'b/git-only': 'dev-main' },
        scripts: { 'post-install-cmd': 'curl evil' },
        repositories: [{ type: 'vcs', url: 'https://evil.example/x' }],
        config: { 'secure-http': false, 'disable-tls': true, cafile: '/etc/evil', 'vendor-dir': 'lib' },
        autoload: { files: ['boot.php'] },
      },
      'http://127.0.0.1:9/',
      ['b/git-only'],
    );
    assert.deepEqual(Object.keys(out).sort(), ['config', 'name', 'repositories', 'require']);
    assert.deepEqual(out.require, { php: '>=8.1', 'a/one': '1.0.0' });
    assert.deepEqual(out.repositories, [{ type: 'composer', url: 'http://127.0.0.1:9/', canonical: true }, { 'packagist.org': false }]);
    const config = out.config as Record<string, unknown>;
    assert.equal(config['vendor-dir'], 'vendor');
    assert.equal(config['allow-plugins'], false);
    assert.equal(config['secure-http'], false, 'a plain-http repository the operator chose');
    assert.equal('disable-tls' in config || 'cafile' in config, false);
    assert.equal(sanitizeJson({}, 'https://repo.packagist.org').repositories, undefined, "packagist is composer's default");
    assert.equal((sanitizeJson({}, 'https://repo.packagist.org').config as Record<string, unknown>)['secure-http'], true);
  });
});
