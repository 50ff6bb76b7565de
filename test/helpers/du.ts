// Disk as `du -sB1 -c` counts it over several dirs: each inode once however many
// links it has, so a root's links to the org's package store are not counted twice.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';

/** Bytes of the dirs that exist among `dirs`, together (0 when none does). */
export function duBytes(...dirs: string[]): number {
  const there = dirs.filter((d) => existsSync(d));
  if (there.length === 0) return 0;
  const total = execFileSync('du', ['-sB1', '-c', ...there], { encoding: 'utf8' })
    .trim()
    .split('\n')
    .pop()!;
  return Number(total.split('\t')[0]);
}
