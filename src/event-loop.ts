// The daemon has one event loop, and every org's requests share it: work whose size a
// tree controls (its entries, its links) hands it back between slices.

/** Resolves on a later turn of the event loop, after the I/O callbacks waiting now. */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Items worked through between turns by the loops over a tree's entries (a few ms each). */
export const ITEMS_PER_TURN = 4096;
