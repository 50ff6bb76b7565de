// The `org` label of per-org metrics, bounded: the first `max` orgs seen keep their
// own label for the daemon's lifetime, every later one is counted under OTHER_ORG.
// Prometheus keeps one series per label value forever, so an unbounded label is a
// memory leak an uploader controls (any token may name new orgs in a shared
// deployment). First come is stable: a label never changes meaning mid-run.
import assert from 'node:assert/strict';

/** Where orgs past the bound are counted. Not a valid org name (those start with a letter or digit), so no real org shares it. */
export const OTHER_ORG = '_other';

export class OrgLabels {
  readonly #max: number;
  readonly #known = new Set<string>();

  constructor(max: number) {
    assert.ok(Number.isSafeInteger(max) && max >= 0, 'metricsMaxOrgs');
    this.#max = max;
  }

  /** The label to count `org` under. */
  of(org: string): string {
    if (this.#known.has(org)) return org;
    if (this.#known.size >= this.#max) return OTHER_ORG;
    this.#known.add(org);
    return org;
  }

  /**
   * Sum per label of per-org values (a gauge's next readings): orgs past the bound
   * add up under OTHER_ORG, and every label set before and absent now reads 0, so a
   * series never keeps a stale value.
   */
  fold(values: Iterable<[string, number]>, previous: Set<string>): Map<string, number> {
    const out = new Map<string, number>();
    for (const [org, v] of values) {
      const label = this.of(org);
      out.set(label, (out.get(label) ?? 0) + v);
    }
    for (const label of previous) if (!out.has(label)) out.set(label, 0);
    for (const label of out.keys()) previous.add(label);
    return out;
  }
}
