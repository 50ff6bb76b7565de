// Short form (in `npm test`) of the daemon-level chaos: two rounds of server
// kills, one burst of 500, ten upload/delete races, one SIGKILL and restart.
import { daemonSuite } from './daemon-suite.js';

daemonSuite({ label: 'short', slot: 1, kills: 2, bursts: 1, raceRounds: 10 });
