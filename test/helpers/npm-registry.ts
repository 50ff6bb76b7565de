// A tiny npm registry on 127.0.0.1 for hermetic fetch tests: a packument per
// package (GET /<name>) and its tarballs (GET /<name>/-/<name>-<version>.tgz), from
// .tgz files in test/fixtures/npm-registry/. Every request is recorded, so a test
// can prove what reached it (and what did not).
// Registry API: https://github.com/npm/registry/blob/main/docs/REGISTRY-API.md
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { projectDir } from './daemon.js';

export const npmRegistryFixtures = join(projectDir, 'test', 'fixtures', 'npm-registry');

export interface NpmRegistry {
  url: string;
  /** "127.0.0.1:PORT": what fetchRegistries must allow. */
  authority: string;
  /** Request paths in arrival order. */
  hits: string[];
  close(): Promise<void>;
}

/** Serve every `<name>-<version>.tgz` of `dir` (unscoped names). */
export async function startNpmRegistry(dir = npmRegistryFixtures): Promise<NpmRegistry> {
  const tarballs = new Map<string, Buffer>();
  const versions = new Map<string, string[]>();
  for (const f of readdirSync(dir)) {
    const m = /^(.+)-(\d+\.\d+\.\d+)\.tgz$/.exec(f);
    if (!m) continue;
    const [, name, version] = m as unknown as [string, string, string];
    tarballs.set(`/${name}/-/${f}`, readFileSync(join(dir, f)));
    versions.set(name, [...(versions.get(name) ?? []), version]);
  }
  const hits: string[] = [];
  let base = '';
  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    hits.push(path);
    const tgz = tarballs.get(path);
    if (tgz) {
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': tgz.length });
      res.end(tgz);
      return;
    }
    const name = decodeURIComponent(path.slice(1));
    const vs = versions.get(name);
    if (!vs) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end('{"error":"not_found"}');
      return;
    }
    const packument = {
      name,
      'dist-tags': { latest: vs[vs.length - 1] },
      versions: Object.fromEntries(
        vs.map((v) => {
          const bytes = tarballs.get(`/${name}/-/${name}-${v}.tgz`)!;
          const manifest = readManifest(bytes);
          return [
            v,
            {
              ...manifest,
              dist: {
                tarball: `${base}${name}/-/${name}-${v}.tgz`,
                shasum: createHash('sha1').update(bytes).digest('hex'),
                integrity: 'sha512-' + createHash('sha512').update(bytes).digest('base64'),
              },
            },
          ];
        }),
      ),
    };
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(packument));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  base = `http://127.0.0.1:${port}/`;
  return {
    url: base,
    authority: `127.0.0.1:${port}`,
    hits,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** package/package.json out of a gzip'd tarball (ustar, file names up to 100 bytes: fixtures only). */
function readManifest(tgz: Buffer): Record<string, unknown> {
  const tar = gunzipSync(tgz);
  for (let off = 0; off + 512 <= tar.length;) {
    const name = tar
      .subarray(off, off + 100)
      .toString('utf8')
      .replace(/\0.*$/s, '');
    const size = parseInt(
      tar
        .subarray(off + 124, off + 136)
        .toString('utf8')
        .replace(/\0.*$/s, '')
        .trim() || '0',
      8,
    );
    if (name === '') break;
    if (name === 'package/package.json') return JSON.parse(tar.subarray(off + 512, off + 512 + size).toString('utf8')) as Record<string, unknown>;
    off += 512 + Math.ceil(size / 512) * 512;
  }
  throw new Error('no package/package.json in tarball');
}

/** A registry front that holds every request until released, then passes it to the real test registry. */
export async function gatedRegistry(upstream: NpmRegistry): Promise<GatedRegistry> {
  const held: [IncomingMessage, ServerResponse][] = [];
  let open = false;
  const pass = (req: IncomingMessage, res: ServerResponse) => {
    const u = new URL(upstream.url);
    const up = request({ host: u.hostname, port: u.port, path: req.url, method: req.method, headers: { ...req.headers, host: u.host } }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  };
  const server: Server = createServer((req, res) => (open ? pass(req, res) : held.push([req, res])));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    authority: `127.0.0.1:${port}`,
    url: `http://127.0.0.1:${port}/`,
    release() {
      open = true;
      for (const [req, res] of held.splice(0)) pass(req, res);
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

export interface GatedRegistry {
  authority: string;
  url: string;
  /** Let every held request (and every later one) through to the registry. */
  release(): void;
  close(): Promise<void>;
}
