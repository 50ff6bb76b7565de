// Every refusal of API.md "Trees", over real HTTP with real (hand-made) tar
// streams: each answers its status and code, names the entry where there is one,
// and leaves nothing in the data dir — no root, no staging, no trash.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { END, SHA, assertNothingStored, gnuLong, hangingBody, packTar, paxHeader, put, rawFile, rawHeader, tarOf } from './store-helpers.js';
import { startStoreServer, type StoreServer } from './helpers/daemon.js';

const dir = (name: string) => rawHeader({ name, type: '5', mode: 0o755 });
const symlink = (name: string, linkname: string) => rawHeader({ name, type: '2', linkname });
const hardlink = (name: string, linkname: string) => rawHeader({ name, type: '1', linkname });
const ok = rawFile('ok.txt', 'fine\n');

interface Case {
  title: string;
  tar: () => Buffer | Promise<Buffer>;
  status: number;
  code: string;
  entry?: string;
  headers?: Record<string, string>;
}

const unsafe: Case[] = [
  { title: 'an absolute path', tar: () => tarOf(ok, rawFile('/etc/passwd')), entry: '/etc/passwd' },
  { title: 'a leading ..', tar: () => tarOf(ok, rawFile('../evil')), entry: '../evil' },
  { title: '.. in the middle', tar: () => tarOf(rawFile('a/../../evil')), entry: 'a/../../evil' },
  { title: '.. even when it would stay inside', tar: () => tarOf(rawFile('a/../b')), entry: 'a/../b' },
  { title: 'a symlink to an absolute path', tar: () => tarOf(ok, symlink('etc', '/etc')), entry: 'etc' },
  { title: 'a symlink up and out', tar: () => tarOf(symlink('sub/up', '../../..')), entry: 'sub/up' },
  { title: 'a chain of symlinks that leaves', tar: () => tarOf(symlink('d/top', '..'), symlink('y', 'd/top/..')), entry: 'y' },
  { title: 'a symlink a later symlink turns outward', tar: () => tarOf(symlink('b', 'q/..'), symlink('q', '.')), entry: 'b' },
  { title: 'a file written through a symlink to a directory', tar: () => tarOf(dir('real/'), symlink('d', 'real'), rawFile('d/evil')), entry: 'd/evil' },
  { title: 'a directory made through a symlink', tar: () => tarOf(symlink('d', '.'), dir('d/x/')), entry: 'd/x/' },
  { title: 'a hard link to an absolute path', tar: () => tarOf(ok, hardlink('h', '/etc/shadow')), entry: 'h' },
  { title: 'a hard link up and out', tar: () => tarOf(hardlink('h', '../../etc/shadow')), entry: 'h' },
  { title: 'a hard link to a name not in the archive', tar: () => tarOf(hardlink('h', 'elsewhere')), entry: 'h' },
  { title: 'a hard link through a symlink', tar: () => tarOf(dir('real/'), rawFile('real/f'), symlink('d', 'real'), hardlink('h', 'd/f')), entry: 'h' },
  { title: 'a character device', tar: () => tarOf(ok, rawHeader({ name: 'null', type: '3' })), entry: 'null' },
  { title: 'a block device', tar: () => tarOf(rawHeader({ name: 'sda', type: '4' })), entry: 'sda' },
  { title: 'a fifo', tar: () => tarOf(rawHeader({ name: 'pipe', type: '6' })), entry: 'pipe' },
  // tar has no socket type flag: anything it does not know (a socket, sparse files) is refused.
  { title: 'an unknown type flag (a socket)', tar: () => tarOf(rawHeader({ name: 'sock', type: '9' })), entry: 'sock' },
  { title: 'a control character in a name', tar: () => tarOf(rawFile('evil\nname')), entry: 'evil\nname' },
  { title: 'an escape character in a name', tar: () => tarOf(rawFile('a\u001b[2Jb')), entry: 'a\u001b[2Jb' },
  { title: 'a NUL smuggled in a PAX path', tar: () => tarOf(paxHeader({ path: 'a\u0000b' }), rawFile('innocent')), entry: 'a\u0000b' },
  { title: 'a PAX path with ..', tar: () => tarOf(ok, paxHeader({ path: '../../evil' }), rawFile('innocent.txt')), entry: '../../evil' },
  { title: 'an absolute PAX path', tar: () => tarOf(paxHeader({ path: '/etc/cron.d/x' }), rawFile('innocent.txt')), entry: '/etc/cron.d/x' },
  { title: 'a PAX linkpath leaving the root', tar: () => tarOf(paxHeader({ linkpath: '/etc/passwd' }), symlink('l', 'innocent')), entry: 'l' },
  {
    title: 'a PAX global path applied to a later entry',
    tar: () => tarOf(paxHeader({ path: '../g' }, 'g'), paxHeader({ mtime: '1' }), rawFile('x')),
    entry: '../g',
  },
  { title: 'a GNU long name with ..', tar: () => tarOf(gnuLong('../../evil', 'L'), rawFile('innocent')), entry: '../../evil' },
  { title: 'a GNU long name with a control character', tar: () => tarOf(gnuLong('a\u0007b', 'L'), rawFile('innocent')), entry: 'a\u0007b' },
  { title: 'a GNU long link name leaving the root', tar: () => tarOf(gnuLong('../../../etc', 'K'), symlink('l', 'ok')), entry: 'l' },
  { title: 'a file replacing a directory', tar: () => tarOf(dir('d/'), rawFile('d')), entry: 'd' },
  { title: 'a file replacing an implied directory', tar: () => tarOf(rawFile('d/x'), rawFile('d')), entry: 'd' },
  { title: 'a directory replacing a file', tar: () => tarOf(rawFile('f'), dir('f/')), entry: 'f/' },
  { title: 'a file under a file', tar: () => tarOf(rawFile('f'), rawFile('f/x')), entry: 'f/x' },
  { title: 'a duplicate entry', tar: () => tarOf(rawFile('x'), rawFile('./x')), entry: './x' },
  { title: 'a duplicate spelled differently', tar: () => tarOf(rawFile('a//b'), rawFile('a/b')), entry: 'a/b' },
  {
    title: 'an unsafe entry after hundreds of files and a large one were written',
    tar: async () =>
      Buffer.concat([
        (
          await packTar([
            ...Array.from({ length: 300 }, (_, i) => ({ name: `src/m${i % 7}/f${i}.ts`, data: `export const x${i} = ${i};\n` })),
            { name: 'big.bin', data: randomBytes(3 * 1024 * 1024) },
          ])
        ).subarray(0, -1024),
        rawFile('../late'),
        END,
      ]),
    entry: '../late',
  },
].map((c) => ({ ...c, status: 422, code: 'unsafe_entry' }));

