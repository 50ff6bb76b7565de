// Where composer's cache has a dist (composer 2.5's FileDownloader: files/<name>/<sha1
// of each URL it tries>.<type>, a preferred mirror first), and which dists are kept
// at all: only those whose lock gives a shasum, by a name composer could have.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { sanitizeLock } from './composer.js';
import { lockedDists } from './composer-dists.js';

const sha1 = (s: string) => createHash('sha1').update(s).digest('hex');

describe('composer dists in the package store', () => {
  it('computes the cache path of each URL composer tries, and keeps only verifiable dists', () => {
    const sum = sha1('zip bytes');
    const pkg = (name: string, dist: Record<string, unknown>) => ({ name, version: '1.0.0', dist: { type: 'zip', reference: 'abc123', ...dist } });
    const lock = {
      packages: [
        pkg('Acme/Lib', { url: 'https://repo.example/acme-lib.zip', shasum: sum }),
        pkg('acme/nosum', { url: 'https://repo.example/nosum.zip', shasum: '' }),
        pkg('acme/upper', { url: 'https://repo.example/upper.zip', shasum: sum.toUpperCase() }),
        pkg('acme/gh', { url: 'https://api.github.com/repos/acme/gh/zipball/abc123', shasum: sum }),
      ],
      'packages-dev': [pkg('../../etc', { url: 'https://repo.example/x.zip', shasum: sum })],
    };
    const { lock: safe } = sanitizeLock(lock, 'http://127.0.0.1:9/');
    const mirror = 'http://127.0.0.1:9/dists/acme/lib/abc123.zip';
    assert.deepEqual(lockedDists(safe), [
      { shasum: sum, cacheRels: [`files/acme/lib/${sha1(mirror)}.zip`, `files/acme/lib/${sha1('https://repo.example/acme-lib.zip')}.zip`] },
      // A GitHub URL composer rewrites: only the mirror's path.
      { shasum: sum, cacheRels: [`files/acme/gh/${sha1('http://127.0.0.1:9/dists/acme/gh/abc123.zip')}.zip`] },
    ]);
    // Packagist itself: no mirror, the lock's URL alone.
    assert.deepEqual(lockedDists(sanitizeLock(lock, 'https://repo.packagist.org').lock)[0]!.cacheRels, [
      `files/acme/lib/${sha1('https://repo.example/acme-lib.zip')}.zip`,
    ]);
  });
});
