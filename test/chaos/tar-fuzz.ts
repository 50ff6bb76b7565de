// Seeded generator of hostile tree uploads for the tar-ingest fuzz: random bytes,
// truncated and bit-flipped archives, hand-made ustar/PAX/GNU headers with hostile
// names, types, sizes and link targets, link tricks, too many files, gzip layers
// (valid, random, truncated, a bomb). Case i of seed s is always the same bytes.
import { gzipSync } from 'node:zlib';
import { END, gnuLong, packTar, paxHeader, rawFile, rawHeader } from '../store-helpers.js';
import { int, pick } from './harness.js';

export interface TarCase {
  kind: string;
  body: Buffer;
  headers: Record<string, string>;
}

const TAR = { 'content-type': 'application/x-tar' };
const GZ = { 'content-type': 'application/gzip' };

const NAMES = [
  'a.ts',
  'src/app.ts',
  'dir/',
  '.',
  './',
  '',
  '/',
  '..',
  '../x',
  'a/../../x',
  '/etc/passwd',
  '//x',
  'a//b.ts',
  './a.ts',
  'a/./b.ts',
  'x\u0000y',
  'x\ny',
  'C:\\evil.ts',
  'a\\..\\..\\b',
  '~/.bashrc',
  '%2e%2e/x',
  'é/ü.ts',
  '😀.ts',
  '\u202egnp.ts',
  'a'.repeat(99),
  'deep/'.repeat(19) + 'x',
  'tree/../../x',
  'meta.json',
  '../meta.json',
  'sub/..',
  'sub/...',
  '.git/config',
  'x '.repeat(30),
];
const LINKS = ['', 'a.ts', '../x', '/etc/passwd', '/', '.', '..', 'a/../../b', 'sub', 'x\u0000y', 'self', 'l1', 'deep/../../..'];
const TYPES = ['0', '\u0000', '1', '2', '3', '4', '5', '6', '7', 'g', 'x', 'L', 'K', 'S', 'V', 'M', 'N', 'D', 'Z', '\u00ff'];
const SIZES = [0, 1, 5, 511, 512, 513, 4096, 0o77777777777];

function randomBytes(r: () => number, n: number): Buffer {
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i++) b[i] = Math.floor(r() * 256);
  return b;
}

/** A header whose checksum is right again after its fields were tampered with. */
function resum(h: Buffer): Buffer {
  h.write('        ', 148, 'ascii');
  let sum = 0;
  for (const byte of h) sum += byte;
  h.write(sum.toString(8).padStart(6, '0') + '\0 ', 148, 'ascii');
  return h;
}

async function smallTar(r: () => number): Promise<Buffer> {
  const n = int(r, 1, 5);
  return packTar(Array.from({ length: n }, (_, i) => ({ name: `d${i % 2}/f${i}.ts`, data: `export const x${i} = ${i};\n`.repeat(int(r, 1, 40)) })));
}

function craftedEntry(r: () => number): Buffer {
  const type = pick(r, TYPES);
  const name = pick(r, NAMES);
  const size = pick(r, SIZES);
  const h = rawHeader({ name, type, size: size > 4096 ? 0 : size, linkname: pick(r, LINKS), mode: pick(r, [0o644, 0o755, 0o4755, 0o7777, 0]) });
  if (size > 4096) h.write('77777777777\0', 124, 'ascii');
  // Base-256 size fields: 0x80 and 0xff prefixes are valid (positive, negative); any other
  // high byte is undecodable, which tar-stream reports as a null size (this hung uploads once).
  if (r() < 0.2) h[124] = pick(r, [0x80, 0xff, 0xf8, 0xc0]);
  if (r() < 0.1) h.write('-1\0', 124, 'ascii');
  if (r() < 0.5) resum(h);
  const data = size > 0 && size <= 4096 ? randomBytes(r, size) : Buffer.alloc(0);
  return Buffer.concat([h, data, Buffer.alloc((512 - (data.length % 512)) % 512)]);
}

const PAX_KEYS: Record<string, string[]> = {
  path: ['../x', '/etc/passwd', 'ok.ts', 'a/../../b', 'x\u0000y', 'é.ts', ''],
  linkpath: ['/etc', '../..', 'ok.ts'],
  size: ['-1', '1e20', '99999999999999999999', 'abc', '0', '12'],
  mtime: ['-1', 'nan', '1e400'],
  'SCHILY.xattr.security.capability': ['x'],
  uid: ['-5', '4294967296'],
};

let bombCache: Buffer | undefined;
/** A gzip'd tar holding one 64 MiB file of zeros (a few tens of KiB on the wire). */
async function gzipBomb(): Promise<Buffer> {
  bombCache ??= gzipSync(await packTar([{ name: 'zeros.bin', data: Buffer.alloc(64 * 1024 * 1024) }]), { level: 9 });
  return bombCache;
}

