// An answer as the bytes HTTP sends, serialised once. The result cache keeps an
// answer's JSON without `elapsed_ms` (the one field that differs between two askings):
// a hit is then a look-up and a splice of that field onto the kept bytes, never a
// parse and a second stringify. The kept Buffer is allocated on its own (not a slice
// of Node's shared 8 KiB pool slab, which it would keep alive uncharged).
// A fresh answer is serialised once too: the size cap measures it with `elapsed_ms: 0`
// as its last field (QueryService.finish), and what is kept and sent is cut from that
// JSON (`keptOf`, `sentOf`); a cut answer whose last field moved is stringified again.

/** How an answer measured by the size cap ends. */
const MEASURED_TAIL = ',"elapsed_ms":0}';

/** `answer`'s JSON without elapsed_ms, in a Buffer of its own. */
export function keptBody(answer: object): Buffer {
  const json = JSON.stringify({ ...answer, elapsed_ms: undefined });
  const b = Buffer.allocUnsafeSlow(Buffer.byteLength(json));
  b.write(json, 'utf8');
  return b;
}

/** The bytes to send: the kept JSON object with `"elapsed_ms"` as its last field. */
export function sentBody(kept: Buffer, elapsedMs: number): Buffer {
  const tail = `${kept.length > 2 ? ',' : ''}"elapsed_ms":${elapsedMs}}`;
  const out = Buffer.allocUnsafe(kept.length - 1 + Buffer.byteLength(tail));
  kept.copy(out, 0, 0, kept.length - 1);
  out.write(tail, kept.length - 1, 'latin1');
  return out;
}

/** The kept answer as an object again (for the services that read answers: /ask, /v1/diff, /v1/check). */
export function parseKept<T>(kept: Buffer, elapsedMs: number): T {
  return { ...(JSON.parse(kept.toString('utf8')) as T), elapsed_ms: elapsedMs };
}

/** The kept bytes of `answer` from `json`, its JSON as measured (`elapsed_ms: 0` last): the same bytes as keptBody's. */
export function keptOf(answer: object, json: string): Buffer {
  if (!json.endsWith(MEASURED_TAIL)) return keptBody(answer);
  const head = json.slice(0, -MEASURED_TAIL.length);
  const b = Buffer.allocUnsafeSlow(Buffer.byteLength(head) + 1);
  b.write(head, 0, 'utf8');
  b[b.length - 1] = 0x7d; // '}'
  return b;
}

/** The bytes to send of an answer nothing keeps: `json` (as measured) with its elapsed_ms; the same bytes as sentBody's. */
export function sentOf(answer: object, json: string, elapsedMs: number): Buffer {
  if (!json.endsWith(MEASURED_TAIL)) return sentBody(keptBody(answer), elapsedMs);
  return Buffer.from(`${json.slice(0, -2)}${elapsedMs}}`);
}
