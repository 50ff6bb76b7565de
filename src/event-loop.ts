// The daemon has one event loop, and every org's requests share it: work whose size a
// tree controls (its entries, its links) hands it back between slices.

/** Resolves on a later turn of the event loop, after the I/O callbacks waiting now. */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Items worked through between turns by the loops over a tree's entries (a few ms each). */
const ITEMS_PER_TURN = 4096;

/**
 * The pace of a loop over a tree's entries: call it once per item; it is true every
 * ITEMS_PER_TURN items, when the loop hands the event loop back (`await nextTurn()`).
 */
export function turnCounter(): () => boolean {
  let n = 0;
  return () => ++n % ITEMS_PER_TURN === 0;
}
