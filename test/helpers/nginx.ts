// nginx from Debian in front of lspd replicas, for tests and benches: the
// configuration of images/nginx/lspd.conf as it is, in a temp prefix, as a
// foreground process on a loopback port. `setReplicas` plays the Kubernetes
// endpoints controller: it writes the upstream list and reloads (`nginx -s
// reload`), and resolves once the old worker is gone, so no request after it
// meets the old list. Also: a reader of the configuration's directives, the
// access log (one JSON line per request), and nginx's consistent hash computed
// the way ngx_http_upstream_hash_module computes it, to say where a key goes.
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, connect, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { crc32 } from 'node:zlib';
import { projectDir, tempDir } from './daemon.js';

export const NGINX_BIN = '/usr/sbin/nginx';
export const NGINX_CONF = join(projectDir, 'images', 'nginx', 'lspd.conf');

// --- the configuration, read --------------------------------------------------

export interface Directive {
  name: string;
  args: string[];
  block?: Directive[];
}

/** nginx.conf syntax: directives, quoted strings, blocks; comments dropped. */
export function parseNginxConf(text: string): Directive[] {
  const tokens: string[] = [];
  const re = /#[^\n]*|"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)'|([{};])|([^\s{};"'#]+)/g;
  for (const m of text.matchAll(re)) {
    if (m[0].startsWith('#')) continue;
    tokens.push(m[1] ?? m[2] ?? m[3] ?? m[4]!);
  }
  let i = 0;
  const block = (): Directive[] => {
    const out: Directive[] = [];
    while (i < tokens.length) {
      if (tokens[i] === '}') {
        i++;
        return out;
      }
      const name = tokens[i++]!;
      const args: string[] = [];
      while (i < tokens.length && tokens[i] !== ';' && tokens[i] !== '{') args.push(tokens[i++]!);
      if (tokens[i++] === '{') out.push({ name, args, block: block() });
      else out.push({ name, args });
    }
    return out;
  };
  return block();
}

/** Every directive named `name`, at any depth, with the path of blocks above it. */
export function findDirectives(conf: Directive[], name: string, path: string[] = []): { d: Directive; path: string[] }[] {
  return conf.flatMap((d) => [
    ...(d.name === name ? [{ d, path }] : []),
    ...(d.block ? findDirectives(d.block, name, [...path, [d.name, ...d.args].join(' ')]) : []),
  ]);
}

/** The server-line parameters the configuration documents (max_fails, fail_timeout). */
export function serverParams(text = readFileSync(NGINX_CONF, 'utf8')): string {
  const m = /^#\s+server <address>:\d+ ([^;]+);$/m.exec(text);
  if (!m) throw new Error('images/nginx/lspd.conf documents no server line');
  return m[1]!;
}

// --- nginx's consistent hash ----------------------------------------------------

/**
 * Which of `servers` ("host:port", as written on the server lines) nginx's
 * `hash $key consistent` picks for `key`: ketama, 160 points per server of weight
 * 1, each point crc32(host "\0" port prev-point-LE32), the key's crc32 looked up
 * clockwise (ngx_http_upstream_init_chash / find_chash_point).
 */
export function chashPick(servers: readonly string[], key: string): string {
  return chashRing(servers).pick(key);
}

export function chashRing(servers: readonly string[]): { pick(key: string): string } {
  const points: { hash: number; server: string }[] = [];
  for (const server of servers) {
    const colon = server.lastIndexOf(':');
    const base = Buffer.from(`${server.slice(0, colon)}\0${server.slice(colon + 1)}`);
    let prev = 0;
    for (let j = 0; j < 160; j++) {
      const le = Buffer.alloc(4);
      le.writeUInt32LE(prev);
      prev = crc32(Buffer.concat([base, le]));
      points.push({ hash: prev, server });
    }
  }
  points.sort((a, b) => a.hash - b.hash);
  const uniq = points.filter((p, k) => k === 0 || p.hash !== points[k - 1]!.hash);
  return {
    pick(key: string) {
      const h = crc32(Buffer.from(key));
      let lo = 0;
      let hi = uniq.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (h > uniq[mid]!.hash) lo = mid + 1;
        else if (h < uniq[mid]!.hash) hi = mid;
        else return uniq[mid]!.server;
      }
      return uniq[lo % uniq.length]!.server;
    },
  };
}

// --- running it -----------------------------------------------------------------

/** The route key of the requests that mark a point in the access log. */
const MARK = 'lspd-log-mark/';

export interface AccessRecord {
  method: string;
  uri: string;
  status: number;
  route_key: string;
  /** Every replica tried, in order ("a, b" when the first failed). */
  upstream: string;
  upstream_status: string;
  request_time: number;
}

