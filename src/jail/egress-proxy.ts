// The FETCH jail's only way out. FETCH runs in its own network namespace (only lo);
// the daemon binds a unix socket of this proxy into the jail (one socket per jail,
// so every connection is known to be that jail's org's), and an in-jail forwarder
// (jail/forwarder.c) lets tools reach it as http://127.0.0.1:PORT.
// Connections are shared fairly between orgs (src/tenancy/fair-share.ts): one org's fetches
// cannot take all MAX_CONNECTIONS; past its share a connection is answered 503.
// The proxy speaks just enough HTTP/1.1 for npm, go and composer:
//   CONNECT host:port            → a TCP tunnel (what HTTPS through a proxy uses)
//   GET http://host[:port]/path  → plain-HTTP forwarding (origin-form request line)
// and only to the host:port pairs of config.fetchRegistries. The allowlist binds
// the TCP destination, not the HTTP content: once a connection is allowed, every
// byte on it goes to that destination and nowhere else, so pipelined requests or a
// forged Host header cannot redirect anything. Names are resolved by the daemon.
// RFC 9110 §9.3.6 (CONNECT), §7.1 (absolute-form targets).
import { chmodSync, lstatSync, unlinkSync } from 'node:fs';
import { connect, createServer, isIP, type Server, type Socket } from 'node:net';
import { FairShare, shareLimits } from '../tenancy/fair-share.js';
import type { Logger } from '../log.js';

const MAX_HEAD_BYTES = 16 * 1024;
const HEAD_TIMEOUT_MS = 30_000;
const IDLE_TIMEOUT_MS = 5 * 60_000;
/**
 * A registry that accepts no connection in this long is down for a fetch: the
 * fetchers' own retries (npm 2, pip 1) then fail their workspace in well under a
 * minute, with a reason, instead of minutes of waiting.
 */
const CONNECT_TIMEOUT_MS = 10_000;
/** Client connections (tunnels) open at once, all orgs together. */
const MAX_CONNECTIONS = 512;

/** "host:port" in canonical form: lower-case host, IPv6 in brackets; undefined if malformed. */
export function canonicalAuthority(host: string, port: string | number): string | undefined {
  const p = Number(port);
  if (!Number.isInteger(p) || p < 1 || p > 65535 || String(p) !== String(port).replace(/^0+(?=\d)/, '')) return undefined;
  let h = host.toLowerCase();
  if (h.startsWith('[') && h.endsWith(']')) h = h.slice(1, -1);
  if (h === '' || /[\s/@?#\\]/.test(h)) return undefined;
  if (isIP(h) === 6) return `[${h}]:${p}`;
  if (h.includes(':')) return undefined;
  return `${h.replace(/\.$/, '')}:${p}`;
}

/** Split "host:port" / "[v6]:port". */
export function splitAuthority(a: string): { host: string; port: string } | undefined {
  const m = /^(\[[^\]]+\]|[^:[\]]+):(\d{1,5})$/.exec(a);
  return m ? { host: m[1]!, port: m[2]! } : undefined;
}

export interface ParsedHead {
  method: string;
  /** Canonical host:port the request wants to reach. */
  authority: string;
  connect: boolean;
  /** For plain HTTP: the head to send upstream (origin-form, proxy headers dropped). */
  upstreamHead?: string;
}

/** Parse a request head (without the final CRLFCRLF). Returns a string saying why it is refused. */
export function parseProxyHead(head: string): ParsedHead | string {
  const lines = head.split('\r\n');
  const m = /^([A-Z]{1,16}) (\S+) HTTP\/1\.[01]$/.exec(lines[0] ?? '');
  if (!m) return 'malformed request line';
  const [, method, target] = m as unknown as [string, string, string];
  if (method === 'CONNECT') {
    const hp = splitAuthority(target);
    const authority = hp && canonicalAuthority(hp.host, hp.port);
    return authority ? { method, authority, connect: true } : 'malformed CONNECT target';
  }
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    return 'a proxy request needs an absolute http:// target';
  }
  if (url.protocol !== 'http:' || url.username || url.password) return 'only http:// targets are forwarded (https goes through CONNECT)';
  const authority = canonicalAuthority(url.hostname, url.port || '80');
  if (!authority) return 'malformed target host';
  const headers = lines.slice(1).filter((l) => !/^(proxy-connection|proxy-authorization|connection|keep-alive)\s*:/i.test(l));
  const upstreamHead = [`${method} ${url.pathname}${url.search} HTTP/1.1`, ...headers, 'Connection: close', '', ''].join('\r\n');
  return { method, authority, connect: false, upstreamHead };
}

