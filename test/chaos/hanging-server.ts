// A TCP server on 127.0.0.1 that accepts connections and never answers: a package
// registry that hangs, so a dependency fetch stays `running` for as long as a test
// needs it to (until the daemon is killed or the fetch deadline passes).
import { createServer, type AddressInfo, type Socket } from 'node:net';

export interface HangingServer {
  url: string;
  /** "127.0.0.1:PORT", for LSPD_FETCH_REGISTRIES. */
  authority: string;
  /** Connections accepted so far. */
  readonly accepted: number;
  close(): Promise<void>;
}

export async function startHangingServer(): Promise<HangingServer> {
  const sockets = new Set<Socket>();
  let accepted = 0;
  const server = createServer((s) => {
    accepted++;
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => {});
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    authority: `127.0.0.1:${port}`,
    get accepted() {
      return accepted;
    },
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}
