// The daemon has one event loop, and every org's requests share it: work whose size a
// tree controls (its entries, its links) hands it back between slices.

/** Resolves on a later turn of the event loop, after the I/O callbacks waiting now. */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Items worked through between turns by the loops over a tree's entries. */
const ITEMS_PER_TURN = 4096;

/**
 * Bytes of names and targets worked through between turns, whatever the item count:
 * items are not all alike (issue 30's 20,000 links of 1.5 KB targets made 4,096 of
 * them 6 MB of strings: one slice of 40-55 ms of index decoding or link admission;
 * at 256 KiB a turn, compose's link admission still took 16 ms of CPU a slice, at
 * load 15, bench/shape-stall). A real tree's paths (~60 bytes) reach it in ~1,000 items.
 */
const BYTES_PER_TURN = 64 * 1024;

/**
 * The pace of a loop over a tree's entries: call it once per item, with the bytes of
 * names the item carries when they can be long; it is true every ITEMS_PER_TURN items
 * or BYTES_PER_TURN bytes, when the loop hands the event loop back (`await nextTurn()`).
 */
export function turnCounter(): (bytes?: number) => boolean {
  let n = 0;
  let b = 0;
  return (bytes = 0) => {
    b += bytes;
    if (++n < ITEMS_PER_TURN && b < BYTES_PER_TURN) return false;
    n = 0;
    b = 0;
    return true;
  };
}
