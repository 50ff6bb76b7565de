// The egress proxy's answers keep a fetch's failures apart, on real sockets (no
// jail needed: the proxy is the daemon's): 403 for a host that is not allowed, 502
// for an allowed one that refuses the connection, 504 for one that accepts none in
// time (a listener whose accept queue is full drops the SYN, as a dead host does).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createLogger } from '../src/log.js';
import { closedPort, stalledPort, type StalledPort } from './helpers/ports.js';
import { createEgressProxy, type EgressListener, type EgressProxy } from '../src/jail/egress-proxy.js';

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

describe('egress proxy answers', () => {
  let dir: string;
  let proxy: EgressProxy;
  let listener: EgressListener;
  let stalled: StalledPort;
  let refused: number;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'lspd-egress-'));
    stalled = await stalledPort();
    refused = await closedPort();
    proxy = createEgressProxy({
      allow: [`127.0.0.1:${refused}`, `127.0.0.1:${stalled.port}`],
      log: createLogger('silent'),
      connectTimeoutMs: 500,
    });
    listener = await proxy.listen(join(dir, 'e.sock'), 'acme');
  });
  after(async () => {
    stalled?.close();
    await listener?.close();
    await proxy?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('403 not allowed, 502 refused, 504 no connection in time: three different answers', async () => {
    assert.match(await ask(listener.socketPath, 'CONNECT 127.0.0.1:1 HTTP/1.1'), /^HTTP\/1\.1 403 /);
    assert.match(await ask(listener.socketPath, `CONNECT 127.0.0.1:${refused} HTTP/1.1`), /^HTTP\/1\.1 502 /);
    assert.match(await ask(listener.socketPath, `GET http://127.0.0.1:${refused}/simple/x/ HTTP/1.1\r\nHost: x`), /^HTTP\/1\.1 502 /);
    assert.match(await ask(listener.socketPath, `CONNECT 127.0.0.1:${stalled.port} HTTP/1.1`), /^HTTP\/1\.1 504 /);
  });
});
