import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isAppError } from '../errors.js';
import { UploadMemory } from './upload-memory.js';

const MiB = 1 << 20;
const refusal =
  (code: string, extra: Record<string, unknown> = {}) =>
  (e: unknown) =>
    isAppError(e) && e.code === code && Object.entries(extra).every(([k, v]) => e.extra[k] === v);

describe('UploadMemory', () => {
  it('charges in 1 MiB units as an upload grows, and gives them all back once', () => {
    const refused: string[] = [];
    const m = new UploadMemory(8 * MiB, 12, (org) => refused.push(org));
    const a = m.lease('a');
    a.need(1);
    assert.equal(m.heldBytes('a'), MiB);
    a.need(3 * MiB + 1);
    assert.equal(m.heldBytes('a'), 4 * MiB);
    a.need(2 * MiB); // never less than before
    assert.equal(m.heldBytes('a'), 4 * MiB);
    a.release();
    a.release();
    assert.equal(m.heldBytes('a'), 0);
    assert.deepEqual(refused, []);
  });

  it('refuses an org past its share (busy) and admits a newcomer from the reserve', () => {
    const refused: string[] = [];
    const m = new UploadMemory(8 * MiB, 12, (org) => refused.push(org));
    const a1 = m.lease('a');
    a1.need(5 * MiB);
    const a2 = m.lease('a');
    a2.need(2 * MiB); // alone: all but the reserve (7 of 8)
    assert.throws(() => a2.need(3 * MiB), refusal('busy'));
    const b = m.lease('b');
    b.need(MiB);
    assert.equal(m.heldBytes('b'), MiB);
    assert.deepEqual(refused, ['a']);
  });

  it('answers too_large for what no share could hold, whatever is free', () => {
    const m = new UploadMemory(8 * MiB, 12, () => {});
    assert.throws(() => m.lease('a').need(7 * MiB + 1), refusal('too_large', { limit: 'upload_memory' }));
    assert.equal(m.heldBytes('a'), 0, 'refused before taking anything');
  });
});
