// The one pino root. Modules take `log.child({ mod })`; sessions add
// `{ root, server, pid }`. Data goes in the object, the message stays constant,
// and source text is never logged. Authorization headers are redacted.
import pino, { type Logger } from 'pino';

export type { Logger };

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { pid: process.pid },
      redact: { paths: ['req.headers.authorization', 'headers.authorization', 'token'], censor: '[redacted]' },
    },
    destination,
  );
}
