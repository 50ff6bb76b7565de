// Local ports that fail the way a registry can, for the fetch reasons' tests (all on
// 127.0.0.1: no network): one nothing listens on (connection refused), and one whose
// listener never accepts and whose accept queue is full, so the kernel drops each new
// SYN and a connect waits as it would on a host that does not answer.
import { spawn, type ChildProcess } from 'node:child_process';
import { connect, createServer, type Socket } from 'node:net';

/** A port nothing listens on (bound, then closed). */
export async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

export interface StalledPort {
  port: number;
  close(): void;
}

/** A listener with a backlog of 0 that never accepts (Node's own servers always accept: python3, installed for FETCH, holds it). */
export async function stalledPort(): Promise<StalledPort> {
  const script = 'import socket,time\ns=socket.socket()\ns.bind(("127.0.0.1",0))\ns.listen(0)\nprint(s.getsockname()[1],flush=True)\ntime.sleep(3600)';
  const child: ChildProcess = spawn('python3', ['-I', '-c', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout!.once('data', (d: Buffer) => resolve(Number(d.toString().trim())));
    child.once('error', reject);
  });
  // Fill its accept queue: past it a connect waits.
  const fillers: Socket[] = [];
  for (let i = 0; i < 4; i++) {
    const s = connect(port, '127.0.0.1');
    s.on('error', () => undefined);
    fillers.push(s);
  }
  await new Promise((r) => setTimeout(r, 200));
  return {
    port,
    close() {
      for (const s of fillers) s.destroy();
      child.kill();
    },
  };
}
