// A caller that hangs up cancels its work the same way a deadline does (DESIGN.md
// "Bounds"). The one test for a hang-up, for every route that answers a query.
import type { FastifyReply } from 'fastify';

/** Aborts when the caller hangs up before the answer was sent. */
export function clientSignal(reply: FastifyReply): AbortSignal {
  const ac = new AbortController();
  onHangUp(reply, () => ac.abort(new Error('client disconnected')));
  return ac.signal;
}

/** Calls `gone` when the caller hangs up before the answer was sent (no signal of its own: see util/deadline.ts hangUpDeadline). */
export function onHangUp(reply: FastifyReply, gone: () => void): void {
  // `close` on the response fires on both completion and hang-up; only an unfinished response is a hang-up.
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) gone();
  });
}