export interface Nginx {
  /** http://127.0.0.1:<port> */
  url: string;
  prefix: string;
  /** The upstream list now in force ("host:port" each). */
  replicas: string[];
  /** Write the upstream list and reload; resolves once only new workers run. */
  setReplicas(replicas: readonly string[]): Promise<void>;
  /** Every request answered so far (each one's line written: see the mark), marks left out. */
  accessLog(): Promise<AccessRecord[]>;
  errorLog(): string;
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

async function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const c = connect({ host: '127.0.0.1', port }, () => {
      c.destroy();
      resolve(true);
    });
    c.on('error', () => resolve(false));
  });
}

/** Pids of the processes whose parent is `ppid` (nginx's workers). */
function childrenOf(ppid: number): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      // pid (comm) state ppid ...: comm may hold spaces, so read after the last ')'.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[1]) === ppid) out.push(Number(name));
    } catch {
      /* gone meanwhile */
    }
  }
  return out;
}

async function waitFor(pred: () => boolean | Promise<boolean>, what: string, timeoutMs: number, detail: () => string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await pred())) {
    if (Date.now() > end) throw new Error(`nginx: timed out waiting for ${what}: ${detail()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** nginx with images/nginx/lspd.conf in a fresh prefix, in front of `replicas`. */
export async function startNginx(replicas: readonly string[], opts: { timeoutMs?: number } = {}): Promise<Nginx> {
  const timeoutMs = opts.timeoutMs ?? 20_000;
  const prefix = tempDir('lspd-nginx-');
  // Workers run as nobody when the master is root: they must reach the prefix.
  chmodSync(prefix, 0o755);
  for (const d of ['logs', 'tmp']) mkdirSync(join(prefix, d));
  const conf = join(prefix, 'nginx.conf');
  copyFileSync(NGINX_CONF, conf);
  const params = serverParams();
  const writeUpstreams = (list: readonly string[]) => writeFileSync(join(prefix, 'lspd-upstreams.conf'), list.map((r) => `server ${r} ${params};\n`).join(''));
  const base = ['-p', prefix + '/', '-c', conf, '-e', join(prefix, 'logs', 'error.log')];
  const errorLog = () => (existsSync(join(prefix, 'logs', 'error.log')) ? readFileSync(join(prefix, 'logs', 'error.log'), 'utf8') : '');

  writeUpstreams(replicas);
  let child: ChildProcess | undefined;
  let port = 0;
  for (let attempt = 0; ; attempt++) {
    port = await freePort();
    writeFileSync(join(prefix, 'lspd-listen.conf'), `listen 127.0.0.1:${port};\n`);
    const c = spawn(NGINX_BIN, [...base, '-g', 'daemon off;'], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    c.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    let exited = false;
    c.once('exit', () => (exited = true));
    await waitFor(
      async () => exited || (await canConnect(port)),
      'its port',
      timeoutMs,
      () => stderr + errorLog(),
    );
    if (!exited) {
      child = c;
      break;
    }
    // Another process took the port between freePort and nginx's bind: try another.
    if (attempt >= 3 || !/Address already in use/.test(stderr + errorLog())) throw new Error(`nginx did not start: ${stderr}${errorLog()}`);
  }
  const proc = child!;
  const master = proc.pid!;
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  let current = [...replicas];
  let marks = 0;
  // Whole lines only: nginx may be writing the last one while we read (a CI run parsed half a line).
  const readLog = (): AccessRecord[] => {
    const text = existsSync(join(prefix, 'logs', 'access.log')) ? readFileSync(join(prefix, 'logs', 'access.log'), 'utf8') : '';
    return text
      .slice(0, text.lastIndexOf('\n') + 1)
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as AccessRecord);
  };

  return {
    url: `http://127.0.0.1:${port}`,
    prefix,
    get replicas() {
      return [...current];
    },
    async setReplicas(list) {
      const old = childrenOf(master);
      writeUpstreams(list);
      await promisify(execFile)(NGINX_BIN, [...base, '-s', 'reload']);
      await waitFor(
        () => {
          const now = childrenOf(master);
          return now.length > 0 && !now.some((p) => old.includes(p));
        },
        'the reload',
        timeoutMs,
        errorLog,
      );
      current = [...list];
    },
    async accessLog() {
      // nginx writes a request's line after its last byte is sent, so a client can
      // hold the answer before the line exists. A mark request through the same
      // (single) worker is logged only after every request before it: wait for it.
      const mark = `${MARK}${++marks}`;
      await fetch(`http://127.0.0.1:${port}/livez`, { headers: { 'x-lspd-route-key': mark } }).then((r) => r.arrayBuffer());
      await waitFor(() => readLog().some((r) => r.route_key === mark), 'its access log', timeoutMs, errorLog);
      return readLog().filter((r) => !r.route_key.startsWith(MARK));
    },
    errorLog,
    async stop() {
      proc.kill('SIGQUIT'); // graceful: finish what is in flight
      const t = setTimeout(() => proc.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(t);
      rmSync(prefix, { recursive: true, force: true });
    },
  };
}
