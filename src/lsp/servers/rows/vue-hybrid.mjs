// @ts-check
// The Vue row's one LSP server, run inside its SERVE jail: vue-language-server 3.x
// is hybrid-only (its TypeScript questions go to a tsserver running
// @vue/typescript-plugin, through `tsserver/request` notifications its client must
// relay), so this process starts both servers in the same jail and speaks LSP to
// lspd as one server. Who answers what (LLM.md "One TS project, several servers"):
//   - tsserver (typescript-language-server + the plugin) every request of a .ts/.js
//     file and every TypeScript question of a .vue file (definition, references,
//     hover, diagnostics, rename, actions, hierarchies, workspace symbols):
//     one program holds the .ts and the .vue files, so answers agree from either;
//   - vue-language-server what tsserver leaves empty on a .vue file (its document
//     symbols: the SFC outline with <script setup>'s symbols; HTML/CSS of the template
//     and style blocks), its diagnostics beside tsserver's, and its own
//     `tsserver/request`s, relayed here to typescript-language-server's
//     `typescript.tsserverRequest` command.
// Plain JS with no imports but node's: it runs on the jail's node from a bind of this
// file alone. argv: --ts <typescript-language-server cli> --vue <vue-language-server
// index.js> --tsdk <typescript/lib>. initializationOptions arrive as {ts, vue}.
import { spawn } from 'node:child_process';

/** @typedef {{ jsonrpc?: string; id?: number | string; method?: string; params?: any; result?: any; error?: any }} Msg */
/** @typedef {{ result?: any; error?: any }} Reply */
/** @typedef {{ name: string; proc: import('node:child_process').ChildProcessByStdio<import('node:stream').Writable, import('node:stream').Readable, null>; nextId: number; pending: Map<number | string, (r: Reply) => void> }} Child */

/** @param {string} name */
const arg = (name) => {
  const i = process.argv.indexOf(name);
  const value = i < 0 ? undefined : process.argv[i + 1];
  if (!value) throw new Error(`vue-hybrid: ${name} is required`);
  return value;
};
const TS_CLI = arg('--ts');
const VUE_INDEX = arg('--vue');
const TSDK = arg('--tsdk');

/** Bytes of one frame we accept from a child: a server inside the jail may send anything; lspd bounds what we pass on again. */
const MAX_FRAME = 64 * 1024 * 1024;

/**
 * An LSP frame reader over a stream: calls `on` with each parsed message.
 * @param {import('node:stream').Readable} stream
 * @param {(msg: Msg) => void} on
 * @param {(err: Error) => void} onError
 */
function readFrames(stream, on, onError) {
  /** @type {Buffer<ArrayBufferLike>} */
  let buf = Buffer.alloc(0);
  stream.on('data', (/** @type {Buffer} */ chunk) => {
    buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
    for (;;) {
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      const m = /content-length:\s*(\d+)/i.exec(buf.subarray(0, end).toString('ascii'));
      if (!m) return onError(new Error('a frame without Content-Length'));
      const len = Number(m[1]);
      if (len > MAX_FRAME) return onError(new Error(`a frame of ${len} bytes`));
      if (buf.length < end + 4 + len) return;
      const body = buf.subarray(end + 4, end + 4 + len).toString('utf8');
      buf = buf.subarray(end + 4 + len);
      let msg;
      try {
        msg = JSON.parse(body);
      } catch (err) {
        return onError(/** @type {Error} */ (err));
      }
      on(msg);
    }
  });
}

/**
 * @param {import('node:stream').Writable} stream
 * @param {Msg} msg
 */
function writeFrame(stream, msg) {
  const body = Buffer.from(JSON.stringify(msg), 'utf8');
  stream.write(`Content-Length: ${body.length}\r\n\r\n`);
  stream.write(body);
}

const toClient = (/** @type {Msg} */ msg) => writeFrame(process.stdout, msg);
const log = (/** @type {string} */ text) => process.stderr.write(`vue-hybrid: ${text}\n`);

/**
 * One child server: its process, its outgoing request ids, what waits for its answers.
 * @param {string} name
 * @param {string[]} argv
 * @returns {Child}
 */
