// Caller binds: FETCH's read-write dependency dir (written as the jail's uid, handed
// back to root when the jail is gone), binds that land inside the read-only tree
// (mount points pre-created through the checked fd), and the refusals of links.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, statSync, symlinkSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { cannotJail, makeTree, runJailed as run, startJail, jailDir, type TestJail } from './helpers/jail.js';
import { TREE_AT } from '../src/jail/layout.js';

const skip = cannotJail();

describe('jail binds', { skip }, () => {
  let t: TestJail;
  before(async () => {
    t = await startJail();
  });
  after(async () => t?.close());

  test('FETCH writes its dependency dir as its own uid; afterwards everything belongs to root', async () => {
    const deps = jailDir('lspd-deps-');
    const r = await run(t, {
      phase: 'fetch',
      argv: ['/bin/sh', '-c', 'mkdir -p /deps/pkg && echo hi > /deps/pkg/f && id -u && touch /usr/x 2>/dev/null || echo ro'],
      binds: [{ host: deps, at: '/deps', rw: true }],
    });
    assert.equal(r.code, 0, r.err);
    assert.equal(r.out, '1000\nro\n');
    for (const p of [deps, join(deps, 'pkg'), join(deps, 'pkg', 'f')]) assert.equal(statSync(p).uid, 0, p);
  });

  test('a read-write bind is refused in SERVE', async () => {
    await assert.rejects(t.jail.spawn({ phase: 'serve', argv: ['/usr/bin/true'], binds: [{ host: jailDir(), at: '/deps', rw: true }] }));
  });

  test('a bind inside the read-only tree gets its mount point, and stays read-only', async () => {
    const tree = makeTree({ 'a.ts': 'x\n' });
    const nm = makeTree({ 'dep/index.js': 'module.exports = 1\n' });
    const r = await run(t, {
      phase: 'serve',
      argv: ['/bin/sh', '-c', `cat ${TREE_AT}/ws/node_modules/dep/index.js; touch ${TREE_AT}/ws/node_modules/x 2>/dev/null || echo ro`],
      tree: { hostDir: tree, at: TREE_AT },
      binds: [{ host: nm, at: `${TREE_AT}/ws/node_modules` }],
    });
    assert.equal(r.code, 0, r.err);
    assert.equal(r.out, 'module.exports = 1\nro\n');
    assert.ok(statSync(join(tree, 'ws', 'node_modules')).isDirectory(), 'created through the tree fd');
  });

  test('a tree whose mount point is a symlink is refused (it could point anywhere in the jail)', async () => {
    const tree = makeTree({ 'a.ts': 'x\n' });
    symlinkSync('/etc', join(tree, 'node_modules'));
    await assert.rejects(
      t.jail.spawn({
        phase: 'serve',
        argv: ['/usr/bin/true'],
        tree: { hostDir: tree, at: TREE_AT },
        binds: [{ host: jailDir(), at: `${TREE_AT}/node_modules` }],
      }),
      { code: 'server_unavailable' },
    );
  });

  test('a bind whose host path goes through a link is refused', async () => {
    const base = jailDir();
    mkdirSync(join(base, 'real'));
    symlinkSync('/etc', join(base, 'link'));
    await assert.rejects(t.jail.spawn({ phase: 'fetch', argv: ['/usr/bin/true'], binds: [{ host: join(base, 'link'), at: '/deps', rw: true }] }), {
      code: 'server_unavailable',
    });
    await assert.rejects(t.jail.spawn({ phase: 'serve', argv: ['/usr/bin/true'], binds: [{ host: join(base, 'link', 'ssl'), at: '/deps' }] }), {
      code: 'server_unavailable',
    });
    assert.ok(existsSync('/etc/passwd') && statSync('/etc').uid === 0, '/etc untouched');
  });

  test('a tree that is not the admitted inode is refused', async () => {
    const tree = makeTree({ 'a.ts': 'x\n' });
    const other = makeTree({ 'a.ts': 'y\n' });
    const st = statSync(other);
    await assert.rejects(
      t.jail.spawn({ phase: 'serve', argv: ['/usr/bin/true'], tree: { hostDir: tree, at: TREE_AT, expect: { dev: st.dev, ino: st.ino } } }),
      {
        code: 'server_unavailable',
      },
    );
  });
});
