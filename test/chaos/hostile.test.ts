// Short form (in `npm test`) of the hostile-tree corpus: each class once, small.
// The long form (chaos.long.ts) uses more files, a deeper tree, a longer chain,
// and issue 30's shapes at the sizes of its reproductions.
import { hostileSuite } from './hostile-suite.js';

hostileSuite({
  label: 'short',
  tinyFiles: 2_000,
  depth: 300,
  bumpLinks: 400,
  shapes: {
    // Under LSPD_MAX_HARD_LINKS_PER_FILE's default (1000): stored and composed, so its charge is what is judged; the long form passes it.
    fanoutLinks: 900,
    emptyDirs: 3_000,
    emptyDirUploads: 2,
    longPathFiles: 2_000,
    longPathBytes: 1_000,
    linkTargets: 8_000,
    linkDepth: 550,
    stallBaseFiles: 20_000,
    stalls: 6,
  },
});
