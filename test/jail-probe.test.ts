// The seccomp filters and namespaces of both phases, proved by jail/probe.c running
// in real bwrap jails started through Jail.spawn: what each syscall answers in SERVE
// and in FETCH, the i386/x32 side doors, the read-only tree, private tmp, and FETCH's
// network (the host's loopback unreachable; an allowed registry reachable only
// through the daemon's egress proxy).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cannotJail, makeTree, probe, projectDir, startJail, type TestJail } from './helpers/jail.js';
import { TREE_AT } from '../src/jail/layout.js';

const skip = cannotJail();

const FAMILIES = ['inet', 'inet6', 'unix', 'netlink', 'packet', 'vsock'];
const PAIR_REFUSED = ['inet', 'inet6', 'netlink', 'packet', 'vsock'];
const ALWAYS_DENIED = ['ptrace-pid1', 'process_vm_readv', 'keyctl', 'add_key', 'request_key', 'bpf', 'perf_event_open', 'userfaultfd'];
const IO_URING = ['io_uring_setup', 'io_uring_enter', 'io_uring_register'];
const SIDE_DOORS = ['i386-socket', 'i386-socketcall', 'x32-socket'];
/** What each side door does on this host with no jail at all (the kernel's own answer). */
const unconfined = new Map<string, string>();

