// The bounded transport on its own: framing limits before allocation, garbage,
// request/response matching, cancellation, per-request budgets, server requests,
// the inbound queue, the write bound and batching (vscode-jsonrpc under our reader/writer).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough, Writable } from 'node:stream';
import { FrameError, FrameReader } from '../src/lsp/wire/frame-reader.js';
import { MAX_QUEUED_MESSAGES } from '../src/lsp/wire/bounded-reader.js';
import { WriteBlockedError } from '../src/lsp/wire/bounded-writer.js';
import { Budget, BudgetExceededError, ConnectionClosedError, LspConnection, METHOD_NOT_FOUND, ResponseError } from '../src/lsp/wire/transport.js';

const frame = (obj: unknown) => {
  const body = Buffer.from(JSON.stringify(obj));
  return Buffer.concat([Buffer.from(`Content-Length: ${body.length}\r\n\r\n`), body]);
};

function reader(max = 1024) {
  const msgs: unknown[] = [];
  const errs: FrameError[] = [];
  const r = new FrameReader({ maxFrameBytes: max, onMessage: (m) => msgs.push(m), onError: (e) => errs.push(e) });
  return { r, msgs, errs };
}

test('frames split anywhere are reassembled, several per chunk', () => {
  const { r, msgs, errs } = reader();
  const all = Buffer.concat([frame({ a: 1 }), frame({ b: 'é' }), frame({ c: [1, 2] })]);
  for (let i = 0; i < all.length; i += 3) r.push(all.subarray(i, i + 3));
  assert.deepEqual(msgs, [{ a: 1 }, { b: 'é' }, { c: [1, 2] }]);
  assert.equal(errs.length, 0);
});

test('a Content-Length over the limit is refused from the header alone', () => {
  const { r, msgs, errs } = reader(1024);
  r.push(Buffer.from('Content-Length: 1073741824\r\n\r\n{"jsonrpc"'));
  assert.equal(msgs.length, 0);
  assert.equal(errs.length, 1);
  assert.match(errs[0]!.message, /1073741824-byte frame, over the 1024-byte limit/);
  r.push(Buffer.from('more bytes are ignored'));
  assert.equal(errs.length, 1);
});

test('garbage on stdout is a protocol error, not an endless header scan', () => {
  const a = reader();
  a.r.push(Buffer.from('Debugger listening on ws://127.0.0.1:9229/\r\n\r\n'));
  assert.equal(a.errs.length, 1);
  const b = reader();
  b.r.push(Buffer.alloc(5000, 'x'));
  assert.equal(b.errs.length, 1);
  assert.match(b.errs[0]!.message, /longer than 4 KiB/);
  const c = reader();
  c.r.push(Buffer.from('Content-Length: 3\r\n\r\nabc'));
  assert.match(c.errs[0]!.message, /not JSON/);
  const d = reader();
  d.r.push(Buffer.from('Content-Length: -5\r\n\r\n'));
  assert.match(d.errs[0]!.message, /not a number/);
});

function pair(opts: { onRequest?: (m: string, p: unknown) => unknown } = {}) {
  const toServer = new PassThrough();
  const fromServer = new PassThrough();
  const sent: Record<string, unknown>[] = [];
  const sr = new FrameReader({ maxFrameBytes: 1 << 20, onMessage: (m) => sent.push(m as Record<string, unknown>), onError: () => {} });
  toServer.on('data', (d: Buffer) => sr.push(d));
  const notes: string[] = [];
  let closedWith: Error | undefined | null = null;
  const conn = new LspConnection({
    input: fromServer,
    output: toServer,
    maxFrameBytes: 1 << 20,
    onNotification: (m) => notes.push(m),
    ...(opts.onRequest ? { onRequest: opts.onRequest } : {}),
    onClose: (e) => (closedWith = e),
  });
  const reply = (obj: unknown) => fromServer.write(frame(obj));
  return { conn, sent, notes, reply, fromServer, closed: () => closedWith };
}

const tick = () => new Promise((r) => setImmediate(r));
/** The library dispatches one inbound message per event-loop turn: wait for what it sends. */
async function until(ok: () => boolean, turns = 1000): Promise<void> {
  for (let i = 0; i < turns && !ok(); i++) await tick();
  assert.ok(ok(), 'never happened');
}

