// Short form (in `npm test`) of disk full during uploads: one round on a 20 MiB tmpfs.
import { diskSuite } from './disk-suite.js';

diskSuite({ label: 'short', slot: 3, rounds: 1 });
