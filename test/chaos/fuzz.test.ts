// Short form (in `npm test`) of the hostile-input fuzz: 200 tar uploads and 400 JSON
// bodies from a fixed seed. The long form (chaos.long.ts) runs more, from more seeds.
import { fuzzSuite } from './fuzz-suite.js';

fuzzSuite({ label: 'short', slot: 2, seed: 20_261_130, tarCases: 200, jsonCases: 400 });