test('requests match responses by id; errors become ResponseError; shutdown carries no params', async () => {
  const { conn, sent, reply } = pair();
  const a = conn.request('textDocument/hover', { x: 1 });
  const b = conn.request('shutdown');
  await tick();
  // The ids are the connection's: read them off the wire.
  const [ia, ib] = [sent[0]!.id, sent[1]!.id];
  assert.notEqual(ia, ib);
  assert.deepEqual(sent[0], { jsonrpc: '2.0', id: ia, method: 'textDocument/hover', params: { x: 1 } });
  assert.deepEqual(sent[1], { jsonrpc: '2.0', id: ib, method: 'shutdown' });
  assert.ok(!('params' in sent[1]!));
  reply({ jsonrpc: '2.0', id: ib, result: null });
  reply({ jsonrpc: '2.0', id: ia, error: { code: -32603, message: 'boom' } });
  assert.equal(await b, null);
  await assert.rejects(a, (e: unknown) => e instanceof ResponseError && e.code === -32603);
});

test('abort sends $/cancelRequest; an unanswered cancel is reported', async () => {
  const { conn, sent } = pair();
  const ac = new AbortController();
  let unanswered = false;
  const p = conn.request('textDocument/references', {}, { signal: ac.signal, cancelGraceMs: 30, onUnanswered: () => (unanswered = true) });
  ac.abort(new Error('deadline'));
  await assert.rejects(p, /deadline/);
  await tick();
  assert.deepEqual(sent.at(-1), { jsonrpc: '2.0', method: '$/cancelRequest', params: { id: sent[0]!.id } });
  await new Promise((r) => setTimeout(r, 60));
  assert.equal(unanswered, true);
});

test('a cancelled request that is answered in time is not reported', async () => {
  const { conn, sent, reply } = pair();
  const ac = new AbortController();
  let unanswered = false;
  const p = conn.request('x', {}, { signal: ac.signal, cancelGraceMs: 50, onUnanswered: () => (unanswered = true) });
  ac.abort(new Error('deadline'));
  await assert.rejects(p);
  await tick();
  reply({ jsonrpc: '2.0', id: sent[0]!.id, error: { code: -32800, message: 'cancelled' } });
  await new Promise((r) => setTimeout(r, 80));
  assert.equal(unanswered, false);
});

test('a notification flood trips the budget of the waiting request', async () => {
  const { conn, reply } = pair();
  const p = conn.request('x', {}, { budget: new Budget(64, 1 << 20) });
  for (let i = 0; i < 100; i++) reply({ jsonrpc: '2.0', method: 'window/logMessage', params: { type: 3, message: 'x' } });
  await assert.rejects(p, BudgetExceededError);
});