const badArchives: Case[] = [
  { title: 'a tar cut off mid-entry', tar: async () => (await packTar([{ name: 'a.txt', data: 'x'.repeat(2000) }])).subarray(0, 1300) },
  { title: 'a tar cut off between entries (no end-of-archive block)', tar: () => rawFile('a.txt', 'complete entry') },
  { title: 'bytes that are not a tar', tar: () => randomBytes(4096) },
  { title: 'an empty body', tar: () => Buffer.alloc(0) },
  {
    title: 'a corrupt gzip',
    tar: async () => {
      const gz = gzipSync(await packTar([{ name: 'a.txt', data: randomBytes(20_000).toString('hex') }]));
      for (let i = 40; i < gz.length - 20; i += 97) gz[i] = gz[i]! ^ 0xff;
      return gz;
    },
    headers: { 'content-type': 'application/gzip' },
  },
  {
    title: 'a truncated gzip',
    tar: async () => {
      const gz = gzipSync(await packTar([{ name: 'a.txt', data: randomBytes(20_000).toString('hex') }]));
      return gz.subarray(0, gz.length >> 1);
    },
    headers: { 'content-type': 'application/gzip' },
  },
  { title: 'a plain tar declared as gzip', tar: () => tarOf(ok), headers: { 'content-type': 'application/gzip' } },
  { title: 'a gzip declared as a plain tar', tar: () => gzipSync(tarOf(ok)) },
].map((c) => ({ ...c, status: 400, code: 'bad_archive' }));

describe('refused uploads leave nothing behind', () => {
  let s: StoreServer;
  let n = 0;
  before(async () => {
    s = await startStoreServer();
  });
  after(() => s.destroy());

  for (const c of [...unsafe, ...badArchives]) {
    it(`${c.status} ${c.code}: ${c.title}`, async () => {
      const sha = SHA(++n);
      const r = await put(s.url, `acme/api/${sha}`, await c.tar(), c.headers);
      assert.equal(r.status, c.status, JSON.stringify(r.body));
      assert.equal(r.body.error, c.code);
      if (c.entry !== undefined) assert.equal(r.body.entry, c.entry);
      assert.equal(typeof r.body.message, 'string');
      assert.ok(!String(r.body.message).includes(s.dataDir), 'no host path in the message');
      assert.equal(s.store.get({ org: 'acme', repo: 'api', sha }), undefined);
      assertNothingStored(s.dataDir);
    });
  }
});

