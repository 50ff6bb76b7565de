// A Cargo sparse registry on 127.0.0.1 for hermetic fetch tests
// (https://doc.rust-lang.org/cargo/reference/registry-index.html#sparse-protocol):
// /index/config.json names the download URL, /index/<prefix>/<name> holds one JSON
// line per version (its `cksum` is the .crate's sha256), /dl/<name>/<version>
// serves the .crate: a gzipped tar whose entries all live under <name>-<version>/.
// Crates come from test/fixtures/cargo-registry/<name>-<version>/; the tar and gzip
// are deterministic (fixed mtimes, no gzip name), so the checksum the fixtures'
// Cargo.lock files pin stays right. Every request is recorded.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { pack } from 'tar-stream';
import { projectDir } from './daemon.js';

export const cargoRegistryFixtures = join(projectDir, 'test', 'fixtures', 'cargo-registry');

export interface CargoRegistry {
  /** `sparse+http://127.0.0.1:<port>/index/`: LSPD_CARGO_REGISTRY. */
  url: string;
  /** 127.0.0.1:<port>: LSPD_FETCH_REGISTRIES. */
  authority: string;
  hits: string[];
  /** sha256 hex of each served crate, by `<name>-<version>`. */
  checksums: Record<string, string>;
  close(): Promise<void>;
}

/** The index path of a crate name (lower-cased): 1/a, 2/ab, 3/a/abc, ab/cd/abcd… */
export function indexPath(name: string): string {
  const n = name.toLowerCase();
  if (n.length <= 2) return `${n.length}/${n}`;
  if (n.length === 3) return `3/${n[0]}/${n}`;
  return `${n.slice(0, 2)}/${n.slice(2, 4)}/${n}`;
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => statSync(join(dir, f)).isFile())
    .sort();
}

/** A .crate of the fixture dir `<name>-<version>`: same bytes on every run. */
export async function buildCrate(dir: string, top: string): Promise<Buffer> {
  const t = pack();
  for (const f of filesUnder(dir)) t.entry({ name: `${top}/${f}`, mode: 0o644, mtime: new Date(0), uid: 0, gid: 0 }, readFileSync(join(dir, f)));
  t.finalize();
  const chunks: Buffer[] = [];
  for await (const c of t as AsyncIterable<Buffer>) chunks.push(c);
  return gzipSync(Buffer.concat(chunks), { level: 9 });
}

export async function startCargoRegistry(fixturesDir = cargoRegistryFixtures): Promise<CargoRegistry> {
  const crates = new Map<string, { name: string; version: string; data: Buffer; cksum: string }>();
  for (const top of readdirSync(fixturesDir).sort()) {
    const m = /^(.+?)-(\d+\.\d+\.\d+.*)$/.exec(top);
    if (!m) continue;
    const data = await buildCrate(join(fixturesDir, top), top);
    crates.set(top, { name: m[1]!, version: m[2]!, data, cksum: createHash('sha256').update(data).digest('hex') });
  }
  const hits: string[] = [];
  let base = '';
  const server: Server = createServer((req, res) => {
    const url = req.url ?? '/';
    hits.push(url);
    if (url === '/index/config.json') {
      res.setHeader('content-type', 'application/json');
      return res.end(JSON.stringify({ dl: `${base}/dl/{crate}/{version}` }));
    }
    if (url.startsWith('/index/')) {
      const want = url.slice('/index/'.length);
      const lines = [...crates.values()]
        .filter((c) => indexPath(c.name) === want)
        .map((c) => JSON.stringify({ name: c.name, vers: c.version, deps: [], cksum: c.cksum, features: {}, yanked: false }));
      if (lines.length === 0) {
        res.statusCode = 404;
        return res.end();
      }
      return res.end(lines.join('\n') + '\n');
    }
    const dl = /^\/dl\/([^/]+)\/([^/]+)$/.exec(url);
    const crate = dl && crates.get(`${dl[1]}-${dl[2]}`);
    if (crate) {
      res.setHeader('content-type', 'application/x-tar');
      return res.end(crate.data);
    }
    res.statusCode = 404;
    res.end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  base = `http://127.0.0.1:${port}`;
  return {
    url: `sparse+${base}/index/`,
    authority: `127.0.0.1:${port}`,
    hits,
    checksums: Object.fromEntries([...crates].map(([k, c]) => [k, c.cksum])),
    close: () => new Promise((r) => server.close(() => r())),
  };
}
