import { test } from 'node:test';
import assert from 'node:assert/strict';
import { outlineFit } from './outline.js';

test('outlineFit: the name, or a selector of that one class, id or placeholder, is exact', () => {
  assert.equal(outlineFit('card-shadow', 'card-shadow'), 'exact');
  assert.equal(outlineFit('$spacing', '$spacing'), 'exact');
  assert.equal(outlineFit('@primary', '@primary'), 'exact');
  assert.equal(outlineFit('button', '.button'), 'exact');
  assert.equal(outlineFit('main', '#main'), 'exact');
  assert.equal(outlineFit('plain', '%plain'), 'exact');
});

test('outlineFit: a selector naming the class among others is loose; a longer class or a tag is no fit', () => {
  assert.equal(outlineFit('button', '.button:hover'), 'loose');
  assert.equal(outlineFit('button', 'nav .button'), 'loose');
  assert.equal(outlineFit('button', '.card.button'), 'loose');
  assert.equal(outlineFit('button', '.button-primary'), undefined);
  assert.equal(outlineFit('button', '.big_button'), undefined);
  assert.equal(outlineFit('button', 'button'), 'exact');
  assert.equal(outlineFit('button', 'a button'), undefined);
  assert.equal(outlineFit('spacing', '$spacing'), undefined);
});