export interface EgressProxyOptions {
  /** host:port pairs connections may go to (config.fetchRegistries). */
  allow: readonly string[];
  log: Logger;
  /** Per-org shares of the connections (src/tenancy/fair-share.ts); default: shares off. */
  share?: { orgCap: number; reservePercent: number };
  /** Told of every connection refused for load (metrics). */
  onRefused?: (org: string) => void;
  /** How long a registry may take to accept a connection before the client is answered 504 (CONNECT_TIMEOUT_MS). */
  connectTimeoutMs?: number;
}

/** One FETCH jail's way in to the proxy: a unix socket whose connections are counted for its org. */
export interface EgressListener {
  readonly socketPath: string;
  readonly org: string;
  /** Stop listening, drop this listener's connections, remove the socket file. Idempotent. */
  close(): Promise<void>;
}

export interface EgressProxy {
  /**
   * Listen on `socketPath` (mode 0666: jail uids must be able to connect) for the
   * jail of one fetch of `org`. Each FETCH jail gets its own socket, bound at
   * JAIL_EGRESS_SOCKET, so the proxy knows whose every connection is.
   */
  listen(socketPath: string, org: string): Promise<EgressListener>;
  close(): Promise<void>;
}

/** What one org needs to fetch at all: npm opens up to 15 sockets at once (its `maxsockets`). */
export const ORG_EGRESS_FLOOR = 16;

