import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DeadlineSignal, asAbortSignal, deadline, hangUpDeadline, raceAbort, type Abortable } from './deadline.js';

const aborted = (s: Abortable) => new Promise<unknown>((resolve) => s.addEventListener('abort', () => resolve(s.reason), { once: true }));

describe('deadline', () => {
  it('aborts with a TimeoutError when the time is up', async () => {
    const dl = deadline(new AbortController().signal, 20);
    const reason = (await aborted(dl.signal)) as Error;
    assert.equal(reason.name, 'TimeoutError');
    dl.clear();
  });

  it('aborts with the outer reason when the outer signal aborts first, or already had', async () => {
    const outer = new AbortController();
    const dl = deadline(outer.signal, 60_000);
    const reason = aborted(dl.signal);
    outer.abort(new Error('client left'));
    assert.equal(((await reason) as Error).message, 'client left');
    dl.clear();
    const early = deadline(AbortSignal.abort(new Error('gone')), 60_000);
    assert.equal(early.signal.aborted, true);
    early.clear();
  });

  it('after clear, neither the timer nor the outer signal aborts it', async () => {
    const outer = new AbortController();
    const dl = deadline(outer.signal, 10);
    dl.clear();
    outer.abort();
    await new Promise((r) => setTimeout(r, 30));
    assert.equal(dl.signal.aborted, false);
  });
});

describe('DeadlineSignal (what a deadline gives: an AbortSignal for the abort event alone)', () => {
  it('aborts once, with its first reason; each listener runs once, in order; one added twice runs once', () => {
    const s = new DeadlineSignal();
    const ran: string[] = [];
    const a = () => ran.push('a');
    const obj = { handleEvent: () => ran.push('obj') };
    s.addEventListener('abort', a, { once: true });
    s.addEventListener('abort', obj);
    s.addEventListener('abort', a);
    s.abort(new Error('first'));
    s.abort(new Error('second'));
    assert.deepEqual(ran, ['a', 'obj']);
    assert.equal(s.aborted, true);
    assert.equal((s.reason as Error).message, 'first');
  });

  it('a removed listener never runs, nor one added after the abort (as with AbortSignal: check `aborted` first)', () => {
    const s = new DeadlineSignal();
    let ran = 0;
    const l = () => ran++;
    s.addEventListener('abort', l);
    s.removeEventListener('abort', l);
    s.removeEventListener('abort', () => {});
    s.abort('x');
    s.addEventListener('abort', l);
    assert.equal(ran, 0);
  });

  it('a listener an earlier one removes during the abort does not run, as with EventTarget', () => {
    const mine = new DeadlineSignal();
    const ctl = new AbortController();
    for (const [name, s, abort] of [
      ['DeadlineSignal', mine, () => mine.abort('x')],
      ['AbortSignal', ctl.signal, () => ctl.abort('x')],
    ] as const) {
      const ran: string[] = [];
      const second = () => ran.push('second');
      s.addEventListener('abort', () => {
        ran.push('first');
        s.removeEventListener('abort', second);
      });
      s.addEventListener('abort', second);
      abort();
      assert.deepEqual(ran, ['first'], name);
    }
  });

  it('behaves as an AbortController signal does beside it, for raceAbort and the real one it lends', async () => {
    const mine = new DeadlineSignal();
    const ctl = new AbortController();
    const p1 = raceAbort(new Promise(() => {}), mine);
    const p2 = raceAbort(new Promise(() => {}), ctl.signal);
    const real = asAbortSignal(mine);
    assert.equal(real instanceof AbortSignal, true);
    mine.abort(new Error('gone'));
    ctl.abort(new Error('gone'));
    await assert.rejects(p1, /gone/);
    await assert.rejects(p2, /gone/);
    assert.equal(real.aborted, true);
    assert.equal((real.reason as Error).message, 'gone');
    assert.equal(asAbortSignal(ctl.signal), ctl.signal);
  });

  it('hangUpDeadline: a hang-up aborts it and says so; the time running out aborts with a TimeoutError', async () => {
    let hangUp: () => void = () => {};
    const dl = hangUpDeadline((gone) => (hangUp = gone), 60_000);
    hangUp();
    assert.equal(dl.client.aborted, true);
    assert.equal((dl.signal.reason as Error).message, 'client disconnected');
    dl.clear();
    const late = hangUpDeadline(() => {}, 10);
    assert.equal(((await aborted(late.signal)) as Error).name, 'TimeoutError');
    assert.equal(late.client.aborted, false);
    late.clear();
  });
});
