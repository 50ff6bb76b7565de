import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { deadline, hangUpDeadline } from './deadline.js';

const aborted = (s: AbortSignal) => new Promise<unknown>((resolve) => s.addEventListener('abort', () => resolve(s.reason), { once: true }));

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

describe('hangUpDeadline', () => {
  /** A caller whose hang-up the test triggers. */
  const caller = () => {
    let gone: (() => void) | undefined;
    return { onHangUp: (g: () => void) => (gone = g), hangUp: () => gone?.() };
  };

  it('aborts on the hang-up (saying so) or at the deadline', async () => {
    const c = caller();
    const dl = hangUpDeadline(c.onHangUp, 60_000);
    c.hangUp();
    assert.equal(dl.signal.aborted, true);
    assert.equal(dl.client.aborted, true);
    dl.clear();
    const timed = hangUpDeadline(caller().onHangUp, 10);
    assert.equal(((await aborted(timed.signal)) as Error).name, 'TimeoutError');
    assert.equal(timed.client.aborted, false);
    timed.clear();
  });

  it('a cleared query hands its signal on only unaborted and unheard, and its hang-up or timer never reaches the next', async () => {
    const a = caller();
    const first = hangUpDeadline(a.onHangUp, 10);
    first.clear();
    const b = caller();
    const second = hangUpDeadline(b.onHangUp, 60_000);
    assert.equal(second.signal, first.signal, 'reused');
    a.hangUp(); // the first caller hangs up after its answer: not the second's business
    await new Promise((r) => setTimeout(r, 30)); // past the first's deadline
    assert.equal(second.signal.aborted, false);
    assert.equal(second.client.aborted, false);

    const listener = () => {};
    second.signal.addEventListener('abort', listener);
    second.clear(); // still heard: never handed on
    const third = hangUpDeadline(caller().onHangUp, 60_000);
    assert.notEqual(third.signal, second.signal);
    const c = caller();
    const fourth = hangUpDeadline(c.onHangUp, 60_000);
    c.hangUp();
    fourth.clear(); // aborted: never handed on
    const fifth = hangUpDeadline(caller().onHangUp, 60_000);
    assert.notEqual(fifth.signal, fourth.signal);
    fifth.clear();
    third.clear();
    second.signal.removeEventListener('abort', listener);
  });
});
