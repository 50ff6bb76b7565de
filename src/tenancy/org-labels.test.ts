// Per-org metric labels stay bounded: the first orgs seen keep theirs, later ones share one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OTHER_ORG, OrgLabels } from './org-labels.js';

test('the first max orgs keep their label for good; every later one is counted under _other', () => {
  const l = new OrgLabels(2);
  assert.deepEqual(
    ['a', 'b', 'c', 'a', 'd', 'b'].map((o) => l.of(o)),
    ['a', 'b', OTHER_ORG, 'a', OTHER_ORG, 'b'],
  );
  assert.equal(new OrgLabels(0).of('a'), OTHER_ORG);
  assert.match(OTHER_ORG, /^_/, 'no org name starts with _ (schemas.ts NAME_RE), so no org shares it');
});

test('fold: gauge readings summed per label, labels gone since the last reading read 0', () => {
  const l = new OrgLabels(1);
  const seen = new Set<string>();
  assert.deepEqual(
    [
      ...l.fold(
        new Map([
          ['a', 2],
          ['b', 3],
          ['c', 4],
        ]),
        seen,
      ),
    ],
    [
      ['a', 2],
      [OTHER_ORG, 7],
    ],
  );
  assert.deepEqual(
    [...l.fold(new Map([['c', 1]]), seen)],
    [
      [OTHER_ORG, 1],
      ['a', 0],
    ],
  );
  assert.deepEqual(
    new Map(l.fold(new Map(), seen)),
    new Map([
      ['a', 0],
      [OTHER_ORG, 0],
    ]),
  );
});
