// Short form (in `npm test`) of the in-jail faults: one round of each. The long
// form (chaos.long.ts) runs more rounds of the same suite.
import { faultSuite } from './fault-suite.js';

faultSuite({ rounds: 1, label: 'short', slot: 0 });
