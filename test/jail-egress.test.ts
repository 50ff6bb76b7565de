// The egress proxy as a pipe: a few MiB through a CONNECT tunnel, both ways, many
// times, every byte arriving. The failure this pins: the proxy destroyed one socket
// the moment the other closed, dropping what was still buffered for it (a 3 MiB
// tarball from a registry that closes right after its last byte failed 3 runs in
// 10). Each direction's end must travel to the other side after its data.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEgressProxy, type EgressProxy } from '../src/jail/egress-proxy.js';
import { createLogger } from '../src/log.js';

const PAYLOAD = randomBytes(3 * 1024 * 1024 + 12345);
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

let dir: string;
let proxy: EgressProxy;
let socketPath: string;
let registry: Server;
let authority: string;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'lspd-egress-'));
  // A "registry": on connect, the first byte says what to do.
  //   'g' → write the payload and close at once (end right after the last write)
  //   'p' → read until the client's end, answer with the sha256 of what came, close
  registry = createServer({ allowHalfOpen: true }, (s) => {
    s.once('data', (first: Buffer) => {
      if (first[0] === 0x67) {
        s.end(PAYLOAD);
        return;
      }
      const chunks: Buffer[] = [first.subarray(1)];
      s.on('data', (c: Buffer) => chunks.push(c));
      s.on('end', () => s.end(sha(Buffer.concat(chunks))));
    });
    s.on('error', () => {});
  });
  await new Promise<void>((r) => registry.listen(0, '127.0.0.1', () => r()));
  authority = `127.0.0.1:${(registry.address() as AddressInfo).port}`;
  proxy = createEgressProxy({ allow: [authority], log: createLogger('silent') });
  socketPath = (await proxy.listen(join(dir, 'egress.sock'), 'acme')).socketPath;
});

after(async () => {
  await proxy?.close();
  await new Promise<void>((r) => registry.close(() => r()));
  rmSync(dir, { recursive: true, force: true });
});

/** Open a CONNECT tunnel through the proxy; resolves once it is established, with the bytes after the proxy's answer. */
function tunnel(): Promise<{ sock: Socket; early: Buffer }> {
  return new Promise((resolve, reject) => {
    const sock = connect({ path: socketPath, allowHalfOpen: true });
    let buf = Buffer.alloc(0);
    sock.once('error', reject);
    const onData = (c: Buffer) => {
      buf = Buffer.concat([buf, c]);
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      sock.off('data', onData);
      sock.pause();
      const head = buf.subarray(0, end).toString();
      if (!head.startsWith('HTTP/1.1 200')) return reject(new Error(head));
      resolve({ sock, early: buf.subarray(end + 4) });
    };
    sock.on('data', onData);
    sock.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`);
  });
}

function readAll(sock: Socket, early: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks = [early];
    sock.on('data', (c: Buffer) => chunks.push(c));
    sock.once('end', () => resolve(Buffer.concat(chunks)));
    sock.once('error', reject);
    sock.resume();
  });
}

test('a 3 MiB download whose server closes right after its last byte arrives whole, 10 times in a row', async () => {
  for (let i = 0; i < 10; i++) {
    const { sock, early } = await tunnel();
    sock.write('g');
    const got = await readAll(sock, early);
    sock.end();
    assert.equal(got.length, PAYLOAD.length, `run ${i}: ${got.length} of ${PAYLOAD.length} bytes`);
    assert.equal(sha(got), sha(PAYLOAD), `run ${i}`);
  }
});

test('a 3 MiB upload followed by the client half-closing still gets its answer, 10 times in a row', async () => {
  for (let i = 0; i < 10; i++) {
    const { sock, early } = await tunnel();
    sock.write('p');
    sock.end(PAYLOAD); // half-close: the answer must still come back
    const got = await readAll(sock, early);
    assert.equal(got.toString(), sha(PAYLOAD), `run ${i}`);
  }
});

test('a refused destination is answered, not cut', async () => {
  const sock = connect({ path: socketPath, allowHalfOpen: true });
  sock.write('CONNECT 127.0.0.1:9 HTTP/1.1\r\n\r\n');
  const got = await readAll(sock, Buffer.alloc(0));
  sock.end();
  assert.match(got.toString(), /^HTTP\/1\.1 403 Forbidden/);
});
