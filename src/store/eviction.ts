// The disk-quota policy, pure: given every root's size and last use, which roots
// to evict so the total fits the quota again. Least recently used first; a root
// that something holds (a session, a query) or that was just stored is never
// chosen, even if the quota then stays exceeded (DESIGN.md "Roots").

export interface Usage {
  id: string;
  /** Tree plus dependency cache. */
  bytes: number;
  lastUsedMs: number;
}

export function pickVictims(roots: Iterable<Usage>, quotaBytes: number, spare: (id: string) => boolean): string[] {
  const all = [...roots];
  let total = all.reduce((n, r) => n + r.bytes, 0);
  if (total <= quotaBytes) return [];
  const victims: string[] = [];
  const byAge = all.filter((r) => !spare(r.id)).sort((a, b) => a.lastUsedMs - b.lastUsedMs || (a.id < b.id ? -1 : 1));
  for (const r of byAge) {
    if (total <= quotaBytes) break;
    victims.push(r.id);
    total -= r.bytes;
  }
  return victims;
}
