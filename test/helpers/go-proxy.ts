// A Go module proxy laid out on disk, for GOPROXY=file://… (no network at all).
// Layout per https://go.dev/ref/mod#goproxy-protocol:
//   <dir>/<module>/@v/list, <version>.info, <version>.mod, <version>.zip
// where the zip holds every file under the prefix "<module>@<version>/"
// (https://go.dev/ref/mod#zip-files). Modules come from test/fixtures/go-proxy/,
// one directory per "<module>@<version>". The zip is written here (stored, or
// deflated as real proxies serve it: go accepts both) so the tests need no `zip`
// binary; go.sum's h1: hash covers file names and contents only, so the fixture
// go.sum stays valid either way.
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { crc32, deflateRawSync } from 'node:zlib';
import { createHash } from 'node:crypto';
import { projectDir } from './daemon.js';

export const goProxyFixtures = join(projectDir, 'test', 'fixtures', 'go-proxy');

export interface GoModule {
  path: string;
  version: string;
  /** Module-relative file names → contents; must include go.mod. */
  files: Record<string, string | Buffer>;
}

/** Build the proxy for every fixture module under `fixturesDir` into `outDir`; returns `file://` + outDir. */
export function buildGoProxy(outDir: string, fixturesDir = goProxyFixtures): string {
  const modules: GoModule[] = findModuleDirs(fixturesDir).map((modDir) => {
    const rel = relative(fixturesDir, modDir); // example.com/dep@v1.0.0
    const at = rel.lastIndexOf('@');
    return {
      path: rel.slice(0, at),
      version: rel.slice(at + 1),
      files: Object.fromEntries(listFiles(modDir).map((f) => [relative(modDir, f), readFileSync(f)])),
    };
  });
  writeGoProxy(outDir, modules);
  return `file://${outDir}`;
}

/** Lay `modules` out as a proxy in `outDir`; returns the go.sum lines that pin them. */
export function writeGoProxy(outDir: string, modules: GoModule[], method: 0 | 8 = 0): string {
  const versions = new Map<string, string[]>();
  const sum: string[] = [];
  for (const m of modules) {
    // The protocol's paths are escaped: an upper-case letter is '!' and the letter.
    const v = join(
      outDir,
      m.path.replace(/[A-Z]/g, (c) => `!${c.toLowerCase()}`),
      '@v',
    );
    mkdirSync(v, { recursive: true });
    const goMod = Buffer.from(m.files['go.mod']!);
    writeFileSync(join(v, `${m.version}.info`), JSON.stringify({ Version: m.version, Time: '2024-01-01T00:00:00Z' }));
    writeFileSync(join(v, `${m.version}.mod`), goMod);
    const files = Object.keys(m.files)
      .sort()
      .map((name) => ({ name: `${m.path}@${m.version}/${name}`, data: Buffer.from(m.files[name]!) }));
    writeFileSync(join(v, `${m.version}.zip`), zipStored(files, method));
    versions.set(v, [...(versions.get(v) ?? []), m.version]);
    sum.push(`${m.path} ${m.version} ${hash1(files)}`, `${m.path} ${m.version}/go.mod ${hash1([{ name: 'go.mod', data: goMod }])}`);
  }
  for (const [v, list] of versions) writeFileSync(join(v, 'list'), list.join('\n') + '\n');
  return sum.join('\n') + '\n';
}

/**
 * go.sum's "h1:" hash (golang.org/x/mod/sumdb/dirhash Hash1): SHA-256 over the
 * lines "<sha256 hex>  <name>\n" of every file, sorted by name.
 */
export function hash1(files: { name: string; data: Buffer }[]): string {
  const summary = [...files]
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((f) => `${createHash('sha256').update(f.data).digest('hex')}  ${f.name}\n`)
    .join('');
  return 'h1:' + createHash('sha256').update(summary).digest('base64');
}

function findModuleDirs(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (!statSync(p).isDirectory()) continue;
    if (name.includes('@')) out.push(p);
    else out.push(...findModuleDirs(p));
  }
  return out;
}

function listFiles(dir: string): string[] {
  return readdirSync(dir)
    .sort()
    .flatMap((name) => {
      const p = join(dir, name);
      return statSync(p).isDirectory() ? listFiles(p) : [p];
    });
}

/** A minimal zip (PKWARE APPNOTE 6.3.x: local headers, central directory, end record), method 0 (stored) or 8 (deflated). */
export function zipStored(files: { name: string; data: Buffer }[], method: 0 | 8 = 0): Buffer {
  const parts: Buffer[] = [];
  const central: Buffer[] = [];
  let offset = 0;
  for (const f of files) {
    const name = Buffer.from(f.name, 'utf8');
    const crc = crc32(f.data);
    const body = method === 8 ? deflateRawSync(f.data) : f.data;
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4); // version needed
    local.writeUInt16LE(0x0800, 6); // UTF-8 names
    local.writeUInt16LE(method, 8);
    local.writeUInt32LE(0, 10); // time/date: 1980-00-00, fine for go
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(body.length, 18);
    local.writeUInt32LE(f.data.length, 22);
    local.writeUInt16LE(name.length, 26);
    local.writeUInt16LE(0, 28);
    const cen = Buffer.alloc(46);
    cen.writeUInt32LE(0x02014b50, 0);
    cen.writeUInt16LE(20, 4);
    cen.writeUInt16LE(20, 6);
    cen.writeUInt16LE(0x0800, 8);
    cen.writeUInt16LE(method, 10);
    cen.writeUInt32LE(0, 12);
    cen.writeUInt32LE(crc, 16);
    cen.writeUInt32LE(body.length, 20);
    cen.writeUInt32LE(f.data.length, 24);
    cen.writeUInt16LE(name.length, 28);
    cen.writeUInt32LE(offset, 42);
    parts.push(local, name, body);
    central.push(cen, name);
    offset += local.length + name.length + body.length;
  }
  const cd = Buffer.concat(central);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(files.length, 8);
  end.writeUInt16LE(files.length, 10);
  end.writeUInt32LE(cd.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...parts, cd, end]);
}
