// A Composer repository on 127.0.0.1 for hermetic fetch tests, built by the test:
// packages.json (Composer 2's metadata-url form), /p2/<vendor>/<package>.json, and
// each package's dist zip, served both at /files/<vendor>-<package>-<version>.zip
// (what a lock names) and at /dists/<vendor>/<package>/<reference>.zip (the
// mirror layout lspd gives composer when LSPD_COMPOSER_REPO is not packagist).
// Zips have one top-level directory, as GitHub's zipballs do (composer strips it).
// Every request is recorded, so a test can prove what reached it.
// Repository format: https://getcomposer.org/doc/05-repositories.md#composer
import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { zipStored } from './go-proxy.js';

export interface ComposerPackage {
  name: string;
  version: string;
  type?: string;
  /** Package-relative files; composer.json is generated from the fields when absent. */
  files: Record<string, string>;
  require?: Record<string, string>;
  autoload?: Record<string, unknown>;
  extra?: Record<string, unknown>;
  scripts?: Record<string, unknown>;
}

export interface ComposerRepo {
  url: string;
  authority: string;
  hits: string[];
  /** A composer.lock for `names` whose dists are at `distBase` (default: this repo's /files/). */
  lock(names: string[], distBase?: string): Record<string, unknown>;
  close(): Promise<void>;
}

interface Built {
  pkg: ComposerPackage;
  zip: Buffer;
  reference: string;
  meta: Record<string, unknown>;
}

export async function startComposerRepo(packages: ComposerPackage[]): Promise<ComposerRepo> {
  const hits: string[] = [];
  const byPath = new Map<string, Buffer>();
  const built = new Map<string, Built>();
  let base = '';
  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    hits.push(path);
    const body =
      path === '/packages.json' ? Buffer.from(JSON.stringify({ packages: [], 'metadata-url': '/p2/%package%.json' })) : (p2(path) ?? byPath.get(path));
    if (!body) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': path.endsWith('.zip') ? 'application/zip' : 'application/json', 'content-length': body.length });
    res.end(body);
  });
  const p2 = (path: string): Buffer | undefined => {
    const m = /^\/p2\/([^/]+\/[^/]+)\.json$/.exec(path);
    const b = m ? built.get(m[1]!) : undefined;
    return b ? Buffer.from(JSON.stringify({ packages: { [b.pkg.name]: [{ ...b.meta, dist: dist(b) }] } })) : undefined;
  };
  const dist = (b: Built, distBase = `${base}files/`) => ({
    type: 'zip',
    url: `${distBase}${b.pkg.name.replace('/', '-')}-${b.pkg.version}.zip`,
    reference: b.reference,
    shasum: createHash('sha1').update(b.zip).digest('hex'),
  });

  for (const pkg of packages) {
    const meta: Record<string, unknown> = {
      name: pkg.name,
      version: pkg.version,
      version_normalized: `${pkg.version}.0`,
      type: pkg.type ?? 'library',
      ...(pkg.require ? { require: pkg.require } : {}),
      ...(pkg.autoload ? { autoload: pkg.autoload } : {}),
      ...(pkg.extra ? { extra: pkg.extra } : {}),
      ...(pkg.scripts ? { scripts: pkg.scripts } : {}),
    };
    const files = { 'composer.json': JSON.stringify({ name: pkg.name, ...meta, version: undefined, version_normalized: undefined }, null, 2), ...pkg.files };
    const top = `${pkg.name.replace('/', '-')}-${pkg.version}`;
    const zip = zipStored(
      Object.entries(files)
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([name, data]) => ({ name: `${top}/${name}`, data: Buffer.from(data) })),
    );
    const reference = createHash('sha1').update(`${pkg.name}@${pkg.version}`).digest('hex');
    built.set(pkg.name, { pkg, zip, reference, meta });
    byPath.set(`/files/${pkg.name.replace('/', '-')}-${pkg.version}.zip`, zip);
    byPath.set(`/dists/${pkg.name}/${reference}.zip`, zip);
  }

  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  base = `http://127.0.0.1:${port}/`;
  return {
    url: `http://127.0.0.1:${port}`,
    authority: `127.0.0.1:${port}`,
    hits,
    lock(names, distBase) {
      const entries = names.map((n) => {
        const b = built.get(n);
        if (!b) throw new Error(`no package ${n}`);
        return { ...b.meta, dist: dist(b, distBase), 'notification-url': `${base}notify` };
      });
      return {
        _readme: ['written by a test'],
        'content-hash': '0'.repeat(32),
        packages: entries,
        'packages-dev': [],
        aliases: [],
        'minimum-stability': 'stable',
        'stability-flags': [],
        'prefer-stable': false,
        'prefer-lowest': false,
        platform: [],
        'platform-dev': [],
        'plugin-api-version': '2.3.0',
      };
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
