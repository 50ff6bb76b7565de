// The disk-quota policy, pure: given every root's org, size and last use, which
// roots to evict. Two bounds:
// - an org above its own quota (LSPD_ORG_DISK_QUOTA_BYTES) loses its own least
//   recently used roots until it fits;
// - a store above the global quota (LSPD_DISK_QUOTA_BYTES) loses roots of orgs
//   above their share only: the org whose upload or fetch grew the store first
//   (its own least recently used roots), then any org above its share, least
//   recently used first. An org's share is its quota, and no more than the global
//   quota over the number of orgs storing roots. Only if that is not enough (the
//   roots of orgs above their share are held) does the growing org lose its own
//   roots below its share: it is the one that brought the bytes.
// So one org's uploads never evict an org that stays within its share, and an
// idle daemon (one org storing roots) lets that org use the whole quota. A root
// that something holds (a session, a query, a fetch) or that was just stored is
// never chosen, even if a quota then stays exceeded (DESIGN.md "Roots").

export interface Usage {
  id: string;
  org: string;
  /** Tree plus dependency cache. */
  bytes: number;
  lastUsedMs: number;
}

export interface QuotaRule {
  globalBytes: number;
  orgBytes: number;
  /** The org whose upload (or fetch) grew the store, if any: its roots go first. */
  grower?: string;
}

/** An org's share of the disk when `orgs` orgs store roots. */
export function orgShareBytes(rule: QuotaRule, orgs: number): number {
  return Math.min(rule.orgBytes, Math.floor(rule.globalBytes / Math.max(1, orgs)));
}

export function pickVictims(roots: Iterable<Usage>, rule: QuotaRule, spare: (id: string) => boolean): string[] {
  const all = [...roots];
  const byOrg = new Map<string, number>();
  let total = 0;
  for (const r of all) {
    byOrg.set(r.org, (byOrg.get(r.org) ?? 0) + r.bytes);
    total += r.bytes;
  }
  const share = orgShareBytes(rule, byOrg.size);
  const lru = all.filter((r) => !spare(r.id)).sort((a, b) => a.lastUsedMs - b.lastUsedMs || (a.id < b.id ? -1 : 1));
  const victims: string[] = [];
  const taken = new Set<string>();
  const take = (r: Usage) => {
    victims.push(r.id);
    taken.add(r.id);
    byOrg.set(r.org, byOrg.get(r.org)! - r.bytes);
    total -= r.bytes;
  };
  const orgOver = (org: string, bound: number) => byOrg.get(org)! > bound;

  for (const r of lru) if (orgOver(r.org, rule.orgBytes)) take(r);

  /** Take, least recently used first, the roots `ok` allows while the store is above the global quota. */
  const pass = (ok: (r: Usage) => boolean) => {
    for (const r of lru) {
      if (total <= rule.globalBytes) return;
      if (!taken.has(r.id) && ok(r)) take(r);
    }
  };
  const { grower } = rule;
  if (grower !== undefined) pass((r) => r.org === grower && orgOver(grower, share));
  pass((r) => orgOver(r.org, share));
  if (grower !== undefined) pass((r) => r.org === grower);
  return victims;
}
