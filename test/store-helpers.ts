// Shared by the store tests (their server is test/helpers/daemon.ts startStoreServer):
// tar builders (tar-stream's pack for ordinary archives, hand-made 512-byte headers
// for the hostile ones tar-stream would never write), and a walk of the data dir
// that proves nothing was left behind.
import assert from 'node:assert/strict';
import { readdirSync, type Dirent } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import tar from 'tar-stream';
import { request } from 'undici';

export const SHA = (n: number) => n.toString(16).padStart(40, '0');

export interface Answer {
  status: number;
  body: Record<string, unknown>;
}

/** PUT a tar to /v1/roots/acme/<repo>/<sha>. */
export async function put(
  url: string,
  path: string,
  body: Buffer | Readable,
  headers: Record<string, string> = { 'content-type': 'application/x-tar' },
): Promise<Answer> {
  const r = await request(`${url}/v1/roots/${path}`, { method: 'PUT', body, headers });
  const text = await r.body.text();
  return { status: r.statusCode, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

export async function call(url: string, method: 'GET' | 'DELETE', path: string): Promise<Answer> {
  const r = await request(`${url}${path}`, { method });
  const text = await r.body.text();
  return { status: r.statusCode, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

// --- building tars ----------------------------------------------------------

export interface PackEntry {
  name: string;
  type?: 'file' | 'directory' | 'symlink' | 'link' | 'character-device' | 'block-device' | 'fifo';
  data?: string | Buffer;
  linkname?: string;
  mode?: number;
}

/** An ordinary archive, written by tar-stream (PAX headers where names need them). */
export async function packTar(entries: PackEntry[]): Promise<Buffer> {
  const p = tar.pack();
  const chunks: Buffer[] = [];
  const done = (async () => {
    for await (const c of p) chunks.push(c as Buffer);
  })();
  for (const e of entries) {
    const type = e.type ?? 'file';
    const data = typeof e.data === 'string' ? Buffer.from(e.data) : e.data;
    const mode = e.mode ?? (type === 'directory' ? 0o755 : 0o644);
    await new Promise<void>((res, rej) =>
      p.entry(
        { name: e.name, type, mode, linkname: e.linkname, size: type === 'file' ? (data?.length ?? 0) : 0 },
        type === 'file' ? (data ?? Buffer.alloc(0)) : Buffer.alloc(0),
        (err) => (err ? rej(err) : res()),
      ),
    );
  }
  p.finalize();
  await done;
  return Buffer.concat(chunks);
}

const pad = (b: Buffer) => Buffer.concat([b, Buffer.alloc((512 - (b.length % 512)) % 512)]);

/**
 * One raw ustar header. `name` and `linkname` are written byte for byte (NUL,
 * control characters, `..`, anything), so tar-stream's own encoder never gets a
 * chance to refuse or rewrite them.
 */
export function rawHeader(h: { name: string | Buffer; type?: string; size?: number; linkname?: string; mode?: number }): Buffer {
  const b = Buffer.alloc(512);
  const name = typeof h.name === 'string' ? Buffer.from(h.name) : h.name;
  name.copy(b, 0, 0, Math.min(100, name.length));
  const oct = (off: number, len: number, v: number) => b.write(v.toString(8).padStart(len - 1, '0') + '\0', off, 'ascii');
  oct(100, 8, h.mode ?? 0o644);
  oct(108, 8, 0);
  oct(116, 8, 0);
  oct(124, 12, h.size ?? 0);
  oct(136, 12, 1_700_000_000);
  b.write('        ', 148, 'ascii');
  b.write(h.type ?? '0', 156, 'ascii');
  if (h.linkname) b.write(h.linkname, 157, 'utf8');
  b.write('ustar\u000000', 257, 'binary');
  let sum = 0;
  for (const byte of b) sum += byte;
  b.write(sum.toString(8).padStart(6, '0') + '\0 ', 148, 'ascii');
  return b;
}

/** A regular file: header and padded data. */
export function rawFile(name: string | Buffer, data: string | Buffer = 'x', type = '0'): Buffer {
  const d = typeof data === 'string' ? Buffer.from(data) : data;
  return Buffer.concat([rawHeader({ name, type, size: d.length }), pad(d)]);
}

/** A PAX extended header ('x', or 'g' for global) carrying `records`. */
export function paxHeader(records: Record<string, string>, type = 'x'): Buffer {
  let body = '';
  for (const [k, v] of Object.entries(records)) {
    const rest = ` ${k}=${v}\n`;
    let len = Buffer.byteLength(rest) + 1;
    while (String(len).length + Buffer.byteLength(rest) !== len) len = String(len).length + Buffer.byteLength(rest);
    body += `${len}${rest}`;
  }
  const data = Buffer.from(body);
  return Buffer.concat([rawHeader({ name: 'PaxHeaders/x', type, size: data.length }), pad(data)]);
}

/** A GNU long name ('L') or long link name ('K') header. */
export function gnuLong(value: string, type: 'L' | 'K'): Buffer {
  const data = Buffer.from(value + '\0');
  return Buffer.concat([rawHeader({ name: '././@LongLink', type, size: data.length }), pad(data)]);
}

export const END = Buffer.alloc(1024);

export function tarOf(...parts: Buffer[]): Buffer {
  return Buffer.concat([...parts, END]);
}

// --- what is on disk --------------------------------------------------------

/** Every path under the data dir's roots/, staging/ and trash/ (relative), directories included. */
export function walk(dataDir: string): string[] {
  const out: string[] = [];
  const visit = (rel: string) => {
    let entries: Dirent[];
    try {
      entries = readdirSync(join(dataDir, rel), { withFileTypes: true });
    } catch (err) {
      // A staging or trash dir the daemon's remover takes away while we walk it.
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw err;
    }
    for (const e of entries) {
      const p = join(rel, e.name);
      out.push(p);
      if (e.isDirectory()) visit(p);
    }
  };
  for (const top of ['roots', 'staging', 'trash']) visit(top);
  return out.sort();
}

/** Nothing stored anywhere: nothing under roots/ (but `except`), nothing in staging or trash. */
export function assertNothingStored(dataDir: string, except: string[] = []): void {
  const left = walk(dataDir).filter((p) => !except.some((x) => p === x || p.startsWith(x + '/') || x.startsWith(p + '/')));
  assert.deepEqual(left, [], `left behind: ${left.join(', ')}`);
}

export async function until(cond: () => boolean, timeoutMs = 10_000, what = 'condition'): Promise<void> {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > timeoutMs) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A body that yields `chunks` and then waits forever (until destroyed). */
export function hangingBody(chunks: Buffer[]): Readable {
  let i = 0;
  return new Readable({
    read() {
      if (i < chunks.length) this.push(chunks[i++]);
    },
  });
}