describe('jail probe', { skip }, () => {
  let t: TestJail;
  let registry: HttpServer;
  let registryPort: number;
  let hostOnly: Server;
  let hostOnlyPort: number;
  let abstractName: string;
  let abstract: Server;
  let tree: string;

  before(async () => {
    const out = execFileSync(join(projectDir, 'jail', 'build', 'lspd-probe'), SIDE_DOORS, { encoding: 'utf8' });
    for (const line of out.trim().split('\n')) {
      const { test, result } = JSON.parse(line) as { test: string; result: string };
      unconfined.set(test, result);
    }
    // A fake registry on the host's loopback, allowed by config; and a second
    // listener that is not allowed (a stand-in for the daemon, a sidecar, metadata).
    registry = createHttpServer((req, res) => res.end(`registry saw ${req.method} ${req.url}`));
    await new Promise<void>((r) => registry.listen(0, '127.0.0.1', r));
    registryPort = (registry.address() as AddressInfo).port;
    hostOnly = createServer((s) => s.end('host secret'));
    await new Promise<void>((r) => hostOnly.listen(0, '127.0.0.1', r));
    hostOnlyPort = (hostOnly.address() as AddressInfo).port;
    abstractName = `lspd-test-${process.pid}`;
    abstract = createServer((s) => s.end('abstract secret'));
    await new Promise<void>((r) => abstract.listen(`\0${abstractName}`, r));
    tree = makeTree({ 'README.md': 'tree\n' });
    t = await startJail({ LSPD_FETCH_REGISTRIES: `127.0.0.1:${registryPort}` });
    assert.deepEqual(t.jail.verdicts, { serve: { ok: true }, fetch: { ok: true } });
  });
  after(async () => {
    await t?.close();
    registry?.close();
    hostOnly?.close();
    abstract?.close();
  });

  test('SERVE: socket() is refused for every family', async () => {
    const r = await probe(
      t.jail,
      'serve',
      FAMILIES.map((f) => `socket:${f}`),
    );
    for (const f of FAMILIES) assert.equal(r.get(`socket:${f}`)?.result, 'EPERM', f);
  });

  test('SERVE: socketpair() only for AF_UNIX, compared on 32 bits', async () => {
    const r = await probe(t.jail, 'serve', ['socketpair:unix', 'socketpair:unix-hi', ...PAIR_REFUSED.map((f) => `socketpair:${f}`)]);
    assert.equal(r.get('socketpair:unix')?.result, 'ok');
    assert.equal(r.get('socketpair:unix-hi')?.result, 'ok', 'junk in the upper half of the register is not a family');
    for (const f of PAIR_REFUSED) assert.equal(r.get(`socketpair:${f}`)?.result, 'EPERM', f);
  });

  test('FETCH: sockets are given; socketpair left to the kernel', async () => {
    const r = await probe(t.jail, 'fetch', [...FAMILIES.map((f) => `socket:${f}`), 'socketpair:unix', 'socketpair:inet']);
    for (const f of ['inet', 'inet6', 'unix', 'netlink']) assert.equal(r.get(`socket:${f}`)?.result, 'ok', f);
    // No CAP_NET_RAW in the jail: the kernel (not the filter) refuses packet sockets.
    assert.match(r.get('socket:packet')!.result, /^(EPERM|EAFNOSUPPORT)$/);
    assert.match(r.get('socket:vsock')!.result, /^(ok|EAFNOSUPPORT)$/);
    assert.equal(r.get('socketpair:unix')?.result, 'ok');
    assert.equal(r.get('socketpair:inet')?.result, 'EOPNOTSUPP', 'the kernel answers, not the filter');
  });

  for (const phase of ['serve', 'fetch'] as const) {
    test(`${phase}: io_uring is ENOSYS`, async () => {
      const r = await probe(t.jail, phase, IO_URING);
      for (const s of IO_URING) assert.equal(r.get(s)?.result, 'ENOSYS', s);
    });

    test(`${phase}: the i386 and x32 ABIs kill the process`, async () => {
      const r = await probe(t.jail, phase, SIDE_DOORS);
      for (const s of SIDE_DOORS) {
        const host = unconfined.get(s)!;
        // A kernel that has the ABI switched off (ia32_emulation=0 makes int 0x80 a
        // SIGSEGV before any filter runs; x32 is ENOSYS without CONFIG_X86_X32_ABI)
        // closes the door itself: the jail must then answer what the host answers.
        // Where the host lets the call through, only the filter can stop it.
        const closedByKernel = host === 'killed:SIGSEGV' || host === 'ENOSYS';
        if (closedByKernel) assert.ok([host, 'killed:SIGSYS'].includes(r.get(s)!.result), `${s}: ${r.get(s)!.result}`);
        else assert.equal(r.get(s)?.result, 'killed:SIGSYS', `${s} (the host answers ${host})`);
      }
    });

    test(`${phase}: ptrace of PID 1 and the other introspection calls are refused`, async () => {
      const r = await probe(t.jail, phase, ALWAYS_DENIED);
      for (const s of ALWAYS_DENIED) assert.equal(r.get(s)?.result, 'EPERM', s);
    });

    test(`${phase}: the tree is read-only, and so is /usr`, async () => {
      const r = await probe(t.jail, phase, [`read:${TREE_AT}/README.md`, `write:${TREE_AT}/x`, `write:${TREE_AT}/README.md`, 'write:/usr/x'], {
        tree: { hostDir: tree, at: TREE_AT },
      });
      assert.equal(r.get(`read:${TREE_AT}/README.md`)?.result, 'ok');
      assert.equal(r.get(`write:${TREE_AT}/x`)?.result, 'EROFS');
      assert.equal(r.get(`write:${TREE_AT}/README.md`)?.result, 'EROFS');
      assert.equal(r.get('write:/usr/x')?.result, 'EROFS');
    });

    test(`${phase}: a jail cannot read another jail's tmp or HOME`, async () => {
      // Jail A writes markers and stays alive; jail B looks for them.
      const a = await t.jail.spawn({
        phase,
        argv: ['/bin/sh', '-c', 'echo secret > /tmp/marker && echo secret > /home/lspd/marker && echo ready && exec sleep 30'],
      });
      a.stdin.end();
      await new Promise<void>((res) => a.stdout.once('data', () => res()));
      const r = await probe(t.jail, phase, ['read:/tmp/marker', 'read:/home/lspd/marker', 'write:/tmp/mine']);
      assert.equal(r.get('read:/tmp/marker')?.result, 'ENOENT');
      assert.equal(r.get('read:/home/lspd/marker')?.result, 'ENOENT');
      assert.equal(r.get('write:/tmp/mine')?.result, 'ok', 'its own tmp is writable');
      // Nor through /proc: B's PID namespace does not hold A's processes.
      const b = await t.jail.spawn({ phase, argv: ['/bin/sh', '-c', 'for p in /proc/[0-9]*; do cat $p/comm; done'] });
      b.stdin.end();
      let out = '';
      b.stdout.on('data', (d: Buffer) => (out += d));
      await b.exited;
      assert.ok(out.includes('sh'), out);
      assert.ok(!out.split('\n').includes('sleep'), `jail A's sleep is visible to B: ${out}`);
      a.kill();
      await a.exited;
    });
  }

  for (const phase of ['serve', 'fetch'] as const) {
    test(`${phase}: the sandbox's PID 1 holds no daemon environment and no host path`, async () => {
      const j = await t.jail.spawn({
        phase,
        argv: ['/bin/sh', '-c', 'tr "\\0" "\\n" < /proc/1/environ; echo ---; tr "\\0" " " < /proc/1/cmdline; echo; env; hostname'],
        tree: { hostDir: tree, at: TREE_AT },
      });
      j.stdin.end();
      let out = '';
      j.stdout.on('data', (d: Buffer) => (out += d));
      await j.exited;
      const [environ, rest] = out.split('---\n');
      assert.equal(environ, '', 'bwrap was started with an empty environment');
      for (const host of [t.dataDir, tree, projectDir]) assert.ok(!out.includes(host), `${host} visible in: ${rest}`);
      assert.match(rest!, /^\/usr\/bin\/bwrap --args 4 -- /);
      assert.match(rest!, /\nlspd\n$/, 'its own hostname');
    });
  }

  test('FETCH: the host loopback and host abstract sockets are unreachable', async () => {
    const r = await probe(t.jail, 'fetch', [`connect:127.0.0.1:${hostOnlyPort}`, `connect:127.0.0.1:${registryPort}`, `connect-abstract:${abstractName}`]);
    assert.equal(r.get(`connect:127.0.0.1:${hostOnlyPort}`)?.result, 'ECONNREFUSED');
    assert.equal(r.get(`connect:127.0.0.1:${registryPort}`)?.result, 'ECONNREFUSED', 'not even an allowed registry without the proxy');
    assert.equal(r.get(`connect-abstract:${abstractName}`)?.result, 'ECONNREFUSED');
  });

  /** Run node inside the FETCH jail doing one request through HTTP_PROXY; return its output. */
  async function throughProxy(script: string): Promise<string> {
    const j = await t.jail.spawn({ phase: 'fetch', argv: ['/usr/bin/node', '-e', script] });
    j.stdin.end();
    let out = '';
    j.stdout.on('data', (d: Buffer) => (out += d));
    await j.exited;
    return out.trim();
  }

  const connectScript = (port: number) => `
    const http = require('node:http');
    const u = new URL(process.env.HTTPS_PROXY);
    const req = http.request({ host: u.hostname, port: u.port, method: 'CONNECT', path: '127.0.0.1:${port}' });
    req.on('connect', (res, sock) => {
      if (res.statusCode !== 200) { console.log('status ' + res.statusCode); sock.destroy(); return; }
      sock.write('GET /tunnel HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n');
      let b = ''; sock.on('data', (d) => b += d); sock.on('end', () => console.log(b.split('\\r\\n\\r\\n')[1]));
    });
    req.on('response', (res) => console.log('status ' + res.statusCode));
    req.on('error', (e) => console.log('error ' + e.code));
    req.end();`;

  test('FETCH: an allowed registry is reachable through the egress proxy (CONNECT)', async () => {
    assert.equal(await throughProxy(connectScript(registryPort)), 'registry saw GET /tunnel');
  });

  test('FETCH: the proxy refuses a destination that is not an allowed registry', async () => {
    assert.equal(await throughProxy(connectScript(hostOnlyPort)), 'status 403');
  });

  test('FETCH: plain-HTTP forwarding, allowlisted only', async () => {
    const get = (port: number) => `
      const http = require('node:http');
      const u = new URL(process.env.HTTP_PROXY);
      http.get({ host: u.hostname, port: u.port, path: 'http://127.0.0.1:${port}/pkg?x=1' }, (res) => {
        let b = ''; res.on('data', (d) => b += d); res.on('end', () => console.log(res.statusCode + ' ' + b.trim()));
      }).on('error', (e) => console.log('error ' + e.code));`;
    assert.equal(await throughProxy(get(registryPort)), '200 registry saw GET /pkg?x=1');
    assert.match(await throughProxy(get(hostOnlyPort)), /^403 /);
  });
});
