// The fetch job's state machine: legal transitions, illegal ones throw, and the
// view a caller sees carries only what each state has.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FetchJob, initialSteps } from './fetch-job.js';
import { IllegalTransition } from '../util/state-machine.js';
import { LogTail } from './log-tail.js';

const steps = initialSteps([
  { ecosystem: 'go', dir: '', action: 'fetch' },
  { ecosystem: 'python', dir: 'py', action: 'refuse', reason: 'no pip' },
]);

describe('FetchJob', () => {
  it('goes queued → running → done, and the view follows', () => {
    const job = new FetchJob({ name: 'queued', steps, attempt: 1 });
    assert.equal(job.view().state, 'queued');
    job.to({ name: 'running', startedAt: 't0', abort: new AbortController(), steps, attempt: 1 });
    assert.equal(job.settled, false);
    job.to({ name: 'done', startedAt: 't0', finishedAt: 't1', bytes: 10, log: 'ok', mounts: [], steps, attempt: 1 });
    assert.equal(job.settled, true);
    assert.deepEqual(job.view(), { state: 'done', ecosystems: steps, log: 'ok', startedAt: 't0', finishedAt: 't1', bytes: 10 });
  });

  it('throws on an illegal transition', () => {
    const job = new FetchJob({ name: 'queued', steps, attempt: 1 });
    assert.throws(() => job.to({ name: 'done', startedAt: 't', finishedAt: 't', bytes: 0, log: '', mounts: [], steps, attempt: 1 }), IllegalTransition);
    const none = new FetchJob({ name: 'none' });
    assert.throws(() => none.to({ name: 'queued', steps, attempt: 1 }), IllegalTransition);
    const refused = new FetchJob({ name: 'refused', error: 'no', steps, attempt: 0 });
    assert.throws(() => refused.to({ name: 'cancelled' }), IllegalTransition);
  });

  it('views are copies: a caller cannot change a job', () => {
    const job = new FetchJob({ name: 'queued', steps, attempt: 1 });
    job.view().ecosystems![0]!.state = 'done';
    assert.equal(job.view().ecosystems![0]!.state, 'queued');
  });
});

describe('LogTail', () => {
  it('keeps the last bytes and replaces host dirs by labels', () => {
    const t = new LogTail(64, { '/data/roots/x/deps': '<deps>', '/data': '<data>' });
    for (let i = 0; i < 100; i++) t.line(`line ${i}`);
    t.line('error at /data/roots/x/deps/npm/top and /data/jail and /home/alice/x');
    const out = t.tail();
    assert.ok(Buffer.byteLength(out) <= 64 + 3, out);
    assert.match(out, /<deps>\/npm\/top/);
    assert.doesNotMatch(out, /\/data|alice/);
  });
});
