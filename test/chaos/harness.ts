// The chaos suite's load generator and its bookkeeping. Every request a scenario
// sends ends in exactly one bucket:
//   answered  2xx with a JSON body (or 204),
//   refused   4xx/5xx with a JSON body naming an `error` code (or a JSON-RPC error
//             object, for /mcp): a caller knows what happened and what to do,
//   cut       in flight while the test itself SIGKILLed the daemon (only inside a
//             window the test opens for that, never otherwise),
//   lost      anything else: no response, a reset, a non-JSON body, a 5xx without
//             a code, or no answer by the deadline. Lost must stay 0.
// Answers are also judged (`check`): a 200 that is wrong is counted as `wrong`.
// Every loop here is bounded by a request count and by wall time.
import { appendFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request, type Dispatcher } from 'undici';

export type Outcome = 'answered' | 'refused' | 'cut' | 'lost';

export interface Call {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string;
  /** JSON value (serialized), a raw Buffer, or nothing. */
  json?: unknown;
  raw?: Buffer;
  headers?: Record<string, string>;
  /** /mcp answers JSON-RPC: an `error` object there is a clear refusal. */
  jsonRpc?: boolean;
  /** Judge a 2xx body; false counts the answer as wrong. */
  check?: (body: Record<string, unknown>) => boolean;
}

export interface Result {
  outcome: Outcome;
  status: number;
  /** `<status> <error code>` for refusals. */
  code?: string;
  ms: number;
  body?: Record<string, unknown>;
  retryAfter?: string;
  why?: string;
  wrong?: boolean;
}

/** Counters of one scenario (or of a whole file, merged). */
export class Figures {
  sent = 0;
  answered = 0;
  refused = 0;
  cut = 0;
  lost = 0;
  wrong = 0;
  /** 503s without a Retry-After header (the API promises one). */
  noRetryAfter = 0;
  fuzzCases = 0;
  readonly byCode: Record<string, number> = {};
  readonly lostWhy: string[] = [];
  readonly wrongWhy: string[] = [];
  readonly faults: { name: string; survived: boolean; note?: string }[] = [];

  add(r: Result, label = ''): void {
    this.sent++;
    this[r.outcome]++;
    if (r.code) this.byCode[r.code] = (this.byCode[r.code] ?? 0) + 1;
    if (r.outcome === 'lost' && this.lostWhy.length < 20) this.lostWhy.push(`${label} ${r.why ?? ''}`.trim());
    if (r.wrong) {
      this.wrong++;
      if (this.wrongWhy.length < 20) this.wrongWhy.push(`${label} ${JSON.stringify(r.body).slice(0, 300)}`);
    }
    if (r.status === 503 && !r.retryAfter) this.noRetryAfter++;
  }

  fault(name: string, survived: boolean, note?: string): void {
    this.faults.push({ name, survived, ...(note ? { note } : {}) });
  }

  merge(o: Figures): this {
    for (const k of ['sent', 'answered', 'refused', 'cut', 'lost', 'wrong', 'noRetryAfter', 'fuzzCases'] as const) this[k] += o[k];
    for (const [c, n] of Object.entries(o.byCode)) this.byCode[c] = (this.byCode[c] ?? 0) + n;
    this.lostWhy.push(...o.lostWhy.slice(0, 20 - this.lostWhy.length));
    this.wrongWhy.push(...o.wrongWhy.slice(0, 20 - this.wrongWhy.length));
    this.faults.push(...o.faults);
    return this;
  }

  line(): string {
    const survived = this.faults.filter((f) => f.survived).length;
    const codes = Object.entries(this.byCode)
      .sort((a, b) => b[1] - a[1])
      .map(([c, n]) => `${c}×${n}`)
      .join(', ');
    return (
      `sent=${this.sent} answered=${this.answered} refused=${this.refused} cut=${this.cut} lost=${this.lost} wrong=${this.wrong} ` +
      `faults=${survived}/${this.faults.length} fuzz=${this.fuzzCases}` +
      (codes ? ` refusals: ${codes}` : '')
    );
  }
}

/** Where each file appends its figures (one JSON line per report), for the closing note. */
export const FIGURES_FILE = join(tmpdir(), 'lspd-chaos-figures.jsonl');

/** Print the figures as a test diagnostic and append them to FIGURES_FILE. */
export function report(t: { diagnostic(msg: string): void }, label: string, f: Figures): void {
  t.diagnostic(`${label}: ${f.line()}`);
  for (const x of f.faults) t.diagnostic(`  fault ${x.survived ? 'survived' : 'NOT survived'}: ${x.name}${x.note ? ` (${x.note})` : ''}`);
  for (const w of f.lostWhy) t.diagnostic(`  lost: ${w}`);
  for (const w of f.wrongWhy) t.diagnostic(`  wrong: ${w}`);
  const rec = { at: new Date().toISOString(), label, ...f, faults: f.faults };
  try {
    appendFileSync(FIGURES_FILE, JSON.stringify(rec) + '\n');
  } catch {
    /* the figures are also in the diagnostic */
  }
}

export interface SendOptions {
  timeoutMs: number;
  dispatcher?: Dispatcher;
  /** True while the test is killing the daemon on purpose: failures then are `cut`. */
  cutting?: () => boolean;
}