describe('a bad key or media type is refused before the body is read', () => {
  let s: StoreServer;
  before(async () => {
    s = await startStoreServer();
  });
  after(() => s.destroy());

  const cases: { path: string; code: string; status: number; headers?: Record<string, string> }[] = [
    { path: 'acme/api/main', code: 'bad_sha', status: 400 },
    { path: 'acme/api/refs%2Fheads%2Fmain', code: 'bad_sha', status: 400 },
    { path: `acme/api/${'A'.repeat(40)}`, code: 'bad_sha', status: 400 },
    { path: `acme/api/${'a'.repeat(39)}`, code: 'bad_sha', status: 400 },
    { path: `acme/api/${'a'.repeat(41)}`, code: 'bad_sha', status: 400 },
    { path: `acme/api/${'a'.repeat(63)}`, code: 'bad_sha', status: 400 },
    { path: `acme/api/${'g'.repeat(40)}`, code: 'bad_sha', status: 400 },
    { path: `-acme/api/${SHA(1)}`, code: 'bad_name', status: 400 },
    { path: `_acme/api/${SHA(1)}`, code: 'bad_name', status: 400 },
    { path: `acme/re%24po/${SHA(1)}`, code: 'bad_name', status: 400 },
    { path: `acme/a%20b/${SHA(1)}`, code: 'bad_name', status: 400 },
    { path: `acme/api/${SHA(1)}`, code: 'unsupported_media_type', status: 415, headers: { 'content-type': 'text/plain' } },
    { path: `acme/api/${SHA(1)}`, code: 'unsupported_media_type', status: 415, headers: { 'content-type': 'application/json' } },
    { path: `acme/api/${SHA(1)}`, code: 'unsupported_media_type', status: 415, headers: { 'content-type': 'application/zip' } },
    { path: `acme/api/${SHA(1)}`, code: 'unsupported_media_type', status: 415, headers: {} },
    { path: `acme/api/${SHA(1)}`, code: 'unsupported_media_type', status: 415, headers: { 'content-type': 'application/x-tar', 'content-encoding': 'br' } },
  ];
  for (const c of cases) {
    it(`${c.status} ${c.code}: PUT /v1/roots/${c.path.slice(0, 60)} ${JSON.stringify(c.headers ?? {})}`, async () => {
      // The body never ends: an answer proves the route did not wait to read it.
      const body = hangingBody([tarOf(ok)]);
      try {
        const r = await put(s.url, c.path, body, c.headers);
        assert.equal(r.status, c.status, JSON.stringify(r.body));
        assert.equal(r.body.error, c.code);
      } finally {
        body.destroy();
      }
      assert.equal((await s.metrics.uploadBytes.get()).values[0]?.value ?? 0, 0, 'no body byte reached the store');
      assertNothingStored(s.dataDir);
    });
  }
});

describe('limits', () => {
  let s: StoreServer;
  let n = 0;
  let stored = '';
  before(async () => {
    s = await startStoreServer({ env: { LSPD_MAX_FILE_BYTES: '1000', LSPD_MAX_TREE_BYTES: '3000', LSPD_MAX_TREE_FILES: '10' } });
  });
  after(() => s.destroy());

  const cases = [
    { title: 'one file over the single-file limit', entries: [{ name: 'big', data: 'x'.repeat(1001) }], limit: 'file_bytes' },
    { title: 'files over the tree-bytes limit', entries: [0, 1, 2, 3].map((i) => ({ name: `f${i}`, data: 'x'.repeat(1000) })), limit: 'tree_bytes' },
    { title: 'more entries than the file limit', entries: Array.from({ length: 11 }, (_, i) => ({ name: `f${i}`, data: '' })), limit: 'tree_files' },
    { title: 'implied directories count as entries', entries: [{ name: 'a/b/c/d/e/f/g/h/i/j/k', data: '' }], limit: 'tree_files' },
  ];
  for (const c of cases) {
    it(`413 too_large: ${c.title}`, async () => {
      const sha = SHA(++n);
      const r = await put(s.url, `acme/api/${sha}`, await packTar(c.entries));
      assert.equal(r.status, 413, JSON.stringify(r.body));
      assert.equal(r.body.error, 'too_large');
      assert.equal(r.body.limit, c.limit);
      assertNothingStored(s.dataDir);
    });
  }

  it('exactly at the limits is accepted', async () => {
    const entries = [0, 1, 2].map((i) => ({ name: `d/f${i}`, data: 'x'.repeat(1000) }));
    stored = `roots/acme/api/${SHA(++n)}`;
    const r = await put(s.url, `acme/api/${SHA(n)}`, await packTar(entries));
    assert.equal(r.status, 201, JSON.stringify(r.body));
    assert.equal(r.body.bytes, 3000);
  });

  it('413: a gzip of endless zero blocks is cut off at the bound on archive size', async () => {
    // All zeros is a valid (empty) tar, so only the bound stops it: the tree limits
    // plus header room plus 64 MiB of slack. 80 MiB of zeros gzip to about 80 KB.
    const r = await put(s.url, `acme/api/${SHA(++n)}`, gzipSync(Buffer.alloc(80 * 1024 * 1024)), { 'content-type': 'application/gzip' });
    assert.equal(r.status, 413, JSON.stringify(r.body));
    assert.equal(r.body.error, 'too_large');
    assertNothingStored(s.dataDir, [stored]);
  });

  it('an oversize file is refused from its header, before its data arrives', async () => {
    // Only the header is ever sent; the 413 cannot have waited for the data.
    const body = hangingBody([rawHeader({ name: 'huge.bin', size: 10 * 1024 * 1024 })]);
    try {
      const r = await put(s.url, `acme/api/${SHA(++n)}`, body);
      assert.equal(r.status, 413);
      assert.equal(r.body.limit, 'file_bytes');
    } finally {
      body.destroy();
    }
    assertNothingStored(s.dataDir, [stored]);
  });
});