function startChild(name, argv) {
  const proc = spawn(process.execPath, argv, { stdio: ['pipe', 'pipe', 'inherit'], env: process.env });
  /** @type {Child} */
  const child = { name, proc, nextId: 1, pending: new Map() };
  readFrames(
    proc.stdout,
    (msg) => fromChild(child, msg),
    (err) => die(`${name} broke the LSP framing: ${err.message}`),
  );
  proc.on('exit', (code, signal) => {
    if (!exiting) die(`${name} exited (${signal ?? `code ${code}`})`);
    else if (children.every((c) => c.proc.exitCode !== null || c.proc.signalCode !== null)) process.exit(0);
  });
  proc.stdin.on('error', () => {}); // its exit is what we report
  return child;
}

let exiting = false;
/** @param {string} why */
function die(why) {
  log(why);
  exiting = true;
  for (const c of children) c.proc.kill('SIGKILL');
  process.exit(1);
}

/**
 * A request to a child; resolves with {result} or {error}.
 * @param {Child} child
 * @param {string} method
 * @param {unknown} params
 * @returns {Promise<Reply>}
 */
function ask(child, method, params) {
  const id = child.nextId++;
  return new Promise((resolve) => {
    child.pending.set(id, resolve);
    writeFrame(child.proc.stdin, { jsonrpc: '2.0', id, method, params });
  });
}

const tell = (/** @type {Child} */ child, /** @type {string} */ method, /** @type {unknown} */ params) =>
  writeFrame(child.proc.stdin, { jsonrpc: '2.0', method, params });

const ts = startChild('typescript-language-server', [TS_CLI, '--stdio']);
const vue = startChild('vue-language-server', [VUE_INDEX, '--stdio', `--tsdk=${TSDK}`]);
const children = [ts, vue];

/** Server→client requests passed on to lspd: our id → the child and its id. @type {Map<string, { child: Child; id: number | string }>} */
const relayed = new Map();
let relayId = 1;
/** lspd's requests in flight: its id → [child, child id] pairs, for $/cancelRequest. @type {Map<number | string, [Child, number][]>} */
const inFlight = new Map();

/** The diagnostics each child last published per document; a .vue document's are sent once tsserver has spoken for it. @type {Map<string, { ts?: unknown[]; vue?: unknown[]; version?: number }>} */
const published = new Map();

const isVue = (/** @type {unknown} */ uri) => typeof uri === 'string' && /\.vue$/i.test(uri);
const uriOf = (/** @type {any} */ params) => params?.textDocument?.uri;
const empty = (/** @type {unknown} */ r) => r === null || r === undefined || (Array.isArray(r) && r.length === 0);

/**
 * @param {Child} child
 * @param {Msg} msg
 */
function fromChild(child, msg) {
  if (msg.id !== undefined && msg.method === undefined) {
    const done = child.pending.get(msg.id);
    child.pending.delete(msg.id);
    done?.(msg.error ? { error: msg.error } : { result: msg.result });
    return;
  }
  if (msg.id !== undefined) {
    // The vue server's progress tokens are kept apart from tsserver's.
    const params = child === vue && msg.method === 'window/workDoneProgress/create' ? { token: `vue:${msg.params?.token}` } : msg.params;
    const id = `h${relayId++}`;
    relayed.set(id, { child, id: msg.id });
    toClient({ jsonrpc: '2.0', id, method: msg.method, params });
    return;
  }
  if (child === vue && msg.method === 'tsserver/request') return relayTsserver(msg.params);
  if (msg.method === 'textDocument/publishDiagnostics') return onDiagnostics(child, msg.params);
  if (child === vue && msg.method === '$/progress') return toClient({ ...msg, params: { ...msg.params, token: `vue:${msg.params?.token}` } });
  toClient(msg);
}

/**
 * vue-language-server's question for the tsserver plugin, answered through typescript-language-server's command.
 * @param {any} params
 */
async function relayTsserver(params) {
  // vscode-jsonrpc sends its one array argument wrapped: [[id, command, args]]; so is the answer.
  const [id, command, args] = Array.isArray(params?.[0]) ? params[0] : Array.isArray(params) ? params : [];
  const r = await ask(ts, 'workspace/executeCommand', { command: 'typescript.tsserverRequest', arguments: [command, args] });
  // Always answered, null on failure: the vue server waits on every id it sent.
  tell(vue, 'tsserver/response', [[id, r.result?.body ?? null]]);
}

