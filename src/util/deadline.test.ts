import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { deadline } from './deadline.js';

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
