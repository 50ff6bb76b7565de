import { test } from 'node:test';
import assert from 'node:assert/strict';
import { keptBody, keptOf, sentBody, sentOf } from './answer-body.js';
import { capAnswerJson } from './answer/projection.js';

test('bytes cut from the measured JSON equal those serialised again', () => {
  const answers = [
    { op: 'definition', server: 'ts', locations: [{ path: 'ü/中.ts', range: {}, preview: 'const x = "\\u0000"' }], total: 1, incomplete: false, elapsed_ms: 0 },
    { op: 'hover', server: 'ts', contents: 'x'.repeat(300), incomplete: false, elapsed_ms: 0 },
  ];
  for (const a of answers) {
    // Cut by the cap (hover gains `truncated` after elapsed_ms) and not.
    for (const max of [1 << 20, 200]) {
      const { answer, json } = capAnswerJson(a, max);
      assert.deepEqual(keptOf(answer, json), keptBody(answer));
      for (const ms of [0, 12.3, 4000]) assert.deepEqual(sentOf(answer, json, ms), sentBody(keptBody(answer), ms));
      assert.equal(JSON.parse(sentOf(answer, json, 7).toString()).elapsed_ms, 7);
    }
  }
});
