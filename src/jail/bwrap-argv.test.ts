// bwrap-argv is pure: these pin the confinement flags every jail gets, the
// per-phase differences, and the refusals of malformed input.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bwrapOptions, isJailPath, jailCommand, type BwrapPlan } from './bwrap-argv.js';
import { FETCH_PROXY_PORT, JAIL_EGRESS_SOCKET, JAIL_FORWARDER, JAIL_NODE_MODULES } from './layout.js';
import { phasePolicy, withSystemRoot, type HostLayout } from './policy.js';

const host: HostLayout = {
  projectDir: '/opt/proj',
  etcDir: '/data/jail/etc',
  egressSocket: '/data/jail/egress.sock',
  usrMerged: { bin: 'symlink', lib: 'symlink', lib64: 'symlink', lib32: 'dir' },
};

const plan = (over: Partial<BwrapPlan> = {}): BwrapPlan => ({
  policy: phasePolicy('serve', host),
  fds: { jsonStatus: 3, seccomp: 5 },
  binds: [],
  tmpBytes: 1024,
  env: {},
  cwd: '/home/lspd',
  ...over,
});

/** The values following each occurrence of `flag` (arity n). */
function after(a: string[], flag: string, n = 1): string[][] {
  const out: string[][] = [];
  a.forEach((x, i) => x === flag && out.push(a.slice(i + 1, i + 1 + n)));
  return out;
}

test('every jail gets the confinement flags that held in the issue', () => {
  for (const phase of ['serve', 'fetch'] as const) {
    const a = bwrapOptions(plan({ policy: phasePolicy(phase, host) }));
    for (const f of ['--unshare-all', '--unshare-user', '--disable-userns', '--die-with-parent', '--new-session', '--clearenv']) {
      assert.ok(a.includes(f), `${phase} ${f}`);
    }
    assert.deepEqual(after(a, '--cap-drop'), [['ALL']]);
    assert.deepEqual(after(a, '--seccomp'), [['5']]);
    assert.deepEqual(after(a, '--json-status-fd'), [['3']]);
    assert.deepEqual(after(a, '--proc'), [['/proc']]);
    assert.deepEqual(after(a, '--dev'), [['/dev']]);
    assert.ok(!a.includes('--share-net'), 'never the host network');
    assert.ok(!a.includes('--bind') && !a.includes('--dev-bind'), 'nothing writable from the host unless asked');
    // Both tmpfs are size-bounded: --size N --perms 0700 --tmpfs PATH.
    const tmpfs = after(a, '--tmpfs').map(([p]) => p);
    assert.deepEqual(tmpfs, ['/tmp', '/home/lspd']);
    for (const p of tmpfs) assert.deepEqual(a.slice(a.indexOf(p!) - 5, a.indexOf(p!)), ['--size', '1024', '--perms', '0700', '--tmpfs']);
    assert.deepEqual(after(a, '--ro-bind', 2)[0], ['/usr', '/usr']);
    assert.deepEqual(after(a, '--symlink', 2), [
      ['usr/bin', '/bin'],
      ['usr/lib', '/lib'],
      ['usr/lib64', '/lib64'],
    ]);
    assert.deepEqual(
      after(a, '--ro-bind-try', 2).find(([h]) => h === '/lib32'),
      ['/lib32', '/lib32'],
    );
  }
});

test('SERVE sees the project node_modules and no proxy; FETCH sees the proxy socket and CA certs, not node_modules', () => {
  const serve = bwrapOptions(plan());
  const fetch = bwrapOptions(plan({ policy: phasePolicy('fetch', host) }));
  const roTargets = (a: string[]) => [...after(a, '--ro-bind', 2), ...after(a, '--ro-bind-try', 2)].map(([, at]) => at);
  assert.ok(roTargets(serve).includes(JAIL_NODE_MODULES));
  assert.ok(!roTargets(serve).includes(JAIL_EGRESS_SOCKET));
  assert.ok(!roTargets(fetch).includes(JAIL_NODE_MODULES));
  assert.ok(roTargets(fetch).includes(JAIL_EGRESS_SOCKET));
  assert.ok(roTargets(fetch).includes('/etc/ssl'));
  // As little of /etc as works: nothing of the host's accounts.
  const etc = (a: string[]) => [...after(a, '--ro-bind', 2), ...after(a, '--ro-bind-try', 2)].filter(([, at]) => at!.startsWith('/etc/'));
  for (const [h, at] of etc(serve)) if (at === '/etc/passwd' || at === '/etc/group') assert.ok(h!.startsWith('/data/jail/etc/'), at);
  assert.deepEqual(
    etc(serve)
      .map(([, at]) => at)
      .sort(),
    ['/etc/group', '/etc/hosts', '/etc/ld.so.cache', '/etc/passwd'],
  );
  const env = (a: string[]) => Object.fromEntries(after(a, '--setenv', 2));
  assert.equal(env(serve).HTTPS_PROXY, undefined);
  assert.equal(env(fetch).HTTPS_PROXY, `http://127.0.0.1:${FETCH_PROXY_PORT}`);
});

