import { RawTs } from './raw-ts.js';
const n = Number(process.argv[2] ?? 4), c = Number(process.argv[3] ?? 8), s = Number(process.argv[4] ?? 20);
const servers = await Promise.all(Array.from({ length: n }, () => RawTs.start()));
await RawTs.phaseOver(servers, c, 2);
console.log('go', servers.map((x) => x.child.pid).join(' '));
const ph = await RawTs.phaseOver(servers, c, s);
console.log('answers/s', Math.round(ph.lat.length / ph.elapsed));
for (const x of servers) x.stop();
process.exit(0);