/** One request, classified. Never throws. */
export async function send(url: string, call: Call, o: SendOptions): Promise<Result> {
  const t0 = performance.now();
  const ms = () => Math.round(performance.now() - t0);
  const headers: Record<string, string> = { ...call.headers };
  let body: Buffer | string | undefined;
  if (call.raw !== undefined) body = call.raw;
  else if (call.json !== undefined) {
    body = JSON.stringify(call.json);
    headers['content-type'] ??= 'application/json';
  }
  if (call.jsonRpc) headers.accept ??= 'application/json, text/event-stream';
  let status = 0;
  let text: string;
  let retryAfter: string | undefined;
  try {
    const r = await request(url + call.path, {
      method: call.method,
      headers,
      body,
      signal: AbortSignal.timeout(o.timeoutMs),
      headersTimeout: o.timeoutMs,
      bodyTimeout: o.timeoutMs,
      ...(o.dispatcher ? { dispatcher: o.dispatcher } : {}),
    });
    status = r.statusCode;
    const ra = r.headers['retry-after'];
    retryAfter = Array.isArray(ra) ? ra[0] : ra;
    text = await r.body.text();
  } catch (err) {
    const e = err as Error & { code?: string };
    const why = `${call.method} ${call.path}: ${e.name === 'TimeoutError' || e.name === 'AbortError' ? `no answer within ${o.timeoutMs} ms` : (e.code ?? e.message)}`;
    return { outcome: o.cutting?.() ? 'cut' : 'lost', status, ms: ms(), why };
  }
  // 204 (DELETE), and 202 for a JSON-RPC notification (no id: MCP's Streamable HTTP accepts it with no body).
  if ((status === 204 || (status === 202 && call.jsonRpc)) && text === '') return { outcome: 'answered', status, ms: ms() };
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { outcome: 'lost', status, ms: ms(), why: `${call.method} ${call.path}: ${status} with a non-JSON body ${JSON.stringify(text.slice(0, 80))}` };
  }
  const obj = (typeof parsed === 'object' && parsed !== null ? parsed : {}) as Record<string, unknown>;
  const base = { status, ms: ms(), body: obj, ...(retryAfter !== undefined ? { retryAfter } : {}) };
  if (status >= 200 && status < 300) {
    if (call.jsonRpc && typeof obj.error === 'object' && obj.error !== null) {
      return { ...base, outcome: 'refused', code: `${status} jsonrpc ${(obj.error as { code?: unknown }).code}` };
    }
    const wrong = call.check ? !safeCheck(call.check, obj) : false;
    return { ...base, outcome: 'answered', ...(wrong ? { wrong } : {}) };
  }
  if (status >= 400 && status !== 500 && typeof obj.error === 'string') return { ...base, outcome: 'refused', code: `${status} ${obj.error}` };
  if (status >= 400 && status !== 500 && call.jsonRpc && typeof obj.error === 'object' && obj.error !== null) {
    return { ...base, outcome: 'refused', code: `${status} jsonrpc ${(obj.error as { code?: unknown }).code}` };
  }
  // A 500 is never a clear refusal: it says the daemon did not know what happened.
  return { ...base, outcome: 'lost', why: `${call.method} ${call.path}: ${status} ${text.slice(0, 160)}` };
}

function safeCheck(check: (b: Record<string, unknown>) => boolean, body: Record<string, unknown>): boolean {
  try {
    return check(body);
  } catch {
    return false;
  }
}

export interface LoadOptions {
  url: string;
  /** The i-th call (i counts across workers). */
  next: (i: number) => Call;
  concurrency: number;
  maxRequests: number;
  maxMs: number;
  timeoutMs: number;
  figures: Figures;
  /** Pause between one worker's requests (keeps a 2-core host able to do anything else). */
  pauseMs?: number;
  cutting?: () => boolean;
}

/** Workers sending calls until stopped, maxRequests sent, or maxMs passed. */
export class Load {
  private readonly o: LoadOptions;
  private readonly agent: Agent;
  private stopped = false;
  private i = 0;
  private workers: Promise<void>[] = [];
  readonly latencies: number[] = [];

  constructor(o: LoadOptions) {
    this.o = o;
    this.agent = new Agent({ connections: o.concurrency, keepAliveTimeout: 2_000 });
  }

  start(): this {
    const until = Date.now() + this.o.maxMs;
    for (let w = 0; w < this.o.concurrency; w++) {
      this.workers.push(
        (async () => {
          while (!this.stopped && this.i < this.o.maxRequests && Date.now() < until) {
            const i = this.i++;
            const call = this.o.next(i);
            const r = await send(this.o.url, call, {
              timeoutMs: this.o.timeoutMs,
              dispatcher: this.agent,
              ...(this.o.cutting ? { cutting: this.o.cutting } : {}),
            });
            this.o.figures.add(r, `load#${i}`);
            if (r.outcome === 'answered') this.latencies.push(r.ms);
            if (this.o.pauseMs) await new Promise((res) => setTimeout(res, this.o.pauseMs));
          }
        })(),
      );
    }
    return this;
  }

  /** Requests sent so far. */
  get count(): number {
    return this.i;
  }

  /** Stop sending, wait for what is in flight (each bounded by timeoutMs), close the sockets. */
  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.workers);
    await this.agent.close().catch(() => {});
  }
}

/** Deterministic PRNG (mulberry32) so every fuzz run can be replayed by its seed. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const pick = <T>(r: () => number, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
export const int = (r: () => number, lo: number, hi: number): number => lo + Math.floor(r() * (hi - lo + 1));

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Wait until cond() holds (true) or the time is up (false); polls, bounded. */
export async function waitFor(cond: () => boolean | Promise<boolean>, timeoutMs: number, stepMs = 50): Promise<boolean> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (await cond()) return true;
    await sleep(stepMs);
  }
  return cond();
}

/** p-th percentile (0..100) of a sample, nearest rank. */
export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
}
