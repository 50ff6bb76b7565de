// A keep-alive HTTP/1.1 client for the load benches, no more than they need: one
// request at a time per connection, bodies framed by Content-Length only (fastify
// frames every answer lspd sends that way; anything else is an error here, never a
// guess). The load generator shares the host's two cores with the daemon and its
// servers, and undici's Pool cost ~90–100 µs of that CPU per answer, as much as the
// cached daemon itself spends; this costs about half of that (bench/load's CPU
// column shows it, run by run). Anything a real client meets that this does not
// handle (chunked bodies, 1xx, pipelining) is thrown as an error, so a bench can
// never count it as an answer.
import { connect, type Socket } from 'node:net';

export interface LeanAnswer {
  status: number;
  body: string;
}

const HEAD_END = Buffer.from('\r\n\r\n');

export class LeanConnection {
  readonly #host: string;
  readonly #port: number;
  #socket: Socket | undefined;
  #chunks: Buffer[] = [];
  #have = 0;
  #waiting: { resolve: (a: LeanAnswer) => void; reject: (e: Error) => void } | undefined;

  constructor(url: string) {
    const u = new URL(url);
    this.#host = u.hostname;
    this.#port = Number(u.port);
  }

  /** A prebuilt request (`post`, `get`), its answer whole. */
  request(raw: Buffer): Promise<LeanAnswer> {
    if (this.#waiting) return Promise.reject(new Error('one request at a time per connection'));
    const s = this.#socket ?? this.#open();
    return new Promise((resolve, reject) => {
      this.#waiting = { resolve, reject };
      s.write(raw);
    });
  }

  close(): void {
    this.#socket?.destroy();
    this.#socket = undefined;
  }

  #open(): Socket {
    const s = connect(this.#port, this.#host);
    s.setNoDelay(true);
    s.setTimeout(80_000, () => this.#socket === s && this.#fail(new Error('no answer in 80 s')));
    // A closed socket's late events must not reach the one opened after it.
    s.on('data', (d: Buffer) => this.#socket === s && this.#data(d));
    s.on('error', (e) => this.#socket === s && this.#fail(e));
    s.on('close', () => this.#socket === s && this.#fail(new Error('connection closed')));
    this.#socket = s;
    return s;
  }

  #fail(e: Error): void {
    this.#socket?.destroy();
    this.#socket = undefined;
    this.#chunks = [];
    this.#have = 0;
    const w = this.#waiting;
    this.#waiting = undefined;
    w?.reject(e);
  }

  #data(d: Buffer): void {
    this.#chunks.push(d);
    this.#have += d.length;
    const buf = this.#chunks.length === 1 ? d : Buffer.concat(this.#chunks, this.#have);
    const end = buf.indexOf(HEAD_END);
    if (end < 0) return;
    const head = buf.toString('latin1', 0, end);
    const m = /^HTTP\/1\.1 (\d{3})/.exec(head);
    const len = /\r\ncontent-length: *(\d+)/i.exec(head);
    if (!m || !len || /\r\ntransfer-encoding:/i.test(head)) return this.#fail(new Error(`unframed answer: ${head.slice(0, 200)}`));
    const total = end + 4 + Number(len[1]);
    if (buf.length < total) {
      this.#chunks = [buf];
      return;
    }
    if (buf.length > total) return this.#fail(new Error('bytes after the answer: the server sent what was not asked'));
    this.#chunks = [];
    this.#have = 0;
    const w = this.#waiting;
    this.#waiting = undefined;
    const answer = { status: Number(m[1]), body: buf.toString('utf8', end + 4, total) };
    if (/\r\nconnection: *close/i.test(head)) this.close();
    w?.resolve(answer);
  }
}

/** The bytes of a keep-alive GET of `path` on `url`'s host. */
export function get(url: string, path: string): Buffer {
  return Buffer.from(`GET ${path} HTTP/1.1\r\nhost: ${new URL(url).host}\r\n\r\n`, 'latin1');
}

/** The bytes of a keep-alive POST of `json` to `path` on `url`'s host. */
export function post(url: string, path: string, json: string): Buffer {
  const body = Buffer.from(json);
  const head = `POST ${path} HTTP/1.1\r\nhost: ${new URL(url).host}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n`;
  return Buffer.concat([Buffer.from(head, 'latin1'), body]);
}
