// Short form (in `npm test`) of the hostile-tree corpus: each class once, small.
// The long form (chaos.long.ts) uses more files, a deeper tree, a longer chain.
import { hostileSuite } from './hostile-suite.js';

hostileSuite({ label: 'short', tinyFiles: 2_000, depth: 300, bumpLinks: 400 });
