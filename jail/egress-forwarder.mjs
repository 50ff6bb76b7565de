// Runs INSIDE a FETCH jail, before the fetch command:
//   node egress-forwarder.mjs PORT SOCKET -- CMD [ARG...]
// Listens on 127.0.0.1:PORT (the jail's own network namespace; only lo exists) and
// carries every connection to SOCKET, the daemon's egress proxy bound into the jail,
// so HTTPS_PROXY=http://127.0.0.1:PORT works for npm, go and composer. Then runs CMD
// and exits with its status. This is a convenience, not a boundary: it runs with the
// jail's privileges, and the allowlist is enforced by the daemon's proxy.
import { spawn } from 'node:child_process';
import { connect, createServer } from 'node:net';

const [port, socketPath, sep, ...cmd] = process.argv.slice(2);
if (!port || !socketPath || sep !== '--' || cmd.length === 0) {
  process.stderr.write('usage: egress-forwarder.mjs PORT SOCKET -- CMD [ARG...]\n');
  process.exit(2);
}

const server = createServer((client) => {
  const upstream = connect(socketPath);
  client.pipe(upstream);
  upstream.pipe(client);
  const done = () => {
    client.destroy();
    upstream.destroy();
  };
  client.on('error', done);
  upstream.on('error', done);
  client.on('close', done);
  upstream.on('close', done);
});

server.listen(Number(port), '127.0.0.1', () => {
  const child = spawn(cmd[0], cmd.slice(1), { stdio: 'inherit' });
  child.on('error', (err) => {
    process.stderr.write(`lspd: cannot run ${cmd[0]}: ${err.code ?? err.message}\n`);
    process.exit(127);
  });
  child.on('exit', (code, signal) => process.exit(code ?? 128 + (signal ? { SIGKILL: 9, SIGTERM: 15, SIGINT: 2 }[signal] ?? 1 : 1)));
});
server.on('error', (err) => {
  process.stderr.write(`lspd: egress forwarder cannot listen: ${err.code ?? err.message}\n`);
  process.exit(125);
});