/**
 * @param {Child} child
 * @param {any} params
 */
function onDiagnostics(child, params) {
  const uri = String(params?.uri);
  const entry = published.get(uri) ?? {};
  entry[child === ts ? 'ts' : 'vue'] = params?.diagnostics ?? [];
  if (params?.version !== undefined) entry.version = params.version;
  published.set(uri, entry);
  if (!entry.ts) return; // tsserver's publish is the sign its project has loaded (the row's readiness)
  /** @type {{ uri: string; diagnostics: unknown[]; version?: number }} */
  const out = { uri, diagnostics: [...entry.ts, ...(entry.vue ?? [])] };
  if (entry.version !== undefined) out.version = entry.version;
  toClient({ jsonrpc: '2.0', method: 'textDocument/publishDiagnostics', params: out });
}

/**
 * Ask `child`, remembering the pair so lspd's cancel reaches it.
 * @param {number | string} clientId
 * @param {Child} child
 * @param {string} method
 * @param {unknown} params
 */
async function askFor(clientId, child, method, params) {
  const id = child.nextId;
  const list = inFlight.get(clientId) ?? [];
  list.push([child, id]);
  inFlight.set(clientId, list);
  return ask(child, method, params);
}

/**
 * lspd's request, answered by the child that owns it (the header's rule).
 * @param {Msg} msg
 * @returns {Promise<Reply>}
 */
async function route(msg) {
  const { params } = msg;
  const method = String(msg.method);
  const id = /** @type {number | string} */ (msg.id);
  if (method === 'initialize') {
    const opts = params?.initializationOptions ?? {};
    const [t, v] = await Promise.all([
      ask(ts, method, { ...params, initializationOptions: opts.ts ?? {} }),
      ask(vue, method, { ...params, initializationOptions: opts.vue ?? {} }),
    ]);
    if (t.error || v.error) return t.error ? t : v;
    const caps = { ...(v.result?.capabilities ?? {}), ...(t.result?.capabilities ?? {}) };
    return { result: { capabilities: caps, serverInfo: { name: 'vue-hybrid', version: v.result?.serverInfo?.version } } };
  }
  if (method === 'shutdown') {
    await Promise.all(children.map((c) => ask(c, method, params)));
    return { result: null };
  }
  const uri = uriOf(params);
  const first = await askFor(id, ts, method, params);
  if (!isVue(uri) || first.error || !empty(first.result)) return first;
  // What tsserver has nothing for in a .vue file (a template's HTML, a style block) may be the vue server's.
  const second = await askFor(id, vue, method, params);
  return second.error ? first : second;
}

/** @param {Msg} msg */
function fromClient(msg) {
  if (msg.id !== undefined && msg.method === undefined) {
    const r = relayed.get(String(msg.id));
    relayed.delete(String(msg.id));
    if (r) writeFrame(r.child.proc.stdin, { jsonrpc: '2.0', id: r.id, ...(msg.error ? { error: msg.error } : { result: msg.result }) });
    return;
  }
  if (msg.id !== undefined) {
    const id = msg.id;
    void route(msg).then((r) => {
      inFlight.delete(id);
      toClient({ jsonrpc: '2.0', id, ...r });
    });
    return;
  }
  const method = String(msg.method);
  if (method === '$/cancelRequest') {
    for (const [c, id] of inFlight.get(msg.params?.id) ?? []) tell(c, '$/cancelRequest', { id });
    return;
  }
  if (method === 'exit') {
    exiting = true;
    for (const c of children) tell(c, 'exit', msg.params);
    setTimeout(() => die('the servers did not exit'), 5000).unref();
    return;
  }
  const uri = uriOf(msg.params);
  // Documents: tsserver sees every one; the vue server the .vue ones. Anything else goes to both.
  if (method.startsWith('textDocument/') && !isVue(uri)) return tell(ts, method, msg.params);
  for (const c of children) tell(c, method, msg.params);
}

readFrames(process.stdin, fromClient, (err) => die(`lspd broke the LSP framing: ${err.message}`));
process.stdin.on('end', () => {
  if (!exiting) die('lspd closed the connection');
});