/** The i-th case of the generator `r` (which the caller seeds). */
export async function tarCase(r: () => number, opts: { maxFiles: number }): Promise<TarCase> {
  switch (int(r, 0, 11)) {
    case 0:
      return { kind: 'random bytes', body: randomBytes(r, int(r, 0, 3000)), headers: TAR };
    case 1: {
      const t = await smallTar(r);
      return { kind: 'truncated', body: t.subarray(0, int(r, 1, t.length - 1)), headers: TAR };
    }
    case 2: {
      const t = Buffer.from(await smallTar(r));
      const flips = int(r, 1, 8);
      for (let k = 0; k < flips; k++) t[int(r, 0, Math.min(t.length, 1536) - 1)] = Math.floor(r() * 256);
      if (r() < 0.7) resum(t.subarray(0, 512));
      return { kind: 'flipped header bytes', body: t, headers: TAR };
    }
    case 3:
      return {
        kind: 'crafted headers',
        body: Buffer.concat([...Array.from({ length: int(r, 1, 4) }, () => craftedEntry(r)), r() < 0.8 ? END : Buffer.alloc(0)]),
        headers: TAR,
      };
    case 4: {
      const recs: Record<string, string> = {};
      for (let k = int(r, 1, 3); k > 0; k--) {
        const key = pick(r, Object.keys(PAX_KEYS));
        recs[key] = pick(r, PAX_KEYS[key]!);
      }
      let pax = paxHeader(recs, r() < 0.2 ? 'g' : 'x');
      if (r() < 0.3) pax = Buffer.concat([pax.subarray(0, 512), Buffer.from('99999 path=x\n'.padEnd(512, '\0'))]); // a record longer than its header says
      return { kind: 'PAX records', body: Buffer.concat([pax, rawFile('f.ts', 'export {};\n'), END]), headers: TAR };
    }
    case 5: {
      const long = pick(r, ['../'.repeat(200) + 'x', 'a/'.repeat(3000) + 'x', '/etc/passwd', 'ok/' + 'n'.repeat(300) + '.ts', 'x\u0000y']);
      const type = pick(r, ['L', 'K'] as const);
      const body = Buffer.concat([gnuLong(long, type), type === 'K' ? rawHeader({ name: 'l', type: '2' }) : rawFile('short.ts', 'x'), END]);
      return { kind: 'GNU long names', body, headers: TAR };
    }
    case 6: {
      // Link tricks that stay inside a tar of otherwise ordinary entries.
      const trick = int(r, 0, 6);
      const parts = [
        [rawHeader({ name: 'l', type: '2', linkname: '..' }), rawFile('l/escape.ts', 'x')],
        [rawHeader({ name: 'd', type: '2', linkname: '.' }), rawFile('d/d/d/x.ts', 'x')],
        [rawHeader({ name: 'h', type: '1', linkname: 'later.ts' }), rawFile('later.ts', 'x')],
        [rawHeader({ name: 'self', type: '1', linkname: 'self' })],
        [rawFile('dup.ts', 'one'), rawFile('dup.ts', 'two'), rawHeader({ name: 'dup.ts', type: '5' })],
        [rawHeader({ name: 'dir', type: '5' }), rawHeader({ name: 'dir', type: '2', linkname: '/tmp' }), rawFile('dir/x.ts', 'x')],
        // The top directory with a size: tar-stream's entry stream for it never ends (this hung uploads once).
        [rawHeader({ name: pick(r, ['.', './']), type: '5', size: 512 }), Buffer.alloc(512, 7)],
      ][trick]!;
      return { kind: 'link tricks', body: Buffer.concat([...parts, END]), headers: TAR };
    }
    case 7: {
      const n = opts.maxFiles + int(r, 1, 50);
      return { kind: 'too many files', body: await packTar(Array.from({ length: n }, (_, i) => ({ name: `f${i}.ts`, data: '' }))), headers: TAR };
    }
    case 8: {
      const t = await smallTar(r);
      const g = gzipSync(t);
      const v = int(r, 0, 3);
      if (v === 0) return { kind: 'gzip', body: g, headers: GZ };
      if (v === 1) return { kind: 'gzip truncated', body: g.subarray(0, int(r, 1, g.length - 1)), headers: GZ };
      if (v === 2) return { kind: 'gzip of random bytes', body: gzipSync(randomBytes(r, int(r, 1, 2000))), headers: { ...TAR, 'content-encoding': 'gzip' } };
      return { kind: 'random bytes as gzip', body: randomBytes(r, int(r, 0, 2000)), headers: GZ };
    }
    case 9:
      return { kind: 'gzip bomb', body: await gzipBomb(), headers: GZ };
    case 10:
      return {
        kind: 'odd media type',
        body: await smallTar(r),
        headers: { 'content-type': pick(r, ['application/json', 'text/plain', 'multipart/form-data', 'application/x-tar; charset=utf-8', '']) },
      };
    default:
      return { kind: 'valid', body: await smallTar(r), headers: TAR };
  }
}
