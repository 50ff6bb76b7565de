// The long form of the chaos suite (`npm run test:chaos`, not in `npm test`): the
// same scenarios as the short files with more rounds, more kills, more bursts and
// races, a sustained load with periodic server kills, and the fuzz from several
// seeds. The suites run one after another (each describe waits for the last), so
// they reuse uid slots. Figures are printed per scenario and appended to
// $TMPDIR/lspd-chaos-figures.jsonl.
import { daemonSuite } from './daemon-suite.js';
import { diskSuite } from './disk-suite.js';
import { faultSuite } from './fault-suite.js';
import { fuzzSuite } from './fuzz-suite.js';
import { hostileSuite } from './hostile-suite.js';

faultSuite({ rounds: 3, label: 'long', slot: 0 });
daemonSuite({ label: 'long', slot: 1, kills: 10, bursts: 5, raceRounds: 100, soakSeconds: 120 });
for (const seed of [1, 20_261_130, 0xdecafbad]) fuzzSuite({ label: 'long', slot: 2, seed, tarCases: 1000, jsonCases: 2000 });
diskSuite({ label: 'long', slot: 3, rounds: 3 });
// Issue 30's shapes at the sizes of its reproductions: 64,999 links pass ext4's 65,000 per inode.
hostileSuite({
  label: 'long',
  tinyFiles: 60_000,
  depth: 1_200,
  bumpLinks: 4_000,
  shapes: {
    fanoutLinks: 64_999,
    emptyDirs: 20_000,
    emptyDirUploads: 3,
    longPathFiles: 20_000,
    longPathBytes: 2_900,
    linkTargets: 20_000,
    linkDepth: 300,
    stallBaseFiles: 20_000,
    stalls: 6,
  },
});