test('the tree is bound by fd, and binds under it come after it (parents first)', () => {
  const a = bwrapOptions(
    plan({
      fds: { jsonStatus: 3, seccomp: 5, tree: 7 },
      treeAt: '/src',
      binds: [
        { host: '/d/ws/nm', at: '/src/ws/node_modules' },
        { host: '/d/go', at: '/deps/go' },
      ],
    }),
  );
  assert.deepEqual(after(a, '--ro-bind-fd', 2), [['7', '/src']]);
  const i = a.indexOf('--ro-bind-fd');
  const j = a.indexOf('/src/ws/node_modules');
  assert.ok(i < j, 'the tree is mounted before the bind inside it');
  assert.ok(!a.includes('/src') || a.indexOf('/src') === i + 2, 'the tree path is never bound by path');
  const byFd = bwrapOptions(plan({ binds: [{ host: '/d/go', at: '/deps/go', fd: 8 }] }));
  assert.deepEqual(after(byFd, '--ro-bind-fd', 2), [['8', '/deps/go']]);
  assert.ok(!byFd.includes('/d/go'), 'a bind by fd does not name its host path');
  assert.throws(() => bwrapOptions(plan({ binds: [{ host: '/d', at: '/deps', fd: 8, rw: true }] })));
});

test('the caller env is laid over the policy env; --chdir is explicit', () => {
  const a = bwrapOptions(plan({ env: { HOME: '/tmp', GOFLAGS: '-mod=mod' }, cwd: '/src' }));
  const env = Object.fromEntries(after(a, '--setenv', 2));
  assert.equal(env.HOME, '/tmp');
  assert.equal(env.GOFLAGS, '-mod=mod');
  assert.equal(env.PATH, '/usr/local/bin:/usr/bin:/bin');
  assert.deepEqual(after(a, '--chdir'), [['/src']]);
  assert.ok(a.indexOf('--clearenv') < a.indexOf('--setenv'));
});

test('malformed input is an invariant violation, not a jail', () => {
  assert.throws(() => bwrapOptions(plan({ env: { 'A=B': 'x' } })));
  assert.throws(() => bwrapOptions(plan({ env: { A: 'x\0y' } })));
  assert.throws(() => bwrapOptions(plan({ binds: [{ host: '/x', at: '/src/../etc' }] })));
  assert.throws(() => bwrapOptions(plan({ binds: [{ host: 'rel', at: '/deps' }] })));
  assert.throws(() => bwrapOptions(plan({ fds: { jsonStatus: 3, seccomp: 5, tree: 7 } })), 'a tree fd needs a target');
  assert.throws(() => bwrapOptions(plan({ treeAt: '/src' })), 'a tree target needs an fd');
  assert.throws(() => bwrapOptions(plan({ tmpBytes: 0 })));
  // Namespaces and mounts are policy data, and a policy with fewer namespaces is no jail.
  const serve = phasePolicy('serve', host);
  assert.throws(() => bwrapOptions(plan({ policy: { ...serve, namespaces: serve.namespaces.filter((n) => n !== 'net') } })), /net namespace/);
  assert.throws(() => bwrapOptions(plan({ policy: { ...serve, proc: 'proc' } })), /proc and dev/);
  for (const bad of ['', '/', 'src', '/src/', '/a/./b', '/a//b', '/a/../b']) assert.equal(isJailPath(bad), false, bad);
});

test('FETCH commands start behind the in-jail forwarder; SERVE commands run as given', () => {
  assert.deepEqual(jailCommand(phasePolicy('serve', host), ['/usr/bin/true']), ['/usr/bin/true']);
  assert.deepEqual(jailCommand(phasePolicy('fetch', host), ['/usr/bin/npm', 'ci']), [
    JAIL_FORWARDER,
    String(FETCH_PROXY_PORT),
    JAIL_EGRESS_SOCKET,
    '--',
    '/usr/bin/npm',
    'ci',
  ]);
  assert.throws(() => jailCommand(phasePolicy('serve', host), ['true']), /absolute/);
});

test('a system root replaces /usr and the linker cache, links the top-level dirs into it, and changes nothing else', () => {
  for (const phase of ['serve', 'fetch'] as const) {
    const base = bwrapOptions(plan({ policy: phasePolicy(phase, host) }));
    const rooted = bwrapOptions(plan({ policy: withSystemRoot(phasePolicy(phase, host), '/opt/lspd/debian13') }));
    const binds = (a: string[]) => [...after(a, '--ro-bind', 2), ...after(a, '--ro-bind-try', 2)];
    assert.deepEqual(
      binds(rooted).filter(([, at]) => at === '/usr' || at === '/etc/ld.so.cache'),
      [
        ['/opt/lspd/debian13/usr', '/usr'],
        ['/opt/lspd/debian13/etc/ld.so.cache', '/etc/ld.so.cache'],
      ],
    );
    // The host's /lib32 (a real dir here) is not bound: Debian 13 is merged-/usr.
    assert.ok(!binds(rooted).some(([, at]) => at === '/lib32'));
    assert.deepEqual(after(rooted, '--symlink', 2), [
      ['usr/bin', '/bin'],
      ['usr/sbin', '/sbin'],
      ['usr/lib', '/lib'],
      ['usr/lib64', '/lib64'],
    ]);
    // Everything else is the phase's own: flags, tmpfs, network, env, other binds.
    const rest = (a: string[]) => binds(a).filter(([, at]) => !['/usr', '/etc/ld.so.cache', '/lib32'].includes(at!));
    assert.deepEqual(rest(rooted), rest(base));
    const strip = (a: string[]) => a.filter((x) => !x.startsWith('/') && !x.startsWith('usr/'));
    assert.deepEqual(
      strip(rooted).filter((x) => x !== '--symlink' && x !== '--ro-bind-try' && x !== '--ro-bind'),
      strip(base).filter((x) => x !== '--symlink' && x !== '--ro-bind-try' && x !== '--ro-bind'),
    );
  }
});
