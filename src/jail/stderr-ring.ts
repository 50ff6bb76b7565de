// A jailed process's stderr, bounded: the last `capacity` bytes are kept, older
// bytes dropped, so a chatty or hostile server can never grow the daemon's memory.
// The tail is scrubbed of host paths before anyone reads it (bwrap's own messages
// name host paths; a server may echo them).
export class StderrRing {
  readonly #capacity: number;
  #chunks: Buffer[] = [];
  #bytes = 0;
  #dropped = 0;

  constructor(capacity: number) {
    this.#capacity = Math.max(1, capacity);
  }

  push(chunk: Buffer): void {
    if (chunk.length >= this.#capacity) {
      this.#dropped += this.#bytes + chunk.length - this.#capacity;
      this.#chunks = [Buffer.from(chunk.subarray(chunk.length - this.#capacity))];
      this.#bytes = this.#capacity;
      return;
    }
    this.#chunks.push(chunk);
    this.#bytes += chunk.length;
    while (this.#bytes > this.#capacity) {
      const first = this.#chunks[0]!;
      const over = this.#bytes - this.#capacity;
      if (first.length <= over) {
        this.#chunks.shift();
        this.#bytes -= first.length;
        this.#dropped += first.length;
      } else {
        this.#chunks[0] = first.subarray(over);
        this.#bytes -= over;
        this.#dropped += over;
      }
    }
  }

  /** The kept bytes as text (a partial UTF-8 sequence at the cut becomes U+FFFD). */
  text(): string {
    const s = Buffer.concat(this.#chunks).toString('utf8');
    return this.#dropped > 0 ? `[${this.#dropped} earlier bytes dropped]\n${s}` : s;
  }
}

/**
 * Replace host paths with what the jail calls them (or a placeholder), in one pass
 * (a replacement is never rewritten again), longest path first, and only at a path
 * boundary: /root must not eat the start of /roots.
 */
export function makeScrubber(map: readonly (readonly [string, string])[]): (s: string) => string {
  const to = new Map<string, string>();
  for (const [host, at] of map) if (host.length > 1 && !to.has(host)) to.set(host, at);
  if (to.size === 0) return (s) => s;
  const alternatives = [...to.keys()].sort((a, b) => b.length - a.length).map((h) => h.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  const re = new RegExp(`(?:${alternatives.join('|')})(?![A-Za-z0-9._-])`, 'g');
  return (s) => s.replace(re, (m) => to.get(m) ?? m);
}
