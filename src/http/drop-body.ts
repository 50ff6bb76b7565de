// After a refusal the client is usually still sending its body. Reading (and
// dropping) the rest lets it finish writing and read the answer, instead of
// meeting EPIPE or a reset; but only so much of it, for so long.
import type { IncomingMessage } from 'node:http';

/** Read and drop what is left of `raw`: 'ended' once it has all arrived, 'bound' when maxBytes or maxMs passed first. */
export function dropRest(raw: IncomingMessage, maxBytes: number, maxMs: number): Promise<'ended' | 'bound'> {
  if (raw.complete || raw.destroyed) return Promise.resolve('ended');
  return new Promise((resolve) => {
    let dropped = 0;
    const settle = (how: 'ended' | 'bound') => {
      clearTimeout(timer);
      raw.off('data', onData).off('end', onEnd).off('close', onEnd);
      resolve(how);
    };
    const onData = (chunk: Buffer) => {
      dropped += chunk.length;
      if (dropped > maxBytes) settle('bound');
    };
    const onEnd = () => settle('ended');
    const timer = setTimeout(() => settle('bound'), maxMs);
    timer.unref();
    raw.on('data', onData).on('end', onEnd).on('close', onEnd);
    raw.resume();
  });
}