test('unsolicited messages are shared among concurrent waiters', async () => {
  const { conn, sent, reply } = pair();
  const ps = Array.from({ length: 10 }, () => conn.request('x', {}, { budget: new Budget(64, 1 << 20) }));
  // 300 notifications over 10 waiters is 30 each: under every budget.
  for (let i = 0; i < 300; i++) reply({ jsonrpc: '2.0', method: '$/progress', params: { token: i, value: { kind: 'end' } } });
  await tick();
  for (let i = 0; i < 10; i++) reply({ jsonrpc: '2.0', id: sent[i]!.id, result: i });
  assert.deepEqual(await Promise.all(ps), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
});

test('server requests are answered; unknown methods get MethodNotFound', async () => {
  const { sent, reply } = pair({ onRequest: (m) => (m === 'workspace/configuration' ? [null] : METHOD_NOT_FOUND) });
  reply({ jsonrpc: '2.0', id: 'a', method: 'workspace/configuration', params: { items: [{}] } });
  reply({ jsonrpc: '2.0', id: 'b', method: 'weird/thing' });
  await until(() => sent.length === 2);
  assert.deepEqual(sent[0], { jsonrpc: '2.0', id: 'a', result: [null] });
  assert.equal((sent[1]!.error as { code: number }).code, -32601);
});

test('a protocol violation closes the connection and fails what is pending', async () => {
  const { conn, fromServer, closed } = pair();
  const p = conn.request('x');
  fromServer.write('Content-Length: 99999999999\r\n\r\n');
  await assert.rejects(p, (e: unknown) => e instanceof ConnectionClosedError && /protocol violation/.test((e as Error).message));
  assert.ok(closed() instanceof FrameError);
  await assert.rejects(conn.request('y'), ConnectionClosedError);
});

test('output end closes the connection', async () => {
  const { conn, fromServer } = pair();
  const p = conn.request('x');
  fromServer.end();
  await assert.rejects(p, /closed its output/);
});

test('a log line on stdout fails at its newline, without waiting for 4 KiB', () => {
  const { r, errs, msgs } = reader();
  r.push(Buffer.from('Content-Length: 2\r\n\r\n{}Debugger listening on ws://127.0.0.1:9229/\n'));
  assert.deepEqual(msgs, [{}]);
  assert.equal(errs.length, 1);
  assert.match(errs[0]!.message, /not an LSP frame/);
  const ok = reader();
  for (const c of 'Content-Length: 2\r\n\r\n{}') ok.r.push(Buffer.from(c));
  assert.deepEqual(ok.msgs, [{}]);
  assert.equal(ok.errs.length, 0);
});

test('a response charges its own request in full: one over the byte budget fails it and cancels', async () => {
  const { conn, sent, reply } = pair();
  const p = conn.request('textDocument/references', {}, { budget: new Budget(64, 4096) });
  await until(() => sent.length > 0);
  const id = sent[0]!.id;
  reply({ jsonrpc: '2.0', id, result: [{ text: 'x'.repeat(8192) }] });
  await assert.rejects(p, (e: unknown) => e instanceof BudgetExceededError && /4096 bytes/.test((e as Error).message));
  await until(() => sent.some((m) => m.method === '$/cancelRequest'));
  assert.deepEqual(sent.at(-1), { jsonrpc: '2.0', method: '$/cancelRequest', params: { id } });
});

test('notifications go out without params when they have none; $/progress and others come in', async () => {
  const seen: [string, unknown][] = [];
  const toServer = new PassThrough();
  const fromServer = new PassThrough();
  const sent: Record<string, unknown>[] = [];
  const sr = new FrameReader({ maxFrameBytes: 1 << 20, onMessage: (m) => sent.push(m as Record<string, unknown>), onError: () => {} });
  toServer.on('data', (d: Buffer) => sr.push(d));
  const conn = new LspConnection({ input: fromServer, output: toServer, maxFrameBytes: 1 << 20, onNotification: (m, p) => seen.push([m, p]) });
  conn.notify('exit');
  conn.notify('initialized', {});
  await tick();
  assert.deepEqual(sent, [
    { jsonrpc: '2.0', method: 'exit' },
    { jsonrpc: '2.0', method: 'initialized', params: {} },
  ]);
  // the library takes $/progress for its own handlers first; it must still reach readiness
  fromServer.write(frame({ jsonrpc: '2.0', method: '$/progress', params: { token: 't', value: { kind: 'end' } } }));
  fromServer.write(frame({ jsonrpc: '2.0', method: 'window/logMessage', params: { type: 3, message: 'ready' } }));
  // a server cancelling its own request to us, well-formed or not, is dropped
  fromServer.write(frame({ jsonrpc: '2.0', method: '$/cancelRequest' }));
  fromServer.write(frame({ jsonrpc: '2.0', method: '$/cancelRequest', params: { id: 7 } }));
  fromServer.write(frame({ jsonrpc: '2.0', method: 'textDocument/publishDiagnostics', params: { uri: 'file:///a', diagnostics: [] } }));
  await until(() => seen.length === 3);
  assert.deepEqual(seen, [
    ['$/progress', { token: 't', value: { kind: 'end' } }],
    ['window/logMessage', { type: 3, message: 'ready' }],
    ['textDocument/publishDiagnostics', { uri: 'file:///a', diagnostics: [] }],
  ]);
  assert.equal(conn.closed, false);
});

test('a flood while nothing waits is read only as fast as it is handled: the inbound queue stays bounded', async () => {
  const { conn, notes, fromServer } = pair();
  const TOTAL = 20_000;
  const batch = Buffer.concat(Array.from({ length: 100 }, (_, i) => frame({ jsonrpc: '2.0', method: 'telemetry/event', params: { i } })));
  let refused = 0;
  for (let i = 0; i < TOTAL / 100; i++) if (!fromServer.write(batch)) refused++;
  await until(() => notes.length === TOTAL, 20 * TOTAL);
  assert.ok(conn.inboundHighWater <= MAX_QUEUED_MESSAGES + 100, `${conn.inboundHighWater} messages were queued at once`);
  assert.ok(refused > 0, 'the server side saw back-pressure');
  assert.equal(conn.closed, false);
});

test('a server that stops reading its input: the connection closes past the write bound and stops writing', async () => {
  const toServer = new PassThrough({ highWaterMark: 1024 }); // nobody reads it
  const fromServer = new PassThrough();
  let closedWith: Error | undefined;
  const conn = new LspConnection({
    input: fromServer,
    output: toServer,
    maxFrameBytes: 1 << 20,
    maxQueuedWriteBytes: 64 * 1024,
    onClose: (e) => (closedWith = e),
  });
  const big = { text: 'x'.repeat(16 * 1024) };
  const ps = Array.from({ length: 8 }, () => conn.request('textDocument/didSomething', big));
  for (const p of ps) await assert.rejects(p, (e: unknown) => e instanceof ConnectionClosedError && /stopped reading its input/.test((e as Error).message));
  assert.ok(closedWith instanceof WriteBlockedError);
  const queued = toServer.writableLength;
  assert.ok(queued < 64 * 1024 + 20 * 1024, `${queued} bytes queued`);
  conn.notify('textDocument/didOpen', big);
  await assert.rejects(conn.request('x', big), ConnectionClosedError);
  assert.equal(toServer.writableLength, queued, 'nothing is written after the bound');
});

test('an answer with neither result nor error fails its request as a ResponseError', async () => {
  const { conn, sent, reply } = pair();
  const p = conn.request('x', {});
  await until(() => sent.length > 0);
  reply({ jsonrpc: '2.0', id: sent[0]!.id });
  await assert.rejects(p, ResponseError);
  assert.equal(conn.closed, false);
});

test('a server repeating an id cannot stall the reader: the queue is drained by turns, not by a count', async () => {
  const { conn, sent, notes, reply, fromServer } = pair({ onRequest: () => null });
  const p = conn.request('x', {});
  await until(() => sent.length > 0);
  // 600 server requests under one id (the library keeps one of them) and a flood past the bound
  fromServer.write(
    Buffer.concat(Array.from({ length: 600 }, () => frame({ jsonrpc: '2.0', id: 'dup', method: 'window/workDoneProgress/create', params: { token: 1 } }))),
  );
  fromServer.write(Buffer.concat(Array.from({ length: 1000 }, (_, i) => frame({ jsonrpc: '2.0', method: 'telemetry/event', params: { i } }))));
  reply({ jsonrpc: '2.0', id: sent[0]!.id, result: 'answered' });
  assert.equal(await p, 'answered');
  await until(() => notes.length === 1000, 20_000);
});

test('a turn that wrote one frame waits one turn more and leaves with what that turn adds; one alone leaves then', async () => {
  const fromServer = new PassThrough();
  const writes: number[] = []; // frames per write
  const toServer = new Writable({
    write(chunk: Buffer, _enc, cb) {
      writes.push(1);
      cb();
    },
    writev(chunks, cb) {
      writes.push(chunks.length);
      cb();
    },
  });
  const conn = new LspConnection({ input: fromServer, output: toServer, maxFrameBytes: 1 << 20 });
  void conn.request('textDocument/hover', { i: 0 }).catch(() => {});
  await tick();
  assert.deepEqual(writes, [], 'a lone frame is held past its own turn');
  void conn.request('textDocument/hover', { i: 1 }).catch(() => {});
  await tick();
  assert.deepEqual(writes, [2], 'and leaves with the next turn’s frame, in one write');
  void conn.request('textDocument/hover', { i: 2 }).catch(() => {});
  await tick();
  assert.deepEqual(writes, [2]);
  await tick();
  assert.deepEqual(writes, [2, 1], 'a frame that nothing joins leaves one turn late, not later');
  conn.close();
});

test('requests made in one turn leave in one write, in order; their answers settle as they are read', async () => {
  const fromServer = new PassThrough();
  const writes: Buffer[][] = [];
  const toServer = new Writable({
    write(chunk: Buffer, _enc, cb) {
      writes.push([chunk]);
      cb();
    },
    writev(chunks, cb) {
      writes.push(chunks.map((c) => c.chunk as Buffer));
      cb();
    },
  });
  const conn = new LspConnection({ input: fromServer, output: toServer, maxFrameBytes: 1 << 20 });
  const ps = Array.from({ length: 20 }, (_, i) => conn.request('textDocument/hover', { i }));
  await tick();
  assert.equal(writes.length, 1, `${writes.length} writes for 20 requests made in one turn`);
  const sent: { id: number; params: { i: number } }[] = [];
  const r = new FrameReader({ maxFrameBytes: 1 << 20, onMessage: (m) => sent.push(m as (typeof sent)[0]), onError: assert.fail });
  r.push(Buffer.concat(writes[0]!));
  assert.deepEqual(
    sent.map((m) => m.params.i),
    Array.from({ length: 20 }, (_, i) => i),
  );
  // All twenty answers in one chunk, in reverse: each request gets its own, before the next turn.
  fromServer.write(Buffer.concat(sent.reverse().map((m) => frame({ jsonrpc: '2.0', id: m.id, result: { i: m.params.i } }))));
  let settled = 0;
  for (const p of ps) void p.then(() => settled++);
  await tick();
  assert.equal(settled, 20);
  assert.deepEqual(
    await Promise.all(ps),
    Array.from({ length: 20 }, (_, i) => ({ i })),
  );
  conn.close();
});
