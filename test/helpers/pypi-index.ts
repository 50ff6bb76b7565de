// A PEP 503 simple index on 127.0.0.1 for hermetic fetch tests, serving wheels and
// sdists built by the test: /simple/<normalized name>/ lists a project's files (with
// #sha256= fragments, as PyPI does) and /files/<filename> serves them. A wheel is a
// zip with a <name>-<version>.dist-info (METADATA, WHEEL, RECORD); an sdist is a
// .tar.gz with a setup.py. Every request is recorded, so a test can prove what
// reached it: an sdist that is never downloaded was never built.
// https://peps.python.org/pep-0503/ · https://packaging.python.org/en/latest/specifications/binary-distribution-format/
import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { pack } from 'tar-stream';
import { zipStored } from './go-proxy.js';

export interface PyProject {
  name: string;
  version: string;
  /** Files of the wheel (import packages), or absent: no wheel. */
  wheel?: Record<string, string>;
  /** Files of the sdist (setup.py among them), or absent: no sdist. */
  sdist?: Record<string, string>;
  /** Wheel tag (default py3-none-any). */
  tag?: string;
}

export interface PyIndex {
  /** The index URL (…/simple/). */
  url: string;
  authority: string;
  hits: string[];
  /** sha256 hex of a served file. */
  sha256(filename: string): string;
  wheelName(p: PyProject): string;
  close(): Promise<void>;
}

export const normalize = (name: string) => name.replace(/[-_.]+/g, '-').toLowerCase();
const distName = (name: string) => name.replace(/[-_.]+/g, '_');
const recordHash = (data: Buffer) => 'sha256=' + createHash('sha256').update(data).digest('base64url');

/** A wheel: the files, then .dist-info with METADATA, WHEEL and a RECORD hashing every file. */
export function buildWheel(p: PyProject): Buffer {
  const info = `${distName(p.name)}-${p.version}.dist-info`;
  const files: [string, Buffer][] = [
    ...Object.entries(p.wheel ?? {}).map(([n, d]) => [n, Buffer.from(d)] as [string, Buffer]),
    [`${info}/METADATA`, Buffer.from(`Metadata-Version: 2.1\nName: ${p.name}\nVersion: ${p.version}\n`)],
    [`${info}/WHEEL`, Buffer.from(`Wheel-Version: 1.0\nGenerator: lspd-test\nRoot-Is-Purelib: true\nTag: ${p.tag ?? 'py3-none-any'}\n`)],
  ];
  const record = files.map(([n, d]) => `${n},${recordHash(d)},${d.length}\n`).join('') + `${info}/RECORD,,\n`;
  files.push([`${info}/RECORD`, Buffer.from(record)]);
  return zipStored(files.map(([name, data]) => ({ name, data })));
}

export async function buildSdist(p: PyProject): Promise<Buffer> {
  const top = `${distName(p.name)}-${p.version}`;
  const t = pack();
  for (const [n, d] of Object.entries(p.sdist ?? {})) t.entry({ name: `${top}/${n}`, mode: 0o644 }, d);
  t.finalize();
  const chunks: Buffer[] = [];
  for await (const c of t as AsyncIterable<Buffer>) chunks.push(c);
  return gzipSync(Buffer.concat(chunks));
}

export async function startPypiIndex(projects: PyProject[]): Promise<PyIndex> {
  const files = new Map<string, Buffer>();
  const byProject = new Map<string, string[]>();
  const wheelName = (p: PyProject) => `${distName(p.name)}-${p.version}-${p.tag ?? 'py3-none-any'}.whl`;
  for (const p of projects) {
    const names: string[] = [];
    if (p.wheel) {
      files.set(wheelName(p), buildWheel(p));
      names.push(wheelName(p));
    }
    if (p.sdist) {
      const n = `${distName(p.name)}-${p.version}.tar.gz`;
      files.set(n, await buildSdist(p));
      names.push(n);
    }
    byProject.set(normalize(p.name), [...(byProject.get(normalize(p.name)) ?? []), ...names]);
  }
  const sha256 = (f: string) => createHash('sha256').update(files.get(f)!).digest('hex');
  const hits: string[] = [];
  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    hits.push(path);
    const html = (body: string) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(`<!DOCTYPE html>\n<html><body>\n${body}\n</body></html>\n`);
    };
    if (path === '/simple/') return html([...byProject.keys()].map((n) => `<a href="/simple/${n}/">${n}</a>`).join('\n'));
    const m = /^\/simple\/([^/]+)\/$/.exec(path);
    if (m) {
      const list = byProject.get(normalize(m[1]!));
      if (!list) return void res.writeHead(404).end();
      return html(list.map((f) => `<a href="/files/${f}#sha256=${sha256(f)}">${f}</a><br/>`).join('\n'));
    }
    const f = path.startsWith('/files/') ? files.get(path.slice('/files/'.length)) : undefined;
    if (!f) return void res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': f.length });
    res.end(f);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/simple/`,
    authority: `127.0.0.1:${port}`,
    hits,
    sha256,
    wheelName,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
