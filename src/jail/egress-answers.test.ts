// The egress proxy's answers keep a fetch's failures apart, on real sockets (no
// jail needed: the proxy is the daemon's): 403 for a host that is not allowed, 502
// for an allowed one that refuses the connection, 504 for one that accepts none in
// time (a listener whose accept queue is full drops the SYN, as a dead host does).
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createLogger } from '../log.js';
import { createEgressProxy, type EgressListener, type EgressProxy } from './egress-proxy.js';

/** Send one proxy request head through the unix socket; the status line of the answer. */
function ask(socketPath: string, head: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const c = connect(socketPath);
    let buf = '';
    c.on('data', (d) => (buf += d.toString('latin1')));
    c.on('end', () => resolve(buf.split('\r\n')[0] ?? ''));
    c.on('error', reject);
    c.write(`${head}\r\n\r\n`);
  });
}

async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

describe('egress proxy answers', () => {
  let dir: string;
  let proxy: EgressProxy;
  let listener: EgressListener;
  let stalled: ChildProcess;
  let stalledPort: number;
  let refused: number;
  const fillers: Socket[] = [];
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'lspd-egress-'));
    // A listener that never accepts, with a backlog of 0 (Node's own servers always accept).
    stalled = spawn(
      'python3',
      ['-I', '-c', 'import socket,sys,time\ns=socket.socket()\ns.bind(("127.0.0.1",0))\ns.listen(0)\nprint(s.getsockname()[1],flush=True)\ntime.sleep(600)'],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    stalledPort = await new Promise<number>((resolve) => stalled.stdout!.once('data', (d: Buffer) => resolve(Number(d.toString().trim()))));
    // Fill its accept queue: past it the kernel drops new SYNs and a connect waits.
    for (let i = 0; i < 4; i++) {
      const s = connect(stalledPort, '127.0.0.1');
      s.on('error', () => undefined);
      fillers.push(s);
    }
    await new Promise((r) => setTimeout(r, 200));
    refused = await closedPort();
    proxy = createEgressProxy({
      allow: [`127.0.0.1:${refused}`, `127.0.0.1:${stalledPort}`],
      log: createLogger('silent'),
      connectTimeoutMs: 500,
    });
    listener = await proxy.listen(join(dir, 'e.sock'), 'acme');
  });
  after(async () => {
    for (const s of fillers) s.destroy();
    stalled?.kill();
    await listener?.close();
    await proxy?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('403 not allowed, 502 refused, 504 no connection in time: three different answers', async () => {
    assert.match(await ask(listener.socketPath, 'CONNECT 127.0.0.1:1 HTTP/1.1'), /^HTTP\/1\.1 403 /);
    assert.match(await ask(listener.socketPath, `CONNECT 127.0.0.1:${refused} HTTP/1.1`), /^HTTP\/1\.1 502 /);
    assert.match(await ask(listener.socketPath, `GET http://127.0.0.1:${refused}/simple/x/ HTTP/1.1\r\nHost: x`), /^HTTP\/1\.1 502 /);
    assert.match(await ask(listener.socketPath, `CONNECT 127.0.0.1:${stalledPort} HTTP/1.1`), /^HTTP\/1\.1 504 /);
  });
});
