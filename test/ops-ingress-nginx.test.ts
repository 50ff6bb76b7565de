// The Ingress of images/k8s and the nginx configuration test/scale-out runs
// (images/nginx/lspd.conf) say the same thing: every ingress-nginx annotation has
// the directive ingress-nginx renders for it, with the same value, and every
// proxying directive of the configuration comes from an annotation (or is one
// ingress-nginx always writes). So what the scale-out test proves on nginx holds
// for the Ingress a platform team applies. `nginx -t` checks the syntax too.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { configSchema } from '../src/config.js';
import { ROUTE_KEY_HEADER } from '../src/client/index.js';
import { projectDir, tempDir } from './helpers/daemon.js';
import { NGINX_BIN, NGINX_CONF, findDirectives, parseNginxConf, serverParams, type Directive } from './helpers/nginx.js';

const PREFIX = 'nginx.ingress.kubernetes.io/';
const ingress = parse(readFileSync(join(projectDir, 'images', 'k8s', 'ingress.yaml'), 'utf8')) as {
  kind: string;
  metadata: { annotations: Record<string, string> };
};
const confText = readFileSync(NGINX_CONF, 'utf8');
const conf = parseNginxConf(confText);

/** Annotation → the directive ingress-nginx renders for it, and where. */
const RENDERS: Record<string, (v: string) => { name: string; args: string[]; scope: 'upstream' | 'location' | 'server' }> = {
  'upstream-hash-by': (v) => ({ name: 'hash', args: [v, 'consistent'], scope: 'upstream' }),
  'proxy-body-size': (v) => ({ name: 'client_max_body_size', args: [v], scope: 'server' }),
  'proxy-request-buffering': (v) => ({ name: 'proxy_request_buffering', args: [v], scope: 'location' }),
  'proxy-buffering': (v) => ({ name: 'proxy_buffering', args: [v], scope: 'location' }),
  'proxy-connect-timeout': (v) => ({ name: 'proxy_connect_timeout', args: [`${v}s`], scope: 'location' }),
  'proxy-read-timeout': (v) => ({ name: 'proxy_read_timeout', args: [`${v}s`], scope: 'location' }),
  'proxy-send-timeout': (v) => ({ name: 'proxy_send_timeout', args: [`${v}s`], scope: 'location' }),
  'proxy-next-upstream': (v) => ({ name: 'proxy_next_upstream', args: v.split(/\s+/), scope: 'location' }),
  'proxy-next-upstream-tries': (v) => ({ name: 'proxy_next_upstream_tries', args: [v], scope: 'location' }),
};
/** Written by ingress-nginx whatever the annotations (or only about where nginx keeps files). */
const ALWAYS = /^(proxy_pass|proxy_http_version|proxy_set_header|\w+_temp_path)$/;

const blockOf = (ds: Directive[], name: string, arg?: string) => ds.find((d) => d.name === name && (arg === undefined || d.args[0] === arg))?.block ?? [];
const http = blockOf(conf, 'http');
const upstream = blockOf(http, 'upstream', 'lspd');
const server = blockOf(http, 'server');
const location = blockOf(server, 'location', '/');
const scopes = { upstream, server, location };

describe('ingress-nginx annotations and images/nginx/lspd.conf', () => {
  it('render every annotation to its directive, with the same value', () => {
    assert.equal(ingress.kind, 'Ingress');
    const ann = Object.entries(ingress.metadata.annotations).filter(([k]) => k.startsWith(PREFIX));
    assert.ok(ann.length >= 5);
    for (const [k, v] of ann) {
      const render = RENDERS[k.slice(PREFIX.length)];
      assert.ok(render, `${k}: no rendering known; add its directive to images/nginx/lspd.conf and here`);
      const want = render(v);
      const found = scopes[want.scope].filter((d) => d.name === want.name);
      assert.equal(found.length, 1, `${want.name} once in the ${want.scope} block`);
      assert.deepEqual(found[0]!.args, want.args, `${k}: "${v}" is ${want.name} ${want.args.join(' ')}`);
      // No other level says otherwise.
      assert.equal(findDirectives(conf, want.name).length, 1, `${want.name} set once in the whole file`);
    }
  });

  it('set nothing about proxying that no annotation says', () => {
    const rendered = new Set(
      Object.entries(ingress.metadata.annotations)
        .filter(([k]) => k.startsWith(PREFIX))
        .map(([k, v]) => RENDERS[k.slice(PREFIX.length)]!(v).name),
    );
    for (const d of [...server, ...location]) {
      if (!/^(proxy_|client_)/.test(d.name)) continue;
      assert.ok(rendered.has(d.name) || ALWAYS.test(d.name), `${d.name} in lspd.conf has no annotation in ingress.yaml`);
    }
  });

  it('hash on the header the client and `lspd push` send, consistently, with the ready replicas listed', () => {
    const hash = upstream.find((d) => d.name === 'hash')!;
    assert.deepEqual(hash.args, [`$http_${ROUTE_KEY_HEADER.replace(/-/g, '_')}`, 'consistent']);
    // nginx wants the balancing method before keepalive; the list is the include.
    const names = upstream.map((d) => d.name);
    assert.ok(names.indexOf('hash') < names.indexOf('keepalive'), 'hash before keepalive');
    assert.deepEqual(upstream.find((d) => d.name === 'include')?.args, ['lspd-upstreams.conf']);
    assert.deepEqual(location.find((d) => d.name === 'proxy_pass')?.args, ['http://lspd']);
    // Passive checks as the scale-out test writes them; a busy 503 never moves a repo.
    assert.equal(serverParams(confText), 'max_fails=1 fail_timeout=10s');
    assert.ok(!location.find((d) => d.name === 'proxy_next_upstream')!.args.includes('http_503'));
  });

  it('give a query its whole deadline and an upload no cap of its own', () => {
    const seconds = (name: string) => Number(/^(\d+)s$/.exec(location.find((d) => d.name === name)!.args[0]!)![1]);
    const queryTimeoutMs = configSchema.shape.queryTimeoutMs.parse(undefined);
    assert.ok(seconds('proxy_read_timeout') * 1000 > queryTimeoutMs, 'nginx waits longer than lspd answers');
    assert.deepEqual(server.find((d) => d.name === 'client_max_body_size')?.args, ['0'], 'lspd enforces its own tree limits (413)');
    assert.deepEqual(location.find((d) => d.name === 'proxy_request_buffering')?.args, ['off'], 'uploads are streamed');
  });

  it('is a configuration nginx accepts (nginx -t)', () => {
    const prefix = tempDir('lspd-nginx-t-');
    try {
      copyFileSync(NGINX_CONF, join(prefix, 'nginx.conf'));
      writeFileSync(join(prefix, 'lspd-listen.conf'), 'listen 127.0.0.1:8080;\n');
      writeFileSync(join(prefix, 'lspd-upstreams.conf'), `server 127.0.0.1:7420 ${serverParams(confText)};\n`);
      for (const d of ['logs', 'tmp']) mkdirSync(join(prefix, d));
      const out = execFileSync(NGINX_BIN, ['-t', '-q', '-p', prefix + '/', '-c', join(prefix, 'nginx.conf'), '-e', join(prefix, 'logs', 'error.log')], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      assert.equal(out, '');
    } finally {
      rmSync(prefix, { recursive: true, force: true });
    }
  });
});
