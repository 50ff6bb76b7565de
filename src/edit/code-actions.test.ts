// renderCodeActions over answers shaped as servers send them (the real servers are in
// test/edit-code-actions.test.ts): `only` applied even when a server ignores it, the
// action and resolve bounds counted, commands never run, every refusal said.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { renderCodeActions, MAX_ACTIONS, MAX_RESOLVES, type ActionContext } from './code-actions.js';
import { EditError } from './text-edits.js';

const r = { start: { line: 0, character: 0 }, end: { line: 0, character: 1 } };
const edit = (text: string) => ({ changes: { 'file:///src/a.ts': [{ range: r, newText: text }] } });

function ctx(over: Partial<ActionContext> = {}): ActionContext & { resolved: unknown[]; rendered: unknown[] } {
  const resolved: unknown[] = [];
  const rendered: unknown[] = [];
  return {
    resolved,
    rendered,
    canResolve: true,
    resolve: async (a) => {
      resolved.push(a);
      return { ...a, edit: edit(`resolved ${String(a.title)}`) };
    },
    render: async (e) => {
      rendered.push(e);
      return { patch: `patch of ${JSON.stringify(e)}`, files: [] };
    },
    fixes: async (ds) => ds.map(() => ({ message: 'm', range: r })),
    scrub: (t) => t.replaceAll('/home/ci', '<path>'),
    ...over,
  };
}

test('kinds: `only` keeps a kind and its sub-kinds, whatever the server sent; bare Commands and kindless actions are not kept by it', async () => {
  const raw = [
    { title: 'a', kind: 'quickfix', edit: edit('a') },
    { title: 'b', kind: 'refactor.extract.function', edit: edit('b') },
    { title: 'c', kind: 'refactorx', edit: edit('c') },
    { title: 'd', command: 'x.run' },
    { title: 'e', edit: edit('e') },
  ];
  const c = ctx({ only: ['refactor', 'quickfix'] });
  const got = await renderCodeActions(raw, c);
  assert.deepEqual(
    got.actions.map((a) => a.title),
    ['a', 'b'],
  );
  assert.equal(got.total, 2);
  const all = await renderCodeActions(raw, ctx());
  assert.deepEqual(
    all.actions.map((a) => [a.title, a.kind, a.command ?? null, a.command_only ?? null]),
    [
      ['a', 'quickfix', null, null],
      ['b', 'refactor.extract.function', null, null],
      ['c', 'refactorx', null, null],
      ['d', '', 'x.run', true],
      ['e', '', null, null],
    ],
  );
  assert.match(all.actions[3]!.patch_unavailable!, /server command \(x\.run\)/);
});

test('bounds: at most MAX_ACTIONS kept, at most MAX_RESOLVES resolved, the rest say why', async () => {
  const raw = Array.from({ length: MAX_ACTIONS + 10 }, (_, i) => ({ title: `t${i}`, kind: 'refactor', data: i }));
  const c = ctx();
  const got = await renderCodeActions(raw, c);
  assert.equal(got.actions.length, MAX_ACTIONS);
  assert.equal(got.total, MAX_ACTIONS + 10);
  assert.equal(got.truncated, true);
  assert.equal(c.resolved.length, MAX_RESOLVES);
  assert.equal(got.actions.filter((a) => a.patch).length, MAX_RESOLVES);
  assert.match(got.actions[MAX_RESOLVES]!.patch_unavailable!, new RegExp(`at most ${MAX_RESOLVES}`));
  // A server that resolves nothing: no resolve request is sent.
  const none = ctx({ canResolve: false });
  const plain = await renderCodeActions(raw.slice(0, 3), none);
  assert.equal(none.resolved.length, 0);
  assert.ok(plain.actions.every((a) => a.patch_unavailable === 'the server sent no edit for it'));
});

test('refusals: a resolve the server fails, an edit the renderer refuses, a disabled action; server text scrubbed and cut', async () => {
  const err = Object.assign(new Error('cannot at /home/ci/x'), { code: -32603 });
  const c = ctx({
    resolve: async () => {
      throw err;
    },
    render: async () => {
      throw new EditError('the edit would change 1 file(s) outside the uploaded tree (lib@1); lspd edits the tree only');
    },
  });
  const got = await renderCodeActions(
    [
      { title: 'r', kind: 'refactor', data: 1 },
      { title: 'o', kind: 'quickfix', edit: edit('o'), diagnostics: [{ range: r, message: 'x' }] },
      { title: 'd', kind: 'refactor', disabled: { reason: 'nothing selected' } },
      { title: `/home/ci/${'x'.repeat(2000)}`, kind: 'k'.repeat(500), command: { title: 't', command: 'c' } },
    ],
    c,
  );
  assert.equal(got.actions[0]!.patch_unavailable, 'the server could not resolve its edit: cannot at <path>/x');
  assert.match(got.actions[1]!.patch_unavailable!, /outside the uploaded tree/);
  assert.deepEqual(got.actions[1]!.fixes, [{ message: 'm', range: r }]);
  assert.equal(got.actions[2]!.patch_unavailable, 'the server disabled this action here: nothing selected');
  assert.ok(got.actions[3]!.title.startsWith('<path>/x') && Buffer.byteLength(got.actions[3]!.title) <= 512);
  assert.ok(Buffer.byteLength(got.actions[3]!.kind) <= 128);
  // An error that is not the server's (lspd's own, a deadline) is not turned into a listing.
  await assert.rejects(
    renderCodeActions(
      [{ title: 'r', kind: 'refactor' }],
      ctx({
        resolve: async () => {
          throw new Error('aborted');
        },
      }),
    ),
    /aborted/,
  );
});

test("a client-side edit command's argument is the edit: rendered, not run", async () => {
  const c = ctx({ editCommands: ['_typescript.applyWorkspaceEdit'], canResolve: false });
  const got = await renderCodeActions(
    [
      { title: 'Add import', kind: 'quickfix', command: { title: '', command: '_typescript.applyWorkspaceEdit', arguments: [edit('import')] } },
      { title: 'Other', kind: 'quickfix', command: { title: '', command: '_typescript.other', arguments: [edit('x')] } },
    ],
    c,
  );
  assert.ok(got.actions[0]!.patch?.includes('import'));
  assert.equal(got.actions[0]!.command, undefined);
  assert.equal(got.actions[1]!.patch, undefined);
  assert.equal(got.actions[1]!.command_only, true);
  assert.equal(c.rendered.length, 1);
});

test('junk is dropped: non-objects, actions without a title, a non-array answer', async () => {
  assert.deepEqual(await renderCodeActions(null, ctx()), { actions: [], total: 0, truncated: false });
  const got = await renderCodeActions([null, 3, { kind: 'quickfix' }, { title: 7 }, { title: 'ok', kind: 4 }, { title: 'fine', edit: edit('f') }], ctx());
  assert.deepEqual(
    got.actions.map((a) => a.title),
    ['fine'],
  );
});
