// The daemon's own memory budget. Work whose memory grows with what a caller sends
// (an upload, a /v1/diff, a walk over a tree's files) is refused with 503 busy and
// Retry-After while V8's heap is past LSPD_HEAP_BUDGET_FRACTION of its limit:
// past the limit V8 does not throw, it aborts the process ("JavaScript heap out of
// memory"), and every org's sessions and uploads go with it. A refusal costs one
// caller a retry; the abort cost everyone.
//
// What is admitted regardless, and why: position queries (their answers are capped
// at LSPD_MAX_ANSWER_BYTES and the server's output is bounded by the transport),
// file reads (streamed under the same cap), GET/DELETE of roots (a DELETE frees
// memory), /readyz, /metrics. An upload to a root already stored is not refused
// either: it stores nothing new.
//
// Cheap on the hot path: the heap is sampled at most every SAMPLE_MS, so a flood
// of requests costs one getHeapStatistics per interval, not one each. The used
// size includes garbage V8 has not collected yet; with a quarter of the limit left
// (the default) a major GC has normally run before, and a refusal's Retry-After
// gives the next one time.
import { getHeapStatistics } from 'node:v8';
import { envName, type Config } from '../config.js';
import { errors, type AppError } from '../errors.js';
import type { Metrics } from '../metrics.js';

/** What the budget admits or refuses; also the bounded `work` label of its refusals. */
export type HeapWork = 'upload' | 'diff' | 'walk' | 'check';

const SAMPLE_MS = 100;
/** Seconds a refused caller waits: long enough for a GC and for admitted work to finish. */
const RETRY_AFTER_S = 5;

const WHAT: Record<HeapWork, string> = { upload: 'uploads', diff: 'diffs', walk: 'tree walks', check: 'patch checks' };

export class HeapBudget {
  /** V8's heap limit (heap_size_limit: --max-old-space-size, else V8's default for the host). */
  readonly limitBytes: number;
  /** The heap past which new work is refused. */
  readonly budgetBytes: number;
  readonly #metrics: Pick<Metrics, 'heapRefusals' | 'orgRefusals' | 'orgLabels'>;
  #used = 0;
  #sampledAt = -Infinity;

  constructor(o: { config: Pick<Config, 'heapBudgetFraction'>; metrics: Pick<Metrics, 'heapRefusals' | 'orgRefusals' | 'orgLabels'> }) {
    this.limitBytes = getHeapStatistics().heap_size_limit;
    this.budgetBytes = Math.floor(this.limitBytes * o.config.heapBudgetFraction);
    this.#metrics = o.metrics;
  }

  /** The heap in use, as last sampled (at most SAMPLE_MS old). */
  usedBytes(): number {
    const now = performance.now();
    if (now - this.#sampledAt >= SAMPLE_MS) {
      this.#used = getHeapStatistics().used_heap_size;
      this.#sampledAt = now;
    }
    return this.#used;
  }

  /**
   * Undefined when `work` for `org` is admitted, else its 503 busy (Retry-After), counted
   * by work and org; the route's count is src/tenancy/admission.ts's, which asks this.
   */
  refusal(work: HeapWork, org: string): AppError | undefined {
    const used = this.usedBytes();
    if (used <= this.budgetBytes) return undefined;
    const m = this.#metrics;
    m.heapRefusals.inc({ work });
    m.orgRefusals.inc({ org: m.orgLabels.of(org), reason: 'heap' });
    return errors.busy(
      `The daemon's memory is at ${mib(used)} MiB, past its budget of ${mib(this.budgetBytes)} MiB (${envName('heapBudgetFraction')}): new ${WHAT[work]} wait until it falls; queries still answer.`,
      RETRY_AFTER_S,
    );
  }
}

const mib = (n: number) => Math.round(n / (1024 * 1024));
