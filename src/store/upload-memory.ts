// The memory uploads in progress may hold (LSPD_UPLOAD_MEMORY_BYTES), fair-shared
// between orgs (src/tenancy/fair-share.ts) in units of 1 MiB. What an upload holds grows
// with what it sends: every admitted entry's name and link target stay in memory
// until the tree is indexed (the checker's picture of the tree, the symlink trie,
// the index entries), and a composed upload decodes its base's index. Each is
// charged before it is held, so two uploads of 100,000 long links at once (issue
// 30: the daemon died of heap exhaustion) are refused 503 busy, not run together.
import { errors } from '../errors.js';
import { FairShare, shareLimits } from '../tenancy/fair-share.js';

const UNIT_BYTES = 1 << 20;

/** What one upload holds of the pool; `release` when the upload is over (again: nothing). */
export interface MemoryLease {
  /** Charge the upload `bytes` in all (never less than before); throws busy, or too_large when no share could hold it. */
  need(bytes: number): void;
  release(): void;
}

export class UploadMemory {
  private readonly share: FairShare;

  constructor(
    readonly capacityBytes: number,
    reservePercent: number,
    private readonly onRefused: (org: string) => void,
  ) {
    this.share = new FairShare(shareLimits(Math.max(1, Math.floor(capacityBytes / UNIT_BYTES)), { orgCap: 0, reservePercent, floor: 1 }));
  }

  /** Bytes the org's running uploads hold now (rounded up to units). */
  heldBytes(org: string): number {
    return this.share.held(org) * UNIT_BYTES;
  }

  lease(org: string): MemoryLease {
    let units = 0;
    const share = this.share;
    const limits = share.limits;
    return {
      need: (bytes: number) => {
        const want = Math.ceil(bytes / UNIT_BYTES);
        while (units < want) {
          // More than one org alone may ever take: waiting would not help.
          if (want > limits.capacity - limits.reserve) {
            throw errors.tooLarge(
              `The upload needs more than the ${(limits.capacity - limits.reserve) * UNIT_BYTES} bytes of memory one upload may hold (its names and link targets, or its base's index).`,
              'upload_memory',
            );
          }
          const refused = share.take(org);
          if (refused) {
            this.onRefused(org);
            const why = refused === 'full' ? 'uploads running hold all the memory they may' : `org ${org}'s uploads hold their share of the memory uploads may`;
            throw errors.busy(`${why} (${this.heldBytes(org)} bytes); retry shortly.`, 5);
          }
          units++;
        }
      },
      release: () => {
        for (; units > 0; units--) share.give(org);
      },
    };
  }
}
