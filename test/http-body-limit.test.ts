// A JSON body past LSPD_JSON_BODY_LIMIT_BYTES is answered 413 too_large, and the
// client reads that answer: the daemon reads and drops the rest of the body before
// it closes the connection, so a client still writing never meets EPIPE or a reset
// instead (the chaos fuzz met it three times in one CI run, on /mcp, /ask and
// /v1/code/lsp). The client here writes slowly, so the race is not left to luck.
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, it } from 'node:test';
import { startStoreServer, type StoreServer } from './helpers/daemon.js';

const LIMIT = 64 * 1024;

interface Reply {
  status: number;
  body: Record<string, unknown>;
}

/**
 * POST `size` bytes in 16 KiB pieces a few ms apart, with or without a
 * content-length. Settles only when the whole body was written *and* the answer
 * read: a write that fails (EPIPE, a reset) fails it, as it fails a client that
 * reports its own write error before the answer.
 */
function slowPost(url: string, path: string, size: number, lengthKnown: boolean): Promise<Reply> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const req = http.request({
      hostname,
      port,
      method: 'POST',
      path,
      headers: { 'content-type': 'application/json', ...(lengthKnown ? { 'content-length': String(size) } : {}) },
    });
    req.on('error', reject);
    const written = new Promise<void>((done) => {
      let sent = 0;
      const piece = Buffer.alloc(16 * 1024, 0x78);
      const next = () => {
        if (sent >= size) return void req.end(done);
        const n = Math.min(piece.length, size - sent);
        sent += n;
        req.write(piece.subarray(0, n), (err) => (err ? reject(err) : setTimeout(next, 2)));
      };
      next();
    });
    const answered = new Promise<Reply>((done) => {
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => done({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) }));
      });
    });
    Promise.all([written, answered]).then(([, r]) => resolve(r), reject);
  });
}

describe('a JSON body past the limit is answered 413, never cut off', () => {
  let s: StoreServer;
  before(async () => {
    s = await startStoreServer({ env: { LSPD_JSON_BODY_LIMIT_BYTES: String(LIMIT) } });
  });
  after(async () => {
    await s?.destroy();
  });

  for (const lengthKnown of [true, false]) {
    for (const path of ['/v1/code/lsp', '/ask', '/mcp']) {
      it(`${path}, ${lengthKnown ? 'with a content-length' : 'chunked'}: 413 too_large`, async () => {
        for (let i = 0; i < 3; i++) {
          const r = await slowPost(s.url, path, 8 * LIMIT, lengthKnown);
          assert.equal(r.status, 413, JSON.stringify(r.body));
          assert.equal(r.body.error, 'too_large');
        }
      });
    }
  }
});