/** Forward to `allow` only; connections are shared fairly between orgs (MAX_CONNECTIONS in all). */
export function createEgressProxy(opts: EgressProxyOptions): EgressProxy {
  const allow = new Set<string>();
  for (const a of opts.allow) {
    const hp = splitAuthority(a.trim());
    const c = hp && canonicalAuthority(hp.host, hp.port);
    if (!c) throw new Error(`fetch registry ${JSON.stringify(a)} is not host:port`);
    allow.add(c);
  }
  const log = opts.log;
  const connectTimeoutMs = opts.connectTimeoutMs ?? CONNECT_TIMEOUT_MS;
  const share = new FairShare(shareLimits(MAX_CONNECTIONS, { orgCap: 0, reservePercent: 0, ...opts.share, floor: ORG_EGRESS_FLOOR }));
  const listeners = new Set<EgressListener>();

  const refuse = (client: Socket, status: string, why: string) => {
    // Read and drop what the client still sends, so it sees our FIN (and answer)
    // rather than a reset for unread data; the head timeout bounds the wait.
    client.resume();
    client.end(`HTTP/1.1 ${status}\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n${why}\n`);
  };

  /** Count the connection for its org, or answer 503 (all taken, or the org past its share). */
  const admit = (client: Socket, org: string): boolean => {
    const why = share.take(org);
    if (why === undefined) {
      client.once('close', () => share.give(org));
      return true;
    }
    opts.onRefused?.(org);
    log.warn({ org, why, held: share.held(org) }, 'egress refused for load');
    client.on('error', () => client.destroy());
    client.setTimeout(HEAD_TIMEOUT_MS, () => client.destroy());
    refuse(client, '503 Service Unavailable', why === 'full' ? 'too many connections' : 'too many connections for this org');
    return false;
  };

  /** One client connection of `org`, its sockets (and its upstream's) kept in `live`. */
  const handle = (client: Socket, org: string, live: Set<Socket>) => {
    if (!admit(client, org)) return;
    live.add(client);
    client.on('close', () => live.delete(client));
    client.on('error', () => client.destroy());
    client.setTimeout(HEAD_TIMEOUT_MS, () => client.destroy());
    let buf = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) {
        if (buf.length > MAX_HEAD_BYTES) refuse(client, '431 Request Header Fields Too Large', 'request head too large');
        return;
      }
      client.off('data', onData);
      client.pause();
      const head = buf.subarray(0, end).toString('latin1');
      const rest = buf.subarray(end + 4);
      const req = parseProxyHead(head);
      if (typeof req === 'string') {
        log.warn({ why: req }, 'egress refused');
        return refuse(client, '400 Bad Request', req);
      }
      if (!allow.has(req.authority)) {
        log.warn({ dest: req.authority, method: req.method }, 'egress refused');
        return refuse(client, '403 Forbidden', `${req.authority} is not an allowed fetch registry`);
      }
      const { host, port } = splitAuthority(req.authority)!;
      const upstream = connect({ host: host.replace(/^\[|\]$/g, ''), port: Number(port), allowHalfOpen: true });
      live.add(upstream);
      upstream.on('close', () => live.delete(upstream));
      // The status says which failure it was (a fetcher's hint reads it, src/fetch/registry-reason.ts):
      // 403 not allowed (above), 502 refused or unresolvable, 504 no answer in time.
      const onConnectTimeout = () => {
        log.warn({ dest: req.authority, ms: connectTimeoutMs }, 'egress upstream timed out');
        upstream.destroy();
        if (!client.destroyed) refuse(client, '504 Gateway Timeout', `${req.authority} did not answer within ${connectTimeoutMs / 1000} s`);
      };
      upstream.setTimeout(connectTimeoutMs, onConnectTimeout);
      const connectFailed = (err: Error) => {
        log.warn({ dest: req.authority, code: (err as NodeJS.ErrnoException).code }, 'egress upstream failed');
        if (!client.destroyed) refuse(client, '502 Bad Gateway', `cannot reach ${req.authority}`);
      };
      upstream.once('error', connectFailed);
      upstream.once('connect', () => {
        // From here an error is a broken tunnel, not an answer to give: see `both`.
        upstream.off('error', connectFailed);
        upstream.off('timeout', onConnectTimeout);
        log.info({ dest: req.authority, method: req.method }, 'egress allowed');
        if (req.connect) client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        else upstream.write(req.upstreamHead!, 'latin1');
        if (rest.length) upstream.write(rest);
        // pipe() ends the other side's write half once this side's read half has
        // ended and everything read was written; each socket closes itself when
        // both of its halves are done. Only an error or an idle timeout tears both
        // down at once (there is nothing left worth delivering then).
        const both = () => {
          client.destroy();
          upstream.destroy();
        };
        upstream.setTimeout(IDLE_TIMEOUT_MS, both);
        client.setTimeout(IDLE_TIMEOUT_MS, both);
        client.pipe(upstream);
        upstream.pipe(client);
        client.on('error', both);
        upstream.on('error', both);
        client.resume();
      });
    };
    client.on('data', onData);
  };

  return {
    async listen(socketPath: string, org: string): Promise<EgressListener> {
      const live = new Set<Socket>();
      // allowHalfOpen on both sockets: a tunnel carries each direction's end (FIN) to
      // the other side on its own, after the data before it. Closing a socket the moment
      // its peer closed dropped what was still buffered for it (a 3 MiB tarball failed 3
      // runs in 10 when the registry closed right after its last byte).
      const server: Server = createServer({ allowHalfOpen: true }, (client) => handle(client, org, live));
      // A socket file left by a daemon that was SIGKILLed would make listen fail.
      try {
        if (lstatSync(socketPath).isSocket()) unlinkSync(socketPath);
      } catch {
        /* absent */
      }
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(socketPath, () => resolve());
      });
      // connect(2) on a unix socket needs write permission on its inode; jails run as pool uids.
      chmodSync(socketPath, 0o666);
      let closing: Promise<void> | undefined;
      const listener: EgressListener = {
        socketPath,
        org,
        close: () =>
          (closing ??= (async () => {
            listeners.delete(listener);
            // The jail is gone (or never started): nothing on its connections is worth delivering.
            for (const sock of live) sock.destroy();
            await new Promise<void>((resolve) => server.close(() => resolve()));
            try {
              unlinkSync(socketPath);
            } catch {
              /* gone */
            }
          })()),
      };
      listeners.add(listener);
      return listener;
    },
    async close() {
      await Promise.all([...listeners].map((l) => l.close()));
    },
  };
}
